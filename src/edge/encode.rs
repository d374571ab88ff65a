//! The hot replies, each stated once as the calls that write it (issue 38:
//! "the reply is built once"). The Coordinator's `acquire` (§1's string,
//! or with `grant` the object) and `release`, and the RateLimiter's
//! `acquire`, answer on every call of a section; the shell builds their JS
//! values straight from these encoders (`shell::encode`: one object, one
//! property per field, names made once per isolate) rather than through a
//! serializer.
//!
//! Their `serde` form stays the one the method table, the OpenAPI document,
//! the TypeScript declarations and HTTP use; the tests below hold every
//! variant's encoding to it (the text, so the fields' order too), with a
//! writer of JSON standing in for the JS one.
//!
//! What this does not do: touch a JS value (the shell's writer does), or
//! encode any other reply (they go through `serde`, off the hot path).

use super::coordinator::{AcquireOutcome, AcquireReply, GrantReply, ReleaseReply};
use super::rate::RateAcquireReply;

/// A field name of a hot reply, as its `serde` form spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    Status,
    Fence,
    Turn,
    Position,
    EtaMs,
    Next,
    Granted,
    WaitMs,
}

impl Name {
    /// Every name, in the order of [`Name::index`], for a writer that makes
    /// each once.
    pub const ALL: [Name; 8] = [
        Name::Status,
        Name::Fence,
        Name::Turn,
        Name::Position,
        Name::EtaMs,
        Name::Next,
        Name::Granted,
        Name::WaitMs,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Name::Status => "status",
            Name::Fence => "fence",
            Name::Turn => "turn",
            Name::Position => "position",
            Name::EtaMs => "etaMs",
            Name::Next => "next",
            Name::Granted => "granted",
            Name::WaitMs => "waitMs",
        }
    }

    /// Its place in [`Name::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One field's value. Numbers are integers within ±2^53 (a fence, a
/// position, a wait), which a JS number holds exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    Outcome(AcquireOutcome),
    Text(&'a str),
    Number(u64),
    Null,
}

