//! A routed, authorised request becomes a typed command: the key or group
//! from the path (percent-decoded), the rest from the JSON body, every
//! value validated and every unknown field refused by name.
//!
//! Bodies, per operation (`?` marks an optional field; `null` counts as
//! absent for optional fields and as missing for required ones):
//!
//! | operation | body |
//! |---|---|
//! | key enqueue | `{ instanceId, supersedes?: boolean (false), inputHash? }` |
//! | key acquire, release | `{ instanceId }` |
//! | group enqueue | `{ instanceId, revision, current? }` |
//! | group claim, heartbeat, release | `{ instanceId }` |
//! | key / group inspect | none (GET) |

use super::error::HttpError;
use super::routes::Operation;
use crate::error::BatonError;
use crate::ident::{Ident, InputHash, InstanceId};
use crate::limits::HTTP_ECHO_CHARS_MAX;
use serde_json::{json, Map, Value};

/// What an API request asks for, in validated values: an action on one
/// key's Coordinator or on one serial-queue group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Key { key: Ident, action: KeyAction },
    Group { group: Ident, action: GroupAction },
}

/// A Coordinator method (contract §1), minus the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAction {
    Enqueue {
        supersedes: bool,
        instance_id: InstanceId,
        input_hash: Option<InputHash>,
    },
    Acquire {
        instance_id: InstanceId,
    },
    Release {
        instance_id: InstanceId,
    },
    Inspect,
}

/// A serial-queue method (contract §2), minus the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupAction {
    Enqueue {
        instance_id: InstanceId,
        revision: Ident,
        current: Option<Ident>,
    },
    Claim {
        instance_id: InstanceId,
    },
    Heartbeat {
        instance_id: InstanceId,
    },
    Release {
        instance_id: InstanceId,
    },
    Inspect,
}

/// The body fields each operation accepts, in the order they are checked.
fn allowed_fields(operation: Operation) -> &'static [&'static str] {
    match operation {
        Operation::KeyEnqueue => &["instanceId", "supersedes", "inputHash"],
        Operation::GroupEnqueue => &["instanceId", "revision", "current"],
        Operation::KeyAcquire
        | Operation::KeyRelease
        | Operation::GroupClaim
        | Operation::GroupHeartbeat
        | Operation::GroupRelease => &["instanceId"],
        Operation::KeyInspect | Operation::GroupInspect => &[],
    }
}

/// A JSON body's fields, read by name with the `BatonError` for each way a
/// field can be wrong.
struct Fields(Map<String, Value>);

impl Fields {
    /// Refuses the first unknown field (in name order, so the message is
    /// deterministic), naming it and the fields that are accepted.
    fn new(fields: Map<String, Value>, allowed: &[&str]) -> Result<Fields, BatonError> {
        if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            let hint = match unknown.as_str() {
                "key" | "group" => format!(" (the {unknown} comes from the path)"),
                _ => String::new(),
            };
            let allowed = if allowed.is_empty() {
                "none".to_owned()
            } else {
                allowed.join(", ")
            };
            return Err(BatonError::Invalid {
                field: "body",
                reason: format!(
                    "has an unknown field {:?}{hint}; accepted fields: {allowed}",
                    echo(unknown)
                ),
            });
        }
        Ok(Fields(fields))
    }

    /// A present, non-null value, if any.
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn required_str(&self, name: &'static str) -> Result<&str, BatonError> {
        match self.get(name) {
            None => Err(BatonError::Missing { field: name }),
            Some(value) => value.as_str().ok_or(BatonError::WrongType {
                field: name,
                expected: "a string",
            }),
        }
    }

    fn optional_str(&self, name: &'static str) -> Result<Option<&str>, BatonError> {
        match self.get(name) {
            None => Ok(None),
            Some(_) => self.required_str(name).map(Some),
        }
    }

    fn instance_id(&self) -> Result<InstanceId, BatonError> {
        InstanceId::parse("instanceId", self.required_str("instanceId")?)
    }

    fn ident(&self, name: &'static str) -> Result<Ident, BatonError> {
        Ident::parse(name, self.required_str(name)?)
    }

    fn optional_ident(&self, name: &'static str) -> Result<Option<Ident>, BatonError> {
        self.optional_str(name)?
            .map(|v| Ident::parse(name, v))
            .transpose()
    }

    fn optional_input_hash(&self) -> Result<Option<InputHash>, BatonError> {
        self.optional_str("inputHash")?
            .map(|v| InputHash::parse("inputHash", v))
            .transpose()
    }

    /// `supersedes` defaults to `false` over HTTP (RPC callers must pass it).
    fn supersedes(&self) -> Result<bool, BatonError> {
        match self.get("supersedes") {
            None => Ok(false),
            Some(value) => value.as_bool().ok_or(BatonError::WrongType {
                field: "supersedes",
                expected: "a boolean",
            }),
        }
    }
}

