//! The serial queue's shell: runs `crate::serial_queue`'s batches on D1 and
//! performs the effects its decisions ask for.
//!
//! D1 has no input gate, so the Durable Objects' driver (`shell::driver`)
//! does not fit, but every method is the same short loop in its order:
//! take the typed request, ask the core for its batch, run it (one D1
//! round trip, one transaction), let the core decide the
//! [`core::Transition`] from what came back, perform its effects in one
//! exhaustive `match` ([`Shell::perform`]: a check's result re-enters
//! through [`core::checked`], whose follow-up batch runs and is decided
//! in turn), log the decision, and reply. A release replies once the
//! instance the group went on to is told, and checks that one's status
//! after the reply ([`Shell::hand_on`]). Turn events and status checks go
//! through `shell::wake` and `shell::workflow`, the Coordinator's paths.
//! Nothing here decides anything the core does not say.

use super::config::SerialConfig;
use super::d1_results;
use super::decision_log::{self, Kind, Scope};
use super::js::{self, now_ms};
use super::wake::{Sent, Turn};
use super::workflow::Workflow;
use crate::edge::coordinator::ReleaseReply;
use crate::edge::serial::{
    GroupMember, HeartbeatReply, Revisioned, SerialClaimReply, SerialEnqueue, SerialEnqueueReply,
    SerialFinished, SerialHolder, SerialInspect, SerialInspection, SerialOutcome, SerialWaiter,
};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{HAND_ON_CHECK_DELAY_MS, WAKE_ATTEMPTS_PER_CALL_MAX};
use crate::serial_queue::{
    self as core, Batch, ClaimReply, Effect, EnqueueReply, Entry, EntryState, Event, News, Outcome,
    Param, Plan, Released, Wake,
};
use js_sys::{Array, Promise};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::{Context, D1Database, Delay, Env};

/// The Rust half of the Worker's serial-queue RPC methods (see js/worker.mjs).
#[wasm_bindgen]
pub struct SerialQueue {
    shell: Rc<Shell>,
}

/// The serial queue's operations on one Worker `env`; the RPC class and the
/// HTTP API both call these with the decoded request.
pub(crate) struct Shell {
    env: Env,
    /// The request's context: the release's status check runs in its
    /// `waitUntil`, after the reply.
    ctx: Context,
}

fn refuse(error: BatonError) -> JsValue {
    js::to_js_error(&error)
}

/// A D1 failure as the caller sees it: a statement the binding refused
/// (`worker::Error`, through `From`) or a rejected batch (the thrown value).
fn d1_failed(error: impl Into<JsValue>) -> JsValue {
    let error = error.into();
    let message = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("{error:?}"));
    js_sys::Error::new(&format!("Baton: D1 failed: {message}")).into()
}

#[wasm_bindgen]
extern "C" {
    /// The D1 binding, for its `batch` alone: `worker::D1Database::batch`
    /// hands back results whose rows it can only decode field by field.
    type D1Batch;
    #[wasm_bindgen(method, catch)]
    fn batch(this: &D1Batch, statements: Array) -> Result<Promise, JsValue>;
}

#[wasm_bindgen]
impl SerialQueue {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env, ctx: worker::worker_sys::Context) -> SerialQueue {
        console_error_panic_hook::set_once();
        super::decision_log::configure(&env);
        SerialQueue {
            shell: Rc::new(Shell::new(env, Context::new(ctx))),
        }
    }

    #[wasm_bindgen(js_name = serialEnqueue)]
    pub fn serial_enqueue(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.enqueue(r).await })
    }

    #[wasm_bindgen(js_name = serialClaim)]
    pub fn serial_claim(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.claim(r).await })
    }

    #[wasm_bindgen(js_name = serialHeartbeat)]
    pub fn serial_heartbeat(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.heartbeat(r).await })
    }

    #[wasm_bindgen(js_name = serialRelease)]
    pub fn serial_release(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(
            input,
            move |r| async move { Shell::release(&shell, r).await },
        )
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.inspect(r).await })
    }
}

impl Shell {
    pub(crate) fn new(env: Env, ctx: Context) -> Shell {
        Shell { env, ctx }
    }

