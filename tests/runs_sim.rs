//! A seeded, deterministic simulation of the Runs core (contract §6).
//!
//! The real decision functions and the real [`Waits`] registry run over
//! [`MemoryRunStore`]s (one object holding a few run keys) against models
//! of the Workflow engine (instances not yet created, running, ended), of
//! the Durable Object shell (the two-phase claim with its status check
//! outside the gate, long-polls parked with a timer at their deadline, the
//! retention alarm armed with each commit) and of the callers:
//! - starters (`startOnce`): claim, then create the instance soon, after
//!   the grace, or never (the starter crashed);
//! - claimant instances, running the Workflow helpers' protocol: read the
//!   log's cursor once, then report each event in a retried step (read
//!   after the cursor; append only if the event is not there yet), then
//!   record the outcome in a retried step;
//! - awaiters and event readers, long-polling with random timeouts and limits.
//!
//! Every RPC is at least one scheduler step and the scheduler picks at
//! random among everything ready. Faults: instances killed at any point,
//! object resets (the claim's second phase and every open wait are lost;
//! callers retry), replies lost after the commit (callers retry: retried
//! claims, appends and completes), `Unknown` status answers, late,
//! duplicate and spurious alarms.
//!
//! Checked after every step: the core's `assert_invariants`; one claimant at
//! a time (a key leaves its claimant only for a claimant that was dead when
//! checked, or by retention); an outcome recorded at most once and never
//! changed; no gap in the event sequence (it grows by one per append, and
//! every reader sees consecutive seqs from `max(after + 1, firstSeq)`); each
//! reported event in the log at most once; every waiter answered by its
//! deadline, awaiters with the outcome as soon as it is recorded. At the
//! end of each seed the faults stop, time runs past retention, and every
//! finished record must be gone and every key claimable again.
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 200,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

mod common;

use baton::ident::{Ident, InstanceId};
use baton::limits::{RUN_EVENTS_KEPT, RUN_OPEN_WAITS_MAX, RUN_WAIT_MS_MAX};
use baton::runs::{
    alarm_at, append, assert_invariants, await_run, claim, claim_after_check, complete, events,
    expire, read_events, run_view, After, AppendRequest, Claim, ClaimReply, ClaimRequest,
    ClaimStep, ClaimantStatus, CompleteRequest, EventLimit, EventType, EventsReply, EventsRequest,
    JsonText, MemoryRunStore, Outcome, Poll, Run, RunStore, RunView, RunsConfig, Wait, WaitFor,
    WaitId, WaitMs, Waits, Wake,
};
use common::{assert_reached, simulate, Rng, SimStats};
use std::collections::HashMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Total scheduler steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 200_000;
/// Steps with faults and arrivals per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 2_000;
/// A drain longer than this is a liveness failure.
const DRAIN_STEPS_MAX: u64 = 20_000;
/// Weight of an ordinary ready action (faults are weighted against this).
const W: u64 = 100;

// ---------------------------------------------------------------------------
// The model.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    /// Claimed (or about to be) but not created: the binding says "not found".
    NotCreated,
    Running,
    /// Complete, errored or terminated.
    Ended,
}

/// Where a claimant instance's code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// Reading the log's latest seq once, as the helpers' first step.
    Cursor,
    /// Reporting event `i` (0-based) of its run.
    Report(u32),
    Complete,
    Done,
}

#[derive(Debug)]
struct Inst {
    id: InstanceId,
    key: usize,
    life: Life,
    /// When the starter creates it; `None`: not (yet) scheduled, or never.
    create_at: Option<u64>,
    script: Script,
    /// The seq after which its next event goes (the helpers' cursor).
    cursor: u64,
    events_total: u32,
    /// An RPC of this instance is in flight.
    busy: bool,
    /// Its starter heard `claimed: true`.
    claimed: bool,
}

#[derive(Debug, Clone)]
enum Call {
    /// A starter's claim for `inst`; `checked` is set between the phases.
    Claim {
        inst: usize,
        checked: Option<(Claim, ClaimantStatus)>,
        /// The status was sampled; the second phase may run.
        sampled: bool,
    },
    /// The claimant's cursor read.
    Cursor {
        inst: usize,
    },
    /// The helpers' report of event `i`: look after the cursor, append if absent.
    Report {
        inst: usize,
        i: u32,
    },
    Complete {
        inst: usize,
    },
    Await {
        key: usize,
        timeout: WaitMs,
    },
    Events {
        key: usize,
        reader: usize,
        request: EventsRequest,
    },
}

/// An outside caller parked in the registry.
#[derive(Debug, Clone)]
enum Parked {
    Await {
        key: usize,
        since_ms: u64,
    },
    Events {
        key: usize,
        reader: usize,
        after: u64,
    },
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Arrive,
    Await,
    Read(usize),
    Run(usize),
    Create(usize),
    Kill,
    Advance(usize),
    LoseReply(usize),
    FireAlarm,
    SpuriousAlarm,
    Reset,
    Time,
}

#[derive(Debug)]
struct Params {
    keys: usize,
    starters_max: usize,
    arrive_w: u64,
    await_w: u64,
    read_w: u64,
    time_w: u64,
    events_max: u32,
    fail_pct: u64,
    late_create_pct: u64,
    never_create_pct: u64,
    kill_w: u64,
    reset_w: u64,
    lose_w: u64,
    spurious_alarm_w: u64,
    late_alarm_ms_max: u64,
    unknown_pct: u64,
    retention_ms: u64,
    grace_ms: u64,
}

