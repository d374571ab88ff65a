//! What a caller may ask for, validated: rule ids, rules, permit counts and
//! cooldowns. Each value is checked once, where it enters, and carried as
//! these types after that, so the decisions never see a value the contract
//! refuses.

use crate::error::{BatonError, Number};
use crate::limits::{
    RATE_COOLDOWN_MS_MAX, RATE_LIMIT_MAX, RATE_PERMITS_MAX, RATE_RULES_PER_CALL_MAX,
    RATE_RULE_ID_CHARS_MAX, RATE_WINDOW_MS_MAX,
};
use std::fmt;

/// A rule's name within its bucket: 1 to [`RATE_RULE_ID_CHARS_MAX`] characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId(String);

impl RuleId {
    pub fn parse(field: &'static str, value: &str) -> Result<RuleId, BatonError> {
        let chars = value.chars().count();
        if chars == 0 || chars > RATE_RULE_ID_CHARS_MAX {
            return Err(BatonError::Invalid {
                field,
                reason: format!("must be 1 to {RATE_RULE_ID_CHARS_MAX} characters (got {chars})"),
            });
        }
        Ok(RuleId(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One window rule: at most `limit` permits in any `window_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub id: RuleId,
    pub limit: u32,
    pub window_ms: u64,
}

/// An integer in `lo..=hi`, from a JS number (which may be fractional,
/// negative, infinite or NaN: all refused).
pub fn bounded_integer(
    field: &'static str,
    value: f64,
    lo: u64,
    hi: u64,
) -> Result<u64, BatonError> {
    if value.fract() != 0.0 || !(lo as f64..=hi as f64).contains(&value) {
        return Err(BatonError::Invalid {
            field,
            reason: format!(
                "must be an integer from {lo} to {hi} (got {})",
                Number(value)
            ),
        });
    }
    Ok(value as u64)
}

impl Rule {
    /// A rule from its three fields as a caller sent them.
    pub fn parse(id: &str, limit: f64, window_ms: f64) -> Result<Rule, BatonError> {
        Ok(Rule {
            id: RuleId::parse("id", id)?,
            limit: parse_limit(limit)?,
            window_ms: parse_window_ms(window_ms)?,
        })
    }
}

pub fn parse_limit(value: f64) -> Result<u32, BatonError> {
    bounded_integer("limit", value, 1, u64::from(RATE_LIMIT_MAX)).map(|n| n as u32)
}

pub fn parse_window_ms(value: f64) -> Result<u64, BatonError> {
    bounded_integer("windowMs", value, 1, RATE_WINDOW_MS_MAX)
}

/// `permits` of `acquire` and `refund`: 1 to [`RATE_PERMITS_MAX`].
pub fn parse_permits(value: f64) -> Result<u32, BatonError> {
    bounded_integer("permits", value, 1, u64::from(RATE_PERMITS_MAX)).map(|n| n as u32)
}

/// `cooldownMs` of `penalize`: 1 to [`RATE_COOLDOWN_MS_MAX`].
pub fn parse_cooldown_ms(value: f64) -> Result<u64, BatonError> {
    bounded_integer("cooldownMs", value, 1, RATE_COOLDOWN_MS_MAX)
}

/// A call's rule list: 1 to [`RATE_RULES_PER_CALL_MAX`] rules with distinct ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet(Vec<Rule>);

impl RuleSet {
    pub fn new(rules: Vec<Rule>) -> Result<RuleSet, BatonError> {
        if rules.is_empty() || rules.len() > RATE_RULES_PER_CALL_MAX {
            return Err(BatonError::Invalid {
                field: "rules",
                reason: format!(
                    "must hold 1 to {RATE_RULES_PER_CALL_MAX} rules (got {})",
                    rules.len()
                ),
            });
        }
        for (i, rule) in rules.iter().enumerate() {
            if rules[..i].iter().any(|earlier| earlier.id == rule.id) {
                return Err(BatonError::Invalid {
                    field: "rules",
                    reason: format!(
                        "must not repeat a rule id (found {:?} twice)",
                        rule.id.as_str()
                    ),
                });
            }
        }
        Ok(RuleSet(rules))
    }

    pub fn rules(&self) -> &[Rule] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str) -> Rule {
        Rule::parse(id, 5.0, 1000.0).unwrap()
    }

    #[test]
    fn rule_fields_are_bounded_and_named() {
        assert!(Rule::parse("a", 1.0, 1.0).is_ok());
        assert!(Rule::parse(&"é".repeat(64), 100_000.0, 86_400_000.0).is_ok());
        let cases: [(&str, f64, f64, &str); 9] = [
            ("", 1.0, 1.0, "id"),
            (&"x".repeat(65), 1.0, 1.0, "id"),
            ("a", 0.0, 1.0, "limit"),
            ("a", 100_001.0, 1.0, "limit"),
            ("a", 1.5, 1.0, "limit"),
            ("a", f64::NAN, 1.0, "limit"),
            ("a", 1.0, 0.0, "windowMs"),
            ("a", 1.0, 86_400_001.0, "windowMs"),
            ("a", 1.0, f64::INFINITY, "windowMs"),
        ];
        for (id, limit, window, field) in cases {
            let err = Rule::parse(id, limit, window).unwrap_err();
            assert_eq!(err.field(), field, "{id:?} {limit} {window}");
            assert!(err.message().starts_with(&format!("BatonError: {field} ")));
        }
    }

    #[test]
    fn rule_sets_are_one_to_eight_distinct() {
        assert_eq!(RuleSet::new(vec![]).unwrap_err().field(), "rules");
        let nine: Vec<Rule> = (0..9).map(|i| rule(&format!("r{i}"))).collect();
        assert_eq!(RuleSet::new(nine.clone()).unwrap_err().field(), "rules");
        assert!(RuleSet::new(nine[..8].to_vec()).is_ok());
        let err = RuleSet::new(vec![rule("a"), rule("b"), rule("a")]).unwrap_err();
        assert!(err.message().contains("\"a\""), "{err}");
    }

    #[test]
    fn permits_and_cooldowns_are_bounded() {
        assert_eq!(parse_permits(1.0), Ok(1));
        assert_eq!(parse_permits(10_000.0), Ok(10_000));
        for bad in [0.0, -1.0, 10_001.0, 2.5] {
            assert_eq!(parse_permits(bad).unwrap_err().field(), "permits");
        }
        assert_eq!(parse_cooldown_ms(86_400_000.0), Ok(86_400_000));
        for bad in [0.0, -5.0, 86_400_001.0, 0.5] {
            assert_eq!(parse_cooldown_ms(bad).unwrap_err().field(), "cooldownMs");
        }
    }
}
