//! The HTTP API's decisions, without HTTP: which route a request names,
//! whether its token is right, whether its body is acceptable, and what
//! typed command it carries.
//!
//! What this module owns: the route table ([`ROUTES`], the one list the
//! router, the OpenAPI document's test and the docs agree on), bearer-token
//! checking in constant time, the body rules (size, media type, a JSON
//! object), decoding path segments and handing bodies to `crate::edge` to
//! become [`Command`]s, and the mapping of every refusal to an HTTP status
//! and message ([`HttpError`], the one place that does).
//!
//! What it does not do: read requests, call the Coordinator or D1, or build
//! responses. The shell (`shell::http`, wasm32 only) does that, in a fixed
//! order, each step a function here:
//!
//! 1. [`route`] the method and raw path: 404 or 405 before anything else.
//! 2. [`authorize`] the `Authorization` header against `BATON_TOKEN`: 503
//!    when no token is configured (the API is never open), 401 otherwise.
//! 3. For a POST: [`check_declared_length`] (413 before reading),
//!    [`check_content_type`] (415), read at most
//!    [`HTTP_BODY_BYTES_MAX`](crate::limits::HTTP_BODY_BYTES_MAX) bytes
//!    ([`check_body_length`], 413), [`parse_json_object`] (415).
//! 4. [`Command::parse`]: 400 with the `BatonError:` message for bad input.
//! 5. Run the command; its reply is the RPC method's reply type
//!    (`crate::edge`), `acquire`'s string wrapped as `{ status }`.
//!
//! Every refusal happens before the command runs, so a refused request
//! changes nothing.

mod auth;
mod body;
mod command;
#[cfg(test)]
mod command_tests;
mod error;
mod routes;

pub use auth::{authorize, tokens_equal};
pub use body::{
    check_body_length, check_content_type, check_declared_length, drain_bytes_max,
    parse_json_object, worth_draining,
};
pub use command::{decode_segment, query_fields, Command};
pub use error::{ErrorReply, HttpError};
pub use routes::{
    path_field, route, Asset, Auth, Endpoint, Input, Matched, Method, Operation, RouteSpec, ROUTES,
};
