//! The `Coordinator` Durable Object: the shell around `crate::coordinator`.
//!
//! Every decision is one `coordinator::decide` on the view
//! `coordinator::load` reads for its input, its writes carried out by
//! `coordinator::write`, in one synchronous turn (under the gate, or, on
//! the fast path of `acquire` and `release`, in the caller's turn: see
//! [`Object::decide_now`]); then the alarm; then what the transition asked
//! for outside the gate (a status check, turn events, terminations), whose
//! result re-enters as the next decision's input. Nothing is awaited
//! between a read and the write that depends on it. The tables are the
//! truth; the only memory kept between decisions is each key's summary
//! (`coordinator::Summary`, the transition's state), which equals its rows
//! since this object is their only writer.
//!
//! Work in progress (issue 21): this shell still performs the effects
//! itself (its wake chain, with the status check after the reply, and the
//! holder-check alarm) rather than through `shell::driver`.
//!
//! JS callers reach these methods through the `Coordinator` class in
//! `js/worker.mjs`, which extends `DurableObject` (workerd refuses RPC to a
//! class that does not) and only turns the contract's positional arguments
//! into the request object each method here takes.

use super::busy_report::{Reports, Sent as Reported};
use super::config::CoordinatorConfig;
use super::decision_log::{self, Kind, Scope};
use super::gate::under_gate;
use super::js::{self, now_ms, to_js};
use super::object::ObjectBase;
use super::wake::{Sent, Turn};
use super::workflow::Workflow;
use crate::coordinator::history;
use crate::coordinator::{
    self, migrate, AcquireStep, Decided, Holder, Input, Liveness, Member, Reply, Settings, Summary,
    Transition, Waiter,
};
use crate::edge::coordinator::{
    Acquire, AcquireOutcome, AcquireReply, Enqueue, EnqueueReply, GrantEvent, HolderEntry,
    HolderView, Inspect, Inspection, KeyOptions, RecentHold, Release, ReleaseReply, WaiterView,
};
use crate::edge::TurnEvent;
use crate::ident::{Ident, InstanceId, WorkflowName};
use crate::limits::{
    HAND_ON_CHECK_DELAY_MS, KEYS_CHECKED_PER_ALARM_MAX, KEY_SUMMARIES_KEPT_MAX,
    TERMINATIONS_PER_CALL_MAX, WAKE_ATTEMPTS_PER_CALL_MAX,
};
use crate::sql::Counted;
use crate::transition::Effect;
use futures_util::future::join_all;
use js_sys::{Array, Promise};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectState;
use worker::{Delay, Env};

/// The Rust half of the `Coordinator` Durable Object.
#[wasm_bindgen]
pub struct CoordinatorCore {
    object: Rc<Object>,
}

struct Object {
    base: ObjectBase,
    config: Result<CoordinatorConfig, String>,
    /// Each key's summary as the last decision on it left it, so that the
    /// next one starts without reading it. Memory only: a restart (or a
    /// full map, at [`KEY_SUMMARIES_KEPT_MAX`]) means one read to reload.
    summaries: RefCell<HashMap<String, Summary>>,
    /// What the list of busy keys was told of each key (contract §10).
    reports: Reports,
}

