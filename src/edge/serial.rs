//! The serial queue's requests and replies (contract §2, §11's pause and
//! resume): the objects the default entrypoint's `serial*` methods take
//! and answer, and the HTTP API's `/v1/groups/...` bodies (the group from
//! the path).

use super::coordinator::ReleaseReply;
use super::health::Waits;
use crate::health::KeyState;
use crate::health::{self, waits, Facts};
use crate::ident::{newtype, Ident, InstanceId, WorkflowName};
use crate::limits::PAUSE_REASON_BYTES_MAX;
use crate::serial_queue::{self as core, ClaimReply, Entry, EntryState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `serialEnqueue({ group, instanceId, revision, current?, workflow?, claim?, grant? })`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    /// The revision that should run now; omit if unknown.
    pub current: Option<Ident>,
    /// The Workflow binding (one of WORKFLOW_BINDINGS; default WORKFLOW_BINDING) through which Baton checks and wakes this instance.
    pub workflow: Option<WorkflowName>,
    /// Also claim, in the same batch: the reply is the claim's, with `superseded` added.
    pub claim: Option<bool>,
    /// Register with grant: the replies carry `turn`, the event type Baton hands this instance the group with (or tells it it was superseded), and a `holding` reply carries the group's `fence`.
    pub grant: Option<bool>,
}

impl SerialEnqueue {
    /// The core's request; `turn_prefix` is `TURN_EVENT_TYPE`, the prefix of a grant's turn.
    pub fn into_core(self, turn_prefix: &str) -> core::SerialEnqueue {
        core::SerialEnqueue {
            group: self.group,
            instance_id: self.instance_id,
            revision: self.revision,
            current: self.current,
            workflow: self.workflow.map(|w| w.as_str().to_owned()),
            grant: (self.grant == Some(true)).then(|| turn_prefix.to_owned()),
            claim: self.claim == Some(true),
        }
    }
}

/// `serialClaim`, `serialHeartbeat` and `serialRelease`: `{ group, instanceId }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GroupMember {
    pub group: Ident,
    pub instance_id: InstanceId,
}

/// `serialInspect({ group })`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SerialInspect {
    pub group: Ident,
}

/// `serialPause({ group, reason? })` (contract §11).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SerialPause {
    pub group: Ident,
    /// Why, for whoever looks at the group (kept while it is paused).
    pub reason: Option<PauseReason>,
}

impl SerialPause {
    pub fn into_core(self) -> core::SerialPause {
        core::SerialPause {
            group: self.group,
            reason: self.reason.map(|r| r.0),
        }
    }
}

/// An operator's reason for a pause: at most [`PAUSE_REASON_BYTES_MAX`]
/// UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseReason(String);

impl PauseReason {
    pub fn new(value: String) -> Result<PauseReason, String> {
        if value.len() > PAUSE_REASON_BYTES_MAX {
            return Err(format!(
                "must be at most {PAUSE_REASON_BYTES_MAX} UTF-8 bytes (got {})",
                value.len()
            ));
        }
        Ok(PauseReason(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

// `maxLength` counts characters; the bound is in UTF-8 bytes, which the
// description says (the schema's bound is the loosest that holds).
newtype!(
    string PauseReason,
    "Why an operator paused it: at most 512 UTF-8 bytes.",
    chars: 0, PAUSE_REASON_BYTES_MAX,
    pattern: None,
    new: PauseReason::new
);

/// `serialResume({ group })` (contract §11).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SerialResume {
    pub group: Ident,
}

/// `serialPause`'s reply: the pause as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SerialPauseReply {
    pub paused: Paused,
}

/// An operator's pause of a key or a group (contract §11), as `pause`,
/// `serialPause`, `inspect` and `serialInspect` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Paused {
    /// When it was first paused (a second pause keeps it), in ms since the epoch.
    pub since: u64,
    /// The reason the latest pause gave, or null.
    pub reason: Option<String>,
}

impl From<crate::pause::Paused> for Paused {
    fn from(paused: crate::pause::Paused) -> Paused {
        Paused {
            since: paused.since_ms,
            reason: paused.reason,
        }
    }
}

/// `serialResume`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SerialResumeReply {
    /// The waiter the group went on to (handed it by its turn, or woken to claim it); null when it was not paused, is held, or nobody waits.
    pub granted: Option<InstanceId>,
}

/// `serialEnqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "status",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SerialEnqueueReply {
    /// Enqueued; `superseded` are the waiters this arrival dropped. With `claim`, `holder` is the holder it waits behind (null: nobody holds the paused group); with `grant`, `turn` is the event type it is handed the group with.
    Waiting {
        superseded: Vec<InstanceId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        holder: Option<Option<InstanceId>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<String>,
    },
    /// Not enqueued: `revision` is not `current`.
    Skipped { reason: SkipReason, current: Ident },
    /// With `claim`: enqueued and holding the group, granted with `fence`.
    Holding {
        superseded: Vec<InstanceId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fence: Option<u64>,
    },
    /// With `claim`: a retried enqueue of a waiter that waited past SERIAL_WAITER_TIMEOUT_MS.
    TimedOut { superseded: Vec<InstanceId> },
}

