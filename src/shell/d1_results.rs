//! Running one of the serial queue's batches on D1 ([`run`]: one round
//! trip, one transaction), and its results read into the core's
//! [`Outcome`]s: each statement's rows, column by column, and its
//! `meta.changes`.
//!
//! Read property by property, and only the properties wanted: the
//! columns of each returned row (one or two rows on the hot path) and one
//! field of each statement's `meta`. Turning the results into JSON text
//! first (`JSON.stringify`, then `serde_json` in WASM) was the largest
//! single part of a serial call's time in Baton's isolate under the
//! profiler (`node bench/profile.mjs serial`); a general decoder
//! (`serde_wasm_bindgen`) asks JS about every property of every object,
//! `meta`'s dozen among them.

use crate::serial_queue::{Batch, GroupRow, Outcome, Param, Returns, Row};
use js_sys::{Array, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::D1Database;

#[wasm_bindgen]
extern "C" {
    /// The D1 binding, for its `batch` alone: `worker::D1Database::batch`
    /// hands back results whose rows it can only decode field by field.
    type D1Batch;
    #[wasm_bindgen(method, catch)]
    fn batch(this: &D1Batch, statements: Array) -> Result<Promise, JsValue>;
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

/// Runs one of the core's batches: one round trip, one transaction.
pub async fn run(db: &D1Database, batch: &Batch) -> Result<Vec<Outcome>, JsValue> {
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
    let returns: Vec<Returns> = batch.0.iter().map(|s| s.returns).collect();
    outcomes(&results, &returns).map_err(|e| {
        JsValue::from(js_sys::Error::new(&format!(
            "Baton: D1 failed: unreadable results: {e}"
        )))
    })
}

/// The columns of a returned row: `crate::serial_queue::sql::COLUMNS`, in
/// its order, which the first read checks (so every test that reaches the
/// serial queue fails should the two drift apart).
const COLUMNS: [&str; 13] = [
    "seq",
    "group_name",
    "instance_id",
    "revision",
    "state",
    "enqueued_at",
    "heartbeat_at",
    "superseded_by",
    "superseded_by_revision",
    "finished_at",
    "workflow",
    "turn_prefix",
    "fence",
];

/// The columns of a returned `serial_group` row (contract §11):
/// `crate::serial_queue::sql::GROUP_COLUMNS`, in its order, checked as
/// [`COLUMNS`] is.
const GROUP_COLUMNS: [&str; 4] = ["group_name", "paused_at", "paused_reason", "resumed_at"];

/// The property names read, as JS strings made once per isolate rather
/// than copied out of WASM on every read.
struct Names {
    results: JsValue,
    meta: JsValue,
    changes: JsValue,
    columns: [JsValue; 13],
    group_columns: [JsValue; 4],
}

thread_local! {
    static NAMES: Names = {
        let returned = crate::serial_queue::sql::COLUMNS.split(',').map(str::trim);
        assert!(returned.eq(COLUMNS), "shell::d1_results::COLUMNS differs from sql::COLUMNS");
        let returned = crate::serial_queue::sql::GROUP_COLUMNS.split(',').map(str::trim);
        assert!(returned.eq(GROUP_COLUMNS), "shell::d1_results::GROUP_COLUMNS differs from sql::GROUP_COLUMNS");
        Names {
            results: "results".into(),
            meta: "meta".into(),
            changes: "changes".into(),
            columns: COLUMNS.map(JsValue::from),
            group_columns: GROUP_COLUMNS.map(JsValue::from),
        }
    };
}

/// Each statement's outcome, in the batch's order, its rows read as the
/// statement `returns`.
pub fn outcomes(results: &JsValue, returns: &[Returns]) -> Result<Vec<Outcome>, String> {
    let results: &Array = results
        .dyn_ref()
        .ok_or("the batch did not return an array")?;
    NAMES.with(|names| {
        results
            .iter()
            .zip(returns)
            .map(|(r, returns)| outcome(names, &r, *returns))
            .collect()
    })
}

fn outcome(names: &Names, result: &JsValue, returns: Returns) -> Result<Outcome, String> {
    let get = |object: &JsValue, name: &JsValue| Reflect::get(object, name).unwrap_or_default();
    let changes = get(&get(result, &names.meta), &names.changes);
    let rows = get(result, &names.results);
    let mut outcome = Outcome {
        changes: integer(&changes, "meta.changes")?.unwrap_or(0),
        ..Outcome::default()
    };
    // A write without RETURNING may carry no `results` at all.
    let rows = match rows.dyn_ref::<Array>() {
        Some(rows) => rows,
        None if rows.is_undefined() || rows.is_null() => return Ok(outcome),
        None => return Err("`results` is not an array".to_owned()),
    };
    for r in rows.iter() {
        match returns {
            Returns::Entries => outcome.rows.push(row(names, &r)?),
            Returns::Group => outcome.groups.push(group_row(names, &r)?),
        }
    }
    Ok(outcome)
}

fn group_row(names: &Names, row: &JsValue) -> Result<GroupRow, String> {
    let value = |at: usize| Reflect::get(row, &names.group_columns[at]).unwrap_or_default();
    let name = GROUP_COLUMNS;
    Ok(GroupRow {
        group_name: text(&value(0), name[0])?.ok_or("column group_name is null")?,
        paused_at: integer(&value(1), name[1])?,
        paused_reason: text(&value(2), name[2])?,
        resumed_at: integer(&value(3), name[3])?,
    })
}

fn row(names: &Names, row: &JsValue) -> Result<Row, String> {
    let value = |at: usize| Reflect::get(row, &names.columns[at]).unwrap_or_default();
    let optional_text = |at: usize| text(&value(at), COLUMNS[at]);
    let optional_integer = |at: usize| integer(&value(at), COLUMNS[at]);
    let null = |at: usize| format!("column {} is null", COLUMNS[at]);
    let required_text = |at: usize| optional_text(at)?.ok_or_else(|| null(at));
    let required_integer = |at: usize| optional_integer(at)?.ok_or_else(|| null(at));
    Ok(Row {
        seq: required_integer(0)?,
        group_name: required_text(1)?,
        instance_id: required_text(2)?,
        revision: required_text(3)?,
        state: required_text(4)?,
        enqueued_at: required_integer(5)?,
        heartbeat_at: optional_integer(6)?,
        superseded_by: optional_text(7)?,
        superseded_by_revision: optional_text(8)?,
        finished_at: optional_integer(9)?,
        workflow: optional_text(10)?,
        turn_prefix: optional_text(11)?,
        fence: optional_integer(12)?,
    })
}

fn text(value: &JsValue, name: &str) -> Result<Option<String>, String> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    value
        .as_string()
        .map(Some)
        .ok_or_else(|| format!("{name} is not text"))
}

/// A non-negative integer (D1 returns SQLite integers as JS numbers).
fn integer(value: &JsValue, name: &str) -> Result<Option<u64>, String> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(n)
            if n >= 0.0 && n.fract() == 0.0 && n <= crate::limits::JS_SAFE_INTEGER_MAX as f64 =>
        {
            Ok(Some(n as u64))
        }
        _ => Err(format!("{name} is not a non-negative integer")),
    }
}
