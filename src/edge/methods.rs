//! The method table: every method of Baton's surface, one row each, grouped
//! by concept. Everything that lists methods comes from it:
//!
//! - here: each concept's `*Call` enum (a request, whichever method it is
//!   for), [`Operation`] (the HTTP API's operations) with each one's route,
//!   the API rows of [`ROUTES`](super::http::ROUTES), [`Command`] and its
//!   parsing (`Command::parse`), and [`METHODS`], from which the OpenAPI
//!   schemas and the TypeScript declarations are generated (`edge::schema`);
//! - in the shell (`shell::service`): the default entrypoint's Rust
//!   services (one `#[wasm_bindgen]` class per Durable Object concept) and
//!   how each call reaches its object with the object's positional
//!   arguments (the one re-encoder, `shell::stub::call`);
//! - js/worker.mjs is JS: a test here reads it and fails on a row whose
//!   delegation (the default entrypoint's method, and the Durable Object
//!   class's positional method) is missing.
//!
//! # A row
//! ```text
//! Enqueue = "coordinatorEnqueue"(c::Enqueue) -> c::EnqueueReply,
//!     object "enqueue"(key, supersedes, instanceId, inputHash, options),
//!     http KeyEnqueue POST "/v1/keys/{key}/enqueue";
//! ```
//! - `Enqueue`: the variant of the concept's `*Call` enum;
//! - `"coordinatorEnqueue"(Request) -> Reply`: the RPC method on the default
//!   entrypoint, its request type (one object, the arguments by name) and
//!   reply type; `-> Reply, on HTTP -> HttpReply` where HTTP answers another
//!   shape;
//! - `object "enqueue"(args)`: the Durable Object's method and its
//!   positional arguments, each a field of the request, `..` for the other
//!   fields as one options object (`claim(key, ..)` is `claim(key,
//!   options)`);
//! - `http Operation VERB "path"`: the HTTP operation and its route. A
//!   POST reads a JSON body; a GET reads nothing but the path, or with
//!   `GET query` the query string's fields (a list's `cursor` and
//!   `limit`). The path has one `{field}` segment naming the request field
//!   it fills, or none (`"/v1/keys"`: a method on no one key).
//!
//! A concept's header gives its `*Call` enum, the request field that names
//! its object (`by key`; none for a method on no one object), and how the
//! shell serves it (`served [...]`: `object Class "BINDING" Service
//! decoder` for a Durable Object reached through its stub, `d1 Service`
//! for the serial queue's D1 shell, `list Service` for the lists of what
//! is busy, read across the list shards and D1 by `shell::busy_service`).
//!
//! Types are named through the aliases `c`, `s`, `rl`, `d`, `r` and `b` (the
//! concepts' modules), which a user of [`method_table`] has in scope.

use super::http::{Input, Method as Verb, RouteSpec};
use schemars::{JsonSchema, Schema, SchemaGenerator};

