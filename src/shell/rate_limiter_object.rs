//! The `RateLimiter` Durable Object: the shell around `crate::rate_limit`.
//!
//! One object per bucket. Every method runs the same short loop as the
//! Coordinator's fast path: decode the request (`crate::edge::rate`),
//! then one decision (read, decide and write in one synchronous turn, so
//! nothing can interleave with it and it needs no `blockConcurrencyWhile`),
//! then the reply, all before the method returns. Unlike the Coordinator there is no
//! second phase, no alarm and no Workflow call: a rate decision needs
//! nothing from outside the object (a refused caller is told `waitMs` and
//! sleeps on its own side), and aged grants are pruned a few per call.
//! The object's SQLite tables are the truth, so an eviction or restart
//! forgets no grant. In front of them the object keeps a write-through
//! [`RateCache`] of its bucket (it is the tables' only writer): every write
//! still reaches SQLite in the call that makes it, before the reply leaves,
//! and a refusal whose answer the cache holds runs no statement at all.
//! A restart drops the cache and the first call rebuilds it from SQLite.
//!
//! JS callers reach these methods through the `RateLimiter` class in
//! `js/worker.mjs` (which extends `DurableObject`), with the contract's
//! positional arguments: `acquire(bucket, { rules, permits? })`. That class
//! also does the gate's other service: a broken invariant panics, which
//! traps the module (panic = "abort"), and it aborts the object so it
//! restarts from what was committed.

use super::decision_log::{self, Kind, Scope};
use super::js::{self, now_ms, to_js};
use super::object::ObjectBase;
use super::sqlite::ObjectSql;
use crate::edge::decode_value;
use crate::edge::rate::{
    with_bucket, Permits, RateAcquire, RateAcquireReply, RateInspect, RateInspection, RatePenalize,
    RatePenalizeReply, RateRefund, RateRefundReply, Rules,
};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::{RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS, RATE_RULES_PER_CALL_MAX};
use crate::rate_limit::rules::parse_permits;
use crate::rate_limit::{self, migrate, CachedRateStore, RateCache, Rule, RuleSet, SqlRateStore};
use js_sys::{Array, Promise};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Rust half of the `RateLimiter` Durable Object.
#[wasm_bindgen]
pub struct RateLimiterCore {
    object: Rc<Object>,
}

struct Object {
    base: ObjectBase,
    /// The bucket this object serves and what its tables hold, once a call
    /// has loaded it. One object serves one bucket (the service addresses
    /// it by name); a call naming another bucket reloads.
    cache: RefCell<Option<(Ident, RateCache)>>,
}

type Store<'a> = CachedRateStore<'a, SqlRateStore<'a, ObjectSql>>;

/// A JS argument as JSON, or a refusal naming it.
fn json_argument(field: &'static str, value: JsValue) -> Result<Option<Value>, BatonError> {
    if value.is_undefined() {
        return Ok(None);
    }
    js::json(value).map(Some).ok_or(BatonError::WrongType {
        field,
        expected: "plain JSON data",
    })
}

/// Decodes a positional call, `(bucket, options?)`, into its request type.
fn positional<T: DeserializeOwned>(bucket: JsValue, options: JsValue) -> Result<T, JsValue> {
    let refuse = |e: BatonError| js::to_js_error(&e);
    let bucket = json_argument("bucket", bucket).map_err(refuse)?;
    let options = json_argument("options", options).map_err(refuse)?;
    let request = with_bucket(bucket.unwrap_or(Value::Null), options).map_err(refuse)?;
    decode_value(&request).map_err(refuse)
}

/// `acquire`'s request read straight from its arguments, for the shape
/// callers send: a string `bucket` and a plain `{ rules, permits? }` of
/// plain `{ id, limit, windowMs }` rules, every value valid. `None` for
/// anything else, which then takes the general way ([`positional`]), so
/// every refusal is that way's, word for word: this one never refuses.
///
/// The general way builds a JSON tree of the arguments (the rules array
/// through `serde_wasm_bindgen`, which asks each value what it is with
/// several calls into JS) and decodes the tree; once the cache took the
/// SQL away, that was ~40% of a refused acquire's busy time
/// (`node bench/profile.mjs rate`). Values are read by the same calls
/// (`Object.entries` of plain, non-iterable objects, `as_string`,
/// `as_f64`) and checked by the same parsers, so what this accepts the
/// general way decodes to the same request.
fn quick_acquire(bucket: &JsValue, options: &JsValue) -> Option<RateAcquire> {
    let bucket = Ident::new(bucket.as_string()?).ok()?;
    let mut rules = None;
    let mut permits = None;
    for (key, value) in js::plain_entries(options)? {
        match key.as_str() {
            "rules" => rules = Some(quick_rules(&value)?),
            "permits" => permits = Some(Permits(parse_permits(value.as_f64()?).ok()?)),
            _ => return None,
        }
    }
    Some(RateAcquire {
        bucket,
        rules: Rules(rules?),
        permits,
    })
}

