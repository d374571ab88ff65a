//! The rate limiter through Baton's Worker (contract §7): the default
//! entrypoint's `rateAcquire`, `ratePenalize`, `rateRefund` and
//! `rateInspect`, and the HTTP API's bucket routes. Both decode the §7
//! object (`crate::edge::rate`, so bad input is refused before any object
//! is woken), then call the bucket's `RateLimiter` through its stub with
//! the contract's positional arguments, exactly as a Worker holding the
//! binding would; the reply is the object's, untouched.

use super::js::{self, to_js};
use super::stub::{call_object, CallError};
use crate::edge::RateCall;
use js_sys::Promise;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use worker::Env;

/// Runs one request on its bucket's object; the reply as the object gave it.
pub async fn call(env: &Env, request: &RateCall) -> Result<JsValue, CallError> {
    let bucket = request.bucket().as_str();
    let (method, options) = request.positional();
    let mut args = vec![JsValue::from_str(bucket)];
    args.extend(options.as_ref().map(to_js));
    call_object(env, "RATE_LIMITER", bucket, method, &args).await
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
            let request = call_of(js::request(input)?);
            call(&env, &request).await.map_err(CallError::into_js)
        })
    }
}
