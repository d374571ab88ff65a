//! The one loop every Durable Object class runs, in the fixed order of
//! style.md: decode → load → decide → write → arm the alarm → effects,
//! whose results re-enter through the next decision → reply.
//!
//! A class says what its concept is by implementing [`Rules`] (how to load
//! a key's state, the core's `decide`, how to write a transition, when the
//! object next needs its alarm, what the alarm and an effect's result feed
//! back in) and holds a [`Driver`] of it; the driver does the rest the same
//! way for every class. Load, decide and write happen in one synchronous
//! turn under the input gate, so nothing is awaited between a read and the
//! write that depends on it; the effects come after the commit, so a reset
//! between the two only delays an effect until the alarm finds it due.
//!
//! # Effects and what re-enters
//! - [`Effect::Create`]: the create's [`CreateOutcome`] re-enters as
//!   [`Rules::created`].
//! - [`Effect::Check`]: the binding's [`Liveness`] of the instance
//!   re-enters as [`Rules::checked`], which also gets the reply of the
//!   decision that asked (the caller's answer so far: it carries what the
//!   next decision needs, such as who is claiming). A check with `answers`
//!   set hands the caller's answer on: the caller gets the reply (or the
//!   refusal) of the decision its result re-entered, not the first one.
//!   So a decision that must know whether an instance is alive before it
//!   can answer asks for an answering check and replies a placeholder.
//!
//! Each round of effects runs concurrently; their results re-enter one
//! after the other, each in a turn of its own, and what those decisions ask
//! for is the next round, for at most [`EFFECT_ROUNDS_MAX`] rounds.
//!
//! # In the commit's turn
//! [`Driver::run_in_turn`] also runs a class's own step inside the caller's
//! commit turn, after the writes (the Runs object answers its parked
//! long-polls there, so that no wait registered before a commit misses it).

use super::decision_log::{self, Kind, Scope};
use super::gate::under_gate;
use super::js::{self, now_ms};
use super::object::ObjectBase;
use super::sqlite::ObjectSql;
use super::workflow::Workflow;
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::EFFECT_ROUNDS_MAX;
use crate::transition::{Check, Create, CreateOutcome, Effect, Transition};
use crate::workflow::Liveness;
use js_sys::Promise;
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// A concept as the driver runs it: the pure core's types and functions,
/// and the storage module's.
pub trait Rules: 'static {
    /// The Worker's variables this class reads, parsed once per object.
    type Config: 'static;
    type Input: 'static;
    type Reply: 'static;
    type Write: 'static;
    /// What a decision reads: the key's state, or the part of it an input
    /// names.
    type State: 'static;

    fn config(env: &Env) -> Result<Self::Config, String>;
    /// The schema ladder, run once per object life.
    fn migrate(sql: &ObjectSql);
    fn load(sql: &ObjectSql, key: &str, input: &Self::Input) -> Self::State;
    /// The core's decision.
    fn decide(
        state: &Self::State,
        now_ms: u64,
        input: Self::Input,
    ) -> Result<TransitionOf<Self>, BatonError>;
    /// Commits a transition's writes and its key's next alarm time.
    fn write(
        sql: &ObjectSql,
        key: &str,
        transition: &Transition<Self::Reply, Self::Write, Self::State>,
    );
    /// Panics on a broken invariant of the committed state: the object then
    /// resets and reloads what was committed. On in release builds.
    fn assert_invariants(state: &Self::State);
    /// The earliest time any key of the object needs the alarm.
    fn next_wake(sql: &ObjectSql) -> Option<u64>;
    /// The keys whose time has come, at most `limit` of them.
    fn due_keys(sql: &ObjectSql, now_ms: u64, limit: u32) -> Vec<String>;
    /// Keys one alarm ticks before it re-arms for the rest.
    const KEYS_PER_ALARM_MAX: u32;
    /// What the alarm feeds a due key.
    fn tick() -> Self::Input;
    /// What a create's result feeds its key.
    fn created(create: &Create, outcome: CreateOutcome) -> Self::Input;
    /// What a check's result feeds its key; `asked_by` is the reply of the
    /// decision that asked (`None` if the caller's answer is a refusal).
    /// A class that asks for no checks keeps the default.
    fn checked(check: &Check, liveness: Liveness, asked_by: Option<&Self::Reply>) -> Self::Input {
        let _ = (check, liveness, asked_by);
        Self::tick()
    }
    /// Whether a committed transition may have moved the object's next
    /// alarm, so that the driver sets it again. A class whose alarm only a
    /// few decisions move says which, and saves the storage call.
    fn moves_alarm(transition: &TransitionOf<Self>) -> bool {
        let _ = transition;
        true
    }
    /// What the decision log names a key as.
    fn scope(key: &str) -> Scope<'_>;
}

