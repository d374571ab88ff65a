//! The one loop every Durable Object class runs, in the fixed order every
//! shell entry point keeps: decode → load → decide → write → arm the alarm → reply, then
//! the effects, whose results re-enter through the next decision (the
//! status of a check a call's answer waits on comes before the reply).
//!
//! A class says what its concept is by implementing [`Rules`] (its types,
//! the core's `decide` of what re-enters, its invariants) and its [`Call`]s
//! (each caller's request, typed by its answer: [`Driver::answer`] returns
//! that answer, so no method matches a reply meant for another; a call
//! that may wait on a status check answers a [`Step`], settled by
//! [`Driver::answer_step`] or [`Driver::settle`], `step.rs`), and
//! holds a [`Driver`] of it; the driver does the rest the same way for
//! every class. A call's answer is split off right after its decision:
//! the effects, the alarm and the writes are one copy of code per class,
//! not per call (P6). What a class has
//! only if it needs it is apart: [`Stored`] (loading and writing straight
//! from storage, for a class with no [`Memory`] in front of it),
//! [`Rules::Effect`] (its effects, each performed as its [`Perform`] says;
//! [`NoEffect`] for none) and [`Rules::ALARM`] (how its alarm finds work;
//! none by default). Load, decide and write happen in one synchronous
//! turn under the input gate, so nothing is awaited between a read and the
//! write that depends on it; the effects come after the commit, so a reset
//! between the two only delays an effect until the alarm finds it due.
//! What an effect is to the driver is in [`effect`], performing them and
//! what re-enters in [`perform`], the alarm in [`alarm`]; the RPC glue that
//! decodes a call and encodes its answer is `shell::rpc`.
//!
//! # The alarm
//! After every decision whose [`Alarm`] is not `Keep`, the driver arms the
//! alarm the object's way ([`Sweep::next`]): at the earliest time any key
//! needs it ([`NextAlarm::Earliest`]), after the commit; or for a periodic
//! sweep (the Coordinator's, [`NextAlarm::Every`]) one period from now,
//! in the decision's own turn with its writes, unless one is known to be
//! set; a periodic alarm leaves re-arming to the decisions it runs. The
//! driver is the alarm's one writer (`alarm.rs`): what a decision needs of
//! it is the core's to say.
//!
//! # In the commit's turn
//! [`Driver::answer_in_turn`] also runs a class's own step inside the caller's
//! commit turn, after the writes (the Runs object answers its parked
//! long-polls there, so that no wait registered before a commit misses it).

mod alarm;
mod effect;
mod perform;
mod rules;
mod step;

pub use self::effect::{Bound, Perform, Performed, Performing, Woke};
use self::rules::{ByCall, Decision, Reentry};
pub use self::rules::{
    Call, InTurn, Memory, NextAlarm, Rules, Stored, Sweep, TransitionOf, Uncached,
};
pub use self::step::{Step, Then, Waiting};
pub use crate::transition::NoEffect;

use super::gate::under_gate;
use super::js::now_ms;
use super::object::ObjectBase;
use super::sqlite::ObjectSql;
use crate::error::BatonError;
use crate::ident::Ident;
use crate::transition::Alarm;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The shell of one Durable Object of concept `R`: its storage and
/// environment, its variables as parsed when it started, and its memory.
pub struct Driver<R: Rules, M: Memory<R> = Uncached> {
    pub base: ObjectBase,
    config: Result<R::Config, String>,
    memory: RefCell<M>,
    /// A periodic alarm ([`NextAlarm::Every`]) is known to be set: this
    /// object set it or saw it, and it has not run since. Only the object
    /// sets or runs its alarm, so while this holds, ensuring it needs no
    /// `getAlarm` (a storage round trip on every call that needs the
    /// alarm: each enqueue behind a holder, each hand-off).
    alarm_set: Cell<bool>,
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
            alarm_set: Cell::new(false),
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

    /// An input for `key` that answers nobody (the alarm's tick),
    /// committed; then its alarm and its effects, every result re-entering
    /// before it ends. A refusal writes nothing and performs nothing.
    pub async fn tick(self: &Rc<Self>, key: &Ident, input: R::Input) -> Result<(), JsValue> {
        if let Ok(((), transition)) = self.commit(key, Reentry(input), None).await? {
            self.carry_on_for_nobody(key, transition).await?;
        }
        Ok(())
    }

