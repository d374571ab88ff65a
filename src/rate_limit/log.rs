//! The decision-log line of a rate decision (contract §9): the one rule of
//! which line an acquire prints, returned in its transition for the shell
//! to print as it is.

use super::decide::AcquireReply;
use crate::transition::{LogKind, LogLine};

/// An acquire's line: a grant is routine (P5's hot path prints nothing by
/// default); a denial of every permit asked is worth its line. It names no
/// instance: a bucket's callers are not Workflow instances it knows.
pub(super) fn acquire_line(reply: &AcquireReply, permits: u32) -> LogLine {
    let (kind, decision) = if reply.granted > 0 {
        (LogKind::Routine, "granted")
    } else {
        (LogKind::Contended, "denied")
    };
    LogLine {
        kind,
        instance: None,
        decision,
        reason: format!(
            "{} of {permits} permit(s); retry in {} ms",
            reply.granted, reply.wait_ms
        )
        .into(),
        waited_ms: None,
    }
}
