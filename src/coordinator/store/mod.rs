//! The Coordinator's rows as its one decision reads and writes them: the
//! targeted [`View`] an input needs ([`load`]) and its [`Write`]s carried
//! out in one `match` ([`write`]).
//!
//! Generic over [`SqlExec`], so the very same statements run in the Durable
//! Object (its synchronous `storage.sql`) and natively under `rusqlite` in
//! tests. Every query is bounded by an index and a `LIMIT`; no statement
//! rewrites the queue, so each decision's cost is flat in its length. The
//! object is the only writer of its database, so the shell keeps a key's
//! [`Summary`] from one decision to the next: an uncontended acquire and
//! release then read nothing at all, and each writes only its holder row.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed
//! (with no summary: it is memory, reloaded by the next decision).

mod order;
mod rows;
mod write;

pub use write::write;

use super::read::{acquire_waits, front_needed, needs_place};
use super::schema;
use super::state::{Holder, HolderState, Liveness, Member, Waiter};
use super::types::{Input, Summary, View};
use crate::ident::{Ident, InstanceId};
use crate::limits::{HOLDERS_PER_KEY_MAX, HOLDER_CHECKS_PER_TICK_MAX, WAITERS_PER_KEY_MAX};
use crate::sql::{integer, optional_millis, Counted, SqlExec, SqlValue};
use order::{hand_off_order, load_front, load_place};
use rows::{
    hold_times_from, holder_from_row, id_value, key_value, priority_from, tenant_from,
    waiter_from_row, HOLDER_COLUMNS, HOLDER_COLUMNS_OF_H, HOLDER_WIDTH, WAITER_COLUMNS,
    WAITER_COLUMNS_OF_W, WAITER_WIDTH,
};

/// Brings a database to [`schema::LADDER`]'s current version; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    schema::LADDER.migrate(exec);
}

/// The key's summary: one read (the key row, whether any superseded id is
/// remembered, every holder).
pub fn load_summary<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Summary {
    let rows = sql.read(
        &format!(
            "SELECT k.holder_limit, k.waiter_count, \
             NOT EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1), \
             k.fence, k.turns, k.hold_times_ms, {HOLDER_COLUMNS_OF_H}, h.seq \
             FROM (SELECT 1) \
             LEFT JOIN coordinator_keys k ON k.key = ?1 \
             LEFT JOIN coordinator_holders h ON h.key = ?1 LIMIT ?2"
        ),
        &[
            key_value(key),
            SqlValue::Integer(i64::from(HOLDERS_PER_KEY_MAX)),
        ],
    );
    /// Where the holder's columns start: after the key's six.
    const H: usize = 6;
    let count = |v: &SqlValue| u32::try_from(integer(v)).expect("counts are bounded");
    let first = &rows[0];
    let mut held: Vec<(i64, Holder)> = rows
        .iter()
        .filter(|row| row[H] != SqlValue::Null)
        .map(|row| {
            (
                integer(&row[H + HOLDER_WIDTH]),
                holder_from_row(&row[H..H + HOLDER_WIDTH]),
            )
        })
        .collect();
    held.sort_unstable_by_key(|(seq, _)| *seq);
    Summary {
        limit: match &first[0] {
            SqlValue::Null => 1,
            value => count(value),
        },
        waiters: match &first[1] {
            SqlValue::Null => 0,
            value => count(value),
        },
        none_superseded: integer(&first[2]) != 0,
        fence: optional_millis(&first[3]).unwrap_or(0),
        turns: optional_millis(&first[4]).unwrap_or(0),
        hold_times_ms: hold_times_from(&first[5]),
        holders: held.into_iter().map(|(_, holder)| holder).collect(),
    }
}

/// `id`'s place: from the summary when it holds or nobody waits and
/// nobody was superseded, else one read.
fn load_member<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: &Summary,
    id: &InstanceId,
) -> Member {
    if let Some(holder) = summary.holders.iter().find(|h| h.id == *id) {
        return Member::Holder(holder.clone());
    }
    if summary.waiters == 0 && summary.none_superseded {
        return Member::Stranger;
    }
    let rows = sql.read(
        &format!(
            "SELECT {WAITER_COLUMNS_OF_W}, \
             EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1 AND id = ?2) \
             FROM (SELECT 1) \
             LEFT JOIN coordinator_waiters w ON w.key = ?1 AND w.id = ?2"
        ),
        &[key_value(key), id_value(id)],
    );
    let row = &rows[0];
    if row[0] != SqlValue::Null {
        Member::Waiter(waiter_from_row(&row[..WAITER_WIDTH]))
    } else if integer(&row[WAITER_WIDTH]) != 0 {
        Member::Superseded
    } else {
        Member::Stranger
    }
}

fn read_waiters<E: SqlExec>(
    sql: &Counted<'_, E>,
    statement: &str,
    params: &[SqlValue],
) -> Vec<Waiter> {
    sql.read(statement, params)
        .iter()
        .map(|row| waiter_from_row(row))
        .collect()
}

/// Up to `n` holders due a check, least recently checked first, with when
/// each was last checked: every holder, or only the handed ones.
fn load_to_check<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    n: u32,
    everyone: bool,
) -> Vec<(Holder, Option<u64>)> {
    let filter = if everyone {
        ""
    } else {
        " AND state = 'handed'"
    };
    sql.read(
        &format!(
            "SELECT {HOLDER_COLUMNS}, checked_ms FROM coordinator_holders \
             WHERE key = ?1{filter} ORDER BY checked_ms, seq LIMIT ?2"
        ),
        &[key_value(key), SqlValue::Integer(i64::from(n))],
    )
    .iter()
    .map(|row| {
        (
            holder_from_row(&row[..HOLDER_WIDTH]),
            optional_millis(&row[HOLDER_WIDTH]),
        )
    })
    .collect()
}

