//! A seeded, deterministic simulation of the Coordinator core (contract §1).
//!
//! The real decision functions run over a [`MemoryKeyStore`] against three
//! models: the Workflow engine (instances that are not yet created, running,
//! complete, terminated or errored), the Durable Object shell (the two-phase
//! RPCs, the bounded wake loop, best-effort terminations, the holder-check
//! alarm) and the callers (`withKey`: acquire, wait for the turn event with a
//! timeout, body, release, or give up waiting and release as a waiter; and
//! triggers that `enqueue` an id, plain,
//! superseding or coalescing on a small set of input hashes, then create the
//! instance soon, late or never).
//!
//! Every RPC is several scheduler steps: phase 1, the status check (which
//! samples the engine at a later step), phase 2 at a later step still. The
//! scheduler picks at random among everything that is ready, and injects
//! faults: instances killed at any point (before creation, waiting, holding,
//! in the body), object resets that abandon everything in flight (callers
//! retry, as a Workflow step does), callers that give up on an RPC the object
//! still finishes, lost and duplicate turn events, `Unknown` status answers,
//! late and spurious alarms, lost terminations, wake loops cut short.
//!
//! Checked after every step: the core's `assert_invariants`; safety (a live
//! instance in its body is the key's holder, so at most one is); and that
//! each decision changed the store only as the contract allows, which is the
//! reference model of the queue: waiters that stay keep their order, only the
//! caller joins and only at the back (FIFO by arrival), the key passes only to
//! the front of the queue, and leaves its holder only when the holder released
//! or was reported dead. At the end of each seed, faults and arrivals stop and
//! the system drains; then every instance must have run its body, been told it
//! was superseded, been coalesced away, or died, and a fresh probe instance
//! must get the key and leave the store empty.
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 1,000,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

mod common;

use common::Rng;

use baton::coordinator::{
    acquire, acquire_after_check, assert_invariants, enqueue, enqueue_after_check,
    holder_found_dead, needs_holder_check, release, tick, tick_after_check, AcquireReply,
    AcquireStep, Decided, EnqueueReply, EnqueueRequest, EnqueueStep, Holder, HolderState, KeyStore,
    Liveness, MemoryKeyStore, TickStep,
};
use baton::ident::{InputHash, InstanceId};
use baton::limits::{HOLDER_CHECK_MS_DEFAULT, WAKE_ATTEMPTS_PER_CALL_MAX};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Total scheduler steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 1_000_000;
/// Steps with faults and arrivals per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 2_500;
/// A drain that takes longer than this is a liveness failure: drains take a
/// few hundred steps (the longest in 50 million steps of runs took 1,181).
const DRAIN_STEPS_MAX: u64 = 20_000;
/// Attempts of one RPC by a Workflow step before the step (and the
/// instance) fails: the Workflows default is 5 retries.
const RPC_ATTEMPTS_MAX: u32 = 6;
/// How soon the platform retries an alarm whose handler did not finish.
const ALARM_RETRY_MS: u64 = 1_000;
/// Weight of an ordinary ready action (faults are weighted against this).
const W: u64 = 100;

// ---------------------------------------------------------------------------
// The model: instances, in-flight work, and how a seed behaves.

/// An instance's lifecycle in the model Workflow engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    /// Registered (or about to be) but not created: the binding says "not found".
    NotCreated,
    Running,
    Complete,
    Terminated,
    Errored,
}

/// Where the instance's code (or, before creation, its trigger) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// The trigger's `enqueue` is in flight.
    Enqueuing,
    /// Registered; the trigger creates the instance at `create_at`.
    Registered,
    /// Running; the next step calls `acquire`.
    Ready,
    Acquiring,
    /// In `step.waitForEvent` for the turn event.
    Waiting {
        deadline_ms: u64,
    },
    InBody {
        steps_left: u64,
    },
    Releasing,
    /// Gave up waiting: releasing (as a waiter), then the instance errors.
    GivingUp,
    /// Released the key; other work before the instance completes.
    After {
        steps_left: u64,
    },
    /// Nothing more will happen: complete, coalesced, or given up on.
    Done,
}

#[derive(Debug)]
struct Inst {
    id: InstanceId,
    life: Life,
    script: Script,
    /// When the trigger creates a registered instance.
    create_at: Option<u64>,
    /// The trigger will never create it (it crashed, gave up, or coalesced).
    abandoned: bool,
    /// Between a "granted" it heard and the start of its release.
    in_body: bool,
    /// Turn events delivered while not waiting; `waitForEvent` consumes them.
    inbox: u32,
    ran: bool,
    told_superseded: bool,
    coalesced: bool,
}

#[derive(Debug, Clone)]
enum OpKind {
    /// A trigger's `enqueue` for the instance `Op::caller`.
    Enqueue(EnqueueRequest),
    Acquire,
    Release,
    /// The shell waking a new holder; `attempts` counts status checks so far.
    Wake {
        attempts: u32,
    },
    /// The holder-check alarm.
    Tick,
    /// The shell terminating superseded instances, after the commit.
    Terminate(Vec<usize>),
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Start,
    /// Waiting for the status of this instance.
    Check(usize),
    /// Status known; phase 2 not yet run.
    Checked(usize, Liveness),
}

#[derive(Debug, Clone)]
struct Op {
    kind: OpKind,
    phase: Phase,
    /// The instance whose call (or trigger) awaits the reply; `None` for the
    /// object's own work.
    caller: Option<usize>,
    /// The caller gave up on this call and retried; the object still runs it,
    /// but nobody hears the reply.
    orphan: bool,
    attempt: u32,
    checked: Option<Holder>,
}

impl Op {
    fn shell(kind: OpKind, phase: Phase) -> Op {
        Op {
            kind,
            phase,
            caller: None,
            orphan: false,
            attempt: 1,
            checked: None,
        }
    }

