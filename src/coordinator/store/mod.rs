//! The Coordinator's rows as its one decision reads and writes them: each
//! [`Read`] the core's plan names carried out ([`execute`], looped by
//! [`load`] into the [`View`] an input needs), and a decision's [`Write`]s
//! carried out in one `match` ([`write`]). It decides nothing: which rows
//! a decision needs is the plan's (`super::read`); the §1c order is
//! `super::order`'s, which the fast reads of `order.rs` match (held to it
//! by `tests/coordinator_order.rs`).
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

pub mod health;
pub mod history;
mod order;
mod rows;
pub mod schema;
mod schema_fresh;
mod terminations;
mod write;

pub use terminations::{terminated, terminations_owed, Owed};
pub use write::write;

use super::order::hand_off_order;
use super::read::load_view;
use super::types::{Fetched, Holder, Input, Layout, Member, Paused, Read, Summary, View, Waiter};
use crate::ident::{Ident, InstanceId};
use crate::limits::{HOLDERS_PER_KEY_MAX, WAITERS_PER_KEY_MAX};
use crate::sql::{
    integer, millis, optional_millis, optional_text, stored_id, Counted, SqlExec, SqlValue,
};
use order::{load_front, load_place, load_sole_place};
use rows::{
    hold_times_from, holder_from_row, id_value, key_value, priority_from, tenant_from,
    waiter_from_row, HOLDER_COLUMNS_OF_H, HOLDER_WIDTH, WAITER_COLUMNS, WAITER_COLUMNS_OF_W,
    WAITER_WIDTH,
};
use std::collections::HashMap;

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
             k.fence, k.turns, k.hold_times_ms, \
             k.paused_since_ms, k.paused_reason, k.limit_override, k.max_waiting, \
             k.sole_priority, k.sole_tenant, {HOLDER_COLUMNS_OF_H}, h.seq \
             FROM (SELECT 1) \
             LEFT JOIN coordinator_keys k ON k.key = ?1 \
             LEFT JOIN coordinator_holders h ON h.key = ?1 LIMIT ?2"
        ),
        &[
            key_value(key),
            SqlValue::Integer(i64::from(HOLDERS_PER_KEY_MAX)),
        ],
    );
    /// Where the holder's columns start: after the key's twelve.
    const H: usize = 12;
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
    held.sort_unstable_by_key(|(seq, holder)| grant_order(holder.fence, *seq));
    // A holder's fence is folded into the key row when its hold ends.
    let fence = held
        .iter()
        .map(|(_, holder)| holder.fence)
        .fold(optional_millis(&first[3]).unwrap_or(0), u64::max);
    let callers = match &first[0] {
        SqlValue::Null => 1,
        value => count(value),
    };
    Summary {
        callers_limit: callers,
        limit_override: optional_millis(&first[8]).map(|n| n as u32),
        max_waiting: optional_millis(&first[9]).map(|n| n as u32),
        paused: optional_millis(&first[6]).map(|since_ms| Paused {
            since_ms,
            reason: optional_text(&first[7]),
        }),
        waiters: match &first[1] {
            SqlValue::Null => 0,
            value => count(value),
        },
        none_superseded: integer(&first[2]) != 0,
        fence,
        turns: optional_millis(&first[4]).unwrap_or(0),
        hold_times_ms: hold_times_from(&first[5]),
        holders: held.into_iter().map(|(_, holder)| holder).collect(),
        sole: match &first[10] {
            SqlValue::Null => None,
            priority => Some((priority_from(priority), tenant_from(&first[11]))),
        },
    }
}

/// A holder's place in grant order (schema v12): by fence, then by `seq`
/// among the holders from before fences (all fence 0).
fn grant_order(fence: u64, seq: i64) -> (u64, i64) {
    (fence, seq)
}

/// `id`'s place among the waiters and the superseded: one read.
fn load_member<E: SqlExec>(sql: &Counted<'_, E>, key: &str, id: &InstanceId) -> Member {
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

/// The first `n` waiters of `key` in the order they joined: in
/// [`Layout::Sole`], the front of the hand-off order.
fn load_arrived<E: SqlExec>(sql: &Counted<'_, E>, key: &str, n: u32) -> Vec<Waiter> {
    read_waiters(
        sql,
        &format!(
            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
             WHERE key = ?1 ORDER BY seq LIMIT ?2"
        ),
        &[key_value(key), SqlValue::Integer(i64::from(n))],
    )
}

/// The view `input` decides on, from `summary` (the one memory kept, or
/// `None` to read it): the reads the core's plan names
/// ([`super::read::next_read`]), each carried out by [`execute`].
pub fn load<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: Option<Summary>,
    input: &Input,
) -> View {
    let summary = summary.unwrap_or_else(|| load_summary(sql, key));
    load_view(summary, input, |read| execute(sql, key, read))
}

