//! The one decision, [`decide`]: `acquire`, `penalize`, `refund` and
//! `inspect` as [`Call`](super::Call)s (`call.rs`), each typed by its answer.
//!
//! It takes the bucket as [`Rows`] (read-only lookups), the time and the
//! call, and returns the call's answer beside the shared
//! [`Transition`](crate::transition::Transition): the row [`Write`]s, which the shell commits in the same
//! turn. It never blocks, awaits, writes or fails on I/O; a request that
//! breaks a rule of the contract is refused with no writes. A rate decision
//! has no effects and never needs the alarm (aged rows are pruned a few per
//! call), so `effects` is empty and `alarm` is [`Alarm::Keep`](crate::transition::Alarm::Keep).
//! Its one line, an acquire's, is `super::log`'s. Why a window is exact:
//! the rate-limit module's doc, "Exactness".

use super::call::{Acquire, AcquireReply, Call, Inspect, Inspection, Penalize, Refund, RuleView};
use super::log::{acquire_line, Reason};
use super::rules::RuleSet;
use super::state::{GrantRow, Meta, Rows, RuleRow, Totals, Write};
use crate::error::BatonError;
use crate::limits::{
    RATE_PRUNE_ROWS_PER_CALL, RATE_REFUND_PAGE_ROWS, RATE_REFUND_ROWS_VISITED_MAX, RATE_RULE_SLOTS,
};
use crate::transition::{Lines, NoEffect};

impl Call for Acquire {
    type Answer = AcquireReply;
    fn answer(
        self,
        view: &impl Rows,
        writes: &mut Vec<Write>,
        log: &mut Lines<Reason>,
        now_ms: u64,
    ) -> Result<AcquireReply, BatonError> {
        let reply = acquire(view, writes, now_ms, &self.rules, self.permits)?;
        log.push(acquire_line(reply.granted, reply.wait_ms, self.permits));
        Ok(reply)
    }
}

impl Call for Penalize {
    type Answer = u64;
    fn answer(
        self,
        view: &impl Rows,
        writes: &mut Vec<Write>,
        _: &mut Lines<Reason>,
        now_ms: u64,
    ) -> Result<u64, BatonError> {
        Ok(penalize(view, writes, now_ms, self.cooldown_ms))
    }
}

impl Call for Refund {
    type Answer = u32;
    fn answer(
        self,
        view: &impl Rows,
        writes: &mut Vec<Write>,
        _: &mut Lines<Reason>,
        now_ms: u64,
    ) -> Result<u32, BatonError> {
        Ok(refund(view, writes, now_ms, self.permits))
    }
}

impl Call for Inspect {
    type Answer = Inspection;
    fn answer(
        self,
        view: &impl Rows,
        _: &mut Vec<Write>,
        _: &mut Lines<Reason>,
        now_ms: u64,
    ) -> Result<Inspection, BatonError> {
        Ok(inspect(view, now_ms))
    }
}

/// Each rate call is a core call ([`crate::transition::Call`], the one
/// trait every concept's calls are) on any bucket view: its `answer` form
/// decided by [`decide`].
impl<V: Rows + Clone, C: Call> crate::transition::Call<V> for C {
    type Answer = C::Answer;
    type Transition = Transition<V>;
    fn decide(self, view: &V, now_ms: u64) -> Result<(C::Answer, Transition<V>), BatonError> {
        decide(view, now_ms, self)
    }
}

/// A rate decision: its state is the view it read, through which the
/// shell's invariants read the bucket once the writes are committed. The
/// call's answer goes beside it.
pub type Transition<V> = crate::transition::Transition<(), Write, V, NoEffect, Reason>;

/// The one decision: what `call` at `now_ms` makes of the bucket `view`:
/// the call's answer, and the transition.
pub fn decide<V: Rows + Clone, C: Call>(
    view: &V,
    now_ms: u64,
    call: C,
) -> Result<(C::Answer, Transition<V>), BatonError> {
    let mut writes = Vec::new();
    let mut log = Lines::new();
    let answer = call.answer(view, &mut writes, &mut log, now_ms)?;
    let transition = Transition {
        reply: (),
        writes,
        effects: Vec::new(),
        alarm: crate::transition::Alarm::Keep,
        log,
        state: view.clone(),
    };
    Ok((answer, transition))
}

