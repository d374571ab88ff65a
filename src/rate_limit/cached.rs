//! A write-through cache in front of a bucket's storage, so that a call
//! whose answer is already known runs no statement: [`Cached`] answers the
//! decision's lookups from it where it can, and [`RateCache::write`]
//! carries a decision's writes out to storage and to it.
//!
//! The Durable Object is the only writer of its SQLite, and every write goes
//! through this layer, so what it remembers of the bucket stays exactly what
//! storage holds. Every write still goes to storage in the same call (a
//! grant is committed before its reply leaves), so a restart forgets none:
//! it only drops this cache, which [`RateCache::load`] rebuilds from storage.
//!
//! What it remembers: the bucket's scalars and rules, its oldest grant row,
//! and its newest rows, up to a capacity, as a contiguous run (every row from
//! the first one held to the newest). A read it can answer from these it
//! answers; any other it passes to storage. With the oldest row known, "has
//! anything aged out?" needs no statement either, so a prune that would
//! delete nothing is skipped. And, for windows that start before the rows
//! it holds, the last row before each start that storage answered with the
//! row after it, so the next calls' starts up to that row's time read
//! nothing ([`Span`]).
//!
//! Storage is the truth; `tests/rate_limit_props.rs` drives the cache
//! through the same random sequences as the stores, restarts it, and checks
//! it against the storage under it after every step.

use super::call::Acquire;
use super::sql::SqlRows;
use super::state::{GrantRow, Meta, Rows, RuleRow, Write};
use crate::limits::RATE_RULE_SLOTS;
use crate::sql::SqlExec;
use std::cell::RefCell;
use std::collections::VecDeque;

/// What one bucket's object remembers between calls.
#[derive(Debug, Clone)]
pub struct RateCache {
    meta: Meta,
    /// By slot.
    rules: Vec<RuleRow>,
    /// The oldest row kept; `None` when there is none.
    oldest: Option<GrantRow>,
    /// The newest rows, oldest first: every row with `seq` at or after the
    /// first one's. Empty exactly when `oldest` is `None`.
    recent: VecDeque<GrantRow>,
    /// Most rows `recent` holds.
    capacity: usize,
    /// Rows read into `recent` when it is (re)loaded; it grows from there.
    load_rows: usize,
    /// Where windows began that started before `recent` (see [`Span`]), at
    /// most one per rule slot. Filled by reads, so behind a `RefCell`.
    spans: RefCell<Vec<Span>>,
}

/// Two caches are equal when they say the same of the bucket: the spans
/// are answers already read, which a lookup may add to (a refused call
/// changes nothing else).
impl PartialEq for RateCache {
    fn eq(&self, other: &Self) -> bool {
        (
            self.meta,
            &self.rules,
            &self.oldest,
            &self.recent,
            self.capacity,
            self.load_rows,
        ) == (
            other.meta,
            &other.rules,
            &other.oldest,
            &other.recent,
            other.capacity,
            other.load_rows,
        )
    }
}

impl Eq for RateCache {}

/// A row older than `recent` that storage answered as the last at or
/// before some time, and the row after it. A window whose start falls from
/// `last`'s time up to just before `next`'s has the same last row before
/// it: a window over more grants than `recent` holds (a minute at
/// thousands a second) then reads storage about once per grant its start
/// passes, not on every call. A new grant comes after `next` and changes
/// nothing; any other change to the rows forgets every span.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    last: GrantRow,
    next: GrantRow,
}

impl RateCache {
    /// What `store` holds: its newest `load_rows` rows, growing with each
    /// grant to at most `capacity` (both at least one: the newest row
    /// carries the running totals). Loading few keeps the first call after
    /// a restart short; rows older than those held are read from storage
    /// when a call needs them, until they age out.
    pub fn load(store: &impl Rows, load_rows: usize, capacity: usize) -> RateCache {
        let (meta, rules) = store.meta_and_rules();
        let capacity = capacity.max(1);
        let mut cache = RateCache {
            meta,
            rules,
            oldest: None,
            recent: VecDeque::new(),
            capacity,
            load_rows: load_rows.clamp(1, capacity),
            spans: RefCell::new(Vec::new()),
        };
        cache.reload_rows(store);
        cache
    }

    /// Reads the newest rows and the oldest one again.
    fn reload_rows(&mut self, store: &impl Rows) {
        let limit = u32::try_from(self.load_rows).unwrap_or(u32::MAX);
        let mut rows = store.grants_before(u64::MAX, limit);
        rows.reverse();
        self.recent = rows.into();
        self.oldest = if self.recent.len() < self.load_rows {
            self.recent.front().cloned()
        } else {
            store.oldest_grant()
        };
    }

