//! A key's slots, counted once: its limit as the rows keep it (the
//! callers' limit and an operator's override, §11), how many slots a
//! decision may grant ([`free_slots`]: none while the key is paused), where
//! an acquire's caller stands among them ([`placement`]), and the wait
//! estimate a grant reply carries ([`eta_ms`]), and whether a newcomer
//! finds the key full (§1f `maxWaiting`, [`full`]: asked by the enqueue
//! rules and by an acquire alike).
//!
//! Both the decision (`super::grant::take_slot`) and the read plan
//! (`super::read`: whether an acquire needs its place in the order, or a
//! holder to check) ask [`placement`], so "would this acquire take a slot
//! now?" has one answer.

use super::types::{Member, Options, Summary, Waiter, Write};
use crate::ident::InstanceId;

impl Summary {
    /// The limit in force: an operator's override while one is set (the
    /// override wins, §11), else the callers' (§1a).
    pub fn limit(&self) -> u32 {
        limit_in_force(self.callers_limit, self.limit_override)
    }

    /// The limit a call that names `named` is judged with: the call's own
    /// (§1c's `onBusy`), unless an override is in force, which wins.
    pub fn limit_for(&self, named: Option<u32>) -> u32 {
        self.limit_override.or(named).unwrap_or(self.callers_limit)
    }

    /// The callers' `options.limit` (§1a) recorded: the write, if it
    /// changes the key's. Under an override it is remembered for when the
    /// override is cleared.
    pub(super) fn name_callers_limit(&mut self, limit: u32) -> Option<Write> {
        if self.callers_limit == limit {
            return None;
        }
        self.callers_limit = limit;
        Some(Write::SetLimit(limit))
    }

    /// §11 `setLimit`: the operator's override set (or cleared): the
    /// write, if it changes.
    pub(super) fn set_limit_override(&mut self, limit: Option<u32>) -> Option<Write> {
        if self.limit_override == limit {
            return None;
        }
        self.limit_override = limit;
        Some(Write::SetLimitOverride(limit))
    }
}

/// The limit in force given the callers' and an operator's override (the
/// rows' `holder_limit` and `limit_override`): the override wins.
pub fn limit_in_force(callers_limit: u32, limit_override: Option<u32>) -> u32 {
    limit_override.unwrap_or(callers_limit)
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
    summary.limit().saturating_sub(summary.holders.len() as u32)
}

/// The limit in force once `setLimit(limit)` is applied: the override, or
/// once cleared, the callers'.
pub(super) fn limit_once_set(summary: &Summary, limit: Option<u32>) -> u32 {
    limit_in_force(summary.callers_limit, limit)
}

/// Where an acquire's caller stands among the free slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Placement {
    /// The caller takes a slot now.
    pub takes_slot: bool,
    /// How many waiters from the front of the order (other than the
    /// caller) are handed a free slot with it.
    pub to_front: u32,
}

/// Whether the acquire of `id` takes a slot now with `limit` in force, and
/// how many free slots go to the front of the hand-off order: a waiter
/// (`waits`) takes one if it is among the first free ones of `front` (the
/// order's start); an id not registered takes one when nobody waits, or
/// when its place (`position`, where its priority and tenant put it: last
/// when it names neither) is within the free slots, and then leaves the
/// others to the waiters. `None`: that place decides, and is not loaded.
pub(super) fn placement(
    summary: &Summary,
    limit: u32,
    id: &InstanceId,
    waits: bool,
    front: &[Waiter],
    position: Option<u32>,
) -> Option<Placement> {
    let free = free_slots(summary, limit, 0);
    let ahead = free.min(summary.waiters);
    let takes_slot = if waits {
        front.iter().take(ahead as usize).any(|w| w.id == *id)
    } else if free == 0 {
        false
    } else if summary.waiters == 0 {
        true
    } else {
        let place = position?;
        place <= free
    };
    let to_front = match (takes_slot, waits) {
        (true, true) => ahead - 1,
        // A caller not registered that takes a slot takes one of the free
        // ones: the last of those it leaves to the waiters stays with it.
        (true, false) => ahead.min(free - 1),
        (false, _) => ahead,
    };
    Some(Placement {
        takes_slot,
        to_front,
    })
}

/// §1c's estimate of the wait of the waiter at `position`: the mean of the
/// key's last finished holds, times the rounds of `limit` slots ahead of
/// it (`ceil(position / limit)`); `None` before a finished hold.
pub fn eta_ms(summary: &Summary, position: u32) -> Option<u64> {
    let times = &summary.hold_times_ms;
    if times.is_empty() {
        return None;
    }
    let mean = times.iter().sum::<u64>() / times.len() as u64;
    let rounds = u64::from(position.div_ceil(summary.limit().max(1)));
    Some(mean.saturating_mul(rounds))
}

/// §1f `maxWaiting`: a call that would register a new waiter (an id not
/// known to the key) while the key already has as many waiters as its cap
/// (the cap the call names, else the key's), counted after the call's own
/// superseding: a superseding enqueue drops every other waiter first, so
/// it is never full. Such a call registers nothing and changes nothing
/// (the cap it names included), and is answered as `onBusy: "skip"` is.
pub(super) fn full(
    summary: &Summary,
    member: &Member,
    supersedes: bool,
    options: &Options,
) -> bool {
    let Some(cap) = options.max_waiting.or(summary.max_waiting) else {
        return false;
    };
    *member == Member::Stranger && !supersedes && summary.waiters >= cap
}
