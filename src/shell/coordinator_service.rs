//! The Coordinator through Baton's Worker (contract §7): the default
//! entrypoint's `coordinatorEnqueue`, `coordinatorAcquire`,
//! `coordinatorRelease` and `coordinatorInspect`, and the HTTP API's key
//! routes. Both decode the request here (`crate::edge`), refuse options the
//! configuration cannot honour, and call the key's Durable Object through
//! its stub with JS RPC, exactly as a Workflow's `withKey` would; the reply
//! is the object's, untouched.

use super::config::CoordinatorConfig;
use super::js::{self, to_js};
use super::stub::{call_object, CallError};
use crate::edge::coordinator::KeyOptions;
use crate::edge::CoordinatorCall;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
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

/// The Rust half of the default entrypoint's `coordinator*` methods (see
/// js/worker.mjs): one object argument each, the §7 shape.
#[wasm_bindgen]
pub struct CoordinatorService {
    env: Env,
}

#[wasm_bindgen]
impl CoordinatorService {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> CoordinatorService {
        console_error_panic_hook::set_once();
        CoordinatorService { env }
    }

    #[wasm_bindgen(js_name = coordinatorEnqueue)]
    pub fn coordinator_enqueue(&self, input: JsValue) -> Promise {
        self.run(input, CoordinatorCall::Enqueue)
    }

    #[wasm_bindgen(js_name = coordinatorAcquire)]
    pub fn coordinator_acquire(&self, input: JsValue) -> Promise {
        self.run(input, CoordinatorCall::Acquire)
    }

    #[wasm_bindgen(js_name = coordinatorRelease)]
    pub fn coordinator_release(&self, input: JsValue) -> Promise {
        self.run(input, CoordinatorCall::Release)
    }

    #[wasm_bindgen(js_name = coordinatorInspect)]
    pub fn coordinator_inspect(&self, input: JsValue) -> Promise {
        self.run(input, CoordinatorCall::Inspect)
    }
}

impl CoordinatorService {
    fn run<T: serde::de::DeserializeOwned + 'static>(
        &self,
        input: JsValue,
        call_of: fn(T) -> CoordinatorCall,
    ) -> Promise {
        let env = self.env.clone();
        future_to_promise(async move {
            let request = call_of(js::request(input)?);
            call(&env, request).await.map_err(CallError::into_js)
        })
    }
}
