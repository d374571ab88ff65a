//! A key's health (contract §10a), the Coordinator's part: which of its
//! holders keep it from moving, and since when ([`stalled_from`]), and how
//! long its waits are ([`waits`]). The state itself is the one rule of
//! `crate::health`, applied to these facts by `inspect` ([`inspect`]) and,
//! through the key's report, by the list.
//!
//! Pure: the rows it is read from are `super::store::health`'s. Nothing
//! here runs on an uncontended acquire or release: `inspect` and the
//! list's reports (sent only for a key with waiters or a dead holder) are
//! its only callers.

use super::types::history::Hold;
use super::types::{Holder, HolderState, Summary, Waiter};
use crate::health::{self, waits, Facts, KeyState};
use crate::ident::InstanceId;
use crate::workflow::Status;

/// A holder's last status check (§10a), as its row keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub at_ms: u64,
    pub answer: Status,
}

/// A holder's check as its row keeps it: its id, its last check, and
/// since when its checks fail.
pub type CheckRow = (InstanceId, Option<Checked>, Option<u64>);

/// What `inspect` shows of a key's health: its state, its wait figures,
/// and each holder's last check (in the order of the summary's holders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub state: KeyState,
    pub waits: Waits,
    pub checked: Vec<Option<Checked>>,
}

/// `inspect`'s `waits`: the median and 95th percentile, and over how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waits {
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub n: u32,
}

/// From when the key counts as stalled should waiters wait: the earliest
/// moment a holder has, for longer than `holder_check_ms`, held a slot
/// handed to it that it has not taken up (neither accepted its turn
/// event nor called `acquire`: still [`HolderState::Handed`]), or had its
/// status checks fail (`failing_since_ms`: the first failure of the
/// earliest run of failures still unbroken among the holders). `None`
/// while no holder is either.
pub fn stalled_from(
    holders: &[Holder],
    failing_since_ms: Option<u64>,
    holder_check_ms: u64,
) -> Option<u64> {
    let handed = holders
        .iter()
        .filter(|h| h.state == HolderState::Handed)
        .map(|h| h.since_ms)
        .min();
    let since = match (handed, failing_since_ms) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    since.map(|since| since.saturating_add(holder_check_ms))
}

/// The facts [`health::state`] decides from, for a key with `summary`.
pub fn facts(summary: &Summary, stalled_from_ms: Option<u64>) -> Facts {
    Facts {
        paused: summary.paused.is_some(),
        holders: summary.holders.len() as u32,
        waiting: summary.waiters,
        limit: summary.limit(),
        stalled_from_ms,
    }
}

/// §10a: the key's state at `now_ms`.
pub fn state(summary: &Summary, stalled_from_ms: Option<u64>, now_ms: u64) -> KeyState {
    health::state(&facts(summary, stalled_from_ms), now_ms)
}

/// `inspect`'s §10a part for a key with `summary`, its `waiters`, its
/// `recent` holds and its holders' check `rows`, at `now_ms`.
pub fn inspect(
    summary: &Summary,
    waiters: &[Waiter],
    recent: &[Hold],
    rows: &[CheckRow],
    holder_check_ms: u64,
    now_ms: u64,
) -> Health {
    let failing = rows.iter().filter_map(|(_, _, since)| *since).min();
    let stalled = stalled_from(&summary.holders, failing, holder_check_ms);
    let waited = (recent.iter().map(|h| h.waited_ms))
        .chain(waiters.iter().map(|w| now_ms.saturating_sub(w.since_ms)))
        .collect();
    let (p50_ms, p95_ms, n) = waits(waited);
    Health {
        state: state(summary, stalled, now_ms),
        waits: Waits { p50_ms, p95_ms, n },
        checked: (summary.holders.iter())
            .map(|h| {
                let row = rows.iter().find(|(id, _, _)| *id == h.id);
                row.and_then(|(_, checked, _)| *checked)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::Turn;
    use crate::ident::InstanceId;

    fn holder(id: &str, since_ms: u64, state: HolderState) -> Holder {
        Holder {
            id: InstanceId::new(id.to_owned()).unwrap(),
            since_ms,
            state,
            workflow: None,
            enqueued_ms: None,
            turn: Turn::Shared,
            fence: 1,
            cancelling: false,
            waited_ms: 0,
        }
    }

    #[test]
    fn a_stall_counts_from_the_earliest_handed_slot_or_failing_check() {
        let holding = holder("a", 10, HolderState::Holding);
        let handed = holder("b", 30, HolderState::Handed);
        assert_eq!(stalled_from(std::slice::from_ref(&holding), None, 5), None);
        assert_eq!(
            stalled_from(std::slice::from_ref(&holding), Some(20), 5),
            Some(25)
        );
        assert_eq!(stalled_from(&[holding, handed.clone()], None, 5), Some(35));
        assert_eq!(stalled_from(&[handed], Some(20), 5), Some(25));
    }
}
