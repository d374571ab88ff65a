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
//! The two halves of a wake are apart ([`Sent`]) so that a concept can
//! send the event, reply, and check the status after the reply, once the
//! woken instance has had [`HAND_ON_CHECK_DELAY_MS`] to act on it: the
//! Coordinator's wakes and the serial queue's release both do.
//!
//! [`HAND_ON_CHECK_DELAY_MS`]: crate::limits::HAND_ON_CHECK_DELAY_MS

use super::decision_log::{self, Kind, Scope};
use super::workflow::{liveness_of, Workflow, WorkflowInstance};
use crate::ident::InstanceId;
use crate::limits::WAKE_ATTEMPTS_PER_CALL_MAX;
use crate::workflow::Liveness;
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

/// A turn event sent (or not: the failure is kept), with the instance
/// handle its status is then read through.
pub struct Sent {
    instance: Result<WorkflowInstance, JsValue>,
    sent: Result<(), JsValue>,
}

impl Sent {
    /// Sends `id` the turn event. The event goes before any status query:
    /// it is what the woken instance waits for, and its engine answers one
    /// call at a time, so a status query ahead of the event (or beside it)
    /// would delay the wake-up; a dead instance ignores the event.
    pub async fn send(workflow: &Workflow, id: &InstanceId, event: &Turn) -> Sent {
        let instance = workflow.instance(id.as_str()).await;
        let sent = match &instance {
            Ok(instance) => instance.send(&event.event_type, &event.payload).await,
            Err(error) => Err(error.clone()),
        };
        Sent { instance, sent }
    }

    /// Whether the engine accepted the event.
    pub fn accepted(&self) -> bool {
        self.sent.is_ok()
    }

    /// The status of the instance sent the event, through the same handle.
    pub async fn liveness(self, id: &InstanceId) -> Liveness {
        let liveness = match self.instance {
            Ok(instance) => liveness_of(instance.current_status().await),
            Err(error) => liveness_of(Err(error)),
        };
        if let (Err(error), Liveness::Alive | Liveness::Unknown) = (self.sent, liveness) {
            worker::console_warn!("baton: turn event to {id} failed: {error:?}");
        }
        liveness
    }
}

/// Sends `id` the turn event, then asks its status; returns its liveness.
pub async fn send_turn(workflow: &Workflow, id: &InstanceId, event: &Turn) -> Liveness {
    Sent::send(workflow, id, event).await.liveness(id).await
}

/// Hands something on from `id`, already sent the turn event (`sent`):
/// while the woken is dead, the next the concept names is woken, up to
/// [`WAKE_ATTEMPTS_PER_CALL_MAX`] events in all. Returns the instance
/// woken, or the one left untried past the bound (the concept's own
/// recovery, the holder-check alarm or a poll, carries on from there).
/// The first event is the caller's, so that it can reply between the event
/// and the status check.
pub async fn first_alive<W: Wakes>(
    concept: &W,
    scope: Scope<'_>,
    event: &Turn,
    mut id: InstanceId,
    mut sent: Sent,
) -> Result<Option<InstanceId>, JsValue> {
    // Events sent so far, this chain's first included.
    let mut attempts = 1;
    loop {
        match sent.liveness(&id).await {
            // The serial queue has no enqueue grace: not found is dead.
            Liveness::Dead | Liveness::NotFound => {
                let (decision, reason) = W::DEAD;
                decision_log::decision(Kind::Contended, scope, id.as_str(), decision, reason, None);
                let Some(next) = concept.found_dead(id).await? else {
                    return Ok(None);
                };
                if attempts >= WAKE_ATTEMPTS_PER_CALL_MAX {
                    return Ok(Some(next));
                }
                sent = Sent::send(&concept.workflow(&next)?, &next, event).await;
                attempts += 1;
                id = next;
            }
            Liveness::Alive | Liveness::Unknown => {
                let (decision, reason) = W::WOKEN;
                decision_log::decision(Kind::Contended, scope, id.as_str(), decision, reason, None);
                return Ok(Some(id));
            }
        }
    }
}

/// Tells each of `ids` (up to the bound), the dead ones skipped by status.
pub async fn each<W: Wakes>(concept: &W, event: &Turn, ids: &[InstanceId]) -> Result<(), JsValue> {
    for id in ids.iter().take(WAKE_ATTEMPTS_PER_CALL_MAX as usize) {
        send_turn(&concept.workflow(id)?, id, event).await;
    }
    Ok(())
}