/// A caller's text, cut to [`HTTP_ECHO_CHARS_MAX`] characters for a message.
fn echo(text: &str) -> String {
    match text.char_indices().nth(HTTP_ECHO_CHARS_MAX) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

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

fn path_ident(field: &'static str, raw: Option<&str>) -> Result<Ident, BatonError> {
    // The router only yields operations whose template has a parameter.
    let raw = raw.ok_or(BatonError::Missing { field })?;
    Ident::parse(field, &decode_segment(field, raw)?)
}

impl Command {
    /// Parses a routed request: `param` is the raw `{key}` / `{group}`
    /// segment, `body` the JSON object of a POST (`None` for a GET). The
    /// path is checked first, then unknown fields, then each field in order.
    pub fn parse(
        operation: Operation,
        param: Option<&str>,
        body: Option<Map<String, Value>>,
    ) -> Result<Command, HttpError> {
        let is_key = matches!(
            operation,
            Operation::KeyEnqueue
                | Operation::KeyAcquire
                | Operation::KeyRelease
                | Operation::KeyInspect
        );
        let id = path_ident(if is_key { "key" } else { "group" }, param)?;
        let fields = Fields::new(body.unwrap_or_default(), allowed_fields(operation))?;
        let command = match operation {
            Operation::KeyEnqueue => Command::Key {
                key: id,
                action: KeyAction::Enqueue {
                    instance_id: fields.instance_id()?,
                    supersedes: fields.supersedes()?,
                    input_hash: fields.optional_input_hash()?,
                },
            },
            Operation::KeyAcquire => Command::Key {
                key: id,
                action: KeyAction::Acquire {
                    instance_id: fields.instance_id()?,
                },
            },
            Operation::KeyRelease => Command::Key {
                key: id,
                action: KeyAction::Release {
                    instance_id: fields.instance_id()?,
                },
            },
            Operation::KeyInspect => Command::Key {
                key: id,
                action: KeyAction::Inspect,
            },
            Operation::GroupEnqueue => Command::Group {
                group: id,
                action: GroupAction::Enqueue {
                    instance_id: fields.instance_id()?,
                    revision: fields.ident("revision")?,
                    current: fields.optional_ident("current")?,
                },
            },
            Operation::GroupClaim => Command::Group {
                group: id,
                action: GroupAction::Claim {
                    instance_id: fields.instance_id()?,
                },
            },
            Operation::GroupHeartbeat => Command::Group {
                group: id,
                action: GroupAction::Heartbeat {
                    instance_id: fields.instance_id()?,
                },
            },
            Operation::GroupRelease => Command::Group {
                group: id,
                action: GroupAction::Release {
                    instance_id: fields.instance_id()?,
                },
            },
            Operation::GroupInspect => Command::Group {
                group: id,
                action: GroupAction::Inspect,
            },
        };
        Ok(command)
    }
}

impl GroupAction {
    /// The input object the serial queue's RPC method takes for this action
    /// on `group` (`serialEnqueue({ group, instanceId, revision, current? })`...).
    pub fn serial_input(&self, group: &Ident) -> Value {
        let mut input = json!({ "group": group.as_str() });
        match self {
            GroupAction::Enqueue {
                instance_id,
                revision,
                current,
            } => {
                input["instanceId"] = json!(instance_id.as_str());
                input["revision"] = json!(revision.as_str());
                if let Some(current) = current {
                    input["current"] = json!(current.as_str());
                }
            }
            GroupAction::Claim { instance_id }
            | GroupAction::Heartbeat { instance_id }
            | GroupAction::Release { instance_id } => {
                input["instanceId"] = json!(instance_id.as_str());
            }
            GroupAction::Inspect => {}
        }
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::IDENT_BYTES_MAX;

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
            Command::Key {
                key: Ident::parse("key", "deploy:acme/site").unwrap(),
                action: KeyAction::Enqueue {
                    supersedes: false,
                    instance_id: InstanceId::parse("instanceId", "run-1").unwrap(),
                    input_hash: None,
                },
            }
        );
        let command = Command::parse(
            Operation::KeyEnqueue,
            Some("k"),
            body(json!({ "instanceId": "a", "supersedes": true, "inputHash": "h1" })),
        )
        .unwrap();
        assert!(matches!(
            command,
            Command::Key {
                action: KeyAction::Enqueue { supersedes: true, input_hash: Some(ref h), .. },
                ..
            } if h.as_str() == "h1"
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
            (Operation::KeyAcquire, Some(id.clone()), "Key Acquire"),
            (Operation::KeyRelease, Some(id.clone()), "Key Release"),
            (Operation::KeyInspect, None, "Key Inspect"),
            (Operation::GroupClaim, Some(id.clone()), "Group Claim"),
            (
                Operation::GroupHeartbeat,
                Some(id.clone()),
                "Group Heartbeat",
            ),
            (Operation::GroupRelease, Some(id.clone()), "Group Release"),
            (Operation::GroupInspect, None, "Group Inspect"),
        ];
        for (operation, value, expected) in cases {
            let command = Command::parse(operation, Some("x"), value.and_then(body)).unwrap();
            let (kind, action) = match &command {
                Command::Key { action, .. } => ("Key", format!("{action:?}")),
                Command::Group { action, .. } => ("Group", format!("{action:?}")),
            };
            let name = action.split([' ', '{']).next().unwrap();
            assert_eq!(format!("{kind} {name}"), expected, "{operation:?}");
        }
    }

    fn group_input(value: Option<Value>, operation: Operation, raw_group: &str) -> Value {
        match Command::parse(operation, Some(raw_group), value.and_then(body)).unwrap() {
            Command::Group { group, action } => action.serial_input(&group),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn group_actions_build_the_serial_input() {
        assert_eq!(
            group_input(
                Some(json!({ "instanceId": "b", "revision": "r2", "current": "r2" })),
                Operation::GroupEnqueue,
                "acme%2Fsite%3Amain"
            ),
            json!({ "group": "acme/site:main", "instanceId": "b", "revision": "r2", "current": "r2" })
        );
        assert_eq!(
            group_input(
                Some(json!({ "instanceId": "b", "revision": "r2", "current": null })),
                Operation::GroupEnqueue,
                "g"
            ),
            json!({ "group": "g", "instanceId": "b", "revision": "r2" })
        );
        for operation in [
            Operation::GroupClaim,
            Operation::GroupHeartbeat,
            Operation::GroupRelease,
        ] {
            assert_eq!(
                group_input(Some(json!({ "instanceId": "b" })), operation, "g"),
                json!({ "group": "g", "instanceId": "b" })
            );
        }
        assert_eq!(
            group_input(None, Operation::GroupInspect, "g"),
            json!({ "group": "g" })
        );
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        assert_eq!(
            refusal(
                Operation::KeyAcquire,
                "k",
                json!({ "instanceId": "a", "extra": 1 })
            ),
            "BatonError: body has an unknown field \"extra\"; accepted fields: instanceId"
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
            Command::Key { key, .. } => key.as_str().to_owned(),
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
    fn the_path_is_checked_before_the_body() {
        let error = Command::parse(
            Operation::KeyAcquire,
            Some(""),
            body(json!({ "instanceId": 5, "x": 1 })),
        )
        .unwrap_err();
        assert_eq!(error.message(), "BatonError: key must not be empty");
    }
}
