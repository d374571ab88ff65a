//! The decision-log lines of a Debouncer decision (contract §9): the one
//! rule of which lines a decision prints, from its reply, returned in its
//! transition for the shell to print as it is. (A create's outcome is
//! logged where the create is made, with the platform's answer.)

use super::decide::{Outcome, Reply};
use crate::transition::{LogKind, LogLine};
use std::borrow::Cow;

/// The lines of a decision that replied `reply`: a debounce call's own
/// (routine when it only moves the burst's fire time; a start at once or
/// a suppressed call is not), then each batch it started under an id it
/// was not told (the pending one its params would have taken past
/// `maxBytes`); a `startAt`'s; a cancel that dropped a pending start.
pub(super) fn of(reply: &Reply) -> Vec<LogLine> {
    match reply {
        Reply::Debounce(reply) => {
            let own_batch = (reply.batches_started.iter()).find(|b| b.id == reply.instance_id);
            let reason: Cow<'static, str> = match (reply.fire_at_ms, own_batch) {
                (Some(at), _) => format!("fires at {at}").into(),
                (None, Some(batch)) => batch.reason().into(),
                (None, None) => "the burst's leading start".into(),
            };
            let kind = match reply.outcome {
                Outcome::Scheduled => LogKind::Routine,
                Outcome::Started | Outcome::Suppressed => LogKind::Contended,
            };
            let own = line(kind, &reply.instance_id, reply.outcome.as_str(), reason);
            let others = (reply.batches_started.iter())
                .filter(|b| b.id != reply.instance_id)
                .map(|b| line(LogKind::Contended, &b.id, "started", b.reason().into()));
            std::iter::once(own).chain(others).collect()
        }
        Reply::StartAt { instance_id, at } => {
            let reason = format!("startAt {}", crate::error::Number(*at));
            vec![line(
                LogKind::Routine,
                instance_id,
                "scheduled",
                reason.into(),
            )]
        }
        Reply::Cancel {
            cancelled: Some(id),
        } => {
            let reason = "its pending start was dropped".into();
            vec![line(LogKind::Contended, id, "cancelled", reason)]
        }
        Reply::Cancel { cancelled: None } | Reply::Flush { .. } | Reply::Nothing => Vec::new(),
    }
}

fn line(
    kind: LogKind,
    id: &crate::ident::InstanceId,
    decision: &'static str,
    reason: Cow<'static, str>,
) -> LogLine {
    LogLine {
        kind,
        instance: Some(id.clone()),
        decision,
        reason,
        waited_ms: None,
    }
}
