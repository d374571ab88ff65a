//! A write-through cache in front of a bucket's [`RateStore`], so that a
//! call whose answer is already known runs no statement.
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
//! delete nothing is skipped.
//!
//! Storage is the truth; `tests/rate_limit_props.rs` drives the cache
//! through the same random sequences as the stores, restarts it, and checks
//! it against the storage under it after every step.

use super::state::{GrantRow, Meta, RateStore, RuleRow};
use std::collections::VecDeque;

/// What one bucket's object remembers between calls.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

impl RateCache {
    /// What `store` holds: its newest `load_rows` rows, growing with each
    /// grant to at most `capacity` (both at least one: the newest row
    /// carries the running totals). Loading few keeps the first call after
    /// a restart short; rows older than those held are read from storage
    /// when a call needs them, until they age out.
    pub fn load(store: &impl RateStore, load_rows: usize, capacity: usize) -> RateCache {
        let (meta, rules) = store.meta_and_rules();
        let capacity = capacity.max(1);
        let mut cache = RateCache {
            meta,
            rules,
            oldest: None,
            recent: VecDeque::new(),
            capacity,
            load_rows: load_rows.clamp(1, capacity),
        };
        cache.reload_rows(store);
        cache
    }

    /// Reads the newest rows and the oldest one again.
    fn reload_rows(&mut self, store: &impl RateStore) {
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

    /// Index in `recent` of the row with `seq`.
    fn position(&self, seq: u64) -> Option<usize> {
        self.recent.binary_search_by_key(&seq, |r| r.seq).ok()
    }

    /// Checks the cache against the storage under it (tests): the same
    /// scalars, rules, oldest row, and the same newest rows.
    pub fn assert_matches(&self, store: &impl RateStore) {
        assert_eq!((self.meta, self.rules.clone()), store.meta_and_rules());
        assert_eq!(self.oldest, store.oldest_grant(), "oldest row");
        assert!(self.recent.len() <= self.capacity, "over capacity");
        let mut newest = store.grants_before(u64::MAX, self.recent.len() as u32);
        newest.reverse();
        assert_eq!(self.recent, newest, "newest rows");
        assert_eq!(self.oldest.is_none(), self.recent.is_empty());
    }
}

/// `inner` with `cache` in front of it. Reads take `&self` and never touch
/// the cache's contents; writes go to `inner` first, then to the cache.
pub struct CachedRateStore<'a, S: RateStore> {
    inner: S,
    cache: &'a mut RateCache,
}

impl<'a, S: RateStore> CachedRateStore<'a, S> {
    /// `cache` must be what `inner` holds: [`RateCache::load`] of it, kept
    /// up to date since by this layer alone.
    pub fn new(inner: S, cache: &'a mut RateCache) -> Self {
        CachedRateStore { inner, cache }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: RateStore> RateStore for CachedRateStore<'_, S> {
    fn meta(&self) -> Meta {
        self.cache.meta
    }

    fn set_meta(&mut self, meta: &Meta) {
        self.inner.set_meta(meta);
        self.cache.meta = *meta;
    }

    fn rules(&self) -> Vec<RuleRow> {
        self.cache.rules.clone()
    }

    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        (self.cache.meta, self.cache.rules.clone())
    }

    fn put_rule(&mut self, rule: &RuleRow) {
        self.inner.put_rule(rule);
        let rules = &mut self.cache.rules;
        match rules.binary_search_by_key(&rule.slot, |r| r.slot) {
            Ok(i) => rules[i] = rule.clone(),
            Err(i) => rules.insert(i, rule.clone()),
        }
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
            _ => self.inner.last_grant_at_or_before(t),
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

    fn push_grant(&mut self, row: &GrantRow) {
        self.inner.push_grant(row);
        let cache = &mut *self.cache;
        if cache.oldest.is_none() {
            cache.oldest = Some(row.clone());
        }
        cache.recent.push_back(row.clone());
        if cache.recent.len() > cache.capacity {
            cache.recent.pop_front();
        }
    }

    fn replace_grant(&mut self, row: &GrantRow) {
        self.inner.replace_grant(row);
        let cache = &mut *self.cache;
        if let Some(i) = cache.position(row.seq) {
            cache.recent[i] = row.clone();
        }
        if let Some(oldest) = cache.oldest.as_mut().filter(|o| o.seq == row.seq) {
            *oldest = row.clone();
        }
    }

    fn delete_grant(&mut self, seq: u64) {
        self.inner.delete_grant(seq);
        let cache = &mut *self.cache;
        let was_complete = cache.complete();
        if let Some(i) = cache.position(seq) {
            cache.recent.remove(i);
        }
        if cache.recent.is_empty() {
            // Refunds delete the newest rows: held ones may all be gone
            // while older rows remain.
            cache.reload_rows(&self.inner);
        } else if cache.oldest.as_ref().is_some_and(|o| o.seq == seq) {
            cache.oldest = if was_complete {
                cache.recent.front().cloned()
            } else {
                self.inner.oldest_grant()
            };
        }
    }

    fn prune(&mut self, before_ms: u64, keep_seq: u64, limit: u32) -> Option<u64> {
        // The rows pruned are the oldest ones: if the oldest row may not be
        // deleted, no row may.
        let oldest = self.cache.oldest.as_ref()?;
        if oldest.at_ms >= before_ms || oldest.seq >= keep_seq || limit == 0 {
            return None;
        }
        let deleted = self.inner.prune(before_ms, keep_seq, limit)?;
        let cache = &mut *self.cache;
        let was_complete = cache.complete();
        let mut reached_held = false;
        while cache.recent.front().is_some_and(|r| r.seq <= deleted) {
            cache.recent.pop_front();
            reached_held = true;
        }
        if cache.recent.is_empty() {
            cache.reload_rows(&self.inner);
        } else if was_complete || reached_held {
            // Every row before the first held one is gone.
            cache.oldest = cache.recent.front().cloned();
        } else {
            cache.oldest = self.inner.grant_at_or_after(deleted + 1);
        }
        Some(deleted)
    }
}