/// Hands the table to `$callback`, which generates its part from the rows.
macro_rules! method_table {
    ($callback:path) => {
        $callback! {
            /// A Coordinator request, whichever method it is for.
            #[derive(Debug, Clone, PartialEq, Eq)]
            Coordinator(CoordinatorCall) by key,
                served [object Coordinator "COORDINATOR" CoordinatorService request] {
                Enqueue = "coordinatorEnqueue"(c::Enqueue) -> c::EnqueueReply,
                    object "enqueue"(key, supersedes, instanceId, inputHash, options),
                    http KeyEnqueue POST "/v1/keys/{key}/enqueue";
                Acquire = "coordinatorAcquire"(c::Acquire) -> c::AcquireReply,
                    on HTTP -> c::AcquireHttpReply,
                    object "acquire"(key, instanceId, options),
                    http KeyAcquire POST "/v1/keys/{key}/acquire";
                Release = "coordinatorRelease"(c::Release) -> c::ReleaseReply,
                    object "release"(key, instanceId),
                    http KeyRelease POST "/v1/keys/{key}/release";
                Inspect = "coordinatorInspect"(c::Inspect) -> c::Inspection,
                    object "inspect"(key),
                    http KeyInspect GET "/v1/keys/{key}";
            }
            /// A serial-queue request, whichever method it is for.
            #[derive(Debug, Clone, PartialEq, Eq)]
            Serial(SerialCall) by group, served [d1 SerialQueue] {
                Enqueue = "serialEnqueue"(s::SerialEnqueue) -> s::SerialEnqueueReply,
                    http GroupEnqueue POST "/v1/groups/{group}/enqueue";
                Claim = "serialClaim"(s::GroupMember) -> s::SerialClaimReply,
                    http GroupClaim POST "/v1/groups/{group}/claim";
                Heartbeat = "serialHeartbeat"(s::GroupMember) -> s::HeartbeatReply,
                    http GroupHeartbeat POST "/v1/groups/{group}/heartbeat";
                Release = "serialRelease"(s::GroupMember) -> s::SerialReleaseReply,
                    http GroupRelease POST "/v1/groups/{group}/release";
                Inspect = "serialInspect"(s::SerialInspect) -> s::SerialInspection,
                    http GroupInspect GET "/v1/groups/{group}";
            }
            /// A list request (contract §10), whichever list it reads.
            #[derive(Debug, Clone, PartialEq, Eq)]
            List(ListCall), served [list BusyService] {
                Keys = "coordinatorList"(b::ListRequest) -> b::KeyList,
                    http KeyList GET query "/v1/keys";
                Groups = "serialList"(b::ListRequest) -> b::GroupList,
                    http GroupList GET query "/v1/groups";
            }
            /// A rate-limit request, whichever method it is for.
            #[derive(Debug, Clone, PartialEq, Eq)]
            Rate(RateCall) by bucket,
                served [object RateLimiter "RATE_LIMITER" RateService request] {
                Acquire = "rateAcquire"(rl::RateAcquire) -> rl::RateAcquireReply,
                    object "acquire"(bucket, ..),
                    http BucketAcquire POST "/v1/buckets/{bucket}/acquire";
                Penalize = "ratePenalize"(rl::RatePenalize) -> rl::RatePenalizeReply,
                    object "penalize"(bucket, ..),
                    http BucketPenalize POST "/v1/buckets/{bucket}/penalize";
                Refund = "rateRefund"(rl::RateRefund) -> rl::RateRefundReply,
                    object "refund"(bucket, ..),
                    http BucketRefund POST "/v1/buckets/{bucket}/refund";
                Inspect = "rateInspect"(rl::RateInspect) -> rl::RateInspection,
                    object "inspect"(bucket),
                    http BucketInspect GET "/v1/buckets/{bucket}";
            }
            /// A Debouncer request, whichever method it is for.
            #[derive(Debug, Clone, PartialEq)]
            Debounce(DebounceCall) by key,
                served [object Debouncer "DEBOUNCER" DebounceService request_by_field] {
                Debounce = "debounce"(d::Debounce) -> d::DebounceReply,
                    object "debounce"(key, ..),
                    http Debounce POST "/v1/debounce/{key}";
                StartAt = "startAt"(d::StartAt) -> d::StartAtReply,
                    object "startAt"(key, ..),
                    http DebounceStartAt POST "/v1/debounce/{key}/start-at";
                Flush = "debounceFlush"(d::DebounceKey) -> d::FlushReply,
                    object "flush"(key),
                    http DebounceFlush POST "/v1/debounce/{key}/flush";
                Cancel = "debounceCancel"(d::DebounceKey) -> d::CancelReply,
                    object "cancel"(key),
                    http DebounceCancel POST "/v1/debounce/{key}/cancel";
                Inspect = "debounceInspect"(d::DebounceKey) -> d::Inspection,
                    object "inspect"(key),
                    http DebounceInspect GET "/v1/debounce/{key}";
            }
            /// An idempotent-runs request, whichever method it is for.
            #[derive(Debug, Clone, PartialEq)]
            Run(RunCall) by key, served [object Runs "RUNS" RunsService request] {
                Claim = "runClaim"(r::RunClaim) -> r::RunClaimReply,
                    object "claim"(key, ..),
                    http RunClaim POST "/v1/runs/{key}/claim";
                Complete = "runComplete"(r::RunComplete) -> r::RunCompleteReply,
                    object "complete"(key, ..),
                    http RunComplete POST "/v1/runs/{key}/complete";
                Await = "runAwait"(r::RunAwait) -> r::RunView,
                    object "await"(key, ..),
                    http RunAwait POST "/v1/runs/{key}/await";
                Append = "runAppend"(r::RunAppend) -> r::RunAppendReply,
                    object "append"(key, ..),
                    http RunAppend POST "/v1/runs/{key}/append";
                Events = "runEvents"(r::RunEvents) -> r::RunEventsReply,
                    object "events"(key, ..),
                    http RunEvents POST "/v1/runs/{key}/events";
            }
        }
    };
}
// Used by the shell too (wasm32 only).
#[cfg_attr(not(target_arch = "wasm32"), allow(unused_imports))]
pub(crate) use method_table;

