//! Idempotent runs' requests and replies (contract §6, §7).
//!
//! A request is the §7 object: the Durable Object's `(key, options)` as one
//! object (`{ key, instanceId, ... }`; the shell builds it from the
//! positional arguments, refusing a `key` inside the options), the default
//! entrypoint's `run*` methods take it as is, and the HTTP API reads it from
//! the body with the key from the path.
//!
//! Replies are written as JSON text by [`wire`], around the
//! stored results and event data (never parsed on the way out); the reply
//! types here describe that text for the OpenAPI document and the
//! TypeScript declarations, and a test checks that the two agree.

pub mod wire;

use crate::error::BatonError;
use crate::ident::{newtype, Ident, InstanceId, WorkflowName};
use crate::limits::{
    JS_SAFE_INTEGER_MAX, RUN_EVENTS_LIMIT_MAX, RUN_EVENT_TYPE_CHARS_MAX, RUN_WAIT_MS_MAX,
};
use crate::runs::{
    After, AppendRequest, ClaimRequest, CompleteRequest, EventLimit, EventType, EventsRequest,
    JsonText, Outcome, WaitMs,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `claim(key, { instanceId, workflow? })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunClaim {
    pub key: Ident,
    pub instance_id: InstanceId,
    /// The Workflow binding the claimant belongs to (one of
    /// WORKFLOW_BINDINGS; default WORKFLOW_BINDING), through which the
    /// object checks whether it is dead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowName>,
}

/// `complete(key, { instanceId, result?, error? })`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunComplete {
    pub key: Ident,
    pub instance_id: InstanceId,
    /// Any JSON value, at most 1 MiB serialized: the run is "complete".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// At most 1 MiB: the run is "failed". At most one of `result` and `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `await(key, { timeoutMs })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunAwait {
    pub key: Ident,
    pub timeout_ms: WaitMs,
}

/// `append(key, { instanceId, type, data? })`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunAppend {
    pub key: Ident,
    pub instance_id: InstanceId,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Any JSON value, at most 64 KiB serialized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// `events(key, { after?, timeoutMs?, limit? })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunEvents {
    pub key: Ident,
    /// Events with `seq > after` (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<After>,
    /// How long to wait when there are none (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<WaitMs>,
    /// At most this many (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<EventLimit>,
}

impl RunClaim {
    pub fn core(&self) -> ClaimRequest {
        ClaimRequest {
            id: self.instance_id.clone(),
            workflow: self.workflow.as_ref().map(|w| w.as_str().to_owned()),
        }
    }
}

impl RunComplete {
    /// The request as the core decides it; a bound refused names its field.
    pub fn core(&self) -> Result<CompleteRequest, BatonError> {
        let result = self
            .result
            .as_ref()
            .map(|value| JsonText::result(value.to_string()))
            .transpose()?;
        Ok(CompleteRequest {
            id: self.instance_id.clone(),
            outcome: Outcome::parse(result, self.error.clone())?,
        })
    }
}

impl RunAppend {
    pub fn core(&self) -> Result<AppendRequest, BatonError> {
        Ok(AppendRequest {
            id: self.instance_id.clone(),
            kind: self.kind.clone(),
            data: self
                .data
                .as_ref()
                .map(|value| JsonText::event_data(value.to_string()))
                .transpose()?,
        })
    }
}

impl RunEvents {
    pub fn core(&self) -> EventsRequest {
        EventsRequest {
            after: self.after.unwrap_or_default(),
            timeout: self.timeout_ms.unwrap_or(WaitMs::ZERO),
            limit: self.limit.unwrap_or(EventLimit::DEFAULT),
        }
    }
}

// The bounded numbers deserialize from a JS number and check themselves,
// and serialize as the number (the default entrypoint passes a request on
// to the object as its options).
newtype!(
    integer WaitMs,
    "How long a long-poll may wait, in milliseconds.",
    range: 0, RUN_WAIT_MS_MAX,
    new: WaitMs::new,
    get: WaitMs::ms
);
newtype!(
    integer EventLimit,
    "Most events one call returns (default 100).",
    range: 1, RUN_EVENTS_LIMIT_MAX,
    new: EventLimit::new,
    get: EventLimit::get
);
newtype!(
    integer After,
    "A sequence number: events after it are read.",
    range: 0, JS_SAFE_INTEGER_MAX,
    new: After::new,
    get: After::get
);
newtype!(
    string EventType,
    "An event's type: 1 to 64 characters.",
    chars: 1, RUN_EVENT_TYPE_CHARS_MAX,
    pattern: None,
    new: EventType::new
);

// --- Replies (described here, written by `wire`) ---

/// A run's state: no claimant, claimed without an outcome, or finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    None,
    Running,
    Complete,
    Failed,
}

/// `await`'s reply.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub state: RunState,
    /// The claimant, unless `state` is "none".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<InstanceId>,
    /// With "complete": the result, if one was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// With "failed": the error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `claim`'s reply: `{ claimed: true }` for the claimant, otherwise the
/// claimant's id and the run's state (never "none").
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunClaimReply {
    pub claimed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<InstanceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<RunState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `complete`'s reply: whether this call recorded the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunCompleteReply {
    pub recorded: bool,
}

/// `append`'s reply: the event's place in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunAppendReply {
    pub seq: u64,
}

/// One event of a run's log.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunEvent {
    /// Counts from 1 per run key, with no gaps.
    pub seq: u64,
    /// When it was appended, in ms since the epoch.
    pub at: u64,
    #[serde(rename = "type")]
    pub kind: String,
    /// As appended; `null` when none was given.
    pub data: Value,
}