impl<'a> Field<'a> {
    fn or_null<T>(value: Option<T>, field: impl FnOnce(T) -> Field<'a>) -> Field<'a> {
        value.map_or(Field::Null, field)
    }
}

/// What a hot reply is written into: a JS value in the shell, JSON in the
/// tests.
pub trait Writer {
    type Value;
    /// §1's bare string.
    fn outcome(&self, outcome: AcquireOutcome) -> Self::Value;
    /// An object with these fields, in this order.
    fn object(&self, fields: &[(Name, Field<'_>)]) -> Self::Value;
}

/// A hot reply, written field by field.
pub trait Encode {
    fn encode<W: Writer>(&self, writer: &W) -> W::Value;
}

impl Encode for AcquireReply {
    fn encode<W: Writer>(&self, w: &W) -> W::Value {
        match self {
            AcquireReply::Outcome(outcome) => w.outcome(*outcome),
            AcquireReply::Grant(grant) => grant.encode(w),
        }
    }
}

impl Encode for GrantReply {
    fn encode<W: Writer>(&self, w: &W) -> W::Value {
        let status = |outcome| (Name::Status, Field::Outcome(outcome));
        match self {
            GrantReply::Granted { fence } => w.object(&[
                status(AcquireOutcome::Granted),
                (Name::Fence, Field::Number(*fence)),
            ]),
            GrantReply::Pending {
                turn,
                position,
                eta_ms,
            } => w.object(&[
                status(AcquireOutcome::Pending),
                (Name::Turn, Field::Text(turn)),
                (Name::Position, Field::Number(u64::from(*position))),
                (Name::EtaMs, Field::or_null(*eta_ms, Field::Number)),
            ]),
            GrantReply::Superseded => w.object(&[status(AcquireOutcome::Superseded)]),
            GrantReply::Busy => w.object(&[status(AcquireOutcome::Busy)]),
        }
    }
}

impl Encode for ReleaseReply {
    fn encode<W: Writer>(&self, w: &W) -> W::Value {
        let next = Field::or_null(self.next.as_ref(), |id| Field::Text(id.as_str()));
        w.object(&[(Name::Next, next)])
    }
}

impl Encode for RateAcquireReply {
    fn encode<W: Writer>(&self, w: &W) -> W::Value {
        w.object(&[
            (Name::Granted, Field::Number(u64::from(self.granted))),
            (Name::WaitMs, Field::Number(self.wait_ms)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator as core;
    use crate::ident::InstanceId;
    use serde::Serialize;
    use serde_json::{Map, Value};

    /// The JS writer's twin, writing JSON.
    struct Json;

    impl Writer for Json {
        type Value = Value;
        fn outcome(&self, outcome: AcquireOutcome) -> Value {
            Value::from(outcome.as_str())
        }
        fn object(&self, fields: &[(Name, Field<'_>)]) -> Value {
            let value = |field: &Field<'_>| match *field {
                Field::Outcome(outcome) => self.outcome(outcome),
                Field::Text(text) => Value::from(text),
                Field::Number(n) => Value::from(n),
                Field::Null => Value::Null,
            };
            let fields = fields
                .iter()
                .map(|(name, f)| (name.as_str().to_owned(), value(f)));
            Value::Object(fields.collect::<Map<_, _>>())
        }
    }

    /// The encoding is the serde form, to the text (and so the fields' order).
    fn same<T: Encode + Serialize>(reply: &T) -> String {
        let serde = serde_json::to_string(reply).unwrap();
        assert_eq!(reply.encode(&Json).to_string(), serde);
        serde
    }

    /// Every core reply, answered with and without `grant`: every variant
    /// of both forms (a pending place with and without its eta).
    #[test]
    fn acquire_replies_encode_as_serde_does() {
        let place = |eta_ms| core::Place {
            turn: core::Turn::Shared,
            position: 3,
            eta_ms,
        };
        let replies = [
            core::AcquireReply::Granted { fence: 1 << 52 },
            core::AcquireReply::Pending(Some(place(Some(1_500)))),
            core::AcquireReply::Pending(Some(place(None))),
            core::AcquireReply::Superseded,
            core::AcquireReply::Busy,
            core::AcquireReply::Full,
        ];
        let mut seen = Vec::new();
        for grant in [false, true] {
            for reply in replies {
                let reply = AcquireReply::new(reply, grant, |_| "baton-turn-k".to_owned());
                seen.push(variant(&reply));
                same(&reply);
            }
        }
        // A call without `grant` has no place to answer.
        same(&AcquireReply::new(
            core::AcquireReply::Pending(None),
            false,
            |_| String::new(),
        ));
        for variant in VARIANTS {
            assert!(seen.contains(&variant), "{variant} not encoded");
        }
    }

    /// Each reply variant's name: a new variant fails to compile here until
    /// it is named, and then [`acquire_replies_encode_as_serde_does`] fails
    /// until it is encoded.
    fn variant(reply: &AcquireReply) -> &'static str {
        match reply {
            AcquireReply::Outcome(outcome) => match outcome {
                AcquireOutcome::Granted => "granted",
                AcquireOutcome::Pending => "pending",
                AcquireOutcome::Superseded => "superseded",
                AcquireOutcome::Busy => "busy",
            },
            AcquireReply::Grant(grant) => match grant {
                GrantReply::Granted { .. } => "grant granted",
                GrantReply::Pending { .. } => "grant pending",
                GrantReply::Superseded => "grant superseded",
                GrantReply::Busy => "grant busy",
            },
        }
    }

    const VARIANTS: [&str; 8] = [
        "granted",
        "pending",
        "superseded",
        "busy",
        "grant granted",
        "grant pending",
        "grant superseded",
        "grant busy",
    ];

    #[test]
    fn release_and_rate_replies_encode_as_serde_does() {
        let next = InstanceId::new("wf-2".to_owned()).unwrap();
        assert_eq!(
            same(&ReleaseReply { next: Some(next) }),
            r#"{"next":"wf-2"}"#
        );
        assert_eq!(same(&ReleaseReply { next: None }), r#"{"next":null}"#);
        for (granted, wait_ms) in [(3, 0), (0, 1_250)] {
            same(&RateAcquireReply { granted, wait_ms });
        }
    }

    #[test]
    fn names_are_listed_in_their_index_order() {
        for (index, name) in Name::ALL.into_iter().enumerate() {
            assert_eq!(name.index(), index);
        }
    }
}