/// One positional argument of a Durable Object's method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// The request's field of that name.
    Field(&'static str),
    /// The request's other fields, as one options object.
    Rest,
}

/// A row's `object` column: the Durable Object's method and its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectMethod {
    /// The Durable Object class (js/worker.mjs's).
    pub class: &'static str,
    pub name: &'static str,
    pub args: &'static [Arg],
}

/// Writes a type's schema into a generator and returns a reference to it.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One method of the default entrypoint.
#[derive(Clone, Copy)]
pub struct Method {
    /// Its name on the default entrypoint (`env.BATON.<name>(request)`).
    pub name: &'static str,
    /// The request: one object, the method's arguments by name.
    pub request: SchemaFn,
    pub reply: SchemaFn,
    /// The HTTP operation that covers it, if any.
    pub http: Option<Operation>,
    /// The reply over HTTP, where it differs from the RPC reply (every HTTP
    /// reply is a JSON object).
    pub http_reply: Option<SchemaFn>,
    /// The Durable Object's method serving it, with its positional
    /// arguments (none for the serial queue, served over D1).
    pub object: Option<ObjectMethod>,
}

const fn method<Request: JsonSchema, Reply: JsonSchema>(
    name: &'static str,
    http: Option<Operation>,
    object: Option<ObjectMethod>,
) -> Method {
    Method {
        name,
        request: SchemaGenerator::subschema_for::<Request>,
        reply: SchemaGenerator::subschema_for::<Reply>,
        http,
        http_reply: None,
        object,
    }
}

impl Method {
    const fn http_reply<Reply: JsonSchema>(mut self) -> Method {
        self.http_reply = Some(SchemaGenerator::subschema_for::<Reply>);
        self
    }
}

/// One positional argument, as a row writes it.
macro_rules! arg {
    (..) => {
        $crate::edge::methods::Arg::Rest
    };
    ($field:ident) => {
        $crate::edge::methods::Arg::Field(stringify!($field))
    };
}
#[cfg_attr(not(target_arch = "wasm32"), allow(unused_imports))]
pub(crate) use arg;

/// A row's `object` column with its concept's class, if it has one.
macro_rules! object {
    ([object $class:ident $($served:tt)*] $name:literal($($arg:tt),*)) => {
        Some(ObjectMethod {
            class: stringify!($class),
            name: $name,
            args: &[$(arg!($arg)),*],
        })
    };
    ([d1 $($served:tt)*]) => {
        None
    };
    ([list $($served:tt)*]) => {
        None
    };
}

/// What an HTTP route reads besides its path, as a row writes it.
macro_rules! input {
    (POST) => {
        Input::Body
    };
    (GET) => {
        Input::Path
    };
    (GET query) => {
        Input::Query
    };
}

/// A row's verb as the router's.
macro_rules! verb {
    (POST) => {
        Verb::Post
    };
    (GET) => {
        Verb::Get
    };
}

/// A concept's `key()`: the request field that names its object, when its
/// header names one (`by key`).
macro_rules! key_fn {
    ($call:ident, [], [$($variant:ident),+]) => {};
    ($call:ident, [$by:ident], [$($variant:ident),+]) => {
        impl $call {
            /// The request's field that names its object.
            pub fn key(&self) -> &crate::ident::Ident {
                match self {
                    $($call::$variant(r) => &r.$by,)+
                }
            }
        }
    };
}

