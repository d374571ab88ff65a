//! The `Runs` Durable Object: `crate::runs` (contract §6) run by the
//! shell's driver (`shell::driver`), which loads the rows an input needs,
//! decides, writes them in one turn, arms the retention alarm, makes the
//! claimant check a claim asked for (whose result re-enters, and whose
//! decision answers the caller) and replies. Long-polls (`await`,
//! `events`) are promises answered by the commit that wakes them, or by a
//! timer at their deadline (`shell::runs_polls`). JS callers reach these
//! methods through the `Runs` class in `js/worker.mjs`, which extends
//! `DurableObject` and only delegates here.

use super::config::RunsShellConfig;
use super::decision_log::Scope;
use super::driver::{
    Call, Driver, NextAlarm, Perform, Performed, Performing, Rules, Stored, Sweep, Then, Waiting,
};
use super::effects;
use super::found::Found;
use super::js;
use super::rpc;
use super::sqlite::ObjectSql;
use crate::edge::runs::{wire, RunAppend, RunClaim, RunComplete};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::RUN_DELETIONS_PER_ALARM_MAX;
use crate::runs::{
    self, sql, AppendEvent, ClaimChecked, ClaimReply, ClaimRun, CompleteRun, Input, PendingClaim,
    Reply, Transition, View, WaitId, Waits, Write,
};
use crate::sql::Counted;
use crate::transition::Check;
use js_sys::{Function, Promise};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The runs concept as the driver runs it.
pub struct Runs;

/// Runs `f` over the object's storage with its statements counted.
pub(super) fn counted<T>(sql: &ObjectSql, f: impl FnOnce(&Counted<'_, ObjectSql>) -> T) -> T {
    let counted = Counted::new(sql);
    let value = f(&counted);
    sql.count_work(counted.work());
    value
}

impl Rules for Runs {
    type Config = RunsShellConfig;
    type Input = Input;
    type Reply = Reply;
    /// Nothing: each call reads the rows it needs itself ([`RunRows`]).
    type Plan = ();
    type Write = Write;
    type State = View;
    type Reads<'a> = RunRows<'a>;
    /// A claim's check of the claimant it found.
    type Effect = Check;
    type Why = runs::log::Reason;
    /// The retention alarm: a finished run's deletion time. Only a recorded
    /// outcome sets one; the alarm re-arms itself after deleting.
    const ALARM: Option<Sweep<Self>> = Some(Sweep {
        keys_per_alarm_max: RUN_DELETIONS_PER_ALARM_MAX,
        due_keys: sql::keys_due,
        tick: || Input::Tick,
        next: NextAlarm::Earliest(sql::next_deletion_ms),
    });

    fn config(env: &Env) -> Result<RunsShellConfig, String> {
        RunsShellConfig::from_env(env)
    }
    fn migrate(sql: &ObjectSql) {
        sql::migrate(sql);
    }
    fn plan(_: &Input) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(rows: &mut RunRows<'_>, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
        runs::decide(rows, now_ms, input)
    }
    fn assert_invariants(state: &View) {
        runs::assert_invariants(state);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Run(key)
    }
}

/// A run key's rows over the object's storage: each call reads the part
/// it needs (`runs::Rows`), its statements counted.
pub struct RunRows<'a> {
    sql: &'a ObjectSql,
    key: &'a str,
}

impl RunRows<'_> {
    fn read<T>(&self, read: impl FnOnce(&sql::Rows<'_, ObjectSql>) -> T) -> T {
        counted(self.sql, |c| {
            read(&sql::Rows {
                sql: c,
                key: self.key,
            })
        })
    }
}

impl runs::Rows for RunRows<'_> {
    fn record(&self) -> runs::Run {
        self.read(|rows| rows.record())
    }
    fn appender(&self, appender: &InstanceId) -> (Option<InstanceId>, Option<u64>) {
        self.read(|rows| rows.appender(appender))
    }
    fn log(&self, after: u64, limit: u32) -> runs::EventsReply {
        self.read(|rows| rows.log(after, limit))
    }
}

impl Stored for Runs {
    fn load<'a>(sql: &'a ObjectSql, key: &'a str, _: &()) -> RunRows<'a> {
        RunRows { sql, key }
    }
    fn write(sql: &ObjectSql, key: &str, transition: &Transition) {
        counted(sql, |c| sql::write(c, key, &transition.writes));
    }
}

/// Each of the core's calls is the object's, answered with its own type.
impl<C: runs::Call + 'static> Call<Runs> for C
where
    C::Answer: 'static,
{
    type Answer = C::Answer;
    /// Nothing: the call reads the rows it needs itself.
    fn plan(&self) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(
        self,
        rows: &mut RunRows<'_>,
        now_ms: u64,
    ) -> Result<(C::Answer, Transition), BatonError> {
        runs::decide_call(rows, now_ms, self)
    }
}

