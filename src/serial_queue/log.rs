//! The serial queue's decision-log lines, as data: which decisions print
//! at the default level (`BATON_LOG`, contract §9) and what each says: a
//! decision's lines about others ([`super::Decided`]'s `log`), and the
//! caller's own line, in its command's [`super::Answer`]. The shell prints
//! them as they are.
//!
//! An enqueue that only joins, or claims a free group, involves no other
//! instance (a wait is logged by the claim that finds the group held), nor
//! does a claim that takes the group or a release that hands nothing on:
//! those are routine. Everything that waits, skips, times out, abandons or
//! hands the group on is contended.

use super::types::{ClaimReply, EnqueueReply, HandOn, Read, Released, SerialEnqueue};
use crate::ident::InstanceId;
use crate::transition::{Figures, LogKind, LogLine};

fn line(kind: LogKind, instance: &InstanceId, decision: &'static str, reason: String) -> LogLine {
    let reason = reason.into();
    LogLine {
        kind,
        instance: Some(instance.clone()),
        decision,
        reason,
        waited_ms: None,
        figures: Figures::default(),
    }
}

/// An enqueue's line, for its final reply (after a claim on enqueue's
/// check, if one re-entered).
pub(super) fn enqueue_line(request: &SerialEnqueue, reply: &EnqueueReply) -> LogLine {
    let (decision, superseded) = match reply {
        EnqueueReply::Waiting { superseded, .. } => ("waiting", superseded.len()),
        EnqueueReply::Claimed { superseded, claim } => (claim_name(claim), superseded.len()),
        EnqueueReply::Skipped { .. } => ("skipped", 0),
    };
    let reason = match reply {
        EnqueueReply::Skipped { current } => {
            format!("revision {} is not current ({current})", request.revision)
        }
        _ => format!("superseded {superseded} waiter(s)"),
    };
    let kind = match reply {
        EnqueueReply::Waiting { superseded, .. } if superseded.is_empty() => LogKind::Routine,
        EnqueueReply::Claimed {
            superseded,
            claim: ClaimReply::Holding { .. },
        } if superseded.is_empty() => LogKind::Routine,
        _ => LogKind::Contended,
    };
    line(kind, &request.instance_id, decision, reason)
}

/// A claim's line, for its final reply and what it read (`read.me`: how
/// long the caller has waited at `now_ms`).
pub(super) fn claim_line(id: &InstanceId, reply: &ClaimReply, read: &Read, now_ms: u64) -> LogLine {
    let reason = match reply {
        ClaimReply::Holding { .. } => "no live holder".to_string(),
        ClaimReply::Waiting {
            holder: Some(holder),
            ..
        } => format!("behind {holder}"),
        // Behind nobody: the group is paused (`super::decide::claimed`).
        ClaimReply::Waiting { holder: None, .. } => "the group is paused".to_string(),
        ClaimReply::Skipped { by, by_revision } => {
            format!("superseded by {by} at {by_revision}")
        }
        ClaimReply::TimedOut => "waited past the waiter timeout".to_string(),
    };
    let kind = match reply {
        ClaimReply::Holding { .. } => LogKind::Routine,
        _ => LogKind::Contended,
    };
    LogLine {
        waited_ms: read
            .me
            .as_ref()
            .map(|me| now_ms.saturating_sub(me.enqueued_at_ms)),
        ..line(kind, id, claim_name(reply), reason)
    }
}

/// A release's line; `handed_on` when the group went on to an instance
/// that was sent its event.
pub(super) fn release_line(id: &InstanceId, reply: Released, handed_on: bool) -> LogLine {
    let left = match reply {
        Released::HeldNothing => "held nothing",
        Released::LeftQueue => "left the queue",
        Released::FreedGroup => "freed the group",
    };
    let kind = if handed_on {
        LogKind::Contended
    } else {
        LogKind::Routine
    };
    line(kind, id, "released", left.to_string())
}

/// The lines of the holders a claim abandoned (stale, or found dead).
pub(super) fn abandoned_lines(abandoned: &[InstanceId]) -> Vec<LogLine> {
    let reason = "its heartbeat went stale, or its Workflow reported it dead";
    abandoned
        .iter()
        .map(|holder| line(LogKind::Contended, holder, "abandoned", reason.to_string()))
        .collect()
}

/// The line of the instance a group went on to, once its status is known.
pub(super) fn hand_on_line(next: &HandOn, dead: bool) -> LogLine {
    let (decision, reason) = match (dead, next.holding_since) {
        (true, _) => ("abandoned", "woken but dead"),
        (false, Some(_)) => ("handed", "handed the group by grant"),
        (false, None) => ("woken", "the group is free"),
    };
    line(LogKind::Contended, &next.to, decision, reason.to_string())
}

/// An operator's pause (contract §11): a line at every level but `off`
/// (as contended), about the group, naming no instance; the reason never
/// repeats the operator's words (lines carry identifiers only).
pub(super) fn pause_line(was_paused: bool) -> LogLine {
    let reason = if was_paused {
        "paused again: the reason replaced"
    } else {
        "paused by an operator: no claim succeeds and nobody is handed the group until resume"
    };
    group_line("paused", reason.to_string())
}

/// An operator's resume (contract §11), and whom the group went on to.
pub(super) fn resume_line(resumed: bool, to: Option<&InstanceId>) -> LogLine {
    let reason = match (resumed, to) {
        (false, _) => "was not paused".to_string(),
        (true, Some(to)) => format!("resumed: the group went on to {to}"),
        (true, None) => "resumed: nobody waits for a free group".to_string(),
    };
    group_line("resumed", reason)
}

/// A contended line about the group as a whole.
fn group_line(decision: &'static str, reason: String) -> LogLine {
    LogLine {
        kind: LogKind::Contended,
        instance: None,
        decision,
        reason: reason.into(),
        waited_ms: None,
        figures: Figures::default(),
    }
}

/// The decision-log word for a claim's reply.
fn claim_name(reply: &ClaimReply) -> &'static str {
    match reply {
        ClaimReply::Holding { .. } => "holding",
        ClaimReply::Waiting { .. } => "waiting",
        ClaimReply::Skipped { .. } => "skipped",
        ClaimReply::TimedOut => "timed_out",
    }
}
