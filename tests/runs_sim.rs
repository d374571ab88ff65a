//! A seeded, deterministic simulation of the Runs core (contract §6),
//! driving `decide` + `apply` and judging every reply for itself.
//!
//! The real decision function and the real [`Waits`] registry run over
//! [`MemoryRun`]s (one object holding a few run keys) against models of the
//! Workflow engine (instances not yet created, running, ended), of the
//! Durable Object shell (load, decide, apply the writes; the claim's
//! answering `Check` performed outside the gate, its liveness
//! re-entering later; long-polls parked with a timer at their deadline; the
//! retention alarm armed when a transition says so, ticking the keys the
//! rows say are due) and of the callers:
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
//! # The oracle
//! [`Model`] is the sim's own account of each key, kept by the contract's
//! rules as written here, never by the core's helpers: its own claim times,
//! its own grace (not found is dead only at or past `claim + grace`), its
//! own retention (`outcome + retention`), its own log of the newest
//! [`KEPT`] events. Every reply is compared with what the model says the
//! contract allows, not with what the core says it did; after every step
//! the rows are compared with the model (one claimant at a time, an outcome
//! once, no gap and no reuse in the sequence, the deletion time), every
//! transition's `state` with the rows reloaded, and every waiter must be
//! answered by its deadline, awaiters as soon as an outcome is recorded.
//! Time jumps land exactly on the boundaries (a claim's grace end and the
//! ms either side, a deletion time and the ms before it, a wait's
//! deadline), alarms fire on time as often as late, and logs run to
//! exactly 500 and 501 events. At the end of each seed the faults stop,
//! time runs past retention, and every finished record must be gone and
//! every key claimable again.
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 200,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

mod common;

use baton::ident::{Ident, InstanceId};
use baton::runs::{
    apply, assert_invariants, decide, After, AppendRequest, ClaimReply, ClaimRequest,
    CompleteRequest, EventLimit, EventType, EventsReply, EventsRequest, Input, JsonText, MemoryRun,
    Outcome, PendingClaim, Poll, Reply, Run, RunView, Transition, Wait, WaitFor, WaitId, WaitMs,
    Waits,
};
use baton::transition::{Alarm, Check, LogKind};
use baton::workflow::Liveness;
use common::{
    assert_reached, report_failure, said, simulate, End, Fault, Faults, Injected, Life, Rng, Said,
    SimStats,
};
use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Total scheduler steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 200_000;
/// Steps with faults and arrivals per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 2_000;
/// A drain longer than this is a liveness failure.
const DRAIN_STEPS_MAX: u64 = 20_000;
/// Weight of an ordinary ready action (faults are weighted against this).
const W: u64 = 100;
/// How soon the platform retries an alarm it did not deliver.
const ALARM_RETRY_MS: u64 = 1_000;

// The contract's numbers (§6), written here rather than taken from the core.
/// "The log keeps the newest 500."
const KEPT: u64 = 500;
/// `timeoutMs` is 0 to 30000.
const WAIT_MS_MAX: u64 = 30_000;
/// The object's bound on open long-polls, past which they answer at once
/// (an implementation bound: the one number taken from the crate).
const OPEN_WAITS_MAX: u32 = baton::limits::RUN_OPEN_WAITS_MAX;
/// The default Workflow binding a claimant without one is checked through.
const BINDING: &str = "WORKFLOW";

// ---------------------------------------------------------------------------
// The model.

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
    /// A starter's claim for `inst`; between the phases, the pending claim
    /// and (once the check was made) the liveness it found.
    Claim {
        inst: usize,
        pending: Option<(PendingClaim, Option<Liveness>)>,
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
    /// The call commits, then the object resets before it replies.
    ResetAfter(usize),
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
    late_alarm_ms_max: u64,
    retention_ms: u64,
    grace_ms: u64,
    /// How often a time step lands exactly on a boundary.
    boundary_pct: u64,
    /// Long-polls the object holds open for keys the simulation does not
    /// follow: some seeds run just under the object's bound, so that it
    /// is reached, and passed by one.
    busy_waits: u32,
}

impl Params {
    fn draw(rng: &mut Rng) -> Params {
        Params {
            keys: rng.range(1, 3) as usize,
            starters_max: rng.range(2, 60) as usize,
            arrive_w: rng.range(5, 40),
            await_w: rng.range(0, 40),
            read_w: rng.range(0, 60),
            time_w: rng.range(10, 80),
            // Past the kept window sometimes, and exactly onto its bound.
            events_max: *rng.pick(&[0, 3, 20, 500, 501, 700]),
            fail_pct: rng.range(0, 50),
            late_create_pct: rng.range(0, 20),
            // Half the seeds fire every alarm exactly on time.
            late_alarm_ms_max: *rng.pick(&[0, 0, 3, 5_000]),
            retention_ms: *rng.pick(&[1, 500, 20_000, 200_000]),
            grace_ms: *rng.pick(&[0, 1, 1_000, 60_000]),
            boundary_pct: rng.range(20, 70),
            busy_waits: *rng.pick(&[0, 0, 0, OPEN_WAITS_MAX - 2, OPEN_WAITS_MAX - 1]),
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
    faults: Injected,
    boundary_steps: u64,
    checks_at_grace_end: u64,
    full_logs: u64,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, o: &Stats) {
        self.faults.add(&o.faults);
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
            boundary_steps,
            checks_at_grace_end,
            full_logs
        );
    }
}

