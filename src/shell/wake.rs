//! Waking Workflow instances with the turn event: the one wake path of the
//! Coordinator and the serial queue.
//!
//! A wake is the turn event, then a status check (a dead instance ignores
//! the event, so sending it first costs nothing and wakes a live one sooner).
//! Dead or alive is decided by the status, not by `sendEvent` failing:
//! locally an event sent to a finished instance does not fail. A failed
//! send to a live instance is only logged: events are hints, and the
//! instance re-checks when its wait times out (`withKey`'s turn timeout,
//! `serialize`'s poll).
//!
//! [`first_alive`] hands something on: it wakes candidates in turn until
//! one is alive, and lets the concept re-enter its own decision for each
//! one found dead ([`Wakes::found_dead`]), which names the next to try.

use super::decision_log::{self, Scope};
use super::workflow::{liveness_of, Workflow};
use crate::coordinator::Liveness;
use crate::ident::InstanceId;
use crate::limits::WAKE_ATTEMPTS_PER_CALL_MAX;
use wasm_bindgen::JsValue;

/// The turn event: its type (`TURN_EVENT_TYPE`) and payload.
pub struct Turn {
    pub event_type: String,
    pub payload: JsValue,
}

/// What a concept supplies to a wake chain.
pub trait Wakes {
    /// The decision-log words for a candidate found dead, and for one woken.
    const DEAD: (&'static str, &'static str);
    const WOKEN: (&'static str, &'static str);

    /// The Workflow binding instance `id` belongs to.
    fn workflow(&self, id: &InstanceId) -> Result<Workflow, JsValue>;

    /// `id` was found dead: record that (re-entering the concept's
    /// decision) and name the next instance to try, if any.
    async fn found_dead(&self, id: InstanceId) -> Result<Option<InstanceId>, JsValue>;
}

/// Sends `id` the turn event, then asks its status; returns its liveness.
/// The event goes first: it is what the woken instance waits for, and its
/// engine answers one call at a time, so a status query ahead of the event
/// (or beside it) would delay the wake-up; a dead instance ignores the
/// event. One handle serves both calls.
pub async fn send_turn(workflow: &Workflow, id: &InstanceId, event: &Turn) -> Liveness {
    let instance = match workflow.instance(id.as_str()).await {
        Ok(instance) => instance,
        Err(error) => return liveness_of(Err(error)),
    };
    let sent = instance.send(&event.event_type, &event.payload).await;
    let liveness = liveness_of(instance.current_status().await);
    if let (Err(error), Liveness::Alive | Liveness::Unknown) = (sent, liveness) {
        worker::console_warn!("baton: turn event to {id} failed: {error:?}");
    }
    liveness
}

/// Wakes `next`, and while the woken is dead, the next the concept names,
/// up to [`WAKE_ATTEMPTS_PER_CALL_MAX`]. Returns the instance woken, or the
/// one left untried past the bound (the concept's own recovery, the
/// holder-check alarm or a poll, carries on from there).
pub async fn first_alive<W: Wakes>(
    concept: &W,
    scope: Scope<'_>,
    event: &Turn,
    mut next: Option<InstanceId>,
) -> Result<Option<InstanceId>, JsValue> {
    for _ in 0..WAKE_ATTEMPTS_PER_CALL_MAX {
        let Some(id) = next else { return Ok(None) };
        match send_turn(&concept.workflow(&id)?, &id, event).await {
            Liveness::Dead => {
                let (decision, reason) = W::DEAD;
                decision_log::decision(scope, id.as_str(), decision, reason, None);
                next = concept.found_dead(id).await?;
            }
            Liveness::Alive | Liveness::Unknown => {
                let (decision, reason) = W::WOKEN;
                decision_log::decision(scope, id.as_str(), decision, reason, None);
                return Ok(Some(id));
            }
        }
    }
    Ok(next)
}

/// Tells each of `ids` (up to the bound), the dead ones skipped by status.
pub async fn each<W: Wakes>(concept: &W, event: &Turn, ids: &[InstanceId]) -> Result<(), JsValue> {
    for id in ids.iter().take(WAKE_ATTEMPTS_PER_CALL_MAX as usize) {
        send_turn(&concept.workflow(id)?, id, event).await;
    }
    Ok(())
}
