//! The shapes one debounce key's state takes.
//!
//! A key is in one [`Phase`]: idle, in a burst whose start was made at its
//! first call, in a burst whose trailing start is pending, or holding a
//! `startAt`'s start pending at a time. Beside it, starts that fired but
//! whose create is not yet confirmed, and its most recent confirmed starts;
//! a pending start that batches (§4a) also holds its batch, a row per call.
//! Each part is its own row in the object's storage (the phase is two: the
//! burst row and the pending row), so a call rewrites only the parts it changed.

use crate::ident::InstanceId;
use crate::limits::{
    DEBOUNCE_BATCH_BYTES_MAX, DEBOUNCE_BATCH_ITEMS_MAX, DEBOUNCE_STARTED_KEPT,
    DEBOUNCE_UNFINISHED_STARTS_MAX,
};

/// When in a burst a start is made (contract §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    /// One start when the burst ends, with the latest params.
    Trailing,
    /// One start at the burst's first call; the rest is suppressed.
    Leading,
    /// Leading, plus a trailing start if any call came after the leading one.
    Both,
}

impl Edge {
    pub fn as_str(self) -> &'static str {
        match self {
            Edge::Trailing => "trailing",
            Edge::Leading => "leading",
            Edge::Both => "both",
        }
    }

    pub fn parse(text: &str) -> Option<Edge> {
        match text {
            "trailing" => Some(Edge::Trailing),
            "leading" => Some(Edge::Leading),
            "both" => Some(Edge::Both),
            _ => None,
        }
    }
}

/// A run of calls on the key with less than `delay_ms` between consecutive
/// ones. The settings are the latest call's ("applies from that call on");
/// whether a call joins is decided with the settings as they were before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Burst {
    pub edge: Edge,
    pub delay_ms: u64,
    pub max_wait_ms: u64,
    pub workflow: String,
    /// The burst's first call (for a leading burst, its start), ms since the epoch.
    pub first_at_ms: u64,
    pub last_at_ms: u64,
    pub calls: u64,
}

impl Burst {
    /// When the burst ends: `delay_ms` of silence after its last call, or
    /// `max_wait_ms` after its first, whichever is first. A call at or after
    /// this time begins a new burst; a trailing start fires at this time.
    pub fn ends_at_ms(&self) -> u64 {
        (self.last_at_ms.saturating_add(self.delay_ms))
            .min(self.first_at_ms.saturating_add(self.max_wait_ms))
    }
}

/// A start not yet fired. Its id was decided when it became pending and is
/// the one every caller was told. When it fires is its [`Phase`]'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub id: InstanceId,
    /// The Workflow binding it will be created through.
    pub workflow: String,
    pub params: StartParams,
}

/// Where a key is between its calls. The rules make no other shape: a
/// burst always has a start (made at its first call, or pending until its
/// end), and a start pending at a time has no burst.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Phase {
    /// No burst, no pending start.
    #[default]
    Idle,
    /// A burst whose first call made its start (`leading`, `both`), with
    /// no trailing start pending.
    Led { burst: Burst, leading: InstanceId },
    /// A burst whose trailing start is pending, to fire when it ends.
    Trailing(TrailingBurst),
    /// A `startAt`'s start, pending until `at_ms` (set at `set_at_ms`), with no burst.
    At {
        start: Pending,
        at_ms: u64,
        set_at_ms: u64,
    },
}

/// A burst and its pending trailing start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailingBurst {
    pub burst: Burst,
    /// The start the burst's first call made, when it made one (`both`, or
    /// a burst begun `leading` that a later call made trailing too).
    pub leading: Option<InstanceId>,
    pub start: Pending,
}

/// The burst row: the burst, and the start its first call made, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BurstRow {
    pub burst: Burst,
    pub leading: Option<InstanceId>,
}

/// The pending row: the start, and when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRow {
    pub start: Pending,
    pub fire: Fire,
}

/// When a pending row's start fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fire {
    /// When the key's burst ends ([`Burst::ends_at_ms`]): a trailing start.
    BurstEnd,
    /// At a fixed time, set by `startAt` at `set_at_ms`.
    At { at_ms: u64, set_at_ms: u64 },
}

/// Why a key's burst and pending rows are refused as a pair.
pub const CORRUPT_PHASE: &str =
    "the key's burst and pending rows are a pair no decision makes: a corrupt store";

