//! The Worker shell (wasm32 only): everything that touches the runtime.
//!
//! - [`js`]: the JS boundary: RPC arguments → request types (`crate::edge`),
//!   replies → JS values, refusals → JS `Error`s; [`js_json`]: a JS value
//!   read as JSON data; `encode`: the hot replies' JS values, written
//!   straight from their encoders (`crate::edge::encode`).
//! - [`config`]: the Worker's variables, with defaults.
//! - [`driver`]: the one loop every Durable Object class runs (load,
//!   decide, write, alarm, reply, effects); [`rpc`]: a call decoded, run
//!   and encoded; [`effects`]: creates, status checks and terminations;
//!   [`object`]: what every object holds (its storage, its environment,
//!   its statement counts).
//! - [`gate`]: running a synchronous decision under the object's input gate.
//! - [`sqlite`]: `SqlExec` over the Durable Object's SQLite storage.
//! - [`workflow`]: typed bindings for the Workflow binding (workers-rs has none);
//!   [`found`]: §1a's lookup through the other bindings, the one rule every
//!   liveness check goes through.
//! - [`wake`]: the turn event, its status check and the deferred round after
//!   the reply, for the driver's wakes and the serial queue's.
//! - [`coordinator`]: the Coordinator object (its memory between
//!   decisions, method bodies, effects, list reports and owed
//!   terminations, each a file of its folder).
//! - [`rate_limiter_object`], [`debouncer_object`],
//!   [`runs_object`], [`busy_list_object`]: the Durable Object classes (the
//!   last is one shard of the list of busy keys, contract §10);
//!   [`runs_polls`]: the `Runs` object's long-polls.
//! - [`busy_service`]: `coordinatorList`, a page merged from every shard;
//!   [`serial_list`]: `serialList`, D1's groups.
//! - [`service`]: the default entrypoint's methods for those objects
//!   (contract §7), generated from the method table (`crate::edge::methods`);
//!   [`stub`]: calling an object's method through its stub with the
//!   positional arguments the table gives.
//! - [`serial_queue_d1`]: the serial queue over D1 (the Worker's RPC methods);
//!   [`serial_found`]: §1a's lookup for its holders and handed waiters;
//!   [`serial_steer`]: its pause and resume (contract §11).
//! - [`d1_results`]: a D1 batch's results, read into the serial queue's outcomes.
//! - [`decision_log`]: one structured log line per decision; [`metrics`]:
//!   a contended decision's data point to Analytics Engine (contract §9a).
//! - [`http`]: the HTTP API, the status page's files and the OpenAPI document;
//!   `http_body` reads a request's body and drains a refused one.
//! - [`entry`]: the Worker's fetch handler (`HttpApi`), which JS constructs
//!   with the static files (they are a JS module, not part of the WASM).

pub mod busy_list_object;
pub mod busy_service;
pub mod config;
pub mod coordinator;
pub mod d1_results;
pub mod debouncer_object;
pub mod decision_log;
pub mod driver;
pub mod effects;
mod encode;
pub mod entry;
pub mod found;
pub mod gate;
pub mod http;
mod http_body;
pub mod js;
pub mod js_json;
pub mod metrics;
pub mod object;
mod rate_bucket;
pub mod rate_limiter_object;
pub mod rpc;
pub mod runs_object;
pub mod runs_polls;
pub mod serial_found;
pub mod serial_list;
pub mod serial_queue_d1;
pub mod serial_steer;
pub mod service;
pub mod sqlite;
pub mod stub;
pub mod wake;
pub mod workflow;
