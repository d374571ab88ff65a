//! A key's health at a glance (contract §10a): "is this key stuck, or just
//! busy?", answered by one pure rule, [`state`], from what the key knows of
//! itself ([`Facts`]) and the time.
//!
//! Below the concepts that use it: the Coordinator's `inspect` states its
//! key from its rows, a list shard's entry from what the key last reported
//! (`crate::busy::Busy`), and a serial group from its holder and waiters;
//! all three ask this one function, so they cannot disagree on the rule.
//! Which holders keep a key from moving, and since when, is the
//! Coordinator's to say ([`Facts::stalled_from_ms`]); this module only
//! reads the time against it.

use crate::error::BatonError;

/// §10a's states, in the order they are tried: the first that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyState {
    /// An operator paused it (§11).
    Paused,
    /// Waiters wait, and for longer than `HOLDER_CHECK_MS` a holder has
    /// not taken up a slot handed to it, or its status checks have failed:
    /// something that is not the holders' own work keeps the key from
    /// moving.
    Stalled,
    /// Waiters wait behind the holders.
    Backlogged,
    /// Every slot held, nobody waits.
    AtCapacity,
    /// Some slots held, nobody waits.
    Active,
    /// Nobody holds or waits.
    Idle,
}

/// Every state, in the order [`state`] tries them.
pub const STATES: [KeyState; 6] = [
    KeyState::Paused,
    KeyState::Stalled,
    KeyState::Backlogged,
    KeyState::AtCapacity,
    KeyState::Active,
    KeyState::Idle,
];

impl KeyState {
    /// The name callers see (`"at_capacity"`...).
    pub fn name(self) -> &'static str {
        match self {
            KeyState::Paused => "paused",
            KeyState::Stalled => "stalled",
            KeyState::Backlogged => "backlogged",
            KeyState::AtCapacity => "at_capacity",
            KeyState::Active => "active",
            KeyState::Idle => "idle",
        }
    }

    /// The state named `text`, or the refusal naming `field` and every
    /// name it could have been.
    pub fn parse(field: &'static str, text: &str) -> Result<KeyState, BatonError> {
        STATES
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| BatonError::Invalid {
                field,
                reason: format!(
                    "must be one of {} (got {text:?})",
                    STATES.map(KeyState::name).join(", ")
                ),
            })
    }
}

/// What a key's state is decided from: its counts as its list entry shows
/// them, and when its stall began to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    pub paused: bool,
    pub holders: u32,
    pub waiting: u32,
    pub limit: u32,
    /// The earliest time at which something that is not the holders' own
    /// work has kept the key for `HOLDER_CHECK_MS` (a handed slot not
    /// taken up, a holder whose checks fail: since then, plus the period),
    /// whether or not anyone waits; `None` when nothing does.
    pub stalled_from_ms: Option<u64>,
}

/// §10a: the first state that applies to a key with `facts` at `now_ms`.
///
/// A key with waiters is `backlogged` even with a slot free: outside a
/// pause no decision leaves one so (free slots are filled from the queue),
/// and a list entry may show it for the moment a report takes; the waiters
/// are what the operator needs to see.
pub fn state(facts: &Facts, now_ms: u64) -> KeyState {
    let waits = facts.waiting > 0;
    if facts.paused {
        KeyState::Paused
    } else if waits && facts.stalled_from_ms.is_some_and(|from| now_ms > from) {
        KeyState::Stalled
    } else if waits {
        KeyState::Backlogged
    } else if facts.holders >= facts.limit.max(1) {
        KeyState::AtCapacity
    } else if facts.holders > 0 {
        KeyState::Active
    } else {
        KeyState::Idle
    }
}

/// §10a's `waits` (a key's `inspect`, a group's): the median and 95th percentile (nearest rank) of
/// `waits_ms`, and how many there are.
pub fn waits(mut waits_ms: Vec<u64>) -> (u64, u64, u32) {
    waits_ms.sort_unstable();
    let n = waits_ms.len();
    let rank = |q: u64| -> u64 {
        if n == 0 {
            return 0;
        }
        // Nearest rank: the smallest value with at least q% at or below it.
        let at = (q * n as u64).div_ceil(100).max(1) as usize;
        waits_ms[at - 1]
    };
    (rank(50), rank(95), n as u32)
}

impl Facts {
    /// A serial group's facts: a key of limit 1 whose stall the queue does
    /// not track (a holder whose heartbeat goes stale frees it instead).
    pub fn group(paused: bool, held: bool, waiting: u32) -> Facts {
        Facts {
            paused,
            holders: u32::from(held),
            waiting,
            limit: 1,
            stalled_from_ms: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(holders: u32, waiting: u32, limit: u32) -> Facts {
        Facts {
            paused: false,
            holders,
            waiting,
            limit,
            stalled_from_ms: None,
        }
    }

    #[test]
    fn each_state_is_the_first_that_applies() {
        let stuck = Facts {
            stalled_from_ms: Some(100),
            ..facts(1, 2, 1)
        };
        assert_eq!(state(&stuck, 100), KeyState::Backlogged, "not longer yet");
        assert_eq!(state(&stuck, 101), KeyState::Stalled);
        let paused = Facts {
            paused: true,
            ..stuck
        };
        assert_eq!(state(&paused, 101), KeyState::Paused);
        let nobody_waits = Facts {
            waiting: 0,
            ..stuck
        };
        assert_eq!(
            state(&nobody_waits, 101),
            KeyState::AtCapacity,
            "a stall needs waiters"
        );
        assert_eq!(state(&facts(2, 0, 3), 0), KeyState::Active);
        assert_eq!(
            state(&facts(3, 0, 2), 0),
            KeyState::AtCapacity,
            "a lowered limit"
        );
        assert_eq!(state(&facts(0, 0, 1), 0), KeyState::Idle);
        assert_eq!(state(&facts(0, 1, 1), 0), KeyState::Backlogged);
    }

    #[test]
    fn the_wait_figures_are_nearest_rank() {
        assert_eq!(waits(Vec::new()), (0, 0, 0));
        assert_eq!(waits(vec![7]), (7, 7, 1));
        let hundred: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(waits(hundred), (50, 95, 100));
        assert_eq!(waits(vec![1, 2, 3, 4]), (2, 4, 4));
    }

    #[test]
    fn a_state_reads_back_by_name_and_a_bad_one_is_refused_by_name() {
        for s in STATES {
            assert_eq!(KeyState::parse("state", s.name()).unwrap(), s);
        }
        let error = KeyState::parse("state", "stuck").unwrap_err();
        assert_eq!(error.field(), "state");
        assert!(error.message().contains("paused, stalled, backlogged"));
    }
}
