//! The body rules for POST requests: at most the operation's bound
//! ([`HTTP_BODY_BYTES_MAX`](crate::limits::HTTP_BODY_BYTES_MAX), or more for the two that carry a caller's JSON:
//! `Operation::body_bytes_max`), declared as JSON, and a JSON object.
//!
//! The size is checked twice: on the declared `Content-Length` before
//! anything is read, and on the bytes as they arrive (a chunked body has no
//! declared length, and a declared one is only a claim).
//!
//! A refused request's body is read to its end before the answer goes, up
//! to [`drain_bytes_max`]: [`worth_draining`] says whether to start.

use super::error::HttpError;
use crate::limits::HTTP_BODY_DRAIN_BYTES_MAX;
use serde_json::{Map, Value};

/// How many bytes of a refused request's body the shell reads (and
/// discards) before it answers, for an operation whose limit is
/// `bytes_max`: the limit plus [`HTTP_BODY_DRAIN_BYTES_MAX`].
pub fn drain_bytes_max(bytes_max: usize) -> usize {
    bytes_max.saturating_add(HTTP_BODY_DRAIN_BYTES_MAX)
}

/// Whether a refused request's unread body is read and discarded before
/// the answer: unless its declared `Content-Length` is over
/// [`drain_bytes_max`] (then reading it would cost more than a reset does).
/// A body with no declared length is drained, and the shell stops at the
/// bound.
pub fn worth_draining(content_length: Option<&str>, bytes_max: usize) -> bool {
    match content_length.and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(length) => length <= drain_bytes_max(bytes_max) as u64,
        None => true,
    }
}

/// 413 when the declared `Content-Length` is over the limit. A header that
/// is not a number is left to the runtime (which refuses such requests) and
/// to [`check_body_length`] on the bytes themselves.
pub fn check_declared_length(
    content_length: Option<&str>,
    bytes_max: usize,
) -> Result<(), HttpError> {
    match content_length.and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(length) if length > bytes_max as u64 => Err(HttpError::PayloadTooLarge {
            declared: true,
            bytes_max,
        }),
        _ => Ok(()),
    }
}

/// 413 once the bytes read so far are over the limit; the shell calls this
/// after every chunk and stops reading at the first refusal.
pub fn check_body_length(bytes_read: usize, bytes_max: usize) -> Result<(), HttpError> {
    if bytes_read > bytes_max {
        Err(HttpError::PayloadTooLarge {
            declared: false,
            bytes_max,
        })
    } else {
        Ok(())
    }
}

/// 415 unless the `Content-Type` is `application/json` (any case, any
/// parameters such as `charset=utf-8`).
pub fn check_content_type(content_type: Option<&str>) -> Result<(), HttpError> {
    let refused = HttpError::UnsupportedMediaType {
        reason: "the Content-Type must be application/json",
    };
    let content_type = content_type.ok_or(refused.clone())?;
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(refused)
    }
}

/// The body as a JSON object; 415 for anything else (not UTF-8, not JSON,
/// or JSON that is not an object, such as an array or a string).
pub fn parse_json_object(body: &[u8]) -> Result<Map<String, Value>, HttpError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err(HttpError::UnsupportedMediaType {
            reason: "the body must be a JSON object",
        }),
        Err(_) => Err(HttpError::UnsupportedMediaType {
            reason: "the body is not valid JSON",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::HTTP_BODY_BYTES_MAX;

    #[test]
    fn a_body_is_drained_unless_declared_over_the_drain_bound() {
        let max = HTTP_BODY_BYTES_MAX;
        let bound = (max + HTTP_BODY_DRAIN_BYTES_MAX).to_string();
        let over = (max + HTTP_BODY_DRAIN_BYTES_MAX + 1).to_string();
        assert_eq!(drain_bytes_max(max), max + HTTP_BODY_DRAIN_BYTES_MAX);
        assert!(worth_draining(None, max));
        assert!(worth_draining(Some("not a number"), max));
        assert!(worth_draining(Some(&bound), max));
        assert!(!worth_draining(Some(&over), max));
        assert!(worth_draining(Some(&over), max + 1));
    }

    #[test]
    fn declared_lengths_over_the_limit_are_413() {
        let max = HTTP_BODY_BYTES_MAX.to_string();
        let over = (HTTP_BODY_BYTES_MAX + 1).to_string();
        assert_eq!(check_declared_length(None, HTTP_BODY_BYTES_MAX), Ok(()));
        assert_eq!(
            check_declared_length(Some("0"), HTTP_BODY_BYTES_MAX),
            Ok(())
        );
        assert_eq!(
            check_declared_length(Some(&max), HTTP_BODY_BYTES_MAX),
            Ok(())
        );
        assert_eq!(
            check_declared_length(Some(&over), HTTP_BODY_BYTES_MAX),
            Err(HttpError::PayloadTooLarge {
                declared: true,
                bytes_max: HTTP_BODY_BYTES_MAX
            })
        );
        assert_eq!(
            check_declared_length(Some("99999999999999999999"), HTTP_BODY_BYTES_MAX),
            Ok(()),
            "not a u64: left to the runtime and the byte count"
        );
        assert_eq!(
            check_declared_length(Some("18446744073709551615"), HTTP_BODY_BYTES_MAX),
            Err(HttpError::PayloadTooLarge {
                declared: true,
                bytes_max: HTTP_BODY_BYTES_MAX
            })
        );
    }

    #[test]
    fn actual_lengths_over_the_limit_are_413() {
        assert_eq!(
            check_body_length(HTTP_BODY_BYTES_MAX, HTTP_BODY_BYTES_MAX),
            Ok(())
        );
        assert_eq!(
            check_body_length(HTTP_BODY_BYTES_MAX + 1, HTTP_BODY_BYTES_MAX),
            Err(HttpError::PayloadTooLarge {
                declared: false,
                bytes_max: HTTP_BODY_BYTES_MAX
            })
        );
    }

    #[test]
    fn only_json_content_types_pass() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert_eq!(check_content_type(Some(ok)), Ok(()), "{ok:?}");
        }
        for bad in [
            None,
            Some(""),
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("application/jsonx"),
            Some("multipart/form-data; boundary=x"),
            Some("text/json"),
        ] {
            assert_eq!(
                check_content_type(bad).map_err(|e| e.status()),
                Err(415),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bodies_must_be_json_objects() {
        assert!(parse_json_object(br#"{"instanceId":"a"}"#).is_ok());
        assert!(parse_json_object(b" {} ").is_ok());
        for bad in [
            &b""[..],
            b"{",
            b"{\"a\":1,}",
            b"[]",
            b"\"text\"",
            b"42",
            b"null",
            b"true",
            b"\xff\xfe{}",
            b"{} {}",
        ] {
            let error = parse_json_object(bad).unwrap_err();
            assert_eq!(error.status(), 415, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
