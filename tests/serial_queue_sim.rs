//! A seeded, deterministic simulation of the serial queue (contract §2).
//!
//! The core's real batches run on SQLite (tests/common/d1.rs), each as one
//! transaction, as D1 runs them. Around them, three models:
//! - the callers: Workflow instances running `serialize` (enqueue, claim,
//!   park until the turn event or the poll, heartbeat while the body runs,
//!   release; a heartbeat that says `holding: false` ends the body), each
//!   RPC retried after a failure as a Workflow step is;
//! - the D1 shell: every RPC is several scheduler steps (its batch, then
//!   each wake: a turn event and a status check, an abandon batch for a
//!   waiter found dead; a release replies once the first waiter is sent
//!   its event, and checks its status and hands on past it after the
//!   reply), interleaved at random with every other RPC's, and
//!   each RPC reads its clock when it starts (skewed per Worker), so batches
//!   commit out of time order and wakes act on reads that are stale;
//! - the Workflow engine: instances die at any point, turn events are lost,
//!   duplicated, delayed and buffered until the next wait.
//!
//! Faults: RPCs crash between any two of their steps (after the batch,
//! before or between its wakes, after the reply), then the caller retries
//! (unless it had its reply).
//!
//! Checked after every step that ran a batch (nothing else changes the table): the core's `assert_invariants` over the whole
//! table (one holder per group, no row both superseded and holding, every
//! waiter of a group at one revision: the newest arrival won), and the
//! table row for row against a reference model that applies each committed
//! command by the contract's rules in plain Rust; every reply is checked
//! against the model's. At the end of each seed arrivals and faults stop
//! and the system drains: every live instance must finish (run, skip, time
//! out or lose its hold), and only a dead instance may still hold a group.
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 150,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

mod common;

use baton::ident::{Ident, InstanceId};
use baton::limits::{SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX};
use baton::serial_queue::{
    self as sq, ClaimReply, EnqueueReply, Outcome, Plan, Released, SerialEnqueue, SerialTimeouts,
    Wake,
};
use common::{assert_reached, d1, simulate, Rng, SimStats};
use rusqlite::Connection;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Total scheduler steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 150_000;
/// Steps with faults and arrivals per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 3_000;
/// A drain longer than this is a liveness failure.
const DRAIN_STEPS_MAX: u64 = 50_000;
const GROUPS: usize = 2;
const INSTANCES_PER_SEED_MAX: usize = 250;
/// Short bounds, so expiries and timeouts happen within a seed.
const TIMEOUTS: SerialTimeouts = SerialTimeouts {
    waiter_timeout_ms: 6_000,
    heartbeat_expiry_ms: 2_000,
};
const POLL_MS: u64 = 1_000;
const HEARTBEAT_MS: u64 = 500;
/// How far one Worker's clock may lag another's.
const CLOCK_SKEW_MS_MAX: u64 = 40;

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

fn ident(s: &str) -> Ident {
    Ident::parse("group", s).unwrap()
}

// --- the reference model: the contract's rules over a plain table -----------

#[derive(Debug, Clone, PartialEq, Eq)]
struct MRow {
    group: String,
    id: String,
    revision: String,
    state: &'static str,
    enqueued_at: u64,
    heartbeat_at: Option<u64>,
    superseded_by: Option<(String, String)>,
    finished_at: Option<u64>,
}

#[derive(Default)]
struct Model {
    rows: Vec<MRow>,
}

