//! The rate limiter through Baton's Worker (contract §7): the default
//! entrypoint's `rateAcquire`, `ratePenalize`, `rateRefund` and
//! `rateInspect`, and the HTTP API's bucket routes. Each decodes the §7
//! object here (so bad input is refused before any object is woken), then
//! calls the bucket's `RateLimiter` through its stub with the contract's
//! positional arguments, exactly as a Worker holding the binding would; the
//! reply is the object's, untouched.

use super::js::{self, to_js};
use super::rate_limiter_object::json_argument;
use super::stub::{call_object, CallError};
use crate::edge::decode_value;
use crate::edge::rate::{RateAcquire, RateInspect, RatePenalize, RateRefund};
use crate::error::BatonError;
use js_sys::Promise;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use worker::Env;

/// A rate-limit request, whichever method it is for, with the §7 object it
/// was decoded from.
pub enum RateCall {
    Acquire(RateAcquire),
    Penalize(RatePenalize),
    Refund(RateRefund),
    Inspect(RateInspect),
}

/// Runs one request on its bucket's object: `fields` is the §7 object
/// (already decoded into `request`), split into `(bucket, options)`.
pub async fn call(env: &Env, request: &RateCall, fields: Value) -> Result<JsValue, CallError> {
    let (bucket, method) = match request {
        RateCall::Acquire(r) => (&r.bucket, "acquire"),
        RateCall::Penalize(r) => (&r.bucket, "penalize"),
        RateCall::Refund(r) => (&r.bucket, "refund"),
        RateCall::Inspect(r) => (&r.bucket, "inspect"),
    };
    let mut args = vec![JsValue::from_str(bucket.as_str())];
    if !matches!(request, RateCall::Inspect(_)) {
        let mut options = match fields {
            Value::Object(fields) => fields,
            _ => unreachable!("a decoded request is an object"),
        };
        options.remove("bucket");
        args.push(to_js(&Value::Object(options)));
    }
    call_object(env, "RATE_LIMITER", bucket.as_str(), method, &args).await
}

/// The Rust half of the default entrypoint's `rate*` methods (see
/// js/worker.mjs): one object argument each, the §7 shape.
#[wasm_bindgen]
pub struct RateService {
    env: Env,
}

#[wasm_bindgen]
impl RateService {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> RateService {
        console_error_panic_hook::set_once();
        RateService { env }
    }

    #[wasm_bindgen(js_name = rateAcquire)]
    pub fn rate_acquire(&self, input: JsValue) -> Promise {
        self.run(input, RateCall::Acquire)
    }

    #[wasm_bindgen(js_name = ratePenalize)]
    pub fn rate_penalize(&self, input: JsValue) -> Promise {
        self.run(input, RateCall::Penalize)
    }

    #[wasm_bindgen(js_name = rateRefund)]
    pub fn rate_refund(&self, input: JsValue) -> Promise {
        self.run(input, RateCall::Refund)
    }

    #[wasm_bindgen(js_name = rateInspect)]
    pub fn rate_inspect(&self, input: JsValue) -> Promise {
        self.run(input, RateCall::Inspect)
    }
}

impl RateService {
    fn run<T: DeserializeOwned + 'static>(
        &self,
        input: JsValue,
        call_of: fn(T) -> RateCall,
    ) -> Promise {
        let env = self.env.clone();
        future_to_promise(async move {
            let refuse = |e: BatonError| js::to_js_error(&e);
            let fields = json_argument("input", input)
                .map_err(refuse)?
                .unwrap_or(Value::Null);
            let request = call_of(decode_value(&fields).map_err(refuse)?);
            call(&env, &request, fields)
                .await
                .map_err(CallError::into_js)
        })
    }
}