/// Grants up to `permits` that every rule in `rules` and the cooldown allow.
fn acquire(
    store: &impl Rows,
    writes: &mut Vec<Write>,
    now_ms: u64,
    rules: &RuleSet,
    permits: u32,
) -> Result<AcquireReply, BatonError> {
    let newest = store.newest_grant();
    let now = clamp_now(now_ms, newest.as_ref());
    let (stored_meta, remembered) = store.meta_and_rules();
    let meta = widened(stored_meta, rules, now);
    let kept_from = kept_from(&meta, now);

    // Every refusal comes before the first write.
    let assigned = assign_slots(store, newest.as_ref(), remembered, rules, kept_from)?;
    let rows: Vec<RuleRow> = assigned.iter().map(|(row, _)| row.clone()).collect();

    let uses: Vec<WindowUse> = rows
        .iter()
        .map(|row| window_use(store, newest.as_ref(), row, &meta, now))
        .collect();
    let cooling = now < meta.cooldown_until_ms;
    let free = rows
        .iter()
        .zip(&uses)
        .map(|(row, used)| u64::from(row.limit).saturating_sub(used.used))
        .min()
        .unwrap_or(0);
    let granted = if cooling {
        0
    } else {
        free.min(u64::from(permits)) as u32
    };

    let mut newest_seq = newest.as_ref().map(|n| n.seq);
    let wait_ms = if granted > 0 {
        let grant = grant_row(newest.as_ref(), &rows, granted, now);
        newest_seq = Some(grant.seq);
        writes.push(Write::Grant(grant));
        0
    } else {
        let from = if cooling { meta.cooldown_until_ms } else { now };
        next_free_at(store, newest.as_ref(), &rows, &uses, from, now) - now
    };
    // Only what changed is written: a refusal on a bucket whose rules and
    // windows are as before writes nothing, a grant one row.
    for (row, changed) in assigned {
        if changed {
            writes.push(Write::Rule(row));
        }
    }
    if meta != stored_meta {
        writes.push(Write::Meta(meta));
    }
    prune(writes, newest_seq, &meta, now);
    Ok(AcquireReply { granted, wait_ms })
}

/// The bucket's meta as a call with `rules` leaves it at `now`: its
/// longest window widened to the call's longest.
fn widened(meta: Meta, rules: &RuleSet, now: u64) -> Meta {
    let call_window_max = rules.rules().iter().map(|r| r.window_ms).max().unwrap_or(0);
    let max_window_ms = meta.max_window_ms.max(call_window_max);
    let mut horizon_ms = meta.horizon_ms;
    if max_window_ms > meta.max_window_ms && meta.max_window_ms > 0 {
        // Grants older than the old longest window may be deleted already.
        horizon_ms = horizon_ms.max(window_from(now, meta.max_window_ms));
    }
    Meta {
        max_window_ms,
        horizon_ms,
        ..meta
    }
}

/// The row of a grant of `granted` permits at `now` under `rows`: the
/// next sequence number, and each of their slots' running totals raised
/// by it.
fn grant_row(newest: Option<&GrantRow>, rows: &[RuleRow], granted: u32, now: u64) -> GrantRow {
    let mask = rows.iter().fold(0u16, |mask, row| mask | 1 << row.slot);
    let mut totals = newest.map_or([0; RATE_RULE_SLOTS], |n| n.totals);
    for (slot, total) in totals.iter_mut().enumerate() {
        if mask & (1 << slot) != 0 {
            *total += u64::from(granted);
        }
    }
    GrantRow {
        seq: newest.map_or(1, |n| n.seq + 1),
        at_ms: now,
        permits: granted,
        mask,
        totals,
    }
}

/// When nothing is granted: the latest of `from` (the cooldown's end, or
/// `now`) and each rule's next free time.
fn next_free_at(
    store: &impl Rows,
    newest: Option<&GrantRow>,
    rows: &[RuleRow],
    uses: &[WindowUse],
    from: u64,
    now: u64,
) -> u64 {
    let mut free_at = from;
    for (row, used) in rows.iter().zip(uses) {
        free_at = free_at.max(rule_free_at(store, newest, row, used, now));
    }
    free_at
}

