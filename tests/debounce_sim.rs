//! A seeded, deterministic simulation of the debounce core (contract §4).
//!
//! The real [`decide`] runs against three models: the Durable Object shell
//! (commit the writes and arm the alarm, then reply, then create, then report
//! each create's result back), the Workflow engine (creates that succeed,
//! fail, succeed but report a failure, or find the id taken) and the callers
//! (`debounce` with random edges, delays, waits, params and prefixes, at
//! random times; `startAt` in the past and future, with and without an id;
//! `flush`; `cancel`; `inspect`).
//!
//! Faults: crashes before the commit (the call never happened) and between
//! the commit and the creates (the creates are lost; the alarm must redo
//! them); object resets that lose every create and report in flight; alarms
//! that come late, early, twice, or never (then the platform retries them);
//! alarm handlers that crash before or after their commit.
//!
//! Checked after every step, against a reference [`Model`] of the rules that
//! predicts every reply and every start fired:
//! - the core's invariants, and that applying its writes gives its state;
//! - every reply, and the exact set of starts each decision fires;
//! - a trailing start fires no earlier than its burst's end and no later
//!   than that end (so never later than `maxWaitMs` after the burst began)
//!   plus the worst alarm lateness the simulation injects;
//! - every create carries the latest params its id was given, no id fires
//!   twice, and an id that was cancelled or replaced never starts;
//! - batching (§4a): the model keeps each batch's params itself, measures
//!   the text it would be created with, and predicts when `maxItems` starts
//!   a batch at once and when `maxBytes` splits a burst (some calls' params
//!   are sized to land exactly on the bound, or one byte past it);
//! - the key's pending start and unconfirmed creates are exactly the
//!   model's: no pending start is ever lost.
//!
//! At the end of each seed, faults and calls stop and the system drains:
//! every start promised and not cancelled must have been created exactly
//! once, with its latest params, and the key must be left with nothing pending;
//! every call's params that went into a batch are in exactly one run (the
//! one the call was told, unless it was cancelled), in the order the calls
//! came, and no run holds more params or bytes than its batch's bounds.
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 200,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

mod common;

use baton::debounce::{
    self, apply, assert_invariants, pending_view, BatchFields, BatchLimit, BatchStarted, Call,
    CreateOutcome, DebounceCall, DebounceFields, DebounceReply, Edge, IdSuffix, KeyState, Outcome,
    StartAtCall, StartParams, Transition,
};
use baton::ident::InstanceId;
use baton::limits::{
    DEBOUNCE_CREATE_LOST_MS, DEBOUNCE_CREATE_RETRY_MS_MAX, DEBOUNCE_UNFINISHED_STARTS_MAX,
};
use baton::transition::LogKind;
use common::{
    assert_reached, report_failure, said, simulate, Fault, Faults, Injected, Rng, Said, SimStats,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Total steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 200_000;
/// Steps with calls and faults per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 3_000;
/// A drain longer than this is a liveness failure.
const DRAIN_STEPS_MAX: u64 = 20_000;
/// Latest an alarm is delivered after its time, in ms, when nothing fails.
const ALARM_LATE_MS_MAX: u64 = 300;
/// How soon the platform retries an alarm that was lost or whose handler failed.
const ALARM_RETRY_MS: u64 = 1_000;
/// The worst lateness the simulation injects: one late delivery, then one
/// retry (each armed alarm suffers at most one fault).
const ALARM_LATENESS_MS_MAX: u64 = ALARM_LATE_MS_MAX + ALARM_RETRY_MS;

type Id = InstanceId;

fn id(text: &str) -> Id {
    InstanceId::parse("instanceId", text).unwrap()
}

// ---------------------------------------------------------------------------
// The reference model: the contract's rules, written as plainly as possible.

#[derive(Debug, Clone)]
struct MBurst {
    first: u64,
    last: u64,
    delay: u64,
    max_wait: u64,
    leading: Option<Id>,
    trailing: Option<Id>,
    /// The trailing start's batch, when the call that made it pending batched.
    batch: Option<MBatch>,
}

/// A batch as the model keeps it: its bounds, and each call's params.
#[derive(Debug, Clone)]
struct MBatch {
    max_items: usize,
    max_bytes: usize,
    items: Vec<String>,
}

impl MBatch {
    /// The params its instance is created with, written out by the model.
    fn text(&self) -> String {
        format!("{{\"batch\":[{}]}}", self.items.join(","))
    }

    /// Its text's bytes with `params` added.
    fn bytes_with(&self, params: &str) -> usize {
        let mut more = self.clone();
        more.items.push(params.to_owned());
        more.text().len()
    }
}

/// The unique number the simulation puts in every call's params.
fn call_number(params: &str) -> u64 {
    let value: Value = serde_json::from_str(params).unwrap();
    value["n"].as_u64().expect("every call's params carry n")
}

impl MBurst {
    fn end(&self) -> u64 {
        (self.last + self.delay).min(self.first + self.max_wait)
    }
}

#[derive(Debug, Clone, Default)]
struct Model {
    burst: Option<MBurst>,
    /// A pending `startAt`: its id and time.
    at: Option<(Id, u64)>,
    /// The params each id will start with (the latest stored).
    params_of: BTreeMap<Id, Option<String>>,
    /// Fired, create not yet confirmed, with the params it fired with.
    unconfirmed: BTreeMap<Id, Option<String>>,
    confirmed: BTreeSet<Id>,
    /// Cancelled, or replaced by a `startAt` with another id: never to start.
    dropped: BTreeSet<Id>,
    /// Every id a reply named.
    promised: BTreeSet<Id>,
    /// Each batching start's bounds: (maxItems, maxBytes).
    bounds_of: BTreeMap<Id, (usize, usize)>,
    /// Every call whose params went into a batch: its number, and the batch.
    batched: Vec<(u64, Id)>,
    /// Calls whose params went into a batch that was cancelled or replaced.
    discarded: BTreeSet<u64>,
}

/// A decision the simulation asks of the key: a caller's call (each
/// answered with its own type) or what re-enters the key.
#[derive(Debug, Clone)]
enum Input {
    Debounce {
        call: DebounceCall,
        suffix: IdSuffix,
    },
    StartAt {
        call: StartAtCall,
        suffix: IdSuffix,
    },
    Flush,
    Cancel,
    Tick,
    Created {
        id: Id,
        outcome: CreateOutcome,
    },
}

/// What a decision answers, as the model predicts it and as the core's
/// typed answer reads.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Debounce(DebounceReply),
    StartAt {
        instance_id: Id,
        at: f64,
    },
    Flush {
        started: Option<Id>,
    },
    Cancel {
        cancelled: Option<Id>,
    },
    /// A tick or a create's report: nobody waits for an answer.
    Nothing,
}

