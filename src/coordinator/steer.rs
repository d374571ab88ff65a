//! Steering a key (contract §11): an operator's pause, resume and limit
//! override, each rule stated once, here.
//!
//! - **Paused: nobody is granted.** [`free_slots`] is the one count of the
//!   slots a decision may grant, and it is none while the key is paused,
//!   so every path that grants (an acquire, a release, a dead holder, the
//!   alarm, a raised limit) grants nothing: a release or a dead holder
//!   frees its slot without handing it on, an acquire that would take a
//!   slot waits, `onBusy: "skip"` finds the key busy. Holders keep their
//!   slots (a holder's repeated acquire is answered before any slot is
//!   counted), and enqueue, supersede and coalesce grant nothing anyway.
//!   Pausing a paused key keeps its first `since` and takes the new reason.
//! - **Resume** unpauses and hands every free slot on at once, by the
//!   usual order and by event, as a release does (`super::grant`).
//! - **The override wins.** While an operator's limit is set, it is the
//!   key's `limit`, and the callers' `options.limit` only changes the
//!   limit remembered for when it is cleared ([`Summary::limit_for`],
//!   [`Summary::callers`]); clearing it takes that limit again. Setting it
//!   hands any new free slot on at once (none while paused); lowering it
//!   takes no slot away.
//!
//! A key never steered pays nothing for this: the pause and the override
//! ride in the key's summary (one read when the object starts, kept in
//! memory after), and no decision on such a key writes anything more.

use super::grant::fill_slots;
use super::scratch::Key;
use super::types::{Paused, Reply, Summary, Write};
use crate::ident::InstanceId;
use crate::limits::HOLDERS_PER_KEY_MAX;

impl Summary {
    /// The limit the callers named last (§1a), whether or not an
    /// operator's override hides it.
    pub fn callers(&self) -> u32 {
        self.callers_limit.unwrap_or(self.limit)
    }

    /// The operator's override in force, if one is set.
    pub fn limit_override(&self) -> Option<u32> {
        self.callers_limit.map(|_| self.limit)
    }

    /// The limit a call that names `named` is judged with: the call's own
    /// (§1c's `onBusy`), unless an override is in force, which wins.
    pub fn limit_for(&self, named: Option<u32>) -> u32 {
        match (self.callers_limit, named) {
            (None, Some(named)) => named,
            _ => self.limit,
        }
    }
}

/// How many slots a decision may grant with `limit` in force and `freed`
/// of the holders leaving: the limit less the holders, and none while the
/// key is paused.
pub fn free_slots(summary: &Summary, limit: u32, freed: u32) -> u32 {
    if summary.paused.is_some() {
        return 0;
    }
    (limit + freed).saturating_sub(summary.holders.len() as u32)
}

/// The slots `resume` hands on: those free once the key is unpaused
/// (none when it was not paused: resume then does nothing).
pub(super) fn free_on_resume(summary: &Summary) -> u32 {
    if summary.paused.is_none() {
        return 0;
    }
    summary.limit.saturating_sub(summary.holders.len() as u32)
}

/// The limit in force once `setLimit(limit)` is applied.
pub(super) fn limit_once_set(summary: &Summary, limit: Option<u32>) -> u32 {
    limit.unwrap_or_else(|| summary.callers())
}

/// `pause(key, { reason })`: the key paused since its first pause, with
/// the latest reason.
pub(super) fn pause(key: &mut Key<'_>, now_ms: u64, reason: Option<String>) -> Reply {
    let paused = Paused {
        since_ms: key.s.paused.as_ref().map_or(now_ms, |p| p.since_ms),
        reason,
    };
    if key.s.paused.as_ref() != Some(&paused) {
        key.s.paused = Some(paused.clone());
        key.writes.push(Write::SetPaused(Some(paused.clone())));
    }
    Reply::Paused(paused)
}

/// `resume(key)`: unpaused, every free slot handed on; who got one.
pub(super) fn resume(key: &mut Key<'_>, now_ms: u64) -> Reply {
    if key.s.paused.is_none() {
        return Reply::Resumed(Vec::new());
    }
    key.s.paused = None;
    key.writes.push(Write::SetPaused(None));
    Reply::Resumed(hand_on(key, now_ms))
}

/// `setLimit(key, limit)`: the override set (or cleared), the new free
/// slots handed on.
pub(super) fn set_limit(key: &mut Key<'_>, now_ms: u64, limit: Option<u32>) -> Reply {
    if let Some(limit) = limit {
        assert!(
            (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
            "a limit out of range passed the edge"
        );
    }
    if key.s.limit_override() != limit {
        let callers = key.s.callers();
        key.s.limit = limit_once_set(&key.s, limit);
        key.s.callers_limit = limit.map(|_| callers);
        key.writes.push(Write::SetLimitOverride(limit));
    }
    hand_on(key, now_ms);
    Reply::LimitSet {
        limit: key.s.limit,
        limit_override: key.s.limit_override(),
    }
}

/// The callers' `options.limit`, as the key records it: the key's limit,
/// or while an override is in force the one remembered for when it is
/// cleared.
pub(super) fn set_callers_limit(key: &mut Key<'_>, limit: u32) {
    if key.s.callers() == limit {
        return;
    }
    match &mut key.s.callers_limit {
        Some(callers) => *callers = limit,
        None => key.s.limit = limit,
    }
    key.writes.push(Write::SetLimit(limit));
}

/// Every free slot handed to the front of the order and woken; who got one.
fn hand_on(key: &mut Key<'_>, now_ms: u64) -> Vec<InstanceId> {
    let mut wake = Vec::new();
    fill_slots(key, now_ms, &mut wake);
    let granted = wake.iter().map(|h| h.id.clone()).collect();
    for holder in wake {
        key.wake(holder);
    }
    granted
}
