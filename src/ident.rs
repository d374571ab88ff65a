//! Validated identifiers: keys, groups, revisions, instance ids, input hashes.
//!
//! Values are checked once, at the edge, and carried as these types after
//! that, so the core never sees an identifier it has not accepted. Each type
//! checks itself when deserialized (`crate::edge` decodes every request
//! through `serde`), serializes as its string, and describes itself as a
//! JSON schema for the OpenAPI document and the TypeScript declarations.

use crate::error::BatonError;
use crate::limits::{
    IDENT_BYTES_MAX, INPUT_HASH_CHARS_MAX, INSTANCE_ID_CHARS_MAX, WORKFLOW_NAME_CHARS_MAX,
};

/// A coordination key, serial-queue group or revision: non-empty, at most
/// [`IDENT_BYTES_MAX`] UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ident(String);

impl Ident {
    pub fn parse(field: &'static str, value: &str) -> Result<Ident, BatonError> {
        Self::new(value.to_owned()).map_err(|reason| BatonError::Invalid { field, reason })
    }

    /// The value as an `Ident`, or why it is not one (the field is the caller's to name).
    pub fn new(value: String) -> Result<Ident, String> {
        if value.is_empty() {
            return Err("must not be empty".into());
        }
        if value.len() > IDENT_BYTES_MAX {
            return Err(format!(
                "must be at most {IDENT_BYTES_MAX} UTF-8 bytes (got {})",
                value.len()
            ));
        }
        Ok(Ident(value))
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
        Self::new(value.to_owned()).map_err(|reason| BatonError::Invalid { field, reason })
    }

    /// The value as an `InstanceId`, or why it is not one.
    pub fn new(value: String) -> Result<InstanceId, String> {
        if value.is_empty() {
            return Err("must not be empty".into());
        }
        if value.len() > INSTANCE_ID_CHARS_MAX {
            return Err(format!(
                "must be at most {INSTANCE_ID_CHARS_MAX} characters (got {})",
                value.chars().count()
            ));
        }
        if value.starts_with('-') {
            return Err("must not start with '-'".into());
        }
        if let Some(bad) = value
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "may hold only letters, digits, '-' and '_' (found {bad:?})"
            ));
        }
        Ok(InstanceId(value))
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
        Self::new(value.to_owned()).map_err(|reason| BatonError::Invalid { field, reason })
    }

    /// The value as an `InputHash`, or why it is not one.
    pub fn new(value: String) -> Result<InputHash, String> {
        let chars = value.chars().count();
        if chars == 0 {
            return Err("must not be empty".into());
        }
        if chars > INPUT_HASH_CHARS_MAX {
            return Err(format!(
                "must be at most {INPUT_HASH_CHARS_MAX} characters (got {chars})"
            ));
        }
        Ok(InputHash(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name of a Workflow binding of Baton's Worker (`options.workflow`):
/// 1 to [`WORKFLOW_NAME_CHARS_MAX`] ASCII letters, digits and `_`, not
/// starting with a digit. Whether the Worker has such a binding is a
/// question of configuration, answered by the shell.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkflowName(String);

impl WorkflowName {
    /// The value as a `WorkflowName`, or why it is not one.
    pub fn new(value: String) -> Result<WorkflowName, String> {
        if value.is_empty() {
            return Err("must not be empty".into());
        }
        if value.len() > WORKFLOW_NAME_CHARS_MAX {
            return Err(format!(
                "must be at most {WORKFLOW_NAME_CHARS_MAX} characters (got {})",
                value.chars().count()
            ));
        }
        if value.starts_with(|c: char| c.is_ascii_digit())
            || !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(
                "must be a binding name: letters, digits and '_', not starting with a digit".into(),
            );
        }
        Ok(WorkflowName(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Every validated value a request carries, its serde and schema written
/// once: it deserializes by its own `new` (whose `Err` is the reason a
/// refusal gives, after the field the decoder names), serializes as its
/// value, and describes itself as a JSON schema with its bounds for the
/// OpenAPI document and the TypeScript declarations.
///
/// - `string T, "description", chars: MIN, MAX, pattern: Option<&str>,
///   new: fn(String) -> Result<T, impl Display>` (the `pattern` is checked
///   by `new` too: the schema only documents it); `T::as_str` gives the
///   text; `, display` adds `Display` as the text.
/// - `integer T, "description", range: MIN, MAX,
///   new: fn(f64) -> Result<T, impl Display>, get: fn(T) -> impl Into<u64>`:
///   deserialized from any JS number.
///
/// `T as "Name"` names the schema, where the type's own name would be
/// ambiguous among all concepts' types.
macro_rules! newtype {
    (@name $t:ident) => { stringify!($t) };
    (@name $t:ident $name:literal) => { $name };
    (@display $t:ident) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (
        string $t:ident $(as $name:literal)?, $description:expr,
        chars: $min:expr, $max:expr, pattern: $pattern:expr,
        new: $new:expr $(, $display:ident)?
    ) => {
        $($crate::ident::newtype!(@$display $t);)?

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                ($new)(<String as serde::Deserialize>::deserialize(deserializer)?)
                    .map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $crate::ident::newtype!(@name $t $($name)?).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = schemars::json_schema!({
                    "type": "string",
                    "description": $description,
                    "minLength": $min,
                    "maxLength": $max,
                });
                let pattern: Option<&str> = $pattern;
                if let Some(pattern) = pattern {
                    schema.insert("pattern".into(), pattern.into());
                }
                schema
            }
        }
    };
    (
        integer $t:ident $(as $name:literal)?, $description:expr,
        range: $min:expr, $max:expr, new: $new:expr, get: $get:expr
    ) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_u64(u64::from(($get)(*self)))
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                ($new)(<f64 as serde::Deserialize>::deserialize(deserializer)?)
                    .map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $crate::ident::newtype!(@name $t $($name)?).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "integer",
                    "description": $description,
                    "minimum": $min,
                    "maximum": $max,
                })
            }
        }
    };
}
pub(crate) use newtype;

// `maxLength` counts characters; an `Ident`'s bound is in UTF-8 bytes, which
// the description says (the schema's bound is the loosest that holds).
newtype!(
    string Ident,
    "A key, group or revision: non-empty, at most 512 UTF-8 bytes.",
    chars: 1, IDENT_BYTES_MAX,
    pattern: None,
    new: Ident::new,
    display
);
newtype!(
    string InstanceId,
    "A Workflow instance id: 1 to 100 letters, digits, '-' and '_', not starting with '-'.",
    chars: 1, INSTANCE_ID_CHARS_MAX,
    pattern: Some("^[A-Za-z0-9_][A-Za-z0-9_-]*$"),
    new: InstanceId::new,
    display
);
newtype!(
    string WorkflowName,
    "The binding name of a Workflow of Baton's Worker, one of WORKFLOW_BINDINGS.",
    chars: 1, WORKFLOW_NAME_CHARS_MAX,
    pattern: Some("^[A-Za-z_][A-Za-z0-9_]*$"),
    new: WorkflowName::new,
    display
);
newtype!(
    string InputHash,
    "A caller's digest of an instance's input: 1 to 128 characters.",
    chars: 1, INPUT_HASH_CHARS_MAX,
    pattern: None,
    new: InputHash::new,
    display
);

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
