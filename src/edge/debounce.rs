//! Debounce and deferred starts: requests and replies (contract §4, §7).
//!
//! A request is the §7 object: the Durable Object's `(key, options)` as one
//! object, `{ key, ...options }` (the shell builds it from the positional
//! arguments, refusing a `key` inside the options), the default
//! entrypoint's `debounce`, `startAt` and `debounce*` methods take it as is,
//! and the HTTP API reads it from the body with the key from the path.

use crate::debounce::{
    self as core, check_id_prefix, DebounceCall, DebounceFields, PendingView, StartAtCall,
};
use crate::error::{BatonError, Number};
use crate::ident::{newtype, Ident, InstanceId, WorkflowName};
use crate::limits::{DEBOUNCE_DELAY_MS_MAX, DEBOUNCE_DELAY_MS_MIN, DEBOUNCE_ID_PREFIX_CHARS_MAX};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix? })`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Debounce {
    pub key: Ident,
    /// A burst ends after this much silence.
    pub delay_ms: DelayMs,
    /// ...or this long after its first call (default: 7 days), whichever is first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<DelayMs>,
    /// When the burst's start is made (default `trailing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<DebounceEdge>,
    /// The instance's params: any JSON value, at most 1 MiB serialized. The
    /// latest call's win, also when it sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// The Workflow binding to create through, one of WORKFLOW_BINDINGS
    /// (default WORKFLOW_BINDING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowName>,
    /// The start's instance id is this plus a unique suffix (default `debounce-`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<IdPrefix>,
}

/// `startAt(key, { at, params?, workflow?, instanceId? })`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartAt {
    pub key: Ident,
    /// When to create the instance, in ms since the epoch; at most 365 days
    /// ahead; a past time starts it at once.
    pub at: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowName>,
    /// The id to create it under (default: the pending start's, or a new
    /// `start-` id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<InstanceId>,
}

/// `flush(key)`, `cancel(key)` and `inspect(key)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DebounceKey {
    pub key: Ident,
}

/// `delayMs` and `maxWaitMs`: a whole number of ms from 1 to 604800000 (7 days).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayMs(u64);

