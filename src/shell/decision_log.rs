//! One structured log line per decision, so `wrangler tail` answers "why is
//! this instance waiting?". Lines carry identifiers and reasons only: never
//! a token, an input hash's source or a payload. Every line is a core's
//! [`LogLine`] (a transition's `log`, or what an effect came to), printed
//! here as it is: the shell words none.
//!
//! `BATON_LOG` (contract §9) chooses which lines print: `contended` (the
//! default) prints the decisions that involve more than one instance or an
//! instance's end ([`Kind::Contended`]), `all` prints every decision, `off`
//! none. Errors from Baton's own I/O are not decisions: they print always,
//! elsewhere.
//!
//! §9a: every decision the `contended` level prints (whatever the level
//! configured) also writes one data point to the Analytics Engine dataset
//! bound as `BATON_METRICS`, if one is (`super::metrics`); this is the one
//! place that decides it, from the line's kind.

use crate::limits::METRICS_INDEX_BYTES_MAX;
use crate::transition::{Figures, LogLine};
use serde::Serialize;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Whether a decision is worth a line at the default level.
pub use crate::transition::LogKind as Kind;

/// The `BATON_LOG` levels, as stored in [`LEVEL`].
const CONTENDED: u8 = 0;
const ALL: u8 = 1;
const OFF: u8 = 2;

/// The level this isolate's Worker configured (one isolate serves one
/// Worker's variables, so every object in it reads the same value).
static LEVEL: AtomicU8 = AtomicU8::new(CONTENDED);

/// The level `BATON_LOG` names, or the refusal naming the variable.
pub fn parse_level(value: Option<&str>) -> Result<u8, String> {
    match value.map(str::trim) {
        None | Some("contended") => Ok(CONTENDED),
        Some("all") => Ok(ALL),
        Some("off") => Ok(OFF),
        Some(other) => Err(format!(
            "Baton configuration: BATON_LOG must be \"contended\", \"all\" or \"off\" (got {other:?}); logging contended decisions"
        )),
    }
}

/// Whether [`configure`] has read the variable in this isolate.
static CONFIGURED: AtomicBool = AtomicBool::new(false);

/// Reads `BATON_LOG`, once per isolate (every object's and entrypoint's
/// constructor calls this; the variables of an isolate never change). A
/// value it does not know is reported (an operator's error, naming the
/// variable) and the default kept: a typo in a log setting must not stop
/// coordination.
pub fn configure(env: &worker::Env) {
    if CONFIGURED.swap(true, Ordering::Relaxed) {
        return;
    }
    super::metrics::configure(env);
    let value = env.var("BATON_LOG").ok().map(|v| v.to_string());
    let level = parse_level(value.as_deref()).unwrap_or_else(|message| {
        worker::console_error!("{message}");
        CONTENDED
    });
    LEVEL.store(level, Ordering::Relaxed);
}

/// Whether a line of `kind` prints at the configured level (a line that
/// does not print is never worded: its reason stays the core's data).
pub fn prints(kind: Kind) -> bool {
    match LEVEL.load(Ordering::Relaxed) {
        ALL => true,
        OFF => false,
        _ => kind != Kind::Routine,
    }
}

/// What a log line is about: a Coordinator key, a Debouncer key, a
/// serial-queue group, a run key or a rate-limit bucket.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    Key(&'a str),
    Debounce(&'a str),
    Group(&'a str),
    Run(&'a str),
    Bucket(&'a str),
}

impl Scope<'_> {
    /// The concept a data point names (§9a).
    fn concept(self) -> &'static str {
        match self {
            Scope::Key(_) => "coordinator",
            Scope::Debounce(_) => "debounce",
            Scope::Group(_) => "serial",
            Scope::Run(_) => "runs",
            Scope::Bucket(_) => "rate",
        }
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
    bucket: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<&'a str>,
    decision: &'a str,
    /// Worded here, as the line is written (`Display`): a line that does
    /// not print is never worded.
    #[serde(serialize_with = "worded")]
    reason: &'a dyn Display,
    #[serde(skip_serializing_if = "Option::is_none")]
    waited_ms: Option<u64>,
    /// §9a: this decision's data point was dropped (its write threw): how
    /// many this isolate has dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_dropped: Option<u64>,
}

/// A reason in its concept's words, written straight into the line.
fn worded<S: serde::Serializer>(reason: &&dyn Display, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(reason)
}

/// A line's words.
struct Said<'a> {
    instance: Option<&'a str>,
    decision: &'a str,
    reason: &'a dyn Display,
    waited_ms: Option<u64>,
}

/// One line, with or without an instance (an operator's decision on a
/// whole key has none), and for a contended decision its data point.
fn print(kind: Kind, scope: Scope<'_>, said: &Said<'_>, figures: &Figures) {
    let metrics_dropped = (kind == Kind::Contended)
        .then(|| point(scope, said, figures))
        .flatten();
    if !prints(kind) {
        return;
    }
    let (mut key, mut group, mut run, mut bucket) = (None, None, None, None);
    match scope {
        Scope::Key(k) | Scope::Debounce(k) => key = Some(k),
        Scope::Group(g) => group = Some(g),
        Scope::Run(r) => run = Some(r),
        Scope::Bucket(b) => bucket = Some(b),
    }
    let line = Line {
        baton: "decision",
        key,
        group,
        run,
        bucket,
        instance: said.instance,
        decision: said.decision,
        reason: said.reason,
        waited_ms: said.waited_ms,
        metrics_dropped,
    };
    // Serializing borrowed strings and an integer cannot fail.
    let text = serde_json::to_string(&line).unwrap_or_default();
    if kind == Kind::Warn {
        worker::console_warn!("{text}");
    } else {
        worker::console_log!("{text}");
    }
}

/// Prints a line a core decided, in `scope`, its data point (§9a)
/// carrying the figures the core took into it.
/// A rate bucket's or a run's line about no instance names `-` (a
/// bucket's callers are not instances it knows; a run's deletion is the
/// retention's), as those lines always have.
pub fn line<Why: Display>(scope: Scope<'_>, line: &LogLine<Why>) {
    let nobody = match scope {
        Scope::Bucket(_) | Scope::Run(_) => Some("-"),
        Scope::Key(_) | Scope::Debounce(_) | Scope::Group(_) => None,
    };
    let said = Said {
        instance: line.instance.as_ref().map(|i| i.as_str()).or(nobody),
        decision: line.decision,
        reason: &line.reason,
        waited_ms: line.waited_ms,
    };
    print(line.kind, scope, &said, &line.figures);
}

/// §9a: a contended decision's data point, if a dataset is bound; the
/// count of dropped points if this one was dropped.
fn point(scope: Scope<'_>, said: &Said<'_>, figures: &Figures) -> Option<u64> {
    let (Scope::Key(index)
    | Scope::Debounce(index)
    | Scope::Group(index)
    | Scope::Run(index)
    | Scope::Bucket(index)) = scope;
    super::metrics::write(&super::metrics::Point {
        index: truncated(index, METRICS_INDEX_BYTES_MAX),
        concept: scope.concept(),
        what: said.decision,
        instance: said.instance.filter(|id| *id != "-"),
        workflow: figures.workflow.as_deref(),
        waited_ms: said.waited_ms.or(figures.waited_ms).unwrap_or(0),
        held_ms: figures.held_ms,
        holders: figures.holders,
        waiting: figures.waiting,
        limit: figures.limit,
    })
}

/// `text`'s longest prefix of at most `max` bytes that ends on a character.
fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
