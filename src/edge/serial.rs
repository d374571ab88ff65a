//! The serial queue's requests and replies (contract §2): the objects the
//! default entrypoint's `serial*` methods take and answer, and the HTTP
//! API's `/v1/groups/...` bodies (the group from the path).

use super::coordinator::ReleaseReply;
use crate::ident::{Ident, InstanceId, WorkflowName};
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

/// `serialEnqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "status",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SerialEnqueueReply {
    /// Enqueued; `superseded` are the waiters this arrival dropped. With `claim`, `holder` is the holder it waits behind; with `grant`, `turn` is the event type it is handed the group with.
    Waiting {
        superseded: Vec<InstanceId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        holder: Option<InstanceId>,
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
                    holder,
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
    /// `turn` for an instance registered with grant.
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
}

impl From<core::Inspection> for SerialInspection {
    fn from(view: core::Inspection) -> SerialInspection {
        SerialInspection {
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
