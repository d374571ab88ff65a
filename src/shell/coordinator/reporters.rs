//! The Coordinator's reports to its key's list shard (contract §10): the
//! reporters kept in the object's memory (`crate::busy::reporter`), the
//! reports a decision made due, sent after the caller's reply in
//! `waitUntil`, and the RPC to the shard. Which decisions make a report
//! due is the decision's own output (`coordinator::Transition::report`, by
//! `crate::busy::reporter::due`), and one that owes a report has stored
//! the mark among its writes; a confirmed report clears the mark, and the
//! holder-check alarm sends what is still owed.
//!
//! The object's sending (its `send_reports`, `listReport` and the
//! alarm's part) is `report_sending.rs`, which drives these reporters.
//!
//! A Worker without the `BUSY_LIST` binding (an embedding that has not
//! added the class yet) lists nothing: a report owed is then dropped as
//! paid, so no alarm keeps running for it.

use crate::busy::reporter::{Answered, Due, Reporter};
use crate::busy::{shard_name, shard_of, Answer, Busy, Report};
use crate::edge::busy::{ShardReport, ShardReportReply};
use crate::ident::Ident;
use crate::limits::KEY_SUMMARIES_KEPT_MAX;
use crate::shell::busy_service::{shard_count, LIST_BINDING};
use crate::shell::js::to_js;
use crate::shell::stub::call_object;
use std::cell::RefCell;
use std::collections::HashMap;
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
