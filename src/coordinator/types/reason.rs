//! Why a Coordinator decision printed its line, as data ([`Reason`]),
//! and its words (its `Display`), written only when the line prints.
//! `log.rs` picks the line and its reason.

use crate::ident::{InstanceId, WorkflowName};
use crate::workflow::Liveness;
use std::fmt;

/// A Coordinator decision's line.
pub type LogLine = crate::transition::LogLine<Reason>;

/// Why a decision printed its line, as data; its `Display` is the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Fixed words.
    Said(&'static str),
    /// An acquire that checked the key's holder.
    HolderChecked {
        holder: InstanceId,
        liveness: Liveness,
    },
    /// A holder check, the alarm's or a woken holder's.
    HolderCheck(Liveness),
    /// An enqueue coalesced into a live waiter with the same input.
    Coalesced(InstanceId),
    /// §1d: an enqueue that cancelled holders (and superseded waiters).
    Cancelled {
        holders: Vec<InstanceId>,
        superseded: usize,
    },
    /// An enqueue that superseded waiters.
    Superseded(usize),
    /// A release that handed the key on.
    HandedTo(InstanceId),
    /// §1d: a cancelled holder's status once terminated, found alive.
    Terminated(Liveness),
    /// §1a: an instance found through another binding than `from`.
    FoundElsewhere { from: String, to: WorkflowName },
    /// §11: a resume, and the slots it handed on.
    Resumed { handed: usize },
    /// §11: a limit set, an operator's override in force or not.
    LimitSet {
        limit: u32,
        overridden: bool,
        handed: usize,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Said(words) => f.write_str(words),
            Reason::HolderChecked { holder, liveness } => {
                write!(f, "holder {holder} checked: {liveness:?}")
            }
            Reason::HolderCheck(liveness) => write!(f, "holder check: {liveness:?}"),
            Reason::Coalesced(into) => write!(f, "a live waiter with the same input: {into}"),
            Reason::Cancelled {
                holders,
                superseded,
            } => {
                write!(f, "cancelled {} holder(s): ", holders.len())?;
                for (i, holder) in holders.iter().enumerate() {
                    let comma = if i == 0 { "" } else { ", " };
                    write!(f, "{comma}{holder}")?;
                }
                write!(f, "; superseded {superseded} waiter(s)")
            }
            Reason::Superseded(n) => write!(f, "superseded {n} waiter(s)"),
            Reason::HandedTo(next) => write!(f, "handed the key to {next}"),
            Reason::Terminated(liveness) => {
                write!(f, "cancelled holder terminated, status: {liveness:?}")
            }
            Reason::FoundElsewhere { from, to } => {
                f.write_str(&crate::workflow::found_elsewhere_reason(from, to.as_str()))
            }
            Reason::Resumed { handed } => write!(f, "resumed: {handed} slot(s) handed on"),
            Reason::LimitSet {
                limit,
                overridden: true,
                handed,
            } => write!(f, "override {limit} in force: {handed} slot(s) handed on"),
            Reason::LimitSet { limit, handed, .. } => write!(
                f,
                "no override: the callers' limit {limit} in force: {handed} slot(s) handed on"
            ),
        }
    }
}
