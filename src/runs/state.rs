//! The shapes one run key's record takes, and the part of it a decision
//! reads ([`View`]).

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

/// A stretch of the event log with its ends: `events`' reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsReply {
    /// Events with `seq > after`, in order, at most the read's limit.
    pub events: Vec<Event>,
    /// The highest `seq` ever appended (0: none), kept events or not.
    pub latest_seq: u64,
    /// The oldest event kept; `latest_seq + 1` when none is kept.
    pub first_seq: u64,
}

/// What one decision reads of its key: the rows its input needs, and no
/// more, so that the statements a call runs stay those of the store it
/// replaced (`storageWork()`, docs/benchmarks.md's P5) and an append or a read
/// costs the same whatever the log holds. After a decision, the same view
/// with its writes applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// The record (claim, outcome, retention): for claims, their checks,
    /// `complete`, `await` and the retention alarm.
    Record(Run),
    /// What `append` needs: the claimant and, only when the appender is
    /// the claimant, the log's latest seq (`None`: not read).
    Appender {
        claimant: Option<InstanceId>,
        latest_seq: Option<u64>,
    },
    /// The stretch of the log `events` asks for.
    Log(EventsReply),
}

/// One run key's rows as a decision reads them: each call reads the part
/// it needs by the read it makes (its record, an appender's view, a
/// stretch of the log), and no more, so a call is never handed a view
/// loaded for another. The SQL rows (`super::sql::Rows`) and the
/// simulation's record (`super::MemoryRun`) read them alike.
pub trait Rows {
    /// The record (claim, outcome, retention), its log apart.
    fn record(&self) -> Run;
    /// What `append` by `appender` needs: the claimant and, only when the
    /// appender is the claimant, the log's latest seq (`None`: not read).
    fn appender(&self, appender: &InstanceId) -> (Option<InstanceId>, Option<u64>);
    /// Events after `after`, at most `limit`, with the log's ends.
    fn log(&self, after: u64, limit: u32) -> EventsReply;
}
