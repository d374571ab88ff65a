//! Steering a key (contract §11): an operator's pause, resume and limit
//! override, each rule stated once, here.
//!
//! - **Paused: nobody is granted.** `slots::free_slots` is the one count of the
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
//!   limit remembered for when it is cleared (the key keeps both, as its
//!   rows do: `Summary::limit` in `slots.rs`); clearing it takes that
//!   limit again. Setting it hands any new free slot on at once (none
//!   while paused); lowering it takes no slot away.
//!
//! A key never steered pays nothing for this: the pause and the override
//! ride in the key's summary (one read when the object starts, kept in
//! memory after), and no decision on such a key writes anything more.

use super::draft::Draft;
use super::grant::fill_slots;
use super::types::{LimitSet, Paused, Write};
use crate::ident::InstanceId;
use crate::limits::HOLDERS_PER_KEY_MAX;

/// `pause(key, { reason })`: the key paused since its first pause, with
/// the latest reason.
pub(super) fn pause(key: &mut Draft<'_>, now_ms: u64, reason: Option<String>) -> Paused {
    let paused = Paused {
        since_ms: key.s.paused.as_ref().map_or(now_ms, |p| p.since_ms),
        reason,
    };
    if key.s.paused.as_ref() != Some(&paused) {
        key.s.paused = Some(paused.clone());
        key.writes.push(Write::SetPaused(Some(paused.clone())));
    }
    paused
}

/// `resume(key)`: unpaused, every free slot handed on; who got one.
pub(super) fn resume(key: &mut Draft<'_>, now_ms: u64) -> Vec<InstanceId> {
    if key.s.paused.is_none() {
        return Vec::new();
    }
    key.s.paused = None;
    key.writes.push(Write::SetPaused(None));
    hand_on(key, now_ms)
}

/// `setLimit(key, limit)`: the override set (or cleared), the new free
/// slots handed on.
pub(super) fn set_limit(key: &mut Draft<'_>, now_ms: u64, limit: Option<u32>) -> LimitSet {
    if let Some(limit) = limit {
        assert!(
            (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
            "a limit out of range passed the edge"
        );
    }
    key.writes.extend(key.s.set_limit_override(limit));
    hand_on(key, now_ms);
    LimitSet {
        limit: key.s.limit(),
        limit_override: key.s.limit_override,
    }
}

/// Every free slot handed to the front of the order and woken; who got one.
fn hand_on(key: &mut Draft<'_>, now_ms: u64) -> Vec<InstanceId> {
    let mut wake = Vec::new();
    fill_slots(key, now_ms, &mut wake);
    let granted = wake.iter().map(|h| h.id.clone()).collect();
    for holder in wake {
        key.wake(holder);
    }
    granted
}