/// The view `input` decides on, from `summary` (the one memory kept, or
/// `None` to read it): the caller's place, the front of the queue its
/// decision may hand slots to, and only what its path then needs.
pub fn load<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: Option<Summary>,
    input: &Input,
) -> View {
    let summary = summary.unwrap_or_else(|| load_summary(sql, key));
    let named = match input {
        Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. } => Some(&r.id),
        Input::Acquire(r) | Input::AcquireChecked { request: r, .. } => Some(&r.id),
        Input::Release(id) => Some(id),
        Input::Woken { .. } | Input::Tick | Input::TickChecked { .. } => None,
    };
    let member = named.map(|id| load_member(sql, key, &summary, id));
    let n = front_needed(&summary, input);
    let front = if n > 0 {
        load_front(sql, key, n)
    } else {
        Vec::new()
    };
    let mut view = View {
        summary,
        member,
        front,
        ..View::default()
    };
    match input {
        Input::Acquire(request) | Input::AcquireChecked { request, .. } => {
            let checked = matches!(input, Input::AcquireChecked { .. });
            if needs_place(&view, request, checked) {
                let (priority, tenant) = match &view.member {
                    Some(Member::Waiter(w)) => (w.priority, w.tenant.clone()),
                    _ => (request.options.priority, request.options.tenant.clone()),
                };
                view.position = Some(load_place(sql, key, &request.id, priority, tenant.as_ref()));
            }
            if !checked && acquire_waits(&view, request) {
                view.to_check = load_to_check(sql, key, 1, true);
            }
        }
        Input::Tick => {
            let s = &view.summary;
            let handed = s.holders.iter().any(|h| h.state == HolderState::Handed);
            if !s.holders.is_empty() && (s.waiters > 0 || handed) {
                view.to_check = load_to_check(sql, key, HOLDER_CHECKS_PER_TICK_MAX, s.waiters > 0);
            }
        }
        Input::Enqueue(request) | Input::EnqueueChecked { request, .. } => {
            let settled = matches!(view.member, Some(Member::Holder(_) | Member::Superseded));
            if request.supersedes && !settled && view.summary.waiters > 0 {
                if let Some(hash) = &request.input_hash {
                    view.candidate = read_waiters(
                        sql,
                        &format!(
                            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                             WHERE key = ?1 AND input_hash = ?2 ORDER BY seq LIMIT 1"
                        ),
                        &[key_value(key), SqlValue::Text(hash.to_string())],
                    )
                    .pop();
                }
                let coalescing = match input {
                    Input::Enqueue(_) => {
                        view.candidate.as_ref().is_some_and(|c| c.id != request.id)
                    }
                    Input::EnqueueChecked {
                        candidate,
                        liveness,
                        ..
                    } => {
                        *liveness == Liveness::Alive
                            && view
                                .candidate
                                .as_ref()
                                .is_some_and(|c| c.id == candidate.id)
                    }
                    _ => false,
                };
                if !coalescing {
                    view.others = read_waiters(
                        sql,
                        &format!(
                            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                             WHERE key = ?1 AND id <> ?2 ORDER BY seq LIMIT ?3"
                        ),
                        &[
                            key_value(key),
                            id_value(&request.id),
                            SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
                        ],
                    );
                }
            }
        }
        Input::Release(_) | Input::Woken { .. } | Input::TickChecked { .. } => {}
    }
    view
}

/// Keys that need the holder-check alarm, at most `limit`.
pub fn keys_due<E: SqlExec>(sql: &Counted<'_, E>, limit: u32) -> Vec<String> {
    sql.read(
        "SELECT DISTINCT h.key FROM coordinator_holders h \
         LEFT JOIN coordinator_keys k ON k.key = h.key \
         WHERE h.state = 'handed' OR k.waiter_count > 0 LIMIT ?1",
        &[SqlValue::Integer(i64::from(limit))],
    )
    .iter()
    .map(|row| crate::sql::text(&row[0]))
    .collect()
}

/// What `inspect` shows of a key: its summary, every waiter in order
/// (bounded by the queue's limit) and how many superseded ids it remembers.
pub fn inspect<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> (Summary, Vec<Waiter>, u32) {
    let summary = load_summary(sql, key);
    let bound = SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX));
    let arrived = read_waiters(
        sql,
        &format!(
            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
             WHERE key = ?1 ORDER BY seq LIMIT ?2"
        ),
        &[key_value(key), bound.clone()],
    );
    let turns: Vec<(i8, Option<Ident>)> = sql
        .read(
            "SELECT priority, tenant FROM coordinator_tenants WHERE key = ?1 AND waiters > 0 \
             ORDER BY priority DESC, served, first_seq LIMIT ?2",
            &[key_value(key), bound],
        )
        .iter()
        .map(|row| (priority_from(&row[0]), tenant_from(&row[1])))
        .collect();
    let waiters = hand_off_order(&turns, arrived);
    let superseded = sql
        .read(
            "SELECT COALESCE((SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) \
             - (SELECT MIN(seq) FROM coordinator_superseded WHERE key = ?1) + 1, 0)",
            &[key_value(key)],
        )
        .first()
        .map(|row| u32::try_from(integer(&row[0])).expect("superseded count is bounded"))
        .unwrap_or(0);
    (summary, waiters, superseded)
}
