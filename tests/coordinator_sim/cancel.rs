//! Contract §1d, `cancelHolders`: a seeded simulation of its own, and the
//! named cases.
//!
//! The real decision runs over a [`KeyTwin`] (one key, a limit of 1 to 3
//! named by every call) against a model of the Workflow engine (instances
//! running, then complete or terminated; a termination that fails leaves
//! the instance running), of the shell (every effect performed at a later
//! step, in any order: a holder's termination then its status, answered
//! late, twice or never; status checks that fail (`Unknown`); the
//! holder-check alarm firing at random, lost, late or twice; object resets
//! that drop everything in flight, the callers retrying) and of the
//! callers (each instance enqueues, plain, superseding, or superseding
//! with `cancelHolders`, on one of two input hashes or none; acquires
//! until granted; runs a body that writes to a store keyed by fence; then
//! releases; a release in flight when its instance is terminated still
//! arrives).
//!
//! The oracle keeps its own records and rules, never the core's helpers
//! nor what a decision says it did. After every step:
//! - never more live instances in their body than the limit;
//! - with a limit of 1, a fenced store never refuses a live holder's write
//!   (the fence it was told is above every fence written before);
//! - each grant takes a fence above every fence the key granted before
//!   (the oracle's own count: the fences only grow);
//! - a holder leaves only by its own release, or when the engine has it
//!   ended; a cancelled one (the oracle records which: every holder of the
//!   key, when a `cancelHolders` enqueue that it judges committed ran)
//!   keeps its slot until then;
//! - a `cancelHolders` enqueue that coalesces cancels nothing; one that
//!   commits marks exactly the holders it found not yet cancelled, answers
//!   them, and asks at once for each one's termination through the
//!   holder's own Workflow (half the instances name a binding of their
//!   own, the others the default; the oracle records which);
//! - a release from an id that no longer holds or waits changes nothing.
//!
//! At the end of each seed faults and arrivals stop and the system drains:
//! every instance has then run its body, been superseded, coalesced, or
//! died, no holder is left cancelling and no waiter is left.

use crate::common::{report_failure, simulate, End, Fault, Faults, Injected, Life, Rng, SimStats};
use baton::coordinator::{
    self, assert_invariants_deep, AcquireReply, AcquireRequest, Effect, EnqueueReply,
    EnqueueRequest, Holder, Input, KeyTwin, Liveness, Member, Options, Reply, Settings, Transition,
};
use baton::error::BatonError;
use baton::ident::{InputHash, InstanceId, WorkflowName};
use baton::limits::ENQUEUE_GRACE_MS_DEFAULT;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Steps of the cancel simulation per `cargo test` (all seeds), unless
/// `BATON_SIM_STEPS` says otherwise.
const CANCEL_SIM_STEPS_DEFAULT: u64 = 1_000_000;
/// Steps with faults and arrivals per seed, before the drain.
const FAULT_STEPS_PER_SEED: u64 = 1_500;
/// A drain longer than this is a liveness failure.
const DRAIN_STEPS_MAX: u64 = 20_000;
/// Instances one seed starts at most.
const INSTANCES_MAX: usize = 60;
const KEY_WORKFLOW: &str = "WORKFLOW";
/// The binding the odd instances name (the even ones name none: the
/// default, [`KEY_WORKFLOW`]).
const OWN_WORKFLOW: &str = "OWN_WORKFLOW";
/// The faults this simulation injects, with each one's highest rate: a
/// lost or doubled status answer after a termination is `EventLost` /
/// `EventDuplicate`; a lost effect or reply, `ResetAfterCommit`.
const FAULTS: [(Fault, u64); 8] = [
    (Fault::ResetAfterCommit, 10),
    (Fault::Reset, 3),
    (Fault::AlarmLost, 30),
    (Fault::AlarmDuplicate, 20),
    (Fault::EventLost, 30),
    (Fault::EventDuplicate, 30),
    (Fault::InstanceDies, 3),
    (Fault::StatusUnknown, 20),
];

/// Where an instance's code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// Its trigger enqueues it (the instance runs from then on).
    Enqueue,
    /// Registered: it acquires until granted.
    Waiting,
    /// Granted with `fence`: it writes, then releases.
    InBody {
        fence: u64,
        steps_left: u32,
    },
    Releasing,
    Done,
}

