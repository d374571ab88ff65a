//! The rate limiter's requests and replies (contract §5, §7).
//!
//! A request is the §7 object: `{ bucket, rules, permits? }` and friends.
//! The default entrypoint's `rate*` methods take it as is; the Durable
//! Object's positional methods (`acquire(bucket, { rules, permits? })`) are
//! merged into it by the shell ([`BUCKET_ARG`], `edge::with_key`); the HTTP API reads it from
//! the body with the bucket from the path.
//!
//! Each number is its own bounded type, so a refusal names its field
//! (`limit`, `windowMs`, `permits`, `cooldownMs`) with the contract's range.

use crate::edge::KeyArg;
use crate::error::BatonError;
use crate::ident::{newtype, Ident};
use crate::limits::{
    RATE_COOLDOWN_MS_MAX, RATE_LIMIT_MAX, RATE_PERMITS_MAX, RATE_RULES_PER_CALL_MAX,
    RATE_RULE_ID_CHARS_MAX, RATE_WINDOW_MS_MAX,
};
use crate::rate_limit::{self as core, rules, RuleId};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize};
use std::borrow::Cow;

/// A bounded integer field: refused (naming the field) unless it is an
/// integer in the contract's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleLimit(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowMs(pub u64);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permits(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CooldownMs(pub u64);

newtype!(
    integer RuleLimit as "RateRuleLimit",
    "Most permits the rule grants in any window.",
    range: 1, RATE_LIMIT_MAX,
    new: |v| rules::parse_limit(v).map(RuleLimit).map_err(BatonError::reason),
    get: |v: RuleLimit| v.0
);
newtype!(
    integer WindowMs as "RateWindowMs",
    "The rule's window, in milliseconds.",
    range: 1, RATE_WINDOW_MS_MAX,
    new: |v| rules::parse_window_ms(v).map(WindowMs).map_err(BatonError::reason),
    get: |v: WindowMs| v.0
);
newtype!(
    integer Permits as "RatePermits",
    "How many permits.",
    range: 1, RATE_PERMITS_MAX,
    new: |v| rules::parse_permits(v).map(Permits).map_err(BatonError::reason),
    get: |v: Permits| v.0
);
newtype!(
    integer CooldownMs as "RateCooldownMs",
    "How long no permit is granted, in milliseconds from now.",
    range: 1, RATE_COOLDOWN_MS_MAX,
    new: |v| rules::parse_cooldown_ms(v).map(CooldownMs).map_err(BatonError::reason),
    get: |v: CooldownMs| v.0
);
newtype!(
    string RuleId as "RateRuleId",
    "A rule's name within its bucket: its grants are remembered under it.",
    chars: 1, RATE_RULE_ID_CHARS_MAX,
    pattern: None,
    new: |v: String| RuleId::parse("id", &v).map_err(BatonError::reason)
);

/// One window rule: at most `limit` permits in any `windowMs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateRule {
    pub id: RuleId,
    pub limit: RuleLimit,
    pub window_ms: WindowMs,
}

/// `rules`: 1 to 8 rules with distinct ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules(pub core::RuleSet);

impl<'de> Deserialize<'de> for Rules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let list = Vec::<RateRule>::deserialize(deserializer)?;
        core::RuleSet::new(
            list.into_iter()
                .map(|r| core::Rule {
                    id: r.id,
                    limit: r.limit.0,
                    window_ms: r.window_ms.0,
                })
                .collect(),
        )
        .map(Rules)
        .map_err(|e| de::Error::custom(e.reason()))
    }
}

/// As the caller wrote them: the list of `{ id, limit, windowMs }`.
impl Serialize for Rules {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.rules().iter().map(|r| RateRule {
            id: r.id.clone(),
            limit: RuleLimit(r.limit),
            window_ms: WindowMs(r.window_ms),
        }))
    }
}

impl JsonSchema for Rules {
    fn schema_name() -> Cow<'static, str> {
        "RateRules".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "description": "The bucket's window rules for this call, with distinct ids.",
            "items": generator.subschema_for::<RateRule>(),
            "minItems": 1,
            "maxItems": RATE_RULES_PER_CALL_MAX,
        })
    }
}

/// `acquire(bucket, { rules, permits? })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateAcquire {
    pub bucket: Ident,
    pub rules: Rules,
    /// How many permits to acquire (default 1): all or part are granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permits: Option<Permits>,
}

/// `penalize(bucket, { cooldownMs })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RatePenalize {
    pub bucket: Ident,
    pub cooldown_ms: CooldownMs,
}

/// `refund(bucket, { permits })`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateRefund {
    pub bucket: Ident,
    pub permits: Permits,
}

/// `inspect(bucket)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateInspect {
    pub bucket: Ident,
}

/// `acquire`'s reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateAcquireReply {
    /// Permits granted, 0 to `permits`.
    pub granted: u32,
    /// 0 when anything was granted; otherwise the milliseconds until an
    /// acquire of one permit would be granted.
    pub wait_ms: u64,
}

impl From<core::AcquireReply> for RateAcquireReply {
    fn from(reply: core::AcquireReply) -> RateAcquireReply {
        RateAcquireReply {
            granted: reply.granted,
            wait_ms: reply.wait_ms,
        }
    }
}

/// `penalize`'s reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RatePenalizeReply {
    /// The cooldown's end as it now stands, in ms since the epoch.
    pub until: u64,
}