impl From<core::EnqueueReply> for SerialEnqueueReply {
    fn from(reply: core::EnqueueReply) -> SerialEnqueueReply {
        use core::EnqueueReply as E;
        match reply {
            E::Waiting { superseded, turn } => SerialEnqueueReply::Waiting {
                superseded,
                holder: None,
                turn,
            },
            E::Skipped { current } => SerialEnqueueReply::Skipped {
                reason: SkipReason::NotCurrent,
                current,
            },
            E::Claimed { superseded, claim } => match claim {
                ClaimReply::Holding { fence } => SerialEnqueueReply::Holding { superseded, fence },
                ClaimReply::Waiting { holder, turn } => SerialEnqueueReply::Waiting {
                    superseded,
                    holder: Some(holder),
                    turn,
                },
                ClaimReply::Skipped { by_revision, .. } => SerialEnqueueReply::Skipped {
                    reason: SkipReason::NotCurrent,
                    current: by_revision,
                },
                ClaimReply::TimedOut => SerialEnqueueReply::TimedOut { superseded },
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    NotCurrent,
}

/// An execution named with its revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revisioned {
    pub instance_id: InstanceId,
    pub revision: Ident,
}

/// `serialClaim`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "status",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SerialClaimReply {
    /// `fence` for an instance registered with grant.
    Holding {
        #[serde(skip_serializing_if = "Option::is_none")]
        fence: Option<u64>,
    },
    /// `turn` for an instance registered with grant; `holder` null: nobody holds the paused group.
    Waiting {
        holder: Option<InstanceId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<String>,
    },
    Skipped {
        superseded_by: Revisioned,
    },
    TimedOut,
}

impl From<ClaimReply> for SerialClaimReply {
    fn from(reply: ClaimReply) -> SerialClaimReply {
        match reply {
            ClaimReply::Holding { fence } => SerialClaimReply::Holding { fence },
            ClaimReply::Waiting { holder, turn } => SerialClaimReply::Waiting { holder, turn },
            ClaimReply::Skipped { by, by_revision } => SerialClaimReply::Skipped {
                superseded_by: Revisioned {
                    instance_id: by,
                    revision: by_revision,
                },
            },
            ClaimReply::TimedOut => SerialClaimReply::TimedOut,
        }
    }
}

/// `serialHeartbeat`'s reply: whether the caller still holds the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HeartbeatReply {
    pub holding: bool,
}

/// `serialRelease`'s reply: the Coordinator's `release` reply, for a group.
pub type SerialReleaseReply = ReleaseReply;

/// `serialInspect`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SerialInspection {
    pub holder: Option<SerialHolder>,
    /// In the order they arrived.
    pub waiting: Vec<SerialWaiter>,
    /// Finished executions, newest first.
    pub recent: Vec<SerialFinished>,
    /// Set while an operator paused the group (contract §11).
    pub paused: Option<Paused>,
    /// §10a, as a key of limit 1 whose stall the queue does not track:
    /// `paused`, `backlogged`, `at_capacity` or `idle`.
    pub state: KeyState,
    /// §10a: the waits of the waiters now, so far (a group's finished runs
    /// do not keep how long they waited).
    pub waits: Waits,
}

impl SerialInspection {
    /// The group as `view` read it, at `now_ms`.
    pub fn of(view: core::Inspection, now_ms: u64) -> SerialInspection {
        let facts = Facts::group(
            view.paused.is_some(),
            view.holder.is_some(),
            view.waiting.len() as u32,
        );
        let waited = (view.waiting.iter())
            .map(|w| now_ms.saturating_sub(w.enqueued_at_ms))
            .collect();
        let (p50_ms, p95_ms, n) = waits(waited);
        SerialInspection {
            state: health::state(&facts, now_ms),
            waits: Waits { p50_ms, p95_ms, n },
            holder: view.holder.and_then(|h| match h.state {
                EntryState::Holding { heartbeat_at_ms } => Some(SerialHolder {
                    instance_id: h.instance_id,
                    revision: h.revision,
                    heartbeat_at: heartbeat_at_ms,
                }),
                _ => None,
            }),
            waiting: view
                .waiting
                .into_iter()
                .map(|w| SerialWaiter {
                    instance_id: w.instance_id,
                    revision: w.revision,
                    enqueued_at: w.enqueued_at_ms,
                })
                .collect(),
            recent: view
                .recent
                .into_iter()
                .filter_map(SerialFinished::of)
                .collect(),
            paused: view.paused.map(Paused::from),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SerialHolder {
    pub instance_id: InstanceId,
    pub revision: Ident,
    /// Its last heartbeat (or its claim), in ms since the epoch.
    pub heartbeat_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SerialWaiter {
    pub instance_id: InstanceId,
    pub revision: Ident,
    /// In ms since the epoch.
    pub enqueued_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SerialFinished {
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub outcome: SerialOutcome,
    /// In ms since the epoch.
    pub finished_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Revisioned>,
}

impl SerialFinished {
    /// A finished execution as `serialInspect`'s `recent` shows it.
    fn of(entry: Entry) -> Option<SerialFinished> {
        let (outcome, finished_at, superseded_by) = match entry.state {
            EntryState::Waiting | EntryState::Holding { .. } => return None,
            EntryState::Superseded {
                by,
                by_revision,
                at_ms,
            } => (
                SerialOutcome::Superseded,
                at_ms,
                Some(Revisioned {
                    instance_id: by,
                    revision: by_revision,
                }),
            ),
            EntryState::TimedOut { at_ms } => (SerialOutcome::TimedOut, at_ms, None),
            EntryState::Released { at_ms, .. } => (SerialOutcome::Released, at_ms, None),
            EntryState::Abandoned { at_ms } => (SerialOutcome::Abandoned, at_ms, None),
        };
        Some(SerialFinished {
            instance_id: entry.instance_id,
            revision: entry.revision,
            outcome,
            finished_at,
            superseded_by,
        })
    }
}

/// How a finished execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SerialOutcome {
    Superseded,
    TimedOut,
    Released,
    Abandoned,
}
