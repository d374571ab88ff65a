//! The one shape of every decision: a [`Transition`] (the reply, the row
//! writes, the effects it asks of the shell, what it needs of the alarm,
//! its decision-log lines, and the key's state once the writes are
//! applied), and the effects every concept's own effect type is made of,
//! as data. Everything a decision causes is in it: the shell decides
//! nothing after the decision, so the simulations judge all of it.
//!
//! Each concept's `decide(state, now_ms, input) -> Result<Transition, _>`
//! is pure. The shell's driver (`shell::driver`) loads the state, calls it,
//! commits the writes in one turn, then prints the lines ([`LogLine`]:
//! each concept picks its lines in one pure function of its core, as data
//! its own words format when a line prints), arms the alarm as [`Alarm`] says (the driver is its one writer),
//! replies, then performs the effects; what an effect came to re-enters
//! through the concept's `decide` as an input of its own. A refusal
//! carries no writes, no effects and no lines: nothing changes.
//!
//! Effects are typed per concept: each concept names the effects it asks
//! for in its own type (the Debouncer's is a [`Create`], Runs' a
//! [`Check`], the Coordinator's and the serial queue's an enum of
//! [`Check`], [`Wake`] and the Coordinator's [`Terminate`]), built from the
//! shared structs here, so every `match` over one is exhaustive with no
//! arm for an effect the concept never asks for. A concept that asks for
//! none uses [`NoEffect`].
//!
//! A decision may leave its caller's answer to the check it asks for: a
//! [`Check`] with `answers` set re-enters with the decision's reply (which
//! carries what the next decision needs), and the reply of the decision it
//! re-enters is the caller's (a claim that finds another claimant, an
//! acquire that finds a holder to check).

use crate::error::BatonError;
use crate::ident::InstanceId;
use std::borrow::Cow;

/// A caller's request of a concept's key, typed by its answer: the core's
/// decision of it on the key's `State`. Every concept's calls are this one
/// trait (the rate limit's through its own `answer` form), so the shell's
/// driver runs them all one way, and each object's method gets the answer
/// of its own call (no reply meant for another method to match).
pub trait Call<State> {
    type Answer;
    /// The concept's decision: what the driver commits and carries out.
    type Transition;
    /// The answer, and the transition. A refusal (`Err`) comes with no
    /// writes and no effects: nothing changes.
    fn decide(
        self,
        state: &State,
        now_ms: u64,
    ) -> Result<(Self::Answer, Self::Transition), BatonError>;
}

/// A decision of a concept whose replies are `Reply`, whose storage changes
/// are `Write`s, whose state (or the part a decision reads) is `State` and
/// whose effects are `Effect`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition<Reply, Write, State, Effect = NoEffect, Why = Text> {
    pub reply: Reply,
    /// Row-level changes, committed together before anything else.
    pub writes: Vec<Write>,
    /// What to do with Workflow instances once the writes are committed.
    pub effects: Vec<Effect>,
    /// What the decision needs of the object's alarm.
    pub alarm: Alarm,
    /// Its decision-log lines (contract §9), in order: the shell prints
    /// them as they are once the writes are committed, and picks none.
    pub log: Lines<Why>,
    /// The state once the writes are applied: the invariants are checked
    /// on it, and the simulations check that applying the writes gives it.
    pub state: State,
}

/// What a call that may need a status check decided: its answer, or what
/// waits on the answering check (a [`Check`] with `answers` set) its
/// transition asks for: the shell hands that check's status to it, and
/// the decision it then makes answers the caller (`shell::driver`'s
/// `Then`). The answer and the continuation are apart: no reply carries
/// a continuation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<A, K> {
    Answer(A),
    Check(K),
}

/// The continuation of a call that never waits on a check: a [`Step`] of
/// it is always its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCheck {}

/// What a decision needs of its object's alarm, decided by the core: the
/// shell decides nothing about it. One alarm serves every key of an
/// object; the driver, its one writer, arms it the object's way after any
/// decision that does not [`Alarm::Keep`] it: at the earliest time any key
/// needs, after the commit; or a periodic sweep, in the decision's own
/// turn with its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alarm {
    /// Nothing changes for the alarm: the key needs it no sooner than
    /// before (an early alarm finds nothing due, and is a no-op).
    Keep,
    /// The key next needs the alarm at this time.
    At(u64),
    /// The key needs the alarm no more.
    Clear,
    /// The key needs the object's periodic sweep (the Coordinator's: its
    /// holder checks, a list report it owes, terminations owed), armed one
    /// period from now unless one is known to be set.
    Periodic,
}

impl Alarm {
    /// The alarm of a key whose next time is `at_ms`, or that has none.
    pub fn at_or_clear(at_ms: Option<u64>) -> Alarm {
        at_ms.map_or(Alarm::Clear, Alarm::At)
    }

    /// The time the key needs the alarm at, if the decision set one.
    pub fn at_ms(self) -> Option<u64> {
        match self {
            Alarm::At(at_ms) => Some(at_ms),
            Alarm::Keep | Alarm::Clear | Alarm::Periodic => None,
        }
    }
}

/// The effect type of a concept whose decisions ask for none: it has no
/// values, so a `match` over one has no arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEffect {}