/// No grants until `now + cooldown_ms`, unless an earlier penalty already
/// reaches further. Returns the cooldown's end as it now stands.
fn penalize(store: &impl Rows, writes: &mut Vec<Write>, now_ms: u64, cooldown_ms: u64) -> u64 {
    let now = clamp_now(now_ms, store.newest_grant().as_ref());
    let mut meta = store.meta();
    meta.cooldown_until_ms = meta.cooldown_until_ms.max(now + cooldown_ms);
    writes.push(Write::Meta(meta));
    meta.cooldown_until_ms
}

/// Returns up to `permits` of the most recent grants still inside some
/// rule's window, newest first, so they count against no window. Returns
/// how many it refunded.
fn refund(store: &impl Rows, writes: &mut Vec<Write>, now_ms: u64, permits: u32) -> u32 {
    let newest = store.newest_grant();
    let now = clamp_now(now_ms, newest.as_ref());
    let (meta, rules) = store.meta_and_rules();
    let kept_from = kept_from(&meta, now);
    let mut windows: [Option<u64>; RATE_RULE_SLOTS] = [None; RATE_RULE_SLOTS];
    for rule in rules {
        windows[usize::from(rule.slot)] = Some(rule.window_ms);
    }
    let live = |row: &GrantRow| {
        (0..RATE_RULE_SLOTS).any(|slot| {
            row.counts_for(slot)
                && windows[slot]
                    .is_some_and(|w| row.at_ms >= window_from(now, w).max(meta.horizon_ms))
        })
    };
    let (taken, remaining) = walk_back(store, kept_from, live, permits);
    let newest_left = newest_left(store, &taken, newest.as_ref());
    rewrite_refunded(writes, taken);
    prune(writes, newest_left, &meta, now);
    permits - remaining
}

/// Walks back from the newest grant row, deciding what each row gives
/// back of `permits` (only a row `live` says still counts gives any),
/// until all are given, the rows kept end (`kept_from`) or the bound on
/// rows visited is reached. Returns the rows walked, newest first, each
/// with what it gives back, and how many permits are left to give.
fn walk_back(
    store: &impl Rows,
    kept_from: u64,
    live: impl Fn(&GrantRow) -> bool,
    permits: u32,
) -> (Vec<(GrantRow, u32)>, u32) {
    let mut taken: Vec<(GrantRow, u32)> = Vec::new();
    let mut remaining = permits;
    let mut before = u64::MAX;
    'walk: while remaining > 0 && (taken.len() as u32) < RATE_REFUND_ROWS_VISITED_MAX {
        let page = store.grants_before(before, RATE_REFUND_PAGE_ROWS);
        if page.is_empty() {
            break;
        }
        for row in page {
            // Older rows count for no rule: nothing further back is live.
            if row.at_ms < kept_from || (taken.len() as u32) >= RATE_REFUND_ROWS_VISITED_MAX {
                break 'walk;
            }
            before = row.seq;
            let take = if live(&row) {
                remaining.min(row.permits)
            } else {
                0
            };
            remaining -= take;
            taken.push((row, take));
            if remaining == 0 {
                break 'walk;
            }
        }
    }
    (taken, remaining)
}

/// The newest row left once the wholly refunded ones are deleted: the
/// first row walked that keeps a permit, or else the one before the last
/// row walked (refunds delete the newest rows, never a gap).
fn newest_left(
    store: &impl Rows,
    taken: &[(GrantRow, u32)],
    newest: Option<&GrantRow>,
) -> Option<u64> {
    match taken.iter().find(|(row, take)| *take < row.permits) {
        Some((row, _)) => Some(row.seq),
        None => match taken.last() {
            Some((last, _)) => store.grants_before(last.seq, 1).first().map(|row| row.seq),
            None => newest.map(|n| n.seq),
        },
    }
}

