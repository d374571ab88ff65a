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
//! - [`Effect::Wake`]: the turn event ([`Rules::turn`]) is sent before the
//!   reply, and whether the engine accepted it re-enters as
//!   [`Rules::woken`]; the instance's status is asked
//!   [`HAND_ON_CHECK_DELAY_MS`] later, after the reply, in `waitUntil` (a
//!   deferred round: the woken instance has had time to act on the event),
//!   and re-enters as [`Rules::wake_checked`]. Wakes that deferred round's
//!   decisions ask for are checked at once, not a delay each, round after
//!   round, within [`WAKE_ATTEMPTS_PER_CALL_MAX`] wakes. Both hooks get the
//!   state of the decision that asked (the instance as it was handed).
//! - [`Effect::Terminate`]: best effort, at most
//!   [`TERMINATIONS_PER_CALL_MAX`] a call; nothing re-enters.
//!
//! Each round of effects runs concurrently; their results re-enter one
//! after the other, each in a turn of its own, and what those decisions ask
//! for is the next round, for at most [`EFFECT_ROUNDS_MAX`] rounds. Past
//! any bound, the alarm finishes the work (a woken instance stays to
//! confirm, a create stays due).
//!
//! # The alarm
//! By default the alarm is set to [`Rules::next_wake`], the earliest time
//! any key needs it, after every decision that may move it. A class whose
//! alarm is a periodic sweep rather than a due time (the Coordinator's
//! holder checks) names its period ([`Rules::alarm_period_ms`]): the alarm
//! is then ensured (set `period` from now only if none is set) after a
//! decision that needs it, and the alarm leaves re-arming to the decisions
//! it runs.
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
use super::wake::{Sent, Turn};
use super::workflow::Workflow;
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::{
    EFFECT_ROUNDS_MAX, HAND_ON_CHECK_DELAY_MS, TERMINATIONS_PER_CALL_MAX,
    WAKE_ATTEMPTS_PER_CALL_MAX,
};
use crate::transition::{Check, Create, CreateOutcome, Effect, Terminate, Transition, Wake};
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
    /// The turn event to send an instance a decision asked to wake, given
    /// the variables; `None` sends nothing (its status is still asked). A
    /// class that wakes no one keeps the default.
    fn turn(config: &Self::Config, key: &str, wake: &Wake) -> Option<Turn> {
        let _ = (config, key, wake);
        None
    }
    /// What a wake's send feeds its key, if anything: `accepted` is whether
    /// the engine took the event (false if it was not sent); `asked_by` is
    /// the state of the decision that asked for the wake.
    fn woken(asked_by: &Self::State, wake: &Wake, accepted: bool) -> Option<Self::Input> {
        let _ = (asked_by, wake, accepted);
        None
    }
    /// What the woken instance's status, asked
    /// [`HAND_ON_CHECK_DELAY_MS`] after the reply, feeds its key, if
    /// anything; `asked_by` as for [`Rules::woken`].
    fn wake_checked(
        asked_by: &Self::State,
        wake: &Wake,
        liveness: Liveness,
    ) -> Option<Self::Input> {
        let _ = (asked_by, wake, liveness);
        None
    }
    /// The alarm's period, for a class whose alarm is a periodic sweep
    /// rather than a due time (see the module's doc); `None`, the default,
    /// sets it to [`Rules::next_wake`].
    fn alarm_period_ms(config: &Self::Config) -> Option<u64> {
        let _ = config;
        None
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
    /// Given the object's variables once, when the object starts (not if
    /// they are bad: every call then fails before deciding).
    fn configure(&mut self, config: &R::Config) {
        let _ = config;
    }
    fn load(&mut self, sql: &ObjectSql, key: &str, input: &R::Input) -> R::State;
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &TransitionOf<R>);
    /// A step in the commit's turn, after [`Memory::write`], with the
    /// object itself (the Coordinator sets its alarm there when a decision
    /// leaves a list report owed, so the alarm's write goes with the
    /// decision's).
    fn committed(&mut self, base: &ObjectBase) {
        let _ = base;
    }
    /// After each committed decision of a call, out of its turn: work the
    /// decisions left to send after the reply, in `waitUntil` (the
    /// Coordinator's list reports). The default sends nothing.
    fn decided(driver: &Rc<Driver<R, Self>>) {
        let _ = driver;
    }
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
        let mut memory = M::default();
        if let Ok(config) = &config {
            memory.configure(config);
        }
        Rc::new(Driver {
            base: ObjectBase::new(raw_state, env),
            config,
            memory: RefCell::new(memory),
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
        match self.commit(key, input, in_turn).await? {
            Ok(transition) => self.carry_on(key, transition).await,
            Err(refusal) => Ok(Err(refusal)),
        }
    }

    /// A committed transition's alarm and effects; then the caller's answer.
    pub async fn carry_on(
        self: &Rc<Self>,
        key: &Ident,
        transition: TransitionOf<R>,
    ) -> Result<Result<R::Reply, BatonError>, JsValue> {
        M::decided(self);
        if R::moves_alarm(&transition) {
            self.arm_alarm().await?;
        }
        let Transition {
            reply,
            effects,
            state,
            ..
        } = transition;
        let round = asked(effects, state);
        let answer = self.perform(key, Some(Ok(reply)), round, false).await?;
        Ok(answer.expect("a call's answer is kept through its effects"))
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
        memory.committed(&self.base);
        R::assert_invariants(&transition.state);
        Ok(transition)
    }

    /// One decision for `key`, committed in the caller's turn and outside
    /// the gate: the decision is synchronous (so is the SQL API), so no
    /// other request can interleave with it, and the gate's Promise,
    /// closure and microtasks were a fixed cost on every call (measured:
    /// bench/subset.mjs l1, bench/profile.mjs). A broken invariant traps
    /// the module; the JS class then aborts the object, as the gate would.
    /// Its answer, when the decision asked for no effect and left the alarm
    /// alone (the RateLimiter's always, the Coordinator's uncontended
    /// acquire and release); else the committed transition, for
    /// [`Driver::carry_on`].
    pub fn try_now(&self, key: &Ident, input: R::Input) -> Result<Now<R>, BatonError> {
        let transition = self.decide(key, input)?;
        if transition.effects.is_empty() && !R::moves_alarm(&transition) {
            return Ok(Now::Answered(transition.reply));
        }
        Ok(Now::Pending(transition))
    }

    /// [`Driver::try_now`] for a class whose decisions never have effects
    /// nor need the alarm (the RateLimiter, which keeps the default
    /// `moves_alarm`: it has no alarm to move).
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

    /// Sets the object's alarm to the earliest time any of its keys needs,
    /// or ensures it for a class with an alarm period.
    pub async fn arm_alarm(&self) -> Result<(), JsValue> {
        if let Some(period_ms) = self.alarm_period_ms() {
            return ensure_alarm(&self.base, period_ms).await;
        }
        self.ensure_schema();
        set_alarm(&self.base, R::next_wake(&self.base.sql)).await
    }

    fn alarm_period_ms(&self) -> Option<u64> {
        self.config.as_ref().ok().and_then(R::alarm_period_ms)
    }

    /// Performs the effects, feeds each result back to its key, and
    /// performs what those decisions asked for in turn, for at most
    /// [`EFFECT_ROUNDS_MAX`] rounds (in a deferred round, as many as its
    /// wakes allow); the alarm finishes anything left. Returns the caller's
    /// answer: `answer`, or what an answering check's decision gave.
    async fn perform(
        self: &Rc<Self>,
        key: &Ident,
        mut answer: Option<Result<R::Reply, BatonError>>,
        mut round: Vec<Asked<R::State>>,
        deferred: bool,
    ) -> Result<Option<Result<R::Reply, BatonError>>, JsValue> {
        let mut budget = Budget::full();
        let mut sent_all = Vec::new();
        let rounds = if deferred {
            WAKE_ATTEMPTS_PER_CALL_MAX as usize
        } else {
            EFFECT_ROUNDS_MAX
        };
        for _ in 0..rounds {
            round.retain(|asked| budget.allows(&asked.effect));
            if round.is_empty() {
                break;
            }
            let asked_by = answer.as_ref().and_then(|a| a.as_ref().ok());
            let (mut inputs, sent) = self.perform_round(key, &round, asked_by).await;
            if deferred {
                inputs.extend(statuses::<R>(sent).await);
            } else {
                sent_all.extend(sent);
            }
            round = self.commit_all(key, inputs, &mut answer).await?;
        }
        if !sent_all.is_empty() {
            self.defer(key, sent_all);
        }
        Ok(answer)
    }

    /// One round of effects, concurrently: the inputs their results feed
    /// back (each with whether it answers the caller), and the wakes sent.
    async fn perform_round(
        &self,
        key: &Ident,
        round: &[Asked<R::State>],
        asked_by: Option<&R::Reply>,
    ) -> (Vec<(R::Input, bool)>, Vec<Woke<R::State>>) {
        let scope = R::scope(key.as_str());
        let env = &self.base.env;
        let config = self.config.as_ref().ok();
        let turns: Vec<Option<Turn>> = round
            .iter()
            .map(|asked| match (&asked.effect, config) {
                (Effect::Wake(wake), Some(config)) => R::turn(config, key.as_str(), wake),
                _ => None,
            })
            .collect();
        let results = futures_util::future::join_all(
            round
                .iter()
                .zip(&turns)
                .map(|(asked, turn)| perform(env, scope, &asked.effect, turn.as_ref())),
        )
        .await;
        let mut inputs = Vec::new();
        let mut sent = Vec::new();
        for (asked, performed) in round.iter().zip(results) {
            match performed {
                Performed::Created(create, outcome) => {
                    inputs.push((R::created(create, outcome), false));
                }
                Performed::Checked(check, liveness) => {
                    inputs.push((R::checked(check, liveness, asked_by), check.answers));
                }
                Performed::Woke(wake, sent_wake) => {
                    let accepted = sent_wake.as_ref().is_some_and(Sent::accepted);
                    if let Some(input) = R::woken(&asked.by, wake, accepted) {
                        inputs.push((input, false));
                    }
                    sent.push(Woke {
                        wake: wake.clone(),
                        sent: sent_wake,
                        by: asked.by.clone(),
                    });
                }
                Performed::Terminated => {}
            }
        }
        (inputs, sent)
    }

    /// Feeds each input to its key, one decision after the other; returns
    /// what those decisions asked for.
    async fn commit_all(
        self: &Rc<Self>,
        key: &Ident,
        inputs: Vec<(R::Input, bool)>,
        answer: &mut Option<Result<R::Reply, BatonError>>,
    ) -> Result<Vec<Asked<R::State>>, JsValue> {
        let mut next = Vec::new();
        for (input, answers) in inputs {
            match self.commit(key, input, None).await? {
                Ok(transition) => {
                    M::decided(self);
                    if R::moves_alarm(&transition) {
                        self.arm_alarm().await?;
                    }
                    if answers {
                        *answer = Some(Ok(transition.reply));
                    }
                    next.extend(asked(transition.effects, transition.state));
                }
                Err(refusal) if answers => *answer = Some(Err(refusal)),
                Err(_) => {}
            }
        }
        Ok(next)
    }

    /// The deferred round of the wakes `sent`: their status
    /// [`HAND_ON_CHECK_DELAY_MS`] after the reply, in `waitUntil`. Should
    /// the object stop first, the alarm carries on (a woken instance stays
    /// to confirm until it does).
    fn defer(self: &Rc<Self>, key: &Ident, sent: Vec<Woke<R::State>>) {
        let driver = self.clone();
        let key = key.clone();
        let follow_up = js::promise(async move {
            worker::Delay::from(std::time::Duration::from_millis(HAND_ON_CHECK_DELAY_MS)).await;
            if let Err(error) = driver.after_wakes(&key, sent).await {
                worker::console_error!("baton: hand-on of key {key} failed: {error:?}");
            }
            Ok(JsValue::UNDEFINED)
        });
        // The raw binding, not `State::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.base.raw_state.wait_until(&follow_up);
    }

    async fn after_wakes(
        self: &Rc<Self>,
        key: &Ident,
        sent: Vec<Woke<R::State>>,
    ) -> Result<(), JsValue> {
        let inputs = statuses::<R>(sent).await;
        let mut no_caller = None;
        let round = self.commit_all(key, inputs, &mut no_caller).await?;
        self.perform(key, None, round, true).await?;
        Ok(())
    }

    /// The alarm: every key whose time has come is ticked, up to
    /// `R::KEYS_PER_ALARM_MAX`; the alarm is then set for the next, which is
    /// now if keys were left over.
    /// Returns the keys it found due (the Coordinator's alarm reports on
    /// them to the list).
    pub async fn alarm(self: &Rc<Self>) -> Result<Vec<String>, JsValue> {
        let keys = self
            .read(|sql| R::due_keys(sql, now_ms(), R::KEYS_PER_ALARM_MAX))
            .await?;
        for key in &keys {
            // Keys were stored after validation; one that no longer parses is skipped.
            let Ok(key) = Ident::parse("key", key) else {
                continue;
            };
            // A tick is never refused.
            let _ = self.run_in_turn(&key, R::tick(), None).await?;
        }
        // A periodic alarm is re-armed by the decisions that still need it.
        if self.alarm_period_ms().is_none() {
            self.arm_alarm().await?;
        }
        Ok(keys)
    }
}

