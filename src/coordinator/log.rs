//! The decision-log line of each Coordinator decision (contract §9), as
//! data: [`line`] is the one rule of which line a decision prints and of
//! what kind; the shell prints it as it is (`shell::decision_log`), and
//! the simulation judges it against its own rule.

use super::draft::Before;
use super::types::history::{Did, Outcome};
use super::types::{AcquireReply, EnqueueReply, Holder, Input, Liveness, Member, Reply, View};
use crate::ident::{InstanceId, WorkflowName};
use std::borrow::Cow;

pub use crate::transition::{LogKind, LogLine};

/// What a decision was about, as its line needs it: taken from the input
/// before the decision consumes it.
#[derive(Debug, Clone)]
pub enum Cause {
    Enqueue(InstanceId),
    Acquire(InstanceId),
    AcquireChecked {
        id: InstanceId,
        holder: InstanceId,
        liveness: Liveness,
    },
    Release(InstanceId),
    /// A woken holder's status, the holder as handed.
    WokenChecked {
        holder: Holder,
        liveness: Liveness,
    },
    TickChecked {
        holder: InstanceId,
        liveness: Liveness,
    },
    /// §11: an operator's pause, resume or limit: a line at every level
    /// but `off`, with no instance.
    Steer,
    /// §1d: a cancelled holder's status after its termination.
    Cancelled {
        holder: InstanceId,
        liveness: Liveness,
    },
    /// §1a: an instance found through another binding than `from`.
    Rebound {
        id: InstanceId,
        from: String,
        to: WorkflowName,
    },
    /// A tick, or a grant the engine accepted: no line.
    Nothing,
}

impl Cause {
    /// The line reads the key's holders as they were before the decision
    /// (`woken`, `rebound`): the decision keeps a copy of them for it.
    pub fn reads_holders_before(&self) -> bool {
        matches!(self, Cause::WokenChecked { .. } | Cause::Rebound { .. })
    }

    pub fn of(input: &Input) -> Cause {
        match input {
            Input::Enqueue(request) | Input::EnqueueChecked { request, .. } => {
                Cause::Enqueue(request.id.clone())
            }
            Input::Acquire(request) => Cause::Acquire(request.id.clone()),
            Input::AcquireChecked {
                request,
                holder,
                answer,
            } => Cause::AcquireChecked {
                id: request.id.clone(),
                holder: holder.id.clone(),
                liveness: answer.liveness(),
            },
            Input::Release(id) => Cause::Release(id.clone()),
            Input::Woken { holder, answer } => Cause::WokenChecked {
                holder: holder.clone(),
                liveness: answer.liveness(),
            },
            Input::TickChecked { holder, answer } => Cause::TickChecked {
                holder: holder.id.clone(),
                liveness: answer.liveness(),
            },
            Input::Pause { .. } | Input::Resume | Input::SetLimit(_) => Cause::Steer,
            Input::Cancelled { holder, answer } => Cause::Cancelled {
                holder: holder.id.clone(),
                liveness: answer.liveness(),
            },
            Input::Rebound { id, from, workflow } => Cause::Rebound {
                id: id.clone(),
                from: from.clone(),
                to: workflow.clone(),
            },
            Input::Accepted { .. } | Input::Tick => Cause::Nothing,
        }
    }
}

/// What the decision came to, as its line reads it.
pub struct Consequence<'a> {
    /// The view it was taken on, without its summary (moved into the
    /// decision): what the summary was is `was`.
    pub before: &'a View,
    pub was: &'a Before,
    pub reply: &'a Reply,
    /// It asked for no effect and left the key without the alarm.
    pub quiet: bool,
    /// The caller's place after it, if the input names one.
    pub member: Option<&'a Member>,
    pub did: &'a Did,
    pub now_ms: u64,
}

fn line(
    kind: LogKind,
    instance: &InstanceId,
    decision: &'static str,
    reason: impl Into<Cow<'static, str>>,
    waited_ms: Option<u64>,
) -> Option<LogLine> {
    Some(LogLine {
        kind,
        instance: Some(instance.clone()),
        decision,
        reason: reason.into(),
        waited_ms,
    })
}

/// The word of an acquire's answer (contract §1).
fn outcome(reply: &AcquireReply) -> &'static str {
    match reply {
        AcquireReply::Granted { .. } => "granted",
        AcquireReply::Pending | AcquireReply::Placed(_) => "pending",
        AcquireReply::Superseded => "superseded",
        AcquireReply::Busy => "busy",
        AcquireReply::Full => "full",
    }
}

