//! The calls a caller's request makes of a run key through the object's
//! driver, each typed by its answer ([`Call`]): `claim` (which may wait
//! on its claimant's check: a [`Step`]), the claim's second phase,
//! `complete` and `append`. `await` and `events` decide without writing
//! ([`await_run`](super::await_run), [`events`](super::events)). Every
//! input, a call's or one re-entering, is decided here ([`transition`]).

use super::decide::{
    append, await_run, claim, claim_after_check, complete, events, expire, ClaimReply, Input,
    PendingClaim, RunView, Transition,
};
use super::input::{AppendRequest, ClaimRequest, CompleteRequest};
use super::state::{EventsReply, Run, View};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::transition::Step;
use crate::workflow::Liveness;

/// One of Runs' calls, typed by its answer.
pub trait Call: Sized {
    type Answer;
    /// The call as an [`Input`]: what its view is loaded by (`sql::load`)
    /// and its line reads.
    fn input(&self) -> Input;
    /// Its answer, and the transition (its lines left to
    /// [`decide_call`](super::decide_call)).
    fn decide(self, view: &View, now_ms: u64) -> Result<(Self::Answer, Transition), BatonError>;
}

/// `claim`. `workflow` is the binding a claimant without one of its own
/// belongs to (`WORKFLOW_BINDING`): the one its check goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRun {
    pub request: ClaimRequest,
    pub grace_ms: u64,
    pub workflow: String,
}

/// A claim's second phase: what the check of the claimant it saw found,
/// and (§1a) the other binding that found it, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimChecked {
    pub pending: PendingClaim,
    pub liveness: Liveness,
    pub through: Option<String>,
}

/// `complete`: answers the run as it now is if the outcome was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteRun {
    pub request: CompleteRequest,
    pub retention_ms: u64,
}

/// `append`: answers the new event's seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendEvent(pub AppendRequest);

impl Call for ClaimRun {
    type Answer = Step<ClaimReply, PendingClaim>;
    fn input(&self) -> Input {
        Input::Claim {
            request: self.request.clone(),
            grace_ms: self.grace_ms,
            workflow: self.workflow.clone(),
        }
    }
    fn decide(self, view: &View, now_ms: u64) -> Result<(Self::Answer, Transition), BatonError> {
        let ClaimRun {
            request,
            grace_ms,
            workflow,
        } = self;
        Ok(on_record(view, |run| {
            claim(run, now_ms, request, grace_ms, workflow)
        }))
    }
}

impl Call for ClaimChecked {
    type Answer = ClaimReply;
    fn input(&self) -> Input {
        Input::Checked {
            pending: self.pending.clone(),
            liveness: self.liveness,
            through: self.through.clone(),
        }
    }
    fn decide(self, view: &View, now_ms: u64) -> Result<(ClaimReply, Transition), BatonError> {
        let ClaimChecked {
            pending,
            liveness,
            through,
        } = self;
        Ok(on_record(view, |run| {
            claim_after_check(run, now_ms, pending, liveness, through)
        }))
    }
}

impl Call for CompleteRun {
    type Answer = Option<RunView>;
    fn input(&self) -> Input {
        Input::Complete {
            request: self.request.clone(),
            retention_ms: self.retention_ms,
        }
    }
    fn decide(self, view: &View, now_ms: u64) -> Result<(Option<RunView>, Transition), BatonError> {
        let (request, retention_ms) = (&self.request, self.retention_ms);
        Ok(on_record(view, |run| {
            complete(run, now_ms, request, retention_ms)
        }))
    }
}

impl Call for AppendEvent {
    type Answer = u64;
    fn input(&self) -> Input {
        Input::Append(self.0.clone())
    }
    fn decide(self, view: &View, now_ms: u64) -> Result<(u64, Transition), BatonError> {
        on_appender(view, |claimant, latest_seq| {
            append(claimant, latest_seq, now_ms, self.0)
        })
    }
}

/// The one decision: `input` on `view` (loaded for that input) at `now_ms`,
/// its lines left to [`super::decide`].
pub(super) fn transition(view: &View, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
    Ok(match input {
        Input::Claim {
            request,
            grace_ms,
            workflow,
        } => on_record(view, |run| claim(run, now_ms, request, grace_ms, workflow)).1,
        Input::Checked {
            pending,
            liveness,
            through,
        } => {
            on_record(view, |run| {
                claim_after_check(run, now_ms, pending, liveness, through)
            })
            .1
        }
        Input::Complete {
            request,
            retention_ms,
        } => on_record(view, |run| complete(run, now_ms, &request, retention_ms)).1,
        Input::Await {
            timeout,
            open_waits,
        } => on_record(view, |run| await_run(run, now_ms, timeout, open_waits)).1,
        Input::Tick => on_record(view, |run| ((), expire(run, now_ms))).1,
        Input::Append(request) => {
            on_appender(view, |claimant, latest_seq| {
                append(claimant, latest_seq, now_ms, request)
            })?
            .1
        }
        Input::Events {
            request,
            open_waits,
        } => on_log(view, |slice| events(slice, now_ms, &request, open_waits)).1,
    })
}

/// The record a call decides on (a claim, its check, `complete`, `await`,
/// the alarm): the view its plan loads (`sql::load`). The plan and the
/// view are still paired by hand here, in one place per view shape.
fn on_record<A>(view: &View, decide: impl FnOnce(&Run) -> A) -> A {
    let View::Record(run) = view else {
        panic!("a Runs input decided on an append's or an events view");
    };
    decide(run)
}

/// The claimant and latest seq `append` decides on.
fn on_appender<A>(view: &View, decide: impl FnOnce(&Option<InstanceId>, Option<u64>) -> A) -> A {
    let View::Appender {
        claimant,
        latest_seq,
    } = view
    else {
        panic!("a Runs input decided on an append's view");
    };
    decide(claimant, *latest_seq)
}

/// The stretch of the log `events` decides on.
fn on_log<A>(view: &View, decide: impl FnOnce(&EventsReply) -> A) -> A {
    let View::Log(slice) = view else {
        panic!("a Runs input decided on an events view");
    };
    decide(slice)
}
