//! `serialInspect`: a group's holder, waiters and recent finishes.

use super::decide::{read_back, statement, text};
use super::invariants::entry;
use super::sql;
use super::state::{Batch, Entry, Outcome, Param};
use crate::ident::Ident;
use crate::limits::{SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX};

/// `serialInspect`: the holder, the waiters and the recent finishes, read
/// in one batch (one snapshot).
pub fn inspect(group: &Ident) -> Batch {
    let limited = |sql, limit: u32| {
        statement(
            sql,
            vec![text(group.as_str()), Param::Integer(u64::from(limit))],
        )
    };
    Batch(vec![
        statement(sql::READ_HOLDER, vec![text(group.as_str())]),
        limited(sql::READ_WAITING, SERIAL_INSPECT_WAITING_MAX),
        limited(sql::READ_RECENT, SERIAL_RECENT_PER_GROUP_MAX),
    ])
}

/// A group as `serialInspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    pub holder: Option<Entry>,
    /// In hand-on order.
    pub waiting: Vec<Entry>,
    /// Finished executions, newest first.
    pub recent: Vec<Entry>,
}

pub fn inspect_outcome(outcomes: &[Outcome]) -> Inspection {
    let at = read_back(outcomes, 3);
    let entries = |i: usize| at(i).rows.iter().map(entry).collect::<Vec<_>>();
    Inspection {
        holder: entries(0).into_iter().next(),
        waiting: entries(1),
        recent: entries(2),
    }
}
