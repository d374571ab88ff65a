//! The Coordinator through Baton's Worker (contract §7): the default
//! entrypoint's `coordinatorEnqueue`, `coordinatorAcquire`,
//! `coordinatorRelease` and `coordinatorInspect`, and the HTTP API's key
//! routes. Both decode the request here (`crate::edge`), refuse options the
//! configuration cannot honour, and call the key's Durable Object through
//! its stub with JS RPC, exactly as a Workflow's `withKey` would; the reply
//! is the object's, untouched.

use super::config::CoordinatorConfig;
use super::js::{self, to_js};
use super::stub::{call_object, entrypoint_service, CallError};
use crate::edge::coordinator::KeyOptions;
use crate::edge::CoordinatorCall;
use wasm_bindgen::prelude::*;
use worker::Env;

/// Runs one Coordinator request on its key's object; the reply as the
/// object gave it.
pub async fn call(env: &Env, request: CoordinatorCall) -> Result<JsValue, CallError> {
    let options = |options: &Option<KeyOptions>| -> Result<JsValue, CallError> {
        if let Some(options) = options {
            let config = CoordinatorConfig::from_env(env)
                .map_err(|message| CallError::Thrown(js_sys::Error::new(&message).into()))?;
            config.check_options(Some(options))?;
        }
        Ok(options.as_ref().map_or(JsValue::UNDEFINED, to_js))
    };
    let text = |value: &str| JsValue::from_str(value);
    // The object's positional methods (contract §1), as `withKey` calls them.
    let (key, method, args) = match &request {
        CoordinatorCall::Enqueue(r) => (
            &r.key,
            "enqueue",
            vec![
                text(r.key.as_str()),
                JsValue::from_bool(r.supersedes),
                text(r.instance_id.as_str()),
                r.input_hash
                    .as_ref()
                    .map_or(JsValue::UNDEFINED, |h| text(h.as_str())),
                options(&r.options)?,
            ],
        ),
        CoordinatorCall::Acquire(r) => (
            &r.key,
            "acquire",
            vec![
                text(r.key.as_str()),
                text(r.instance_id.as_str()),
                options(&r.options)?,
            ],
        ),
        CoordinatorCall::Release(r) => (
            &r.key,
            "release",
            vec![text(r.key.as_str()), text(r.instance_id.as_str())],
        ),
        CoordinatorCall::Inspect(r) => (&r.key, "inspect", vec![text(r.key.as_str())]),
    };
    call_object(env, "COORDINATOR", key.as_str(), method, &args).await
}

entrypoint_service! {
    /// The Rust half of the default entrypoint's `coordinator*` methods (see
    /// js/worker.mjs): one object argument each, the §7 shape.
    CoordinatorService, decode: js::request, call: call, {
        "coordinatorEnqueue" coordinator_enqueue => CoordinatorCall::Enqueue,
        "coordinatorAcquire" coordinator_acquire => CoordinatorCall::Acquire,
        "coordinatorRelease" coordinator_release => CoordinatorCall::Release,
        "coordinatorInspect" coordinator_inspect => CoordinatorCall::Inspect,
    }
}
