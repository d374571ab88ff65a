//! The Coordinator object's list reports (contract §10) on their way: the
//! reports its decisions made due, sent after the caller's reply in
//! `waitUntil` ([`Object::send_reports`]), `listReport`, and the
//! holder-check alarm's part for the list. A confirmed report clears the
//! key's owed mark; the alarm sends what is still owed.

use super::memory::Object;
use super::reporters::Reports;
use crate::busy::Busy;
use crate::busy::Report;
use crate::coordinator::{self, health_rows, history};
use crate::ident::Ident;
use crate::limits::KEYS_CHECKED_PER_ALARM_MAX;
use crate::shell::js::{self, now_ms};
use crate::sql::Counted;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsValue;

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
