//! Serial-queue decisions over the rows a call has read.

use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};

/// The two time bounds of a group, from `SERIAL_WAITER_TIMEOUT_MS` and
/// `SERIAL_HEARTBEAT_EXPIRY_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerialTimeouts {
    /// A waiter enqueued longer ago than this, still behind a live holder, times out.
    pub waiter_timeout_ms: u64,
    /// A holder whose last heartbeat is older than this no longer holds the group.
    pub heartbeat_expiry_ms: u64,
}

/// Where an execution is in its group. Stored as the `state` column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryState {
    Waiting,
    Holding {
        heartbeat_at_ms: u64,
    },
    Superseded {
        by: InstanceId,
        by_revision: Ident,
    },
    TimedOut,
    Released,
    /// Found dead while being woken, or a holder whose heartbeat went stale
    /// and whose group was claimed by another.
    Abandoned,
}

impl EntryState {
    pub fn name(&self) -> &'static str {
        match self {
            EntryState::Waiting => "waiting",
            EntryState::Holding { .. } => "holding",
            EntryState::Superseded { .. } => "superseded",
            EntryState::TimedOut => "timed_out",
            EntryState::Released => "released",
            EntryState::Abandoned => "abandoned",
        }
    }
}

/// One execution's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub enqueued_at_ms: u64,
    pub state: EntryState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub current: Option<Ident>,
}

/// Whom a new arrival supersedes, in the same batch that inserts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supersede {
    /// No current revision known: every waiter that arrived before this one.
    OlderWaiters,
    /// This arrival is the current revision: every waiter at another
    /// revision, whenever it arrived.
    WaitersNotAt(Ident),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueuePlan {
    /// The arrival is stale: it skips at once and changes nothing.
    Skip {
        current: Ident,
    },
    Insert {
        supersede: Supersede,
    },
}

/// Decides an enqueue before anything is read: it depends only on the request.
pub fn plan_enqueue(request: &SerialEnqueue) -> EnqueuePlan {
    match &request.current {
        Some(current) if *current != request.revision => EnqueuePlan::Skip {
            current: current.clone(),
        },
        Some(current) => EnqueuePlan::Insert {
            supersede: Supersede::WaitersNotAt(current.clone()),
        },
        None => EnqueuePlan::Insert {
            supersede: Supersede::OlderWaiters,
        },
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    Holding,
    Waiting { holder: Option<InstanceId> },
    Skipped { by: InstanceId, by_revision: Ident },
    TimedOut,
}

/// What a claim must do after reading the caller's row and the holder's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimStep {
    Reply(ClaimReply),
    /// Mark the caller timed out (conditionally: only if still waiting), then answer `TimedOut`.
    TimeOut,
    /// Run the conditional claim; a stale holder, if any, is marked abandoned
    /// in the same batch. Then call [`after_claim`].
    Attempt,
}

/// The oldest heartbeat that still counts as live at `now_ms`.
pub fn oldest_live_heartbeat_ms(now_ms: u64, timeouts: SerialTimeouts) -> u64 {
    now_ms.saturating_sub(timeouts.heartbeat_expiry_ms)
}

/// The holder counts only while its heartbeat is fresh.
pub fn holder_is_live(holder: &Entry, now_ms: u64, timeouts: SerialTimeouts) -> bool {
    match holder.state {
        EntryState::Holding { heartbeat_at_ms } => {
            heartbeat_at_ms >= oldest_live_heartbeat_ms(now_ms, timeouts)
        }
        _ => false,
    }
}

/// The first half of `serialClaim`: `me` is the caller's row, `holder` the
/// group's holding row (if any).
pub fn decide_claim(
    me: Option<&Entry>,
    holder: Option<&Entry>,
    now_ms: u64,
    timeouts: SerialTimeouts,
) -> Result<ClaimStep, BatonError> {
    let Some(me) = me else {
        return Err(BatonError::Invalid {
            field: "instanceId",
            reason: "is not enqueued in this group (call serialEnqueue first)".into(),
        });
    };
    match &me.state {
        EntryState::Holding { .. } => Ok(ClaimStep::Reply(ClaimReply::Holding)),
        EntryState::Superseded { by, by_revision } => Ok(ClaimStep::Reply(ClaimReply::Skipped {
            by: by.clone(),
            by_revision: by_revision.clone(),
        })),
        EntryState::TimedOut => Ok(ClaimStep::Reply(ClaimReply::TimedOut)),
        EntryState::Released | EntryState::Abandoned => Err(BatonError::Invalid {
            field: "instanceId",
            reason: format!("already left this group ({})", me.state.name()),
        }),
        EntryState::Waiting => match holder.filter(|h| holder_is_live(h, now_ms, timeouts)) {
            Some(_) if now_ms.saturating_sub(me.enqueued_at_ms) > timeouts.waiter_timeout_ms => {
                Ok(ClaimStep::TimeOut)
            }
            Some(live) => Ok(ClaimStep::Reply(ClaimReply::Waiting {
                holder: Some(live.instance_id.clone()),
            })),
            None => Ok(ClaimStep::Attempt),
        },
    }
}

/// The second half of `serialClaim`: `won` is whether the conditional
/// UPDATE changed the caller's row; `holder` is the holder read afterwards.
pub fn after_claim(won: bool, holder: Option<&Entry>) -> ClaimReply {
    if won {
        ClaimReply::Holding
    } else {
        ClaimReply::Waiting {
            holder: holder.map(|h| h.instance_id.clone()),
        }
    }
}
