//! A list shard's view of one key: what its Coordinator last reported.

use crate::health::{self, Facts, KeyState};
use crate::limits::LIST_DEAD_LISTED_MS;

/// What a key's Coordinator reports of it: the counts the list shows, and
/// until when a dead holder keeps it listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    pub holders: u32,
    pub waiting: u32,
    /// When the earliest waiter joined the queue (ms since the epoch);
    /// `None` without waiters.
    pub oldest_since_ms: Option<u64>,
    pub limit: u32,
    /// A holder found dead keeps the key listed until then
    /// ([`LIST_DEAD_LISTED_MS`] after it was found).
    pub dead_until_ms: Option<u64>,
    /// §11: an operator paused the key (it lists as it would otherwise).
    pub paused: bool,
    /// §10a: from when the key counts as stalled should it still have
    /// waiters ([`Facts::stalled_from_ms`]); `None` while nothing keeps it.
    pub stalled_from_ms: Option<u64>,
}

impl Busy {
    /// Whether the key belongs on the list at `now_ms` (contract §10: a
    /// waiter, or a holder found dead in the last hour).
    pub fn listed_at(&self, now_ms: u64) -> bool {
        self.waiting > 0 || self.dead_until_ms.is_some_and(|until| until > now_ms)
    }

    /// Until when a holder found dead at `found_ms` keeps its key listed.
    pub fn dead_until(found_ms: u64) -> u64 {
        found_ms.saturating_add(LIST_DEAD_LISTED_MS)
    }

    /// §10a: the key's state at `now_ms`, by the one rule
    /// ([`health::state`]) from what the key reported.
    pub fn state_at(&self, now_ms: u64) -> KeyState {
        health::state(
            &Facts {
                paused: self.paused,
                holders: self.holders,
                waiting: self.waiting,
                limit: self.limit,
                stalled_from_ms: self.stalled_from_ms,
            },
            now_ms,
        )
    }

    /// The key's `oldestWaitMs` at `now_ms`: how long its earliest waiter
    /// has waited (0 without waiters).
    pub fn oldest_wait_ms(&self, now_ms: u64) -> u64 {
        self.oldest_since_ms
            .map_or(0, |since| now_ms.saturating_sub(since))
    }
}

/// One report of a key to its list shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Orders the key's reports: a later report has a higher stamp
    /// ([`super::reporter`] draws them), so the shard keeps the newest and
    /// ignores a late or repeated one.
    pub stamp: u64,
    pub busy: Busy,
}

/// A key's row in its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// On the list, as the report with `stamp` said; `reported_ms` is when
    /// the shard took it (its own clock), which the read uses to find
    /// entries nobody has confirmed for a while.
    Listed {
        stamp: u64,
        busy: Busy,
        reported_ms: u64,
    },
    /// Left the list with the report of `stamp`; remembered until
    /// `forget_ms` so an older report arriving late is known as such.
    Gone { stamp: u64, forget_ms: u64 },
}

impl Row {
    pub fn stamp(&self) -> u64 {
        match self {
            Row::Listed { stamp, .. } | Row::Gone { stamp, .. } => *stamp,
        }
    }

    /// When the shard's alarm next has something to do for this row: a
    /// listed key kept only by a dead holder leaves at the hour's end; a
    /// gone key is forgotten.
    pub fn wake_ms(&self) -> Option<u64> {
        match self {
            Row::Listed { busy, .. } if busy.waiting == 0 => busy.dead_until_ms,
            Row::Listed { .. } => None,
            Row::Gone { forget_ms, .. } => Some(*forget_ms),
        }
    }
}
