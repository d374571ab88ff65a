//! The shapes one run key's record takes, and the storage interface the
//! decisions use.

use super::input::{EventType, JsonText, Outcome};
use crate::ident::InstanceId;

/// Who claimed the key, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub id: InstanceId,
    /// When the claim was made, in ms since the epoch; §1a's grace counts from it.
    pub since_ms: u64,
    /// The Workflow binding the claimant belongs to; `None` is the default one.
    pub workflow: Option<String>,
}

/// A recorded outcome and its retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub outcome: Outcome,
    /// When `complete` recorded it, in ms since the epoch.
    pub at_ms: u64,
    /// When the key's record (claim, outcome, events) is deleted.
    pub delete_at_ms: u64,
}

/// One run key's record, its event log apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// Nobody holds the key: never claimed, or deleted by retention.
    Unclaimed,
    /// Claimed, no outcome yet.
    Running { claim: Claim },
    /// Claimed and finished; the claim stays until the record is deleted.
    Finished { claim: Claim, finished: Finished },
}

impl Run {
    pub fn claim(&self) -> Option<&Claim> {
        match self {
            Run::Unclaimed => None,
            Run::Running { claim } | Run::Finished { claim, .. } => Some(claim),
        }
    }
}

/// One entry of a run's event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Counts from 1 per key, with no gaps, across claimants.
    pub seq: u64,
    /// When it was appended, in ms since the epoch.
    pub at_ms: u64,
    pub kind: EventType,
    pub data: Option<JsonText>,
}

/// What the Workflow binding said about a claimant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimantStatus {
    /// Any status that is not final (queued, running, waiting, paused...).
    Alive,
    /// `complete`, `errored` or `terminated`.
    Ended,
    /// The binding has no such instance: dead, unless still within the
    /// grace after the claim (created after it, contract §1a).
    NotFound,
    /// The status call failed for another reason: treated as alive, so a
    /// key is never taken from a claimant on a guess.
    Unknown,
}

/// One run key's rows, as decisions read and write them.
///
/// Implementations must make every method's cost independent of how many
/// events the log holds, except [`RunStore::delete_run`], which removes at
/// most [`crate::limits::RUN_EVENTS_KEPT`] of them. Writes made during one
/// decision must be committed together.
pub trait RunStore {
    fn run(&self) -> Run;
    /// The claimant alone, without reading an outcome of up to 1 MiB.
    fn claimant(&self) -> Option<InstanceId>;
    /// Makes `claim` the key's claimant (the key has no outcome); the event
    /// log and its sequence are kept.
    fn set_claim(&mut self, claim: &Claim);
    /// Records the outcome of the current claim.
    fn set_finished(&mut self, finished: &Finished);

    /// The highest `seq` ever appended to the key (0: none), kept events or not.
    fn latest_seq(&self) -> u64;
    /// The oldest event still kept.
    fn first_kept_seq(&self) -> Option<u64>;
    /// Appends `event`, whose `seq` is `latest_seq() + 1`.
    fn push_event(&mut self, event: &Event);
    /// Events with `seq > after`, in order, at most `limit`.
    fn events_after(&self, after: u64, limit: u32) -> Vec<Event>;
    /// Deletes every event with `seq <= through`.
    fn forget_events_through(&mut self, through: u64);

    /// Deletes the key's record and its events: the key is as new.
    fn delete_run(&mut self);
}