/// The core's decision of `input`: its answer, and the transition.
fn decide(
    state: &KeyState,
    now: u64,
    input: Input,
) -> Result<(Reply, Transition), baton::error::BatonError> {
    let reentry = |input| debounce::decide(state, now, input).map(|t| (Reply::Nothing, t));
    match input {
        Input::Debounce { call, suffix } => debounce::Debounce { call, suffix }
            .decide(state, now)
            .map(|(reply, t)| (Reply::Debounce(reply), t)),
        Input::StartAt { call, suffix } => debounce::StartAt { call, suffix }
            .decide(state, now)
            .map(|(r, t)| {
                let reply = Reply::StartAt {
                    instance_id: r.instance_id,
                    at: r.at,
                };
                (reply, t)
            }),
        Input::Flush => debounce::Flush
            .decide(state, now)
            .map(|(started, t)| (Reply::Flush { started }, t)),
        Input::Cancel => debounce::Cancel
            .decide(state, now)
            .map(|(cancelled, t)| (Reply::Cancel { cancelled }, t)),
        Input::Tick => reentry(debounce::Input::Tick),
        Input::Created { id, outcome } => reentry(debounce::Input::Created { id, outcome }),
    }
}

/// What the model expects of one decision.
struct Expect {
    reply: Result<Reply, &'static str>,
    fires: Vec<Id>,
}

impl Model {
    fn pending(&self) -> Option<&Id> {
        self.burst
            .as_ref()
            .and_then(|b| b.trailing.as_ref())
            .or(self.at.as_ref().map(|(id, _)| id))
    }

    fn unfinished(&self) -> usize {
        self.unconfirmed.len() + usize::from(self.pending().is_some())
    }

