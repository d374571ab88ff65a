//! Validated inputs of the Runs methods: each bound of contract §6 is
//! checked once, here, and a refusal names the field.

use crate::error::{BatonError, Number};
use crate::ident::InstanceId;
use crate::limits::{
    JS_SAFE_INTEGER_MAX, RUN_EVENTS_LIMIT_DEFAULT, RUN_EVENTS_LIMIT_MAX, RUN_EVENT_DATA_BYTES_MAX,
    RUN_EVENT_TYPE_CHARS_MAX, RUN_OUTCOME_BYTES_MAX, RUN_WAIT_MS_MAX,
};
use std::fmt;
use std::rc::Rc;

/// A serialized JSON value, at most a field's byte bound. The edge produced
/// it from a parsed value, so it is valid JSON; the core only carries it.
/// Shared, not copied: a result of up to 1 MiB is in the decision's state,
/// its reply and every awaiter's answer at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(Rc<str>);

impl JsonText {
    pub fn parse(field: &'static str, text: String, bytes_max: usize) -> Result<Self, BatonError> {
        check_bytes(field, &text, bytes_max)?;
        Ok(JsonText(text.into()))
    }

    /// A `result`: at most [`RUN_OUTCOME_BYTES_MAX`] serialized.
    pub fn result(text: String) -> Result<Self, BatonError> {
        Self::parse("result", text, RUN_OUTCOME_BYTES_MAX)
    }

    /// An event's `data`: at most [`RUN_EVENT_DATA_BYTES_MAX`] serialized.
    pub fn event_data(text: String) -> Result<Self, BatonError> {
        Self::parse("data", text, RUN_EVENT_DATA_BYTES_MAX)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Stored text, read back: it passed the bound when it was written.
    pub fn stored(text: String) -> Self {
        JsonText(text.into())
    }
}

fn check_bytes(field: &'static str, text: &str, bytes_max: usize) -> Result<(), BatonError> {
    if text.len() > bytes_max {
        return Err(BatonError::LimitExceeded {
            field,
            reason: format!(
                "must be at most {bytes_max} bytes serialized (got {})",
                text.len()
            ),
        });
    }
    Ok(())
}

/// How a run ended, as `complete` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `state: "complete"`, with the `result` if one was given.
    Complete { result: Option<JsonText> },
    /// `state: "failed"`, with the `error` message.
    Failed { error: String },
}

impl Outcome {
    /// `complete`'s `result` and `error`: at most one of the two; `error`
    /// records a failure, anything else a completion.
    pub fn parse(result: Option<JsonText>, error: Option<String>) -> Result<Self, BatonError> {
        match (result, error) {
            (Some(_), Some(_)) => Err(BatonError::Invalid {
                field: "error",
                reason: "must not be given together with result".into(),
            }),
            (None, Some(error)) => {
                check_bytes("error", &error, RUN_OUTCOME_BYTES_MAX)?;
                Ok(Outcome::Failed { error })
            }
            (result, None) => Ok(Outcome::Complete { result }),
        }
    }
}

/// A long-poll's `timeoutMs`: 0 to [`RUN_WAIT_MS_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaitMs(u64);

impl WaitMs {
    pub const ZERO: WaitMs = WaitMs(0);

    /// The value as a wait, or why it is not one (the field is the caller's to name).
    pub fn new(value: f64) -> Result<Self, String> {
        whole(value, 0, RUN_WAIT_MS_MAX).map(WaitMs)
    }

    pub fn parse(field: &'static str, value: f64) -> Result<Self, BatonError> {
        Self::new(value).map_err(|reason| BatonError::Invalid { field, reason })
    }

    pub fn ms(self) -> u64 {
        self.0
    }
}

/// A JS number that must be a whole number from `min` to `max`.
fn whole(value: f64, min: u64, max: u64) -> Result<u64, String> {
    if value.fract() != 0.0 || !(min as f64..=max as f64).contains(&value) {
        return Err(format!(
            "must be an integer from {min} to {max} (got {})",
            Number(value)
        ));
    }
    Ok(value as u64)
}

/// `events`' `limit`: 1 to [`RUN_EVENTS_LIMIT_MAX`], default
/// [`RUN_EVENTS_LIMIT_DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLimit(u32);

impl EventLimit {
    pub const DEFAULT: EventLimit = EventLimit(RUN_EVENTS_LIMIT_DEFAULT);

    pub fn new(value: f64) -> Result<Self, String> {
        whole(value, 1, u64::from(RUN_EVENTS_LIMIT_MAX)).map(|n| EventLimit(n as u32))
    }