/// An instance for the shell to send a turn event, then ask its status:
/// whether the engine accepted the event and how alive the instance is
/// re-enter. The status is asked after the reply, once the woken instance
/// has had `HAND_ON_CHECK_DELAY_MS` to act on the event (`shell::wake`).
/// `Event` is what the concept says in the event: the Coordinator's
/// hand-off (`coordinator::Handed`), the serial queue's news
/// (`serial_queue::Event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake<Event> {
    pub id: InstanceId,
    /// The Workflow binding to reach it through.
    pub workflow: String,
    pub event: Event,
}

/// A decision-log line, as data: the shell prints it as it is
/// (`shell::decision_log`) when the configured level prints its kind. Its
/// reason is data too (`Why`, each concept's own type, whose `Display` is
/// its words): a line is worded only when it prints, so a routine line at
/// a level that prints none costs no formatting and no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine<Why = Text> {
    pub kind: LogKind,
    /// The instance the decision is about; `None` for an operator's
    /// decision on the key as a whole (§11's pause, resume and limit).
    pub instance: Option<InstanceId>,
    pub decision: &'static str,
    pub reason: Why,
    /// How long the instance has waited so far, if it waits.
    pub waited_ms: Option<u64>,
    /// §9a: what a contended decision's data point carries besides the
    /// line, taken when it was decided (so the shell prints after the
    /// write, whatever the write does with the state).
    pub figures: Figures,
}

/// A reason already in words: fixed text (no allocation), or text a
/// concept formats when it decides (the serial queue's, off the hot path).
pub type Text = Cow<'static, str>;

/// What a decision's data point carries besides its line (§9a): the
/// instance's Workflow, how long the hold it ended lasted, and the key's
/// holders, waiters and limit as the decision left them; 0 (or none)
/// where a figure does not apply or the concept does not keep it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    pub workflow: Option<String>,
    /// The wait this decision ended, when its line names none.
    pub waited_ms: Option<u64>,
    pub held_ms: u64,
    pub holders: u32,
    pub waiting: u32,
    pub limit: u32,
}

/// A decision's lines, in order. Most decisions print one line or none:
/// those are held without a `Vec` (no allocation per decision).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Lines<Why = Text> {
    #[default]
    None,
    One(LogLine<Why>),
    Many(Vec<LogLine<Why>>),
}

impl<Why> Lines<Why> {
    pub fn new() -> Self {
        Lines::None
    }

    pub fn push(&mut self, line: LogLine<Why>) {
        *self = match std::mem::take(self) {
            Lines::None => Lines::One(line),
            Lines::One(first) => Lines::Many(vec![first, line]),
            Lines::Many(mut lines) => {
                lines.push(line);
                Lines::Many(lines)
            }
        };
    }
}

impl<Why> std::ops::Deref for Lines<Why> {
    type Target = [LogLine<Why>];
    fn deref(&self) -> &[LogLine<Why>] {
        match self {
            Lines::None => &[],
            Lines::One(line) => std::slice::from_ref(line),
            Lines::Many(lines) => lines,
        }
    }
}

impl<'a, Why> IntoIterator for &'a Lines<Why> {
    type Item = &'a LogLine<Why>;
    type IntoIter = std::slice::Iter<'a, LogLine<Why>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<Why> From<Option<LogLine<Why>>> for Lines<Why> {
    fn from(line: Option<LogLine<Why>>) -> Self {
        line.map_or(Lines::None, Lines::One)
    }
}

impl<Why> From<LogLine<Why>> for Lines<Why> {
    fn from(line: LogLine<Why>) -> Self {
        Lines::One(line)
    }
}

impl<Why> FromIterator<LogLine<Why>> for Lines<Why> {
    fn from_iter<I: IntoIterator<Item = LogLine<Why>>>(lines: I) -> Self {
        let mut all = Lines::None;
        for line in lines {
            all.push(line);
        }
        all
    }
}

/// Whether a decision is worth a line at the default level (`BATON_LOG`,
/// contract §9).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LogKind {
    /// Makes an instance wait, hands a key, slot or group on, supersedes,
    /// coalesces, skips, refuses or times something out, finds an instance
    /// dead, creates or fails to create an instance, or denies permits.
    Contended,
    /// Anything else: an uncontended grant or release, a holder's repeated
    /// acquire, a heartbeat, a debounce call that only moves its fire time,
    /// a run's completion. A line per call on the hot path costs more than
    /// the call's own reads (docs/benchmarks.md), so these print only at `all`.
    Routine,
    /// A user's mistake Baton worked around (§1a: an instance found
    /// through another binding than the one it was registered with):
    /// printed as a warning at every level but `off`.
    Warn,
}

/// An instance for the shell to terminate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminate {
    pub id: InstanceId,
    pub workflow: String,
}

/// An instance whose liveness the shell asks the Workflow binding for,
/// after the writes are committed (outside the gate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub id: InstanceId,
    /// The Workflow binding to ask.
    pub workflow: String,
    /// Whether the caller's answer is the reply of the decision the result
    /// re-enters, rather than the reply of the decision that asked.
    pub answers: bool,
}

/// An instance for the shell to create, after the writes are committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Create {
    pub id: InstanceId,
    /// The Workflow binding to create it through.
    pub workflow: String,
    /// Its params, as JSON text.
    pub params: Option<String>,
    /// 1 for the first try.
    pub attempt: u32,
}

/// What a create of an instance came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// The id is taken: an earlier attempt succeeded (a re-fire after a
    /// crash, a reply lost on the way back) or a caller chose a used id.
    /// Either way, the start is done and starts nothing twice.
    AlreadyExists,
    /// Anything else; retried with backoff.
    Failed(String),
}
