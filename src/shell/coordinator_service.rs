//! The Coordinator through Baton's Worker (contract §7): the default
//! entrypoint's `coordinatorEnqueue`, `coordinatorAcquire`,
//! `coordinatorRelease` and `coordinatorInspect`, and the HTTP API's key
//! routes. Both decode the request here (`crate::edge`), refuse options the
//! configuration cannot honour, and call the key's Durable Object through
//! its stub with JS RPC, exactly as a Workflow's `withKey` would; the reply
//! is the object's, untouched. [`call_object`] is that stub call, for any
//! Durable Object class.

use super::config::CoordinatorConfig;
use super::js::{self, to_js};
use crate::edge::coordinator::KeyOptions;
use crate::edge::CoordinatorCall;
use crate::error::BatonError;
use js_sys::{Array, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::Env;

/// Why a call through the stub failed.
pub enum CallError {
    /// Refused here, before the object was called.
    Refused(BatonError),
    /// Whatever the object (or the runtime) threw.
    Thrown(JsValue),
}

impl From<BatonError> for CallError {
    fn from(error: BatonError) -> CallError {
        CallError::Refused(error)
    }
}

impl From<JsValue> for CallError {
    fn from(error: JsValue) -> CallError {
        CallError::Thrown(error)
    }
}

impl CallError {
    fn into_js(self) -> JsValue {
        match self {
            CallError::Refused(error) => js::to_js_error(&error),
            CallError::Thrown(error) => error,
        }
    }
}

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

/// Calls `method` with `args` on the Durable Object named `name` in the
/// namespace bound as `binding`, with JS RPC through its stub, as a
/// Workflow would; what it answers, or what it threw.
pub async fn call_object(
    env: &Env,
    binding: &str,
    name: &str,
    method: &str,
    args: &[JsValue],
) -> Result<JsValue, CallError> {
    let stub = env
        .durable_object(binding)
        .and_then(|namespace| namespace.id_from_name(name)?.get_stub())
        .map_err(|error| {
            let message = format!(
                "Baton configuration: no usable Durable Object binding named {binding:?}: {error}"
            );
            CallError::Thrown(js_sys::Error::new(&message).into())
        })?
        .into_rpc::<js_sys::Object>();
    // A stub's method is a callable proxy: only `Reflect.apply` calls it
    // (`method.apply(...)` would ask the object for a method "apply"), and
    // the call answers a thenable (an `RpcPromise`), not a `Promise`.
    let function: js_sys::Function =
        Reflect::get(&stub, &JsValue::from_str(method))?.unchecked_into();
    let args: Array = args.iter().collect();
    let answer: JsValue = Reflect::apply(&function, &stub, &args)?;
    let pending = Promise::resolve(&answer);
    Ok(JsFuture::from(pending).await?)
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