impl DelayMs {
    pub fn new(value: f64) -> Result<DelayMs, String> {
        let (min, max) = (DEBOUNCE_DELAY_MS_MIN, DEBOUNCE_DELAY_MS_MAX);
        if value.fract() != 0.0 || !(min as f64..=max as f64).contains(&value) {
            return Err(format!(
                "must be a whole number of ms from {min} to {max} (7 days) (got {})",
                Number(value)
            ));
        }
        Ok(DelayMs(value as u64))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

newtype!(
    integer DelayMs,
    "Milliseconds, 1 to 604800000 (7 days).",
    range: DEBOUNCE_DELAY_MS_MIN, DEBOUNCE_DELAY_MS_MAX,
    new: DelayMs::new,
    get: DelayMs::get
);

/// `idPrefix`: 1 to 64 letters, digits, `-` and `_`, not starting with `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdPrefix(String);

impl IdPrefix {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

// The core's rule, with its reason; the field is named by the decoder.
newtype!(
    string IdPrefix,
    "The start of a debounce instance id; a unique suffix of at most 36 characters follows.",
    chars: 1, DEBOUNCE_ID_PREFIX_CHARS_MAX,
    pattern: Some("^[A-Za-z0-9_][A-Za-z0-9_-]*$"),
    new: |text| check_id_prefix(text).map(IdPrefix).map_err(BatonError::reason)
);

/// `edge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DebounceEdge {
    Trailing,
    Leading,
    Both,
}

impl From<DebounceEdge> for core::Edge {
    fn from(edge: DebounceEdge) -> core::Edge {
        match edge {
            DebounceEdge::Trailing => core::Edge::Trailing,
            DebounceEdge::Leading => core::Edge::Leading,
            DebounceEdge::Both => core::Edge::Both,
        }
    }
}

/// A JSON value as the text the core keeps (compact, as JSON.stringify writes it).
fn params_text(params: &Option<Value>) -> Option<String> {
    params.as_ref().map(Value::to_string)
}

impl Debounce {
    /// The call as the core decides it, `workflow` resolved by the shell.
    pub fn core(&self, workflow: &str) -> Result<DebounceCall, BatonError> {
        DebounceCall::new(DebounceFields {
            delay_ms: self.delay_ms.get(),
            max_wait_ms: self.max_wait_ms.map(DelayMs::get),
            edge: self.edge.map(Into::into),
            params: params_text(&self.params),
            workflow: workflow.to_owned(),
            id_prefix: self.id_prefix.as_ref().map(|p| p.0.clone()),
        })
    }
}

impl StartAt {
    /// The call as the core decides it at `now_ms`.
    pub fn core(&self, now_ms: u64, workflow: &str) -> Result<StartAtCall, BatonError> {
        StartAtCall::new(
            now_ms,
            self.at,
            params_text(&self.params),
            workflow.to_owned(),
            self.instance_id.clone(),
        )
    }
}

/// `debounce`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebounceReply {
    pub outcome: DebounceOutcome,
    /// The id of the burst's start: the leading one (`started`,
    /// `suppressed`) or the trailing one (`scheduled`).
    pub instance_id: InstanceId,
    /// When that start is made, while it is pending (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fire_at: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DebounceOutcome {
    Started,
    Scheduled,
    Suppressed,
}

impl From<core::DebounceReply> for DebounceReply {
    fn from(reply: core::DebounceReply) -> DebounceReply {
        DebounceReply {
            outcome: match reply.outcome {
                core::Outcome::Started => DebounceOutcome::Started,
                core::Outcome::Scheduled => DebounceOutcome::Scheduled,
                core::Outcome::Suppressed => DebounceOutcome::Suppressed,
            },
            instance_id: reply.instance_id,
            fire_at: reply.fire_at_ms,
        }
    }
}

/// `startAt`'s reply: `at` as the caller gave it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartAtReply {
    pub instance_id: InstanceId,
    pub at: f64,
}

/// `flush`'s reply: the start made now, if one was pending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FlushReply {
    pub started: Option<InstanceId>,
}

/// `cancel`'s reply: the dropped start's id, which will never start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CancelReply {
    pub cancelled: Option<InstanceId>,
}

/// `inspect`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DebounceInspection")]
pub struct Inspection {
    pub key: Ident,
    pub pending: Option<PendingStart>,
    /// The most recent confirmed starts, newest first, at most 20.
    pub started: Vec<StartedView>,
    /// Starts that fired but whose create is not confirmed yet: in flight,
    /// or failed and waiting for a retry (an addition to contract §4's
    /// shape, so a failing Workflow binding is visible).
    pub retrying: Vec<RetryingView>,
}

