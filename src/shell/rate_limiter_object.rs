//! The `RateLimiter` Durable Object: the shell around `crate::rate_limit`.
//!
//! One object per bucket. Every method runs the same short loop as the
//! Coordinator's first phase: decode the request (`crate::edge::rate`),
//! then one decision under the gate (read, decide and write in one
//! synchronous turn), then the reply. Unlike the Coordinator there is no
//! second phase, no alarm and no Workflow call: a rate decision needs
//! nothing from outside the object (a refused caller is told `waitMs` and
//! sleeps on its own side), and aged grants are pruned a few per call.
//! Nothing lives in memory: the object's SQLite tables are the truth, so an
//! eviction or restart forgets no grant.
//!
//! JS callers reach these methods through the `RateLimiter` class in
//! `js/worker.mjs` (which extends `DurableObject`), with the contract's
//! positional arguments: `acquire(bucket, { rules, permits? })`.

use super::gate::under_gate;
use super::js::{self, now_ms, to_js};
use super::sqlite::ObjectSql;
use crate::edge::decode_value;
use crate::edge::rate::{
    with_bucket, RateAcquire, RateAcquireReply, RateInspect, RateInspection, RatePenalize,
    RatePenalizeReply, RateRefund, RateRefundReply,
};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::rate_limit::{self, migrate, SqlRateStore};
use js_sys::Promise;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use worker::durable::State;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Rust half of the `RateLimiter` Durable Object.
#[wasm_bindgen]
pub struct RateLimiterCore {
    object: Rc<Object>,
}

struct Object {
    raw_state: DurableObjectState,
    sql: ObjectSql,
    /// A cache of "the schema is current", not state.
    schema_checked: Cell<bool>,
    /// Storage statements run since the object started, for the benchmark.
    reads: Cell<u64>,
    writes: Cell<u64>,
}

type Store<'a> = SqlRateStore<'a, ObjectSql>;

/// A JS argument as JSON, or a refusal naming it.
fn json_argument(field: &'static str, value: JsValue) -> Result<Option<Value>, BatonError> {
    if value.is_undefined() {
        return Ok(None);
    }
    serde_wasm_bindgen::from_value(value)
        .map(Some)
        .map_err(|_| BatonError::WrongType {
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

#[wasm_bindgen]
impl RateLimiterCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, _env: Env) -> RateLimiterCore {
        console_error_panic_hook::set_once();
        let state = State::from(raw_state.clone().unchecked_into::<DurableObjectState>());
        let sql = ObjectSql::new(state.storage().sql());
        RateLimiterCore {
            object: Rc::new(Object {
                raw_state,
                sql,
                schema_checked: Cell::new(false),
                reads: Cell::new(0),
                writes: Cell::new(0),
            }),
        }
    }

    /// `acquire(bucket, { rules, permits? }) -> { granted, waitMs }`.
    pub fn acquire(&self, bucket: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        future_to_promise(async move {
            let request: RateAcquire = positional(bucket, options)?;
            let permits = request.permits.map_or(1, |p| p.0);
            let rules = request.rules.0;
            let reply = object
                .decide(&request.bucket, move |store, now| {
                    rate_limit::acquire(store, now, &rules, permits)
                })
                .await?
                .map_err(|e| js::to_js_error(&e))?;
            Ok(to_js(&RateAcquireReply::from(reply)))
        })
    }

    /// `penalize(bucket, { cooldownMs }) -> { until }`.
    pub fn penalize(&self, bucket: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        future_to_promise(async move {
            let request: RatePenalize = positional(bucket, options)?;
            let cooldown_ms = request.cooldown_ms.0;
            let until = object
                .decide(&request.bucket, move |store, now| {
                    rate_limit::penalize(store, now, cooldown_ms)
                })
                .await?;
            Ok(to_js(&RatePenalizeReply { until }))
        })
    }

    /// `refund(bucket, { permits }) -> { refunded }`.
    pub fn refund(&self, bucket: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        future_to_promise(async move {
            let request: RateRefund = positional(bucket, options)?;
            let permits = request.permits.0;
            let refunded = object
                .decide(&request.bucket, move |store, now| {
                    rate_limit::refund(store, now, permits)
                })
                .await?;
            Ok(to_js(&RateRefundReply { refunded }))
        })
    }

    /// `inspect(bucket) -> { bucket, cooldownUntil, rules }`.
    pub fn inspect(&self, bucket: JsValue) -> Promise {
        let object = self.object.clone();
        future_to_promise(async move {
            let request: RateInspect = positional(bucket, JsValue::UNDEFINED)?;
            let inspection = object
                .decide(&request.bucket, |store, now| {
                    rate_limit::inspect(store, now)
                })
                .await?;
            Ok(to_js(&RateInspection::new(request.bucket, inspection)))
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        to_js(&StorageWork {
            reads: self.object.reads.get(),
            writes: self.object.writes.get(),
        })
    }
}

/// Storage statements run since the object started (for the benchmark;
/// not part of the contract).
#[derive(Serialize)]
struct StorageWork {
    reads: u64,
    writes: u64,
}

impl Object {
    /// Runs one decision for `bucket` under the gate.
    async fn decide<T: 'static>(
        self: &Rc<Self>,
        bucket: &Ident,
        decision: impl FnOnce(&mut Store<'_>, u64) -> T + 'static,
    ) -> Result<T, JsValue> {
        let object = self.clone();
        let bucket = bucket.clone();
        under_gate(&self.raw_state, move || {
            if !object.schema_checked.get() {
                migrate(&object.sql);
                object.schema_checked.set(true);
            }
            let mut store = SqlRateStore::new(&object.sql, bucket.as_str());
            let value = decision(&mut store, now_ms());
            let (reads, writes) = store.work();
            object.reads.set(object.reads.get() + u64::from(reads));
            object.writes.set(object.writes.get() + u64::from(writes));
            value
        })
        .await
    }
}