    /// Whether `recent` holds every row kept.
    fn complete(&self) -> bool {
        self.oldest.as_ref().map(|o| o.seq) == self.recent.front().map(|r| r.seq)
    }

    /// The last row at or before `t`, if a kept span answers it.
    fn spanned(&self, t: u64) -> Option<GrantRow> {
        self.spans
            .borrow()
            .iter()
            .find(|span| span.last.at_ms <= t && t < span.next.at_ms)
            .map(|span| span.last.clone())
    }

    /// Keeps `span`, forgetting the one that began earliest when one per
    /// rule slot is kept already (windows' starts only move on).
    fn keep_span(&self, span: Span) {
        let mut spans = self.spans.borrow_mut();
        if spans.len() >= RATE_RULE_SLOTS {
            let earliest = (0..spans.len())
                .min_by_key(|&i| spans[i].last.seq)
                .expect("spans are kept");
            spans.swap_remove(earliest);
        }
        spans.push(span);
    }

    /// Index in `recent` of the row with `seq`.
    fn position(&self, seq: u64) -> Option<usize> {
        self.recent.binary_search_by_key(&seq, |r| r.seq).ok()
    }

    /// Checks the cache against the storage under it (tests): the same
    /// scalars, rules, oldest row, and the same newest rows.
    pub fn assert_matches(&self, store: &impl Rows) {
        assert_eq!((self.meta, self.rules.clone()), store.meta_and_rules());
        assert_eq!(self.oldest, store.oldest_grant(), "oldest row");
        assert!(self.recent.len() <= self.capacity, "over capacity");
        let mut newest = store.grants_before(u64::MAX, self.recent.len() as u32);
        newest.reverse();
        assert_eq!(self.recent, newest, "newest rows");
        assert_eq!(self.oldest.is_none(), self.recent.is_empty());
    }
}

/// The bucket as a decision reads it: `cache` in front of `inner`, the
/// storage it holds a copy of (`cache` must be [`RateCache::load`] of it,
/// kept up to date since by [`RateCache::write`] alone).
pub struct Cached<'a, S: Rows> {
    pub cache: &'a RateCache,
    pub inner: &'a S,
}

impl<S: Rows> Clone for Cached<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Rows> Copy for Cached<'_, S> {}

impl<S: Rows> Rows for Cached<'_, S> {
    fn meta(&self) -> Meta {
        self.cache.meta
    }

    fn rules(&self) -> Vec<RuleRow> {
        self.cache.rules.clone()
    }

    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        (self.cache.meta, self.cache.rules.clone())
    }

    fn newest_grant(&self) -> Option<GrantRow> {
        self.cache.recent.back().cloned()
    }

    fn oldest_grant(&self) -> Option<GrantRow> {
        self.cache.oldest.clone()
    }

    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow> {
        let recent = &self.cache.recent;
        let front = recent.front()?;
        if front.at_ms <= t {
            // Times rise with seq: the answer is the last held row at or before t.
            let end = recent.partition_point(|r| r.at_ms <= t);
            return Some(recent[end - 1].clone());
        }
        match &self.cache.oldest {
            Some(oldest) if oldest.at_ms > t => None,
            _ if self.cache.complete() => None,
            _ => self.cache.spanned(t).or_else(|| {
                let (last, next) = self.inner.last_grant_at_or_before_and_next(t);
                if let (Some(last), Some(next)) = (&last, next) {
                    self.cache.keep_span(Span {
                        last: last.clone(),
                        next,
                    });
                }
                last
            }),
        }
    }

    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow> {
        let recent = &self.cache.recent;
        let front = recent.front()?;
        match &self.cache.oldest {
            Some(oldest) if seq <= oldest.seq => Some(oldest.clone()),
            _ if seq >= front.seq || self.cache.complete() => {
                recent.get(recent.partition_point(|r| r.seq < seq)).cloned()
            }
            _ => self.inner.grant_at_or_after(seq),
        }
    }

    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow> {
        let held: Vec<GrantRow> = self
            .cache
            .recent
            .iter()
            .rev()
            .filter(|r| r.seq < before)
            .take(limit as usize)
            .cloned()
            .collect();
        if held.len() == limit as usize || self.cache.complete() {
            held
        } else {
            self.inner.grants_before(before, limit)
        }
    }
}

