//! The JS boundary: RPC arguments become request types through
//! `crate::edge` (or a `BatonError` naming the field, before anything is
//! read or written), replies become plain JS objects, refusals JS `Error`s.

use crate::edge;
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::JS_SAFE_INTEGER_MAX;
use js_sys::{Array, Object, Promise, Reflect, Symbol};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::future::Future;
use std::pin::Pin;
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
    promise(async move {
        let reply = method(request(input)?).await?;
        Ok(to_js(&reply))
    })
}

/// A future as the JS promise of its result, for every async method Rust
/// hands to JS. Boxed, so that the whole shell shares one instance of
/// `future_to_promise` (its task and wakers) instead of one per future type:
/// 48 copies were ~18 KB of the deployed WASM (BENCHMARKS.md, P6). The cost
/// is one allocation per call, beside the task's own.
pub fn promise(future: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    spawn(Box::pin(future))
}

fn spawn(future: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>) -> Promise {
    future_to_promise(future)
}

/// Decodes one RPC argument into its request type; a refusal is already
/// the JS `Error` the caller gets.
pub fn request<T: DeserializeOwned>(input: JsValue) -> Result<T, JsValue> {
    let decoded = match plain_object(&input) {
        Some(tree) => edge::decode_value(&tree),
        None => edge::decode(serde_wasm_bindgen::Deserializer::from(input)),
    };
    decoded.map_err(|e| to_js_error(&e))
}

/// The request `{ key, instanceId, options }` of a method called with
/// those positional arguments (the Coordinator's `acquire` and `release`).
/// On their hot path, two strings and no options, it is built from the two
/// identifiers directly (`fast`), skipping the object and the general
/// decoder; anything else, an identifier that does not parse included,
/// takes the general way, which gives the exact refusal naming the field.
pub fn positional_request<T: DeserializeOwned>(
    key: JsValue,
    instance_id: JsValue,
    options: Option<JsValue>,
    fast: impl FnOnce(Ident, InstanceId) -> T,
) -> Result<T, JsValue> {
    let no_options = options.as_ref().is_none_or(JsValue::is_undefined);
    if no_options {
        let key = key.as_string().and_then(|k| Ident::new(k).ok());
        let id = instance_id
            .as_string()
            .and_then(|i| InstanceId::new(i).ok());
        if let (Some(key), Some(id)) = (key, id) {
            return Ok(fast(key, id));
        }
    }
    let object = Object::new();
    let set = |field: &str, value: &JsValue| {
        Reflect::set(&object, &JsValue::from_str(field), value)
            .expect("a plain object takes a field")
    };
    set("key", &key);
    set("instanceId", &instance_id);
    if let Some(options) = &options {
        set("options", options);
    }
    request(object.into())
}

/// A JS value as JSON, as `serde_wasm_bindgen` reads it into a
/// `serde_json::Value` (so `None` for what that refuses: a function, a
/// symbol, a `BigInt` out of range...).
pub fn json(value: JsValue) -> Option<Value> {
    match plain_object(&value) {
        Some(tree) => Some(tree),
        None => Value::deserialize(serde_wasm_bindgen::Deserializer::from(value)).ok(),
    }
}

/// The fast way to the same `serde_json::Value` that
/// `Value::deserialize(serde_wasm_bindgen::Deserializer::from(input))`
/// builds, for the common input: a plain object (`{ key, instanceId }`).
/// `None` for anything else, which then takes that general way.
///
/// `serde_wasm_bindgen` asks every value what it is with up to ten calls
/// into JS (nullish, boolean, BigInt, number, string, array, bytes, object,
/// iterable, Map) before reading it; RPC decoding was ~15% of a call's busy
/// time (BENCHMARKS.md, profile). Here a plain object is read with one
/// `Object.entries`, and each primitive field with a call or two, converted
/// by the same rules: `null` and `undefined` are `null`, a safe integer is
/// an integer, any other number a float (`NaN` and infinities `null`). A
/// field holding anything else (an object, an array, a BigInt) is read the
/// general way, exactly as that path reads it; if that fails, so does this.
/// Only objects whose prototype is `Object.prototype` and that are not
/// iterable qualify: `serde_wasm_bindgen` reads those with `Object.entries`
/// too (an iterable is read as `[key, value]` pairs, an `ArrayBuffer` as
/// bytes).
fn plain_object(input: &JsValue) -> Option<Value> {
    let mut fields = Map::new();
    for (key, value) in plain_entries(input)? {
        fields.insert(key, primitive(value)?);
    }
    Some(Value::Object(fields))
}

