//! What a caller asks of a bucket: `acquire`, `penalize`, `refund` and
//! `inspect` as [`Call`]s, each typed by its answer, and the answers'
//! types. `decide.rs` decides them.

use super::log::Reason;
use super::rules::{RuleId, RuleSet};
use super::state::{Rows, Write};
use crate::error::BatonError;
use crate::transition::Lines;
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireReply {
    pub granted: u32,
    /// 0 when anything was granted; otherwise the time until an acquire of
    /// one permit would be granted.
    pub wait_ms: u64,
}

/// One remembered rule as `inspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleView {
    pub id: RuleId,
    pub limit: u32,
    pub window_ms: u64,
    /// Permits granted under the rule in the last `window_ms`.
    pub used: u64,
    /// When the rule alone next has a free permit (`now` if it has one).
    pub next_free_at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The cooldown's end while it lasts.
    pub cooldown_until_ms: Option<u64>,
    /// Every remembered rule, in slot order.
    pub rules: Vec<RuleView>,
}

/// What a caller asks of a bucket, each call typed by its answer
/// ([`decide`](fn@super::decide) answers a [`Call`] with its `Answer`).
pub trait Call {
    type Answer;
    /// The answer, with the writes it takes pushed to `writes` and the
    /// decision-log lines it prints to `log` (`log.rs`).
    fn answer(
        self,
        view: &impl Rows,
        writes: &mut Vec<Write>,
        log: &mut Lines<Reason>,
        now_ms: u64,
    ) -> Result<Self::Answer, BatonError>;
}

/// Up to `permits` that every rule in `rules` and the cooldown allow.
/// The rules are shared: the object keeps the last call's decoded rules
/// beside its bucket and hands them to the next call with the same text
/// ([`SeenCall`](super::SeenCall)), so a clone copies no rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    pub rules: Rc<RuleSet>,
    pub permits: u32,
}

/// No grants until `now + cooldown_ms`, unless an earlier penalty already
/// reaches further. Answers the cooldown's end as it now stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Penalize {
    pub cooldown_ms: u64,
}

/// Up to `permits` of the most recent live grants given back. Answers how
/// many permits were refunded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refund {
    pub permits: u32,
}

/// Every remembered rule with its use, and the cooldown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inspect;
