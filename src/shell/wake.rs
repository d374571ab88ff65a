//! Waking Workflow instances with the turn event: what the driver's
//! `Effect::Wake` (the Coordinator's hand-offs) and the serial queue's
//! shell both send a wake through.
//!
//! A wake is the turn event, then a status check (a dead instance ignores
//! the event, so sending it first costs nothing and wakes a live one sooner).
//! Dead or alive is decided by the status, not by `sendEvent` failing:
//! locally an event sent to a finished instance does not fail. A failed
//! send to a live instance is only logged: events are hints, and the
//! instance re-checks when its wait times out (`withKey`'s turn timeout,
//! `serialize`'s poll).
//!
//! A concept that hands something on wakes candidates in turn until one is
//! alive, re-entering its own decision for each one found dead (the serial
//! queue's release: `serial_queue_d1`). The two halves of a wake are apart
//! ([`Sent`]) so that a concept can
//! send the event, reply, and check the status after the reply, once the
//! woken instance has had [`HAND_ON_CHECK_DELAY_MS`] to act on it: the
//! driver's wakes (`shell::driver`) and the serial queue's release both do.
//!
//! [`HAND_ON_CHECK_DELAY_MS`]: crate::limits::HAND_ON_CHECK_DELAY_MS

use super::workflow::{liveness_of, Workflow, WorkflowInstance};
use crate::ident::InstanceId;
use crate::workflow::Liveness;
use wasm_bindgen::JsValue;

/// The turn event: its type (`TURN_EVENT_TYPE`) and payload.
pub struct Turn {
    pub event_type: String,
    pub payload: JsValue,
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
