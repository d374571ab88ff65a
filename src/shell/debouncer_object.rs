//! The `Debouncer` Durable Object: the shell around `crate::debounce`.
//!
//! Every entry point runs in the same order: decode the request object
//! (`crate::edge`), then one decision under the gate (load the key's rows,
//! decide, write the rows in one synchronous turn), then the alarm (the
//! earliest time any key of the object needs), then the creates the
//! decision asked for, each of whose results re-enters through the next
//! decision, then the reply. Nothing is awaited between the read and the
//! write that depends on it, and no state lives in memory: the tables are
//! the truth, so a reset between the commit and a create only delays that
//! create until the alarm presumes it lost and tries again.
//!
//! The creates are made before the reply, so `"started"` from a leading
//! call means the instance exists (or its create failed and is being
//! retried: `inspect` lists it under `retrying`).
//!
//! JS callers reach these methods through the `Debouncer` class in
//! `js/worker.mjs`, which extends `DurableObject` and only delegates here.

use super::config::CoordinatorConfig;
use super::decision_log::{self, Kind, Scope};
use super::gate::under_gate;
use super::js::{self, now_ms, to_js};
use super::object::ObjectBase;
use super::workflow::Workflow;
use crate::debounce::{
    self, assert_invariants, sql, Create, CreateOutcome, IdSuffix, Input, Outcome, Reply,
    Transition,
};
use crate::edge::coordinator::KeyOptions;
use crate::edge::debounce::{
    CancelReply, Debounce, DebounceKey, DebounceReply, FlushReply, Inspection, StartAt,
    StartAtReply,
};
use crate::error::BatonError;
use crate::ident::{Ident, WorkflowName};
use crate::limits::{DEBOUNCE_CREATE_ROUNDS_MAX, DEBOUNCE_KEYS_PER_ALARM_MAX};
use js_sys::{Promise, Reflect};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::durable::ScheduledTime;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Rust half of the `Debouncer` Durable Object.
#[wasm_bindgen]
pub struct DebouncerCore {
    object: Rc<Object>,
}

struct Object {
    base: ObjectBase,
    config: Result<CoordinatorConfig, String>,
}

#[wasm_bindgen]
impl DebouncerCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> DebouncerCore {
        let config = CoordinatorConfig::from_env(&env);
        DebouncerCore {
            object: Rc::new(Object {
                base: ObjectBase::new(raw_state, env),
                config,
            }),
        }
    }

    /// `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix? })`.
    pub fn debounce(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve_positional(
            key,
            options,
            move |r| async move { object.debounce(r).await },
        )
    }

    /// `startAt(key, { at, params?, workflow?, instanceId? })`.
    #[wasm_bindgen(js_name = startAt)]
    pub fn start_at(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        serve_positional(
            key,
            options,
            move |r| async move { object.start_at(r).await },
        )
    }

    /// `flush(key)`.
    pub fn flush(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        serve_positional(key, JsValue::UNDEFINED, move |r| async move {
            object.flush(r).await
        })
    }

    /// `cancel(key)`.
    pub fn cancel(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        serve_positional(key, JsValue::UNDEFINED, move |r| async move {
            object.cancel(r).await
        })
    }

    /// `inspect(key)`.
    pub fn inspect(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        serve_positional(key, JsValue::UNDEFINED, move |r| async move {
            object.inspect(r).await
        })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            object.alarm().await?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// Serves one positional method: builds the request object from
/// `(key, options)`, decodes it, runs it, and answers its typed reply.
fn serve_positional<T, R, F>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise
where
    T: serde::de::DeserializeOwned + 'static,
    R: serde::Serialize,
    F: std::future::Future<Output = Result<R, JsValue>> + 'static,
{
    js::promise(async move {
        let request = js::positional(key, options).map_err(|e| js::to_js_error(&e))?;
        Ok(to_js(&method(request).await?))
    })
}

/// A fresh unique id suffix: a UUID from the runtime's CSPRNG. The core
/// draws no randomness; this is the one place it comes from.
fn new_suffix() -> Result<IdSuffix, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))?;
    let random_uuid: js_sys::Function =
        Reflect::get(&crypto, &JsValue::from_str("randomUUID"))?.unchecked_into();
    let uuid = random_uuid
        .call0(&crypto)?
        .as_string()
        .ok_or_else(|| JsValue::from_str("crypto.randomUUID gave no string"))?;
    Ok(IdSuffix::new(uuid))
}

