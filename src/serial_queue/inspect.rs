//! `serialInspect`: a group's holder, waiters and recent finishes, and
//! whether an operator paused it (contract §11).

use super::invariants::{entry, steering};
use super::round::{read_back, statement, steering_statement, text};
use super::sql;
use super::state::{Batch, Entry, Outcome, Param, Paused};
use crate::ident::Ident;
use crate::limits::{SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX};

/// `serialInspect`: the holder, the waiters, the recent finishes and the
/// pause, read in one batch (one snapshot).
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
        steering_statement(sql::READ_GROUP, vec![text(group.as_str())]),
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
    /// Set while an operator paused the group.
    pub paused: Option<Paused>,
}

pub fn inspect_outcome(outcomes: &[Outcome]) -> Inspection {
    let at = read_back(outcomes, 4);
    let entries = |i: usize| at(i).rows.iter().map(entry).collect::<Vec<_>>();
    Inspection {
        holder: entries(0).into_iter().next(),
        waiting: entries(1),
        recent: entries(2),
        paused: at(3).groups.first().and_then(steering),
    }
}
