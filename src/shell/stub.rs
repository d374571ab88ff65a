//! Calling a method of a Durable Object through its stub, with JS RPC, as a
//! Workflow would: how the default entrypoint's methods and the HTTP API
//! reach every object class, with the positional arguments the method
//! table gives (`crate::edge::methods`).

use super::js;
use crate::edge::methods::{Arg, ObjectMethod};
use crate::error::BatonError;
use js_sys::{Array, Promise, Reflect};
use std::future::Future;
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
    /// An operator's error (a missing binding, a variable out of range),
    /// thrown as a JS `Error` with the message naming it.
    pub fn configuration(message: String) -> CallError {
        CallError::Thrown(js_sys::Error::new(&message).into())
    }

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

/// A request to a Durable Object concept, as its row in the method table
/// says to call it (`shell::service` implements it for each concept).
pub trait ObjectCall {
    /// The namespace's binding.
    const BINDING: &'static str;
    /// The name of the object the request is for (its key or bucket).
    fn name(&self) -> &str;
    /// The request as JS, and the object's method serving it.
    fn encode(&self) -> (JsValue, ObjectMethod);
}

/// Calls the object `call` names with the positional arguments its row
/// gives; what it answers, or what it threw.
pub fn call<'a, C: ObjectCall>(
    env: &'a Env,
    call: &C,
) -> impl Future<Output = Result<JsValue, CallError>> + 'a {
    let (request, method) = call.encode();
    let args = positional(request, method.args);
    let name = call.name().to_owned();
    async move { call_object(env, C::BINDING, &name, method.name, &args).await }
}

/// The one re-encoder: a request (as its JS object) as the positional
/// arguments of its object's method. Each argument is the field it names
/// (`undefined` when the request has none); `..` is the request without
/// the fields named before it, as one options object.
fn positional(request: JsValue, args: &[Arg]) -> Vec<JsValue> {
    let mut named = Vec::new();
    args.iter()
        .map(|arg| match *arg {
            Arg::Field(field) => {
                let field = JsValue::from_str(field);
                let value = Reflect::get(&request, &field).unwrap_or(JsValue::UNDEFINED);
                named.push(field);
                value
            }
            Arg::Rest => {
                let object: &js_sys::Object = request.unchecked_ref();
                for field in &named {
                    let _ = Reflect::delete_property(object, field);
                }
                request.clone()
            }
        })
        .collect()
}
