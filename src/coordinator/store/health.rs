//! The rows of a key's health (contract §10a): each holder's last check
//! and since when its checks fail (schema v14's columns of
//! `coordinator_holders`), read for `inspect` and for the key's list
//! report. The rule is `crate::coordinator::health`'s.

use super::history;
use crate::busy::Busy;
use crate::coordinator::health::{self, CheckRow, Checked, Health};
use crate::coordinator::types::history::Hold;
use crate::coordinator::types::{Summary, Waiter};
use crate::limits::HOLDERS_PER_KEY_MAX;
use crate::sql::{
    millis_value, optional_millis, optional_text, stored_id, text_value, Counted, SqlExec,
};
use crate::workflow::Status;

/// Each holder's last check and since when its checks fail, by id, as the
/// rows keep them (one read, bounded by the holders a key can have).
fn checks<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Vec<CheckRow> {
    sql.read(
        "SELECT id, checked_ms, check_answer, check_failed_ms FROM coordinator_holders \
         WHERE key = ?1 LIMIT ?2",
        &[
            text_value(key),
            millis_value(u64::from(HOLDERS_PER_KEY_MAX)),
        ],
    )
    .iter()
    .map(|row| {
        let checked = optional_millis(&row[1]).map(|at_ms| Checked {
            at_ms,
            answer: optional_text(&row[2]).map_or(Status::Other, |a| Status::from_name(&a)),
        });
        (stored_id(&row[0]), checked, optional_millis(&row[3]))
    })
    .collect()
}

/// The earliest first failure of an unbroken run of failed checks among
/// the key's holders (§10a), from its rows.
pub fn failing_since<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Option<u64> {
    sql.read(
        "SELECT MIN(check_failed_ms) FROM coordinator_holders WHERE key = ?1",
        &[text_value(key)],
    )
    .first()
    .and_then(|row| optional_millis(&row[0]))
}

/// `inspect`'s §10a part, from the key's rows (`health::inspect`).
pub fn inspect<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: &Summary,
    waiters: &[Waiter],
    recent: &[Hold],
    holder_check_ms: u64,
    now_ms: u64,
) -> Health {
    let rows = checks(sql, key);
    health::inspect(summary, waiters, recent, &rows, holder_check_ms, now_ms)
}

/// What the key's list entry shows (`history::busy`), with when it counts
/// as stalled: the report a list shard decides the entry's state from.
pub fn busy<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: &Summary,
    holder_check_ms: u64,
) -> Busy {
    // A stall needs waiters (`crate::health::state`): without them, no read.
    let failing = (summary.waiters > 0)
        .then(|| failing_since(sql, key))
        .flatten();
    Busy {
        stalled_from_ms: health::stalled_from(&summary.holders, failing, holder_check_ms),
        ..history::busy(
            sql,
            key,
            summary.holders.len() as u32,
            summary.waiters,
            summary.limit(),
            summary.paused.is_some(),
        )
    }
}
