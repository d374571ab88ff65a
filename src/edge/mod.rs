//! The edge: every request and reply that crosses Baton's public surface,
//! as types, and the one function that turns caller input into them.
//!
//! What this module owns:
//! - [`decode`] / [`decode_value`] / [`decode_http`]: caller input (an RPC
//!   argument, which the shell first reads into JSON, or an HTTP body and
//!   its path parameter) to a request type, or a
//!   [`BatonError`](crate::error::BatonError) naming the field. Every
//!   request is decoded by it; the shell only reads JS values into JSON
//!   (`shell::js`) and builds positional calls' request objects, and the
//!   Coordinator's `acquire` and `release` build their two identifiers with
//!   the types' own `new` on their hot path.
//! - One module per concept with its request types (`Deserialize`, unknown
//!   fields refused, the contract's field names) and reply types
//!   (`Serialize`, one shape per concept, the same for RPC and HTTP).
//! - [`methods`]: the method table, one row per method: its RPC name, its
//!   request and reply types, the Durable Object's method and positional
//!   arguments, its HTTP operation and route. The `*Call` enums, the API's
//!   routes and commands, the shell's services and the list from which
//!   [`schema`] generates the OpenAPI document's schemas and the TypeScript
//!   declarations, and [`worker_js`] js/worker.mjs's delegations, come from
//!   it (tests fail when any of them drifts).
//! - [`http`]: the HTTP API without HTTP: the router, the token check,
//!   the body rules, and every refusal's status.
//!
//! What it does not do: decide anything (the cores do), or touch JS values
//! (the shell converts at the boundary).
//!
//! # Adding a method
//! 1. `edge/<concept>.rs`: its request struct (`Serialize`, `Deserialize`,
//!    `JsonSchema`, `#[serde(deny_unknown_fields, rename_all = "camelCase")]`,
//!    fields in the contract's argument order, identifiers and bounded
//!    numbers typed: a new one is one `newtype!` in `crate::ident`'s style),
//!    and its reply type (`Serialize`, `JsonSchema`). `#[schemars(rename)]`
//!    a type whose name would be ambiguous among all concepts' types.
//! 2. Its row in [`methods`]' table. That gives the `*Call` variant, the
//!    HTTP operation, route and parsing, the entry in `METHODS`, and for a
//!    concept served by a Durable Object the default entrypoint's Rust
//!    method and the stub call with the row's positional arguments.
//! 3. The core's decision, and the object's method serving the request
//!    (`driver::serve(key, options, ...)` for a `(key, options)` method,
//!    `driver::serve_now(&BUCKET_ARG, ...)` for the RateLimiter's, which
//!    answer in the caller's turn; both decode through `shell::js::positional`).
//! 4. `BATON_BLESS=1 cargo test --lib edge::worker_js` writes js/worker.mjs's
//!    default entrypoint's method and the Durable Object class's positional
//!    method (a new concept's class and service getter are written by hand
//!    around its generated region).
//! 5. `BATON_BLESS=1 cargo test --lib edge::schema` regenerates the OpenAPI
//!    schemas (with a skeleton for a new route, whose prose is written by
//!    hand) and `js/index.d.ts`'s wire types, and `BATON_BLESS=1 cargo test
//!    --lib edge::body_table` the HTTP body table; review the diff.
//!
//! A new concept adds its group of rows (its `*Call` enum, the request
//! field naming its object, how it is served) and its variant in the HTTP
//! shell's `run`.

mod decode;

pub mod body_table;
pub mod busy;
pub mod coordinator;
pub mod debounce;
pub mod encode;
pub mod health;
pub mod http;
pub mod inspection;
pub mod methods;
pub mod rate;
pub mod runs;
pub mod schema;
pub mod serial;
pub mod steer;
pub mod worker_js;

pub use decode::{decode, decode_body, decode_http, decode_value, with_key, KeyArg, KEY_ARG};

use serde::Serialize;

/// The payload of the turn event Baton sends a waiter it wakes:
/// `{ key }` from the Coordinator, `{ group }` from the serial queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnEvent<'a> {
    Key(&'a str),
    Group(&'a str),
}

pub use methods::{CoordinatorCall, DebounceCall, ListCall, RateCall, RunCall, SerialCall};
