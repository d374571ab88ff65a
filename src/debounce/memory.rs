//! The in-memory twin of the Debouncer's store (`super::sql`): a
//! decision's writes applied to a [`KeyState`], row by row, as the SQL
//! store commits them. The simulations and the named cases check that
//! this gives the decision's own state, and `tests/debounce_sql.rs` that
//! the SQL store reads back the same.

use super::decide::Write;
use super::state::{KeyState, Phase, CORRUPT_PHASE};
use crate::limits::DEBOUNCE_STARTED_KEPT;

/// Applies `writes` to `state`, as the shell's storage does: the simulation
/// checks that this gives [`crate::transition::Transition::state`].
pub fn apply(state: &mut KeyState, writes: &[Write]) {
    // The phase is two rows, written one at a time: the pair is read back
    // as a phase once all are applied, as the next load would.
    let (mut burst, mut pending) = state.phase.rows();
    for write in writes {
        match write {
            Write::Burst(row) => burst = row.clone(),
            Write::Pending(row) => pending = row.clone(),
            Write::Creating(row) => match state.creating.iter_mut().find(|c| c.id == row.id) {
                Some(existing) => *existing = row.clone(),
                None => state.creating.push(row.clone()),
            },
            Write::CreatingDone(id) => state.creating.retain(|c| c.id != *id),
            Write::Started(started) => {
                state.started.insert(0, started.clone());
                state.started.truncate(DEBOUNCE_STARTED_KEPT);
            }
            Write::BatchCleared => state.batch.clear(),
            Write::BatchItem(params) => state.batch.push(params.clone()),
        }
    }
    state.phase = Phase::from_rows(burst, pending).expect(CORRUPT_PHASE);
}