/// A transition of `R`'s concept.
pub type TransitionOf<R> =
    Transition<<R as Rules>::Reply, <R as Rules>::Write, <R as Rules>::State>;

/// A class's own step in the caller's commit turn: gets the storage and
/// the committed transition.
pub type InTurn<R> = Box<dyn FnOnce(&ObjectSql, &TransitionOf<R>)>;

/// What an object of concept `R` keeps in memory between calls, in front
/// of its storage (a cache of what its tables hold, never the truth: a
/// restart drops it and the next load rebuilds it), and how the driver
/// loads and writes through it. [`Uncached`], the default, keeps nothing.
pub trait Memory<R: Rules>: Default + 'static {
    fn load(&mut self, sql: &ObjectSql, key: &str, input: &R::Input) -> R::State;
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &TransitionOf<R>);
}

/// No memory: every load reads storage (`R::load`), every write is `R::write`.
#[derive(Default)]
pub struct Uncached;

impl<R: Rules> Memory<R> for Uncached {
    fn load(&mut self, sql: &ObjectSql, key: &str, input: &R::Input) -> R::State {
        R::load(sql, key, input)
    }
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &TransitionOf<R>) {
        R::write(sql, key, transition);
    }
}

/// The shell of one Durable Object of concept `R`: its storage and
/// environment, its variables as parsed when it started, and its memory.
pub struct Driver<R: Rules, M: Memory<R> = Uncached> {
    pub base: ObjectBase,
    config: Result<R::Config, String>,
    memory: RefCell<M>,
}

impl<R: Rules, M: Memory<R>> Driver<R, M> {
    pub fn new(raw_state: DurableObjectState, env: Env) -> Rc<Driver<R, M>> {
        let config = R::config(&env);
        Rc::new(Driver {
            base: ObjectBase::new(raw_state, env),
            config,
            memory: RefCell::new(M::default()),
        })
    }

    /// The variables, or the operator's error naming the bad one.
    pub fn config(&self) -> Result<&R::Config, JsValue> {
        self.config
            .as_ref()
            .map_err(|message| js_sys::Error::new(message).into())
    }

    fn ensure_schema(&self) {
        self.base.ensure_schema(R::migrate);
    }

    /// What `look` reads of the object's memory (between decisions).
    pub fn memory<T>(&self, look: impl FnOnce(&M) -> T) -> T {
        look(&self.memory.borrow())
    }

