//! Every RPC method of Baton's Worker (its default entrypoint: contract §2
//! and §7), with its request type, its reply type and the HTTP operation
//! that covers it. The OpenAPI document's schemas and the TypeScript
//! declarations are generated from this list (`edge::schema`), so a
//! concept's method is one line here, plus its route in
//! [`ROUTES`](super::http::ROUTES) if HTTP covers it.

use super::coordinator;
use super::debounce;
use super::http::Operation;
use super::rate;
use super::runs;
use super::serial;
use schemars::{JsonSchema, Schema, SchemaGenerator};

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
}

const fn method<Request: JsonSchema, Reply: JsonSchema>(
    name: &'static str,
    http: Option<Operation>,
) -> Method {
    Method {
        name,
        request: SchemaGenerator::subschema_for::<Request>,
        reply: SchemaGenerator::subschema_for::<Reply>,
        http,
        http_reply: None,
    }
}

impl Method {
    const fn http_reply<Reply: JsonSchema>(mut self) -> Method {
        self.http_reply = Some(SchemaGenerator::subschema_for::<Reply>);
        self
    }
}

use coordinator as c;
use debounce as d;
use rate as rl;
use runs as r;
use serial as s;
use Operation::*;

/// Every method, in the order the contract lists them.
#[rustfmt::skip]
pub const METHODS: &[Method] = &[
    method::<c::Enqueue, c::EnqueueReply>("coordinatorEnqueue", Some(KeyEnqueue)),
    method::<c::Acquire, c::AcquireReply>("coordinatorAcquire", Some(KeyAcquire))
        .http_reply::<c::AcquireHttpReply>(),
    method::<c::Release, c::ReleaseReply>("coordinatorRelease", Some(KeyRelease)),
    method::<c::Inspect, c::Inspection>("coordinatorInspect", Some(KeyInspect)),
    method::<s::SerialEnqueue, s::SerialEnqueueReply>("serialEnqueue", Some(GroupEnqueue)),
    method::<s::GroupMember, s::SerialClaimReply>("serialClaim", Some(GroupClaim)),
    method::<s::GroupMember, s::HeartbeatReply>("serialHeartbeat", Some(GroupHeartbeat)),
    method::<s::GroupMember, s::SerialReleaseReply>("serialRelease", Some(GroupRelease)),
    method::<s::SerialInspect, s::SerialInspection>("serialInspect", Some(GroupInspect)),
    method::<rl::RateAcquire, rl::RateAcquireReply>("rateAcquire", Some(BucketAcquire)),
    method::<rl::RatePenalize, rl::RatePenalizeReply>("ratePenalize", Some(BucketPenalize)),
    method::<rl::RateRefund, rl::RateRefundReply>("rateRefund", Some(BucketRefund)),
    method::<rl::RateInspect, rl::RateInspection>("rateInspect", Some(BucketInspect)),
    method::<d::Debounce, d::DebounceReply>("debounce", Some(Debounce)),
    method::<d::StartAt, d::StartAtReply>("startAt", Some(DebounceStartAt)),
    method::<d::DebounceKey, d::FlushReply>("debounceFlush", Some(DebounceFlush)),
    method::<d::DebounceKey, d::CancelReply>("debounceCancel", Some(DebounceCancel)),
    method::<d::DebounceKey, d::Inspection>("debounceInspect", Some(DebounceInspect)),
    method::<r::RunClaim, r::RunClaimReply>("runClaim", Some(RunClaim)),
    method::<r::RunComplete, r::RunCompleteReply>("runComplete", Some(RunComplete)),
    method::<r::RunAwait, r::RunView>("runAwait", Some(RunAwait)),
    method::<r::RunAppend, r::RunAppendReply>("runAppend", Some(RunAppend)),
    method::<r::RunEvents, r::RunEventsReply>("runEvents", Some(RunEvents)),
];
