//! Calling a method of a Durable Object through its stub, with JS RPC, as a
//! Workflow would: how the default entrypoint's methods and the HTTP API
//! reach the Coordinator (and any other object class).

use super::js;
use crate::error::BatonError;
use js_sys::{Array, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
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
    pub fn into_js(self) -> JsValue {
        match self {
            CallError::Refused(error) => js::to_js_error(&error),
            CallError::Thrown(error) => error,
        }
    }
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

/// The options object of a positional call: the request as JS without its
/// `key`, which the object takes as its first argument.
pub fn options_without_key<T: serde::Serialize>(request: &T) -> JsValue {
    let value = js::to_js(request);
    let _ = Reflect::delete_property(value.unchecked_ref::<js_sys::Object>(), &"key".into());
    value
}

/// Declares the Rust half of a concept's methods on the default entrypoint
/// (contract §7; js/worker.mjs hands each its one object argument): a
/// `#[wasm_bindgen]` class holding the `Env`, and per method the JS name,
/// the Rust name and the call variant the decoded request goes in, which
/// `$call` carries to the object.
macro_rules! entrypoint_service {
    (
        $(#[$doc:meta])*
        $service:ident, decode: $decode:path, call: $call:path,
        { $($js:literal $method:ident => $variant:path),+ $(,)? }
    ) => {
        $(#[$doc])*
        #[wasm_bindgen::prelude::wasm_bindgen]
        pub struct $service {
            env: worker::Env,
        }

        #[wasm_bindgen::prelude::wasm_bindgen]
        impl $service {
            #[wasm_bindgen(constructor)]
            pub fn new(env: worker::Env) -> $service {
                console_error_panic_hook::set_once();
                $service { env }
            }

            $(
                #[wasm_bindgen(js_name = $js)]
                pub fn $method(&self, input: wasm_bindgen::JsValue) -> js_sys::Promise {
                    let env = self.env.clone();
                    js::promise(async move {
                        let request = $variant($decode(input)?);
                        $call(&env, request)
                            .await
                            .map_err($crate::shell::stub::CallError::into_js)
                    })
                }
            )+
        }
    };
}
pub(crate) use entrypoint_service;