    fn call(kind: OpKind, caller: usize, attempt: u32) -> Op {
        Op {
            kind,
            phase: Phase::Start,
            caller: Some(caller),
            orphan: false,
            attempt,
            checked: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Arrive,
    Advance(usize),
    DropOp(usize),
    Detach(usize),
    Deliver(usize),
    Instance(usize),
    Create(usize),
    Kill(usize),
    FireAlarm,
    SpuriousAlarm,
    Reset,
    AdvanceTime,
}

/// How one seed behaves; drawn from the seed. Weights are against [`W`].
#[derive(Debug)]
struct Params {
    /// Arrivals stop at this many instances...
    instances_max: usize,
    /// ...and pause while this many are live or about to be created, so the
    /// key stays busy for the whole faulty stretch.
    live_max: usize,
    arrive_w: u64,
    time_w: u64,
    enqueue_pct: u64,
    supersedes_pct: u64,
    hash_pct: u64,
    hashes: u64,
    long_delay_pct: u64,
    wait_timeout_ms_max: u64,
    /// A timed-out waiter gives up (its `withKey` throws): it releases, as a
    /// waiter, and the instance errors.
    give_up_pct: u64,
    /// The shell's bound on one wake loop: the real one, or tiny so that
    /// loops are cut short and the alarm must finish the job.
    wake_attempts_max: u32,
    never_create_pct: u64,
    kill_w: u64,
    reset_w: u64,
    drop_w: u64,
    detach_w: u64,
    spurious_alarm_w: u64,
    event_lost_pct: u64,
    event_dup_pct: u64,
    unknown_pct: u64,
    terminate_lost_pct: u64,
}

impl Params {
    fn draw(rng: &mut Rng) -> Params {
        // One seed in eight runs without faults: the plain protocol must work too.
        let faulty = rng.below(8) != 0;
        let mut fault = |hi: u64| if faulty { rng.range(0, hi) } else { 0 };
        let (never_create_pct, kill_w, reset_w, drop_w, detach_w, spurious_alarm_w) =
            (fault(15), fault(4), fault(3), fault(2), fault(2), fault(4));
        let (event_lost_pct, event_dup_pct, unknown_pct, terminate_lost_pct) =
            (fault(40), fault(30), fault(30), fault(60));
        Params {
            instances_max: rng.range(2, 200) as usize,
            live_max: rng.range(1, 16) as usize,
            arrive_w: rng.range(5, 40),
            time_w: rng.range(20, 120),
            enqueue_pct: [0, 30, 70, 100][rng.below(4) as usize],
            supersedes_pct: rng.range(0, 100),
            hash_pct: rng.range(0, 100),
            hashes: rng.range(1, 3),
            long_delay_pct: rng.range(0, 30),
            wait_timeout_ms_max: rng.range(1_000, 60_000),
            give_up_pct: [0, 0, 5, 20][rng.below(4) as usize],
            wake_attempts_max: if rng.below(2) == 0 {
                WAKE_ATTEMPTS_PER_CALL_MAX
            } else {
                rng.range(1, 3) as u32
            },
            never_create_pct,
            kill_w,
            reset_w,
            drop_w,
            detach_w,
            spurious_alarm_w,
            event_lost_pct,
            event_dup_pct,
            unknown_pct,
            terminate_lost_pct,
        }
    }
}

/// Counts of what the runs exercised, so a change that makes the simulation
/// stop reaching a path shows up as a failed coverage check.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    seeds: u64,
    steps: u64,
    granted: u64,
    superseded: u64,
    coalesced: u64,
    /// The key moved because a holder was reported dead.
    dead_handoffs: u64,
    wake_loops_cut: u64,
    kills: u64,
    resets: u64,
    detaches: u64,
    unknowns: u64,
    lost_events: u64,
    duplicate_events: u64,
    spurious_alarms: u64,
    /// The longest drain seen, against [`DRAIN_STEPS_MAX`].
    drain_steps_max: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
        self.steps += o.steps;
        self.granted += o.granted;
        self.superseded += o.superseded;
        self.coalesced += o.coalesced;
        self.dead_handoffs += o.dead_handoffs;
        self.wake_loops_cut += o.wake_loops_cut;
        self.kills += o.kills;
        self.resets += o.resets;
        self.detaches += o.detaches;
        self.unknowns += o.unknowns;
        self.lost_events += o.lost_events;
        self.duplicate_events += o.duplicate_events;
        self.spurious_alarms += o.spurious_alarms;
        self.drain_steps_max = self.drain_steps_max.max(o.drain_steps_max);
    }
}

/// The key's state as the reference checks compare it, before and after a decision.
#[derive(Debug, Clone, PartialEq)]
struct Snap {
    holder: Option<Holder>,
    queue: Vec<InstanceId>,
}

/// What one decision was allowed to do to the key.
struct Allowed<'a> {
    /// May join the back of the queue, leave it, take a free key or confirm a hand-over.
    caller: Option<&'a InstanceId>,
    /// Waiters this decision reported as superseded.
    dropped: &'a [InstanceId],
    /// The holder that released, or that this decision was told is dead.
    take_from: Option<&'a InstanceId>,
}

// ---------------------------------------------------------------------------
// The simulation.

