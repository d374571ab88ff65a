//! `serialList` (contract §10): a page of the groups with a holder or a
//! waiter, one indexed D1 query (`serial_queue::sql::LIST_GROUPS`) in
//! group order, behind the same cursor as the keys' list.

use super::js::now_ms;
use super::stub::CallError;
use crate::busy::page::{Cursor, ListKind};
use crate::edge::busy::{GroupList, ListRequest, ListedGroup};
use crate::health::KeyState;
use crate::health::{self, Facts};
use crate::serial_queue::sql::LIST_GROUPS;
use wasm_bindgen::JsValue;
use worker::Env;

/// A row of `LIST_GROUPS`.
#[derive(serde::Deserialize)]
struct GroupRow {
    group_name: String,
    holder: Option<String>,
    waiting: Option<f64>,
    oldest_since: Option<f64>,
    /// 1 when paused (SQLite's `EXISTS`).
    paused: Option<f64>,
}

/// One page of `serialList`.
pub async fn list_groups(env: &Env, request: ListRequest) -> Result<GroupList, CallError> {
    let cursor = match &request.cursor {
        Some(text) => Some(Cursor::decode(ListKind::Groups, text)?),
        None => None,
    };
    let limit = request.limit.unwrap_or_default().get();
    let d1 = env.d1("DB").map_err(|e| {
        CallError::configuration(format!(
            "Baton configuration: no D1 binding named \"DB\": {e}"
        ))
    })?;
    let failed = |e: worker::Error| CallError::configuration(format!("Baton: D1 failed: {e}"));
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
    let mut groups: Vec<ListedGroup> = rows
        .into_iter()
        .take(limit as usize)
        .map(|row| {
            let waiting = row.waiting.unwrap_or(0.0) as u32;
            let paused = row.paused.is_some_and(|p| p != 0.0);
            ListedGroup {
                state: group_state(paused, row.holder.is_some(), waiting),
                group: row.group_name,
                holder: row.holder,
                waiting,
                oldest_wait_ms: row
                    .oldest_since
                    .map_or(0, |since| now.saturating_sub(since as u64)),
                paused,
            }
        })
        .collect();
    // The cursor is the last group read, whatever the filter leaves out.
    let cursor = more.then(|| {
        Cursor {
            kind: ListKind::Groups,
            after: groups.last().map(|g| g.group.clone()).unwrap_or_default(),
        }
        .encode()
    });
    if let Some(state) = request.state {
        groups.retain(|g| g.state == state);
    }
    Ok(GroupList { groups, cursor })
}

/// §10a for a group (`Facts::group`).
fn group_state(paused: bool, held: bool, waiting: u32) -> KeyState {
    health::state(&Facts::group(paused, held, waiting), 0)
}
