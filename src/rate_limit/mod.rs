//! Rate limits: an exact sliding window per rule, per bucket (contract §5).
//!
//! This module owns *how many permits a bucket may grant now*, and when the
//! next one frees: several window rules per bucket, each remembered by its
//! id, grants in blocks, penalties (an upstream's Retry-After) that are
//! never shortened, and refunds of unused permits. It does no I/O and reads
//! no clock: [`decide`] takes the time as an argument and the bucket as
//! [`Rows`], read-only lookups of the few rows it needs, and returns the
//! shared `Transition`: its reply and its row [`Write`]s, which the shell
//! commits in one turn (`sql`), and the tests apply in memory (`memory`).
//!
//! What it does not do: find the bucket (the shell addresses one Durable
//! Object per bucket), parse JSON (the edge builds a [`RuleSet`] and the
//! counts with [`rules`]' parsers), or wait (the caller sleeps `waitMs`).
//!
//! A rate decision never needs to ask a Workflow anything and never needs
//! the alarm, so its transition has no effects: read, decide and write in
//! one turn.
//!
//! # Storage
//! One row per grant (a block of `k` permits at one time is one row), with
//! running totals per rule slot, so a window's use and a rule's next free
//! time are a few indexed lookups however many grants are kept (see
//! [`state`]). Rows are kept for the longest window the bucket has seen and
//! deleted a few per call as they age out.
//!
//! The object keeps a write-through [`RateCache`] of its bucket in front of
//! that storage ([`Cached`] reads through it, [`RateCache::write`] writes
//! through it): the scalars, the rules, the oldest row and the newest rows. A refusal then runs no statement and a grant
//! only its insert; storage stays the truth, and the cache is rebuilt from
//! it after a restart.
//!
//! # Exactness
//! A permit granted at `t` under a rule with window `W` counts for that rule
//! at every time `T` with `t > T - W`, and frees at `t + W`. At `now` a rule
//! grants at most `limit - used(now)`, where `used(now)` counts its grants in
//! `(now - W, now]`; since every interval `[x, x + W)` that ends after `now`
//! and holds `now` starts after `now - W`, no such interval can exceed the
//! limit. When nothing is granted, the next free time of a rule whose `used`
//! is `u >= limit` is when its `(u - limit + 1)`-th oldest permit in the
//! window leaves it: that grant's time plus `W`. The bucket's `waitMs` is the
//! latest of its rules' times and the cooldown's end.

mod cached;
mod call;
mod decide;
mod invariants;
pub mod log;
mod memory;
pub mod rules;
pub mod schema;
mod sql;
pub mod state;

pub use cached::{Cached, RateCache, SeenCall};
pub use call::*;
pub use decide::*;
pub use invariants::{assert_invariants, assert_table_invariants};
pub use memory::Table;
pub use rules::{Rule, RuleId, RuleSet};
pub use sql::{migrate, SqlRows};
pub use state::{GrantRow, Meta, Rows, RuleRow, Write};