    /// One decision for `key`, committed; then the alarm and the effects;
    /// then the caller's answer. A refusal writes nothing and performs
    /// nothing.
    // Not an `async fn` of its own: the same future as `run_in_turn`, so
    // the WASM holds one copy of the loop per class (P6).
    pub fn run<'a>(
        self: &'a Rc<Self>,
        key: &'a Ident,
        input: R::Input,
    ) -> impl Future<Output = Result<Result<R::Reply, BatonError>, JsValue>> + 'a {
        self.run_in_turn(key, input, None)
    }

    /// [`Driver::run`], with `in_turn` run in the commit's turn.
    pub async fn run_in_turn(
        self: &Rc<Self>,
        key: &Ident,
        input: R::Input,
        in_turn: Option<InTurn<R>>,
    ) -> Result<Result<R::Reply, BatonError>, JsValue> {
        let transition = match self.commit(key, input, in_turn).await? {
            Ok(transition) => transition,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if R::moves_alarm(&transition) {
            self.arm_alarm().await?;
        }
        self.perform(key, transition.reply, transition.effects)
            .await
    }

    /// Load, decide, write: one synchronous turn under the gate.
    async fn commit(
        self: &Rc<Self>,
        key: &Ident,
        input: R::Input,
        in_turn: Option<InTurn<R>>,
    ) -> Result<Result<TransitionOf<R>, BatonError>, JsValue> {
        let driver = self.clone();
        let key = key.clone();
        under_gate(&self.base.raw_state, move || {
            let transition = driver.decide(&key, input)?;
            if let Some(in_turn) = in_turn {
                in_turn(&driver.base.sql, &transition);
            }
            Ok(transition)
        })
        .await
    }

    /// Load, decide, write, check: synchronous, so nothing can interleave.
    fn decide(&self, key: &Ident, input: R::Input) -> Result<TransitionOf<R>, BatonError> {
        self.ensure_schema();
        let sql = &self.base.sql;
        let mut memory = self.memory.borrow_mut();
        let state = memory.load(sql, key.as_str(), &input);
        let transition = R::decide(&state, now_ms(), input)?;
        memory.write(sql, key.as_str(), &transition);
        R::assert_invariants(&transition.state);
        Ok(transition)
    }

    /// One decision for `key`, committed in the caller's turn and outside
    /// the gate, for a class whose decisions never have effects nor need
    /// the alarm (the RateLimiter): the decision is synchronous (so is the
    /// SQL API), so no other request can interleave with it, and the gate's
    /// Promise, closure and microtasks were a fixed cost on every call
    /// (measured: bench/subset.mjs l1). A broken invariant traps the module;
    /// the JS class then aborts the object, as the gate would.
    pub fn decide_now(&self, key: &Ident, input: R::Input) -> Result<R::Reply, BatonError> {
        let transition = self.decide(key, input)?;
        assert!(
            transition.effects.is_empty() && transition.alarm_at_ms.is_none(),
            "a decision taken outside the gate asked for an effect or the alarm"
        );
        Ok(transition.reply)
    }

    /// Reads under the gate without deciding (an inspect).
    pub async fn read<T: 'static>(
        self: &Rc<Self>,
        read: impl FnOnce(&ObjectSql) -> T + 'static,
    ) -> Result<T, JsValue> {
        let driver = self.clone();
        under_gate(&self.base.raw_state, move || {
            driver.ensure_schema();
            read(&driver.base.sql)
        })
        .await
    }

    /// Sets the object's alarm to the earliest time any of its keys needs.
    async fn arm_alarm(&self) -> Result<(), JsValue> {
        self.ensure_schema();
        set_alarm(&self.base, R::next_wake(&self.base.sql)).await
    }

    /// Performs the effects, feeds each result back to its key, and
    /// performs what those decisions asked for in turn, for at most
    /// [`EFFECT_ROUNDS_MAX`] rounds; the alarm finishes anything left.
    /// Returns the caller's answer: `reply`, or what an answering check's
    /// decision gave.
    async fn perform(
        self: &Rc<Self>,
        key: &Ident,
        reply: R::Reply,
        effects: Vec<Effect>,
    ) -> Result<Result<R::Reply, BatonError>, JsValue> {
        let mut answer = Ok(reply);
        let mut round = effects;
        for _ in 0..EFFECT_ROUNDS_MAX {
            if round.is_empty() {
                break;
            }
            let scope = R::scope(key.as_str());
            let env = &self.base.env;
            let results =
                futures_util::future::join_all(round.iter().map(|e| perform(env, scope, e))).await;
            let asked_by = answer.as_ref().ok();
            let inputs: Vec<R::Input> = round
                .iter()
                .zip(results)
                .map(|(effect, result)| match (effect, result) {
                    (Effect::Create(create), Performed::Created(outcome)) => {
                        R::created(create, outcome)
                    }
                    (Effect::Check(check), Performed::Checked(liveness)) => {
                        R::checked(check, liveness, asked_by)
                    }
                    _ => unreachable!("an effect performed as another"),
                })
                .collect();
            let mut next = Vec::new();
            for (effect, input) in round.iter().zip(inputs) {
                let answers = matches!(effect, Effect::Check(Check { answers: true, .. }));
                match self.commit(key, input, None).await? {
                    Ok(transition) => {
                        if R::moves_alarm(&transition) {
                            self.arm_alarm().await?;
                        }
                        next.extend(transition.effects);
                        if answers {
                            answer = Ok(transition.reply);
                        }
                    }
                    Err(refusal) if answers => answer = Err(refusal),
                    Err(_) => {}
                }
            }
            round = next;
        }
        Ok(answer)
    }

    /// The alarm: every key whose time has come is ticked, up to
    /// `R::KEYS_PER_ALARM_MAX`; the alarm is then set for the next, which is
    /// now if keys were left over.
    pub async fn alarm(self: &Rc<Self>) -> Result<(), JsValue> {
        let keys = self
            .read(|sql| R::due_keys(sql, now_ms(), R::KEYS_PER_ALARM_MAX))
            .await?;
        for key in keys {
            // Keys were stored after validation; one that no longer parses is skipped.
            let Ok(key) = Ident::parse("key", &key) else {
                continue;
            };
            // A tick is never refused.
            let _ = self.run_in_turn(&key, R::tick(), None).await?;
        }
        self.arm_alarm().await
    }
}

// The parts of the loop that do not depend on the class, kept out of the
// generic code so the WASM holds one copy of each (P6).

/// Sets the object's alarm for `at_ms`, or clears it.
async fn set_alarm(base: &ObjectBase, at_ms: Option<u64>) -> Result<(), JsValue> {
    let storage = base.raw_state.storage()?;
    let call = match at_ms {
        Some(at_ms) => storage.set_alarm(
            js_sys::Date::new(&JsValue::from_f64(at_ms as f64)),
            js_sys::Object::new(),
        ),
        None => storage.delete_alarm(js_sys::Object::new()),
    };
    wasm_bindgen_futures::JsFuture::from(call?).await?;
    Ok(())
}

