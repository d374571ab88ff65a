//! What a Durable Object class tells the driver about its concept: the
//! core's types and decision ([`Rules`]), and what it has only if it needs
//! it: loading straight from storage ([`Stored`]) or through a [`Memory`],
//! and an alarm ([`Sweep`]).

use super::{Driver, Perform};
use crate::error::BatonError;
use crate::shell::decision_log::{self, Scope};
use crate::shell::sqlite::ObjectSql;
use crate::transition::{self, Transition};
use std::borrow::Cow;
use std::fmt::Display;
use std::rc::Rc;
use worker::Env;

/// A concept as the driver runs it: the pure core's types and functions.
pub trait Rules: Sized + 'static {
    /// The Worker's variables this class reads, parsed once per object.
    type Config: 'static;
    /// What re-enters a key's decision: an effect's result, the alarm's
    /// tick ([`Rules::decide`]); a caller's request is a [`Call`] instead.
    type Input: 'static;
    /// What a decision of an [`Input`](Rules::Input) replies: read by the
    /// effects it asks for, answered to nobody.
    type Reply: 'static;
    /// What a load reads by: the input, for a concept whose core plans its
    /// reads by it; `()` for one that loads a key whole.
    type Plan: Clone + 'static;
    type Write: 'static;
    /// The key's state a decision leaves (the part of it the decision
    /// read, with its writes applied): its invariants are checked on it.
    type State: 'static;
    /// What a decision reads, as the load gives it: the key's state itself
    /// for a concept that loads it whole or as its plan names; or a reader
    /// of the key's rows over the object's storage (Runs': each call reads
    /// the part it needs, by its type).
    type Reads<'a>;
    /// What its decisions ask of the shell after the commit.
    type Effect: Perform<Self>;
    /// Why a decision printed its line, as data: its concept's words
    /// (`Display`), written only when the line prints.
    type Why: Display + 'static;
    /// How the object's alarm finds its work; `None`, the default, for an
    /// object whose decisions never need the alarm.
    const ALARM: Option<Sweep<Self>> = None;

    fn config(env: &Env) -> Result<Self::Config, String>;
    /// The schema ladder, run once per object life.
    fn migrate(sql: &ObjectSql);
    /// What the state an input decides on is loaded by.
    fn plan(input: &Self::Input) -> Cow<'_, Self::Plan>;
    /// The core's decision of an input. The state is the driver's to give
    /// away: it is dropped after (the Coordinator's decision moves its
    /// summary out).
    fn decide(
        state: &mut Self::Reads<'_>,
        now_ms: u64,
        input: Self::Input,
    ) -> Result<TransitionOf<Self>, BatonError>;
    /// Panics on a broken invariant of the committed state: the object then
    /// resets and reloads what was committed. On in release builds.
    fn assert_invariants(state: &Self::State);
    /// What the decision log names a key as.
    fn scope(key: &str) -> Scope<'_>;
    /// Prints a committed decision's log lines as they are, in the key's
    /// [`Rules::scope`], each data point (§9a) with the figures its core
    /// took into it; the shell picks no line and adds nothing.
    fn print(key: &str, transition: &TransitionOf<Self>) {
        for line in &transition.log {
            decision_log::line(Self::scope(key), line);
        }
    }
}

/// One of a concept's calls, typed by its answer: what its state is
/// loaded by, and the core's decision of it. Each method of an object
/// gets the answer of its own call, so no shell matches a reply another
/// method could have been given.
pub trait Call<R: Rules>: Sized + 'static {
    type Answer: 'static;
    fn plan(&self) -> Cow<'_, R::Plan>;
    /// The answer, and the transition the driver carries out (its reply
    /// what the call's effects read).
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<(Self::Answer, TransitionOf<R>), BatonError>;
}

/// Every core call ([`transition::Call`], the one trait each concept's
/// calls are) of a concept that loads a key whole (no plan: the
/// Debouncer, the RateLimiter, the BusyList) is a call of its object.
impl<R, C> Call<R> for C
where
    R: Rules<Plan = ()>,
    for<'a> R: Rules<Reads<'a> = <R as Rules>::State>,
    C: transition::Call<R::State, Transition = TransitionOf<R>> + 'static,
    C::Answer: 'static,
{
    type Answer = C::Answer;
    fn plan(&self) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<(C::Answer, TransitionOf<R>), BatonError> {
        transition::Call::decide(self, state, now_ms)
    }
}