    fn db(&self) -> Result<D1Database, JsValue> {
        self.env.d1("DB").map_err(|_| {
            js_sys::Error::new("Baton configuration: no D1 binding named \"DB\"").into()
        })
    }

    /// The variables, read on the isolate's first call: a Worker's
    /// variables do not change while its isolate lives, and reading them
    /// (eight lookups in `env`, each a crossing into JS, and a string
    /// copied for each one set) was about 2% of every call's busy time in
    /// Baton's isolate (`bench/profile.mjs serial`).
    fn config(&self) -> Result<Rc<SerialConfig>, JsValue> {
        thread_local! {
            static CONFIG: std::cell::OnceCell<Result<Rc<SerialConfig>, String>> =
                const { std::cell::OnceCell::new() };
        }
        CONFIG
            .with(|config| {
                config
                    .get_or_init(|| SerialConfig::from_env(&self.env).map(Rc::new))
                    .clone()
            })
            .map_err(|m| js_sys::Error::new(&m).into())
    }

    /// Runs one of the core's batches: one round trip, one transaction.
    async fn run(&self, batch: &Batch) -> Result<Vec<Outcome>, JsValue> {
        let db = self.db()?;
        let statements = batch
            .0
            .iter()
            .map(|s| {
                let params: Vec<JsValue> = s
                    .params
                    .iter()
                    .map(|p| match p {
                        Param::Text(text) => JsValue::from_str(text),
                        Param::Null => JsValue::NULL,
                        Param::Integer(n) => JsValue::from_f64(*n as f64),
                    })
                    .collect();
                let statement = db.prepare(s.sql).bind(&params).map_err(d1_failed)?;
                Ok(JsValue::from(statement.inner()))
            })
            .collect::<Result<Array, JsValue>>()?;
        let database: &D1Batch = db.as_ref().unchecked_ref();
        let results = JsFuture::from(database.batch(statements)?)
            .await
            .map_err(d1_failed)?;
        d1_results::outcomes(&results).map_err(|e| {
            JsValue::from(js_sys::Error::new(&format!(
                "Baton: D1 failed: unreadable results: {e}"
            )))
        })
    }

    /// The Workflow binding named `name`.
    fn workflow(&self, name: &str) -> Result<Workflow, JsValue> {
        Workflow::from_env(&self.env, name)
    }

    /// The event a tell spells out: its type, and the payload `{ group }`,
    /// with the instance's id and its status when it has news. Built by
    /// hand, not through serde: one more serialized type costs the WASM
    /// more (P6).
    fn event(event: &Event, id: &InstanceId) -> Result<Turn, JsValue> {
        let payload = js_sys::Object::new();
        let set = |object: &js_sys::Object, name: &str, value: JsValue| {
            js_sys::Reflect::set(object, &name.into(), &value).map(drop)
        };
        set(&payload, "group", event.group.as_str().into())?;
        let status = match &event.news {
            News::Claim => None,
            News::Holding { fence } => {
                set(&payload, "fence", JsValue::from_f64(*fence as f64))?;
                Some("holding")
            }
            News::Skipped { by, by_revision } => {
                let winner = js_sys::Object::new();
                set(&winner, "instanceId", by.as_str().into())?;
                set(&winner, "revision", by_revision.as_str().into())?;
                set(&payload, "supersededBy", winner.into())?;
                Some("skipped")
            }
        };
        if let Some(status) = status {
            set(&payload, "instanceId", id.as_str().into())?;
            set(&payload, "status", status.into())?;
        }
        Ok(Turn {
            event_type: event.event_type.clone(),
            payload: payload.into(),
        })
    }

