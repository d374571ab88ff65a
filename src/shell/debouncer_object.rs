//! The `Debouncer` Durable Object: `crate::debounce` run by the shell's
//! driver (`shell::driver`), which loads the key's rows, decides, writes
//! them in one turn, arms the alarm (the earliest time any key of the
//! object needs), makes the creates the decision asked for, each of whose
//! results re-enters through the next decision, and then replies. No state
//! lives in memory: the tables are the truth, so a reset between the commit
//! and a create only delays that create until the alarm presumes it lost
//! and tries again.
//!
//! The creates are made before the reply, so `"started"` from a leading
//! call means the instance exists (or its create failed and is being
//! retried: `inspect` lists it under `retrying`).
//!
//! JS callers reach these methods through the `Debouncer` class in
//! `js/worker.mjs`, which extends `DurableObject` and only delegates here.

use super::config::WorkflowConfig;
use super::decision_log::{self, Scope};
use super::driver::{Driver, NextAlarm, Perform, Performed, Performing, Rules, Stored, Sweep};
use super::effects;
use super::js::{self, now_ms};
use super::rpc;
use super::sqlite::ObjectSql;
use crate::debounce::{
    self, assert_invariants, sql, Cancel, Create, Flush, Input, KeyState, Transition, Write,
};
use crate::edge::coordinator::KeyOptions;
use crate::edge::debounce::{
    CancelReply, Debounce, DebounceKey, DebounceReply, FlushReply, Inspection, StartAt,
    StartAtReply,
};
use crate::error::BatonError;
use crate::ident::WorkflowName;
use crate::limits::DEBOUNCE_KEYS_PER_ALARM_MAX;
use js_sys::Promise;
use std::borrow::Cow;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The debounce concept as the driver runs it.
pub struct Debouncer;

impl Rules for Debouncer {
    type Config = WorkflowConfig;
    /// The alarm's tick and a create's outcome; a caller's request is a
    /// [`Call`].
    type Input = Input;
    type Reply = ();
    type Plan = ();
    type Write = Write;
    type State = KeyState;
    type Reads<'a> = KeyState;
    type Effect = Create;
    type Why = debounce::log::Reason;
    const ALARM: Option<Sweep<Self>> = Some(Sweep {
        keys_per_alarm_max: DEBOUNCE_KEYS_PER_ALARM_MAX,
        due_keys: sql::due_keys,
        tick: || Input::Tick,
        next: NextAlarm::Earliest(sql::next_wake),
    });

    fn config(env: &Env) -> Result<WorkflowConfig, String> {
        WorkflowConfig::from_env(env)
    }
    fn migrate(sql: &ObjectSql) {
        sql::migrate(sql);
    }
    fn plan(_: &Input) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(state: &mut KeyState, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
        debounce::decide(state, now_ms, input)
    }
    fn assert_invariants(state: &KeyState) {
        assert_invariants(state);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Debounce(key)
    }
}

impl Stored for Debouncer {
    fn load(sql: &ObjectSql, key: &str, _: &()) -> KeyState {
        sql::load(sql, key)
    }
    fn write(sql: &ObjectSql, key: &str, transition: &Transition) {
        sql::write(sql, key, &transition.writes, transition.alarm.at_ms());
    }
}

/// A create: made through its Workflow binding (and its line, the core's,
/// printed); its outcome
/// re-enters as `Input::Created`.
impl Perform<Debouncer> for Create {
    async fn perform<'a>(&'a self, with: &'a Performing<'a, Debouncer>) -> Performed<Debouncer> {
        let outcome = effects::create(with.env, self).await;
        decision_log::line(with.scope, &debounce::created_line(self, &outcome));
        let created = Input::Created {
            id: self.id.clone(),
            outcome,
        };
        Performed {
            inputs: vec![created],
            status: None,
            woke: None,
        }
    }
}

/// The Rust half of the `Debouncer` Durable Object.
#[wasm_bindgen]
pub struct DebouncerCore {
    driver: Rc<Driver<Debouncer>>,
}

