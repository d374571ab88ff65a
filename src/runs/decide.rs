//! The one decision function, [`decide`], and the invariants of what it
//! reads and leaves.
//!
//! It takes the key's [`View`] (the rows its input needs), the time and
//! the input, and returns a [`Transition`]: the reply, the row writes
//! ([`Write`], carried out by `super::sql::write` or, in the simulation,
//! `super::memory::apply`), the retention alarm the key now needs, the
//! check of a claimant the shell must make, and the view as the writes
//! leave it. It never blocks, awaits or fails on I/O.

use super::input::{AppendRequest, ClaimRequest, CompleteRequest, EventsRequest, Outcome, WaitMs};
use super::state::{Claim, Event, EventsReply, Finished, Run, View};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::{RUN_EVENTS_KEPT, RUN_OPEN_WAITS_MAX};
use crate::transition::{Alarm, Check, Lines, Step};
use crate::workflow::Liveness;

/// A decision of the Runs concept.
pub type Transition =
    crate::transition::Transition<Reply, Write, View, Check, super::reason::Reason>;

/// The Worker's settings the decisions depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsConfig {
    /// `RUN_RETENTION_MS`: how long a finished run's record is kept.
    pub retention_ms: u64,
    /// §1a's `ENQUEUE_GRACE_MS`: how long after its claim a claimant that
    /// cannot be found is still taken to be starting.
    pub claim_grace_ms: u64,
}

/// What a decision is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `claim`. `workflow` is the binding a claimant without one of its
    /// own belongs to (`WORKFLOW_BINDING`): the one its check goes through.
    Claim {
        request: ClaimRequest,
        grace_ms: u64,
        workflow: String,
    },
    /// A claim's second phase: what the check of the claimant it saw found.
    Checked {
        pending: PendingClaim,
        liveness: Liveness,
        /// §1a: the other binding that found the claimant, when the one it
        /// is remembered with could not; the claim remembers it from then on.
        through: Option<String>,
    },
    /// `complete`.
    Complete {
        request: CompleteRequest,
        retention_ms: u64,
    },
    /// `await`; `open_waits` is how many long-polls the object holds open.
    Await { timeout: WaitMs, open_waits: u32 },
    /// `append`.
    Append(AppendRequest),
    /// `events`.
    Events {
        request: EventsRequest,
        open_waits: u32,
    },
    /// The retention alarm, for a key it found due.
    Tick,
}

/// A claim waiting for the check of the claimant it found: the first
/// phase's reply, from which the check's result re-enters as
/// [`Input::Checked`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingClaim {
    pub request: ClaimRequest,
    /// The claim as the first phase saw it: the key is freed only if this
    /// same claim still holds it.
    pub checked: Claim,
    pub grace_ms: u64,
    /// The binding the claimant is checked through: its own, or the
    /// default (§1a's line names it when another finds the claimant).
    pub binding: String,
}

/// A run as callers see it: its claimant and, once finished, its outcome
/// (`state` is `"running"` without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunView {
    pub id: InstanceId,
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    /// The caller is the claimant (just now, or already): it must create
    /// (or has created) its instance.
    Claimed,
    /// Another instance holds the claim.
    Taken(RunView),
}

/// What the check of a claimant found, for the claim's decision line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub claimant: InstanceId,
    pub liveness: Liveness,
    /// Whether the claimant was dead and lost the key to the caller.
    pub replaced: bool,
    /// §1a: the binding the claimant was checked through (its own, or
    /// the default) and the one it is remembered with from now on, when
    /// the check found it through another (its line is `warn`).
    pub rebound: Option<(String, String)>,
}

/// A long-poll's first answer: now, or park until woken or `deadline_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Poll<R> {
    Answer(R),
    Park { deadline_ms: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A claim's answer, and the check it took, if one.
    Claim {
        answer: ClaimReply,
        checked: Option<Checked>,
    },
    /// Another instance holds the claim of a run without an outcome: the
    /// shell checks it ([`Check`], answering the caller) and the result
    /// re-enters as [`Input::Checked`], whose reply is the caller's.
    Checking(PendingClaim),
    /// `complete`: the run as it now is if the outcome was recorded (every
    /// open `await` on the key answers with it), `None` if nothing was.
    Complete(Option<RunView>),
    /// `await`: the run (`None`: `state: "none"`), or park.
    Await(Poll<Option<RunView>>),
    /// `append`: the new event's seq; every open `events` on the key whose
    /// `after` is below it answers.
    Append(u64),
    /// `events`: the stretch of the log, or park.
    Events(Poll<EventsReply>),
    /// The retention alarm: whether it deleted the record.
    Expired(bool),
}

