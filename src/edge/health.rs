//! A key's health as callers see it (contract §10a): its `state`, the
//! list's `state` filter, `inspect`'s `waits` and each holder's `checked`.
//! The rules are `crate::health`'s; this module only names them on the wire
//! (the state is the core's `KeyState`, written by its name).

use crate::health::{KeyState, STATES};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// §10a's state on the wire is the core's [`KeyState`] itself, by its
/// name (`"at_capacity"`...): one type, the names stated once
/// (`KeyState::name`).
impl Serialize for KeyState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A state as a caller names it (the list's `state` filter): one of the
/// names, or refused with all of them.
impl<'de> Deserialize<'de> for KeyState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        KeyState::parse("state", &text).map_err(|error| serde::de::Error::custom(error.reason()))
    }
}

impl JsonSchema for KeyState {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KeyState".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": STATES.map(KeyState::name),
            "description": STATE_DESCRIPTION,
        })
    }
}

/// The schema's description of a state: the rule, in the order it is tried.
const STATE_DESCRIPTION: &str = "§10a: the first that applies, in this order: `paused` \
    (an operator paused it); `stalled` (waiters wait, and for longer than `HOLDER_CHECK_MS` \
    a holder has not taken up a slot handed to it, or its status checks fail); `backlogged` \
    (waiters wait behind the holders); `at_capacity` (every slot held, nobody waits); \
    `active` (some slots held, nobody waits); `idle`.";

/// `inspect`'s `waits` (§10a): how long the key's recent holders waited
/// for it and how long its waiters have waited so far, as percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Waits {
    /// The median wait in ms (0 when `n` is 0).
    pub p50_ms: u64,
    /// The 95th percentile wait in ms (0 when `n` is 0).
    pub p95_ms: u64,
    /// How many waits the figures are over: the recent holds' and the
    /// current waiters'.
    pub n: u32,
}

impl From<crate::coordinator::health::Waits> for Waits {
    fn from(waits: crate::coordinator::health::Waits) -> Waits {
        Waits {
            p50_ms: waits.p50_ms,
            p95_ms: waits.p95_ms,
            n: waits.n,
        }
    }
}

impl From<crate::coordinator::health::Checked> for Checked {
    fn from(checked: crate::coordinator::health::Checked) -> Checked {
        Checked {
            at: checked.at_ms,
            status: checked.answer.name().to_owned(),
        }
    }
}

/// A holder's `checked` (§10a): when Baton last asked the Workflow binding
/// about it, and what the binding answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Checked {
    /// When, in ms since the epoch.
    pub at: u64,
    /// The instance's status as the binding gave it (`"running"`,
    /// `"waiting"`, `"complete"`...), `"not_found"`, or `"failed"` when
    /// the call threw or did not answer in time.
    pub status: String,
}