/// The pending start, as `inspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingStart {
    pub instance_id: InstanceId,
    /// `trailing`, `leading` or `both` (the burst's latest call's), or `at`.
    pub edge: String,
    pub workflow: String,
    pub first_at: u64,
    pub last_at: u64,
    pub fire_at: u64,
    pub calls: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartedView {
    pub instance_id: InstanceId,
    /// When its create was confirmed, ms since the epoch.
    pub at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryingView {
    pub instance_id: InstanceId,
    pub workflow: String,
    pub fired_at: u64,
    /// Creates that failed so far.
    pub failures: u32,
    pub next_try_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Inspection {
    pub fn of(key: Ident, state: &core::KeyState) -> Inspection {
        Inspection {
            key,
            pending: core::pending_view(state).map(PendingStart::from),
            started: state
                .started
                .iter()
                .map(|s| StartedView {
                    instance_id: s.id.clone(),
                    at: s.at_ms,
                })
                .collect(),
            retrying: state
                .creating
                .iter()
                .map(|c| RetryingView {
                    instance_id: c.id.clone(),
                    workflow: c.workflow.clone(),
                    fired_at: c.fired_at_ms,
                    failures: c.failures,
                    next_try_at: c.next_try_at_ms,
                    last_error: c.last_error.clone(),
                })
                .collect(),
        }
    }
}

impl From<PendingView> for PendingStart {
    fn from(view: PendingView) -> PendingStart {
        PendingStart {
            instance_id: view.instance_id,
            edge: view.edge.to_owned(),
            workflow: view.workflow,
            first_at: view.first_at_ms,
            last_at: view.last_at_ms,
            fire_at: view.fire_at_ms,
            calls: view.calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::decode_value;
    use serde_json::json;

    fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(input: Value) -> String {
        decode_value::<T>(&input).unwrap_err().message()
    }

    #[test]
    fn debounce_requests_name_their_bad_field() {
        let cases = [
            (json!({ "key": "k" }), "BatonError: delayMs is required"),
            (
                json!({ "key": "k", "delayMs": 0 }),
                "BatonError: delayMs must be a whole number of ms from 1 to 604800000 (7 days) (got 0)",
            ),
            (
                json!({ "key": "k", "delayMs": 604800001 }),
                "BatonError: delayMs must be a whole number of ms from 1 to 604800000 (7 days) (got 604800001)",
            ),
            (
                json!({ "key": "k", "delayMs": 1.5 }),
                "BatonError: delayMs must be a whole number of ms from 1 to 604800000 (7 days) (got 1.5)",
            ),
            (
                json!({ "key": "k", "delayMs": "10" }),
                "BatonError: delayMs must be a number",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "maxWaitMs": 0 }),
                "BatonError: maxWaitMs must be a whole number of ms from 1 to 604800000 (7 days) (got 0)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "edge": "middle" }),
                "BatonError: edge must be one of \"trailing\", \"leading\", \"both\"",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "idPrefix": "-x" }),
                "BatonError: idPrefix must not start with '-' (an instance id may not)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "workflow": "no-dashes" }),
                "BatonError: workflow must be a binding name: letters, digits and '_', not starting with a digit",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "delay": 5 }),
                "BatonError: input has an unknown field \"delay\"; accepted fields: key, delayMs, maxWaitMs, edge, params, workflow, idPrefix",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(refusal::<Debounce>(input.clone()), expected, "{input}");
        }
        let ok: Debounce = decode_value(&json!({
            "key": "k", "delayMs": 10, "maxWaitMs": 20, "edge": "both",
            "params": { "a": [1, "x"] }, "idPrefix": "run_"
        }))
        .unwrap();
        let call = ok.core("WORKFLOW").unwrap();
        assert_eq!(call.params.as_deref(), Some("{\"a\":[1,\"x\"]}"));
        assert_eq!(call.edge, core::Edge::Both);
        let below: Debounce =
            decode_value(&json!({ "key": "k", "delayMs": 10, "maxWaitMs": 5 })).unwrap();
        assert_eq!(below.core("WORKFLOW").unwrap_err().field(), "maxWaitMs");
        let big: Debounce = decode_value(&json!({
            "key": "k", "delayMs": 10, "params": "x".repeat(1_048_576)
        }))
        .unwrap();
        assert_eq!(big.core("WORKFLOW").unwrap_err().field(), "params");
    }

    #[test]
    fn start_at_requests_name_their_bad_field() {
        assert_eq!(
            refusal::<StartAt>(json!({ "key": "k", "at": "soon" })),
            "BatonError: at must be a number"
        );
        assert_eq!(
            refusal::<StartAt>(json!({ "key": "k" })),
            "BatonError: at is required"
        );
        let far: StartAt = decode_value(&json!({ "key": "k", "at": 1e15 })).unwrap();
        assert_eq!(far.core(0, "WORKFLOW").unwrap_err().field(), "at");
        assert_eq!(
            refusal::<StartAt>(json!({ "key": "k", "at": 1, "instanceId": "a b" })),
            "BatonError: instanceId may hold only letters, digits, '-' and '_' (found ' ')"
        );
    }
}
