//! The decision functions: one per method and phase, plus retention.
//!
//! Each takes the key's [`RunStore`], the time (`now_ms`) and the request,
//! writes through the store, and returns the reply with what the shell must
//! do next as data: the claimant to check, the waiters to wake, the time to
//! arm the retention alarm for. None of them blocks, awaits or fails on I/O.

use super::input::{AppendRequest, ClaimRequest, CompleteRequest, EventsRequest, Outcome, WaitMs};
use super::state::{Claim, ClaimantStatus, Event, Finished, Run, RunStore};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::{RUN_EVENTS_KEPT, RUN_OPEN_WAITS_MAX};

/// The Worker's settings the decisions depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsConfig {
    /// `RUN_RETENTION_MS`: how long a finished run's record is kept.
    pub retention_ms: u64,
    /// §1a's `ENQUEUE_GRACE_MS`: how long after its claim a claimant that
    /// cannot be found is still taken to be starting.
    pub claim_grace_ms: u64,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimStep {
    Done(ClaimReply),
    /// Another instance holds the claim of a run without an outcome: find
    /// out whether it is dead, then call [`claim_after_check`] with this snapshot.
    CheckClaimant(Claim),
}

/// Second phase of `claim`: the reply, and the dead claimant it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimDecided {
    pub reply: ClaimReply,
    pub replaced: Option<InstanceId>,
}

/// Whom a decision's commit must wake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Nobody,
    /// Every open `await` on the key, with the run as it now is.
    Awaiters(RunView),
    /// Every open `events` on the key whose `after` is below `seq`.
    EventReaders {
        seq: u64,
    },
}

/// A finished decision: its reply, whom to wake, and the retention alarm
/// the key now needs (the shell arms it unless an earlier one is set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    pub reply: R,
    pub wake: Wake,
    pub alarm_at_ms: Option<u64>,
}

/// A long-poll's first answer: now, or park until woken or `deadline_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Poll<R> {
    Answer(R),
    Park { deadline_ms: u64 },
}

/// `events`' reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsReply {
    pub events: Vec<Event>,
    pub latest_seq: u64,
    /// The oldest event kept; `latest_seq + 1` when none is kept.
    pub first_seq: u64,
}

/// First phase of `claim`. Decides at once unless another instance holds
/// the claim of an unfinished run, which must be checked outside the gate.
pub fn claim(store: &mut impl RunStore, now_ms: u64, request: &ClaimRequest) -> ClaimStep {
    match store.run() {
        Run::Running { claim } if claim.id != request.id => ClaimStep::CheckClaimant(claim),
        run => ClaimStep::Done(settle_claim(store, now_ms, request, run)),
    }
}

/// Second phase of `claim`, once the status of the claimant `checked` (as
/// the first phase saw it) is known. Decides on the record as it is now:
/// the key is freed only if `checked` still holds it without an outcome and
/// is dead, counting §1a's grace from its claim.
pub fn claim_after_check(
    store: &mut impl RunStore,
    now_ms: u64,
    config: &RunsConfig,
    request: &ClaimRequest,
    checked: &Claim,
    status: ClaimantStatus,
) -> ClaimDecided {
    let run = store.run();
    if let Run::Running { claim } = &run {
        if claim == checked && is_dead(claim, status, now_ms, config) {
            take(store, now_ms, request);
            return ClaimDecided {
                reply: ClaimReply::Claimed,
                replaced: Some(claim.id.clone()),
            };
        }
    }
    ClaimDecided {
        reply: settle_claim(store, now_ms, request, run),
        replaced: None,
    }
}

/// A claim that needs no (further) check: a free key is taken, the
/// claimant's own claim is confirmed, anyone else learns who holds it.
fn settle_claim(
    store: &mut impl RunStore,
    now_ms: u64,
    request: &ClaimRequest,
    run: Run,
) -> ClaimReply {
    match run {
        Run::Unclaimed => {
            take(store, now_ms, request);
            ClaimReply::Claimed
        }
        Run::Running { claim } | Run::Finished { claim, .. } if claim.id == request.id => {
            ClaimReply::Claimed
        }
        Run::Running { claim } => ClaimReply::Taken(RunView {
            id: claim.id,
            outcome: None,
        }),
        Run::Finished { claim, finished } => ClaimReply::Taken(RunView {
            id: claim.id,
            outcome: Some(finished.outcome),
        }),
    }
}

fn take(store: &mut impl RunStore, now_ms: u64, request: &ClaimRequest) {
    store.set_claim(&Claim {
        id: request.id.clone(),
        since_ms: now_ms,
        workflow: request.workflow.clone(),
    });
}

/// The contract's dead: ended, or not found once the grace from the claim is over.
fn is_dead(claim: &Claim, status: ClaimantStatus, now_ms: u64, config: &RunsConfig) -> bool {
    match status {
        ClaimantStatus::Ended => true,
        ClaimantStatus::NotFound => now_ms >= claim.since_ms.saturating_add(config.claim_grace_ms),
        ClaimantStatus::Alive | ClaimantStatus::Unknown => false,
    }
}

/// `complete`: from the claimant of an unfinished run, records the outcome
/// and wakes every awaiter; anything else (a second call, another
/// instance, no claim) records nothing and says so.
pub fn complete(
    store: &mut impl RunStore,
    now_ms: u64,
    config: &RunsConfig,
    request: &CompleteRequest,
) -> Decided<bool> {
    let claim = match store.run() {
        Run::Running { claim } if claim.id == request.id => claim,
        _ => {
            return Decided {
                reply: false,
                wake: Wake::Nobody,
                alarm_at_ms: None,
            }
        }
    };
    let delete_at_ms = now_ms.saturating_add(config.retention_ms);
    store.set_finished(&Finished {
        outcome: request.outcome.clone(),
        at_ms: now_ms,
        delete_at_ms,
    });
    Decided {
        reply: true,
        wake: Wake::Awaiters(RunView {
            id: claim.id,
            outcome: Some(request.outcome.clone()),
        }),
        alarm_at_ms: Some(delete_at_ms),
    }
}

