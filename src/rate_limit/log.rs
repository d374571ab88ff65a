//! The decision-log line of a rate decision (contract §9): the one rule of
//! which line an acquire prints, returned in its transition for the shell
//! to print as it is, its reason as data ([`Reason`]) worded only when it
//! prints.

use crate::transition::{Figures, LogKind, LogLine};
use std::fmt;

/// Why an acquire answered as it did: its counts, worded when printed
/// (`{granted} of {permits} permit(s); retry in {wait_ms} ms`). A grant's
/// line is routine, so at the default level it is never worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    pub granted: u32,
    pub permits: u32,
    pub wait_ms: u64,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Reason {
            granted,
            permits,
            wait_ms,
        } = self;
        write!(f, "{granted} of {permits} permit(s); retry in {wait_ms} ms")
    }
}

/// The line of an acquire of `permits` that granted `granted` and asks
/// the caller to wait `wait_ms`: a grant is routine (P5's hot path prints
/// nothing by default); a denial of every permit asked is worth its line.
/// It names no instance: a bucket's callers are not instances it knows.
pub(super) fn acquire_line(granted: u32, wait_ms: u64, permits: u32) -> LogLine<Reason> {
    let (kind, decision) = if granted > 0 {
        (LogKind::Routine, "granted")
    } else {
        (LogKind::Contended, "denied")
    };
    LogLine {
        kind,
        instance: None,
        decision,
        reason: Reason {
            granted,
            permits,
            wait_ms,
        },
        waited_ms: None,
        figures: Figures::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acquires_reason_is_worded_as_the_contract_shows_it() {
        let line = acquire_line(0, 250, 3);
        assert_eq!((line.kind, line.decision), (LogKind::Contended, "denied"));
        assert_eq!(line.reason.to_string(), "0 of 3 permit(s); retry in 250 ms");
        let line = acquire_line(2, 0, 3);
        assert_eq!((line.kind, line.decision), (LogKind::Routine, "granted"));
        assert_eq!(line.reason.to_string(), "2 of 3 permit(s); retry in 0 ms");
    }
}
