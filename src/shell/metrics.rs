//! §9a: one Workers Analytics Engine data point per contended decision,
//! to the dataset bound as `BATON_METRICS`.
//!
//! Which decisions write one is not decided here: `decision_log` writes a
//! point for exactly the decisions §9's `contended` level prints (their
//! line's kind, which the core chose), so the two cannot drift apart. No
//! binding: nothing is looked up per decision (the isolate read it once),
//! so a Worker without metrics pays nothing, and an uncontended acquire
//! and release, which print nothing at that level, write nothing.
//!
//! `writeDataPoint` is synchronous and buffered by the runtime; a write
//! that throws is caught here, counted, and the decision goes on: a
//! metric never fails or delays a call.

use js_sys::{Array, Function, Object, Reflect};
use std::cell::{Cell, RefCell};
use wasm_bindgen::{JsCast, JsValue};

/// The binding's name (contract §9a).
pub const BINDING: &str = "BATON_METRICS";

thread_local! {
    /// The dataset this isolate's Worker bound, read once by [`configure`].
    static DATASET: RefCell<Option<(JsValue, Function)>> = const { RefCell::new(None) };
    /// Points dropped because the write threw, in this isolate.
    static DROPPED: Cell<u64> = const { Cell::new(0) };
}

/// Reads the binding from `env` (once per isolate, with `BATON_LOG`).
pub fn configure(env: &worker::Env) {
    let Ok(dataset) = Reflect::get(env.as_ref(), &BINDING.into()) else {
        return;
    };
    let write = Reflect::get(&dataset, &"writeDataPoint".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    if let Some(write) = write {
        DATASET.with(|d| *d.borrow_mut() = Some((dataset, write)));
    }
}

/// One data point's fields (contract §9a): what the decision is about,
/// what happened, and its figures (0 where one does not apply).
pub struct Point<'a> {
    /// The key, group, bucket or run key.
    pub index: &'a str,
    /// `"coordinator"`, `"serial"`, `"debounce"`, `"rate"` or `"runs"`.
    pub concept: &'a str,
    /// The decision, as its line names it.
    pub what: &'a str,
    pub instance: Option<&'a str>,
    pub workflow: Option<&'a str>,
    pub waited_ms: u64,
    pub held_ms: u64,
    pub holders: u32,
    pub waiting: u32,
    pub limit: u32,
}

/// Writes `point` when a dataset is bound. Returns the isolate's count of
/// dropped points when this one was dropped (for the decision's line).
pub fn write(point: &Point<'_>) -> Option<u64> {
    DATASET.with(|dataset| {
        let dataset = dataset.borrow();
        let (target, write) = dataset.as_ref()?;
        let written = write.call1(target, &data_point(point));
        written.is_err().then(|| {
            DROPPED.set(DROPPED.get() + 1);
            DROPPED.get()
        })
    })
}

fn data_point(point: &Point<'_>) -> JsValue {
    let strings =
        |values: &[&str]| -> Array { values.iter().map(|v| JsValue::from_str(v)).collect() };
    let numbers =
        |values: &[f64]| -> Array { values.iter().map(|v| JsValue::from_f64(*v)).collect() };
    let object = Object::new();
    let set = |name: &str, value: Array| {
        // Setting a property on a plain object cannot fail.
        let _ = Reflect::set(&object, &name.into(), &value);
    };
    set("indexes", strings(&[point.index]));
    set(
        "blobs",
        strings(&[
            point.concept,
            point.what,
            point.instance.unwrap_or(""),
            point.workflow.unwrap_or(""),
        ]),
    );
    set(
        "doubles",
        numbers(&[
            point.waited_ms as f64,
            point.held_ms as f64,
            f64::from(point.holders),
            f64::from(point.waiting),
            f64::from(point.limit),
        ]),
    );
    object.into()
}
