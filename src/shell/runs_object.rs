//! The `Runs` Durable Object: the shell around `crate::runs` (contract §6).
//!
//! Every entry point runs in the Coordinator's order: parse, then a
//! decision under the gate (read, decide and write in one synchronous
//! turn, which also registers or answers long-polls and arms the retention
//! alarm), then whatever the decision asked for outside the gate (the
//! claimant's status), whose answer re-enters through the next decision.
//!
//! Long-polls are promises. A parked `await` or `events` is a resolver in
//! `resolvers`, registered in the core's [`Waits`] with a timer at its
//! deadline; the decision that records an outcome or an event answers the
//! waits it wakes in the same turn, and the timer answers the rest with
//! the state as it then is. Nothing polls storage. Waits live in memory
//! only: a restart drops their RPCs, and callers retry.
//!
//! JS callers reach these methods through the `Runs` class in
//! `js/worker.mjs`, which extends `DurableObject` and only delegates here.

use super::config::RunsShellConfig;
use super::decision_log::{self, Kind, Scope};
use super::gate::under_gate;
use super::js::{self, now_ms};
use super::object::ObjectBase;
use super::sqlite::ObjectSql;
use super::workflow::{Lookup, Workflow};
use crate::edge;
use crate::edge::runs::{wire, RunAppend, RunAwait, RunClaim, RunComplete, RunEvents};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::RUN_DELETIONS_PER_ALARM_MAX;
use crate::runs::{
    self, ClaimReply, ClaimStep, ClaimantStatus, Poll, SqlRunStore, Wait, WaitFor, WaitId, Waits,
    Wake,
};
use js_sys::{Function, Promise};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectState;
use worker::Env;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &JsValue, timeout_ms: f64) -> JsValue;
}

/// The Rust half of the `Runs` Durable Object.
#[wasm_bindgen]
pub struct RunsCore {
    object: Rc<Object>,
}

struct Object {
    base: ObjectBase,
    config: Result<RunsShellConfig, String>,
    /// The open long-polls, as the core decides them...
    waits: RefCell<Waits>,
    /// ...and the resolver of each one's promise.
    resolvers: RefCell<HashMap<WaitId, Function>>,
}

type Store<'a> = SqlRunStore<'a, ObjectSql>;

#[wasm_bindgen]
impl RunsCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> RunsCore {
        let config = RunsShellConfig::from_env(&env);
        RunsCore {
            object: Rc::new(Object {
                base: ObjectBase::new(raw_state, env),
                config,
                waits: RefCell::new(Waits::default()),
                resolvers: RefCell::new(HashMap::new()),
            }),
        }
    }

    pub fn claim(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve(key, options, move |r| async move { object.claim(r).await })
    }

    pub fn complete(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve(
            key,
            options,
            move |r| async move { object.complete(r).await },
        )
    }

    /// `await` (a keyword in Rust).
    #[wasm_bindgen(js_name = awaitRun)]
    pub fn await_run(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve(
            key,
            options,
            move |r| async move { object.await_run(r).await },
        )
    }

    pub fn append(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve(key, options, move |r| async move { object.append(r).await })
    }

    pub fn events(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve(key, options, move |r| async move { object.events(r).await })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            object.alarm().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Storage statements run since the object started, and the open
    /// waits: `{ reads, writes, openWaits }` (for the benchmark and tests;
    /// not part of the contract).
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        let work = self.object.base.storage_work();
        let open = self.object.waits.borrow().open();
        js_sys::Reflect::set(&work, &"openWaits".into(), &open.into())
            .expect("a plain object takes a field");
        work
    }
}

// ---------------------------------------------------------------------------
// Requests: the positional `(key, options)` of contract §6 as the §7 object.

/// Builds the request object `{ key, ...options }` and decodes it
/// (`crate::edge`). A `key` inside the options is refused, not overridden:
/// the key is the first argument.
fn positional<T: DeserializeOwned>(key: JsValue, options: JsValue) -> Result<T, BatonError> {
    let mut fields = if options.is_undefined() || options.is_null() {
        Map::new()
    } else {
        match Value::deserialize(serde_wasm_bindgen::Deserializer::from(options)) {
            Ok(Value::Object(fields)) => fields,
            _ => {
                return Err(BatonError::WrongType {
                    field: "options",
                    expected: "an object",
                })
            }
        }
    };
    if fields.contains_key("key") {
        return Err(BatonError::Invalid {
            field: "options",
            reason: "has an unknown field \"key\" (the key is the first argument)".into(),
        });
    }
    let key =
        Value::deserialize(serde_wasm_bindgen::Deserializer::from(key)).unwrap_or(Value::Null);
    fields.insert("key".into(), key);
    edge::decode_value(&Value::Object(fields))
}

