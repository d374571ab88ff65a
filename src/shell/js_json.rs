//! A JS value read as JSON data ([`json`]), without `serde_wasm_bindgen`'s
//! deserializer: the RPC arguments `shell::js` decodes through
//! `crate::edge`. Plain data crosses once ([`json_once`]): one JSON text
//! made in JS, parsed here.

use crate::limits::JS_SAFE_INTEGER_MAX;
use js_sys::{Array, Object, Reflect, Symbol};
use serde_json::{Map, Number, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

#[wasm_bindgen(inline_js = r#"
// The JSON text of `value` when [`json`] would read it as exactly what the
// text says: every value a string, a boolean, null, undefined (written as
// null, as [`json`] reads it, also in an object, where JSON would skip
// it), a safe integer, an array, or a plain object (its prototype
// Object.prototype, not iterable, no toJSON of its own or inherited at
// work). Otherwise undefined, and the caller reads the value the slow way,
// which judges it (and refuses it, naming the field) as it always has.
export function jsonText(value) {
  let plain = true;
  const replacer = function (key, v) {
    // `this[key]` is the value before any toJSON: a change means one ran.
    if (!plain || this[key] !== v) {
      plain = false;
      return null;
    }
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        if (!Number.isSafeInteger(v)) plain = false;
        return v;
      case "object":
        if (v === null || Array.isArray(v)) return v;
        if (Object.getPrototypeOf(v) !== Object.prototype || Symbol.iterator in v) plain = false;
        return v;
      case "undefined":
        return null;
      default:
        plain = false;
        return null;
    }
  };
  try {
    const text = JSON.stringify(value, replacer);
    return plain ? text : undefined;
  } catch {
    return undefined;
  }
}

// `options` is exactly `{ grant: true }` as [`json`] reads it: a plain
// object (its prototype Object.prototype, not iterable) whose one own
// enumerable field is `grant`, `true`. One question instead of one a fact.
export function grantOnly(options) {
  return (
    typeof options === "object" &&
    options !== null &&
    Object.getPrototypeOf(options) === Object.prototype &&
    !(Symbol.iterator in options) &&
    Object.keys(options).length === 1 &&
    Object.hasOwn(options, "grant") &&
    options.grant === true
  );
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = jsonText)]
    fn json_text(value: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = grantOnly)]
    fn grant_only_js(options: &JsValue) -> bool;
}

/// A JS value as JSON data through one call into JS: its JSON text, made
/// by `JSON.stringify` and parsed here. `None` when the value is not plain
/// data of the kinds the text holds exactly (a string, a boolean, `null`,
/// a safe integer, an array, a plain object), or nests deeper than serde's
/// limit ([`JSON_DEPTH_MAX`]): the caller then reads it by [`json`]'s rules,
/// which gives what this would have for plain data, and the refusals.
/// Every value is checked in JS before it is written: `undefined` and an
/// array's hole are written `null`, as [`json`] reads them; a non-integral
/// or unsafe number (whose text may round), a `toJSON`, a function, a
/// symbol or a `BigInt` send the value the slow way.
pub fn json_once(value: &JsValue) -> Option<Value> {
    serde_json::from_str(&plain_text(value)?).ok()
}

/// The JSON text [`json_once`] parses: `None` for a value that is not
/// plain data of the kinds the text holds exactly. Equal texts are the
/// same data, read alike by every decode.
pub fn plain_text(value: &JsValue) -> Option<String> {
    json_text(value)
}

/// A JS value as JSON data: `None` for what JSON cannot hold (a function,
/// a symbol, a `BigInt`, an iterable other than an array, a cycle or
/// nesting deeper than [`JSON_DEPTH_MAX`]).
pub fn json(value: JsValue) -> Option<Value> {
    match plain_object(&value) {
        Some(tree) => Some(tree),
        None => json_at(&value, 0),
    }
}

/// Deepest nesting of arrays and objects [`json`] reads: serde_json's own
/// recursion limit, so whatever a caller's JSON body may hold over HTTP an
/// RPC argument may too, and a cycle ends here instead of in a stack
/// overflow.
const JSON_DEPTH_MAX: usize = 128;