struct Sim {
    seed: u64,
    rng: Rng,
    p: Params,
    now_ms: u64,
    store: MemoryKeyStore,
    insts: Vec<Inst>,
    by_id: HashMap<InstanceId, usize>,
    ops: Vec<Op>,
    /// Turn events in flight, by target.
    events: Vec<usize>,
    alarm_at: Option<u64>,
    /// Every instance some enqueue reported as superseded.
    superseded: HashSet<usize>,
    faults: bool,
    arrivals: bool,
    trace: bool,
    stats: Stats,
    candidates: Vec<(u64, Action)>,
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed);
        let p = Params::draw(&mut rng);
        if trace {
            eprintln!("seed {seed}: {p:?}");
        }
        Sim {
            seed,
            rng,
            p,
            now_ms: 1_000_000,
            store: MemoryKeyStore::default(),
            insts: Vec::new(),
            by_id: HashMap::new(),
            ops: Vec::new(),
            events: Vec::new(),
            alarm_at: None,
            superseded: HashSet::new(),
            faults: true,
            arrivals: true,
            trace,
            stats: Stats::default(),
            candidates: Vec::new(),
        }
    }

    /// One seed: a faulty stretch, a drain, the end checks, then the probe.
    fn run(&mut self) {
        for _ in 0..FAULT_STEPS_PER_SEED {
            self.step();
        }
        self.faults = false;
        self.arrivals = false;
        self.note(|| "--- faults and arrivals stop; draining".into());
        self.drain();
        self.check_end();
        self.note(|| "--- probe".into());
        let probe = self.add_instance(Life::Running, Script::Ready);
        self.drain();
        assert!(self.insts[probe].ran, "the probe never got the key");
        assert_eq!(
            self.snap(),
            Snap {
                holder: None,
                queue: Vec::new()
            },
            "the probe left the key in use"
        );
        self.stats.seeds = 1;
    }

    fn drain(&mut self) {
        let start = self.stats.steps;
        while !self.quiescent() {
            assert!(
                self.stats.steps - start < DRAIN_STEPS_MAX,
                "no quiescence after {DRAIN_STEPS_MAX} drain steps (liveness)"
            );
            assert!(self.step(), "stuck: nothing can happen, yet work is left");
        }
        let took = self.stats.steps - start;
        self.stats.drain_steps_max = self.stats.drain_steps_max.max(took);
    }

    fn quiescent(&self) -> bool {
        self.ops.is_empty()
            && self.events.is_empty()
            && !needs_holder_check(&self.store)
            && self.insts.iter().all(|i| match i.life {
                Life::Running => false,
                Life::NotCreated => i.abandoned,
                _ => true,
            })
    }

    /// After the drain, every instance is accounted for, and nothing is left
    /// that only the alarm could clear. Leftovers are allowed only as dead
    /// ids: a holder that died holding with nobody waiting, or waiters queued
    /// on a free key that died (or were never created) before acquiring. The
    /// core clears those at the next `acquire`, which the probe checks.
    fn check_end(&self) {
        for inst in &self.insts {
            let dead = matches!(inst.life, Life::Terminated | Life::Errored)
                || (inst.life == Life::NotCreated && inst.abandoned && !inst.coalesced);
            assert!(
                inst.ran || inst.told_superseded || inst.coalesced || dead,
                "{} neither ran, was superseded, coalesced, nor died: {inst:?}",
                inst.id
            );
            if inst.coalesced {
                assert_eq!(inst.life, Life::NotCreated, "{} was coalesced", inst.id);
            }
            if inst.life == Life::Complete {
                assert!(
                    inst.ran || inst.told_superseded,
                    "{} completed early",
                    inst.id
                );
            }
        }
        // Nothing live is left, so no instance is stuck waiting, and the
        // leftovers (all dead) are not work for the alarm.
        assert!(self.insts.iter().all(|i| i.life != Life::Running));
        let left = self.snap();
        if let Some(holder) = &left.holder {
            assert!(
                holder.state == HolderState::Holding && left.queue.is_empty(),
                "left a hand-over or waiters behind a dead holder: {left:?}"
            );
        }
        assert!(!needs_holder_check(&self.store));
    }

    // --- the scheduler -----------------------------------------------------

    /// Runs one action and checks everything; false if nothing could happen.
    fn step(&mut self) -> bool {
        self.stats.steps += 1;
        let mut cands = std::mem::take(&mut self.candidates);
        cands.clear();
        self.collect_candidates(&mut cands);
        let action = if cands.is_empty() {
            None
        } else {
            cands.push((self.p.time_w, Action::AdvanceTime));
            let total: u64 = cands.iter().map(|c| c.0).sum();
            let mut r = self.rng.below(total);
            let mut chosen = cands[0].1;
            for &(w, a) in &cands {
                if r < w {
                    chosen = a;
                    break;
                }
                r -= w;
            }
            Some(chosen)
        };
        self.candidates = cands;
        match action {
            Some(a) => self.act(a),
            None if self.jump_to_next_timer() => {}
            None => return false,
        }
        self.check_step();
        true
    }

    fn collect_candidates(&self, c: &mut Vec<(u64, Action)>) {
        let now = self.now_ms;
        let f = self.faults;
        let mut push = |w: u64, a: Action| {
            if w > 0 {
                c.push((w, a));
            }
        };
        for (i, op) in self.ops.iter().enumerate() {
            push(W, Action::Advance(i));
            if f {
                push(self.p.drop_w, Action::DropOp(i));
                if op.caller.is_some() && !op.orphan {
                    push(self.p.detach_w, Action::Detach(i));
                }
            }
        }
        for e in 0..self.events.len() {
            push(W, Action::Deliver(e));
        }
        let mut live = 0;
        for (i, inst) in self.insts.iter().enumerate() {
            match inst.life {
                Life::Running => {
                    live += 1;
                    let ready = match inst.script {
                        Script::Ready | Script::InBody { .. } | Script::After { .. } => true,
                        Script::Waiting { deadline_ms } => deadline_ms <= now,
                        _ => false,
                    };
                    if ready {
                        push(W, Action::Instance(i));
                    }
                    if f {
                        push(self.p.kill_w, Action::Kill(i));
                    }
                }
                Life::NotCreated if !inst.abandoned => {
                    live += 1;
                    if inst.create_at.is_some_and(|t| t <= now) {
                        push(W, Action::Create(i));
                    }
                    if f {
                        push(self.p.kill_w, Action::Kill(i));
                    }
                }
                _ => {}
            }
        }
        if self.arrivals && self.insts.len() < self.p.instances_max && live < self.p.live_max {
            push(self.p.arrive_w, Action::Arrive);
        }
        if self.alarm_at.is_some_and(|t| t <= now) {
            push(W, Action::FireAlarm);
        }
        if f {
            push(self.p.spurious_alarm_w, Action::SpuriousAlarm);
            push(self.p.reset_w, Action::Reset);
        }
    }

    /// Moves time to the next deadline, creation or alarm; false if there is none.
    fn jump_to_next_timer(&mut self) -> bool {
        let waits = self.insts.iter().filter_map(|i| match (i.life, i.script) {
            (Life::Running, Script::Waiting { deadline_ms }) => Some(deadline_ms),
            _ => None,
        });
        let creations = self
            .insts
            .iter()
            .filter(|i| i.life == Life::NotCreated && !i.abandoned)
            .filter_map(|i| i.create_at);
        match waits.chain(creations).chain(self.alarm_at).min() {
            Some(t) => {
                self.now_ms = self.now_ms.max(t);
                self.note(|| "time jumps to the next timer".into());
                true
            }
            None => false,
        }
    }

    fn act(&mut self, action: Action) {
        self.note(|| format!("{action:?}"));
        match action {
            Action::Arrive => self.arrive(),
            Action::Advance(i) => self.advance(i),
            Action::DropOp(i) => {
                let op = self.ops.swap_remove(i);
                self.abandon(op);
            }
            Action::Detach(i) => {
                // The caller's RPC failed on its side; the object carries on.
                self.stats.detaches += 1;
                self.ops[i].orphan = true;
                let op = self.ops[i].clone();
                self.retry(op);
            }
            Action::Deliver(e) => {
                let target = self.events.swap_remove(e);
                self.deliver(target);
            }
            Action::Instance(i) => self.instance_step(i),
            Action::Create(i) => {
                let inst = &mut self.insts[i];
                inst.life = Life::Running;
                inst.script = Script::Ready;
                inst.create_at = None;
            }
            Action::Kill(i) => {
                self.stats.kills += 1;
                let erred = self.rng.below(2) == 0;
                let inst = &mut self.insts[i];
                if inst.life == Life::Running {
                    inst.life = if erred {
                        Life::Errored
                    } else {
                        Life::Terminated
                    };
                } else {
                    // The trigger crashed before creating it.
                    inst.abandoned = true;
                    inst.create_at = None;
                    inst.script = Script::Done;
                }
            }
            Action::FireAlarm => {
                self.alarm_at = None;
                self.ops.push(Op::shell(OpKind::Tick, Phase::Start));
            }
            Action::SpuriousAlarm => {
                self.stats.spurious_alarms += 1;
                self.ops.push(Op::shell(OpKind::Tick, Phase::Start));
            }
            Action::Reset => {
                // The object restarts: everything in flight is gone.
                self.stats.resets += 1;
                for op in std::mem::take(&mut self.ops) {
                    self.abandon(op);
                }
            }
            Action::AdvanceTime => self.now_ms += self.rng.range(1, 2_000),
        }
    }

    fn arrive(&mut self) {
        if !self.rng.percent(self.p.enqueue_pct) {
            self.add_instance(Life::Running, Script::Ready);
            return;
        }
        let supersedes = self.rng.percent(self.p.supersedes_pct);
        let input_hash = self
            .rng
            .percent(self.p.hash_pct)
            .then(|| hash(&format!("h{}", self.rng.below(self.p.hashes))));
        let who = self.add_instance(Life::NotCreated, Script::Enqueuing);
        let request = EnqueueRequest {
            supersedes,
            id: self.insts[who].id.clone(),
            input_hash,
        };
        self.ops.push(Op::call(OpKind::Enqueue(request), who, 1));
    }

    fn add_instance(&mut self, life: Life, script: Script) -> usize {
        let idx = self.insts.len();
        let id = id(&format!("i{idx}"));
        self.by_id.insert(id.clone(), idx);
        self.insts.push(Inst {
            id,
            life,
            script,
            create_at: None,
            abandoned: false,
            in_body: false,
            inbox: 0,
            ran: false,
            told_superseded: false,
            coalesced: false,
        });
        idx
    }

    /// One step of a running instance's `withKey` code.
    fn instance_step(&mut self, i: usize) {
        let inst = &mut self.insts[i];
        match inst.script {
            Script::Ready => {
                inst.script = Script::Acquiring;
                self.ops.push(Op::call(OpKind::Acquire, i, 1));
            }
            Script::Waiting { .. } if self.rng.percent(self.p.give_up_pct) => {
                // withKey throws, and releases on the way out.
                inst.script = Script::GivingUp;
                self.ops.push(Op::call(OpKind::Release, i, 1));
            }
            Script::Waiting { .. } => inst.script = Script::Ready, // timed out: re-check
            Script::InBody { steps_left } if steps_left > 1 => {
                inst.script = Script::InBody {
                    steps_left: steps_left - 1,
                };
            }
            Script::InBody { .. } => {
                inst.in_body = false;
                inst.script = Script::Releasing;
                self.ops.push(Op::call(OpKind::Release, i, 1));
            }
            Script::After { steps_left } if steps_left > 1 => {
                inst.script = Script::After {
                    steps_left: steps_left - 1,
                };
            }
            Script::After { .. } => {
                inst.life = Life::Complete;
                inst.script = Script::Done;
            }
            s => unreachable!("{} has no step in {s:?}", inst.id),
        }
    }

    fn deliver(&mut self, target: usize) {
        let inst = &mut self.insts[target];
        if inst.life != Life::Running {
            return; // sendEvent to a finished or unknown instance goes nowhere
        }
        if let Script::Waiting { .. } = inst.script {
            inst.script = Script::Ready;
        } else {
            inst.inbox += 1; // buffered for its next waitForEvent
        }
    }

    /// `step.waitForEvent`, after a "pending".
    fn wait_for_turn(&mut self, i: usize) {
        let timeout_ms = self.rng.range(500, self.p.wait_timeout_ms_max);
        let inst = &mut self.insts[i];
        if inst.inbox > 0 {
            inst.inbox -= 1;
            inst.script = Script::Ready;
        } else {
            inst.script = Script::Waiting {
                deadline_ms: self.now_ms + timeout_ms,
            };
        }
    }

    // --- in-flight work ------------------------------------------------------

    fn advance(&mut self, i: usize) {
        if let Phase::Check(target) = self.ops[i].phase {
            // The status call, outside the gate: it samples the engine now,
            // and phase 2 runs at some later step.
            let liveness = self.status(target);
            self.ops[i].phase = Phase::Checked(target, liveness);
            self.note(|| format!("  status of i{target} = {liveness:?}"));
            return;
        }
        let op = self.ops.swap_remove(i);
        match op.kind {
            OpKind::Enqueue(_) => self.run_enqueue(op),
            OpKind::Acquire => self.run_acquire(op),
            OpKind::Release => self.run_release(op),
            OpKind::Wake { .. } => self.run_wake(op),
            OpKind::Tick => self.run_tick(op),
            OpKind::Terminate(_) => self.run_terminate(op),
        }
    }

    fn status(&mut self, target: usize) -> Liveness {
        if self.faults && self.rng.percent(self.p.unknown_pct) {
            self.stats.unknowns += 1;
            return Liveness::Unknown;
        }
        match self.insts[target].life {
            Life::Running => Liveness::Alive,
            // Not created yet reads as "not found", which the contract calls dead.
            Life::NotCreated | Life::Complete | Life::Terminated | Life::Errored => Liveness::Dead,
        }
    }

    /// An in-flight op is lost (reset, or its RPC failed): a caller retries
    /// it, an alarm is retried by the platform, the shell's own work is gone
    /// (lost wakes and terminations are what the alarm and timeouts recover).
    fn abandon(&mut self, op: Op) {
        self.note(|| format!("  abandoned {:?} {:?}", op.kind, op.phase));
        match op.kind {
            OpKind::Tick => {
                if self.alarm_at.is_none() {
                    self.alarm_at = Some(self.now_ms + ALARM_RETRY_MS);
                }
            }
            OpKind::Wake { .. } | OpKind::Terminate(_) => {}
            OpKind::Enqueue(_) | OpKind::Acquire | OpKind::Release => {
                if !op.orphan {
                    self.retry(op);
                }
            }
        }
    }

    /// The caller calls the same method again, like a Workflow step retry.
    fn retry(&mut self, op: Op) {
        let who = op.caller.expect("only calls are retried");
        let inst = &mut self.insts[who];
        let caller_alive = match op.kind {
            OpKind::Enqueue(_) => !inst.abandoned,
            _ => inst.life == Life::Running,
        };
        if !caller_alive {
            return;
        }
        if op.attempt >= RPC_ATTEMPTS_MAX {
            // The step fails for good: the trigger gives up, the instance errors.
            match op.kind {
                OpKind::Enqueue(_) => {
                    inst.abandoned = true;
                    inst.script = Script::Done;
                }
                _ => inst.life = Life::Errored,
            }
            return;
        }
        self.ops.push(Op::call(op.kind, who, op.attempt + 1));
    }

    fn run_enqueue(&mut self, mut op: Op) {
        let OpKind::Enqueue(request) = op.kind.clone() else {
            unreachable!()
        };
        let before = self.snap();
        match op.phase {
            Phase::Start => match enqueue(&mut self.store, self.now_ms, &request)
                .expect("the sim stays far below every limit")
            {
                EnqueueStep::Done(reply) => self.enqueued(&before, &op, &request, reply, None),
                EnqueueStep::CheckCandidate(candidate) => {
                    assert_eq!(self.snap(), before, "a check step wrote");
                    op.phase = Phase::Check(self.idx(&candidate));
                    self.ops.push(op);
                }
            },
            Phase::Checked(candidate, liveness) => {
                let candidate_id = self.insts[candidate].id.clone();
                let reply = enqueue_after_check(
                    &mut self.store,
                    self.now_ms,
                    &request,
                    &candidate_id,
                    liveness,
                )
                .expect("the sim stays far below every limit");
                self.enqueued(&before, &op, &request, reply, Some((candidate, liveness)));
            }
            Phase::Check(_) => unreachable!(),
        }
    }

    fn enqueued(
        &mut self,
        before: &Snap,
        op: &Op,
        request: &EnqueueRequest,
        reply: EnqueueReply,
        checked: Option<(usize, Liveness)>,
    ) {
        self.note(|| format!("  enqueue {request:?} -> {reply:?}"));
        if let Some(into) = &reply.coalesced_into {
            // Coalescing registers nothing and drops nobody, and only into a
            // waiter found alive that still waits with the same input.
            assert_eq!(self.snap(), *before, "a coalescing enqueue wrote");
            assert!(reply.terminated.is_empty() && request.supersedes);
            let (candidate, liveness) = checked.expect("coalesced without a check");
            assert_eq!(&self.insts[candidate].id, into);
            assert_eq!(
                liveness,
                Liveness::Alive,
                "coalesced into an instance not seen alive"
            );
            let waiting = self
                .store
                .waiter(into)
                .expect("coalesced into a non-waiter");
            assert_eq!(waiting.input_hash, request.input_hash);
        } else {
            let holds = self.store.holder().is_some_and(|h| h.id == request.id);
            assert!(
                self.store.waiter(&request.id).is_some()
                    || holds
                    || self.store.is_superseded(&request.id),
                "enqueue of {} left it neither waiting, holding nor superseded",
                request.id
            );
        }
        self.decided(
            before,
            Allowed {
                caller: Some(&request.id),
                dropped: &reply.terminated,
                take_from: None,
            },
        );
        if !reply.terminated.is_empty() {
            let targets: Vec<usize> = reply.terminated.iter().map(|t| self.idx(t)).collect();
            self.superseded.extend(&targets);
            self.stats.superseded += targets.len() as u64;
            self.ops
                .push(Op::shell(OpKind::Terminate(targets), Phase::Start));
        }
        let who = op.caller.expect("an enqueue has a trigger");
        if op.orphan || self.insts[who].abandoned {
            return;
        }
        if reply.coalesced_into.is_some() {
            // The caller must not create its own instance.
            self.stats.coalesced += 1;
            let inst = &mut self.insts[who];
            inst.coalesced = true;
            inst.abandoned = true;
            inst.script = Script::Done;
            return;
        }
        let never = self.faults && self.rng.percent(self.p.never_create_pct);
        let delay_ms = if self.rng.percent(self.p.long_delay_pct) {
            self.rng.range(10_000, 120_000)
        } else {
            self.rng.range(0, 1_500)
        };
        let inst = &mut self.insts[who];
        if never {
            inst.abandoned = true;
            inst.script = Script::Done;
        } else {
            inst.script = Script::Registered;
            inst.create_at = Some(self.now_ms + delay_ms);
        }
    }

    fn run_acquire(&mut self, mut op: Op) {
        let who = op.caller.expect("acquire has a caller");
        let id = self.insts[who].id.clone();
        let before = self.snap();
        match op.phase {
            Phase::Start => {
                let step = acquire(&mut self.store, self.now_ms, &id)
                    .expect("the sim stays far below every limit");
                let allowed = Allowed {
                    caller: Some(&id),
                    dropped: &[],
                    take_from: None,
                };
                self.decided(&before, allowed);
                match step {
                    AcquireStep::Done(reply) => self.acquire_replied(&op, reply),
                    AcquireStep::CheckHolder(holder) => {
                        self.note(|| format!("  {id} must check holder {holder:?}"));
                        op.phase = Phase::Check(self.idx(&holder.id));
                        op.checked = Some(holder);
                        self.ops.push(op);
                    }
                }
            }
            Phase::Checked(checked, liveness) => {
                let checked_id = self.insts[checked].id.clone();
                let snapshot = op.checked.clone().unwrap();
                let Decided { reply, wake } =
                    acquire_after_check(&mut self.store, self.now_ms, &id, &snapshot, liveness);
                let dead = liveness == Liveness::Dead;
                self.count_handoff(&before, dead);
                let allowed = Allowed {
                    caller: Some(&id),
                    dropped: &[],
                    take_from: dead.then_some(&checked_id),
                };
                self.decided(&before, allowed);
                assert_ne!(wake.as_ref(), Some(&id), "told to wake the caller itself");
                if let Some(next) = wake {
                    self.spawn_wake(&next);
                }
                self.acquire_replied(&op, reply);
            }
            Phase::Check(_) => unreachable!(),
        }
    }

    fn acquire_replied(&mut self, op: &Op, reply: AcquireReply) {
        let who = op.caller.expect("acquire has a caller");
        let id = &self.insts[who].id;
        self.note(|| format!("  acquire {id} -> {reply:?}"));
        // What each reply promises, whether or not the caller hears it.
        let holder = self.store.holder();
        match reply {
            AcquireReply::Granted => assert!(
                holder.is_some_and(|h| h.id == *id && h.state == HolderState::Holding),
                "granted, but {id} does not hold the key"
            ),
            AcquireReply::Pending => assert!(
                holder.is_none_or(|h| h.id != *id) && self.store.waiter(id).is_some(),
                "pending, but {id} is not waiting"
            ),
            AcquireReply::Superseded => assert!(
                self.superseded.contains(&who),
                "{id} told superseded, but no enqueue superseded it"
            ),
        }
        if op.orphan || self.insts[who].life != Life::Running {
            return;
        }
        match reply {
            AcquireReply::Granted => {
                self.stats.granted += 1;
                let steps_left = self.rng.range(1, 4);
                let inst = &mut self.insts[who];
                inst.in_body = true;
                inst.ran = true;
                inst.script = Script::InBody { steps_left };
            }
            AcquireReply::Pending => self.wait_for_turn(who),
            AcquireReply::Superseded => {
                // Ends without running its body.
                let inst = &mut self.insts[who];
                inst.told_superseded = true;
                inst.life = Life::Complete;
                inst.script = Script::Done;
            }
        }
    }

    fn run_release(&mut self, op: Op) {
        let who = op.caller.expect("release has a caller");
        let id = self.insts[who].id.clone();
        let before = self.snap();
        let Decided { reply, wake } = release(&mut self.store, self.now_ms, &id);
        self.note(|| format!("  release {id} -> {reply:?}"));
        assert_eq!(reply, wake, "release replies with the instance it wakes");
        assert!(self.store.waiter_count() as usize <= before.queue.len());
        self.decided(
            &before,
            Allowed {
                caller: Some(&id),
                dropped: &[],
                take_from: Some(&id),
            },
        );
        assert!(
            self.store.waiter(&id).is_none() && self.store.holder().is_none_or(|h| h.id != id),
            "{id} still holds or waits after its release"
        );
        if let Some(next) = wake {
            self.spawn_wake(&next);
        }
        if op.orphan || self.insts[who].life != Life::Running {
            return;
        }
        if self.insts[who].script == Script::GivingUp {
            self.insts[who].life = Life::Errored;
            return;
        }
        let steps_left = self.rng.range(1, 3);
        self.insts[who].script = Script::After { steps_left };
    }

    /// The shell wakes a new holder: the turn event, then a status check
    /// (shell/wake.rs); a dead instance ignores the event, so the model
    /// delivers it only to one found not dead.
    fn spawn_wake(&mut self, next: &InstanceId) {
        assert!(
            self.store
                .holder()
                .is_some_and(|h| h.id == *next && h.state == HolderState::Handed),
            "told to wake {next}, which was not just handed the key"
        );
        let target = self.idx(next);
        self.ops.push(Op::shell(
            OpKind::Wake { attempts: 1 },
            Phase::Check(target),
        ));
    }

    fn run_wake(&mut self, op: Op) {
        let (OpKind::Wake { attempts }, Phase::Checked(target, liveness)) = (&op.kind, op.phase)
        else {
            unreachable!("{op:?}")
        };
        if liveness != Liveness::Dead {
            // Alive, or unknown (treated as alive): send the turn event.
            self.send_turn(target);
            return;
        }
        let dead = self.insts[target].id.clone();
        let before = self.snap();
        let next = holder_found_dead(&mut self.store, self.now_ms, &dead);
        self.count_handoff(&before, true);
        self.decided(
            &before,
            Allowed {
                caller: None,
                dropped: &[],
                take_from: Some(&dead),
            },
        );
        let Some(next) = next else { return };
        if *attempts < self.p.wake_attempts_max {
            self.spawn_wake(&next);
            let op = self.ops.last_mut().expect("just pushed");
            op.kind = OpKind::Wake {
                attempts: attempts + 1,
            };
        } else {
            // The bound stops the loop; the alarm sees the unconfirmed hand-over.
            self.stats.wake_loops_cut += 1;
        }
    }

    fn send_turn(&mut self, target: usize) {
        if self.faults && self.rng.percent(self.p.event_lost_pct) {
            self.stats.lost_events += 1;
            return;
        }
        self.events.push(target);
        if self.faults && self.rng.percent(self.p.event_dup_pct) {
            self.stats.duplicate_events += 1;
            self.events.push(target);
        }
    }

    fn run_tick(&mut self, mut op: Op) {
        match op.phase {
            Phase::Start => match tick(&self.store) {
                TickStep::Idle => self.arm_alarm(),
                TickStep::CheckHolder(holder) => {
                    op.phase = Phase::Check(self.idx(&holder.id));
                    op.checked = Some(holder);
                    self.ops.push(op);
                }
            },
            Phase::Checked(checked, liveness) => {
                let checked_id = self.insts[checked].id.clone();
                let before = self.snap();
                let snapshot = op.checked.clone().unwrap();
                let wake = tick_after_check(&mut self.store, self.now_ms, &snapshot, liveness);
                let dead = liveness == Liveness::Dead;
                self.count_handoff(&before, dead);
                self.decided(
                    &before,
                    Allowed {
                        caller: None,
                        dropped: &[],
                        take_from: dead.then_some(&checked_id),
                    },
                );
                if let Some(next) = wake {
                    self.spawn_wake(&next);
                }
            }
            Phase::Check(_) => unreachable!(),
        }
    }

    fn run_terminate(&mut self, op: Op) {
        let OpKind::Terminate(targets) = op.kind else {
            unreachable!()
        };
        for t in targets {
            if self.faults && self.rng.percent(self.p.terminate_lost_pct) {
                continue; // best effort: this one failed
            }
            // An id not created yet is "not found": nothing to terminate.
            if self.insts[t].life == Life::Running {
                self.insts[t].life = Life::Terminated;
            }
        }
    }

    fn arm_alarm(&mut self) {
        if needs_holder_check(&self.store) && self.alarm_at.is_none() {
            self.alarm_at = Some(self.now_ms + HOLDER_CHECK_MS_DEFAULT);
        }
    }

    fn count_handoff(&mut self, before: &Snap, dead: bool) {
        if dead && before.holder != self.store.holder() {
            self.stats.dead_handoffs += 1;
        }
    }

    fn idx(&self, id: &InstanceId) -> usize {
        self.by_id[id]
    }

    // --- checks --------------------------------------------------------------

    fn snap(&self) -> Snap {
        Snap {
            holder: self.store.holder(),
            queue: self.store.waiters().map(|w| w.id.clone()).collect(),
        }
    }

    /// After every decision: the core's invariants, the reference model, and
    /// the shell's alarm (committed with the decision's writes).
    fn decided(&mut self, before: &Snap, allowed: Allowed<'_>) {
        assert_invariants(&self.store);
        let after = self.snap();
        if self.trace && after != *before {
            eprintln!("    store: {after:?}");
        }
        check_transition(before, &after, &allowed);
        self.arm_alarm();
    }

    /// After every step.
    fn check_step(&self) {
        assert_invariants(&self.store);
        let holder = self.store.holder();
        for inst in &self.insts {
            if inst.life == Life::Running && inst.in_body {
                assert!(
                    holder
                        .as_ref()
                        .is_some_and(|h| h.id == inst.id && h.state == HolderState::Holding),
                    "SAFETY: live {} is in its body but the holder is {holder:?}",
                    inst.id
                );
            }
        }
        // The shell model keeps the alarm armed whenever the key needs it;
        // the liveness claims below rest on this.
        if needs_holder_check(&self.store) {
            assert!(
                self.alarm_at.is_some() || self.ops.iter().any(|o| matches!(o.kind, OpKind::Tick)),
                "the key needs the alarm but none is set"
            );
        }
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{} t={}] {}", self.stats.steps, self.now_ms, what());
        }
    }

    fn dump(&self) -> String {
        let mut s = format!(
            "seed {} step {} t={} alarm_at={:?}\n  store: {:?}\n",
            self.seed,
            self.stats.steps,
            self.now_ms,
            self.alarm_at,
            self.snap()
        );
        for op in &self.ops {
            s += &format!("  op {op:?}\n");
        }
        for inst in &self.insts {
            s += &format!("  {inst:?}\n");
        }
        s
    }
}

