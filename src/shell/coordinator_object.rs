//! The `Coordinator` Durable Object: the shell around `crate::coordinator`.
//!
//! Every entry point runs in the same order: decode the request object
//! (`crate::edge`), then a
//! decision under the gate (read, decide and write in one synchronous turn),
//! then the alarm, then whatever the decision asked for outside the gate (a
//! status check, a turn event, terminations), whose result re-enters through
//! the next decision. Nothing is awaited between a read and the write that
//! depends on it, and no state lives in memory: the tables are the truth.
//!
//! JS callers reach these methods through the `Coordinator` class in
//! `js/worker.mjs`, which extends `DurableObject` (workerd refuses RPC to a
//! class that does not) and only turns the contract's positional arguments
//! into the request object each method here takes.

use super::config::CoordinatorConfig;
use super::decision_log::{self, Scope};
use super::gate::under_gate;
use super::js::{self, now_ms, to_js};
use super::sqlite::ObjectSql;
use super::wake::{self, Turn, Wakes};
use super::workflow::Workflow;
use crate::coordinator::{
    self, migrate, AcquireStep, EnqueueStep, KeyStore, SqlKeyStore, TickStep,
};
use crate::edge::coordinator::{
    Acquire, AcquireOutcome, Enqueue, EnqueueReply, HolderView, Inspect, Inspection, KeyOptions,
    Release, ReleaseReply, WaiterView,
};
use crate::edge::TurnEvent;
use crate::ident::{Ident, InstanceId};
use crate::limits::{KEYS_CHECKED_PER_ALARM_MAX, TERMINATIONS_PER_CALL_MAX};
use js_sys::{Array, Promise};
use serde::Serialize;
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::durable::State;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Rust half of the `Coordinator` Durable Object.
#[wasm_bindgen]
pub struct CoordinatorCore {
    object: Rc<Object>,
}

struct Object {
    raw_state: DurableObjectState,
    state: State,
    env: Env,
    sql: ObjectSql,
    config: Result<CoordinatorConfig, String>,
    /// A cache of "the schema is current", not state: losing it only means
    /// the (idempotent) migration check runs again.
    schema_checked: Cell<bool>,
    /// Storage statements run since the object started, for the benchmark.
    reads: Cell<u64>,
    writes: Cell<u64>,
}

type Store<'a> = SqlKeyStore<'a, ObjectSql>;

#[wasm_bindgen]
impl CoordinatorCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> CoordinatorCore {
        console_error_panic_hook::set_once();
        let state = State::from(raw_state.clone().unchecked_into::<DurableObjectState>());
        let sql = ObjectSql(state.storage().sql());
        let config = CoordinatorConfig::from_env(&env);
        CoordinatorCore {
            object: Rc::new(Object {
                raw_state,
                state,
                env,
                sql,
                config,
                schema_checked: Cell::new(false),
                reads: Cell::new(0),
                writes: Cell::new(0),
            }),
        }
    }

    /// `enqueue`: `request` is `{ key, supersedes, instanceId, inputHash?, options? }`.
    pub fn enqueue(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.enqueue(r).await })
    }

    /// `acquire`: `request` is `{ key, instanceId, options? }`.
    pub fn acquire(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.acquire(r).await })
    }

    /// `release`: `request` is `{ key, instanceId }`.
    pub fn release(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.release(r).await })
    }

    /// `inspect`: `request` is `{ key }`.
    pub fn inspect(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.inspect(r).await })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        future_to_promise(async move {
            object.alarm().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        to_js(&StorageWork {
            reads: self.object.reads.get(),
            writes: self.object.writes.get(),
        })
    }
}

/// Storage statements run since the object started (for the benchmark;
/// not part of the contract).
#[derive(Serialize)]
struct StorageWork {
    reads: u64,
    writes: u64,
}

impl Object {
    fn config(&self) -> Result<&CoordinatorConfig, JsValue> {
        self.config
            .as_ref()
            .map_err(|message| js_sys::Error::new(message).into())
    }

    fn workflow(&self) -> Result<Workflow, JsValue> {
        Workflow::from_env(&self.env, &self.config()?.workflow_binding)
    }

    /// Refuses options the configuration cannot honour (an unknown `workflow`).
    fn check_options(&self, options: Option<&KeyOptions>) -> Result<(), JsValue> {
        self.config()?
            .check_options(options)
            .map_err(|e| js::to_js_error(&e))
    }

