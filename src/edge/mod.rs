//! The edge: every request and reply that crosses Baton's public surface,
//! as types, and the one function that turns caller input into them.
//!
//! What this module owns:
//! - [`decode`] / [`decode_http`]: caller input (an RPC argument through
//!   serde-wasm-bindgen, an HTTP body through serde_json) to a request type,
//!   or a [`BatonError`](crate::error::BatonError) naming the field. Nothing
//!   else in Baton parses input.
//! - One module per concept with its request types (`Deserialize`, unknown
//!   fields refused, the contract's field names) and reply types
//!   (`Serialize`, one shape per concept, the same for RPC and HTTP).
//! - [`http`]: the HTTP API without HTTP: the route table, the token check,
//!   the body rules, and every refusal's status.
//! - [`methods`]: the list of RPC methods with their request and reply
//!   types, from which [`schema`] generates the OpenAPI document's schemas
//!   and the TypeScript declarations (a test fails when they drift).
//!
//! What it does not do: decide anything (the cores do), or touch JS values
//! (the shell converts at the boundary with serde-wasm-bindgen).
//!
//! # Adding a concept's methods
//! 1. `edge/<concept>.rs`: one request struct per method (`Deserialize`,
//!    `JsonSchema`, `#[serde(deny_unknown_fields, rename_all = "camelCase")]`,
//!    fields in the contract's argument order, identifiers typed: a new
//!    string identifier is one `string_type!` line in `crate::ident`, a
//!    bounded number a newtype like [`coordinator::HolderLimit`]), and one
//!    reply type per shape (`Serialize`, `JsonSchema`). `#[schemars(rename)]`
//!    a type whose name would be ambiguous among all concepts' types.
//! 2. One line per method in [`methods::METHODS`]: its name on the default
//!    entrypoint, its request and reply types, its HTTP operation.
//! 3. HTTP: an [`http::Operation`] variant, its row in [`http::ROUTES`], and
//!    its arm in [`http::Command::parse`].
//! 4. The shell: the Rust method serving the request
//!    (`shell::js::serve(input, |request: T| ...)`); for a Durable Object,
//!    its positional method in `js/worker.mjs` builds the request object,
//!    and the default entrypoint's method reaches it with
//!    `shell::stub::call_object`.
//! 5. `BATON_BLESS=1 cargo test --lib edge::schema` regenerates the OpenAPI
//!    schemas (with a skeleton for a new route, whose prose is written by
//!    hand) and `js/index.d.ts`'s wire types; review the diff.

mod decode;

pub mod coordinator;
pub mod debounce;
pub mod http;
pub mod methods;
pub mod rate;
pub mod runs;
pub mod schema;
pub mod serial;

pub use decode::{decode, decode_http, decode_value};

use serde::Serialize;

/// The payload of the turn event Baton sends a waiter it wakes:
/// `{ key }` from the Coordinator, `{ group }` from the serial queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnEvent<'a> {
    Key(&'a str),
    Group(&'a str),
}

/// A Coordinator request, whichever method it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorCall {
    Enqueue(coordinator::Enqueue),
    Acquire(coordinator::Acquire),
    Release(coordinator::Release),
    Inspect(coordinator::Inspect),
}

/// A rate-limit request, whichever method it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateCall {
    Acquire(rate::RateAcquire),
    Penalize(rate::RatePenalize),
    Refund(rate::RateRefund),
    Inspect(rate::RateInspect),
}

/// A serial-queue request, whichever method it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerialCall {
    Enqueue(serial::SerialEnqueue),
    Claim(serial::GroupMember),
    Heartbeat(serial::GroupMember),
    Release(serial::GroupMember),
    Inspect(serial::SerialInspect),
}

/// A Debouncer request, whichever method it is for.
#[derive(Debug, Clone, PartialEq)]
pub enum DebounceCall {
    Debounce(debounce::Debounce),
    StartAt(debounce::StartAt),
    Flush(debounce::DebounceKey),
    Cancel(debounce::DebounceKey),
    Inspect(debounce::DebounceKey),
}

impl DebounceCall {
    pub fn key(&self) -> &crate::ident::Ident {
        match self {
            DebounceCall::Debounce(r) => &r.key,
            DebounceCall::StartAt(r) => &r.key,
            DebounceCall::Flush(r) | DebounceCall::Cancel(r) | DebounceCall::Inspect(r) => &r.key,
        }
    }
}

/// An idempotent-runs request, whichever method it is for.
#[derive(Debug, Clone, PartialEq)]
pub enum RunCall {
    Claim(runs::RunClaim),
    Complete(runs::RunComplete),
    Await(runs::RunAwait),
    Append(runs::RunAppend),
    Events(runs::RunEvents),
}

impl RunCall {
    /// The run key the request is for.
    pub fn key(&self) -> &crate::ident::Ident {
        match self {
            RunCall::Claim(r) => &r.key,
            RunCall::Complete(r) => &r.key,
            RunCall::Await(r) => &r.key,
            RunCall::Append(r) => &r.key,
            RunCall::Events(r) => &r.key,
        }
    }
}