    /// The pending batch will never start with its params: its calls' go.
    fn discard_batch(&mut self) {
        let Some(burst) = &self.burst else { return };
        let (Some(_), Some(trailing)) = (&burst.batch, &burst.trailing) else {
            return;
        };
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.batched)
            .into_iter()
            .partition(|(_, id)| id == trailing);
        self.batched = kept;
        self.discarded.extend(gone.into_iter().map(|(n, _)| n));
        self.bounds_of.remove(&trailing.clone());
    }

    fn fire(&mut self, id: Id, fires: &mut Vec<Id>) {
        assert!(
            !self.unconfirmed.contains_key(&id) && !self.confirmed.contains(&id),
            "model: {id} fires twice"
        );
        let params = self.params_of[&id].clone();
        self.unconfirmed.insert(id.clone(), params);
        fires.push(id);
    }

    /// What is due at `now` fires; the check that it is not late is here.
    fn settle(&mut self, now: u64, fires: &mut Vec<Id>) {
        if let Some(burst) = self.burst.clone() {
            if now >= burst.end() {
                if let Some(trailing) = burst.trailing.clone() {
                    assert!(
                        now <= burst.end() + ALARM_LATENESS_MS_MAX,
                        "trailing start {trailing} fires at {now}, {} ms after its burst ended \
                         (first call {}, maxWait {})",
                        now - burst.end(),
                        burst.first,
                        burst.max_wait
                    );
                    assert!(now <= burst.first + burst.max_wait + ALARM_LATENESS_MS_MAX);
                    self.fire(trailing, fires);
                }
                self.burst = None;
            }
        }
        if let Some((at_id, at_ms)) = self.at.clone() {
            if now >= at_ms {
                assert!(
                    now <= at_ms + ALARM_LATENESS_MS_MAX,
                    "startAt {at_id} fires {} ms late",
                    now - at_ms
                );
                self.at = None;
                self.fire(at_id, fires);
            }
        }
    }

    fn room(&self) -> Result<(), &'static str> {
        if self.unfinished() >= DEBOUNCE_UNFINISHED_STARTS_MAX {
            Err("key")
        } else {
            Ok(())
        }
    }

    fn debounce(&mut self, now: u64, call: &DebounceCall, suffix: &str) -> Expect {
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        match self.debounce_call(now, call, suffix, &mut fires) {
            Ok(reply) => {
                self.settle(now, &mut fires);
                self.promised.insert(reply.instance_id.clone());
                Expect {
                    reply: Ok(Reply::Debounce(reply)),
                    fires,
                }
            }
            Err(field) => Expect {
                reply: Err(field),
                fires,
            },
        }
    }

    /// Adds a call's params to the trailing start's batch; a batch brought
    /// to its maxItems starts now and ends the burst.
    fn add_to_batch(
        &mut self,
        params: &str,
        fires: &mut Vec<Id>,
        started: &mut Vec<BatchStarted>,
    ) -> bool {
        let burst = self.burst.as_mut().expect("a batch belongs to a burst");
        let id = burst
            .trailing
            .clone()
            .expect("a batch belongs to a trailing start");
        let batch = burst.batch.as_mut().expect("the start batches");
        batch.items.push(params.to_owned());
        self.batched.push((call_number(params), id.clone()));
        let text = batch.text();
        let full = batch.items.len() >= batch.max_items;
        let (items, max_items) = (batch.items.len(), batch.max_items);
        self.params_of.insert(id.clone(), Some(text.clone()));
        if full {
            started.push(BatchStarted {
                id: id.clone(),
                items: items as u32,
                bytes: text.len() as u64,
                by: BatchLimit::MaxItems(max_items as u32),
            });
            self.burst = None;
            self.fire(id, fires);
        }
        full
    }

    /// Makes `start` the burst's trailing start, batching as the call says.
    fn pend_trailing(
        &mut self,
        start: &Id,
        call: &DebounceCall,
        fires: &mut Vec<Id>,
        started: &mut Vec<BatchStarted>,
    ) -> bool {
        let burst = self.burst.as_mut().expect("pending in a burst");
        burst.trailing = Some(start.clone());
        burst.batch = call.batch.map(|bounds| MBatch {
            max_items: bounds.max_items as usize,
            max_bytes: bounds.max_bytes as usize,
            items: Vec::new(),
        });
        match (&burst.batch, &call.params) {
            (Some(batch), params) => {
                self.bounds_of
                    .insert(start.clone(), (batch.max_items, batch.max_bytes));
                self.params_of.insert(start.clone(), Some(batch.text()));
                match params {
                    Some(params) => self.add_to_batch(params, fires, started),
                    None => false,
                }
            }
            (None, params) => {
                self.params_of.insert(start.clone(), params.clone());
                false
            }
        }
    }

    fn debounce_call(
        &mut self,
        now: u64,
        call: &DebounceCall,
        suffix: &str,
        fires: &mut Vec<Id>,
    ) -> Result<DebounceReply, &'static str> {
        let new_id = || id(&format!("{}{suffix}", call.id_prefix));
        let mut started = Vec::new();
        let mut open = self.burst.clone().filter(|b| now < b.end());
        // maxBytes: params that would take the batch past it start the
        // batch without them, and begin a new burst.
        if let (Some(burst), Some(params)) = (&open, &call.params) {
            if let (Some(batch), Some(trailing), Edge::Trailing | Edge::Both) =
                (&burst.batch, &burst.trailing, call.edge)
            {
                if batch.bytes_with(params) > batch.max_bytes {
                    self.room()?;
                    let text = batch.text();
                    started.push(BatchStarted {
                        id: trailing.clone(),
                        items: batch.items.len() as u32,
                        bytes: text.len() as u64,
                        by: BatchLimit::MaxBytes(batch.max_bytes as u32),
                    });
                    assert_eq!(self.params_of[trailing], Some(text));
                    self.burst = None;
                    self.fire(trailing.clone(), fires);
                    open = None;
                }
            }
        }
        let mut reply = if let Some(mut burst) = open {
            burst.last = now;
            burst.delay = call.delay_ms;
            burst.max_wait = call.max_wait_ms;
            let fire_at = burst.end().max(now);
            match call.edge {
                Edge::Trailing | Edge::Both => match burst.trailing.clone() {
                    Some(trailing) => {
                        assert!(!self.unconfirmed.contains_key(&trailing));
                        let batching = burst.batch.is_some();
                        self.burst = Some(burst);
                        let full = match (batching, &call.params) {
                            (true, Some(params)) => self.add_to_batch(params, fires, &mut started),
                            (true, None) => false,
                            (false, params) => {
                                self.params_of.insert(trailing.clone(), params.clone());
                                false
                            }
                        };
                        DebounceReply {
                            outcome: if full {
                                Outcome::Started
                            } else {
                                Outcome::Scheduled
                            },
                            instance_id: trailing,
                            fire_at_ms: (!full).then_some(fire_at),
                            batches_started: Vec::new(),
                        }
                    }
                    None => {
                        self.room()?;
                        let trailing = new_id();
                        self.burst = Some(burst);
                        let full = self.pend_trailing(&trailing, call, fires, &mut started);
                        DebounceReply {
                            outcome: if full {
                                Outcome::Started
                            } else {
                                Outcome::Scheduled
                            },
                            instance_id: trailing,
                            fire_at_ms: (!full).then_some(fire_at),
                            batches_started: Vec::new(),
                        }
                    }
                },
                Edge::Leading => {
                    let reply = match (&burst.leading, &burst.trailing) {
                        (Some(leading), _) => DebounceReply {
                            outcome: Outcome::Suppressed,
                            instance_id: leading.clone(),
                            fire_at_ms: None,
                            batches_started: Vec::new(),
                        },
                        (None, Some(trailing)) => DebounceReply {
                            outcome: Outcome::Suppressed,
                            instance_id: trailing.clone(),
                            fire_at_ms: Some(fire_at),
                            batches_started: Vec::new(),
                        },
                        (None, None) => panic!("model: a burst with no start"),
                    };
                    self.burst = Some(burst);
                    reply
                }
            }
        } else {
            let start = match self.at.take() {
                Some((taken, _)) => taken,
                None => {
                    self.room()?;
                    new_id()
                }
            };
            self.burst = Some(MBurst {
                first: now,
                last: now,
                delay: call.delay_ms,
                max_wait: call.max_wait_ms,
                leading: None,
                trailing: None,
                batch: None,
            });
            match call.edge {
                Edge::Trailing => {
                    let fire_at = self.burst.as_ref().unwrap().end();
                    let full = self.pend_trailing(&start, call, fires, &mut started);
                    DebounceReply {
                        outcome: if full {
                            Outcome::Started
                        } else {
                            Outcome::Scheduled
                        },
                        instance_id: start,
                        fire_at_ms: (!full).then_some(fire_at),
                        batches_started: Vec::new(),
                    }
                }
                Edge::Leading | Edge::Both => {
                    self.params_of.insert(start.clone(), call.params.clone());
                    self.burst.as_mut().unwrap().leading = Some(start.clone());
                    self.fire(start.clone(), fires);
                    DebounceReply {
                        outcome: Outcome::Started,
                        instance_id: start,
                        fire_at_ms: None,
                        batches_started: Vec::new(),
                    }
                }
            }
        };
        reply.batches_started = started;
        Ok(reply)
    }

    fn start_at(&mut self, now: u64, call: &StartAtCall, suffix: &str) -> Expect {
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        let pending = self.pending().cloned();
        if pending.is_none() {
            if let Err(field) = self.room() {
                return Expect {
                    reply: Err(field),
                    fires,
                };
            }
        }
        let start = match (&call.instance_id, &pending) {
            (Some(given), _) => given.clone(),
            (None, Some(pending)) => pending.clone(),
            (None, None) => id(&format!("start-{suffix}")),
        };
        if let Some(replaced) = pending.filter(|p| *p != start) {
            self.dropped.insert(replaced);
        }
        // Its time and params replaced: a batch gathered for it goes.
        self.discard_batch();
        self.burst = None;
        self.params_of.insert(start.clone(), call.params.clone());
        self.at = Some((start.clone(), call.at_ms()));
        self.settle(now, &mut fires);
        self.promised.insert(start.clone());
        Expect {
            reply: Ok(Reply::StartAt {
                instance_id: start,
                at: call.at,
            }),
            fires,
        }
    }

    fn flush(&mut self, now: u64) -> Expect {
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        let started = self.pending().cloned();
        self.burst = None;
        self.at = None;
        if let Some(start) = &started {
            self.fire(start.clone(), &mut fires);
        }
        Expect {
            reply: Ok(Reply::Flush { started }),
            fires,
        }
    }

    fn cancel(&mut self, now: u64) -> Expect {
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        let cancelled = self.pending().cloned();
        if let Some(id) = &cancelled {
            self.dropped.insert(id.clone());
        }
        self.discard_batch();
        self.burst = None;
        self.at = None;
        Expect {
            reply: Ok(Reply::Cancel { cancelled }),
            fires,
        }
    }

    fn tick(&mut self, now: u64) -> Expect {
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        Expect {
            reply: Ok(Reply::Nothing),
            fires,
        }
    }

    fn created(&mut self, now: u64, id: &Id, outcome: &CreateOutcome) -> Expect {
        if !matches!(outcome, CreateOutcome::Failed(_)) && self.unconfirmed.remove(id).is_some() {
            self.confirmed.insert(id.clone());
        }
        let mut fires = Vec::new();
        self.settle(now, &mut fires);
        Expect {
            reply: Ok(Reply::Nothing),
            fires,
        }
    }
}

// ---------------------------------------------------------------------------
// The simulated world.