    /// Runs one decision for `key` under the gate, then arms the holder-check
    /// alarm if the key now needs it.
    async fn decide<T: 'static>(
        self: &Rc<Self>,
        key: &Ident,
        decision: impl FnOnce(&mut Store<'_>, u64) -> T + 'static,
    ) -> Result<T, JsValue> {
        let object = self.clone();
        let key = key.clone();
        let (value, needs_check) = under_gate(&self.raw_state, move || {
            object.ensure_schema();
            let mut store = SqlKeyStore::new(&object.sql, key.as_str());
            let value = decision(&mut store, now_ms());
            let needs_check = coordinator::needs_holder_check(&store);
            // The benchmark's count is the decision's own storage work; the
            // invariant check below reads a few indexed rows on top of it.
            let (reads, writes) = store.work();
            object.reads.set(object.reads.get() + u64::from(reads));
            object.writes.set(object.writes.get() + u64::from(writes));
            // On in release builds too: a broken invariant panics, which
            // resets the object (panic = "abort"), and it reloads from storage
            // before anything else is written on that state.
            coordinator::assert_invariants(&store);
            (value, needs_check)
        })
        .await?;
        if needs_check {
            self.ensure_alarm().await?;
        }
        Ok(value)
    }

    fn ensure_schema(&self) {
        if !self.schema_checked.get() {
            migrate(&self.sql);
            self.schema_checked.set(true);
        }
    }

    async fn ensure_alarm(&self) -> Result<(), JsValue> {
        let storage = self.state.storage();
        if storage.get_alarm().await?.is_none() {
            // workers-rs reads a bare integer as an offset from now, not a
            // time since the epoch; a Duration says so in the type.
            let period = std::time::Duration::from_millis(self.config()?.holder_check_ms);
            storage.set_alarm(period).await?;
        }
        Ok(())
    }

    async fn enqueue(self: &Rc<Self>, request: Enqueue) -> Result<EnqueueReply, JsValue> {
        self.check_options(request.options.as_ref())?;
        let workflow = self.workflow()?;
        let key = request.key.clone();
        let logged_request = request.clone();
        let request = request.core();
        let first = {
            let request = request.clone();
            self.decide(&key, move |store, now| {
                coordinator::enqueue(store, now, &request)
            })
            .await?
        };
        let reply = match first.map_err(|e| js::to_js_error(&e))? {
            EnqueueStep::Done(reply) => reply,
            EnqueueStep::CheckCandidate(candidate) => {
                let liveness = workflow.liveness(candidate.as_str()).await;
                self.decide(&key, move |store, now| {
                    coordinator::enqueue_after_check(store, now, &request, &candidate, liveness)
                })
                .await?
                .map_err(|e| js::to_js_error(&e))?
            }
        };
        let (decision, reason) = match &reply.coalesced_into {
            Some(into) => (
                "coalesced",
                format!("a live waiter with the same input: {into}"),
            ),
            None if reply.terminated.is_empty() => ("enqueued", "joined the queue".to_string()),
            None => (
                "enqueued",
                format!("superseded {} waiter(s)", reply.terminated.len()),
            ),
        };
        decision_log::decision(
            Scope::Key(key.as_str()),
            logged_request.instance_id.as_str(),
            decision,
            &reason,
            None,
        );
        terminate_all(&workflow, &reply.terminated).await;
        Ok(reply.into())
    }

    async fn acquire(self: &Rc<Self>, request: Acquire) -> Result<AcquireOutcome, JsValue> {
        self.check_options(request.options.as_ref())?;
        let workflow = self.workflow()?;
        let Acquire {
            key,
            instance_id: id,
            ..
        } = request;
        let first = {
            let id = id.clone();
            self.decide(&key, move |store, now| {
                coordinator::acquire(store, now, &id)
            })
            .await?
            .map_err(|e| js::to_js_error(&e))?
        };
        let (reply, reason, waited_ms) = match first {
            AcquireStep::Done(reply) => (reply, "decided without a check".to_string(), None),
            AcquireStep::CheckHolder(holder) => {
                let liveness = workflow.liveness(holder.id.as_str()).await;
                let caller = id.clone();
                let checked = holder.clone();
                let (decided, waited_ms) = self
                    .decide(&key, move |store, now| {
                        let decided = coordinator::acquire_after_check(
                            store, now, &caller, &checked, liveness,
                        );
                        let waited = store
                            .waiter(&caller)
                            .map(|w| now.saturating_sub(w.since_ms));
                        (decided, waited)
                    })
                    .await?;
                self.wake_chain(&workflow, &key, decided.wake).await?;
                let reason = format!("holder {} checked: {liveness:?}", holder.id);
                (decided.reply, reason, waited_ms)
            }
        };
        let outcome = AcquireOutcome::from(reply);
        decision_log::decision(
            Scope::Key(key.as_str()),
            id.as_str(),
            outcome.as_str(),
            &reason,
            waited_ms,
        );
        Ok(outcome)
    }