/// One row-level change to a key's record or log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Makes the claim the key's claimant (the key has no outcome); the
    /// event log and its sequence are kept.
    Claim(Claim),
    /// Records the outcome of the current claim and when it is deleted.
    Finish(Finished),
    /// Appends an event (its seq one above the latest) and makes its seq
    /// the key's latest.
    Append(Event),
    /// Deletes every event with `seq <=` this.
    ForgetThrough(u64),
    /// Deletes the key's record and its events: the key is as new.
    Delete,
}

/// A decision's answer to its caller, and its transition (whose reply is
/// what the line reads).
pub type Decided<A> = (A, Transition);

/// A decision that writes nothing and leaves the view as it was.
fn unchanged(view: View, reply: Reply) -> Transition {
    Transition {
        reply,
        writes: Vec::new(),
        effects: Vec::new(),
        alarm: Alarm::Keep,
        log: Lines::None,
        state: view,
    }
}

/// First phase of `claim`. Decides at once unless another instance holds
/// the claim of an unfinished run, whose status must be checked outside
/// the gate: then the reply waits for the check.
pub(super) fn claim(
    run: &Run,
    now_ms: u64,
    request: ClaimRequest,
    grace_ms: u64,
    workflow: String,
) -> Decided<Step<ClaimReply, PendingClaim>> {
    match run {
        Run::Running { claim } if claim.id != request.id => {
            let check = Check {
                id: claim.id.clone(),
                workflow: claim.workflow.clone().unwrap_or(workflow),
                answers: true,
            };
            let pending = PendingClaim {
                request,
                checked: claim.clone(),
                grace_ms,
                binding: check.workflow.clone(),
            };
            let reply = Reply::Checking(pending.clone());
            let mut transition = unchanged(View::Record(run.clone()), reply);
            transition.effects.push(check);
            (Step::Check(pending), transition)
        }
        _ => {
            let (answer, transition) = settle_claim(run, now_ms, request, None);
            (Step::Answer(answer), transition)
        }
    }
}

/// Second phase of `claim`, once the status of the claimant the first
/// phase saw is known. Decides on the record as it is now: the key is freed
/// only if that claim still holds it without an outcome and is dead,
/// counting §1a's grace from the claim.
pub(super) fn claim_after_check(
    run: &Run,
    now_ms: u64,
    pending: PendingClaim,
    liveness: Liveness,
    through: Option<String>,
) -> Decided<ClaimReply> {
    let PendingClaim {
        request,
        checked,
        grace_ms,
        binding,
    } = pending;
    let holds = matches!(run, Run::Running { claim } if *claim == checked);
    let replaced = holds && liveness.is_dead(Some(checked.since_ms), now_ms, grace_ms);
    // §1a: found through another binding, the claim still held is that
    // Workflow's instance from now on.
    let rebound = through
        .filter(|to| holds && !replaced && checked.workflow.as_ref() != Some(to))
        .map(|to| (binding, to));
    let note = Checked {
        claimant: checked.id.clone(),
        liveness,
        replaced,
        rebound: rebound.clone(),
    };
    if replaced {
        return take(now_ms, request, Some(note));
    }
    let (answer, mut transition) = settle_claim(run, now_ms, request, Some(note));
    if let Some((_, to)) = rebound {
        let claim = Claim {
            workflow: Some(to),
            ..checked
        };
        transition.state = View::Record(Run::Running {
            claim: claim.clone(),
        });
        transition.writes.push(Write::Claim(claim));
    }
    (answer, transition)
}

