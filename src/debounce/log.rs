//! The decision-log lines of a Debouncer decision (contract §9): the one
//! rule of which lines a call prints, from its answer, returned in its
//! transition for the shell to print as it is; and the line of what a
//! create came to ([`created`]), which the shell prints when the
//! platform answers. Each reason is a [`Reason`], worded by its `Display`
//! only when its line prints.

use super::decide::{DebounceReply, Outcome, StartAtReply};
pub use super::reason::{LogLine, Reason};
use crate::ident::InstanceId;
use crate::transition::{Create, CreateOutcome, Figures, Lines, LogKind};

/// The lines of a debounce call that answered `reply`: its own (routine
/// when it only moves the burst's fire time; a start at once or a
/// suppressed call is not), then each batch it started under an id it was
/// not told (the pending one its params would have taken past `maxBytes`).
pub(super) fn debounced(reply: &DebounceReply) -> Lines<Reason> {
    let batch = |b: &super::state::BatchStarted| Reason::Batch {
        items: b.items,
        bytes: b.bytes,
        by: b.by,
    };
    let own_batch = (reply.batches_started.iter()).find(|b| b.id == reply.instance_id);
    let reason = match (reply.fire_at_ms, own_batch) {
        (Some(at), _) => Reason::FiresAt(at),
        (None, Some(b)) => batch(b),
        (None, None) => Reason::Said("the burst's leading start"),
    };
    let kind = match reply.outcome {
        Outcome::Scheduled => LogKind::Routine,
        Outcome::Started | Outcome::Suppressed => LogKind::Contended,
    };
    let own = line(kind, &reply.instance_id, reply.outcome.as_str(), reason);
    let others = (reply.batches_started.iter())
        .filter(|b| b.id != reply.instance_id)
        .map(|b| line(LogKind::Contended, &b.id, "started", batch(b)));
    std::iter::once(own).chain(others).collect()
}

/// The line of a `startAt` that answered `reply`.
pub(super) fn started_at(reply: &StartAtReply) -> Lines<Reason> {
    let reason = Reason::StartAt(reply.at);
    line(LogKind::Routine, &reply.instance_id, "scheduled", reason).into()
}

/// A flush prints no line: the start it makes says so in its create's.
pub(super) fn flushed(_: &Option<InstanceId>) -> Lines<Reason> {
    Lines::None
}

/// The line of a cancel that dropped the pending start `cancelled`, if
/// it dropped one.
pub(super) fn cancelled(cancelled: &Option<InstanceId>) -> Lines<Reason> {
    let reason = Reason::Said("its pending start was dropped");
    let line = |id| line(LogKind::Contended, id, "cancelled", reason);
    cancelled.as_ref().map(line).into()
}

fn line(kind: LogKind, id: &InstanceId, decision: &'static str, reason: Reason) -> LogLine {
    LogLine {
        kind,
        instance: Some(id.clone()),
        decision,
        reason,
        waited_ms: None,
        figures: Figures::default(),
    }
}

/// The line of what `create` came to: created (or the id was taken, a
/// done start), or failed, to be retried with backoff.
pub fn created(create: &Create, outcome: &CreateOutcome) -> LogLine {
    let attempt = create.attempt;
    let (decision, reason) = match outcome {
        CreateOutcome::Created => ("created", Reason::Created { attempt }),
        CreateOutcome::AlreadyExists => ("created", Reason::Said("the id exists: counted as done")),
        CreateOutcome::Failed(message) => (
            "create_failed",
            Reason::CreateFailed {
                attempt,
                message: message.clone(),
            },
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
            (l.kind, l.decision, l.reason.to_string())
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
