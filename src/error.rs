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

    /// What the error says after its field: a field type's own refusal,
    /// which the decoder names with the field it read.
    pub fn reason(self) -> String {
        match self {
            BatonError::Invalid { reason, .. } | BatonError::LimitExceeded { reason, .. } => reason,
            other => other.message(),
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

/// A JS number as a refusal quotes it: as JavaScript prints it for every
/// integer and ordinary fraction (`1001`, `2.5`, `-1`), through the same
/// shortest round-trip digits serde_json writes. It keeps Rust's float
/// `Display` (and its large formatting tables) out of the Worker's module
/// (docs/benchmarks.md, P6); only an exponent reads differently (`1e-7` where
/// Rust would write `0.0000001`).
#[derive(Clone, Copy)]
pub struct Number(pub f64);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        // Integers below 2^63 in magnitude print exactly as integers do.
        if value.fract() == 0.0 && value.abs() < 9.2e18 {
            return write!(f, "{}", value as i64);
        }
        match serde_json::Number::from_f64(value) {
            Some(number) => write!(f, "{number}"),
            None if value.is_nan() => f.write_str("NaN"),
            None if value > 0.0 => f.write_str("Infinity"),
            None => f.write_str("-Infinity"),
        }
    }
}

#[cfg(test)]
mod number_tests {
    use super::Number;

    #[test]
    fn numbers_read_as_javascript_prints_them() {
        for (value, shown) in [
            (1001.0, "1001"),
            (0.0, "0"),
            (-1.0, "-1"),
            (2.5, "2.5"),
            (-0.25, "-0.25"),
            (0.1 + 0.2, "0.30000000000000004"),
            (9007199254740993.0, "9007199254740992"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(Number(value).to_string(), shown, "{shown}");
        }
    }
}