/// Serves one positional method: decodes, runs, answers (or rejects with
/// the refusal's JS `Error`).
fn serve<T: DeserializeOwned + 'static, F: Future<Output = Result<JsValue, JsValue>> + 'static>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise {
    js::promise(async move {
        let request = positional(key, options).map_err(|e| js::to_js_error(&e))?;
        method(request).await
    })
}

// ---------------------------------------------------------------------------
// The object.

/// A reply as the plain JS object RPC callers receive, from its JSON text.
fn reply(text: &str) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(text)
}

impl Object {
    fn config(&self) -> Result<&RunsShellConfig, JsValue> {
        self.config
            .as_ref()
            .map_err(|message| js_sys::Error::new(message).into())
    }

    fn ensure_schema(&self) {
        self.base.ensure_schema(runs::migrate);
    }

    /// Runs one decision for `key` under the gate. `decision` gets the
    /// object too, to answer waits and arm the alarm in the same turn.
    async fn decide<T: 'static>(
        self: &Rc<Self>,
        key: &Ident,
        decision: impl FnOnce(&Rc<Object>, &mut Store<'_>, u64) -> T + 'static,
    ) -> Result<T, JsValue> {
        let object = self.clone();
        let key = key.clone();
        under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let mut store = SqlRunStore::new(&object.base.sql, key.as_str());
            let value = decision(&object, &mut store, now_ms());
            // The whole check reads the record, an outcome of up to 1 MiB
            // among it: debug builds run it after every decision; release
            // builds keep the store's own assertions on every value read.
            if cfg!(debug_assertions) {
                runs::assert_invariants(&store);
            }
            object.count(&store);
            value
        })
        .await
    }

    fn count(&self, store: &Store<'_>) {
        self.base.count_work(store.work());
    }

    /// Sets the retention alarm to the earliest deletion of any key (or
    /// none), in the turn of the write that changed it, so that a crash
    /// cannot separate the two. Returns the storage call to await.
    fn arm_retention(&self) -> Option<Promise> {
        let storage = self.base.raw_state.storage().ok()?;
        let call = match runs::next_deletion_ms(&self.base.sql) {
            Some(at) => storage.set_alarm(
                js_sys::Date::new(&JsValue::from_f64(at as f64)),
                js_sys::Object::new(),
            ),
            None => storage.delete_alarm(js_sys::Object::new()),
        };
        call.ok()
    }

    fn workflow(&self, name: Option<&str>) -> Result<Workflow, JsValue> {
        Workflow::from_env(&self.base.env, self.config()?.workflow_binding(name))
    }

    async fn claim(self: &Rc<Self>, request: RunClaim) -> Result<JsValue, JsValue> {
        let config = self.config()?;
        config
            .check_workflow(request.workflow.as_ref())
            .map_err(|e| js::to_js_error(&e))?;
        let grace = config.decide;
        let key = request.key.clone();
        let request = request.core();
        let first = {
            let request = request.clone();
            self.decide(&key, move |_, store, now| runs::claim(store, now, &request))
                .await?
        };
        let (answer, reason) = match first {
            ClaimStep::Done(answer) => (answer, "decided without a check".to_string()),
            ClaimStep::CheckClaimant(checked) => {
                let status = match self.workflow(checked.workflow.as_deref()) {
                    Ok(workflow) => claimant_status(workflow.lookup(checked.id.as_str()).await),
                    Err(_) => ClaimantStatus::Unknown,
                };
                let claimed_by = checked.id.clone();
                let decided = {
                    let request = request.clone();
                    self.decide(&key, move |_, store, now| {
                        runs::claim_after_check(store, now, &grace, &request, &checked, status)
                    })
                    .await?
                };
                let reason = match &decided.replaced {
                    Some(dead) => format!("claimant {dead} checked: {status:?}; replaced"),
                    None => format!("claimant {claimed_by} checked: {status:?}"),
                };
                (decided.reply, reason)
            }
        };
        // Joining a run that another caller holds coalesces the two.
        let (name, kind) = match &answer {
            ClaimReply::Claimed => ("claimed", Kind::Routine),
            ClaimReply::Taken(_) => ("taken", Kind::Contended),
        };
        decision_log::decision(
            kind,
            Scope::Run(key.as_str()),
            request.id.as_str(),
            name,
            &reason,
            None,
        );
        reply(&wire::claim_reply(&answer))
    }

    async fn complete(self: &Rc<Self>, request: RunComplete) -> Result<JsValue, JsValue> {
        let config = self.config()?.decide;
        let key = request.key.clone();
        let request = request.core().map_err(|e| js::to_js_error(&e))?;
        let id = request.id.clone();
        let wake_key = key.clone();
        let (recorded, alarm) = self
            .decide(&key, move |object, store, now| {
                let decided = runs::complete(store, now, &config, &request);
                object.wake(&wake_key, store, &decided.wake);
                let alarm = decided.alarm_at_ms.and_then(|_| object.arm_retention());
                (decided.reply, alarm)
            })
            .await?;
        if let Some(alarm) = alarm {
            JsFuture::from(alarm).await?;
        }
        let reason = if recorded {
            "outcome recorded"
        } else {
            "not the claimant of an unfinished run"
        };
        // An outcome from anyone but the claimant is refused.
        let kind = if recorded {
            Kind::Routine
        } else {
            Kind::Contended
        };
        decision_log::decision(
            kind,
            Scope::Run(key.as_str()),
            id.as_str(),
            if recorded { "completed" } else { "ignored" },
            reason,
            None,
        );
        reply(&wire::complete_reply(recorded))
    }

    async fn await_run(self: &Rc<Self>, request: RunAwait) -> Result<JsValue, JsValue> {
        let key = request.key;
        let timeout = request.timeout_ms;
        let wait_key = key.clone();
        let answer = self
            .decide(&key, move |object, store, now| {
                let open = object.waits.borrow().open();
                match runs::await_run(store, now, timeout, open) {
                    Poll::Answer(view) => Ok(wire::await_reply(view.as_ref())),
                    Poll::Park { deadline_ms } => {
                        Err(object.park(wait_key, WaitFor::Outcome, now, deadline_ms))
                    }
                }
            })
            .await?;
        match answer {
            Ok(text) => reply(&text),
            Err(parked) => JsFuture::from(parked).await,
        }
    }

    async fn append(self: &Rc<Self>, request: RunAppend) -> Result<JsValue, JsValue> {
        let key = request.key.clone();
        let request = request.core().map_err(|e| js::to_js_error(&e))?;
        let wake_key = key.clone();
        let decided = self
            .decide(&key, move |object, store, now| {
                let decided = runs::append(store, now, &request)?;
                object.wake(&wake_key, store, &decided.wake);
                Ok(decided.reply)
            })
            .await?;
        let seq = decided.map_err(|e: BatonError| js::to_js_error(&e))?;
        reply(&wire::append_reply(seq))
    }

    async fn events(self: &Rc<Self>, request: RunEvents) -> Result<JsValue, JsValue> {
        let key = request.key.clone();
        let request = request.core();
        let wait_key = key.clone();
        let answer = self
            .decide(&key, move |object, store, now| {
                let open = object.waits.borrow().open();
                match runs::events(store, now, &request, open) {
                    Poll::Answer(events) => Ok(wire::events_reply(&events)),
                    Poll::Park { deadline_ms } => {
                        let on = WaitFor::Events {
                            after: request.after.get(),
                            limit: request.limit,
                        };
                        Err(object.park(wait_key, on, now, deadline_ms))
                    }
                }
            })
            .await?;
        match answer {
            Ok(text) => reply(&text),
            Err(parked) => JsFuture::from(parked).await,
        }
    }

    /// Registers a wait and returns its promise; a timer answers it at its
    /// deadline unless a commit answers it first.
    fn park(self: &Rc<Self>, key: Ident, on: WaitFor, now: u64, deadline_ms: u64) -> Promise {
        let id = self.waits.borrow_mut().park(Wait {
            key,
            on,
            deadline_ms,
        });
        let object = self.clone();
        let promise = Promise::new(&mut |resolve, _reject| {
            object.resolvers.borrow_mut().insert(id, resolve);
        });
        let object = self.clone();
        // Called once, then freed; a wait answered earlier makes it a no-op.
        let timer = Closure::once_into_js(move || object.expire(id));
        set_timeout(&timer, deadline_ms.saturating_sub(now) as f64);
        promise
    }

    /// A wait's timer: answers it with the state as it is now.
    fn expire(&self, id: WaitId) {
        let Some(wait) = self.waits.borrow_mut().take(id) else {
            return;
        };
        self.ensure_schema();
        let store = SqlRunStore::new(&self.base.sql, wait.key.as_str());
        let text = match wait.on {
            WaitFor::Outcome => wire::await_reply(runs::run_view(&store).as_ref()),
            WaitFor::Events { after, limit } => {
                wire::events_reply(&runs::read_events(&store, after, limit.get()))
            }
        };
        self.count(&store);
        self.resolve(id, &text);
    }

    /// Answers the waits a commit wakes, in the commit's turn. Waits that
    /// get the same answer share one JS value (an outcome is up to 1 MiB;
    /// readers parked at the end of the log all read the same new event):
    /// the runtime copies it into each RPC reply.
    fn wake(&self, key: &Ident, store: &Store<'_>, wake: &Wake) {
        match wake {
            Wake::Nobody => {}
            Wake::Awaiters(view) => {
                let woken = self.waits.borrow_mut().woken_by_outcome(key);
                if woken.is_empty() {
                    return;
                }
                let value = reply(&wire::await_reply(Some(view)));
                for (id, _) in woken {
                    self.settle(id, &value);
                }
            }
            Wake::EventReaders { seq } => {
                let woken = self.waits.borrow_mut().woken_by_event(key, *seq);
                let mut answers: HashMap<(u64, u32), Result<JsValue, JsValue>> = HashMap::new();
                for (id, wait) in woken {
                    if let WaitFor::Events { after, limit } = wait.on {
                        let value = answers.entry((after, limit.get())).or_insert_with(|| {
                            reply(&wire::events_reply(&runs::read_events(
                                store,
                                after,
                                limit.get(),
                            )))
                        });
                        self.settle(id, value);
                    }
                }
            }
        }
    }

    fn resolve(&self, id: WaitId, text: &str) {
        self.settle(id, &reply(text));
    }

    fn settle(&self, id: WaitId, value: &Result<JsValue, JsValue>) {
        let Some(resolve) = self.resolvers.borrow_mut().remove(&id) else {
            return;
        };
        let value = match value {
            Ok(value) | Err(value) => value,
        };
        let _ = resolve.call1(&JsValue::UNDEFINED, value);
    }

    /// The retention alarm: deletes every record whose time has come (at
    /// most a bound per run; the alarm re-arms at once for the rest) and
    /// sets the alarm to the next deletion. A late or repeated alarm finds
    /// nothing due, by construction.
    async fn alarm(self: &Rc<Self>) -> Result<(), JsValue> {
        let object = self.clone();
        let (deleted, alarm) = under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let now = now_ms();
            let mut deleted = Vec::new();
            for key in runs::keys_due(&object.base.sql, now, RUN_DELETIONS_PER_ALARM_MAX) {
                let mut store = SqlRunStore::new(&object.base.sql, &key);
                if runs::expire(&mut store, now) {
                    deleted.push(key);
                }
                object.count(&store);
            }
            (deleted, object.arm_retention())
        })
        .await?;
        if let Some(alarm) = alarm {
            JsFuture::from(alarm).await?;
        }
        for key in deleted {
            decision_log::decision(
                Kind::Routine,
                Scope::Run(&key),
                "-",
                "deleted",
                "retention over",
                None,
            );
        }
        Ok(())
    }
}

fn claimant_status(lookup: Lookup) -> ClaimantStatus {
    match lookup {
        Lookup::Found(status) if status.is_dead() => ClaimantStatus::Ended,
        Lookup::Found(_) => ClaimantStatus::Alive,
        Lookup::NotFound => ClaimantStatus::NotFound,
        Lookup::Failed => ClaimantStatus::Unknown,
    }
}
