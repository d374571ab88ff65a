//! The Runs replies as JSON text (contract §6), the same for RPC and HTTP.
//!
//! Results and event data are stored as JSON text and answer as such: a
//! reply is assembled around them without parsing them (a result is up to
//! 1 MiB and goes to every awaiter), and the shell turns the text into a
//! JS value with one `JSON.parse`.

use crate::runs::{ClaimReply, EventsReply, Outcome, RunView};
use serde_json::Value;
use std::fmt::Write;

fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// `state` and the outcome's field, for a run with a claimant.
fn view_fields(out: &mut String, view: &RunView) {
    let state = match &view.outcome {
        None => "running",
        Some(Outcome::Complete { .. }) => "complete",
        Some(Outcome::Failed { .. }) => "failed",
    };
    write!(
        out,
        r#""instanceId":{},"state":"{state}""#,
        quoted(view.id.as_str())
    )
    .expect("writing to a String");
    match &view.outcome {
        Some(Outcome::Complete {
            result: Some(result),
        }) => {
            out.push_str(r#","result":"#);
            out.push_str(result.as_str());
        }
        Some(Outcome::Failed { error }) => {
            out.push_str(r#","error":"#);
            out.push_str(&quoted(error));
        }
        Some(Outcome::Complete { result: None }) | None => {}
    }
}

/// `claim`'s reply: `{ claimed: true }` or `{ claimed: false, instanceId, state, result?, error? }`.
pub fn claim_reply(reply: &ClaimReply) -> String {
    match reply {
        ClaimReply::Claimed => r#"{"claimed":true}"#.to_owned(),
        ClaimReply::Taken(view) => {
            let mut out = String::from(r#"{"claimed":false,"#);
            view_fields(&mut out, view);
            out.push('}');
            out
        }
    }
}

/// `await`'s reply: `{ state, instanceId?, result?, error? }`.
pub fn await_reply(view: Option<&RunView>) -> String {
    match view {
        None => r#"{"state":"none"}"#.to_owned(),
        Some(view) => {
            let mut out = String::from("{");
            view_fields(&mut out, view);
            out.push('}');
            out
        }
    }
}

/// `complete`'s reply.
pub fn complete_reply(recorded: bool) -> String {
    format!(r#"{{"recorded":{recorded}}}"#)
}

/// `append`'s reply.
pub fn append_reply(seq: u64) -> String {
    format!(r#"{{"seq":{seq}}}"#)
}

/// `events`' reply: `{ events: [{ seq, at, type, data }], latestSeq, firstSeq }`
/// (`data` is `null` for an event appended without it).
pub fn events_reply(reply: &EventsReply) -> String {
    let mut out = String::from(r#"{"events":["#);
    for (i, event) in reply.events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write!(
            out,
            r#"{{"seq":{},"at":{},"type":{},"data":{}}}"#,
            event.seq,
            event.at_ms,
            quoted(event.kind.as_str()),
            event.data.as_ref().map_or("null", |d| d.as_str())
        )
        .expect("writing to a String");
    }
    write!(
        out,
        r#"],"latestSeq":{},"firstSeq":{}}}"#,
        reply.latest_seq, reply.first_seq
    )
    .expect("writing to a String");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ident::InstanceId;
    use crate::runs::{Event, EventType, JsonText};
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("valid JSON")
    }

    fn view(outcome: Option<Outcome>) -> RunView {
        RunView {
            id: InstanceId::parse("instanceId", "run-1").unwrap(),
            outcome,
        }
    }

    #[test]
    fn claim_and_await_shapes() {
        assert_eq!(
            parse(&claim_reply(&ClaimReply::Claimed)),
            json!({ "claimed": true })
        );
        let done = view(Some(Outcome::Complete {
            result: Some(JsonText::result(r#"{"n":[1,"two"]}"#.into()).unwrap()),
        }));
        assert_eq!(
            parse(&claim_reply(&ClaimReply::Taken(done.clone()))),
            json!({ "claimed": false, "instanceId": "run-1", "state": "complete", "result": { "n": [1, "two"] } })
        );
        assert_eq!(
            parse(&await_reply(Some(&view(None)))),
            json!({ "state": "running", "instanceId": "run-1" })
        );
        let failed = view(Some(Outcome::Failed {
            error: "bad \"quote\"\n".into(),
        }));
        assert_eq!(
            parse(&await_reply(Some(&failed))),
            json!({ "state": "failed", "instanceId": "run-1", "error": "bad \"quote\"\n" })
        );
        assert_eq!(
            parse(&await_reply(Some(&view(Some(Outcome::Complete {
                result: None
            }))))),
            json!({ "state": "complete", "instanceId": "run-1" })
        );
        assert_eq!(parse(&await_reply(None)), json!({ "state": "none" }));
        assert_eq!(parse(&complete_reply(false)), json!({ "recorded": false }));
        assert_eq!(parse(&append_reply(7)), json!({ "seq": 7 }));
    }

    #[test]
    fn events_shape() {
        let reply = EventsReply {
            events: vec![
                Event {
                    seq: 4,
                    at_ms: 1_000,
                    kind: EventType::parse("type", "step \"a\"").unwrap(),
                    data: Some(JsonText::event_data("[1,2]".into()).unwrap()),
                },
                Event {
                    seq: 5,
                    at_ms: 1_001,
                    kind: EventType::parse("type", "done").unwrap(),
                    data: None,
                },
            ],
            latest_seq: 5,
            first_seq: 2,
        };
        assert_eq!(
            parse(&events_reply(&reply)),
            json!({
                "events": [
                    { "seq": 4, "at": 1000, "type": "step \"a\"", "data": [1, 2] },
                    { "seq": 5, "at": 1001, "type": "done", "data": null },
                ],
                "latestSeq": 5,
                "firstSeq": 2,
            })
        );
        let empty = EventsReply {
            events: vec![],
            latest_seq: 0,
            first_seq: 1,
        };
        assert_eq!(
            parse(&events_reply(&empty)),
            json!({ "events": [], "latestSeq": 0, "firstSeq": 1 })
        );
    }
}
