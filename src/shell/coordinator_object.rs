//! The `Coordinator` Durable Object: `crate::coordinator` run by the
//! shell's driver (`shell::driver`). This file is only the concept's
//! [`Rules`], its [`Memory`] (each key's summary) and its method bodies.
//!
//! Every decision is one `coordinator::decide` on the view
//! `coordinator::load` reads for its input, its writes carried out by
//! `coordinator::write`, in one synchronous turn: under the gate, or, for
//! `acquire` and `release`, in the caller's turn (`Driver::try_now`: a
//! synchronous decision cannot interleave with another request, and the
//! gate's Promise is a fixed cost on the path P3 measures). The driver then
//! ensures the holder-check alarm if the key needs it, and performs what
//! the decision asked for: the status checks (whose answers re-enter as
//! the `*Checked` inputs), the turn events (whose acceptance re-enters as
//! `Input::Woken`, and the woken holder's status, asked
//! `HAND_ON_CHECK_DELAY_MS` after the reply, as `Input::Woken` again when
//! it is not alive) and the terminations. The tables are the truth; the
//! only memory kept between decisions is each key's summary
//! (`coordinator::Summary`, the transition's state), which equals its rows
//! since this object is their only writer.
//!
//! Everything a decision causes is in its transition
//! (`coordinator::Transition`): the history among its writes, the list
//! report it is due and its decision-log line. [`Summaries::write`], which
//! every committed decision passes through, commits the writes, prints the
//! line as it is and queues the report; it decides none of them.
//!
//! JS callers reach these methods through the `Coordinator` class in
//! `js/worker.mjs`, which extends `DurableObject` (workerd refuses RPC to a
//! class that does not) and only turns the contract's positional arguments
//! into the request object each method here takes. That class also aborts
//! the object when a call traps (a broken invariant outside the gate).

use super::busy_report::{Reports, Sent as Reported};
use super::config::WorkflowConfig;
use super::decision_log::{self, Scope};
use super::driver::{Driver, Memory, NextAlarm, Now, Rules, Sweep, TransitionOf};
use super::js::{self, now_ms, to_js};
use super::object::ObjectBase;
use super::sqlite::ObjectSql;
use crate::busy::reporter::Due;
use crate::coordinator::history;
use crate::coordinator::{self, migrate, Holder, Input, Reply, Settings, Summary, View, Write};
use crate::edge::coordinator::{
    Acquire, AcquireReply, Enqueue, EnqueueReply, HolderEntry, HolderView, Inspect, Inspection,
    KeyOptions, RecentHold, Release, ReleaseReply, WaiterView,
};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId};
use crate::limits::{KEYS_CHECKED_PER_ALARM_MAX, KEY_SUMMARIES_KEPT_MAX};
use crate::sql::Counted;
use crate::transition::LogLine;
use crate::transition::{Alarm, Transition};
use js_sys::Promise;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Coordinator concept as the driver runs it.
pub struct Coordinator;

/// What a decision reads: the key's view, with the key and the settings it
/// is decided by.
pub struct Keyed {
    key: String,
    view: View,
    settings: Rc<Settings>,
    /// In a transition's state: what the decision caused beside its writes
    /// and effects, for [`Summaries::write`].
    outputs: Option<Outputs>,
}

/// What a decision caused beside its writes and effects: its log line and
/// the report its key's list entry is due, at the time it was taken.
pub struct Outputs {
    log: Option<LogLine>,
    report: Due,
    now_ms: u64,
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
    type Write = Write;
    type State = Keyed;
    type Effect = coordinator::Effect;
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
        migrate(sql);
    }
    /// The core's decision; its log line and report go with its state.
    fn decide(state: &Keyed, now_ms: u64, input: Input) -> Result<TransitionOf<Self>, BatonError> {
        let t = coordinator::decide(&state.view, &state.settings, now_ms, input)?;
        Ok(Transition {
            reply: t.reply,
            writes: t.writes,
            effects: t.effects,
            alarm: t.alarm,
            state: Keyed {
                key: state.key.clone(),
                view: t.state,
                settings: state.settings.clone(),
                outputs: Some(Outputs {
                    log: t.log,
                    report: t.report,
                    now_ms,
                }),
            },
        })
    }
    /// On in release builds too; it reads only what the decision loaded.
    fn assert_invariants(state: &Keyed) {
        coordinator::assert_view(&state.view);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Key(key)
    }
}

