//! Idempotent runs (contract §6): start once, await the result, follow the run.
//!
//! This module owns *what happens* to a run key: who claims it, when a dead
//! claimant loses it, when an outcome is recorded (once), how the event log
//! counts and forgets, which long-polls answer now and which wait, and when
//! a finished record is deleted. It does no I/O, reads no clock and draws
//! no randomness. The Durable Object shell hands it a [`RunStore`] over the
//! object's SQLite tables and performs what each decision returns.
//!
//! # The two-phase claim
//! A claim that finds another instance holding an unfinished run cannot ask
//! the Workflow binding under the object's gate (the call opens the gate).
//! So [`claim`] returns [`ClaimStep::CheckClaimant`] naming the claim it
//! saw; the shell asks for the claimant's status outside the gate and
//! re-enters [`claim_after_check`], which decides on the record as it is
//! then: the key is freed only if that same claim still holds it without an
//! outcome and the claimant is dead (contract §1's rule, with §1a's grace
//! counted from the claim). The new claimant continues the event log.
//!
//! # Long-polls as data
//! [`await_run`] and [`events`] answer at once or say [`Poll::Park`] with a
//! deadline; [`Waits`] is the object's bounded registry of parked waits, and
//! the decisions that commit an outcome or an event return the [`Wake`]
//! that names whom they answer. The shell holds a resolver per wait and a
//! timer at its deadline; nothing polls storage.
//!
//! # Costs
//! An append writes its event, bumps the key's `latest_seq` and deletes the
//! one event that left the kept window; a read is one range query with a
//! `LIMIT`. Neither depends on how many events the log holds.

mod decide;
mod input;
mod memory;
pub mod schema;
mod sql_store;
mod state;
mod waits;

pub use decide::*;
pub use input::*;
pub use memory::MemoryRunStore;
pub use sql_store::{keys_due, migrate, next_deletion_ms, SqlRunStore};
pub use state::*;
pub use waits::*;