    /// Runs a transition's follow-up batch, if it has one.
    async fn follow_up(&self, t: core::Transition<()>) -> Result<Option<Vec<Outcome>>, JsValue> {
        if t.writes.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.run(&Batch(t.writes)).await?))
    }

    /// Performs a decision's effects, in order, in one exhaustive match,
    /// each result re-entering through the core ([`core::checked`]):
    /// - a check (the holder a claim waits behind) asks the binding; dead,
    ///   the claim runs again past it, and that decision answers the
    ///   caller (`Performed::claimed`);
    /// - a tell is sent its event; its status is read at once (a failed
    ///   send to a live instance is logged), except the instance the group
    ///   went on to, which has the status read after the reply
    ///   (`Performed::handed`, [`Shell::hand_on`]). `SERIAL_PUSH = "off"`
    ///   sends no tells.
    async fn perform(
        &self,
        config: &SerialConfig,
        group: &Ident,
        effects: Vec<Effect>,
        read: &core::Read,
    ) -> Result<Performed, JsValue> {
        let mut performed = Performed::default();
        let mut tells = 0;
        for effect in effects {
            match effect {
                Effect::Check(check) => {
                    let liveness = self
                        .workflow(&check.workflow)?
                        .liveness(check.id.as_str())
                        .await;
                    let reentry =
                        core::checked(group, read, &check.id, liveness, now_ms(), config.timeouts);
                    let Some(outcomes) = self.follow_up(reentry).await? else {
                        continue;
                    };
                    let Some(me) = &read.me else {
                        unreachable!("a claim's check without the claim");
                    };
                    let claimed = core::claim_outcome(&me.instance_id, &outcomes, names(config))
                        .map_err(refuse)?;
                    log_abandoned(Scope::Group(group.as_str()), &claimed.state.abandoned);
                    // Its own check, if it still waits, is not performed:
                    // a claim checks its holder once, its next poll again.
                    performed.claimed = Some(claimed).filter(|_| check.answers);
                }
                Effect::Wake(tell) => {
                    // Superseded waiters learn at once: their next claim (or
                    // their own turn) says `skipped`. Dead ones ignore it.
                    tells += 1;
                    if !config.push || tells > WAKE_ATTEMPTS_PER_CALL_MAX {
                        continue;
                    }
                    let sent = self.send(&tell).await?;
                    if read.went_on.as_ref().is_some_and(|h| h.to == tell.id) {
                        performed.handed = Some((tell.id, sent));
                    } else {
                        sent.liveness(&tell.id).await;
                    }
                }
            }
        }
        Ok(performed)
    }

    /// Sends a tell's event through its instance's Workflow binding.
    async fn send(&self, tell: &Wake<Event>) -> Result<Sent, JsValue> {
        let workflow = self.workflow(&tell.workflow)?;
        let event = Self::event(&tell.event, &tell.id)?;
        Ok(Sent::send(&workflow, &tell.id, &event).await)
    }

    pub(crate) async fn enqueue(
        &self,
        request: SerialEnqueue,
    ) -> Result<SerialEnqueueReply, JsValue> {
        let config = self.config()?;
        config.check(&request).map_err(refuse)?;
        let request = request.into_core(&config.turn_event_type);
        let now = now_ms();
        let decided = match core::enqueue(&request, now, config.timeouts) {
            Plan::Done(decided) => *decided,
            Plan::Run(batch) => {
                let outcomes = self.run(&batch).await?;
                core::enqueue_outcome(&request, &outcomes, names(&config)).map_err(refuse)?
            }
        };
        let group = &request.group;
        let performed = self
            .perform(&config, group, decided.effects, &decided.state)
            .await?;
        let reply = match (performed.claimed, decided.reply) {
            (Some(claimed), EnqueueReply::Claimed { superseded, .. }) => {
                core::enqueue_claimed(superseded, claimed).reply
            }
            (_, reply) => reply,
        };
        let scope = Scope::Group(group.as_str());
        let id = &request.instance_id;
        let (name, reason) = match &reply {
            EnqueueReply::Waiting { superseded, .. } => ("waiting", superseded.len()),
            EnqueueReply::Claimed { superseded, claim } => (claim_name(claim), superseded.len()),
            EnqueueReply::Skipped { .. } => ("skipped", 0),
        };
        let reason = match &reply {
            EnqueueReply::Skipped { current } => {
                format!("revision {} is not current ({current})", request.revision)
            }
            _ => format!("superseded {reason} waiter(s)"),
        };
        // An enqueue that only joins, or claims a free group, involves no
        // other instance: a wait is logged by the claim that finds the
        // group held.
        let kind = match &reply {
            EnqueueReply::Waiting { superseded, .. } if superseded.is_empty() => Kind::Routine,
            EnqueueReply::Claimed {
                superseded,
                claim: ClaimReply::Holding { .. },
            } if superseded.is_empty() => Kind::Routine,
            _ => Kind::Contended,
        };
        decision_log::decision(kind, scope, id.as_str(), name, &reason, None);
        Ok(reply.into())
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
        let decided = core::claim_outcome(&id, &outcomes, names(&config)).map_err(refuse)?;
        let scope = Scope::Group(group.as_str());
        log_abandoned(scope, &decided.state.abandoned);
        let performed = self
            .perform(&config, &group, decided.effects, &decided.state)
            .await?;
        let (reply, read) = match performed.claimed {
            Some(claimed) => (claimed.reply, claimed.state),
            None => (decided.reply, decided.state),
        };
        let reason = match &reply {
            ClaimReply::Holding { .. } => "no live holder".to_string(),
            ClaimReply::Waiting { holder, .. } => format!(
                "behind {}",
                holder.as_ref().map_or("a holder", |h| h.as_str())
            ),
            ClaimReply::Skipped { by, by_revision } => {
                format!("superseded by {by} at {by_revision}")
            }
            ClaimReply::TimedOut => "waited past the waiter timeout".to_string(),
        };
        let waited_ms = read.me.map(|me| now.saturating_sub(me.enqueued_at_ms));
        let name = claim_name(&reply);
        let kind = match &reply {
            ClaimReply::Holding { .. } => Kind::Routine,
            _ => Kind::Contended,
        };
        decision_log::decision(kind, scope, id.as_str(), name, &reason, waited_ms);
        Ok(reply.into())
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
        let decided = core::release_outcome(&group, &outcomes, names(&config));
        let left = match decided.reply {
            Released::HeldNothing => "held nothing",
            Released::LeftQueue => "left the queue",
            Released::FreedGroup => "freed the group",
        };
        // The turn event goes first: the next holder waits on it, and the
        // log line can wait for it.
        let performed = self
            .perform(&config, &group, decided.effects, &decided.state)
            .await?;
        let next = performed
            .handed
            .map(|sent| self.hand_on(&config, &group, decided.state, sent));
        let kind = if next.is_some() {
            Kind::Contended
        } else {
            Kind::Routine
        };
        decision_log::decision(
            kind,
            Scope::Group(group.as_str()),
            id.as_str(),
            "released",
            left,
            None,
        );
        Ok(ReleaseReply { next })
    }

    /// A freed group's hand-on: the instance it went to (handed it by
    /// grant, or woken to claim) was sent its event before the reply, which
    /// names it; its status check, and the rest of the chain if it is dead
    /// (abandon it, go on to the next: [`core::checked`]), run after the
    /// reply, in `waitUntil`, once it has had [`HAND_ON_CHECK_DELAY_MS`] to
    /// act on the event. The holder's release then costs one D1 batch and
    /// the event, as a hand-written queue's does, and the status query
    /// does not reach the woken instance's engine while it acts. Should the
    /// Worker stop before that check, a dead first waiter costs the others
    /// their next poll (their claim finds it dead), no more.
    fn hand_on(
        self: &Rc<Self>,
        config: &Rc<SerialConfig>,
        group: &Ident,
        read: core::Read,
        (named, sent): (InstanceId, Sent),
    ) -> InstanceId {
        let (shell, config, group) = (self.clone(), config.clone(), group.clone());
        let check = js::promise(async move {
            // Let the woken instance act before its engine is asked its status.
            Delay::from(Duration::from_millis(HAND_ON_CHECK_DELAY_MS)).await;
            if let Err(error) = shell.hand_on_past(&config, &group, read, sent).await {
                worker::console_error!("baton: serial hand-on in group {group} failed: {error:?}");
            }
            Ok(JsValue::UNDEFINED)
        });
        // The raw binding, not `Context::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.ctx.as_ref().wait_until(&check);
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
        let scope = Scope::Group(group.as_str());
        for attempt in 1..=WAKE_ATTEMPTS_PER_CALL_MAX {
            let Some(next) = read.went_on.clone() else {
                return Ok(());
            };
            let liveness = sent.liveness(&next.to).await;
            let now = now_ms();
            let reentry = core::checked(group, &read, &next.to, liveness, now, config.timeouts);
            let (decision, reason) = match (reentry.writes.is_empty(), next.holding_since) {
                (false, _) => ("abandoned", "woken but dead"),
                (true, Some(_)) => ("handed", "handed the group by grant"),
                (true, None) => ("woken", "the group is free"),
            };
            decision_log::decision(
                Kind::Contended,
                scope,
                next.to.as_str(),
                decision,
                reason,
                None,
            );
            let Some(outcomes) = self.follow_up(reentry).await? else {
                return Ok(());
            };
            let decided = core::hand_on_past_outcome(group, &outcomes, names(config));
            if attempt >= WAKE_ATTEMPTS_PER_CALL_MAX {
                return Ok(());
            }
            let performed = self
                .perform(config, group, decided.effects, &decided.state)
                .await?;
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
        let view = core::inspect_outcome(&outcomes);
        Ok(SerialInspection {
            holder: view.holder.and_then(|h| match h.state {
                EntryState::Holding { heartbeat_at_ms } => Some(SerialHolder {
                    instance_id: h.instance_id,
                    revision: h.revision,
                    heartbeat_at: heartbeat_at_ms,
                }),
                _ => None,
            }),
            waiting: view
                .waiting
                .into_iter()
                .map(|w| SerialWaiter {
                    instance_id: w.instance_id,
                    revision: w.revision,
                    enqueued_at: w.enqueued_at_ms,
                })
                .collect(),
            recent: view.recent.into_iter().filter_map(finished).collect(),
        })
    }
}