/// How one seed behaves, drawn from the seed.
#[derive(Debug)]
struct Knobs {
    /// Delays are drawn up to this; small, so bursts end often.
    delay_max: u64,
    /// How much time passes between steps, at most.
    gap_max: u64,
    call_w: u64,
    time_w: u64,
    create_w: u64,
    edges: Vec<Edge>,
    no_max_wait_pct: u64,
    start_at_w: u64,
    flush_w: u64,
    cancel_w: u64,
    /// Creates that fail, and that create but report a failure.
    fail_pct: u64,
    ghost_pct: u64,
    /// Production says "exists" for a taken id; local mode creates nothing
    /// and says nothing (contract: both count as done).
    exists_is_error: bool,
    /// Percent of alarms delivered exactly at their time.
    alarm_on_time_pct: u64,
    /// Percent of time steps that land exactly on a boundary the model
    /// computes (a burst's end, a `startAt`, a create presumed lost).
    boundary_pct: u64,
    /// Percent of trailing calls with `batch` (§4a).
    batch_pct: u64,
    /// `maxItems` is drawn up to this, when a call names one.
    max_items_max: u64,
    /// `maxBytes` is drawn from `max_bytes_min..=max_bytes_max`, when named.
    max_bytes_min: u64,
    max_bytes_max: u64,
    /// The padding in a call's params is drawn up to this many bytes.
    pad_max: u64,
}

impl Knobs {
    fn draw(rng: &mut Rng) -> Knobs {
        let (fail_pct, ghost_pct) = (rng.range(0, 20), rng.range(0, 10));
        let edge_sets: [&[Edge]; 5] = [
            &[Edge::Trailing],
            &[Edge::Leading],
            &[Edge::Both],
            &[Edge::Trailing, Edge::Leading, Edge::Both],
            &[Edge::Trailing, Edge::Trailing, Edge::Both],
        ];
        Knobs {
            delay_max: rng.range(2, 400),
            gap_max: rng.range(1, 300),
            call_w: rng.range(20, 150),
            time_w: rng.range(20, 150),
            create_w: rng.range(20, 150),
            edges: rng.pick(&edge_sets).to_vec(),
            no_max_wait_pct: rng.range(0, 30),
            start_at_w: rng.range(0, 10),
            flush_w: rng.range(0, 6),
            cancel_w: rng.range(0, 4),
            fail_pct,
            ghost_pct,
            exists_is_error: rng.below(2) == 0,
            alarm_on_time_pct: rng.range(0, 60),
            boundary_pct: rng.range(5, 40),
            batch_pct: *rng.pick(&[0, 30, 60, 90]),
            max_items_max: rng.range(1, 12),
            max_bytes_min: rng.range(20, 80),
            max_bytes_max: rng.range(80, 400),
            pad_max: rng.range(0, 60),
        }
    }
}

/// How a decision went through the shell.
#[derive(Debug)]
enum Ran {
    /// The object crashed before the commit: as if never called.
    CrashedBefore,
    /// Committed, then the object crashed: the creates were lost and the
    /// caller heard an error.
    CrashedAfter,
    Refused,
    Heard(Reply),
}

/// Work the shell does after a commit, in flight until a later step.
#[derive(Debug, Clone)]
enum Effect {
    Create(baton::debounce::Create),
    Report(Id, CreateOutcome),
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    steps: u64,
    seeds: u64,
    calls: u64,
    refused: u64,
    started: u64,
    scheduled: u64,
    suppressed: u64,
    fires: u64,
    creates: u64,
    create_failures: u64,
    exists: u64,
    retries: u64,
    faults: Injected,
    boundary_steps: u64,
    flushes: u64,
    cancels: u64,
    start_ats: u64,
    takeovers: u64,
    /// Batches started at once by `maxItems`, and by `maxBytes`.
    batches_full: u64,
    batches_split: u64,
    /// Params sized to land exactly on a batch's `maxBytes`, or just past.
    batch_boundary_params: u64,
    /// Calls the request refused (`batch` with another edge, params too big).
    refused_at_edge: u64,
    /// Runs created with a batch, and the params they carried.
    batch_runs: u64,
    batched_params: u64,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, other: &Stats) {
        let Stats {
            steps,
            seeds,
            calls,
            refused,
            started,
            scheduled,
            suppressed,
            fires,
            creates,
            create_failures,
            exists,
            retries,
            faults,
            boundary_steps,
            flushes,
            cancels,
            start_ats,
            takeovers,
            batches_full,
            batches_split,
            batch_boundary_params,
            refused_at_edge,
            batch_runs,
            batched_params,
        } = other;
        self.steps += steps;
        self.seeds += seeds;
        self.calls += calls;
        self.refused += refused;
        self.started += started;
        self.scheduled += scheduled;
        self.suppressed += suppressed;
        self.fires += fires;
        self.creates += creates;
        self.create_failures += create_failures;
        self.exists += exists;
        self.retries += retries;
        self.faults.add(faults);
        self.boundary_steps += boundary_steps;
        self.flushes += flushes;
        self.cancels += cancels;
        self.start_ats += start_ats;
        self.takeovers += takeovers;
        self.batches_full += batches_full;
        self.batches_split += batches_split;
        self.batch_boundary_params += batch_boundary_params;
        self.refused_at_edge += refused_at_edge;
        self.batch_runs += batch_runs;
        self.batched_params += batched_params;
    }
}