#[wasm_bindgen]
impl DebouncerCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> DebouncerCore {
        DebouncerCore {
            driver: Driver::new(raw_state, env),
        }
    }

    /// `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix?, batch? })`.
    pub fn debounce(&self, key: JsValue, options: JsValue) -> Promise {
        let driver = self.driver.clone();
        rpc::serve(
            key,
            options,
            move |r| async move { driver.debounce(r).await },
        )
    }

    /// `startAt(key, { at, params?, workflow?, instanceId? })`.
    #[wasm_bindgen(js_name = startAt)]
    pub fn start_at(&self, key: JsValue, options: JsValue) -> Promise {
        let driver = self.driver.clone();
        rpc::serve(
            key,
            options,
            move |r| async move { driver.start_at(r).await },
        )
    }

    /// `flush(key)`.
    pub fn flush(&self, key: JsValue) -> Promise {
        let driver = self.driver.clone();
        rpc::serve(key, JsValue::UNDEFINED, move |r| async move {
            driver.flush(r).await
        })
    }

    /// `cancel(key)`.
    pub fn cancel(&self, key: JsValue) -> Promise {
        let driver = self.driver.clone();
        rpc::serve(key, JsValue::UNDEFINED, move |r| async move {
            driver.cancel(r).await
        })
    }

    /// `inspect(key)`.
    pub fn inspect(&self, key: JsValue) -> Promise {
        let driver = self.driver.clone();
        rpc::serve(key, JsValue::UNDEFINED, move |r: DebounceKey| async move {
            driver
                .read(move |sql| Inspection::of(r.key.clone(), &sql::load(sql, r.key.as_str())))
                .await
        })
    }

    pub fn alarm(&self) -> Promise {
        rpc::serve_alarm(&self.driver)
    }
}

impl Driver<Debouncer> {
    /// The binding a call names (one of `WORKFLOW_BINDINGS`), or the default.
    fn workflow_name(&self, named: Option<&WorkflowName>) -> Result<String, JsValue> {
        let config = self.config()?;
        let Some(name) = named else {
            return Ok(config.workflow_binding.clone());
        };
        let options = KeyOptions {
            workflow: Some(name.clone()),
            limit: None,
            grant: None,
            ..KeyOptions::default()
        };
        config
            .check_options(Some(&options))
            .map_err(|e| js::to_js_error(&e))?;
        Ok(name.as_str().to_owned())
    }

    async fn debounce(self: &Rc<Self>, request: Debounce) -> Result<DebounceReply, JsValue> {
        let workflow = self.workflow_name(request.workflow.as_ref())?;
        let call = request.core(&workflow).map_err(|e| js::to_js_error(&e))?;
        let call = debounce::Debounce {
            call,
            suffix: effects::new_suffix()?,
        };
        let reply = self.answer(&request.key, call).await?;
        Ok(reply.into())
    }

    async fn start_at(self: &Rc<Self>, request: StartAt) -> Result<StartAtReply, JsValue> {
        let workflow = self.workflow_name(request.workflow.as_ref())?;
        let call = request
            .core(now_ms(), &workflow)
            .map_err(|e| js::to_js_error(&e))?;
        let call = debounce::StartAt {
            call,
            suffix: effects::new_suffix()?,
        };
        let debounce::StartAtReply { instance_id, at } = self.answer(&request.key, call).await?;
        Ok(StartAtReply { instance_id, at })
    }

    async fn flush(self: &Rc<Self>, request: DebounceKey) -> Result<FlushReply, JsValue> {
        let started = self.answer(&request.key, Flush).await?;
        Ok(FlushReply { started })
    }

    async fn cancel(self: &Rc<Self>, request: DebounceKey) -> Result<CancelReply, JsValue> {
        let cancelled = self.answer(&request.key, Cancel).await?;
        Ok(CancelReply { cancelled })
    }
}
