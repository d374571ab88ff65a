//! The one typed error callers see: bad input, named by field.
//!
//! Every rejection maps to a message starting `BatonError:` in exactly one
//! place ([`BatonError::message`]), so RPC and HTTP callers read the same words.

use std::fmt;

/// Why a request was refused. Refusals never change state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatonError {
    /// A required argument or field was absent.
    Missing { field: &'static str },
    /// A field had the wrong JS type.
    WrongType {
        field: &'static str,
        expected: &'static str,
    },
    /// A field had the right type but an unacceptable value.
    Invalid { field: &'static str, reason: String },
    /// The request was well-formed but a bound would be exceeded.
    LimitExceeded { field: &'static str, reason: String },
}

impl BatonError {
    /// The field the error names.
    pub fn field(&self) -> &'static str {
        match self {
            BatonError::Missing { field }
            | BatonError::WrongType { field, .. }
            | BatonError::Invalid { field, .. }
            | BatonError::LimitExceeded { field, .. } => field,
        }
    }

    /// The message carried by the JS `Error`; it always starts `BatonError:`.
    pub fn message(&self) -> String {
        match self {
            BatonError::Missing { field } => format!("BatonError: {field} is required"),
            BatonError::WrongType { field, expected } => {
                format!("BatonError: {field} must be {expected}")
            }
            BatonError::Invalid { field, reason } => format!("BatonError: {field} {reason}"),
            BatonError::LimitExceeded { field, reason } => {
                format!("BatonError: {field} {reason}")
            }
        }
    }
}

impl fmt::Display for BatonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for BatonError {}