#[wasm_bindgen]
impl CoordinatorCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> CoordinatorCore {
        let config = CoordinatorConfig::from_env(&env);
        CoordinatorCore {
            object: Rc::new(Object {
                base: ObjectBase::new(raw_state, env),
                config,
                summaries: RefCell::new(HashMap::new()),
                reports: Reports::default(),
            }),
        }
    }

    /// `enqueue`: `request` is `{ key, supersedes, instanceId, inputHash?, options? }`.
    pub fn enqueue(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.enqueue(r).await })
    }

    /// `acquire(key, instanceId, options?)`, the request `{ key, instanceId,
    /// options? }`. Answers at once (a value, not a Promise) when the first
    /// phase decides with no I/O to follow: the uncontended path (see
    /// [`Object::decide_now`]).
    pub fn acquire(&self, key: JsValue, instance_id: JsValue, options: JsValue) -> JsValue {
        let object = self.object.clone();
        let request = js::positional_request(key, instance_id, Some(options), |key, id| Acquire {
            key,
            instance_id: id,
            options: None,
        });
        let first = request.and_then(|r| {
            let step = object.acquire_first(&r)?;
            Ok((r, step))
        });
        object.send_reports();
        match first {
            Err(error) => Promise::reject(&error).into(),
            Ok((request, (step, false))) => match object.acquire_settled(&request, &step) {
                Some(outcome) => to_js(&outcome),
                None => {
                    js::promise(
                        async move { Ok(to_js(&object.acquire_rest(request, step).await?)) },
                    )
                    .into()
                }
            },
            Ok((request, (step, true))) => js::promise(async move {
                object.ensure_alarm().await?;
                Ok(to_js(&object.acquire_rest(request, step).await?))
            })
            .into(),
        }
    }

    /// `release(key, instanceId)`, the request `{ key, instanceId }`.
    /// Answers at once when nobody is to be woken and no alarm is to be armed.
    pub fn release(&self, key: JsValue, instance_id: JsValue) -> JsValue {
        let object = self.object.clone();
        let request = js::positional_request(key, instance_id, None, |key, id| Release {
            key,
            instance_id: id,
        });
        let decided = request.and_then(|r| {
            let decided = object.release_first(&r)?;
            Ok((r, decided))
        });
        object.send_reports();
        match decided {
            Err(error) => Promise::reject(&error).into(),
            Ok((request, (decided, false))) if decided.wake.is_empty() => {
                to_js(&object.release_logged(&request, &decided, None))
            }
            Ok((request, (decided, needs_check))) => js::promise(async move {
                if needs_check {
                    object.ensure_alarm().await?;
                }
                let next = object
                    .wake_chain(&request.key, decided.wake.clone())
                    .await?;
                Ok(to_js(&object.release_logged(&request, &decided, next)))
            })
            .into(),
        }
    }

    /// `inspect`: `request` is `{ key }`.
    pub fn inspect(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.inspect(r).await })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            object.alarm().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `listReport(key)`: reports the key to its list shard as it is now,
    /// and answers what it reported (`{ listed, holders, waiting,
    /// oldestSince, limit }`). `coordinatorList` asks it of an entry it
    /// doubts (one no report has confirmed for a while); not part of the
    /// contract.
    #[wasm_bindgen(js_name = listReport)]
    pub fn list_report(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            let key = key
                .as_string()
                .and_then(|k| Ident::new(k).ok())
                .ok_or_else(|| JsValue::from_str("listReport takes a key"))?;
            Ok(to_js(&object.list_report(&key).await?))
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        self.object.base.storage_work()
    }
}

impl Object {
    fn config(&self) -> Result<&CoordinatorConfig, JsValue> {
        self.config
            .as_ref()
            .map_err(|message| js_sys::Error::new(message).into())
    }

    /// The Workflow binding an instance is reached through: the one
    /// remembered for it, or the default (`WORKFLOW_BINDING`).
    fn workflow(&self, name: Option<&WorkflowName>) -> Result<Workflow, JsValue> {
        let config = self.config()?;
        Workflow::from_env(
            &self.base.env,
            name.map_or(config.workflow_binding.as_str(), |n| n.as_str()),
        )
    }

    fn grace_ms(&self) -> Result<u64, JsValue> {
        Ok(self.config()?.enqueue_grace_ms)
    }

    /// What the binding remembered for `holder` says about it.
    async fn liveness(&self, id: &InstanceId, workflow: Option<&WorkflowName>) -> Liveness {
        match self.workflow(workflow) {
            Ok(binding) => binding.liveness(id.as_str()).await,
            // A binding that vanished from the configuration, or a Baton
            // deployed before its Workflow (the first deploy's step 1):
            // nothing can be said, and nothing is taken on a guess. The
            // operator is told which binding is missing.
            Err(error) => {
                let (js::Thrown::Refused(message) | js::Thrown::Failed(message)) =
                    js::Thrown::of(&error);
                worker::console_warn!("{message}");
                Liveness::Unknown
            }
        }
    }

    /// Refuses options the configuration cannot honour (an unknown `workflow`).
    fn check_options(&self, options: Option<&KeyOptions>) -> Result<(), JsValue> {
        self.config()?
            .check_options(options)
            .map_err(|e| js::to_js_error(&e))
    }

    /// The decisions' settings, from the variables.
    fn settings(&self) -> Result<Settings, JsValue> {
        let config = self.config()?;
        Ok(Settings {
            grace_ms: config.enqueue_grace_ms,
            workflow: config.workflow_binding.clone(),
        })
    }

