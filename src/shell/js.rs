//! The JS boundary: RPC arguments become request types through
//! `crate::edge` (or a `BatonError` naming the field, before anything is
//! read or written), replies become plain JS objects, refusals JS `Error`s.

use crate::edge;
use crate::error::BatonError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

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

/// The JS `Error` a refusal becomes.
pub fn to_js_error(error: &BatonError) -> JsValue {
    js_sys::Error::new(&error.message()).into()
}