/// The reference model of the queue and the key: what any decision may change.
fn check_transition(before: &Snap, after: &Snap, allowed: &Allowed<'_>) {
    let fail = |what: &str| -> ! {
        panic!("{what}\n  before: {before:?}\n  after:  {after:?}");
    };
    // FIFO: waiters that stay keep their order; only the caller joins, at the back.
    let kept: Vec<&InstanceId> = before
        .queue
        .iter()
        .filter(|id| after.queue.contains(id))
        .collect();
    if !after.queue.iter().zip(&kept).all(|(a, k)| a == *k) {
        fail("waiters that stayed were reordered");
    }
    match &after.queue[kept.len()..] {
        [] => {}
        [joined] if Some(joined) == allowed.caller => {}
        _ => fail("someone other than the caller joined the queue"),
    }
    // Leaving the queue: the caller, the new holder, or the superseded.
    let new_holder = after.holder.as_ref().map(|h| &h.id);
    let dropped: Vec<&InstanceId> = before
        .queue
        .iter()
        .filter(|id| !after.queue.contains(id))
        .filter(|id| Some(*id) != allowed.caller && Some(*id) != new_holder)
        .collect();
    if dropped != allowed.dropped.iter().collect::<Vec<_>>() {
        fail("waiters left the queue without being reported superseded");
    }
    if !allowed.dropped.is_empty() && after.queue.iter().any(|id| Some(id) != allowed.caller) {
        fail("a superseding enqueue left other waiters");
    }
    // The key: confirmed only by its own holder; taken only from one that
    // released or was reported dead; given only to the front of the queue
    // (or to the caller, on a free key with nobody waiting).
    match (&before.holder, &after.holder) {
        (Some(b), Some(a)) if a.id == b.id && a.since_ms == b.since_ms => {
            let confirmed = b.state == HolderState::Handed
                && a.state == HolderState::Holding
                && Some(&a.id) == allowed.caller;
            if a.state != b.state && !confirmed {
                fail("the holder's state changed other than by its own acquire");
            }
        }
        (b, a) => {
            if let Some(b) = b {
                if Some(&b.id) != allowed.take_from {
                    fail("the key left a holder that neither released nor was reported dead");
                }
            }
            match a {
                Some(a) => {
                    let front = before.queue.first() == Some(&a.id);
                    let free = before.queue.is_empty() && Some(&a.id) == allowed.caller;
                    if !(front || free) {
                        fail("the key went to someone other than the front of the queue");
                    }
                    let state = if Some(&a.id) == allowed.caller {
                        HolderState::Holding
                    } else {
                        HolderState::Handed
                    };
                    if a.state != state {
                        fail("a new holder is Handed unless it is the caller, then Holding");
                    }
                }
                None if b.is_some() && !before.queue.is_empty() => {
                    fail("the key was freed while waiters queued");
                }
                None => {}
            }
        }
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).expect("valid id")
}

