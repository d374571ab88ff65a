//! The `Coordinator` Durable Object: `crate::coordinator` run by the
//! shell's driver (`shell::driver`). This file is the table of contents:
//! the concept's [`Rules`] and its JS methods, each saying what it runs
//! and whether it answers in the caller's turn. Its memory between
//! decisions is `coordinator_memory::Summaries`, the method bodies are in
//! `coordinator_calls`, and the list reports' sending in `busy_report`.
//!
//! Every decision is one `coordinator::decide` on the view
//! `coordinator::load` reads for its input, its writes carried out by
//! `coordinator::write`, in one synchronous turn: under the gate, or, for
//! `enqueue`, `acquire` and `release`, in the caller's turn
//! (`Driver::try_now`: a synchronous decision cannot interleave with
//! another request, and the gate's Promise is a fixed cost on every call).
//! The driver then
//! ensures the holder-check alarm if the key needs it, and performs what
//! the decision asked for: the status checks (whose answers re-enter as
//! the `*Checked` inputs), the turn events (whose acceptance re-enters as
//! `Input::Woken` after the reply, and the woken holder's status, asked
//! `HAND_ON_CHECK_DELAY_MS` after the reply, as `Input::Woken` again when
//! it is not alive) and the terminations. The tables are the truth; the
//! only memory kept between decisions is each key's summary
//! (`coordinator::Summary`, the transition's state), which equals its rows
//! since this object is their only writer.
//!
//! Everything a decision causes is in its transition
//! (`coordinator::Transition`): the history among its writes, the list
//! report it is due and its decision-log line. `Summaries::write`, which
//! every committed decision passes through, commits the writes, prints the
//! line as it is and queues the report; it decides none of them.
//!
//! JS callers reach these methods through the `Coordinator` class in
//! `js/worker.mjs`, which extends `DurableObject` (workerd refuses RPC to a
//! class that does not) and only turns the contract's positional arguments
//! into the request object each method here takes. That class also aborts
//! the object when a call traps (a broken invariant outside the gate).

use super::config::WorkflowConfig;
use super::coordinator_calls::{answer_in_turn, enqueue_reply, release_reply};
use super::coordinator_memory::Summaries;
use super::decision_log::Scope;
use super::driver::{Driver, NextAlarm, Rules, Sweep, TransitionOf};
use super::js::{self, to_js};
use super::sqlite::ObjectSql;
use crate::busy::reporter::Due;
use crate::coordinator::{self, migrate, Holder, Input, Reply, Settings, View, Write};
use crate::edge::coordinator::{Acquire, Enqueue, KeyOptions, Release};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::KEYS_CHECKED_PER_ALARM_MAX;
use crate::sql::Counted;
use crate::transition::{LogLine, Transition};
use js_sys::Promise;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Coordinator concept as the driver runs it.
pub struct Coordinator;

/// What a decision reads: the key's view, with the key and the settings it
/// is decided by.
pub struct Keyed {
    pub(super) key: String,
    pub(super) view: View,
    pub(super) settings: Rc<Settings>,
    /// In a transition's state: what the decision caused beside its writes
    /// and effects, for `Summaries::write`.
    pub(super) outputs: Option<Outputs>,
}

/// What a decision caused beside its writes and effects: its log line and
/// the report its key's list entry is due, at the time it was taken.
pub struct Outputs {
    pub(super) log: Option<LogLine>,
    pub(super) report: Due,
    pub(super) now_ms: u64,
}

impl Keyed {
    /// A holder as this decision left it (as it was handed, for a wake).
    pub(super) fn holder(&self, id: &InstanceId) -> Option<Holder> {
        let holders = &self.view.summary.holders;
        holders.iter().find(|h| h.id == *id).cloned()
    }
}

impl Rules for Coordinator {
    type Config = WorkflowConfig;
    type Input = Input;
    type Reply = Reply;
    type Write = Write;
    type State = Keyed;
    type Effect = coordinator::Effect;
    /// The holder-check sweep: the keys with someone behind their holders,
    /// or a hand-over not yet confirmed, every `HOLDER_CHECK_MS` while a
    /// decision asks for it.
    const ALARM: Option<Sweep<Self>> = Some(Sweep {
        keys_per_alarm_max: KEYS_CHECKED_PER_ALARM_MAX,
        due_keys: |sql, _, limit| {
            let counted = Counted::new(sql);
            let keys = coordinator::keys_due(&counted, limit);
            sql.count_work(counted.work());
            keys
        },
        tick: || Input::Tick,
        next: NextAlarm::Every(|config: &WorkflowConfig| config.holder_check_ms),
    });

