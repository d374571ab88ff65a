//! The serial queue's shell: runs `crate::serial_queue`'s batches on D1
//! (`shell::d1_results::run`: one round trip, one transaction) and
//! performs the effects its decisions ask for. D1 has no input gate, so
//! the Durable Objects' driver does not fit, but every method is the same
//! short loop: ask the core for the batch, run it, let the core decide
//! from what came back ([`core::Decided`]), perform its effects
//! ([`Shell::perform`]; a result re-enters through [`core::checked`],
//! whose follow-up batch runs and is decided in turn), take the command's
//! [`core::Answer`] (its reply and the caller's line, once the effects are
//! done), print the log lines the core gives, reply. A release checks the
//! status of the instance the group went on to after the reply
//! ([`Shell::hand_on`]), in the deferred round of `shell::wake`, as the
//! driver's wakes. The core decides everything, the log lines included;
//! this file only carries it out.

use super::config::SerialConfig;
use super::d1_results::run;
use super::decision_log::{self, Scope};
use super::js::{self, now_ms};
use super::wake::{self, Sent, Turn};
use crate::edge::coordinator::ReleaseReply;
use crate::edge::serial::{
    GroupMember, HeartbeatReply, SerialClaimReply, SerialEnqueue, SerialEnqueueReply,
    SerialInspect, SerialInspection,
};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::WAKE_ATTEMPTS_PER_CALL_MAX;
use crate::serial_queue::{self as core, ClaimReply, Decided, Effect, Outcome, Plan};
use crate::transition::LogLine;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use worker::{Context, Env};

/// The serial queue's operations on one Worker `env`; the RPC class and the
/// HTTP API both call these with the decoded request.
pub(crate) struct Shell {
    pub(super) env: Env,
    /// The request's context: the release's status check runs in its
    /// `waitUntil`, after the reply.
    ctx: Context,
}

pub(super) fn refuse(error: BatonError) -> JsValue {
    js::to_js_error(&error)
}

impl Shell {
    pub(crate) fn new(env: Env, ctx: Context) -> Shell {
        Shell { env, ctx }
    }

    /// Runs one of the core's batches on the `DB` binding.
    pub(super) async fn run(&self, batch: &core::Batch) -> Result<Vec<Outcome>, JsValue> {
        let db = self
            .env
            .d1("DB")
            .map_err(|_| js_sys::Error::new("Baton configuration: no D1 binding named \"DB\""))?;
        run(&db, batch).await
    }

    /// The variables, read on the isolate's first call.
    pub(super) fn config(&self) -> Result<Rc<SerialConfig>, JsValue> {
        SerialConfig::cached(&self.env).map_err(|m| js_sys::Error::new(&m).into())
    }

    /// Runs a decision's follow-up batch, if it has one, after printing
    /// its lines.
    async fn follow_up(
        &self,
        group: &Ident,
        d: Decided<()>,
    ) -> Result<Option<Vec<Outcome>>, JsValue> {
        print(group, &d.log);
        match d.follow_up {
            Some(batch) => Ok(Some(self.run(&batch).await?)),
            None => Ok(None),
        }
    }

    /// Performs a decision's effects, in order, each result re-entering
    /// through the core ([`core::checked`]): a check (the holder a claim
    /// waits behind) asks the binding; dead, the claim runs again past it,
    /// and that decision answers the caller. A wake is sent its event and
    /// its status read at once, except the instance the group went on to,
    /// whose status is read after the reply ([`Shell::hand_on`]).
    /// `SERIAL_PUSH = "off"` sends no events.
    pub(super) async fn perform<R>(
        &self,
        config: &SerialConfig,
        group: &Ident,
        d: &Decided<R>,
    ) -> Result<Performed, JsValue> {
        let mut performed = Performed::default();
        let mut wakes = 0;
        for effect in &d.effects {
            match effect {
                Effect::Check(check) => {
                    let liveness = self.checked(config, group, check).await?;
                    let now = now_ms();
                    let reentry =
                        core::checked(group, &d.state, &check.id, liveness, now, config.timeouts);
                    let (Some(outcomes), Some(me)) =
                        (self.follow_up(group, reentry).await?, &d.state.me)
                    else {
                        continue;
                    };
                    let claimed = core::claim_outcome(&me.instance_id, &outcomes, config.names())
                        .map_err(refuse)?;
                    print(group, &claimed.log);
                    // Its own check, if it still waits, is not performed:
                    // a claim checks its holder once, its next poll again.
                    performed.claimed = Some(claimed).filter(|_| check.answers);
                }
                Effect::Wake(tell) => {
                    // Superseded waiters learn at once: their next claim (or
                    // their own turn) says `skipped`. Dead ones ignore it.
                    wakes += 1;
                    if !config.push || wakes > WAKE_ATTEMPTS_PER_CALL_MAX {
                        continue;
                    }
                    let sent = wake::send(&self.env, tell, &Turn::serial(tell)?).await?;
                    if d.state.went_on.as_ref().is_some_and(|h| h.to == tell.id) {
                        performed.handed = Some((tell.id.clone(), sent));
                    } else {
                        sent.liveness(&tell.id).await;
                    }
                }
            }
        }
        Ok(performed)
    }

    pub(crate) async fn enqueue(
        &self,
        request: SerialEnqueue,
    ) -> Result<SerialEnqueueReply, JsValue> {
        let config = self.config()?;
        config.check(&request).map_err(refuse)?;
        let request = request.into_core(&config.turn_event_type);
        let decided = match core::enqueue(&request, now_ms(), config.timeouts) {
            Plan::Done(decided) => *decided,
            Plan::Run(batch) => {
                let outcomes = self.run(&batch).await?;
                core::enqueue_outcome(&request, &outcomes, config.names()).map_err(refuse)?
            }
        };
        let group = &request.group;
        let performed = self.perform(&config, group, &decided).await?;
        let answer = core::enqueue_answer(&request, decided, performed.claimed);
        print(group, &answer.log);
        Ok(answer.reply.into())
    }

