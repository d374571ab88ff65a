//! What is busy, through Baton's Worker (contract §10): the default
//! entrypoint's `coordinatorList`, which reads a page of every list shard
//! (`BusyList`, `shell::busy_list_object`) and merges them by key
//! (`crate::busy::page`), and `serialList`, one indexed D1 query
//! (`serial_queue::sql::LIST_GROUPS`).

use super::js::{self, now_ms, to_js};
use super::stub::{call_object, CallError};
use crate::busy::page::{merge, per_shard, Cursor, ListKind, ShardPage};
use crate::busy::{shard_name, ShardCount};
use crate::edge::busy::{
    GroupList, KeyList, ListRequest, ListedGroup, ListedKey, ShardPageReply, ShardPageRequest,
};
use crate::edge::ListCall;
use crate::serial_queue::sql::LIST_GROUPS;
use wasm_bindgen::prelude::*;
use worker::Env;

/// The binding of the list shards' namespace.
pub const LIST_BINDING: &str = "BUSY_LIST";

fn configuration(message: String) -> CallError {
    CallError::Thrown(js_sys::Error::new(&message).into())
}

/// `BATON_LIST_SHARDS`, or the operator's error naming it.
pub fn shard_count(env: &Env) -> Result<ShardCount, CallError> {
    let text = env.var("BATON_LIST_SHARDS").ok().map(|v| v.to_string());
    ShardCount::parse(text.as_deref()).map_err(configuration)
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
            .map_err(|e| configuration(format!("Baton: a list shard answered {e}")))?;
        let ShardPageReply {
            keys,
            holders,
            waiting,
            oldest_since,
            limit,
            full,
            ..
        } = page;
        let entries = keys
            .into_iter()
            .zip(holders)
            .zip(waiting)
            .zip(oldest_since)
            .zip(limit)
            .map(|((((key, holders), waiting), oldest_since), limit)| {
                (key, (holders, waiting, oldest_since, limit))
            })
            .collect();
        pages.push(ShardPage { entries, full });
    }
    let (entries, more) = merge(pages, limit);
    let now = now_ms();
    let next = more
        .then(|| entries.last().map(|(key, _)| key.clone()))
        .flatten();
    Ok(KeyList {
        keys: entries
            .into_iter()
            .map(|(key, (holders, waiting, oldest_since, limit))| ListedKey {
                key,
                holders,
                waiting,
                oldest_wait_ms: oldest_since.map_or(0, |since| now.saturating_sub(since)),
                limit,
            })
            .collect(),
        cursor: next.map(|after| {
            Cursor {
                kind: ListKind::Keys,
                after,
            }
            .encode()
        }),
    })
}

/// A row of `LIST_GROUPS`.
#[derive(serde::Deserialize)]
struct GroupRow {
    group_name: String,
    holder: Option<String>,
    waiting: Option<f64>,
    oldest_since: Option<f64>,
}

/// One page of `serialList`.
pub async fn list_groups(env: &Env, request: ListRequest) -> Result<GroupList, CallError> {
    let cursor = match &request.cursor {
        Some(text) => Some(Cursor::decode(ListKind::Groups, text)?),
        None => None,
    };
    let limit = request.limit.unwrap_or_default().get();
    let d1 = env.d1("DB").map_err(|e| {
        configuration(format!(
            "Baton configuration: no D1 binding named \"DB\": {e}"
        ))
    })?;
    let failed = |e: worker::Error| configuration(format!("Baton: D1 failed: {e}"));
    let after = cursor.map_or(String::new(), |c| c.after);
    // One more than the page: whether another page follows.
    let rows: Vec<GroupRow> = d1
        .prepare(LIST_GROUPS)
        .bind(&[
            JsValue::from_str(&after),
            JsValue::from_f64(f64::from(limit + 1)),
        ])
        .map_err(failed)?
        .all()
        .await
        .map_err(failed)?
        .results()
        .map_err(failed)?;
    let more = rows.len() > limit as usize;
    let now = now_ms();
    let groups: Vec<ListedGroup> = rows
        .into_iter()
        .take(limit as usize)
        .map(|row| ListedGroup {
            group: row.group_name,
            holder: row.holder,
            waiting: row.waiting.unwrap_or(0.0) as u32,
            oldest_wait_ms: row
                .oldest_since
                .map_or(0, |since| now.saturating_sub(since as u64)),
        })
        .collect();
    let cursor = more.then(|| {
        Cursor {
            kind: ListKind::Groups,
            after: groups.last().map(|g| g.group.clone()).unwrap_or_default(),
        }
        .encode()
    });
    Ok(GroupList { groups, cursor })
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