impl Params {
    fn draw(rng: &mut Rng) -> Params {
        // One seed in eight runs without faults: the plain protocol must work too.
        let faulty = rng.below(8) != 0;
        let mut fault = |hi: u64| if faulty { rng.range(0, hi) } else { 0 };
        let (kill_w, reset_w, lose_w, spurious_alarm_w, unknown_pct, never_create_pct) = (
            fault(4),
            fault(2),
            fault(20),
            fault(3),
            fault(30),
            fault(20),
        );
        Params {
            keys: rng.range(1, 3) as usize,
            starters_max: rng.range(2, 60) as usize,
            arrive_w: rng.range(5, 40),
            await_w: rng.range(0, 40),
            read_w: rng.range(0, 60),
            time_w: rng.range(10, 80),
            // Past the kept window sometimes, so the log forgets.
            events_max: *rng.pick(&[0, 3, 20, 700]),
            fail_pct: rng.range(0, 50),
            late_create_pct: rng.range(0, 20),
            never_create_pct,
            kill_w,
            reset_w,
            lose_w,
            spurious_alarm_w,
            late_alarm_ms_max: rng.range(0, 5_000),
            unknown_pct,
            retention_ms: *rng.pick(&[1, 500, 20_000, 200_000]),
            grace_ms: *rng.pick(&[0, 1_000, 60_000]),
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    seeds: u64,
    steps: u64,
    claims: u64,
    replaced_ended: u64,
    replaced_not_found: u64,
    kept_in_grace: u64,
    outcomes: u64,
    appends: u64,
    report_retries_found: u64,
    complete_retries: u64,
    forgotten: u64,
    parked: u64,
    woken: u64,
    expired: u64,
    full_waits: u64,
    deletions: u64,
    late_alarms: u64,
    spurious_alarms: u64,
    resets: u64,
    kills: u64,
    lost_replies: u64,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, o: &Stats) {
        macro_rules! sum { ($($f:ident),*) => { $(self.$f += o.$f;)* } }
        sum!(
            seeds,
            steps,
            claims,
            replaced_ended,
            replaced_not_found,
            kept_in_grace,
            outcomes,
            appends,
            report_retries_found,
            complete_retries,
            forgotten,
            parked,
            woken,
            expired,
            full_waits,
            deletions,
            late_alarms,
            spurious_alarms,
            resets,
            kills,
            lost_replies
        );
    }
}

/// What the checks remember of a key between steps.
#[derive(Debug, Clone, Default)]
struct KeySeen {
    claimant: Option<Claim>,
    outcome: Option<Outcome>,
    latest_seq: u64,
    /// `complete` answered `recorded: true` since the record was (re)made.
    recorded: u32,
}

struct Sim {
    seed: u64,
    rng: Rng,
    p: Params,
    config: RunsConfig,
    now_ms: u64,
    keys: Vec<Ident>,
    stores: Vec<MemoryRunStore>,
    seen: Vec<KeySeen>,
    insts: Vec<Inst>,
    by_id: HashMap<InstanceId, usize>,
    calls: Vec<Call>,
    waits: Waits,
    parked: HashMap<WaitId, Parked>,
    /// Per reader (one per key): the cursor it follows the log with.
    readers: Vec<u64>,
    reader_busy: Vec<bool>,
    alarm_at: Option<u64>,
    /// When the platform runs the armed alarm (at or after `alarm_at`).
    alarm_fires_at: Option<u64>,
    faults: bool,
    arrivals: bool,
    trace: bool,
    stats: Stats,
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed);
        let p = Params::draw(&mut rng);
        if trace {
            eprintln!("seed {seed}: {p:?}");
        }
        let keys: Vec<Ident> = (0..p.keys)
            .map(|k| Ident::parse("key", &format!("run-{k}")).unwrap())
            .collect();
        Sim {
            seed,
            config: RunsConfig {
                retention_ms: p.retention_ms,
                claim_grace_ms: p.grace_ms,
            },
            rng,
            now_ms: 1_000_000,
            stores: vec![MemoryRunStore::default(); keys.len()],
            seen: vec![KeySeen::default(); keys.len()],
            readers: vec![0; keys.len()],
            reader_busy: vec![false; keys.len()],
            keys,
            p,
            insts: Vec::new(),
            by_id: HashMap::new(),
            calls: Vec::new(),
            waits: Waits::default(),
            parked: HashMap::new(),
            alarm_at: None,
            alarm_fires_at: None,
            faults: true,
            arrivals: true,
            trace,
            stats: Stats::default(),
        }
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{} t={}] {}", self.stats.steps, self.now_ms, what());
        }
    }

    fn run(&mut self) {
        for _ in 0..FAULT_STEPS_PER_SEED {
            self.step();
        }
        self.faults = false;
        self.arrivals = false;
        self.note(|| "--- faults and arrivals stop; draining".into());
        self.drain();
        // Time runs past every retention: every finished record goes.
        self.now_ms += self.p.retention_ms + self.p.grace_ms + 1;
        self.drain();
        for (k, store) in self.stores.iter().enumerate() {
            assert!(
                !matches!(store.run(), Run::Finished { .. }),
                "key {k} kept past retention: {:?}",
                store.run()
            );
        }
        // A fresh starter per key gets the claim: its previous claimant, if
        // any, is dead (and past the grace).
        for k in 0..self.keys.len() {
            let probe = self.add_inst(k);
            self.calls.push(Call::Claim {
                inst: probe,
                checked: None,
                sampled: false,
            });
            self.drain();
            assert!(
                self.insts[probe].claimed,
                "the probe could not claim key {k}"
            );
        }
        self.stats.seeds = 1;
    }

    fn drain(&mut self) {
        let start = self.stats.steps;
        while !self.quiescent() {
            assert!(
                self.stats.steps - start < DRAIN_STEPS_MAX,
                "no quiescence after {DRAIN_STEPS_MAX} drain steps (liveness)"
            );
            self.step();
        }
    }

    fn quiescent(&self) -> bool {
        self.calls.is_empty()
            && self.parked.is_empty()
            // The drain waits for retention too: a finished record must go.
            && self.alarm_fires_at.is_none()
            && self.insts.iter().all(|i| match i.life {
                Life::Running => false,
                Life::NotCreated => i.create_at.is_none(),
                Life::Ended => true,
            })
    }

    // --- the scheduler -----------------------------------------------------

    fn step(&mut self) {
        self.stats.steps += 1;
        let mut cands = Vec::new();
        self.candidates(&mut cands);
        cands.push((self.p.time_w.max(1), Action::Time));
        let total: u64 = cands.iter().map(|c| c.0).sum();
        let mut r = self.rng.below(total);
        let mut chosen = Action::Time;
        for &(w, a) in &cands {
            if r < w {
                chosen = a;
                break;
            }
            r -= w;
        }
        self.note(|| format!("{chosen:?}"));
        self.act(chosen);
        self.check_step();
    }

    fn candidates(&self, c: &mut Vec<(u64, Action)>) {
        let f = self.faults;
        let mut push = |w: u64, a: Action| {
            if w > 0 {
                c.push((w, a));
            }
        };
        for i in 0..self.calls.len() {
            push(W, Action::Advance(i));
            if f {
                push(self.p.lose_w, Action::LoseReply(i));
            }
        }
        for (i, inst) in self.insts.iter().enumerate() {
            match inst.life {
                Life::Running if !inst.busy && inst.script != Script::Done => {
                    push(W, Action::Run(i))
                }
                Life::NotCreated if inst.create_at.is_some_and(|t| t <= self.now_ms) => {
                    push(W, Action::Create(i))
                }
                _ => {}
            }
        }
        if self.arrivals {
            if self.insts.len() < self.p.starters_max {
                push(self.p.arrive_w, Action::Arrive);
            }
            push(self.p.await_w, Action::Await);
            for k in 0..self.keys.len() {
                if !self.reader_busy[k] {
                    push(self.p.read_w, Action::Read(k));
                }
            }
        }
        if f && self.insts.iter().any(|i| i.life != Life::Ended) {
            // One kill action, of a random instance: killing is a fault,
            // not something each instance does at its own rate.
            push(self.p.kill_w, Action::Kill);
        }
        if self.alarm_fires_at.is_some_and(|t| t <= self.now_ms) {
            push(W, Action::FireAlarm);
        }
        if f {
            push(self.p.spurious_alarm_w, Action::SpuriousAlarm);
            push(self.p.reset_w, Action::Reset);
        }
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Arrive => {
                let k = self.rng.below(self.keys.len() as u64) as usize;
                let inst = self.add_inst(k);
                self.calls.push(Call::Claim {
                    inst,
                    checked: None,
                    sampled: false,
                });
            }
            Action::Await => {
                let key = self.rng.below(self.keys.len() as u64) as usize;
                let timeout = self.draw_timeout();
                self.calls.push(Call::Await { key, timeout });
            }
            Action::Read(key) => {
                self.reader_busy[key] = true;
                let limit = if self.rng.percent(80) {
                    self.rng.range(1, 10)
                } else {
                    self.rng.range(1, 500)
                };
                let request = EventsRequest {
                    after: After::parse("after", self.readers[key] as f64).unwrap(),
                    timeout: self.draw_timeout(),
                    limit: EventLimit::parse("limit", limit as f64).unwrap(),
                };
                self.calls.push(Call::Events {
                    key,
                    reader: key,
                    request,
                });
            }
            Action::Run(i) => self.instance_step(i),
            Action::Create(i) => {
                let inst = &mut self.insts[i];
                inst.life = Life::Running;
                inst.create_at = None;
                inst.script = Script::Cursor;
            }
            Action::Kill => {
                self.stats.kills += 1;
                let alive: Vec<usize> = (0..self.insts.len())
                    .filter(|&i| self.insts[i].life != Life::Ended)
                    .collect();
                let i = *self.rng.pick(&alive);
                let inst = &mut self.insts[i];
                if inst.life == Life::Running {
                    inst.life = Life::Ended;
                } else {
                    // The starter crashed before creating it: never created.
                    inst.create_at = None;
                }
            }
            Action::Advance(i) => {
                let call = self.calls.swap_remove(i);
                self.advance(call, true);
            }
            Action::LoseReply(i) => {
                // The object runs the call; the reply is lost and the caller retries.
                self.stats.lost_replies += 1;
                let call = self.calls.swap_remove(i);
                self.advance(call.clone(), false);
            }
            Action::FireAlarm => self.alarm(true),
            Action::SpuriousAlarm => {
                self.stats.spurious_alarms += 1;
                self.alarm(false);
            }
            Action::Reset => {
                // The object restarts: claims between phases and every open
                // wait are gone; their callers see a failed RPC and retry.
                self.stats.resets += 1;
                self.waits.clear();
                for (_, parked) in std::mem::take(&mut self.parked) {
                    if let Parked::Events { reader, .. } = parked {
                        self.reader_busy[reader] = false;
                    }
                }
                for call in &mut self.calls {
                    if let Call::Claim {
                        checked, sampled, ..
                    } = call
                    {
                        *checked = None;
                        *sampled = false;
                    }
                }
            }
            Action::Time => self.advance_time(),
        }
    }

    fn draw_timeout(&mut self) -> WaitMs {
        let ms = *self.rng.pick(&[0, 1, 500, 5_000, RUN_WAIT_MS_MAX]);
        WaitMs::parse("timeoutMs", ms as f64).unwrap()
    }

    fn add_inst(&mut self, key: usize) -> usize {
        let idx = self.insts.len();
        let id = id(&format!("i{idx}"));
        self.by_id.insert(id.clone(), idx);
        let events_total = self.rng.range(0, u64::from(self.p.events_max)) as u32;
        self.insts.push(Inst {
            id,
            key,
            life: Life::NotCreated,
            create_at: None,
            script: Script::Cursor,
            cursor: 0,
            events_total,
            busy: false,
            claimed: false,
        });
        idx
    }

    /// Time moves on, but never past an open wait's deadline without its
    /// timer firing: the shell's timers are the runtime's, not a fault.
    fn advance_time(&mut self) {
        let dt = if self.rng.percent(10) {
            self.rng.range(1, 100_000)
        } else {
            self.rng.range(1, 2_000)
        };
        let mut to = self.now_ms + dt;
        if let Some(deadline) = self.waits.next_deadline() {
            to = to.min(deadline.max(self.now_ms));
        }
        self.now_ms = to;
        for (wait_id, wait) in self.waits.expired(self.now_ms) {
            self.stats.expired += 1;
            self.answer_timer(wait_id, wait);
        }
    }

    fn instance_step(&mut self, i: usize) {
        let inst = &mut self.insts[i];
        inst.busy = true;
        let call = match inst.script {
            Script::Cursor => Call::Cursor { inst: i },
            Script::Report(n) => Call::Report { inst: i, i: n },
            Script::Complete => Call::Complete { inst: i },
            Script::Done => unreachable!("a done instance does not step"),
        };
        self.calls.push(call);
    }

    // --- the object --------------------------------------------------------

    /// Runs one call's next phase on the object. `heard`: the caller gets
    /// the reply (otherwise it retries the same call later).
    fn advance(&mut self, call: Call, heard: bool) {
        match call {
            Call::Claim {
                inst,
                checked,
                sampled,
            } => self.claim(inst, checked, sampled, heard),
            Call::Cursor { inst } => {
                let key = self.insts[inst].key;
                let latest = self.stores[key].latest_seq();
                self.reply(heard, Call::Cursor { inst }, |sim| {
                    let me = &mut sim.insts[inst];
                    me.cursor = latest;
                    me.script = Script::Report(0);
                    sim.next_script(inst);
                });
            }
            Call::Report { inst, i } => self.report(inst, i, heard),
            Call::Complete { inst } => self.complete(inst, heard),
            Call::Await { key, timeout } => {
                let poll = await_run(&self.stores[key], self.now_ms, timeout, self.waits.open());
                match poll {
                    Poll::Answer(view) => {
                        if timeout > WaitMs::ZERO
                            && view.as_ref().is_none_or(|v| v.outcome.is_none())
                        {
                            assert_eq!(self.waits.open(), RUN_OPEN_WAITS_MAX, "answered early");
                            self.stats.full_waits += 1;
                        }
                        self.check_view(key, &view);
                    }
                    Poll::Park { deadline_ms } => {
                        self.park(
                            key,
                            WaitFor::Outcome,
                            deadline_ms,
                            Parked::Await {
                                key,
                                since_ms: self.now_ms,
                            },
                        );
                    }
                }
            }
            Call::Events {
                key,
                reader,
                request,
            } => match events(&self.stores[key], self.now_ms, &request, self.waits.open()) {
                Poll::Answer(reply) => self.reader_got(key, reader, request.after.get(), &reply),
                Poll::Park { deadline_ms } => {
                    assert_eq!(deadline_ms, self.now_ms + request.timeout.ms());
                    self.park(
                        key,
                        WaitFor::Events {
                            after: request.after.get(),
                            limit: request.limit,
                        },
                        deadline_ms,
                        Parked::Events {
                            key,
                            reader,
                            after: request.after.get(),
                        },
                    );
                }
            },
        }
    }

    fn reply(&mut self, heard: bool, retry: Call, then: impl FnOnce(&mut Sim)) {
        if heard {
            then(self);
        } else {
            self.calls.push(retry);
        }
    }

    fn claim(
        &mut self,
        inst: usize,
        checked: Option<(Claim, ClaimantStatus)>,
        sampled: bool,
        heard: bool,
    ) {
        let key = self.insts[inst].key;
        let request = ClaimRequest {
            id: self.insts[inst].id.clone(),
            workflow: None,
        };
        let retry = Call::Claim {
            inst,
            checked: None,
            sampled: false,
        };
        let reply = match checked {
            None => match claim(&mut self.stores[key], self.now_ms, &request) {
                ClaimStep::Done(reply) => reply,
                ClaimStep::CheckClaimant(claimed) => {
                    // Outside the gate: the status is sampled at a later step.
                    self.calls.push(Call::Claim {
                        inst,
                        checked: Some((claimed, ClaimantStatus::Unknown)),
                        sampled: false,
                    });
                    return;
                }
            },
            Some((claimed, _)) if !sampled => {
                let status = self.status_of(&claimed.id);
                self.calls.push(Call::Claim {
                    inst,
                    checked: Some((claimed, status)),
                    sampled: true,
                });
                return;
            }
            Some((claimed, status)) => {
                let decided = claim_after_check(
                    &mut self.stores[key],
                    self.now_ms,
                    &self.config,
                    &request,
                    &claimed,
                    status,
                );
                if let Some(replaced) = &decided.replaced {
                    assert_eq!(*replaced, claimed.id);
                    match status {
                        ClaimantStatus::Ended => self.stats.replaced_ended += 1,
                        ClaimantStatus::NotFound => self.stats.replaced_not_found += 1,
                        other => panic!("replaced a claimant reported {other:?}"),
                    }
                    // The model's "one claimant at a time" check accepts the change.
                    self.seen[key].claimant = self.stores[key].run().claim().cloned();
                } else if status == ClaimantStatus::NotFound {
                    self.stats.kept_in_grace += 1;
                }
                decided.reply
            }
        };
        self.stats.claims += 1;
        if let ClaimReply::Claimed = reply {
            // The starter now holds the claim for this id.
            self.seen[key].claimant = self.stores[key].run().claim().cloned();
        }
        self.reply(heard, retry, |sim| sim.starter_heard(inst, reply));
    }

    /// What the Workflow binding says about `who` now.
    fn status_of(&mut self, who: &InstanceId) -> ClaimantStatus {
        if self.faults && self.rng.percent(self.p.unknown_pct) {
            return ClaimantStatus::Unknown;
        }
        match self.insts[self.by_id[who]].life {
            Life::NotCreated => ClaimantStatus::NotFound,
            Life::Running => ClaimantStatus::Alive,
            Life::Ended => ClaimantStatus::Ended,
        }
    }

    fn starter_heard(&mut self, inst: usize, reply: ClaimReply) {
        let me = &self.insts[inst];
        if me.life != Life::NotCreated || me.create_at.is_some() {
            return; // a retried claim whose first reply was acted on
        }
        match reply {
            ClaimReply::Claimed => {
                self.insts[inst].claimed = true;
                let delay = if self.rng.percent(self.p.never_create_pct) && self.faults {
                    None
                } else if self.rng.percent(self.p.late_create_pct) {
                    Some(self.rng.range(0, 3 * self.p.grace_ms + 10))
                } else {
                    Some(self.rng.range(0, 50))
                };
                self.insts[inst].create_at = delay.map(|d| self.now_ms + d);
            }
            ClaimReply::Taken(view) => {
                assert_ne!(view.id, me.id, "told another holds it, naming the caller");
                // Nothing to start: the starter awaits instead, sometimes.
                if self.arrivals && self.rng.percent(50) {
                    let key = me.key;
                    let timeout = self.draw_timeout();
                    self.calls.push(Call::Await { key, timeout });
                }
            }
        }
    }

    fn next_script(&mut self, inst: usize) {
        let me = &mut self.insts[inst];
        me.busy = false;
        if let Script::Report(n) = me.script {
            if n >= me.events_total {
                me.script = Script::Complete;
            }
        }
    }

    /// The helpers' report step: one attempt of it. The step first looks
    /// for its event after the cursor (a retry after a lost reply finds
    /// it), and appends only if it is not there.
    fn report(&mut self, inst: usize, n: u32, heard: bool) {
        let key = self.insts[inst].key;
        let cursor = self.insts[inst].cursor;
        let me_id = self.insts[inst].id.clone();
        let found = read_events(&self.stores[key], cursor, 1)
            .events
            .first()
            .filter(|e| e.seq == cursor + 1)
            .map(|e| e.seq);
        let seq = match found {
            Some(seq) => {
                self.stats.report_retries_found += 1;
                Ok(seq)
            }
            None => {
                let request = AppendRequest {
                    id: me_id.clone(),
                    kind: EventType::parse("type", "progress").unwrap(),
                    data: Some(JsonText::event_data(format!("[\"{me_id}\",{n}]")).unwrap()),
                };
                let before = self.stores[key].latest_seq();
                match append(&mut self.stores[key], self.now_ms, &request) {
                    Ok(decided) => {
                        self.stats.appends += 1;
                        assert_eq!(decided.reply, before + 1, "a gap in the sequence");
                        self.seen[key].latest_seq = decided.reply;
                        if decided.reply > RUN_EVENTS_KEPT {
                            self.stats.forgotten += 1;
                        }
                        self.wake(key, decided.wake);
                        Ok(decided.reply)
                    }
                    Err(error) => {
                        assert_eq!(error.field(), "instanceId");
                        assert_ne!(self.stores[key].claimant(), Some(me_id.clone()));
                        Err(())
                    }
                }
            }
        };
        self.reply(heard, Call::Report { inst, i: n }, |sim| {
            let me = &mut sim.insts[inst];
            match seq {
                Ok(seq) => {
                    me.cursor = seq;
                    me.script = Script::Report(n + 1);
                    sim.next_script(inst);
                }
                Err(()) => {
                    // Not the claimant (replaced while it was presumed dead):
                    // the helper throws a NonRetryableError and the instance errors.
                    me.life = Life::Ended;
                    me.script = Script::Done;
                    me.busy = false;
                }
            }
        });
    }

    fn complete(&mut self, inst: usize, heard: bool) {
        let key = self.insts[inst].key;
        let me_id = self.insts[inst].id.clone();
        let outcome = if self.rng.percent(self.p.fail_pct) {
            Outcome::Failed {
                error: format!("{me_id} failed"),
            }
        } else {
            Outcome::Complete {
                result: self
                    .rng
                    .percent(80)
                    .then(|| JsonText::result(format!("\"{me_id}\"")).unwrap()),
            }
        };
        let request = CompleteRequest {
            id: me_id.clone(),
            outcome: outcome.clone(),
        };
        let decided = complete(&mut self.stores[key], self.now_ms, &self.config, &request);
        if decided.reply {
            self.stats.outcomes += 1;
            self.seen[key].recorded += 1;
            self.seen[key].outcome = Some(outcome);
            let alarm = decided
                .alarm_at_ms
                .expect("a recorded outcome needs retention");
            assert_eq!(alarm, self.now_ms + self.p.retention_ms);
            self.arm_alarm();
            self.wake(key, decided.wake);
        } else {
            self.stats.complete_retries += 1;
            assert_eq!(decided.wake, Wake::Nobody);
        }
        self.reply(heard, Call::Complete { inst }, |sim| {
            let me = &mut sim.insts[inst];
            me.script = Script::Done;
            me.busy = false;
            me.life = Life::Ended;
        });
    }

    /// The shell arms the alarm with each commit that changes retention, at
    /// the earliest deletion of any key (in the same turn as the write).
    fn arm_alarm(&mut self) {
        let next = self.stores.iter().filter_map(alarm_at).min();
        if next != self.alarm_at {
            self.alarm_at = next;
            // The platform runs it at that time or (a fault) later.
            self.alarm_fires_at = next.map(|t| {
                let late = if self.faults && self.p.late_alarm_ms_max > 0 {
                    self.rng.range(0, self.p.late_alarm_ms_max)
                } else {
                    0
                };
                if late > 0 {
                    self.stats.late_alarms += 1;
                }
                t + late
            });
        }
    }

    fn alarm(&mut self, armed: bool) {
        if armed {
            self.alarm_at = None;
            self.alarm_fires_at = None;
        }
        for k in 0..self.keys.len() {
            if expire(&mut self.stores[k], self.now_ms) {
                self.stats.deletions += 1;
                self.note(|| format!("deleted key {k}"));
                self.seen[k] = KeySeen::default();
                self.readers[k] = 0;
            }
        }
        // A duplicate delivery runs the handler again: a no-op by construction.
        if armed && self.faults && self.rng.percent(10) {
            self.alarm(false);
        }
        self.alarm_at = None;
        self.alarm_fires_at = None;
        self.arm_alarm();
    }

    fn park(&mut self, key: usize, on: WaitFor, deadline_ms: u64, parked: Parked) {
        assert!(deadline_ms > self.now_ms, "parked with no time to wait");
        self.stats.parked += 1;
        let wait_id = self.waits.park(Wait {
            key: self.keys[key].clone(),
            on,
            deadline_ms,
        });
        self.parked.insert(wait_id, parked);
    }

    /// Answers every wait a commit wakes, as the shell does right after it.
    fn wake(&mut self, key: usize, wake: Wake) {
        let woken = match &wake {
            Wake::Nobody => return,
            Wake::Awaiters(_) => self.waits.woken_by_outcome(&self.keys[key]),
            Wake::EventReaders { seq } => self.waits.woken_by_event(&self.keys[key], *seq),
        };
        for (wait_id, wait) in woken {
            self.stats.woken += 1;
            let parked = self.parked.remove(&wait_id).expect("a parked caller");
            match (parked, &wake, wait.on) {
                (Parked::Await { key: k, .. }, Wake::Awaiters(view), WaitFor::Outcome) => {
                    assert_eq!(k, key);
                    assert!(view.outcome.is_some());
                    self.check_view(key, &Some(view.clone()));
                }
                (
                    Parked::Events {
                        key: k,
                        reader,
                        after,
                    },
                    Wake::EventReaders { seq },
                    WaitFor::Events { limit, .. },
                ) => {
                    assert_eq!(k, key);
                    assert!(after < *seq);
                    let reply = read_events(&self.stores[key], after, limit.get());
                    assert!(!reply.events.is_empty(), "woken with nothing to read");
                    self.reader_got(key, reader, after, &reply);
                }
                other => panic!("woke the wrong wait: {other:?}"),
            }
        }
    }

    /// A wait's timer fired: it answers with the state as it is.
    fn answer_timer(&mut self, wait_id: WaitId, wait: Wait) {
        assert!(wait.deadline_ms <= self.now_ms);
        let parked = self.parked.remove(&wait_id).expect("a parked caller");
        match (parked, wait.on) {
            (Parked::Await { key, since_ms }, WaitFor::Outcome) => {
                assert!(since_ms < self.now_ms);
                let view = run_view(&self.stores[key]);
                self.check_view(key, &view);
            }
            (Parked::Events { key, reader, after }, WaitFor::Events { limit, .. }) => {
                let reply = read_events(&self.stores[key], after, limit.get());
                self.reader_got(key, reader, after, &reply);
            }
            other => panic!("mismatched wait: {other:?}"),
        }
    }

    /// An await's answer agrees with the record.
    fn check_view(&self, key: usize, view: &Option<RunView>) {
        let seen = &self.seen[key];
        match view {
            None => assert!(seen.claimant.is_none(), "state none with a claimant"),
            Some(view) => {
                assert_eq!(Some(&view.id), seen.claimant.as_ref().map(|c| &c.id));
                assert_eq!(view.outcome, seen.outcome, "an await saw another outcome");
            }
        }
    }

    /// A reader's answer: consecutive seqs from where it could resume.
    fn reader_got(&mut self, key: usize, reader: usize, after: u64, reply: &EventsReply) {
        assert_eq!(reply.latest_seq, self.stores[key].latest_seq());
        assert!(reply.first_seq >= 1 && reply.first_seq <= reply.latest_seq + 1);
        let first = (after + 1).max(reply.first_seq);
        for (expect, event) in (first..).zip(&reply.events) {
            assert_eq!(event.seq, expect, "a gap in what a reader got");
        }
        if let Some(last) = reply.events.last() {
            self.readers[reader] = last.seq;
        } else if reply.latest_seq < self.readers[reader] {
            // The record was deleted and a new log began.
            self.readers[reader] = 0;
        }
        self.reader_busy[reader] = false;
    }

    // --- checks ------------------------------------------------------------

    fn check_step(&mut self) {
        for k in 0..self.keys.len() {
            let store = &self.stores[k];
            assert_invariants(store);
            let run = store.run();
            let seen = &mut self.seen[k];
            // One claimant at a time: the claim changes only as the checks
            // above accepted (a claim, a replaced dead claimant, deletion).
            assert_eq!(
                run.claim(),
                seen.claimant.as_ref(),
                "the claimant changed unseen"
            );
            // An outcome once, never changed.
            assert!(seen.recorded <= 1, "an outcome recorded twice");
            match &run {
                Run::Finished { finished, .. } => {
                    assert_eq!(Some(&finished.outcome), seen.outcome.as_ref());
                }
                _ => assert!(seen.outcome.is_none(), "an outcome vanished"),
            }
            // No gap: the sequence moved only by the appends seen.
            assert_eq!(store.latest_seq(), seen.latest_seq, "the sequence jumped");
            let kept: Vec<u64> = store.kept().map(|e| e.seq).collect();
            for pair in kept.windows(2) {
                assert_eq!(pair[1], pair[0] + 1, "a gap in the kept log");
            }
            // Each reported event is in the log at most once.
            let mut reported: Vec<&str> = store
                .kept()
                .filter_map(|e| e.data.as_ref().map(|d| d.as_str()))
                .collect();
            let total = reported.len();
            reported.sort_unstable();
            reported.dedup();
            assert_eq!(reported.len(), total, "an event recorded twice");
        }
        // Every waiter answered by its deadline: none open past it, and
        // none open that a commit should have answered.
        for (_, wait) in self.waits.iter() {
            assert!(
                wait.deadline_ms > self.now_ms,
                "a wait outlived its deadline"
            );
            let k = self
                .keys
                .iter()
                .position(|key| *key == wait.key)
                .expect("a known key");
            match wait.on {
                WaitFor::Outcome => assert!(
                    self.seen[k].outcome.is_none(),
                    "an awaiter still waits on a finished run"
                ),
                WaitFor::Events { after, .. } => assert!(
                    after >= self.stores[k].latest_seq(),
                    "a reader still waits with events to read"
                ),
            }
        }
        assert_eq!(self.waits.open() as usize, self.parked.len());
        // The alarm is armed for the earliest deletion.
        let due = self.stores.iter().filter_map(alarm_at).min();
        assert_eq!(self.alarm_at, due, "retention alarm not armed as needed");
    }
}

