//! The shapes a key's state takes, and the storage interface decisions use.

use crate::ident::{InputHash, InstanceId, WorkflowName};

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
    /// registration ([`KeyStore::next_turn`]), so no two registrations of
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

/// One key's state, as decisions read and write it.
///
/// Every method's cost is bounded by the key's `limit` (at most
/// [`HOLDERS_PER_KEY_MAX`](crate::limits::HOLDERS_PER_KEY_MAX)) or by its
/// argument, never by the number of waiters, except
/// [`KeyStore::supersede_waiters_except`], whose work is proportional to the
/// waiters it removes. Writes made during one decision must be committed
/// together.
pub trait KeyStore {
    /// `id`'s place at the key. The SQL store reads it together with the
    /// key's counts (limit, holders, handed, waiters) in one statement, so a
    /// decision that starts here reads nothing else on the uncontended path.
    fn member(&self, id: &InstanceId) -> Member;

    /// How many may hold the key at once (1 until a call names a limit).
    fn limit(&self) -> u32;
    fn set_limit(&mut self, limit: u32);

    /// The highest fence the key has granted (0 before its first grant).
    /// [`KeyStore::add_holder`] raises it to the new holder's fence; it
    /// never decreases.
    fn fence(&self) -> u64;
    /// Draws the key's next registration number for a [`Turn::Own`]: one
    /// more than any drawn before, never reused.
    fn next_turn(&mut self) -> u64;

    fn holder_count(&self) -> u32;
    /// Holders handed a slot that have not yet confirmed it.
    fn handed_count(&self) -> u32;
    /// Every holder, in the order they got the key.
    fn holders(&self) -> Vec<Holder>;
    /// Up to `n` holders due a liveness check, least recently checked first
    /// (never checked first, then in the order they got the key): every
    /// holder when someone waits, else only the `Handed` ones.
    fn holders_to_check(&self, n: u32) -> Vec<Holder>;
    /// Records that `id` was just checked, for [`KeyStore::holders_to_check`]'s order.
    fn mark_checked(&mut self, id: &InstanceId, now_ms: u64);
    /// Adds a holder behind the others and raises the key's fence to
    /// `holder.fence`, which is above it. The id is neither holding nor waiting.
    fn add_holder(&mut self, holder: &Holder);
    /// `Handed` becomes `Holding`.
    fn confirm_holder(&mut self, id: &InstanceId);
    fn set_holder_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>);
    fn remove_holder(&mut self, id: &InstanceId);

    fn waiter_count(&self) -> u32;
    /// The `n` waiters that will be handed the key next, in order.
    fn first_waiters(&self, n: u32) -> Vec<Waiter>;
    /// `id`'s place in the order the key is handed on (1 is next), if it
    /// waits. Costs a count of the waiters ahead; only grant replies ask.
    fn position(&self, id: &InstanceId) -> Option<u32>;
    /// The earliest waiter registered with `hash`.
    fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter>;
    /// Appends `waiter` behind every current waiter. The id is neither
    /// waiting, holding nor superseded (superseded is final for an id).
    fn push_waiter(&mut self, waiter: &Waiter);
    fn set_waiter_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>);
    fn remove_waiter(&mut self, id: &InstanceId);
    /// Removes every waiter but `keep`, records each as superseded, and
    /// returns them in queue order.
    fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<Waiter>;

    fn superseded_count(&self) -> u32;
    /// Forgets the oldest superseded ids until at most `keep` remain.
    fn forget_superseded_beyond(&mut self, keep: u32);
}
