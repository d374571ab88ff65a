//! The serial queue's shell: runs `crate::serial_queue`'s batches on D1 and
//! sends the wakes they ask for.
//!
//! Every method is the same short loop: take the typed request, ask the
//! core for its batch, run it (one D1 round trip, one transaction), let the
//! core decide the reply and the wakes from what came back, log the
//! decision, wake (through `shell::wake`, the Coordinator's wake path), and
//! reply. Nothing here decides anything the core does not say.

use super::args::{self, now_ms, to_js};
use super::config::SerialConfig;
use super::decision_log::{self, Scope};
use super::wake::{self, TurnEvent, Wakes};
use super::workflow::Workflow;
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::serial_queue::{
    self as core, Batch, ClaimReply, EnqueueReply, Inspection, Outcome, Param, Plan, Released, Row,
    SerialEnqueue, Wake,
};
use js_sys::{Promise, Reflect};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use worker::{D1Database, Env};

/// The Rust half of the Worker's serial-queue RPC methods (see js/worker.mjs).
#[wasm_bindgen]
pub struct SerialQueue {
    shell: Rc<Shell>,
}

/// The serial queue's operations on one Worker `env`; the RPC class and the
/// HTTP API both call these with the decoded request.
pub(crate) struct Shell {
    env: Env,
}

fn refuse(error: BatonError) -> JsValue {
    args::to_js_error(&error)
}

fn internal(error: worker::Error) -> JsValue {
    js_sys::Error::new(&format!("Baton: D1 failed: {error}")).into()
}

#[wasm_bindgen]
impl SerialQueue {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env) -> SerialQueue {
        console_error_panic_hook::set_once();
        SerialQueue {
            shell: Rc::new(Shell::new(env)),
        }
    }

    #[wasm_bindgen(js_name = serialEnqueue)]
    pub fn serial_enqueue(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        future_to_promise(async move { shell.enqueue_js(&input).await })
    }

    #[wasm_bindgen(js_name = serialClaim)]
    pub fn serial_claim(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        future_to_promise(async move { shell.claim_js(&input).await })
    }

    #[wasm_bindgen(js_name = serialHeartbeat)]
    pub fn serial_heartbeat(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        future_to_promise(async move { shell.heartbeat_js(&input).await })
    }

    #[wasm_bindgen(js_name = serialRelease)]
    pub fn serial_release(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        future_to_promise(async move { shell.release_js(&input).await })
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        future_to_promise(async move { shell.inspect_js(&input).await })
    }
}

/// Each method with its input object parsed and its reply shaped: what the
/// RPC methods and the HTTP API call.
impl Shell {
    pub(crate) async fn enqueue_js(&self, input: &JsValue) -> Result<JsValue, JsValue> {
        let request = parse_enqueue(input).map_err(refuse)?;
        Ok(to_js(&enqueue_json(self.enqueue(request).await?)))
    }

    pub(crate) async fn claim_js(&self, input: &JsValue) -> Result<JsValue, JsValue> {
        let (group, id) = group_and_id(input).map_err(refuse)?;
        Ok(to_js(&claim_json(self.claim(group, id).await?)))
    }

    pub(crate) async fn heartbeat_js(&self, input: &JsValue) -> Result<JsValue, JsValue> {
        let (group, id) = group_and_id(input).map_err(refuse)?;
        let holding = self.heartbeat(group, id).await?;
        Ok(to_js(&json!({ "holding": holding })))
    }

    pub(crate) async fn release_js(&self, input: &JsValue) -> Result<JsValue, JsValue> {
        let (group, id) = group_and_id(input).map_err(refuse)?;
        let next = self.release(group, id).await?;
        Ok(to_js(&json!({ "next": next.map(|id| id.to_string()) })))
    }

    pub(crate) async fn inspect_js(&self, input: &JsValue) -> Result<JsValue, JsValue> {
        let group = Input::parse(input)
            .and_then(|i| i.ident("group"))
            .map_err(refuse)?;
        Ok(to_js(&inspection_json(&self.inspect(group).await?)))
    }
}

impl Shell {
    pub(crate) fn new(env: Env) -> Shell {
        Shell { env }
    }

    fn db(&self) -> Result<D1Database, JsValue> {
        self.env.d1("DB").map_err(|_| {
            js_sys::Error::new("Baton configuration: no D1 binding named \"DB\"").into()
        })
    }

    fn config(&self) -> Result<SerialConfig, JsValue> {
        SerialConfig::from_env(&self.env).map_err(|m| js_sys::Error::new(&m).into())
    }

