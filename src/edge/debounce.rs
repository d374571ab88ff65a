//! Debounce and deferred starts: requests and replies (contract §4, §7).
//!
//! A request is the §7 object: the Durable Object's `(key, options)` as one
//! object, `{ key, ...options }` (the shell builds it from the positional
//! arguments, refusing a `key` inside the options), the default
//! entrypoint's `debounce`, `startAt` and `debounce*` methods take it as is,
//! and the HTTP API reads it from the body with the key from the path.

use crate::debounce::{
    self as core, check_batch_bytes, check_batch_items, check_id_prefix, BatchFields, DebounceCall,
    DebounceFields, PendingView, StartAtCall,
};
use crate::error::{BatonError, Number};
use crate::ident::{newtype, Ident, InstanceId, WorkflowName};
use crate::limits::{
    DEBOUNCE_BATCH_BYTES_MAX, DEBOUNCE_BATCH_BYTES_MIN, DEBOUNCE_BATCH_ITEMS_MAX,
    DEBOUNCE_BATCH_ITEMS_MIN, DEBOUNCE_DELAY_MS_MAX, DEBOUNCE_DELAY_MS_MIN,
    DEBOUNCE_ID_PREFIX_CHARS_MAX,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix?, batch? })`.
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
    /// latest call's win, also when it sends none (with `batch`: every
    /// call's, in order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// The Workflow binding to create through, one of WORKFLOW_BINDINGS
    /// (default WORKFLOW_BINDING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowName>,
    /// The start's instance id is this plus a unique suffix (default `debounce-`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_prefix: Option<IdPrefix>,
    /// Trailing only: the burst's start is created with `{ batch: [...] }`,
    /// the params of every call of the burst that sent any, in the order
    /// received (contract §4a).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<DebounceBatch>,
}

/// `batch`: when a batch starts before its burst ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DebounceBatch {
    /// The call that brings the batch to this many params starts it at once
    /// (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<BatchMaxItems>,
    /// Most bytes of the instance's params, `{"batch":[...]}` as JSON
    /// (default 1048576): a call whose params would pass it starts the
    /// batch at once without them, and they begin the next burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<BatchMaxBytes>,
}

/// `batch.maxItems`: a whole number from 1 to 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMaxItems(u32);

/// `batch.maxBytes`: a whole number from 1 to 1048576.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMaxBytes(u32);

// The core's rules, with their reasons; the field is named by the decoder.
newtype!(
    integer BatchMaxItems,
    "How many params a batch holds at most: 1 to 1000.",
    range: DEBOUNCE_BATCH_ITEMS_MIN, DEBOUNCE_BATCH_ITEMS_MAX,
    new: |v| check_batch_items(v).map(BatchMaxItems).map_err(BatonError::reason),
    get: |n: BatchMaxItems| n.0
);
newtype!(
    integer BatchMaxBytes,
    "Most bytes of a batch's params, {\"batch\":[...]} as JSON: 1 to 1048576.",
    range: DEBOUNCE_BATCH_BYTES_MIN, DEBOUNCE_BATCH_BYTES_MAX,
    new: |v| check_batch_bytes(v).map(BatchMaxBytes).map_err(BatonError::reason),
    get: |n: BatchMaxBytes| n.0
);

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
            batch: self.batch.map(|b| BatchFields {
                max_items: b.max_items.map(|n| f64::from(n.0)),
                max_bytes: b.max_bytes.map(|n| f64::from(n.0)),
            }),
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
    /// How many params the batch holds, when the burst batches (contract §4a).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<u32>,
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
            items: view.items,
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
                "BatonError: input has an unknown field \"delay\"; accepted fields: key, delayMs, maxWaitMs, edge, params, workflow, idPrefix, batch",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": 5 }),
                "BatonError: batch must be an object",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxitems": 5 } }),
                "BatonError: batch has an unknown field \"maxitems\"; accepted fields: maxItems, maxBytes",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxItems": 0 } }),
                "BatonError: maxItems must be a whole number from 1 to 1000 (got 0)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxItems": 1001 } }),
                "BatonError: maxItems must be a whole number from 1 to 1000 (got 1001)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxItems": 2.5 } }),
                "BatonError: maxItems must be a whole number from 1 to 1000 (got 2.5)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxItems": -3 } }),
                "BatonError: maxItems must be a whole number from 1 to 1000 (got -3)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxItems": "5" } }),
                "BatonError: maxItems must be a number",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxBytes": 0 } }),
                "BatonError: maxBytes must be a whole number from 1 to 1048576 (got 0)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxBytes": 1048577 } }),
                "BatonError: maxBytes must be a whole number from 1 to 1048576 (got 1048577)",
            ),
            (
                json!({ "key": "k", "delayMs": 10, "batch": { "maxBytes": 1e20 } }),
                "BatonError: maxBytes must be a whole number from 1 to 1048576 (got 1e+20)",
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
    fn batch_is_trailing_only_and_params_must_fit_a_batch_of_one() {
        let core_of = |input: Value| {
            decode_value::<Debounce>(&input)
                .unwrap()
                .core("WORKFLOW")
                .map_err(|e| e.message())
        };
        for edge in ["leading", "both"] {
            assert_eq!(
                core_of(json!({ "key": "k", "delayMs": 10, "edge": edge, "batch": {} })),
                Err(format!(
                    "BatonError: batch is for edge \"trailing\" only (edge is \"{edge}\")"
                ))
            );
        }
        // {"batch":["xxxx"]} is 18 bytes: it fits 18, not 17.
        let fits = |max_bytes: u32| {
            core_of(json!({
                "key": "k", "delayMs": 10, "params": "xxxx", "batch": { "maxBytes": max_bytes }
            }))
        };
        assert!(fits(18).is_ok());
        assert_eq!(
            fits(17),
            Err(
                "BatonError: params is 6 bytes of JSON: a batch of it alone would be 18 bytes, \
                 past batch.maxBytes (17)"
                    .into()
            )
        );
        let call = core_of(json!({ "key": "k", "delayMs": 10, "batch": {} })).unwrap();
        assert_eq!(
            call.batch,
            Some(core::BatchBounds {
                max_items: 100,
                max_bytes: 1_048_576
            })
        );
        let call = core_of(json!({
            "key": "k", "delayMs": 10, "batch": { "maxItems": 7, "maxBytes": 300 }
        }))
        .unwrap();
        assert_eq!(
            call.batch,
            Some(core::BatchBounds {
                max_items: 7,
                max_bytes: 300
            })
        );
        assert_eq!(
            core_of(json!({ "key": "k", "delayMs": 10 })).unwrap().batch,
            None
        );
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