// ---------------------------------------------------------------------------
// Running it.

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    let result = catch_unwind(AssertUnwindSafe(|| sim.run()));
    if let Err(panic) = result {
        eprintln!(
            "runs_sim failed: BATON_SIM_SEED={} (step {}, t={})",
            sim.seed, sim.stats.steps, sim.now_ms
        );
        resume_unwind(panic);
    }
    sim.stats
}

#[test]
fn simulation() {
    if let Some(t) = simulate("runs_sim", 0x5eed_0000, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("claims", t.claims),
            ("claimants replaced after ending", t.replaced_ended),
            (
                "claimants replaced when never created",
                t.replaced_not_found,
            ),
            ("claimants kept in their grace", t.kept_in_grace),
            ("outcomes", t.outcomes),
            ("appends", t.appends),
            (
                "retried reports that found their event",
                t.report_retries_found,
            ),
            ("completes that recorded nothing", t.complete_retries),
            ("events forgotten", t.forgotten),
            ("waits parked", t.parked),
            ("waits woken", t.woken),
            ("waits expired", t.expired),
            ("deletions", t.deletions),
            ("late alarms", t.late_alarms),
            ("spurious alarms", t.spurious_alarms),
            ("resets", t.resets),
            ("lost replies", t.lost_replies),
        ]);
    }
}