#[derive(Debug)]
struct Inst {
    id: InstanceId,
    life: Life,
    script: Script,
    /// A call of it is in flight at the object (its reply not yet heard).
    calling: bool,
    /// How its trigger enqueues it.
    supersedes: bool,
    cancel_holders: bool,
    hash: Option<InputHash>,
    /// The Workflow binding its calls name (`None`: the default).
    workflow: Option<WorkflowName>,
    /// Its body waits for a "finish" that only the drain sends, and only
    /// to a run nobody cancelled: a cancelled one ends only if the object
    /// terminates it (the alarm retrying a termination that failed).
    long: bool,
}

/// Where a status answer re-enters.
#[derive(Debug, Clone)]
enum Second {
    Enqueue(EnqueueRequest, coordinator::Waiter),
    Acquire(AcquireRequest, Holder),
    Tick(Holder),
}

/// Work in flight at the object or the engine.
#[derive(Debug, Clone)]
enum Op {
    /// An instance's call (`who`), or its second phase.
    Call(usize, Input),
    /// A status check; its answer re-enters as `Second` (for `who`'s call).
    Status(Option<usize>, Second, InstanceId),
    /// §1d: a cancelled holder to terminate, then its status.
    TerminateHolder(Holder),
    /// The status after a termination, sampled when it was asked.
    CancelledStatus(Holder, Liveness),
    /// A superseded waiter to terminate (best effort).
    Terminate(InstanceId),
    /// A turn event to deliver.
    Wake(InstanceId),
    Tick,
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    seeds: u64,
    steps: u64,
    cancelled: u64,
    cancelled_found_dead: u64,
    terminates_failed: u64,
    statuses_twice: u64,
    coalesced_with_cancel: u64,
    late_releases: u64,
    refused: u64,
    faults: Injected,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }
    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
        self.steps += o.steps;
        self.cancelled += o.cancelled;
        self.cancelled_found_dead += o.cancelled_found_dead;
        self.terminates_failed += o.terminates_failed;
        self.statuses_twice += o.statuses_twice;
        self.coalesced_with_cancel += o.coalesced_with_cancel;
        self.late_releases += o.late_releases;
        self.refused += o.refused;
        self.faults.add(&o.faults);
    }
}

struct Sim {
    rng: Rng,
    faults: Faults,
    key: KeyTwin,
    limit: u32,
    now_ms: u64,
    insts: Vec<Inst>,
    index: BTreeMap<InstanceId, usize>,
    ops: Vec<Op>,
    /// The oracle's own records: the highest fence the key granted, the
    /// holders it judged cancelled, the highest fence written to the
    /// fenced store.
    fence_max: u64,
    cancelled: BTreeSet<InstanceId>,
    /// How many holders it judged cancelled (the key's `counts.cancelled`).
    cancelled_count: u64,
    written_fence: u64,
    /// Percent of terminations that fail, this seed.
    terminate_fail_pct: u64,
    /// Faults and arrivals have stopped.
    draining: bool,
    stats: Stats,
    trace: bool,
}

fn id(s: &str) -> InstanceId {
    InstanceId::new(s.to_owned()).expect("valid id")
}

fn settings() -> Settings {
    Settings {
        grace_ms: ENQUEUE_GRACE_MS_DEFAULT,
        workflow: KEY_WORKFLOW.to_owned(),
    }
}

