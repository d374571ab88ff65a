//! What is busy now (contract §10): the list of contended keys, spread over
//! `BATON_LIST_SHARDS` list objects and merged when read.
//!
//! This module owns:
//! - what a Coordinator reports of a key ([`Busy`], carried in a [`Report`]
//!   with a stamp that orders a key's reports), and when a key is listed:
//!   it has a waiter, or its holder was found dead less than an hour ago;
//! - one list shard's decisions ([`report`], [`tick`]): a report newer than what the
//!   shard holds lists, updates or unlists its key; an older or repeated
//!   one changes nothing; a key that left is remembered for
//!   [`LIST_GONE_KEPT_MS`](crate::limits::LIST_GONE_KEPT_MS) so a late
//!   report cannot list it again; the shard's alarm ends a dead holder's
//!   hour and forgets what it remembered ([`Tick`]);
//! - its rows ([`sql`]): one row per key, a page read by key order through
//!   a partial index, so a page costs the same with a thousand keys or a
//!   million;
//! - which shard a key lives on ([`shard_of`], a stable hash), and the read
//!   across shards ([`page`]: the opaque cursor, the limit, the k-way merge);
//! - the Coordinator's side of it ([`reporter`]): what a key's object
//!   reports, and when, so that an uncontended acquire and release never
//!   reports anything.
//!
//! What it does not do: I/O. The list objects
//! (`shell::busy_list_object`), the merged read (`shell::busy_service`)
//! and the Coordinator's reports are the shell's.

mod decide;
pub mod page;
pub mod reporter;
mod shard;
pub mod sql;
mod state;

pub use decide::{apply, assert_invariants, report, tick, Answer, Tick, Transition, Write};
pub use shard::{shard_name, shard_of, ShardCount};
pub use state::{Busy, Report, Row};
