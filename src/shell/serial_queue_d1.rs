//! The serial queue's shell: runs `crate::serial_queue`'s batches on D1 and
//! sends the wakes they ask for.
//!
//! Every method is the same short loop: take the typed request, ask the
//! core for its batch, run it (one D1 round trip, one transaction), let the
//! core decide the reply and the wakes from what came back, log the
//! decision, wake (through `shell::wake`, the Coordinator's wake path), and
//! reply; a release replies once the next waiter is sent its turn event,
//! and checks that waiter's status after the reply ([`Shell::hand_on`]).
//! Nothing here decides anything the core does not say.

use super::config::SerialConfig;
use super::d1_results;
use super::decision_log::{self, Kind, Scope};
use super::js::{self, now_ms, to_js};
use super::wake::{self, Sent, Turn, Wakes};
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
use crate::limits::HAND_ON_CHECK_DELAY_MS;
use crate::serial_queue::{
    self as core, Batch, ClaimReply, EnqueueReply, Entry, EntryState, Outcome, Param, Plan,
    Released, Wake,
};
use js_sys::{Array, Promise};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::{Context, D1Database, Delay, Env};

/// The Rust half of the Worker's serial-queue RPC methods (see js/worker.mjs).
#[wasm_bindgen]
pub struct SerialQueue {
    shell: Rc<Shell>,
}

/// The serial queue's operations on one Worker `env`; the RPC class and the
/// HTTP API both call these with the decoded request.
pub(crate) struct Shell {
    env: Env,
    /// The request's context: the release's status check runs in its
    /// `waitUntil`, after the reply.
    ctx: Context,
}

fn refuse(error: BatonError) -> JsValue {
    js::to_js_error(&error)
}

/// A D1 failure as the caller sees it: a statement the binding refused
/// (`worker::Error`, through `From`) or a rejected batch (the thrown value).
fn d1_failed(error: impl Into<JsValue>) -> JsValue {
    let error = error.into();
    let message = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("{error:?}"));
    js_sys::Error::new(&format!("Baton: D1 failed: {message}")).into()
}

#[wasm_bindgen]
extern "C" {
    /// The D1 binding, for its `batch` alone: `worker::D1Database::batch`
    /// hands back results whose rows it can only decode field by field.
    type D1Batch;
    #[wasm_bindgen(method, catch)]
    fn batch(this: &D1Batch, statements: Array) -> Result<Promise, JsValue>;
}

#[wasm_bindgen]
impl SerialQueue {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env, ctx: worker::worker_sys::Context) -> SerialQueue {
        console_error_panic_hook::set_once();
        super::decision_log::configure(&env);
        SerialQueue {
            shell: Rc::new(Shell::new(env, Context::new(ctx))),
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
        js::serve(
            input,
            move |r| async move { Shell::release(&shell, r).await },
        )
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.inspect(r).await })
    }
}

impl Shell {
    pub(crate) fn new(env: Env, ctx: Context) -> Shell {
        Shell { env, ctx }
    }

    fn db(&self) -> Result<D1Database, JsValue> {
        self.env.d1("DB").map_err(|_| {
            js_sys::Error::new("Baton configuration: no D1 binding named \"DB\"").into()
        })
    }

