//! Why a Runs decision printed its line, as data ([`Reason`]), and its
//! words (its `Display`), written only when the line prints. `log.rs`
//! picks the lines and their reasons.

use crate::ident::InstanceId;
use crate::workflow::{found_elsewhere_reason, Liveness};
use std::fmt;

/// A Runs decision's line.
pub type LogLine = crate::transition::LogLine<Reason>;

/// Why a decision printed its line, as data; its `Display` is the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Fixed words.
    Said(&'static str),
    /// §1a: the claimant found through another binding than `from`.
    FoundElsewhere { from: String, to: String },
    /// What a claim's check of the claimant found, and whether the caller
    /// replaced it.
    Checked {
        claimant: InstanceId,
        liveness: Liveness,
        replaced: bool,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Said(words) => f.write_str(words),
            Reason::FoundElsewhere { from, to } => f.write_str(&found_elsewhere_reason(from, to)),
            Reason::Checked {
                claimant,
                liveness,
                replaced,
            } => {
                write!(
                    f,
                    "claimant {claimant} checked: {}",
                    liveness_name(*liveness)
                )?;
                if *replaced {
                    f.write_str("; replaced")?;
                }
                Ok(())
            }
        }
    }
}

/// How the decision line names what a check found.
fn liveness_name(liveness: Liveness) -> &'static str {
    match liveness {
        Liveness::Alive => "Alive",
        Liveness::Dead => "Ended",
        Liveness::NotFound => "NotFound",
        Liveness::Unknown => "Unknown",
    }
}