impl Phase {
    /// The phase two stored rows hold, or `None` for a pair no decision
    /// makes (a corrupt store): a trailing start without its burst, a
    /// `startAt` beside a burst, a burst with no start at all.
    pub fn from_rows(burst: Option<BurstRow>, pending: Option<PendingRow>) -> Option<Phase> {
        match (burst, pending) {
            (None, None) => Some(Phase::Idle),
            (
                Some(BurstRow {
                    burst,
                    leading: Some(leading),
                }),
                None,
            ) => Some(Phase::Led { burst, leading }),
            (
                Some(BurstRow { burst, leading }),
                Some(PendingRow {
                    start,
                    fire: Fire::BurstEnd,
                }),
            ) => Some(Phase::Trailing(TrailingBurst {
                burst,
                leading,
                start,
            })),
            (
                None,
                Some(PendingRow {
                    start,
                    fire: Fire::At { at_ms, set_at_ms },
                }),
            ) => Some(Phase::At {
                start,
                at_ms,
                set_at_ms,
            }),
            _ => None,
        }
    }

    /// The phase as its two stored rows.
    pub fn rows(&self) -> (Option<BurstRow>, Option<PendingRow>) {
        match self.clone() {
            Phase::Idle => (None, None),
            Phase::Led { burst, leading } => (
                Some(BurstRow {
                    burst,
                    leading: Some(leading),
                }),
                None,
            ),
            Phase::Trailing(TrailingBurst {
                burst,
                leading,
                start,
            }) => (
                Some(BurstRow { burst, leading }),
                Some(PendingRow {
                    start,
                    fire: Fire::BurstEnd,
                }),
            ),
            Phase::At {
                start,
                at_ms,
                set_at_ms,
            } => (
                None,
                Some(PendingRow {
                    start,
                    fire: Fire::At { at_ms, set_at_ms },
                }),
            ),
        }
    }

    /// The key's burst, if one is running (open, or ended and not yet settled).
    pub fn burst(&self) -> Option<&Burst> {
        match self {
            Phase::Led { burst, .. } | Phase::Trailing(TrailingBurst { burst, .. }) => Some(burst),
            Phase::Idle | Phase::At { .. } => None,
        }
    }

    /// The key's pending start, if it has one.
    pub fn pending(&self) -> Option<&Pending> {
        match self {
            Phase::Trailing(TrailingBurst { start, .. }) | Phase::At { start, .. } => Some(start),
            Phase::Idle | Phase::Led { .. } => None,
        }
    }
}

/// What a pending start will be created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartParams {
    /// The JSON text of the latest call's params; `None` when it sent none.
    Latest(Option<String>),
    /// `{ "batch": [...] }` of every call's params, in the order received
    /// (contract §4a): the params are [`KeyState::batch`], a row each.
    Batch(BatchBounds),
}

/// A batch's bounds (contract §4a), set by the call that made the start
/// pending: a batch gathered under them is never reshaped by a later call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchBounds {
    /// The call that brings the batch to this many params starts it at once.
    pub max_items: u32,
    /// Most bytes of the instance's params (`{"batch":[...]}`); a call
    /// whose params would pass it starts the batch without them.
    pub max_bytes: u32,
}

/// The bytes of the params a batch's instance is created with:
/// `{"batch":[` + the items, comma-separated + `]}`.
pub fn batch_bytes<S: AsRef<str>>(items: &[S]) -> u64 {
    let sum: u64 = items.iter().map(|item| item.as_ref().len() as u64).sum();
    BATCH_WRAPPER_BYTES + sum + (items.len() as u64).saturating_sub(1)
}

/// The instance's params for a batch of `items` (JSON texts, in order).
pub fn batch_params(items: &[String]) -> String {
    format!("{BATCH_OPEN}{}]}}", items.join(","))
}

const BATCH_OPEN: &str = "{\"batch\":[";
/// `{"batch":[` and `]}`.
const BATCH_WRAPPER_BYTES: u64 = BATCH_OPEN.len() as u64 + 2;

/// A start that fired and whose create is not yet confirmed: the create is
/// in flight, or failed and waits for its retry. It stays until a create
/// succeeds or finds the id taken, so no start is ever dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creating {
    pub id: InstanceId,
    pub workflow: String,
    pub params: Option<String>,
    pub fired_at_ms: u64,
    /// Creates that failed so far.
    pub failures: u32,
    /// When the alarm tries (again): after a failure, the backoff; while an
    /// attempt is in flight, the time after which it is presumed lost.
    pub next_try_at_ms: u64,
    /// The latest failure's message, for `inspect` and the logs.
    pub last_error: Option<String>,
}