/// What a gate-free decision came to ([`Driver::try_now`]).
pub enum Now<R: Rules> {
    /// No effect, no alarm: the caller's answer.
    Answered(R::Reply),
    /// Committed; its alarm and effects are still to run.
    Pending(TransitionOf<R>),
}

/// An effect, with the state of the decision that asked for it.
struct Asked<S> {
    effect: Effect,
    by: Rc<S>,
}

fn asked<S>(effects: Vec<Effect>, state: S) -> Vec<Asked<S>> {
    if effects.is_empty() {
        return Vec::new();
    }
    let by = Rc::new(state);
    effects
        .into_iter()
        .map(|effect| Asked {
            effect,
            by: by.clone(),
        })
        .collect()
}

/// A wake whose event went (or not), awaiting its status.
struct Woke<S> {
    wake: Wake,
    sent: Option<Sent>,
    by: Rc<S>,
}

/// The status of each woken instance, one after another, and what each
/// feeds back.
async fn statuses<R: Rules>(sent: Vec<Woke<R::State>>) -> Vec<(R::Input, bool)> {
    let mut inputs = Vec::new();
    for woke in sent {
        let liveness = status(woke.sent, &woke.wake).await;
        if let Some(input) = R::wake_checked(&woke.by, &woke.wake, liveness) {
            inputs.push((input, false));
        }
    }
    inputs
}