impl Coordinator {
    /// Commits a transition's writes (the Coordinator loads and writes
    /// through its memory, [`Summaries`]).
    fn write(sql: &ObjectSql, key: &str, transition: &TransitionOf<Self>) {
        let counted = Counted::new(sql);
        coordinator::write(&counted, key, &transition.writes);
        sql.count_work(counted.work());
    }
}

/// Each key's summary as the last decision on it left it, so that the
/// next one starts without reading it; and the settings decisions read.
/// Memory only: a restart (or a full map, at [`KEY_SUMMARIES_KEPT_MAX`])
/// means one read to reload.
#[derive(Default)]
pub struct Summaries {
    settings: Option<Rc<Settings>>,
    summaries: HashMap<String, Summary>,
    /// What the list of busy keys was told of each key (contract §10),
    /// and the reports decisions made due, to send after the reply.
    reports: Rc<Reports>,
    /// The holder-check period, for [`Summaries::committed`].
    holder_check_ms: u64,
    /// The last decision left a report owed and no alarm armed.
    alarm_soon: bool,
}

impl Memory<Coordinator> for Summaries {
    fn configure(&mut self, config: &WorkflowConfig) {
        self.settings = Some(Rc::new(Settings {
            grace_ms: config.enqueue_grace_ms,
            workflow: config.workflow_binding.clone(),
        }));
        self.holder_check_ms = config.holder_check_ms;
    }
    fn load(&mut self, sql: &ObjectSql, key: &str, input: &Input) -> Keyed {
        let settings = self
            .settings
            .clone()
            .expect("every method checks the variables before deciding");
        let counted = Counted::new(sql);
        // Taken out: should the decision be refused or panic, the next one
        // reads the rows again.
        let summary = self.summaries.remove(key);
        let view = coordinator::load(&counted, key, summary, input);
        sql.count_work(counted.work());
        Keyed {
            key: key.to_owned(),
            view,
            settings,
            outputs: None,
        }
    }
    /// The commit, the decision's log line printed, its list report
    /// queued, and the summary kept.
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &TransitionOf<Coordinator>) {
        let outputs = transition
            .state
            .outputs
            .as_ref()
            .expect("a transition's state carries what the decision caused");
        Coordinator::write(sql, key, transition);
        if let Some(line) = &outputs.log {
            print(key, line);
        }
        let now = outputs.now_ms;
        let send = match outputs.report {
            Due::Nothing => false,
            Due::Counts | Due::Owed => true,
            Due::CountsIfListed => self.reports.listed_for_dead(key, now),
        };
        if send {
            let s = &transition.state.view.summary;
            let counted = Counted::new(sql);
            let busy = history::busy(&counted, key, s.holders.len() as u32, s.waiters, s.limit);
            sql.count_work(counted.work());
            // Keys were stored after validation.
            if let Ok(ident) = Ident::parse("key", key) {
                self.reports.due(&ident, busy, now);
            }
            // The report is owed until the shard confirms it: the alarm,
            // set in this turn, sends it again if it is lost.
            self.alarm_soon = outputs.report == Due::Owed && transition.alarm == Alarm::Keep;
        }
        if self.summaries.len() >= KEY_SUMMARIES_KEPT_MAX {
            self.summaries.clear();
        }
        let summary = transition.state.view.summary.clone();
        self.summaries.insert(key.to_owned(), summary);
    }
    /// Sets the alarm one holder-check period from now when the decision
    /// left a report owed and no alarm of its own, in this turn (its write
    /// goes with the decision's), without waiting for it.
    fn committed(&mut self, base: &ObjectBase) {
        if !std::mem::take(&mut self.alarm_soon) {
            return;
        }
        let at = now_ms() + self.holder_check_ms;
        if let Ok(storage) = base.raw_state.storage() {
            let _ = storage.set_alarm(
                js_sys::Date::new(&JsValue::from_f64(at as f64)),
                js_sys::Object::new(),
            );
        }
    }
    /// Sends the list reports the decisions made due, after the reply.
    fn decided(driver: &Rc<Object>) {
        driver.send_reports();
    }
}

