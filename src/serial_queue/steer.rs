//! An operator's pause and resume of a group (contract §11): the batches
//! and the decisions on what they gave back.
//!
//! The pause's rule itself is a condition in the two statements that let
//! a waiter in (`sql::CLAIM` and `sql::HAND_OVER`, through `paused!`), and
//! its timeout rule one in `sql::CLAIM` (`waits_since!`): whoever claims or
//! releases, concurrently with a pause or not, D1 applies them in the
//! transaction that writes. Here: the pause's upsert, and the resume, which
//! ends, in the same batch, by handing the group on as a release does
//! (`sql::HAND_OVER_ON_RESUME`), if the group was paused.

use super::hand_on::went_on;
use super::invariants::steering;
use super::log::{pause_line, resume_line};
use super::round::{decided, read_back, statement, steering_statement, text};
use super::sql;
use super::state::{Batch, Outcome, Param, Paused};
use super::types::{Decided, Names, Read};
use crate::ident::{Ident, InstanceId};

/// `serialPause`'s request, checked at the edge (`reason` within
/// [`PAUSE_REASON_BYTES_MAX`](crate::limits::PAUSE_REASON_BYTES_MAX) bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerialPause {
    pub group: Ident,
    pub reason: Option<String>,
}

/// `serialPause` in one batch: the group's steering as it was (for the
/// log line), then the pause.
pub fn pause(request: &SerialPause, now_ms: u64) -> Batch {
    let group = || text(request.group.as_str());
    let reason = request.reason.as_deref().map_or(Param::Null, text);
    Batch(vec![
        steering_statement(sql::READ_GROUP, vec![group()]),
        steering_statement(sql::PAUSE, vec![group(), Param::Integer(now_ms), reason]),
    ])
}

/// The pause as it stands; no effects: nothing is let in or handed on.
pub fn pause_outcome(outcomes: &[Outcome]) -> Decided<Paused> {
    let at = read_back(outcomes, 2);
    let was_paused = at(0).groups.first().and_then(steering).is_some();
    let paused = at(1)
        .groups
        .first()
        .and_then(steering)
        .expect("a pause returns its group paused");
    Decided {
        log: vec![pause_line(was_paused)],
        ..decided(paused, Vec::new(), Read::default())
    }
}

/// `serialResume` in one batch: resume a paused group (its waiters'
/// timeouts from `now_ms`), read its holder, then, only if it was paused,
/// hand it on as a release does.
pub fn resume(group: &Ident, now_ms: u64) -> Batch {
    let at_now = || vec![text(group.as_str()), Param::Integer(now_ms)];
    Batch(vec![
        steering_statement(sql::RESUME, at_now()),
        statement(sql::READ_HOLDER, vec![text(group.as_str())]),
        statement(sql::HAND_OVER_ON_RESUME, at_now()),
    ])
}

/// Whom the resume handed the group on to: a first waiter with grant,
/// handed it by its turn, or one without, woken to claim a group nobody
/// holds; its status re-enters as a release's does
/// ([`super::checked`]). `None` when the group was not paused, is held,
/// or has nobody waiting.
pub fn resume_outcome(
    group: &Ident,
    outcomes: &[Outcome],
    names: Names,
) -> Decided<Option<InstanceId>> {
    let at = read_back(outcomes, 3);
    let resumed = !at(0).groups.is_empty();
    let free = at(1).rows.is_empty();
    let went = went_on(group, (), at(2), resumed && free, names);
    let to = went.state.went_on.as_ref().map(|h| h.to.clone());
    Decided {
        reply: to.clone(),
        effects: went.effects,
        follow_up: None,
        state: went.state,
        log: vec![resume_line(resumed, to.as_ref())],
    }
}
