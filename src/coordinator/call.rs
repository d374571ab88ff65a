//! The Coordinator's calls, each typed by its answer ([`Call`]): a
//! caller's (`enqueue`, `acquire`, `release`, §11's `pause`, `resume` and
//! `setLimit`), the second phase a check leaves waiting
//! ([`EnqueueChecked`], [`AcquireChecked`]) and what re-enters from an
//! effect or the alarm. Each is decided on the key's [`Draft`]
//! (`decide.rs`, which implements them); an [`Input`] is the same calls as
//! one value, for the read plan and the simulations.
//!
//! A call that may need a status check answers a
//! [`Step`](crate::transition::Step): its answer, or what waits on the
//! check ([`EnqueueCheck`], [`AcquireCheck`]). The answer and the
//! continuation are apart, so no method of the object matches a reply
//! meant for another.

use super::draft::Draft;
use super::types::{AcquireRequest, EnqueueRequest, Holder, Input, Liveness, Reply, Waiter};
use crate::error::BatonError;
use crate::ident::{InstanceId, WorkflowName};
use crate::workflow::Status;

/// One of the Coordinator's calls, typed by its answer.
pub trait Call: Sized {
    type Answer;
    /// The call as an [`Input`]: what the read plan, the refusals and the
    /// log line read it as.
    fn input(&self) -> Input;
    /// Its answer, decided on `key` (the draft records what it changes).
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Self::Answer, BatonError>;
    /// The answer as the log line and the history read it.
    fn reply(answer: &Self::Answer) -> Reply;
}

/// `enqueue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueue(pub EnqueueRequest);

/// An enqueue's second phase: its coalesce candidate's liveness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueChecked {
    pub request: EnqueueRequest,
    pub candidate: Waiter,
    pub liveness: Liveness,
}

/// `acquire`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire(pub AcquireRequest);

/// An acquire's second phase: what the binding answered about the checked
/// holder (§10a: the answer is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireChecked {
    pub request: AcquireRequest,
    pub holder: Holder,
    pub answer: Status,
}

/// `release`: answers the first instance handed the caller's slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release(pub InstanceId);

/// §11 `pause(key, { reason? })`: answers the pause as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub reason: Option<String>,
}

/// §11 `resume(key)`: answers who was handed a slot, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume;

/// §11 `setLimit(key, limit)`: an override, or `None` to clear it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetLimit(pub Option<u32>);

/// The engine accepted the grant event sent to `holder` (as it was
/// handed, §1b): the holder is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub holder: Holder,
}

/// A woken holder's status, asked after its turn event (`holder` as it
/// was handed; §10a: the answer is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Woken {
    pub holder: Holder,
    pub answer: Status,
}

/// The holder-check alarm, for a key it found due: answers the holders it
/// checks, as they stood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick;

/// A holder check's answer (§10a: kept): the alarm's
/// (`cancelled: false`), or a cancelled holder's after its termination
/// (§1d).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderChecked {
    pub holder: Holder,
    pub answer: Status,
    pub cancelled: bool,
}

impl HolderChecked {
    pub fn of(holder: Holder, answer: Status, cancelled: bool) -> HolderChecked {
        HolderChecked {
            holder,
            answer,
            cancelled,
        }
    }
}

/// §1a: `id`, remembered with the binding `from`, was found through
/// `workflow`: that Workflow's instance from now on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebound {
    pub id: InstanceId,
    pub from: String,
    pub workflow: WorkflowName,
}