/// A claim that needs no (further) check: a free key is taken, the
/// claimant's own claim is confirmed, anyone else learns who holds it.
fn settle_claim(
    run: &Run,
    now_ms: u64,
    request: ClaimRequest,
    checked: Option<Checked>,
) -> Decided<ClaimReply> {
    let answer = match run {
        Run::Unclaimed => return take(now_ms, request, checked),
        Run::Running { claim } | Run::Finished { claim, .. } if claim.id == request.id => {
            ClaimReply::Claimed
        }
        Run::Running { claim } => ClaimReply::Taken(RunView {
            id: claim.id.clone(),
            outcome: None,
        }),
        Run::Finished { claim, finished } => ClaimReply::Taken(RunView {
            id: claim.id.clone(),
            outcome: Some(finished.outcome.clone()),
        }),
    };
    let reply = Reply::Claim {
        answer: answer.clone(),
        checked,
    };
    (answer, unchanged(View::Record(run.clone()), reply))
}

/// The caller becomes the claimant; the event log carries on.
fn take(now_ms: u64, request: ClaimRequest, checked: Option<Checked>) -> Decided<ClaimReply> {
    let claim = Claim {
        id: request.id,
        since_ms: now_ms,
        workflow: request.workflow,
    };
    let transition = Transition {
        reply: Reply::Claim {
            answer: ClaimReply::Claimed,
            checked,
        },
        writes: vec![Write::Claim(claim.clone())],
        effects: Vec::new(),
        alarm: Alarm::Keep,
        log: Lines::None,
        state: View::Record(Run::Running { claim }),
    };
    (ClaimReply::Claimed, transition)
}

/// `complete`: from the claimant of an unfinished run, records the outcome
/// and wakes every awaiter; anything else (a second call, another
/// instance, no claim) records nothing and says so.
pub(super) fn complete(
    run: &Run,
    now_ms: u64,
    request: &CompleteRequest,
    retention_ms: u64,
) -> Decided<Option<RunView>> {
    let claim = match run {
        Run::Running { claim } if claim.id == request.id => claim,
        _ => return not_recorded(run),
    };
    let delete_at_ms = now_ms.saturating_add(retention_ms);
    let finished = Finished {
        outcome: request.outcome.clone(),
        at_ms: now_ms,
        delete_at_ms,
    };
    let view = Some(RunView {
        id: claim.id.clone(),
        outcome: Some(request.outcome.clone()),
    });
    let transition = Transition {
        reply: Reply::Complete(view.clone()),
        writes: vec![Write::Finish(finished.clone())],
        effects: Vec::new(),
        alarm: Alarm::At(delete_at_ms),
        log: Lines::None,
        state: View::Record(Run::Finished {
            claim: claim.clone(),
            finished,
        }),
    };
    (view, transition)
}

/// `complete` that records nothing: the run as it was.
fn not_recorded(run: &Run) -> Decided<Option<RunView>> {
    let reply = Reply::Complete(None);
    (None, unchanged(View::Record(run.clone()), reply))
}

/// The run as `await` answers it; `None` is `state: "none"`.
pub fn run_view(run: &Run) -> Option<RunView> {
    match run {
        Run::Unclaimed => None,
        Run::Running { claim } => Some(RunView {
            id: claim.id.clone(),
            outcome: None,
        }),
        Run::Finished { claim, finished } => Some(RunView {
            id: claim.id.clone(),
            outcome: Some(finished.outcome.clone()),
        }),
    }
}

/// `await`: answers at once when the run has an outcome, when the caller
/// will not wait, or when `open_waits` (the object's open long-polls) is at
/// its bound; otherwise the caller parks until `complete` or its deadline.
pub fn await_run(
    run: &Run,
    now_ms: u64,
    timeout: WaitMs,
    open_waits: u32,
) -> Decided<Poll<Option<RunView>>> {
    let finished = matches!(run, Run::Finished { .. });
    let poll = if finished || !may_park(timeout, open_waits) {
        Poll::Answer(run_view(run))
    } else {
        Poll::Park {
            deadline_ms: now_ms.saturating_add(timeout.ms()),
        }
    };
    let transition = unchanged(View::Record(run.clone()), Reply::Await(poll.clone()));
    (poll, transition)
}

fn may_park(timeout: WaitMs, open_waits: u32) -> bool {
    timeout > WaitMs::ZERO && open_waits < RUN_OPEN_WAITS_MAX
}

