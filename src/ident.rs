//! Validated identifiers: keys, groups, revisions, instance ids, input hashes.
//!
//! Values are checked once, at the edge, and carried as these types after
//! that, so the core never sees an identifier it has not accepted.

use crate::error::BatonError;
use crate::limits::{IDENT_BYTES_MAX, INPUT_HASH_CHARS_MAX, INSTANCE_ID_CHARS_MAX};
use std::fmt;

/// A coordination key, serial-queue group or revision: non-empty, at most
/// [`IDENT_BYTES_MAX`] UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ident(String);

impl Ident {
    pub fn parse(field: &'static str, value: &str) -> Result<Ident, BatonError> {
        if value.is_empty() {
            return Err(BatonError::Invalid {
                field,
                reason: "must not be empty".into(),
            });
        }
        if value.len() > IDENT_BYTES_MAX {
            return Err(BatonError::Invalid {
                field,
                reason: format!(
                    "must be at most {IDENT_BYTES_MAX} UTF-8 bytes (got {})",
                    value.len()
                ),
            });
        }
        Ok(Ident(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A Workflow instance id: 1 to [`INSTANCE_ID_CHARS_MAX`] characters of ASCII
/// letters, digits, `-` and `_`, not starting with `-` (the platform refuses
/// such ids, so no instance could ever carry one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceId(String);

impl InstanceId {
    pub fn parse(field: &'static str, value: &str) -> Result<InstanceId, BatonError> {
        let invalid = |reason: String| BatonError::Invalid { field, reason };
        if value.is_empty() {
            return Err(invalid("must not be empty".into()));
        }
        if value.len() > INSTANCE_ID_CHARS_MAX {
            return Err(invalid(format!(
                "must be at most {INSTANCE_ID_CHARS_MAX} characters (got {})",
                value.chars().count()
            )));
        }
        if value.starts_with('-') {
            return Err(invalid("must not start with '-'".into()));
        }
        if let Some(bad) = value
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(invalid(format!(
                "may hold only letters, digits, '-' and '_' (found {bad:?})"
            )));
        }
        Ok(InstanceId(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A caller's digest of an instance's input: 1 to [`INPUT_HASH_CHARS_MAX`] characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InputHash(String);

impl InputHash {
    pub fn parse(field: &'static str, value: &str) -> Result<InputHash, BatonError> {
        let chars = value.chars().count();
        if chars == 0 {
            return Err(BatonError::Invalid {
                field,
                reason: "must not be empty".into(),
            });
        }
        if chars > INPUT_HASH_CHARS_MAX {
            return Err(BatonError::Invalid {
                field,
                reason: format!("must be at most {INPUT_HASH_CHARS_MAX} characters (got {chars})"),
            });
        }
        Ok(InputHash(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name of a Workflow binding of Baton's Worker (`options.workflow`).
/// Whether the Worker has such a binding is a question of configuration,
/// answered by the shell.
// A stand-in until the edge's validated `WorkflowName` lands on main.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkflowName(String);

impl WorkflowName {
    /// The value as a `WorkflowName`, or why it is not one.
    pub fn new(value: String) -> Result<WorkflowName, String> {
        if value.is_empty() {
            return Err("must not be empty".into());
        }
        Ok(WorkflowName(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}
display_as_str!(Ident, InstanceId, InputHash, WorkflowName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ident_bounds() {
        assert!(Ident::parse("key", "").is_err());
        assert!(Ident::parse("key", &"k".repeat(IDENT_BYTES_MAX)).is_ok());
        let err = Ident::parse("key", &"k".repeat(IDENT_BYTES_MAX + 1)).unwrap_err();
        assert!(err.message().starts_with("BatonError: key "));
        // Bytes, not characters: 171 three-byte characters are 513 bytes.
        assert!(Ident::parse("key", &"€".repeat(171)).is_err());
    }

    #[test]
    fn instance_id_charset() {
        assert!(InstanceId::parse("instanceId", "run_1-a").is_ok());
        assert!(InstanceId::parse("instanceId", &"a".repeat(100)).is_ok());
        for bad in ["", "-lead", "has space", "slash/", "é", &"a".repeat(101)] {
            let err = InstanceId::parse("instanceId", bad).unwrap_err();
            assert_eq!(err.field(), "instanceId", "{bad:?}");
        }
    }

    #[test]
    fn input_hash_counts_characters() {
        assert!(InputHash::parse("inputHash", &"é".repeat(128)).is_ok());
        assert!(InputHash::parse("inputHash", &"é".repeat(129)).is_err());
        assert!(InputHash::parse("inputHash", "").is_err());
    }
}
