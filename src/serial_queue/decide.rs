//! The serial queue's decisions, in the one shape every object decides in
//! ([`crate::transition`]), fitted to D1's two rounds.
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
//!    [`Transition`], whose reply is the caller's, whose `effects` are the
//!    shared [`Effect`]s ([`Effect::Check`] of a holder a claim waits
//!    behind, [`Effect::Wake`] of a turn event), and whose `state`
//!    ([`Read`]) keeps what the decision read that their results re-enter
//!    with. Its `writes` are empty: the batch has run.
//!
//! An effect's result re-enters through [`checked`], whose transition's
//! `writes` are the follow-up batch (a claim past a holder found dead, a
//! hand-on past an instance found dead), or none; the follow-up's outcomes
//! are then decided by [`claim_outcome`] or [`hand_on_past_outcome`] as
//! round 2. So claim, heartbeat and release are one round trip each, and
//! enqueue too; a claim that finds its holder dead takes one more.
//!
//! A full [`crate::transition::Transition`] per round, rather than a
//! serial type of its own, keeps the shell's perform step the same
//! exhaustive `match` over [`Effect`] as the driver's; the two rounds
//! stay because a batch must run before the decision that reads it.

use super::effect::{Check, Effect, Event, News, Wake};
use super::invariants::{assert_invariants, entry};
use super::sql;
use super::state::{Batch, Entry, EntryState, Outcome, Param, Row, SerialTimeouts, Statement};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{
    SERIAL_INSPECT_WAITING_MAX, SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX,
};
use crate::transition::Alarm;
use crate::workflow::Liveness;

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

/// A serial decision in the shared shape ([`crate::transition`]). D1 is the
/// state, and a decision's own batch has already run when it is taken (the
/// batch writes and reads back in one transaction): `writes` is the
/// follow-up batch a re-entered result asks for ([`checked`]), or none;
/// `effects` are [`Effect::Check`]s (a holder a claim waits behind, which
/// answers the caller) and [`Effect::Wake`]s (turn events); `state` is
/// what the decision read that their results re-enter with ([`Read`]).
/// The alarm is never used: D1 has none.
pub type Transition<R> = crate::transition::Transition<R, Statement, Read, Effect>;

/// What a decision read back that the shell logs and that its effects'
/// results re-enter with ([`checked`]): the table itself is the state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Read {
    /// The caller's row as its batch left it.
    pub me: Option<Entry>,
    /// The holders the batch abandoned (stale, or found dead).
    pub abandoned: Vec<InstanceId>,
    /// The holder a waiting claim is behind, as read: checked, dead, it is
    /// passed over only if it still holds as it was read.
    pub behind: Option<Seen>,
    /// The instance the group went on to: told, dead, it is passed over.
    pub went_on: Option<HandOn>,
}

/// The instance a group went on to: woken to claim, or handed the group
/// (then `holding_since` is the heartbeat it was handed it with). Its
/// status is checked after the reply; dead, it is passed over
/// ([`checked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOn {
    pub to: InstanceId,
    pub holding_since: Option<u64>,
}

/// The Worker's names a decision writes into its effects: the Workflow
/// binding of an instance that named none (`WORKFLOW_BINDING`) and the
/// plain turn event's type (`TURN_EVENT_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names<'a> {
    pub workflow: &'a str,
    pub turn_event_type: &'a str,
}

impl Names<'_> {
    /// The binding an instance is reached through.
    fn workflow(&self, named: Option<&str>) -> String {
        named.unwrap_or(self.workflow).to_string()
    }
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

/// A command's first round: answered from the request alone, or a batch
/// to run, whose outcomes its `*_outcome` decision reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan<R> {
    Done(Box<Transition<R>>),
    Run(Batch),
}

/// A decision with no follow-up batch.
fn decided<R>(reply: R, effects: Vec<Effect>, state: Read) -> Transition<R> {
    Transition {
        reply,
        writes: Vec::new(),
        effects,
        alarm: Alarm::Keep,
        state,
    }
}

fn text(value: &str) -> Param {
    Param::Text(value.to_string())
}

fn statement(sql: &'static str, params: Vec<Param>) -> Statement {
    Statement { sql, params }
}

/// The outcomes of a batch, checked against the invariants as they come
/// back: every row read back is checked before a decision rests on it.
fn read_back<'a>(outcomes: &'a [Outcome], statements: usize) -> impl Fn(usize) -> &'a Outcome + 'a {
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
) -> Result<Transition<EnqueueReply>, BatonError> {
    let at = read_back(outcomes, if request.claim { 5 } else { 4 });
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
    let claimed = claimed(
        request.instance_id.clone(),
        abandoned,
        last,
        me,
        true,
        names,
    )?;
    let reply = EnqueueReply::Claimed {
        superseded,
        claim: claimed.reply,
    };
    Ok(decided(reply, tell_each(claimed.effects), claimed.state))
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
) -> Result<Transition<ClaimReply>, BatonError> {
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
    claimed(id.clone(), abandoned, rows, me, grant, names)
}

/// The claim's decision for the caller's row `me` after its claim (`rows`:
/// its row and the holder's), `abandoned` the holders abandoned before it;
/// `grant_or_enqueue` for a caller §2a answers (registered with grant, or
/// claiming on enqueue).
fn claimed(
    id: InstanceId,
    abandoned: Vec<InstanceId>,
    rows: &[Row],
    me: Entry,
    grant_or_enqueue: bool,
    names: Names,
) -> Result<Transition<ClaimReply>, BatonError> {
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
    claimed: Transition<ClaimReply>,
) -> Transition<EnqueueReply> {
    let Transition {
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
/// [`hand_on_past_outcome`]). Alive or unknown: no writes, and nothing
/// changes.
pub fn checked(
    group: &Ident,
    read: &Read,
    id: &InstanceId,
    liveness: Liveness,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> Transition<()> {
    let mut writes = Vec::new();
    if liveness.is_dead(None, now_ms, 0) {
        if let (Some(holder), Some(me)) = (&read.behind, &read.me) {
            if holder.id == *id {
                writes = claim_past_dead(group, &me.instance_id, holder, now_ms, timeouts).0;
            }
        }
        if let Some(dead) = read.went_on.as_ref().filter(|h| h.to == *id) {
            writes = hand_on_past(group, dead, now_ms).0;
        }
    }
    Transition {
        writes,
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
pub fn heartbeat_outcome(outcomes: &[Outcome]) -> Transition<bool> {
    let at = read_back(outcomes, 1);
    decided(at(0).changes == 1, Vec::new(), Read::default())
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
/// handed it by grant, or, after `freed`, woken to claim; told so, and
/// its status re-enters ([`checked`]). A first waiter with grant still
/// waiting waits behind a holder: it learns from its own turn when that
/// one releases.
fn went_on<R>(
    group: &Ident,
    reply: R,
    first: &Outcome,
    freed: bool,
    names: Names,
) -> Transition<R> {
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
pub fn release_outcome(group: &Ident, outcomes: &[Outcome], names: Names) -> Transition<Released> {
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
pub fn hand_on_past_outcome(group: &Ident, outcomes: &[Outcome], names: Names) -> Transition<()> {
    let at = read_back(outcomes, 2);
    went_on(group, (), at(1), at(0).changes > 0, names)
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
    let at = read_back(outcomes, 3);
    let entries = |i: usize| at(i).rows.iter().map(entry).collect::<Vec<_>>();
    Inspection {
        holder: entries(0).into_iter().next(),
        waiting: entries(1),
        recent: entries(2),
    }
}