    /// The variables, read on the isolate's first call: a Worker's
    /// variables do not change while its isolate lives, and reading them
    /// (eight lookups in `env`, each a crossing into JS, and a string
    /// copied for each one set) was about 2% of every call's busy time in
    /// Baton's isolate (`bench/profile.mjs serial`).
    fn config(&self) -> Result<Rc<SerialConfig>, JsValue> {
        thread_local! {
            static CONFIG: std::cell::OnceCell<Result<Rc<SerialConfig>, String>> =
                const { std::cell::OnceCell::new() };
        }
        CONFIG
            .with(|config| {
                config
                    .get_or_init(|| SerialConfig::from_env(&self.env).map(Rc::new))
                    .clone()
            })
            .map_err(|m| js_sys::Error::new(&m).into())
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
                let statement = db.prepare(s.sql).bind(&params).map_err(d1_failed)?;
                Ok(JsValue::from(statement.inner()))
            })
            .collect::<Result<Array, JsValue>>()?;
        let database: &D1Batch = db.as_ref().unchecked_ref();
        let results = JsFuture::from(database.batch(statements)?)
            .await
            .map_err(d1_failed)?;
        d1_results::outcomes(&results).map_err(|e| {
            JsValue::from(js_sys::Error::new(&format!(
                "Baton: D1 failed: unreadable results: {e}"
            )))
        })
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
        // Joining waits only if the claim finds the group held: its line says so.
        let kind = match &decided.reply {
            EnqueueReply::Waiting { superseded } if superseded.is_empty() => Kind::Routine,
            _ => Kind::Contended,
        };
        decision_log::decision(
            kind,
            scope,
            request.instance_id.as_str(),
            name,
            &reason,
            None,
        );
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
            decision_log::decision(
                Kind::Contended,
                scope,
                stale.as_str(),
                "abandoned",
                reason,
                None,
            );
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
        let kind = match &claimed.reply {
            ClaimReply::Holding => Kind::Routine,
            _ => Kind::Contended,
        };
        decision_log::decision(kind, scope, id.as_str(), name, &reason, Some(waited_ms));
        Ok(claimed.reply.into())
    }

    pub(crate) async fn heartbeat(&self, request: GroupMember) -> Result<HeartbeatReply, JsValue> {
        let batch = core::heartbeat(&request.group, &request.instance_id, now_ms());
        let outcomes = self.run(&batch).await?;
        Ok(HeartbeatReply {
            holding: core::heartbeat_outcome(&outcomes),
        })
    }

    /// `next` is the waiter sent the turn event, if any: the first in
    /// hand-on order, whose status is checked after the reply.
    pub(crate) async fn release(
        self: &Rc<Self>,
        request: GroupMember,
    ) -> Result<ReleaseReply, JsValue> {
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
        // The turn event goes first: the next holder waits on it, and the
        // log line can wait for it.
        let next = match decided.wake {
            Wake::FirstAlive(candidates) if config.push => {
                self.hand_on(&config, &group, candidates).await?
            }
            _ => None,
        };
        let kind = if next.is_some() {
            Kind::Contended
        } else {
            Kind::Routine
        };
        decision_log::decision(
            kind,
            Scope::Group(group.as_str()),
            id.as_str(),
            "released",
            left,
            None,
        );
        Ok(ReleaseReply { next })
    }

    /// A freed group's hand-on: the first candidate is sent the turn event
    /// before the reply, which names it; its status check, and the rest of
    /// the chain if it is dead (abandon it, wake the next: `wake::first_alive`),
    /// run after the reply, in `waitUntil`, once the woken waiter has had
    /// [`HAND_ON_CHECK_DELAY_MS`] to claim. The holder's release then
    /// costs one D1 batch and the event, as a hand-written queue's does,
    /// and the status query does not reach the woken waiter's engine while
    /// it claims. Should the Worker stop before that check, a dead first
    /// waiter only costs the others their next poll: a claim needs no
    /// turn, only a free group.
    async fn hand_on(
        self: &Rc<Self>,
        config: &SerialConfig,
        group: &Ident,
        candidates: Vec<InstanceId>,
    ) -> Result<Option<InstanceId>, JsValue> {
        let mut candidates: VecDeque<InstanceId> = candidates.into();
        let Some(first) = candidates.pop_front() else {
            return Ok(None);
        };
        let workflow = Workflow::from_env(&self.env, &config.workflow_binding)?;
        let turn = self.turn(config, group);
        let sent = Sent::send(&workflow, &first, &turn).await;
        let shell = self.clone();
        let group = group.clone();
        let woken = first.clone();
        let check = js::promise(async move {
            // Let the waiter claim before its engine is asked its status.
            Delay::from(Duration::from_millis(HAND_ON_CHECK_DELAY_MS)).await;
            let wakes = GroupWakes {
                shell: &shell,
                group: &group,
                workflow,
                candidates: RefCell::new(candidates),
            };
            let scope = Scope::Group(group.as_str());
            if let Err(error) = wake::first_alive(&wakes, scope, &turn, woken, sent).await {
                worker::console_error!("baton: serial hand-on in group {group} failed: {error:?}");
            }
            Ok(JsValue::UNDEFINED)
        });
        // The raw binding, not `Context::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.ctx.as_ref().wait_until(&check);
        Ok(Some(first))
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
