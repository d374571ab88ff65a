//! Debounce and deferred starts through Baton's Worker (contract §7): the
//! default entrypoint's `debounce`, `startAt`, `debounceFlush`,
//! `debounceCancel` and `debounceInspect`, and the HTTP API's debounce
//! routes. Both decode the request here (`crate::edge`) and call the key's
//! `Debouncer` through its stub with its positional method, exactly as a
//! Worker with the `DEBOUNCER` binding would; the reply is the object's,
//! untouched.

use super::js;
use super::stub::{self, entrypoint_service, CallError};
use crate::edge::DebounceCall;
use wasm_bindgen::prelude::*;
use worker::Env;

/// Runs one Debouncer request on its key's object; the reply as the object gave it.
pub async fn call(env: &Env, request: DebounceCall) -> Result<JsValue, CallError> {
    let key = request.key().as_str().to_owned();
    let name = JsValue::from_str(&key);
    let (method, args) = match &request {
        DebounceCall::Debounce(r) => ("debounce", vec![name, stub::options_without_key(r)]),
        DebounceCall::StartAt(r) => ("startAt", vec![name, stub::options_without_key(r)]),
        DebounceCall::Flush(_) => ("flush", vec![name]),
        DebounceCall::Cancel(_) => ("cancel", vec![name]),
        DebounceCall::Inspect(_) => ("inspect", vec![name]),
    };
    stub::call_object(env, "DEBOUNCER", &key, method, &args).await
}

entrypoint_service! {
    /// The Rust half of the default entrypoint's debounce methods (see
    /// js/worker.mjs): one object argument each, the §7 shape.
    DebounceService, decode: js::request_by_field, call: call, {
        "debounce" debounce => DebounceCall::Debounce,
        "startAt" start_at => DebounceCall::StartAt,
        "debounceFlush" debounce_flush => DebounceCall::Flush,
        "debounceCancel" debounce_cancel => DebounceCall::Cancel,
        "debounceInspect" debounce_inspect => DebounceCall::Inspect,
    }
}
