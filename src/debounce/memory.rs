//! The in-memory twin of the Debouncer's store (`super::sql`): a
//! decision's writes applied to a [`KeyState`], row by row, as the SQL
//! store commits them. The simulations and the named cases check that
//! this gives the decision's own state, and `tests/debounce_sql.rs` that
//! the SQL store reads back the same.

use super::decide::Write;
use super::state::KeyState;
use crate::limits::DEBOUNCE_STARTED_KEPT;

/// Applies `writes` to `state`, as the shell's storage does: the simulation
/// checks that this gives [`crate::transition::Transition::state`].
pub fn apply(state: &mut KeyState, writes: &[Write]) {
    for write in writes {
        match write {
            Write::Burst(burst) => state.burst = burst.clone(),
            Write::Pending(pending) => state.pending = pending.clone(),
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
}