struct Sim {
    rng: Rng,
    knobs: Knobs,
    trace: bool,
    now: u64,
    /// What the object's storage holds.
    stored: KeyState,
    model: Model,
    /// The armed alarm's time, and when the platform delivers it.
    alarm: Option<(u64, u64)>,
    /// Deliveries that are not the armed alarm: duplicates, early fires,
    /// retries of failed handlers.
    stray_alarms: Vec<u64>,
    effects: Vec<Effect>,
    /// The Workflow engine: every instance created, with its params.
    instances: BTreeMap<Id, Option<String>>,
    next_suffix: u64,
    /// The number the latest call's params carry.
    next_n: u64,
    /// Calls come (off for the drain, when faults stop too).
    open: bool,
    faults: Faults,
    stats: Stats,
    log: Vec<String>,
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed);
        let faults = Faults::draw(
            &mut rng,
            &[
                (Fault::CrashBeforeCommit, 5),
                (Fault::ResetAfterCommit, 8),
                (Fault::Reset, 3),
                (Fault::AlarmLost, 10),
                (Fault::AlarmSpurious, 10),
                (Fault::AlarmDuplicate, 10),
                (Fault::EventLost, 3),
                (Fault::EventDuplicate, 5),
            ],
        );
        let knobs = Knobs::draw(&mut rng);
        Sim {
            rng,
            knobs,
            trace,
            now: 1_000_000 + seed,
            stored: KeyState::default(),
            model: Model::default(),
            alarm: None,
            stray_alarms: Vec::new(),
            effects: Vec::new(),
            instances: BTreeMap::new(),
            next_suffix: 0,
            next_n: 0,
            open: true,
            faults,
            stats: Stats::default(),
            log: Vec::new(),
        }
    }

    fn note(&mut self, line: String) {
        if self.trace {
            eprintln!("{:>10} {line}", self.now);
        }
        self.log.push(format!("{:>10} {line}", self.now));
        if self.log.len() > 60 {
            self.log.remove(0);
        }
    }

    fn suffix(&mut self) -> (String, IdSuffix) {
        self.next_suffix += 1;
        let text = format!("s{}", self.next_suffix);
        (text.clone(), IdSuffix::new(text))
    }

    /// The engine's own behaviour (not a fault): off for the drain.
    fn chance(&mut self, pct: u64) -> bool {
        self.open && self.rng.percent(pct)
    }

    fn strikes(&mut self, fault: Fault) -> bool {
        self.faults.strikes(&mut self.rng, fault)
    }

    /// Runs one decision through the shell: maybe crash before the commit;
    /// commit (writes and alarm together); maybe crash before the effects;
    /// queue the creates. `expect` is the model's side of the same input:
    /// it is applied to the model when the decision commits (on a copy, to
    /// compare, when the core refuses).
    fn run_call(&mut self, input: Input, expect: impl FnOnce(&mut Model, u64) -> Expect) -> Ran {
        if self.strikes(Fault::CrashBeforeCommit) {
            self.note(format!("crash before commit: {input:?}"));
            return Ran::CrashedBefore;
        }
        let before = self.stored.clone();
        let (reply, transition) = match decide(&before, self.now, input.clone()) {
            Err(error) => {
                let expected = expect(&mut self.model.clone(), self.now);
                assert_eq!(
                    Err(error.field()),
                    expected.reply.map(|_| ()),
                    "refusal differs from the model for {input:?}"
                );
                assert!(
                    self.model.unfinished() >= DEBOUNCE_UNFINISHED_STARTS_MAX,
                    "refused with room to spare: {error}"
                );
                self.stats.refused += 1;
                return Ran::Refused;
            }
            Ok(decided) => decided,
        };
        let mut model = std::mem::take(&mut self.model);
        let expected = expect(&mut model, self.now);
        self.check_transition(&before, (&reply, &transition), &expected, &input, &model);
        self.model = model;
        self.stored = transition.state.clone();
        self.arm(transition.alarm.at_ms());
        if self.strikes(Fault::ResetAfterCommit) {
            self.note(format!(
                "crash after commit, {} creates lost: {input:?}",
                transition.effects.len()
            ));
            return Ran::CrashedAfter;
        }
        for create in transition.effects.iter() {
            self.effects.push(Effect::Create(create.clone()));
        }
        Ran::Heard(reply)
    }

    fn check_transition(
        &mut self,
        before: &KeyState,
        (reply, transition): (&Reply, &Transition),
        expect: &Expect,
        input: &Input,
        model: &Model,
    ) {
        let mut applied = before.clone();
        apply(&mut applied, &transition.writes);
        assert_eq!(
            applied, transition.state,
            "writes do not give the decided state"
        );
        assert_invariants(&transition.state);
        assert_eq!(
            Ok(reply.clone()),
            expect.reply.clone(),
            "reply differs from the model for {input:?}"
        );
        if let Ok(reply) = &expect.reply {
            assert_eq!(
                said(&transition.log),
                expected_lines(reply),
                "LOG: the decision's lines (the oracle's rule) for {input:?}"
            );
        }
        let fired: Vec<Id> = transition
            .effects
            .iter()
            .filter(|c| !before.creating.iter().any(|b| b.id == c.id))
            .map(|c| c.id.clone())
            .collect();
        assert_eq!(fired, expect.fires, "fired starts differ from the model");
        self.stats.fires += fired.len() as u64;
        self.stats.retries += (transition.effects.len() - fired.len()) as u64;
        for create in transition.effects.iter() {
            assert!(
                !model.dropped.contains(&create.id),
                "{} was cancelled or replaced, yet is created",
                create.id
            );
            assert_eq!(
                Some(&create.params),
                model.unconfirmed.get(&create.id),
                "{} is created with params other than its latest",
                create.id
            );
        }
        // Nothing pending is lost: the key's pending start and unconfirmed
        // creates are exactly the model's.
        let state = &transition.state;
        assert_eq!(
            state.phase.pending().map(|p| &p.id),
            model.pending(),
            "pending start differs from the model"
        );
        if let Some(pending) = state.phase.pending() {
            let model_batch = model.burst.as_ref().and_then(|b| b.batch.as_ref());
            match (&pending.params, model_batch) {
                (StartParams::Latest(params), None) => assert_eq!(
                    Some(params),
                    model.params_of.get(&pending.id),
                    "the pending start's params differ from the model's latest"
                ),
                (StartParams::Batch(bounds), Some(batch)) => {
                    assert_eq!(
                        state.batch, batch.items,
                        "the batch differs from the model's"
                    );
                    assert_eq!(
                        (bounds.max_items as usize, bounds.max_bytes as usize),
                        (batch.max_items, batch.max_bytes),
                        "the batch's bounds differ from the model's"
                    );
                }
                (params, batch) => {
                    panic!("the pending start's params are {params:?}, the model's batch {batch:?}")
                }
            }
            if let Some(view) = pending_view(state) {
                assert_eq!(
                    view.items,
                    model_batch.map(|b| b.items.len() as u32),
                    "inspect's items differ from the model's"
                );
            }
        }
        let creating: BTreeSet<&Id> = state.creating.iter().map(|c| &c.id).collect();
        let unconfirmed: BTreeSet<&Id> = model.unconfirmed.keys().collect();
        assert_eq!(
            creating, unconfirmed,
            "unconfirmed creates differ from the model"
        );
        if let Some(alarm_at) = transition.alarm.at_ms() {
            assert!(
                alarm_at > self.now,
                "the core asked for an alarm in the past"
            );
        }
        let due = model
            .burst
            .as_ref()
            .filter(|b| b.trailing.is_some())
            .map(MBurst::end)
            .or(model.at.as_ref().map(|(_, at)| *at));
        if let Some(due) = due {
            assert!(
                transition.alarm.at_ms().is_some_and(|a| a <= due),
                "alarm {:?} is after the pending start's time {due}",
                transition.alarm.at_ms()
            );
        }
        if let Some(view) = pending_view(state) {
            assert_eq!(Some(view.fire_at_ms), due, "inspect's fireAt is wrong");
        }
    }

    /// The shell sets the alarm; the platform decides when it comes.
    fn arm(&mut self, at: Option<u64>) {
        let Some(at) = at else {
            self.alarm = None;
            return;
        };
        if self.alarm.is_some_and(|(armed, _)| armed == at) {
            return;
        }
        // Exactly on time often: the burst's end itself is where an
        // off-by-one in "is it over" shows.
        let mut delivery = if self.rng.percent(self.knobs.alarm_on_time_pct) {
            at
        } else {
            let late = self.rng.range(0, ALARM_LATE_MS_MAX);
            if late > 0 {
                self.faults.count(Fault::AlarmLate);
            }
            at + late
        };
        // At most one fault more per armed alarm (the lateness bound the
        // model checks counts one).
        if self.strikes(Fault::AlarmLost) {
            // Lost, then retried by the platform.
            delivery += ALARM_RETRY_MS;
        } else if self.strikes(Fault::AlarmSpurious) {
            // Early: a stray delivery before its time.
            let early = self.rng.range(self.now, at);
            self.stray_alarms.push(early);
        } else if self.strikes(Fault::AlarmDuplicate) {
            let again = delivery + self.rng.range(0, ALARM_LATE_MS_MAX);
            self.stray_alarms.push(again);
        }
        self.alarm = Some((at, delivery));
    }

    fn next_alarm_delivery(&self) -> Option<u64> {
        let armed = self.alarm.map(|(_, d)| d);
        let stray = self.stray_alarms.iter().copied().min();
        match (armed, stray) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Delivers every alarm due now. A handler may crash; the platform retries it.
    fn deliver_alarms(&mut self) {
        loop {
            let armed_due = self.alarm.filter(|(_, d)| *d <= self.now);
            let stray_due = self.stray_alarms.iter().position(|d| *d <= self.now);
            if armed_due.is_some() {
                self.alarm = None;
            } else if let Some(i) = stray_due {
                self.stray_alarms.swap_remove(i);
            } else {
                return;
            }
            let retried_already = armed_due.is_none();
            let crash_before = !retried_already && self.strikes(Fault::CrashBeforeCommit);
            if crash_before {
                self.note("alarm handler crashed; retried".into());
                self.stray_alarms.push(self.now + ALARM_RETRY_MS);
                continue;
            }
            self.note("alarm".into());
            // The handler's crash before its commit is the one above.
            let saved = self.faults.rate(Fault::CrashBeforeCommit);
            self.faults.set_rate(Fault::CrashBeforeCommit, 0);
            let ran = self.run_call(Input::Tick, |m, now| m.tick(now));
            self.faults.set_rate(Fault::CrashBeforeCommit, saved);
            if matches!(ran, Ran::CrashedAfter) && !retried_already {
                // Crashed after its commit: the platform retries the handler.
                self.stray_alarms.push(self.now + ALARM_RETRY_MS);
            }
        }
    }

    fn step(&mut self) {
        self.stats.steps += 1;
        let k = &self.knobs;
        let open = self.open;
        let calls = if open { k.call_w } else { 0 };
        let in_flight = !self.effects.is_empty();
        let weights = [
            calls,
            if open { k.start_at_w } else { 0 },
            if open { k.flush_w } else { 0 },
            if open { k.cancel_w } else { 0 },
            // Each effect in flight is about as likely to land as a call to come.
            k.create_w * self.effects.len() as u64,
            k.time_w,
            if in_flight {
                self.faults.rate(Fault::Reset)
            } else {
                0
            },
            if in_flight {
                self.faults.rate(Fault::EventLost)
            } else {
                0
            },
            if in_flight {
                self.faults.rate(Fault::EventDuplicate)
            } else {
                0
            },
        ];
        let total: u64 = weights.iter().sum();
        let mut pick = self.rng.below(total.max(1));
        let mut action = weights.len();
        for (i, w) in weights.iter().enumerate() {
            if pick < *w {
                action = i;
                break;
            }
            pick -= w;
        }
        match action {
            0 => self.call_debounce(),
            1 => self.call_start_at(),
            2 => self.call_flush(),
            3 => self.call_cancel(),
            4 => self.perform_effect(),
            6 => {
                self.faults.count(Fault::Reset);
                self.note(format!("reset: {} effects lost", self.effects.len()));
                self.effects.clear();
            }
            7 => {
                // One create, or one create's report, lost on its way.
                self.faults.count(Fault::EventLost);
                let i = self.rng.below(self.effects.len() as u64) as usize;
                let lost = self.effects.swap_remove(i);
                self.note(format!("lost: {lost:?}"));
            }
            8 => {
                // One create, or one report, performed twice.
                self.faults.count(Fault::EventDuplicate);
                let i = self.rng.below(self.effects.len() as u64) as usize;
                let again = self.effects[i].clone();
                self.note(format!("twice: {again:?}"));
                self.effects.push(again);
            }
            _ => self.advance_time(),
        }
    }

    /// The times at which the model's answer changes: a burst's end, a
    /// `startAt`'s time, and the ms before each.
    fn boundaries(&self) -> Vec<u64> {
        let mut out = Vec::new();
        if let Some(burst) = &self.model.burst {
            out.extend([burst.end().saturating_sub(1), burst.end()]);
        }
        if let Some((_, at)) = &self.model.at {
            out.extend([at.saturating_sub(1), *at]);
        }
        out.retain(|t| *t > self.now);
        out
    }

    fn advance_time(&mut self) {
        let boundaries = self.boundaries();
        let target = if !boundaries.is_empty() && self.rng.percent(self.knobs.boundary_pct) {
            self.stats.boundary_steps += 1;
            *self.rng.pick(&boundaries)
        } else if self.open || !self.effects.is_empty() {
            // Now and then a long quiet stretch, long enough for lost creates
            // to be presumed lost and retried.
            let gap_max = if self.rng.percent(1) {
                DEBOUNCE_CREATE_RETRY_MS_MAX
            } else if self.rng.percent(2) {
                2 * DEBOUNCE_CREATE_LOST_MS
            } else {
                self.knobs.gap_max
            };
            self.now + self.rng.range(0, gap_max)
        } else {
            // Draining with nothing in flight: jump to the next alarm.
            self.next_alarm_delivery().unwrap_or(self.now)
        };
        // Alarms are delivered at their time, never skipped over.
        let target = match self.next_alarm_delivery() {
            Some(d) if d <= target => d.max(self.now),
            _ => target,
        };
        self.now = target;
        self.deliver_alarms();
    }

    /// A call's params: a unique number (so the oracle can follow each
    /// call's params into the run that gets them) and padding, sized now
    /// and then to take the pending batch exactly to its `maxBytes`, or one
    /// byte past it.
    fn params(&mut self) -> String {
        self.next_n += 1;
        let n = self.next_n;
        let with_pad = |pad: usize| format!("{{\"n\":{n},\"p\":\"{}\"}}", "x".repeat(pad));
        let open = self.model.burst.as_ref().filter(|b| self.now < b.end());
        if let Some(batch) = open.and_then(|b| b.batch.as_ref()) {
            if self.rng.percent(self.knobs.boundary_pct) {
                let past = self.rng.below(2) as usize;
                let room = batch.max_bytes + past;
                let needed = batch.bytes_with(&with_pad(0));
                // Not for a batch under the default 1 MiB: params that big
                // are not what this simulation is about.
                if let Some(pad) = room.checked_sub(needed).filter(|pad| *pad <= 1_000) {
                    self.stats.batch_boundary_params += 1;
                    return with_pad(pad);
                }
            }
        }
        with_pad(self.rng.range(0, self.knobs.pad_max) as usize)
    }

    fn call_debounce(&mut self) {
        self.stats.calls += 1;
        let edge = *self.rng.pick(&self.knobs.edges.clone());
        let delay_ms = self.rng.range(1, self.knobs.delay_max);
        let max_wait_ms = if self.rng.percent(self.knobs.no_max_wait_pct) {
            None
        } else {
            Some(self.rng.range(delay_ms, delay_ms * 4))
        };
        let params = if self.rng.percent(20) {
            None
        } else {
            Some(self.params())
        };
        let id_prefix = if self.rng.percent(50) {
            None
        } else {
            Some(format!("p{}_", self.rng.below(3)))
        };
        // Now and then `batch` with another edge: the request refuses it.
        let batch = (self.rng.percent(self.knobs.batch_pct)
            && (edge == Edge::Trailing || self.rng.percent(5)))
        .then(|| BatchFields {
            max_items: self
                .rng
                .percent(80)
                .then(|| self.rng.range(1, self.knobs.max_items_max) as f64),
            max_bytes: self.rng.percent(80).then(|| {
                self.rng
                    .range(self.knobs.max_bytes_min, self.knobs.max_bytes_max)
                    as f64
            }),
        });
        let fields = DebounceFields {
            delay_ms,
            max_wait_ms,
            edge: Some(edge),
            params: params.clone(),
            workflow: "WORKFLOW".into(),
            id_prefix,
            batch,
        };
        let call = match DebounceCall::new(fields) {
            Ok(call) => call,
            Err(error) => {
                // Refused before it reaches the key: `batch` with another
                // edge, or params that fit no batch under the call's bound.
                let params_alone = params.map_or(0, |p| p.len() + 12) as f64;
                let expected = match batch {
                    Some(_) if edge != Edge::Trailing => "batch",
                    Some(BatchFields {
                        max_bytes: Some(max_bytes),
                        ..
                    }) if params_alone > max_bytes => "params",
                    _ => panic!("refused for no reason: {error}"),
                };
                assert_eq!(error.field(), expected, "{error}");
                self.stats.refused_at_edge += 1;
                return;
            }
        };
        let (text, suffix) = self.suffix();
        let had_at = self.model.at.as_ref().is_some_and(|(_, at)| *at > self.now);
        self.note(format!(
            "debounce {edge:?} delay {delay_ms} maxWait {max_wait_ms:?}"
        ));
        let input = Input::Debounce {
            call: call.clone(),
            suffix,
        };
        let ran = self.run_call(input, |m, now| m.debounce(now, &call, &text));
        if let Ran::Heard(Reply::Debounce(reply)) = ran {
            match reply.outcome {
                Outcome::Started => self.stats.started += 1,
                Outcome::Scheduled => self.stats.scheduled += 1,
                Outcome::Suppressed => self.stats.suppressed += 1,
            }
            if had_at && reply.outcome != Outcome::Suppressed {
                self.stats.takeovers += 1;
            }
            for started in &reply.batches_started {
                match started.by {
                    BatchLimit::MaxItems(_) => self.stats.batches_full += 1,
                    BatchLimit::MaxBytes(_) => self.stats.batches_split += 1,
                }
            }
        }
    }

    fn call_start_at(&mut self) {
        self.stats.start_ats += 1;
        let at = match self.rng.below(4) {
            0 => self.now as f64 - self.rng.below(1_000) as f64,
            1 => self.now as f64 + self.rng.below(self.knobs.delay_max * 4) as f64 + 0.5,
            _ => (self.now + self.rng.below(self.knobs.delay_max * 4)) as f64,
        };
        let params = Some(format!("{{\"at\":{}}}", self.rng.below(1_000_000)));
        let (text, suffix) = self.suffix();
        let instance_id = self.rng.percent(30).then(|| id(&format!("given-{text}")));
        let call = StartAtCall::new(self.now, at, params, "WORKFLOW".into(), instance_id).unwrap();
        self.note(format!("startAt {at}"));
        let input = Input::StartAt {
            call: call.clone(),
            suffix,
        };
        self.run_call(input, |m, now| m.start_at(now, &call, &text));
    }

    fn call_flush(&mut self) {
        self.stats.flushes += 1;
        self.note("flush".into());
        self.run_call(Input::Flush, |m, now| m.flush(now));
    }

    fn call_cancel(&mut self) {
        self.stats.cancels += 1;
        self.note("cancel".into());
        self.run_call(Input::Cancel, |m, now| m.cancel(now));
    }

    /// The shell performs one queued effect: a create against the engine,
    /// or the report of one back through `decide`.
    fn perform_effect(&mut self) {
        let i = self.rng.below(self.effects.len() as u64) as usize;
        if i != 0 {
            // Performed while an older one still waits.
            self.faults.count(Fault::EventLate);
        }
        match self.effects.swap_remove(i) {
            Effect::Create(create) => {
                self.stats.creates += 1;
                let outcome = if self.instances.contains_key(&create.id) {
                    self.stats.exists += 1;
                    if self.knobs.exists_is_error {
                        CreateOutcome::AlreadyExists
                    } else {
                        CreateOutcome::Created
                    }
                } else if self.chance(self.knobs.fail_pct) {
                    self.stats.create_failures += 1;
                    CreateOutcome::Failed("binding unavailable".into())
                } else {
                    // The engine starts it: exactly the params the model expects.
                    assert!(
                        !self.model.dropped.contains(&create.id),
                        "{} starts though it was cancelled",
                        create.id
                    );
                    assert_eq!(
                        self.model.params_of.get(&create.id),
                        Some(&create.params),
                        "{} starts without its latest params",
                        create.id
                    );
                    self.instances
                        .insert(create.id.clone(), create.params.clone());
                    if self.chance(self.knobs.ghost_pct) {
                        self.stats.create_failures += 1;
                        CreateOutcome::Failed("timed out".into())
                    } else {
                        CreateOutcome::Created
                    }
                };
                self.note(format!("create {} -> {outcome:?}", create.id));
                self.effects.push(Effect::Report(create.id, outcome));
            }
            Effect::Report(id, outcome) => {
                self.note(format!("report {id} {outcome:?}"));
                let input = Input::Created {
                    id: id.clone(),
                    outcome: outcome.clone(),
                };
                self.run_call(input, |m, now| m.created(now, &id, &outcome));
            }
        }
    }

    fn run_seed(&mut self) {
        while self.stats.steps < FAULT_STEPS_PER_SEED {
            self.step();
        }
        self.open = false;
        self.faults.stop();
        let drain_started = self.stats.steps;
        // Calls and faults stop; everything in flight lands, alarms fire,
        // creates succeed (the worst backoff is bounded, so this ends).
        while !self.effects.is_empty() || self.alarm.is_some() || !self.stray_alarms.is_empty() {
            assert!(
                self.stats.steps - drain_started < DRAIN_STEPS_MAX,
                "the drain did not finish: {:?} pending, {} unconfirmed",
                self.stored.phase,
                self.stored.creating.len()
            );
            self.step();
        }
        assert!(
            self.stored.phase.pending().is_none(),
            "a pending start was left"
        );
        assert!(
            self.stored.creating.is_empty(),
            "a create was left unconfirmed"
        );
        assert!(self.model.unconfirmed.is_empty());
        for promised in &self.model.promised {
            if self.model.dropped.contains(promised) {
                assert!(
                    !self.instances.contains_key(promised),
                    "{promised} was cancelled or replaced, yet started"
                );
            } else {
                assert!(
                    self.model.confirmed.contains(promised),
                    "{promised} was promised and never started"
                );
                assert_eq!(
                    self.instances.get(promised),
                    self.model.params_of.get(promised),
                    "{promised} started without its latest params"
                );
            }
        }
        self.check_batches();
        self.stats.seeds += 1;
    }

    /// Every call's params that went into a batch are in exactly one run,
    /// the one it was put in, in the order the calls came; no run is past
    /// its batch's bounds. Read from the runs the engine holds.
    fn check_batches(&mut self) {
        let mut run_of: BTreeMap<u64, Id> = BTreeMap::new();
        for (id, params) in &self.instances {
            let Some(&(max_items, max_bytes)) = self.model.bounds_of.get(id) else {
                continue;
            };
            let text = params.as_deref().expect("a batch run has params");
            let value: Value = serde_json::from_str(text).unwrap();
            let items = value["batch"].as_array().expect("a batch run's params");
            let numbers: Vec<u64> = items.iter().map(|p| p["n"].as_u64().unwrap()).collect();
            assert!(
                numbers.windows(2).all(|w| w[0] < w[1]),
                "{id}'s batch is out of order: {numbers:?}"
            );
            assert!(
                numbers.len() <= max_items,
                "{id} started with {} params, maxItems {max_items}",
                numbers.len()
            );
            assert!(
                text.len() <= max_bytes,
                "{id}'s params are {} bytes, maxBytes {max_bytes}",
                text.len()
            );
            self.stats.batch_runs += 1;
            self.stats.batched_params += numbers.len() as u64;
            for n in numbers {
                if let Some(other) = run_of.insert(n, id.clone()) {
                    panic!("call {n}'s params are in two runs, {other} and {id}");
                }
            }
        }
        for (n, id) in &self.model.batched {
            assert_eq!(run_of.get(n), Some(id), "call {n}'s params were lost");
        }
        for n in &self.model.discarded {
            assert!(
                !run_of.contains_key(n),
                "call {n}'s params were cancelled, yet started"
            );
        }
        assert_eq!(
            run_of.len(),
            self.model.batched.len(),
            "runs hold params of calls never batched"
        );
    }

    fn dump(&self) -> String {
        format!(
            "knobs: {:?}\nstate: {:?}\nlast steps:\n{}",
            self.knobs,
            self.stored,
            self.log.join("\n")
        )
    }
}

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sim.run_seed())) {
        report_failure("debounce_sim", seed, sim.stats.steps);
        eprintln!("{}", sim.dump());
        resume_unwind(panic);
    }
    sim.stats.faults = sim.faults.injected;
    sim.stats
}