/// What a create's failure means: "the id exists" is a done start.
fn create_outcome(result: Result<(), JsValue>) -> CreateOutcome {
    let Err(error) = result else {
        return CreateOutcome::Created;
    };
    let message = match js::Thrown::of(&error) {
        js::Thrown::Refused(message) | js::Thrown::Failed(message) => message,
    };
    let lower = message.to_ascii_lowercase();
    if lower.contains("already exist") || lower.contains("already_exist") {
        CreateOutcome::AlreadyExists
    } else {
        CreateOutcome::Failed(message)
    }
}

impl Object {
    fn config(&self) -> Result<&CoordinatorConfig, JsValue> {
        self.config
            .as_ref()
            .map_err(|message| js_sys::Error::new(message).into())
    }

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
        };
        config
            .check_options(Some(&options))
            .map_err(|e| js::to_js_error(&e))?;
        Ok(name.as_str().to_owned())
    }

    fn ensure_schema(&self) {
        self.base.ensure_schema(sql::migrate);
    }

    /// Runs one decision for `key` under the gate and commits its writes;
    /// then arms the alarm and makes the creates. A refusal writes nothing.
    async fn decide(
        self: &Rc<Self>,
        key: &Ident,
        input: Input,
    ) -> Result<Result<Reply, BatonError>, JsValue> {
        let transition = self.commit(key, input).await?;
        let transition = match transition {
            Ok(transition) => transition,
            Err(refusal) => return Ok(Err(refusal)),
        };
        self.arm_alarm().await?;
        self.create_all(key, transition.creates().cloned().collect())
            .await?;
        Ok(Ok(transition.reply))
    }

    /// Load, decide, write: one synchronous turn under the gate.
    async fn commit(
        self: &Rc<Self>,
        key: &Ident,
        input: Input,
    ) -> Result<Result<Transition, BatonError>, JsValue> {
        let object = self.clone();
        let key = key.clone();
        under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let state = sql::load(&object.base.sql, key.as_str());
            let transition = debounce::decide(&state, now_ms(), input)?;
            sql::write(
                &object.base.sql,
                key.as_str(),
                &transition.writes,
                transition.alarm_at_ms,
            );
            // On in release builds too: a broken invariant panics, which
            // resets the object, and it reloads from what was committed.
            assert_invariants(&transition.state);
            Ok(transition)
        })
        .await
    }

    /// Sets the object's alarm to the earliest time any of its keys needs.
    async fn arm_alarm(&self) -> Result<(), JsValue> {
        self.ensure_schema();
        let storage = self.base.state.storage();
        match sql::next_wake(&self.base.sql) {
            Some(at_ms) => {
                let date = js_sys::Date::new(&JsValue::from_f64(at_ms as f64));
                storage.set_alarm(ScheduledTime::new(date)).await?;
            }
            None => storage.delete_alarm().await?,
        }
        Ok(())
    }

    /// Makes the creates, reports each result back, and makes whatever
    /// those reports asked for in turn, for a bounded number of rounds; the
    /// alarm finishes anything left (an unreported create is retried when
    /// its loss timeout passes).
    async fn create_all(self: &Rc<Self>, key: &Ident, creates: Vec<Create>) -> Result<(), JsValue> {
        let mut round = creates;
        for _ in 0..DEBOUNCE_CREATE_ROUNDS_MAX {
            if round.is_empty() {
                return Ok(());
            }
            let results =
                futures_util::future::join_all(round.iter().map(|c| self.create(c))).await;
            let mut next = Vec::new();
            for (create, outcome) in round.iter().zip(results) {
                let (decision, reason) = match &outcome {
                    CreateOutcome::Created => ("created", format!("attempt {}", create.attempt)),
                    CreateOutcome::AlreadyExists => {
                        ("created", "the id exists: counted as done".to_string())
                    }
                    CreateOutcome::Failed(message) => (
                        "create_failed",
                        format!(
                            "attempt {}: {message}; retried with backoff",
                            create.attempt
                        ),
                    ),
                };
                if let CreateOutcome::Failed(message) = &outcome {
                    worker::console_warn!(
                        "baton: create of {} through {} failed (attempt {}): {message}",
                        create.id,
                        create.workflow,
                        create.attempt
                    );
                }
                decision_log::decision(
                    Kind::Contended,
                    Scope::Key(key.as_str()),
                    create.id.as_str(),
                    decision,
                    &reason,
                    None,
                );
                let input = Input::Created {
                    id: create.id.clone(),
                    outcome,
                };
                if let Ok(transition) = self.commit(key, input).await? {
                    next.extend(transition.creates().cloned());
                }
                self.arm_alarm().await?;
            }
            round = next;
        }
        Ok(())
    }

    async fn create(&self, create: &Create) -> CreateOutcome {
        let attempt = async {
            let workflow = Workflow::from_env(&self.base.env, &create.workflow)?;
            let params = match &create.params {
                Some(text) => js_sys::JSON::parse(text)?,
                None => JsValue::UNDEFINED,
            };
            workflow
                .create_instance(create.id.as_str(), &params)
                .await
                .map(|_| ())
        };
        create_outcome(attempt.await)
    }

    async fn debounce(self: &Rc<Self>, request: Debounce) -> Result<DebounceReply, JsValue> {
        let workflow = self.workflow_name(request.workflow.as_ref())?;
        let call = request.core(&workflow).map_err(|e| js::to_js_error(&e))?;
        let input = Input::Debounce {
            call,
            suffix: new_suffix()?,
        };
        let reply = self.decide(&request.key, input).await?;
        match reply.map_err(|e| js::to_js_error(&e))? {
            Reply::Debounce(reply) => {
                let reason = match reply.fire_at_ms {
                    Some(at) => format!("fires at {at}"),
                    None => "the burst's leading start".to_string(),
                };
                // A call that only moves the burst's fire time is routine;
                // a start at once or a suppressed call is not.
                let kind = match reply.outcome {
                    Outcome::Scheduled => Kind::Routine,
                    Outcome::Started | Outcome::Suppressed => Kind::Contended,
                };
                decision_log::decision(
                    kind,
                    Scope::Key(request.key.as_str()),
                    reply.instance_id.as_str(),
                    reply.outcome.as_str(),
                    &reason,
                    None,
                );
                Ok(reply.into())
            }
            other => unreachable!("debounce answered {other:?}"),
        }
    }

    async fn start_at(self: &Rc<Self>, request: StartAt) -> Result<StartAtReply, JsValue> {
        let workflow = self.workflow_name(request.workflow.as_ref())?;
        let call = request
            .core(now_ms(), &workflow)
            .map_err(|e| js::to_js_error(&e))?;
        let input = Input::StartAt {
            call,
            suffix: new_suffix()?,
        };
        match self
            .decide(&request.key, input)
            .await?
            .map_err(|e| js::to_js_error(&e))?
        {
            Reply::StartAt { instance_id, at } => {
                decision_log::decision(
                    Kind::Routine,
                    Scope::Key(request.key.as_str()),
                    instance_id.as_str(),
                    "scheduled",
                    &format!("startAt {at}"),
                    None,
                );
                Ok(StartAtReply { instance_id, at })
            }
            other => unreachable!("startAt answered {other:?}"),
        }
    }

    async fn flush(self: &Rc<Self>, request: DebounceKey) -> Result<FlushReply, JsValue> {
        match self
            .decide(&request.key, Input::Flush)
            .await?
            .map_err(|e| js::to_js_error(&e))?
        {
            Reply::Flush { started } => Ok(FlushReply { started }),
            other => unreachable!("flush answered {other:?}"),
        }
    }

    async fn cancel(self: &Rc<Self>, request: DebounceKey) -> Result<CancelReply, JsValue> {
        match self
            .decide(&request.key, Input::Cancel)
            .await?
            .map_err(|e| js::to_js_error(&e))?
        {
            Reply::Cancel { cancelled } => {
                if let Some(id) = &cancelled {
                    decision_log::decision(
                        Kind::Contended,
                        Scope::Key(request.key.as_str()),
                        id.as_str(),
                        "cancelled",
                        "its pending start was dropped",
                        None,
                    );
                }
                Ok(CancelReply { cancelled })
            }
            other => unreachable!("cancel answered {other:?}"),
        }
    }

    async fn inspect(self: &Rc<Self>, request: DebounceKey) -> Result<Inspection, JsValue> {
        let object = self.clone();
        under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let state = sql::load(&object.base.sql, request.key.as_str());
            Inspection::of(request.key, &state)
        })
        .await
    }

    /// The alarm: every key whose time has come (a start to fire, a create
    /// to retry) is ticked, up to a bound; the alarm is then set for the
    /// next, which is now if keys were left over.
    async fn alarm(self: &Rc<Self>) -> Result<(), JsValue> {
        let object = self.clone();
        let keys = under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            sql::due_keys(&object.base.sql, now_ms(), DEBOUNCE_KEYS_PER_ALARM_MAX)
        })
        .await?;
        for key in keys {
            // Keys were stored after validation; one that no longer parses is skipped.
            let Ok(key) = Ident::parse("key", &key) else {
                continue;
            };
            // A tick is never refused.
            let _ = self.decide(&key, Input::Tick).await?;
        }
        self.arm_alarm().await
    }
}
