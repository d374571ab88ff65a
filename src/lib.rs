//! Baton: the coordination layer for Cloudflare Workflows.
//!
//! The crate is a pure core and a thin shell. The core (everything not under
//! `shell`) compiles and runs natively: no I/O, clock or randomness, so
//! `cargo test` can drive every interleaving. The shell exists only on wasm32
//! and connects the core to Durable Objects, D1 and the Workflow binding.
//!
//! - [`limits`]: every bound, with its reason.
//! - [`error`]: the typed `BatonError` callers see.
//! - [`ident`]: validated keys, groups, revisions, instance ids, input hashes.
//! - [`busy`]: what is busy now: the list of contended keys over its
//!   shards, and what a Coordinator reports to it (contract §10).
//! - [`coordinator`]: N holders per key (one by default), waiters handed the
//!   key by priority, tenant and arrival, several Workflows, the enqueue
//!   grace, cancel in progress and an operator's steering (contract §1,
//!   §1a-§1d, §11).
//! - [`rate_limit`]: an exact sliding window per rule, per bucket (contract §5).
//! - [`serial_queue`]: one in flight per group, newest waiter wins, hand-off by
//!   grant and fences per group (contract §2, §2a).
//! - [`debounce`]: one start per burst of calls, and starts at a time (contract §4).
//! - [`runs`]: idempotent runs: claim once, await the outcome, follow the events (contract §6).
//! - [`health`]: a key's health at a glance, one rule from its counts and
//!   the time (contract §10a).
//! - [`pause`]: an operator's pause, as keys and serial groups keep it (§11).
//! - [`workflow`]: what every object says about Workflow instances: their
//!   liveness and the grace rule.
//! - [`transition`]: the one shape of every decision, and the effects on
//!   Workflow instances it asks of the shell.
//! - [`sql`]: what every Durable Object's SQLite store shares (each
//!   concept's own rows are in its `sql.rs`): statement values, the
//!   executor (the object's storage, or rusqlite natively), the statement
//!   counts, the schema ladder and the column conversions.
//! - [`edge`]: every request and reply type, the one decoder of caller input,
//!   the method table (one row per method, from which the routes, the
//!   commands, the services and the schemas come), and the HTTP API's
//!   routes, auth and body rules (without HTTP).

pub mod busy;
pub mod coordinator;
pub mod debounce;
pub mod edge;
pub mod error;
pub mod health;
pub mod ident;
pub mod limits;
pub mod pause;
pub mod rate_limit;
pub mod runs;
pub mod serial_queue;
pub mod sql;
pub mod transition;
pub mod workflow;

#[cfg(target_arch = "wasm32")]
mod shell;
