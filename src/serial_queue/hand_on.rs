//! Where a group goes when its holder leaves: `serialRelease`, the
//! hand-over by grant to the first waiter (or the first waiter woken to
//! claim), and the hand-on past an instance found dead.

use super::effect::{Effect, Event, News, Wake};
use super::invariants::entry;
use super::round::{decided, read_back, statement, text};
use super::sql;
use super::state::{Batch, Entry, EntryState, Outcome, Param, Statement};
use super::types::{Decided, HandOn, Names, Read, Released};
use crate::ident::{Ident, InstanceId};

/// The hand-over by grant, which also reads the first waiter: the tail of
/// every batch that may leave the group free.
fn hand_over(group: &Ident, now_ms: u64) -> Statement {
    statement(
        sql::HAND_OVER,
        vec![text(group.as_str()), Param::Integer(now_ms)],
    )
}

/// `serialRelease` in one batch: leave the group (as holder or waiter),
/// then hand a freed group to its first waiter if that one registered
/// with grant (reading the first waiter either way).
pub fn release(group: &Ident, id: &InstanceId, now_ms: u64) -> Batch {
    Batch(vec![
        statement(
            sql::RELEASE,
            vec![
                text(group.as_str()),
                text(id.as_str()),
                Param::Integer(now_ms),
            ],
        ),
        hand_over(group, now_ms),
    ])
}

/// Where the group went from a hand-over's outcome: to the first waiter,
/// handed it by grant, or, after `freed`, woken to claim; told so, and
/// its status re-enters ([`checked`]). A first waiter with grant still
/// waiting waits behind a holder: it learns from its own turn when that
/// one releases.
pub(super) fn went_on<R>(
    group: &Ident,
    reply: R,
    first: &Outcome,
    freed: bool,
    names: Names,
) -> Decided<R> {
    let next = match first.rows.first().map(entry) {
        Some(next) if matches!(next.state, EntryState::Holding { .. }) => Some(next),
        Some(next) if freed && next.turn.is_none() => Some(next),
        _ => None,
    };
    let Some(next) = next else {
        return decided(reply, Vec::new(), Read::default());
    };
    let (tell, hand_on) = hand_on_to(group, next, names);
    let read = Read {
        went_on: Some(hand_on),
        ..Read::default()
    };
    decided(reply, vec![Effect::Wake(tell)], read)
}

/// How the caller left, and where the group went: a freed group to its
/// first waiter (handed by grant, or woken to claim).
pub fn release_outcome(group: &Ident, outcomes: &[Outcome], names: Names) -> Decided<Released> {
    let at = read_back(outcomes, 2);
    let reply = match at(0).rows.first().map(entry).map(|e| e.state) {
        None => Released::HeldNothing,
        Some(EntryState::Released { held: true, .. }) => Released::FreedGroup,
        Some(EntryState::Released { held: false, .. }) => Released::LeftQueue,
        Some(other) => panic!("a released row reads back as {}", other.name()),
    };
    went_on(group, reply, at(1), reply == Released::FreedGroup, names)
}

/// The instance a group went on to was found dead: it loses its place (a
/// waiter) or the group (a holder handed it, if it still holds with the
/// heartbeat it was handed), and the group goes on from there, in one
/// batch.
pub fn hand_on_past(group: &Ident, dead: &HandOn, now_ms: u64) -> Batch {
    let mut params = vec![
        text(group.as_str()),
        text(dead.to.as_str()),
        Param::Integer(now_ms),
    ];
    let abandon = match dead.holding_since {
        Some(since) => {
            params.push(Param::Integer(since));
            sql::ABANDON_DEAD_HOLDER
        }
        None => sql::ABANDON_WAITER,
    };
    Batch(vec![statement(abandon, params), hand_over(group, now_ms)])
}

/// Where the group goes after the dead one. If the abandon found it moved
/// on (it claimed, heartbeat or left since its status was read), the group
/// was not freed here, but the hand-over in the same batch still gives a
/// free group to a first waiter with grant, and that grant must be sent.
pub fn hand_on_past_outcome(group: &Ident, outcomes: &[Outcome], names: Names) -> Decided<()> {
    let at = read_back(outcomes, 2);
    went_on(group, (), at(1), at(0).changes > 0, names)
}

/// The hand-on to `next`: handed the group when it holds (by grant), else
/// woken to claim.
fn hand_on_to(group: &Ident, next: Entry, names: Names) -> (Wake<Event>, HandOn) {
    let (event_type, news, holding_since) = match (&next.state, next.turn, next.fence) {
        (EntryState::Holding { heartbeat_at_ms }, Some(turn), Some(fence)) => {
            (turn, News::Holding { fence }, Some(*heartbeat_at_ms))
        }
        (EntryState::Waiting, _, _) => (names.turn_event_type.to_string(), News::Claim, None),
        (other, ..) => panic!("handing on to a row in state {}", other.name()),
    };
    let hand_on = HandOn {
        to: next.instance_id.clone(),
        holding_since,
    };
    let tell = Wake {
        id: next.instance_id,
        workflow: names.workflow(next.workflow.as_deref()),
        event: Event {
            event_type,
            group: group.clone(),
            news,
        },
    };
    (tell, hand_on)
}
