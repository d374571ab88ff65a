//! The serial queue's decisions, fitted to D1's two rounds.
//!
//! A Durable Object loads its state, decides, then writes; D1 has no
//! input gate to hold the state still between a read and a write, so here
//! the statements do both at once: every rule that must hold under
//! concurrency is a condition in the SQL ([`super::sql`]), and each batch
//! ends by reading back the rows the reply depends on, inside the same
//! transaction. So each command is two rounds:
//! 1. the batch to run, from the request and the time alone ([`enqueue`]
//!    may answer without one: a [`Plan`]);
//! 2. the decision from what the batch gave back (`*_outcome`): a
//!    [`Decided`], whose reply is the caller's, whose `effects` are
//!    [`Effect::Check`] of a holder a claim waits behind and
//!    [`Effect::Wake`] of a turn event, and whose `state` ([`Read`])
//!    keeps what the decision read that their results re-enter with.
//!
//! An effect's result re-enters through [`checked`], whose decision's
//! `follow_up` is the next batch (a claim past a holder found dead, a
//! hand-on past an instance found dead), or none; the follow-up's outcomes
//! are then decided by [`claim_outcome`] or [`hand_on_past_outcome`] as
//! round 2. So claim, heartbeat and release are one round trip each, and
//! enqueue too; a claim that finds its holder dead takes one more. Every
//! decision says its decision-log lines as data ([`super::log`]).

use super::effect::{Check, Effect, Event, News, Wake};
use super::hand_on::hand_on_past;
use super::invariants::entry;
use super::log::{abandoned_lines, hand_on_line};
use super::round::{decided, read_back, statement, text};
use super::sql;
use super::state::{Batch, Entry, EntryState, Outcome, Param, Row, SerialTimeouts, Statement};
use super::types::{ClaimReply, Decided, EnqueueReply, Names, Plan, Read, Seen, SerialEnqueue};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX};
use crate::workflow::Liveness;

pub(super) fn ids(rows: &[Row]) -> Vec<InstanceId> {
    rows.iter().map(|r| entry(r).instance_id).collect()
}

fn optional(value: Option<&str>) -> Param {
    value.map_or(Param::Null, text)
}

/// The event that tells a superseded waiter: its own turn with grant,
/// else the plain turn event (its next claim says `skipped`).
fn superseded_tell(group: &Ident, waiter: Entry, names: Names) -> Wake<Event> {
    let (event_type, news) = match (waiter.turn, waiter.state) {
        (
            Some(turn),
            EntryState::Superseded {
                by, by_revision, ..
            },
        ) => (turn, News::Skipped { by, by_revision }),
        _ => (names.turn_event_type.to_string(), News::Claim),
    };
    Wake {
        workflow: names.workflow(waiter.workflow.as_deref()),
        id: waiter.instance_id,
        event: Event {
            event_type,
            group: group.clone(),
            news,
        },
    }
}

/// The check of the holder a claim waits behind; its result answers the
/// caller ([`checked`]).
fn holder_check(holder: &Seen, names: Names) -> Effect {
    Effect::Check(Check {
        id: holder.id.clone(),
        workflow: names.workflow(holder.workflow.as_deref()),
        answers: true,
    })
}

// --- enqueue ----------------------------------------------------------------

