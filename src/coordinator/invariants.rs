//! The Coordinator's broken-invariant checks: [`assert_invariants`] on a
//! decision's view (cheap, after every decision, in release builds too) and
//! [`assert_invariants_deep`] on a whole key in memory (tests and the
//! simulation).

use super::types::View;
use crate::limits::{HOLDERS_PER_KEY_MAX, PAUSE_REASON_BYTES_MAX, WAITERS_PER_KEY_MAX};
#[cfg(not(target_arch = "wasm32"))]
use {super::state::Member, super::twin::KeyTwin, crate::limits::SUPERSEDED_REMEMBERED_MAX};

/// Broken-invariant checks on a decision's view as its writes left it,
/// cheap enough to run after every decision, in release builds too: they
/// read only what the decision loaded. Panics on violation.
pub fn assert_invariants(view: &View) {
    // Plain messages: formatting rows into them costs WASM (P6); the
    // simulation's deep checks name the rows.
    let s = &view.summary;
    assert!(
        (1..=HOLDERS_PER_KEY_MAX).contains(&s.limit),
        "a key's limit out of range"
    );
    assert!(
        s.holders.len() as u32 <= HOLDERS_PER_KEY_MAX,
        "too many holders"
    );
    assert!(s.waiters <= WAITERS_PER_KEY_MAX, "too many waiters");
    assert!(
        s.callers_limit
            .is_none_or(|c| (1..=HOLDERS_PER_KEY_MAX).contains(&c)),
        "the callers' limit out of range"
    );
    assert!(
        s.paused.as_ref().is_none_or(|p| p
            .reason
            .as_ref()
            .is_none_or(|r| r.len() <= PAUSE_REASON_BYTES_MAX)),
        "a pause reason too long"
    );
    for (n, holder) in s.holders.iter().enumerate() {
        assert!(holder.fence <= s.fence, "a holder's fence above the key's");
        assert!(
            s.holders[..n]
                .iter()
                .all(|h| h.id != holder.id && (holder.fence == 0 || h.fence != holder.fence)),
            "an id holding twice, or a fence granted twice"
        );
    }
}

/// Every invariant that reading the whole key can check, for tests and the
/// simulation: the counts in bounds, the holders agreeing with them, each
/// holder holding (not waiting, not superseded), no id twice, no fence
/// above the key's or granted twice, and the front of the queue neither
/// holding nor superseded. Panics on violation.
#[cfg(not(target_arch = "wasm32"))]
pub fn assert_invariants_deep(key: &KeyTwin) {
    let limit = key.limit();
    assert!((1..=HOLDERS_PER_KEY_MAX).contains(&limit), "limit {limit}");
    assert!(key.holder_count() <= HOLDERS_PER_KEY_MAX);
    assert!(key.handed_count() <= key.holder_count());
    assert!(key.waiter_count() <= WAITERS_PER_KEY_MAX);
    let holders = key.holders();
    let fence = key.fence();
    for (n, holder) in holders.iter().enumerate() {
        assert!(
            holders[..n].iter().all(|h| h.id != holder.id),
            "{} holds twice",
            holder.id
        );
        assert_eq!(
            key.member(&holder.id),
            Member::Holder(holder.clone()),
            "holder {} reads back differently",
            holder.id
        );
        assert!(
            holder.fence <= fence,
            "{} holds fence {} above the key's {fence}",
            holder.id,
            holder.fence
        );
        assert!(
            holder.fence == 0 || holders[..n].iter().all(|h| h.fence != holder.fence),
            "fence {} granted twice",
            holder.fence
        );
    }
    assert!(key.superseded_count() <= SUPERSEDED_REMEMBERED_MAX);
    if let Some(first) = key.hand_off_order().into_iter().next() {
        assert!(
            matches!(key.member(&first.id), Member::Waiter(_)),
            "waiter {} is not only waiting",
            first.id
        );
    }
}