/// One decision on the key: its view, the real decision, its writes
/// applied (and held to the state it says they leave).
fn decide(key: &mut KeyTwin, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
    let view = key.load(&input);
    let t = coordinator::decide(&view, &settings(), now_ms, input)?;
    coordinator::apply(key, &t.writes);
    assert_eq!(
        t.state.summary,
        key.summary(),
        "the state is the applied one"
    );
    assert_invariants_deep(key);
    Ok(t)
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed ^ 0x00CA_9CE1);
        let faults = Faults::draw(&mut rng, &FAULTS);
        let limit = rng.range(1, 3) as u32;
        let terminate_fail_pct = *rng.pick(&[0, 20, 60]);
        Sim {
            rng,
            faults,
            key: KeyTwin::default(),
            limit,
            now_ms: 1_700_000_000_000,
            insts: Vec::new(),
            index: BTreeMap::new(),
            ops: Vec::new(),
            fence_max: 0,
            cancelled: BTreeSet::new(),
            cancelled_count: 0,
            written_fence: 0,
            terminate_fail_pct,
            draining: false,
            stats: Stats {
                seeds: 1,
                ..Stats::default()
            },
            trace,
        }
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{} @{}] {}", self.stats.steps, self.now_ms, what());
        }
    }

    fn run(&mut self) {
        while self.stats.steps < FAULT_STEPS_PER_SEED {
            self.step(true);
        }
        self.faults.stop();
        self.terminate_fail_pct = 0;
        self.draining = true;
        let drain_start = self.stats.steps;
        while !self.drained() {
            assert!(
                self.stats.steps - drain_start < DRAIN_STEPS_MAX,
                "DRAIN: the key never settled: {:?} holders {:?} waiters {:?}",
                self.insts
                    .iter()
                    .filter(|i| i.script != Script::Done && !i.life.ended())
                    .map(|i| (&i.id, i.script))
                    .collect::<Vec<_>>(),
                self.key.holders(),
                self.key.waiters().collect::<Vec<_>>()
            );
            self.step(false);
        }
        assert!(
            self.key.holders().iter().all(|h| !h.cancelling),
            "END: a cancelled holder kept its slot: {:?}",
            self.key.holders()
        );
        assert_eq!(self.key.waiter_count(), 0, "END: a waiter is left");
    }

    fn drained(&self) -> bool {
        self.ops.iter().all(|op| matches!(op, Op::Tick))
            && self
                .insts
                .iter()
                .all(|i| i.script == Script::Done || i.life.ended())
            && self.key.waiter_count() == 0
            && self.key.holders().iter().all(|h| !h.cancelling)
    }

    fn step(&mut self, arrivals: bool) {
        self.stats.steps += 1;
        self.now_ms += self.rng.below(2_000);
        let roll = self.rng.below(100);
        if arrivals && roll < 8 && self.insts.len() < INSTANCES_MAX {
            self.arrive();
        } else if roll < 14 {
            // The holder-check alarm: lost, or delivered twice.
            if !self.faults.strikes(&mut self.rng, Fault::AlarmLost) {
                self.ops.push(Op::Tick);
                if self.faults.strikes(&mut self.rng, Fault::AlarmDuplicate) {
                    self.ops.push(Op::Tick);
                }
            }
        } else if roll < 16 && self.faults.strikes(&mut self.rng, Fault::InstanceDies) {
            let live: Vec<usize> = (0..self.insts.len())
                .filter(|&i| self.insts[i].life == Life::Running)
                .collect();
            if !live.is_empty() {
                let i = *self.rng.pick(&live);
                self.note(|| format!("{} dies", self.insts[i].id));
                self.insts[i].life = Life::Ended(End::Errored);
            }
        } else if roll < 17 && self.faults.strikes(&mut self.rng, Fault::Reset) {
            self.note(|| "reset: everything in flight is lost".into());
            self.ops.clear();
            for inst in &mut self.insts {
                inst.calling = false;
            }
        } else if roll < 60 && !self.ops.is_empty() {
            let n = self.rng.below(self.ops.len() as u64) as usize;
            let op = self.ops.swap_remove(n);
            self.perform(op);
        } else {
            let ready: Vec<usize> = (0..self.insts.len())
                .filter(|&i| {
                    let inst = &self.insts[i];
                    !inst.calling && inst.life == Life::Running && inst.script != Script::Done
                })
                .collect();
            if !ready.is_empty() {
                let i = *self.rng.pick(&ready);
                self.instance_step(i);
            }
        }
        self.check_step();
    }

    fn arrive(&mut self) {
        let n = self.insts.len();
        let kind = self.rng.below(10);
        let hashes = [None, Some("h1"), Some("h2")];
        let hash = self
            .rng
            .pick(&hashes)
            .map(|h| InputHash::parse("h", h).expect("hash"));
        let inst = Inst {
            id: id(&format!("i{n}")),
            life: Life::Running,
            script: Script::Enqueue,
            calling: false,
            // One in ten names cancelHolders without supersedes: refused.
            supersedes: kind >= 3,
            cancel_holders: kind >= 5 || kind == 0,
            hash,
            // By its number, so the seed's draws stay what they were.
            workflow: (n % 2 == 1)
                .then(|| WorkflowName::new(OWN_WORKFLOW.to_owned()).expect("valid binding")),
            long: self.rng.percent(30),
        };
        self.index.insert(inst.id.clone(), n);
        self.insts.push(inst);
    }

    fn options(&self, cancel_holders: bool, workflow: Option<WorkflowName>) -> Options {
        Options {
            limit: Some(self.limit),
            cancel_holders,
            workflow,
            ..Options::default()
        }
    }

    /// The binding `id` is reached through, by the oracle's record of
    /// what its calls name.
    fn binding_of(&self, id: &InstanceId) -> String {
        let workflow = self.insts[self.index[id]].workflow.as_ref();
        workflow.map_or_else(|| KEY_WORKFLOW.to_owned(), |w| w.to_string())
    }

    fn instance_step(&mut self, i: usize) {
        let inst = &self.insts[i];
        let input = match inst.script {
            Script::Enqueue => Input::Enqueue(EnqueueRequest {
                supersedes: inst.supersedes,
                id: inst.id.clone(),
                input_hash: inst.hash.clone(),
                options: self.options(inst.cancel_holders, inst.workflow.clone()),
            }),
            Script::Waiting => Input::Acquire(AcquireRequest {
                id: inst.id.clone(),
                options: self.options(false, inst.workflow.clone()),
            }),
            Script::InBody { fence, steps_left } => {
                // The body writes with the fence it was told.
                if self.limit == 1 {
                    assert!(
                        fence >= self.written_fence,
                        "FENCED STORE: live holder {} with fence {fence} refused (fence {} written)",
                        inst.id,
                        self.written_fence
                    );
                }
                self.written_fence = self.written_fence.max(fence);
                let waits_for_finish = !self.draining || self.cancelled.contains(&inst.id);
                if inst.long && waits_for_finish {
                    return;
                }
                self.insts[i].script = if steps_left <= 1 {
                    Script::Releasing
                } else {
                    Script::InBody {
                        fence,
                        steps_left: steps_left - 1,
                    }
                };
                return;
            }
            Script::Releasing => Input::Release(inst.id.clone()),
            Script::Done => return,
        };
        self.insts[i].calling = true;
        self.ops.push(Op::Call(i, input));
    }

    /// The engine's answer for `id` now; a failing status call is `Unknown`.
    fn status(&mut self, id: &InstanceId) -> Liveness {
        if self.faults.strikes(&mut self.rng, Fault::StatusUnknown) {
            return Liveness::Unknown;
        }
        self.insts[self.index[id]].life.status()
    }

    fn perform(&mut self, op: Op) {
        self.note(|| format!("{op:?}"));
        match op {
            Op::Call(who, input) => self.decide(Some(who), input),
            Op::Status(who, second, of) => {
                let liveness = self.status(&of);
                let input = match second {
                    Second::Enqueue(request, candidate) => Input::EnqueueChecked {
                        request,
                        candidate,
                        liveness,
                    },
                    Second::Acquire(request, holder) => Input::AcquireChecked {
                        request,
                        holder,
                        answer: liveness.into(),
                    },
                    Second::Tick(holder) => Input::TickChecked {
                        holder,
                        answer: liveness.into(),
                    },
                };
                self.decide(who, input)
            }
            Op::TerminateHolder(holder) => {
                let i = self.index[&holder.id];
                if self.rng.percent(self.terminate_fail_pct) {
                    self.stats.terminates_failed += 1;
                } else if self.insts[i].life == Life::Running {
                    self.insts[i].life = Life::Ended(End::Terminated);
                }
                // The status right after, back at the object later, once,
                // twice or never.
                let liveness = self.status(&holder.id);
                if !self.faults.strikes(&mut self.rng, Fault::EventLost) {
                    self.ops.push(Op::CancelledStatus(holder.clone(), liveness));
                    if self.faults.strikes(&mut self.rng, Fault::EventDuplicate) {
                        self.stats.statuses_twice += 1;
                        self.ops.push(Op::CancelledStatus(holder, liveness));
                    }
                }
            }
            Op::CancelledStatus(holder, liveness) => {
                let answer = liveness.into();
                self.decide(None, Input::Cancelled { holder, answer })
            }
            Op::Terminate(of) => {
                let i = self.index[&of];
                if !self.faults.strikes(&mut self.rng, Fault::EventLost)
                    && self.insts[i].life == Life::Running
                {
                    self.insts[i].life = Life::Ended(End::Terminated);
                }
            }
            Op::Wake(of) => {
                // The turn event: a waiting instance acquires at once (it
                // also acquires on its own steps, as after a timeout).
                let i = self.index[&of];
                let inst = &self.insts[i];
                if inst.script == Script::Waiting && !inst.calling && inst.life == Life::Running {
                    self.instance_step(i);
                }
            }
            Op::Tick => self.decide(None, Input::Tick),
        }
    }

    /// One decision, judged by the oracle; its effects become work in
    /// flight, and its reply goes to the caller.
    fn decide(&mut self, who: Option<usize>, input: Input) {
        let before_holders = self.key.holders();
        let before_waiters: Vec<InstanceId> = self.key.waiters().map(|w| w.id.clone()).collect();
        let caller_member = match &input {
            Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. } => {
                Some(self.key.member(&r.id))
            }
            Input::Release(id) => Some(self.key.member(id)),
            _ => None,
        };
        // The oracle's rule: cancelHolders without supersedes is refused,
        // naming it, and changes nothing.
        let refused =
            matches!(&input, Input::Enqueue(r) if r.options.cancel_holders && !r.supersedes);
        let summary = self.key.summary();
        let t = match (decide(&mut self.key, self.now_ms, input.clone()), refused) {
            (Ok(t), false) => t,
            (Err(refusal), true) => {
                assert_eq!(refusal.field(), "cancelHolders", "REFUSED: the field named");
                assert_eq!(self.key.summary(), summary, "REFUSED: the key changed");
                let waiters: Vec<InstanceId> = self.key.waiters().map(|w| w.id.clone()).collect();
                assert_eq!(waiters, before_waiters, "REFUSED: the waiters changed");
                self.stats.refused += 1;
                if let Some(who) = who {
                    // The trigger creates nothing.
                    self.insts[who].calling = false;
                    self.insts[who].script = Script::Done;
                    self.insts[who].life = Life::Ended(End::Complete);
                }
                return;
            }
            (result, _) => {
                panic!("REFUSED: {input:?} answered {result:?}, refused by rule: {refused}")
            }
        };
        let after = self.key.holders();
        self.judge(
            &input,
            caller_member.as_ref(),
            &before_holders,
            &before_waiters,
            &after,
            &t,
        );
        if self.faults.strikes(&mut self.rng, Fault::ResetAfterCommit) {
            // The writes stand; the effects and the reply are lost.
            if let Some(who) = who {
                self.insts[who].calling = false;
            }
            return;
        }
        for effect in &t.effects {
            match effect {
                Effect::Check(check) => {
                    let second = match &t.reply {
                        Reply::EnqueueChecking { request, candidate } => {
                            Second::Enqueue(request.clone(), candidate.clone())
                        }
                        Reply::AcquireChecking { request, holder } => {
                            Second::Acquire(request.clone(), holder.clone())
                        }
                        Reply::Ticked(due) => Second::Tick(
                            due.iter()
                                .find(|h| h.id == check.id)
                                .expect("a tick checks a holder it names")
                                .clone(),
                        ),
                        other => panic!("a check asked by {other:?}"),
                    };
                    self.ops.push(Op::Status(who, second, check.id.clone()));
                }
                Effect::Wake(wake) => self.ops.push(Op::Wake(wake.id.clone())),
                Effect::Terminate(terminate) => self.ops.push(Op::Terminate(terminate.id.clone())),
                Effect::TerminateHolder { holder, workflow } => {
                    assert_eq!(
                        *workflow,
                        self.binding_of(&holder.id),
                        "CANCEL: {} terminated through another Workflow than its own",
                        holder.id
                    );
                    self.ops.push(Op::TerminateHolder(holder.clone()));
                }
            }
        }
        let answered = !matches!(
            t.reply,
            Reply::EnqueueChecking { .. } | Reply::AcquireChecking { .. }
        );
        if let (Some(who), true) = (who, answered) {
            self.insts[who].calling = false;
            self.reply(who, &t.reply);
        }
    }

    fn reply(&mut self, who: usize, reply: &Reply) {
        let inst = &mut self.insts[who];
        match reply {
            Reply::Enqueue(EnqueueReply { coalesced_into, .. }) => {
                inst.script = if coalesced_into.is_some() {
                    Script::Done
                } else {
                    Script::Waiting
                };
            }
            Reply::Acquire(AcquireReply::Granted { fence }) => {
                if matches!(inst.script, Script::Waiting) {
                    inst.script = Script::InBody {
                        fence: *fence,
                        steps_left: 1 + (who as u32 % 4),
                    };
                }
            }
            Reply::Acquire(AcquireReply::Superseded) => inst.script = Script::Done,
            Reply::Acquire(_) => {}
            Reply::Release(_) => inst.script = Script::Done,
            other => panic!("{other:?} answers no call"),
        }
    }

    /// The oracle, on one decision: what changed at the key against what
    /// the contract allows, by its own records.
    fn judge(
        &mut self,
        input: &Input,
        caller: Option<&Member>,
        before: &[Holder],
        before_waiters: &[InstanceId],
        after: &[Holder],
        t: &Transition,
    ) {
        let (reply, effects) = (&t.reply, &t.effects);
        // Fences: every new holder's above every fence granted before.
        for h in after {
            if !before.iter().any(|b| b.id == h.id) {
                assert!(
                    h.fence > self.fence_max,
                    "FENCE: {} granted fence {} after fence {}",
                    h.id,
                    h.fence,
                    self.fence_max
                );
                self.fence_max = h.fence;
            }
        }
        // Who left: only by its own release, or ended in the engine.
        let releasing = match input {
            Input::Release(id) => Some(id),
            _ => None,
        };
        for b in before {
            if after.iter().any(|h| h.id == b.id) {
                continue;
            }
            let i = self.index[&b.id];
            let ended = self.insts[i].life.ended();
            assert!(
                releasing == Some(&b.id) || ended,
                "LEFT ALIVE: holder {} (cancelled: {}) lost its slot while running",
                b.id,
                self.cancelled.contains(&b.id)
            );
            if self.cancelled.contains(&b.id) && releasing != Some(&b.id) {
                self.stats.cancelled_found_dead += 1;
            }
        }
        match (input, reply) {
            (
                Input::Enqueue(request) | Input::EnqueueChecked { request, .. },
                Reply::Enqueue(r),
            ) if request.options.cancel_holders => {
                let settled = matches!(caller, Some(Member::Holder(_) | Member::Superseded));
                if r.coalesced_into.is_some() || settled {
                    if r.coalesced_into.is_some() {
                        self.stats.coalesced_with_cancel += 1;
                    }
                    assert_eq!(before, after, "COALESCED: a holder changed");
                    assert!(
                        r.cancelled.is_empty(),
                        "COALESCED: cancelled {:?}",
                        r.cancelled
                    );
                    return;
                }
                let expected: Vec<&InstanceId> = before
                    .iter()
                    .filter(|h| !h.cancelling)
                    .map(|h| &h.id)
                    .collect();
                let got: Vec<&InstanceId> = r.cancelled.iter().map(|h| &h.id).collect();
                assert_eq!(got, expected, "CANCEL: the holders cancelled");
                // Each one's termination asked at once, in this decision,
                // through its own binding.
                for id in &expected {
                    let asked: Vec<&String> = (effects.iter())
                        .filter_map(|e| match e {
                            Effect::TerminateHolder { holder, workflow } if holder.id == **id => {
                                Some(workflow)
                            }
                            _ => None,
                        })
                        .collect();
                    assert_eq!(
                        asked,
                        vec![&self.binding_of(id)],
                        "CANCEL: {id}'s termination, asked at once through its own Workflow"
                    );
                }
                for b in before {
                    let now = after.iter().find(|h| h.id == b.id);
                    assert!(
                        now.is_some_and(|h| h.cancelling),
                        "CANCEL: holder {} not kept as cancelling: {now:?}",
                        b.id
                    );
                    self.cancelled.insert(b.id.clone());
                }
                self.stats.cancelled += expected.len() as u64;
                self.cancelled_count += expected.len() as u64;
                assert_eq!(
                    self.key.history.counts.cancelled, self.cancelled_count,
                    "COUNTS: cancelled"
                );
                let left: Vec<InstanceId> = self.key.waiters().map(|w| w.id.clone()).collect();
                assert_eq!(
                    left,
                    vec![request.id.clone()],
                    "CANCEL: the waiters dropped"
                );
            }
            (Input::Release(id), _) if matches!(caller, Some(Member::Stranger)) => {
                if self.cancelled.contains(id) {
                    self.stats.late_releases += 1;
                }
                assert_eq!(before, after, "LATE RELEASE: holders changed");
                let waiters: Vec<InstanceId> = self.key.waiters().map(|w| w.id.clone()).collect();
                assert_eq!(
                    before_waiters,
                    &waiters[..],
                    "LATE RELEASE: waiters changed"
                );
            }
            _ => {
                // Nothing but a cancelHolders enqueue cancels.
                for h in after {
                    let was = before.iter().find(|b| b.id == h.id);
                    assert!(
                        !h.cancelling || was.is_some_and(|b| b.cancelling),
                        "CANCEL: {} cancelled by {input:?}",
                        h.id
                    );
                }
            }
        }
    }

    /// Checked after every step: never more live instances in their body
    /// than the limit.
    fn check_step(&self) {
        let in_body: Vec<&InstanceId> = self
            .insts
            .iter()
            // Releasing is past the body: its release may have committed
            // with the reply lost, and it calls again.
            .filter(|i| i.life == Life::Running && matches!(i.script, Script::InBody { .. }))
            .map(|i| &i.id)
            .collect();
        assert!(
            in_body.len() as u32 <= self.limit,
            "LIVE HOLDERS: {in_body:?} in their body with a limit of {}",
            self.limit
        );
    }
}

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sim.run())) {
        report_failure("coordinator_sim", seed, sim.stats.steps);
        eprintln!(
            "limit {} holders {:?}\nwaiters {:?}\ninstances {:?}",
            sim.limit,
            sim.key.holders(),
            sim.key.waiters().collect::<Vec<_>>(),
            sim.insts
        );
        resume_unwind(panic);
    }
    sim.stats.faults = sim.faults.injected;
    sim.stats
}

