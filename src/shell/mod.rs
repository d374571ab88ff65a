//! The Worker shell (wasm32 only): everything that touches the runtime.
//!
//! - [`args`]: JS arguments → typed values, or `BatonError`.
//! - [`config`]: the Worker's variables, with defaults.
//! - [`gate`]: running a synchronous decision under the object's input gate.
//! - [`sqlite`]: `SqlExec` over the Durable Object's SQLite storage.
//! - [`workflow`]: typed bindings for the Workflow binding (workers-rs has none).
//! - [`wake`]: the turn event with its status check, and the skip-dead chain.
//! - [`coordinator_object`]: the `Coordinator` Durable Object's logic.
//! - [`decision_log`]: one structured log line per decision.
//! - [`serial_queue_d1`]: the serial queue over D1 (the Worker's RPC methods).
//! - [`http`]: the HTTP API, the status page's files and the OpenAPI document.
//! - [`entry`]: the Worker's fetch handler.

pub mod args;
pub mod config;
pub mod coordinator_object;
pub mod decision_log;
pub mod entry;
pub mod gate;
pub mod http;
pub mod serial_queue_d1;
pub mod sqlite;
pub mod wake;
pub mod workflow;
