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

mod decode;

pub mod coordinator;
pub mod http;
pub mod methods;
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

/// A serial-queue request, whichever method it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerialCall {
    Enqueue(serial::SerialEnqueue),
    Claim(serial::GroupMember),
    Heartbeat(serial::GroupMember),
    Release(serial::GroupMember),
    Inspect(serial::SerialInspect),
}
