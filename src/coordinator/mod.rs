//! The Coordinator's decisions: up to `limit` holders per key, waiters served in order.
//!
//! This module owns *what happens* to a key: who holds its slots, who waits,
//! which Workflow binding each instance is reached through, when "not found"
//! means "not created yet" (the enqueue grace, [`Liveness::is_dead`]), who is
//! superseded, when a dead holder is replaced and whom to wake. It does no
//! I/O, reads no clock and draws no randomness. The Durable Object shell
//! (`shell::coordinator_object`) loads nothing up front: it reads the
//! targeted [`View`] each input needs ([`load`]), from the key's [`Summary`]
//! it keeps in memory plus the rows the input names, so each decision touches
//! only the rows it needs and its cost does not grow with the queue; it
//! carries out the decision's [`Write`]s with [`write()`].
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
//! handed the key but never confirmed it ([`HolderState::Handed`]).

mod decide;
mod effect;
pub mod history;
mod memory;
pub mod schema;
mod sql;
mod state;
mod transition;
mod turn;

pub use decide::*;
pub use effect::{Effect, Handed};
pub use memory::{apply, assert_invariants_deep, needs_holder_check, MemoryKeyStore};
pub use sql::{inspect, keys_due, load, load_summary, migrate, write};
pub use state::*;
pub use transition::{
    acquire_waits, assert_invariants as assert_view, decide, eta_ms, front_needed, needs_check,
    needs_place, Input, Reply, Settings, Summary, Transition, View, Write,
};
pub use turn::{check_turn_event_type, event_type};
