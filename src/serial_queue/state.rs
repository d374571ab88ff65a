//! What the serial queue stores (a row per execution) and what a decision
//! hands the shell to run (a batch of statements) and gets back.

use crate::ident::{Ident, InstanceId};

/// The two time bounds of a group, from `SERIAL_WAITER_TIMEOUT_MS` and
/// `SERIAL_HEARTBEAT_EXPIRY_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerialTimeouts {
    /// A waiter enqueued longer ago than this, still behind a live holder, times out.
    pub waiter_timeout_ms: u64,
    /// A holder whose last heartbeat is older than this no longer holds the group.
    pub heartbeat_expiry_ms: u64,
}

impl SerialTimeouts {
    /// The oldest heartbeat that still counts as live at `now_ms`.
    pub fn oldest_live_heartbeat_ms(self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.heartbeat_expiry_ms)
    }

    /// The latest enqueue time that may still wait behind a live holder at
    /// `now_ms`; a waiter enqueued before it times out.
    pub fn waiter_cutoff_ms(self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.waiter_timeout_ms)
    }
}

/// One row of the `serial_queue` table, column for column ([`super::sql`]
/// returns these columns from every statement that returns rows). Times
/// are ms since the epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub seq: u64,
    pub group_name: String,
    pub instance_id: String,
    pub revision: String,
    pub state: String,
    pub enqueued_at: u64,
    pub heartbeat_at: Option<u64>,
    pub superseded_by: Option<String>,
    pub superseded_by_revision: Option<String>,
    pub finished_at: Option<u64>,
    /// The Workflow binding named at enqueue; `None` is `WORKFLOW_BINDING`.
    pub workflow: Option<String>,
    /// Set when registered with grant: the prefix of its turn ([`turn`]).
    pub turn_prefix: Option<String>,
    /// The group's fence when this execution was granted the group.
    pub fence: Option<u64>,
}

/// The event type a registration with grant is woken by: unique to it, as
/// `seq` is never reused, and within the Workflows rules for event types
/// (the prefix, `TURN_EVENT_TYPE`, is at most
/// [`crate::limits::SERIAL_TURN_PREFIX_CHARS_MAX`] characters).
pub fn turn(prefix: &str, seq: u64) -> String {
    format!("{prefix}-serial-{seq}")
}

/// Where an execution is in its group: the `state` column with the columns
/// that belong to it, so a row that mixes them cannot be written down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryState {
    Waiting,
    Holding {
        heartbeat_at_ms: u64,
    },
    Superseded {
        by: InstanceId,
        by_revision: Ident,
        at_ms: u64,
    },
    TimedOut {
        at_ms: u64,
    },
    /// Left by `serialRelease`; `held` says whether it held the group.
    Released {
        at_ms: u64,
        held: bool,
    },
    /// Found dead while being woken, or a holder whose heartbeat went stale
    /// and whose group was claimed by another.
    Abandoned {
        at_ms: u64,
    },
}

impl EntryState {
    /// The `state` column's value (and `serialInspect`'s `outcome`).
    pub fn name(&self) -> &'static str {
        match self {
            EntryState::Waiting => "waiting",
            EntryState::Holding { .. } => "holding",
            EntryState::Superseded { .. } => "superseded",
            EntryState::TimedOut { .. } => "timed_out",
            EntryState::Released { .. } => "released",
            EntryState::Abandoned { .. } => "abandoned",
        }
    }

    /// When it finished, for the states that are final.
    pub fn finished_at_ms(&self) -> Option<u64> {
        match self {
            EntryState::Waiting | EntryState::Holding { .. } => None,
            EntryState::Superseded { at_ms, .. }
            | EntryState::TimedOut { at_ms }
            | EntryState::Released { at_ms, .. }
            | EntryState::Abandoned { at_ms } => Some(*at_ms),
        }
    }
}

/// One execution's row, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub enqueued_at_ms: u64,
    pub state: EntryState,
    pub workflow: Option<String>,
    /// Its turn, if it registered with grant.
    pub turn: Option<String>,
    /// The fence it was granted the group with (none before it held, and
    /// none for a grant written before fences existed).
    pub fence: Option<u64>,
}

/// A bound parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Text(String),
    Null,
    /// Times and counts; always below 2^53, so they survive a JS number.
    Integer(u64),
}

/// One statement with its parameters (`?1`, `?2`, ... in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sql: &'static str,
    pub params: Vec<Param>,
    /// Which table's rows it returns, if it returns any.
    pub returns: Returns,
}

/// The two row types a statement may return: whole [`Row`]s of
/// `serial_queue` (every statement but the steering ones), or a
/// [`GroupRow`] of `serial_group` (contract §11's pause).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    Entries,
    Group,
}

/// One row of the `serial_group` table (migrations/0004_serial_pause.sql),
/// column for column: a group's steering. A group never paused has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupRow {
    pub group_name: String,
    /// When it was paused, while it is.
    pub paused_at: Option<u64>,
    pub paused_reason: Option<String>,
    /// When it was last resumed: its waiters' timeouts run from then.
    pub resumed_at: Option<u64>,
}

/// An operator's pause of a group (contract §11), typed from its row.
pub use crate::pause::Paused;

/// Statements the shell runs as one D1 batch: one round trip, one
/// transaction (all or nothing), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch(pub Vec<Statement>);

/// What one statement of a batch gave back: its rows (whole [`Row`]s, or
/// whole [`GroupRow`]s, as the statement [`Returns`], or none) and how
/// many rows it changed (D1's `meta.changes`; 0 for a read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub rows: Vec<Row>,
    pub groups: Vec<GroupRow>,
    pub changes: u64,
}
