//! `SqlExec` over the Durable Object's synchronous SQLite API.
//!
//! Bound directly rather than through workers-rs's `SqlStorage::exec`: every
//! statement crosses from WASM to JS, and the uncontended acquire+release
//! pair is mostly such crossings (bench/profile.mjs, docs/benchmarks.md). So the
//! statement's text is handed over as a JS string made once per statement
//! and kept (not decoded from UTF-8 on every call), the call's own strings
//! (a Coordinator call's key and id) are bound as the JS strings the call
//! brought ([`ObjectSql::bind_as`]), the rows come back in one `Array.from`
//! of the cursor, and each value is read with the fewest type checks (a
//! number first, the common case).

use crate::sql::{SqlExec, SqlValue};
use js_sys::{Array, JsString};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::SqlStorage;

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.sql`.
    type JsSqlStorage;
    #[wasm_bindgen(method, catch, variadic)]
    fn exec(this: &JsSqlStorage, query: &JsString, bindings: &Array) -> Result<JsCursor, JsValue>;

    /// The cursor `exec` returns.
    type JsCursor;
    /// An iterator over the rows, each an array of its columns.
    #[wasm_bindgen(method)]
    fn raw(this: &JsCursor) -> JsValue;
}

/// Most statement texts kept as JS strings. The Coordinator's store runs a
/// few dozen distinct statements; the bound only keeps a statement built
/// with varying text (none is, today) from growing the map without end.
const STATEMENTS_KEPT_MAX: usize = 128;

pub struct ObjectSql {
    sql: JsSqlStorage,
    /// Statement text → the same text as a JS string.
    texts: RefCell<HashMap<String, JsString>>,
    /// The current call's strings, by their text ([`ObjectSql::bind_as`]).
    call_strings: RefCell<Vec<(String, JsValue)>>,
    /// Storage statements the stores counted since the object started, for
    /// the benchmark (`storageWork()`): kept here so that a class's `load`
    /// and `write`, which get only the storage, can add theirs.
    reads: Cell<u64>,
    writes: Cell<u64>,
}

impl ObjectSql {
    pub fn new(sql: SqlStorage) -> ObjectSql {
        ObjectSql {
            sql: sql.as_ref().clone().unchecked_into(),
            texts: RefCell::new(HashMap::new()),
            call_strings: RefCell::new(Vec::new()),
            reads: Cell::new(0),
            writes: Cell::new(0),
        }
    }

    /// Until the guard drops, a text binding equal to `texts[i]` is bound
    /// as `strings[i]`, the JS string a call brought with that text (its
    /// key and instance id), instead of a JS string made again from the
    /// text for every statement.
    pub fn bind_as<const N: usize>(&self, texts: [&str; N], strings: [JsValue; N]) -> BoundAs<'_> {
        let mut kept = self.call_strings.borrow_mut();
        kept.clear();
        kept.extend(texts.iter().map(|t| t.to_string()).zip(strings));
        BoundAs(self)
    }

    /// A text binding as a JS string: the call's own, or made from the text.
    fn text_value(&self, text: &str) -> JsValue {
        let kept = self.call_strings.borrow();
        match kept.iter().find(|(kept, _)| kept == text) {
            Some((_, string)) => string.clone(),
            None => JsValue::from_str(text),
        }
    }

    /// Adds a store's counted statements (`Counted::work`).
    pub fn count_work(&self, (reads, writes): (u32, u32)) {
        self.reads.set(self.reads.get() + u64::from(reads));
        self.writes.set(self.writes.get() + u64::from(writes));
    }

    /// Statements read and written, as counted so far.
    pub fn work(&self) -> (u64, u64) {
        (self.reads.get(), self.writes.get())
    }

    fn text(&self, sql: &str) -> JsString {
        if let Some(text) = self.texts.borrow().get(sql) {
            return text.clone();
        }
        let text = JsString::from(sql);
        let mut texts = self.texts.borrow_mut();
        if texts.len() >= STATEMENTS_KEPT_MAX {
            texts.clear();
        }
        texts.insert(sql.to_owned(), text.clone());
        text
    }
}

/// A clone shares the database and keeps its own statement texts and
/// counts (the RateLimiter's cache counts its own statements and adds them
/// to the object's).
impl Clone for ObjectSql {
    fn clone(&self) -> Self {
        ObjectSql {
            sql: JsValue::from(&self.sql).unchecked_into(),
            texts: RefCell::new(HashMap::new()),
            call_strings: RefCell::new(Vec::new()),
            reads: Cell::new(0),
            writes: Cell::new(0),
        }
    }
}

/// [`ObjectSql::bind_as`]'s strings, forgotten when it drops.
pub struct BoundAs<'a>(&'a ObjectSql);

impl Drop for BoundAs<'_> {
    fn drop(&mut self) {
        self.0.call_strings.borrow_mut().clear();
    }
}

impl ObjectSql {
    /// Runs the statement: `exec` steps it at once, so a write is done
    /// when it returns, whether or not its cursor is read.
    fn exec(&self, sql: &str, params: &[SqlValue]) -> JsCursor {
        let bindings = Array::new_with_length(params.len() as u32);
        for (i, p) in params.iter().enumerate() {
            let value = match p {
                SqlValue::Null => JsValue::NULL,
                // Stored integers stay within ±2^53 (the store checks times).
                SqlValue::Integer(n) => JsValue::from_f64(*n as f64),
                SqlValue::Text(s) => self.text_value(s),
            };
            bindings.set(i as u32, value);
        }
        self.sql
            .exec(&self.text(sql), &bindings)
            .unwrap_or_else(|e| panic!("SQL failed ({e:?}): {sql}"))
    }
}

impl SqlExec for ObjectSql {
    fn execute(&self, sql: &str, params: &[SqlValue]) {
        self.exec(sql, params);
    }

    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let cursor = self.exec(sql, params);
        let rows = Array::from(&cursor.raw());
        rows.iter()
            .map(|row| {
                row.unchecked_into::<Array>()
                    .iter()
                    .map(|value| from_js(value, sql))
                    .collect()
            })
            .collect()
    }
}

fn from_js(value: JsValue, sql: &str) -> SqlValue {
    if let Some(n) = value.as_f64() {
        // JS has one number type; an integral one is an integer column.
        assert!(n.fract() == 0.0, "unexpected SQL float {n}: {sql}");
        return SqlValue::Integer(n as i64);
    }
    if value.is_null() {
        return SqlValue::Null;
    }
    match value.as_string() {
        Some(s) => SqlValue::Text(s),
        None => panic!("unexpected SQL value {value:?}: {sql}"),
    }
}
