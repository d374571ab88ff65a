//! What the driver does after a commit: performs the decision's effects,
//! feeds each result back to its key, and performs what those decisions
//! ask for in turn. Each concept's effect type says how one of its effects
//! is performed and what its result feeds back ([`Perform`]), through the
//! shared steps of `shell::effects` and `shell::wake`:
//! - a create's outcome re-enters (the Debouncer's starts);
//! - a check's status re-enters as an input of its concept, or, for an
//!   answering check (`answers` set), goes to the call waiting on it
//!   (`step.rs`: the caller's [`Waiting`] call), whose decision answers
//!   the caller;
//! - a wake's turn event is sent, and whether the engine accepted it may
//!   re-enter at once; the instance's status is asked
//!   `HAND_ON_CHECK_DELAY_MS` later, after the reply, in `waitUntil`, and
//!   what it feeds back ([`Woke`]) re-enters (wakes that round's decisions
//!   ask for are checked at once, within [`WAKE_ATTEMPTS_PER_CALL_MAX`]);
//! - a termination is best effort, at most [`TERMINATIONS_PER_CALL_MAX`]
//!   a call; nothing re-enters.
//!
//! The reply waits for the effects, but not for what their results feed
//! back unless it answers the caller (the alarm, answering nobody, waits
//! for all): a turn event's acceptance is recorded after the reply, in
//! `waitUntil` (§1b: the holder is told by the event; until recorded the
//! hand-over stays unconfirmed, and the holder-check alarm, armed before
//! the reply, sends an event again should the object stop first).
//!
//! Each round of effects runs concurrently; their results re-enter one
//! after the other, each in a turn of its own, and what those decisions ask
//! for is the next round, for at most [`EFFECT_ROUNDS_MAX`] rounds. Past
//! any bound, the alarm finishes the work (a woken instance stays to
//! confirm, a create stays due).

use super::effect::{asked, Asked};
use super::step::{Caller, Waiting};
use super::{Bound, Driver, Memory, Perform, Performing, Reentry, Rules, TransitionOf, Woke};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::{EFFECT_ROUNDS_MAX, TERMINATIONS_PER_CALL_MAX, WAKE_ATTEMPTS_PER_CALL_MAX};
use crate::shell::found::{found, Found};
use crate::shell::wake;
use crate::transition::{Alarm, Transition};
use std::rc::Rc;
use wasm_bindgen::JsValue;

impl<R: Rules, M: Memory<R>> Driver<R, M> {
    /// A committed transition's alarm and effects, for a caller answered
    /// already, or (`waiting`) waiting on the answering check the
    /// transition asked for. The refusal of the waiting call's decision is
    /// the caller's.
    pub(super) async fn carry_on(
        self: &Rc<Self>,
        key: &Ident,
        transition: TransitionOf<R>,
        waiting: Option<Waiting<R>>,
    ) -> Result<Result<(), BatonError>, JsValue> {
        let caller = waiting.map_or(Caller::Answered, Caller::Waiting);
        let caller = self.carry(key, transition, caller).await?;
        // What the decisions made due goes once the effects are under way
        // (a turn event before a list report: on a shared thread the first
        // queued goes first).
        M::decided(self);
        match caller {
            Caller::Answered | Caller::Nobody => Ok(Ok(())),
            Caller::Refused(refusal) => Ok(Err(refusal)),
            // Every check is performed in the first round (no bound counts
            // them), so its status always comes.
            Caller::Waiting(_) => {
                Err(js_sys::Error::new("a call's status check never reported").into())
            }
        }
    }

    /// A committed transition's alarm and effects, answering nobody (the
    /// alarm's ticks): every result re-enters before it ends.
    pub(super) async fn carry_on_for_nobody(
        self: &Rc<Self>,
        key: &Ident,
        transition: TransitionOf<R>,
    ) -> Result<(), JsValue> {
        self.carry(key, transition, Caller::Nobody).await?;
        M::decided(self);
        Ok(())
    }

    async fn carry(
        self: &Rc<Self>,
        key: &Ident,
        transition: TransitionOf<R>,
        caller: Caller<R>,
    ) -> Result<Caller<R>, JsValue> {
        if transition.alarm != Alarm::Keep {
            self.arm_alarm().await?;
        }
        let Transition { effects, state, .. } = transition;
        let round = asked::<R>(effects, state);
        self.perform(key, caller, round, false).await
    }

