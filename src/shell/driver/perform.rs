//! What the driver does after a commit: performs the decision's effects,
//! feeds each result back to its key, and performs what those decisions
//! ask for in turn. Each concept's effect type says how one of its effects
//! is performed and what its result feeds back ([`Perform`]), through the
//! shared steps of `shell::effects` and `shell::wake`:
//! - a create's outcome re-enters (the Debouncer's starts);
//! - a check's liveness re-enters with the reply of the decision that
//!   asked (the caller's answer so far: it carries what the next decision
//!   needs, such as who is claiming). A check with `answers` set hands the
//!   caller's answer on: the caller gets the reply (or the refusal) of the
//!   decision its result re-entered. So a decision that must know whether
//!   an instance is alive before it can answer asks for an answering check
//!   and replies a placeholder;
//! - a wake's turn event is sent, and whether the engine accepted it may
//!   re-enter at once; the instance's status is asked
//!   `HAND_ON_CHECK_DELAY_MS` later, after the reply, in `waitUntil` (the
//!   deferred round of `shell::wake::deferred`: the woken instance has had
//!   time to act), and what it feeds back ([`Woke`]) re-enters. Wakes that
//!   round's decisions ask for are checked at once, round after round,
//!   within [`WAKE_ATTEMPTS_PER_CALL_MAX`] wakes;
//! - a termination is best effort, at most [`TERMINATIONS_PER_CALL_MAX`]
//!   a call; nothing re-enters.
//!
//! The reply waits for the effects, but not for what their results feed
//! back unless it answers the caller: a turn event's acceptance is
//! recorded after the reply, in `waitUntil` (§1b: the holder is told by
//! the event, not by the reply; until the acceptance is recorded the
//! hand-over stays unconfirmed, and the holder-check alarm, armed before
//! the reply, sends an event again should the object stop first). The
//! decision that records it is then off the caller's path, with its
//! second commit.
//!
//! Each round of effects runs concurrently; their results re-enter one
//! after the other, each in a turn of its own, and what those decisions ask
//! for is the next round, for at most [`EFFECT_ROUNDS_MAX`] rounds. Past
//! any bound, the alarm finishes the work (a woken instance stays to
//! confirm, a create stays due).

use super::{Bound, Driver, Memory, Perform, Performing, Reentry, Rules, TransitionOf, Woke};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::limits::{EFFECT_ROUNDS_MAX, TERMINATIONS_PER_CALL_MAX, WAKE_ATTEMPTS_PER_CALL_MAX};
use crate::shell::found::found;
use crate::shell::wake;
use crate::transition::{Alarm, Transition};
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// An effect, with the state of the decision that asked for it.
struct Asked<R: Rules> {
    effect: R::Effect,
    by: Rc<R::State>,
}

fn asked<R: Rules>(effects: Vec<R::Effect>, state: R::State) -> Vec<Asked<R>> {
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

impl<R: Rules, M: Memory<R>> Driver<R, M> {
    /// A committed transition's alarm and effects; then the caller's answer.
    pub async fn carry_on(
        self: &Rc<Self>,
        key: &Ident,
        transition: TransitionOf<R>,
    ) -> Result<Result<R::Reply, BatonError>, JsValue> {
        if transition.alarm != Alarm::Keep {
            self.arm_alarm().await?;
        }
        let Transition {
            reply,
            effects,
            state,
            ..
        } = transition;
        let round = asked::<R>(effects, state);
        let answer = self.perform(key, Some(Ok(reply)), round, false).await;
        // What the decisions made due goes once the effects are under way
        // (a turn event before a list report: on a shared thread the first
        // queued goes first).
        M::decided(self);
        Ok(answer?.expect("a call's answer is kept through its effects"))
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
        mut round: Vec<Asked<R>>,
        deferred: bool,
    ) -> Result<Option<Result<R::Reply, BatonError>>, JsValue> {
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
            let asked_by = answer.as_ref().and_then(|a| a.as_ref().ok());
            let (mut inputs, sent) = self.perform_round(key, &round, asked_by).await;
            if deferred {
                inputs.extend(statuses::<R>(&self.base.env, sent).await);
            } else {
                sent_all.extend(sent);
            }
            if answer.is_some() {
                let (now, later) = inputs.into_iter().partition(|(_, answers)| *answers);
                recorded_after.extend(later);
                inputs = now;
            }
            round = self.commit_all(key, inputs, &mut answer).await?;
        }
        if !recorded_after.is_empty() {
            self.after_reply(key, recorded_after);
        }
        if !sent_all.is_empty() {
            self.defer(key, sent_all);
        }
        Ok(answer)
    }

    /// The results that do not answer the caller, fed back after the
    /// reply in `waitUntil`, and what their decisions ask for performed in
    /// turn, as a round with no caller. Should the object stop first, the
    /// alarm carries on (a woken holder stays unconfirmed until recorded).
    fn after_reply(self: &Rc<Self>, key: &Ident, inputs: Vec<(R::Input, bool)>) {
        let (driver, key) = (self.clone(), key.clone());
        let failed = format!("results after the reply on key {key}");
        let effects = wake::after_reply(failed, async move {
            let round = driver.commit_all(&key, inputs, &mut None).await?;
            driver.perform(&key, None, round, false).await.map(drop)
        });
        let _ = self.base.raw_state.wait_until(&effects);
    }

    /// One round of effects, concurrently: the inputs their results feed
    /// back (each with whether it answers the caller), and the wakes sent.
    async fn perform_round(
        &self,
        key: &Ident,
        round: &[Asked<R>],
        answer: Option<&R::Reply>,
    ) -> (Vec<(R::Input, bool)>, Vec<Woke<R>>) {
        let config = self.config.as_ref().ok();
        let withs: Vec<Performing<'_, R>> = round
            .iter()
            .map(|asked| Performing {
                env: &self.base.env,
                key,
                scope: R::scope(key.as_str()),
                config,
                asked_by: &asked.by,
                answer,
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
        let mut sent = Vec::new();
        for performed in results {
            inputs.extend(performed.inputs);
            sent.extend(performed.woke);
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
    ) -> Result<Vec<Asked<R>>, JsValue> {
        let mut next = Vec::new();
        for (input, answers) in inputs {
            match self.commit(key, Reentry(input), None).await? {
                Ok(((), transition)) => {
                    M::decided(self);
                    if transition.alarm != Alarm::Keep {
                        self.arm_alarm().await?;
                    }
                    if answers {
                        *answer = Some(Ok(transition.reply));
                    }
                    next.extend(asked::<R>(transition.effects, transition.state));
                }
                Err(refusal) if answers => *answer = Some(Err(refusal)),
                Err(_) => {}
            }
        }
        Ok(next)
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
            let round = driver.commit_all(&key, inputs, &mut None).await?;
            driver.perform(&key, None, round, true).await?;
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
async fn statuses<R: Rules>(env: &worker::Env, sent: Vec<Woke<R>>) -> Vec<(R::Input, bool)> {
    let mut inputs = Vec::new();
    for woke in sent {
        let first = wake::status(woke.sent, &woke.id).await;
        let (remembered, others) = &woke.bindings;
        let found = found(env, others, remembered, woke.id.as_str(), first).await;
        inputs.extend((woke.then)(found).into_iter().map(|input| (input, false)));
    }
    inputs
}
