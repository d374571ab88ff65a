//! The `RateLimiter` Durable Object: `crate::rate_limit` run by the shell's
//! driver (`shell::driver`), one object per bucket. This file is only the
//! concept's [`Rules`], its [`Memory`] (the cache) and its method bodies.
//!
//! Every method decodes its request (`crate::edge::rate`, through the one
//! positional decoder: `rpc::serve_now` with `BUCKET_ARG`), then the driver
//! runs one decision in the caller's turn (`Driver::decide_now`: load,
//! decide, write, check the invariants, all synchronous, so nothing can
//! interleave and no gate is needed), then replies. A rate decision has no
//! effects and no alarm: a refused caller is told `waitMs` and sleeps on
//! its own side, and aged grants are pruned a few per call. The object's
//! SQLite tables are the truth, so an eviction or restart forgets no grant.
//! In front of them the object keeps a write-through [`RateCache`] of its
//! bucket (it is the tables' only writer): every write still reaches SQLite
//! in the call that makes it, before the reply leaves, and a refusal whose
//! answer the cache holds runs no statement at all. A restart drops the
//! cache and the first call rebuilds it from SQLite.
//!
//! JS callers reach these methods through the `RateLimiter` class in
//! `js/worker.mjs` (which extends `DurableObject`), with the contract's
//! positional arguments: `acquire(bucket, { rules, permits? })`. That class
//! also does the gate's other service: a broken invariant panics, which
//! traps the module (panic = "abort"), and it aborts the object so it
//! restarts from what was committed.

