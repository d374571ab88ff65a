//! Idempotent runs through Baton's Worker (contract §7): the default
//! entrypoint's `runClaim`, `runComplete`, `runAwait`, `runAppend` and
//! `runEvents`, and the HTTP API's run routes. Both decode the request here
//! (`crate::edge`) and call the run key's `Runs` object through its stub
//! with its positional method, exactly as a Worker with the `RUNS` binding
//! would; the reply is the object's, untouched.

use super::js::{self, to_js};
use super::stub::{self, CallError};
use crate::edge::RunCall;
use js_sys::Promise;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use worker::Env;

/// The options object of a positional call: the request without its key.
fn options<T: Serialize>(request: &T) -> JsValue {
    let value = to_js(request);
    // The request type holds the key; the object takes it as its first argument.
    let _ = js_sys::Reflect::delete_property(
        value.unchecked_ref::<js_sys::Object>(),
        &JsValue::from_str("key"),
    );
    value
}

/// Runs one Runs request on its key's object; the reply as the object gave it.
pub async fn call(env: &Env, request: RunCall) -> Result<JsValue, CallError> {
    let key = request.key().as_str().to_owned();
    let (method, options) = match &request {
        RunCall::Claim(r) => ("claim", options(r)),
        RunCall::Complete(r) => ("complete", options(r)),
        RunCall::Await(r) => ("await", options(r)),
        RunCall::Append(r) => ("append", options(r)),
        RunCall::Events(r) => ("events", options(r)),
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

/// The Rust half of the default entrypoint's `run*` methods (see
/// js/worker.mjs): one object argument each, the §7 shape.
#[wasm_bindgen]
pub struct RunsService {
    env: Env,
}

#[wasm_bindgen]
impl RunsService {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> RunsService {
        console_error_panic_hook::set_once();
        RunsService { env }
    }

    #[wasm_bindgen(js_name = runClaim)]
    pub fn run_claim(&self, input: JsValue) -> Promise {
        self.run(input, RunCall::Claim)
    }

    #[wasm_bindgen(js_name = runComplete)]
    pub fn run_complete(&self, input: JsValue) -> Promise {
        self.run(input, RunCall::Complete)
    }

    #[wasm_bindgen(js_name = runAwait)]
    pub fn run_await(&self, input: JsValue) -> Promise {
        self.run(input, RunCall::Await)
    }

    #[wasm_bindgen(js_name = runAppend)]
    pub fn run_append(&self, input: JsValue) -> Promise {
        self.run(input, RunCall::Append)
    }

    #[wasm_bindgen(js_name = runEvents)]
    pub fn run_events(&self, input: JsValue) -> Promise {
        self.run(input, RunCall::Events)
    }
}

impl RunsService {
    fn run<T: serde::de::DeserializeOwned + 'static>(
        &self,
        input: JsValue,
        call_of: fn(T) -> RunCall,
    ) -> Promise {
        let env = self.env.clone();
        future_to_promise(async move {
            let request = call_of(js::request(input)?);
            call(&env, request).await.map_err(CallError::into_js)
        })
    }
}
