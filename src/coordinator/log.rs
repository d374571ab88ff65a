//! The decision-log line of each Coordinator decision (contract §9), as
//! data: [`of`] is the one rule of which line a decision prints and of
//! what kind, its reason a [`Reason`] (worded by its `Display` only when
//! the line prints) and its §9a figures taken as the decision leaves the
//! key ([`figures`]); the shell prints it as it is (`shell::decision_log`),
//! after the write, and the simulation judges it against its own rule.

use super::draft::Before;
use super::types::history::HistoryWrite;
use super::types::history::{Did, Outcome};
use super::types::{AcquireReply, EnqueueReply, Holder, Input, Liveness, Member, Reply, View};
use super::types::{Settings, Summary, Write};
use crate::ident::{InstanceId, WorkflowName};
use crate::transition::Figures;

pub use super::types::reason::{LogLine, Reason};
pub use crate::transition::LogKind;

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
    instance: InstanceId,
    decision: &'static str,
    reason: Reason,
    waited_ms: Option<u64>,
) -> Option<LogLine> {
    Some(LogLine {
        kind,
        instance: Some(instance),
        decision,
        reason,
        waited_ms,
        figures: Figures::default(),
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
/// came of it. The line takes the ids it names from `cause`.
pub fn of(cause: Cause, d: &Consequence<'_>) -> Option<LogLine> {
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
            line(kind, id, outcome(reply), Reason::Said(reason), None)
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
            let reason = Reason::HolderChecked { holder, liveness };
            line(Contended, id, outcome(reply), reason, waited_ms)
        }
        (Cause::Release(id), Reply::Release(next)) => released(id, next.as_ref(), d),
        (Cause::Steer, reply) => steer(reply, d),
        (Cause::WokenChecked { holder, liveness }, _) => woken(holder, liveness, d),
        (Cause::Cancelled { holder, liveness }, _) => cancelled(holder, liveness, d),
        (Cause::Rebound { id, from, to }, _) => rebound(id, from, to, d),
        (Cause::TickChecked { holder, liveness }, _) => line(
            Contended,
            holder,
            "checked",
            Reason::HolderCheck(liveness),
            None,
        ),
        _ => None,
    }
}

/// An enqueue's line: what it did, coalescing, busy, cancelling (§1d),
/// superseding, or a plain join.
fn enqueued(id: InstanceId, reply: &EnqueueReply) -> Option<LogLine> {
    use LogKind::{Contended, Routine};
    let said = Reason::Said;
    match &reply.coalesced_into {
        Some(into) => line(
            Contended,
            id,
            "coalesced",
            Reason::Coalesced(into.clone()),
            None,
        ),
        None if reply.full => line(Contended, id, "full", said(FULL), None),
        None if reply.busy => line(
            Contended,
            id,
            "busy",
            said("onBusy skip: the key is busy"),
            None,
        ),
        // §1d: a cancellation prints whatever else the call did.
        None if !reply.cancelled.is_empty() => line(
            Contended,
            id,
            "cancelled",
            Reason::Cancelled {
                holders: reply.cancelled.iter().map(|h| h.id.clone()).collect(),
                superseded: reply.terminated.len(),
            },
            None,
        ),
        // A plain join waits only if its acquire finds the key taken:
        // that acquire's line says so.
        None if reply.terminated.is_empty() => {
            line(Routine, id, "enqueued", said("joined the queue"), None)
        }
        None => line(
            Contended,
            id,
            "enqueued",
            Reason::Superseded(reply.terminated.len()),
            None,
        ),
    }
}

/// A release's line: handed on, held on a paused key (§11), or routine.
fn released(id: InstanceId, next: Option<&InstanceId>, d: &Consequence<'_>) -> Option<LogLine> {
    let (kind, reason) = match next {
        None if released_paused(&id, d) => (
            LogKind::Contended,
            Reason::Said("the key is paused: its slot is not handed on"),
        ),
        Some(next) => (LogKind::Contended, Reason::HandedTo(next.clone())),
        None => (
            LogKind::Routine,
            Reason::Said("released as a waiter, or held nothing"),
        ),
    };
    line(kind, id, "released", reason, None)
}

/// §1d: "terminated" once the cancelled holder is found dead and its slot
/// goes on; else what its status said.
fn cancelled(holder: InstanceId, liveness: Liveness, d: &Consequence<'_>) -> Option<LogLine> {
    let ended = (d.did.ended.iter()).any(|(h, o)| h.id == holder && *o == Outcome::Dead);
    let (decision, reason) = if ended {
        let said = "cancelled holder found dead: its slot goes on";
        ("terminated", Reason::Said(said))
    } else {
        ("checked", Reason::Terminated(liveness))
    };
    line(LogKind::Contended, holder, decision, reason, None)
}

/// §1a: the one `warn` line of an instance found through another binding,
/// printed by the decision that changes the binding it is remembered with
/// (so once: the next check finds it through the new one).
fn rebound(id: InstanceId, from: String, to: WorkflowName, d: &Consequence<'_>) -> Option<LogLine> {
    let remembered = match &d.before.member {
        Some(Member::Waiter(w)) if w.id == id => Some(w.workflow.as_ref()),
        _ => None,
    };
    let remembered = (d.was.holders.iter())
        .find(|h| h.id == id)
        .map(|h| h.workflow.as_ref())
        .or(remembered)?;
    if remembered == Some(&to) {
        return None;
    }
    let reason = Reason::FoundElsewhere { from, to };
    let decision = crate::workflow::FOUND_ELSEWHERE;
    line(LogKind::Warn, id, decision, reason, None)
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
    let said = Reason::Said;
    let (decision, reason) = match reply {
        Reply::Paused(_) if was_paused => ("paused", said("paused again: the reason replaced")),
        Reply::Paused(_) => (
            "paused",
            said("paused by an operator: no slot is handed on until resume"),
        ),
        Reply::Resumed(_) if was_paused => ("resumed", Reason::Resumed { handed }),
        Reply::Resumed(_) => ("resumed", said("was not paused")),
        Reply::LimitSet {
            limit,
            limit_override,
        } => (
            "limit set",
            Reason::LimitSet {
                limit: *limit,
                overridden: limit_override.is_some(),
                handed,
            },
        ),
        _ => return None,
    };
    Some(LogLine {
        kind: LogKind::Contended,
        instance: None,
        decision,
        reason,
        waited_ms: None,
        figures: Figures::default(),
    })
}

/// A woken holder's status, answered neither alive nor unknown: "skipped"
/// only when the decision skipped it, the slot still held as handed; a
/// holder that confirmed its slot since and is found dead now is a holder
/// check's answer; one that released (or was handed on) since is nothing
/// this decision did.
fn woken(handed: Holder, liveness: Liveness, d: &Consequence<'_>) -> Option<LogLine> {
    let as_handed = d.was.holders.contains(&handed);
    let id = handed.id;
    let found_dead = d
        .did
        .ended
        .iter()
        .any(|(h, o)| h.id == id && *o == Outcome::Dead);
    let (decision, reason) = match (as_handed, found_dead) {
        (true, true) => ("skipped", Reason::Said("handed the key but dead")),
        (true, false) if liveness == Liveness::NotFound => (
            "skipped",
            Reason::Said("handed the key but not created yet: keeps it within the grace"),
        ),
        (false, true) => ("checked", Reason::HolderCheck(liveness)),
        _ => return None,
    };
    line(LogKind::Contended, id, decision, reason, None)
}

/// A contended line's §9a figures, as the decision left the key (its
/// `summary`, after its `writes`): the hold it ended (the history's record
/// of it), the wait of a waiter it granted a slot (when the line names no
/// wait), the instance's Workflow if it holds, and the key's counts. A
/// routine line writes no data point: it takes none.
pub fn figures(
    line: &LogLine,
    writes: &[Write],
    summary: &Summary,
    settings: &Settings,
) -> Figures {
    if line.kind != LogKind::Contended {
        return Figures::default();
    }
    let id = line.instance.as_ref();
    let held_ms = writes.iter().find_map(|w| match w {
        Write::History(HistoryWrite::Hold {
            id: held,
            from_ms,
            to_ms,
            ..
        }) if Some(held) == id => Some(to_ms.saturating_sub(*from_ms)),
        _ => None,
    });
    let granted_wait = writes.iter().find_map(|w| match w {
        Write::AddHolder(holder) if holder.waited_ms > 0 => Some(holder.waited_ms),
        _ => None,
    });
    let holder = summary.holders.iter().find(|h| Some(&h.id) == id);
    Figures {
        workflow: holder.map(|h| {
            (h.workflow.as_ref()).map_or_else(|| settings.workflow.clone(), |w| w.to_string())
        }),
        waited_ms: line.waited_ms.or(granted_wait),
        held_ms: held_ms.unwrap_or(0),
        holders: summary.holders.len() as u32,
        waiting: summary.waiters,
        limit: summary.limit(),
    }
}

/// The line of a turn event sent to `id`, a holder handed the key: what
/// the hand-off's effect came to, which the shell prints once the send
/// went through (one that threw prints nothing; the alarm sends again).
/// Its data point carries no figures (the shell has no decision here).
pub fn sent_turn(id: &InstanceId) -> LogLine {
    LogLine {
        kind: LogKind::Contended,
        instance: Some(id.clone()),
        decision: "woken",
        reason: Reason::Said("handed the key"),
        waited_ms: None,
        figures: Figures::default(),
    }
}