use super::decision_log::Scope;
use super::driver::{Driver, Memory, NoEffect, Rules, TransitionOf};
use super::js::{self, to_js};
use super::rpc;
use super::sqlite::ObjectSql;
use crate::edge::rate::{
    RateAcquire, RateAcquireReply, RateInspect, RateInspection, RatePenalize, RatePenalizeReply,
    RateRefund, RateRefundReply, BUCKET_ARG,
};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::{RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS};
use crate::rate_limit::{
    self, migrate, Cached, GrantRow, Input, Meta, RateCache, Reply, Rows, RuleRow, SqlRows,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The rate-limit concept as the driver runs it.
pub struct RateLimiter;

impl Rules for RateLimiter {
    type Config = ();
    type Input = Input;
    type Reply = Reply;
    type Write = rate_limit::Write;
    type State = Bucket;
    /// A rate decision asks for no effect and never needs the alarm (the
    /// default: none).
    type Effect = NoEffect;

    fn config(_: &Env) -> Result<(), String> {
        Ok(())
    }
    fn migrate(sql: &ObjectSql) {
        migrate(sql);
    }
    fn decide(
        state: &Bucket,
        now_ms: u64,
        input: Input,
    ) -> Result<TransitionOf<RateLimiter>, BatonError> {
        rate_limit::decide(state, now_ms, input)
    }
    fn assert_invariants(state: &Bucket) {
        rate_limit::assert_invariants(state);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Bucket(key)
    }
}

/// The bucket an object serves as its decisions read it: the object's
/// cache in front of its SQLite (`rate_limit::Cached`), shared with the
/// object's [`BucketMemory`] (a clone is the same bucket).
#[derive(Clone)]
pub struct Bucket(Rc<Held>);

struct Held {
    bucket: String,
    /// The object's database (a clone of its handle).
    sql: ObjectSql,
    cache: RefCell<RateCache>,
    /// Statements run through this bucket (reads, writes), for `storageWork()`.
    work: Cell<(u32, u32)>,
}

impl Bucket {
    fn load(sql: &ObjectSql, bucket: &str) -> Bucket {
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
    fn write(&self, writes: &[rate_limit::Write]) {
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

/// What the object remembers of its bucket between calls. One object
/// serves one bucket (the service addresses it by name); a call naming
/// another bucket reloads.
#[derive(Default)]
pub struct BucketMemory {
    held: Option<Bucket>,
}

impl BucketMemory {
    /// Statements run since the last time this was asked, as
    /// `ObjectBase::count_work` takes them.
    fn take_statements(&self) -> (u32, u32) {
        self.held.as_ref().map_or((0, 0), |b| b.0.work.take())
    }
}

impl Memory<RateLimiter> for BucketMemory {
    fn load(&mut self, sql: &ObjectSql, key: &str, _: &Input) -> Bucket {
        match &self.held {
            Some(bucket) if bucket.0.bucket == key => bucket.clone(),
            _ => {
                let bucket = Bucket::load(sql, key);
                self.held = Some(bucket.clone());
                bucket
            }
        }
    }
    fn write(&mut self, _: &ObjectSql, _: &str, transition: &TransitionOf<RateLimiter>) {
        transition.state.write(&transition.writes);
    }
}

/// The Rust half of the `RateLimiter` Durable Object.
#[wasm_bindgen]
pub struct RateLimiterCore {
    driver: Rc<Driver<RateLimiter, BucketMemory>>,
}

#[wasm_bindgen]
impl RateLimiterCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> RateLimiterCore {
        RateLimiterCore {
            driver: Driver::new(raw_state, env),
        }
    }

    /// `acquire(bucket, { rules, permits? }) -> { granted, waitMs }`.
    pub fn acquire(&self, bucket: JsValue, options: JsValue) -> JsValue {
        rpc::serve_now(&BUCKET_ARG, bucket, options, |request: RateAcquire| {
            let permits = request.permits.map_or(1, |p| p.0);
            let input = Input::Acquire {
                rules: request.rules.0,
                permits,
            };
            let Reply::Acquire(reply) = self.decide(&request.bucket, input)? else {
                return Err(js::mismatch("RateLimiter"));
            };
            let reply = RateAcquireReply::from(reply);
            Ok(to_js(&reply))
        })
    }

    /// `penalize(bucket, { cooldownMs }) -> { until }`.
    pub fn penalize(&self, bucket: JsValue, options: JsValue) -> JsValue {
        rpc::serve_now(&BUCKET_ARG, bucket, options, |request: RatePenalize| {
            let input = Input::Penalize {
                cooldown_ms: request.cooldown_ms.0,
            };
            let Reply::Penalize { until_ms } = self.decide(&request.bucket, input)? else {
                return Err(js::mismatch("RateLimiter"));
            };
            Ok(to_js(&RatePenalizeReply { until: until_ms }))
        })
    }

    /// `refund(bucket, { permits }) -> { refunded }`.
    pub fn refund(&self, bucket: JsValue, options: JsValue) -> JsValue {
        rpc::serve_now(&BUCKET_ARG, bucket, options, |request: RateRefund| {
            let input = Input::Refund {
                permits: request.permits.0,
            };
            let Reply::Refund { refunded } = self.decide(&request.bucket, input)? else {
                return Err(js::mismatch("RateLimiter"));
            };
            Ok(to_js(&RateRefundReply { refunded }))
        })
    }

    /// `inspect(bucket) -> { bucket, cooldownUntil, rules }`.
    pub fn inspect(&self, bucket: JsValue) -> JsValue {
        let none = JsValue::UNDEFINED;
        rpc::serve_now(&BUCKET_ARG, bucket, none, |request: RateInspect| {
            let Reply::Inspect(inspection) = self.decide(&request.bucket, Input::Inspect)? else {
                return Err(js::mismatch("RateLimiter"));
            };
            Ok(to_js(&RateInspection::new(request.bucket, inspection)))
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        self.driver.base.storage_work()
    }
}

impl RateLimiterCore {
    /// One decision in the caller's turn; a refusal is the caller's error.
    fn decide(&self, bucket: &Ident, input: Input) -> Result<Reply, JsValue> {
        let decided = self.driver.decide_now(bucket, input);
        let work = self.driver.memory(|memory| memory.take_statements());
        self.driver.base.count_work(work);
        decided.map_err(|e| js::to_js_error(&e))
    }
}