    /// Runs one of the core's batches: one round trip, one transaction.
    async fn run(&self, batch: &Batch) -> Result<Vec<Outcome>, JsValue> {
        let db = self.db()?;
        let statements = batch
            .0
            .iter()
            .map(|s| {
                let params: Vec<JsValue> = s
                    .params
                    .iter()
                    .map(|p| match p {
                        Param::Text(text) => JsValue::from_str(text),
                        Param::Integer(n) => JsValue::from_f64(*n as f64),
                    })
                    .collect();
                db.prepare(s.sql).bind(&params).map_err(internal)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let results = db.batch(statements).await.map_err(internal)?;
        results
            .iter()
            .map(|result| {
                Ok(Outcome {
                    rows: result.results::<Row>().map_err(internal)?,
                    changes: result
                        .meta()
                        .map_err(internal)?
                        .and_then(|m| m.changes)
                        .unwrap_or(0) as u64,
                })
            })
            .collect()
    }

    /// The turn event for `group`, and whether pushes are on at all.
    fn turn(&self, config: &SerialConfig, group: &Ident) -> TurnEvent {
        TurnEvent {
            event_type: config.turn_event_type.clone(),
            payload: to_js(&json!({ "group": group.as_str() })),
        }
    }

    pub(crate) async fn enqueue(&self, request: SerialEnqueue) -> Result<EnqueueReply, JsValue> {
        let config = self.config()?;
        let decided = match core::enqueue(&request, now_ms()) {
            Plan::Done(reply) => core::Decided {
                reply,
                wake: Wake::Nobody,
            },
            Plan::Run(batch) => {
                let outcomes = self.run(&batch).await?;
                core::enqueue_outcome(&request, &outcomes).map_err(refuse)?
            }
        };
        let (name, reason) = match &decided.reply {
            EnqueueReply::Waiting { superseded } => (
                "waiting",
                format!("superseded {} waiter(s)", superseded.len()),
            ),
            EnqueueReply::Skipped { current } => (
                "skipped",
                format!("revision {} is not current ({current})", request.revision),
            ),
        };
        let scope = Scope::Group(request.group.as_str());
        decision_log::decision(scope, request.instance_id.as_str(), name, &reason, None);
        if let (Wake::Each(ids), true) = (&decided.wake, config.push) {
            // Superseded waiters learn at once: their next claim says `skipped`.
            let group = GroupWakes::new(self, &config, &request.group, vec![])?;
            wake::each(&group, &self.turn(&config, &request.group), ids).await?;
        }
        Ok(decided.reply)
    }

    pub(crate) async fn claim(&self, group: Ident, id: InstanceId) -> Result<ClaimReply, JsValue> {
        let config = self.config()?;
        let now = now_ms();
        let outcomes = self
            .run(&core::claim(&group, &id, now, config.timeouts))
            .await?;
        let claimed = core::claim_outcome(&id, &outcomes).map_err(refuse)?;
        let scope = Scope::Group(group.as_str());
        if let Some(stale) = &claimed.abandoned {
            let reason = "its heartbeat went stale";
            decision_log::decision(scope, stale.as_str(), "abandoned", reason, None);
        }
        let (name, reason) = match &claimed.reply {
            ClaimReply::Holding => ("holding", "no live holder".to_string()),
            ClaimReply::Waiting { holder } => (
                "waiting",
                format!(
                    "behind {}",
                    holder.as_ref().map_or("a holder", |h| h.as_str())
                ),
            ),
            ClaimReply::Skipped { by, by_revision } => {
                ("skipped", format!("superseded by {by} at {by_revision}"))
            }
            ClaimReply::TimedOut => ("timed_out", "waited past the waiter timeout".to_string()),
        };
        let waited_ms = now.saturating_sub(claimed.me.enqueued_at_ms);
        decision_log::decision(scope, id.as_str(), name, &reason, Some(waited_ms));
        Ok(claimed.reply)
    }

    pub(crate) async fn heartbeat(&self, group: Ident, id: InstanceId) -> Result<bool, JsValue> {
        let outcomes = self.run(&core::heartbeat(&group, &id, now_ms())).await?;
        Ok(core::heartbeat_outcome(&outcomes))
    }

    /// Returns the waiter woken, if any.
    pub(crate) async fn release(
        &self,
        group: Ident,
        id: InstanceId,
    ) -> Result<Option<InstanceId>, JsValue> {
        let config = self.config()?;
        let outcomes = self.run(&core::release(&group, &id, now_ms())).await?;
        let decided = core::release_outcome(&outcomes);
        let left = match decided.reply {
            Released::HeldNothing => "held nothing",
            Released::LeftQueue => "left the queue",
            Released::FreedGroup => "freed the group",
        };
        decision_log::decision(
            Scope::Group(group.as_str()),
            id.as_str(),
            "released",
            left,
            None,
        );
        match decided.wake {
            Wake::FirstAlive(candidates) if config.push => {
                let wakes = GroupWakes::new(self, &config, &group, candidates)?;
                let first = wakes.candidates.borrow_mut().pop_front();
                let turn = self.turn(&config, &group);
                wake::first_alive(&wakes, Scope::Group(group.as_str()), &turn, first).await
            }
            _ => Ok(None),
        }
    }

    pub(crate) async fn inspect(&self, group: Ident) -> Result<Inspection, JsValue> {
        let outcomes = self.run(&core::inspect(&group)).await?;
        Ok(core::inspect_outcome(&outcomes))
    }
}

/// A freed group's hand-on: the waiters read in the release's batch, in
/// order; one found dead is abandoned (if it still waits) and the next tried.
struct GroupWakes<'a> {
    shell: &'a Shell,
    group: &'a Ident,
    workflow: Workflow,
    candidates: RefCell<VecDeque<InstanceId>>,
}

impl<'a> GroupWakes<'a> {
    fn new(
        shell: &'a Shell,
        config: &SerialConfig,
        group: &'a Ident,
        candidates: Vec<InstanceId>,
    ) -> Result<GroupWakes<'a>, JsValue> {
        Ok(GroupWakes {
            shell,
            group,
            // The serial queue names no binding per instance: the default one.
            workflow: Workflow::from_env(&shell.env, &config.workflow_binding)?,
            candidates: RefCell::new(candidates.into()),
        })
    }
}

