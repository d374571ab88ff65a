//! The event type a registration is told its turn with (contract §1b).
//!
//! A [`Turn::Shared`] registration is woken with `TURN_EVENT_TYPE` itself.
//! A [`Turn::Own`] one gets `{TURN_EVENT_TYPE}-{digest}-{n}`: `digest` is
//! 16 hex digits of a 64-bit FNV-1a hash of the key, `n` the key's
//! registration number. Within a key, `n` is never reused, so a grant event
//! left over from an earlier registration (a duplicate, or one re-sent
//! after a crash) can never satisfy a later wait of the same instance.
//! Across keys the digest tells them apart: two keys share one only by a
//! 64-bit hash collision, and even then an event goes to one instance, which
//! would have to wait on both keys under the same number at once.

use super::types::Turn;
use crate::limits::{EVENT_TYPE_CHARS_MAX, TURN_EVENT_TYPE_CHARS_MAX};

/// The event type of `turn` on `key`, given the configured `TURN_EVENT_TYPE`.
pub fn event_type(base: &str, key: &str, turn: Turn) -> String {
    match turn {
        Turn::Shared => base.to_owned(),
        Turn::Own(n) => {
            let event_type = format!("{base}-{:016x}-{n}", fnv1a64(key.as_bytes()));
            debug_assert!(event_type.len() <= EVENT_TYPE_CHARS_MAX);
            event_type
        }
    }
}

/// Whether `value` can be `TURN_EVENT_TYPE`: a Workflow event type
/// (`^[A-Za-z0-9_][A-Za-z0-9_-]*$`) with room for a grant's suffix. The
/// message names the variable.
pub fn check_turn_event_type(value: &str) -> Result<(), String> {
    let valid = value.len() <= TURN_EVENT_TYPE_CHARS_MAX
        && value.chars().next().is_some_and(|c| c != '-')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        return Ok(());
    }
    Err(format!(
        "Baton configuration: TURN_EVENT_TYPE {value:?} must be 1 to \
         {TURN_EVENT_TYPE_CHARS_MAX} letters, digits, '-' or '_', not starting with '-'"
    ))
}

/// FNV-1a, 64 bits: a few lines and no dependency in the WASM (P6), and
/// spread well enough for telling keys apart; nothing relies on it being
/// hard to invert.
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::JS_SAFE_INTEGER_MAX;

    fn is_event_type(value: &str) -> bool {
        value.len() <= EVENT_TYPE_CHARS_MAX
            && value
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    }

    #[test]
    fn the_longest_own_turn_is_a_valid_event_type() {
        let base = "b".repeat(TURN_EVENT_TYPE_CHARS_MAX);
        let longest = event_type(&base, &"k".repeat(512), Turn::Own(JS_SAFE_INTEGER_MAX));
        assert!(
            is_event_type(&longest),
            "{longest} ({} chars)",
            longest.len()
        );
        assert_eq!(event_type("baton-turn", "k", Turn::Shared), "baton-turn");
    }

    #[test]
    fn turns_differ_by_key_and_by_registration() {
        let a = event_type("baton-turn", "deploy:a", Turn::Own(1));
        assert_eq!(a, event_type("baton-turn", "deploy:a", Turn::Own(1)));
        assert_ne!(a, event_type("baton-turn", "deploy:a", Turn::Own(2)));
        assert_ne!(a, event_type("baton-turn", "deploy:b", Turn::Own(1)));
        assert_ne!(a, event_type("baton-turn", "deploy:a", Turn::Shared));
    }

    #[test]
    fn turn_event_type_is_checked_with_room_for_the_suffix() {
        assert!(check_turn_event_type("baton-turn").is_ok());
        assert!(check_turn_event_type("_x").is_ok());
        assert!(check_turn_event_type(&"a".repeat(64)).is_ok());
        for bad in ["", "-x", "a b", "tür", &"a".repeat(65)] {
            let error = check_turn_event_type(bad).unwrap_err();
            assert!(error.contains("TURN_EVENT_TYPE"), "{error}");
        }
    }
}
