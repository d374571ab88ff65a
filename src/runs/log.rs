//! The decision-log lines of a Runs decision (contract §9): the one rule
//! of which lines a decision prints, returned in its transition for the
//! shell to print as it is.

use super::decide::{Checked, ClaimReply, Input, Reply, Transition, Write};
use crate::ident::InstanceId;
use crate::transition::{LogKind, LogLine};
use crate::workflow::{found_elsewhere_reason, Liveness, FOUND_ELSEWHERE};

/// The instance a decision on `input` is about, if it names one.
pub(super) fn caller(input: &Input) -> Option<InstanceId> {
    match input {
        Input::Claim { request, .. } => Some(request.id.clone()),
        Input::Checked { pending, .. } => Some(pending.request.id.clone()),
        Input::Complete { request, .. } => Some(request.id.clone()),
        Input::Await { .. } | Input::Append(_) | Input::Events { .. } | Input::Tick => None,
    }
}

/// The lines of `transition`, a decision on `caller`'s call: a claim's
/// (§1a's `warn` first when its check found the claimant through another
/// binding; then whether the caller claimed or joined, and what the check
/// found, if one was made), a completion's, a deletion's (the retention
/// is over). A claim still checking prints nothing yet.
pub(super) fn of(caller: Option<&InstanceId>, transition: &Transition) -> Vec<LogLine> {
    let mut lines = Vec::new();
    match (&transition.reply, caller) {
        (Reply::Claim { answer, checked }, Some(caller)) => {
            if let Some(Checked {
                claimant,
                rebound: Some((from, to)),
                ..
            }) = checked
            {
                let reason = found_elsewhere_reason(from, to);
                lines.push(line(LogKind::Warn, Some(claimant), FOUND_ELSEWHERE, reason));
            }
            // Joining a run that another caller holds coalesces the two.
            let (decision, kind) = match answer {
                ClaimReply::Claimed => ("claimed", LogKind::Routine),
                ClaimReply::Taken(_) => ("taken", LogKind::Contended),
            };
            lines.push(line(kind, Some(caller), decision, claim_reason(checked)));
        }
        (Reply::Complete(recorded), Some(caller)) => lines.push(match recorded {
            Some(_) => line(
                LogKind::Routine,
                Some(caller),
                "completed",
                "outcome recorded",
            ),
            // An outcome from anyone but the claimant is refused.
            None => line(
                LogKind::Contended,
                Some(caller),
                "ignored",
                "not the claimant of an unfinished run",
            ),
        }),
        _ => {}
    }
    if (transition.writes.iter()).any(|w| matches!(w, Write::Delete)) {
        lines.push(line(LogKind::Routine, None, "deleted", "retention over"));
    }
    lines
}

/// What a claim's check found, if one was made.
fn claim_reason(checked: &Option<Checked>) -> String {
    match checked {
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

fn line(
    kind: LogKind,
    instance: Option<&InstanceId>,
    decision: &'static str,
    reason: impl Into<std::borrow::Cow<'static, str>>,
) -> LogLine {
    LogLine {
        kind,
        instance: instance.cloned(),
        decision,
        reason: reason.into(),
        waited_ms: None,
    }
}