/// The rows walked (newest first) rewritten oldest first: each row's
/// totals drop by everything refunded at or before it, under the slots it
/// counts for... and, carried forward, under every slot an earlier
/// refunded row counted for. A row wholly refunded is deleted.
fn rewrite_refunded(writes: &mut Vec<Write>, taken: Vec<(GrantRow, u32)>) {
    let mut delta: Totals = [0; RATE_RULE_SLOTS];
    for (row, take) in taken.into_iter().rev() {
        for (slot, d) in delta.iter_mut().enumerate() {
            if row.counts_for(slot) {
                *d += u64::from(take);
            }
        }
        if take == row.permits {
            writes.push(Write::Ungrant { seq: row.seq });
        } else if delta.iter().any(|&d| d > 0) {
            let mut totals = row.totals;
            for (total, d) in totals.iter_mut().zip(&delta) {
                *total -= d;
            }
            writes.push(Write::Regrant(GrantRow {
                permits: row.permits - take,
                totals,
                ..row
            }));
        }
    }
}

/// Every remembered rule with its use and next free time, and the cooldown.
fn inspect(store: &impl Rows, now_ms: u64) -> Inspection {
    let newest = store.newest_grant();
    let now = clamp_now(now_ms, newest.as_ref());
    let (meta, rules) = store.meta_and_rules();
    let rules = rules
        .into_iter()
        .map(|row| {
            let used = window_use(store, newest.as_ref(), &row, &meta, now);
            RuleView {
                next_free_at_ms: rule_free_at(store, newest.as_ref(), &row, &used, now),
                used: used.used,
                id: row.id,
                limit: row.limit,
                window_ms: row.window_ms,
            }
        })
        .collect();
    Inspection {
        cooldown_until_ms: (meta.cooldown_until_ms > now).then_some(meta.cooldown_until_ms),
        rules,
    }
}

/// Time never runs backwards for a bucket: a clock behind the newest grant
/// (another machine's, a little late) is taken as that grant's time.
fn clamp_now(now_ms: u64, newest: Option<&GrantRow>) -> u64 {
    newest.map_or(now_ms, |n| now_ms.max(n.at_ms))
}

/// The first time inside a window of `window_ms` ending at `now`: a grant
/// at `t` counts at `now` when `t > now - window_ms`, that is `t >= now + 1 - window_ms`.
fn window_from(now: u64, window_ms: u64) -> u64 {
    (now + 1).saturating_sub(window_ms)
}

/// Grants before this time count for no rule and may be deleted.
fn kept_from(meta: &Meta, now: u64) -> u64 {
    meta.horizon_ms.max(window_from(now, meta.max_window_ms))
}

/// The call's rules as rows in their slots, each with whether it must be
/// written: a remembered id keeps its slot and takes the new values; a new
/// id takes a free slot, or reuses the lowest one whose rule no kept grant
/// counts for (its running total has not moved since `kept_from`).
fn assign_slots(
    store: &impl Rows,
    newest: Option<&GrantRow>,
    remembered: Vec<RuleRow>,
    rules: &RuleSet,
    kept_from: u64,
) -> Result<Vec<(RuleRow, bool)>, BatonError> {
    let named = |row: &RuleRow| rules.rules().iter().any(|r| r.id == row.id);
    let mut free =
        (0..RATE_RULE_SLOTS as u8).filter(|slot| remembered.iter().all(|r| r.slot != *slot));
    // Totals at the start of what is kept, read only if a slot must be reused.
    let mut kept_base: Option<Totals> = None;
    let mut reusable = remembered.iter().filter(|r| !named(r)).map(|r| r.slot);
    let newest_totals = newest.map_or([0; RATE_RULE_SLOTS], |n| n.totals);
    let mut next_reusable = || {
        let base = *kept_base.get_or_insert_with(|| totals_before(store, kept_from));
        reusable.find(|&slot| newest_totals[usize::from(slot)] == base[usize::from(slot)])
    };

    let mut assigned = Vec::with_capacity(rules.rules().len());
    for rule in rules.rules() {
        let (slot, changed) = match remembered.iter().find(|r| r.id == rule.id) {
            Some(known) => (
                known.slot,
                known.limit != rule.limit || known.window_ms != rule.window_ms,
            ),
            None => {
                let slot = match free.next() {
                    Some(slot) => slot,
                    None => next_reusable().ok_or_else(|| BatonError::LimitExceeded {
                        field: "rules",
                        reason: format!(
                            "would make the bucket track more than {RATE_RULE_SLOTS} rule ids \
                             (a rule id is forgotten once its grants have aged out)"
                        ),
                    })?,
                };
                (slot, true)
            }
        };
        let row = RuleRow {
            slot,
            id: rule.id.clone(),
            limit: rule.limit,
            window_ms: rule.window_ms,
        };
        assigned.push((row, changed));
    }
    Ok(assigned)
}