#[test]
fn cancel_holders_simulation() {
    if let Some(total) = simulate(
        "coordinator cancel simulation",
        0,
        CANCEL_SIM_STEPS_DEFAULT,
        run_seed,
    ) {
        crate::common::assert_reached(&[
            ("cancelled", total.cancelled),
            ("cancelled_found_dead", total.cancelled_found_dead),
            ("terminates_failed", total.terminates_failed),
            ("statuses_twice", total.statuses_twice),
            ("coalesced_with_cancel", total.coalesced_with_cancel),
            ("late_releases", total.late_releases),
            ("refused", total.refused),
        ]);
        total
            .faults
            .assert_injected(&FAULTS.map(|(fault, _)| fault));
    }
}

// ---------------------------------------------------------------------------
// The named cases.

fn enqueue(key: &mut KeyTwin, now_ms: u64, who: &str, cancel: bool, hash: Option<&str>) -> Reply {
    let request = EnqueueRequest {
        supersedes: true,
        id: id(who),
        input_hash: hash.map(|h| InputHash::parse("h", h).expect("hash")),
        options: Options {
            cancel_holders: cancel,
            ..Options::default()
        },
    };
    decide(key, now_ms, Input::Enqueue(request))
        .expect("enqueue")
        .reply
}

fn acquire(key: &mut KeyTwin, now_ms: u64, who: &str) -> Transition {
    let request = AcquireRequest {
        id: id(who),
        options: Options::default(),
    };
    decide(key, now_ms, Input::Acquire(request)).expect("acquire")
}

