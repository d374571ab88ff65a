//! The calls a key takes, checked: every bad-input rule of contract §4 that
//! does not need the Worker's configuration lives here, so it is tested
//! natively. (Whether `workflow` names one of `WORKFLOW_BINDINGS` is the
//! shell's to check; JSON-ness of `params` and unknown fields are the edge's.)

use super::state::{batch_bytes, BatchBounds, Edge};
use crate::error::{BatonError, Number};
use crate::limits::{
    DEBOUNCE_BATCH_BYTES_MAX, DEBOUNCE_BATCH_BYTES_MIN, DEBOUNCE_BATCH_ITEMS_DEFAULT,
    DEBOUNCE_BATCH_ITEMS_MAX, DEBOUNCE_BATCH_ITEMS_MIN, DEBOUNCE_DELAY_MS_MAX,
    DEBOUNCE_DELAY_MS_MIN, DEBOUNCE_ID_PREFIX_CHARS_MAX, DEBOUNCE_ID_SUFFIX_CHARS_MAX,
    DEBOUNCE_PARAMS_BYTES_MAX, START_AT_AHEAD_MS_MAX,
};

/// The id prefix of a burst's start when the call names none.
pub const ID_PREFIX_DEFAULT: &str = "debounce-";
/// The id prefix of a `startAt` start when the call names no id.
pub const START_AT_PREFIX: &str = "start-";

/// A `debounce` call, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebounceCall {
    pub delay_ms: u64,
    /// Defaults to [`DEBOUNCE_DELAY_MS_MAX`]: every burst ends within 7 days.
    pub max_wait_ms: u64,
    pub edge: Edge,
    /// JSON text, at most [`DEBOUNCE_PARAMS_BYTES_MAX`] bytes.
    pub params: Option<String>,
    pub workflow: String,
    pub id_prefix: String,
    /// `batch` (contract §4a), its defaults filled in: the start this call
    /// makes pending gathers every call's params.
    pub batch: Option<BatchBounds>,
}

/// A `startAt` call, checked (against the time it is made).
#[derive(Debug, Clone, PartialEq)]
pub struct StartAtCall {
    /// As the caller gave it; answered unchanged.
    pub at: f64,
    pub params: Option<String>,
    pub workflow: String,
    pub instance_id: Option<crate::ident::InstanceId>,
}

impl StartAtCall {
    /// When to fire, in whole ms since the epoch (a fraction rounds up, so
    /// it never fires before `at`; a time before the epoch is "now").
    pub fn at_ms(&self) -> u64 {
        if self.at <= 0.0 {
            0
        } else {
            self.at.ceil() as u64
        }
    }
}

/// The unchecked fields of a `debounce` call, as the edge decoded them.
#[derive(Debug, Clone, Default)]
pub struct DebounceFields {
    pub delay_ms: u64,
    pub max_wait_ms: Option<u64>,
    pub edge: Option<Edge>,
    pub params: Option<String>,
    pub workflow: String,
    pub id_prefix: Option<String>,
    pub batch: Option<BatchFields>,
}

/// The unchecked fields of a call's `batch`, as JSON numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchFields {
    pub max_items: Option<f64>,
    pub max_bytes: Option<f64>,
}

impl DebounceCall {
    /// Checks the fields in the contract's order, naming the first bad one.
    pub fn new(fields: DebounceFields) -> Result<DebounceCall, BatonError> {
        check_delay("delayMs", fields.delay_ms)?;
        if let Some(max_wait_ms) = fields.max_wait_ms {
            check_delay("maxWaitMs", max_wait_ms)?;
            if max_wait_ms < fields.delay_ms {
                return Err(BatonError::Invalid {
                    field: "maxWaitMs",
                    reason: format!(
                        "must not be below delayMs ({max_wait_ms} < {})",
                        fields.delay_ms
                    ),
                });
            }
        }
        check_params(fields.params.as_deref())?;
        let id_prefix = match fields.id_prefix {
            Some(prefix) => check_id_prefix(prefix)?,
            None => ID_PREFIX_DEFAULT.to_owned(),
        };
        let edge = fields.edge.unwrap_or(Edge::Trailing);
        let batch = match fields.batch {
            Some(batch) => Some(check_batch(edge, batch, fields.params.as_deref())?),
            None => None,
        };
        Ok(DebounceCall {
            delay_ms: fields.delay_ms,
            max_wait_ms: fields.max_wait_ms.unwrap_or(DEBOUNCE_DELAY_MS_MAX),
            edge,
            params: fields.params,
            workflow: fields.workflow,
            id_prefix,
            batch,
        })
    }
}