/// Every slot's running total just before `t`: the last row before it, or
/// just before the oldest row kept.
fn totals_before(store: &impl Rows, t: u64) -> Totals {
    let before = t
        .checked_sub(1)
        .and_then(|t| store.last_grant_at_or_before(t));
    match before {
        Some(row) => row.totals,
        None => store.oldest_grant().map_or([0; RATE_RULE_SLOTS], |oldest| {
            let mut totals = oldest.totals;
            for (slot, total) in totals.iter_mut().enumerate() {
                *total = oldest.total_before(slot);
            }
            totals
        }),
    }
}

/// A rule's use of its window at `now`, and where the window starts in the
/// rows (for finding its next free time).
#[derive(Debug, Clone, Copy)]
struct WindowUse {
    used: u64,
    /// The slot's total at the window's start.
    base: u64,
    /// The last row at or before the window's start, if one is kept.
    base_seq: Option<u64>,
}

fn window_use(
    store: &impl Rows,
    newest: Option<&GrantRow>,
    rule: &RuleRow,
    meta: &Meta,
    now: u64,
) -> WindowUse {
    let Some(newest) = newest else {
        return WindowUse {
            used: 0,
            base: 0,
            base_seq: None,
        };
    };
    let slot = usize::from(rule.slot);
    let from = window_from(now, rule.window_ms).max(meta.horizon_ms);
    let before = from
        .checked_sub(1)
        .and_then(|t| store.last_grant_at_or_before(t));
    let (base, base_seq) = match before {
        Some(row) => (row.totals[slot], Some(row.seq)),
        // Every kept row is inside the window: it starts before the oldest.
        None => (
            store
                .oldest_grant()
                .map_or(0, |oldest| oldest.total_before(slot)),
            None,
        ),
    };
    WindowUse {
        used: newest.totals[slot] - base,
        base,
        base_seq,
    }
}

/// When `rule` alone next has a free permit.
fn rule_free_at(
    store: &impl Rows,
    newest: Option<&GrantRow>,
    rule: &RuleRow,
    used: &WindowUse,
    now: u64,
) -> u64 {
    let Some(newest) = newest else { return now };
    if used.used < u64::from(rule.limit) {
        return now;
    }
    let slot = usize::from(rule.slot);
    // The grant holding the window's (used - limit + 1)-th oldest permit.
    let target = used.base + used.used - u64::from(rule.limit) + 1;
    let reaches = |row: &GrantRow| row.totals[slot] >= target;
    let first = used.base_seq.map_or(0, |seq| seq + 1);
    let row = store
        .grant_at_or_after(first)
        .expect("a window with permits in use has a row in it");
    if reaches(&row) {
        return row.at_ms + rule.window_ms;
    }
    // Rare (another rule's grants in between, or a lowered limit): a binary
    // search over seq, each probe one indexed lookup; totals only grow with seq.
    let (mut lo, mut hi) = (row.seq + 1, newest.seq);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let probe = store
            .grant_at_or_after(mid)
            .expect("the newest row is at or after mid");
        if reaches(&probe) {
            hi = mid;
        } else {
            lo = probe.seq + 1;
        }
    }
    let row = store
        .grant_at_or_after(lo)
        .expect("the newest row reaches the target");
    assert!(reaches(&row), "running totals are not monotone in seq");
    row.at_ms + rule.window_ms
}

/// Deletes a few rows that count for no rule any more, never the newest
/// (`newest_seq`, once the decision's other writes are made: it carries
/// the running totals forward).
fn prune(writes: &mut Vec<Write>, newest_seq: Option<u64>, meta: &Meta, now: u64) {
    if let Some(keep_seq) = newest_seq {
        writes.push(Write::Prune {
            before_ms: kept_from(meta, now),
            keep_seq,
            limit: RATE_PRUNE_ROWS_PER_CALL,
        });
    }
}