/// `append`: from the claimant (finished or not), adds the next event and
/// forgets the one that falls out of the kept window; from anyone else it
/// is refused, naming `instanceId`, and records nothing.
pub(super) fn append(
    claimant: &Option<InstanceId>,
    latest_seq: Option<u64>,
    now_ms: u64,
    request: AppendRequest,
) -> Result<Decided<u64>, BatonError> {
    let latest_seq = match latest_seq {
        Some(latest) if claimant.as_ref() == Some(&request.id) => latest,
        _ => {
            return Err(BatonError::Invalid {
                field: "instanceId",
                reason: format!("{} is not the claimant of this run", request.id),
            })
        }
    };
    let seq = latest_seq + 1;
    let mut writes = vec![Write::Append(Event {
        seq,
        at_ms: now_ms,
        kind: request.kind,
        data: request.data,
    })];
    if seq > RUN_EVENTS_KEPT {
        // Exactly one event leaves the window per append, so this deletes
        // one row and the log's cost stays flat.
        writes.push(Write::ForgetThrough(seq - RUN_EVENTS_KEPT));
    }
    Ok((
        seq,
        Transition {
            reply: Reply::Append(seq),
            writes,
            effects: Vec::new(),
            alarm: Alarm::Keep,
            log: Lines::None,
            state: View::Appender {
                claimant: claimant.clone(),
                latest_seq: Some(seq),
            },
        },
    ))
}

/// `events`: answers at once when there are events after `after`, when the
/// caller will not wait, or when the object's long-polls are at their
/// bound; otherwise the caller parks until an append or its deadline.
pub fn events(
    slice: &EventsReply,
    now_ms: u64,
    request: &EventsRequest,
    open_waits: u32,
) -> Decided<Poll<EventsReply>> {
    let poll = if !slice.events.is_empty() || !may_park(request.timeout, open_waits) {
        Poll::Answer(slice.clone())
    } else {
        Poll::Park {
            deadline_ms: now_ms.saturating_add(request.timeout.ms()),
        }
    };
    let transition = unchanged(View::Log(slice.clone()), Reply::Events(poll.clone()));
    (poll, transition)
}

/// When the key next needs the retention alarm: its deletion time, once finished.
pub fn alarm_at(run: &Run) -> Option<u64> {
    match run {
        Run::Finished { finished, .. } => Some(finished.delete_at_ms),
        Run::Unclaimed | Run::Running { .. } => None,
    }
}

/// The retention alarm for one key: deletes the record once its time has
/// come. A late, early or repeated alarm is a no-op by construction.
pub(super) fn expire(run: &Run, now_ms: u64) -> Transition {
    match alarm_at(run) {
        Some(at) if at <= now_ms => Transition {
            reply: Reply::Expired(true),
            writes: vec![Write::Delete],
            effects: Vec::new(),
            alarm: Alarm::Keep,
            log: Lines::None,
            state: View::Record(Run::Unclaimed),
        },
        _ => unchanged(View::Record(run.clone()), Reply::Expired(false)),
    }
}

/// Broken-invariant checks of a view, as loaded or as a decision left it:
/// run after every decision in the shell, release builds included, and
/// after every step of the simulation. Cheap: they look only at what the
/// decision read. Panics on violation.
pub fn assert_invariants(view: &View) {
    match view {
        View::Record(Run::Finished { claim, finished }) => {
            assert!(
                finished.at_ms >= claim.since_ms,
                "finished before it was claimed"
            );
            assert!(
                finished.delete_at_ms >= finished.at_ms,
                "deleted before it finished"
            );
        }
        View::Record(Run::Unclaimed | Run::Running { .. }) => {}
        View::Appender {
            claimant,
            latest_seq,
        } => assert!(
            latest_seq.is_none() || claimant.is_some(),
            "read the log for an appender with no claim"
        ),
        View::Log(slice) => assert_slice(slice),
    }
}

fn assert_slice(slice: &EventsReply) {
    let latest = slice.latest_seq;
    let first = slice.first_seq;
    assert!(
        first >= 1 && first <= latest + 1,
        "first kept {first}, latest {latest}"
    );
    assert!(
        latest + 1 - first <= RUN_EVENTS_KEPT,
        "{} events kept, more than {RUN_EVENTS_KEPT}",
        latest + 1 - first
    );
    let mut previous = None;
    for event in &slice.events {
        assert!(
            event.seq >= first && event.seq <= latest,
            "event {} outside the kept log {first}..={latest}",
            event.seq
        );
        if let Some(previous) = previous {
            assert_eq!(event.seq, previous + 1, "a gap in the event sequence");
        }
        previous = Some(event.seq);
    }
}