#[test]
fn simulation() {
    if let Some(total) = simulate("debounce simulation", 0, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("started", total.started),
            ("scheduled", total.scheduled),
            ("suppressed", total.suppressed),
            ("refused", total.refused),
            ("create_failures", total.create_failures),
            ("exists", total.exists),
            ("retries", total.retries),
            ("time steps onto a boundary", total.boundary_steps),
            ("flushes", total.flushes),
            ("cancels", total.cancels),
            ("start_ats", total.start_ats),
            ("takeovers", total.takeovers),
            ("batches started by maxItems", total.batches_full),
            ("batches started by maxBytes", total.batches_split),
            ("params sized onto maxBytes", total.batch_boundary_params),
            ("calls refused by the request", total.refused_at_edge),
            ("batch runs", total.batch_runs),
            ("batched params", total.batched_params),
        ]);
        total.faults.assert_injected(&[
            Fault::CrashBeforeCommit,
            Fault::ResetAfterCommit,
            Fault::Reset,
            Fault::AlarmLost,
            Fault::AlarmLate,
            Fault::AlarmSpurious,
            Fault::AlarmDuplicate,
            Fault::EventLost,
            Fault::EventLate,
            Fault::EventDuplicate,
        ]);
    }
}

/// The oracle's rule for a decision's log lines (contract §9), from the
/// reply the model predicts: a debounce call's own line (routine when it
/// only schedules; a start at once or a suppressed call is contended),
/// with why (its fire time, the batch bound that started it, or a leading
/// start), then a line per batch it started under another id; a
/// `startAt`'s, routine; a cancel's that dropped a pending start.
fn expected_lines(reply: &Reply) -> Vec<Said> {
    let line = |kind, id: &Id, decision, reason: String| Said {
        kind,
        instance: Some(id.clone()),
        decision,
        reason,
        waited_ms: None,
    };
    let why = |b: &BatchStarted| match b.by {
        BatchLimit::MaxItems(max) => format!("batch of {} params reached maxItems {max}", b.items),
        BatchLimit::MaxBytes(max) => format!(
            "batch of {} params ({} bytes) started: the next call's would pass maxBytes {max}",
            b.items, b.bytes
        ),
    };
    match reply {
        Reply::Debounce(r) => {
            let own = r.batches_started.iter().find(|b| b.id == r.instance_id);
            let reason = match (r.fire_at_ms, own) {
                (Some(at), _) => format!("fires at {at}"),
                (None, Some(b)) => why(b),
                (None, None) => "the burst's leading start".to_string(),
            };
            let (kind, decision) = match r.outcome {
                Outcome::Scheduled => (LogKind::Routine, "scheduled"),
                Outcome::Started => (LogKind::Contended, "started"),
                Outcome::Suppressed => (LogKind::Contended, "suppressed"),
            };
            let others = (r.batches_started.iter())
                .filter(|b| b.id != r.instance_id)
                .map(|b| line(LogKind::Contended, &b.id, "started", why(b)));
            std::iter::once(line(kind, &r.instance_id, decision, reason))
                .chain(others)
                .collect()
        }
        Reply::StartAt { instance_id, at } => {
            // As JSON writes it, an integer without its `.0`.
            let at = match serde_json::Number::from_f64(*at) {
                _ if at.fract() == 0.0 && at.abs() < 9.2e18 => format!("{}", *at as i64),
                Some(number) => number.to_string(),
                None => format!("{at}"),
            };
            vec![line(
                LogKind::Routine,
                instance_id,
                "scheduled",
                format!("startAt {at}"),
            )]
        }
        Reply::Cancel {
            cancelled: Some(id),
        } => vec![line(
            LogKind::Contended,
            id,
            "cancelled",
            "its pending start was dropped".to_string(),
        )],
        Reply::Cancel { cancelled: None } | Reply::Flush { .. } | Reply::Nothing => Vec::new(),
    }
}
