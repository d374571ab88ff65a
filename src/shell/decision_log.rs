//! One structured log line per decision, so `wrangler tail` answers "why is
//! this instance waiting?". Lines carry identifiers and reasons only: never
//! a token, an input hash's source or a payload.

use serde::Serialize;

/// What a log line is about: a Coordinator key or a serial-queue group.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    Key(&'a str),
    Group(&'a str),
}

/// One line, serialized straight from borrowed fields (no intermediate JSON
/// value: the line is built on every decision, the hot path included).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    baton: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    instance: &'a str,
    decision: &'a str,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    waited_ms: Option<u64>,
}

/// Logs one decision. `waited_ms` is how long the instance has waited so far, if it waits.
pub fn decision(
    scope: Scope<'_>,
    instance: &str,
    decision: &str,
    reason: &str,
    waited_ms: Option<u64>,
) {
    let (key, group) = match scope {
        Scope::Key(key) => (Some(key), None),
        Scope::Group(group) => (None, Some(group)),
    };
    let line = Line {
        baton: "decision",
        key,
        group,
        instance,
        decision,
        reason,
        waited_ms,
    };
    // Serializing borrowed strings and an integer cannot fail.
    let text = serde_json::to_string(&line).unwrap_or_default();
    worker::console_log!("{text}");
}