/// What performing a decision's effects came to ([`Shell::perform`]).
#[derive(Default)]
struct Performed {
    /// The claim again past a holder found dead: its decision answers the
    /// caller.
    claimed: Option<core::Transition<ClaimReply>>,
    /// The instance the group went on to, sent its event: its status is
    /// read after the reply.
    handed: Option<(InstanceId, Sent)>,
}

/// The names the core writes into its effects.
fn names(config: &SerialConfig) -> core::Names<'_> {
    core::Names {
        workflow: &config.workflow_binding,
        turn_event_type: &config.turn_event_type,
    }
}

/// The decision-log word for a claim's reply.
fn claim_name(reply: &ClaimReply) -> &'static str {
    match reply {
        ClaimReply::Holding { .. } => "holding",
        ClaimReply::Waiting { .. } => "waiting",
        ClaimReply::Skipped { .. } => "skipped",
        ClaimReply::TimedOut => "timed_out",
    }
}

/// Logs the holders a claim abandoned (stale, or found dead).
fn log_abandoned(scope: Scope<'_>, abandoned: &[InstanceId]) {
    for holder in abandoned {
        let reason = "its heartbeat went stale, or its Workflow reported it dead";
        decision_log::decision(
            Kind::Contended,
            scope,
            holder.as_str(),
            "abandoned",
            reason,
            None,
        );
    }
}

/// A finished execution as `serialInspect`'s `recent` shows it.
fn finished(entry: Entry) -> Option<SerialFinished> {
    let (outcome, finished_at, superseded_by) = match entry.state {
        EntryState::Waiting | EntryState::Holding { .. } => return None,
        EntryState::Superseded {
            by,
            by_revision,
            at_ms,
        } => (
            SerialOutcome::Superseded,
            at_ms,
            Some(Revisioned {
                instance_id: by,
                revision: by_revision,
            }),
        ),
        EntryState::TimedOut { at_ms } => (SerialOutcome::TimedOut, at_ms, None),
        EntryState::Released { at_ms, .. } => (SerialOutcome::Released, at_ms, None),
        EntryState::Abandoned { at_ms } => (SerialOutcome::Abandoned, at_ms, None),
    };
    Some(SerialFinished {
        instance_id: entry.instance_id,
        revision: entry.revision,
        outcome,
        finished_at,
        superseded_by,
    })
}