/// One value as JSON, by the rules of [`scalar`] for a primitive, with
/// arrays read element by element (`undefined` as `null`) and objects as
/// `Object.entries` lists them. Read here rather than through
/// `serde_wasm_bindgen`'s deserializer, whose generic error paths cost the
/// Worker's module several KB (docs/benchmarks.md, P6).
fn json_at(value: &JsValue, depth: usize) -> Option<Value> {
    if !value.is_object() {
        return scalar(value);
    }
    if depth >= JSON_DEPTH_MAX || value.is_function() {
        return None;
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        return array
            .iter()
            .map(|item| json_at(&item, depth + 1))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array);
    }
    let object: &Object = value.unchecked_ref();
    if Reflect::has(object, &Symbol::iterator()).unwrap_or(true) {
        return None;
    }
    let mut fields = Map::new();
    for entry in Object::entries(object).iter() {
        let entry: Array = entry.unchecked_into();
        fields.insert(
            entry.get(0).as_string()?,
            json_at(&entry.get(1), depth + 1)?,
        );
    }
    Some(Value::Object(fields))
}

/// The common input, a plain object (`{ key, instanceId }`), as JSON: one
/// `Object.entries` and each field by [`json_at`]'s rules. `None` for
/// anything else. Only objects whose prototype is `Object.prototype` and
/// that are not iterable qualify; RPC decoding was ~15% of a call's busy
/// time when every value was asked what it is with up to ten calls into JS
/// (docs/benchmarks.md, profile).
fn plain_object(input: &JsValue) -> Option<Value> {
    let mut fields = Map::new();
    for (key, value) in plain_entries(input)? {
        fields.insert(key, json_at(&value, 1)?);
    }
    Some(Value::Object(fields))
}

/// A plain object's own `[key, value]` pairs, as `Object.entries` lists
/// them, if `input` is one: its prototype is `Object.prototype` and it is
/// not iterable (what `serde_wasm_bindgen` too reads with `Object.entries`).
fn plain_entries(input: &JsValue) -> Option<Vec<(String, JsValue)>> {
    if !is_plain_object(input) {
        return None;
    }
    let object: &Object = input.unchecked_ref();
    Object::entries(object)
        .iter()
        .map(|entry| {
            let entry: Array = entry.unchecked_into();
            Some((entry.get(0).as_string()?, entry.get(1)))
        })
        .collect()
}

/// `options` is exactly `{ grant: true }` as the general decoder reads it:
/// a plain object whose one own enumerable field is `grant`, `true`, and
/// that is not iterable (the general way refuses an iterable), asked of
/// JS in one call. Anything else is for the general way to judge.
pub fn grant_only(options: &JsValue) -> bool {
    grant_only_js(options)
}

/// `input` is a plain object: its prototype is `Object.prototype` and it is
/// not iterable.
fn is_plain_object(input: &JsValue) -> bool {
    if !input.is_object() {
        return false;
    }
    let object: &Object = input.unchecked_ref();
    let plain = OBJECT_PROTOTYPE.with(|prototype| Object::get_prototype_of(input) == *prototype);
    plain && !Reflect::has(object, &Symbol::iterator()).unwrap_or(true)
}

thread_local! {
    /// `Object.prototype`, the prototype of a plain object.
    static OBJECT_PROTOTYPE: Object = Object::get_prototype_of(&Object::new());
}

/// A value that is not an object, as JSON: a string, a number (a safe
/// integer as an integer, as `Number.isSafeInteger` says; `NaN` and the
/// infinities as `null`), a boolean, `null` or `undefined` (`null`); `None`
/// for a symbol or a `BigInt`, which JSON cannot hold.
fn scalar(value: &JsValue) -> Option<Value> {
    if let Some(text) = value.as_string() {
        Some(Value::String(text))
    } else if let Some(number) = value.as_f64() {
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
        None
    }
}