/// What an effect came to.
enum Performed {
    Created(CreateOutcome),
    Checked(Liveness),
}

/// Performs one effect; a create's decision line.
async fn perform(env: &Env, scope: Scope<'_>, effect: &Effect) -> Performed {
    match effect {
        Effect::Create(create) => {
            let outcome = create_instance(env, create).await;
            log_created(scope, create, &outcome);
            Performed::Created(outcome)
        }
        Effect::Check(check) => Performed::Checked(liveness(env, check).await),
        // Work in progress (issue 21): the Coordinator's shell still sends
        // its turn events and terminations itself, from its transitions'
        // replies; no class runs them through the driver yet.
        // The serial queue (D1, no input gate) performs its tells in its
        // own shell (`serial_queue_d1`).
        Effect::Wake(_) | Effect::Terminate(_) | Effect::Tell(_) => {
            unreachable!("no class performs wakes, terminations or tells through the driver yet")
        }
    }
}

async fn create_instance(env: &Env, create: &Create) -> CreateOutcome {
    let attempt = async {
        let workflow = Workflow::from_env(env, &create.workflow)?;
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

/// What the binding says of a check's instance; a binding that is not
/// there is `Unknown` (never taken for dead).
async fn liveness(env: &Env, check: &Check) -> Liveness {
    match Workflow::from_env(env, &check.workflow) {
        Ok(workflow) => workflow.liveness(check.id.as_str()).await,
        Err(_) => Liveness::Unknown,
    }
}

/// A create's decision line; a failure is also a warning (an error of
/// Baton's own I/O prints at every log level).
fn log_created(scope: Scope<'_>, create: &Create, outcome: &CreateOutcome) {
    let (decision, reason) = match outcome {
        CreateOutcome::Created => ("created", format!("attempt {}", create.attempt)),
        CreateOutcome::AlreadyExists => ("created", "the id exists: counted as done".to_string()),
        CreateOutcome::Failed(message) => {
            worker::console_warn!(
                "baton: create of {} through {} failed (attempt {}): {message}",
                create.id,
                create.workflow,
                create.attempt
            );
            (
                "create_failed",
                format!(
                    "attempt {}: {message}; retried with backoff",
                    create.attempt
                ),
            )
        }
    };
    decision_log::decision(
        Kind::Contended,
        scope,
        create.id.as_str(),
        decision,
        &reason,
        None,
    );
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

/// Serves one positional RPC method: builds the request object from
/// `(key, options)`, decodes it (a refusal is the caller's `BatonError`),
/// runs it, and answers its typed reply.
pub fn serve<T, Reply, F>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise
where
    T: serde::de::DeserializeOwned + 'static,
    Reply: serde::Serialize,
    F: Future<Output = Result<Reply, JsValue>> + 'static,
{
    serve_js(key, options, move |request| async move {
        Ok(js::to_js(&method(request).await?))
    })
}

/// [`serve`] for a method that makes its JS reply itself (the Runs
/// replies, assembled as JSON text around stored JSON).
pub fn serve_js<T, F>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise
where
    T: serde::de::DeserializeOwned + 'static,
    F: Future<Output = Result<JsValue, JsValue>> + 'static,
{
    js::promise(async move {
        let request =
            js::positional(&crate::edge::KEY_ARG, key, options).map_err(|e| js::to_js_error(&e))?;
        method(request).await
    })
}

/// [`serve`] for a method that answers in the caller's turn (the
/// RateLimiter's: one synchronous decision, no effects): the arguments
/// decoded as `arg` says, then the reply itself, or a rejected promise
/// holding the refusal, so no promise is made on the hot path.
pub fn serve_now<T: serde::de::DeserializeOwned>(
    arg: &crate::edge::KeyArg,
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> Result<JsValue, JsValue>,
) -> JsValue {
    let answered = js::positional(arg, key, options)
        .map_err(|e| js::to_js_error(&e))
        .and_then(method);
    answer_now(answered)
}

/// A synchronous method's answer as RPC returns it: the reply, or a
/// rejected promise holding the refusal (one copy for every method, P6).
fn answer_now(answered: Result<JsValue, JsValue>) -> JsValue {
    match answered {
        Ok(reply) => reply,
        Err(error) => Promise::reject(&error).into(),
    }
}

/// The class's `alarm()` handler: [`Driver::alarm`] as the promise the
/// runtime awaits, so each class's handler is this one call.
pub fn serve_alarm<R: Rules, M: Memory<R> + 'static>(driver: &Rc<Driver<R, M>>) -> Promise {
    let driver = driver.clone();
    js::promise(async move {
        driver.alarm().await?;
        Ok(JsValue::UNDEFINED)
    })
}
