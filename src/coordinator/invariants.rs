//! The Coordinator's broken-invariant checks on a decision's view:
//! [`assert_invariants`] (cheap, after every decision, in release builds
//! too). The deep check of a whole key in memory, for tests and the
//! simulation, is the twin's (`twin::assert_invariants_deep`).

use super::types::View;
use crate::limits::{HOLDERS_PER_KEY_MAX, PAUSE_REASON_BYTES_MAX, WAITERS_PER_KEY_MAX};

/// Broken-invariant checks on a decision's view as its writes left it,
/// cheap enough to run after every decision, in release builds too: they
/// read only what the decision loaded. Panics on violation.
pub fn assert_invariants(view: &View) {
    // Plain messages: formatting rows into them costs WASM (P6); the
    // simulation's deep checks name the rows.
    let s = &view.summary;
    assert!(
        (1..=HOLDERS_PER_KEY_MAX).contains(&s.callers_limit),
        "the callers' limit out of range"
    );
    assert!(
        s.holders.len() as u32 <= HOLDERS_PER_KEY_MAX,
        "too many holders"
    );
    assert!(s.waiters <= WAITERS_PER_KEY_MAX, "too many waiters");
    assert!(
        s.limit_override
            .is_none_or(|o| (1..=HOLDERS_PER_KEY_MAX).contains(&o)),
        "a limit override out of range"
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
