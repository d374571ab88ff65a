//! Waking Workflow instances with a turn event: how the driver's wakes
//! (the Coordinator's hand-offs) and the serial queue's shell both send
//! one ([`send`]), read the woken instance's status ([`status`]), and run
//! the deferred round that reads it after the reply ([`deferred`]).
//!
//! A wake is the turn event, then a status check (a dead instance ignores
//! the event, so sending it first costs nothing and wakes a live one sooner).
//! Dead or alive is decided by the status, not by `sendEvent` failing:
//! locally an event sent to a finished instance does not fail. A failed
//! send to a live instance is only logged: events are hints, and the
//! instance re-checks when its wait times out (`withKey`'s turn timeout,
//! `serialize`'s poll).
//!
//! The two halves of a wake are apart ([`Sent`]) so that a concept can
//! send the event, reply, and check the status after the reply, once the
//! woken instance has had [`HAND_ON_CHECK_DELAY_MS`] to act on it: the
//! status query then does not reach the woken instance's engine while it
//! acts. A concept that hands something on wakes candidates in turn until
//! one is alive, re-entering its own decision for each one found dead.

use super::js;
use super::workflow::{answer_of, Workflow, WorkflowInstance};
use crate::ident::InstanceId;
use crate::limits::HAND_ON_CHECK_DELAY_MS;
use crate::serial_queue::{Event, News};
use crate::transition::Wake;
use crate::workflow::{Liveness, Status};
use js_sys::Promise;
use std::fmt::Display;
use std::future::Future;
use wasm_bindgen::JsValue;
use worker::Env;

/// The turn event: its type (`TURN_EVENT_TYPE`) and payload.
pub struct Turn {
    pub event_type: String,
    pub payload: JsValue,
}

impl Turn {
    /// The serial queue's turn event, as a wake spells it out: its type, and
    /// the payload `{ group }`, with the instance's id and its status when it has news. Built by hand,
    /// not through serde: one more serialized type costs the WASM more (P6).
    pub fn serial(tell: &Wake<Event>) -> Result<Turn, JsValue> {
        let payload = js_sys::Object::new();
        let set = |object: &js_sys::Object, name: &str, value: JsValue| {
            js_sys::Reflect::set(object, &name.into(), &value).map(drop)
        };
        set(&payload, "group", tell.event.group.as_str().into())?;
        let status = match &tell.event.news {
            News::Claim => None,
            News::Holding { fence } => {
                set(&payload, "fence", JsValue::from_f64(*fence as f64))?;
                Some("holding")
            }
            News::Skipped { by, by_revision } => {
                let winner = js_sys::Object::new();
                set(&winner, "instanceId", by.as_str().into())?;
                set(&winner, "revision", by_revision.as_str().into())?;
                set(&payload, "supersededBy", winner.into())?;
                Some("skipped")
            }
        };
        if let Some(status) = status {
            set(&payload, "instanceId", tell.id.as_str().into())?;
            set(&payload, "status", status.into())?;
        }
        Ok(Turn {
            event_type: tell.event.event_type.clone(),
            payload: payload.into(),
        })
    }
}

/// A turn event sent (or not: the failure is kept), with the instance
/// handle its status is then read through.
pub struct Sent {
    instance: Result<WorkflowInstance, JsValue>,
    sent: Result<(), JsValue>,
    /// The binding it went through (§1a: where that one cannot find the
    /// instance, its status is looked up through the others).
    pub binding: String,
}

impl Sent {
    /// Sends `id` the turn event. The event goes before any status query:
    /// it is what the woken instance waits for, and its engine answers one
    /// call at a time, so a status query ahead of the event (or beside it)
    /// would delay the wake-up; a dead instance ignores the event.
    pub async fn send(workflow: &Workflow, id: &InstanceId, event: &Turn, binding: &str) -> Sent {
        let instance = workflow.instance(id.as_str()).await;
        let sent = match &instance {
            Ok(instance) => instance.send(&event.event_type, &event.payload).await,
            Err(error) => Err(error.clone()),
        };
        Sent {
            instance,
            sent,
            binding: binding.to_owned(),
        }
    }

    /// Whether the engine accepted the event.
    pub fn accepted(&self) -> bool {
        self.sent.is_ok()
    }

    /// What the binding answered about the instance sent the event (§10a's
    /// `checked.status`), through the same handle.
    pub async fn answer(self, id: &InstanceId) -> Status {
        let answer = match self.instance {
            Ok(instance) => answer_of(instance.current_status().await),
            Err(error) => answer_of(Err(error)),
        };
        if let (Err(error), Liveness::Alive | Liveness::Unknown) = (self.sent, answer.liveness()) {
            worker::console_warn!("baton: turn event to {id} failed: {error:?}");
        }
        answer
    }

    /// How alive the instance sent the event is, through the same handle.
    pub async fn liveness(self, id: &InstanceId) -> Liveness {
        self.answer(id).await.liveness()
    }
}

/// Sends `wake` the turn event `turn` through its own Workflow binding;
/// the operator's error if that binding is gone from the configuration.
pub async fn send<E>(env: &Env, wake: &Wake<E>, turn: &Turn) -> Result<Sent, JsValue> {
    let workflow = Workflow::from_env(env, &wake.workflow)?;
    Ok(Sent::send(&workflow, &wake.id, turn, &wake.workflow).await)
}

/// What the binding answered about a woken instance, through the handle
/// its event went through (`Failed` if no event went: its binding is gone
/// from the configuration, so it could not be asked).
pub async fn status(sent: Option<Sent>, id: &InstanceId) -> Status {
    match sent {
        Some(sent) => sent.answer(id).await,
        None => Status::Failed,
    }
}

/// Work after a reply that needs no delay (a turn event the reply did
/// not wait for): `work` runs at once. The promise is for the caller's
/// `waitUntil`; a failure is logged as `what` failed.
pub fn after_reply(
    what: impl Display + 'static,
    work: impl Future<Output = Result<(), JsValue>> + 'static,
) -> Promise {
    js::promise(async move {
        if let Err(error) = work.await {
            worker::console_error!("baton: {what} failed: {error:?}");
        }
        Ok(JsValue::UNDEFINED)
    })
}

/// The deferred round after a reply: `round` (which reads the woken
/// instances' statuses and feeds them back) runs once they have had
/// [`HAND_ON_CHECK_DELAY_MS`] to act on their events. The promise is for
/// the caller's `waitUntil`; should the Worker stop first, the caller's
/// own fallback carries on (the alarm, a waiter's next poll). A failure is
/// logged as `what` failed.
pub fn deferred(
    what: impl Display + 'static,
    round: impl Future<Output = Result<(), JsValue>> + 'static,
) -> Promise {
    js::promise(async move {
        // Let the woken instance act before its engine is asked its status.
        worker::Delay::from(std::time::Duration::from_millis(HAND_ON_CHECK_DELAY_MS)).await;
        if let Err(error) = round.await {
            worker::console_error!("baton: {what} failed: {error:?}");
        }
        Ok(JsValue::UNDEFINED)
    })
}
