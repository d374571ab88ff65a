//! The Coordinator's requests and replies (contract §1, §1a, §7).
//!
//! A request is the §7 object: the Durable Object's positional arguments by
//! name (`js/worker.mjs` builds it from `enqueue(key, supersedes,
//! instanceId, inputHash?, options?)` and friends), the default entrypoint's
//! `coordinator*` methods take it as is, and the HTTP API reads it from the
//! body with the key from the path.

use crate::coordinator::{self as core};
use crate::error::Number;
use crate::ident::{newtype, Ident, InputHash, InstanceId, WorkflowName};
use crate::limits::{HOLDERS_PER_KEY_MAX, PRIORITY_MAX, PRIORITY_MIN, WAITERS_PER_KEY_MAX};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

pub use super::inspection::{
    HoldOutcome, HolderEntry, HolderView, Inspection, KeyCounts, RecentHold, WaiterView,
};

/// `enqueue(key, supersedes, instanceId, inputHash?, options?)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorEnqueue")]
pub struct Enqueue {
    pub key: Ident,
    /// Drop (and terminate) every other waiting id; the holder is never
    /// touched. Absent means `false` (the Durable Object's positional
    /// `enqueue` takes it as a required argument).
    #[serde(default)]
    pub supersedes: bool,
    pub instance_id: InstanceId,
    /// With `supersedes`: coalesce into a live waiter with the same hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<InputHash>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<KeyOptions>,
}

/// `acquire(key, instanceId, options?)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorAcquire")]
pub struct Acquire {
    pub key: Ident,
    pub instance_id: InstanceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<KeyOptions>,
}

/// `release(key, instanceId)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorRelease")]
pub struct Release {
    pub key: Ident,
    pub instance_id: InstanceId,
}

/// `inspect(key)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CoordinatorInspect")]
pub struct Inspect {
    pub key: Ident,
}

/// The options of `enqueue` and `acquire` (contract §1a). Unknown fields are
/// refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeyOptions {
    /// The Workflow binding of the instance being registered, one of
    /// `WORKFLOW_BINDINGS` (default `WORKFLOW_BINDING`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowName>,
    /// How many instances may hold the key at once (default 1); the key
    /// keeps the limit of the latest call that named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<HolderLimit>,
    /// Hand-off by grant (§1b): the registration this call makes is sent
    /// the grant itself on a turn event of its own, and `acquire` answers
    /// an object (`CoordinatorGrantReply`) instead of a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<bool>,
    /// §1c: slots go to a waiter of the highest priority present (-100 to
    /// 100, default 0); fixed by the call that registers the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// §1c: within a priority, slots go round the tenants with waiters
    /// (served longest ago first, one never served before them), then to
    /// that tenant's earliest waiter. Waiters that name none share one
    /// tenant. Fixed by the call that registers the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<Ident>,
    /// §1c: `"skip"` answers busy instead of registering a caller that
    /// would wait: `acquire` answers `"busy"` (`{ status: "busy" }` with
    /// `grant`), `enqueue` `{ busy: true, terminated: [] }` when the key
    /// has as many holders as its limit or any waiter. Default `"wait"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_busy: Option<OnBusy>,
    /// §1d, on a superseding `enqueue` only: every holder of the key (but
    /// the caller) is cancelled: terminated through its own Workflow, it
    /// keeps its slot until the binding reports it dead, and the slot then
    /// goes on with the next fence. A call that coalesces cancels nothing.
    /// Refused with `supersedes: false`, and on `acquire`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_holders: Option<bool>,
    /// §1f: a call that would register a new waiter while the key already
    /// has this many waiters (after the call's own superseding) registers
    /// nothing and answers busy, as `onBusy: "skip"` does. The key keeps
    /// the value of the latest call that named one (1 to 20000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_waiting: Option<MaxWaiting>,
}

/// `options.maxWaiting`: an integer from 1 to [`WAITERS_PER_KEY_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MaxWaiting(u32);

impl MaxWaiting {
    pub fn new(value: f64) -> Result<MaxWaiting, String> {
        let max = WAITERS_PER_KEY_MAX;
        if value.fract() != 0.0 || !(1.0..=f64::from(max)).contains(&value) {
            return Err(format!(
                "must be an integer from 1 to {max} (got {})",
                Number(value)
            ));
        }
        Ok(MaxWaiting(value as u32))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

newtype!(
    integer MaxWaiting,
    "How many may wait for the key at most; a call past it answers busy.",
    range: 1, WAITERS_PER_KEY_MAX,
    new: MaxWaiting::new,
    get: MaxWaiting::get
);

/// `options.onBusy` (§1c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnBusy {
    Wait,
    Skip,
}

/// `options.priority`: an integer from [`PRIORITY_MIN`] to [`PRIORITY_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(i8);

impl Priority {
    pub fn new(value: f64) -> Result<Priority, String> {
        let (min, max) = (PRIORITY_MIN, PRIORITY_MAX);
        if value.fract() != 0.0 || !(f64::from(min)..=f64::from(max)).contains(&value) {
            return Err(format!(
                "must be an integer from {min} to {max} (got {})",
                Number(value)
            ));
        }
        Ok(Priority(value as i8))
    }

