//! The Coordinator through Baton's Worker (contract §7): the default
//! entrypoint's `coordinatorEnqueue`, `coordinatorAcquire`,
//! `coordinatorRelease` and `coordinatorInspect`, and the HTTP API's key
//! routes. Both decode the request here (`crate::edge`), refuse options the
//! configuration cannot honour, and call the key's Durable Object through
//! its stub with JS RPC, exactly as a Workflow's `withKey` would; the reply
//! is the object's, untouched.

use super::config::CoordinatorConfig;
use super::js::{self, to_js};
use crate::edge::coordinator::KeyOptions;
use crate::edge::CoordinatorCall;
use crate::error::BatonError;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::Env;

#[wasm_bindgen]
extern "C" {
    /// A `Coordinator` stub's JS RPC methods (`js/worker.mjs`, contract §1).
    /// Each call returns a promise that rejects with the object's error.
    #[wasm_bindgen(extends = js_sys::Object)]
    type CoordinatorRpc;

    #[wasm_bindgen(method, catch)]
    fn enqueue(
        this: &CoordinatorRpc,
        key: &str,
        supersedes: bool,
        instance_id: &str,
        input_hash: Option<String>,
        options: JsValue,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn acquire(
        this: &CoordinatorRpc,
        key: &str,
        instance_id: &str,
        options: JsValue,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn release(this: &CoordinatorRpc, key: &str, instance_id: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn inspect(this: &CoordinatorRpc, key: &str) -> Result<Promise, JsValue>;
}

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
    let key = match &request {
        CoordinatorCall::Enqueue(r) => &r.key,
        CoordinatorCall::Acquire(r) => &r.key,
        CoordinatorCall::Release(r) => &r.key,
        CoordinatorCall::Inspect(r) => &r.key,
    };
    let stub = stub(env, key.as_str())?;
    let options = |options: &Option<KeyOptions>| -> Result<JsValue, CallError> {
        if let Some(options) = options {
            let config = CoordinatorConfig::from_env(env)
                .map_err(|message| CallError::Thrown(js_sys::Error::new(&message).into()))?;
            config.check_options(Some(options))?;
        }
        Ok(options.as_ref().map_or(JsValue::UNDEFINED, to_js))
    };
    let pending = match &request {
        CoordinatorCall::Enqueue(r) => stub.enqueue(
            r.key.as_str(),
            r.supersedes,
            r.instance_id.as_str(),
            r.input_hash.as_ref().map(|h| h.to_string()),
            options(&r.options)?,
        ),
        CoordinatorCall::Acquire(r) => {
            stub.acquire(r.key.as_str(), r.instance_id.as_str(), options(&r.options)?)
        }
        CoordinatorCall::Release(r) => stub.release(r.key.as_str(), r.instance_id.as_str()),
        CoordinatorCall::Inspect(r) => stub.inspect(r.key.as_str()),
    }?;
    Ok(JsFuture::from(pending).await?)
}

/// The key's Coordinator stub, as a Workflow would address it (contract §1).
fn stub(env: &Env, key: &str) -> Result<CoordinatorRpc, CallError> {
    let stub = env
        .durable_object("COORDINATOR")
        .and_then(|namespace| namespace.id_from_name(key)?.get_stub())
        .map_err(|error| {
            let message = format!(
                "Baton configuration: no usable Durable Object binding named \"COORDINATOR\": {error}"
            );
            CallError::Thrown(js_sys::Error::new(&message).into())
        })?;
    Ok(stub.into_rpc::<CoordinatorRpc>())
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
