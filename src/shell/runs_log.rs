//! The decision lines of a `Runs` claim: the claim's own, and §1a's
//! `warn` line when its check found the claimant through another binding
//! (`shell::found`).

use super::decision_log::{self, Kind, Scope};
use super::found;
use crate::ident::InstanceId;
use crate::runs::{Checked, ClaimReply};
use crate::workflow::Liveness;

/// Prints a claim's lines: what the check of the claimant found, if one
/// was made, and whether the caller claimed or joined (`default_workflow`
/// names a claim remembered without a binding).
pub fn claimed(
    scope: Scope<'_>,
    caller: &InstanceId,
    answer: &ClaimReply,
    checked: Option<Checked>,
    default_workflow: &str,
) {
    let reason = match &checked {
        None => "decided without a check".to_string(),
        Some(c) if c.replaced => format!(
            "claimant {} checked: {}; replaced",
            c.claimant,
            liveness_name(c.liveness)
        ),
        Some(c) => format!(
            "claimant {} checked: {}",
            c.claimant,
            liveness_name(c.liveness)
        ),
    };
    if let Some(Checked {
        claimant,
        rebound: Some((from, to)),
        ..
    }) = &checked
    {
        let from = from.as_deref().unwrap_or(default_workflow);
        found::warn(scope, claimant.as_str(), from, to);
    }
    // Joining a run that another caller holds coalesces the two.
    let (name, kind) = match answer {
        ClaimReply::Claimed => ("claimed", Kind::Routine),
        ClaimReply::Taken(_) => ("taken", Kind::Contended),
    };
    decision_log::decision(kind, scope, caller.as_str(), name, &reason, None);
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