/// `serialEnqueue`: a stale revision skips at once; otherwise insert (below
/// the waiter bound), supersede, prune and then either read the caller's
/// row back or claim (which returns it), in one batch.
pub fn enqueue(
    request: &SerialEnqueue,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> Plan<EnqueueReply> {
    let supersede = match &request.current {
        Some(current) if *current != request.revision => {
            let reply = EnqueueReply::Skipped {
                current: current.clone(),
            };
            return Plan::Done(Box::new(decided(reply, Vec::new(), Read::default())));
        }
        // The arrival is the current revision: every waiter at another one goes.
        Some(_) => sql::SUPERSEDE_NOT_CURRENT,
        // No head known: arrival order decides, every older waiter goes.
        None => sql::SUPERSEDE_OLDER,
    };
    let group = || text(request.group.as_str());
    let id = || text(request.instance_id.as_str());
    let row = || {
        vec![
            group(),
            id(),
            text(request.revision.as_str()),
            Param::Integer(now_ms),
        ]
    };
    let mut insert = row();
    insert.extend([
        Param::Integer(u64::from(SERIAL_WAITERS_PER_GROUP_MAX)),
        optional(request.workflow.as_deref()),
        optional(request.grant.as_deref()),
    ]);
    let mut statements = vec![
        statement(sql::INSERT_WAITER, insert),
        statement(supersede, row()),
        statement(
            sql::PRUNE_FINISHED,
            vec![
                group(),
                id(),
                Param::Integer(u64::from(SERIAL_RECENT_PER_GROUP_MAX)),
                text(request.revision.as_str()),
            ],
        ),
    ];
    if request.claim {
        // Only at the request's revision: a retry at another one is refused
        // below and must change nothing.
        let revision = Some(&request.revision);
        statements.extend(claim_statements(
            &request.group,
            &request.instance_id,
            revision,
            now_ms,
            timeouts,
        ));
    } else {
        statements.push(statement(sql::READ_ENTRY, vec![group(), id()]));
    }
    Plan::Run(Batch(statements))
}

/// The enqueue's reply, from its batch's outcomes: the caller's row as it
/// now is says what happened. Its effects: with `claim`, the check of the
/// holder it waits behind (which answers: [`checked`], then
/// [`enqueue_claimed`]); then a tell to each waiter it superseded.
pub fn enqueue_outcome(
    request: &SerialEnqueue,
    outcomes: &[Outcome],
    names: Names,
) -> Result<Decided<EnqueueReply>, BatonError> {
    let at = read_back(outcomes, if request.claim { 5 } else { 4 });
    let last = &at(outcomes.len() - 1).rows;
    let me = caller_entry(request, last)?;
    let tells: Vec<Wake<Event>> = at(1)
        .rows
        .iter()
        .map(|r| superseded_tell(&request.group, entry(r), names))
        .collect();
    let superseded: Vec<InstanceId> = tells.iter().map(|t| t.id.clone()).collect();
    let tell_each = |mut effects: Vec<Effect>| {
        effects.extend(tells.into_iter().map(Effect::Wake));
        effects
    };
    if let EntryState::Superseded { by_revision, .. } = me.state {
        // A retry after a newer revision won: the truth is that it skips.
        let reply = EnqueueReply::Skipped {
            current: by_revision,
        };
        return Ok(decided(reply, tell_each(Vec::new()), Read::default()));
    }
    let abandoned = match (request.claim, &me.state) {
        (true, _) => ids(&at(3).rows),
        (false, EntryState::Waiting) => {
            let reply = EnqueueReply::Waiting {
                superseded,
                turn: me.turn.clone(),
            };
            let read = Read {
                me: Some(me),
                ..Read::default()
            };
            return Ok(decided(reply, tell_each(Vec::new()), read));
        }
        // A retry that finds itself handed the group by grant (or that
        // lost it since) answers as a claim would: the truth.
        (false, _) if me.turn.is_some() => Vec::new(),
        (false, EntryState::Holding { .. }) => {
            return Err(BatonError::Invalid {
                field: "instanceId",
                reason: "already holds this group".into(),
            })
        }
        (false, finished) => return Err(already_left(finished)),
    };
    let claimed = claimed(abandoned, last, me, true, names)?;
    let reply = EnqueueReply::Claimed {
        superseded,
        claim: claimed.reply,
    };
    Ok(decided(reply, tell_each(claimed.effects), claimed.state))
}

/// The caller's row as the enqueue's batch left it (`last`, the group's
/// rows read back): refused if the bound kept it out, or if it waits with
/// another revision than the request's.
fn caller_entry(request: &SerialEnqueue, last: &[Row]) -> Result<Entry, BatonError> {
    let Some(me) = last
        .iter()
        .find(|r| r.instance_id == request.instance_id.as_str())
        .map(entry)
    else {
        // Not inserted and not there before: the bound refused it.
        return Err(BatonError::LimitExceeded {
            field: "group",
            reason: format!(
                "already has {SERIAL_WAITERS_PER_GROUP_MAX} waiters, the most one group holds"
            ),
        });
    };
    if me.revision != request.revision && me.state == EntryState::Waiting {
        return Err(BatonError::Invalid {
            field: "revision",
            reason: format!(
                "differs from {}, the revision this instanceId was enqueued with",
                me.revision
            ),
        });
    }
    Ok(me)
}

fn already_left(state: &EntryState) -> BatonError {
    BatonError::Invalid {
        field: "instanceId",
        reason: format!("already left this group ({})", state.name()),
    }
}

// --- claim ------------------------------------------------------------------

/// `serialClaim` in one batch: abandon a stale holder, then take the group
/// if nobody holds it or time out a waiter stuck behind the holder,
/// returning the caller's row and the holder's as they are after it.
pub fn claim(group: &Ident, id: &InstanceId, now_ms: u64, timeouts: SerialTimeouts) -> Batch {
    Batch(claim_statements(group, id, None, now_ms, timeouts).into())
}

/// The claim's two statements, for the caller at `revision` (any, if `None`).
fn claim_statements(
    group: &Ident,
    id: &InstanceId,
    revision: Option<&Ident>,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> [Statement; 2] {
    let with = |bound: u64| {
        vec![
            text(group.as_str()),
            text(id.as_str()),
            Param::Integer(now_ms),
            Param::Integer(bound),
            optional(revision.map(Ident::as_str)),
        ]
    };
    [
        statement(
            sql::ABANDON_STALE_HOLDER,
            with(timeouts.oldest_live_heartbeat_ms(now_ms)),
        ),
        statement(sql::CLAIM, with(timeouts.waiter_cutoff_ms(now_ms))),
    ]
}

/// The claim again, after the holder it found (`dead`) was reported dead:
/// that holder loses the group first, in the same batch, if it still holds
/// with the heartbeat that was read.
pub fn claim_past_dead(
    group: &Ident,
    id: &InstanceId,
    dead: &Seen,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> Batch {
    let mut statements = vec![statement(
        sql::ABANDON_DEAD_HOLDER,
        vec![
            text(group.as_str()),
            text(dead.id.as_str()),
            Param::Integer(now_ms),
            Param::Integer(dead.heartbeat_at_ms),
        ],
    )];
    statements.extend(claim(group, id, now_ms, timeouts).0);
    Batch(statements)
}

/// The claim's reply, from the rows its batch returned ([`claim`] or
/// [`claim_past_dead`]: the claim is the last statement, every earlier one
/// an abandon). Waiting behind a holder, its effect is that holder's check,
/// which answers ([`checked`]).
pub fn claim_outcome(
    id: &InstanceId,
    outcomes: &[Outcome],
    names: Names,
) -> Result<Decided<ClaimReply>, BatonError> {
    assert!(
        outcomes.len() == 2 || outcomes.len() == 3,
        "a claim batch of {} statements",
        outcomes.len()
    );
    let at = read_back(outcomes, outcomes.len());
    let rows = &at(outcomes.len() - 1).rows;
    let me = rows
        .iter()
        .find(|r| r.instance_id == id.as_str())
        .map(entry)
        .ok_or_else(|| BatonError::Invalid {
            field: "instanceId",
            reason: "is not enqueued in this group (call serialEnqueue first)".into(),
        })?;
    let mut abandoned = Vec::new();
    for abandon in &outcomes[..outcomes.len() - 1] {
        abandoned.extend(ids(&abandon.rows));
    }
    let grant = me.turn.is_some();
    let log = abandoned_lines(&abandoned);
    let claimed = claimed(abandoned, rows, me, grant, names)?;
    Ok(Decided { log, ..claimed })
}

/// The claim's decision for the caller's row `me` after its claim (`rows`:
/// its row and the holder's), `abandoned` the holders abandoned before it;
/// `grant_or_enqueue` for a caller §2a answers (registered with grant, or
/// claiming on enqueue).
fn claimed(
    abandoned: Vec<InstanceId>,
    rows: &[Row],
    me: Entry,
    grant_or_enqueue: bool,
    names: Names,
) -> Result<Decided<ClaimReply>, BatonError> {
    let holder = rows.iter().find(|r| r.state == "holding").map(entry);
    let mut behind = None;
    let reply = match &me.state {
        EntryState::Holding { .. } => ClaimReply::Holding {
            fence: me.fence.filter(|_| grant_or_enqueue),
        },
        EntryState::Superseded {
            by, by_revision, ..
        } => ClaimReply::Skipped {
            by: by.clone(),
            by_revision: by_revision.clone(),
        },
        EntryState::TimedOut { .. } => ClaimReply::TimedOut,
        // Handed the group by grant (or granted by a claim on enqueue whose
        // reply was lost), it did not learn so in time (its turn event
        // lost, its poll or retry later than the heartbeat expiry) and lost
        // it as stale: it never held it as far as it knows, and it waited
        // too long for it.
        EntryState::Abandoned { .. } if grant_or_enqueue => ClaimReply::TimedOut,
        // Still waiting after its own claim ran: someone holds the group,
        // or nobody does and the group is paused (CLAIM lets a waiter into
        // a free group unless it is: `sql::CLAIM`), so it waits behind
        // nobody until the resume.
        EntryState::Waiting => {
            if let Some(Entry {
                state: EntryState::Holding { heartbeat_at_ms },
                instance_id,
                workflow,
                ..
            }) = &holder
            {
                behind = Some(Seen {
                    id: instance_id.clone(),
                    workflow: workflow.clone(),
                    heartbeat_at_ms: *heartbeat_at_ms,
                });
            }
            ClaimReply::Waiting {
                holder: holder.map(|h| h.instance_id),
                turn: me.turn.clone(),
            }
        }
        left => return Err(already_left(left)),
    };
    let effects = behind.iter().map(|h| holder_check(h, names)).collect();
    let read = Read {
        me: Some(me),
        abandoned,
        behind,
        went_on: None,
    };
    Ok(decided(reply, effects, read))
}

/// A claim on enqueue's decision once its holder's check re-entered as
/// [`claim_past_dead`]'s batch (`claimed`, from [`claim_outcome`]): the
/// claim's reply, with the enqueue's `superseded` and the fence shown as a
/// claim on enqueue shows it.
pub fn enqueue_claimed(
    superseded: Vec<InstanceId>,
    claimed: Decided<ClaimReply>,
) -> Decided<EnqueueReply> {
    let Decided {
        reply,
        effects,
        state,
        ..
    } = claimed;
    let claim = match reply {
        ClaimReply::Holding { .. } => ClaimReply::Holding {
            fence: state.me.as_ref().and_then(|me| me.fence),
        },
        other => other,
    };
    decided(EnqueueReply::Claimed { superseded, claim }, effects, state)
}

/// An effect's result, re-entering: `id` was reported `liveness`. Dead (or
/// not found: a serialized instance enqueues itself, so there is no grace),
/// and the instance the decision that asked (`read`) waits behind or went
/// on to, the follow-up batch passes it over as it was read: a claim past
/// the dead holder ([`claim_past_dead`], then [`claim_outcome`]), or the
/// group going on past the dead one ([`hand_on_past`], then
/// [`super::hand_on::hand_on_past_outcome`]). Alive or unknown: no writes, and nothing
/// changes.
pub fn checked(
    group: &Ident,
    read: &Read,
    id: &InstanceId,
    liveness: Liveness,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> Decided<()> {
    let dead = liveness.is_dead(None, now_ms, 0);
    let mut follow_up = None;
    if let (true, Some(holder), Some(me)) = (dead, &read.behind, &read.me) {
        if holder.id == *id {
            follow_up = Some(claim_past_dead(
                group,
                &me.instance_id,
                holder,
                now_ms,
                timeouts,
            ));
        }
    }
    let mut log = Vec::new();
    if let Some(next) = read.went_on.as_ref().filter(|h| h.to == *id) {
        if dead {
            follow_up = Some(hand_on_past(group, next, now_ms));
        }
        log.push(hand_on_line(next, dead));
    }
    Decided {
        follow_up,
        log,
        ..decided((), Vec::new(), Read::default())
    }
}

// --- heartbeat --------------------------------------------------------------

/// `serialHeartbeat`: one conditional update.
pub fn heartbeat(group: &Ident, id: &InstanceId, now_ms: u64) -> Batch {
    Batch(vec![statement(
        sql::HEARTBEAT,
        vec![
            text(group.as_str()),
            text(id.as_str()),
            Param::Integer(now_ms),
        ],
    )])
}

/// Whether the caller still holds the group; nothing follows.
pub fn heartbeat_outcome(outcomes: &[Outcome]) -> Decided<bool> {
    let at = read_back(outcomes, 1);
    decided(at(0).changes == 1, Vec::new(), Read::default())
}
