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
//!    (`shell::coordinator`) keeps each key's [`Summary`] in memory
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
//!    the key needs the holder-check alarm (for its checks, a list report
//!    it owes, or terminations a supersede owes), and the summary as the
//!    writes leave it.
//! 3. **Write.** The shell carries out the writes in one synchronous turn
//!    ([`write()`]; the twin's `apply`), then the effects.
//!
//! # Where each rule lives
//! | Rule | Function |
//! |------|----------|
//! | the key's limit: the callers' and an operator's override, which wins (§1a, §11) | `Summary::limit`, `Summary::limit_for` (`slots.rs`) |
//! | how many slots a decision may grant: none while paused (§11) | [`free_slots`] (`slots.rs`) |
//! | does an acquire take a slot now, and how many go to the front | `slots::placement`, asked by `grant::take_slot` and the read plan |
//! | a grant takes the key's next fence (§1b) | `grant::grant_slot` |
//! | an acquire: granted, waiting, or a holder checked first | `grant::acquire`, `grant::acquire_checked` |
//! | free slots go to the front of the order | `grant::fill_slots` |
//! | the §1c hand-off order | [`hand_off_order`], [`place_in_order`] (`order.rs`) |
//! | `etaMs` (§1c) | [`eta_ms`] (`slots.rs`) |
//! | an enqueue registers a waiter, records a limit, hands nothing on | `enqueue::enqueue` |
//! | coalesce into a live waiter with the same input | `enqueue::coalescing` |
//! | supersede: the others are dropped and owed their termination | `enqueue::supersede`; the owed rows: [`terminations_owed`] (`store/terminations.rs`); what the alarm does with them: [`owed_termination`] (`check.rs`) |
//! | `onBusy: "skip"` (§1c) | `enqueue::skips`, `grant::acquire_skip` |
//! | §1f `maxWaiting`: a newcomer on a full key registers nothing and is answered busy | `slots::full`, asked by `enqueue::enqueue` and `grant::acquire` |
//! | §1d `cancelHolders`: refused without `supersedes`; every holder cancelled and terminated, kept until found dead | `enqueue::refuse_cancel_holders`, `enqueue::cancel_holders`; the alarm's retry: `Draft::check_or_terminate` |
//! | which holders are due a check | [`due_for_check`] (`check.rs`) |
//! | what a check's answer does | `grant::apply_check` |
//! | §10a a holder's `checked` is its binding's last answer, whichever check asked | `Draft::record_check` |
//! | the key needs holder checks | [`needs_check`] (`check.rs`) |
//! | the decision needs the holder-check alarm (holder checks, a list report owed, terminations owed) | `decide::alarm` |
//! | §11: pause (its `since` and reason), resume, the limit override | `steer::pause`, `steer::resume`, `steer::set_limit` |
//! | an instance is reached through its own binding, or the default | [`Settings::binding`] |
//! | §1a an instance found through another binding is that Workflow's from then on (one `warn` line) | `decide` on [`Input::Rebound`]; the lookup itself: `shell::found` |
//! | §10a a key's state (paused, stalled, backlogged, at capacity, active, idle) and its wait figures | [`health::state`], [`health::inspect`] (`health.rs`); since when a holder stalls: [`health::stalled_from`] |
//! | which rows a decision reads | [`next_read`] (`read.rs`) |
//! | what a decision adds to the history (§10) | [`history::record`] |
//! | the decision-log line (§9) | [`log::of`] |
//! | the report the list is due (§10) | `crate::busy::reporter::due`, called by `decide::finish` |
//!
//! The store keeps two fast reads of the §1c order (`store/order.rs`:
//! the front, and one id's place, without walking the queue), held to
//! [`hand_off_order`] by `tests/coordinator_order.rs`; and one cross-key
//! query, [`keys_due`], which is [`needs_check`] over every key.
//!
//! # The floors
//! Each file imports only from the floors below it:
//! 1. `types/`: the vocabulary (requests, replies, [`Summary`], [`View`],
//!    [`Read`], [`Input`], [`Write`], [`Effect`]; the rows as values in
//!    `state.rs`; what the history records in `history.rs`);
//! 2. `slots.rs` (the limit, the free slots, §1f's cap), `health.rs`
//!    (§10a's state), `check.rs` (who is due a
//!    check), `order.rs` (§1c), `turn.rs` (§1b's event types), `log.rs`
//!    (§9's line), `invariants.rs`;
//! 3. `draft.rs`: `Draft`, the key as one decision changes it, recording
//!    each write and effect;
//! 4. the rules on a draft: `grant.rs` (where slots go), `enqueue.rs`
//!    (registering, coalescing, superseding, skips, §1d);
//! 5. `steer.rs` (§11) and `read.rs` (the read plan), which use them;
//! 6. `decide.rs` (the one decision and its `finish`, the only file that
//!    reads the history's rule, the log and the reporter), `store/` (the
//!    rows: reads, writes, the history's SQL, the schema) and `twin.rs`
//!    (the key in memory; not in the Worker);
//! 7. this file.
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
//! with [`Input::Accepted`] (a grant event the engine took) and
//! [`Input::Woken`] (its status, kept as its `checked`), which hands a dead
//! one's slot on again.
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

mod call;
mod check;
mod decide;
mod draft;
mod enqueue;
mod grant;
pub mod health;
mod invariants;
mod layout;
pub mod log;
mod order;
mod read;
mod slots;
mod steer;
mod store;
mod turn;
#[cfg(not(target_arch = "wasm32"))]
mod twin;
mod types;

/// What happened at a key (contract §10): the rule of what a decision
/// records (`types/history.rs`) and the rows it is kept in
/// (`store/history.rs`).
pub mod history {
    pub use super::store::history::{busy, inspect, is_owed, owed, paid, write};
    #[cfg(not(target_arch = "wasm32"))]
    pub use super::types::history::KeyHistory;
    pub use super::types::history::{
        record, Counts, Did, HistoryWrite, Hold, HoldEnd, Outcome, Tally,
    };
}

pub use call::{
    Accepted, Acquire, AcquireChecked, Call, Enqueue, EnqueueChecked, HolderChecked, Pause,
    Rebound, Release, Resume, SetLimit, Tick, Woken,
};
pub use check::{due_for_check, needs_check, owed_termination, OwedTermination};
pub use decide::{decide, decide_call, decide_in_place};
#[cfg(not(target_arch = "wasm32"))]
pub use history::KeyHistory;
pub use invariants::assert_invariants as assert_view;
pub use layout::{joining, layout_of};
pub use order::{hand_off_order, place_in_order};
pub use read::{load_view, next_read};
pub use slots::{eta_ms, free_slots};
/// §10a's rows: each holder's last check, read for `inspect` and the
/// key's list report (`store/health.rs`; the rule is [`health`]).
pub use store::health as health_rows;
pub use store::{
    execute, inspect, keys_due, load, load_summary, migrate, schema, terminated, terminations_owed,
    write, Owed,
};
pub use turn::{check_turn_event_type, event_type};
#[cfg(not(target_arch = "wasm32"))]
pub use twin::{apply, assert_invariants_deep, needs_holder_check, KeyTwin};
pub use types::*;