    async fn release(self: &Rc<Self>, request: Release) -> Result<ReleaseReply, JsValue> {
        let workflow = self.workflow()?;
        let Release {
            key,
            instance_id: id,
        } = request;
        let caller = id.clone();
        let decided = self
            .decide(&key, move |store, now| {
                coordinator::release(store, now, &caller)
            })
            .await?;
        let next = self.wake_chain(&workflow, &key, decided.wake).await?;
        let reason = match (&decided.reply, &next) {
            (None, _) => "released as a waiter, or held nothing".to_string(),
            (Some(_), Some(next)) => format!("handed the key to {next}"),
            (Some(_), None) => "freed the key: no live waiter".to_string(),
        };
        decision_log::decision(
            Scope::Key(key.as_str()),
            id.as_str(),
            "released",
            &reason,
            None,
        );
        Ok(ReleaseReply { next })
    }

    async fn inspect(self: &Rc<Self>, request: Inspect) -> Result<Inspection, JsValue> {
        let key = request.key;
        let name = key.clone();
        self.decide(&key, move |store, _now| Inspection {
            key: name,
            holder: store.holder().map(HolderView::from),
            waiting: store.waiters().into_iter().map(WaiterView::from).collect(),
            superseded: store.superseded_count(),
        })
        .await
    }

    /// The holder-check alarm: for each key with someone behind its holder
    /// (or a hand-over not yet confirmed), check the holder and act on it.
    async fn alarm(self: &Rc<Self>) -> Result<(), JsValue> {
        let workflow = self.workflow()?;
        let object = self.clone();
        let keys = under_gate(&self.raw_state, move || {
            object.ensure_schema();
            Store::keys_needing_check(&object.sql, KEYS_CHECKED_PER_ALARM_MAX)
        })
        .await?;
        for key in keys {
            // Keys were stored after validation; one that no longer parses is skipped, not fatal.
            let Ok(key) = Ident::parse("key", &key) else {
                continue;
            };
            let step = self
                .decide(&key, |store, _now| coordinator::tick(store))
                .await?;
            if let TickStep::CheckHolder(holder) = step {
                let liveness = workflow.liveness(holder.id.as_str()).await;
                let reason = format!("holder check: {liveness:?}");
                decision_log::decision(
                    Scope::Key(key.as_str()),
                    holder.id.as_str(),
                    "checked",
                    &reason,
                    None,
                );
                let wake = self
                    .decide(&key, move |store, now| {
                        coordinator::tick_after_check(store, now, &holder, liveness)
                    })
                    .await?;
                self.wake_chain(&workflow, &key, wake).await?;
            }
        }
        Ok(())
    }

    /// Wakes the instance just handed `key`; one found dead re-enters the
    /// decision (the key moves on) and the next is tried, up to the bound
    /// (past it the holder-check alarm carries on). Returns the instance
    /// left holding the key by this chain, if any.
    async fn wake_chain(
        self: &Rc<Self>,
        workflow: &Workflow,
        key: &Ident,
        next: Option<InstanceId>,
    ) -> Result<Option<InstanceId>, JsValue> {
        let turn = Turn {
            event_type: self.config()?.turn_event_type.clone(),
            payload: to_js(&TurnEvent::Key(key.as_str())),
        };
        let handing = KeyWakes {
            object: self,
            workflow,
            key,
        };
        wake::first_alive(&handing, Scope::Key(key.as_str()), &turn, next).await
    }
}

/// A key being handed on: a holder found dead loses the key to the next.
struct KeyWakes<'a> {
    object: &'a Rc<Object>,
    workflow: &'a Workflow,
    key: &'a Ident,
}

impl Wakes for KeyWakes<'_> {
    const DEAD: (&'static str, &'static str) = ("skipped", "handed the key but dead");
    const WOKEN: (&'static str, &'static str) = ("woken", "handed the key");

    fn workflow(&self, _id: &InstanceId) -> Result<Workflow, JsValue> {
        Ok(JsValue::clone(self.workflow.as_ref()).unchecked_into())
    }

    async fn found_dead(&self, id: InstanceId) -> Result<Option<InstanceId>, JsValue> {
        self.object
            .decide(self.key, move |store, now| {
                coordinator::holder_found_dead(store, now, &id)
            })
            .await
    }
}

/// Terminates superseded instances, best effort and concurrently: they are
/// already recorded as superseded, so one that survives still gets
/// `"superseded"` from `acquire` and never runs.
async fn terminate_all(workflow: &Workflow, ids: &[InstanceId]) {
    if ids.is_empty() {
        return;
    }
    let pending = Array::new();
    for id in ids.iter().take(TERMINATIONS_PER_CALL_MAX) {
        let workflow: Workflow = JsValue::clone(workflow.as_ref()).unchecked_into();
        let id = id.to_string();
        pending.push(&future_to_promise(async move {
            workflow.instance(&id).await?.stop().await?;
            Ok(JsValue::UNDEFINED)
        }));
    }
    // allSettled never rejects; individual failures are the best effort's cost.
    let _ = JsFuture::from(Promise::all_settled(&pending)).await;
}