    /// Performs the effects, feeds each result back to its key, and
    /// performs what those decisions asked for in turn, for at most
    /// [`EFFECT_ROUNDS_MAX`] rounds (in a deferred round, as many as its
    /// wakes allow); the alarm finishes anything left. With a caller, its
    /// answering check's status goes to the call waiting on it, decided
    /// before the reply; the other results re-enter after the reply.
    async fn perform(
        self: &Rc<Self>,
        key: &Ident,
        mut caller: Caller<R>,
        mut round: Vec<Asked<R>>,
        deferred: bool,
    ) -> Result<Caller<R>, JsValue> {
        let (mut wakes, mut terminations) =
            (WAKE_ATTEMPTS_PER_CALL_MAX, TERMINATIONS_PER_CALL_MAX as u32);
        let mut sent_all = Vec::new();
        let mut recorded_after = Vec::new();
        let rounds = if deferred {
            WAKE_ATTEMPTS_PER_CALL_MAX as usize
        } else {
            EFFECT_ROUNDS_MAX
        };
        for _ in 0..rounds {
            round.retain(|asked| {
                let left = match asked.effect.bound() {
                    Some(Bound::Wakes) => &mut wakes,
                    Some(Bound::Terminations) => &mut terminations,
                    None => return true,
                };
                let allowed = *left > 0;
                *left = left.saturating_sub(1);
                allowed
            });
            if round.is_empty() {
                break;
            }
            let (mut inputs, status, sent) = self.perform_round(key, &round).await;
            if deferred {
                inputs.extend(statuses::<R>(&self.base.env, sent).await);
            } else {
                sent_all.extend(sent);
            }
            let mut next = Vec::new();
            caller = match (caller, status) {
                (Caller::Waiting(waiting), Some(found)) => {
                    self.decide_waiting(key, waiting, found, &mut next).await?
                }
                (caller, _) => caller,
            };
            if matches!(caller, Caller::Nobody) {
                next.extend(self.commit_all(key, inputs).await?);
            } else {
                recorded_after.extend(inputs);
            }
            round = next;
        }
        if !recorded_after.is_empty() {
            self.after_reply(key, recorded_after);
        }
        if !sent_all.is_empty() {
            self.defer(key, sent_all);
        }
        Ok(caller)
    }

    /// The results that do not answer the caller, fed back after the
    /// reply in `waitUntil`, and what their decisions ask for performed in
    /// turn, as a round with no caller. Should the object stop first, the
    /// alarm carries on (a woken holder stays unconfirmed until recorded).
    fn after_reply(self: &Rc<Self>, key: &Ident, inputs: Vec<R::Input>) {
        let (driver, key) = (self.clone(), key.clone());
        let failed = format!("results after the reply on key {key}");
        let effects = wake::after_reply(failed, async move {
            let round = driver.commit_all(&key, inputs).await?;
            driver
                .perform(&key, Caller::Nobody, round, false)
                .await
                .map(drop)
        });
        let _ = self.base.raw_state.wait_until(&effects);
    }

    /// One round of effects, concurrently: the inputs their results feed
    /// back, the status of an answering check, and the wakes sent.
    async fn perform_round(
        &self,
        key: &Ident,
        round: &[Asked<R>],
    ) -> (Vec<R::Input>, Option<Found>, Vec<Woke<R>>) {
        let config = self.config.as_ref().ok();
        let withs: Vec<Performing<'_, R>> = round
            .iter()
            .map(|asked| Performing {
                env: &self.base.env,
                key,
                scope: R::scope(key.as_str()),
                config,
                asked_by: &asked.by,
            })
            .collect();
        let results = futures_util::future::join_all(
            round
                .iter()
                .zip(&withs)
                .map(|(asked, with)| asked.effect.perform(with)),
        )
        .await;
        let mut inputs = Vec::new();
        let mut status = None;
        let mut sent = Vec::new();
        for performed in results {
            inputs.extend(performed.inputs);
            status = status.or(performed.status);
            sent.extend(performed.woke);
        }
        (inputs, status, sent)
    }

    /// Feeds each input to its key, one decision after the other; returns
    /// what those decisions asked for.
    async fn commit_all(
        self: &Rc<Self>,
        key: &Ident,
        inputs: Vec<R::Input>,
    ) -> Result<Vec<Asked<R>>, JsValue> {
        let mut next = Vec::new();
        for input in inputs {
            if let Ok(((), transition)) = self.commit(key, Reentry(input), None).await? {
                next.extend(self.committed(transition).await?);
            }
        }
        Ok(next)
    }

    /// After a re-entering decision's commit: the list reports it made
    /// due, its alarm; what it asks for.
    pub(super) async fn committed(
        self: &Rc<Self>,
        transition: TransitionOf<R>,
    ) -> Result<Vec<Asked<R>>, JsValue> {
        M::decided(self);
        if transition.alarm != Alarm::Keep {
            self.arm_alarm().await?;
        }
        Ok(asked::<R>(transition.effects, transition.state))
    }

    /// The deferred round of the wakes `sent`: their status
    /// `HAND_ON_CHECK_DELAY_MS` after the reply, in `waitUntil`. Should
    /// the object stop first, the alarm carries on (a woken instance stays
    /// to confirm until it does).
    fn defer(self: &Rc<Self>, key: &Ident, sent: Vec<Woke<R>>) {
        let (driver, key) = (self.clone(), key.clone());
        let failed = format!("hand-on of key {key}");
        let follow_up = wake::deferred(failed, async move {
            let inputs = statuses::<R>(&driver.base.env, sent).await;
            let round = driver.commit_all(&key, inputs).await?;
            driver.perform(&key, Caller::Nobody, round, true).await?;
            Ok(())
        });
        // The raw binding, not `State::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.base.raw_state.wait_until(&follow_up);
    }
}

/// The status of each woken instance, one after another, and what each
/// feeds back.
/// An instance its binding cannot find is looked up through the others
/// (§1a, `shell::found`).
async fn statuses<R: Rules>(env: &worker::Env, sent: Vec<Woke<R>>) -> Vec<R::Input> {
    let mut inputs = Vec::new();
    for woke in sent {
        let first = wake::status(woke.sent, &woke.id).await;
        let (remembered, others) = &woke.bindings;
        let found = found(env, others, remembered, woke.id.as_str(), first).await;
        inputs.extend((woke.then)(found));
    }
    inputs
}
