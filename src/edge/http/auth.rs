//! Bearer-token checking.
//!
//! The API is never open: with no token configured every API request is a
//! 503. The comparison walks the same number of bytes whatever the tokens
//! hold and however long they are (up to
//! [`TOKEN_COMPARE_BYTES_MIN`]), and never stops at the first difference,
//! so its time tells a caller nothing about the configured token.

use super::error::HttpError;
use crate::limits::TOKEN_COMPARE_BYTES_MIN;
use std::hint::black_box;

/// Checks an `Authorization` header against the configured token.
///
/// `configured` is `BATON_TOKEN` (`None` or empty: not configured, 503);
/// `header` is the request's `Authorization` value. The scheme is matched
/// case-insensitively (RFC 9110 §11.1); the token exactly.
pub fn authorize(configured: Option<&str>, header: Option<&str>) -> Result<(), HttpError> {
    let expected = match configured {
        Some(token) if !token.is_empty() => token,
        _ => return Err(HttpError::NotConfigured),
    };
    let Some(header) = header else {
        return Err(HttpError::Unauthorized {
            reason: "missing Authorization: Bearer <token> header",
        });
    };
    let presented = bearer_token(header).ok_or(HttpError::Unauthorized {
        reason: "the Authorization header must be Bearer <token>",
    })?;
    if tokens_equal(expected.as_bytes(), presented.as_bytes()) {
        Ok(())
    } else {
        Err(HttpError::Unauthorized {
            reason: "wrong token",
        })
    }
}

/// The token of a `Bearer <token>` header, if it is one.
fn bearer_token(header: &str) -> Option<&str> {
    let header = header.trim();
    let (scheme, token) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim_start();
    (!token.is_empty()).then_some(token)
}

/// Whether two tokens are equal, in time that depends only on
/// `max(TOKEN_COMPARE_BYTES_MIN, expected.len(), presented.len())`: every
/// byte position is compared (missing bytes as 0) and the differences are
/// OR-ed together, with the lengths compared the same way.
pub fn tokens_equal(expected: &[u8], presented: &[u8]) -> bool {
    let rounds = TOKEN_COMPARE_BYTES_MIN
        .max(expected.len())
        .max(presented.len());
    let mut difference = (expected.len() ^ presented.len()) as u64;
    for i in 0..rounds {
        let a = expected.get(i).copied().unwrap_or(0);
        let b = presented.get(i).copied().unwrap_or(0);
        // black_box keeps the optimiser from turning the loop into an
        // early-exit comparison.
        difference |= u64::from(black_box(a ^ b));
    }
    black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cret-token";

    #[test]
    fn no_configured_token_is_503_whatever_the_request() {
        for configured in [None, Some("")] {
            for header in [
                None,
                Some("Bearer "),
                Some("Bearer x"),
                Some("Bearer s3cret"),
            ] {
                assert_eq!(
                    authorize(configured, header),
                    Err(HttpError::NotConfigured),
                    "{configured:?} {header:?}"
                );
            }
        }
    }

    #[test]
    fn the_right_token_passes() {
        for header in [
            "Bearer s3cret-token",
            "bearer s3cret-token",
            "BEARER s3cret-token",
            "  Bearer   s3cret-token  ",
        ] {
            assert_eq!(authorize(Some(TOKEN), Some(header)), Ok(()), "{header:?}");
        }
    }

    #[test]
    fn missing_malformed_and_wrong_tokens_are_401() {
        for header in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic s3cret-token"),
            Some("s3cret-token"),
            Some("Bearer s3cret-toke"),
            Some("Bearer s3cret-token2"),
            Some("Bearer S3CRET-TOKEN"),
            Some("Bearer s3cret-token extra"),
            Some("Token s3cret-token"),
        ] {
            let error = authorize(Some(TOKEN), header).unwrap_err();
            assert_eq!(error.status(), 401, "{header:?}");
        }
    }

    #[test]
    fn comparison_is_exact_for_every_length() {
        assert!(tokens_equal(b"", b""));
        assert!(tokens_equal(b"abc", b"abc"));
        assert!(!tokens_equal(b"abc", b"abd"));
        assert!(!tokens_equal(b"abc", b"ab"));
        assert!(!tokens_equal(b"ab", b"abc"));
        // Trailing zero bytes must not pass as "missing bytes".
        assert!(!tokens_equal(b"abc", b"abc\0"));
        assert!(!tokens_equal(b"abc\0", b"abc"));
        let long = vec![7u8; TOKEN_COMPARE_BYTES_MIN * 3];
        assert!(tokens_equal(&long, &long.clone()));
        let mut other = long.clone();
        *other.last_mut().unwrap() = 8;
        assert!(!tokens_equal(&long, &other));
    }
}