/// What one call may still do of the effects with a bound of their own.
struct Budget {
    wakes: u32,
    terminations: u32,
}

impl Budget {
    fn full() -> Budget {
        Budget {
            wakes: WAKE_ATTEMPTS_PER_CALL_MAX,
            terminations: TERMINATIONS_PER_CALL_MAX as u32,
        }
    }

    /// Whether `effect` is within the budget (and takes its share).
    fn allows(&mut self, effect: &Effect) -> bool {
        let left = match effect {
            Effect::Wake(_) => &mut self.wakes,
            Effect::Terminate(_) => &mut self.terminations,
            Effect::Create(_) | Effect::Check(_) | Effect::Tell(_) => return true,
        };
        let allowed = *left > 0;
        *left = left.saturating_sub(1);
        allowed
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

/// Sets the object's alarm `period_ms` from now, unless one is set.
async fn ensure_alarm(base: &ObjectBase, period_ms: u64) -> Result<(), JsValue> {
    let storage = base.state.storage();
    if storage.get_alarm().await?.is_none() {
        // workers-rs reads a bare integer as an offset from now, not a
        // time since the epoch; a Duration says so in the type.
        storage
            .set_alarm(std::time::Duration::from_millis(period_ms))
            .await?;
    }
    Ok(())
}

/// What an effect came to, with the effect.
enum Performed<'a> {
    Created(&'a Create, CreateOutcome),
    Checked(&'a Check, Liveness),
    /// The turn event sent, or not (`None`: no event, or its binding is
    /// gone).
    Woke(&'a Wake, Option<Sent>),
    Terminated,
}

/// Performs one effect; a create's or a wake's decision line.
async fn perform<'a>(
    env: &Env,
    scope: Scope<'_>,
    effect: &'a Effect,
    turn: Option<&Turn>,
) -> Performed<'a> {
    match effect {
        Effect::Create(create) => {
            let outcome = create_instance(env, create).await;
            log_created(scope, create, &outcome);
            Performed::Created(create, outcome)
        }
        Effect::Check(check) => Performed::Checked(check, liveness(env, check).await),
        Effect::Wake(wake) => Performed::Woke(wake, send_turn(env, scope, wake, turn).await),
        Effect::Terminate(terminate) => {
            // Best effort: the instance is already recorded as done with
            // (superseded), so one that survives is refused when it asks.
            let _ = stop(env, terminate).await;
            Performed::Terminated
        }
        // Only the serial queue decides tells, and it runs over D1 with no
        // Durable Object: its own shell (`serial_queue_d1`) performs them.
        Effect::Tell(_) => unreachable!("tells are the serial queue's, performed by its shell"),
    }
}

/// Sends a woken instance its turn event through its own Workflow, and
/// logs it; `None` when there is no event or the binding is gone from the
/// configuration (nothing is then taken on a guess: its status reads as
/// unknown).
async fn send_turn(env: &Env, scope: Scope<'_>, wake: &Wake, turn: Option<&Turn>) -> Option<Sent> {
    let turn = turn?;
    let workflow = Workflow::from_env(env, &wake.workflow).ok()?;
    let sent = Sent::send(&workflow, &wake.id, turn).await;
    decision_log::decision(
        Kind::Contended,
        scope,
        wake.id.as_str(),
        "woken",
        "handed the key",
        None,
    );
    Some(sent)
}

/// A woken instance's status, through the handle its event went through.
async fn status(sent: Option<Sent>, wake: &Wake) -> Liveness {
    match sent {
        Some(sent) => sent.liveness(&wake.id).await,
        None => Liveness::Unknown,
    }
}

async fn stop(env: &Env, terminate: &Terminate) -> Result<(), JsValue> {
    let workflow = Workflow::from_env(env, &terminate.workflow)?;
    workflow.instance(terminate.id.as_str()).await?.stop().await
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
        // A binding that vanished from the configuration, or a Baton
        // deployed before its Workflow (the first deploy's step 1): nothing
        // can be said, and nothing is taken on a guess. The operator is
        // told which binding is missing.
        Err(error) => {
            let (js::Thrown::Refused(message) | js::Thrown::Failed(message)) =
                js::Thrown::of(&error);
            worker::console_warn!("{message}");
            Liveness::Unknown
        }
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