/// `events`' reply.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEventsReply {
    pub events: Vec<RunEvent>,
    pub latest_seq: u64,
    /// The oldest event kept (`latestSeq + 1` when none is).
    pub first_seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::decode_value;
    use crate::runs::{ClaimReply, Event, EventsReply};
    use serde_json::json;

    fn id(s: &str) -> InstanceId {
        InstanceId::parse("instanceId", s).unwrap()
    }

    fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(input: Value) -> String {
        decode_value::<T>(&input).unwrap_err().message()
    }

    #[test]
    fn requests_decode_and_refuse_by_field() {
        let claim: RunClaim = decode_value(&json!({ "key": "k", "instanceId": "a" })).unwrap();
        assert_eq!(claim.core().id, id("a"));
        let events: RunEvents = decode_value(&json!({ "key": "k" })).unwrap();
        assert_eq!(events.core().limit, EventLimit::DEFAULT);
        assert_eq!(events.core().timeout, WaitMs::ZERO);
        for (input, field) in [
            (json!({ "key": "k", "timeoutMs": 30_001 }), "timeoutMs"),
            (json!({ "key": "k", "timeoutMs": -1 }), "timeoutMs"),
            (json!({ "key": "k" }), "timeoutMs"),
        ] {
            assert!(refusal::<RunAwait>(input).starts_with(&format!("BatonError: {field} ")));
        }
        for (input, field) in [
            (json!({ "key": "k", "limit": 0 }), "limit"),
            (json!({ "key": "k", "limit": 501 }), "limit"),
            (json!({ "key": "k", "after": -1 }), "after"),
            (json!({ "key": "k", "after": 1.5 }), "after"),
            (json!({ "key": "k", "since": 1 }), "since"),
        ] {
            let message = refusal::<RunEvents>(input);
            assert!(message.starts_with("BatonError: "), "{message}");
            assert!(message.contains(field), "{message} names {field}");
        }
        for (input, field) in [
            (json!({ "key": "k", "instanceId": "a", "type": "" }), "type"),
            (
                json!({ "key": "k", "instanceId": "a", "type": "t".repeat(65) }),
                "type",
            ),
            (json!({ "key": "k", "instanceId": "a" }), "type"),
        ] {
            assert!(refusal::<RunAppend>(input).starts_with(&format!("BatonError: {field} ")));
        }
        let big =
            json!({ "key": "k", "instanceId": "a", "type": "t", "data": "d".repeat(64 * 1024) });
        let append: RunAppend = decode_value(&big).unwrap();
        assert_eq!(append.core().unwrap_err().field(), "data");
        let both = json!({ "key": "k", "instanceId": "a", "result": 1, "error": "e" });
        let complete: RunComplete = decode_value(&both).unwrap();
        assert_eq!(complete.core().unwrap_err().field(), "error");
        let huge = json!({ "key": "k", "instanceId": "a", "result": "r".repeat(1024 * 1024) });
        let complete: RunComplete = decode_value(&huge).unwrap();
        assert_eq!(complete.core().unwrap_err().field(), "result");
    }

    fn text(value: &str) -> Value {
        serde_json::from_str(value).unwrap()
    }

    /// What `wire` writes is what the reply types describe.
    #[test]
    fn wire_text_matches_the_reply_types() {
        let result = JsonText::result(r#"{"n":1}"#.into()).unwrap();
        let view = crate::runs::RunView {
            id: id("a"),
            outcome: Some(Outcome::Complete {
                result: Some(result),
            }),
        };
        assert_eq!(
            text(&wire::claim_reply(&ClaimReply::Taken(view.clone()))),
            serde_json::to_value(RunClaimReply {
                claimed: false,
                instance_id: Some(id("a")),
                state: Some(RunState::Complete),
                result: Some(json!({ "n": 1 })),
                error: None,
            })
            .unwrap()
        );
        assert_eq!(
            text(&wire::claim_reply(&ClaimReply::Claimed)),
            serde_json::to_value(RunClaimReply {
                claimed: true,
                instance_id: None,
                state: None,
                result: None,
                error: None,
            })
            .unwrap()
        );
        let failed = crate::runs::RunView {
            id: id("a"),
            outcome: Some(Outcome::Failed { error: "e".into() }),
        };
        assert_eq!(
            text(&wire::await_reply(Some(&failed))),
            serde_json::to_value(RunView {
                state: RunState::Failed,
                instance_id: Some(id("a")),
                result: None,
                error: Some("e".into()),
            })
            .unwrap()
        );
        assert_eq!(
            text(&wire::await_reply(None)),
            serde_json::to_value(RunView {
                state: RunState::None,
                instance_id: None,
                result: None,
                error: None,
            })
            .unwrap()
        );
        let reply = EventsReply {
            events: vec![Event {
                seq: 3,
                at_ms: 9,
                kind: EventType::parse("type", "t").unwrap(),
                data: None,
            }],
            latest_seq: 3,
            first_seq: 1,
        };
        assert_eq!(
            text(&wire::events_reply(&reply)),
            serde_json::to_value(RunEventsReply {
                events: vec![RunEvent {
                    seq: 3,
                    at: 9,
                    kind: "t".into(),
                    data: Value::Null,
                }],
                latest_seq: 3,
                first_seq: 1,
            })
            .unwrap()
        );
        assert_eq!(
            text(&wire::complete_reply(true)),
            serde_json::to_value(RunCompleteReply { recorded: true }).unwrap()
        );
        assert_eq!(
            text(&wire::append_reply(4)),
            serde_json::to_value(RunAppendReply { seq: 4 }).unwrap()
        );
    }
}