/// Past the bound on open waits, a long-poll answers at once with the
/// state as it is; below it, it parks.
#[test]
fn open_waits_are_bounded() {
    let store = MemoryRunStore::default();
    let key = Ident::parse("key", "k").unwrap();
    let mut waits = Waits::default();
    let timeout = WaitMs::parse("timeoutMs", 1_000.0).unwrap();
    for _ in 0..RUN_OPEN_WAITS_MAX {
        match await_run(&store, 5, timeout, waits.open()) {
            Poll::Park { deadline_ms } => {
                waits.park(Wait {
                    key: key.clone(),
                    on: WaitFor::Outcome,
                    deadline_ms,
                });
            }
            Poll::Answer(_) => panic!("answered below the bound"),
        }
    }
    assert_eq!(
        await_run(&store, 5, timeout, waits.open()),
        Poll::Answer(None)
    );
    let request = EventsRequest {
        after: After::default(),
        timeout,
        limit: EventLimit::DEFAULT,
    };
    assert!(matches!(
        events(&store, 5, &request, waits.open()),
        Poll::Answer(reply) if reply.events.is_empty() && reply.first_seq == 1
    ));
    // Expiry frees them all, at their deadline and not before.
    assert!(waits.expired(1_004).is_empty());
    assert_eq!(waits.expired(1_005).len(), RUN_OPEN_WAITS_MAX as usize);
    assert_eq!(waits.open(), 0);
}

