//! The shapes a key's state takes, and the storage interface decisions use.

use crate::ident::{InputHash, InstanceId};

/// How the current holder came to hold the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HolderState {
    /// The key was handed over (on release or a dead holder) and the turn
    /// event sent, but the instance has not yet acquired. A lost event is
    /// re-sent by the holder-check alarm while the holder stays `Handed`.
    Handed,
    /// The instance called `acquire` and was told `"granted"`.
    Holding,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub id: InstanceId,
    /// When the key passed to this instance, in ms since the epoch.
    pub since_ms: u64,
    pub state: HolderState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter {
    pub id: InstanceId,
    /// When the instance joined the queue, in ms since the epoch.
    pub since_ms: u64,
    pub input_hash: Option<InputHash>,
}

/// What the Workflow binding said about an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// `complete`, `errored`, `terminated`, or not found.
    Dead,
    /// The binding call failed for another reason. Treated as alive
    /// wherever acting on "dead" would take a key from a live instance.
    Unknown,
}

/// One key's state, as decisions read and write it.
///
/// Implementations must make each method's cost independent of the number of
/// waiters, except [`KeyStore::supersede_waiters_except`], whose work is
/// proportional to the waiters it removes. Writes made during one decision
/// must be committed together.
pub trait KeyStore {
    fn holder(&self) -> Option<Holder>;
    fn set_holder(&mut self, holder: Option<&Holder>);

    fn waiter(&self, id: &InstanceId) -> Option<Waiter>;
    /// The waiter that will be handed the key next.
    fn first_waiter(&self) -> Option<Waiter>;
    /// The earliest waiter registered with `hash`.
    fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter>;
    fn waiter_count(&self) -> u32;
    /// Appends `waiter` behind every current waiter. The id is neither
    /// waiting nor superseded (superseded is final for an id).
    fn push_waiter(&mut self, waiter: &Waiter);
    fn remove_waiter(&mut self, id: &InstanceId);
    /// Removes every waiter but `keep`, records each as superseded, and
    /// returns their ids in queue order.
    fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<InstanceId>;

    fn is_superseded(&self, id: &InstanceId) -> bool;
    fn superseded_count(&self) -> u32;
    /// Forgets the oldest superseded ids until at most `keep` remain.
    fn forget_superseded_beyond(&mut self, keep: u32);
}