/// A confirmed start, as `inspect` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub id: InstanceId,
    /// When the create was confirmed, ms since the epoch.
    pub at_ms: u64,
}

/// Everything the object keeps for one key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyState {
    pub phase: Phase,
    /// In the order they fired.
    pub creating: Vec<Creating>,
    /// Newest first, at most [`DEBOUNCE_STARTED_KEPT`].
    pub started: Vec<Started>,
    /// The pending start's batch: each call's params (JSON text), in the
    /// order received. Empty unless the pending start batches.
    pub batch: Vec<String>,
}

impl KeyState {
    /// Starts promised but not yet confirmed: the pending one and those being created.
    pub fn unfinished_starts(&self) -> usize {
        self.creating.len() + usize::from(self.phase.pending().is_some())
    }

    /// An open burst at `now_ms`: one that a call at `now_ms` would join.
    pub fn open_burst(&self, now_ms: u64) -> Option<&Burst> {
        self.phase.burst().filter(|b| now_ms < b.ends_at_ms())
    }

    /// When the key next needs the object's attention, if ever: its pending
    /// start's fire time, or the earliest create to (re)try. A burst without
    /// a pending start needs no alarm: the next call finds it ended.
    pub fn next_alarm_ms(&self) -> Option<u64> {
        let pending = match &self.phase {
            Phase::Trailing(trailing) => Some(trailing.burst.ends_at_ms()),
            Phase::At { at_ms, .. } => Some(*at_ms),
            Phase::Idle | Phase::Led { .. } => None,
        };
        let retry = self.creating.iter().map(|c| c.next_try_at_ms).min();
        match (pending, retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the key holds nothing worth keeping: its rows may go.
    pub fn is_empty(&self) -> bool {
        *self == KeyState::default()
    }
}

/// Broken-invariant checks, run after every step of the simulation and after
/// every decision in the shell. Panics on violation.
pub fn assert_invariants(state: &KeyState) {
    if let Some(pending) = state.phase.pending() {
        assert_pending(state, pending);
    }
    assert!(
        state.batch.is_empty()
            || matches!(
                state.phase.pending(),
                Some(Pending {
                    params: StartParams::Batch(_),
                    ..
                })
            ),
        "batched params without a pending batch"
    );
    if let Some(burst) = state.phase.burst() {
        assert!(burst.calls >= 1, "a burst without calls");
        assert!(
            burst.first_at_ms <= burst.last_at_ms,
            "burst ends before it began"
        );
    }
    for (i, creating) in state.creating.iter().enumerate() {
        assert!(
            !state.creating[..i].iter().any(|c| c.id == creating.id),
            "{} is being created twice",
            creating.id
        );
    }
    assert!(state.unfinished_starts() <= DEBOUNCE_UNFINISHED_STARTS_MAX);
    assert!(state.started.len() <= DEBOUNCE_STARTED_KEPT);
}

/// The invariants of the key's pending start (what it waits for is its
/// [`Phase`]'s): it is not also being created, and a pending batch has
/// room for another call.
fn assert_pending(state: &KeyState, pending: &Pending) {
    assert!(
        !state.creating.iter().any(|c| c.id == pending.id),
        "pending start {} is also being created",
        pending.id
    );
    if let StartParams::Batch(bounds) = pending.params {
        // A full batch has started: one that is pending has room for
        // another call, within both of its bounds.
        assert!(
            (state.batch.len() as u64) < u64::from(bounds.max_items),
            "pending batch {} holds {} params, its maxItems is {}",
            pending.id,
            state.batch.len(),
            bounds.max_items
        );
        assert!(
            state.batch.is_empty() || batch_bytes(&state.batch) <= u64::from(bounds.max_bytes),
            "pending batch {} is past its maxBytes {}",
            pending.id,
            bounds.max_bytes
        );
        assert!(bounds.max_items <= DEBOUNCE_BATCH_ITEMS_MAX);
        assert!(bounds.max_bytes <= DEBOUNCE_BATCH_BYTES_MAX);
    }
}

/// A batch a call started at once, for the decision's log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStarted {
    pub id: InstanceId,
    /// How many params it started with.
    pub items: u32,
    /// The bytes of its params, `{"batch":[...]}`.
    pub bytes: u64,
    pub by: BatchLimit,
}

/// Which bound started a batch before its burst ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchLimit {
    /// The batch reached its `maxItems`.
    MaxItems(u32),
    /// The next call's params would have taken it past its `maxBytes`.
    MaxBytes(u32),
}