// ---------------------------------------------------------------------------
// The claim rules, one by one.

fn claim_of(id_: &str) -> ClaimRequest {
    ClaimRequest {
        id: id(id_),
        workflow: None,
    }
}

const RULES: RunsConfig = RunsConfig {
    retention_ms: 1_000,
    claim_grace_ms: 60_000,
};

/// `who` asks for a key held by an unfinished run and is told to check it.
fn checks(store: &mut MemoryRunStore, now: u64, who: &str) -> Claim {
    match claim(store, now, &claim_of(who)) {
        ClaimStep::CheckClaimant(claim) => claim,
        other => panic!("{who} should have to check the claimant: {other:?}"),
    }
}

#[test]
fn a_dead_claimant_frees_the_key_only_past_its_grace() {
    let mut s = MemoryRunStore::default();
    assert_eq!(
        claim(&mut s, 1_000, &claim_of("a")),
        ClaimStep::Done(ClaimReply::Claimed)
    );
    // The claimant's own claim needs no check.
    assert_eq!(
        claim(&mut s, 1_001, &claim_of("a")),
        ClaimStep::Done(ClaimReply::Claimed)
    );
    // Not found within the grace: not created yet, so it keeps the key.
    let checked = checks(&mut s, 2_000, "b");
    let decided = claim_after_check(
        &mut s,
        2_000,
        &RULES,
        &claim_of("b"),
        &checked,
        ClaimantStatus::NotFound,
    );
    assert_eq!(decided.replaced, None);
    assert!(
        matches!(decided.reply, ClaimReply::Taken(RunView { id: ref who, outcome: None }) if *who == checked.id)
    );
    // Alive or unknown: kept, whatever the time.
    for status in [ClaimantStatus::Alive, ClaimantStatus::Unknown] {
        let decided = claim_after_check(&mut s, 999_999, &RULES, &claim_of("b"), &checked, status);
        assert_eq!(decided.replaced, None, "{status:?}");
    }
    // Not found past the grace, counted from the claim: dead.
    let decided = claim_after_check(
        &mut s,
        61_000,
        &RULES,
        &claim_of("b"),
        &checked,
        ClaimantStatus::NotFound,
    );
    assert_eq!(decided.replaced, Some(id("a")));
    assert_eq!(decided.reply, ClaimReply::Claimed);
    assert_eq!(s.claimant(), Some(id("b")));
}

