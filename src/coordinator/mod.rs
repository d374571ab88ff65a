//! The Coordinator's decisions: up to `limit` holders per key, waiters served in order.
//!
//! This module owns *what happens* to a key: who holds its slots, who waits,
//! which Workflow binding each instance is reached through, when "not found"
//! means "not created yet" (the enqueue grace, [`Liveness::is_dead`]), who is
//! superseded, when a dead holder is replaced and whom to wake. It does no
//! I/O, reads no clock and draws no randomness.
//!
//! # One decision, in order
//! 1. **Plan the reads.** The Durable Object shell
//!    (`shell::coordinator_object`) keeps each key's [`Summary`] in memory
//!    (its counts and holders). What else a decision needs, the core names,
//!    one [`Read`] at a time ([`next_read`]): the caller's place, the front
//!    of the hand-off order, a newcomer's place, the holders' check times,
//!    a coalescing candidate, every waiter. The store ([`execute`], on the
//!    object's SQLite) or the twin (`KeyTwin`, in memory, for tests and
//!    the simulation) answers each and decides nothing; [`load_view`]
//!    loops until the [`View`] is complete ([`load`] does it on the rows).
//!    So each decision touches only the rows it needs, and its cost does
//!    not grow with the queue.
//! 2. **Decide.** [`decide`] takes the view, the settings, the time and the
//!    [`Input`], and returns a [`Transition`]: the [`Reply`], the row
//!    [`Write`]s, the effects (checks, turn events, terminations), whether
//!    the key needs the holder-check alarm, and the summary as the writes
//!    leave it.
//! 3. **Write.** The shell carries out the writes in one synchronous turn
//!    ([`write()`]; the twin's `apply`), then the effects.
//!
//! # Where each rule lives
//! | Rule | Function |
//! |------|----------|
//! | a grant takes the key's next fence | `grant::grant_slot` |
//! | who takes a free slot: the caller or the front | `grant::take_slot`, `grant::fill_slots` |
//! | the §1c hand-off order | [`hand_off_order`], [`place_in_order`] (`order.rs`) |
//! | supersede: the others are dropped | `decide::commit_enqueue` |
//! | a dropped waiter is owed its termination until done | [`owed_termination`] (`check.rs`); the owed rows: [`terminations_owed`] (`store/terminations.rs`) |
//! | coalesce into a live waiter with the same input | `decide::coalescing` |
//! | §1d cancel in progress: the holders cancelled, kept until dead | `decide::cancel_holders`, `check::check_or_terminate` |
//! | `onBusy: "skip"` | `decide::skips`, `grant::acquire_skip` |
//! | which holders are due a check | [`due_for_check`] (`check.rs`) |
//! | what a check's answer does | `check::apply_check` |
//! | the key needs the holder-check alarm | [`needs_check`] |
//! | which rows a decision reads | [`next_read`] (`read.rs`) |
//! | `etaMs` | [`eta_ms`] |
//! | §11: paused, nobody is granted; resume; the limit override | [`free_slots`], `steer.rs` |
//!
//! The store keeps two fast reads of the §1c order (`store/order.rs`:
//! the front, and one id's place, without walking the queue), held to
//! [`hand_off_order`] by `tests/coordinator_order.rs`; and one cross-key
//! query, [`keys_due`], which is [`needs_check`] over every key.
//!
//! # The files
//! `types.rs` (requests, replies, [`Summary`], [`View`], [`Input`],
//! [`Write`]), `state.rs` (holders, waiters, [`Member`]), `decide.rs` (the
//! decision and the enqueue rules), `grant.rs` (where slots go),
//! `check.rs` (the dead-holder check), `order.rs` (§1c), `read.rs` (the
//! read plan), `scratch.rs` (the copy of the view a decision records its
//! writes on), `invariants.rs`, `store/` (the rows: reads, writes, row
//! codecs, schema in `schema.rs`), `twin.rs` (the key in memory; not in
//! the Worker), `turn.rs` (§1b's event types), `history.rs` (§10), `steer.rs` (§11:
//! pause, resume and the limit override).
//!
//! # The two-phase protocol
//! A decision that needs to know whether some instance is dead cannot ask
//! the Workflow binding while holding the object's gate (that call opens the
//! gate anyway, and would let a second request act on a state the first one
//! already read). So a decision either finishes, or replies `*Checking`
//! with a check effect naming the instance to ask about. The shell asks
//! outside the gate, then re-enters with the answer as the matching
//! `*Checked` [`Input`], decided on the state *as it is then*: a dead holder
//! loses the key only if it still holds it.
//!
//! Handing the key on and waking the new holder are also split: the core
//! writes the new holders and names them (as handed) in wake effects; the
//! shell sends each the turn event and checks its status, and reports back
//! with [`Input::Woken`], which hands a dead one's slot on again.
//!
//! # Grants (contract §1b)
//! A registration made with `grant` is told its hand-off by the grant
//! itself, on an event type of its own ([`Turn::Own`], [`event_type`]);
//! every grant of a slot carries the key's next fence. See `decide`.
//!
//! # What survives a crash
//! Every decision's writes are committed together (the shell runs them in one
//! synchronous turn). A crash between phases loses only the second phase,
//! which the caller's retry redoes; a lost wake is recovered by the waiter's
//! own timeout re-check, or by the holder-check alarm for a holder that was
//! handed the key but never confirmed it ([`HolderState::Handed`]); a lost
//! termination of a superseded waiter by the same alarm, which works
//! through the terminations a supersede left owed.

mod check;
mod decide;
mod effect;
mod grant;
pub mod health;
pub mod history;
mod invariants;
pub mod log;
mod order;
mod read;
pub mod schema;
mod schema_fresh;
mod scratch;
mod state;
mod steer;
mod store;
mod turn;
#[cfg(not(target_arch = "wasm32"))]
mod twin;
mod types;

pub use check::{due_for_check, needs_check, owed_termination, OwedTermination};
pub use decide::decide;
pub use effect::{Effect, Handed};
pub use grant::eta_ms;
#[cfg(not(target_arch = "wasm32"))]
pub use history::KeyHistory;
pub use invariants::assert_invariants as assert_view;
#[cfg(not(target_arch = "wasm32"))]
pub use invariants::assert_invariants_deep;
pub use order::{hand_off_order, place_in_order};
pub use read::{load_view, next_read, Answer, Read};
pub use state::*;
pub use steer::free_slots;
pub use store::{
    execute, inspect, keys_due, load, load_summary, migrate, terminated, terminations_owed, write,
    Owed,
};
pub use turn::{check_turn_event_type, event_type};
#[cfg(not(target_arch = "wasm32"))]
pub use twin::{apply, needs_holder_check, KeyTwin};
pub use types::*;
