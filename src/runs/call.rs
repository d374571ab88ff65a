//! The calls a caller's request makes of a run key through the object's
//! driver, each typed by its answer ([`Call`]): `claim` (which may wait
//! on its claimant's check: a [`Step`]), the claim's second phase,
//! `complete` and `append`. `await` and `events` decide without writing
//! ([`await_run`](super::await_run), [`events`](super::events)). Every
//! input, a call's or one re-entering, is decided here ([`transition`]).
//!
//! Each call reads the part of the key's [`Rows`] it decides on itself
//! (its record, an appender's view, a stretch of the log), so no call is
//! handed a view loaded for another; [`view`] is what an input reads, as
//! the view its transition leaves is compared with.

use super::decide::{
    append, await_run, claim, claim_after_check, complete, events, expire, ClaimReply, Input,
    PendingClaim, RunView, Transition,
};
use super::input::{AppendRequest, ClaimRequest, CompleteRequest};
use super::state::{Rows, View};
use crate::error::BatonError;
use crate::transition::Step;
use crate::workflow::Liveness;

/// One of Runs' calls, typed by its answer.
pub trait Call: Sized {
    type Answer;
    /// The call as an [`Input`]: what its line reads.
    fn input(&self) -> Input;
    /// Its answer, and the transition (its lines left to
    /// [`decide_call`](super::decide_call)), on the rows it reads.
    fn decide(
        self,
        rows: &impl Rows,
        now_ms: u64,
    ) -> Result<(Self::Answer, Transition), BatonError>;
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
    fn decide(
        self,
        rows: &impl Rows,
        now_ms: u64,
    ) -> Result<(Self::Answer, Transition), BatonError> {
        let ClaimRun {
            request,
            grace_ms,
            workflow,
        } = self;
        Ok(claim(&rows.record(), now_ms, request, grace_ms, workflow))
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
    fn decide(self, rows: &impl Rows, now_ms: u64) -> Result<(ClaimReply, Transition), BatonError> {
        let ClaimChecked {
            pending,
            liveness,
            through,
        } = self;
        let run = rows.record();
        Ok(claim_after_check(&run, now_ms, pending, liveness, through))
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
    fn decide(
        self,
        rows: &impl Rows,
        now_ms: u64,
    ) -> Result<(Option<RunView>, Transition), BatonError> {
        let (request, retention_ms) = (&self.request, self.retention_ms);
        Ok(complete(&rows.record(), now_ms, request, retention_ms))
    }
}

impl Call for AppendEvent {
    type Answer = u64;
    fn input(&self) -> Input {
        Input::Append(self.0.clone())
    }
    fn decide(self, rows: &impl Rows, now_ms: u64) -> Result<(u64, Transition), BatonError> {
        let (claimant, latest_seq) = rows.appender(&self.0.id);
        append(&claimant, latest_seq, now_ms, self.0)
    }
}

/// The one decision: `input` on the rows it reads at `now_ms`, its lines
/// left to [`super::decide`].
pub(super) fn transition(
    rows: &impl Rows,
    now_ms: u64,
    input: Input,
) -> Result<Transition, BatonError> {
    Ok(match input {
        Input::Claim {
            request,
            grace_ms,
            workflow,
        } => claim(&rows.record(), now_ms, request, grace_ms, workflow).1,
        Input::Checked {
            pending,
            liveness,
            through,
        } => claim_after_check(&rows.record(), now_ms, pending, liveness, through).1,
        Input::Complete {
            request,
            retention_ms,
        } => complete(&rows.record(), now_ms, &request, retention_ms).1,
        Input::Await {
            timeout,
            open_waits,
        } => await_run(&rows.record(), now_ms, timeout, open_waits).1,
        Input::Tick => expire(&rows.record(), now_ms),
        Input::Append(request) => {
            let (claimant, latest_seq) = rows.appender(&request.id);
            append(&claimant, latest_seq, now_ms, request)?.1
        }
        Input::Events {
            request,
            open_waits,
        } => {
            let slice = rows.log(request.after.get(), request.limit.get());
            events(&slice, now_ms, &request, open_waits).1
        }
    })
}

/// The view `input` reads of `rows`: what its transition's `state` is
/// the same view of, once the writes are applied (the simulations and
/// the SQL tests compare the two).
pub fn view(rows: &impl Rows, input: &Input) -> View {
    match input {
        Input::Append(request) => {
            let (claimant, latest_seq) = rows.appender(&request.id);
            View::Appender {
                claimant,
                latest_seq,
            }
        }
        Input::Events { request, .. } => {
            View::Log(rows.log(request.after.get(), request.limit.get()))
        }
        Input::Claim { .. }
        | Input::Checked { .. }
        | Input::Complete { .. }
        | Input::Await { .. }
        | Input::Tick => View::Record(rows.record()),
    }
}