/// §1f's reason: the key already has its `maxWaiting` waiters.
const FULL: &str = "maxWaiting: the key has as many waiters as its cap; nothing registered";

/// The one rule of the line a decision prints, if any. A first phase that
/// waits for a check prints nothing: its second phase's line says what
/// came of it.
pub fn of(cause: &Cause, d: &Consequence<'_>) -> Option<LogLine> {
    use LogKind::{Contended, Routine};
    match (cause, d.reply) {
        (Cause::Enqueue(id), Reply::Enqueue(reply)) => enqueued(id, reply),
        (Cause::Acquire(id), Reply::Acquire(reply)) => {
            // Answered at once, granted: routine. Anything that wakes
            // slots ahead of the caller or arms the alarm: contended.
            let routine = matches!(reply, AcquireReply::Granted { .. }) && d.quiet;
            let kind = if routine { Routine } else { Contended };
            let reason = match reply {
                AcquireReply::Full => FULL,
                _ => "decided without a check",
            };
            line(kind, id, outcome(reply), reason, None)
        }
        (
            Cause::AcquireChecked {
                id,
                holder,
                liveness,
            },
            Reply::Acquire(reply),
        ) => {
            let waited_ms = match d.member {
                Some(Member::Waiter(w)) => Some(d.now_ms.saturating_sub(w.since_ms)),
                _ => None,
            };
            // This path checks a holder: the key is contended whatever
            // the answer.
            line(
                Contended,
                id,
                outcome(reply),
                format!("holder {holder} checked: {liveness:?}"),
                waited_ms,
            )
        }
        (Cause::Release(id), Reply::Release(next)) => released(id, next.as_ref(), d),
        (Cause::Steer, reply) => steer(reply, d),
        (Cause::WokenChecked { holder, liveness }, _) => woken(holder, *liveness, d),
        (Cause::Cancelled { holder, liveness }, _) => cancelled(holder, *liveness, d),
        (Cause::Rebound { id, from, to }, _) => rebound(id, from, to, d),
        (Cause::TickChecked { holder, liveness }, _) => line(
            Contended,
            holder,
            "checked",
            format!("holder check: {liveness:?}"),
            None,
        ),
        _ => None,
    }
}

