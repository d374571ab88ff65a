//! The serial queue's shell: runs `crate::serial_queue`'s batches on D1 and
//! sends the wakes they ask for.
//!
//! Every method is the same short loop: take the typed request, ask the
//! core for its batch, run it (one D1 round trip, one transaction), let the
//! core decide the reply and the wakes from what came back, log the
//! decision, wake (through `shell::wake`, the Coordinator's wake path), and
//! reply. Nothing here decides anything the core does not say.

use super::config::SerialConfig;
use super::decision_log::{self, Scope};
use super::js::{self, now_ms, to_js};
use super::wake::{self, Turn, Wakes};
use super::workflow::Workflow;
use crate::edge::coordinator::ReleaseReply;
use crate::edge::serial::{
    GroupMember, HeartbeatReply, Revisioned, SerialClaimReply, SerialEnqueue, SerialEnqueueReply,
    SerialFinished, SerialHolder, SerialInspect, SerialInspection, SerialOutcome, SerialWaiter,
    SkipReason,
};
use crate::edge::TurnEvent;
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::serial_queue::{
    self as core, Batch, ClaimReply, EnqueueReply, Entry, EntryState, Outcome, Param, Plan,
    Released, Row, Wake,
};
use js_sys::Promise;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
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
    js::to_js_error(&error)
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
        js::serve(input, move |r| async move { shell.enqueue(r).await })
    }

    #[wasm_bindgen(js_name = serialClaim)]
    pub fn serial_claim(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.claim(r).await })
    }

    #[wasm_bindgen(js_name = serialHeartbeat)]
    pub fn serial_heartbeat(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.heartbeat(r).await })
    }

    #[wasm_bindgen(js_name = serialRelease)]
    pub fn serial_release(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.release(r).await })
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.inspect(r).await })
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

    /// The turn event for `group`.
    fn turn(&self, config: &SerialConfig, group: &Ident) -> Turn {
        Turn {
            event_type: config.turn_event_type.clone(),
            payload: to_js(&TurnEvent::Group(group.as_str())),
        }
    }

    pub(crate) async fn enqueue(
        &self,
        request: SerialEnqueue,
    ) -> Result<SerialEnqueueReply, JsValue> {
        let request = core::SerialEnqueue::from(request);
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
        Ok(match decided.reply {
            EnqueueReply::Waiting { superseded } => SerialEnqueueReply::Waiting { superseded },
            EnqueueReply::Skipped { current } => SerialEnqueueReply::Skipped {
                reason: SkipReason::NotCurrent,
                current,
            },
        })
    }

    pub(crate) async fn claim(&self, request: GroupMember) -> Result<SerialClaimReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
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
        Ok(claimed.reply.into())
    }

    pub(crate) async fn heartbeat(&self, request: GroupMember) -> Result<HeartbeatReply, JsValue> {
        let batch = core::heartbeat(&request.group, &request.instance_id, now_ms());
        let outcomes = self.run(&batch).await?;
        Ok(HeartbeatReply {
            holding: core::heartbeat_outcome(&outcomes),
        })
    }

    /// `next` is the waiter woken, if any.
    pub(crate) async fn release(&self, request: GroupMember) -> Result<ReleaseReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
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
        let next = match decided.wake {
            Wake::FirstAlive(candidates) if config.push => {
                let wakes = GroupWakes::new(self, &config, &group, candidates)?;
                let first = wakes.candidates.borrow_mut().pop_front();
                let turn = self.turn(&config, &group);
                wake::first_alive(&wakes, Scope::Group(group.as_str()), &turn, first).await?
            }
            _ => None,
        };
        Ok(ReleaseReply { next })
    }

    pub(crate) async fn inspect(
        &self,
        request: SerialInspect,
    ) -> Result<SerialInspection, JsValue> {
        let outcomes = self.run(&core::inspect(&request.group)).await?;
        let view = core::inspect_outcome(&outcomes);
        Ok(SerialInspection {
            holder: view.holder.and_then(|h| match h.state {
                EntryState::Holding { heartbeat_at_ms } => Some(SerialHolder {
                    instance_id: h.instance_id,
                    revision: h.revision,
                    heartbeat_at: heartbeat_at_ms,
                }),
                _ => None,
            }),
            waiting: view
                .waiting
                .into_iter()
                .map(|w| SerialWaiter {
                    instance_id: w.instance_id,
                    revision: w.revision,
                    enqueued_at: w.enqueued_at_ms,
                })
                .collect(),
            recent: view.recent.into_iter().filter_map(finished).collect(),
        })
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

/// A finished execution as `serialInspect`'s `recent` shows it.
fn finished(entry: Entry) -> Option<SerialFinished> {
    let (outcome, finished_at, superseded_by) = match entry.state {
        EntryState::Waiting | EntryState::Holding { .. } => return None,
        EntryState::Superseded {
            by,
            by_revision,
            at_ms,
        } => (
            SerialOutcome::Superseded,
            at_ms,
            Some(Revisioned {
                instance_id: by,
                revision: by_revision,
            }),
        ),
        EntryState::TimedOut { at_ms } => (SerialOutcome::TimedOut, at_ms, None),
        EntryState::Released { at_ms, .. } => (SerialOutcome::Released, at_ms, None),
        EntryState::Abandoned { at_ms } => (SerialOutcome::Abandoned, at_ms, None),
    };
    Some(SerialFinished {
        instance_id: entry.instance_id,
        revision: entry.revision,
        outcome,
        finished_at,
        superseded_by,
    })
}