/// `rules` as [`quick_acquire`] reads it.
fn quick_rules(value: &JsValue) -> Option<RuleSet> {
    if !Array::is_array(value) {
        return None;
    }
    let array: &Array = value.unchecked_ref();
    if array.length() as usize > RATE_RULES_PER_CALL_MAX {
        return None;
    }
    let mut rules = Vec::with_capacity(array.length() as usize);
    for item in array.iter() {
        let (mut id, mut limit, mut window_ms) = (None, None, None);
        for (key, value) in js::plain_entries(&item)? {
            match key.as_str() {
                "id" => id = Some(value.as_string()?),
                "limit" => limit = Some(value.as_f64()?),
                "windowMs" => window_ms = Some(value.as_f64()?),
                _ => return None,
            }
        }
        rules.push(Rule::parse(&id?, limit?, window_ms?).ok()?);
    }
    RuleSet::new(rules).ok()
}

#[wasm_bindgen]
impl RateLimiterCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> RateLimiterCore {
        RateLimiterCore {
            object: Rc::new(Object {
                base: ObjectBase::new(raw_state, env),
                cache: RefCell::new(None),
            }),
        }
    }

    /// `acquire(bucket, { rules, permits? }) -> { granted, waitMs }`.
    pub fn acquire(&self, bucket: JsValue, options: JsValue) -> JsValue {
        answer((|| {
            let request: RateAcquire = match quick_acquire(&bucket, &options) {
                Some(request) => request,
                None => positional(bucket, options)?,
            };
            let permits = request.permits.map_or(1, |p| p.0);
            let reply = self
                .object
                .decide(&request.bucket, |store, now| {
                    rate_limit::acquire(store, now, &request.rules.0, permits)
                })
                .map_err(|e| js::to_js_error(&e))?;
            let reply = RateAcquireReply::from(reply);
            // A grant is routine (P5's hot path prints nothing by default);
            // a denial of every permit asked is worth its line.
            let (kind, decision) = if reply.granted > 0 {
                (Kind::Routine, "granted")
            } else {
                (Kind::Contended, "denied")
            };
            if decision_log::prints(kind) {
                let reason = format!(
                    "{} of {permits} permit(s); retry in {} ms",
                    reply.granted, reply.wait_ms
                );
                let scope = Scope::Bucket(request.bucket.as_str());
                decision_log::decision(kind, scope, "-", decision, &reason, None);
            }
            Ok(to_js(&reply))
        })())
    }

    /// `penalize(bucket, { cooldownMs }) -> { until }`.
    pub fn penalize(&self, bucket: JsValue, options: JsValue) -> JsValue {
        answer((|| {
            let request: RatePenalize = positional(bucket, options)?;
            let cooldown_ms = request.cooldown_ms.0;
            let until = self.object.decide(&request.bucket, |store, now| {
                rate_limit::penalize(store, now, cooldown_ms)
            });
            Ok(to_js(&RatePenalizeReply { until }))
        })())
    }

    /// `refund(bucket, { permits }) -> { refunded }`.
    pub fn refund(&self, bucket: JsValue, options: JsValue) -> JsValue {
        answer((|| {
            let request: RateRefund = positional(bucket, options)?;
            let permits = request.permits.0;
            let refunded = self.object.decide(&request.bucket, |store, now| {
                rate_limit::refund(store, now, permits)
            });
            Ok(to_js(&RateRefundReply { refunded }))
        })())
    }

    /// `inspect(bucket) -> { bucket, cooldownUntil, rules }`.
    pub fn inspect(&self, bucket: JsValue) -> JsValue {
        answer((|| {
            let request: RateInspect = positional(bucket, JsValue::UNDEFINED)?;
            let inspection = self.object.decide(&request.bucket, |store, now| {
                rate_limit::inspect(store, now)
            });
            Ok(to_js(&RateInspection::new(request.bucket, inspection)))
        })())
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        self.object.base.storage_work()
    }
}

/// A method's answer as RPC returns it: the reply itself, or a rejected
/// promise holding the refusal (as the Coordinator's fast path answers).
fn answer(result: Result<JsValue, JsValue>) -> JsValue {
    match result {
        Ok(reply) => reply,
        Err(error) => Promise::reject(&error).into(),
    }
}

impl Object {
    /// Runs one decision for `bucket` now, in this synchronous turn.
    ///
    /// Not under `blockConcurrencyWhile`: the decision is synchronous (the
    /// SQL API is), so no other request can interleave with it, and the
    /// gate's Promise, closure and microtasks were a fixed cost on every
    /// call (measured: bench/subset.mjs l1, the commit that made this).
    fn decide<T>(&self, bucket: &Ident, decision: impl FnOnce(&mut Store<'_>, u64) -> T) -> T {
        self.base.ensure_schema(migrate);
        let inner = SqlRateStore::new(&self.base.sql, bucket.as_str());
        let mut cache = self.cache.borrow_mut();
        if cache.as_ref().is_none_or(|(held, _)| held != bucket) {
            *cache = Some((
                bucket.clone(),
                RateCache::load(&inner, RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS),
            ));
        }
        let (_, held) = cache.as_mut().expect("loaded above");
        let mut store = CachedRateStore::new(inner, held);
        let value = decision(&mut store, now_ms());
        self.base.count_work(store.inner().work());
        value
    }
}
