//! The WASM floor (issue 38): a Durable Object whose methods are Rust, as
//! Baton's are, doing the least each call can: decode the key and id into
//! Rust strings, run the JS durable floor's one SQL write
//! (bench/floors.mjs), and reply. What Baton's uncontended pair and rate
//! acquire cost above this is Baton's own work; what this costs above the
//! JS durable floor is the crossing into WASM and back.
//!
//! `floor.mjs` is the `DurableObject` class workerd's RPC needs, handing
//! each call's arguments here as Baton's `js/worker.mjs` does.

use js_sys::{Array, JsString, Object, Reflect};
use std::cell::Cell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

// Linked as Baton links it: worker-build's shim calls its exports.
use worker as _;

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.sql`, bound as Baton's shell binds it (src/shell/sqlite.rs).
    type SqlStorage;
    #[wasm_bindgen(method, catch, variadic)]
    fn exec(this: &SqlStorage, query: &JsString, bindings: &Array) -> Result<JsValue, JsValue>;
}

/// The JS durable floor's tables (bench/floors.mjs).
const SCHEMA: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS holders (key TEXT NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (key, id))",
    "CREATE TABLE IF NOT EXISTS grants (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, permits INTEGER NOT NULL)",
];
const HOLD: &str = "INSERT OR REPLACE INTO holders (key, id, since) VALUES (?, ?, ?)";
const FREE: &str = "DELETE FROM holders WHERE key = ? AND id = ?";
const GRANT: &str = "INSERT INTO grants (at, permits) VALUES (?, ?)";

#[wasm_bindgen]
pub struct FloorCore {
    sql: SqlStorage,
    /// The statements' texts as JS strings, made once (as Baton keeps its own).
    hold: JsString,
    free: JsString,
    grant: JsString,
    writes: Cell<u32>,
}

#[wasm_bindgen]
impl FloorCore {
    /// `ctx` is the Durable Object's state.
    #[wasm_bindgen(constructor)]
    pub fn new(ctx: &JsValue) -> Result<FloorCore, JsValue> {
        let storage = Reflect::get(ctx, &"storage".into())?;
        let sql: SqlStorage = Reflect::get(&storage, &"sql".into())?.unchecked_into();
        for statement in SCHEMA {
            sql.exec(&statement.into(), &Array::new())?;
        }
        Ok(FloorCore {
            sql,
            hold: HOLD.into(),
            free: FREE.into(),
            grant: GRANT.into(),
            writes: Cell::new(0),
        })
    }

    /// The Coordinator's `acquire(key, instanceId, options?)` ("granted",
    /// or with `options.grant` the grant object), or the RateLimiter's
    /// `acquire(bucket, { rules, permits })`, told apart by the second
    /// argument's type as the JS floors do.
    pub fn acquire(
        &self,
        key: JsValue,
        second: JsValue,
        options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let bucket = text(&key, "key")?;
        if !second.is_string() {
            return self.rate_acquire(&bucket, &second);
        }
        let _id = text(&second, "instanceId")?;
        self.write(&self.hold, &[key, second, now()])?;
        if !options.is_object() || Reflect::get(&options, &"grant".into())? != JsValue::TRUE {
            return Ok("granted".into());
        }
        Ok(object(&[("status", "granted".into()), ("fence", 1.into())]))
    }

    /// The RateLimiter's acquire: `{ granted: permits, waitMs: 0 }`.
    fn rate_acquire(&self, _bucket: &str, options: &JsValue) -> Result<JsValue, JsValue> {
        let permits = Reflect::get(options, &"permits".into())?
            .as_f64()
            .unwrap_or(1.0);
        self.write(&self.grant, &[now(), permits.into()])?;
        Ok(object(&[("granted", permits.into()), ("waitMs", 0.into())]))
    }

    /// `release(key, instanceId)`: `{ next: null }`.
    pub fn release(&self, key: JsValue, instance_id: JsValue) -> Result<JsValue, JsValue> {
        let _key = text(&key, "key")?;
        let _id = text(&instance_id, "instanceId")?;
        self.write(&self.free, &[key, instance_id])?;
        Ok(object(&[("next", JsValue::NULL)]))
    }

    /// What the bench reads of every target: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        object(&[("reads", 0.into()), ("writes", self.writes.get().into())])
    }

    fn write(&self, statement: &JsString, bindings: &[JsValue]) -> Result<(), JsValue> {
        let array = Array::new_with_length(bindings.len() as u32);
        for (i, value) in bindings.iter().enumerate() {
            array.set(i as u32, value.clone());
        }
        self.sql.exec(statement, &array)?;
        self.writes.set(self.writes.get() + 1);
        Ok(())
    }
}

/// A string argument decoded into Rust, as Baton decodes its identifiers;
/// anything else, or an empty string, is refused naming `field`.
fn text(value: &JsValue, field: &str) -> Result<String, JsValue> {
    match value.as_string() {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(js_sys::Error::new(&format!("floor: {field} must be a non-empty string")).into()),
    }
}

fn now() -> JsValue {
    js_sys::Date::now().into()
}

fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (name, value) in fields {
        // Setting a field of a fresh plain object cannot fail.
        let _ = Reflect::set(&object, &JsValue::from_str(name), value);
    }
    object.into()
}