#[test]
fn a_stale_check_never_takes_the_key() {
    let mut s = MemoryRunStore::default();
    let _ = claim(&mut s, 0, &claim_of("a"));
    let checked = checks(&mut s, 10, "b");
    // Meanwhile `c` found `a` ended and took the key.
    let taken = checks(&mut s, 10, "c");
    let decided = claim_after_check(
        &mut s,
        11,
        &RULES,
        &claim_of("c"),
        &taken,
        ClaimantStatus::Ended,
    );
    assert_eq!(decided.replaced, Some(id("a")));
    // `b` comes back with its answer about `a`: the claim it checked is gone.
    let decided = claim_after_check(
        &mut s,
        12,
        &RULES,
        &claim_of("b"),
        &checked,
        ClaimantStatus::Ended,
    );
    assert_eq!(decided.replaced, None);
    assert!(
        matches!(decided.reply, ClaimReply::Taken(RunView { id: ref who, .. }) if *who == id("c"))
    );
    // And a run that finished between the phases keeps its claimant.
    let recorded = complete(
        &mut s,
        13,
        &RULES,
        &CompleteRequest {
            id: id("c"),
            outcome: Outcome::Complete { result: None },
        },
    );
    assert!(recorded.reply);
    let checked_c = Claim {
        id: id("c"),
        since_ms: 11,
        workflow: None,
    };
    let decided = claim_after_check(
        &mut s,
        14,
        &RULES,
        &claim_of("d"),
        &checked_c,
        ClaimantStatus::Ended,
    );
    assert_eq!(decided.replaced, None);
    assert_eq!(
        decided.reply,
        ClaimReply::Taken(RunView {
            id: id("c"),
            outcome: Some(Outcome::Complete { result: None })
        })
    );
    // A finished run answers every claim at once, with its outcome.
    assert!(matches!(
        claim(&mut s, 15, &claim_of("e")),
        ClaimStep::Done(ClaimReply::Taken(_))
    ));
}