/// One read of the plan, on `key`'s rows: the read with the rows it
/// names; it decides nothing.
pub fn execute<E: SqlExec>(sql: &Counted<'_, E>, key: &str, read: Read) -> Read<Fetched> {
    match read {
        Read::Member(id, ()) => {
            let member = load_member(sql, key, &id);
            Read::Member(id, member)
        }
        Read::Front(n, Layout::Sole, ()) => Read::Front(n, Layout::Sole, load_arrived(sql, key, n)),
        Read::Front(n, Layout::Shared, ()) => {
            Read::Front(n, Layout::Shared, load_front(sql, key, n))
        }
        Read::Place {
            id,
            priority,
            tenant,
            layout,
            place: (),
        } => {
            let place = match layout {
                Layout::Sole => load_sole_place(sql, key, &id, priority, tenant.as_ref()),
                Layout::Shared => load_place(sql, key, &id, priority, tenant.as_ref()),
            };
            Read::Place {
                id,
                priority,
                tenant,
                layout,
                place,
            }
        }
        Read::CheckTimes(()) => {
            // All of the key's holders (at most its limit), in grant order
            // as `load_summary` puts them.
            let mut rows = sql.read(
                "SELECT id, checked_ms, fence, seq FROM coordinator_holders WHERE key = ?1 LIMIT ?2",
                &[
                    key_value(key),
                    SqlValue::Integer(i64::from(HOLDERS_PER_KEY_MAX)),
                ],
            );
            rows.sort_unstable_by_key(|row| grant_order(millis(&row[2]), integer(&row[3])));
            Read::CheckTimes(
                rows.iter()
                    .map(|row| (stored_id(&row[0]), optional_millis(&row[1])))
                    .collect(),
            )
        }
        Read::FirstWithHash(hash, ()) => {
            let first = read_waiters(
                sql,
                &format!(
                    "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                     WHERE key = ?1 AND input_hash = ?2 ORDER BY seq LIMIT 1"
                ),
                &[key_value(key), SqlValue::Text(hash.to_string())],
            )
            .pop();
            Read::FirstWithHash(hash, first)
        }
        Read::Waiters(()) => Read::Waiters(load_arrived(sql, key, WAITERS_PER_KEY_MAX)),
    }
}

/// Keys that need the holder-check alarm, at most `limit`.
pub fn keys_due<E: SqlExec>(sql: &Counted<'_, E>, limit: u32) -> Vec<String> {
    sql.read(
        "SELECT DISTINCT h.key FROM coordinator_holders h \
         LEFT JOIN coordinator_keys k ON k.key = h.key \
         WHERE h.state = 'handed' OR h.cancelling = 1 OR k.waiter_count > 0 LIMIT ?1",
        &[SqlValue::Integer(i64::from(limit))],
    )
    .iter()
    .map(|row| crate::sql::text(&row[0]))
    .collect()
}

/// What `inspect` shows of a key: its summary, every waiter in hand-off
/// order ([`hand_off_order`], bounded by the queue's limit) and how many
/// superseded ids it remembers.
pub fn inspect<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> (Summary, Vec<Waiter>, u32) {
    let summary = load_summary(sql, key);
    let arrived = load_arrived(sql, key, WAITERS_PER_KEY_MAX);
    let served: HashMap<(i8, Option<Ident>), u64> = sql
        .read(
            "SELECT priority, tenant, served FROM coordinator_tenants \
             WHERE key = ?1 AND first_seq IS NOT NULL LIMIT ?2",
            &[
                key_value(key),
                SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
            ],
        )
        .iter()
        .filter_map(|row| {
            let share = (priority_from(&row[0]), tenant_from(&row[1]));
            optional_millis(&row[2]).map(|served| (share, served))
        })
        .collect();
    let waiters = hand_off_order(&arrived, |priority, tenant| {
        served.get(&(priority, tenant.cloned())).copied()
    });
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