/// The sim's own account of one key, by the contract's rules.
#[derive(Debug, Clone, Default)]
struct Model {
    /// The claimant and when its claim was made (the grace counts from it).
    claim: Option<(InstanceId, u64)>,
    outcome: Option<Outcome>,
    /// When the record must be deleted: the outcome's time plus retention.
    delete_at: Option<u64>,
    /// The highest seq ever appended since the record was made.
    latest_seq: u64,
    /// The newest events, at most [`KEPT`]: (seq, data).
    kept: VecDeque<(u64, Option<String>)>,
    /// `complete` answered `recorded: true` since the record was (re)made.
    recorded: u32,
}

impl Model {
    fn view(&self) -> Option<RunView> {
        self.claim.as_ref().map(|(id, _)| RunView {
            id: id.clone(),
            outcome: self.outcome.clone(),
        })
    }

    /// The contract's dead, at `now`, for what the binding said: ended, or
    /// not found at or past the grace after the claim.
    fn dead(&self, liveness: Liveness, now: u64, grace_ms: u64) -> bool {
        let since = self.claim.as_ref().expect("a claimant to judge").1;
        match liveness {
            Liveness::Dead => true,
            Liveness::NotFound => now >= since + grace_ms,
            Liveness::Alive | Liveness::Unknown => false,
        }
    }

    /// `events` as the contract answers it: `seq > after`, at most `limit`.
    fn events(&self, after: u64, limit: u32) -> (Vec<(u64, Option<String>)>, u64, u64) {
        let events = self
            .kept
            .iter()
            .filter(|(seq, _)| *seq > after)
            .take(limit as usize)
            .cloned()
            .collect();
        let first = self.kept.front().map_or(self.latest_seq + 1, |e| e.0);
        (events, self.latest_seq, first)
    }
}