impl Wakes for GroupWakes<'_> {
    const DEAD: (&'static str, &'static str) = ("abandoned", "woken but dead");
    const WOKEN: (&'static str, &'static str) = ("woken", "the group is free");

    fn workflow(&self, _id: &InstanceId) -> Result<Workflow, JsValue> {
        Ok(JsValue::clone(self.workflow.as_ref()).unchecked_into())
    }

    async fn found_dead(&self, id: InstanceId) -> Result<Option<InstanceId>, JsValue> {
        self.shell
            .run(&core::waiter_dead(self.group, &id, now_ms()))
            .await?;
        Ok(self.candidates.borrow_mut().pop_front())
    }
}

// --- the edge: input objects in, JSON replies out ---------------------------

/// The input object's fields, each checked and named on refusal.
struct Input<'a>(&'a JsValue);

impl Input<'_> {
    fn parse(value: &JsValue) -> Result<Input<'_>, BatonError> {
        if value.is_undefined() || value.is_null() {
            return Err(BatonError::Missing { field: "input" });
        }
        if !value.is_object() || js_sys::Array::is_array(value) {
            return Err(BatonError::WrongType {
                field: "input",
                expected: "an object",
            });
        }
        Ok(Input(value))
    }

    fn field(&self, name: &'static str) -> JsValue {
        Reflect::get(self.0, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
    }

    fn ident(&self, name: &'static str) -> Result<Ident, BatonError> {
        args::ident(name, &self.field(name))
    }

    fn optional_ident(&self, name: &'static str) -> Result<Option<Ident>, BatonError> {
        let value = self.field(name);
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        args::ident(name, &value).map(Some)
    }

    fn instance_id(&self) -> Result<InstanceId, BatonError> {
        args::instance_id("instanceId", &self.field("instanceId"))
    }
}

pub(crate) fn group_and_id(input: &JsValue) -> Result<(Ident, InstanceId), BatonError> {
    let input = Input::parse(input)?;
    Ok((input.ident("group")?, input.instance_id()?))
}

pub(crate) fn parse_enqueue(input: &JsValue) -> Result<SerialEnqueue, BatonError> {
    let input = Input::parse(input)?;
    Ok(SerialEnqueue {
        group: input.ident("group")?,
        instance_id: input.instance_id()?,
        revision: input.ident("revision")?,
        current: input.optional_ident("current")?,
    })
}

pub(crate) fn enqueue_json(reply: EnqueueReply) -> Value {
    match reply {
        EnqueueReply::Waiting { superseded } => json!({
            "status": "waiting",
            "superseded": superseded.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
        }),
        EnqueueReply::Skipped { current } => json!({
            "status": "skipped", "reason": "not_current", "current": current.as_str(),
        }),
    }
}

pub(crate) fn claim_json(reply: ClaimReply) -> Value {
    match reply {
        ClaimReply::Holding => json!({ "status": "holding" }),
        ClaimReply::Waiting { holder } => {
            json!({ "status": "waiting", "holder": holder.map(|h| h.to_string()) })
        }
        ClaimReply::Skipped { by, by_revision } => json!({
            "status": "skipped",
            "supersededBy": { "instanceId": by.as_str(), "revision": by_revision.as_str() },
        }),
        ClaimReply::TimedOut => json!({ "status": "timed_out" }),
    }
}

pub(crate) fn inspection_json(view: &Inspection) -> Value {
    use crate::serial_queue::EntryState;
    json!({
        "holder": view.holder.as_ref().map(|h| json!({
            "instanceId": h.instance_id.as_str(),
            "revision": h.revision.as_str(),
            "heartbeatAt": match h.state { EntryState::Holding { heartbeat_at_ms } => heartbeat_at_ms, _ => 0 },
        })),
        "waiting": view.waiting.iter().map(|w| json!({
            "instanceId": w.instance_id.as_str(), "revision": w.revision.as_str(), "enqueuedAt": w.enqueued_at_ms,
        })).collect::<Vec<_>>(),
        "recent": view.recent.iter().map(|r| {
            let mut entry = json!({
                "instanceId": r.instance_id.as_str(), "revision": r.revision.as_str(),
                "outcome": r.state.name(), "finishedAt": r.state.finished_at_ms(),
            });
            if let EntryState::Superseded { by, by_revision, .. } = &r.state {
                entry["supersededBy"] = json!({ "instanceId": by.as_str(), "revision": by_revision.as_str() });
            }
            entry
        }).collect::<Vec<_>>(),
    })
}