    pub fn get(self) -> i8 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Priority {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Priority::new(f64::deserialize(deserializer)?).map_err(de::Error::custom)
    }
}

impl Serialize for Priority {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i8(self.0)
    }
}

impl JsonSchema for Priority {
    fn schema_name() -> Cow<'static, str> {
        "Priority".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "description": "Slots go to a waiter of the highest priority present.",
            "minimum": PRIORITY_MIN,
            "maximum": PRIORITY_MAX,
        })
    }
}

/// `options.limit`: an integer from 1 to [`HOLDERS_PER_KEY_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HolderLimit(u32);

impl HolderLimit {
    pub fn new(value: f64) -> Result<HolderLimit, String> {
        let max = HOLDERS_PER_KEY_MAX;
        if value.fract() != 0.0 || !(1.0..=f64::from(max)).contains(&value) {
            return Err(format!(
                "must be an integer from 1 to {max} (got {})",
                Number(value)
            ));
        }
        Ok(HolderLimit(value as u32))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

newtype!(
    integer HolderLimit,
    "How many instances may hold the key at once.",
    range: 1, HOLDERS_PER_KEY_MAX,
    new: HolderLimit::new,
    get: HolderLimit::get
);

impl fmt::Display for HolderLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl KeyOptions {
    /// `{ grant: true }` and nothing else: what withKey passes when no
    /// option of its own is set (js/with-key.mjs).
    pub fn granting() -> KeyOptions {
        KeyOptions {
            grant: Some(true),
            ..KeyOptions::default()
        }
    }

    /// The options as the core takes them.
    pub fn core(options: Option<&KeyOptions>) -> core::Options {
        core::Options {
            workflow: options.and_then(|o| o.workflow.clone()),
            limit: options.and_then(|o| o.limit).map(HolderLimit::get),
            grant: options.and_then(|o| o.grant).unwrap_or(false),
            priority: options.and_then(|o| o.priority).map_or(0, Priority::get),
            tenant: options.and_then(|o| o.tenant.clone()),
            skip: options.and_then(|o| o.on_busy) == Some(OnBusy::Skip),
            cancel_holders: options.and_then(|o| o.cancel_holders) == Some(true),
            max_waiting: options.and_then(|o| o.max_waiting).map(MaxWaiting::get),
        }
    }
}

impl Enqueue {
    /// The request as the core decides it.
    pub fn core(&self) -> core::EnqueueRequest {
        core::EnqueueRequest {
            supersedes: self.supersedes,
            id: self.instance_id.clone(),
            input_hash: self.input_hash.clone(),
            options: KeyOptions::core(self.options.as_ref()),
        }
    }
}

impl Acquire {
    /// The request as the core decides it.
    pub fn core(&self) -> core::AcquireRequest {
        core::AcquireRequest {
            id: self.instance_id.clone(),
            options: KeyOptions::core(self.options.as_ref()),
        }
    }
}

/// `enqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CoordinatorEnqueueReply")]
pub struct EnqueueReply {
    /// The waiting ids this call dropped, in queue order.
    pub terminated: Vec<InstanceId>,
    /// A live waiter with the same `inputHash` took this enqueue's place:
    /// nothing was registered, and the caller must not create its instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coalesced_into: Option<InstanceId>,
    /// With `onBusy: "skip"` (§1c), `true`: the key had as many holders as
    /// its limit, or a waiter; nothing was registered, and the caller must
    /// not create its instance. Absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub busy: bool,
    /// §1d, on a call with `cancelHolders: true`: the holders it cancelled
    /// (`[]` when none; absent on a call without the option).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<Vec<InstanceId>>,
}

impl EnqueueReply {
    /// The reply to a call with `cancelHolders: true` (`cancel_holders`)
    /// or without it.
    pub fn new(reply: core::EnqueueReply, cancel_holders: bool) -> EnqueueReply {
        EnqueueReply {
            terminated: reply.terminated.into_iter().map(|w| w.id).collect(),
            coalesced_into: reply.coalesced_into,
            busy: reply.busy,
            cancelled: cancel_holders.then(|| reply.cancelled.into_iter().map(|h| h.id).collect()),
        }
    }
}

/// `acquire`'s reply: over RPC the bare string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AcquireOutcome {
    Granted,
    Pending,
    Superseded,
    // §1c `onBusy: "skip"`: not granted at once; nothing was registered.
    Busy,
}

impl AcquireOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AcquireOutcome::Granted => "granted",
            AcquireOutcome::Pending => "pending",
            AcquireOutcome::Superseded => "superseded",
            AcquireOutcome::Busy => "busy",
        }
    }
}

