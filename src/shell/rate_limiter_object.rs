//! The `RateLimiter` Durable Object: `crate::rate_limit` run by the shell's
//! driver (`shell::driver`), one object per bucket. This file is only the
//! concept's [`Rules`], its [`Memory`] (the cache, `rate_bucket`) and its
//! method bodies.
//!
//! Every method decodes its request (`crate::edge::rate`, through the one
//! positional decoder: `rpc::serve_now` with `BUCKET_ARG`), then the driver
//! runs one decision in the caller's turn (`Driver::decide_now`: load,
//! decide, write, check the invariants, all synchronous, so nothing can
//! interleave and no gate is needed), then replies. A rate decision has no
//! effects and no alarm: a refused caller is told `waitMs` and sleeps on
//! its own side, and aged grants are pruned a few per call. The object's
//! SQLite tables are the truth, so an eviction or restart forgets no grant.
//! In front of them the object keeps a write-through
//! [`RateCache`](crate::rate_limit::RateCache) of its bucket (it is the
//! tables' only writer; `rate_bucket`): every write still reaches SQLite
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
use super::driver::{Call, Driver, Memory, NoEffect, Rules, TransitionOf};
use super::encode::ToJs;
use super::js::{self, to_js};
use super::js_json;
use super::rate_bucket::Bucket;
use super::rpc;
use super::sqlite::ObjectSql;
use crate::edge::rate::{
    RateAcquire, RateAcquireReply, RateInspect, RateInspection, RatePenalize, RatePenalizeReply,
    RateRefund, RateRefundReply, BUCKET_ARG,
};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::rate_limit::{self, migrate, Acquire, Inspect, Penalize, Refund, SeenCall};
use std::borrow::Cow;
use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The rate-limit concept as the driver runs it.
pub struct RateLimiter;

impl Rules for RateLimiter {
    type Config = ();
    /// Nothing re-enters: a rate decision asks for nothing.
    type Input = Infallible;
    type Reply = ();
    type Plan = ();
    type Write = rate_limit::Write;
    type State = Bucket;
    type Reads<'a> = Bucket;
    /// A rate decision asks for no effect and never needs the alarm (the
    /// default: none).
    type Effect = NoEffect;
    type Why = rate_limit::log::Reason;

    fn config(_: &Env) -> Result<(), String> {
        Ok(())
    }
    fn migrate(sql: &ObjectSql) {
        migrate(sql);
    }
    fn plan(_: &Infallible) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(_: &mut Bucket, _: u64, input: Infallible) -> Result<TransitionOf<Self>, BatonError> {
        match input {}
    }
    fn assert_invariants(state: &Bucket) {
        rate_limit::assert_invariants(state);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Bucket(key)
    }
}

/// What the object remembers of its bucket between calls. One object
/// serves one bucket (the service addresses it by name); a call naming
/// another bucket reloads.
#[derive(Default)]
pub struct BucketMemory {
    held: Option<Bucket>,
    /// The last acquire decoded, by its options' text.
    seen: RefCell<SeenCall>,
}

impl BucketMemory {
    /// Statements run since the last time this was asked, as
    /// `ObjectBase::count_work` takes them.
    fn take_statements(&self) -> (u32, u32) {
        self.held.as_ref().map_or((0, 0), |b| b.0.work.take())
    }
}

impl Memory<RateLimiter> for BucketMemory {
    fn load(&mut self, sql: &ObjectSql, key: &str, _: &()) -> Bucket {
        match &self.held {
            Some(bucket) if bucket.0.bucket == key => bucket.clone(),
            _ => {
                let bucket = Bucket::load(sql, key);
                self.held = Some(bucket.clone());
                bucket
            }
        }
    }
    fn write(&mut self, _: &ObjectSql, _: &str, transition: &mut TransitionOf<RateLimiter>) {
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
    /// Options whose JSON text is the text the last acquire decoded are
    /// that call again: it skips the decode, the rules' parse and check
    /// (`rate_limit::SeenCall`); the bucket is checked on every call.
    pub fn acquire(&self, bucket: JsValue, options: JsValue) -> JsValue {
        let text = js_json::plain_text(&options);
        let seen = (text.as_deref()).and_then(|t| self.driver.memory(|m| m.seen.borrow().get(t)));
        let named = seen.and_then(|call| {
            let bucket = Ident::new(bucket.as_string()?).ok()?;
            Some((bucket, call))
        });
        if let Some((bucket, call)) = named {
            return rpc::answer_now(self.acquired(&bucket, call));
        }
        let decoded = js::positional_from_text(&BUCKET_ARG, bucket, options, text.as_deref());
        let answered = decoded
            .map_err(|e| js::to_js_error(&e))
            .and_then(|r: RateAcquire| {
                let call = Acquire {
                    rules: Rc::new(r.rules.0),
                    permits: r.permits.map_or(1, |p| p.0),
                };
                if let Some(text) = text {
                    self.driver
                        .memory(|m| m.seen.borrow_mut().keep(text, &call));
                }
                self.acquired(&r.bucket, call)
            });
        rpc::answer_now(answered)
    }

    /// `penalize(bucket, { cooldownMs }) -> { until }`.
    pub fn penalize(&self, bucket: JsValue, options: JsValue) -> JsValue {
        rpc::serve_now(&BUCKET_ARG, bucket, options, |request: RatePenalize| {
            let call = Penalize {
                cooldown_ms: request.cooldown_ms.0,
            };
            let until_ms = self.decide(&request.bucket, call)?;
            Ok(to_js(&RatePenalizeReply { until: until_ms }))
        })
    }

    /// `refund(bucket, { permits }) -> { refunded }`.
    pub fn refund(&self, bucket: JsValue, options: JsValue) -> JsValue {
        rpc::serve_now(&BUCKET_ARG, bucket, options, |request: RateRefund| {
            let call = Refund {
                permits: request.permits.0,
            };
            let refunded = self.decide(&request.bucket, call)?;
            Ok(to_js(&RateRefundReply { refunded }))
        })
    }

    /// `inspect(bucket) -> { bucket, cooldownUntil, rules }`.
    pub fn inspect(&self, bucket: JsValue) -> JsValue {
        let none = JsValue::UNDEFINED;
        rpc::serve_now(&BUCKET_ARG, bucket, none, |request: RateInspect| {
            let inspection = self.decide(&request.bucket, Inspect)?;
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
    /// An acquire's decision, as the caller receives it.
    fn acquired(&self, bucket: &Ident, call: Acquire) -> Result<JsValue, JsValue> {
        let reply = RateAcquireReply::from(self.decide(bucket, call)?);
        Ok(reply.to_js())
    }

    /// One decision in the caller's turn; a refusal is the caller's error.
    fn decide<C: Call<RateLimiter>>(&self, bucket: &Ident, call: C) -> Result<C::Answer, JsValue> {
        let decided = self.driver.decide_now(bucket, call);
        let work = self.driver.memory(|memory| memory.take_statements());
        self.driver.base.count_work(work);
        decided.map_err(|e| js::to_js_error(&e))
    }
}
