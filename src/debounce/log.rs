//! The decision-log lines of a Debouncer decision (contract §9): the one
//! rule of which lines a call prints, from its answer, returned in its
//! transition for the shell to print as it is; and the line of what a
//! create came to ([`created`]), which the shell prints when the
//! platform answers.

use super::decide::{DebounceReply, Outcome, StartAtReply};
use crate::ident::InstanceId;
use crate::transition::{Create, CreateOutcome, LogKind, LogLine};
use std::borrow::Cow;

/// The lines of a debounce call that answered `reply`: its own (routine
/// when it only moves the burst's fire time; a start at once or a
/// suppressed call is not), then each batch it started under an id it was
/// not told (the pending one its params would have taken past `maxBytes`).
pub(super) fn debounced(reply: &DebounceReply) -> Vec<LogLine> {
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

/// The line of a `startAt` that answered `reply`.
pub(super) fn started_at(reply: &StartAtReply) -> Vec<LogLine> {
    let reason = format!("startAt {}", crate::error::Number(reply.at));
    vec![line(
        LogKind::Routine,
        &reply.instance_id,
        "scheduled",
        reason.into(),
    )]
}

/// A flush prints no line: the start it makes says so in its create's.
pub(super) fn flushed(_: &Option<InstanceId>) -> Vec<LogLine> {
    Vec::new()
}

/// The line of a cancel that dropped the pending start `cancelled`, if
/// it dropped one.
pub(super) fn cancelled(cancelled: &Option<InstanceId>) -> Vec<LogLine> {
    cancelled
        .iter()
        .map(|id| {
            let reason = "its pending start was dropped".into();
            line(LogKind::Contended, id, "cancelled", reason)
        })
        .collect()
}

fn line(
    kind: LogKind,
    id: &InstanceId,
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

/// The line of what `create` came to: created (or the id was taken, a
/// done start), or failed, to be retried with backoff.
pub fn created(create: &Create, outcome: &CreateOutcome) -> LogLine {
    let (decision, reason): (_, Cow<'static, str>) = match outcome {
        CreateOutcome::Created => ("created", format!("attempt {}", create.attempt).into()),
        CreateOutcome::AlreadyExists => ("created", "the id exists: counted as done".into()),
        CreateOutcome::Failed(message) => (
            "create_failed",
            format!(
                "attempt {}: {message}; retried with backoff",
                create.attempt
            )
            .into(),
        ),
    };
    line(LogKind::Contended, &create.id, decision, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ident::InstanceId;

    #[test]
    fn a_creates_line_says_what_it_came_to() {
        let create = Create {
            id: InstanceId::new("d-1".to_string()).unwrap(),
            workflow: "W".to_string(),
            params: None,
            attempt: 2,
        };
        let said = |outcome| {
            let l = created(&create, &outcome);
            (l.kind, l.decision, l.reason.into_owned())
        };
        assert_eq!(
            said(CreateOutcome::Created),
            (LogKind::Contended, "created", "attempt 2".to_string())
        );
        assert_eq!(
            said(CreateOutcome::AlreadyExists),
            (
                LogKind::Contended,
                "created",
                "the id exists: counted as done".to_string()
            )
        );
        assert_eq!(
            said(CreateOutcome::Failed("boom".to_string())),
            (
                LogKind::Contended,
                "create_failed",
                "attempt 2: boom; retried with backoff".to_string()
            )
        );
    }
}
