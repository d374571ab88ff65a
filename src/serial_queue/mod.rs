//! The serial queue's decisions: one in flight per group, newest waiter wins.
//!
//! State lives in one D1 table (`migrations/`), a row per execution. D1
//! serialises writes per database, so the race between claimers is settled
//! by SQL: one conditional `UPDATE` whose change count says who won. What
//! this module owns is everything around that: which arrivals skip, which
//! waiters a new arrival supersedes, when a waiter times out, when a
//! holder's heartbeat has gone stale, and what each call answers. It reads
//! no clock and does no I/O; [`sql`] holds the statements, which the D1
//! shell and the native tests (rusqlite) run verbatim.

mod decide;
pub mod sql;

pub use decide::*;
