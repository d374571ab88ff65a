//! The shapes a key's rows take: its holders, its waiters, and where an
//! instance stands at a key ([`Member`]).

use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};

/// How a holder came to hold its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HolderState {
    /// The slot was handed over (on a release, a dead holder or a raised
    /// limit) and the instance does not know it yet: a [`Turn::Shared`]
    /// holder has not acquired since, a [`Turn::Own`] holder's grant event
    /// was not yet accepted by the engine. The holder-check alarm sends the
    /// event again while the holder stays `Handed`.
    Handed,
    /// The instance was told: it called `acquire` and was told `"granted"`,
    /// or the engine accepted its grant event (contract §1b).
    Holding,
}

/// How a registration learns that a slot was handed to it (contract §1b).
/// Fixed by the call that registers the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Turn {
    /// Woken with `TURN_EVENT_TYPE`, then it acquires (§1).
    Shared,
    /// Registered with `grant`: sent the grant itself, on an event type of
    /// its own. `n` is the key's registration counter, drawn once per
    /// registration (`Write::DrawTurn`), so no two registrations of
    /// the key share it; the shell adds the key's digest for the event type.
    Own(u64),
}

/// One of the key's holders (a key has up to its `limit` of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub id: InstanceId,
    /// When the slot passed to this instance, in ms since the epoch.
    pub since_ms: u64,
    pub state: HolderState,
    /// The Workflow binding the instance is checked, woken and terminated
    /// through; `None` is the default binding (`WORKFLOW_BINDING`).
    pub workflow: Option<WorkflowName>,
    /// When an `enqueue` registered the instance, if one did: until the
    /// grace after it, "not found" means "not created yet", not dead.
    pub enqueued_ms: Option<u64>,
    /// As the registration that brought it here was made.
    pub turn: Turn,
    /// The key's fence when this slot was granted: 1 for the key's first
    /// grant, one more for each grant after (0: granted by a release from
    /// before fences, which every later fence exceeds).
    pub fence: u64,
    /// Cancelled by a superseding enqueue with `cancelHolders` (§1d): the
    /// object terminates it, and it keeps its slot until it is found dead.
    pub cancelling: bool,
    /// How long it waited for its slot (0: granted at its own call, with
    /// no wait): kept with it until its hold ends, for the history's
    /// record of that hold (`history::record`).
    pub waited_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter {
    pub id: InstanceId,
    /// When the instance joined the queue, in ms since the epoch.
    pub since_ms: u64,
    pub input_hash: Option<InputHash>,
    /// As [`Holder::workflow`].
    pub workflow: Option<WorkflowName>,
    /// As [`Holder::enqueued_ms`]: `Some(since_ms)` when an `enqueue`
    /// registered it, `None` when its own `acquire` did.
    pub enqueued_ms: Option<u64>,
    pub turn: Turn,
    /// Contract §1c, fixed by the call that registered it: slots go to the
    /// highest priority present (-100 to 100, 0 unless named).
    pub priority: i8,
    /// Contract §1c: within a priority, slots go round the tenants; `None`
    /// is the one tenant shared by every waiter that names none.
    pub tenant: Option<Ident>,
}

/// Where an instance stands at a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    Holder(Holder),
    Waiter(Waiter),
    /// Dropped by a superseding enqueue; final for the id.
    Superseded,
    /// Not known to the key.
    Stranger,
}

/// The shared Workflow vocabulary (`crate::workflow`), as the Coordinator
/// has always named it.
pub use crate::workflow::Liveness;
