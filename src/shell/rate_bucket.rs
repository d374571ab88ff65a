//! The bucket a `RateLimiter` object serves, as its decisions read it
//! ([`Bucket`]): the object's write-through cache in front of its SQLite
//! (`rate_limit::Cached`), counting the statements it runs. Apart from the
//! object's file (`rate_limiter_object`), which keeps the concept's rules,
//! its memory and its method bodies.

use super::sqlite::ObjectSql;
use crate::limits::{RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS};
use crate::rate_limit::{self, Cached, GrantRow, Meta, RateCache, Rows, RuleRow, SqlRows};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The bucket an object serves as its decisions read it: the object's
/// cache in front of its SQLite (`rate_limit::Cached`), shared with the
/// object's [`BucketMemory`] (a clone is the same bucket).
#[derive(Clone)]
pub struct Bucket(pub(super) Rc<Held>);

pub(super) struct Held {
    pub(super) bucket: String,
    /// The object's database (a clone of its handle).
    sql: ObjectSql,
    cache: RefCell<RateCache>,
    /// Statements run through this bucket (reads, writes), for `storageWork()`.
    pub(super) work: Cell<(u32, u32)>,
}

impl Bucket {
    pub(super) fn load(sql: &ObjectSql, bucket: &str) -> Bucket {
        let storage = SqlRows::new(sql, bucket);
        let cache = RateCache::load(&storage, RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS);
        let held = Held {
            bucket: bucket.to_owned(),
            sql: sql.clone(),
            cache: RefCell::new(cache),
            work: Cell::new((0, 0)),
        };
        held.count(&storage);
        Bucket(Rc::new(held))
    }

    /// One lookup through the cache, storage answering what it does not hold.
    fn read<T>(&self, lookup: impl FnOnce(&Cached<'_, SqlRows<'_, ObjectSql>>) -> T) -> T {
        let held = &*self.0;
        let storage = SqlRows::new(&held.sql, &held.bucket);
        let value = lookup(&Cached {
            cache: &held.cache.borrow(),
            inner: &storage,
        });
        held.count(&storage);
        value
    }

    /// A decision's writes, through the cache to storage.
    pub(super) fn write(&self, writes: &[rate_limit::Write]) {
        let held = &*self.0;
        let storage = SqlRows::new(&held.sql, &held.bucket);
        held.cache.borrow_mut().write(&storage, writes);
        held.count(&storage);
    }
}

impl Held {
    fn count(&self, storage: &SqlRows<'_, ObjectSql>) {
        let ((reads, writes), (more_reads, more_writes)) = (self.work.get(), storage.work());
        self.work.set((reads + more_reads, writes + more_writes));
    }
}

impl Rows for Bucket {
    fn meta(&self) -> Meta {
        self.read(|rows| rows.meta())
    }
    fn rules(&self) -> Vec<RuleRow> {
        self.read(|rows| rows.rules())
    }
    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        self.read(|rows| rows.meta_and_rules())
    }
    fn newest_grant(&self) -> Option<GrantRow> {
        self.read(|rows| rows.newest_grant())
    }
    fn oldest_grant(&self) -> Option<GrantRow> {
        self.read(|rows| rows.oldest_grant())
    }
    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow> {
        self.read(|rows| rows.last_grant_at_or_before(t))
    }
    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow> {
        self.read(|rows| rows.grant_at_or_after(seq))
    }
    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow> {
        self.read(|rows| rows.grants_before(before, limit))
    }
}