    /// One decision for `key` now, in this synchronous turn: load the view
    /// (from the summary kept in memory), decide, write, check. Returns
    /// the transition, or the refusal (nothing written).
    ///
    /// The fast path of `acquire` and `release` runs it outside the gate: a
    /// synchronous decision cannot interleave with another request (the
    /// SQL API is synchronous), so it needs no gate to be atomic, and
    /// skipping `blockConcurrencyWhile` saves a Promise, a closure and the
    /// microtasks that resolve them (measured: bench/profile.mjs,
    /// BENCHMARKS.md). The gate's other service, resetting the object when
    /// a broken invariant panics, is done by `js/worker.mjs`, which aborts
    /// the object when a call traps.
    fn decide_now(
        &self,
        key: &Ident,
        settings: &Settings,
        input: Input,
    ) -> Result<Transition, crate::error::BatonError> {
        self.ensure_schema();
        let sql = Counted::new(&self.base.sql);
        // Taken out: should the decision panic, the object restarts
        // without it anyway.
        let summary = self.summaries.borrow_mut().remove(key.as_str());
        let view = coordinator::load(&sql, key.as_str(), summary, &input);
        let checked = history::checked(&input).cloned();
        let now = now_ms();
        let transition = coordinator::decide(&view, settings, now, input)?;
        // What the decision adds to the key's history and list entry:
        // nothing for an uncontended acquire or release (contract §10).
        let happened = history::after(&view, checked.as_ref(), &transition);
        if happened.is_empty() {
            coordinator::write(&sql, key.as_str(), &transition.writes);
        } else {
            let waited = history::write_before(&sql, key.as_str(), &happened);
            coordinator::write(&sql, key.as_str(), &transition.writes);
            history::write_after(&sql, key.as_str(), &happened, &waited, now);
        }
        // A listed key shows its counts as they change: one with waiters
        // before or after the decision, or listed only for a dead holder's
        // hour (all known from the summaries, no read to find out). A key
        // without waiters and without a dead holder never reports.
        let (before, after) = (&view.summary, &transition.state.summary);
        let counts_changed = before.holders.len() != after.holders.len()
            || before.waiters != after.waiters
            || before.limit != after.limit;
        let refresh = !happened.report_due
            && counts_changed
            && (before.waiters > 0
                || after.waiters > 0
                || self.reports.listed_for_dead(key.as_str(), now));
        if happened.report_due || refresh {
            let s = &transition.state.summary;
            let busy = history::busy(
                &sql,
                key.as_str(),
                s.holders.len() as u32,
                s.waiters,
                s.limit,
            );
            self.reports.due(key, busy, now);
            if happened.report_due && transition.alarm_at_ms.is_none() {
                // The report is owed until the shard confirms it: the
                // alarm, set in this turn, sends it again if it is lost.
                self.alarm_soon();
            }
        }
        self.base.count_work(sql.work());
        // On in release builds too; it reads only what the decision loaded.
        coordinator::assert_view(&transition.state);
        let mut summaries = self.summaries.borrow_mut();
        if summaries.len() >= KEY_SUMMARIES_KEPT_MAX {
            summaries.clear();
        }
        summaries.insert(key.as_str().to_owned(), transition.state.summary.clone());
        Ok(transition)
    }

    /// Sets the alarm one holder-check period from now, in this turn (its
    /// write goes with the decision's), without waiting for it.
    fn alarm_soon(&self) {
        let Ok(config) = self.config() else {
            return;
        };
        let at = now_ms() + config.holder_check_ms;
        if let Ok(storage) = self.base.raw_state.storage() {
            let _ = storage.set_alarm(
                js_sys::Date::new(&JsValue::from_f64(at as f64)),
                js_sys::Object::new(),
            );
        }
    }

    /// Sends the list reports the last decisions made due, after the reply,
    /// in `waitUntil`; a confirmed one clears the key's owed mark.
    fn send_reports(self: &Rc<Self>) {
        for (key, report) in self.reports.take() {
            let object = self.clone();
            let send = js::promise(async move {
                object.report_sent(&key, report).await?;
                Ok(JsValue::UNDEFINED)
            });
            let _ = self.base.raw_state.wait_until(&send);
        }
    }

    /// Sends one report and clears the owed mark if the shard confirms it.
    async fn report_sent(
        self: &Rc<Self>,
        key: &Ident,
        report: crate::busy::Report,
    ) -> Result<bool, JsValue> {
        match self.reports.send(&self.base.env, key, report).await {
            Reported::Confirmed | Reported::NoList => {
                let object = self.clone();
                let key = key.clone();
                under_gate(&self.base.raw_state, move || {
                    object.ensure_schema();
                    history::paid(&Counted::new(&object.base.sql), key.as_str());
                })
                .await?;
                Ok(true)
            }
            Reported::Unconfirmed => Ok(false),
        }
    }

