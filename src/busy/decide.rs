//! One list shard's decision for one key, [`decide`]: a report lists,
//! updates or unlists the key; the alarm's tick ends what has run out.
//!
//! Reports of a key can arrive out of order and more than once (each is an
//! RPC from the key's Coordinator, sent after its reply or from its alarm,
//! and retried there when lost), so the row keeps the stamp of the report
//! it shows and a report whose stamp is not above it changes nothing. A
//! key that leaves keeps its row as [`Row::Gone`] for
//! [`LIST_GONE_KEPT_MS`], so the report that listed it, arriving after the
//! one that unlisted it, is known to be older.

use super::state::{Busy, Report, Row};
use crate::error::BatonError;
use crate::limits::LIST_GONE_KEPT_MS;
use crate::transition::{Alarm, Call};

/// The shard's alarm, for a key whose row had a time due: what re-enters
/// a shard's decision (a report is a call of its own, [`report`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick;

/// A shard's answer to a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The report was the newest the shard had seen of the key: applied.
    pub applied: bool,
    /// The stamp the shard holds for the key now.
    pub stamp: u64,
    /// The shard shows what the report said (applied, or already shown).
    pub same: bool,
}

/// One change to a key's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Put(Row),
    Delete,
}

/// A shard's decision: the key's row as the writes leave it is the state.
/// A report's answer goes beside it ([`report`]).
pub type Transition = crate::transition::Transition<(), Write, Option<Row>>;

/// Decides `report` for a key whose row is `row`, at `now_ms` (the
/// shard's clock): its answer, and the transition. Never refused: a report
/// was checked where it was made.
/// A report is the list's one call, answered with what the shard made of
/// it ([`report`]).
impl Call<Option<Row>> for Report {
    type Answer = Answer;
    type Transition = Transition;
    fn decide(self, row: &Option<Row>, now_ms: u64) -> Result<(Answer, Transition), BatonError> {
        Ok(report(row, now_ms, self))
    }
}

pub fn report(row: &Option<Row>, now_ms: u64, report: Report) -> (Answer, Transition) {
    match row {
        Some(row) if row.stamp() >= report.stamp => {
            let answer = Answer {
                applied: false,
                stamp: row.stamp(),
                same: shows(row, &report.busy, now_ms),
            };
            (answer, decided(&Some(*row), None))
        }
        _ => {
            let answer = Answer {
                applied: true,
                stamp: report.stamp,
                same: true,
            };
            let put = if report.busy.listed_at(now_ms) {
                Row::Listed {
                    stamp: report.stamp,
                    busy: report.busy,
                    reported_ms: now_ms,
                }
            } else {
                gone(report.stamp, now_ms)
            };
            (answer, decided(row, Some(Write::Put(put))))
        }
    }
}

/// Decides the alarm's [`Tick`] for a key whose row is `row`, at `now_ms`.
pub fn tick(row: &Option<Row>, now_ms: u64, _: Tick) -> Transition {
    decided(row, ran_out(row, now_ms))
}

/// The transition of `write` on `row`.
fn decided(row: &Option<Row>, write: Option<Write>) -> Transition {
    let mut state = *row;
    let writes: Vec<Write> = write.into_iter().collect();
    apply(&mut state, &writes);
    Transition {
        reply: (),
        writes,
        effects: Vec::new(),
        // The list's decisions are no one's turn: they print no line.
        log: crate::transition::Lines::None,
        // A row that lost its time leaves the alarm early: that tick
        // finds nothing due.
        alarm: state
            .as_ref()
            .and_then(Row::wake_ms)
            .map_or(Alarm::Keep, Alarm::At),
        state,
    }
}

/// What the alarm does to a row whose time came; nothing to an early or
/// repeated tick.
fn ran_out(row: &Option<Row>, now_ms: u64) -> Option<Write> {
    match row {
        Some(Row::Gone { forget_ms, .. }) if *forget_ms <= now_ms => Some(Write::Delete),
        Some(Row::Listed { stamp, busy, .. }) if !busy.listed_at(now_ms) => {
            Some(Write::Put(gone(*stamp, now_ms)))
        }
        _ => None,
    }
}

/// Whether `row` shows what a report of `busy` would make it show.
fn shows(row: &Row, busy: &Busy, now_ms: u64) -> bool {
    match row {
        Row::Listed { busy: shown, .. } => shown == busy,
        Row::Gone { .. } => !busy.listed_at(now_ms),
    }
}

fn gone(stamp: u64, now_ms: u64) -> Row {
    Row::Gone {
        stamp,
        forget_ms: now_ms.saturating_add(LIST_GONE_KEPT_MS),
    }
}

/// Applies `writes` to a key's row, as the shard's storage does.
pub fn apply(row: &mut Option<Row>, writes: &[Write]) {
    for write in writes {
        *row = match write {
            Write::Put(new) => Some(*new),
            Write::Delete => None,
        };
    }
}

/// Panics on a row no decision writes.
pub fn assert_invariants(row: &Option<Row>) {
    let Some(Row::Listed { busy, .. }) = row else {
        return;
    };
    let Busy {
        waiting,
        oldest_since_ms,
        limit,
        dead_until_ms,
        ..
    } = busy;
    assert!(
        *waiting > 0 || dead_until_ms.is_some(),
        "a listed key has neither a waiter nor a dead holder"
    );
    assert_eq!(
        *waiting > 0,
        oldest_since_ms.is_some(),
        "a listed key's oldest wait and its waiters disagree"
    );
    assert!(*limit >= 1, "a listed key's limit is 0");
}
