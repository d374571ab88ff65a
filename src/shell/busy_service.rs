//! What is busy, through Baton's Worker (contract §10): the default
//! entrypoint's `coordinatorList`, which reads a page of every list shard
//! (`BusyList`, `shell::busy_list_object`) and merges them by key
//! (`crate::busy::page`), and `serialList`, one indexed D1 query
//! (`shell::serial_list`).

use super::js::{self, now_ms, to_js};
use super::serial_list::list_groups;
use super::stub::{call_object, CallError};
use crate::busy::page::{merge, per_shard, Cursor, ListKind, ShardPage};
use crate::busy::{shard_name, Busy, ShardCount};
use crate::edge::busy::{KeyList, ListRequest, ListedKey, ShardPageReply, ShardPageRequest};
use crate::edge::ListCall;
use crate::limits::{LIST_VERIFIES_PER_PAGE_MAX, LIST_VERIFY_AFTER_MS, LIST_VERIFY_AFTER_MS_MAX};
use wasm_bindgen::prelude::*;
use worker::Env;

/// The binding of the list shards' namespace.
pub const LIST_BINDING: &str = "BUSY_LIST";

/// `BATON_LIST_VERIFY_AFTER_MS` (default [`LIST_VERIFY_AFTER_MS`]): how long
/// a listed entry may go unconfirmed before a read asks its Coordinator;
/// or the operator's error naming it.
fn verify_after_ms(env: &Env) -> Result<u64, CallError> {
    let Some(text) = env
        .var("BATON_LIST_VERIFY_AFTER_MS")
        .ok()
        .map(|v| v.to_string())
    else {
        return Ok(LIST_VERIFY_AFTER_MS);
    };
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| (1..=LIST_VERIFY_AFTER_MS_MAX).contains(ms))
        .ok_or_else(|| {
            CallError::configuration(format!(
                "Baton configuration: BATON_LIST_VERIFY_AFTER_MS must be an integer from 1 to \
                 {LIST_VERIFY_AFTER_MS_MAX} (got {text:?})"
            ))
        })
}

/// `BATON_LIST_SHARDS`, or the operator's error naming it.
pub fn shard_count(env: &Env) -> Result<ShardCount, CallError> {
    let text = env.var("BATON_LIST_SHARDS").ok().map(|v| v.to_string());
    ShardCount::parse(text.as_deref()).map_err(CallError::configuration)
}

pub async fn call(env: &Env, request: ListCall) -> Result<JsValue, CallError> {
    Ok(match request {
        ListCall::Keys(request) => to_js(&list_keys(env, request).await?),
        ListCall::Groups(request) => to_js(&list_groups(env, request).await?),
    })
}

/// One page of `coordinatorList`.
pub async fn list_keys(env: &Env, request: ListRequest) -> Result<KeyList, CallError> {
    let cursor = match &request.cursor {
        Some(text) => Some(Cursor::decode(ListKind::Keys, text)?),
        None => None,
    };
    let shards = shard_count(env)?;
    let verify_after = verify_after_ms(env)?;
    let limit = request.limit.unwrap_or_default();
    let asked = per_shard(limit, shards.get());
    let ask = to_js(&ShardPageRequest {
        after: cursor.map(|c| c.after),
        limit: asked,
    });
    let calls = (0..shards.get()).map(|shard| {
        let name = shard_name(shard);
        let ask = ask.clone();
        async move { call_object(env, LIST_BINDING, &name, "page", &[ask]).await }
    });
    let mut pages = Vec::with_capacity(shards.get() as usize);
    for answer in futures_util::future::join_all(calls).await {
        let page: ShardPageReply = serde_wasm_bindgen::from_value(answer?)
            .map_err(|e| CallError::configuration(format!("Baton: a list shard answered {e}")))?;
        pages.push(shard_page(page));
    }
    let (mut entries, more) = merge(pages, limit);
    let now = now_ms();
    // The cursor is the last key read, whatever the verification drops.
    let next = more
        .then(|| entries.last().map(|(key, _)| key.clone()))
        .flatten();
    verify(env, &mut entries, now, verify_after).await;
    let keys = entries
        .into_iter()
        .map(|(key, Entry { busy, .. })| ListedKey {
            state: busy.state_at(now),
            key,
            holders: busy.holders,
            waiting: busy.waiting,
            oldest_wait_ms: busy.oldest_wait_ms(now),
            limit: busy.limit,
            paused: busy.paused,
        })
        // The cursor is the last key read, whatever the filter leaves out.
        .filter(|listed| request.state.is_none_or(|state| listed.state == state))
        .collect();
    Ok(KeyList {
        keys,
        cursor: next.map(|after| {
            Cursor {
                kind: ListKind::Keys,
                after,
            }
            .encode()
        }),
    })
}