struct Sim {
    seed: u64,
    rng: Rng,
    p: Params,
    now_ms: u64,
    keys: Vec<Ident>,
    rows: Vec<MemoryRun>,
    model: Vec<Model>,
    insts: Vec<Inst>,
    by_id: BTreeMap<InstanceId, usize>,
    calls: Vec<Call>,
    waits: Waits,
    parked: BTreeMap<WaitId, Parked>,
    /// Per reader (one per key): the cursor it follows the log with.
    readers: Vec<u64>,
    reader_busy: Vec<bool>,
    alarm_at: Option<u64>,
    /// When the platform runs the armed alarm (at or after `alarm_at`).
    alarm_fires_at: Option<u64>,
    faults: Faults,
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
        // Weights against an ordinary action's [`W`], or percentages
        // (`StatusUnknown` of status answers, `InstanceDies` of starters
        // that never create their instance; a running one is killed by
        // its own weighted action).
        let faults = Faults::draw(
            &mut rng,
            &[
                (Fault::InstanceDies, 20),
                (Fault::Reset, 2),
                (Fault::ResetAfterCommit, 2),
                (Fault::ReplyLost, 20),
                (Fault::AlarmSpurious, 3),
                (Fault::AlarmLost, 20),
                (Fault::AlarmDuplicate, 10),
                (Fault::StatusUnknown, 30),
            ],
        );
        let p = Params::draw(&mut rng);
        if trace {
            eprintln!("seed {seed}: {p:?}");
        }
        let keys: Vec<Ident> = (0..p.keys)
            .map(|k| Ident::parse("key", &format!("run-{k}")).unwrap())
            .collect();
        Sim {
            seed,
            rng,
            now_ms: 1_000_000,
            rows: vec![MemoryRun::default(); keys.len()],
            model: vec![Model::default(); keys.len()],
            readers: vec![0; keys.len()],
            reader_busy: vec![false; keys.len()],
            keys,
            p,
            insts: Vec::new(),
            by_id: BTreeMap::new(),
            calls: Vec::new(),
            waits: Waits::default(),
            parked: BTreeMap::new(),
            alarm_at: None,
            alarm_fires_at: None,
            faults,
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
        self.faults.stop();
        self.arrivals = false;
        self.note(|| "--- faults and arrivals stop; draining".into());
        self.drain();
        // Time runs past every retention: every finished record goes.
        self.now_ms += self.p.retention_ms + self.p.grace_ms + 1;
        self.drain();
        for (k, rows) in self.rows.iter().enumerate() {
            assert!(
                !matches!(rows.run(), Run::Finished { .. }),
                "key {k} kept past retention: {:?}",
                rows.run()
            );
        }
        // A fresh starter per key gets the claim: its previous claimant, if
        // any, is dead (and past the grace).
        for k in 0..self.keys.len() {
            let probe = self.add_inst(k);
            self.calls.push(Call::Claim {
                inst: probe,
                pending: None,
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
                Life::Ended(_) => true,
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
        let f = self.faults.on();
        let rate = |fault| self.faults.rate(fault);
        let mut push = |w: u64, a: Action| {
            if w > 0 {
                c.push((w, a));
            }
        };
        for i in 0..self.calls.len() {
            push(W, Action::Advance(i));
            if f {
                push(rate(Fault::ReplyLost), Action::LoseReply(i));
                push(rate(Fault::ResetAfterCommit), Action::ResetAfter(i));
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
        if f && self.insts.iter().any(|i| !i.life.ended()) {
            // One kill action, of a random instance: killing is a fault,
            // not something each instance does at its own rate.
            push(rate(Fault::InstanceDies) / 5, Action::Kill);
        }
        if self.alarm_fires_at.is_some_and(|t| t <= self.now_ms) {
            push(W, Action::FireAlarm);
        }
        if f {
            push(rate(Fault::AlarmSpurious), Action::SpuriousAlarm);
            push(rate(Fault::Reset), Action::Reset);
        }
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Arrive => {
                let k = self.rng.below(self.keys.len() as u64) as usize;
                let inst = self.add_inst(k);
                self.calls.push(Call::Claim {
                    inst,
                    pending: None,
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
                self.faults.count(Fault::InstanceDies);
                let alive: Vec<usize> = (0..self.insts.len())
                    .filter(|&i| !self.insts[i].life.ended())
                    .collect();
                let i = *self.rng.pick(&alive);
                let inst = &mut self.insts[i];
                if inst.life == Life::Running {
                    inst.life = Life::Ended(End::Terminated);
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
                self.faults.count(Fault::ReplyLost);
                let call = self.calls.swap_remove(i);
                self.advance(call.clone(), false);
            }
            Action::ResetAfter(i) => {
                // The call commits; the object resets before it replies or
                // answers the waits its commit woke (the caller retries).
                self.faults.count(Fault::ResetAfterCommit);
                let call = self.calls.swap_remove(i);
                self.advance(call, false);
                self.reset();
            }
            Action::FireAlarm => self.alarm(true),
            Action::SpuriousAlarm => {
                self.faults.count(Fault::AlarmSpurious);
                self.alarm(false);
            }
            Action::Reset => {
                self.faults.count(Fault::Reset);
                self.reset();
            }
            Action::Time => self.advance_time(),
        }
    }

    /// The object restarts: claims between phases and every open wait are
    /// gone; their callers see a failed RPC and retry.
    fn reset(&mut self) {
        self.waits.clear();
        for (_, parked) in std::mem::take(&mut self.parked) {
            if let Parked::Events { reader, .. } = parked {
                self.reader_busy[reader] = false;
            }
        }
        for call in &mut self.calls {
            if let Call::Claim { pending, .. } = call {
                *pending = None;
            }
        }
    }

    /// The long-polls the object holds open, as the shell counts them.
    fn open_waits(&self) -> u32 {
        self.waits.open() + self.p.busy_waits
    }

    fn draw_timeout(&mut self) -> WaitMs {
        let ms = *self.rng.pick(&[0, 1, 500, 5_000, WAIT_MS_MAX]);
        WaitMs::parse("timeoutMs", ms as f64).unwrap()
    }

    fn add_inst(&mut self, key: usize) -> usize {
        let idx = self.insts.len();
        let id = id(&format!("i{idx}"));
        self.by_id.insert(id.clone(), idx);
        let max = u64::from(self.p.events_max);
        // Often exactly the most, so logs reach the bound's edge.
        let events_total = if self.rng.percent(30) {
            max
        } else {
            self.rng.range(0, max)
        } as u32;
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

    /// The times at which a rule changes its answer, by the model: a
    /// claim's grace end (and the ms either side), a deletion time (and the
    /// ms before).
    fn boundaries(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for m in &self.model {
            if let Some((_, since)) = &m.claim {
                let end = since + self.p.grace_ms;
                out.extend([end.saturating_sub(1), end, end + 1]);
            }
            if let Some(at) = m.delete_at {
                out.extend([at.saturating_sub(1), at]);
            }
        }
        out.retain(|t| *t > self.now_ms);
        out
    }

    /// Time moves on, but never past an open wait's deadline without its
    /// timer firing: the shell's timers are the runtime's, not a fault.
    fn advance_time(&mut self) {
        let boundaries = self.boundaries();
        let mut to = if !boundaries.is_empty() && self.rng.percent(self.p.boundary_pct) {
            self.stats.boundary_steps += 1;
            *self.rng.pick(&boundaries)
        } else if self.rng.percent(10) {
            self.now_ms + self.rng.range(1, 100_000)
        } else {
            self.now_ms + self.rng.range(1, 2_000)
        };
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

    /// One decision, as the driver makes it: decide on the key's rows (the
    /// input reads the part it needs), apply the writes; the transition's state must be the view
    /// reloaded, and both must keep the invariants. The shell arms the
    /// alarm when the transition says its key needs one.
    fn decide(&mut self, key: usize, input: Input) -> Result<Transition, baton::error::BatonError> {
        assert_invariants(&self.rows[key].load(&input));
        let reload = input.clone();
        let transition = decide(&self.rows[key], self.now_ms, input)?;
        apply(&mut self.rows[key], &transition.writes);
        assert_invariants(&transition.state);
        assert_eq!(
            self.rows[key].load(&reload),
            transition.state,
            "the state a transition says it leaves is not what its writes left"
        );
        if let Alarm::At(_) = transition.alarm {
            self.arm_alarm();
        }
        Ok(transition)
    }

    /// A read-only decision (`events` with no wait): its reply.
    fn read(&mut self, key: usize, after: u64, limit: u32) -> EventsReply {
        let input = Input::Events {
            request: EventsRequest {
                after: After::parse("after", after as f64).unwrap(),
                timeout: WaitMs::ZERO,
                limit: EventLimit::parse("limit", f64::from(limit)).unwrap(),
            },
            open_waits: self.open_waits(),
        };
        match self.decide(key, input).map(|t| t.reply) {
            Ok(Reply::Events(Poll::Answer(slice))) => {
                self.check_slice(key, after, limit, &slice);
                slice
            }
            other => panic!("events answered {other:?}"),
        }
    }

    /// Runs one call's next phase on the object. `heard`: the caller gets
    /// the reply (otherwise it retries the same call later).
    fn advance(&mut self, call: Call, heard: bool) {
        match call {
            Call::Claim { inst, pending } => self.claim(inst, pending, heard),
            Call::Cursor { inst } => {
                let key = self.insts[inst].key;
                let latest = self.read(key, 0, 1).latest_seq;
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
                let input = Input::Await {
                    timeout,
                    open_waits: self.open_waits(),
                };
                let open = self.open_waits();
                match self.decide(key, input).map(|t| t.reply) {
                    Ok(Reply::Await(Poll::Answer(view))) => {
                        // At once only when finished, not waiting, or full.
                        let finished = self.model[key].outcome.is_some();
                        if timeout > WaitMs::ZERO && !finished {
                            assert_eq!(open, OPEN_WAITS_MAX, "an await answered early");
                            self.stats.full_waits += 1;
                        }
                        self.check_view(key, &view);
                    }
                    Ok(Reply::Await(Poll::Park { deadline_ms })) => {
                        assert!(
                            self.model[key].outcome.is_none(),
                            "an await parked on a finished run"
                        );
                        assert!(open < OPEN_WAITS_MAX, "parked past the object's bound");
                        assert_eq!(
                            deadline_ms,
                            self.now_ms + timeout.ms(),
                            "the wait's deadline"
                        );
                        let parked = Parked::Await {
                            key,
                            since_ms: self.now_ms,
                        };
                        self.park(key, WaitFor::Outcome, deadline_ms, parked);
                    }
                    other => panic!("await answered {other:?}"),
                }
            }
            Call::Events {
                key,
                reader,
                request,
            } => {
                let after = request.after.get();
                let limit = request.limit;
                let timeout = request.timeout;
                let open = self.open_waits();
                let input = Input::Events {
                    request,
                    open_waits: self.open_waits(),
                };
                match self.decide(key, input).map(|t| t.reply) {
                    Ok(Reply::Events(Poll::Answer(slice))) => {
                        // At once only with events to read, not waiting, or full.
                        if timeout > WaitMs::ZERO && slice.events.is_empty() {
                            assert_eq!(open, OPEN_WAITS_MAX, "an events call answered early");
                            self.stats.full_waits += 1;
                        }
                        self.check_slice(key, after, limit.get(), &slice);
                        self.reader_got(reader, &slice);
                    }
                    Ok(Reply::Events(Poll::Park { deadline_ms })) => {
                        assert!(
                            self.model[key].latest_seq <= after,
                            "a reader parked with events to read"
                        );
                        assert!(open < OPEN_WAITS_MAX, "parked past the object's bound");
                        assert_eq!(deadline_ms, self.now_ms + request.timeout.ms());
                        let parked = Parked::Events { key, reader, after };
                        self.park(key, WaitFor::Events { after, limit }, deadline_ms, parked);
                    }
                    other => panic!("events answered {other:?}"),
                }
            }
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
        pending: Option<(PendingClaim, Option<Liveness>)>,
        heard: bool,
    ) {
        let key = self.insts[inst].key;
        let me = self.insts[inst].id.clone();
        let retry = Call::Claim {
            inst,
            pending: None,
        };
        let (input, liveness) = match pending {
            None => (
                Input::Claim {
                    request: ClaimRequest {
                        id: me.clone(),
                        workflow: None,
                    },
                    grace_ms: self.p.grace_ms,
                    workflow: BINDING.into(),
                },
                None,
            ),
            Some((pending, None)) => {
                // The check, outside the gate: the binding's answer now.
                let liveness = self.liveness_of(&pending.checked.id);
                self.calls.push(Call::Claim {
                    inst,
                    pending: Some((pending, Some(liveness))),
                });
                return;
            }
            Some((pending, Some(liveness))) => {
                let input = Input::Checked {
                    pending,
                    liveness,
                    through: None,
                };
                (input, Some(liveness))
            }
        };
        // What the contract allows, by the model, before the decision.
        let model = self.model[key].clone();
        let checked_claim = match &input {
            Input::Checked { pending, .. } => Some(pending.checked.clone()),
            _ => None,
        };
        let transition = self.decide(key, input).expect("a claim is never refused");
        let answer = match transition.reply {
            Reply::Checking(pending) => {
                // Only for another claimant's unfinished run, and the check
                // is of that claimant, answering the caller.
                let (holder, since) = model.claim.clone().expect("checking with no claimant");
                assert!(liveness.is_none(), "a second phase asked for another check");
                assert_ne!(holder, me, "asked to check the caller itself");
                assert!(model.outcome.is_none(), "checking a finished run");
                assert_eq!(
                    transition.effects,
                    vec![Check {
                        id: holder.clone(),
                        workflow: BINDING.into(),
                        answers: true,
                    }]
                );
                assert_eq!(
                    (&pending.checked.id, pending.checked.since_ms),
                    (&holder, since)
                );
                self.calls.push(Call::Claim {
                    inst,
                    pending: Some((pending, None)),
                });
                return;
            }
            Reply::Claim { answer, .. } => answer,
            other => panic!("claim answered {other:?}"),
        };
        assert!(
            transition.effects.is_empty(),
            "a settled claim asked for effects"
        );
        // The one answer the contract gives, by the model.
        let replaced = match (&checked_claim, liveness, &model.claim) {
            (Some(checked), Some(liveness), Some((holder, since)))
                if model.outcome.is_none()
                    && checked.id == *holder
                    && checked.since_ms == *since =>
            {
                if self.now_ms == since + self.p.grace_ms && liveness == Liveness::NotFound {
                    self.stats.checks_at_grace_end += 1;
                }
                model.dead(liveness, self.now_ms, self.p.grace_ms)
            }
            _ => false,
        };
        let expected = match &model.claim {
            None => ClaimReply::Claimed,
            Some(_) if replaced => ClaimReply::Claimed,
            Some((holder, _)) if *holder == me => ClaimReply::Claimed,
            Some((holder, _)) => ClaimReply::Taken(RunView {
                id: holder.clone(),
                outcome: model.outcome.clone(),
            }),
        };
        assert_eq!(answer, expected, "the claim's answer");
        // §9 by the oracle's rule: the caller claimed (routine) or joined
        // another's run (contended), and what a check of the claimant found.
        let (decision, kind) = match &expected {
            ClaimReply::Claimed => ("claimed", LogKind::Routine),
            ClaimReply::Taken(_) => ("taken", LogKind::Contended),
        };
        let reason = match (&checked_claim, liveness) {
            (Some(checked), Some(liveness)) => {
                let found = match liveness {
                    Liveness::Alive => "Alive",
                    Liveness::Dead => "Ended",
                    Liveness::NotFound => "NotFound",
                    Liveness::Unknown => "Unknown",
                };
                let replaced = if replaced { "; replaced" } else { "" };
                format!("claimant {} checked: {found}{replaced}", checked.id)
            }
            _ => "decided without a check".to_string(),
        };
        assert_eq!(
            said(&transition.log),
            vec![line(kind, Some(&me), decision, reason)],
            "LOG: the claim's line"
        );
        if replaced {
            match liveness {
                Some(Liveness::Dead) => self.stats.replaced_ended += 1,
                _ => self.stats.replaced_not_found += 1,
            }
        } else if liveness == Some(Liveness::NotFound) {
            self.stats.kept_in_grace += 1;
        }
        self.stats.claims += 1;
        let m = &mut self.model[key];
        if model.claim.is_none() || replaced {
            // The caller claims now; the log carries on.
            m.claim = Some((me.clone(), self.now_ms));
        }
        self.reply(heard, retry, |sim| sim.starter_heard(inst, answer));
    }

    /// What the Workflow binding says about `who` now.
    fn liveness_of(&mut self, who: &InstanceId) -> Liveness {
        if self.faults.strikes(&mut self.rng, Fault::StatusUnknown) {
            return Liveness::Unknown;
        }
        self.insts[self.by_id[who]].life.status()
    }

    fn starter_heard(&mut self, inst: usize, reply: ClaimReply) {
        let me = &self.insts[inst];
        if me.life != Life::NotCreated || me.create_at.is_some() {
            return; // a retried claim whose first reply was acted on
        }
        match reply {
            ClaimReply::Claimed => {
                self.insts[inst].claimed = true;
                let delay = if self.faults.strikes(&mut self.rng, Fault::InstanceDies) {
                    // The starter crashed before creating it.
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
        let found = self
            .read(key, cursor, 1)
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
                let data = format!("[\"{me_id}\",{n}]");
                let request = AppendRequest {
                    id: me_id.clone(),
                    kind: EventType::parse("type", "progress").unwrap(),
                    data: Some(JsonText::event_data(data.clone()).unwrap()),
                };
                let claimant = self.model[key].claim.as_ref().map(|c| c.0.clone());
                let decided = self.decide(key, Input::Append(request));
                match decided.map(|t| t.reply) {
                    Ok(Reply::Append(seq)) => {
                        assert_eq!(
                            claimant,
                            Some(me_id.clone()),
                            "an append from a non-claimant"
                        );
                        self.stats.appends += 1;
                        let m = &mut self.model[key];
                        assert_eq!(seq, m.latest_seq + 1, "an event's seq is not the next");
                        m.latest_seq = seq;
                        m.kept.push_back((seq, Some(data)));
                        while m.kept.len() as u64 > KEPT {
                            m.kept.pop_front();
                        }
                        if seq > KEPT {
                            self.stats.forgotten += 1;
                        }
                        if seq == KEPT {
                            self.stats.full_logs += 1;
                        }
                        self.wake_readers(key, seq);
                        Ok(seq)
                    }
                    Ok(other) => panic!("append answered {other:?}"),
                    Err(error) => {
                        assert_eq!(error.field(), "instanceId");
                        assert_ne!(
                            claimant,
                            Some(me_id.clone()),
                            "the claimant's append refused"
                        );
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
                    me.life = Life::Ended(End::Errored);
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
        // Recorded only from the claimant of a run with no outcome yet.
        let m = &self.model[key];
        let records = m.claim.as_ref().is_some_and(|c| c.0 == me_id) && m.outcome.is_none();
        let input = Input::Complete {
            request,
            retention_ms: self.p.retention_ms,
        };
        let transition = self.decide(key, input).expect("complete is never refused");
        // §9 by the oracle's rule: recorded (routine) or refused (contended).
        let said = match records {
            true => line(
                LogKind::Routine,
                Some(&me_id),
                "completed",
                "outcome recorded",
            ),
            false => line(
                LogKind::Contended,
                Some(&me_id),
                "ignored",
                "not the claimant of an unfinished run",
            ),
        };
        assert_eq!(
            common::said(&transition.log),
            vec![said],
            "LOG: the completion's line"
        );
        let reply = transition.reply;
        let Reply::Complete(view) = reply else {
            panic!("complete answered {reply:?}");
        };
        if records {
            let view = view.expect("the claimant's outcome was not recorded");
            assert_eq!(view.id, me_id);
            assert_eq!(view.outcome.as_ref(), Some(&outcome));
            self.stats.outcomes += 1;
            let m = &mut self.model[key];
            m.recorded += 1;
            m.outcome = Some(outcome);
            m.delete_at = Some(self.now_ms + self.p.retention_ms);
            self.wake_awaiters(key, &view);
        } else {
            assert_eq!(view, None, "an outcome recorded that the contract refuses");
            self.stats.complete_retries += 1;
        }
        self.reply(heard, Call::Complete { inst }, |sim| {
            let me = &mut sim.insts[inst];
            me.script = Script::Done;
            me.busy = false;
            me.life = Life::Ended(End::Complete);
        });
    }

    /// The earliest deletion time the rows hold: what the shell's query
    /// (`next_deletion_ms`) reads.
    fn stored_deletion(&self, key: usize) -> Option<u64> {
        match self.rows[key].run() {
            Run::Finished { finished, .. } => Some(finished.delete_at_ms),
            Run::Unclaimed | Run::Running { .. } => None,
        }
    }

    /// The shell arms the alarm after a commit that needs one, at the
    /// earliest deletion of any key.
    fn arm_alarm(&mut self) {
        let next = (0..self.rows.len())
            .filter_map(|k| self.stored_deletion(k))
            .min();
        if next != self.alarm_at {
            self.alarm_at = next;
            // The platform runs it at that time or (a fault) later.
            self.alarm_fires_at = next.map(|t| {
                let mut late = if self.faults.on() && self.p.late_alarm_ms_max > 0 {
                    self.rng.range(0, self.p.late_alarm_ms_max)
                } else {
                    0
                };
                if late > 0 {
                    self.faults.count(Fault::AlarmLate);
                }
                if self.faults.strikes(&mut self.rng, Fault::AlarmLost) {
                    // Not delivered; the platform retries it a while later.
                    late += ALARM_RETRY_MS;
                }
                t + late
            });
        }
    }

    /// The alarm: the keys the rows say are due are ticked (a spurious
    /// alarm ticks every key: a tick must be a no-op when nothing is due).
    fn alarm(&mut self, armed: bool) {
        if armed {
            self.alarm_at = None;
            self.alarm_fires_at = None;
        }
        for k in 0..self.keys.len() {
            let due = self.stored_deletion(k).is_some_and(|at| at <= self.now_ms);
            if !due && armed {
                continue;
            }
            let expected = self.model[k].delete_at.is_some_and(|at| at <= self.now_ms);
            let transition = self
                .decide(k, Input::Tick)
                .expect("a tick is never refused");
            let deleted = line(LogKind::Routine, None, "deleted", "retention over");
            assert_eq!(
                said(&transition.log),
                if expected { vec![deleted] } else { Vec::new() },
                "LOG: a deletion's line, and only a deletion's"
            );
            match transition.reply {
                Reply::Expired(deleted) => {
                    assert_eq!(
                        deleted, expected,
                        "deletion at {} (due {:?})",
                        self.now_ms, self.model[k].delete_at
                    )
                }
                other => panic!("tick answered {other:?}"),
            }
            if expected {
                self.stats.deletions += 1;
                self.note(|| format!("deleted key {k}"));
                self.model[k] = Model::default();
                self.readers[k] = 0;
            }
        }
        // A duplicate delivery runs the handler again: a no-op by construction.
        if armed && self.faults.strikes(&mut self.rng, Fault::AlarmDuplicate) {
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

    /// Answers the awaiters a recorded outcome wakes, with its view.
    fn wake_awaiters(&mut self, key: usize, view: &RunView) {
        for (wait_id, _) in self.waits.woken_by_outcome(&self.keys[key]) {
            self.stats.woken += 1;
            match self.parked.remove(&wait_id).expect("a parked caller") {
                Parked::Await { key: k, .. } => {
                    assert_eq!(k, key);
                    self.check_view(key, &Some(view.clone()));
                }
                other => panic!("an outcome woke {other:?}"),
            }
        }
    }

    /// Answers the readers event `seq` wakes, each reading as the shell
    /// does in the commit's turn.
    fn wake_readers(&mut self, key: usize, seq: u64) {
        for (wait_id, wait) in self.waits.woken_by_event(&self.keys[key], seq) {
            self.stats.woken += 1;
            let parked = self.parked.remove(&wait_id).expect("a parked caller");
            match (parked, wait.on) {
                (
                    Parked::Events {
                        key: k,
                        reader,
                        after,
                    },
                    WaitFor::Events { limit, .. },
                ) => {
                    assert_eq!(k, key);
                    assert!(after < seq);
                    let slice = self.rows[key].read_events(after, limit.get());
                    assert!(!slice.events.is_empty(), "woken with nothing to read");
                    self.check_slice(key, after, limit.get(), &slice);
                    self.reader_got(reader, &slice);
                }
                other => panic!("an event woke {other:?}"),
            }
        }
    }

    /// A wait's timer fired: it answers with the rows as they are.
    fn answer_timer(&mut self, wait_id: WaitId, wait: Wait) {
        assert!(wait.deadline_ms <= self.now_ms);
        let parked = self.parked.remove(&wait_id).expect("a parked caller");
        match (parked, wait.on) {
            (Parked::Await { key, since_ms }, WaitFor::Outcome) => {
                assert!(since_ms < self.now_ms);
                let view = match self.rows[key].run() {
                    Run::Unclaimed => None,
                    Run::Running { claim } => Some(RunView {
                        id: claim.id,
                        outcome: None,
                    }),
                    Run::Finished { claim, finished } => Some(RunView {
                        id: claim.id,
                        outcome: Some(finished.outcome),
                    }),
                };
                self.check_view(key, &view);
            }
            (Parked::Events { key, reader, after }, WaitFor::Events { limit, .. }) => {
                let slice = self.rows[key].read_events(after, limit.get());
                self.check_slice(key, after, limit.get(), &slice);
                self.reader_got(reader, &slice);
            }
            other => panic!("mismatched wait: {other:?}"),
        }
    }

    /// An await's answer is the run as the model has it.
    fn check_view(&self, key: usize, view: &Option<RunView>) {
        assert_eq!(*view, self.model[key].view(), "an await's answer");
    }

    /// An `events` answer is exactly the model's log after `after`.
    fn check_slice(&self, key: usize, after: u64, limit: u32, slice: &EventsReply) {
        let (events, latest, first) = self.model[key].events(after, limit);
        let got: Vec<(u64, Option<String>)> = slice
            .events
            .iter()
            .map(|e| (e.seq, e.data.as_ref().map(|d| d.as_str().to_owned())))
            .collect();
        assert_eq!(got, events, "the events after {after} (limit {limit})");
        assert_eq!(slice.latest_seq, latest, "latestSeq");
        assert_eq!(slice.first_seq, first, "firstSeq");
    }

    fn reader_got(&mut self, reader: usize, reply: &EventsReply) {
        if let Some(last) = reply.events.last() {
            self.readers[reader] = last.seq;
        } else if reply.latest_seq < self.readers[reader] {
            // The record was deleted and a new log began.
            self.readers[reader] = 0;
        }
        self.reader_busy[reader] = false;
    }

    // --- checks ------------------------------------------------------------

    /// The rows against the model, after every step.
    fn check_step(&mut self) {
        for k in 0..self.keys.len() {
            let rows = &self.rows[k];
            let m = &self.model[k];
            let run = rows.run();
            // One claimant at a time: it changes only as the model allowed.
            assert_eq!(
                run.claim().map(|c| (c.id.clone(), c.since_ms)),
                m.claim,
                "the claimant"
            );
            // An outcome once, never changed.
            assert!(m.recorded <= 1, "an outcome recorded twice");
            match &run {
                Run::Finished { finished, .. } => {
                    assert_eq!(Some(&finished.outcome), m.outcome.as_ref(), "the outcome");
                    assert_eq!(
                        Some(finished.delete_at_ms),
                        m.delete_at,
                        "the deletion time"
                    );
                    assert_eq!(Some(finished.at_ms + self.p.retention_ms), m.delete_at);
                }
                _ => assert!(m.outcome.is_none(), "an outcome vanished"),
            }
            // Retention: nothing finished outlives its time past a fired alarm.
            if let Some(at) = m.delete_at {
                assert!(
                    self.alarm_at.is_some_and(|a| a <= at),
                    "no alarm armed for a deletion at {at}"
                );
            }
            // No gap, no reuse: the rows' log is the model's.
            assert_eq!(rows.latest_seq(), m.latest_seq, "the sequence");
            let kept: Vec<(u64, Option<String>)> = rows
                .kept()
                .map(|e| (e.seq, e.data.as_ref().map(|d| d.as_str().to_owned())))
                .collect();
            assert!(
                kept.iter().eq(m.kept.iter()),
                "the kept log: {} kept, model {}",
                kept.len(),
                m.kept.len()
            );
            // Each reported event is in the log at most once.
            let mut reported: Vec<&str> = kept.iter().filter_map(|e| e.1.as_deref()).collect();
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
                    self.model[k].outcome.is_none(),
                    "an awaiter still waits on a finished run"
                ),
                WaitFor::Events { after, .. } => assert!(
                    after >= self.model[k].latest_seq,
                    "a reader still waits with events to read"
                ),
            }
        }
        assert_eq!(self.waits.open() as usize, self.parked.len());
        // The alarm is armed for the earliest deletion, by the model.
        let due = self.model.iter().filter_map(|m| m.delete_at).min();
        assert_eq!(self.alarm_at, due, "retention alarm not armed as needed");
    }
}

// ---------------------------------------------------------------------------
// Running it.

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    let result = catch_unwind(AssertUnwindSafe(|| sim.run()));
    if let Err(panic) = result {
        report_failure("runs_sim", sim.seed, sim.stats.steps);
        eprintln!("at t={}", sim.now_ms);
        resume_unwind(panic);
    }
    sim.stats.faults = sim.faults.injected;
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
            (
                "checks decided exactly at the grace's end",
                t.checks_at_grace_end,
            ),
            ("outcomes", t.outcomes),
            ("appends", t.appends),
            ("logs reaching exactly the kept bound", t.full_logs),
            (
                "retried reports that found their event",
                t.report_retries_found,
            ),
            ("completes that recorded nothing", t.complete_retries),
            ("events forgotten", t.forgotten),
            ("waits parked", t.parked),
            ("waits woken", t.woken),
            ("waits expired", t.expired),
            ("waits answered at once at the bound", t.full_waits),
            ("deletions", t.deletions),
            ("time steps onto a boundary", t.boundary_steps),
        ]);
        t.faults.assert_injected(&[
            Fault::InstanceDies,
            Fault::Reset,
            Fault::ResetAfterCommit,
            Fault::ReplyLost,
            Fault::AlarmLate,
            Fault::AlarmLost,
            Fault::AlarmSpurious,
            Fault::AlarmDuplicate,
            Fault::StatusUnknown,
        ]);
    }
}

/// A decision-log line as the oracle expects it.
fn line(
    kind: LogKind,
    instance: Option<&InstanceId>,
    decision: &'static str,
    reason: impl Into<String>,
) -> Said {
    Said {
        kind,
        instance: instance.cloned(),
        decision,
        reason: reason.into(),
        waited_ms: None,
    }
}