fn hash(s: &str) -> InputHash {
    InputHash::parse("inputHash", s).expect("valid hash")
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an integer, got {value:?}")),
    )
}

/// Runs one seed; on failure prints the seed, how to rerun it, and the state.
fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sim.run())) {
        eprintln!(
            "\nsimulation failed at seed {seed}, step {}. Rerun it with\n  \
             BATON_SIM_SEED={seed} BATON_SIM_TRACE=1 cargo test --test coordinator_sim \
             simulation -- --nocapture\n{}",
            sim.stats.steps,
            sim.dump()
        );
        resume_unwind(panic);
    }
    sim.stats
}

#[test]
fn simulation() {
    if let Some(seed) = env_u64("BATON_SIM_SEED") {
        let stats = run_seed(seed, std::env::var_os("BATON_SIM_TRACE").is_some());
        eprintln!("seed {seed}: {stats:?}");
        return;
    }
    let budget = env_u64("BATON_SIM_STEPS").unwrap_or(SIM_STEPS_DEFAULT);
    let mut total = Stats::default();
    let mut seed = 0;
    while total.steps < budget {
        total.add(&run_seed(seed, false));
        seed += 1;
    }
    eprintln!("simulation: {total:?}");
    // Coverage: a change that stops the simulation from reaching these paths
    // would make it pass without testing them.
    if budget >= SIM_STEPS_DEFAULT {
        let reached = [
            ("granted", total.granted),
            ("superseded", total.superseded),
            ("coalesced", total.coalesced),
            ("dead_handoffs", total.dead_handoffs),
            ("wake_loops_cut", total.wake_loops_cut),
            ("kills", total.kills),
            ("resets", total.resets),
            ("detaches", total.detaches),
            ("unknowns", total.unknowns),
            ("lost_events", total.lost_events),
            ("duplicate_events", total.duplicate_events),
            ("spurious_alarms", total.spurious_alarms),
        ];
        for (what, n) in reached {
            assert!(n > 0, "the simulation never reached {what}");
        }
    }
}

