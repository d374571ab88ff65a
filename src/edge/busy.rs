//! What is busy (contract §10): `coordinatorList` and `serialList`, their
//! pages, and the report a Coordinator sends its list shard (internal:
//! between Baton's own objects, not part of the contract).

use crate::busy::page::ListLimit;
use crate::busy::{Busy, Report};
use crate::health::KeyState;
use crate::ident::Ident;
use crate::limits::LIST_LIMIT_MAX;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// `coordinatorList({ cursor?, limit? })` and `serialList(...)`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "ListRequest")]
pub struct ListRequest {
    /// Where to go on: the `cursor` the previous page answered (none or
    /// `null` for the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<ListLimit>,
    /// §10a: only the entries in this state (a page may then answer fewer
    /// than `limit`, and still a `cursor` while more may follow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<KeyState>,
}

impl Serialize for ListLimit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.get())
    }
}

impl<'de> Deserialize<'de> for ListLimit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ListLimit::new(f64::deserialize(deserializer)?).map_err(de::Error::custom)
    }
}

impl JsonSchema for ListLimit {
    fn schema_name() -> Cow<'static, str> {
        "ListLimit".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "description": "Most entries one page answers (default 100).",
            "minimum": 1,
            "maximum": LIST_LIMIT_MAX,
        })
    }
}

/// A page of `coordinatorList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyList {
    pub keys: Vec<ListedKey>,
    /// The next page's `cursor`; `null` on the last page.
    pub cursor: Option<String>,
}

/// A key with a waiter, or whose holder was found dead in the last hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedKey {
    pub key: String,
    /// How many hold it.
    pub holders: u32,
    /// How many wait for it.
    pub waiting: u32,
    /// How long its earliest waiter has waited (0 without waiters).
    pub oldest_wait_ms: u64,
    pub limit: u32,
    /// §11: an operator paused the key.
    pub paused: bool,
    /// §10a: its health at a glance, from what the key last reported.
    pub state: KeyState,
}

/// A page of `serialList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GroupList {
    pub groups: Vec<ListedGroup>,
    /// The next page's `cursor`; `null` on the last page.
    pub cursor: Option<String>,
}

/// A group with a holder or a waiter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedGroup {
    pub group: String,
    /// The holder's instance id.
    pub holder: Option<String>,
    pub waiting: u32,
    /// How long its earliest waiter has waited (0 without waiters).
    pub oldest_wait_ms: u64,
    /// Whether an operator paused it (contract §11).
    pub paused: bool,
    /// §10a, as a key of limit 1 with no stall: `paused`, `backlogged`,
    /// `at_capacity` or `idle`.
    pub state: KeyState,
}

// --- between Baton's objects ---

/// A key's report to its list shard (`BusyList.report`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShardReport {
    pub key: Ident,
    pub stamp: u64,
    pub holders: u32,
    pub waiting: u32,
    pub oldest_since: Option<u64>,
    pub limit: u32,
    pub dead_until: Option<u64>,
    /// Absent from a report of an older release: not paused.
    #[serde(default)]
    pub paused: bool,
    /// §10a (absent from a report of an older release: nothing keeps it).
    #[serde(default)]
    pub stalled_from: Option<u64>,
}

impl ShardReport {
    pub fn new(key: Ident, report: &Report) -> ShardReport {
        let busy = &report.busy;
        ShardReport {
            key,
            stamp: report.stamp,
            holders: busy.holders,
            waiting: busy.waiting,
            oldest_since: busy.oldest_since_ms,
            limit: busy.limit,
            dead_until: busy.dead_until_ms,
            paused: busy.paused,
            stalled_from: busy.stalled_from_ms,
        }
    }

    pub fn report(&self) -> Report {
        Report {
            stamp: self.stamp,
            busy: Busy {
                holders: self.holders,
                waiting: self.waiting,
                // A report's counts and its oldest wait agree (the shard's
                // invariants check it); the shard trusts Baton's own objects.
                oldest_since_ms: self.oldest_since,
                limit: self.limit.max(1),
                dead_until_ms: self.dead_until,
                paused: self.paused,
                stalled_from_ms: self.stalled_from,
            },
        }
    }
}

/// What a shard answers a report (`crate::busy::Answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardReportReply {
    /// Whether the report was the newest of its key (else it was stale).
    pub applied: bool,
    /// The stamp the shard holds for the key now.
    pub stamp: u64,
    /// Whether the shard shows what the report said.
    pub same: bool,
}

impl From<crate::busy::Answer> for ShardReportReply {
    fn from(answer: crate::busy::Answer) -> Self {
        ShardReportReply {
            applied: answer.applied,
            stamp: answer.stamp,
            same: answer.same,
        }
    }
}

impl From<ShardReportReply> for crate::busy::Answer {
    fn from(reply: ShardReportReply) -> Self {
        crate::busy::Answer {
            applied: reply.applied,
            stamp: reply.stamp,
            same: reply.same,
        }
    }
}

/// A shard's page (`BusyList.page`): the listed keys after `after`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShardPageRequest {
    #[serde(default)]
    pub after: Option<String>,
    pub limit: u32,
}

/// A shard's page: each key with what it shows, in key order. Columns
/// rather than objects: a page crosses one RPC per shard per read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardPageReply {
    pub keys: Vec<String>,
    pub holders: Vec<u32>,
    pub waiting: Vec<u32>,
    pub oldest_since: Vec<Option<u64>>,
    pub limit: Vec<u32>,
    /// When the shard took each key's report (its clock).
    pub reported_at: Vec<u64>,
    /// §11: whether each key is paused (absent from an older shard: none).
    #[serde(default)]
    pub paused: Vec<bool>,
    /// §10a: from when each key counts as stalled (absent from an older
    /// shard: none).
    #[serde(default)]
    pub stalled_from: Vec<Option<u64>>,
    /// Whether the shard answered as many keys as it was asked.
    pub full: bool,
}
