//! A routed, authorised request becomes a typed command: the key or group
//! from the path (percent-decoded), the rest from the JSON body, decoded by
//! `crate::edge` into the same request types RPC callers' objects become.
//!
//! Bodies, per operation (`?` marks an optional field; `null` counts as
//! absent; a GET reads no body), generated from the method table
//! (`edge::body_table`; the OpenAPI document has each field's type and
//! bounds):
//!
//! <!-- generated from the method table: BATON_BLESS=1 cargo test --lib edge::body_table -->
//! | route | body |
//! |---|---|
//! | `POST /v1/keys/{key}/enqueue` | `{ supersedes?, instanceId, inputHash?, options? }` |
//! | `POST /v1/keys/{key}/acquire` | `{ instanceId, options? }` |
//! | `POST /v1/keys/{key}/release` | `{ instanceId }` |
//! | `GET /v1/keys/{key}` | none |
//! | `POST /v1/keys/{key}/pause` | `{ reason? }` |
//! | `POST /v1/keys/{key}/resume` | `{}` |
//! | `PUT /v1/keys/{key}/limit` | `{ limit? }` |
//! | `POST /v1/groups/{group}/enqueue` | `{ instanceId, revision, current?, workflow?, claim?, grant? }` |
//! | `POST /v1/groups/{group}/claim` | `{ instanceId }` |
//! | `POST /v1/groups/{group}/heartbeat` | `{ instanceId }` |
//! | `POST /v1/groups/{group}/release` | `{ instanceId }` |
//! | `GET /v1/groups/{group}` | none |
//! | `POST /v1/groups/{group}/pause` | `{ reason? }` |
//! | `POST /v1/groups/{group}/resume` | `{}` |
//! | `GET /v1/keys` | none; `?cursor=&limit=&state=` in the query |
//! | `GET /v1/groups` | none; `?cursor=&limit=&state=` in the query |
//! | `POST /v1/buckets/{bucket}/acquire` | `{ rules, permits? }` |
//! | `POST /v1/buckets/{bucket}/penalize` | `{ cooldownMs }` |
//! | `POST /v1/buckets/{bucket}/refund` | `{ permits }` |
//! | `GET /v1/buckets/{bucket}` | none |
//! | `POST /v1/debounce/{key}` | `{ delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix?, batch? }` |
//! | `POST /v1/debounce/{key}/start-at` | `{ at, params?, workflow?, instanceId? }` |
//! | `POST /v1/debounce/{key}/flush` | `{}` |
//! | `POST /v1/debounce/{key}/cancel` | `{}` |
//! | `GET /v1/debounce/{key}` | none |
//! | `POST /v1/runs/{key}/claim` | `{ instanceId, workflow? }` |
//! | `POST /v1/runs/{key}/complete` | `{ instanceId, result?, error? }` |
//! | `POST /v1/runs/{key}/await` | `{ timeoutMs }` |
//! | `POST /v1/runs/{key}/append` | `{ instanceId, type, data? }` |
//! | `POST /v1/runs/{key}/events` | `{ after?, timeoutMs?, limit? }` |
//! <!-- end of the generated body table -->
//!
//! A route without a path parameter (a list over every key) decodes its
//! fields the same way, with no field from the path.

use super::error::HttpError;
use super::routes::Operation;
use crate::edge::methods::Decoder;
use crate::edge::{decode_body, decode_http};
#[cfg(test)]
use crate::edge::{CoordinatorCall, SerialCall};
use crate::error::BatonError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// What an API request asks for, in validated values: one method of one
/// concept (a variant per concept, from the method table).
pub use crate::edge::methods::Command;

/// Decodes one percent-encoded path segment into UTF-8 text. `+` stays `+`
/// (it means a space only in query strings).
pub fn decode_segment(field: &'static str, raw: &str) -> Result<String, BatonError> {
    let invalid = || BatonError::Invalid {
        field,
        reason: "must be percent-encoded UTF-8 in the path".into(),
    };
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(invalid)?;
            // Two hex digits exactly: `from_str_radix` alone would take "+1".
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(invalid());
            }
            let hex = std::str::from_utf8(hex).map_err(|_| invalid())?;
            decoded.push(u8::from_str_radix(hex, 16).map_err(|_| invalid())?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).map_err(|_| invalid())
}

