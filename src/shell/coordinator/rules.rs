//! The Coordinator concept as the shell's driver runs it ([`Coordinator`]'s
//! [`Rules`]): what a decision reads ([`Keyed`]), the core's decision,
//! its invariants, and the holder-check sweep of its alarm.

use crate::busy::reporter::Due;
use crate::coordinator::{
    self, AcquireCheck, AcquireReply, EnqueueCheck, EnqueueReply, Holder, Input, Reply, Settings,
    View, Write,
};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::KEYS_CHECKED_PER_ALARM_MAX;
use crate::shell::config::WorkflowConfig;
use crate::shell::decision_log::Scope;
use crate::shell::driver::{Call, NextAlarm, Rules, Sweep, Then, TransitionOf, Waiting};
use crate::shell::found::Found;
use crate::shell::sqlite::ObjectSql;
use crate::sql::Counted;
use crate::transition::Transition;
use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use worker::Env;

/// The Coordinator concept as the driver runs it.
pub struct Coordinator;

/// What a decision reads: the key's view, with the key and the settings it
/// is decided by.
pub struct Keyed {
    pub(super) key: String,
    pub(super) view: View,
    pub(super) settings: Rc<Settings>,
    /// In a transition's state, the report its key's list entry is due
    /// (`Due::Nothing` as loaded), for `Summaries::write` to queue.
    pub(super) report: Due,
    /// When the decision was taken (0 as loaded).
    pub(super) decided_ms: u64,
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
    /// The core plans its reads by the input (`coordinator::next_read`).
    type Plan = Input;
    type Write = Write;
    type State = Keyed;
    type Reads<'a> = Keyed;
    type Effect = coordinator::Effect;
    type Why = coordinator::log::Reason;
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
        coordinator::migrate(sql);
    }
    fn plan(input: &Input) -> Cow<'_, Input> {
        Cow::Borrowed(input)
    }
    /// The core's decision, on the loaded view itself (its summary moves
    /// into the transition's state); its report goes with its state.
    fn decide(
        state: &mut Keyed,
        now_ms: u64,
        input: Input,
    ) -> Result<TransitionOf<Self>, BatonError> {
        let t = coordinator::decide_in_place(&mut state.view, &state.settings, now_ms, input)?;
        Ok(keyed(state, t, now_ms))
    }
    /// On in release builds too; it reads only what the decision loaded.
    fn assert_invariants(state: &Keyed) {
        coordinator::assert_view(&state.view);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Key(key)
    }
}

/// Each of the core's calls is the object's, answered with its own type,
/// decided as [`Rules::decide`] decides an input.
impl<C: coordinator::Call + 'static> Call<Coordinator> for C
where
    C::Answer: 'static,
{
    type Answer = C::Answer;
    /// The core plans its reads by the call's input.
    fn plan(&self) -> Cow<'_, Input> {
        Cow::Owned(self.input())
    }
    fn decide(
        self,
        state: &mut Keyed,
        now_ms: u64,
    ) -> Result<(C::Answer, TransitionOf<Coordinator>), BatonError> {
        let (answer, t) = coordinator::decide_call(&mut state.view, &state.settings, now_ms, self)?;
        Ok((answer, keyed(state, t, now_ms)))
    }
}

/// An enqueue waiting on its candidate's check: the check's liveness
/// decides its second phase.
impl Then<Coordinator, EnqueueReply> for EnqueueCheck {
    fn then(self, answer: Rc<Cell<Option<EnqueueReply>>>) -> Waiting<Coordinator> {
        let then = |found: Found| coordinator::EnqueueChecked {
            request: self.request,
            candidate: self.candidate,
            liveness: found.liveness(),
        };
        Waiting::new(then, answer)
    }
}

/// An acquire waiting on its holder's check: what the binding answered
/// decides its second phase (§10a: the answer is kept).
impl Then<Coordinator, AcquireReply> for AcquireCheck {
    fn then(self, answer: Rc<Cell<Option<AcquireReply>>>) -> Waiting<Coordinator> {
        let then = |found: Found| coordinator::AcquireChecked {
            request: self.request,
            holder: self.holder,
            answer: found.answer,
        };
        Waiting::new(then, answer)
    }
}

/// The core's transition as the driver carries it out: its state the
/// view it leaves, with the key, the settings and the report it is due.
fn keyed(state: &Keyed, t: coordinator::Transition, now_ms: u64) -> TransitionOf<Coordinator> {
    Transition {
        reply: t.reply,
        writes: t.writes,
        effects: t.effects,
        alarm: t.alarm,
        log: t.log.into(),
        state: Keyed {
            key: state.key.clone(),
            view: t.state,
            settings: state.settings.clone(),
            report: t.report,
            decided_ms: now_ms,
        },
    }
}