type Object = Driver<Coordinator, Summaries>;

/// The Rust half of the `Coordinator` Durable Object.
#[wasm_bindgen]
pub struct CoordinatorCore {
    object: Rc<Object>,
}

#[wasm_bindgen]
impl CoordinatorCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> CoordinatorCore {
        CoordinatorCore {
            object: Driver::new(raw_state, env),
        }
    }

    /// `enqueue`: `request` is `{ key, supersedes, instanceId, inputHash?, options? }`.
    pub fn enqueue(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.enqueue(r).await })
    }

    /// `acquire(key, instanceId, options?)`, the request `{ key, instanceId,
    /// options? }`. Answers at once (a value, not a Promise) when the
    /// decision has nothing to perform: the uncontended path.
    pub fn acquire(&self, key: JsValue, instance_id: JsValue, options: JsValue) -> JsValue {
        let object = self.object.clone();
        let request = js::positional_request(key, instance_id, Some(options), |key, id| Acquire {
            key,
            instance_id: id,
            options: None,
        });
        let now = request.and_then(|r| {
            let now = object.acquire_now(&r)?;
            Ok((r, now))
        });
        object.send_reports();
        match now {
            Err(error) => Promise::reject(&error).into(),
            Ok((request, Now::Answered(reply))) => match object.acquire_reply(&request, reply) {
                Ok(reply) => to_js(&reply),
                Err(error) => Promise::reject(&error).into(),
            },
            Ok((request, Now::Pending(t))) => js::promise(async move {
                let reply = object.carry_on(&request.key, t).await?;
                let reply = reply.map_err(|e| js::to_js_error(&e))?;
                Ok(to_js(&object.acquire_reply(&request, reply)?))
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
        let now = request.and_then(|r| {
            let now = object.release_now(&r)?;
            Ok((r, now))
        });
        object.send_reports();
        match now {
            Err(error) => Promise::reject(&error).into(),
            Ok((_, Now::Answered(reply))) => to_js(&release_reply(reply)),
            Ok((request, Now::Pending(t))) => js::promise(async move {
                let reply = object.carry_on(&request.key, t).await?;
                let reply = reply.map_err(|e| js::to_js_error(&e))?;
                Ok(to_js(&release_reply(reply)))
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
            object.config()?;
            let keys = object.alarm().await?;
            object.alarm_reports(keys).await?;
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

impl Driver<Coordinator, Summaries> {
    /// Refuses options the configuration cannot honour (an unknown `workflow`).
    fn check_options(&self, options: Option<&KeyOptions>) -> Result<(), JsValue> {
        self.config()?
            .check_options(options)
            .map_err(|e| js::to_js_error(&e))
    }

    async fn enqueue(self: &Rc<Self>, request: Enqueue) -> Result<EnqueueReply, JsValue> {
        self.check_options(request.options.as_ref())?;
        let input = Input::Enqueue(request.core());
        match self.run(&request.key, input).await? {
            Ok(Reply::Enqueue(reply)) => Ok(reply.into()),
            Ok(_) => unreachable!("an enqueue is answered an enqueue"),
            Err(refusal) => Err(js::to_js_error(&refusal)),
        }
    }

    /// `acquire`'s decision, in the caller's turn.
    fn acquire_now(&self, request: &Acquire) -> Result<Now<Coordinator>, JsValue> {
        self.check_options(request.options.as_ref())?;
        self.try_now(&request.key, Input::Acquire(request.core()))
            .map_err(|e| js::to_js_error(&e))
    }

    /// `acquire`'s reply as the call asked for it: §1's string, or with
    /// `grant` the object, naming a waiter's event type.
    fn acquire_reply(&self, request: &Acquire, reply: Reply) -> Result<AcquireReply, JsValue> {
        let Reply::Acquire(reply) = reply else {
            unreachable!("an acquire is answered an acquire")
        };
        let base = &self.config()?.turn_event_type;
        let grant = request.options.as_ref().and_then(|o| o.grant) == Some(true);
        Ok(AcquireReply::new(reply, grant, |turn| {
            coordinator::event_type(base, request.key.as_str(), turn)
        }))
    }

    /// `release`'s decision, in the caller's turn (never refused).
    fn release_now(&self, request: &Release) -> Result<Now<Coordinator>, JsValue> {
        self.config()?;
        let input = Input::Release(request.instance_id.clone());
        self.try_now(&request.key, input)
            .map_err(|e| js::to_js_error(&e))
    }

    async fn inspect(self: &Rc<Self>, request: Inspect) -> Result<Inspection, JsValue> {
        let key = request.key;
        let name = key.clone();
        let default_workflow = self.config()?.workflow_binding.clone();
        let (inspection, needs_check) = self
            .read(move |sql| {
                let counted = Counted::new(sql);
                let (summary, waiters, superseded) = coordinator::inspect(&counted, key.as_str());
                let (recent, counts) = history::inspect(&counted, key.as_str());
                sql.count_work(counted.work());
                let needs_check = coordinator::needs_check(&summary);
                let waiting = (1..)
                    .zip(waiters)
                    .map(|(position, w)| WaiterView::new(w, position, &summary))
                    .collect();
                let holders = summary.holders;
                let inspection = Inspection {
                    key: name,
                    holder: holders.first().cloned().map(HolderView::from),
                    waiting,
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
            self.arm_alarm().await?;
        }
        Ok(inspection)
    }

    /// What the list of busy keys was told, and what is to send.
    fn reports(&self) -> Rc<Reports> {
        self.memory(|m| m.reports.clone())
    }

    /// Sends the list reports the last decisions made due, after the reply,
    /// in `waitUntil`; a confirmed one clears the key's owed mark.
    fn send_reports(self: &Rc<Self>) {
        for (key, report) in self.reports().take() {
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
        match self.reports().send(&self.base.env, key, report).await {
            Reported::Confirmed | Reported::NoList => {
                let key = key.clone();
                self.read(move |sql| history::paid(&Counted::new(sql), key.as_str()))
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
        self.read(move |sql| {
            let counted = Counted::new(sql);
            let kept = object.memory(|m| m.summaries.get(key.as_str()).cloned());
            let summary = kept.unwrap_or_else(|| coordinator::load_summary(&counted, key.as_str()));
            let busy = history::busy(
                &counted,
                key.as_str(),
                summary.holders.len() as u32,
                summary.waiters,
                summary.limit,
            );
            let owed = history::is_owed(&counted, key.as_str());
            sql.count_work(counted.work());
            (busy, owed)
        })
        .await
    }

    /// `listReport`: the key reported as it is now.
    async fn list_report(self: &Rc<Self>, key: &Ident) -> Result<ListReported, JsValue> {
        let (busy, _) = self.busy_now(key).await?;
        let now = now_ms();
        let report = self.reports().now(key.as_str(), busy, now);
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
        let owed = self
            .read(|sql| history::owed(&Counted::new(sql), KEYS_CHECKED_PER_ALARM_MAX))
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
            let Some(report) = self.reports().on_alarm(key.as_str(), busy, now_ms(), owed) else {
                continue;
            };
            let paid = self.report_sent(&key, report).await?;
            still_owed |= owed && !paid;
        }
        if still_owed {
            self.arm_alarm().await?;
        }
        Ok(())
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

/// `release`'s reply: the first instance handed the caller's slot.
fn release_reply(reply: Reply) -> ReleaseReply {
    let Reply::Release(next) = reply else {
        unreachable!("a release is answered a release")
    };
    ReleaseReply { next }
}

/// Prints a decision's line as the core wrote it.
fn print(key: &str, line: &LogLine) {
    decision_log::line(Scope::Key(key), line);
}
