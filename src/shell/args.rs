//! The JS edge: RPC arguments become typed values or a `BatonError` naming
//! the argument, before anything is read or written; replies become JS values.

use crate::error::BatonError;
use crate::ident::{Ident, InputHash, InstanceId};
use wasm_bindgen::JsValue;

pub fn string(field: &'static str, value: &JsValue) -> Result<String, BatonError> {
    if value.is_undefined() || value.is_null() {
        return Err(BatonError::Missing { field });
    }
    value.as_string().ok_or(BatonError::WrongType {
        field,
        expected: "a string",
    })
}

pub fn ident(field: &'static str, value: &JsValue) -> Result<Ident, BatonError> {
    Ident::parse(field, &string(field, value)?)
}

pub fn instance_id(field: &'static str, value: &JsValue) -> Result<InstanceId, BatonError> {
    InstanceId::parse(field, &string(field, value)?)
}

/// An optional hash: `undefined` and `null` both mean "none".
pub fn input_hash(field: &'static str, value: &JsValue) -> Result<Option<InputHash>, BatonError> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    InputHash::parse(field, &string(field, value)?).map(Some)
}

pub fn boolean(field: &'static str, value: &JsValue) -> Result<bool, BatonError> {
    if value.is_undefined() || value.is_null() {
        return Err(BatonError::Missing { field });
    }
    value.as_bool().ok_or(BatonError::WrongType {
        field,
        expected: "a boolean",
    })
}

/// A JSON value as the plain JS object RPC callers receive.
pub fn to_js(value: &serde_json::Value) -> JsValue {
    use serde::Serialize;
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .expect("JSON values always convert")
}

/// The shell's clock, in ms since the epoch; the core only ever gets it as an argument.
pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

/// The JS `Error` a refusal becomes.
pub fn to_js_error(error: &BatonError) -> JsValue {
    js_sys::Error::new(&error.message()).into()
}