/// An enqueue's line: what it did, coalescing, busy, cancelling (§1d),
/// superseding, or a plain join.
fn enqueued(id: &InstanceId, reply: &EnqueueReply) -> Option<LogLine> {
    use LogKind::{Contended, Routine};
    match &reply.coalesced_into {
        Some(into) => line(
            Contended,
            id,
            "coalesced",
            format!("a live waiter with the same input: {into}"),
            None,
        ),
        None if reply.full => line(Contended, id, "full", FULL, None),
        None if reply.busy => line(Contended, id, "busy", "onBusy skip: the key is busy", None),
        // §1d: a cancellation prints whatever else the call did.
        None if !reply.cancelled.is_empty() => line(
            Contended,
            id,
            "cancelled",
            format!(
                "cancelled {} holder(s): {}; superseded {} waiter(s)",
                reply.cancelled.len(),
                (reply.cancelled.iter())
                    .map(|h| h.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                reply.terminated.len()
            ),
            None,
        ),
        // A plain join waits only if its acquire finds the key taken:
        // that acquire's line says so.
        None if reply.terminated.is_empty() => {
            line(Routine, id, "enqueued", "joined the queue", None)
        }
        None => line(
            Contended,
            id,
            "enqueued",
            format!("superseded {} waiter(s)", reply.terminated.len()),
            None,
        ),
    }
}

/// A release's line: handed on, held on a paused key (§11), or routine.
fn released(id: &InstanceId, next: Option<&InstanceId>, d: &Consequence<'_>) -> Option<LogLine> {
    match next {
        None if released_paused(id, d) => line(
            LogKind::Contended,
            id,
            "released",
            "the key is paused: its slot is not handed on",
            None,
        ),
        Some(next) => line(
            LogKind::Contended,
            id,
            "released",
            format!("handed the key to {next}"),
            None,
        ),
        None => line(
            LogKind::Routine,
            id,
            "released",
            "released as a waiter, or held nothing",
            None,
        ),
    }
}

/// §1d: "terminated" once the cancelled holder is found dead and its slot
/// goes on; else what its status said.
fn cancelled(holder: &InstanceId, liveness: Liveness, d: &Consequence<'_>) -> Option<LogLine> {
    let ended = (d.did.ended.iter()).any(|(h, o)| h.id == *holder && *o == Outcome::Dead);
    let reason = if ended {
        Cow::Borrowed("cancelled holder found dead: its slot goes on")
    } else {
        Cow::Owned(format!("cancelled holder terminated, status: {liveness:?}"))
    };
    let decision = if ended { "terminated" } else { "checked" };
    line(LogKind::Contended, holder, decision, reason, None)
}

/// §1a: the one `warn` line of an instance found through another binding,
/// printed by the decision that changes the binding it is remembered with
/// (so once: the next check finds it through the new one).
fn rebound(id: &InstanceId, from: &str, to: &WorkflowName, d: &Consequence<'_>) -> Option<LogLine> {
    let remembered = match &d.before.member {
        Some(Member::Waiter(w)) if w.id == *id => Some(w.workflow.as_ref()),
        _ => None,
    };
    let remembered = (d.was.holders.iter())
        .find(|h| h.id == *id)
        .map(|h| h.workflow.as_ref())
        .or(remembered)?;
    (remembered != Some(to)).then(|| LogLine {
        kind: LogKind::Warn,
        instance: Some(id.clone()),
        decision: crate::workflow::FOUND_ELSEWHERE,
        reason: crate::workflow::found_elsewhere_reason(from, to.as_str()).into(),
        waited_ms: None,
    })
}

/// Whether a release by `id` ended its hold on a paused key (§11).
fn released_paused(id: &InstanceId, d: &Consequence<'_>) -> bool {
    d.was.paused && d.did.ended.iter().any(|(h, _)| h.id == *id)
}

/// §11: an operator's decision on the whole key: printed at every level
/// but `off` (as contended), with no instance; the reason never repeats
/// the operator's words (lines carry identifiers only).
fn steer(reply: &Reply, d: &Consequence<'_>) -> Option<LogLine> {
    let was_paused = d.was.paused;
    let handed = d.did.granted_waiters.len();
    let (decision, reason): (&'static str, String) = match reply {
        Reply::Paused(_) if was_paused => ("paused", "paused again: the reason replaced".into()),
        Reply::Paused(_) => (
            "paused",
            "paused by an operator: no slot is handed on until resume".into(),
        ),
        Reply::Resumed(_) if was_paused => {
            ("resumed", format!("resumed: {handed} slot(s) handed on"))
        }
        Reply::Resumed(_) => ("resumed", "was not paused".into()),
        Reply::LimitSet {
            limit,
            limit_override: Some(_),
        } => (
            "limit set",
            format!("override {limit} in force: {handed} slot(s) handed on"),
        ),
        Reply::LimitSet { limit, .. } => (
            "limit set",
            format!("no override: the callers' limit {limit} in force: {handed} slot(s) handed on"),
        ),
        _ => return None,
    };
    Some(LogLine {
        kind: LogKind::Contended,
        instance: None,
        decision,
        reason: reason.into(),
        waited_ms: None,
    })
}

/// A woken holder's status, answered neither alive nor unknown: "skipped"
/// only when the decision skipped it, the slot still held as handed; a
/// holder that confirmed its slot since and is found dead now is a holder
/// check's answer; one that released (or was handed on) since is nothing
/// this decision did.
fn woken(handed: &Holder, liveness: Liveness, d: &Consequence<'_>) -> Option<LogLine> {
    let id = &handed.id;
    let as_handed = d.was.holders.iter().any(|h| h == handed);
    let found_dead = d
        .did
        .ended
        .iter()
        .any(|(h, o)| h.id == *id && *o == Outcome::Dead);
    match (as_handed, found_dead) {
        (true, true) => line(
            LogKind::Contended,
            id,
            "skipped",
            "handed the key but dead",
            None,
        ),
        (true, false) if liveness == Liveness::NotFound => line(
            LogKind::Contended,
            id,
            "skipped",
            "handed the key but not created yet: keeps it within the grace",
            None,
        ),
        (false, true) => line(
            LogKind::Contended,
            id,
            "checked",
            format!("holder check: {liveness:?}"),
            None,
        ),
        _ => None,
    }
}

/// The line of a turn event sent to `id`, a holder handed the key: what
/// the hand-off's effect came to, which the shell prints once the send
/// went through (one that threw prints nothing; the alarm sends again).
pub fn sent_turn(id: &InstanceId) -> LogLine {
    LogLine {
        kind: LogKind::Contended,
        instance: Some(id.clone()),
        decision: "woken",
        reason: Cow::Borrowed("handed the key"),
        waited_ms: None,
    }
}
