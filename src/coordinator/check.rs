//! The dead-holder check (contract §1): when a key needs the holder-check
//! alarm ([`needs_check`]), which holders are due a check
//! ([`due_for_check`]), and what the alarm does for a superseded waiter
//! owed its termination ([`owed_termination`]). The alarm's tick, an
//! acquire left waiting and an `onBusy: "skip"` acquire all pick their
//! holders here; what a check's answer does to the slots is
//! `super::grant`'s (`apply_check`).

use super::types::{Holder, HolderState, Liveness, Summary};
use crate::ident::InstanceId;
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
