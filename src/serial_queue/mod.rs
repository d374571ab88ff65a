//! The serial queue: one in flight per group, newest waiter wins (contract
//! §2), with §2a's hand-off by grant, claim on enqueue, fences per group and
//! dead holders found by status.
//!
//! State lives in one D1 table (`migrations/`), a row per execution. D1 runs
//! a batch as one transaction and serialises writes per database, so every
//! rule that must hold under concurrency is a condition in the SQL that
//! writes ([`sql`]): the claim is one conditional `UPDATE`, the waiter bound
//! is counted inside the `INSERT`, superseding requires the arrival to be
//! waiting. This module owns those statements and the decisions around
//! them (`decide`, `hand_on`, `inspect`): for each command, the one batch
//! to run (from the request and the time), then a [`Decided`] from what
//! the batch gave back: the reply, the effects as data ([`Effect`]: the
//! check of a holder, the turn events to send), whose results re-enter
//! through [`checked`] (which may ask for a follow-up batch), and the
//! decision-log lines (`log`); once the effects are done, the command's
//! [`Answer`] (`answer`): its final reply and the caller's own line. It
//! reads no clock and does no I/O; the D1 shell (`shell::serial_queue_d1`)
//! runs the batches and performs the effects, and the native tests and
//! the simulation (`tests/serial_queue*.rs`) run the same batches on
//! SQLite. `invariants` checks every row read back.
//!
//! §2a in these terms: an enqueue with `claim` appends the claim's two
//! statements to its batch; a release's batch ends with the hand-over
//! ([`sql::HAND_OVER`]), which makes a first waiter registered with grant
//! the holder and says so as data (an [`Effect::Wake`] with
//! [`News::Holding`], and the [`HandOn`] its status re-enters with); a
//! group's fence is the highest among its rows, one more per
//! grant (the row holding it is never pruned). Whether an instance is dead
//! is the one thing only the shell can learn: a claim that waits names the
//! holder it read ([`Seen`]) and asks for its [`Effect::Check`]; the shell
//! asks that holder's Workflow, and a dead one re-enters ([`checked`]) as a
//! second batch ([`claim_past_dead`]) whose statements apply only to the
//! holder as it was read.

mod answer;
mod decide;
mod effect;
mod hand_on;
mod inspect;
mod invariants;
mod log;
mod rebind;
mod round;
pub mod sql;
mod state;
mod steer;
mod types;

pub use answer::{claim_answer, enqueue_answer, release_answer, Answer};
pub use decide::{
    checked, claim, claim_outcome, claim_past_dead, enqueue, enqueue_claimed, enqueue_outcome,
    heartbeat, heartbeat_outcome,
};
pub use effect::*;
pub use hand_on::{hand_on_past, hand_on_past_outcome, release, release_outcome};
pub use inspect::{inspect, inspect_outcome, Inspection};
pub use invariants::{assert_invariants, check_row, entry, steering};
pub use rebind::{rebind, rebind_outcome};
pub use state::*;
pub use steer::{pause, pause_outcome, resume, resume_outcome, SerialPause};
pub use types::*;