// ---------------------------------------------------------------------------
// Deterministic scenarios for the contract's named cases.

fn request(supersedes: bool, who: &str, input: Option<&str>) -> EnqueueRequest {
    EnqueueRequest {
        supersedes,
        id: id(who),
        input_hash: input.map(hash),
    }
}

fn granted(store: &mut MemoryKeyStore, now_ms: u64, who: &str) {
    assert_eq!(
        acquire(store, now_ms, &id(who)),
        Ok(AcquireStep::Done(AcquireReply::Granted))
    );
}

/// The holder snapshot a first phase asks about; `who` must be that holder.
fn checks(step: Result<AcquireStep, baton::error::BatonError>, who: &str) -> Holder {
    match step {
        Ok(AcquireStep::CheckHolder(holder)) if holder.id == id(who) => holder,
        other => panic!("expected a check of {who}, got {other:?}"),
    }
}

fn snap_of(store: &MemoryKeyStore) -> (Snap, u32) {
    let snap = Snap {
        holder: store.holder(),
        queue: store.waiters().map(|w| w.id.clone()).collect(),
    };
    (snap, store.superseded_count())
}

fn queue(store: &MemoryKeyStore) -> Vec<&str> {
    store.waiters().map(|w| w.id.as_str()).collect()
}

#[test]
fn coalescing_into_a_live_waiter_registers_nothing() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    let first = request(true, "a", Some("x"));
    assert_eq!(
        enqueue(&mut s, 1, &first),
        Ok(EnqueueStep::Done(EnqueueReply::default()))
    );
    let plain = request(false, "p", None);
    assert!(enqueue(&mut s, 2, &plain).is_ok());

    let second = request(true, "b", Some("x"));
    assert_eq!(
        enqueue(&mut s, 3, &second),
        Ok(EnqueueStep::CheckCandidate(id("a")))
    );
    let before = snap_of(&s);
    let reply = enqueue_after_check(&mut s, 4, &second, &id("a"), Liveness::Alive).unwrap();
    assert_eq!(
        reply,
        EnqueueReply {
            terminated: vec![],
            coalesced_into: Some(id("a")),
        }
    );
    // Nothing registered, nobody superseded (not even the plain waiter).
    assert_eq!(snap_of(&s), before);
    assert!(!s.is_superseded(&id("b")));

    // A candidate that is not known to be alive does not absorb the enqueue.
    for liveness in [Liveness::Dead, Liveness::Unknown] {
        let mut s2 = s.clone();
        let reply = enqueue_after_check(&mut s2, 5, &second, &id("a"), liveness).unwrap();
        assert_eq!(reply.coalesced_into, None);
        assert_eq!(reply.terminated, vec![id("a"), id("p")]);
        assert_eq!(queue(&s2), ["b"]);
    }
}