impl RateCache {
    /// Carries out a decision's writes, in order: each to `storage` first,
    /// then to the cache, so the cache stays what storage holds. A prune
    /// the cache knows would delete nothing runs no statement.
    pub fn write<E: SqlExec>(&mut self, storage: &SqlRows<'_, E>, writes: &[Write]) {
        for write in writes {
            match write {
                Write::Meta(meta) => {
                    storage.write(write);
                    self.meta = *meta;
                }
                Write::Rule(rule) => {
                    storage.write(write);
                    match self.rules.binary_search_by_key(&rule.slot, |r| r.slot) {
                        Ok(i) => self.rules[i] = rule.clone(),
                        Err(i) => self.rules.insert(i, rule.clone()),
                    }
                }
                Write::Grant(row) => {
                    storage.write(write);
                    if self.oldest.is_none() {
                        self.oldest = Some(row.clone());
                    }
                    self.recent.push_back(row.clone());
                    if self.recent.len() > self.capacity {
                        self.recent.pop_front();
                    }
                }
                Write::Regrant(row) => {
                    storage.write(write);
                    self.spans.get_mut().clear();
                    if let Some(i) = self.position(row.seq) {
                        self.recent[i] = row.clone();
                    }
                    if let Some(oldest) = self.oldest.as_mut().filter(|o| o.seq == row.seq) {
                        *oldest = row.clone();
                    }
                }
                Write::Ungrant { seq } => {
                    storage.write(write);
                    self.spans.get_mut().clear();
                    self.ungranted(storage, *seq);
                }
                Write::Prune {
                    before_ms,
                    keep_seq,
                    limit,
                } => self.prune(storage, write, *before_ms, *keep_seq, *limit),
            }
        }
    }

    /// The cache after the row `seq` was deleted by a refund (its spans
    /// already cleared).
    fn ungranted<E: SqlExec>(&mut self, storage: &SqlRows<'_, E>, seq: u64) {
        let was_complete = self.complete();
        if let Some(i) = self.position(seq) {
            self.recent.remove(i);
        }
        if self.recent.is_empty() {
            // Refunds delete the newest rows: held ones may all be gone
            // while older rows remain.
            self.reload_rows(storage);
        } else if self.oldest.as_ref().is_some_and(|o| o.seq == seq) {
            self.oldest = if was_complete {
                self.recent.front().cloned()
            } else {
                storage.oldest_grant()
            };
        }
    }

    /// `Write::Prune` (`write`): run only if the cache knows it would
    /// delete a row, then the cache after it.
    fn prune<E: SqlExec>(
        &mut self,
        storage: &SqlRows<'_, E>,
        write: &Write,
        before_ms: u64,
        keep_seq: u64,
        limit: u32,
    ) {
        // The rows pruned are the oldest ones: if the oldest row may
        // not be deleted, no row may.
        let Some(oldest) = self.oldest.as_ref() else {
            return;
        };
        if oldest.at_ms >= before_ms || oldest.seq >= keep_seq || limit == 0 {
            return;
        }
        let Some(deleted) = storage.write(write) else {
            return;
        };
        self.spans.get_mut().clear();
        let was_complete = self.complete();
        let mut reached_held = false;
        while self.recent.front().is_some_and(|r| r.seq <= deleted) {
            self.recent.pop_front();
            reached_held = true;
        }
        if self.recent.is_empty() {
            self.reload_rows(storage);
        } else if was_complete || reached_held {
            // Every row before the first held one is gone.
            self.oldest = self.recent.front().cloned();
        } else {
            self.oldest = storage.grant_at_or_after(deleted + 1);
        }
    }
}

/// The last acquire an object decoded, kept with the text of the options
/// it was decoded from (plain JSON data as `JSON.stringify` wrote it, in
/// the shell): a call bringing the same text is the same call, so the
/// shell hands it [`SeenCall::get`]'s copy instead of decoding again (the
/// parse, and every check of the rules: their count, distinct ids, each
/// field's bounds, which read the text alone). A text that decodes to
/// anything else is decoded anew; only a call that decoded is kept, so a
/// bad text is refused by the decode every time, naming its field as
/// ever, and leaves what is kept as it was.
#[derive(Debug, Default)]
pub struct SeenCall {
    seen: Option<(String, Acquire)>,
}

impl SeenCall {
    /// The call decoded from `text` last, if `text` is that text.
    pub fn get(&self, text: &str) -> Option<Acquire> {
        match &self.seen {
            Some((seen, call)) if seen == text => Some(call.clone()),
            _ => None,
        }
    }

    /// Keeps `call`, which the options' `text` decoded to.
    pub fn keep(&mut self, text: String, call: &Acquire) {
        self.seen = Some((text, call.clone()));
    }
}