impl StartAtCall {
    /// Checks the call against the time it is made: `at` may be in the past
    /// (it starts at once) but at most [`START_AT_AHEAD_MS_MAX`] ahead.
    pub fn new(
        now_ms: u64,
        at: f64,
        params: Option<String>,
        workflow: String,
        instance_id: Option<crate::ident::InstanceId>,
    ) -> Result<StartAtCall, BatonError> {
        if !at.is_finite() {
            return Err(BatonError::WrongType {
                field: "at",
                expected: "a finite number of ms since the epoch",
            });
        }
        let latest = now_ms.saturating_add(START_AT_AHEAD_MS_MAX);
        if at > latest as f64 {
            return Err(BatonError::Invalid {
                field: "at",
                reason: format!(
                    "must be at most 365 days ahead ({} ms from now)",
                    START_AT_AHEAD_MS_MAX
                ),
            });
        }
        check_params(params.as_deref())?;
        Ok(StartAtCall {
            at,
            params,
            workflow,
            instance_id,
        })
    }
}

/// `batch` is for trailing bursts only (a leading start is made before
/// there is anything to gather), its bounds within §4a's, and the call's
/// own params must fit a batch of one under its `maxBytes`: params that fit
/// no batch are refused rather than started past the caller's bound.
fn check_batch(
    edge: Edge,
    batch: BatchFields,
    params: Option<&str>,
) -> Result<BatchBounds, BatonError> {
    if edge != Edge::Trailing {
        return Err(BatonError::Invalid {
            field: "batch",
            reason: format!(
                "is for edge \"trailing\" only (edge is \"{}\")",
                edge.as_str()
            ),
        });
    }
    let bounds = BatchBounds {
        max_items: match batch.max_items {
            Some(n) => check_batch_items(n)?,
            None => DEBOUNCE_BATCH_ITEMS_DEFAULT,
        },
        max_bytes: match batch.max_bytes {
            Some(n) => check_batch_bytes(n)?,
            None => DEBOUNCE_BATCH_BYTES_MAX,
        },
    };
    if let Some(text) = params {
        let alone = batch_bytes(&[text]);
        if alone > u64::from(bounds.max_bytes) {
            return Err(BatonError::LimitExceeded {
                field: "params",
                reason: format!(
                    "is {} bytes of JSON: a batch of it alone would be {alone} bytes, \
                     past batch.maxBytes ({})",
                    text.len(),
                    bounds.max_bytes
                ),
            });
        }
    }
    Ok(bounds)
}

/// `batch.maxItems`: a whole number from [`DEBOUNCE_BATCH_ITEMS_MIN`] to
/// [`DEBOUNCE_BATCH_ITEMS_MAX`].
pub fn check_batch_items(value: f64) -> Result<u32, BatonError> {
    whole(
        "maxItems",
        value,
        DEBOUNCE_BATCH_ITEMS_MIN,
        DEBOUNCE_BATCH_ITEMS_MAX,
    )
}

/// `batch.maxBytes`: a whole number from [`DEBOUNCE_BATCH_BYTES_MIN`] to
/// [`DEBOUNCE_BATCH_BYTES_MAX`].
pub fn check_batch_bytes(value: f64) -> Result<u32, BatonError> {
    whole(
        "maxBytes",
        value,
        DEBOUNCE_BATCH_BYTES_MIN,
        DEBOUNCE_BATCH_BYTES_MAX,
    )
}

fn whole(field: &'static str, value: f64, min: u32, max: u32) -> Result<u32, BatonError> {
    if value.fract() == 0.0 && (f64::from(min)..=f64::from(max)).contains(&value) {
        return Ok(value as u32);
    }
    Err(BatonError::Invalid {
        field,
        reason: format!(
            "must be a whole number from {min} to {max} (got {})",
            Number(value)
        ),
    })
}

fn check_delay(field: &'static str, ms: u64) -> Result<(), BatonError> {
    if !(DEBOUNCE_DELAY_MS_MIN..=DEBOUNCE_DELAY_MS_MAX).contains(&ms) {
        return Err(BatonError::Invalid {
            field,
            reason: format!(
                "must be from {DEBOUNCE_DELAY_MS_MIN} to {DEBOUNCE_DELAY_MS_MAX} ms (7 days) (got {ms})"
            ),
        });
    }
    Ok(())
}

fn check_params(params: Option<&str>) -> Result<(), BatonError> {
    match params {
        Some(text) if text.len() > DEBOUNCE_PARAMS_BYTES_MAX => Err(BatonError::LimitExceeded {
            field: "params",
            reason: format!(
                "must be at most {DEBOUNCE_PARAMS_BYTES_MAX} bytes of JSON (got {})",
                text.len()
            ),
        }),
        _ => Ok(()),
    }
}