impl Model {
    fn find(&self, group: &str, id: &str) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.group == group && r.id == id)
    }

    fn holder(&self, group: &str) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.group == group && r.state == "holding")
    }

    fn finish(&mut self, i: usize, state: &'static str, now: u64) {
        self.rows[i].state = state;
        self.rows[i].finished_at = Some(now);
    }

    /// Returns the ids superseded.
    fn enqueue(&mut self, r: &SerialEnqueue, now: u64) -> Vec<String> {
        let (g, me_id, rev) = (
            r.group.as_str(),
            r.instance_id.as_str(),
            r.revision.as_str(),
        );
        if r.current.as_ref().is_some_and(|c| c.as_str() != rev) {
            return vec![];
        }
        let waiting = self
            .rows
            .iter()
            .filter(|x| x.group == g && x.state == "waiting")
            .count();
        if self.find(g, me_id).is_none() && waiting < SERIAL_WAITERS_PER_GROUP_MAX as usize {
            self.rows.push(MRow {
                group: g.into(),
                id: me_id.into(),
                revision: rev.into(),
                state: "waiting",
                enqueued_at: now,
                heartbeat_at: None,
                superseded_by: None,
                finished_at: None,
            });
        }
        let Some(me) = self.find(g, me_id) else {
            return vec![];
        };
        if self.rows[me].state != "waiting" || self.rows[me].revision != rev {
            return vec![];
        }
        let mut superseded = vec![];
        for i in 0..self.rows.len() {
            let x = &self.rows[i];
            let goes = x.group == g
                && x.state == "waiting"
                && match &r.current {
                    None => i < me,
                    Some(_) => x.revision != rev && i != me,
                };
            if goes {
                superseded.push(x.id.clone());
                self.finish(i, "superseded", now);
                self.rows[i].superseded_by = Some((me_id.into(), rev.into()));
            }
        }
        // Keep the newest finished rows of the group.
        let finished: Vec<usize> = (0..self.rows.len())
            .filter(|&i| self.rows[i].group == g && self.rows[i].finished_at.is_some())
            .collect();
        let keep = SERIAL_RECENT_PER_GROUP_MAX as usize;
        if finished.len() > keep {
            let drop = &finished[..finished.len() - keep];
            let mut i = 0;
            self.rows.retain(|_| {
                i += 1;
                !drop.contains(&(i - 1))
            });
        }
        superseded
    }

    fn claim(&mut self, g: &str, me_id: &str, now: u64) {
        let Some(me) = self.find(g, me_id) else {
            return;
        };
        if self.rows[me].state != "waiting" {
            return;
        }
        let live = TIMEOUTS.oldest_live_heartbeat_ms(now);
        let holder = self.holder(g);
        let holder_live = holder.is_some_and(|h| self.rows[h].heartbeat_at.unwrap() >= live);
        if holder_live {
            if self.rows[me].enqueued_at < TIMEOUTS.waiter_cutoff_ms(now) {
                self.finish(me, "timed_out", now);
            }
            return;
        }
        if let Some(h) = holder {
            self.finish(h, "abandoned", now);
        }
        self.rows[me].state = "holding";
        self.rows[me].heartbeat_at = Some(now);
    }

    fn heartbeat(&mut self, g: &str, me_id: &str, now: u64) -> bool {
        match self.find(g, me_id) {
            Some(me) if self.rows[me].state == "holding" => {
                self.rows[me].heartbeat_at = Some(now);
                true
            }
            _ => false,
        }
    }

    /// Whether it held the group.
    fn release(&mut self, g: &str, me_id: &str, now: u64) -> Option<bool> {
        let me = self.find(g, me_id)?;
        let held = match self.rows[me].state {
            "holding" => true,
            "waiting" => false,
            _ => return None,
        };
        self.finish(me, "released", now);
        Some(held)
    }

    fn abandon_waiter(&mut self, g: &str, me_id: &str, now: u64) {
        if let Some(me) = self.find(g, me_id) {
            if self.rows[me].state == "waiting" {
                self.finish(me, "abandoned", now);
            }
        }
    }

    fn waiting(&self, g: &str) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.group == g && r.state == "waiting")
            .map(|r| r.id.clone())
            .collect()
    }

    /// The table as the database has it.
    fn assert_matches(&self, conn: &Connection) {
        let rows = d1::all_rows(conn);
        sq::assert_invariants(&rows);
        let db: Vec<MRow> = rows
            .into_iter()
            .map(|r| MRow {
                group: r.group_name,
                id: r.instance_id,
                revision: r.revision,
                state: match r.state.as_str() {
                    "waiting" => "waiting",
                    "holding" => "holding",
                    "superseded" => "superseded",
                    "timed_out" => "timed_out",
                    "released" => "released",
                    "abandoned" => "abandoned",
                    other => panic!("unknown state {other}"),
                },
                enqueued_at: r.enqueued_at,
                heartbeat_at: r.heartbeat_at,
                superseded_by: r.superseded_by.zip(r.superseded_by_revision),
                finished_at: r.finished_at,
            })
            .collect();
        // Group by group (the model keeps insertion order, as seq does).
        let mut model = self.rows.clone();
        model.sort_by(|a, b| a.group.cmp(&b.group));
        let mut db = db;
        db.sort_by(|a, b| a.group.cmp(&b.group));
        assert_eq!(db, model, "the table differs from the model");
    }
}

