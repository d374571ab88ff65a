//! The rate limiter through Baton's Worker (contract §7): the default
//! entrypoint's `rateAcquire`, `ratePenalize`, `rateRefund` and
//! `rateInspect`, and the HTTP API's bucket routes. Both decode the §7
//! object (`crate::edge::rate`, so bad input is refused before any object
//! is woken), then call the bucket's `RateLimiter` through its stub with
//! the contract's positional arguments, exactly as a Worker holding the
//! binding would; the reply is the object's, untouched.

use super::js::{self, to_js};
use super::stub::{call_object, entrypoint_service, CallError};
use crate::edge::RateCall;
use wasm_bindgen::prelude::*;
use worker::Env;

/// Runs one request on its bucket's object; the reply as the object gave it.
pub async fn call(env: &Env, request: RateCall) -> Result<JsValue, CallError> {
    let bucket = request.bucket().as_str();
    let (method, options) = request.positional();
    let mut args = vec![JsValue::from_str(bucket)];
    args.extend(options.as_ref().map(to_js));
    call_object(env, "RATE_LIMITER", bucket, method, &args).await
}

entrypoint_service! {
    /// The Rust half of the default entrypoint's `rate*` methods (see
    /// js/worker.mjs): one object argument each, the §7 shape.
    RateService, decode: js::request, call: call, {
        "rateAcquire" rate_acquire => RateCall::Acquire,
        "ratePenalize" rate_penalize => RateCall::Penalize,
        "rateRefund" rate_refund => RateCall::Refund,
        "rateInspect" rate_inspect => RateCall::Inspect,
    }
}
