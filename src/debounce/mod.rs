//! Debounce and deferred starts (contract §4): one Workflow start per burst
//! of calls on a key, the latest params winning, and starts at a given time.
//!
//! This module owns *what a key does*: which burst a call joins, which id
//! each start gets, when it fires, and what becomes of its create. It does no
//! I/O, reads no clock and draws no randomness: time comes in as `now_ms`,
//! and the unique part of every new id as an [`IdSuffix`] the shell drew.
//! [`decide`] takes the key's [`KeyState`], the time and an [`Input`] and
//! returns a [`Transition`]: the reply, the row writes, the instances to
//! create and when the key next needs the alarm. The Durable Object shell
//! (`shell::debouncer_object`) commits the writes, arms the alarm, replies,
//! makes the creates and reports each result back through `decide`.
//!
//! # The rules, in short
//! A burst is a run of calls with less than `delayMs` between consecutive
//! ones; it ends when its start fires, after `delayMs` of silence, or
//! `maxWaitMs` after its first call. A trailing start fires at that end with
//! the latest call's params (or, batching, every call's: `batch.rs`); a
//! leading one at the first call; `both` makes both (the trailing one only
//! if a call came after the first). A key has at
//! most one pending start: `startAt` replaces it (keeping its id) and ends
//! the burst, and a burst that begins while a `startAt` is pending takes that
//! start over, id and all. A fired start is kept until its create succeeds
//! or finds the id taken; other failures are retried with backoff, never
//! dropped.

mod batch;
mod call;
mod decide;
mod inspect;
pub mod log;
mod memory;
mod reason;
mod request;
pub mod sql;
mod state;

pub use call::*;
pub use decide::*;
pub use inspect::*;
pub use log::created as created_line;
pub use memory::*;
pub use request::*;
pub use state::*;
