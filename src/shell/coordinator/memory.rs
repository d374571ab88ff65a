//! The Coordinator's memory between decisions ([`Summaries`]): each key's
//! summary as the last decision left it, the settings decisions read, and
//! the list reports decisions made due. Apart from the object's file
//! because it is where every committed decision passes: [`Summaries::write`]
//! commits the writes and queues the report; it decides neither (the
//! transition carries both, and its log lines, which the driver prints).

use super::reporters::Reports;
use super::rules::{Coordinator, Keyed};
use crate::busy::reporter::Due;
use crate::coordinator::{self, health_rows, Input, Settings, Summary};
use crate::ident::Ident;
use crate::limits::KEY_SUMMARIES_KEPT_MAX;
use crate::shell::config::WorkflowConfig;
use crate::shell::driver::{Driver, Memory, TransitionOf};
use crate::shell::sqlite::ObjectSql;
use crate::sql::Counted;
use std::collections::HashMap;
use std::rc::Rc;

/// The Coordinator object: its concept run by the driver, with this memory.
pub(super) type Object = Driver<Coordinator, Summaries>;

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
    pub(super) reports: Rc<Reports>,
    /// The holder-check period, for the key's list report.
    holder_check_ms: u64,
}

impl Summaries {
    /// The summary the last decision on `key` left, if it is kept.
    pub(super) fn kept(&self, key: &str) -> Option<Summary> {
        self.summaries.get(key).cloned()
    }
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
            report: Due::Nothing,
            decided_ms: 0,
        }
    }
    /// The commit, the decision's list report queued, and the summary
    /// kept: moved out of the transition when no effect will read it (the
    /// uncontended acquire and release), else a copy (a wake reads the
    /// holder as it was handed). The driver has printed the decision's
    /// lines, which read the summary, before.
    fn write(&mut self, sql: &ObjectSql, key: &str, transition: &mut TransitionOf<Coordinator>) {
        let counted = Counted::new(sql);
        coordinator::write(&counted, key, &transition.writes);
        sql.count_work(counted.work());
        let (report, now) = (transition.state.report, transition.state.decided_ms);
        if self.reports.sends_now(key, report, now) {
            let s = &transition.state.view.summary;
            let counted = Counted::new(sql);
            let busy = health_rows::busy(&counted, key, s, self.holder_check_ms);
            sql.count_work(counted.work());
            // Keys were stored after validation.
            if let Ok(ident) = Ident::parse("key", key) {
                self.reports.due(&ident, busy, now);
            }
        }
        if self.summaries.len() >= KEY_SUMMARIES_KEPT_MAX {
            self.summaries.clear();
        }
        let state = &mut transition.state.view.summary;
        let summary = if transition.effects.is_empty() {
            std::mem::take(state)
        } else {
            state.clone()
        };
        self.summaries.insert(key.to_owned(), summary);
    }
    /// Sends the list reports the decisions made due, after the reply
    /// (`report_sending.rs`).
    fn decided(driver: &Rc<Object>) {
        driver.send_reports();
    }
}