    pub(crate) async fn claim(&self, request: GroupMember) -> Result<SerialClaimReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
        let config = self.config()?;
        let now = now_ms();
        let outcomes = self
            .run(&core::claim(&group, &id, now, config.timeouts))
            .await?;
        let decided = core::claim_outcome(&id, &outcomes, config.names()).map_err(refuse)?;
        print(&group, &decided.log);
        let performed = self.perform(&config, &group, &decided).await?;
        let answer = core::claim_answer(&id, decided, performed.claimed, now);
        print(&group, &answer.log);
        Ok(answer.reply.into())
    }

    pub(crate) async fn heartbeat(&self, request: GroupMember) -> Result<HeartbeatReply, JsValue> {
        let batch = core::heartbeat(&request.group, &request.instance_id, now_ms());
        let outcomes = self.run(&batch).await?;
        Ok(HeartbeatReply {
            holding: core::heartbeat_outcome(&outcomes).reply,
        })
    }

    /// `next` is the instance sent the turn event, if any: the first
    /// waiter, handed the group by grant or woken to claim, whose status is
    /// checked after the reply.
    pub(crate) async fn release(
        self: &Rc<Self>,
        request: GroupMember,
    ) -> Result<ReleaseReply, JsValue> {
        let GroupMember {
            group,
            instance_id: id,
        } = request;
        let config = self.config()?;
        let outcomes = self.run(&core::release(&group, &id, now_ms())).await?;
        let decided = core::release_outcome(&group, &outcomes, config.names());
        // The turn event goes first: the next holder waits on it, and the
        // log line can wait for it.
        let performed = self.perform(&config, &group, &decided).await?;
        let reply = decided.reply;
        let next = performed
            .handed
            .map(|sent| self.hand_on(&config, &group, decided.state, sent));
        print(
            &group,
            &core::release_answer(&id, reply, next.is_some()).log,
        );
        Ok(ReleaseReply { next })
    }

    /// A freed group's hand-on: the instance it went to (handed it by
    /// grant, or woken to claim) was sent its event before the reply, which
    /// names it; its status check, and the rest of the chain if it is dead
    /// (abandon it, go on to the next: [`core::checked`]), run after the
    /// reply, in `waitUntil`, in the deferred round `shell::wake` runs for
    /// the driver too. The holder's release then costs one D1 batch and
    /// the event, as a hand-written queue's does. Should the Worker stop
    /// before that check, a dead first waiter costs the others their next
    /// poll (their claim finds it dead), no more.
    pub(super) fn hand_on(
        self: &Rc<Self>,
        config: &Rc<SerialConfig>,
        group: &Ident,
        read: core::Read,
        (named, sent): (InstanceId, Sent),
    ) -> InstanceId {
        let (shell, config, key) = (self.clone(), config.clone(), group.clone());
        let failed = format!("serial hand-on in group {group}");
        let round = async move { shell.hand_on_past(&config, &key, read, sent).await };
        // The raw binding, not `Context::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.ctx.as_ref().wait_until(&wake::deferred(failed, round));
        named
    }

    /// After the reply: the status of the instance the group went to
    /// re-enters ([`core::checked`]); while it is dead, the group goes on
    /// past it, up to [`WAKE_ATTEMPTS_PER_CALL_MAX`] events in all; past
    /// that, the next waiter's claim finds the group free.
    async fn hand_on_past(
        &self,
        config: &SerialConfig,
        group: &Ident,
        mut read: core::Read,
        mut sent: Sent,
    ) -> Result<(), JsValue> {
        for attempt in 1..=WAKE_ATTEMPTS_PER_CALL_MAX {
            let Some(next) = read.went_on.clone() else {
                return Ok(());
            };
            let liveness = self.woken(config, group, &next.to, sent).await?;
            let reentry =
                core::checked(group, &read, &next.to, liveness, now_ms(), config.timeouts);
            let Some(outcomes) = self.follow_up(group, reentry).await? else {
                return Ok(());
            };
            let decided = core::hand_on_past_outcome(group, &outcomes, config.names());
            if attempt >= WAKE_ATTEMPTS_PER_CALL_MAX {
                return Ok(());
            }
            let performed = self.perform(config, group, &decided).await?;
            let Some((_, after)) = performed.handed else {
                return Ok(());
            };
            (read, sent) = (decided.state, after);
        }
        Ok(())
    }

    pub(crate) async fn inspect(
        &self,
        request: SerialInspect,
    ) -> Result<SerialInspection, JsValue> {
        let outcomes = self.run(&core::inspect(&request.group)).await?;
        Ok(SerialInspection::of(
            core::inspect_outcome(&outcomes),
            now_ms(),
        ))
    }
}

/// What performing a decision's effects came to ([`Shell::perform`]).
#[derive(Default)]
pub(super) struct Performed {
    /// The claim again past a holder found dead: its decision answers the
    /// caller.
    claimed: Option<Decided<ClaimReply>>,
    /// The instance the group went on to, sent its event: its status is
    /// read after the reply.
    pub(super) handed: Option<(InstanceId, Sent)>,
}

/// Prints the lines a decision gave, in `group`.
pub(super) fn print(group: &Ident, lines: &[LogLine]) {
    for line in lines {
        decision_log::line(Scope::Group(group.as_str()), line);
    }
}