/// A list's query string (`cursor=...&limit=...`) as the fields of its
/// request: each value percent-decoded (`+` is a space), `limit` a number
/// when it reads as one (otherwise the decoder refuses it, naming it). A
/// parameter given twice is refused; an unknown one is left for the
/// decoder, which refuses it by name.
pub fn query_fields(query: &str) -> Result<Map<String, Value>, BatonError> {
    let mut fields = Map::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode_segment("query", &name.replace('+', " "))?;
        let value = decode_segment("query", &value.replace('+', " "))?;
        let value = match value.parse::<f64>() {
            Ok(number) if name == "limit" => {
                serde_json::Number::from_f64(number).map_or(Value::String(value), Value::Number)
            }
            _ => Value::String(value),
        };
        if fields.insert(name.clone(), value).is_some() {
            return Err(BatonError::Invalid {
                field: "query",
                reason: format!("names {name:?} more than once"),
            });
        }
    }
    Ok(fields)
}

impl Command {
    /// Parses a routed request: `param` is the raw path parameter
    /// (`{key}`, `{group}`, `{bucket}`), `body` the JSON object of a POST
    /// (`None` for a GET). The path is checked first, then unknown fields,
    /// then each field in order.
    pub fn parse(
        operation: Operation,
        param: Option<&str>,
        body: Option<Map<String, Value>>,
    ) -> Result<Command, HttpError> {
        let body = body.unwrap_or_default();
        let Some(field) = operation.path_field() else {
            return Ok(Command::decode(operation, Http { path: None, body })?);
        };
        // The router only yields operations whose template has a parameter.
        let raw = param.ok_or(BatonError::Missing { field })?;
        // Percent-decoded only: the one decode checks it, before the body
        // (`edge::decode_http`).
        let value = decode_segment(field, raw)?;
        let path = Some((field, value.as_str()));
        Ok(Command::decode(operation, Http { path, body })?)
    }
}

/// A request's parts as HTTP gives them: the path's field, and the body.
struct Http<'a> {
    path: Option<(&'static str, &'a str)>,
    body: Map<String, Value>,
}

