//! The one way a request becomes a typed value: [`decode`] (RPC, from any
//! serde `Deserializer`, serde-wasm-bindgen's in practice) and
//! [`decode_http`] (a JSON body plus the key or group from the path).
//!
//! Both first read the input into a `serde_json::Value`, then deserialize
//! the request type from that tree with [`Node`], a small `Deserializer`
//! whose error is typed ([`Refusal`]) rather than a string. That is what
//! lets every refusal name its field:
//!
//! - a struct's field list comes with `deserialize_struct`, so an unknown
//!   field is refused there, by name, with the accepted fields (the first in
//!   name order, so the message is deterministic), before any field is read;
//! - fields are read in the order the type declares them (the contract's
//!   argument order), so with several bad fields the first is named;
//! - absent and `null` are the same for a field: `None` if it is optional,
//!   its default if it has one (`#[serde(default)]`, absent only: an
//!   explicit `null` there is "is required"), "is required" otherwise;
//! - a value of the wrong JSON type is "must be a string" (a boolean, a
//!   number, an object, an array), decided by what the type asked for;
//! - a value the field's own type refuses (`Ident::new` and friends, or a
//!   bounded number) is "`field` `reason`".
//!
//! Request types must not use `#[serde(flatten)]` (it hides the field list).
//!
//! This file holds the entry points, the positional calls' request object
//! ([`with_key`]) and [`Refusal`]; [`node`] holds the `Deserializer` itself.

mod node;

use crate::error::BatonError;
use node::Node;
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt;

/// Decodes an RPC argument (one object: `{ key, instanceId, ... }`). The
/// whole input is called `input` in refusals.
pub fn decode<'de, T: DeserializeOwned, D: Deserializer<'de>>(input: D) -> Result<T, BatonError> {
    // A value JSON cannot hold (a function, a BigInt, a symbol) has no field
    // to blame more precisely than the input itself.
    let tree = Value::deserialize(input).map_err(|_| BatonError::WrongType {
        field: "input",
        expected: "plain JSON data",
    })?;
    decode_value(&tree)
}

/// Decodes an RPC argument already read into JSON.
pub fn decode_value<T: DeserializeOwned>(tree: &Value) -> Result<T, BatonError> {
    finish(
        "input",
        T::deserialize(Node {
            value: tree,
            name: "input",
            path: None,
        }),
    )
}

/// Decodes an HTTP request: the JSON `body` (called `body` in refusals),
/// plus the field `path_field` (`key`, `group`) taken from the path, which
/// the body may not carry. JSON clients write `null` for "none", so a body's
/// `null` fields count as absent.
pub fn decode_http<T: DeserializeOwned>(
    path_field: &'static str,
    path_value: &str,
    mut body: Map<String, Value>,
) -> Result<T, BatonError> {
    body.retain(|_, value| !value.is_null());
    let body = Value::Object(body);
    let path_value = Value::String(path_value.to_owned());
    finish(
        "body",
        T::deserialize(Node {
            value: &body,
            name: "body",
            path: Some((path_field, &path_value)),
        }),
    )
}

/// Decodes an HTTP request whose path names no field: the JSON `body`
/// alone, as [`decode_http`] reads it.
pub fn decode_body<T: DeserializeOwned>(mut body: Map<String, Value>) -> Result<T, BatonError> {
    body.retain(|_, value| !value.is_null());
    let body = Value::Object(body);
    finish(
        "body",
        T::deserialize(Node {
            value: &body,
            name: "body",
            path: None,
        }),
    )
}

/// The first argument of a Durable Object's positional methods,
/// `(key, options?)`: the request field it fills, why the same field inside
/// the options is refused (the first argument names it, never the options),
/// and how the shell reads the two arguments into JSON (`shell::js::positional`).
/// Every class's methods share [`KEY_ARG`] but the RateLimiter's, whose first
/// argument is its `bucket` ([`crate::edge::rate::BUCKET_ARG`]).
pub struct KeyArg {
    pub field: &'static str,
    pub in_options: &'static str,
    /// Each argument read whole, one JSON cannot hold refused by the
    /// argument's name (`bucket`, `options`); otherwise the options are read
    /// field by field, so a refusal names the field, and a key JSON cannot
    /// hold is `null` (refused as the key's type refuses it).
    pub whole: bool,
}

