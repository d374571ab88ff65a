//! The serial queue: one in flight per group, newest waiter wins (contract §2).
//!
//! State lives in one D1 table (`migrations/`), a row per execution. D1 runs
//! a batch as one transaction and serialises writes per database, so every
//! rule that must hold under concurrency is a condition in the SQL that
//! writes ([`sql`]): the claim is one conditional `UPDATE`, the waiter bound
//! is counted inside the `INSERT`, superseding requires the arrival to be
//! waiting. This module owns those statements and the decisions around
//! them ([`decide`]): for each command, the one batch to run (from the
//! request and the time), then the reply and the wakes (as data) from what
//! the batch gave back. It reads no clock and does no I/O; the D1 shell
//! (`shell::serial_queue_d1`) runs the batches and sends the wakes, and the
//! native tests and the simulation (`tests/serial_queue*.rs`) run the same
//! batches on SQLite. [`invariants`] checks every row read back.

mod decide;
mod invariants;
pub mod sql;
mod state;

pub use decide::*;
pub use invariants::{assert_invariants, check_row, entry};
pub use state::*;
