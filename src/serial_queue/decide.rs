//! The serial queue's decisions, one pair per command: the batch to run
//! (from the request and the time alone), then the reply and the wakes
//! from what the batch gave back.
//!
//! Every batch ends by reading back the rows the reply depends on, inside
//! the same transaction, so a reply never rests on a read from an earlier
//! round trip: claim, heartbeat and release are one round trip each, and
//! enqueue too (a claim, or a claim on enqueue, that finds the group held by
//! a holder its Workflow reports dead takes one more: [`claim_past_dead`]).
//! The conditions in the statements ([`super::sql`]) make each write safe
//! whatever happened since the caller last looked.

use super::invariants::{assert_invariants, entry};
use super::sql;
use super::state::{Batch, Entry, EntryState, Outcome, Param, Row, SerialTimeouts, Statement};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{
    SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX,
};

/// `serialEnqueue`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub current: Option<Ident>,
    /// The Workflow binding it is checked and woken through (one of
    /// `WORKFLOW_BINDINGS`, checked by the shell); `None` is the default.
    pub workflow: Option<String>,
    /// Registering with grant: the prefix of its turn (`TURN_EVENT_TYPE`).
    pub grant: Option<String>,
    /// Claim in the same batch (contract §2a's claim on enqueue).
    pub claim: bool,
}

/// `serialEnqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueReply {
    /// Enqueued (or already waiting); `superseded` are the waiters this
    /// arrival dropped; `turn` is its own, with grant.
    Waiting {
        superseded: Vec<InstanceId>,
        turn: Option<String>,
    },
    /// Not enqueued: `current` is the revision that runs instead (the
    /// request's `current`, or the revision that superseded this id).
    Skipped { current: Ident },
    /// With `claim`: the claim's reply, after this arrival's superseding.
    Claimed {
        superseded: Vec<InstanceId>,
        claim: ClaimReply,
    },
}

/// `serialClaim`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    /// `fence` is shown to the callers §2a gives one (grant, or a claim on
    /// enqueue) when the row has one.
    Holding {
        fence: Option<u64>,
    },
    Waiting {
        holder: Option<InstanceId>,
        turn: Option<String>,
    },
    Skipped {
        by: InstanceId,
        by_revision: Ident,
    },
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

/// The event an instance is sent, after the batch committed and the reply
/// is settled. Events are hints: one that misses its event claims at its
/// next poll, and a claim says what the event would have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `TURN_EVENT_TYPE` with `{ group }`: a waiter without grant, to claim.
    Plain,
    /// Its own turn with `{ group, instanceId, status: "holding", fence }`:
    /// it was handed the group.
    Holding { turn: String, fence: u64 },
    /// Its own turn with `{ group, instanceId, status: "skipped",
    /// supersededBy }`: a newer arrival superseded it.
    Skipped {
        turn: String,
        by: InstanceId,
        by_revision: Ident,
    },
}

/// One instance to send one event, through its Workflow binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub to: InstanceId,
    /// `None` is `WORKFLOW_BINDING`.
    pub workflow: Option<String>,
    pub event: Event,
}

/// The instance a group went on to: woken to claim, or handed the group
/// (then `holding_since` is the heartbeat it was handed it with). Its
/// status is checked after the reply; dead, it is passed over
/// ([`hand_on_past`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOn {
    pub notice: Notice,
    pub holding_since: Option<u64>,
}

/// Whom the shell sends an event, after the batch committed and the reply
/// is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Nobody,
    /// Superseded waiters, each told so its next claim (or its turn) says
    /// `skipped`.
    Each(Vec<Notice>),
    /// The group went on.
    HandOn(HandOn),
}

/// A decision's reply and the wakes that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    pub reply: R,
    pub wake: Wake,
}

/// The holder a claim found, as it read it: the shell asks its Workflow
/// whether it is dead (contract §2a), and a dead one is abandoned only if
/// it still holds with this heartbeat ([`claim_past_dead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub id: InstanceId,
    pub workflow: Option<String>,
    pub heartbeat_at_ms: u64,
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

fn optional(value: Option<&str>) -> Param {
    value.map_or(Param::Null, text)
}

/// The event that tells a superseded waiter: its own turn with grant.
fn superseded_notice(waiter: Entry) -> Notice {
    let event = match (waiter.turn, waiter.state) {
        (
            Some(turn),
            EntryState::Superseded {
                by, by_revision, ..
            },
        ) => Event::Skipped {
            turn,
            by,
            by_revision,
        },
        _ => Event::Plain,
    };
    Notice {
        to: waiter.instance_id,
        workflow: waiter.workflow,
        event,
    }
}

