//! Rate limits: an exact sliding window per rule, per bucket (contract §5).
//!
//! This module owns *how many permits a bucket may grant now*, and when the
//! next one frees: several window rules per bucket, each remembered by its
//! id, grants in blocks, penalties (an upstream's Retry-After) that are
//! never shortened, and refunds of unused permits. It does no I/O and reads
//! no clock: every decision takes the time as an argument, and a
//! [`RateStore`] through which it reads and writes only the rows it needs.
//!
//! What it does not do: find the bucket (the shell addresses one Durable
//! Object per bucket), parse JSON (the edge builds a [`RuleSet`] and the
//! counts with [`rules`]' parsers), or wait (the caller sleeps `waitMs`).
//!
//! Unlike the Coordinator, a rate decision never needs to ask a Workflow
//! anything, so there is one phase: read, decide and write in one turn.
//!
//! # Storage
//! One row per grant (a block of `k` permits at one time is one row), with
//! running totals per rule slot, so a window's use and a rule's next free
//! time are a few indexed lookups however many grants are kept (see
//! [`state`]). Rows are kept for the longest window the bucket has seen and
//! deleted a few per call as they age out.
//!
//! The object keeps a write-through [`RateCache`] of its bucket in front of
//! that storage ([`CachedRateStore`]): the scalars, the rules, the oldest
//! row and the newest rows. A refusal then runs no statement and a grant
//! only its insert; storage stays the truth, and the cache is rebuilt from
//! it after a restart.

mod cached_store;
mod decide;
mod memory;
pub mod rules;
pub mod schema;
mod sql_store;
pub mod state;

pub use cached_store::{CachedRateStore, RateCache};
pub use decide::*;
pub use memory::MemoryRateStore;
pub use rules::{Rule, RuleId, RuleSet};
pub use sql_store::{migrate, SqlRateStore};
pub use state::{GrantRow, Meta, RateStore, RuleRow};
