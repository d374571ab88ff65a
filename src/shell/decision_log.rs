//! One structured log line per decision, so `wrangler tail` answers "why is
//! this instance waiting?". Lines carry identifiers and reasons only: never
//! a token, an input hash's source or a payload.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// `DECISION_LOG = "off"` stops the lines, for the benchmark's measurement
/// of what they cost (BENCHMARKS.md); never a production setting: the
/// contract's logs stay on.
static OFF: AtomicBool = AtomicBool::new(false);

/// Reads `DECISION_LOG` (one isolate serves one Worker's variables).
pub fn configure(env: &worker::Env) {
    let off = env
        .var("DECISION_LOG")
        .is_ok_and(|v| v.to_string() == "off");
    OFF.store(off, Ordering::Relaxed);
}

/// What a log line is about: a Coordinator key, a serial-queue group or a run key.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    Key(&'a str),
    Group(&'a str),
    Run(&'a str),
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
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a str>,
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
    if OFF.load(Ordering::Relaxed) {
        return;
    }
    let (key, group, run) = match scope {
        Scope::Key(key) => (Some(key), None, None),
        Scope::Group(group) => (None, Some(group), None),
        Scope::Run(key) => (None, None, Some(key)),
    };
    let line = Line {
        baton: "decision",
        key,
        group,
        run,
        instance,
        decision,
        reason,
        waited_ms,
    };
    // Serializing borrowed strings and an integer cannot fail.
    let text = serde_json::to_string(&line).unwrap_or_default();
    worker::console_log!("{text}");
}