// --- callers, calls and the engine ------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Enqueue,
    Claim,
    Parked { poll_at: u64 },
    Body { beat_at: u64, done_at: u64 },
    Release,
    Done(Ended),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Ran,
    Skipped,
    TimedOut,
    LostHold,
}

struct Actor {
    id: String,
    request: SerialEnqueue,
    phase: Phase,
    alive: bool,
    busy: bool,
    /// Turn events delivered and not yet consumed by a wait (the engine
    /// buffers them).
    inbox: u32,
    work_ms: u64,
}

#[derive(Debug)]
enum Kind {
    Enqueue,
    Claim,
    Heartbeat,
    Release,
}

#[derive(Debug)]
enum Stage {
    Batch,
    /// Telling superseded waiters, one per step.
    WakeEach(Vec<InstanceId>),
    /// Handing on a freed group: the first candidate is sent the turn
    /// event and the reply goes back; the rest runs after the reply.
    HandOn(Vec<InstanceId>),
    /// After the reply: the first candidate, sent the event, has its status
    /// checked; the rest are the candidates after it.
    Check(Vec<InstanceId>),
    /// After the reply: the first candidate was found dead: its abandon
    /// batch, then the next is sent the event.
    Abandon(Vec<InstanceId>),
}

struct Call {
    actor: usize,
    kind: Kind,
    now: u64,
    stage: Stage,
    reply: Option<Reply>,
    /// The caller has its reply; the call's steps left run after it
    /// (`waitUntil`).
    replied: bool,
}

#[derive(Debug, Clone)]
enum Reply {
    Enqueue(EnqueueReply),
    Claim(ClaimReply),
    Heartbeat(bool),
    Release,
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    steps: u64,
    batches: u64,
    holds: u64,
    skips: u64,
    timeouts: u64,
    lost_holds: u64,
    wakes: u64,
    dead_waiters: u64,
    crashes: u64,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, s: &Stats) {
        self.steps += s.steps;
        self.batches += s.batches;
        self.holds += s.holds;
        self.skips += s.skips;
        self.timeouts += s.timeouts;
        self.lost_holds += s.lost_holds;
        self.wakes += s.wakes;
        self.dead_waiters += s.dead_waiters;
        self.crashes += s.crashes;
    }
}

