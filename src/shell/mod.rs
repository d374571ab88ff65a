//! The Worker shell (wasm32 only): everything that touches the runtime.
//!
//! - [`js`]: the JS boundary: RPC arguments → request types (`crate::edge`),
//!   replies → JS values, refusals → JS `Error`s.
//! - [`config`]: the Worker's variables, with defaults.
//! - [`gate`]: running a synchronous decision under the object's input gate.
//! - [`sqlite`]: `SqlExec` over the Durable Object's SQLite storage.
//! - [`workflow`]: typed bindings for the Workflow binding (workers-rs has none).
//! - [`wake`]: the turn event with its status check (the driver's wakes, the serial queue's).
//! - [`coordinator_object`]: the `Coordinator` Durable Object: its `Rules` on the driver.
//! - [`stub`]: calling a Durable Object's method through its stub.
//! - [`coordinator_service`]: the Coordinator through the Worker (contract
//!   §7, and the HTTP API's key routes), by the key's stub.
//! - [`rate_limiter_object`]: the `RateLimiter` Durable Object (one phase, no alarm).
//! - [`rate_service`]: the rate limiter through the Worker (contract §7), by the bucket's stub.
//! - [`debouncer_object`]: the `Debouncer` Durable Object's logic.
//! - [`debounce_service`]: the Debouncer through the Worker (contract §7,
//!   and the HTTP API's debounce routes), by the key's stub.
//! - [`runs_object`]: the `Runs` Durable Object's logic (contract §6).
//! - [`runs_service`]: idempotent runs through the Worker (contract §7,
//!   and the HTTP API's run routes), by the run key's stub.
//! - [`decision_log`]: one structured log line per decision.
//! - [`serial_queue_d1`]: the serial queue over D1 (the Worker's RPC methods).
//! - [`d1_results`]: a D1 batch's results, read into the serial queue's outcomes.
//! - [`http`]: the HTTP API, the status page's files and the OpenAPI document.
//! - [`entry`]: the Worker's fetch handler (`HttpApi`), which JS constructs
//!   with the static files (they are a JS module, not part of the WASM).

pub mod config;
pub mod coordinator_object;
pub mod coordinator_service;
pub mod d1_results;
pub mod debounce_service;
pub mod debouncer_object;
pub mod decision_log;
pub mod driver;
pub mod entry;
pub mod gate;
pub mod http;
pub mod js;
pub mod object;
pub mod rate_limiter_object;
pub mod rate_service;
pub mod runs_object;
pub mod runs_service;
pub mod serial_queue_d1;
pub mod sqlite;
pub mod stub;
pub mod wake;
pub mod workflow;