#[test]
fn the_outcome_is_recorded_once_and_only_by_the_claimant() {
    let mut s = MemoryRunStore::default();
    let done = |who: &str| CompleteRequest {
        id: id(who),
        outcome: Outcome::Failed {
            error: format!("{who} says no"),
        },
    };
    assert!(
        !complete(&mut s, 0, &RULES, &done("a")).reply,
        "no claim yet"
    );
    let _ = claim(&mut s, 1, &claim_of("a"));
    assert!(
        !complete(&mut s, 2, &RULES, &done("b")).reply,
        "not the claimant"
    );
    let first = complete(&mut s, 3, &RULES, &done("a"));
    assert!(first.reply);
    assert_eq!(first.alarm_at_ms, Some(3 + RULES.retention_ms));
    assert!(
        !complete(&mut s, 4, &RULES, &done("a")).reply,
        "a retry records nothing"
    );
    assert_eq!(
        run_view(&s).and_then(|v| v.outcome),
        Some(Outcome::Failed {
            error: "a says no".into()
        })
    );
    // Retention: nothing before its time, the whole record at it.
    assert!(!expire(&mut s, 3 + RULES.retention_ms - 1));
    assert!(expire(&mut s, 3 + RULES.retention_ms));
    assert_eq!(run_view(&s), None);
    assert!(!expire(&mut s, 10_000), "a late alarm finds nothing");
}