fn holder_of(key: &KeyTwin, who: &str) -> Holder {
    key.holders()
        .into_iter()
        .find(|h| h.id.as_str() == who)
        .expect("holds")
}

#[test]
fn a_cancelled_holder_keeps_its_slot_until_found_dead_then_it_goes_on_with_the_next_fence() {
    let mut key = KeyTwin::default();
    assert_eq!(
        acquire(&mut key, 1, "old").reply,
        Reply::Acquire(AcquireReply::Granted { fence: 1 })
    );
    let Reply::Enqueue(reply) = enqueue(&mut key, 2, "new", true, None) else {
        panic!("an enqueue's reply");
    };
    let old = holder_of(&key, "old");
    assert!(old.cancelling);
    assert_eq!(reply.cancelled, vec![old.clone()]);
    assert!(reply.terminated.is_empty());
    // Its termination asked, through its own Workflow; the new one waits.
    let t = acquire(&mut key, 3, "new");
    assert!(matches!(t.reply, Reply::AcquireChecking { .. }));
    // Alive after the termination (it failed): it keeps its slot, and the
    // alarm terminates it again.
    let alive = decide(
        &mut key,
        4,
        Input::Cancelled {
            holder: old.clone(),
            answer: Liveness::Alive.into(),
        },
    )
    .expect("never refused");
    assert!(alive.effects.is_empty());
    assert_eq!(holder_of(&key, "old"), old);
    let tick = decide(&mut key, 5, Input::Tick).expect("tick");
    assert_eq!(
        tick.effects,
        vec![Effect::TerminateHolder {
            holder: old.clone(),
            workflow: KEY_WORKFLOW.to_owned()
        }]
    );
    // Found dead: the slot goes on, by event, with the next fence.
    let dead = decide(
        &mut key,
        6,
        Input::Cancelled {
            holder: old.clone(),
            answer: Liveness::Dead.into(),
        },
    )
    .expect("never refused");
    assert_eq!(key.holders().len(), 1);
    let new = holder_of(&key, "new");
    assert_eq!(new.fence, 2);
    assert!(dead
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Wake(w) if w.id == new.id)));
    assert_eq!(key.history.counts.cancelled, 1);
    let recent = key.history.recent();
    assert!(recent[0].cancelled && recent[0].id == old.id);
    let line = dead.log.expect("a line");
    assert_eq!(
        (line.decision, line.instance.as_ref().map(|i| i.as_str())),
        ("terminated", Some("old"))
    );
    // Its later release is a no-op.
    let before = (key.holders(), key.summary());
    let late = decide(&mut key, 7, Input::Release(id("old"))).expect("release");
    assert_eq!(late.reply, Reply::Release(None));
    assert_eq!((key.holders(), key.summary()), before);
}