    fn config(env: &Env) -> Result<WorkflowConfig, String> {
        WorkflowConfig::from_env(env)
    }
    fn migrate(sql: &ObjectSql) {
        migrate(sql);
    }
    /// The core's decision; its log line and report go with its state.
    fn decide(state: &Keyed, now_ms: u64, input: Input) -> Result<TransitionOf<Self>, BatonError> {
        let t = coordinator::decide(&state.view, &state.settings, now_ms, input)?;
        Ok(Transition {
            reply: t.reply,
            writes: t.writes,
            effects: t.effects,
            alarm: t.alarm,
            state: Keyed {
                key: state.key.clone(),
                view: t.state,
                settings: state.settings.clone(),
                outputs: Some(Outputs {
                    log: t.log,
                    report: t.report,
                    now_ms,
                }),
            },
        })
    }
    /// On in release builds too; it reads only what the decision loaded.
    fn assert_invariants(state: &Keyed) {
        coordinator::assert_view(&state.view);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Key(key)
    }
}

pub(super) type Object = Driver<Coordinator, Summaries>;

/// The Rust half of the `Coordinator` Durable Object.
#[wasm_bindgen]
pub struct CoordinatorCore {
    object: Rc<Object>,
}

#[wasm_bindgen]
impl CoordinatorCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> CoordinatorCore {
        CoordinatorCore {
            object: Driver::new(raw_state, env),
        }
    }

    /// `enqueue`: `request` is `{ key, supersedes, instanceId, inputHash?,
    /// options? }`. Decided in the caller's turn (it needs no I/O before
    /// its decision); answers at once when there is nothing to check,
    /// terminate or arm.
    pub fn enqueue(&self, request: JsValue) -> JsValue {
        answer_in_turn(
            self.object.clone(),
            js::request::<Enqueue>(request),
            Object::enqueue_now,
            |r| &r.key,
            |_, r, reply| enqueue_reply(r, reply),
        )
    }

    /// `acquire(key, instanceId, options?)`, the request `{ key, instanceId,
    /// options? }`. Answers at once (a value, not a Promise) when the
    /// decision has nothing to perform: the uncontended path. Its
    /// statements bind the key and id as the JS strings the call brought.
    pub fn acquire(&self, key: JsValue, instance_id: JsValue, options: JsValue) -> JsValue {
        let request =
            js::positional_request(&key, &instance_id, Some(&options), |key, id, grant| {
                Acquire {
                    key,
                    instance_id: id,
                    options: grant.then(KeyOptions::granting),
                }
            });
        let sql = &self.object.base.sql;
        let _bound = (request.as_ref().ok())
            .map(|r| sql.bind_as([r.key.as_str(), r.instance_id.as_str()], [key, instance_id]));
        answer_in_turn(
            self.object.clone(),
            request,
            Object::acquire_now,
            |r| &r.key,
            Object::acquire_reply,
        )
    }

    /// `release(key, instanceId)`, the request `{ key, instanceId }`.
    /// Answers at once when nobody is to be woken and no alarm is to be armed.
    pub fn release(&self, key: JsValue, instance_id: JsValue) -> JsValue {
        let request = js::positional_request(&key, &instance_id, None, |key, id, _| Release {
            key,
            instance_id: id,
        });
        let sql = &self.object.base.sql;
        let _bound = (request.as_ref().ok())
            .map(|r| sql.bind_as([r.key.as_str(), r.instance_id.as_str()], [key, instance_id]));
        answer_in_turn(
            self.object.clone(),
            request,
            Object::release_now,
            |r| &r.key,
            |_, _, reply| release_reply(reply),
        )
    }

    /// `inspect`: `request` is `{ key }`.
    pub fn inspect(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.inspect(r).await })
    }

    /// §11 `pause(key, { reason? })`, under the gate.
    pub fn pause(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        super::rpc::serve(key, options, move |r| async move { object.pause(r).await })
    }

    /// §11 `resume(key)`: `request` is `{ key }`.
    pub fn resume(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.resume(r).await })
    }

    /// §11 `setLimit(key, limit)`: `request` is `{ key, limit }`.
    #[wasm_bindgen(js_name = setLimit)]
    pub fn set_limit(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.set_limit(r).await })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            object.config()?;
            let keys = object.alarm().await?;
            object.alarm_reports(keys).await?;
            object.alarm_terminations().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `listReport(key)`: reports the key to its list shard as it is now,
    /// and answers what it reported (`{ listed, holders, waiting,
    /// oldestSince, limit }`). `coordinatorList` asks it of an entry it
    /// doubts (one no report has confirmed for a while); not part of the
    /// contract.
    #[wasm_bindgen(js_name = listReport)]
    pub fn list_report(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            let key = key
                .as_string()
                .and_then(|k| Ident::new(k).ok())
                .ok_or_else(|| JsValue::from_str("listReport takes a key"))?;
            Ok(to_js(&object.list_report(&key).await?))
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        self.object.base.storage_work()
    }
}