    /// The key as its list entry should show it, read under the gate.
    async fn busy_now(self: &Rc<Self>, key: &Ident) -> Result<(crate::busy::Busy, bool), JsValue> {
        let object = self.clone();
        let key = key.clone();
        under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let sql = Counted::new(&object.base.sql);
            let summary = object
                .summaries
                .borrow()
                .get(key.as_str())
                .cloned()
                .unwrap_or_else(|| coordinator::load_summary(&sql, key.as_str()));
            let busy = history::busy(
                &sql,
                key.as_str(),
                summary.holders.len() as u32,
                summary.waiters,
                summary.limit,
            );
            let owed = history::is_owed(&sql, key.as_str());
            object.base.count_work(sql.work());
            (busy, owed)
        })
        .await
    }

    /// `listReport`: the key reported as it is now.
    async fn list_report(self: &Rc<Self>, key: &Ident) -> Result<ListReported, JsValue> {
        let (busy, _) = self.busy_now(key).await?;
        let now = now_ms();
        let report = self.reports.now(key.as_str(), busy, now);
        self.report_sent(key, report).await?;
        Ok(ListReported {
            listed: busy.listed_at(now),
            holders: busy.holders,
            waiting: busy.waiting,
            oldest_since: busy.oldest_since_ms,
            limit: busy.limit,
        })
    }

    /// The holder-check alarm's part for the list: each key that owes a
    /// report, or whose counts changed since its last, is reported; a key
    /// still owing one keeps the alarm.
    async fn alarm_reports(self: &Rc<Self>, keys: Vec<String>) -> Result<(), JsValue> {
        let object = self.clone();
        let owed = under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            history::owed(&Counted::new(&object.base.sql), KEYS_CHECKED_PER_ALARM_MAX)
        })
        .await?;
        let mut all = keys;
        for key in owed {
            if !all.contains(&key) {
                all.push(key);
            }
        }
        let mut still_owed = false;
        for key in all {
            let Ok(key) = Ident::parse("key", &key) else {
                continue;
            };
            let (busy, owed) = self.busy_now(&key).await?;
            let Some(report) = self.reports.on_alarm(key.as_str(), busy, now_ms(), owed) else {
                continue;
            };
            let paid = self.report_sent(&key, report).await?;
            still_owed |= owed && !paid;
        }
        if still_owed {
            self.ensure_alarm().await?;
        }
        Ok(())
    }

    /// One decision for `key` under the gate, then the holder-check alarm
    /// if the key now needs it.
    async fn decide(
        self: &Rc<Self>,
        key: &Ident,
        input: Input,
    ) -> Result<Result<Transition, crate::error::BatonError>, JsValue> {
        let settings = self.settings()?;
        let object = self.clone();
        let key = key.clone();
        let decided = under_gate(&self.base.raw_state, move || {
            object.decide_now(&key, &settings, input)
        })
        .await?;
        self.send_reports();
        if decided.as_ref().is_ok_and(|t| t.alarm_at_ms.is_some()) {
            self.ensure_alarm().await?;
        }
        Ok(decided)
    }

    /// [`Self::decide`] for an input that is never refused.
    async fn settle(self: &Rc<Self>, key: &Ident, input: Input) -> Result<Transition, JsValue> {
        Ok(self
            .decide(key, input)
            .await?
            .expect("only a first phase is refused"))
    }

    fn ensure_schema(&self) {
        self.base.ensure_schema(migrate);
    }

    async fn ensure_alarm(&self) -> Result<(), JsValue> {
        let storage = self.base.state.storage();
        if storage.get_alarm().await?.is_none() {
            // workers-rs reads a bare integer as an offset from now, not a
            // time since the epoch; a Duration says so in the type.
            let period = std::time::Duration::from_millis(self.config()?.holder_check_ms);
            storage.set_alarm(period).await?;
        }
        Ok(())
    }

    async fn enqueue(self: &Rc<Self>, request: Enqueue) -> Result<EnqueueReply, JsValue> {
        self.check_options(request.options.as_ref())?;
        let key = request.key.clone();
        let logged_request = request.clone();
        let request = request.core();
        let first = self
            .decide(&key, Input::Enqueue(request.clone()))
            .await?
            .map_err(|e| js::to_js_error(&e))?;
        let reply = match first.reply {
            Reply::Enqueue(reply) => reply,
            Reply::EnqueueChecking { candidate, .. } => {
                let liveness = self
                    .liveness(&candidate.id, candidate.workflow.as_ref())
                    .await;
                let input = Input::EnqueueChecked {
                    request,
                    candidate,
                    liveness,
                };
                match self
                    .decide(&key, input)
                    .await?
                    .map_err(|e| js::to_js_error(&e))?
                    .reply
                {
                    Reply::Enqueue(reply) => reply,
                    _ => unreachable!("an enqueue's second phase replies an enqueue"),
                }
            }
            _ => unreachable!("an enqueue replies an enqueue or a check"),
        };
        let (decision, reason) = match &reply.coalesced_into {
            Some(into) => (
                "coalesced",
                format!("a live waiter with the same input: {into}"),
            ),
            None if reply.terminated.is_empty() => ("enqueued", "joined the queue".to_string()),
            None => (
                "enqueued",
                format!("superseded {} waiter(s)", reply.terminated.len()),
            ),
        };
        // A plain join waits only if its acquire finds the key taken: that
        // acquire's line says so.
        let kind = if reply.coalesced_into.is_none() && reply.terminated.is_empty() {
            Kind::Routine
        } else {
            Kind::Contended
        };
        decision_log::decision(
            kind,
            Scope::Key(key.as_str()),
            logged_request.instance_id.as_str(),
            decision,
            &reason,
            None,
        );
        self.terminate_all(&reply.terminated).await;
        Ok(reply.into())
    }

    /// `acquire`'s first phase, now: its step, and whether the key needs the alarm.
    fn acquire_first(&self, request: &Acquire) -> Result<(AcquireStep, bool), JsValue> {
        self.check_options(request.options.as_ref())?;
        let settings = self.settings()?;
        let t = self
            .decide_now(&request.key, &settings, Input::Acquire(request.core()))
            .map_err(|e| js::to_js_error(&e))?;
        let wake = wakes(&t);
        let step = match t.reply {
            Reply::Acquire(reply) => AcquireStep::Done(Decided { reply, wake }),
            Reply::AcquireChecking { holder, .. } => AcquireStep::Check { holder, wake },
            _ => unreachable!("an acquire replies an acquire or a check"),
        };
        Ok((step, t.alarm_at_ms.is_some()))
    }

    /// The answer, logged, when the first phase decided and nobody is to be
    /// woken; `None` when the call must go on asynchronously.
    fn acquire_settled(&self, request: &Acquire, step: &AcquireStep) -> Option<AcquireReply> {
        match step {
            AcquireStep::Done(Decided { reply, wake }) if wake.is_empty() => {
                let outcome = self.acquire_reply(request, *reply).ok()?;
                let kind = match outcome.as_str() {
                    "granted" => Kind::Routine,
                    _ => Kind::Contended,
                };
                decision_log::decision(
                    kind,
                    Scope::Key(request.key.as_str()),
                    request.instance_id.as_str(),
                    outcome.as_str(),
                    "decided without a check",
                    None,
                );
                Some(outcome)
            }
            _ => None,
        }
    }

    /// The rest of `acquire` after its first phase: wakes, the holder
    /// check, and the second phase.
    async fn acquire_rest(
        self: &Rc<Self>,
        request: Acquire,
        first: AcquireStep,
    ) -> Result<AcquireReply, JsValue> {
        let key = request.key.clone();
        let id = request.instance_id.clone();
        let original = request.clone();
        let request = request.core();
        let (reply, reason, waited_ms) = match first {
            AcquireStep::Done(Decided { reply, wake }) => {
                if !wake.is_empty() {
                    self.wake_chain(&key, wake).await?;
                }
                (reply, "decided without a check".to_string(), None)
            }
            AcquireStep::Check { holder, wake } => {
                // The slots handed ahead of the caller are woken while the
                // holder is checked.
                let (liveness, woken) = futures_util::future::join(
                    self.liveness(&holder.id, holder.workflow.as_ref()),
                    self.wake_chain(&key, wake),
                )
                .await;
                woken?;
                let input = Input::AcquireChecked {
                    request,
                    holder: holder.clone(),
                    liveness,
                };
                let t = self.settle(&key, input).await?;
                let waited_ms = match &t.state.member {
                    Some(Member::Waiter(w)) => Some(now_ms().saturating_sub(w.since_ms)),
                    _ => None,
                };
                let Reply::Acquire(reply) = t.reply else {
                    unreachable!("an acquire's second phase replies an acquire")
                };
                self.wake_chain(&key, wakes_of(&t.effects, &t.state.summary))
                    .await?;
                let reason = format!("holder {} checked: {liveness:?}", holder.id);
                (reply, reason, waited_ms)
            }
        };
        let outcome = self.acquire_reply(&original, reply)?;
        // This path wakes slots ahead of the caller or checks a holder: the
        // key is contended whatever the answer.
        decision_log::decision(
            Kind::Contended,
            Scope::Key(key.as_str()),
            id.as_str(),
            outcome.as_str(),
            &reason,
            waited_ms,
        );
        Ok(outcome)
    }

    /// `acquire`'s reply as the call asked for it: §1's string, or with
    /// `grant` the object, naming a waiter's event type.
    fn acquire_reply(
        &self,
        request: &Acquire,
        reply: coordinator::AcquireReply,
    ) -> Result<AcquireReply, JsValue> {
        let base = &self.config()?.turn_event_type;
        let grant = request.options.as_ref().and_then(|o| o.grant) == Some(true);
        Ok(AcquireReply::new(reply, grant, |turn| {
            coordinator::event_type(base, request.key.as_str(), turn)
        }))
    }

    /// `release`'s decision, now: its reply and wakes, and whether the key
    /// needs the alarm.
    fn release_first(
        &self,
        request: &Release,
    ) -> Result<(Decided<Option<InstanceId>>, bool), JsValue> {
        let settings = self.settings()?;
        let input = Input::Release(request.instance_id.clone());
        let t = self
            .decide_now(&request.key, &settings, input)
            .expect("a release is never refused");
        let wake = wakes(&t);
        let Reply::Release(reply) = t.reply else {
            unreachable!("a release replies a release")
        };
        Ok((Decided { reply, wake }, t.alarm_at_ms.is_some()))
    }

    /// Logs a release and shapes its reply; `next` is the instance the wake
    /// chain left holding the caller's slot.
    fn release_logged(
        &self,
        request: &Release,
        decided: &Decided<Option<InstanceId>>,
        next: Option<InstanceId>,
    ) -> ReleaseReply {
        let reason = match (&decided.reply, &next) {
            (None, _) => "released as a waiter, or held nothing".to_string(),
            (Some(_), Some(next)) => format!("handed the key to {next}"),
            (Some(_), None) => "freed the key: no live waiter".to_string(),
        };
        let kind = if next.is_some() {
            Kind::Contended
        } else {
            Kind::Routine
        };
        decision_log::decision(
            kind,
            Scope::Key(request.key.as_str()),
            request.instance_id.as_str(),
            "released",
            &reason,
            None,
        );
        ReleaseReply { next }
    }

    async fn inspect(self: &Rc<Self>, request: Inspect) -> Result<Inspection, JsValue> {
        let key = request.key;
        let name = key.clone();
        let default_workflow = self.config()?.workflow_binding.clone();
        let object = self.clone();
        let (inspection, needs_check) = under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let sql = Counted::new(&object.base.sql);
            let (summary, waiters, superseded) = coordinator::inspect(&sql, key.as_str());
            let (recent, counts) = history::inspect(&sql, key.as_str());
            object.base.count_work(sql.work());
            let needs_check = coordinator::needs_check(&summary);
            let holders = summary.holders;
            let inspection = Inspection {
                key: name,
                holder: holders.first().cloned().map(HolderView::from),
                waiting: waiters.into_iter().map(WaiterView::from).collect(),
                superseded,
                limit: summary.limit,
                holders: holders
                    .into_iter()
                    .map(|h| HolderEntry::new(h, &default_workflow))
                    .collect(),
                recent: recent.into_iter().map(RecentHold::from).collect(),
                counts: counts.into(),
            };
            (inspection, needs_check)
        })
        .await?;
        // As every decision does: a key someone waits on keeps the alarm.
        if needs_check {
            self.ensure_alarm().await?;
        }
        Ok(inspection)
    }

    /// The holder-check alarm: for each key with someone behind its holders
    /// (or a hand-over not yet confirmed), check the holders due a check
    /// and act on the answers.
    async fn alarm(self: &Rc<Self>) -> Result<(), JsValue> {
        let object = self.clone();
        let keys = under_gate(&self.base.raw_state, move || {
            object.ensure_schema();
            let sql = Counted::new(&object.base.sql);
            coordinator::keys_due(&sql, KEYS_CHECKED_PER_ALARM_MAX)
        })
        .await?;
        let listed = keys.clone();
        for key in keys {
            // Keys were stored after validation; one that no longer parses is skipped, not fatal.
            let Ok(key) = Ident::parse("key", &key) else {
                continue;
            };
            let Reply::Ticked(due) = self.settle(&key, Input::Tick).await?.reply else {
                unreachable!("a tick replies its checks")
            };
            if due.is_empty() {
                continue;
            }
            let answers: Vec<(Holder, Liveness)> = join_all(due.into_iter().map(|holder| async {
                let liveness = self.liveness(&holder.id, holder.workflow.as_ref()).await;
                (holder, liveness)
            }))
            .await;
            for (holder, liveness) in &answers {
                decision_log::decision(
                    Kind::Contended,
                    Scope::Key(key.as_str()),
                    holder.id.as_str(),
                    "checked",
                    &format!("holder check: {liveness:?}"),
                    None,
                );
            }
            // Each answer re-enters on its own.
            let mut wake = Vec::new();
            for (holder, liveness) in answers {
                let t = self
                    .settle(&key, Input::TickChecked { holder, liveness })
                    .await?;
                wake.extend(wakes(&t));
            }
            self.wake_chain(&key, wake).await?;
        }
        self.alarm_reports(listed).await
    }

    /// Wakes the holders just handed a slot of `key`, each through its own
    /// Workflow: each is sent the turn event now, and asked its status
    /// [`HAND_ON_CHECK_DELAY_MS`] later, after the reply, in `waitUntil`
    /// ([`Self::settle_woken`]). Returns the first instance sent the event.
    /// At most [`WAKE_ATTEMPTS_PER_CALL_MAX`] are sent; past them, and should
    /// the object stop before the check, the holder-check alarm carries on:
    /// a holder handed a slot keeps it armed until it confirms.
    async fn wake_chain(
        self: &Rc<Self>,
        key: &Ident,
        mut handed: Vec<Holder>,
    ) -> Result<Option<InstanceId>, JsValue> {
        handed.truncate(WAKE_ATTEMPTS_PER_CALL_MAX as usize);
        let Some(first) = handed.first().map(|h| h.id.clone()) else {
            return Ok(None);
        };
        let sent = self.send_round(key, handed).await?;
        let object = self.clone();
        let key = key.clone();
        let check = js::promise(async move {
            Delay::from(Duration::from_millis(HAND_ON_CHECK_DELAY_MS)).await;
            let answers = liveness_of(sent).await;
            if let Err(error) = object.settle_woken(&key, answers).await {
                worker::console_error!("baton: hand-on of key {key} failed: {error:?}");
            }
            Ok(JsValue::UNDEFINED)
        });
        // The raw binding, not `State::wait_until`: that one is generic
        // and builds its own copy of the future-to-promise glue (P6).
        let _ = self.base.raw_state.wait_until(&check);
        Ok(Some(first))
    }

    /// The event that tells `holder` it was handed a slot of `key`: §1's
    /// `{ key }` on `TURN_EVENT_TYPE`, or for a grant registration the grant
    /// itself on its own type (§1b). The same for every send to the same
    /// hand-over, so a re-sent grant says what the first said.
    fn turn(&self, key: &Ident, holder: &Holder) -> Result<Turn, JsValue> {
        let base = &self.config()?.turn_event_type;
        let payload = match holder.turn {
            coordinator::Turn::Shared => to_js(&TurnEvent::Key(key.as_str())),
            coordinator::Turn::Own(_) => to_js(&GrantEvent {
                key: key.as_str(),
                instance_id: holder.id.as_str(),
                status: AcquireOutcome::Granted,
                fence: holder.fence,
            }),
        };
        Ok(Turn {
            event_type: coordinator::event_type(base, key.as_str(), holder.turn),
            payload,
        })
    }

    /// Sends `holder` the turn event through its own Workflow; `None` when
    /// that binding is gone from the configuration (nothing is then taken
    /// on a guess: its status reads as unknown).
    async fn send_turn(&self, key: &Ident, holder: &Holder, turn: &Turn) -> Option<Sent> {
        let workflow = self.workflow(holder.workflow.as_ref()).ok()?;
        let sent = Sent::send(&workflow, &holder.id, turn).await;
        let scope = Scope::Key(key.as_str());
        decision_log::decision(
            Kind::Contended,
            scope,
            holder.id.as_str(),
            "woken",
            "handed the key",
            None,
        );
        Some(sent)
    }

    /// Sends each of `handed` its turn event, at once. A grant the engine
    /// accepted is recorded (the holder is then told, and the alarm sends
    /// it no more); one that failed stays to send, and the alarm retries it.
    async fn send_round(
        self: &Rc<Self>,
        key: &Ident,
        handed: Vec<Holder>,
    ) -> Result<Vec<(Holder, Option<Sent>)>, JsValue> {
        let sent = join_all(handed.into_iter().map(|holder| async move {
            let sent = match self.turn(key, &holder) {
                Ok(turn) => self.send_turn(key, &holder, &turn).await,
                Err(_) => None,
            };
            (holder, sent)
        }))
        .await;
        let accepted: Vec<Holder> = sent
            .iter()
            .filter(|(holder, sent)| {
                matches!(holder.turn, coordinator::Turn::Own(_))
                    && sent.as_ref().is_some_and(Sent::accepted)
            })
            .map(|(holder, _)| holder.clone())
            .collect();
        for holder in accepted {
            let input = Input::Woken {
                holder,
                accepted: true,
                liveness: Liveness::Alive,
            };
            self.settle(key, input).await?;
        }
        Ok(sent)
    }

    /// Acts on the status of holders woken with a slot of `key`. One found
    /// dead is reported back with the snapshot it was handed as (its slot
    /// moves on to the next waiter; one not created yet keeps its slot
    /// within its grace, and the alarm re-checks it); those handed the freed
    /// slots are woken and checked at once, a round at a time. Their status
    /// query may slow a live one's acquire, but a dead woken holder only
    /// follows a crash, and a chain of them should not wait a second each.
    /// At most [`WAKE_ATTEMPTS_PER_CALL_MAX`] more are woken; past them the
    /// holder-check alarm carries on. Not `wake::first_alive`, which follows
    /// one chain of ids: a decision here may hand several slots at once.
    async fn settle_woken(
        self: &Rc<Self>,
        key: &Ident,
        mut answers: Vec<(Holder, Liveness)>,
    ) -> Result<(), JsValue> {
        let grace_ms = self.grace_ms()?;
        let mut attempts = 0;
        loop {
            let mut handed = Vec::new();
            for (holder, liveness) in answers {
                if let Liveness::Alive | Liveness::Unknown = liveness {
                    continue;
                }
                let dead = liveness.is_dead(holder.enqueued_ms, now_ms(), grace_ms);
                let reason = if dead {
                    "handed the key but dead"
                } else {
                    "handed the key but not created yet: keeps it within the grace"
                };
                let scope = Scope::Key(key.as_str());
                decision_log::decision(
                    Kind::Contended,
                    scope,
                    holder.id.as_str(),
                    "skipped",
                    reason,
                    None,
                );
                let input = Input::Woken {
                    holder,
                    accepted: false,
                    liveness,
                };
                handed.extend(wakes(&self.settle(key, input).await?));
            }
            handed.truncate((WAKE_ATTEMPTS_PER_CALL_MAX - attempts) as usize);
            if handed.is_empty() {
                return Ok(());
            }
            attempts += handed.len() as u32;
            answers = liveness_of(self.send_round(key, handed).await?).await;
        }
    }

    /// Terminates superseded instances, best effort and concurrently, each
    /// through its own Workflow: they are already recorded as superseded, so
    /// one that survives still gets `"superseded"` from `acquire` and never
    /// runs.
    async fn terminate_all(&self, waiters: &[Waiter]) {
        if waiters.is_empty() {
            return;
        }
        let pending = Array::new();
        for waiter in waiters.iter().take(TERMINATIONS_PER_CALL_MAX) {
            let Ok(workflow) = self.workflow(waiter.workflow.as_ref()) else {
                continue;
            };
            let id = waiter.id.to_string();
            pending.push(&js::promise(async move {
                workflow.instance(&id).await?.stop().await?;
                Ok(JsValue::UNDEFINED)
            }));
        }
        // allSettled never rejects; individual failures are the best effort's cost.
        let _ = JsFuture::from(Promise::all_settled(&pending)).await;
    }
}

/// What `listReport` answers.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ListReported {
    listed: bool,
    holders: u32,
    waiting: u32,
    oldest_since: Option<u64>,
    limit: u32,
}

/// The holders a transition hands a slot to be woken, as its writes left them.
fn wakes(t: &Transition) -> Vec<Holder> {
    wakes_of(&t.effects, &t.state.summary)
}

fn wakes_of(effects: &[Effect], summary: &Summary) -> Vec<Holder> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Wake(wake) => summary.holders.iter().find(|h| h.id == wake.id).cloned(),
            _ => None,
        })
        .collect()
}

/// The status of each instance sent the turn event, one after another (a
/// binding gone from the configuration reads as unknown).
async fn liveness_of(sent: Vec<(Holder, Option<Sent>)>) -> Vec<(Holder, Liveness)> {
    let mut answers = Vec::with_capacity(sent.len());
    for (holder, sent) in sent {
        let liveness = match sent {
            Some(sent) => sent.liveness(&holder.id).await,
            None => Liveness::Unknown,
        };
        answers.push((holder, liveness));
    }
    answers
}