/// What the driver decides in one turn: a caller's [`Call`], or an
/// [`Input`](Rules::Input) re-entering ([`Reentry`]).
pub(super) trait Decision<R: Rules>: Sized + 'static {
    type Answer: 'static;
    fn plan(&self) -> Cow<'_, R::Plan>;
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<(Self::Answer, TransitionOf<R>), BatonError>;
}

/// A caller's call, as the driver decides it.
pub(super) struct ByCall<C>(pub(super) C);

impl<R: Rules, C: Call<R>> Decision<R> for ByCall<C> {
    type Answer = C::Answer;
    fn plan(&self) -> Cow<'_, R::Plan> {
        self.0.plan()
    }
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<(C::Answer, TransitionOf<R>), BatonError> {
        self.0.decide(state, now_ms)
    }
}

/// An [`Input`](Rules::Input) of `R`, as a call whose answer is nobody's
/// (an alarm's tick, an effect's result): its reply goes to its effects.
pub(super) struct Reentry<R: Rules>(pub(super) R::Input);

impl<R: Rules> Decision<R> for Reentry<R> {
    type Answer = ();
    fn plan(&self) -> Cow<'_, R::Plan> {
        R::plan(&self.0)
    }
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<((), TransitionOf<R>), BatonError> {
        Ok(((), R::decide(state, now_ms, self.0)?))
    }
}

/// A concept whose state the driver reads and writes straight from
/// storage, with no [`Memory`] in front ([`Uncached`]).
pub trait Stored: Rules {
    fn load<'a>(sql: &'a ObjectSql, key: &'a str, plan: &Self::Plan) -> Self::Reads<'a>;
    /// Commits a transition's writes (and its key's next alarm time).
    fn write(sql: &ObjectSql, key: &str, transition: &TransitionOf<Self>);
}

/// How an object's alarm finds its work.
pub struct Sweep<R: Rules> {
    /// Keys one alarm ticks before it re-arms for the rest.
    pub keys_per_alarm_max: u32,
    /// The keys whose time has come, at most `limit` of them.
    pub due_keys: fn(sql: &ObjectSql, now_ms: u64, limit: u32) -> Vec<String>,
    /// What the alarm feeds a due key.
    pub tick: fn() -> R::Input,
    pub next: NextAlarm<R>,
}

/// When the object's alarm next runs.
pub enum NextAlarm<R: Rules> {
    /// At the earliest time any key needs it, set again after every
    /// decision that moves a key's time, and after every alarm.
    Earliest(fn(&ObjectSql) -> Option<u64>),
    /// A sweep one period (from the variables) from now, while decisions
    /// ask for it ([`Alarm::Periodic`](crate::transition::Alarm::Periodic)).
    Every(fn(&R::Config) -> u64),
}

/// A transition of `R`'s concept.
pub type TransitionOf<R> = Transition<
    <R as Rules>::Reply,
    <R as Rules>::Write,
    <R as Rules>::State,
    <R as Rules>::Effect,
    <R as Rules>::Why,
>;

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
    fn load<'a>(&mut self, sql: &'a ObjectSql, key: &'a str, plan: &R::Plan) -> R::Reads<'a>;
    /// Commits the transition's writes. It may keep what the transition's
    /// state holds for the next load, taking it out of the state when no
    /// effect will read it (the Coordinator's summary, moved, not cloned).
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &mut TransitionOf<R>);
    /// After each committed decision of a call, out of its turn: work the
    /// decisions left to send after the reply, in `waitUntil` (the
    /// Coordinator's list reports). The default sends nothing.
    fn decided(driver: &Rc<Driver<R, Self>>) {
        let _ = driver;
    }
}

/// No memory: every load and write goes straight to storage ([`Stored`]).
#[derive(Default)]
pub struct Uncached;

impl<R: Stored> Memory<R> for Uncached {
    fn load<'a>(&mut self, sql: &'a ObjectSql, key: &'a str, plan: &R::Plan) -> R::Reads<'a> {
        R::load(sql, key, plan)
    }
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &mut TransitionOf<R>) {
        R::write(sql, key, transition);
    }
}
