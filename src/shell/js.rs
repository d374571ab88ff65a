//! The JS boundary: RPC arguments become request types through
//! `crate::edge` (or a `BatonError` naming the field, before anything is
//! read or written), replies become plain JS objects, refusals JS `Error`s.

use crate::edge::{self, KeyArg};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use js_sys::{Object, Promise, Reflect};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::future_to_promise;

use super::js_json::{grant_only, json, json_once, plain_text};

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
/// 48 copies were ~18 KB of the deployed WASM (docs/benchmarks.md, P6). The cost
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
    // The input as JSON (plain data crossing once), then decoded as
    // `edge::decode` would: a value JSON cannot hold has no field to blame
    // more precisely than the input.
    let tree = match json_once(&input) {
        Some(tree) => Some(tree),
        None => json(input),
    };
    let decoded = match tree {
        Some(tree) => edge::decode_value(&tree),
        None => Err(BatonError::WrongType {
            field: "input",
            expected: "plain JSON data",
        }),
    };
    decoded.map_err(|e| to_js_error(&e))
}

/// The request `{ key, instanceId, options }` of a method called with
/// those positional arguments (the Coordinator's `acquire` and `release`).
/// On their hot path, two strings and either no options or exactly
/// withKey's `{ grant: true }` (the `bool` `fast` gets), it is built from
/// the two identifiers directly (`fast`), skipping the request object and
/// the general decoder: the call's values are read once, each with one
/// question into JS. Anything else, an identifier that does not parse
/// included, takes the general way, which gives the exact refusal naming
/// the field.
pub fn positional_request<T: DeserializeOwned>(
    key: &JsValue,
    instance_id: &JsValue,
    options: Option<&JsValue>,
    fast: impl FnOnce(Ident, InstanceId, bool) -> T,
) -> Result<T, JsValue> {
    let grant = match options {
        None => Some(false),
        Some(options) if options.is_undefined() => Some(false),
        Some(options) => grant_only(options).then_some(true),
    };
    if let Some(grant) = grant {
        let key = key.as_string().and_then(|k| Ident::new(k).ok());
        let id = instance_id
            .as_string()
            .and_then(|i| InstanceId::new(i).ok());
        if let (Some(key), Some(id)) = (key, id) {
            return Ok(fast(key, id, grant));
        }
    }
    let object = Object::new();
    let set = |field: &str, value: &JsValue| {
        Reflect::set(&object, &JsValue::from_str(field), value)
            .expect("a plain object takes a field")
    };
    set("key", key);
    set("instanceId", instance_id);
    if let Some(options) = options {
        set("options", options);
    }
    request(object.into())
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

/// Builds the request object of a Durable Object's positional
/// `(key, options)` method (`{ key, ...options }`, or the RateLimiter's
/// `{ bucket, ...options }`: `arg` says which, `edge::with_key`) and decodes
/// it (`crate::edge`). The one positional decoder of every class. A key
/// inside the options is refused, not overridden: the key is the first
/// argument.
pub fn positional<T: DeserializeOwned>(
    arg: &KeyArg,
    key: JsValue,
    options: JsValue,
) -> Result<T, BatonError> {
    let text = plain_text(&options);
    positional_from_text(arg, key, options, text.as_deref())
}

/// [`positional`], plain options read from their text made already ([`plain_text`]).
pub fn positional_from_text<T: DeserializeOwned>(
    arg: &KeyArg,
    key: JsValue,
    options: JsValue,
    text: Option<&str>,
) -> Result<T, BatonError> {
    edge::decode_value(&positional_tree(arg, key, options, text)?)
}

/// [`positional`]'s request object as JSON, kept out of the generic code so
/// the WASM holds one copy of it, not one per request type (P6).
fn positional_tree(
    arg: &KeyArg,
    key: JsValue,
    options: JsValue,
    text: Option<&str>,
) -> Result<Value, BatonError> {
    let not_json = |field| BatonError::WrongType {
        field,
        expected: "plain JSON data",
    };
    let key = match json(key) {
        Some(key) => key,
        None if arg.whole => return Err(not_json(arg.field)),
        None => Value::Null,
    };
    let plain = text.and_then(|t| serde_json::from_str::<Value>(t).ok());
    let options = if options.is_undefined() || options.is_null() {
        None
    } else if let Some(tree) = plain.filter(|t| arg.whole || t.is_object()) {
        // Plain data: crossed once, and what the ways below would read.
        Some(tree)
    } else if arg.whole {
        Some(json(options).ok_or(not_json("options"))?)
    } else {
        Some(Value::Object(json_fields(&options, "options")?))
    };
    edge::with_key(arg, key, options)
}

/// Decodes the one object argument of a default-entrypoint method, field by
/// field, so that a field JSON cannot hold is named (`params must be JSON
/// data`), not only the input as a whole.
pub fn request_by_field<T: DeserializeOwned>(input: JsValue) -> Result<T, JsValue> {
    // Plain data crosses once; anything else is read field by field.
    let fields = match json_once(&input) {
        Some(Value::Object(fields)) => Ok(fields),
        _ => json_fields(&input, "input"),
    };
    fields
        .and_then(|fields| edge::decode_value(&Value::Object(fields)))
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
        let converted = json(item).ok_or(not_json)?;
        fields.insert(name, converted);
    }
    Ok(fields)
}