/// A shard's page, its columns made entries again.
fn shard_page(page: ShardPageReply) -> ShardPage<Entry> {
    let ShardPageReply {
        keys,
        holders,
        waiting,
        oldest_since,
        limit,
        reported_at,
        paused,
        stalled_from,
        full,
    } = page;
    let mut paused = paused.into_iter();
    let mut stalled_from = stalled_from.into_iter();
    let entries = keys
        .into_iter()
        .zip(holders)
        .zip(waiting)
        .zip(oldest_since)
        .zip(limit)
        .zip(reported_at)
        .map(
            |(((((key, holders), waiting), oldest_since), limit), reported_at)| {
                let busy = Busy {
                    holders,
                    waiting,
                    oldest_since_ms: oldest_since,
                    limit,
                    // A page does not carry it; the list has it applied.
                    dead_until_ms: None,
                    paused: paused.next().unwrap_or(false),
                    stalled_from_ms: stalled_from.next().flatten(),
                };
                let entry = Entry { busy, reported_at };
                (key, entry)
            },
        )
        .collect();
    ShardPage { entries, full }
}

/// A listed key as a shard showed it, and when the shard took its report.
struct Entry {
    busy: Busy,
    reported_at: u64,
}

/// What a key's Coordinator answers `listReport`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reported {
    listed: bool,
    holders: u32,
    waiting: u32,
    oldest_since: Option<u64>,
    limit: u32,
    #[serde(default)]
    paused: bool,
    #[serde(default)]
    stalled_from: Option<u64>,
}

/// Asks the Coordinators of the entries no report has confirmed for
/// `after_ms` (`BATON_LIST_VERIFY_AFTER_MS`; at most [`LIST_VERIFIES_PER_PAGE_MAX`] a
/// page, oldest report first) to report their key again, and shows what
/// they answer: a key that is no longer busy leaves the page (and, by that
/// report, its shard), the others show their counts as they are. A key
/// whose Coordinator cannot be reached is shown as its shard has it.
async fn verify(env: &Env, entries: &mut Vec<(String, Entry)>, now: u64, after_ms: u64) {
    let mut doubted: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].1.reported_at.saturating_add(after_ms) <= now)
        .collect();
    doubted.sort_by_key(|&i| entries[i].1.reported_at);
    doubted.truncate(LIST_VERIFIES_PER_PAGE_MAX);
    if doubted.is_empty() {
        return;
    }
    let asks = doubted.iter().map(|&i| {
        let key = JsValue::from_str(&entries[i].0);
        let name = entries[i].0.clone();
        async move { call_object(env, "COORDINATOR", &name, "listReport", &[key]).await }
    });
    let answers = futures_util::future::join_all(asks).await;
    let mut gone = Vec::new();
    for (&i, answer) in doubted.iter().zip(answers) {
        let Ok(reported) = answer.and_then(|value| {
            serde_wasm_bindgen::from_value::<Reported>(value)
                .map_err(|e| CallError::configuration(e.to_string()))
        }) else {
            continue;
        };
        if !reported.listed {
            gone.push(i);
            continue;
        }
        let busy = &mut entries[i].1.busy;
        busy.holders = reported.holders;
        busy.waiting = reported.waiting;
        busy.oldest_since_ms = reported.oldest_since;
        busy.limit = reported.limit;
        busy.paused = reported.paused;
        busy.stalled_from_ms = reported.stalled_from;
    }
    gone.sort_unstable();
    for i in gone.into_iter().rev() {
        entries.remove(i);
    }
}

/// The Rust half of the default entrypoint's list methods (see
/// js/worker.mjs): one object argument each, the §10 shape; none at all
/// reads the first page of the default size.
#[wasm_bindgen]
pub struct BusyService {
    env: Env,
}

#[wasm_bindgen]
impl BusyService {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> BusyService {
        console_error_panic_hook::set_once();
        BusyService { env }
    }

    #[wasm_bindgen(js_name = coordinatorList)]
    pub fn coordinator_list(&self, input: JsValue) -> js_sys::Promise {
        self.serve(input, ListCall::Keys)
    }

    #[wasm_bindgen(js_name = serialList)]
    pub fn serial_list(&self, input: JsValue) -> js_sys::Promise {
        self.serve(input, ListCall::Groups)
    }
}

impl BusyService {
    fn serve(&self, input: JsValue, call: fn(ListRequest) -> ListCall) -> js_sys::Promise {
        let env = self.env.clone();
        js::promise(async move {
            let request = if input.is_undefined() || input.is_null() {
                ListRequest {
                    cursor: None,
                    limit: None,
                    state: None,
                }
            } else {
                js::request(input)?
            };
            self::call(&env, call(request))
                .await
                .map_err(CallError::into_js)
        })
    }
}
