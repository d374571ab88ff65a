//! The serial queue's decisions, one pair per command: the batch to run
//! (from the request and the time alone), then the reply and the wakes
//! from what the batch gave back.
//!
//! Every batch ends by reading back the rows the reply depends on, inside
//! the same transaction, so a reply never rests on a read from an earlier
//! round trip: claim, heartbeat and release are one round trip each, and
//! enqueue too. The conditions in the statements ([`super::sql`]) make each
//! write safe whatever happened since the caller last looked.

use super::invariants::{assert_invariants, entry};
use super::sql;
use super::state::{Batch, Entry, EntryState, Outcome, Param, Row, SerialTimeouts, Statement};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{
    SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX,
    WAKE_ATTEMPTS_PER_CALL_MAX,
};

/// `serialEnqueue`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub current: Option<Ident>,
}

/// `serialEnqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueReply {
    /// Enqueued (or already waiting); `superseded` are the waiters this
    /// arrival dropped.
    Waiting { superseded: Vec<InstanceId> },
    /// Not enqueued: `current` is the revision that runs instead (the
    /// request's `current`, or the revision that superseded this id).
    Skipped { current: Ident },
}

/// `serialClaim`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    Holding,
    Waiting { holder: Option<InstanceId> },
    Skipped { by: InstanceId, by_revision: Ident },
    TimedOut,
}

/// How a `serialRelease` left the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The caller neither held nor waited: nothing changed.
    HeldNothing,
    /// A waiter left the queue.
    LeftQueue,
    /// The holder freed the group.
    FreedGroup,
}

/// Whom the shell sends the turn event, after the batch committed and the
/// reply is settled. Events are hints: a waiter that misses one claims at
/// its next poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Nobody,
    /// Superseded waiters, each told so its next claim says `skipped`.
    Each(Vec<InstanceId>),
    /// The group is free: the first of these (in hand-on order) found
    /// alive is woken; each found dead is abandoned ([`waiter_dead`]) and
    /// the next tried.
    FirstAlive(Vec<InstanceId>),
}

/// A decision's reply and the wakes that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    pub reply: R,
    pub wake: Wake,
}

/// A command either answers from the request alone or runs a batch first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan<R> {
    Done(R),
    Run(Batch),
}

fn text(value: &str) -> Param {
    Param::Text(value.to_string())
}

fn statement(sql: &'static str, params: Vec<Param>) -> Statement {
    Statement { sql, params }
}

/// The outcomes of a batch, checked against the invariants as they come
/// back: every row read back is checked before a decision rests on it.
fn checked<'a>(outcomes: &'a [Outcome], statements: usize) -> impl Fn(usize) -> &'a Outcome + 'a {
    assert!(
        outcomes.len() == statements,
        "a batch of {statements} statements gave {} outcomes",
        outcomes.len()
    );
    for outcome in outcomes {
        assert_invariants(&outcome.rows);
    }
    move |i| &outcomes[i]
}

fn ids(rows: &[Row]) -> Vec<InstanceId> {
    rows.iter().map(|r| entry(r).instance_id).collect()
}

// --- enqueue ----------------------------------------------------------------

