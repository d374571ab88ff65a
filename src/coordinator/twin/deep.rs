//! What reading the whole in-memory key can check (`super::KeyTwin`), for
//! tests and the simulation.

use super::KeyTwin;
use crate::coordinator::check::needs_check;
use crate::coordinator::types::Member;
use crate::limits::{HOLDERS_PER_KEY_MAX, SUPERSEDED_REMEMBERED_MAX, WAITERS_PER_KEY_MAX};

/// Whether the key needs the holder-check alarm ([`needs_check`] on its
/// summary).
pub fn needs_holder_check(key: &KeyTwin) -> bool {
    needs_check(&key.summary())
}

/// Every invariant that reading the whole key can check, for tests and the
/// simulation: the counts in bounds, the holders agreeing with them, each
/// holder holding (not waiting, not superseded), no id twice, no fence
/// above the key's or granted twice, and the front of the queue neither
/// holding nor superseded. Panics on violation.
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