    pub fn parse(field: &'static str, value: f64) -> Result<Self, BatonError> {
        Self::new(value).map_err(|reason| BatonError::Invalid { field, reason })
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// `events`' `after`: a sequence number, never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct After(u64);

impl After {
    pub fn new(value: f64) -> Result<Self, String> {
        if value < 0.0 {
            return Err(format!("must not be negative (got {})", Number(value)));
        }
        whole(value, 0, JS_SAFE_INTEGER_MAX).map(After)
    }

    pub fn parse(field: &'static str, value: f64) -> Result<Self, BatonError> {
        Self::new(value).map_err(|reason| BatonError::Invalid { field, reason })
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// An event's `type`: 1 to [`RUN_EVENT_TYPE_CHARS_MAX`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventType(String);

impl EventType {
    pub fn new(value: String) -> Result<Self, String> {
        let chars = value.chars().count();
        if !(1..=RUN_EVENT_TYPE_CHARS_MAX).contains(&chars) {
            return Err(format!(
                "must be 1 to {RUN_EVENT_TYPE_CHARS_MAX} characters (got {chars})"
            ));
        }
        Ok(EventType(value))
    }

    pub fn parse(field: &'static str, value: &str) -> Result<Self, BatonError> {
        Self::new(value.to_owned()).map_err(|reason| BatonError::Invalid { field, reason })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `claim(key, { instanceId, workflow? })`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    pub id: InstanceId,
    /// The Workflow binding the claimant belongs to (checked against the
    /// Worker's `WORKFLOW_BINDINGS` by the shell); `None` is the default.
    pub workflow: Option<String>,
}

/// `complete(key, { instanceId, result?, error? })`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompleteRequest {
    pub id: InstanceId,
    pub outcome: Outcome,
}

/// `append(key, { instanceId, type, data? })`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendRequest {
    pub id: InstanceId,
    pub kind: EventType,
    pub data: Option<JsonText>,
}

/// `events(key, { after?, timeoutMs?, limit? })`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsRequest {
    pub after: After,
    pub timeout: WaitMs,
    pub limit: EventLimit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_ms_bounds() {
        assert_eq!(WaitMs::parse("timeoutMs", 0.0).unwrap().ms(), 0);
        assert_eq!(WaitMs::parse("timeoutMs", 30_000.0).unwrap().ms(), 30_000);
        for bad in [-1.0, 30_001.0, 0.5, f64::NAN, f64::INFINITY, -0.5] {
            let err = WaitMs::parse("timeoutMs", bad).unwrap_err();
            assert_eq!(err.field(), "timeoutMs");
            assert!(err.message().starts_with("BatonError: timeoutMs "));
        }
    }

    #[test]
    fn limit_and_after_bounds() {
        assert!(EventLimit::parse("limit", 1.0).is_ok());
        assert!(EventLimit::parse("limit", 500.0).is_ok());
        for bad in [0.0, -1.0, 501.0, 1.5, f64::NAN] {
            assert_eq!(
                EventLimit::parse("limit", bad).unwrap_err().field(),
                "limit"
            );
        }
        assert_eq!(After::parse("after", 0.0).unwrap().get(), 0);
        let negative = After::parse("after", -1.0).unwrap_err();
        assert_eq!(
            negative.message(),
            "BatonError: after must not be negative (got -1)"
        );
        assert!(After::parse("after", 2.5).is_err());
    }

    #[test]
    fn event_type_counts_characters() {
        assert!(EventType::parse("type", &"é".repeat(64)).is_ok());
        assert_eq!(EventType::parse("type", "").unwrap_err().field(), "type");
        assert_eq!(
            EventType::parse("type", &"a".repeat(65))
                .unwrap_err()
                .field(),
            "type"
        );
    }

    #[test]
    fn sizes_are_bytes_serialized() {
        let mib = 1024 * 1024;
        assert!(JsonText::result("1".repeat(mib)).is_ok());
        assert_eq!(
            JsonText::result("1".repeat(mib + 1)).unwrap_err().field(),
            "result"
        );
        assert!(JsonText::event_data("1".repeat(64 * 1024)).is_ok());
        assert_eq!(
            JsonText::event_data("1".repeat(64 * 1024 + 1))
                .unwrap_err()
                .field(),
            "data"
        );
        assert_eq!(
            Outcome::parse(None, Some("x".repeat(mib + 1)))
                .unwrap_err()
                .field(),
            "error"
        );
    }

    #[test]
    fn at_most_one_of_result_and_error() {
        let result = JsonText::result("1".into()).unwrap();
        assert_eq!(
            Outcome::parse(Some(result.clone()), Some("e".into()))
                .unwrap_err()
                .field(),
            "error"
        );
        assert_eq!(
            Outcome::parse(Some(result.clone()), None).unwrap(),
            Outcome::Complete {
                result: Some(result)
            }
        );
        assert_eq!(
            Outcome::parse(None, None).unwrap(),
            Outcome::Complete { result: None }
        );
        assert_eq!(
            Outcome::parse(None, Some("boom".into())).unwrap(),
            Outcome::Failed {
                error: "boom".into()
            }
        );
    }
}