/// A plain object's own `[key, value]` pairs, as `Object.entries` lists
/// them, if `input` is one: its prototype is `Object.prototype` and it is
/// not iterable (what `serde_wasm_bindgen` too reads with `Object.entries`).
pub fn plain_entries(input: &JsValue) -> Option<Vec<(String, JsValue)>> {
    if !input.is_object() {
        return None;
    }
    let object: &Object = input.unchecked_ref();
    let plain = OBJECT_PROTOTYPE.with(|prototype| Object::get_prototype_of(input) == *prototype);
    if !plain || Reflect::has(object, &Symbol::iterator()).unwrap_or(true) {
        return None;
    }
    Object::entries(object)
        .iter()
        .map(|entry| {
            let entry: Array = entry.unchecked_into();
            Some((entry.get(0).as_string()?, entry.get(1)))
        })
        .collect()
}

thread_local! {
    /// `Object.prototype`, the prototype of a plain object.
    static OBJECT_PROTOTYPE: Object = Object::get_prototype_of(&Object::new());
}

/// One field's value, by `serde_wasm_bindgen`'s rules for JSON.
fn primitive(value: JsValue) -> Option<Value> {
    if let Some(text) = value.as_string() {
        Some(Value::String(text))
    } else if let Some(number) = value.as_f64() {
        // `Number.isSafeInteger`, as serde_wasm_bindgen checks it.
        let safe = number.fract() == 0.0 && number.abs() <= JS_SAFE_INTEGER_MAX as f64;
        Some(if safe {
            Value::from(number as i64)
        } else {
            Number::from_f64(number).map_or(Value::Null, Value::Number)
        })
    } else if let Some(flag) = value.as_bool() {
        Some(Value::Bool(flag))
    } else if value.is_null() || value.is_undefined() {
        Some(Value::Null)
    } else {
        Value::deserialize(serde_wasm_bindgen::Deserializer::from(value)).ok()
    }
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

/// Builds the request object `{ key, ...options }` of a Durable Object's
/// positional `(key, options)` method and decodes it (`crate::edge`). A
/// `key` inside the options is refused, not overridden: the key is the
/// first argument.
pub fn positional<T: DeserializeOwned>(key: JsValue, options: JsValue) -> Result<T, BatonError> {
    let mut fields = if options.is_undefined() || options.is_null() {
        serde_json::Map::new()
    } else {
        json_fields(&options, "options")?
    };
    if fields.contains_key("key") {
        return Err(BatonError::Invalid {
            field: "options",
            reason: "has an unknown field \"key\" (the key is the first argument)".into(),
        });
    }
    let key = serde_json::Value::deserialize(serde_wasm_bindgen::Deserializer::from(key))
        .unwrap_or(serde_json::Value::Null);
    fields.insert("key".into(), key);
    edge::decode_value(&serde_json::Value::Object(fields))
}

/// Decodes the one object argument of a default-entrypoint method, field by
/// field, so that a field JSON cannot hold is named (`params must be JSON
/// data`), not only the input as a whole.
pub fn request_by_field<T: DeserializeOwned>(input: JsValue) -> Result<T, JsValue> {
    json_fields(&input, "input")
        .and_then(|fields| edge::decode_value(&serde_json::Value::Object(fields)))
        .map_err(|e| to_js_error(&e))
}

/// The fields a refusal can name when a value is not JSON data: the
/// request fields that take a value of any shape or a number.
const JSON_FIELDS: &[&str] = &[
    "key",
    "delayMs",
    "maxWaitMs",
    "edge",
    "params",
    "workflow",
    "idPrefix",
    "at",
    "instanceId",
];

/// A plain JS object as JSON fields. A field whose value JSON cannot hold
/// (a function, a BigInt, a non-finite number, a cycle) is refused by name.
fn json_fields(
    value: &JsValue,
    what: &'static str,
) -> Result<serde_json::Map<String, serde_json::Value>, BatonError> {
    let not_object = BatonError::WrongType {
        field: what,
        expected: "an object",
    };
    if !value.is_object() || js_sys::Array::is_array(value) {
        return Err(not_object);
    }
    let object: &js_sys::Object = value.unchecked_ref();
    let mut fields = serde_json::Map::new();
    for name in js_sys::Object::keys(object).iter() {
        let Some(name) = name.as_string() else {
            continue;
        };
        let field = JSON_FIELDS
            .iter()
            .copied()
            .find(|f| *f == name)
            .unwrap_or(what);
        let item = js_sys::Reflect::get(object, &JsValue::from_str(&name)).unwrap_or_default();
        let not_json = BatonError::WrongType {
            field,
            expected: "JSON data",
        };
        if item.as_f64().is_some_and(|n| !n.is_finite()) {
            return Err(BatonError::WrongType {
                field,
                expected: "a finite number",
            });
        }
        let converted =
            serde_json::Value::deserialize(serde_wasm_bindgen::Deserializer::from(item))
                .map_err(|_| not_json)?;
        fields.insert(name, converted);
    }
    Ok(fields)
}
