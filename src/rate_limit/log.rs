//! The decision-log line of a rate decision (contract §9): the one rule of
//! which line an acquire prints, returned in its transition for the shell
//! to print as it is.

use crate::transition::{LogKind, LogLine};

/// The line of an acquire of `permits` that granted `granted` and asks
/// the caller to wait `wait_ms`: a grant is routine (P5's hot path prints
/// nothing by default); a denial of every permit asked is worth its line.
/// It names no instance: a bucket's callers are not instances it knows.
pub(super) fn acquire_line(granted: u32, wait_ms: u64, permits: u32) -> LogLine {
    let (kind, decision) = if granted > 0 {
        (LogKind::Routine, "granted")
    } else {
        (LogKind::Contended, "denied")
    };
    LogLine {
        kind,
        instance: None,
        decision,
        reason: format!("{granted} of {permits} permit(s); retry in {wait_ms} ms").into(),
        waited_ms: None,
    }
}
