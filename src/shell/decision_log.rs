//! One structured log line per decision, so `wrangler tail` answers "why is
//! this instance waiting?". Lines carry identifiers and reasons only: never
//! a token, an input hash's source or a payload.

use serde_json::{json, Value};

/// What a log line is about: a Coordinator key, a serial-queue group or a run key.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    Key(&'a str),
    Group(&'a str),
    Run(&'a str),
}

/// Logs one decision. `waited_ms` is how long the instance has waited so far, if it waits.
pub fn decision(
    scope: Scope<'_>,
    instance: &str,
    decision: &str,
    reason: &str,
    waited_ms: Option<u64>,
) {
    let mut line = json!({
        "baton": "decision",
        "instance": instance,
        "decision": decision,
        "reason": reason,
    });
    match scope {
        Scope::Key(key) => line["key"] = Value::from(key),
        Scope::Group(group) => line["group"] = Value::from(group),
        Scope::Run(key) => line["run"] = Value::from(key),
    }
    if let Some(ms) = waited_ms {
        line["waitedMs"] = Value::from(ms);
    }
    worker::console_log!("{line}");
}