impl From<core::AcquireReply> for AcquireOutcome {
    fn from(reply: core::AcquireReply) -> AcquireOutcome {
        match reply {
            core::AcquireReply::Granted { .. } => AcquireOutcome::Granted,
            core::AcquireReply::Pending | core::AcquireReply::Placed(_) => AcquireOutcome::Pending,
            core::AcquireReply::Superseded => AcquireOutcome::Superseded,
            // §1f: a full key is answered as a busy one.
            core::AcquireReply::Busy | core::AcquireReply::Full => AcquireOutcome::Busy,
        }
    }
}

/// `acquire`'s reply with `options.grant` (§1b).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase")]
#[schemars(rename = "CoordinatorGrantReply")]
pub enum GrantReply {
    /// The caller holds a slot, granted with this fence.
    Granted {
        fence: u64,
    },
    /// The caller waits: Baton sends it an event of type `turn` when it
    /// hands it a slot (`CoordinatorTurnEvent`, or `{ key }` with
    /// `TURN_EVENT_TYPE` for an id registered without `grant`); `position`
    /// is its place in the order the key is handed on (1 is next); `etaMs`
    /// (§1c) the mean of the key's last 20 hold times times
    /// `ceil(position / limit)`, null before the key's first finished hold.
    #[serde(rename_all = "camelCase")]
    Pending {
        turn: String,
        position: u32,
        eta_ms: Option<u64>,
    },
    Superseded,
    /// §1c `onBusy: "skip"`: not granted at once; nothing was registered.
    Busy,
}

/// `acquire`'s reply: the string of §1, or with `options.grant` the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "CoordinatorAcquireReply")]
pub enum AcquireReply {
    Outcome(AcquireOutcome),
    Grant(GrantReply),
}

impl AcquireReply {
    /// The reply to a call with (`grant`) or without the option; `turn`
    /// names a waiter's event type. A waiter's reply says its form
    /// itself (the core places only a `grant` call's waiter).
    pub fn new(
        reply: core::AcquireReply,
        grant: bool,
        turn: impl FnOnce(core::Turn) -> String,
    ) -> Self {
        let form = |object: GrantReply, outcome: AcquireOutcome| {
            if grant {
                AcquireReply::Grant(object)
            } else {
                AcquireReply::Outcome(outcome)
            }
        };
        match reply {
            core::AcquireReply::Granted { fence } => {
                form(GrantReply::Granted { fence }, AcquireOutcome::Granted)
            }
            core::AcquireReply::Pending => AcquireReply::Outcome(AcquireOutcome::Pending),
            core::AcquireReply::Placed(place) => AcquireReply::Grant(GrantReply::Pending {
                turn: turn(place.turn),
                position: place.position,
                eta_ms: place.eta_ms,
            }),
            core::AcquireReply::Superseded => {
                form(GrantReply::Superseded, AcquireOutcome::Superseded)
            }
            core::AcquireReply::Busy | core::AcquireReply::Full => {
                form(GrantReply::Busy, AcquireOutcome::Busy)
            }
        }
    }

    /// The outcome, for the decision log.
    pub fn as_str(&self) -> &'static str {
        match self {
            AcquireReply::Outcome(outcome) => outcome.as_str(),
            AcquireReply::Grant(GrantReply::Granted { .. }) => "granted",
            AcquireReply::Grant(GrantReply::Pending { .. }) => "pending",
            AcquireReply::Grant(GrantReply::Superseded) => "superseded",
            AcquireReply::Grant(GrantReply::Busy) => "busy",
        }
    }
}

/// The event a `grant` registration is sent when Baton hands it a slot,
/// of the type its `pending` reply named (`turn`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CoordinatorTurnEvent")]
pub struct GrantEvent<'a> {
    pub key: &'a str,
    pub instance_id: &'a str,
    /// Always `"granted"`.
    pub status: AcquireOutcome,
    pub fence: u64,
}

/// `acquire`'s reply over HTTP, where every reply is a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AcquireStatus {
    pub status: AcquireOutcome,
}

/// `acquire`'s reply over HTTP: `{ status }`, or with `grant` the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "CoordinatorAcquireHttpReply")]
pub enum AcquireHttpReply {
    Status(AcquireStatus),
    Grant(GrantReply),
}

/// `release`'s reply (the Coordinator's and the serial queue's): the
/// instance this call handed the key or group to and sent the turn event,
/// if any (its status is checked after the reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ReleaseReply {
    pub next: Option<InstanceId>,
}