#[test]
fn coalescing_needs_the_candidate_still_waiting() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(true, "a", Some("x"))).is_ok());
    let second = request(true, "b", Some("x"));
    assert_eq!(
        enqueue(&mut s, 2, &second),
        Ok(EnqueueStep::CheckCandidate(id("a")))
    );
    // Between the phases, the holder releases and `a` is handed the key: it
    // starts and reads its own input, so `b` needs its own instance.
    assert_eq!(release(&mut s, 3, &id("h")).wake, Some(id("a")));
    let reply = enqueue_after_check(&mut s, 4, &second, &id("a"), Liveness::Alive).unwrap();
    assert_eq!(reply, EnqueueReply::default());
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(s.holder().map(|h| h.id), Some(id("a")));
}

#[test]
fn superseded_before_start_gets_superseded() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(false, "a", None)).is_ok());
    let reply = enqueue(&mut s, 2, &request(true, "b", None));
    assert_eq!(
        reply,
        Ok(EnqueueStep::Done(EnqueueReply {
            terminated: vec![id("a")],
            coalesced_into: None,
        }))
    );
    // `a` starts anyway (its termination was lost) and must end without running.
    assert_eq!(
        acquire(&mut s, 3, &id("a")),
        Ok(AcquireStep::Done(AcquireReply::Superseded))
    );
    // A late or retried enqueue cannot revive it, and the holder was never touched.
    assert_eq!(
        enqueue(&mut s, 4, &request(false, "a", None)),
        Ok(EnqueueStep::Done(EnqueueReply::default()))
    );
    assert_eq!(
        acquire(&mut s, 5, &id("a")),
        Ok(AcquireStep::Done(AcquireReply::Superseded))
    );
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(s.holder().map(|h| h.id), Some(id("h")));
}