struct Sim {
    rng: Rng,
    conn: Connection,
    model: Model,
    clock: u64,
    actors: Vec<Actor>,
    calls: Vec<Call>,
    events: Vec<usize>,
    heads: [u64; GROUPS],
    faults: bool,
    trace: bool,
    stats: Stats,
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        Sim {
            rng: Rng(seed),
            conn: d1::database(),
            model: Model::default(),
            clock: 1_000_000,
            actors: vec![],
            calls: vec![],
            events: vec![],
            heads: [0; GROUPS],
            faults: true,
            trace,
            stats: Stats::default(),
        }
    }

    fn log(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{} t={}] {}", self.stats.steps, self.clock, what());
        }
    }

    fn group_name(g: usize) -> String {
        format!("g{g}")
    }

    fn run(&mut self, batch: &sq::Batch) -> Vec<Outcome> {
        self.stats.batches += 1;
        d1::batch(&mut self.conn, batch)
    }

    /// A push: a new instance enqueues at the branch head, or (sometimes)
    /// at a revision that is already stale.
    fn arrive(&mut self) {
        let g = self.rng.below(GROUPS as u64) as usize;
        let n = self.actors.len();
        let newer = self.rng.percent(70);
        if newer {
            self.heads[g] += 1;
        }
        let head = self.heads[g];
        let revision = if self.rng.percent(85) {
            head
        } else {
            self.rng.below(head + 1)
        };
        let current = match self.rng.below(3) {
            0 => None,
            _ => Some(format!("r{head}")),
        };
        let name = format!("i{n}");
        self.log(|| format!("{name} arrives in g{g} at r{revision}, current {current:?}"));
        self.actors.push(Actor {
            id: name.clone(),
            request: SerialEnqueue {
                group: ident(&Self::group_name(g)),
                instance_id: id(&name),
                revision: ident(&format!("r{revision}")),
                current: current.map(|c| ident(&c)),
            },
            phase: Phase::Enqueue,
            alive: true,
            busy: false,
            inbox: 0,
            work_ms: self.rng.range(0, 8_000),
        });
    }

    /// The actor's next RPC, if it is due.
    fn act(&mut self, a: usize) {
        let now = self.clock;
        let actor = &mut self.actors[a];
        if !actor.alive || actor.busy {
            return;
        }
        let kind = match actor.phase {
            Phase::Enqueue => Kind::Enqueue,
            Phase::Claim => Kind::Claim,
            Phase::Parked { poll_at } => {
                if actor.inbox > 0 {
                    actor.inbox -= 1;
                } else if now < poll_at {
                    return;
                }
                actor.phase = Phase::Claim;
                Kind::Claim
            }
            Phase::Body { beat_at, done_at } => {
                if now >= done_at {
                    actor.phase = Phase::Release;
                    Kind::Release
                } else if now >= beat_at {
                    Kind::Heartbeat
                } else {
                    return;
                }
            }
            Phase::Release => Kind::Release,
            Phase::Done(_) => return,
        };
        actor.busy = true;
        let skew = self.rng.below(CLOCK_SKEW_MS_MAX + 1);
        self.calls.push(Call {
            actor: a,
            kind,
            now: now.saturating_sub(skew),
            stage: Stage::Batch,
            reply: None,
            replied: false,
        });
    }

    /// One step of an RPC in flight.
    fn progress(&mut self, c: usize) {
        let call = &mut self.calls[c];
        let actor = &self.actors[call.actor];
        let (group, me) = (
            actor.request.group.clone(),
            actor.request.instance_id.clone(),
        );
        let g = group.as_str().to_string();
        let now = call.now;
        match std::mem::replace(&mut call.stage, Stage::Batch) {
            Stage::Batch => match call.kind {
                Kind::Enqueue => {
                    let request = actor.request.clone();
                    match sq::enqueue(&request, now) {
                        Plan::Done(reply) => {
                            assert!(request.current.is_some());
                            self.finish_call(c, Reply::Enqueue(reply));
                        }
                        Plan::Run(batch) => {
                            let outcomes = self.run(&batch);
                            let expected = self.model.enqueue(&request, now);
                            let decided = sq::enqueue_outcome(&request, &outcomes)
                                .unwrap_or_else(|e| panic!("enqueue refused: {e}"));
                            self.check_enqueue(&request, &decided.reply, expected);
                            self.log(|| format!("{me} enqueue -> {:?}", decided.reply));
                            self.calls[c].reply = Some(Reply::Enqueue(decided.reply));
                            match decided.wake {
                                Wake::Nobody => self.finish_reply(c),
                                Wake::Each(ids) => self.calls[c].stage = Stage::WakeEach(ids),
                                Wake::FirstAlive(_) => panic!("an enqueue frees no group"),
                            }
                        }
                    }
                }
                Kind::Claim => {
                    let outcomes = self.run(&sq::claim(&group, &me, now, TIMEOUTS));
                    self.model.claim(&g, me.as_str(), now);
                    let claimed = sq::claim_outcome(&me, &outcomes)
                        .unwrap_or_else(|e| panic!("claim refused: {e}"));
                    let row = &self.model.rows[self.model.find(&g, me.as_str()).unwrap()];
                    let expected = match row.state {
                        "holding" => ClaimReply::Holding,
                        "timed_out" => ClaimReply::TimedOut,
                        "superseded" => {
                            let (by, rev) = row.superseded_by.clone().unwrap();
                            ClaimReply::Skipped {
                                by: id(&by),
                                by_revision: ident(&rev),
                            }
                        }
                        "waiting" => ClaimReply::Waiting {
                            holder: self.model.holder(&g).map(|h| id(&self.model.rows[h].id)),
                        },
                        other => panic!("{me} claims in state {other}"),
                    };
                    assert_eq!(claimed.reply, expected, "{me}'s claim");
                    self.log(|| format!("{me} claim -> {:?}", claimed.reply));
                    self.finish_call(c, Reply::Claim(claimed.reply));
                }
                Kind::Heartbeat => {
                    let outcomes = self.run(&sq::heartbeat(&group, &me, now));
                    let holding = sq::heartbeat_outcome(&outcomes);
                    assert_eq!(holding, self.model.heartbeat(&g, me.as_str(), now));
                    self.finish_call(c, Reply::Heartbeat(holding));
                }
                Kind::Release => {
                    let outcomes = self.run(&sq::release(&group, &me, now));
                    let decided = sq::release_outcome(&outcomes);
                    let expected = match self.model.release(&g, me.as_str(), now) {
                        None => Released::HeldNothing,
                        Some(false) => Released::LeftQueue,
                        Some(true) => Released::FreedGroup,
                    };
                    assert_eq!(decided.reply, expected, "{me}'s release");
                    self.log(|| format!("{me} release -> {:?}", decided.reply));
                    self.calls[c].reply = Some(Reply::Release);
                    match decided.wake {
                        Wake::FirstAlive(ids) => {
                            let waiting: Vec<InstanceId> =
                                self.model.waiting(&g).iter().map(|w| id(w)).collect();
                            assert_eq!(ids, waiting, "the freed group's waiters, in order");
                            self.calls[c].stage = Stage::HandOn(ids)
                        }
                        Wake::Nobody => self.finish_reply(c),
                        Wake::Each(_) => panic!("a release supersedes no one"),
                    }
                }
            },
            Stage::WakeEach(mut ids) => {
                if let Some(next) = ids.pop() {
                    // Status-checked: only a live instance is sent the event.
                    self.send(next.as_str());
                }
                if ids.is_empty() {
                    self.finish_reply(c);
                } else {
                    self.calls[c].stage = Stage::WakeEach(ids);
                }
            }
            Stage::HandOn(ids) => {
                let Some(first) = ids.first() else {
                    return self.finish_reply(c);
                };
                // The event first (a dead instance ignores it), then the
                // reply; the status check is a later step.
                self.send(first.as_str());
                self.deliver(c);
                self.calls[c].stage = Stage::Check(ids);
            }
            Stage::Check(ids) => {
                if self.alive(ids[0].as_str()) {
                    self.calls.swap_remove(c);
                } else {
                    self.calls[c].stage = Stage::Abandon(ids);
                }
            }
            Stage::Abandon(mut ids) => {
                // The candidate was found dead a step ago: abandon it (a
                // stale read: it may have claimed or left since).
                let dead = ids.remove(0);
                self.run(&sq::waiter_dead(&group, &dead, now));
                self.model.abandon_waiter(&g, dead.as_str(), now);
                self.stats.dead_waiters += 1;
                match ids.first() {
                    None => {
                        self.calls.swap_remove(c);
                    }
                    Some(next) => {
                        self.send(next.as_str());
                        self.calls[c].stage = Stage::Check(ids);
                    }
                }
            }
        }
    }

    /// The contract's enqueue rules, at the moment the batch committed.
    fn check_enqueue(&self, r: &SerialEnqueue, reply: &EnqueueReply, mut expected: Vec<String>) {
        let g = r.group.as_str();
        if let EnqueueReply::Waiting { superseded } = reply {
            let mut got: Vec<String> = superseded.iter().map(|s| s.to_string()).collect();
            got.sort();
            expected.sort();
            assert_eq!(got, expected, "superseded by {}", r.instance_id);
            let waiting = self.model.waiting(g);
            match &r.current {
                // Newest wins: no waiter that arrived before it is left
                // (a retried enqueue may find later arrivals at its revision).
                None => assert_eq!(waiting[0], r.instance_id.as_str()),
                // Current wins: every waiter is at the current revision.
                Some(current) => assert!(waiting.iter().all(|w| {
                    let i = self.model.find(g, w).unwrap();
                    self.model.rows[i].revision == current.as_str()
                })),
            }
        }
    }

    fn alive(&self, name: &str) -> bool {
        self.actors.iter().any(|a| a.id == name && a.alive)
    }

    /// A turn event (the shell sends it, then checks the status): a dead
    /// instance ignores it. The engine may lose it, or deliver it twice.
    fn send(&mut self, name: &str) {
        let Some(a) = self.actors.iter().position(|a| a.id == name) else {
            return;
        };
        if !self.actors[a].alive {
            return;
        }
        self.stats.wakes += 1;
        if self.faults && self.rng.percent(10) {
            return;
        }
        self.events.push(a);
        if self.faults && self.rng.percent(5) {
            self.events.push(a);
        }
    }

    fn finish_call(&mut self, c: usize, reply: Reply) {
        self.calls[c].reply = Some(reply);
        self.finish_reply(c);
    }

    /// The RPC returns its reply to the caller, and has no step left.
    fn finish_reply(&mut self, c: usize) {
        self.deliver(c);
        self.calls.swap_remove(c);
    }

    /// The RPC returns its reply to the caller (a dead caller ignores it);
    /// the call may have steps left after it.
    fn deliver(&mut self, c: usize) {
        let now = self.clock;
        let call = &mut self.calls[c];
        call.replied = true;
        let reply = call.reply.take().expect("a call replies once");
        let actor = &mut self.actors[call.actor];
        actor.busy = false;
        if !actor.alive {
            return;
        }
        actor.phase = match (actor.phase, reply) {
            (Phase::Enqueue, Reply::Enqueue(EnqueueReply::Waiting { .. })) => Phase::Claim,
            (Phase::Enqueue, Reply::Enqueue(EnqueueReply::Skipped { .. })) => {
                self.stats.skips += 1;
                Phase::Done(Ended::Skipped)
            }
            (Phase::Claim, Reply::Claim(ClaimReply::Holding)) => {
                self.stats.holds += 1;
                Phase::Body {
                    beat_at: now + HEARTBEAT_MS,
                    done_at: now + actor.work_ms,
                }
            }
            (Phase::Claim, Reply::Claim(ClaimReply::Waiting { .. })) => Phase::Parked {
                poll_at: now + POLL_MS,
            },
            (Phase::Claim, Reply::Claim(ClaimReply::Skipped { .. })) => {
                self.stats.skips += 1;
                Phase::Done(Ended::Skipped)
            }
            (Phase::Claim, Reply::Claim(ClaimReply::TimedOut)) => {
                self.stats.timeouts += 1;
                Phase::Done(Ended::TimedOut)
            }
            (Phase::Body { done_at, .. }, Reply::Heartbeat(true)) => Phase::Body {
                beat_at: now + HEARTBEAT_MS,
                done_at,
            },
            // The hold was lost: the body stops, and releases on its way out.
            (Phase::Body { .. }, Reply::Heartbeat(false)) => {
                self.stats.lost_holds += 1;
                actor.work_ms = u64::MAX;
                Phase::Release
            }
            (Phase::Release, Reply::Release) if actor.work_ms == u64::MAX => {
                Phase::Done(Ended::LostHold)
            }
            (Phase::Release, Reply::Release) => Phase::Done(Ended::Ran),
            (phase, reply) => panic!("{} in {phase:?} got {reply:?}", actor.id),
        };
    }

    /// The RPC fails between two of its steps (a Worker crash, a lost
    /// connection): the caller's step retries it from the start, unless
    /// the call had replied (its `waitUntil` work is lost).
    fn crash(&mut self, c: usize) {
        let call = self.calls.swap_remove(c);
        self.stats.crashes += 1;
        self.log(|| format!("{:?} of {} crashes", call.kind, self.actors[call.actor].id));
        // After its reply, a crash only loses what was left to do.
        if !call.replied {
            self.actors[call.actor].busy = false;
        }
    }

    fn step(&mut self) {
        self.stats.steps += 1;
        // Only a batch changes the table: the table is checked after each
        // step that ran one.
        let batches_before = self.stats.batches;
        let roll = self.rng.below(100);
        match roll {
            0..=19 => self.clock += self.rng.range(1, 150),
            20..=26 if self.faults && self.actors.len() < INSTANCES_PER_SEED_MAX => self.arrive(),
            27..=56 if !self.calls.is_empty() => {
                let c = self.rng.below(self.calls.len() as u64) as usize;
                self.progress(c);
            }
            57..=84 => {
                // Among the instances that can act (alive, between RPCs, not done).
                let ready: Vec<usize> = (0..self.actors.len())
                    .filter(|&a| {
                        let actor = &self.actors[a];
                        actor.alive && !actor.busy && !matches!(actor.phase, Phase::Done(_))
                    })
                    .collect();
                if !ready.is_empty() {
                    let a = ready[self.rng.below(ready.len() as u64) as usize];
                    self.act(a);
                }
            }
            85..=92 if !self.events.is_empty() => {
                let e = self.rng.below(self.events.len() as u64) as usize;
                let a = self.events.swap_remove(e);
                if self.actors[a].alive {
                    self.actors[a].inbox += 1;
                }
            }
            93..=96 if self.faults && !self.calls.is_empty() => {
                let c = self.rng.below(self.calls.len() as u64) as usize;
                self.crash(c);
            }
            97 if self.faults && !self.actors.is_empty() => {
                let a = self.rng.below(self.actors.len() as u64) as usize;
                if self.actors[a].alive && self.rng.percent(30) {
                    self.log(|| format!("{} dies", self.actors[a].id));
                    self.actors[a].alive = false;
                }
            }
            _ => {}
        }
        if self.stats.batches > batches_before {
            self.model.assert_matches(&self.conn);
        }
    }

    fn settled(&self) -> bool {
        self.calls.is_empty()
            && self
                .actors
                .iter()
                .all(|a| !a.alive || matches!(a.phase, Phase::Done(_)))
    }

    /// After the drain: every live instance finished, and only a dead one
    /// may still hold a group or wait in it.
    fn check_drained(&self) {
        for row in d1::all_rows(&self.conn) {
            if row.state == "holding" || row.state == "waiting" {
                assert!(
                    !self.alive(&row.instance_id),
                    "{} is {} after the drain",
                    row.instance_id,
                    row.state
                );
            }
        }
    }
}

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    let result = catch_unwind(AssertUnwindSafe(|| {
        while sim.stats.steps < FAULT_STEPS_PER_SEED {
            sim.step();
        }
        sim.faults = false;
        let drain_start = sim.stats.steps;
        while !sim.settled() {
            assert!(
                sim.stats.steps - drain_start < DRAIN_STEPS_MAX,
                "the drain did not settle"
            );
            sim.step();
        }
        sim.check_drained();
    }));
    if let Err(panic) = result {
        eprintln!(
            "serial queue simulation failed: seed {seed} at step {}. Replay with\n  \
             BATON_SIM_SEED={seed} BATON_SIM_TRACE=1 cargo test --test serial_queue_sim \
             simulation -- --nocapture",
            sim.stats.steps
        );
        resume_unwind(panic);
    }
    sim.stats
}

#[test]
fn simulation() {
    if let Some(t) = simulate("serial queue simulation", 0, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("holds", t.holds),
            ("skips", t.skips),
            ("timeouts", t.timeouts),
            ("wakes", t.wakes),
            ("crashes", t.crashes),
            ("lost holds", t.lost_holds),
            ("dead waiters", t.dead_waiters),
        ]);
    }
}