/// An `idPrefix` is 1 to [`DEBOUNCE_ID_PREFIX_CHARS_MAX`] letters, digits,
/// `-` and `_`, not starting with `-`: with any suffix it makes a valid
/// instance id.
pub fn check_id_prefix(prefix: String) -> Result<String, BatonError> {
    let invalid = |reason: String| BatonError::Invalid {
        field: "idPrefix",
        reason,
    };
    if prefix.is_empty() {
        return Err(invalid("must not be empty".into()));
    }
    if prefix.len() > DEBOUNCE_ID_PREFIX_CHARS_MAX {
        return Err(invalid(format!(
            "must be at most {DEBOUNCE_ID_PREFIX_CHARS_MAX} characters (got {})",
            prefix.chars().count()
        )));
    }
    if prefix.starts_with('-') {
        return Err(invalid(
            "must not start with '-' (an instance id may not)".into(),
        ));
    }
    if let Some(bad) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(invalid(format!(
            "may hold only letters, digits, '-' and '_' (found {bad:?})"
        )));
    }
    Ok(prefix)
}

/// The unique part of a new instance id, drawn by the shell (the core draws
/// no randomness): 1 to [`DEBOUNCE_ID_SUFFIX_CHARS_MAX`] letters, digits,
/// `-` and `_`. A UUID is exactly 36.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSuffix(String);

impl IdSuffix {
    /// Panics on a suffix that is not one: the shell made it, so a bad one
    /// is a bug, not a caller's mistake.
    pub fn new(suffix: String) -> IdSuffix {
        assert!(
            !suffix.is_empty()
                && suffix.len() <= DEBOUNCE_ID_SUFFIX_CHARS_MAX
                && suffix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "bad id suffix {suffix:?}"
        );
        IdSuffix(suffix)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(delay_ms: u64) -> DebounceFields {
        DebounceFields {
            delay_ms,
            workflow: "WORKFLOW".into(),
            ..DebounceFields::default()
        }
    }

    #[test]
    fn delays_are_bounded_and_ordered() {
        assert!(DebounceCall::new(fields(1)).is_ok());
        assert!(DebounceCall::new(fields(DEBOUNCE_DELAY_MS_MAX)).is_ok());
        assert_eq!(DebounceCall::new(fields(0)).unwrap_err().field(), "delayMs");
        assert_eq!(
            DebounceCall::new(fields(DEBOUNCE_DELAY_MS_MAX + 1))
                .unwrap_err()
                .field(),
            "delayMs"
        );
        let mut f = fields(10);
        f.max_wait_ms = Some(9);
        let err = DebounceCall::new(f).unwrap_err();
        assert_eq!(err.field(), "maxWaitMs");
        assert!(err.message().contains("below delayMs"), "{err}");
        let mut f = fields(10);
        f.max_wait_ms = Some(DEBOUNCE_DELAY_MS_MAX + 1);
        assert_eq!(DebounceCall::new(f).unwrap_err().field(), "maxWaitMs");
        let call = DebounceCall::new(fields(10)).unwrap();
        assert_eq!(call.max_wait_ms, DEBOUNCE_DELAY_MS_MAX);
        assert_eq!(call.edge, Edge::Trailing);
        assert_eq!(call.id_prefix, ID_PREFIX_DEFAULT);
    }

    #[test]
    fn params_are_bounded() {
        let mut f = fields(10);
        f.params = Some(format!("\"{}\"", "x".repeat(DEBOUNCE_PARAMS_BYTES_MAX - 2)));
        assert!(DebounceCall::new(f.clone()).is_ok());
        f.params = Some(format!("\"{}\"", "x".repeat(DEBOUNCE_PARAMS_BYTES_MAX - 1)));
        assert_eq!(DebounceCall::new(f).unwrap_err().field(), "params");
    }

    #[test]
    fn id_prefixes_make_valid_ids() {
        for good in ["a", "run_", "x-1", &"p".repeat(64)] {
            assert!(check_id_prefix(good.to_string()).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a b", "é", "a/b", &"p".repeat(65)] {
            let err = check_id_prefix(bad.to_string()).unwrap_err();
            assert_eq!(err.field(), "idPrefix", "{bad:?}");
        }
    }

    #[test]
    fn start_at_is_at_most_a_year_ahead() {
        let now = 1_000_000;
        let ok = |at: f64| StartAtCall::new(now, at, None, "W".into(), None);
        assert!(ok(0.0).is_ok());
        assert!(ok(-5.0).is_ok());
        assert!(ok((now + START_AT_AHEAD_MS_MAX) as f64).is_ok());
        assert_eq!(
            ok((now + START_AT_AHEAD_MS_MAX + 1) as f64)
                .unwrap_err()
                .field(),
            "at"
        );
        assert_eq!(ok(f64::NAN).unwrap_err().field(), "at");
        assert_eq!(ok(f64::INFINITY).unwrap_err().field(), "at");
        assert_eq!(ok(10.5).unwrap().at_ms(), 11);
        assert_eq!(ok(-5.0).unwrap().at_ms(), 0);
    }

    #[test]
    #[should_panic(expected = "bad id suffix")]
    fn a_bad_suffix_is_a_bug() {
        IdSuffix::new("a/b".into());
    }
}
