//! The object's open long-polls, as data.
//!
//! The shell keeps, beside this registry, a resolver per [`WaitId`] (a JS
//! promise's `resolve`) and a timer at each deadline. Which waits a commit
//! wakes, which have expired and how many are open are decided here, so
//! the simulation checks the same rules the object runs: a wait is answered
//! by the commit that gives it something, or by its deadline, never by
//! polling storage. Waits live in memory only: an object restart drops the
//! RPCs that carried them, and their callers retry.

use super::input::EventLimit;
use crate::ident::Ident;
use crate::limits::RUN_OPEN_WAITS_MAX;
use std::collections::BTreeMap;

/// Names one open wait within the object.
pub type WaitId = u64;

/// What a wait is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// `await`: the run's outcome.
    Outcome,
    /// `events`: any event with `seq > after`.
    Events { after: u64, limit: EventLimit },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub key: Ident,
    pub on: WaitFor,
    /// When it answers with the state as it is, if nothing woke it first.
    pub deadline_ms: u64,
}

/// Every open wait of one object, at most [`RUN_OPEN_WAITS_MAX`].
#[derive(Debug, Default)]
pub struct Waits {
    open: BTreeMap<WaitId, Wait>,
    next_id: WaitId,
}

impl Waits {
    /// How many are open: the decisions' `open_waits`.
    pub fn open(&self) -> u32 {
        u32::try_from(self.open.len()).expect("waits are bounded")
    }

    /// Registers a wait the decision said to park. The decision only says
    /// so below the bound, so a full registry here is a broken invariant.
    pub fn park(&mut self, wait: Wait) -> WaitId {
        assert!(self.open() < RUN_OPEN_WAITS_MAX, "parked past the bound");
        self.next_id += 1;
        self.open.insert(self.next_id, wait);
        self.next_id
    }

    /// Takes `id` out (its timer fired, or it was answered); `None` if it
    /// was already answered, so a late or repeated timer does nothing.
    pub fn take(&mut self, id: WaitId) -> Option<Wait> {
        self.open.remove(&id)
    }

    /// Takes out every wait the recorded outcome of `key` answers.
    pub fn woken_by_outcome(&mut self, key: &Ident) -> Vec<(WaitId, Wait)> {
        self.take_where(|w| w.key == *key && w.on == WaitFor::Outcome)
    }

    /// Takes out every `events` wait on `key` that event `seq` answers.
    pub fn woken_by_event(&mut self, key: &Ident, seq: u64) -> Vec<(WaitId, Wait)> {
        self.take_where(|w| {
            w.key == *key && matches!(w.on, WaitFor::Events { after, .. } if after < seq)
        })
    }

    /// Takes out every wait whose deadline has come.
    pub fn expired(&mut self, now_ms: u64) -> Vec<(WaitId, Wait)> {
        self.take_where(|w| w.deadline_ms <= now_ms)
    }

    /// The earliest deadline of an open wait.
    pub fn next_deadline(&self) -> Option<u64> {
        self.open.values().map(|w| w.deadline_ms).min()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&WaitId, &Wait)> {
        self.open.iter()
    }

    /// Drops every wait: the object restarted, and their RPCs with it.
    pub fn clear(&mut self) {
        self.open.clear();
    }

    /// Linear in the open waits, which are bounded by [`RUN_OPEN_WAITS_MAX`].
    fn take_where(&mut self, matches: impl Fn(&Wait) -> bool) -> Vec<(WaitId, Wait)> {
        let ids: Vec<WaitId> = self
            .open
            .iter()
            .filter(|(_, w)| matches(w))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .map(|id| (id, self.open.remove(&id).expect("just listed")))
            .collect()
    }
}
