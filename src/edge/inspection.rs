//! The Coordinator's `inspect` reply (contract §1, §1a, §1c, §1d, §10,
//! §11): its holders, its waiters in hand-on order with their place and
//! estimate, its recent holds and counts, and how an operator steers it.

use super::health::{Checked, Waits};
use crate::coordinator::{self as core, Holder, Waiter};
use crate::health::KeyState;
use crate::ident::{Ident, InputHash, InstanceId};
use schemars::JsonSchema;
use serde::Serialize;

/// `inspect`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CoordinatorInspection")]
pub struct Inspection {
    pub key: Ident,
    /// The earliest holder (§1's one holder), or null.
    pub holder: Option<HolderView>,
    /// In the order the key will be handed on.
    pub waiting: Vec<WaiterView>,
    /// How many superseded ids the key remembers.
    pub superseded: u32,
    /// How many instances may hold the key at once.
    pub limit: u32,
    /// Every holder, in the order they got the key.
    pub holders: Vec<HolderEntry>,
    /// The last holds that ended with a waiter behind them or with the
    /// holder found dead, newest first (at most 50; contract §10).
    pub recent: Vec<RecentHold>,
    /// What happened at the key since its object was created.
    pub counts: KeyCounts,
    /// §11: the operator's pause, or null.
    pub paused: Option<super::steer::Paused>,
    /// §11: the operator's limit override (then `limit`), or null.
    pub limit_override: Option<u32>,
    /// §1f: the cap on the key's waiters the latest call that named one
    /// named, or null.
    pub max_waiting: Option<u32>,
    /// §10a: the key's health at a glance.
    pub state: KeyState,
    /// §10a: the waits of `recent`'s holds and of the waiters now.
    pub waits: Waits,
}

/// A hold `inspect`'s `recent` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecentHold {
    pub id: InstanceId,
    /// The fence of its grant.
    pub fence: u64,
    /// When it got the key, in ms since the epoch.
    pub from: u64,
    /// When it ended.
    pub to: u64,
    /// How long the holder had waited for the key, in ms.
    pub waited: u64,
    pub outcome: HoldOutcome,
    /// Its holder was cancelled by a superseding enqueue (§1d).
    pub cancelled: bool,
}

/// How a recent hold ended: released by its holder, or its holder found dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HoldOutcome {
    Released,
    Dead,
}

impl From<crate::coordinator::history::Hold> for RecentHold {
    fn from(hold: crate::coordinator::history::Hold) -> Self {
        use crate::coordinator::history::Outcome;
        RecentHold {
            id: hold.id,
            fence: hold.fence,
            from: hold.from_ms,
            to: hold.to_ms,
            waited: hold.waited_ms,
            outcome: match hold.outcome {
                Outcome::Released => HoldOutcome::Released,
                Outcome::Dead => HoldOutcome::Dead,
            },
            cancelled: hold.cancelled,
        }
    }
}

/// `inspect`'s `counts`: since the key's object was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyCounts {
    /// Slots granted (by `acquire` or by a hand-off).
    pub grants: u64,
    /// Grants of a slot that a holder or a dead holder gave up to a waiter.
    pub hand_offs: u64,
    /// Holders found dead (each lost its slot).
    pub dead_holders: u64,
    /// Waiters superseded.
    pub superseded: u64,
    /// Enqueues that coalesced into a live waiter.
    pub coalesced: u64,
    /// Holders cancelled by a superseding enqueue (§1d).
    pub cancelled: u64,
}

impl From<crate::coordinator::history::Counts> for KeyCounts {
    fn from(counts: crate::coordinator::history::Counts) -> Self {
        KeyCounts {
            grants: counts.grants,
            hand_offs: counts.hand_offs,
            dead_holders: counts.dead_holders,
            superseded: counts.superseded,
            coalesced: counts.coalesced,
            cancelled: counts.cancelled,
        }
    }
}

/// The earliest holder, as `inspect`'s `holder` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HolderView {
    pub id: InstanceId,
    /// When the key passed to it, in ms since the epoch.
    pub since: u64,
    /// The fence of its grant (§1b; 0 for a grant from before fences).
    pub fence: u64,
}

/// A holder, as `inspect`'s `holders` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HolderEntry {
    pub id: InstanceId,
    /// When the key passed to it, in ms since the epoch.
    pub since: u64,
    /// The Workflow binding Baton checks, wakes and terminates it through.
    pub workflow: String,
    /// The fence of its grant (§1b; 0 for a grant from before fences).
    pub fence: u64,
    /// Being cancelled (§1d): terminated, it keeps its slot until found dead.
    pub cancelling: bool,
    /// §10a: when Baton last asked the Workflow binding about it, and
    /// what it answered; null before the first check.
    pub checked: Option<Checked>,
}

impl HolderEntry {
    /// `default_workflow` names the binding of a holder registered without one.
    pub fn new(holder: Holder, default_workflow: &str) -> HolderEntry {
        HolderEntry {
            workflow: holder
                .workflow
                .map_or_else(|| default_workflow.to_owned(), |w| w.as_str().to_owned()),
            id: holder.id,
            since: holder.since_ms,
            fence: holder.fence,
            cancelling: holder.cancelling,
            checked: None,
        }
    }
}

/// A waiter, as `inspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaiterView {
    pub id: InstanceId,
    /// When it joined the queue, in ms since the epoch.
    pub since: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_hash: Option<InputHash>,
    /// Its place in the order the key will be handed on (1 is next).
    pub position: u32,
    /// §1c: the estimate of its wait (as a `pending` reply's), or null
    /// before the key's first finished hold.
    pub eta_ms: Option<u64>,
    /// §1c: as registered (0 unless named).
    pub priority: i8,
    /// §1c: as registered; null is the tenant shared by every waiter that
    /// names none.
    pub tenant: Option<Ident>,
}

impl From<Holder> for HolderView {
    fn from(holder: Holder) -> HolderView {
        HolderView {
            id: holder.id,
            since: holder.since_ms,
            fence: holder.fence,
        }
    }
}

impl WaiterView {
    /// The waiter at `position` (1 is next) of the key `summary` describes.
    pub fn new(waiter: Waiter, position: u32, summary: &core::Summary) -> WaiterView {
        WaiterView {
            id: waiter.id,
            since: waiter.since_ms,
            input_hash: waiter.input_hash,
            position,
            eta_ms: core::eta_ms(summary, position),
            priority: waiter.priority,
            tenant: waiter.tenant,
        }
    }
}