/// The run as `await` answers it; `None` is `state: "none"`.
pub fn run_view(store: &impl RunStore) -> Option<RunView> {
    match store.run() {
        Run::Unclaimed => None,
        Run::Running { claim } => Some(RunView {
            id: claim.id,
            outcome: None,
        }),
        Run::Finished { claim, finished } => Some(RunView {
            id: claim.id,
            outcome: Some(finished.outcome),
        }),
    }
}

/// `await`: answers at once when the run has an outcome, when the caller
/// will not wait, or when `open_waits` (the object's open long-polls) is at
/// its bound; otherwise the caller parks until `complete` or its deadline.
pub fn await_run(
    store: &impl RunStore,
    now_ms: u64,
    timeout: WaitMs,
    open_waits: u32,
) -> Poll<Option<RunView>> {
    let view = run_view(store);
    let finished = view.as_ref().is_some_and(|v| v.outcome.is_some());
    if finished || !may_park(timeout, open_waits) {
        return Poll::Answer(view);
    }
    Poll::Park {
        deadline_ms: now_ms.saturating_add(timeout.ms()),
    }
}

fn may_park(timeout: WaitMs, open_waits: u32) -> bool {
    timeout > WaitMs::ZERO && open_waits < RUN_OPEN_WAITS_MAX
}

/// `append`: from the claimant (finished or not), adds the next event and
/// forgets the one that falls out of the kept window; from anyone else it
/// is refused, naming `instanceId`, and records nothing.
pub fn append(
    store: &mut impl RunStore,
    now_ms: u64,
    request: &AppendRequest,
) -> Result<Decided<u64>, BatonError> {
    if store.claimant().as_ref() != Some(&request.id) {
        return Err(BatonError::Invalid {
            field: "instanceId",
            reason: format!("{} is not the claimant of this run", request.id),
        });
    }
    let seq = store.latest_seq() + 1;
    store.push_event(&Event {
        seq,
        at_ms: now_ms,
        kind: request.kind.clone(),
        data: request.data.clone(),
    });
    if seq > RUN_EVENTS_KEPT {
        // Exactly one event leaves the window per append, so this deletes
        // one row and the log's cost stays flat.
        store.forget_events_through(seq - RUN_EVENTS_KEPT);
    }
    Ok(Decided {
        reply: seq,
        wake: Wake::EventReaders { seq },
        alarm_at_ms: None,
    })
}

/// Events after `after`, at most `limit`, with the log's ends.
pub fn read_events(store: &impl RunStore, after: u64, limit: u32) -> EventsReply {
    let latest_seq = store.latest_seq();
    let first_seq = store.first_kept_seq().unwrap_or(latest_seq + 1);
    let events = if after >= latest_seq {
        Vec::new()
    } else {
        store.events_after(after, limit)
    };
    EventsReply {
        events,
        latest_seq,
        first_seq,
    }
}

/// `events`: answers at once when there are events after `after`, when the
/// caller will not wait, or when the object's long-polls are at their
/// bound; otherwise the caller parks until an append or its deadline.
pub fn events(
    store: &impl RunStore,
    now_ms: u64,
    request: &EventsRequest,
    open_waits: u32,
) -> Poll<EventsReply> {
    let reply = read_events(store, request.after.get(), request.limit.get());
    if !reply.events.is_empty() || !may_park(request.timeout, open_waits) {
        return Poll::Answer(reply);
    }
    Poll::Park {
        deadline_ms: now_ms.saturating_add(request.timeout.ms()),
    }
}

/// When the key next needs the retention alarm: its deletion time, once finished.
pub fn alarm_at(store: &impl RunStore) -> Option<u64> {
    match store.run() {
        Run::Finished { finished, .. } => Some(finished.delete_at_ms),
        Run::Unclaimed | Run::Running { .. } => None,
    }
}

/// The retention alarm for one key: deletes the record once its time has
/// come. A late, early or repeated alarm is a no-op by construction.
/// Returns whether the record was deleted.
pub fn expire(store: &mut impl RunStore, now_ms: u64) -> bool {
    match alarm_at(store) {
        Some(at) if at <= now_ms => {
            store.delete_run();
            true
        }
        _ => false,
    }
}

/// Broken-invariant checks, run after every step of the simulation and
/// in debug builds of the shell. Panics on violation.
pub fn assert_invariants(store: &impl RunStore) {
    let latest = store.latest_seq();
    match store.first_kept_seq() {
        None => assert_eq!(latest, 0, "events were appended but none is kept"),
        Some(first) => {
            assert!(
                first >= 1 && first <= latest,
                "first kept {first} > latest {latest}"
            );
            assert!(
                latest - first < RUN_EVENTS_KEPT,
                "{} events kept, more than {RUN_EVENTS_KEPT}",
                latest - first + 1
            );
        }
    }
    let run = store.run();
    assert_eq!(
        run.claim().map(|c| c.id.clone()),
        store.claimant(),
        "the claimant disagrees with the record"
    );
    if let Run::Finished { claim, finished } = &run {
        assert!(
            finished.at_ms >= claim.since_ms,
            "finished before it was claimed"
        );
        assert!(
            finished.delete_at_ms >= finished.at_ms,
            "deleted before it finished"
        );
    }
}