    /// One call for `key`, committed; then the alarm and the effects; then
    /// the call's answer, or the caller's error for its refusal (a refusal
    /// writes nothing and performs nothing).
    // Not an `async fn` of its own: the same future as `answer_in_turn`,
    // so the WASM holds one copy of the loop per call type (P6).
    pub fn answer<'a, C: Call<R>>(
        self: &'a Rc<Self>,
        key: &'a Ident,
        call: C,
    ) -> impl Future<Output = Result<C::Answer, JsValue>> + 'a {
        self.answer_in_turn(key, call, None)
    }

    /// [`Driver::answer`], with `in_turn` run in the commit's turn.
    pub async fn answer_in_turn<C: Call<R>>(
        self: &Rc<Self>,
        key: &Ident,
        call: C,
        in_turn: Option<InTurn<R>>,
    ) -> Result<C::Answer, JsValue> {
        let (answer, transition) = self
            .commit(key, ByCall(call), in_turn)
            .await?
            .map_err(|refusal| super::js::to_js_error(&refusal))?;
        // No call waits on a check: its effects answer nobody.
        let _ = self.carry_on(key, transition, None).await?;
        Ok(answer)
    }

    /// A call that may wait on a status check ([`Step`]) for `key`,
    /// committed; then its answer, once its effects are under way and, if
    /// it waits on a check, once the check's status has decided it.
    pub async fn answer_step<A: 'static, K: Then<R, A>, C: Call<R, Answer = Step<A, K>>>(
        self: &Rc<Self>,
        key: &Ident,
        call: C,
    ) -> Result<A, JsValue> {
        let (step, transition) = self
            .commit(key, ByCall(call), None)
            .await?
            .map_err(|refusal| super::js::to_js_error(&refusal))?;
        self.settle(key, step, transition).await
    }

    /// A committed step's alarm and effects; then its answer: the one it
    /// gave, or the one its answering check's status decided (or that
    /// decision's refusal, as the caller's error).
    pub async fn settle<A: 'static, K: Then<R, A>>(
        self: &Rc<Self>,
        key: &Ident,
        step: Step<A, K>,
        transition: TransitionOf<R>,
    ) -> Result<A, JsValue> {
        let to_js = |refusal: BatonError| super::js::to_js_error(&refusal);
        match step {
            Step::Answer(answer) => {
                self.carry_on(key, transition, None).await?.map_err(to_js)?;
                Ok(answer)
            }
            Step::Check(then) => {
                let answer = Rc::new(Cell::new(None));
                let waiting = then.then(answer.clone());
                (self.carry_on(key, transition, Some(waiting)).await?).map_err(to_js)?;
                answer
                    .take()
                    .ok_or_else(|| js_sys::Error::new("a checked call left no answer").into())
            }
        }
    }

    /// Load, decide, write: one synchronous turn under the gate.
    async fn commit<D: Decision<R>>(
        self: &Rc<Self>,
        key: &Ident,
        call: D,
        in_turn: Option<InTurn<R>>,
    ) -> Result<Result<(D::Answer, TransitionOf<R>), BatonError>, JsValue> {
        let driver = self.clone();
        let key = key.clone();
        under_gate(&self.base.raw_state, move || {
            let decided = driver.decide(&key, call)?;
            if let Some(in_turn) = in_turn {
                in_turn(&driver.base.sql, &decided.1);
            }
            Ok(decided)
        })
        .await
    }

    /// Load, decide, check, write, print the lines, arm a periodic alarm:
    /// synchronous, so nothing can interleave.
    fn decide<D: Decision<R>>(
        &self,
        key: &Ident,
        call: D,
    ) -> Result<(D::Answer, TransitionOf<R>), BatonError> {
        self.ensure_schema();
        let mut memory = self.memory.borrow_mut();
        let mut state = memory.load(&self.base.sql, key.as_str(), &call.plan());
        let (answer, mut transition) = call.decide(&mut state, now_ms())?;
        self.write(&mut memory, key, &mut transition);
        Ok((answer, transition))
    }

    /// Writes a decision and checks the state it leaves (the part of
    /// [`Driver::decide`] no call's type changes: one copy, P6).
    fn write(&self, memory: &mut M, key: &Ident, transition: &mut TransitionOf<R>) {
        // Before the write, which may move the state into the memory: a
        // broken state is then never committed.
        R::assert_invariants(&transition.state);
        memory.write(&self.base.sql, key.as_str(), transition);
        // After it: a write that throws leaves no line for a decision that
        // was not committed. The lines read nothing the write moves (their
        // §9a figures were taken when the core decided).
        R::print(key.as_str(), transition);
        self.arm_in_turn(&transition.alarm);
    }

    /// One call for `key`, committed in the caller's turn and outside
    /// the gate: the decision is synchronous (so is the SQL API), so no
    /// other request can interleave with it, and the gate's Promise,
    /// closure and microtasks were a fixed cost on every call (measured:
    /// bench/subset.mjs l1, bench/profile.mjs). A broken invariant traps
    /// the module; the JS class then aborts the object, as the gate would.
    /// Its answer, and whether the decision asked for no effect and left
    /// the alarm alone (the RateLimiter's always, the Coordinator's
    /// uncontended acquire and release); else also the committed
    /// transition, for [`Driver::carry_on`].
    pub fn try_now<A, K, C: Call<R, Answer = Step<A, K>>>(
        &self,
        key: &Ident,
        call: C,
    ) -> Result<Now<A, K, R>, BatonError> {
        let (step, transition) = self.decide(key, ByCall(call))?;
        let quiet = transition.effects.is_empty() && self.alarm_in_place(&transition.alarm);
        Ok(match step {
            Step::Answer(answer) if quiet => Now::Answered(answer),
            step => Now::Pending(step, transition),
        })
    }

    /// [`Driver::try_now`] for a class whose decisions never have effects
    /// nor need the alarm (the RateLimiter).
    pub fn decide_now<C: Call<R>>(&self, key: &Ident, call: C) -> Result<C::Answer, BatonError> {
        let (answer, transition) = self.decide(key, ByCall(call))?;
        assert!(
            transition.effects.is_empty() && transition.alarm == Alarm::Keep,
            "a decision taken outside the gate asked for an effect or the alarm"
        );
        Ok(answer)
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
}

/// What a gate-free decision came to ([`Driver::try_now`]).
pub enum Now<A, K, R: Rules> {
    /// No effect, no alarm: the caller's answer.
    Answered(A),
    /// Committed, with its step; its alarm and effects are still to run
    /// ([`Driver::settle`]), and perhaps the check its answer waits on.
    Pending(Step<A, K>, TransitionOf<R>),
}