/// `refund`'s reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RateRefundReply {
    /// How many permits were returned.
    pub refunded: u32,
}

/// `inspect`'s reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateInspection {
    pub bucket: Ident,
    /// The cooldown's end while it lasts, in ms since the epoch.
    pub cooldown_until: Option<u64>,
    /// Every rule id the bucket remembers, with its values as last given.
    pub rules: Vec<RateRuleView>,
}

/// One rule as `inspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateRuleView {
    pub id: RuleId,
    pub limit: u32,
    pub window_ms: u64,
    /// Permits granted under the rule in the last `windowMs`.
    pub used: u64,
    /// When the rule next has a free permit (now if it has one), in ms since the epoch.
    pub next_free_at: u64,
}

impl RateInspection {
    pub fn new(bucket: Ident, inspection: core::Inspection) -> RateInspection {
        RateInspection {
            bucket,
            cooldown_until: inspection.cooldown_until_ms,
            rules: inspection
                .rules
                .into_iter()
                .map(|r| RateRuleView {
                    id: r.id,
                    limit: r.limit,
                    window_ms: r.window_ms,
                    used: r.used,
                    next_free_at: r.next_free_at_ms,
                })
                .collect(),
        }
    }
}

/// The RateLimiter's positional methods (`acquire(bucket, { rules, permits? })`)
/// take their `bucket` first, each argument read whole (`shell::js::positional`).
pub const BUCKET_ARG: KeyArg = KeyArg {
    field: "bucket",
    in_options: "must not hold bucket (it is the first argument)",
    whole: true,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::{decode_value, with_key};
    use serde_json::{json, Value};

    fn acquire(input: Value) -> Result<RateAcquire, BatonError> {
        decode_value(&input)
    }

    #[test]
    fn a_good_acquire_decodes() {
        let r = acquire(json!({
            "bucket": "b",
            "rules": [{ "id": "s", "limit": 5, "windowMs": 1000 }, { "id": "m", "limit": 100, "windowMs": 60000 }],
            "permits": 3,
        }))
        .unwrap();
        assert_eq!(r.rules.0.rules().len(), 2);
        assert_eq!(r.permits, Some(Permits(3)));
    }

    #[test]
    fn every_bad_input_names_its_field() {
        let rule = json!({ "id": "s", "limit": 5, "windowMs": 1000 });
        let nine: Vec<Value> = (0..9)
            .map(|i| json!({ "id": format!("r{i}"), "limit": 1, "windowMs": 1 }))
            .collect();
        let cases = [
            (json!({ "bucket": "b" }), "rules"),
            (json!({ "bucket": "b", "rules": [] }), "rules"),
            (json!({ "bucket": "b", "rules": nine }), "rules"),
            (json!({ "bucket": "b", "rules": [rule, rule] }), "rules"),
            (
                json!({ "bucket": "b", "rules": [{ "id": "", "limit": 1, "windowMs": 1 }] }),
                "id",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": 0, "windowMs": 1 }] }),
                "limit",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": 1.5, "windowMs": 1 }] }),
                "limit",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": 100001, "windowMs": 1 }] }),
                "limit",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": "5", "windowMs": 1 }] }),
                "limit",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": 1, "windowMs": 86400001 }] }),
                "windowMs",
            ),
            (
                json!({ "bucket": "b", "rules": [{ "id": "a", "limit": 1, "windowMs": 1, "burst": 2 }] }),
                "rules",
            ),
            (
                json!({ "bucket": "b", "rules": [rule], "permits": 0 }),
                "permits",
            ),
            (
                json!({ "bucket": "b", "rules": [rule], "permits": 10001 }),
                "permits",
            ),
            (
                json!({ "bucket": "b", "rules": [rule], "extra": 1 }),
                "input",
            ),
            (json!({ "bucket": "", "rules": [rule] }), "bucket"),
        ];
        for (input, field) in cases {
            let err = acquire(input.clone()).unwrap_err();
            let message = err.message();
            assert!(message.starts_with("BatonError: "), "{message}");
            assert!(
                message.contains(field),
                "{input}: {message} should name {field}"
            );
        }
        for (cooldown, ok) in [
            (json!(1), true),
            (json!(86400000), true),
            (json!(0), false),
            (json!(-1), false),
            (json!(86400001), false),
        ] {
            let r: Result<RatePenalize, _> =
                decode_value(&json!({ "bucket": "b", "cooldownMs": cooldown }));
            assert_eq!(r.is_ok(), ok, "{cooldown}");
            if let Err(e) = r {
                assert!(e.message().contains("cooldownMs"), "{e}");
            }
        }
    }

    #[test]
    fn positional_options_take_the_bucket_from_the_first_argument() {
        assert_eq!(
            with_key(&BUCKET_ARG, json!("b"), Some(json!({ "permits": 2 }))).unwrap(),
            json!({ "bucket": "b", "permits": 2 })
        );
        assert_eq!(
            with_key(&BUCKET_ARG, json!("b"), None).unwrap(),
            json!({ "bucket": "b" })
        );
        assert_eq!(
            with_key(&BUCKET_ARG, json!("b"), Some(json!("x")))
                .unwrap_err()
                .field(),
            "options"
        );
        assert_eq!(
            with_key(&BUCKET_ARG, json!("b"), Some(json!({ "bucket": "c" })))
                .unwrap_err()
                .field(),
            "options"
        );
    }
}
