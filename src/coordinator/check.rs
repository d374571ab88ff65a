//! The dead-holder check (contract §1): when a key needs the holder-check
//! alarm ([`needs_check`]), which holders are due a check
//! ([`due_for_check`]), and what a check's answer does to the slots
//! ([`apply_check`], [`hand_on_checked`]). The alarm's tick, an acquire
//! left waiting and an `onBusy: "skip"` acquire all pick their holders here.

use super::effect::Effect;
use super::grant::fill_slots;
use super::history::Outcome;
use super::scratch::Key;
use super::state::{Holder, HolderState, Liveness};
use super::types::{Settings, Summary};
use crate::ident::{InstanceId, WorkflowName};
use crate::transition::Check;
use std::collections::HashMap;

/// Whether the key needs the holder-check alarm: someone waits behind the
/// holders, a holder has not yet confirmed a hand-over, or a holder is
/// cancelled (§1d: the alarm terminates it again until it is found dead).
pub fn needs_check(summary: &Summary) -> bool {
    !summary.holders.is_empty()
        && (summary.waiters > 0
            || summary
                .holders
                .iter()
                .any(|h| h.state == HolderState::Handed || h.cancelling))
}

/// Up to `n` of `holders` (in the order they got the key) due a check,
/// least recently checked first, those never checked first (in the order
/// they got the key): every holder when `everyone`, else only the `Handed`
/// and the cancelled ones. `checked_ms`: when each holder was last
/// checked, as read (a holder missing from it, as one granted by this
/// decision, was never checked).
pub fn due_for_check(
    holders: &[Holder],
    checked_ms: &[(InstanceId, Option<u64>)],
    everyone: bool,
    n: u32,
) -> Vec<Holder> {
    let checked: HashMap<&InstanceId, u64> = checked_ms
        .iter()
        .filter_map(|(id, at)| at.map(|at| (id, at)))
        .collect();
    let mut due: Vec<(Option<u64>, usize)> = holders
        .iter()
        .enumerate()
        .filter(|(_, h)| everyone || h.state == HolderState::Handed || h.cancelling)
        .map(|(i, h)| (checked.get(&h.id).copied(), i))
        .collect();
    // `None` (never checked) sorts first; ties go in the order of the key.
    due.sort_unstable();
    due.into_iter()
        .take(n as usize)
        .map(|(_, i)| holders[i].clone())
        .collect()
}

/// The effect asking for `id`'s status, answered back into the decision.
pub(super) fn check(
    id: &InstanceId,
    workflow: Option<&WorkflowName>,
    settings: &Settings,
) -> Effect {
    Effect::Check(Check {
        id: id.clone(),
        workflow: workflow.map_or_else(|| settings.workflow.clone(), |w| w.to_string()),
        answers: true,
    })
}

/// What the alarm asks for a holder due a check: its status, or for a
/// cancelled holder (§1d) its termination and then its status, so a
/// termination that failed is tried again until the holder is dead.
pub(super) fn check_or_terminate(holder: &Holder, settings: &Settings) -> Effect {
    if holder.cancelling {
        terminate_holder(holder, settings)
    } else {
        check(&holder.id, holder.workflow.as_ref(), settings)
    }
}

/// §1d: the termination of a cancelled holder through its own Workflow,
/// its status asked right after.
pub(super) fn terminate_holder(holder: &Holder, settings: &Settings) -> Effect {
    Effect::TerminateHolder {
        holder: holder.clone(),
        workflow: holder
            .workflow
            .as_ref()
            .map_or_else(|| settings.workflow.clone(), |w| w.to_string()),
    }
}

/// A checked holder's liveness applied (a dead one loses its slot), the
/// free slots filled from the queue, and everyone handed one woken: what an
/// alarm's check and a woken holder found dead both come to.
pub(super) fn hand_on_checked(
    key: &mut Key<'_>,
    now_ms: u64,
    grace_ms: u64,
    holder: &Holder,
    liveness: Liveness,
) {
    let mut wake = Vec::new();
    apply_check(key, now_ms, grace_ms, holder, liveness, &mut wake);
    fill_slots(key, now_ms, &mut wake);
    for holder in wake {
        key.wake(holder);
    }
}

/// A holder check's answer: a dead holder exactly as checked (or a
/// finished one with the same grant) loses its slot; a live one not yet
/// told of a hand-over is woken again, unless it is cancelled (§1d: it is
/// to end, not to start).
pub(super) fn apply_check(
    key: &mut Key<'_>,
    now_ms: u64,
    grace_ms: u64,
    checked: &Holder,
    liveness: Liveness,
    wake: &mut Vec<Holder>,
) {
    let Some(holder) = key.holder(&checked.id).cloned() else {
        return;
    };
    if liveness.is_dead(checked.enqueued_ms, now_ms, grace_ms) {
        let finished = liveness == Liveness::Dead && holder.fence == checked.fence;
        if holder == *checked || finished {
            // A slot handed over and never confirmed was not held: no hold
            // time for the estimate.
            let held = holder.state == HolderState::Holding;
            key.remove_holder(&holder.id, held.then_some(now_ms), Outcome::Dead);
        }
        return;
    }
    if holder.state == HolderState::Handed
        && !holder.cancelling
        && matches!(liveness, Liveness::Alive | Liveness::Unknown)
    {
        wake.push(holder);
    }
}

/// What the holder-check alarm does next for a superseded waiter that is
/// owed its termination (`store::terminations_owed`), given its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwedTermination {
    /// Ended, or never created (it is told `superseded` if it ever asks):
    /// owed nothing more.
    Done,
    /// Still running: terminate it; owed nothing more once the platform
    /// accepts the terminate, owed again at the next alarm if it does not.
    Terminate,
    /// Its status is unknown: owed still, asked again at the next alarm.
    Keep,
}

/// The one rule for an owed termination, by the status the binding gave.
pub fn owed_termination(liveness: Liveness) -> OwedTermination {
    match liveness {
        Liveness::Dead | Liveness::NotFound => OwedTermination::Done,
        Liveness::Alive => OwedTermination::Terminate,
        Liveness::Unknown => OwedTermination::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::{owed_termination, Liveness, OwedTermination};

    /// A status that is not known never clears what is owed, and only a
    /// running instance is terminated (issue 30: a dropped waiter whose
    /// first terminate failed must still end).
    #[test]
    fn an_owed_termination_ends_only_on_a_final_status_or_a_terminate() {
        assert_eq!(owed_termination(Liveness::Dead), OwedTermination::Done);
        assert_eq!(owed_termination(Liveness::NotFound), OwedTermination::Done);
        assert_eq!(
            owed_termination(Liveness::Alive),
            OwedTermination::Terminate
        );
        assert_eq!(owed_termination(Liveness::Unknown), OwedTermination::Keep);
    }
}
