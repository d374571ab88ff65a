//! The JS boundary: RPC arguments become request types through
//! `crate::edge` (or a `BatonError` naming the field, before anything is
//! read or written), replies become plain JS objects, refusals JS `Error`s.

use crate::edge;
use crate::error::BatonError;
use js_sys::Promise;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::future_to_promise;

/// Serves one RPC call: decodes its argument into `method`'s request type,
/// runs it, and resolves with its typed reply as a JS value; a refusal or a
/// failure rejects the promise with its JS `Error`.
pub fn serve<Request, Reply, Answer>(
    input: JsValue,
    method: impl FnOnce(Request) -> Answer + 'static,
) -> Promise
where
    Request: DeserializeOwned,
    Reply: Serialize,
    Answer: Future<Output = Result<Reply, JsValue>> + 'static,
{
    future_to_promise(async move {
        let reply = method(request(input)?).await?;
        Ok(to_js(&reply))
    })
}

/// Decodes one RPC argument into its request type; a refusal is already
/// the JS `Error` the caller gets.
pub fn request<T: DeserializeOwned>(input: JsValue) -> Result<T, JsValue> {
    edge::decode(serde_wasm_bindgen::Deserializer::from(input)).map_err(|e| to_js_error(&e))
}

/// A reply as the plain JS object (or string) RPC callers receive: maps
/// become objects, `None` becomes `null`, as in JSON.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .expect("reply types always convert")
}

/// The shell's clock, in ms since the epoch; the core only ever gets it as an argument.
pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

/// The own property that marks a JS `Error` as a refusal, holding the
/// field it names. Own properties survive JS RPC, so whoever calls a method
/// (the HTTP API calling the Coordinator's object) tells a refusal from a
/// failure by this mark, never by reading the message.
const REFUSED_FIELD: &str = "batonField";

/// The JS `Error` a refusal becomes: the `BatonError:` message, marked.
pub fn to_js_error(error: &BatonError) -> JsValue {
    let js_error = js_sys::Error::new(&error.message());
    // Setting a property on a fresh Error cannot fail.
    let _ = js_sys::Reflect::set(
        &js_error,
        &JsValue::from_str(REFUSED_FIELD),
        &JsValue::from_str(error.field()),
    );
    js_error.into()
}

/// What a method threw: a refusal (its message) or a failure (its text).
pub enum Thrown {
    Refused(String),
    Failed(String),
}

impl Thrown {
    pub fn of(error: &JsValue) -> Thrown {
        let message = error
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| error.as_string())
            .unwrap_or_else(|| format!("Baton: {error:?}"));
        let refused = js_sys::Reflect::get(error, &JsValue::from_str(REFUSED_FIELD))
            .is_ok_and(|field| field.is_string());
        if refused {
            Thrown::Refused(message)
        } else {
            Thrown::Failed(message)
        }
    }
}
