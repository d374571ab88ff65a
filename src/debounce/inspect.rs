//! What `inspect` shows of a key: its pending start, with the burst behind
//! it, and its recent starts. A read, not a decision: a start whose time has
//! passed but whose alarm has not yet run shows as pending with its `fireAt`.

use super::state::{KeyState, Phase, StartParams, TrailingBurst};
use crate::ident::InstanceId;

/// The pending start as `inspect` shows it (contract §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingView {
    pub instance_id: InstanceId,
    /// `trailing`, `leading` or `both` (the burst's latest call's), or `at`.
    pub edge: &'static str,
    pub workflow: String,
    /// The burst's first and latest calls; for `at`, the `startAt` call.
    pub first_at_ms: u64,
    pub last_at_ms: u64,
    pub fire_at_ms: u64,
    pub calls: u64,
    /// How many params the batch holds, when the start batches (§4a).
    pub items: Option<u32>,
}

/// The key's pending start, if it has one. A leading burst with no trailing
/// start pending has none: its start is made, and listed once confirmed.
pub fn pending_view(state: &KeyState) -> Option<PendingView> {
    let (start, edge, first_at_ms, last_at_ms, fire_at_ms, calls) = match &state.phase {
        Phase::At {
            start,
            at_ms,
            set_at_ms,
        } => (start, "at", *set_at_ms, *set_at_ms, *at_ms, 1),
        Phase::Trailing(TrailingBurst { burst, start, .. }) => (
            start,
            burst.edge.as_str(),
            burst.first_at_ms,
            burst.last_at_ms,
            burst.ends_at_ms(),
            burst.calls,
        ),
        Phase::Idle | Phase::Led { .. } => return None,
    };
    let items = match start.params {
        StartParams::Batch(_) => Some(u32::try_from(state.batch.len()).unwrap_or(u32::MAX)),
        StartParams::Latest(_) => None,
    };
    Some(PendingView {
        instance_id: start.id.clone(),
        edge,
        workflow: start.workflow.clone(),
        first_at_ms,
        last_at_ms,
        fire_at_ms,
        calls,
        items,
    })
}
