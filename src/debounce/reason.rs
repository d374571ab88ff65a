//! Why a Debouncer decision printed its line, as data ([`Reason`]), and
//! its words (its `Display`), written only when the line prints. `log.rs`
//! picks the lines and their reasons.

use super::state::BatchLimit;
use std::fmt;

/// A Debouncer decision's line.
pub type LogLine = crate::transition::LogLine<Reason>;

/// Why a decision printed its line, as data; its `Display` is the words.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// Fixed words.
    Said(&'static str),
    /// A call that moved the burst's trailing start.
    FiresAt(u64),
    /// A batch started before its burst ended, by the bound it reached
    /// (counts only, no params).
    Batch {
        items: u32,
        bytes: u64,
        by: BatchLimit,
    },
    /// A `startAt` scheduled for its time.
    StartAt(f64),
    /// A create that went through, on its `attempt`.
    Created { attempt: u32 },
    /// A create that failed, to be retried with backoff.
    CreateFailed { attempt: u32, message: String },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Said(words) => f.write_str(words),
            Reason::FiresAt(at) => write!(f, "fires at {at}"),
            Reason::Batch {
                items,
                by: BatchLimit::MaxItems(max),
                ..
            } => write!(f, "batch of {items} params reached maxItems {max}"),
            Reason::Batch {
                items,
                bytes,
                by: BatchLimit::MaxBytes(max),
            } => write!(
                f,
                "batch of {items} params ({bytes} bytes) started: the next call's would pass maxBytes {max}"
            ),
            Reason::StartAt(at) => write!(f, "startAt {}", crate::error::Number(*at)),
            Reason::Created { attempt } => write!(f, "attempt {attempt}"),
            Reason::CreateFailed { attempt, message } => {
                write!(f, "attempt {attempt}: {message}; retried with backoff")
            }
        }
    }
}
