//! The `BusyList` Durable Object: one shard of the list of busy keys
//! (contract §10), `crate::busy` run by the shell's driver. A report loads
//! its key's row, decides, writes it in one turn and arms the alarm (the
//! earliest time any row has something due: a dead holder's hour ending,
//! a gone key to forget); a page is a read under the gate.
//!
//! Its callers are Baton's own: each Coordinator object reports its key
//! here (`report`), the default entrypoint's `coordinatorList` reads a page
//! of every shard and merges them (`shell::busy_service`). JS reaches these
//! methods through the `BusyList` class in `js/worker.mjs`.

use super::decision_log::Scope;
use super::driver::{Driver, NextAlarm, NoEffect, Rules, Stored, Sweep};
use super::js::{self, now_ms};
use super::sqlite::ObjectSql;
use crate::busy::{self, sql, Row, Tick, Transition, Write};
use crate::edge::busy::{ShardPageReply, ShardPageRequest, ShardReport, ShardReportReply};
use crate::error::BatonError;
use crate::limits::{LIST_KEYS_PER_ALARM_MAX, LIST_LIMIT_MAX};
use js_sys::Promise;
use std::borrow::Cow;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// One list shard as the driver runs it.
pub struct BusyList;

impl Rules for BusyList {
    type Config = ();
    /// The alarm's tick; a report is a [`Call`].
    type Input = Tick;
    type Reply = ();
    type Plan = ();
    type Write = Write;
    type State = Option<Row>;
    type Reads<'a> = Option<Row>;
    type Effect = NoEffect;
    /// The list's decisions print no line.
    type Why = crate::transition::Text;
    const ALARM: Option<Sweep<Self>> = Some(Sweep {
        keys_per_alarm_max: LIST_KEYS_PER_ALARM_MAX,
        due_keys: sql::due_keys,
        tick: || Tick,
        next: NextAlarm::Earliest(sql::next_wake),
    });

    fn config(_: &Env) -> Result<(), String> {
        Ok(())
    }
    fn migrate(sql: &ObjectSql) {
        sql::migrate(sql);
    }
    fn plan(_: &Tick) -> Cow<'_, ()> {
        Cow::Owned(())
    }
    fn decide(row: &mut Option<Row>, now_ms: u64, tick: Tick) -> Result<Transition, BatonError> {
        Ok(busy::tick(row, now_ms, tick))
    }
    fn assert_invariants(row: &Option<Row>) {
        busy::assert_invariants(row);
    }
    fn scope(key: &str) -> Scope<'_> {
        Scope::Key(key)
    }
}

impl Stored for BusyList {
    fn load(sql: &ObjectSql, key: &str, _: &()) -> Option<Row> {
        sql::load(sql, key)
    }
    fn write(sql: &ObjectSql, key: &str, transition: &Transition) {
        sql::write(sql, key, transition);
    }
}

/// The Rust half of the `BusyList` Durable Object.
#[wasm_bindgen]
pub struct BusyListCore {
    driver: Rc<Driver<BusyList>>,
}

/// Most reports one `reportMany` call carries: a bulk load (the benchmark
/// registering its keys) in calls that each stay short.
const REPORTS_PER_CALL_MAX: usize = 500;

#[wasm_bindgen]
impl BusyListCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> BusyListCore {
        BusyListCore {
            driver: Driver::new(raw_state, env),
        }
    }

    /// `report({ key, stamp, holders, waiting, oldestSince, limit, deadUntil })`.
    pub fn report(&self, input: JsValue) -> Promise {
        let driver = self.driver.clone();
        js::serve(input, move |report: ShardReport| async move {
            driver.report(report).await
        })
    }

    /// `reportMany([report, ...])`: each applied in turn, as `report` would.
    #[wasm_bindgen(js_name = reportMany)]
    pub fn report_many(&self, input: JsValue) -> Promise {
        let driver = self.driver.clone();
        js::serve(input, move |reports: Vec<ShardReport>| async move {
            if reports.len() > REPORTS_PER_CALL_MAX {
                return Err(js::to_js_error(&BatonError::LimitExceeded {
                    field: "reports",
                    reason: format!("must be at most {REPORTS_PER_CALL_MAX} per call"),
                }));
            }
            let mut applied = 0u32;
            for report in reports {
                applied += u32::from(driver.report(report).await?.applied);
            }
            Ok(applied)
        })
    }

    /// `page({ after?, limit })`: the listed keys after `after`, in key order.
    pub fn page(&self, input: JsValue) -> Promise {
        let driver = self.driver.clone();
        js::serve(input, move |request: ShardPageRequest| async move {
            let limit = request.limit.clamp(1, LIST_LIMIT_MAX);
            let now = now_ms();
            driver
                .read(move |sql| {
                    let rows = sql::page(sql, request.after.as_deref(), limit, now);
                    let mut page = ShardPageReply {
                        full: rows.len() as u32 == limit,
                        ..ShardPageReply::default()
                    };
                    for (key, listed) in rows {
                        page.keys.push(key);
                        page.holders.push(listed.busy.holders);
                        page.waiting.push(listed.busy.waiting);
                        page.oldest_since.push(listed.busy.oldest_since_ms);
                        page.limit.push(listed.busy.limit);
                        page.reported_at.push(listed.reported_ms);
                        page.paused.push(listed.busy.paused);
                        page.stalled_from.push(listed.busy.stalled_from_ms);
                    }
                    page
                })
                .await
        })
    }

    pub fn alarm(&self) -> Promise {
        let driver = self.driver.clone();
        js::promise(async move {
            driver.alarm().await?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

impl Driver<BusyList> {
    async fn report(self: &Rc<Self>, report: ShardReport) -> Result<ShardReportReply, JsValue> {
        Ok(self.answer(&report.key, report.report()).await?.into())
    }
}
