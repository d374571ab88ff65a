//! The Coordinator's rows as values: the columns a holder and a waiter are
//! read with, and each column's conversion to and from its stored form.

use crate::coordinator::types::{Holder, HolderState, Turn, Waiter};
use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};
use crate::sql::{
    integer, millis, millis_value, optional_millis, optional_text, stored_id, text, SqlValue,
};

/// The columns a waiter is read with, in [`waiter_from_row`]'s order.
pub(super) const WAITER_COLUMNS: &str =
    "id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant";
/// [`WAITER_COLUMNS`] of the table aliased `w`.
pub(super) const WAITER_COLUMNS_OF_W: &str =
    "w.id, w.since_ms, w.input_hash, w.workflow, w.enqueued_ms, w.turn, w.priority, w.tenant";
/// How many columns [`waiter_from_row`] reads.
pub(super) const WAITER_WIDTH: usize = 8;
/// The columns a holder is read with (of the table aliased `h`), in
/// [`holder_from_row`]'s order.
pub(super) const HOLDER_COLUMNS_OF_H: &str =
    "h.id, h.since_ms, h.state, h.workflow, h.enqueued_ms, h.turn, h.fence, h.cancelling, \
     h.waited_ms";
/// How many columns [`holder_from_row`] reads.
pub(super) const HOLDER_WIDTH: usize = 9;

pub(super) fn state_from(value: &SqlValue) -> HolderState {
    match text(value).as_str() {
        "handed" => HolderState::Handed,
        "holding" => HolderState::Holding,
        other => panic!("stored holder state {other:?}"),
    }
}

pub(super) fn state_value(state: HolderState) -> SqlValue {
    SqlValue::Text(
        match state {
            HolderState::Handed => "handed",
            HolderState::Holding => "holding",
        }
        .into(),
    )
}

pub(super) fn workflow_from(value: &SqlValue) -> Option<WorkflowName> {
    optional_text(value).map(|name| WorkflowName::new(name).expect("stored workflow name is valid"))
}

pub(super) fn workflow_value(workflow: Option<&WorkflowName>) -> SqlValue {
    workflow.map_or(SqlValue::Null, |w| SqlValue::Text(w.to_string()))
}

/// A turn column: NULL is [`Turn::Shared`] (every row from before v4).
pub(super) fn turn_from(value: &SqlValue) -> Turn {
    optional_millis(value).map_or(Turn::Shared, Turn::Own)
}

pub(super) fn turn_value(turn: Turn) -> SqlValue {
    match turn {
        Turn::Shared => SqlValue::Null,
        Turn::Own(n) => millis_value(n),
    }
}

pub(super) fn holder_from_row(row: &[SqlValue]) -> Holder {
    Holder {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        state: state_from(&row[2]),
        workflow: workflow_from(&row[3]),
        enqueued_ms: optional_millis(&row[4]),
        turn: turn_from(&row[5]),
        fence: millis(&row[6]),
        cancelling: integer(&row[7]) != 0,
        waited_ms: millis(&row[8]),
    }
}

pub(super) fn waiter_from_row(row: &[SqlValue]) -> Waiter {
    Waiter {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        input_hash: optional_text(&row[2])
            .map(|h| InputHash::parse("stored inputHash", &h).expect("stored hash is valid")),
        workflow: workflow_from(&row[3]),
        enqueued_ms: optional_millis(&row[4]),
        turn: turn_from(&row[5]),
        priority: priority_from(&row[6]),
        tenant: tenant_from(&row[7]),
    }
}

pub(super) fn priority_from(value: &SqlValue) -> i8 {
    i8::try_from(integer(value)).expect("stored priority is in range")
}

pub(super) fn priority_value(priority: i8) -> SqlValue {
    SqlValue::Integer(i64::from(priority))
}

/// A tenant column: '' is the shared tenant (a tenant is never empty).
pub(super) fn tenant_from(value: &SqlValue) -> Option<Ident> {
    match text(value) {
        shared if shared.is_empty() => None,
        name => Some(Ident::new(name).expect("stored tenant is valid")),
    }
}

pub(super) fn tenant_value(tenant: Option<&Ident>) -> SqlValue {
    SqlValue::Text(tenant.map_or("", Ident::as_str).to_owned())
}

/// The key row's hold times: a JSON array of integers, oldest first.
pub(super) fn hold_times_from(value: &SqlValue) -> Vec<u64> {
    let Some(list) = optional_text(value) else {
        return Vec::new();
    };
    list.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.trim().parse().expect("stored hold times are integers"))
        .collect()
}

pub(super) fn key_value(key: &str) -> SqlValue {
    SqlValue::Text(key.to_owned())
}

pub(super) fn id_value(id: &InstanceId) -> SqlValue {
    SqlValue::Text(id.to_string())
}
