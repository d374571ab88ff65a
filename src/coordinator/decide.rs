//! The requests and replies of the Coordinator's decision
//! (`super::transition::decide`), and the rules it keeps.
//!
//! # Slots
//! A key has `limit` slots (1 unless a call named another limit). A holder
//! occupies one from the moment it is handed the key (`Handed`) or granted
//! it (`Holding`) until it releases or is found dead. Free slots always go
//! to the earliest waiters: whenever a decision frees a slot (a release, a
//! dead holder, a raised limit seen by `acquire`), it hands the free slots
//! to the front of the queue and returns those holders to be woken.
//! Lowering the limit takes no slot away; it only stops new grants until
//! the holders are below it. `enqueue` registers waiters and records a
//! limit but hands nothing on: the next acquire, release or alarm does.
//!
//! # Grants and fences (contract §1b)
//! Every grant of a slot, by `acquire` or by a hand-off, takes the key's
//! next fence (the summary's `fence` + 1), in one place of the decision, so
//! no path can grant without one. A registration made with `grant` gets a
//! [`Turn::Own`]: when a slot is handed to it, the shell sends it the grant
//! itself (key, id, fence) on that registration's own event type, and
//! reports the engine's acceptance back (`Input::Woken` with `accepted`),
//! after which the holder counts as told and the event is not sent again.

//!
//! # Who goes next (contract §1c)
//! "The front of the queue" is the hand-off order: the highest priority
//! present first; within a priority, the tenants with waiters take turns
//! (a tenant never served first, by its earliest waiter; then the one
//! served longest ago), each turn going to that tenant's earliest waiter.
//! A tenant is served when a waiter of it is granted a slot (a
//! `Write::Serve` with the grant's fence moves it to the back of its
//! priority's round); a caller granted at once with nobody waiting serves
//! no one. An id not registered counts where its priority and tenant put
//! it (with neither: last, as §1a says). The order is the storage's to
//! read cheaply (`View::front`, `View::position`); the decision only takes
//! from the front.
//!
//! `onBusy: "skip"` applies to a call that would register the id: an
//! enqueue answers busy when every slot is held or anyone waits; an
//! acquire answers busy unless it is granted at once, and then registers
//! nothing and changes nothing (it checks a holder first when nobody
//! waits, since no alarm would). An id already registered is answered as
//! without it.
//!
//! A hold finishes when its holder releases, or is found dead after it
//! confirmed its slot; the last [`HOLD_TIMES_KEPT`](crate::limits::HOLD_TIMES_KEPT)
//! lengths give `etaMs` (`super::transition::eta_ms`).

use super::state::{Turn, Waiter};
use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};

/// The options of `enqueue` and `acquire` (contract §1a), validated at the
/// edge: `workflow` names a configured binding, `limit` is 1 to 1000.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The binding of the instance being registered; absent keeps the one
    /// remembered for a registered id, or the default binding for a new one.
    pub workflow: Option<WorkflowName>,
    /// The key's new limit; absent keeps the key's.
    pub limit: Option<u32>,
    /// `grant: true` (§1b): a registration made by this call gets a turn of
    /// its own, and `acquire` answers the object form ([`Place`], fences).
    pub grant: bool,
    /// §1c: the priority a registration made by this call gets (-100 to
    /// 100, checked at the edge; 0 unless named). Ignored for an id
    /// already registered: fixed by the call that registered it.
    pub priority: i8,
    /// §1c: the tenant a registration made by this call gets (`None`: the
    /// shared one). Fixed at registration, as `priority`.
    pub tenant: Option<Ident>,
    /// §1c `onBusy: "skip"`: a call that would register the id answers
    /// busy instead of waiting, registering nothing (see `decide`).
    pub skip: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequest {
    pub supersedes: bool,
    pub id: InstanceId,
    pub input_hash: Option<InputHash>,
    pub options: Options,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnqueueReply {
    /// Waiters dropped by this enqueue, in queue order; the shell terminates
    /// them (best effort, each through its own Workflow) after the commit.
    pub terminated: Vec<Waiter>,
    /// The live waiting instance this enqueue coalesced into; nothing was registered.
    pub coalesced_into: Option<InstanceId>,
    /// §1c: with `onBusy: "skip"`, the key was busy (every slot held, or
    /// someone waiting): nothing was registered, nothing changed.
    pub busy: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireRequest {
    pub id: InstanceId,
    pub options: Options,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// The caller holds a slot, granted with this fence.
    Granted {
        fence: u64,
    },
    /// The caller waits; with `grant`, where and for which event.
    Pending(Option<Place>),
    Superseded,
    /// §1c `onBusy: "skip"`: not granted at once; nothing registered.
    Busy,
}

/// A waiting caller's place, for a `grant` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The event it will be told its turn with.
    pub turn: Turn,
    /// 1 is next.
    pub position: u32,
    /// §1c: the mean of the key's last hold times times
    /// `ceil(position / limit)`; `None` before the key's first finished hold.
    pub eta_ms: Option<u64>,
}
