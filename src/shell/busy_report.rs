//! The Coordinator's reports to its key's list shard (contract §10): the
//! reporters kept in the object's memory (`crate::busy::reporter`), the
//! reports a decision made due, sent after the caller's reply in
//! `waitUntil`, and the RPC to the shard. Which decisions make a report
//! due is the decision's own output (`coordinator::Transition::report`, by
//! `crate::busy::reporter::due`), and one that owes a report has stored
//! the mark among its writes; a confirmed report clears the mark, and the
//! holder-check alarm sends what is still owed.
//!
//! The Coordinator object's sending lives here too (its `send_reports`,
//! `listReport` and the alarm's part), beside the reporters it drives.
//!
//! A Worker without the `BUSY_LIST` binding (an embedding that has not
//! added the class yet) lists nothing: a report owed is then dropped as
//! paid, so no alarm keeps running for it.

use super::busy_service::{shard_count, LIST_BINDING};
use super::coordinator_object::Object;
use super::js::{self, now_ms, to_js};
use super::stub::call_object;
use crate::busy::reporter::{Answered, Due, Reporter};
use crate::busy::{shard_name, shard_of, Answer, Busy, Report};
use crate::coordinator::{self, health_rows, history};
use crate::edge::busy::{ShardReport, ShardReportReply};
use crate::ident::Ident;
use crate::limits::{KEYS_CHECKED_PER_ALARM_MAX, KEY_SUMMARIES_KEPT_MAX};
use crate::sql::Counted;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsValue;
use worker::Env;

/// What an object keeps for its keys' list reports, in memory only.
#[derive(Default)]
pub struct Reports {
    /// Each key's reporter. Bounded as the summaries are: a full map
    /// starts over (every reporter then knows nothing, which only costs a
    /// report more from the alarm).
    reporters: RefCell<HashMap<String, Reporter>>,
    /// Reports decided in a synchronous turn, to send after the reply.
    outbox: RefCell<Vec<(Ident, Report)>>,
}

/// A Worker that lists nothing (no `BUSY_LIST` binding) owes nothing: a
/// report is taken as shown, and any owed mark goes.
const NOTHING_LISTED: Answered = Answered {
    confirmed: true,
    follow_up_at_ms: None,
    clears_mark: true,
};

impl Reports {
    fn with<T>(&self, key: &str, f: impl FnOnce(&mut Reporter) -> T) -> T {
        let mut reporters = self.reporters.borrow_mut();
        if !reporters.contains_key(key) && reporters.len() >= KEY_SUMMARIES_KEPT_MAX {
            reporters.clear();
        }
        f(reporters.entry(key.to_owned()).or_default())
    }

    /// A report of `busy` for a decision that made one due, to send after
    /// the reply ([`Reports::take`]).
    pub fn due(&self, key: &Ident, busy: Busy, now_ms: u64) {
        let report = self.with(key.as_str(), |r| r.report(busy, now_ms));
        self.outbox.borrow_mut().push((key.clone(), report));
    }

    /// Whether a decision that made `due` sends its report now
    /// (`Reporter::sends_now`): the caller then draws it with [`Reports::due`].
    /// A key this object has no reporter for told nothing: it is asked of
    /// a fresh one, so an uncontended call adds no entry.
    pub fn sends_now(&self, key: &str, due: Due, now_ms: u64) -> bool {
        match self.reporters.borrow_mut().get_mut(key) {
            Some(reporter) => reporter.sends_now(due, now_ms),
            None => Reporter::default().sends_now(due, now_ms),
        }
    }

    /// The reports decided since the last take.
    pub fn take(&self) -> Vec<(Ident, Report)> {
        std::mem::take(&mut *self.outbox.borrow_mut())
    }

    /// What the holder-check alarm sends for `key`, if anything.
    pub fn on_alarm(&self, key: &str, busy: Busy, now_ms: u64, owed: bool) -> Option<Report> {
        self.with(key, |r| r.on_alarm(busy, now_ms, owed))
    }

    /// A report of `busy` now, whatever was said (a read doubts the entry).
    pub fn now(&self, key: &str, busy: Busy, now_ms: u64) -> Report {
        self.with(key, |r| r.report(busy, now_ms))
    }

