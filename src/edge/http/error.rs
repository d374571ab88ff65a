//! Every way an HTTP request is refused, and the one mapping from a refusal
//! to its status and message.

use crate::error::BatonError;
use schemars::JsonSchema;
use serde::Serialize;
use std::fmt;

/// The body of every refusal: `{ "error": message }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorReply {
    /// For bad input (400), the `BatonError:` message an RPC caller gets.
    pub error: String,
}

/// Why an HTTP request was not carried out. None of these changes state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// No route has this path.
    NotFound,
    /// The path exists, for other methods; `allow` lists them (`Allow` header).
    MethodNotAllowed { allow: Vec<&'static str> },
    /// No `BATON_TOKEN` is configured: the API is closed, never open.
    NotConfigured,
    /// The `Authorization` header is absent, not a bearer token, or wrong.
    Unauthorized { reason: &'static str },
    /// The body is over the limit: by its `Content-Length` (`declared`,
    /// refused before reading) or by the bytes read.
    /// `bytes_max`: the operation's bound.
    PayloadTooLarge { declared: bool, bytes_max: usize },
    /// The body is not a JSON object, or not declared as JSON.
    UnsupportedMediaType { reason: &'static str },
    /// Bad input, found while parsing the request.
    BadInput(BatonError),
    /// Bad input, found by the method the command ran (its `BatonError:`
    /// message, passed through: the method's JS `Error` carries the refusal
    /// mark, see `shell::js`).
    Rejected(String),
    /// Baton itself failed (configuration, storage, a binding).
    Internal(String),
}

impl HttpError {
    /// The HTTP status for the refusal.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::BadInput(_) | HttpError::Rejected(_) => 400,
            HttpError::Unauthorized { .. } => 401,
            HttpError::NotFound => 404,
            HttpError::MethodNotAllowed { .. } => 405,
            HttpError::PayloadTooLarge { .. } => 413,
            HttpError::UnsupportedMediaType { .. } => 415,
            HttpError::Internal(_) => 500,
            HttpError::NotConfigured => 503,
        }
    }

    /// The message sent as `{ "error": message }`. Bad input keeps its
    /// `BatonError:` message, the same words an RPC caller reads.
    pub fn message(&self) -> String {
        match self {
            HttpError::NotFound => "not found: no such route (see /openapi.json)".into(),
            HttpError::MethodNotAllowed { allow } => {
                format!("method not allowed: use {}", allow.join(" or "))
            }
            HttpError::NotConfigured => {
                "not configured: set the BATON_TOKEN secret to enable the API".into()
            }
            HttpError::Unauthorized { reason } => format!("unauthorized: {reason}"),
            HttpError::PayloadTooLarge {
                declared,
                bytes_max,
            } => {
                let what = if *declared {
                    "the Content-Length is"
                } else {
                    "the body is"
                };
                format!("payload too large: {what} over {bytes_max} bytes")
            }
            HttpError::UnsupportedMediaType { reason } => {
                format!("unsupported media type: {reason}")
            }
            HttpError::BadInput(error) => error.message(),
            HttpError::Rejected(message) | HttpError::Internal(message) => message.clone(),
        }
    }

    /// The refusal's body.
    pub fn reply(&self) -> ErrorReply {
        ErrorReply {
            error: self.message(),
        }
    }
}

impl From<BatonError> for HttpError {
    fn from(error: BatonError) -> HttpError {
        HttpError::BadInput(error)
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status(), self.message())
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_status() {
        let cases = [
            (HttpError::NotFound, 404),
            (HttpError::MethodNotAllowed { allow: vec!["GET"] }, 405),
            (HttpError::NotConfigured, 503),
            (HttpError::Unauthorized { reason: "x" }, 401),
            (
                HttpError::PayloadTooLarge {
                    declared: true,
                    bytes_max: 1,
                },
                413,
            ),
            (HttpError::UnsupportedMediaType { reason: "x" }, 415),
            (
                HttpError::BadInput(BatonError::Missing {
                    field: "instanceId",
                }),
                400,
            ),
            (HttpError::Rejected("BatonError: x".into()), 400),
            (HttpError::Internal("D1 failed".into()), 500),
        ];
        for (error, status) in cases {
            assert_eq!(error.status(), status, "{error:?}");
        }
    }

    #[test]
    fn bad_input_keeps_the_baton_message() {
        let error: HttpError = BatonError::Missing {
            field: "instanceId",
        }
        .into();
        assert_eq!(error.message(), "BatonError: instanceId is required");
    }

    #[test]
    fn not_configured_says_so() {
        assert!(HttpError::NotConfigured
            .message()
            .starts_with("not configured"));
    }
}