impl Decoder for Http<'_> {
    fn decode<T: DeserializeOwned>(self) -> Result<T, BatonError> {
        match self.path {
            Some((field, value)) => decode_http(field, value, self.body),
            None => decode_body(self.body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::coordinator::Enqueue;
    use crate::edge::serial::SerialEnqueue;
    use crate::ident::{Ident, InstanceId};
    use crate::limits::IDENT_BYTES_MAX;
    use serde_json::json;

    fn body(value: Value) -> Option<Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => panic!("not an object: {other}"),
        }
    }

    fn refusal(operation: Operation, param: &str, value: Value) -> String {
        let error = Command::parse(operation, Some(param), body(value)).unwrap_err();
        assert_eq!(error.status(), 400, "{error}");
        error.message()
    }

    #[test]
    fn key_enqueue_parses_with_defaults() {
        let command = Command::parse(
            Operation::KeyEnqueue,
            Some("deploy%3Aacme%2Fsite"),
            body(json!({ "instanceId": "run-1" })),
        )
        .unwrap();
        assert_eq!(
            command,
            Command::Coordinator(CoordinatorCall::Enqueue(Enqueue {
                key: Ident::parse("key", "deploy:acme/site").unwrap(),
                supersedes: false,
                instance_id: InstanceId::parse("instanceId", "run-1").unwrap(),
                input_hash: None,
                options: None,
            }))
        );
        let command = Command::parse(
            Operation::KeyEnqueue,
            Some("k"),
            body(json!({ "instanceId": "a", "supersedes": true, "inputHash": "h1" })),
        )
        .unwrap();
        assert!(matches!(
            command,
            Command::Coordinator(CoordinatorCall::Enqueue(Enqueue {
                supersedes: true,
                input_hash: Some(ref h),
                ..
            })) if h.as_str() == "h1"
        ));
        // null is "absent" for optional fields.
        assert!(Command::parse(
            Operation::KeyEnqueue,
            Some("k"),
            body(json!({ "instanceId": "a", "supersedes": null, "inputHash": null })),
        )
        .is_ok());
    }

    #[test]
    fn every_operation_parses_to_its_action() {
        let id = json!({ "instanceId": "a" });
        let cases = [
            (
                Operation::KeyAcquire,
                Some(id.clone()),
                "Coordinator(Acquire",
            ),
            (
                Operation::KeyRelease,
                Some(id.clone()),
                "Coordinator(Release",
            ),
            (Operation::KeyInspect, None, "Coordinator(Inspect"),
            (Operation::GroupClaim, Some(id.clone()), "Serial(Claim"),
            (
                Operation::GroupHeartbeat,
                Some(id.clone()),
                "Serial(Heartbeat",
            ),
            (Operation::GroupRelease, Some(id.clone()), "Serial(Release"),
            (Operation::GroupInspect, None, "Serial(Inspect"),
        ];
        for (operation, value, expected) in cases {
            let command = Command::parse(operation, Some("x"), value.and_then(body)).unwrap();
            let debug = format!("{command:?}");
            assert!(debug.starts_with(expected), "{operation:?}: {debug}");
        }
    }

    #[test]
    fn group_requests_take_the_group_from_the_path() {
        let command = Command::parse(
            Operation::GroupEnqueue,
            Some("acme%2Fsite%3Amain"),
            body(json!({ "instanceId": "b", "revision": "r2", "current": "r2" })),
        )
        .unwrap();
        let Command::Serial(SerialCall::Enqueue(request)) = command else {
            panic!("{command:?}");
        };
        assert_eq!(request.group.as_str(), "acme/site:main");
        assert_eq!(request.instance_id.as_str(), "b");
        assert_eq!(request.revision.as_str(), "r2");
        assert_eq!(request.current.as_ref().map(Ident::as_str), Some("r2"));
        let command = Command::parse(
            Operation::GroupEnqueue,
            Some("g"),
            body(json!({ "instanceId": "b", "revision": "r2", "current": null })),
        )
        .unwrap();
        assert!(matches!(
            command,
            Command::Serial(SerialCall::Enqueue(SerialEnqueue { current: None, .. }))
        ));
        for operation in [
            Operation::GroupClaim,
            Operation::GroupHeartbeat,
            Operation::GroupRelease,
        ] {
            let command =
                Command::parse(operation, Some("g"), body(json!({ "instanceId": "b" }))).unwrap();
            let (Command::Serial(SerialCall::Claim(member))
            | Command::Serial(SerialCall::Heartbeat(member))
            | Command::Serial(SerialCall::Release(member))) = command
            else {
                panic!("{command:?}");
            };
            assert_eq!(
                (member.group.as_str(), member.instance_id.as_str()),
                ("g", "b")
            );
        }
    }

    #[test]
    fn key_options_are_parsed_and_refused_by_name() {
        let command = Command::parse(
            Operation::KeyAcquire,
            Some("k"),
            body(json!({ "instanceId": "a", "options": { "workflow": "DEPLOY", "limit": 3 } })),
        )
        .unwrap();
        let Command::Coordinator(CoordinatorCall::Acquire(acquire)) = command else {
            panic!("{command:?}");
        };
        let options = acquire.options.unwrap();
        assert_eq!(options.workflow.unwrap().as_str(), "DEPLOY");
        assert_eq!(options.limit.unwrap().get(), 3);
        let cases = [
            (json!({ "extra": 1 }), "BatonError: options has an unknown field \"extra\"; accepted fields: workflow, limit, grant, priority, tenant, onBusy, cancelHolders, maxWaiting"),
            (json!({ "grant": "yes" }), "BatonError: grant must be a boolean"),
            (json!({ "grant": 1 }), "BatonError: grant must be a boolean"),
            (json!({ "limit": 0 }), "BatonError: limit must be an integer from 1 to 1000 (got 0)"),
            (json!({ "limit": 1001 }), "BatonError: limit must be an integer from 1 to 1000 (got 1001)"),
            (json!({ "limit": 1.5 }), "BatonError: limit must be an integer from 1 to 1000 (got 1.5)"),
            (json!({ "limit": "3" }), "BatonError: limit must be a number"),
            (json!({ "workflow": 3 }), "BatonError: workflow must be a string"),
            (json!({ "workflow": "" }), "BatonError: workflow must not be empty"),
            (json!({ "priority": 101 }), "BatonError: priority must be an integer from -100 to 100 (got 101)"),
            (json!({ "priority": -101 }), "BatonError: priority must be an integer from -100 to 100 (got -101)"),
            (json!({ "priority": 0.5 }), "BatonError: priority must be an integer from -100 to 100 (got 0.5)"),
            (json!({ "priority": "1" }), "BatonError: priority must be a number"),
            (json!({ "tenant": "" }), "BatonError: tenant must not be empty"),
            (json!({ "tenant": "t".repeat(513) }), "BatonError: tenant must be at most 512 UTF-8 bytes (got 513)"),
            (json!({ "tenant": 7 }), "BatonError: tenant must be a string"),
            (json!({ "onBusy": "never" }), "BatonError: onBusy must be one of \"wait\", \"skip\""),
            (json!({ "onBusy": true }), "BatonError: onBusy must be a string"),
            (json!({ "cancelHolders": "yes" }), "BatonError: cancelHolders must be a boolean"),
            (json!("fast"), "BatonError: options must be an object"),
            (json!([1]), "BatonError: options must be an object"),
        ];
        for (options, expected) in cases {
            for operation in [Operation::KeyAcquire, Operation::KeyEnqueue] {
                let message = refusal(
                    operation,
                    "k",
                    json!({ "instanceId": "a", "options": options.clone() }),
                );
                assert_eq!(message, expected, "{operation:?} {options}");
            }
        }
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        assert_eq!(
            refusal(
                Operation::KeyAcquire,
                "k",
                json!({ "instanceId": "a", "extra": 1 })
            ),
            "BatonError: body has an unknown field \"extra\"; accepted fields: instanceId, options"
        );
        let message = refusal(
            Operation::KeyAcquire,
            "k",
            json!({ "instanceId": "a", "key": "k" }),
        );
        assert!(
            message.contains("\"key\" (the key comes from the path)"),
            "{message}"
        );
        let message = refusal(
            Operation::GroupClaim,
            "g",
            json!({ "instanceId": "a", "group": "g" }),
        );
        assert!(
            message.contains("the group comes from the path"),
            "{message}"
        );
        // A field of another operation is unknown here.
        let message = refusal(
            Operation::KeyRelease,
            "k",
            json!({ "instanceId": "a", "supersedes": true }),
        );
        assert!(message.contains("\"supersedes\""), "{message}");
        // Long names are cut in the message.
        let long = "x".repeat(10_000);
        let message = refusal(Operation::KeyAcquire, "k", json!({ long: 1 }));
        assert!(message.len() < 300, "{message}");
    }

    /// The path's field is checked before the body, by the one decode: a
    /// bad key is refused as the key, whatever the body holds, for every
    /// operation with a path field.
    #[test]
    fn the_path_is_checked_before_the_body() {
        let long = "k".repeat(IDENT_BYTES_MAX + 1);
        for operation in Operation::ALL {
            let Some(field) = operation.path_field() else {
                continue;
            };
            let expected = |reason: &str| format!("BatonError: {field} {reason}");
            let bodies = [json!({ "extra": 1 }), json!({ field: "x" }), json!({})];
            for body in bodies {
                assert_eq!(
                    refusal(operation, "", body.clone()),
                    expected("must not be empty"),
                    "{operation:?} {body}"
                );
                let message = refusal(operation, &long, body.clone());
                assert!(
                    message.starts_with(&expected("must be at most")),
                    "{operation:?} {body}: {message}"
                );
            }
        }
    }

    #[test]
    fn wrong_types_and_missing_fields_are_named() {
        let cases = [
            (
                Operation::KeyAcquire,
                json!({}),
                "BatonError: instanceId is required",
            ),
            (
                Operation::KeyAcquire,
                json!({ "instanceId": null }),
                "BatonError: instanceId is required",
            ),
            (
                Operation::KeyAcquire,
                json!({ "instanceId": 5 }),
                "BatonError: instanceId must be a string",
            ),
            (
                Operation::KeyAcquire,
                json!({ "instanceId": ["a"] }),
                "BatonError: instanceId must be a string",
            ),
            (
                Operation::KeyEnqueue,
                json!({ "instanceId": "a", "supersedes": "yes" }),
                "BatonError: supersedes must be a boolean",
            ),
            (
                Operation::KeyEnqueue,
                json!({ "instanceId": "a", "inputHash": 7 }),
                "BatonError: inputHash must be a string",
            ),
            (
                Operation::KeyEnqueue,
                json!({ "instanceId": "a", "inputHash": "" }),
                "BatonError: inputHash must not be empty",
            ),
            (
                Operation::GroupEnqueue,
                json!({ "instanceId": "a" }),
                "BatonError: revision is required",
            ),
            (
                Operation::GroupEnqueue,
                json!({ "instanceId": "a", "revision": "r", "current": false }),
                "BatonError: current must be a string",
            ),
            (
                Operation::GroupHeartbeat,
                json!({ "instanceId": "has space" }),
                "BatonError: instanceId may hold only letters, digits, '-' and '_' (found ' ')",
            ),
        ];
        for (operation, value, expected) in cases {
            let param = if matches!(
                operation,
                Operation::GroupEnqueue | Operation::GroupHeartbeat
            ) {
                "g"
            } else {
                "k"
            };
            assert_eq!(
                refusal(operation, param, value.clone()),
                expected,
                "{value}"
            );
        }
    }

    #[test]
    fn path_parameters_are_decoded_and_validated() {
        let ok = |raw: &str| match Command::parse(Operation::KeyInspect, Some(raw), None).unwrap() {
            Command::Coordinator(CoordinatorCall::Inspect(inspect)) => inspect.key.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(ok("a%2Fb"), "a/b");
        assert_eq!(ok("a+b"), "a+b");
        assert_eq!(ok("%E2%82%AC"), "€");
        assert_eq!(ok("%e2%82%ac"), "€");
        assert_eq!(ok("deploy:acme"), "deploy:acme");
        let bad = |raw: &str| {
            Command::parse(Operation::KeyInspect, Some(raw), None)
                .unwrap_err()
                .message()
        };
        for raw in ["%", "%2", "%zz", "%ff", "a%C3", "%+1"] {
            assert_eq!(
                bad(raw),
                "BatonError: key must be percent-encoded UTF-8 in the path",
                "{raw:?}"
            );
        }
        assert_eq!(bad(""), "BatonError: key must not be empty");
        assert!(
            bad(&"k".repeat(IDENT_BYTES_MAX + 1)).starts_with("BatonError: key must be at most")
        );
        // 513 bytes once decoded, though fewer characters encoded.
        assert!(bad(&"%E2%82%AC".repeat(171)).starts_with("BatonError: key must be at most"));
        let group = Command::parse(Operation::GroupInspect, Some("%zz"), None).unwrap_err();
        assert_eq!(
            group.message(),
            "BatonError: group must be percent-encoded UTF-8 in the path"
        );
    }

    #[test]
    fn a_bad_key_is_refused_before_a_bad_body() {
        let error = Command::parse(
            Operation::KeyAcquire,
            Some(""),
            body(json!({ "instanceId": 5, "x": 1 })),
        )
        .unwrap_err();
        assert_eq!(error.message(), "BatonError: key must not be empty");
    }
}
