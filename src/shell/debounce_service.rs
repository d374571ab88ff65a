//! Debounce and deferred starts through Baton's Worker (contract §7): the
//! default entrypoint's `debounce`, `startAt`, `debounceFlush`,
//! `debounceCancel` and `debounceInspect`, and the HTTP API's debounce
//! routes. Both decode the request here (`crate::edge`) and call the key's
//! `Debouncer` through its stub with its positional method, exactly as a
//! Worker with the `DEBOUNCER` binding would; the reply is the object's,
//! untouched.

use super::js::{self, to_js};
use super::stub::{self, CallError};
use crate::edge::DebounceCall;
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

/// Runs one Debouncer request on its key's object; the reply as the object gave it.
pub async fn call(env: &Env, request: DebounceCall) -> Result<JsValue, CallError> {
    let key = request.key().as_str().to_owned();
    let name = JsValue::from_str(&key);
    let (method, args) = match &request {
        DebounceCall::Debounce(r) => ("debounce", vec![name, options(r)]),
        DebounceCall::StartAt(r) => ("startAt", vec![name, options(r)]),
        DebounceCall::Flush(_) => ("flush", vec![name]),
        DebounceCall::Cancel(_) => ("cancel", vec![name]),
        DebounceCall::Inspect(_) => ("inspect", vec![name]),
    };
    stub::call_object(env, "DEBOUNCER", &key, method, &args).await
}

/// The Rust half of the default entrypoint's debounce methods (see
/// js/worker.mjs): one object argument each, the §7 shape.
#[wasm_bindgen]
pub struct DebounceService {
    env: Env,
}

#[wasm_bindgen]
impl DebounceService {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> DebounceService {
        console_error_panic_hook::set_once();
        DebounceService { env }
    }

    pub fn debounce(&self, input: JsValue) -> Promise {
        self.run(input, DebounceCall::Debounce)
    }

    #[wasm_bindgen(js_name = startAt)]
    pub fn start_at(&self, input: JsValue) -> Promise {
        self.run(input, DebounceCall::StartAt)
    }

    #[wasm_bindgen(js_name = debounceFlush)]
    pub fn debounce_flush(&self, input: JsValue) -> Promise {
        self.run(input, DebounceCall::Flush)
    }

    #[wasm_bindgen(js_name = debounceCancel)]
    pub fn debounce_cancel(&self, input: JsValue) -> Promise {
        self.run(input, DebounceCall::Cancel)
    }

    #[wasm_bindgen(js_name = debounceInspect)]
    pub fn debounce_inspect(&self, input: JsValue) -> Promise {
        self.run(input, DebounceCall::Inspect)
    }
}

impl DebounceService {
    fn run<T: serde::de::DeserializeOwned + 'static>(
        &self,
        input: JsValue,
        call_of: fn(T) -> DebounceCall,
    ) -> Promise {
        let env = self.env.clone();
        future_to_promise(async move {
            let request = call_of(js::request_by_field(input)?);
            call(&env, request).await.map_err(CallError::into_js)
        })
    }
}
