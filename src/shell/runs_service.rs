//! Idempotent runs through Baton's Worker (contract §7): the default
//! entrypoint's `runClaim`, `runComplete`, `runAwait`, `runAppend` and
//! `runEvents`, and the HTTP API's run routes. Both decode the request here
//! (`crate::edge`) and call the run key's `Runs` object through its stub
//! with its positional method, exactly as a Worker with the `RUNS` binding
//! would; the reply is the object's, untouched.

use super::js;
use super::stub::{self, entrypoint_service, CallError};
use crate::edge::RunCall;
use wasm_bindgen::prelude::*;
use worker::Env;

/// Runs one Runs request on its key's object; the reply as the object gave it.
pub async fn call(env: &Env, request: RunCall) -> Result<JsValue, CallError> {
    let key = request.key().as_str().to_owned();
    let (method, options) = match &request {
        RunCall::Claim(r) => ("claim", stub::options_without_key(r)),
        RunCall::Complete(r) => ("complete", stub::options_without_key(r)),
        RunCall::Await(r) => ("await", stub::options_without_key(r)),
        RunCall::Append(r) => ("append", stub::options_without_key(r)),
        RunCall::Events(r) => ("events", stub::options_without_key(r)),
    };
    stub::call_object(
        env,
        "RUNS",
        &key,
        method,
        &[JsValue::from_str(&key), options],
    )
    .await
}

entrypoint_service! {
    /// The Rust half of the default entrypoint's `run*` methods (see
    /// js/worker.mjs): one object argument each, the §7 shape.
    RunsService, decode: js::request, call: call, {
        "runClaim" run_claim => RunCall::Claim,
        "runComplete" run_complete => RunCall::Complete,
        "runAwait" run_await => RunCall::Await,
        "runAppend" run_append => RunCall::Append,
        "runEvents" run_events => RunCall::Events,
    }
}