/// The hand-on to `next`: handed the group when it holds (by grant), else
/// woken to claim.
fn hand_on_to(next: Entry) -> HandOn {
    let (event, holding_since) = match (&next.state, next.turn, next.fence) {
        (EntryState::Holding { heartbeat_at_ms }, Some(turn), Some(fence)) => {
            (Event::Holding { turn, fence }, Some(*heartbeat_at_ms))
        }
        (EntryState::Waiting, _, _) => (Event::Plain, None),
        (other, ..) => panic!("handing on to a row in state {}", other.name()),
    };
    HandOn {
        notice: Notice {
            to: next.instance_id,
            workflow: next.workflow,
            event,
        },
        holding_since,
    }
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
/// now is says what happened. With `claim`, also the holder it waits
/// behind, whose status the shell checks ([`claim_past_dead`]).
pub fn enqueue_outcome(
    request: &SerialEnqueue,
    outcomes: &[Outcome],
) -> Result<(Decided<EnqueueReply>, Option<Seen>), BatonError> {
    let at = checked(outcomes, if request.claim { 5 } else { 4 });
    let last = &at(outcomes.len() - 1).rows;
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
    let notices: Vec<Notice> = at(1)
        .rows
        .iter()
        .map(|r| superseded_notice(entry(r)))
        .collect();
    let superseded: Vec<InstanceId> = notices.iter().map(|n| n.to.clone()).collect();
    let wake = if notices.is_empty() {
        Wake::Nobody
    } else {
        Wake::Each(notices)
    };
    if let EntryState::Superseded { by_revision, .. } = me.state {
        // A retry after a newer revision won: the truth is that it skips.
        let reply = EnqueueReply::Skipped {
            current: by_revision,
        };
        return Ok((Decided { reply, wake }, None));
    }
    let abandoned = match (request.claim, &me.state) {
        (true, _) => ids(&at(3).rows),
        (false, EntryState::Waiting) => {
            let reply = EnqueueReply::Waiting {
                superseded,
                turn: me.turn,
            };
            return Ok((Decided { reply, wake }, None));
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
    let claimed = claimed(request.instance_id.clone(), abandoned, last, me, true)?;
    let reply = EnqueueReply::Claimed {
        superseded,
        claim: claimed.reply,
    };
    Ok((Decided { reply, wake }, claimed.behind))
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

/// What a claim decided, with the caller's row (for how long it waited),
/// the holders it abandoned (for the log) and the holder it still waits
/// behind (whose status the shell checks once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub reply: ClaimReply,
    pub me: Entry,
    pub abandoned: Vec<InstanceId>,
    pub behind: Option<Seen>,
}

/// The claim's reply, from the rows its batch returned ([`claim`] or
/// [`claim_past_dead`]: the claim is the last statement, every earlier one
/// an abandon).
pub fn claim_outcome(id: &InstanceId, outcomes: &[Outcome]) -> Result<Claimed, BatonError> {
    assert!(
        outcomes.len() == 2 || outcomes.len() == 3,
        "a claim batch of {} statements",
        outcomes.len()
    );
    let at = checked(outcomes, outcomes.len());
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
    claimed(id.clone(), abandoned, rows, me, grant)
}

/// The reply for the caller's row `me` after its claim (`rows`: its row and
/// the holder's), `abandoned` the holders abandoned before it;
/// `grant_or_enqueue` for a caller §2a answers (registered with grant, or
/// claiming on enqueue).
fn claimed(
    id: InstanceId,
    abandoned: Vec<InstanceId>,
    rows: &[Row],
    me: Entry,
    grant_or_enqueue: bool,
) -> Result<Claimed, BatonError> {
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
        EntryState::Waiting => {
            // Still waiting after its own claim ran: someone holds the group.
            let Some(holder) = holder else {
                panic!("{id} waits behind nobody after claiming");
            };
            if let EntryState::Holding { heartbeat_at_ms } = holder.state {
                behind = Some(Seen {
                    id: holder.instance_id.clone(),
                    workflow: holder.workflow,
                    heartbeat_at_ms,
                });
            }
            ClaimReply::Waiting {
                holder: Some(holder.instance_id),
                turn: me.turn.clone(),
            }
        }
        left => return Err(already_left(left)),
    };
    Ok(Claimed {
        reply,
        me,
        abandoned,
        behind,
    })
}

/// A claim on enqueue's reply after its holder was found dead
/// ([`claim_past_dead`]): the claim's, with the enqueue's `superseded`
/// and the fence shown as a claim on enqueue shows it.
pub fn enqueue_claimed(superseded: Vec<InstanceId>, claimed: Claimed) -> EnqueueReply {
    let claim = match claimed.reply {
        ClaimReply::Holding { .. } => ClaimReply::Holding {
            fence: claimed.me.fence,
        },
        other => other,
    };
    EnqueueReply::Claimed { superseded, claim }
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
/// handed it by grant, or, after `freed`, woken to claim. A first waiter
/// with grant still waiting waits behind a holder: it learns from its own
/// turn when that one releases.
fn went_on(first: &Outcome, freed: bool) -> Wake {
    match first.rows.first().map(entry) {
        Some(next) if matches!(next.state, EntryState::Holding { .. }) => {
            Wake::HandOn(hand_on_to(next))
        }
        Some(next) if freed && next.turn.is_none() => Wake::HandOn(hand_on_to(next)),
        _ => Wake::Nobody,
    }
}

/// How the caller left, and where the group went: a freed group to its
/// first waiter (handed by grant, or woken to claim).
pub fn release_outcome(outcomes: &[Outcome]) -> Decided<Released> {
    let at = checked(outcomes, 2);
    let reply = match at(0).rows.first().map(entry).map(|e| e.state) {
        None => Released::HeldNothing,
        Some(EntryState::Released { held: true, .. }) => Released::FreedGroup,
        Some(EntryState::Released { held: false, .. }) => Released::LeftQueue,
        Some(other) => panic!("a released row reads back as {}", other.name()),
    };
    Decided {
        wake: went_on(at(1), reply == Released::FreedGroup),
        reply,
    }
}

/// The instance a group went on to was found dead: it loses its place (a
/// waiter) or the group (a holder handed it, if it still holds with the
/// heartbeat it was handed), and the group goes on from there, in one
/// batch.
pub fn hand_on_past(group: &Ident, dead: &HandOn, now_ms: u64) -> Batch {
    let mut params = vec![
        text(group.as_str()),
        text(dead.notice.to.as_str()),
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
pub fn hand_on_past_outcome(outcomes: &[Outcome]) -> Wake {
    let at = checked(outcomes, 2);
    went_on(at(1), at(0).changes > 0)
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