#[test]
fn coalescing_wins_over_cancelling() {
    let mut key = KeyTwin::default();
    acquire(&mut key, 1, "holder");
    let Reply::Enqueue(first) = enqueue(&mut key, 2, "a", false, Some("same")) else {
        panic!("an enqueue's reply");
    };
    assert!(first.cancelled.is_empty());
    let Reply::EnqueueChecking { request, candidate } =
        enqueue(&mut key, 3, "b", true, Some("same"))
    else {
        panic!("a coalesce candidate to check");
    };
    let t = decide(
        &mut key,
        4,
        Input::EnqueueChecked {
            request,
            candidate,
            liveness: Liveness::Alive,
        },
    )
    .expect("second phase");
    let Reply::Enqueue(reply) = t.reply else {
        panic!("an enqueue's reply");
    };
    assert_eq!(reply.coalesced_into, Some(id("a")));
    assert!(reply.cancelled.is_empty());
    assert!(!holder_of(&key, "holder").cancelling);
    assert!(t.effects.is_empty());
}

#[test]
fn cancel_holders_without_supersedes_or_on_acquire_is_refused_by_name_and_changes_nothing() {
    let mut key = KeyTwin::default();
    acquire(&mut key, 1, "holder");
    let summary = key.summary();
    let plain = EnqueueRequest {
        supersedes: false,
        id: id("x"),
        input_hash: None,
        options: Options {
            cancel_holders: true,
            ..Options::default()
        },
    };
    let refusal = decide(&mut key, 2, Input::Enqueue(plain)).expect_err("refused");
    assert_eq!(
        refusal.message(),
        "BatonError: cancelHolders needs supersedes: true (only a superseding enqueue cancels holders)"
    );
    let on_acquire = AcquireRequest {
        id: id("y"),
        options: Options {
            cancel_holders: true,
            ..Options::default()
        },
    };
    let refusal = decide(&mut key, 3, Input::Acquire(on_acquire)).expect_err("refused");
    assert_eq!(refusal.field(), "cancelHolders");
    assert_eq!(key.summary(), summary);
    assert_eq!(key.member(&id("x")), Member::Stranger);
}