    /// Sends `report` of `key` to its shard and reads what its answer came
    /// to (`Reporter::answered`): whether the shard shows it, whether the
    /// owed mark goes, and when a report of the key as it then is follows.
    /// A report refused on the way is unconfirmed, still owed.
    pub async fn send(&self, env: &Env, key: &Ident, report: Report) -> Answered {
        if env.durable_object(LIST_BINDING).is_err() {
            return NOTHING_LISTED;
        }
        let shards = match shard_count(env) {
            Ok(shards) => shards,
            Err(error) => {
                worker::console_warn!(
                    "baton: list report of {key} not sent: {:?}",
                    error.into_js()
                );
                return Answered::default();
            }
        };
        let shard = shard_name(shard_of(key.as_str(), shards));
        let message = to_js(&ShardReport::new(key.clone(), &report));
        let answer = match call_object(env, LIST_BINDING, &shard, "report", &[message]).await {
            Ok(answer) => answer,
            Err(error) => {
                worker::console_warn!(
                    "baton: list report of {key} failed (the alarm sends it again): {:?}",
                    error.into_js()
                );
                return Answered::default();
            }
        };
        let Ok(reply) = serde_wasm_bindgen::from_value::<ShardReportReply>(answer) else {
            return Answered::default();
        };
        let answer: Answer = reply.into();
        self.with(key.as_str(), |r| r.answered(report.stamp, answer))
    }
}

impl Object {
    /// What the list of busy keys was told, and what is to send.
    fn reports(&self) -> Rc<Reports> {
        self.memory(|m| m.reports.clone())
    }

    /// Sends the list reports the last decisions made due, after the reply,
    /// in `waitUntil`; a confirmed one clears the key's owed mark.
    pub(super) fn send_reports(self: &Rc<Self>) {
        for (key, report) in self.reports().take() {
            let object = self.clone();
            let send = js::promise(async move {
                object.report_sent(&key, report).await?;
                Ok(JsValue::UNDEFINED)
            });
            let _ = self.base.raw_state.wait_until(&send);
        }
    }

    /// Sends one report, and the reports of the key as it is that follow
    /// it while decisions change its counts on the way (each no sooner
    /// than `LIST_REPORT_SPACING_MS` after the one before); clears the owed
    /// mark when the shard confirms one and the mark may be stored.
    /// Returns whether the shard confirmed one.
    async fn report_sent(self: &Rc<Self>, key: &Ident, report: Report) -> Result<bool, JsValue> {
        let (mut report, mut paid) = (report, false);
        loop {
            let answered = self.reports().send(&self.base.env, key, report).await;
            paid |= answered.confirmed;
            if answered.clears_mark {
                let key = key.clone();
                self.read(move |sql| history::paid(&Counted::new(sql), key.as_str()))
                    .await?;
            }
            let Some(at_ms) = answered.follow_up_at_ms else {
                return Ok(paid);
            };
            let wait_ms = at_ms.saturating_sub(now_ms());
            if wait_ms > 0 {
                worker::Delay::from(Duration::from_millis(wait_ms)).await;
            }
            let (busy, _) = self.busy_now(key).await?;
            report = self.reports().now(key.as_str(), busy, now_ms());
        }
    }

    /// The key as its list entry should show it, read under the gate.
    async fn busy_now(self: &Rc<Self>, key: &Ident) -> Result<(Busy, bool), JsValue> {
        let object = self.clone();
        let key = key.clone();
        let check_ms = self.config()?.holder_check_ms;
        self.read(move |sql| {
            let counted = Counted::new(sql);
            let kept = object.memory(|m| m.kept(key.as_str()));
            let summary = kept.unwrap_or_else(|| coordinator::load_summary(&counted, key.as_str()));
            let busy = health_rows::busy(&counted, key.as_str(), &summary, check_ms);
            let owed = history::is_owed(&counted, key.as_str());
            sql.count_work(counted.work());
            (busy, owed)
        })
        .await
    }

    /// `listReport`: the key reported as it is now.
    pub(super) async fn list_report(self: &Rc<Self>, key: &Ident) -> Result<ListReported, JsValue> {
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
            paused: busy.paused,
            stalled_from: busy.stalled_from_ms,
        })
    }

    /// The holder-check alarm's part for the list: each key that owes a
    /// report, or whose counts changed since its last, is reported; a key
    /// still owing one keeps the alarm.
    pub(super) async fn alarm_reports(self: &Rc<Self>, keys: Vec<String>) -> Result<(), JsValue> {
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
pub(super) struct ListReported {
    listed: bool,
    holders: u32,
    waiting: u32,
    oldest_since: Option<u64>,
    limit: u32,
    paused: bool,
    stalled_from: Option<u64>,
}