/// A claim waiting on its claimant's check: what the check found decides
/// its second phase, whose answer is the caller's.
impl Then<Runs, ClaimReply> for PendingClaim {
    fn then(self, answer: Rc<Cell<Option<ClaimReply>>>) -> Waiting<Runs> {
        let then = |found: Found| ClaimChecked {
            liveness: found.liveness(),
            through: found.through,
            pending: self,
        };
        Waiting::new(then, answer)
    }
}

/// The claimant a claim found, checked: its status goes to the claim
/// waiting on it (only a claim asks for a check).
impl Perform<Runs> for Check {
    async fn perform<'a>(&'a self, with: &'a Performing<'a, Runs>) -> Performed<Runs> {
        let bindings = with
            .config
            .map_or(&[][..], |c| &c.workflows.workflow_bindings);
        let found = effects::liveness(with.env, bindings, self).await;
        Performed {
            inputs: Vec::new(),
            status: Some(found),
            woke: None,
        }
    }
}

/// The Rust half of the `Runs` Durable Object.
#[wasm_bindgen]
pub struct RunsCore {
    object: Rc<Object>,
}

pub(super) struct Object {
    pub(super) driver: Rc<Driver<Runs>>,
    /// The open long-polls, as the core decides them...
    pub(super) waits: RefCell<Waits>,
    /// ...and the resolver of each one's promise.
    pub(super) resolvers: RefCell<HashMap<WaitId, Function>>,
}

#[wasm_bindgen]
impl RunsCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> RunsCore {
        RunsCore {
            object: Rc::new(Object {
                driver: Driver::new(raw_state, env),
                waits: RefCell::new(Waits::default()),
                resolvers: RefCell::new(HashMap::new()),
            }),
        }
    }

    pub fn claim(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        rpc::serve_js(key, options, move |r| async move { object.claim(r).await })
    }

    pub fn complete(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        rpc::serve_js(
            key,
            options,
            move |r| async move { object.complete(r).await },
        )
    }

    /// `await` (a keyword in Rust).
    #[wasm_bindgen(js_name = awaitRun)]
    pub fn await_run(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        rpc::serve_js(
            key,
            options,
            move |r| async move { object.await_run(r).await },
        )
    }

    pub fn append(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        rpc::serve_js(key, options, move |r| async move { object.append(r).await })
    }

    pub fn events(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        rpc::serve_js(key, options, move |r| async move { object.events(r).await })
    }

    pub fn alarm(&self) -> Promise {
        rpc::serve_alarm(&self.object.driver)
    }

    /// Storage statements run since the object started, and the open
    /// waits: `{ reads, writes, openWaits }` (for the benchmark and tests;
    /// not part of the contract).
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        let work = self.object.driver.base.storage_work();
        let open = self.object.waits.borrow().open();
        js_sys::Reflect::set(&work, &"openWaits".into(), &open.into())
            .expect("a plain object takes a field");
        work
    }
}

/// A reply as the plain JS object RPC callers receive, from its JSON text.
pub(super) fn reply(text: &str) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(text)
}

impl Object {
    async fn claim(self: &Rc<Self>, request: RunClaim) -> Result<JsValue, JsValue> {
        let config = self.driver.config()?;
        config
            .check_workflow(request.workflow.as_ref())
            .map_err(|e| js::to_js_error(&e))?;
        let call = ClaimRun {
            request: request.core(),
            grace_ms: config.decide.claim_grace_ms,
            workflow: config.workflows.workflow_binding.clone(),
        };
        let answer = self.driver.answer_step(&request.key, call).await?;
        reply(&wire::claim_reply(&answer))
    }

    async fn complete(self: &Rc<Self>, request: RunComplete) -> Result<JsValue, JsValue> {
        let call = CompleteRun {
            request: request.core().map_err(|e| js::to_js_error(&e))?,
            retention_ms: self.driver.config()?.decide.retention_ms,
        };
        let waker = Some(self.waker(&request.key));
        let view = (self.driver.answer_in_turn(&request.key, call, waker)).await?;
        let recorded = view.is_some();
        reply(&wire::complete_reply(recorded))
    }

    async fn append(self: &Rc<Self>, request: RunAppend) -> Result<JsValue, JsValue> {
        let call = AppendEvent(request.core().map_err(|e| js::to_js_error(&e))?);
        let waker = Some(self.waker(&request.key));
        let seq = (self.driver.answer_in_turn(&request.key, call, waker)).await?;
        reply(&wire::append_reply(seq))
    }
}