/// The `key` of the Coordinator's, Debouncer's and Runs' positional methods.
pub const KEY_ARG: KeyArg = KeyArg {
    field: "key",
    in_options: "has an unknown field \"key\" (the key is the first argument)",
    whole: false,
};

/// The request object of a positional call: its `options` (absent or `null`
/// for none) with the key added under `arg.field`. Options that are not an
/// object, or that carry the key's field, are refused naming `options`.
pub fn with_key(arg: &KeyArg, key: Value, options: Option<Value>) -> Result<Value, BatonError> {
    let mut fields = match options {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(fields)) => fields,
        Some(_) => {
            return Err(BatonError::WrongType {
                field: "options",
                expected: "an object",
            })
        }
    };
    if fields.contains_key(arg.field) {
        return Err(BatonError::Invalid {
            field: "options",
            reason: arg.in_options.into(),
        });
    }
    fields.insert(arg.field.into(), key);
    Ok(Value::Object(fields))
}

fn finish<T>(name: &'static str, result: Result<T, Refusal>) -> Result<T, BatonError> {
    result.map_err(|refusal| refusal.named(name))
}

/// Why a value was refused: complete with its field, or not yet attributed
/// (the struct reading the value names it).
#[derive(Debug)]
pub enum Refusal {
    Named(BatonError),
    Missing,
    WrongType(&'static str),
    Invalid(String),
}

impl Refusal {
    fn named(self, field: &'static str) -> BatonError {
        match self {
            Refusal::Named(error) => error,
            Refusal::Missing => BatonError::Missing { field },
            Refusal::WrongType(expected) => BatonError::WrongType { field, expected },
            Refusal::Invalid(reason) => BatonError::Invalid { field, reason },
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Named(error) => write!(f, "{error}"),
            Refusal::Missing => f.write_str("is required"),
            Refusal::WrongType(expected) => write!(f, "must be {expected}"),
            Refusal::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    /// A field type's own refusal (`Ident::new`...): its reason.
    fn custom<M: fmt::Display>(reason: M) -> Refusal {
        Refusal::Invalid(reason.to_string())
    }

    fn missing_field(field: &'static str) -> Refusal {
        Refusal::Named(BatonError::Missing { field })
    }

    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Refusal {
        Refusal::Invalid(format!("must be {expected}"))
    }

    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Refusal {
        Refusal::Invalid(format!("must be {expected}"))
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Refusal {
        let names: Vec<String> = expected.iter().map(|v| format!("{v:?}")).collect();
        Refusal::Invalid(format!("must be one of {}", names.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::coordinator::{Acquire, Enqueue, Inspect};
    use crate::edge::serial::SerialEnqueue;
    use serde_json::json;

    fn refusal<T: DeserializeOwned + fmt::Debug>(input: Value) -> String {
        decode::<T, _>(input).unwrap_err().message()
    }

    #[test]
    fn the_whole_input_is_named_input() {
        assert_eq!(
            refusal::<Inspect>(Value::Null),
            "BatonError: input is required"
        );
        for bad in [json!("k"), json!(7), json!(true), json!(["k"])] {
            assert_eq!(
                refusal::<Inspect>(bad),
                "BatonError: input must be an object"
            );
        }
    }

    #[test]
    fn absent_and_null_are_the_same_for_a_field() {
        let ok: Acquire =
            decode(json!({ "key": "k", "instanceId": "a", "options": null })).unwrap();
        assert_eq!(ok.options, None);
        let ok: Enqueue = decode(json!({ "key": "k", "instanceId": "a" })).unwrap();
        assert!(!ok.supersedes, "a default applies when the field is absent");
        for input in [
            json!({ "key": "k" }),
            json!({ "key": "k", "instanceId": null }),
        ] {
            assert_eq!(
                refusal::<Acquire>(input),
                "BatonError: instanceId is required"
            );
        }
        // An explicit null for a defaulted field is a missing argument (the
        // positional `enqueue(key, undefined, id)` passes one).
        assert_eq!(
            refusal::<Enqueue>(json!({ "key": "k", "supersedes": null, "instanceId": "a" })),
            "BatonError: supersedes is required"
        );
    }

    #[test]
    fn fields_are_checked_in_the_order_the_type_declares_them() {
        // The contract's argument order: key, supersedes, instanceId.
        let input = json!({ "instanceId": 5, "supersedes": "yes", "key": "" });
        assert_eq!(
            refusal::<Enqueue>(input),
            "BatonError: key must not be empty"
        );
        let input = json!({ "instanceId": 5, "supersedes": "yes", "key": "k" });
        assert_eq!(
            refusal::<Enqueue>(input),
            "BatonError: supersedes must be a boolean"
        );
        let input = json!({ "key": "k", "supersedes": null, "instanceId": null });
        assert_eq!(
            refusal::<Enqueue>(input),
            "BatonError: supersedes is required"
        );
    }

    #[test]
    fn unknown_fields_are_named_before_any_field_is_read() {
        assert_eq!(
            refusal::<SerialEnqueue>(json!({ "zeta": 1, "group": 5, "alpha": 2 })),
            "BatonError: input has an unknown field \"alpha\"; accepted fields: group, instanceId, revision, current, workflow, claim, grant"
        );
        assert_eq!(
            refusal::<Acquire>(json!({ "key": "k", "instanceId": "a", "options": { "limt": 2 } })),
            "BatonError: options has an unknown field \"limt\"; accepted fields: workflow, limit, grant, priority, tenant, onBusy, cancelHolders, maxWaiting"
        );
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        let cases = [
            (json!({ "key": 42 }), "BatonError: key must be a string"),
            (
                json!({ "key": { "key": "k" } }),
                "BatonError: key must be a string",
            ),
            (json!({ "key": ["k"] }), "BatonError: key must be a string"),
        ];
        for (input, expected) in cases {
            assert_eq!(refusal::<Inspect>(input), expected);
        }
        let input = json!({ "key": "k", "instanceId": "a", "options": [] });
        assert_eq!(
            refusal::<Acquire>(input),
            "BatonError: options must be an object"
        );
    }

    #[test]
    fn http_bodies_take_the_path_field_and_drop_nulls() {
        // A body is a JSON object by its type.
        let body = |fields: [(&str, Value); 2]| {
            Map::from_iter(fields.map(|(name, value)| (name.to_owned(), value)))
        };
        let nulls = body([("instanceId", json!("a")), ("options", Value::Null)]);
        let acquire: Acquire = decode_http("key", "deploy:acme", nulls).unwrap();
        assert_eq!(acquire.key.as_str(), "deploy:acme");
        let body = body([("key", json!("k")), ("instanceId", json!("a"))]);
        assert_eq!(
            decode_http::<Acquire>("key", "k", body).unwrap_err().message(),
            "BatonError: body has an unknown field \"key\" (the key comes from the path); accepted fields: instanceId, options"
        );
    }

    /// Enums and integers, as later concepts' requests will use them.
    #[test]
    fn enums_and_integers_are_named_too() {
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "lowercase")]
        enum Edge {
            Leading,
            Trailing,
        }
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Debounce {
            edge: Option<Edge>,
            delay_ms: u32,
            rules: Vec<Rule>,
        }
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Rule {
            id: String,
        }
        let cases = [
            (
                json!({ "edge": "both", "delayMs": 1, "rules": [] }),
                "BatonError: edge must be one of \"leading\", \"trailing\"",
            ),
            (
                json!({ "edge": 1, "delayMs": 1, "rules": [] }),
                "BatonError: edge must be a string",
            ),
            (
                json!({ "delayMs": 1.5, "rules": [] }),
                "BatonError: delayMs must be an integer from 0 to 4294967295",
            ),
            (
                json!({ "delayMs": "1", "rules": [] }),
                "BatonError: delayMs must be a number",
            ),
            (
                json!({ "delayMs": 1, "rules": [{ "id": 5 }] }),
                "BatonError: id must be a string",
            ),
            (
                json!({ "delayMs": 1, "rules": [{ "id": "a", "x": 1 }] }),
                "BatonError: rules has an unknown field \"x\"; accepted fields: id",
            ),
            (
                json!({ "delayMs": 1, "rules": {} }),
                "BatonError: rules must be an array",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(refusal::<Debounce>(input.clone()), expected, "{input}");
        }
        let ok: Debounce =
            decode(json!({ "edge": "leading", "delayMs": 2.0, "rules": [] })).unwrap();
        assert!(matches!(ok.edge, Some(Edge::Leading)));
        assert_eq!(ok.delay_ms, 2);
    }
}