/// `serialEnqueue`: a stale revision skips at once; otherwise insert (below
/// the waiter bound), supersede, prune and read the caller's row back, in
/// one batch.
pub fn enqueue(request: &SerialEnqueue, now_ms: u64) -> Plan<EnqueueReply> {
    let supersede = match &request.current {
        Some(current) if *current != request.revision => {
            return Plan::Done(EnqueueReply::Skipped {
                current: current.clone(),
            })
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
    insert.push(Param::Integer(u64::from(SERIAL_WAITERS_PER_GROUP_MAX)));
    Plan::Run(Batch(vec![
        statement(sql::INSERT_WAITER, insert),
        statement(supersede, row()),
        statement(
            sql::PRUNE_FINISHED,
            vec![
                group(),
                id(),
                Param::Integer(u64::from(SERIAL_RECENT_PER_GROUP_MAX)),
            ],
        ),
        statement(sql::READ_ENTRY, vec![group(), id()]),
    ]))
}

/// The enqueue's reply, from its batch's outcomes: the caller's row as it
/// now is says what happened.
pub fn enqueue_outcome(
    request: &SerialEnqueue,
    outcomes: &[Outcome],
) -> Result<Decided<EnqueueReply>, BatonError> {
    let at = checked(outcomes, 4);
    let Some(me) = at(3).rows.first().map(entry) else {
        // Not inserted and not there before: the bound refused it.
        return Err(BatonError::LimitExceeded {
            field: "group",
            reason: format!(
                "already has {SERIAL_WAITERS_PER_GROUP_MAX} waiters, the most one group holds"
            ),
        });
    };
    match me.state {
        EntryState::Waiting if me.revision != request.revision => Err(BatonError::Invalid {
            field: "revision",
            reason: format!(
                "differs from {}, the revision this instanceId was enqueued with",
                me.revision
            ),
        }),
        EntryState::Waiting => {
            let superseded = ids(&at(1).rows);
            Ok(Decided {
                wake: if superseded.is_empty() {
                    Wake::Nobody
                } else {
                    Wake::Each(superseded.clone())
                },
                reply: EnqueueReply::Waiting { superseded },
            })
        }
        // A retry after a newer revision won: the truth is that it skips.
        EntryState::Superseded { by_revision, .. } => Ok(Decided {
            reply: EnqueueReply::Skipped {
                current: by_revision,
            },
            wake: Wake::Nobody,
        }),
        EntryState::Holding { .. } => Err(BatonError::Invalid {
            field: "instanceId",
            reason: "already holds this group".into(),
        }),
        finished => Err(already_left(&finished)),
    }
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
    let with = |bound: u64| {
        vec![
            text(group.as_str()),
            text(id.as_str()),
            Param::Integer(now_ms),
            Param::Integer(bound),
        ]
    };
    Batch(vec![
        statement(
            sql::ABANDON_STALE_HOLDER,
            with(timeouts.oldest_live_heartbeat_ms(now_ms)),
        ),
        statement(sql::CLAIM, with(timeouts.waiter_cutoff_ms(now_ms))),
    ])
}

/// What a claim decided, with the caller's row (for how long it waited)
/// and the holder it abandoned, if any (for the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub reply: ClaimReply,
    pub me: Entry,
    pub abandoned: Option<InstanceId>,
}

/// The claim's reply, from the rows its claim returned.
pub fn claim_outcome(id: &InstanceId, outcomes: &[Outcome]) -> Result<Claimed, BatonError> {
    let at = checked(outcomes, 2);
    let rows = &at(1).rows;
    let me = rows
        .iter()
        .find(|r| r.instance_id == id.as_str())
        .map(entry)
        .ok_or_else(|| BatonError::Invalid {
            field: "instanceId",
            reason: "is not enqueued in this group (call serialEnqueue first)".into(),
        })?;
    let holder = rows
        .iter()
        .find(|r| r.state == "holding")
        .map(|r| entry(r).instance_id);
    let reply = match &me.state {
        EntryState::Holding { .. } => ClaimReply::Holding,
        EntryState::Superseded {
            by, by_revision, ..
        } => ClaimReply::Skipped {
            by: by.clone(),
            by_revision: by_revision.clone(),
        },
        EntryState::TimedOut { .. } => ClaimReply::TimedOut,
        EntryState::Waiting => {
            // Still waiting after its own claim ran: someone holds the group.
            assert!(holder.is_some(), "{id} waits behind nobody after claiming");
            ClaimReply::Waiting { holder }
        }
        left => return Err(already_left(left)),
    };
    let abandoned = at(0).rows.first().map(|r| entry(r).instance_id);
    Ok(Claimed {
        reply,
        me,
        abandoned,
    })
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

/// Whether the caller still holds the group.
pub fn heartbeat_outcome(outcomes: &[Outcome]) -> bool {
    let at = checked(outcomes, 1);
    at(0).changes == 1
}

// --- release ----------------------------------------------------------------

/// `serialRelease` in one batch: leave the group (as holder or waiter) and
/// read the waiters a freed group is handed on to.
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
        statement(
            sql::READ_WAITING,
            vec![
                text(group.as_str()),
                Param::Integer(u64::from(WAKE_ATTEMPTS_PER_CALL_MAX)),
            ],
        ),
    ])
}

/// How the caller left, and whom to wake: after a holder frees the group,
/// the earliest live waiter.
pub fn release_outcome(outcomes: &[Outcome]) -> Decided<Released> {
    let at = checked(outcomes, 2);
    match at(0).rows.first().map(entry).map(|e| e.state) {
        None => Decided {
            reply: Released::HeldNothing,
            wake: Wake::Nobody,
        },
        Some(EntryState::Released { held: true, .. }) => Decided {
            reply: Released::FreedGroup,
            wake: Wake::FirstAlive(ids(&at(1).rows)),
        },
        Some(EntryState::Released { held: false, .. }) => Decided {
            reply: Released::LeftQueue,
            wake: Wake::Nobody,
        },
        Some(other) => panic!("a released row reads back as {}", other.name()),
    }
}

/// A waiter found dead while being woken: abandoned, if it still waits,
/// so it never blocks the group.
pub fn waiter_dead(group: &Ident, id: &InstanceId, now_ms: u64) -> Batch {
    Batch(vec![statement(
        sql::ABANDON_WAITER,
        vec![
            text(group.as_str()),
            text(id.as_str()),
            Param::Integer(now_ms),
        ],
    )])
}

// --- inspect ----------------------------------------------------------------

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
    let at = checked(outcomes, 3);
    let entries = |i: usize| at(i).rows.iter().map(entry).collect::<Vec<_>>();
    Inspection {
        holder: entries(0).into_iter().next(),
        waiting: entries(1),
        recent: entries(2),
    }
}
