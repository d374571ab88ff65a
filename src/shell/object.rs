//! What the Rust half of every Durable Object holds and does the same way:
//! the object's state and its SQLite storage, the Worker's environment, the
//! once-per-life schema check, and the storage statements counted for the
//! benchmark (`storageWork()`).

use super::js::to_js;
use super::sqlite::ObjectSql;
use serde::Serialize;
use std::cell::Cell;
use wasm_bindgen::{JsCast, JsValue};
use worker::durable::State;
use worker::worker_sys::DurableObjectState;
use worker::Env;

pub struct ObjectBase {
    /// `ctx` as workerd gave it: the gate (`blockConcurrencyWhile`) is on it.
    pub raw_state: DurableObjectState,
    pub state: State,
    pub env: Env,
    pub sql: ObjectSql,
    /// A cache of "the schema is current", not state: losing it only means
    /// the (idempotent) migration check runs again.
    schema_checked: Cell<bool>,
}

impl ObjectBase {
    pub fn new(raw_state: DurableObjectState, env: Env) -> ObjectBase {
        console_error_panic_hook::set_once();
        super::decision_log::configure(&env);
        let state = State::from(raw_state.clone().unchecked_into::<DurableObjectState>());
        let sql = ObjectSql::new(state.storage().sql());
        ObjectBase {
            raw_state,
            state,
            env,
            sql,
            schema_checked: Cell::new(false),
        }
    }

    /// Runs `migrate` on the object's database the first time it is needed
    /// in this object's life.
    pub fn ensure_schema(&self, migrate: impl FnOnce(&ObjectSql)) {
        if !self.schema_checked.get() {
            migrate(&self.sql);
            self.schema_checked.set(true);
        }
    }

    /// Adds a decision's statements (a store's `work()`) to the object's count.
    pub fn count_work(&self, work: (u32, u32)) {
        self.sql.count_work(work);
    }

    /// `{ reads, writes }`: storage statements run since the object started.
    pub fn storage_work(&self) -> JsValue {
        let (reads, writes) = self.sql.work();
        to_js(&StorageWork { reads, writes })
    }
}

/// Storage statements run since the object started (for the benchmark;
/// not part of the contract).
#[derive(Serialize)]
struct StorageWork {
    reads: u64,
    writes: u64,
}
