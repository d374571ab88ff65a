//! The decision-log lines of a Runs decision (contract §9): the one rule
//! of which lines a decision prints, returned in its transition for the
//! shell to print as it is, each reason a [`Reason`] worded by its
//! `Display` only when its line prints.

use super::decide::{Checked, ClaimReply, Input, Reply, Transition, Write};
use crate::ident::InstanceId;
use crate::transition::{Figures, Lines, LogKind};
use crate::workflow::FOUND_ELSEWHERE;

pub use super::reason::{LogLine, Reason};

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
pub(super) fn of(caller: Option<InstanceId>, transition: &Transition) -> Lines<Reason> {
    let mut lines = Lines::new();
    match (&transition.reply, caller) {
        (Reply::Claim { answer, checked }, Some(caller)) => {
            if let Some(Checked {
                claimant,
                rebound: Some((from, to)),
                ..
            }) = checked
            {
                let reason = Reason::FoundElsewhere {
                    from: from.clone(),
                    to: to.clone(),
                };
                let claimant = Some(claimant.clone());
                lines.push(line(LogKind::Warn, claimant, FOUND_ELSEWHERE, reason));
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
                Reason::Said("outcome recorded"),
            ),
            // An outcome from anyone but the claimant is refused.
            None => line(
                LogKind::Contended,
                Some(caller),
                "ignored",
                Reason::Said("not the claimant of an unfinished run"),
            ),
        }),
        _ => {}
    }
    if (transition.writes.iter()).any(|w| matches!(w, Write::Delete)) {
        let reason = Reason::Said("retention over");
        lines.push(line(LogKind::Routine, None, "deleted", reason));
    }
    lines
}

/// What a claim's check found, if one was made.
fn claim_reason(checked: &Option<Checked>) -> Reason {
    match checked {
        None => Reason::Said("decided without a check"),
        Some(c) => Reason::Checked {
            claimant: c.claimant.clone(),
            liveness: c.liveness,
            replaced: c.replaced,
        },
    }
}

fn line(
    kind: LogKind,
    instance: Option<InstanceId>,
    decision: &'static str,
    reason: Reason,
) -> LogLine {
    LogLine {
        kind,
        instance,
        decision,
        reason,
        waited_ms: None,
        figures: Figures::default(),
    }
}