/// The edge's part of the table: the `*Call` enums, [`Operation`], the API
/// routes, [`Command`] and its dispatch, [`METHODS`].
macro_rules! edge_items {
    ($(
        $(#[$attr:meta])*
        $concept:ident($call:ident) $(by $by:ident)?, served $served:tt {$(
            $variant:ident = $rpc:literal($request:ty) -> $reply:ty
                $(, on HTTP -> $http_reply:ty)?,
                $(object $object:literal($($arg:tt),*),)?
                http $operation:ident $verb:ident $($query:ident)? $path:literal;
        )+}
    )+) => {
        $(
            $(#[$attr])*
            pub enum $call {
                $($variant($request),)+
            }

            key_fn!($call, [$($by)?], [$($variant),+]);
        )+

        /// The HTTP API's operations: one per method the API covers.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Operation {
            $($($operation,)+)+
        }

        impl Operation {
            /// Every operation, for tests that check each is routed exactly once.
            pub const ALL: [Operation; [$($(Operation::$operation,)+)+].len()] =
                [$($(Operation::$operation,)+)+];

            /// Its route: the verb, the path template, what it reads.
            pub const fn route(self) -> (Verb, &'static str, Input) {
                match self {
                    $($(Operation::$operation => (verb!($verb), $path, input!($verb $($query)?)),)+)+
                }
            }
        }

        /// The API's routes, in the table's order.
        pub const API_ROUTES: [RouteSpec; Operation::ALL.len()] = {
            let mut routes = [RouteSpec::api(Operation::ALL[0]); Operation::ALL.len()];
            let mut i = 0;
            while i < routes.len() {
                routes[i] = RouteSpec::api(Operation::ALL[i]);
                i += 1;
            }
            routes
        };

        /// What an API request asks for, in validated values: one method
        /// of one concept.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Command {
            $($concept($call),)+
        }

        impl Command {
            /// Decodes the request of `operation` with `decode`, which
            /// reads the type it is asked for (`edge::http::Command::parse`
            /// gives it the path's field and the body).
            pub(crate) fn decode(
                operation: Operation,
                decode: impl Decoder,
            ) -> Result<Command, crate::error::BatonError> {
                Ok(match operation {
                    $($(Operation::$operation => {
                        Command::$concept($call::$variant(decode.decode()?))
                    })+)+
                })
            }
        }

        /// Every method, in the order the contract lists them.
        pub const METHODS: &[Method] = &[
            $($(
                method::<$request, $reply>(
                    $rpc,
                    Some(Operation::$operation),
                    object!($served $($object($($arg),*))?),
                )
                $(.http_reply::<$http_reply>())?,
            )+)+
        ];
    };
}

/// Reads one request of the type asked for.
pub(crate) trait Decoder {
    fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, crate::error::BatonError>;
}

use super::{busy as b, coordinator as c, debounce as d, rate as rl, runs as r, serial as s};

method_table!(edge_items);

#[cfg(test)]
mod tests {
    use super::*;

    /// The JS module carries every row: the default entrypoint's method
    /// hands its one argument to the Rust service of the same name, and
    /// the Durable Object class has the row's method with its positional
    /// arguments (`..` is `options`).
    #[test]
    fn js_worker_delegates_every_row() {
        let worker = include_str!("../../js/worker.mjs");
        for method in METHODS {
            let entry = format!("  {0}(input) {{\n    return this.#", method.name);
            let call = format!(".{0}(input);\n  }}", method.name);
            let at = worker
                .find(&entry)
                .unwrap_or_else(|| panic!("js/worker.mjs lacks `{}(input)`", method.name));
            let body = &worker[at + entry.len()..];
            let line_end = body.find('\n').map_or(body.len(), |i| i + 4);
            assert!(
                body[..line_end.min(body.len())].contains(&call),
                "js/worker.mjs's `{}` does not hand its input to the service's `{}`",
                method.name,
                method.name
            );
        }
        for object in METHODS.iter().filter_map(|m| m.object) {
            let class = object.class;
            let start = format!("export class {class} extends DurableObject {{");
            let at = worker
                .find(&start)
                .unwrap_or_else(|| panic!("js/worker.mjs lacks class {class}"));
            let body = &worker[at..];
            let body = &body[..body.find("\n}\n").expect("the class ends")];
            let args: Vec<&str> = object
                .args
                .iter()
                .map(|a| match a {
                    Arg::Field(name) => name,
                    Arg::Rest => "options",
                })
                .collect();
            let declared = format!("\n  {}({}) {{", object.name, args.join(", "));
            assert!(
                body.contains(&declared),
                "class {class} in js/worker.mjs lacks `{}`",
                declared.trim()
            );
        }
    }
}
