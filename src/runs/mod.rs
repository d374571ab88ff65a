//! Idempotent runs (contract §6): start once, await the result, follow the run.
//!
//! This module owns *what happens* to a run key: who claims it, when a dead
//! claimant loses it, when an outcome is recorded (once), how the event log
//! counts and forgets, which long-polls answer now and which wait, and when
//! a finished record is deleted. It does no I/O, reads no clock and draws
//! no randomness.
//!
//! It has the one shape of every concept (`crate::transition`): the shell
//! hands [`decide`] the key's [`Rows`] (`sql::Rows`), from which each
//! call reads the part it needs by type, and carries out the [`Transition`]'s [`Write`]s ([`sql::write`]; the
//! simulation's [`memory::apply`]) before its effects.
//!
//! # The two-phase claim
//! A claim that finds another instance holding an unfinished run cannot ask
//! the Workflow binding under the object's gate (the call opens the gate).
//! So its call ([`ClaimRun`]) answers a [`Step`](crate::transition::Step)
//! that waits on a [`Check`](crate::transition::Check) of the claimant
//! ([`PendingClaim`]); the shell asks for the claimant's status outside
//! the gate and hands it to the waiting [`ClaimChecked`] (as an input,
//! [`Input::Checked`], for the simulation), which decides on the record as
//! it is then: the key is freed only if that same claim still holds it
//! without an outcome and the claimant is dead (contract §1's rule, with
//! §1a's grace counted from the claim: `crate::workflow`). The new claimant
//! continues the event log.
//!
//! # Long-polls as data
//! `await` and `events` answer at once or say [`Poll::Park`] with a
//! deadline; [`Waits`] is the object's bounded registry of parked waits,
//! and the replies of `complete` ([`Reply::Complete`]) and `append`
//! ([`Reply::Append`]) say whom they answer. The shell holds a resolver per
//! wait and a timer at its deadline; nothing polls storage.
//!
//! # Costs
//! An append reads the claimant and the latest seq, writes its event, bumps
//! the key's `latest_seq` and deletes the one event that left the kept
//! window; a read is one range query with a `LIMIT`. Neither depends on how
//! many events the log holds.

mod call;
mod decide;
mod input;
pub mod log;
pub mod memory;
mod reason;
pub mod schema;
pub mod sql;
mod state;
mod waits;

pub use call::*;
pub use decide::*;
pub use input::*;
pub use memory::{apply, MemoryRun};
pub use state::*;
pub use waits::*;

/// The one decision: `input` on the key's `rows` (it reads the part it
/// needs) at `now_ms`, the transition (`decide.rs`) with its decision-log
/// lines (`log.rs`).
pub fn decide(
    rows: &impl Rows,
    now_ms: u64,
    input: Input,
) -> Result<Transition, crate::error::BatonError> {
    let caller = log::caller(&input);
    let mut transition = call::transition(rows, now_ms, input)?;
    transition.log = log::of(caller, &transition);
    Ok(transition)
}

/// One call on the key's `rows` at `now_ms`: its answer, and the
/// transition with its decision-log lines.
pub fn decide_call<C: Call>(
    rows: &impl Rows,
    now_ms: u64,
    call: C,
) -> Result<(C::Answer, Transition), crate::error::BatonError> {
    let caller = log::caller(&call.input());
    let (answer, mut transition) = call.decide(rows, now_ms)?;
    transition.log = log::of(caller, &transition);
    Ok((answer, transition))
}
