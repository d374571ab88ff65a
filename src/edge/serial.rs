//! The serial queue's requests and replies (contract §2): the objects the
//! default entrypoint's `serial*` methods take and answer, and the HTTP
//! API's `/v1/groups/...` bodies (the group from the path).

use super::coordinator::ReleaseReply;
use crate::ident::{Ident, InstanceId};
use crate::serial_queue::{self as core, ClaimReply};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `serialEnqueue({ group, instanceId, revision, current? })`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    /// The revision that should run now; omit if unknown.
    pub current: Option<Ident>,
}

impl From<SerialEnqueue> for core::SerialEnqueue {
    fn from(request: SerialEnqueue) -> core::SerialEnqueue {
        core::SerialEnqueue {
            group: request.group,
            instance_id: request.instance_id,
            revision: request.revision,
            current: request.current,
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
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SerialEnqueueReply {
    /// Enqueued; `superseded` are the waiters this arrival dropped.
    Waiting { superseded: Vec<InstanceId> },
    /// Not enqueued: `revision` is not `current`.
    Skipped { reason: SkipReason, current: Ident },
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
    Holding,
    Waiting { holder: Option<InstanceId> },
    Skipped { superseded_by: Revisioned },
    TimedOut,
}

impl From<ClaimReply> for SerialClaimReply {
    fn from(reply: ClaimReply) -> SerialClaimReply {
        match reply {
            ClaimReply::Holding => SerialClaimReply::Holding,
            ClaimReply::Waiting { holder } => SerialClaimReply::Waiting { holder },
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

/// How a finished execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SerialOutcome {
    Superseded,
    TimedOut,
    Released,
    Abandoned,
}