#[test]
fn dead_holder_loses_the_key_only_if_it_still_holds_it() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    let h = checks(acquire(&mut s, 1, &id("w")), "h");
    // While `w` asks about `h`, `h` releases and the key is handed to `w`.
    assert_eq!(release(&mut s, 2, &id("h")).wake, Some(id("w")));
    // A late "dead" about `h` (from any path) changes nothing.
    assert_eq!(tick_after_check(&mut s, 3, &h, Liveness::Dead), None);
    assert_eq!(holder_found_dead(&mut s, 3, &id("h")), None);
    let decided = acquire_after_check(&mut s, 4, &id("w"), &h, Liveness::Dead);
    assert_eq!(
        decided,
        Decided {
            reply: AcquireReply::Granted,
            wake: None,
        }
    );
    let holder = s.holder().unwrap();
    assert_eq!(
        (holder.id.as_str(), holder.state),
        ("w", HolderState::Holding)
    );

    // When it still holds the key, a dead holder loses it to the caller...
    let w = checks(acquire(&mut s, 5, &id("x")), "w");
    let decided = acquire_after_check(&mut s, 6, &id("x"), &w, Liveness::Dead);
    assert_eq!(decided.reply, AcquireReply::Granted);
    // ...but an alive or unknown one keeps it.
    let x = checks(acquire(&mut s, 7, &id("y")), "x");
    for liveness in [Liveness::Alive, Liveness::Unknown] {
        let decided = acquire_after_check(&mut s, 8, &id("y"), &x, liveness);
        assert_eq!(decided.reply, AcquireReply::Pending);
        assert_eq!(s.holder().map(|h| h.id), Some(id("x")));
    }
}

#[test]
fn release_from_a_waiter_removes_it() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    for (now, who) in [(1, "a"), (2, "b")] {
        checks(acquire(&mut s, now, &id(who)), "h");
    }
    let decided = release(&mut s, 3, &id("a"));
    assert_eq!(
        decided,
        Decided {
            reply: None,
            wake: None
        }
    );
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(s.holder().map(|h| h.id), Some(id("h")));
}

#[test]
fn release_from_a_stranger_is_a_no_op() {
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    assert!(acquire(&mut s, 1, &id("a")).is_ok());
    assert!(enqueue(&mut s, 2, &request(true, "b", None)).is_ok());
    let before = snap_of(&s);
    for stranger in ["z", "a"] {
        // `a` was superseded: it is no longer anyone the key knows.
        let decided = release(&mut s, 3, &id(stranger));
        assert_eq!(decided.wake, None);
        assert_eq!(snap_of(&s), before);
    }
}

/// "Not found" is dead by the contract, but an id registered by `enqueue` is
/// not found until its trigger creates it: a "dead" sampled before the
/// creation is stale once the instance has acquired. Found by the simulation
/// (seed 2 through `acquire_after_check`, seed 0 through the wake chain's
/// `holder_found_dead`); this is the minimal trace of each path.
#[test]
fn a_dead_answer_from_before_creation_does_not_take_the_key_from_its_holder() {
    // Acquire path: `e` is registered on a free key; `x` acquires, which
    // hands the key to `e` and asks about it.
    let mut s = MemoryKeyStore::default();
    assert!(enqueue(&mut s, 0, &request(false, "e", None)).is_ok());
    let e = checks(acquire(&mut s, 1, &id("x")), "e");
    // The status call says "not found": `e` is not created yet. Then the
    // trigger creates it, and it acquires and starts its body.
    granted(&mut s, 2, "e");
    // `x` re-enters with the stale answer.
    let decided = acquire_after_check(&mut s, 3, &id("x"), &e, Liveness::Dead);
    assert_eq!(decided.reply, AcquireReply::Pending, "two holders: e and x");
    assert_eq!(s.holder().map(|h| h.id), Some(id("e")));

    // Wake path: `h` releases to `e` (registered, not created yet); the
    // shell's status check says "not found"; `e` is created and acquires;
    // then the shell reports it dead.
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(false, "e", None)).is_ok());
    assert!(acquire(&mut s, 2, &id("w")).is_ok());
    assert_eq!(release(&mut s, 3, &id("h")).wake, Some(id("e")));
    granted(&mut s, 4, "e");
    assert_eq!(
        holder_found_dead(&mut s, 5, &id("e")),
        None,
        "w would be woken"
    );
    assert_eq!(s.holder().map(|h| h.id), Some(id("e")));
}

#[test]
fn a_bounded_wake_loop_leaves_the_rest_to_the_alarm() {
    // The holder releases to a queue of instances that were registered and
    // never created, with one live instance at the end.
    let mut s = MemoryKeyStore::default();
    granted(&mut s, 0, "h");
    let dead_count = WAKE_ATTEMPTS_PER_CALL_MAX + 8;
    for n in 0..dead_count {
        assert!(enqueue(&mut s, 1, &request(false, &format!("d{n}"), None)).is_ok());
    }
    assert!(acquire(&mut s, 2, &id("live")).is_ok());

    let mut next = release(&mut s, 3, &id("h")).wake;
    let mut attempts = 0;
    while let Some(dead) = next.take() {
        attempts += 1;
        if attempts == WAKE_ATTEMPTS_PER_CALL_MAX {
            break;
        }
        next = holder_found_dead(&mut s, 4, &dead);
    }
    // The loop stopped with an unconfirmed hand-over, which the alarm re-checks.
    assert!(needs_holder_check(&s));
    let mut rounds = 0;
    while let TickStep::CheckHolder(holder) = tick(&s) {
        rounds += 1;
        assert!(rounds <= dead_count + 1, "the alarm does not converge");
        let liveness = if holder.id == id("live") {
            Liveness::Alive
        } else {
            Liveness::Dead
        };
        let woken = tick_after_check(&mut s, 5, &holder, liveness);
        if woken == Some(id("live")) && liveness == Liveness::Alive {
            break; // the live instance is sent its turn
        }
    }
    assert_eq!(s.holder().map(|h| h.id), Some(id("live")));
    granted(&mut s, 6, "live");
    assert_eq!(s.waiter_count(), 0);
}
