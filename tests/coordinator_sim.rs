//! A seeded, deterministic simulation of the Coordinator core (contract §1
//! to §1c, §9's log lines and §10's history).
//!
//! The real decision functions run over one [`KeyTwin`] per key (one
//! to three keys, served by one object with one alarm) against three
//! models: the Workflow engine (instances of one to three Workflows that are
//! not yet created, running, complete, terminated or errored; a binding
//! finds only its own Workflow's instances), the Durable Object shell (the
//! two-phase RPCs, the bounded wake loop, best-effort terminations, the
//! holder-check alarm, every instance reached through the Workflow the core
//! remembered for it) and the callers (`withKey`: acquire, wait for the turn
//! event with a timeout, body, release, or give up waiting and release as a
//! waiter; and triggers that `enqueue` an id, plain, superseding or
//! coalescing on a small set of input hashes, then create the instance soon,
//! late (within or past the enqueue grace) or never). Calls name a key's
//! limit (1 to 4) now and then, raising and lowering it.
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
//! Checked after every step: the core's invariants; safety (a live instance
//! in its body holds a slot of its key, confirmed; and no key has more
//! holders than its limit, except holders from before a lowering, whose
//! number only falls); and that each decision changed the store only as the
//! contract allows, which is the reference model of the queue: waiters that
//! stay keep their order, only the caller joins and only at the back (FIFO
//! by arrival), slots pass only to the front of the queue, a holder leaves
//! only when it released or was reported dead, and a freed slot never stays
//! free while someone waits. At the end of each seed, faults and arrivals
//! stop and the system drains; then every instance must have run its body,
//! been told it was superseded, been coalesced away, or died, and a fresh
//! probe instance per key must get it and leave nothing but dead holders.
//!
//! Contract §1b: some instances register with `grant`. They wait for the
//! event type their `pending` reply named, and a grant event puts them in
//! their body with its fence, no acquire after it; a failed send (lost)
//! stays to send and the alarm retries it, an accepted one is confirmed by
//! a later step (which a reset may lose: a crash between effect and
//! commit). Some instances run a second section on the same key, a second
//! registration. An oracle of the simulation's own checks, after every
//! decision and send: each grant takes the key's next fence (its own
//! count of grants, from the holders that appeared); a turn number belongs
//! to one instance on one key and to one registration (a registration ends
//! with the instance's release; its turns never come back); a grant event
//! names a slot its target holds, with that slot's fence; and an instance
//! in its body holds the fence it was told.
//!
//! Faults are the shared vocabulary's (`tests/common/faults.rs`): crashes
//! before a commit, resets between a first phase and the rest, replies
//! lost after the commit (callers retry after their step's delay), lost,
//! late, duplicate and spurious alarms, lost, late and duplicate events and
//! terminations, deaths, `Unknown` statuses; the engine also purges some
//! ended instances (then "not found").
//!
//! The oracle judges by its own rules, never the core's helpers nor what a
//! decision says it did: its own reading of dead (ended, or not found past
//! the grace counted from the enqueue it recorded, at once for an id never
//! enqueued);
//! a holder dead by that rule and still holding as it was checked must
//! lose its slot; an enqueue with `supersedes` drops exactly every other
//! waiter, unless its caller holds or was superseded itself (a retry after
//! a newer enqueue won); the alarm is needed when someone waits behind the
//! holders or a hand-over is unconfirmed. Time steps land exactly on a
//! grace's end (and the ms before), the alarm, a wait's deadline.
//!
//! Contract §1c: in two thirds of the seeds instances register with
//! priorities and tenants (drawn from a stream of the seed's own, so the
//! other draws stay what they were). The oracle keeps each instance's
//! share itself and judges every decision's grants to waiters as a batch
//! from the front of the order: each goes to the highest priority still
//! waiting and to its tenant's earliest waiter, and within a priority no
//! tenant is granted while another tenant that had a waiter at its last
//! grant, and has had one ever since, got none (nor twice at once while
//! one waits with none); a `pending` place is exact with one share, else
//! behind every higher priority and earlier waiter of its tenant.
//!
//! Contract §1c onBusy skip: in half the seeds some instances call with
//! `onBusy: "skip"`. The model judges busy by its own rule (an id not
//! registered, on a key with a waiter or as many holders as the limit the
//! call names, for an enqueue; never with a free slot and nobody waiting,
//! never pending, for an acquire); a skipped trigger creates nothing and a
//! skipped `withKey` ends without its body.
//!
//! Contract §10 and §9: every decision's transition says what the key's
//! list entry is due and which log line it prints, and writes the key's
//! history. The oracle keeps its own records (when each waiter joined,
//! when each holder got its slot and how long it had waited, the fences it
//! counted, which holders released and which a check found dead) and
//! judges by its own rules, after every decision: the counts (grants,
//! hand-offs: slots a holder or a dead holder gave up that a waiter got,
//! dead holders, superseded, coalesced), `recent` (holds that ended dead
//! or with a waiter behind them, newest 50), the owed report mark (a
//! shard confirms it now and then), the report the decision says is due,
//! and its log line word for word. The grace of a holder is counted from
//! the oracle's own record of its enqueue, never the core's holder record.
//! A grant's acceptance sometimes re-enters late, after its holder
//! released or holds a later grant: it must then change nothing.
//!
//! Issue 38, the two layouts: the twin keeps a key's waiters as the rows
//! do, in arrival order alone while they are of one share (`Layout::Sole`:
//! its reads of the front and of a place go by arrival) and with each
//! tenant's turn once a second share joins (`Layout::Shared`: its reads
//! see only waiters counted in a turn, as the rows' share index does). The
//! same oracle judges the grants and places both give, and that the move
//! from one to the other keeps every waiter in its place; the run must
//! read in both and move keys over (its coverage check).
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 1,000,000).
//! `BATON_SIM_SEED=s` runs one seed; add `BATON_SIM_TRACE=1` to print its steps.

/// Contract §1d, `cancelHolders`: its own simulation and named cases.
#[path = "coordinator_sim/cancel.rs"]
mod cancel;
mod common;

use common::{
    assert_reached, report_failure, simulate, End, Fault, Faults, Injected, Life, Rng, SimStats,
};

use baton::busy::reporter::Due;
use baton::coordinator::history::{HistoryWrite, Hold, Outcome};
use baton::coordinator::log::LogKind;
use baton::coordinator::{
    assert_invariants_deep, needs_holder_check, AcquireReply, AcquireRequest, EnqueueReply,
    EnqueueRequest, Holder, HolderState, Input, KeyTwin, Liveness, Member, Options, Place, Reply,
    Turn, Waiter,
};
use baton::coordinator::{health, Write};
use baton::health::{KeyState, STATES};
use baton::transition::Alarm;
use baton::workflow::Status;
use common::Said as Line;
use decisions::{
    acquire, acquire_after_check, enqueue, enqueue_after_check, grant_accepted, release, said,
    steer, tick, tick_after_check, woken_after_check,
};

/// A call's first phase as the shell model acts on it: an enqueue that
/// finished, or whose coalesce candidate is to be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EnqueueStep {
    Done(EnqueueReply),
    CheckCandidate(Waiter),
}

/// A finished decision: its reply, and the holders its `Effect::Wake`s
/// name, as its writes left them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decided<R> {
    reply: R,
    wake: Vec<Holder>,
}

/// An acquire's first phase: finished, or waiting for `holder`'s check
/// while `wake` (handed slots ahead of the caller) are woken.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AcquireStep {
    Done(Decided<AcquireReply>),
    Check { holder: Holder, wake: Vec<Holder> },
}

/// The core as the simulation's shell model calls it: each call is one
/// `coordinator::decide` on the view `KeyTwin::load` gives for its
/// input, its writes applied with `coordinator::apply`, and its transition
/// read back into the phase a shell acts on (the reply, and the holders
/// its `Effect::Wake`s name, as the writes left them).
mod decisions {
    use super::{AcquireStep, Decided, EnqueueStep};
    use crate::common::{said_one, Said as Line};
    use baton::busy::reporter::Due;
    use baton::coordinator::Effect;
    use baton::coordinator::{
        self, AcquireReply, AcquireRequest, EnqueueReply, EnqueueRequest, Holder, Input, KeyTwin,
        Layout, Liveness, Read, Reply, Settings, Transition, View, Write,
    };
    use baton::error::BatonError;
    use baton::ident::InstanceId;
    use baton::transition::{Alarm, Figures};
    use baton::workflow::Status;
    use std::cell::RefCell;

    /// What a decision said beside its reply and writes: its log line,
    /// the report it says the key's list entry is due, and what it asks
    /// of the holder-check alarm.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Said {
        /// The line as it prints (its reason worded by the core).
        pub log: Option<Line>,
        /// The §9a figures the line's data point carries.
        pub figures: Option<Figures>,
        pub report: Due,
        pub alarm: Alarm,
    }

    thread_local! {
        /// What each decision since the last [`said`] said, in order, for
        /// the oracle to judge against its own rules.
        static SAID: RefCell<Vec<Said>> = const { RefCell::new(Vec::new()) };
    }

    /// What the decisions since the last call said (and forgets it).
    pub fn said() -> Vec<Said> {
        SAID.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }

    thread_local! {
        /// Reads of the front or a place in the sole and the shared layout,
        /// and spreads, since the last [`layouts`].
        static LAYOUTS: RefCell<[u64; 3]> = const { RefCell::new([0; 3]) };
    }

    /// The layouts the decisions since the last call read and spread
    /// (and forgets them).
    pub fn layouts() -> [u64; 3] {
        LAYOUTS.with(|l| std::mem::take(&mut *l.borrow_mut()))
    }

    fn count_layouts(view: &View, writes: &[Write]) {
        LAYOUTS.with(|l| {
            let mut l = l.borrow_mut();
            for read in &view.reads {
                if let Read::Front(_, layout, ()) | Read::Place { layout, .. } = read {
                    l[usize::from(*layout == Layout::Shared)] += 1;
                }
            }
            l[2] += writes.iter().filter(|w| **w == Write::Spread).count() as u64;
        });
    }

    fn run(
        store: &mut KeyTwin,
        now_ms: u64,
        grace_ms: u64,
        input: Input,
    ) -> Result<(Reply, Vec<Holder>), BatonError> {
        let view = store.load(&input);
        let settings = Settings {
            grace_ms,
            workflow: super::WORKFLOWS[0].to_owned(),
        };
        let Transition {
            reply,
            writes,
            effects,
            state,
            log,
            report,
            alarm,
        } = coordinator::decide(&view, &settings, now_ms, input)?;
        let figures = log.as_ref().map(|l| l.figures.clone());
        let log = log.as_ref().map(said_one);
        SAID.with(|s| {
            let said = Said {
                log,
                figures,
                report,
                alarm,
            };
            s.borrow_mut().push(said)
        });
        count_layouts(&view, &writes);
        coordinator::apply(store, &writes);
        assert_eq!(
            state.summary,
            store.summary(),
            "the transition's state is the applied one"
        );
        let holders = store.holders();
        let wake = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Wake(w) => Some(
                    holders
                        .iter()
                        .find(|h| h.id == w.id)
                        .expect("a woken instance holds")
                        .clone(),
                ),
                _ => None,
            })
            .collect();
        Ok((reply, wake))
    }

    /// No grace is judged where the old phase took none.
    const NO_GRACE: u64 = 0;

    pub fn enqueue(
        store: &mut KeyTwin,
        now_ms: u64,
        request: &EnqueueRequest,
    ) -> Result<EnqueueStep, BatonError> {
        match run(store, now_ms, NO_GRACE, Input::Enqueue(request.clone()))?.0 {
            Reply::Enqueue(reply) => Ok(EnqueueStep::Done(reply)),
            Reply::EnqueueChecking { candidate, .. } => Ok(EnqueueStep::CheckCandidate(candidate)),
            other => panic!("enqueue replied {other:?}"),
        }
    }

    pub fn enqueue_after_check(
        store: &mut KeyTwin,
        now_ms: u64,
        request: &EnqueueRequest,
        candidate: &baton::coordinator::Waiter,
        liveness: Liveness,
    ) -> Result<EnqueueReply, BatonError> {
        let input = Input::EnqueueChecked {
            request: request.clone(),
            candidate: candidate.clone(),
            liveness,
        };
        match run(store, now_ms, NO_GRACE, input)?.0 {
            Reply::Enqueue(reply) => Ok(reply),
            other => panic!("enqueue's second phase replied {other:?}"),
        }
    }

    pub fn acquire(
        store: &mut KeyTwin,
        now_ms: u64,
        request: &AcquireRequest,
    ) -> Result<AcquireStep, BatonError> {
        let (reply, wake) = run(store, now_ms, NO_GRACE, Input::Acquire(request.clone()))?;
        Ok(match reply {
            Reply::Acquire(reply) => AcquireStep::Done(Decided { reply, wake }),
            Reply::AcquireChecking { holder, .. } => AcquireStep::Check { holder, wake },
            other => panic!("acquire replied {other:?}"),
        })
    }

    pub fn acquire_after_check(
        store: &mut KeyTwin,
        now_ms: u64,
        grace_ms: u64,
        request: &AcquireRequest,
        checked: &Holder,
        answer: impl Into<Status>,
    ) -> Decided<AcquireReply> {
        let input = Input::AcquireChecked {
            request: request.clone(),
            holder: checked.clone(),
            answer: answer.into(),
        };
        match run(store, now_ms, grace_ms, input).expect("a second phase is never refused") {
            (Reply::Acquire(reply), wake) => Decided { reply, wake },
            other => panic!("acquire's second phase replied {other:?}"),
        }
    }

    pub fn release(
        store: &mut KeyTwin,
        now_ms: u64,
        id: &InstanceId,
    ) -> Decided<Option<InstanceId>> {
        match run(store, now_ms, NO_GRACE, Input::Release(id.clone())).expect("never refused") {
            (Reply::Release(reply), wake) => Decided { reply, wake },
            other => panic!("release replied {other:?}"),
        }
    }

    pub fn woken_after_check(
        store: &mut KeyTwin,
        now_ms: u64,
        grace_ms: u64,
        checked: &Holder,
        answer: impl Into<Status>,
    ) -> Vec<Holder> {
        let input = Input::Woken {
            holder: checked.clone(),
            answer: answer.into(),
        };
        run(store, now_ms, grace_ms, input)
            .expect("never refused")
            .1
    }

    /// The engine accepted `sent`'s grant event (its status is not asked
    /// here: the model asks it apart).
    pub fn grant_accepted(store: &mut KeyTwin, sent: &Holder) {
        assert!(matches!(sent.turn, baton::coordinator::Turn::Own(_)));
        let input = Input::Accepted {
            holder: sent.clone(),
        };
        let wake = run(store, 0, NO_GRACE, input).expect("never refused").1;
        assert!(wake.is_empty(), "an accepted grant hands nothing on");
    }

    /// §11: an operator's pause, resume or limit, one decision under the gate.
    pub fn steer(store: &mut KeyTwin, now_ms: u64, input: Input) -> (Reply, Vec<Holder>) {
        run(store, now_ms, NO_GRACE, input)
            .expect("a steering input from the edge is never refused")
    }

    pub fn tick(store: &KeyTwin) -> Vec<Holder> {
        let mut scratch = store.clone();
        let due = match run(&mut scratch, 0, NO_GRACE, Input::Tick).expect("never refused") {
            (Reply::Ticked(due), _) => due,
            other => panic!("tick replied {other:?}"),
        };
        // A tick only names holders to check: no line, nothing for the list.
        let said = SAID.with(|s| s.borrow_mut().pop());
        assert!(
            matches!(&said, Some(s) if s.log.is_none() && s.report == Due::Nothing),
            "a tick said something: {said:?}"
        );
        due
    }

    /// Each answer re-enters on its own, as the driver feeds them.
    pub fn tick_after_check(
        store: &mut KeyTwin,
        now_ms: u64,
        grace_ms: u64,
        answers: &[(Holder, impl Into<Status> + Copy)],
    ) -> Vec<Holder> {
        let mut wake: Vec<Holder> = Vec::new();
        for (holder, answer) in answers {
            let input = Input::TickChecked {
                holder: holder.clone(),
                answer: (*answer).into(),
            };
            wake.extend(
                run(store, now_ms, grace_ms, input)
                    .expect("never refused")
                    .1,
            );
        }
        wake
    }
}
use baton::ident::{Ident, InputHash, InstanceId, WorkflowName};
use baton::limits::{
    ENQUEUE_GRACE_MS_DEFAULT, HOLDER_CHECK_MS_DEFAULT, WAITERS_PER_KEY_MAX,
    WAKE_ATTEMPTS_PER_CALL_MAX,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
/// The longest a Workflow step waits before it retries a failed call.
const RETRY_DELAY_MS_MAX: u64 = 3_000;
/// How soon the platform retries an alarm whose handler did not finish.
const ALARM_RETRY_MS: u64 = 1_000;
/// Weight of an ordinary ready action (faults are weighted against this).
const W: u64 = 100;
/// The Workflow bindings a seed may use; the first is the default binding.
const WORKFLOWS: [&str; 3] = ["WORKFLOW", "DEPLOY", "ROLLBACK"];
/// What the model's binding answers about a running instance, in turn:
/// each a status the platform gives a live one.
const ALIVE: [Status; 6] = [
    Status::Running,
    Status::Waiting,
    Status::Queued,
    Status::Paused,
    Status::WaitingForPause,
    Status::Other,
];

/// The contract's reading of a binding's answer (§1), the oracle's own:
/// ended (complete, errored, terminated) is dead; not found is dead past
/// the grace; a failed call is unknown (alive, for taking a key); any
/// other status is alive.
fn liveness_of(answer: Status) -> Liveness {
    match answer {
        Status::Complete | Status::Errored | Status::Terminated => Liveness::Dead,
        Status::NotFound => Liveness::NotFound,
        Status::Failed => Liveness::Unknown,
        Status::Queued
        | Status::Running
        | Status::Paused
        | Status::Waiting
        | Status::WaitingForPause
        | Status::Other => Liveness::Alive,
    }
}

// ---------------------------------------------------------------------------
// The model: instances, in-flight work, and how a seed behaves.

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
    /// In `step.waitForEvent` for the turn event of type `turn`.
    Waiting {
        deadline_ms: u64,
        turn: Turn,
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
    /// The key its `withKey` takes.
    key: usize,
    /// Index into [`WORKFLOWS`]: the Workflow it is an instance of.
    workflow: usize,
    life: Life,
    script: Script,
    /// When the trigger creates a registered instance.
    create_at: Option<u64>,
    /// The trigger will never create it (it crashed, gave up, or coalesced).
    abandoned: bool,
    /// Between a "granted" it heard and the start of its release.
    in_body: bool,
    /// Events delivered while not waiting for their type, buffered by the
    /// engine for a later `waitForEvent` of that type: (type, grant fence).
    inbox: Vec<(Turn, Option<u64>)>,
    /// Registers with `grant` (contract §1b).
    grant: bool,
    /// Its calls say `onBusy: "skip"` (§1c).
    skip: bool,
    /// The fence of the slot it believes it holds, while in its body.
    fence: Option<u64>,
    /// Entered its body on a grant event (the core may not have recorded
    /// the engine's acceptance yet: the holder may still read `Handed`).
    by_event: bool,
    /// More `withKey` sections on the same key after this one.
    sections_left: u32,
    ran: bool,
    told_superseded: bool,
    coalesced: bool,
    /// Answered busy (§1c onBusy skip): its enqueue created nothing, or its
    /// `withKey` returned without running its body.
    told_busy: bool,
    /// Contract §1c: the priority and tenant it registers with.
    share: Share,
}

#[derive(Debug, Clone)]
enum OpKind {
    /// A trigger's `enqueue` for the instance `Op::caller`.
    Enqueue(EnqueueRequest),
    Acquire(AcquireRequest),
    Release,
    /// The shell waking a holder just handed a slot (this snapshot);
    /// `attempts` counts status checks so far in this wake loop.
    Wake {
        holder: Holder,
        attempts: u32,
    },
    /// The holder-check alarm, for one key.
    Tick,
    /// The shell terminating superseded instances, after the commit, each
    /// through the Workflow remembered for it.
    Terminate(Vec<(usize, Option<WorkflowName>)>),
    /// The shell recording that the engine accepted this hand-over's grant event.
    Confirm(Holder),
}

#[derive(Debug, Clone)]
enum Phase {
    Start,
    /// Waiting for the status of this instance, asked through this binding.
    Check(usize, Option<WorkflowName>),
    /// The binding's answer known; phase 2 not yet run.
    Checked(usize, Status),
    /// The alarm waits for the statuses of these holders.
    CheckMany(Vec<Holder>),
    CheckedMany(Vec<(Holder, Status)>),
}

#[derive(Debug, Clone)]
struct Op {
    kind: OpKind,
    key: usize,
    phase: Phase,
    /// The instance whose call (or trigger) awaits the reply; `None` for the
    /// object's own work.
    caller: Option<usize>,
    /// The caller gave up on this call and retried; the object still runs it,
    /// but nobody hears the reply.
    orphan: bool,
    attempt: u32,
    /// A retried call runs no sooner than this (a Workflow step's retry
    /// delay): meanwhile other calls change the key under it.
    not_before: u64,
    /// The holder whose liveness a first phase asked about.
    checked: Option<Holder>,
    /// The waiter an enqueue might coalesce into.
    candidate: Option<Waiter>,
}

impl Op {
    fn shell(kind: OpKind, key: usize, phase: Phase) -> Op {
        Op {
            kind,
            key,
            phase,
            caller: None,
            orphan: false,
            attempt: 1,
            not_before: 0,
            checked: None,
            candidate: None,
        }
    }

    fn call(kind: OpKind, key: usize, caller: usize, attempt: u32) -> Op {
        Op {
            kind,
            key,
            phase: Phase::Start,
            caller: Some(caller),
            orphan: false,
            attempt,
            not_before: 0,
            checked: None,
            candidate: None,
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
    /// §11: an operator pauses, resumes or sets the limit of a key.
    Steer(usize),
}

/// How one seed behaves; drawn from the seed. Weights are against [`W`].
#[derive(Debug)]
struct Params {
    keys: usize,
    workflows: usize,
    /// How often a call names a limit, and the largest it names.
    limit_pct: u64,
    /// §1f: how often a call names a cap on the key's waiters.
    max_waiting_pct: u64,
    limit_max: u64,
    grace_ms: u64,
    /// Arrivals stop at this many instances...
    instances_max: usize,
    /// ...and pause while this many are live or about to be created, so the
    /// keys stay busy for the whole faulty stretch.
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
    /// How often a time step lands exactly on a boundary the model
    /// computes (a grace's end, an alarm, a wait's deadline).
    boundary_pct: u64,
    /// Instances that register with `grant`, and that run a second section.
    grant_pct: u64,
    second_pct: u64,
    /// §1c: instances whose calls say `onBusy: "skip"`.
    skip_pct: u64,
    /// §11: how often an operator steers a key (weight against [`W`]).
    steer_w: u64,
}

impl Params {
    fn draw(rng: &mut Rng) -> Params {
        // Half the seeds keep to §1 (one key, one holder, one Workflow).
        let extended = rng.below(2) == 0;
        Params {
            keys: if extended {
                rng.range(1, 3) as usize
            } else {
                1
            },
            workflows: if extended {
                rng.range(1, 3) as usize
            } else {
                1
            },
            limit_pct: if extended { rng.range(0, 30) } else { 0 },
            max_waiting_pct: if extended { rng.range(0, 20) } else { 0 },
            limit_max: rng.range(1, 4),
            grace_ms: *rng.pick(&[ENQUEUE_GRACE_MS_DEFAULT, 5_000, 1]),
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
            boundary_pct: rng.range(5, 40),
            grant_pct: [0, 50, 100][rng.below(3) as usize],
            second_pct: [0, 30][rng.below(2) as usize],
            skip_pct: [0, 0, 10, 40][rng.below(4) as usize],
            // Drawn from the seed's own stream, so the other draws stay
            // what they were.
            steer_w: 0,
        }
    }
}

/// §11, the oracle's own record of what the operator did to a key, and
/// of the limit the callers named last (§1a), which an override hides
/// and clearing it brings back.
#[derive(Debug, Clone)]
struct Steering {
    /// Paused since, with the latest reason: as `inspect` shows it.
    paused: Option<(u64, Option<String>)>,
    /// The limit the last call that recorded one named (1 until one
    /// does), whether or not an override hides it.
    callers_limit: u32,
    /// The operator's override in force.
    limit_override: Option<u32>,
    /// While an override is in force: the callers' limit when it was set
    /// and every limit a call named since; clearing it must take one of
    /// them (and `callers_limit` says which).
    callers_named: Vec<u32>,
}

impl Default for Steering {
    fn default() -> Self {
        Steering {
            paused: None,
            callers_limit: 1,
            limit_override: None,
            callers_named: Vec::new(),
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
    /// Grants while another instance held the same key.
    granted_beside_others: u64,
    superseded: u64,
    coalesced: u64,
    /// §1c onBusy skip: enqueues and acquires answered busy.
    busy: u64,
    /// §1f: enqueues and acquires answered busy because the key was full.
    full: u64,
    /// A slot moved because a holder was reported dead.
    dead_handoffs: u64,
    /// "Not found" answers judged within the grace (not dead).
    within_grace: u64,
    /// "Not found" answers judged past the grace, or for an acquire-only id.
    past_grace: u64,
    /// Calls that lowered a key's limit below its holders.
    limit_lowered_below_holders: u64,
    /// Holders of a Workflow other than the default.
    other_workflow_holders: u64,
    wake_loops_cut: u64,
    faults: Injected,
    /// Time steps that landed exactly on a boundary.
    boundary_steps: u64,
    /// Status checks judged exactly at the end of a grace.
    checks_at_grace_end: u64,
    /// Retried superseding enqueues from an id superseded meanwhile.
    superseded_retries: u64,
    /// Grant events sent, and bodies entered on one (no acquire after the wait).
    grant_events: u64,
    entered_by_event: u64,
    /// Accepted grants whose confirmation a reset or drop lost.
    confirms_lost: u64,
    /// Acceptances that confirmed the hand-over they were sent for, and
    /// those that came late, from an earlier grant.
    confirms_applied: u64,
    confirms_late: u64,
    second_sections: u64,
    /// The longest drain seen, against [`DRAIN_STEPS_MAX`].
    drain_steps_max: u64,
    /// §1c: grants to a waiter that came after another still waiting
    /// (a higher priority, or another tenant's turn).
    grants_out_of_arrival: u64,
    /// §11: pauses, releases that handed nothing on while paused, resumes
    /// and limit overrides that granted, and overrides cleared.
    steer_pauses: u64,
    released_while_paused: u64,
    resume_grants: u64,
    override_grants: u64,
    overrides_cleared: u64,
    /// §10a: decisions that left their key in each state, in
    /// `health::STATES` order.
    states: [u64; 6],
    /// Issue 38: reads of the front or of a place in each layout (sole,
    /// shared), and keys whose waiters moved from one to the other.
    layouts: [u64; 3],
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
        self.steps += o.steps;
        self.granted += o.granted;
        self.granted_beside_others += o.granted_beside_others;
        self.superseded += o.superseded;
        self.coalesced += o.coalesced;
        self.busy += o.busy;
        self.full += o.full;
        self.dead_handoffs += o.dead_handoffs;
        self.within_grace += o.within_grace;
        self.past_grace += o.past_grace;
        self.limit_lowered_below_holders += o.limit_lowered_below_holders;
        self.other_workflow_holders += o.other_workflow_holders;
        self.wake_loops_cut += o.wake_loops_cut;
        self.faults.add(&o.faults);
        self.boundary_steps += o.boundary_steps;
        self.checks_at_grace_end += o.checks_at_grace_end;
        self.superseded_retries += o.superseded_retries;
        self.grant_events += o.grant_events;
        self.entered_by_event += o.entered_by_event;
        self.confirms_lost += o.confirms_lost;
        self.confirms_applied += o.confirms_applied;
        self.confirms_late += o.confirms_late;
        self.second_sections += o.second_sections;
        self.drain_steps_max = self.drain_steps_max.max(o.drain_steps_max);
        self.grants_out_of_arrival += o.grants_out_of_arrival;
        self.steer_pauses += o.steer_pauses;
        self.released_while_paused += o.released_while_paused;
        self.resume_grants += o.resume_grants;
        self.override_grants += o.override_grants;
        self.overrides_cleared += o.overrides_cleared;
        for (mine, theirs) in self.states.iter_mut().zip(o.states) {
            *mine += theirs;
        }
        for (mine, theirs) in self.layouts.iter_mut().zip(o.layouts) {
            *mine += theirs;
        }
    }
}

/// A key's state as the reference checks compare it, before and after a decision.
#[derive(Debug, Clone, PartialEq)]
struct Snap {
    limit: u32,
    holders: Vec<Holder>,
    queue: Vec<Waiter>,
    /// §1f: the key's cap on its waiters.
    max_waiting: Option<u32>,
}

impl Snap {
    fn holder(&self, id: &InstanceId) -> Option<&Holder> {
        self.holders.iter().find(|h| h.id == *id)
    }

    fn waits(&self, id: &InstanceId) -> bool {
        self.queue.iter().any(|w| w.id == *id)
    }
}

/// Which call a decision is, as the oracle's history and log rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Enqueue,
    Acquire,
    Release,
    /// A holder check's answer (an acquire's, the alarm's, a wake's): a
    /// holder it removes was found dead.
    Check,
    /// The engine accepted a grant event.
    Confirm,
    /// §11: an operator's pause, resume or limit.
    Steer,
}

/// The oracle's own record of a key's history (contract §10): its counts
/// but `grants` (the fence oracle counts those), its recent holds (newest
/// last), when it last found a holder dead, and whether a list report is
/// owed.
#[derive(Debug, Default, Clone)]
struct History {
    hand_offs: u64,
    dead_holders: u64,
    superseded: u64,
    coalesced: u64,
    recent: VecDeque<Hold>,
    dead_at_ms: Option<u64>,
    owed: bool,
}

/// The oracle's own reading of "the most recent holds kept" (contract §10).
const RECENT_KEPT: usize = 50;

/// What one decision was allowed to do to the key.
struct Allowed<'a> {
    by: By,
    /// May join the back of the queue, leave it, take a free slot, confirm
    /// a hand-over, or change its own workflow; its call may change the limit.
    caller: Option<&'a InstanceId>,
    /// Waiters this decision reported as superseded.
    dropped: &'a [Waiter],
    /// The holders that released, or that this decision was told are dead.
    take_from: &'a [InstanceId],
    /// The holders that must leave: reported dead (by the model's rule)
    /// while they still hold as they were checked.
    must_take: &'a [InstanceId],
    /// Whether the decision hands free slots on (every one but `enqueue`).
    fills: bool,
}

// ---------------------------------------------------------------------------
// The simulation.

struct Sim {
    seed: u64,
    rng: Rng,
    p: Params,
    now_ms: u64,
    stores: Vec<KeyTwin>,
    insts: Vec<Inst>,
    by_id: BTreeMap<InstanceId, usize>,
    ops: Vec<Op>,
    /// Events in flight: target, type, and a grant's fence.
    events: Vec<(usize, Turn, Option<u64>)>,
    /// The oracle's own count of each key's grants: the next grant's fence
    /// is one more.
    grants: Vec<u64>,
    /// The fence the oracle saw each holder granted with, by key.
    fence_of: BTreeMap<(usize, InstanceId), u64>,
    /// Which instance a key's turn number belongs to, and the turns of
    /// registrations that ended (released), which must never be seen again.
    turn_owner: BTreeMap<(usize, u64), usize>,
    retired: BTreeSet<(usize, u64)>,
    alarm_at: Option<u64>,
    /// Every instance the model says an enqueue superseded (its own
    /// account, never the core's reply).
    superseded: BTreeSet<usize>,
    /// Each key's holders after the previous step, for the limit check.
    prev_holders: Vec<usize>,
    faults: Faults,
    arrivals: bool,
    /// The probes run: they wait as long as it takes (a key may be held by
    /// an instance never created for up to the grace).
    probing: bool,
    trace: bool,
    stats: Stats,
    candidates: Vec<(u64, Action)>,
    /// §1c, the oracle's own: how this seed draws priorities and tenants.
    shares: Shares,
    /// Per key, per share: the shares of its priority that had a waiter
    /// at its last grant and have had one since, with no grant yet.
    owed: Vec<BTreeMap<Share, BTreeSet<Share>>>,
    /// §10, the oracle's own: each key's history.
    history: Vec<History>,
    /// When each waiter joined its key's queue, by the oracle's clock.
    joined_at: BTreeMap<(usize, InstanceId), u64>,
    /// When each holder got its slot, and how long it had waited for it.
    granted_at: BTreeMap<(usize, InstanceId), (u64, u64)>,
    /// When an enqueue registered each id still registered (§1a: its
    /// grace counts from there), never read from the core's records.
    enqueued_at: BTreeMap<(usize, InstanceId), u64>,
    /// §11, the oracle's own: what the operator did to each key, and
    /// whether the key was paused before the operator's decision being
    /// judged (`None`: the decision is a caller's, which changes nothing).
    steering: Vec<Steering>,
    paused_before: Option<bool>,
    /// §10a, the oracle's own: since when each holder's checks have failed
    /// in a row (the model's `Failed` answers to any check of it).
    failing_since: BTreeMap<(usize, InstanceId), u64>,
    /// §10a, the oracle's own: each holder's last check (when, and what
    /// the model's binding answered), whoever asked it.
    last_check: BTreeMap<(usize, InstanceId), (u64, Status)>,
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed);
        // Weights against an ordinary action's [`W`] (kills, resets, lost
        // calls, callers giving up, spurious alarms), or percentages of the
        // chances to strike (the rest).
        let faults = Faults::draw(
            &mut rng,
            &[
                (Fault::InstanceDies, 15),
                (Fault::Reset, 3),
                (Fault::ResetAfterCommit, 2),
                (Fault::ReplyLost, 4),
                (Fault::AlarmSpurious, 4),
                (Fault::AlarmLost, 20),
                (Fault::AlarmDuplicate, 20),
                (Fault::EventLost, 40),
                (Fault::EventDuplicate, 30),
                (Fault::EventLate, 30),
                (Fault::StatusUnknown, 30),
            ],
        );
        let mut p = Params::draw(&mut rng);
        // §11 from a stream of the seed's own (the other draws stay what
        // they were): half the seeds steer their keys.
        p.steer_w = *Rng(seed ^ 0x5733_e11a_11c0_ffee).pick(&[0, 0, 2, 6]);
        let keys = p.keys;
        if trace {
            eprintln!("seed {seed}: {p:?}");
        }
        Sim {
            seed,
            rng,
            now_ms: 1_000_000,
            stores: vec![KeyTwin::default(); p.keys],
            prev_holders: vec![0; p.keys],
            grants: vec![0; p.keys],
            p,
            insts: Vec::new(),
            by_id: BTreeMap::new(),
            ops: Vec::new(),
            events: Vec::new(),
            fence_of: BTreeMap::new(),
            turn_owner: BTreeMap::new(),
            retired: BTreeSet::new(),
            alarm_at: None,
            superseded: BTreeSet::new(),
            faults,
            arrivals: true,
            probing: false,
            trace,
            stats: Stats::default(),
            candidates: Vec::new(),
            shares: Shares::draw(seed),
            owed: vec![BTreeMap::new(); keys],
            history: vec![History::default(); keys],
            joined_at: BTreeMap::new(),
            granted_at: BTreeMap::new(),
            enqueued_at: BTreeMap::new(),
            steering: vec![Steering::default(); keys],
            paused_before: None,
            failing_since: BTreeMap::new(),
            last_check: BTreeMap::new(),
        }
    }

    /// One seed: a faulty stretch, a drain, the end checks, then the probes.
    fn run(&mut self) {
        for _ in 0..FAULT_STEPS_PER_SEED {
            self.step();
        }
        self.faults.stop();
        self.arrivals = false;
        // The operator resumes every paused key, so the queues can drain.
        for k in 0..self.p.keys {
            if self.steering[k].paused.is_some() {
                self.steer_key(k, Input::Resume);
            }
        }
        self.note(|| "--- faults and arrivals stop; draining".into());
        self.drain();
        self.check_end();
        self.note(|| "--- probes".into());
        self.probing = true;
        let probes: Vec<usize> = (0..self.p.keys)
            .map(|k| {
                let w = self.rng.below(self.p.workflows as u64) as usize;
                self.add_instance(k, w, Life::Running, Script::Ready)
            })
            .collect();
        self.drain();
        for (k, probe) in probes.into_iter().enumerate() {
            assert!(self.insts[probe].ran, "the probe never got key {k}");
            // With a limit above 1 the probe may find a free slot beside a
            // dead holder, which then stays until someone has to wait.
            let left = self.snap(k);
            assert!(
                left.queue.is_empty()
                    && left.holders.iter().all(|h| {
                        h.state == HolderState::Holding
                            && self.insts[self.idx(&h.id)].life != Life::Running
                    }),
                "the probe left key {k} in use: {left:?}"
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
            assert!(self.step(), "stuck: nothing can happen, yet work is left");
        }
        let took = self.stats.steps - start;
        self.stats.drain_steps_max = self.stats.drain_steps_max.max(took);
    }

    fn quiescent(&self) -> bool {
        self.ops.is_empty()
            && self.events.is_empty()
            && self.stores.iter().all(|s| !needs_holder_check(s))
            && self.insts.iter().all(|i| match i.life {
                Life::Running => false,
                Life::NotCreated => i.abandoned,
                _ => true,
            })
    }

    /// After the drain, every instance is accounted for, and nothing is left
    /// that only the alarm could clear. Leftovers are allowed only as dead
    /// ids: holders that died holding with nobody waiting, or waiters queued
    /// on a key with a free slot that died (or were never created) before
    /// acquiring. The core clears those at the next `acquire`, which the
    /// probes check.
    fn check_end(&self) {
        for inst in &self.insts {
            let dead = matches!(inst.life, Life::Ended(End::Terminated | End::Errored))
                || (inst.life == Life::NotCreated && inst.abandoned && !inst.coalesced);
            assert!(
                inst.ran || inst.told_superseded || inst.coalesced || inst.told_busy || dead,
                "{} neither ran, was superseded, coalesced, told busy, nor died: {inst:?}",
                inst.id
            );
            if inst.coalesced {
                assert_eq!(inst.life, Life::NotCreated, "{} was coalesced", inst.id);
            }
            if inst.life == Life::Ended(End::Complete) {
                assert!(
                    inst.ran || inst.told_superseded || inst.told_busy,
                    "{} completed early",
                    inst.id
                );
            }
        }
        // Nothing live is left, so no instance is stuck waiting, and the
        // leftovers (all dead) are not work for the alarm.
        assert!(self.insts.iter().all(|i| i.life != Life::Running));
        for k in 0..self.p.keys {
            let left = self.snap(k);
            if !left.holders.is_empty() {
                assert!(
                    left.holders.iter().all(|h| h.state == HolderState::Holding)
                        && left.queue.is_empty(),
                    "left a hand-over or waiters behind dead holders: {left:?}"
                );
            }
            assert!(!needs_holder_check(&self.stores[k]));
        }
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
        let f = self.faults.on();
        let rate = |fault| self.faults.rate(fault);
        let mut push = |w: u64, a: Action| {
            if w > 0 {
                c.push((w, a));
            }
        };
        for (i, op) in self.ops.iter().enumerate() {
            if op.not_before <= now {
                push(W, Action::Advance(i));
            }
            if f {
                push(rate(Fault::ResetAfterCommit), Action::DropOp(i));
                if op.caller.is_some() && !op.orphan {
                    push(rate(Fault::ReplyLost), Action::Detach(i));
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
                        Script::Waiting { deadline_ms, .. } => deadline_ms <= now,
                        _ => false,
                    };
                    if ready {
                        push(W, Action::Instance(i));
                    }
                    if f {
                        push(rate(Fault::InstanceDies) / 4, Action::Kill(i));
                    }
                }
                Life::NotCreated if !inst.abandoned => {
                    live += 1;
                    if inst.create_at.is_some_and(|t| t <= now) {
                        push(W, Action::Create(i));
                    }
                    if f {
                        push(rate(Fault::InstanceDies) / 4, Action::Kill(i));
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
            push(rate(Fault::AlarmSpurious), Action::SpuriousAlarm);
            push(rate(Fault::Reset), Action::Reset);
        }
        if self.arrivals {
            for k in 0..self.p.keys {
                push(self.p.steer_w, Action::Steer(k));
            }
        }
    }

    /// Moves time to the next deadline, creation or alarm; false if there is none.
    fn jump_to_next_timer(&mut self) -> bool {
        let waits = self.insts.iter().filter_map(|i| match (i.life, i.script) {
            (Life::Running, Script::Waiting { deadline_ms, .. }) => Some(deadline_ms),
            _ => None,
        });
        let creations = self
            .insts
            .iter()
            .filter(|i| i.life == Life::NotCreated && !i.abandoned)
            .filter_map(|i| i.create_at);
        let retries = self.ops.iter().map(|o| o.not_before);
        match waits
            .chain(creations)
            .chain(retries)
            .chain(self.alarm_at)
            .filter(|t| *t > self.now_ms)
            .min()
        {
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
                // The object resets with this op in flight: between the
                // commit of a first phase (or of the decision that asked
                // for this effect) and what comes after.
                let op = self.ops.swap_remove(i);
                self.faults.count(match (&op.kind, &op.phase) {
                    (OpKind::Enqueue(_) | OpKind::Acquire(_) | OpKind::Release, Phase::Start) => {
                        Fault::CrashBeforeCommit
                    }
                    (OpKind::Tick, _) => Fault::AlarmLost,
                    (OpKind::Confirm(_) | OpKind::Terminate(_), _) => Fault::EventLost,
                    _ => Fault::ResetAfterCommit,
                });
                self.abandon(op);
            }
            Action::Detach(i) => {
                // The caller's RPC failed on its side; the object carries on.
                self.faults.count(Fault::ReplyLost);
                self.ops[i].orphan = true;
                let op = self.ops[i].clone();
                self.retry(op);
            }
            Action::Deliver(e) => {
                if e + 1 != self.events.len() {
                    // Delivered before an event sent earlier... or later:
                    // the engine keeps no order.
                    self.faults.count(Fault::EventLate);
                }
                let (target, turn, fence) = self.events.swap_remove(e);
                self.deliver(target, turn, fence);
            }
            Action::Instance(i) => self.instance_step(i),
            Action::Create(i) => {
                let inst = &mut self.insts[i];
                inst.life = Life::Running;
                inst.script = Script::Ready;
                inst.create_at = None;
            }
            Action::Kill(i) => {
                self.faults.count(Fault::InstanceDies);
                let erred = self.rng.below(2) == 0;
                let inst = &mut self.insts[i];
                if inst.life == Life::Running {
                    inst.life = if erred {
                        Life::Ended(End::Errored)
                    } else {
                        Life::Ended(End::Terminated)
                    };
                } else {
                    // The trigger crashed before creating it.
                    inst.abandoned = true;
                    inst.create_at = None;
                    inst.script = Script::Done;
                }
            }
            Action::FireAlarm => {
                let at = self.alarm_at.take().expect("a due alarm");
                if self.faults.strikes(&mut self.rng, Fault::AlarmLost) {
                    // Not delivered: the platform tries again later.
                    self.alarm_at = Some(self.now_ms + ALARM_RETRY_MS);
                    return;
                }
                if self.now_ms > at {
                    self.faults.count(Fault::AlarmLate);
                }
                self.start_ticks();
                if self.faults.strikes(&mut self.rng, Fault::AlarmDuplicate) {
                    self.start_ticks();
                }
            }
            Action::SpuriousAlarm => {
                self.faults.count(Fault::AlarmSpurious);
                self.start_ticks();
            }
            Action::Reset => {
                // The object restarts: everything in flight is gone.
                self.faults.count(Fault::Reset);
                for op in std::mem::take(&mut self.ops) {
                    self.abandon(op);
                }
            }
            Action::AdvanceTime => self.advance_time(),
            Action::Steer(k) => {
                let input = match self.rng.below(100) {
                    0..35 => Input::Pause {
                        reason: self
                            .rng
                            .percent(50)
                            .then(|| format!("incident {}", self.rng.below(5))),
                    },
                    35..70 => Input::Resume,
                    70..88 => Input::SetLimit(Some(self.rng.range(1, self.p.limit_max + 1) as u32)),
                    _ => Input::SetLimit(None),
                };
                self.steer_key(k, input);
            }
        }
    }

    /// The times at which the contract's answer changes, by the model: a
    /// grace's end for every instance the keys hold or queue (and the ms
    /// before), the alarm, a waiter's deadline, a creation.
    fn boundaries(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for at in self.enqueued_at.values() {
            let end = at + self.p.grace_ms;
            out.extend([end.saturating_sub(1), end]);
        }
        out.extend(self.alarm_at);
        for inst in &self.insts {
            if let (Life::Running, Script::Waiting { deadline_ms, .. }) = (inst.life, inst.script) {
                out.push(deadline_ms);
            }
            out.extend(inst.create_at);
        }
        out.retain(|t| *t > self.now_ms);
        out
    }

    /// Time moves on: a little, or exactly onto a boundary, where an
    /// off-by-one shows (a status answered there is judged there).
    fn advance_time(&mut self) {
        let boundaries = self.boundaries();
        if !boundaries.is_empty() && self.rng.percent(self.p.boundary_pct) {
            self.stats.boundary_steps += 1;
            self.now_ms = *self.rng.pick(&boundaries);
        } else {
            self.now_ms += self.rng.range(1, 2_000);
        }
    }

    /// The alarm handler runs the holder check for every key of the object.
    fn start_ticks(&mut self) {
        for k in 0..self.p.keys {
            self.ops.push(Op::shell(OpKind::Tick, k, Phase::Start));
        }
    }

    /// The options a call names: its instance's Workflow (always, unless it
    /// is the default one, which is named or left out at random) and, now
    /// and then, a limit for the key.
    fn options_for(&mut self, who: usize) -> Options {
        let w = self.insts[who].workflow;
        let workflow = (w != 0 || self.rng.percent(50)).then(|| workflow(WORKFLOWS[w]));
        let limit = self
            .rng
            .percent(self.p.limit_pct)
            .then(|| self.rng.range(1, self.p.limit_max) as u32);
        let (priority, tenant) = self.insts[who].share.clone();
        Options {
            workflow,
            limit,
            grant: self.insts[who].grant,
            priority,
            tenant,
            skip: self.insts[who].skip,
            cancel_holders: false,
            // A probe (after the drain) names the widest cap: it asks
            // whether the key still moves, and a key's cap may otherwise
            // refuse it behind a waiter not created yet (§1f).
            max_waiting: if self.probing {
                Some(WAITERS_PER_KEY_MAX)
            } else {
                (self.rng.percent(self.p.max_waiting_pct)).then(|| self.rng.range(1, 4) as u32)
            },
        }
    }

    fn arrive(&mut self) {
        let key = self.rng.below(self.p.keys as u64) as usize;
        let w = self.rng.below(self.p.workflows as u64) as usize;
        if !self.rng.percent(self.p.enqueue_pct) {
            self.add_instance(key, w, Life::Running, Script::Ready);
            return;
        }
        let supersedes = self.rng.percent(self.p.supersedes_pct);
        let input_hash = self
            .rng
            .percent(self.p.hash_pct)
            .then(|| hash(&format!("h{}", self.rng.below(self.p.hashes))));
        let who = self.add_instance(key, w, Life::NotCreated, Script::Enqueuing);
        let request = EnqueueRequest {
            supersedes,
            id: self.insts[who].id.clone(),
            input_hash,
            options: self.options_for(who),
        };
        self.ops
            .push(Op::call(OpKind::Enqueue(request), key, who, 1));
    }

    fn add_instance(&mut self, key: usize, workflow: usize, life: Life, script: Script) -> usize {
        let idx = self.insts.len();
        let id = id(&format!("i{idx}"));
        self.by_id.insert(id.clone(), idx);
        let grant = self.rng.percent(self.p.grant_pct);
        let skip = !self.probing && self.rng.percent(self.p.skip_pct);
        let sections_left = u32::from(!self.probing && self.rng.percent(self.p.second_pct));
        self.insts.push(Inst {
            id,
            key,
            workflow,
            life,
            script,
            create_at: None,
            abandoned: false,
            in_body: false,
            inbox: Vec::new(),
            grant,
            skip,
            fence: None,
            by_event: false,
            sections_left,
            ran: false,
            told_superseded: false,
            coalesced: false,
            told_busy: false,
            share: self.shares.pick(),
        });
        idx
    }

    /// One step of a running instance's `withKey` code.
    fn instance_step(&mut self, i: usize) {
        let key = self.insts[i].key;
        match self.insts[i].script {
            Script::Ready => {
                self.insts[i].script = Script::Acquiring;
                let request = AcquireRequest {
                    id: self.insts[i].id.clone(),
                    options: self.options_for(i),
                };
                self.ops.push(Op::call(OpKind::Acquire(request), key, i, 1));
            }
            Script::Waiting { .. } if !self.probing && self.rng.percent(self.p.give_up_pct) => {
                // withKey throws, and releases on the way out.
                self.insts[i].script = Script::GivingUp;
                self.ops.push(Op::call(OpKind::Release, key, i, 1));
            }
            Script::Waiting { .. } => self.insts[i].script = Script::Ready, // timed out: re-check
            Script::InBody { steps_left } if steps_left > 1 => {
                self.insts[i].script = Script::InBody {
                    steps_left: steps_left - 1,
                };
            }
            Script::InBody { .. } => {
                let inst = &mut self.insts[i];
                inst.in_body = false;
                inst.fence = None;
                inst.by_event = false;
                inst.script = Script::Releasing;
                self.ops.push(Op::call(OpKind::Release, key, i, 1));
            }
            Script::After { steps_left } if steps_left > 1 => {
                self.insts[i].script = Script::After {
                    steps_left: steps_left - 1,
                };
            }
            Script::After { .. } => {
                self.insts[i].life = Life::Ended(End::Complete);
                self.insts[i].script = Script::Done;
            }
            s => unreachable!("{} has no step in {s:?}", self.insts[i].id),
        }
    }

    fn deliver(&mut self, target: usize, turn: Turn, fence: Option<u64>) {
        let inst = &mut self.insts[target];
        if inst.life != Life::Running {
            return; // sendEvent to a finished or unknown instance goes nowhere
        }
        match inst.script {
            Script::Waiting { turn: waits, .. } if waits == turn => self.woken(target, fence),
            // Buffered for a later waitForEvent of its type.
            _ => inst.inbox.push((turn, fence)),
        }
    }

    /// `step.waitForEvent` for `turn`, after a "pending".
    fn wait_for_turn(&mut self, i: usize, turn: Turn) {
        let timeout_ms = self.rng.range(500, self.p.wait_timeout_ms_max);
        let inst = &mut self.insts[i];
        if let Some(n) = inst.inbox.iter().position(|(t, _)| *t == turn) {
            let (_, fence) = inst.inbox.remove(n);
            self.woken(i, fence);
        } else {
            inst.script = Script::Waiting {
                deadline_ms: self.now_ms + timeout_ms,
                turn,
            };
        }
    }

    /// The wait returned an event: a grant (its fence) enters the body with
    /// no acquire; §1's turn event makes it acquire again.
    fn woken(&mut self, i: usize, fence: Option<u64>) {
        match fence {
            Some(fence) => {
                self.stats.entered_by_event += 1;
                self.enter_body(i, fence, true);
            }
            None => self.insts[i].script = Script::Ready,
        }
    }

    fn enter_body(&mut self, i: usize, fence: u64, by_event: bool) {
        let steps_left = self.rng.range(1, 4);
        let inst = &mut self.insts[i];
        inst.in_body = true;
        inst.ran = true;
        inst.fence = Some(fence);
        inst.by_event = by_event;
        inst.script = Script::InBody { steps_left };
    }

    // --- in-flight work ------------------------------------------------------

    fn advance(&mut self, i: usize) {
        match self.ops[i].phase.clone() {
            Phase::Check(target, via) => {
                // The status call, outside the gate: it samples the engine now,
                // and phase 2 runs at some later step.
                let answer = self.status(target, via.as_ref());
                self.ops[i].phase = Phase::Checked(target, answer);
                self.note(|| format!("  status of i{target} = {answer:?}"));
                return;
            }
            Phase::CheckMany(holders) => {
                let answers = holders
                    .into_iter()
                    .map(|h| {
                        let answer = self.status(self.idx(&h.id), h.workflow.as_ref());
                        (h, answer)
                    })
                    .collect();
                self.note(|| format!("  statuses {answers:?}"));
                self.ops[i].phase = Phase::CheckedMany(answers);
                return;
            }
            _ => {}
        }
        let op = self.ops.swap_remove(i);
        match op.kind {
            OpKind::Enqueue(_) => self.run_enqueue(op),
            OpKind::Acquire(_) => self.run_acquire(op),
            OpKind::Release => self.run_release(op),
            OpKind::Wake { .. } => self.run_wake(op),
            OpKind::Tick => self.run_tick(op),
            OpKind::Terminate(_) => self.run_terminate(op),
            OpKind::Confirm(_) => self.run_confirm(op),
        }
    }

    /// The Workflow binding `via` (the default one for `None`) asked about
    /// `target`: it finds only instances of its own Workflow.
    /// It answers as the platform does: a live instance's status varies
    /// (running, waiting for an event, queued...), an ended one's says how
    /// it ended; a failed call answers `Failed`.
    fn status(&mut self, target: usize, via: Option<&WorkflowName>) -> Status {
        if self.faults.strikes(&mut self.rng, Fault::StatusUnknown) {
            return Status::Failed;
        }
        let inst = &self.insts[target];
        let binding = via.map_or(WORKFLOWS[0], |w| w.as_str());
        if binding != WORKFLOWS[inst.workflow] {
            return Status::NotFound;
        }
        if inst.life.ended() && target.is_multiple_of(3) {
            // The engine has purged this ended instance's record: "not
            // found", dead only past the grace (or at once, never enqueued).
            return Status::NotFound;
        }
        match inst.life {
            Life::NotCreated => Status::NotFound,
            Life::Running => ALIVE[(self.now_ms as usize + target) % ALIVE.len()],
            Life::Ended(End::Complete) => Status::Complete,
            Life::Ended(End::Errored) => Status::Errored,
            Life::Ended(End::Terminated) => Status::Terminated,
        }
    }

    /// §10a by the oracle's own records: `answer`, about `id` at key `k`,
    /// is that holder's last check if it holds as the check is decided
    /// (`before`); a failed answer starts (or goes on with) its run of
    /// failures, any other ends it.
    fn saw_check(&mut self, k: usize, before: &Snap, id: &InstanceId, answer: Status) {
        if before.holder(id).is_none() {
            return;
        }
        let run = (k, id.clone());
        if answer == Status::Failed {
            self.failing_since.entry(run.clone()).or_insert(self.now_ms);
        } else {
            self.failing_since.remove(&run);
        }
        self.last_check.insert(run, (self.now_ms, answer));
    }

    /// The contract's dead (§1, §1a), by the simulation's own reading of
    /// it, never the core's: the binding says the instance ended, or cannot
    /// find it and either it was never enqueued (no grace) or its grace,
    /// counted from its enqueue, is over (at `enqueued + grace`, not a ms
    /// sooner). `Unknown` is alive.
    /// The enqueue time is the oracle's own record of `id`'s registration
    /// on key `k`, never the core's.
    fn dead(&self, k: usize, id: &InstanceId, liveness: Liveness) -> bool {
        let enqueued_ms = self.enqueued_at.get(&(k, id.clone())).copied();
        match liveness {
            Liveness::Dead => true,
            Liveness::NotFound => match enqueued_ms {
                None => true,
                Some(at) => self.now_ms >= at + self.p.grace_ms,
            },
            Liveness::Alive | Liveness::Unknown => false,
        }
    }

    /// Whether `checked`, answered `liveness`, must lose its slot now: it
    /// is dead by the model's rule and still holds as it was checked (the
    /// same record; or, ended, the same grant: a confirmation since does
    /// not save a finished instance).
    fn must_lose(&self, k: usize, before: &Snap, checked: &Holder, liveness: Liveness) -> bool {
        self.dead(k, &checked.id, liveness)
            && before.holder(&checked.id).is_some_and(|h| {
                h == checked || (liveness == Liveness::Dead && h.fence == checked.fence)
            })
    }

    /// Counts how a "not found" answer about `holder` is judged now.
    fn count_grace(&mut self, k: usize, id: &InstanceId, liveness: Liveness) {
        if liveness == Liveness::NotFound {
            let enqueued_ms = self.enqueued_at.get(&(k, id.clone())).copied();
            if enqueued_ms.is_some_and(|at| self.now_ms == at + self.p.grace_ms) {
                self.stats.checks_at_grace_end += 1;
            }
            if self.dead(k, id, liveness) {
                self.stats.past_grace += 1;
            } else {
                self.stats.within_grace += 1;
            }
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
            // Accepted, but the record of it lost: the alarm sends the
            // same grant again, which the target already has.
            OpKind::Confirm(_) => self.stats.confirms_lost += 1,
            OpKind::Enqueue(_) | OpKind::Acquire(_) | OpKind::Release => {
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
                _ => inst.life = Life::Ended(End::Errored),
            }
            return;
        }
        let mut again = Op::call(op.kind, op.key, who, op.attempt + 1);
        again.not_before = self.now_ms + self.rng.range(0, RETRY_DELAY_MS_MAX);
        self.ops.push(again);
    }

    fn run_enqueue(&mut self, mut op: Op) {
        let OpKind::Enqueue(request) = op.kind.clone() else {
            unreachable!()
        };
        let k = op.key;
        let before = self.snap(k);
        match op.phase {
            Phase::Start => match enqueue(&mut self.stores[k], self.now_ms, &request)
                .expect("the sim stays far below every limit")
            {
                EnqueueStep::Done(reply) => self.enqueued(&before, &op, &request, reply, None),
                EnqueueStep::CheckCandidate(candidate) => {
                    assert_eq!(self.snap(k), before, "a check step wrote");
                    let said = said();
                    assert!(
                        matches!(said.as_slice(), [s] if s.log.is_none() && s.report == Due::Nothing),
                        "a first phase that asks for a check said {said:?}"
                    );
                    op.phase = Phase::Check(self.idx(&candidate.id), candidate.workflow.clone());
                    op.candidate = Some(candidate);
                    self.ops.push(op);
                }
            },
            Phase::Checked(candidate, answer) => {
                let liveness = liveness_of(answer);
                let waiter = op.candidate.clone().expect("the first phase named it");
                let reply = enqueue_after_check(
                    &mut self.stores[k],
                    self.now_ms,
                    &request,
                    &waiter,
                    liveness,
                )
                .expect("the sim stays far below every limit");
                self.enqueued(&before, &op, &request, reply, Some((candidate, liveness)));
            }
            _ => unreachable!(),
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
        let k = op.key;
        self.note(|| format!("  enqueue {request:?} -> {reply:?}"));
        // Whom the contract drops, by the model: with `supersedes` (and no
        // coalescing), every other waiter, unless the caller already holds
        // or was itself superseded (a retry after a newer enqueue won: the
        // newest stays).
        let who = op.caller.expect("an enqueue has a trigger");
        let settled = before.holder(&request.id).is_some() || self.superseded.contains(&who);
        if request.supersedes && self.superseded.contains(&who) && !before.queue.is_empty() {
            self.stats.superseded_retries += 1;
        }
        // §1c onBusy skip, by the model: an id not registered, on a key with
        // a waiter or as many holders as the limit the call names.
        // §11: an operator's override wins over the call's limit, and a
        // paused key is busy.
        let stranger = !settled && !before.waits(&request.id);
        let limit = self.limit_judged(k, request.options.limit, before);
        let busy = request.options.skip
            && stranger
            && (self.steering[k].paused.is_some()
                || !before.queue.is_empty()
                || before.holders.len() as u32 >= limit);
        // §1f maxWaiting, by the model: an id not registered, not
        // superseding (which drops every other waiter first), on a key with
        // as many waiters as the cap the call names, else the key's.
        let full = !busy
            && stranger
            && !request.supersedes
            && (request.options.max_waiting.or(before.max_waiting))
                .is_some_and(|cap| before.queue.len() as u32 >= cap);
        assert_eq!(
            (reply.busy, reply.full),
            (busy || full, full),
            "BUSY/FULL: enqueue {request:?} before {before:?}"
        );
        if full {
            self.stats.full += 1;
        }
        let busy = busy || full;
        let expected: Vec<&InstanceId> =
            if request.supersedes && reply.coalesced_into.is_none() && !settled && !busy {
                before
                    .queue
                    .iter()
                    .map(|w| &w.id)
                    .filter(|id| **id != request.id)
                    .collect()
            } else {
                Vec::new()
            };
        assert_eq!(
            reply.terminated.iter().map(|w| &w.id).collect::<Vec<_>>(),
            expected,
            "the waiters {} superseded",
            request.id
        );
        // §1: a superseding enqueue with an input hash first checks the
        // earliest waiter with that hash (another id), so only a first
        // phase that found none finishes at once (or one answered busy,
        // §1c, which registers nothing and checks nothing).
        if checked.is_none()
            && request.supersedes
            && request.input_hash.is_some()
            && !settled
            && !busy
        {
            let same = before
                .queue
                .iter()
                .find(|w| w.input_hash == request.input_hash);
            assert!(
                same.is_none_or(|w| w.id == request.id),
                "{} superseded without checking {:?}, waiting with its input",
                request.id,
                same.map(|w| &w.id)
            );
        }
        let store = &self.stores[k];
        if let Some(into) = &reply.coalesced_into {
            // Coalescing registers nothing and drops nobody, and only into a
            // waiter found alive that still waits with the same input.
            assert_eq!(self.snap(k), *before, "a coalescing enqueue wrote");
            assert!(reply.terminated.is_empty() && request.supersedes);
            let (candidate, liveness) = checked.expect("coalesced without a check");
            assert_eq!(&self.insts[candidate].id, into);
            assert_eq!(
                liveness,
                Liveness::Alive,
                "coalesced into an instance not seen alive"
            );
            let Member::Waiter(waiting) = store.member(into) else {
                panic!("coalesced into a non-waiter")
            };
            assert_eq!(waiting.input_hash, request.input_hash);
        } else if busy {
            assert_eq!(self.snap(k), *before, "a busy enqueue wrote");
        } else {
            assert!(
                !matches!(store.member(&request.id), Member::Stranger),
                "enqueue of {} left it neither waiting, holding nor superseded",
                request.id
            );
        }
        // The oracle's own line: coalesced, busy, superseding, or a join.
        let line = match &reply.coalesced_into {
            Some(into) => contended(
                &request.id,
                "coalesced",
                &format!("a live waiter with the same input: {into}"),
            ),
            None if full => contended(&request.id, "full", FULL_REASON),
            None if busy => contended(&request.id, "busy", "onBusy skip: the key is busy"),
            None if expected.is_empty() => log_line(
                LogKind::Routine,
                &request.id,
                "enqueued",
                "joined the queue",
                None,
            ),
            None => contended(
                &request.id,
                "enqueued",
                &format!("superseded {} waiter(s)", expected.len()),
            ),
        };
        // An enqueue records the limit it names unless it is busy or
        // coalesces (nothing registered, nothing changed).
        let recorded = !busy && reply.coalesced_into.is_none();
        self.callers_named(k, request.options.limit, recorded);
        self.history[k].superseded += expected.len() as u64;
        self.history[k].coalesced += u64::from(reply.coalesced_into.is_some());
        self.decided(
            k,
            before,
            &request.options,
            Allowed {
                by: By::Enqueue,
                caller: Some(&request.id),
                dropped: &reply.terminated,
                take_from: &[],
                must_take: &[],
                fills: false,
            },
            line,
        );
        if !reply.terminated.is_empty() {
            let targets: Vec<(usize, Option<WorkflowName>)> = reply
                .terminated
                .iter()
                .map(|w| (self.idx(&w.id), w.workflow.clone()))
                .collect();
            self.superseded.extend(targets.iter().map(|t| t.0));
            self.stats.superseded += targets.len() as u64;
            self.ops
                .push(Op::shell(OpKind::Terminate(targets), k, Phase::Start));
        }
        if op.orphan || self.insts[who].abandoned {
            return;
        }
        // The reply is lost after the commit (the trigger's RPC failed): it
        // enqueues again after its step's retry delay, by when a newer
        // enqueue may have superseded it. Five times as likely here as a
        // call's reply elsewhere: this is the retry the rules must survive.
        let lost_pct = 5 * self.faults.rate(Fault::ReplyLost);
        if self.rng.percent(lost_pct) {
            self.faults.count(Fault::ReplyLost);
            self.retry(op.clone());
            return;
        }
        if busy {
            // The caller creates no instance.
            self.stats.busy += 1;
            let inst = &mut self.insts[who];
            inst.told_busy = true;
            inst.abandoned = true;
            inst.script = Script::Done;
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
        // The trigger crashes before it creates the instance.
        let never = self.faults.strikes(&mut self.rng, Fault::InstanceDies);
        let delay_ms = if self.rng.percent(self.p.long_delay_pct) {
            // Late: within the default grace, or past it.
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
        let OpKind::Acquire(request) = op.kind.clone() else {
            unreachable!()
        };
        let (k, id) = (op.key, request.id.clone());
        let before = self.snap(k);
        match op.phase {
            Phase::Start => {
                let step = acquire(&mut self.stores[k], self.now_ms, &request)
                    .expect("the sim stays far below every limit");
                let allowed = Allowed {
                    by: By::Acquire,
                    caller: Some(&id),
                    dropped: &[],
                    take_from: &[],
                    must_take: &[],
                    fills: true,
                };
                // The oracle's line: none while a check is out; granted at
                // once with nothing woken and no alarm needed is routine.
                let after = self.snap(k);
                let line = match &step {
                    AcquireStep::Done(d) => {
                        let quiet = d.wake.is_empty() && !needs_alarm(&after);
                        let kind = match d.reply {
                            AcquireReply::Granted { .. } if quiet => LogKind::Routine,
                            _ => LogKind::Contended,
                        };
                        let reason = match d.reply {
                            AcquireReply::Full => FULL_REASON,
                            _ => "decided without a check",
                        };
                        log_line(kind, &id, word(&d.reply), reason, None)
                    }
                    AcquireStep::Check { .. } => None,
                };
                let registered = before.holder(&id).is_some() || before.waits(&id);
                if request.options.skip && !registered {
                    // §1c: a skipping call registers nothing, whether it
                    // answers now or checks a holder first.
                    assert!(
                        !after.waits(&id),
                        "BUSY: {id} skipping was registered to wait: {after:?}"
                    );
                }
                if let AcquireStep::Done(d) = &step {
                    self.check_skip_at_once(&request, &before, &d.reply);
                }
                // An acquire records the limit it names, unless its id was
                // superseded, it found the key full (§1f: it changes
                // nothing), or (onBusy skip, not registered) it is not
                // granted at once: a skipping call changes nothing then.
                let recorded = match &step {
                    AcquireStep::Done(d) if d.reply == AcquireReply::Superseded => false,
                    AcquireStep::Done(d) if d.reply == AcquireReply::Full => false,
                    _ if request.options.skip && !registered => matches!(
                        &step,
                        AcquireStep::Done(d) if matches!(d.reply, AcquireReply::Granted { .. })
                    ),
                    _ => true,
                };
                self.callers_named(k, request.options.limit, recorded);
                self.decided(k, &before, &request.options, allowed, line);
                match step {
                    AcquireStep::Done(decided) => {
                        self.spawn_wakes(k, decided.wake);
                        self.acquire_replied(&op, decided.reply, &before);
                    }
                    AcquireStep::Check { holder, wake } => {
                        self.note(|| format!("  {id} must check holder {holder:?}"));
                        self.spawn_wakes(k, wake);
                        op.phase = Phase::Check(self.idx(&holder.id), holder.workflow.clone());
                        op.checked = Some(holder);
                        self.ops.push(op);
                    }
                }
            }
            Phase::Checked(checked, answer) => {
                let liveness = liveness_of(answer);
                let checked_id = self.insts[checked].id.clone();
                let snapshot = op.checked.clone().unwrap();
                self.count_grace(k, &snapshot.id, liveness);
                self.saw_check(k, &before, &snapshot.id, answer);
                let Decided { reply, wake } = acquire_after_check(
                    &mut self.stores[k],
                    self.now_ms,
                    self.p.grace_ms,
                    &request,
                    &snapshot,
                    answer,
                );
                let dead = self.dead(k, &snapshot.id, liveness);
                let must = self.must_lose(k, &before, &snapshot, liveness);
                self.count_handoff(k, &before, &checked_id, dead);
                // The oracle's line: the answer, the holder checked, and
                // how long the caller has waited if it waits.
                let waited_ms = self.snap(k).waits(&id).then(|| {
                    let joined = self.joined_at.get(&(k, id.clone()));
                    match joined {
                        Some(at) if before.waits(&id) => self.now_ms - at,
                        _ => 0,
                    }
                });
                let reason = format!("holder {checked_id} checked: {liveness:?}");
                let line = log_line(LogKind::Contended, &id, word(&reply), &reason, waited_ms);
                let take = [checked_id];
                let allowed = Allowed {
                    by: By::Check,
                    caller: Some(&id),
                    dropped: &[],
                    take_from: if dead { &take } else { &[] },
                    must_take: if must { &take } else { &[] },
                    fills: true,
                };
                // Phase 2 applies no options (phase 1 did), but for onBusy
                // skip, whose first phase registered nothing: the limit it
                // names goes with a slot it takes now.
                let options = if request.options.skip {
                    request.options.clone()
                } else {
                    Options::default()
                };
                let registered = before.holder(&id).is_some() || before.waits(&id);
                let recorded = request.options.skip
                    && !registered
                    && matches!(reply, AcquireReply::Granted { .. });
                self.callers_named(k, request.options.limit, recorded);
                self.decided(k, &before, &options, allowed, line);
                assert!(
                    wake.iter().all(|h| h.id != id),
                    "told to wake the caller itself"
                );
                self.spawn_wakes(k, wake);
                self.acquire_replied(&op, reply, &before);
            }
            _ => unreachable!(),
        }
    }

    fn acquire_replied(&mut self, op: &Op, reply: AcquireReply, before: &Snap) {
        let who = op.caller.expect("acquire has a caller");
        let k = op.key;
        let id = &self.insts[who].id.clone();
        self.note(|| format!("  acquire {id} -> {reply:?}"));
        // What each reply promises, whether or not the caller hears it.
        let member = self.stores[k].member(id);
        match reply {
            AcquireReply::Granted { fence } => {
                assert!(
                    matches!(&member, Member::Holder(h) if h.state == HolderState::Holding),
                    "granted, but {id} does not hold the key: {member:?}"
                );
                assert_eq!(
                    self.fence_of.get(&(k, id.clone())),
                    Some(&fence),
                    "FENCE: {id} granted with fence {fence}, not the one its grant took"
                );
            }
            AcquireReply::Pending | AcquireReply::Placed(_) => {
                let place = match reply {
                    AcquireReply::Placed(place) => Some(place),
                    _ => None,
                };
                assert!(
                    matches!(member, Member::Waiter(_) | Member::Stranger),
                    "pending, but {id} holds or was superseded"
                );
                // §1c onBusy skip registers nothing: a skipping call is
                // pending only for an id that already waited; nor does a
                // call on a full key (§1f).
                let skips = matches!(&op.kind, OpKind::Acquire(r) if r.options.skip);
                assert!(
                    !skips || before.waits(id),
                    "BUSY: {id} skipping was registered to wait: {member:?}"
                );
                let full = matches!(&op.kind, OpKind::Acquire(r) if self.full_by_model(r, before));
                assert!(
                    !full,
                    "FULL: {id} registered to wait on a full key: {before:?}"
                );
                let grant = self.insts[who].grant;
                assert_eq!(
                    place.is_some(),
                    grant,
                    "a place is answered with grant only"
                );
                if let Some(Place { turn, position, .. }) = place {
                    // Its place, judged by the oracle in the queue as it is.
                    self.check_position(k, id, position);
                    self.saw_turn(k, who, turn);
                }
            }
            AcquireReply::Superseded => assert!(
                self.superseded.contains(&who),
                "{id} told superseded, but no enqueue superseded it"
            ),
            AcquireReply::Full => {
                let OpKind::Acquire(request) = &op.kind else {
                    unreachable!("an acquire's op")
                };
                assert!(
                    self.full_by_model(request, before),
                    "FULL: {id} told full, but the key is not: {before:?}"
                );
                assert_eq!(
                    member,
                    Member::Stranger,
                    "FULL: {id} told full, but registered"
                );
            }
            AcquireReply::Busy => {
                let OpKind::Acquire(request) = &op.kind else {
                    unreachable!("an acquire's op")
                };
                assert!(request.options.skip, "{id} told busy, but it does not skip");
                assert_eq!(
                    member,
                    Member::Stranger,
                    "BUSY: {id} told busy, but registered"
                );
            }
        }
        if op.orphan || self.insts[who].life != Life::Running {
            return;
        }
        match reply {
            AcquireReply::Granted { fence } => {
                self.stats.granted += 1;
                if before.holders.iter().any(|h| h.id != *id) {
                    self.stats.granted_beside_others += 1;
                }
                if self.insts[who].workflow != 0 {
                    self.stats.other_workflow_holders += 1;
                }
                self.enter_body(who, fence, false);
            }
            // A grant registration waits for its own turn; withKey
            // without grant (a reply without a place) for the shared one.
            AcquireReply::Placed(place) => self.wait_for_turn(who, place.turn),
            AcquireReply::Pending => self.wait_for_turn(who, Turn::Shared),
            AcquireReply::Superseded => {
                // Ends without running its body.
                let inst = &mut self.insts[who];
                inst.told_superseded = true;
                inst.life = Life::Ended(End::Complete);
                inst.script = Script::Done;
            }
            AcquireReply::Busy | AcquireReply::Full => {
                // withKey returns { busy: true } without running its body.
                self.stats.busy += 1;
                if matches!(reply, AcquireReply::Full) {
                    self.stats.full += 1;
                }
                let inst = &mut self.insts[who];
                inst.told_busy = true;
                inst.life = Life::Ended(End::Complete);
                inst.script = Script::Done;
            }
        }
    }

    /// §1f maxWaiting on an acquire, by the model: an id not registered (nor
    /// superseded), not skipping (onBusy skip answers first), on a key with
    /// as many waiters as the cap the call names, else the key's.
    fn full_by_model(&self, request: &AcquireRequest, before: &Snap) -> bool {
        let id = &request.id;
        let registered = before.holder(id).is_some() || before.waits(id);
        !request.options.skip
            && !registered
            && !self.superseded.contains(&self.idx(id))
            && (request.options.max_waiting.or(before.max_waiting))
                .is_some_and(|cap| before.queue.len() as u32 >= cap)
    }

    /// §1c onBusy skip on an acquire's first phase, by the model: an id not
    /// registered is busy when it would not be granted at once; it is
    /// never busy with a free slot (by the limit it names) and nobody
    /// waiting, and never granted with no free slot.
    fn check_skip_at_once(&self, request: &AcquireRequest, before: &Snap, reply: &AcquireReply) {
        let id = &request.id;
        let registered = before.holder(id).is_some() || before.waits(id);
        if !request.options.skip || registered || self.superseded.contains(&self.idx(id)) {
            return;
        }
        let k = self.insts[self.idx(id)].key;
        let limit = self.limit_judged(k, request.options.limit, before);
        let free = self.steering[k].paused.is_none() && (before.holders.len() as u32) < limit;
        match reply {
            AcquireReply::Busy => assert!(
                !(free && before.queue.is_empty()),
                "BUSY: {id} told busy with a free slot and nobody waiting: {before:?}"
            ),
            AcquireReply::Granted { .. } => {
                assert!(
                    free,
                    "BUSY: {id} skipping granted with no free slot: {before:?}"
                )
            }
            other => panic!("BUSY: {id} skipping answered {other:?}"),
        }
    }

    fn run_release(&mut self, op: Op) {
        let who = op.caller.expect("release has a caller");
        let k = op.key;
        let id = self.insts[who].id.clone();
        let before = self.snap(k);
        let Decided { reply, wake } = release(&mut self.stores[k], self.now_ms, &id);
        self.note(|| format!("  release {id} -> {reply:?} {wake:?}"));
        assert_eq!(
            reply,
            wake.first().map(|h| h.id.clone()),
            "release replies with the first instance it wakes"
        );
        assert!(self.stores[k].waiter_count() as usize <= before.queue.len());
        // The oracle's line: handed to the first new holder, by the key's
        // own order of holders, or routine.
        let after = self.snap(k);
        let first = after
            .holders
            .iter()
            .find(|h| before.holder(&h.id).is_none());
        let paused_release = self.steering[k].paused.is_some() && before.holder(&id).is_some();
        if paused_release {
            self.stats.released_while_paused += 1;
        }
        let line = match first {
            Some(next) => contended(&id, "released", &format!("handed the key to {}", next.id)),
            None if paused_release => contended(
                &id,
                "released",
                "the key is paused: its slot is not handed on",
            ),
            None => log_line(
                LogKind::Routine,
                &id,
                "released",
                "released as a waiter, or held nothing",
                None,
            ),
        };
        let take = [id.clone()];
        self.decided(
            k,
            &before,
            &Options::default(),
            Allowed {
                by: By::Release,
                caller: Some(&id),
                dropped: &[],
                take_from: &take,
                must_take: &[],
                fills: true,
            },
            line,
        );
        assert!(
            matches!(
                self.stores[k].member(&id),
                Member::Stranger | Member::Superseded
            ),
            "{id} still holds or waits after its release"
        );
        // The registration ended: its turns may never be seen again.
        let ended: Vec<(usize, u64)> = self
            .turn_owner
            .iter()
            .filter(|(&(key, _), &owner)| key == k && owner == who)
            .map(|(&turn, _)| turn)
            .collect();
        self.retired.extend(ended);
        self.spawn_wakes(k, wake);
        if op.orphan || self.insts[who].life != Life::Running {
            return;
        }
        if self.insts[who].script == Script::GivingUp {
            self.insts[who].life = Life::Ended(End::Errored);
            return;
        }
        // A call of this section that the instance gave up on but the object
        // still runs could act on the next one (a late release would end
        // it): a section starts only once none is left in flight.
        let in_flight = self.ops.iter().any(|o| o.caller == Some(who));
        if self.insts[who].sections_left > 0 && !in_flight {
            // Another withKey section on the same key: a new registration.
            self.stats.second_sections += 1;
            self.insts[who].sections_left -= 1;
            self.insts[who].script = Script::Ready;
            return;
        }
        let steps_left = self.rng.range(1, 3);
        self.insts[who].script = Script::After { steps_left };
    }

    /// The oracle's rule for turns: a key's turn number belongs to one
    /// instance, and to one of its registrations (see `run_release`).
    fn saw_turn(&mut self, k: usize, who: usize, turn: Turn) {
        let Turn::Own(n) = turn else {
            return;
        };
        let owner = *self.turn_owner.entry((k, n)).or_insert(who);
        assert_eq!(
            owner, who,
            "TURN: key {k}'s turn {n} seen for i{who}, but it is i{owner}'s"
        );
        assert!(
            !self.retired.contains(&(k, n)),
            "TURN: key {k}'s turn {n} of i{who} is from a registration that ended"
        );
    }

    /// The shell wakes new holders, each through its own Workflow: the turn
    /// event, then a status check (shell/wake.rs); a dead instance ignores
    /// the event.
    fn spawn_wakes(&mut self, k: usize, holders: Vec<Holder>) {
        for holder in holders {
            self.spawn_wake(k, holder, 1);
        }
    }

    fn spawn_wake(&mut self, k: usize, holder: Holder, attempts: u32) {
        assert!(
            matches!(self.stores[k].member(&holder.id), Member::Holder(h) if h.state == HolderState::Handed),
            "told to wake {}, which was not just handed the key",
            holder.id
        );
        let target = self.idx(&holder.id);
        // As the shell does: the event first, right after the commit, then
        // the status check (a dead instance ignores the event).
        self.send_turn(k, target, &holder);
        let via = holder.workflow.clone();
        self.ops.push(Op::shell(
            OpKind::Wake { holder, attempts },
            k,
            Phase::Check(target, via),
        ));
    }

    fn run_wake(&mut self, op: Op) {
        let (OpKind::Wake { holder, attempts }, Phase::Checked(_, answer)) = (&op.kind, &op.phase)
        else {
            unreachable!("{op:?}")
        };
        // Whatever it answered re-enters, as the shell feeds it: §10a
        // keeps it. Alive, or unknown (treated as alive): it was sent its
        // event, and nothing else changes.
        let (k, attempts, answer) = (op.key, *attempts, *answer);
        let liveness = liveness_of(answer);
        self.count_grace(k, &holder.id, liveness);
        let before = self.snap(k);
        self.saw_check(k, &before, &holder.id, answer);
        let next = woken_after_check(
            &mut self.stores[k],
            self.now_ms,
            self.p.grace_ms,
            holder,
            answer,
        );
        let dead = self.dead(k, &holder.id, liveness);
        let must = self.must_lose(k, &before, holder, liveness);
        self.count_handoff(k, &before, &holder.id, dead);
        // The oracle's line: skipped only if it still held as handed and
        // the decision took its slot (or kept it within its grace); a
        // holder that confirmed since and is found dead, a check's answer;
        // else (released, handed on since) nothing.
        let as_handed = before.holder(&holder.id) == Some(holder);
        let removed =
            before.holder(&holder.id).is_some() && self.snap(k).holder(&holder.id).is_none();
        let line = match (as_handed, removed) {
            (true, true) => contended(&holder.id, "skipped", "handed the key but dead"),
            (true, false) if liveness == Liveness::NotFound => contended(
                &holder.id,
                "skipped",
                "handed the key but not created yet: keeps it within the grace",
            ),
            (false, true) => contended(
                &holder.id,
                "checked",
                &format!("holder check: {liveness:?}"),
            ),
            _ => None,
        };
        let take = [holder.id.clone()];
        self.decided(
            k,
            &before,
            &Options::default(),
            Allowed {
                by: By::Check,
                caller: None,
                dropped: &[],
                take_from: if dead { &take } else { &[] },
                must_take: if must { &take } else { &[] },
                fills: true,
            },
            line,
        );
        for next in next {
            if attempts < self.p.wake_attempts_max {
                self.spawn_wake(k, next, attempts + 1);
            } else {
                // The bound stops the loop; the alarm sees the unconfirmed hand-over.
                self.stats.wake_loops_cut += 1;
            }
        }
    }

    /// Sends `holder` (as the wake names it) its event: §1's turn, or the
    /// grant. A lost grant is a send that failed (the engine did not take
    /// it, and the holder stays to send); an accepted one is confirmed by a
    /// later step. An instance not created yet accepts nothing.
    fn send_turn(&mut self, k: usize, target: usize, holder: &Holder) {
        let fence = match holder.turn {
            Turn::Shared => None,
            Turn::Own(_) => {
                self.check_grant_event(k, target, holder);
                Some(holder.fence)
            }
        };
        let accepted = self.insts[target].life != Life::NotCreated;
        if !accepted || self.faults.strikes(&mut self.rng, Fault::EventLost) {
            return;
        }
        self.events.push((target, holder.turn, fence));
        if fence.is_some() {
            self.stats.grant_events += 1;
            let mut confirm = Op::shell(OpKind::Confirm(holder.clone()), k, Phase::Start);
            // The engine's acceptance re-enters late: meanwhile the holder
            // may run, release and hold a later grant.
            if self.faults.strikes(&mut self.rng, Fault::EventLate) {
                confirm.not_before = self.now_ms + self.rng.range(1_000, 30_000);
            }
            self.ops.push(confirm);
        }
        if self.faults.strikes(&mut self.rng, Fault::EventDuplicate) {
            self.events.push((target, holder.turn, fence));
        }
    }

    /// The oracle, as a grant event leaves: it names a slot its target
    /// holds now, with the fence that slot was granted with, on a turn of
    /// the target's registration.
    fn check_grant_event(&mut self, k: usize, target: usize, sent: &Holder) {
        let id = &self.insts[target].id;
        let holds = self.snap(k).holder(id).map(|h| h.fence);
        assert_eq!(
            holds,
            Some(sent.fence),
            "GRANT: event to {id} names fence {} of key {k}, but it holds {holds:?}",
            sent.fence
        );
        assert_eq!(
            self.fence_of.get(&(k, id.clone())),
            Some(&sent.fence),
            "GRANT: event to {id} with a fence its grant did not take"
        );
        self.saw_turn(k, target, sent.turn);
    }

    fn run_confirm(&mut self, op: Op) {
        let OpKind::Confirm(holder) = &op.kind else {
            unreachable!()
        };
        let k = op.key;
        let before = self.snap(k);
        grant_accepted(&mut self.stores[k], holder);
        let allowed = Allowed {
            by: By::Confirm,
            // Only the holder's own hand-over may change: confirmed.
            caller: Some(&holder.id),
            dropped: &[],
            take_from: &[],
            must_take: &[],
            fills: false,
        };
        self.decided(k, &before, &Options::default(), allowed, None);
        let after = self.snap(k);
        // What follows an acceptance: the hand-over it was sent for, if the
        // holder still holds it as sent, is confirmed; an acceptance that
        // comes late, from an earlier grant (the holder released, or holds
        // a later grant), changes nothing at all.
        if before.holder(&holder.id) == Some(holder) {
            self.stats.confirms_applied += 1;
            let now = after
                .holder(&holder.id)
                .expect("a confirmation keeps the holder");
            assert_eq!(
                now.state,
                HolderState::Holding,
                "CONFIRM: {}'s accepted grant left it handed",
                holder.id
            );
        } else {
            self.stats.confirms_late += 1;
            assert_eq!(
                after, before,
                "CONFIRM: a late acceptance of {}'s earlier grant changed the key",
                holder.id
            );
        }
        assert_eq!(before.queue, after.queue, "a confirmation moved waiters");
        assert_eq!(
            before.holders.len(),
            after.holders.len(),
            "a confirmation moved a slot"
        );
    }

    fn run_tick(&mut self, mut op: Op) {
        let k = op.key;
        match op.phase {
            Phase::Start => {
                let due = tick(&self.stores[k]);
                if due.is_empty() {
                    self.arm_alarm();
                } else {
                    op.phase = Phase::CheckMany(due);
                    self.ops.push(op);
                }
            }
            Phase::CheckedMany(answers) => {
                // Each answer re-enters as a decision of its own, as the
                // driver feeds them; the wakes go out after the last.
                let mut wake = Vec::new();
                for (h, answer) in &answers {
                    let l = &liveness_of(*answer);
                    let before = self.snap(k);
                    self.count_grace(k, &h.id, *l);
                    self.saw_check(k, &before, &h.id, *answer);
                    let answer = [(h.clone(), *answer)];
                    wake.extend(tick_after_check(
                        &mut self.stores[k],
                        self.now_ms,
                        self.p.grace_ms,
                        &answer,
                    ));
                    let dead = self.dead(k, &h.id, *l);
                    let must = self.must_lose(k, &before, h, *l);
                    if dead {
                        self.count_handoff(k, &before, &h.id, true);
                    }
                    let take = [h.id.clone()];
                    let line = contended(&h.id, "checked", &format!("holder check: {l:?}"));
                    self.decided(
                        k,
                        &before,
                        &Options::default(),
                        Allowed {
                            by: By::Check,
                            caller: None,
                            dropped: &[],
                            take_from: if dead { &take } else { &[] },
                            must_take: if must { &take } else { &[] },
                            fills: true,
                        },
                        line,
                    );
                }
                self.spawn_wakes(k, wake);
            }
            _ => unreachable!(),
        }
    }

    fn run_terminate(&mut self, op: Op) {
        let OpKind::Terminate(targets) = op.kind else {
            unreachable!()
        };
        for (t, via) in targets {
            if self.faults.strikes(&mut self.rng, Fault::EventLost) {
                continue; // best effort: this one failed
            }
            // An id not created yet is "not found": nothing to terminate;
            // nor is one of another Workflow than the binding asked.
            let binding = via.as_ref().map_or(WORKFLOWS[0], |w| w.as_str());
            if self.insts[t].life == Life::Running && binding == WORKFLOWS[self.insts[t].workflow] {
                self.insts[t].life = Life::Ended(End::Terminated);
            }
        }
    }

    fn arm_alarm(&mut self) {
        if self.stores.iter().any(needs_holder_check) && self.alarm_at.is_none() {
            self.alarm_at = Some(self.now_ms + HOLDER_CHECK_MS_DEFAULT);
        }
    }

    fn count_handoff(&mut self, k: usize, before: &Snap, checked: &InstanceId, dead: bool) {
        if dead && before.holder(checked).is_some() && self.snap(k).holder(checked).is_none() {
            self.stats.dead_handoffs += 1;
        }
    }

    fn idx(&self, id: &InstanceId) -> usize {
        self.by_id[id]
    }

    /// A call on key `k` that named `named` and, by the oracle's rule,
    /// `recorded` it: the callers' limit the key keeps, under an override
    /// too.
    fn callers_named(&mut self, k: usize, named: Option<u32>, recorded: bool) {
        if let (Some(limit), true) = (named, recorded) {
            self.steering[k].callers_limit = limit;
        }
    }

    /// The limit the oracle judges a call naming `named` by: the
    /// operator's override while one is in force (§11), else the call's.
    fn limit_judged(&self, k: usize, named: Option<u32>, before: &Snap) -> u32 {
        match self.steering[k].limit_override {
            Some(o) => o,
            None => named.unwrap_or(before.limit),
        }
    }

    /// §11: an operator's pause, resume or limit on key `k`, judged by the
    /// oracle's own record and rules: a pause keeps its first `since`,
    /// takes the new reason and grants nobody; a resume of a paused key
    /// grants exactly the free slots (the limit less the holders, as many
    /// as wait) and names them, of a key not paused nobody; an override
    /// is the limit until cleared, clearing takes a limit the callers
    /// named, and either grants the free slots at once unless paused.
    fn steer_key(&mut self, k: usize, input: Input) {
        let before = self.snap(k);
        let was = self.steering[k].clone();
        self.paused_before = Some(was.paused.is_some());
        let (reply, wake) = steer(&mut self.stores[k], self.now_ms, input.clone());
        self.note(|| format!("  steer {input:?} -> {reply:?}"));
        let after = self.snap(k);
        let new: Vec<InstanceId> = after
            .holders
            .iter()
            .filter(|h| before.holder(&h.id).is_none())
            .map(|h| h.id.clone())
            .collect();
        let free_for = |limit: u32| {
            (limit.saturating_sub(before.holders.len() as u32) as usize).min(before.queue.len())
        };
        let (decision, reason, limit_named) = match &input {
            Input::Pause { reason } => {
                let since = was.paused.as_ref().map_or(self.now_ms, |p| p.0);
                assert_eq!(
                    reply,
                    Reply::Paused(baton::coordinator::Paused {
                        since_ms: since,
                        reason: reason.clone(),
                    }),
                    "PAUSE: the pause as it stands"
                );
                assert!(new.is_empty(), "PAUSE: a pause granted {new:?}");
                self.steering[k].paused = Some((since, reason.clone()));
                self.stats.steer_pauses += 1;
                let reason = if was.paused.is_some() {
                    "paused again: the reason replaced".to_owned()
                } else {
                    "paused by an operator: no slot is handed on until resume".to_owned()
                };
                ("paused", reason, None)
            }
            Input::Resume => {
                let expected = if was.paused.is_some() {
                    free_for(before.limit)
                } else {
                    0
                };
                assert_eq!(
                    new.len(),
                    expected,
                    "RESUME: key {k} granted {new:?}, the model {expected} slot(s)"
                );
                assert_eq!(reply, Reply::Resumed(new.clone()), "RESUME: who got a slot");
                self.steering[k].paused = None;
                if !new.is_empty() {
                    self.stats.resume_grants += 1;
                }
                let reason = if was.paused.is_some() {
                    format!("resumed: {} slot(s) handed on", new.len())
                } else {
                    "was not paused".to_owned()
                };
                ("resumed", reason, None)
            }
            Input::SetLimit(limit) => {
                let limit = *limit;
                let in_force = match (limit, &was.limit_override) {
                    (Some(l), _) => l,
                    (None, Some(_)) => {
                        assert!(
                            was.callers_named.contains(&after.limit),
                            "OVERRIDE: clearing took {} on key {k}, which no caller named {:?}",
                            after.limit,
                            was.callers_named
                        );
                        self.stats.overrides_cleared += 1;
                        after.limit
                    }
                    (None, None) => before.limit,
                };
                assert_eq!(
                    reply,
                    Reply::LimitSet {
                        limit: in_force,
                        limit_override: limit,
                    },
                    "OVERRIDE: the limit in force and the override"
                );
                let expected = if was.paused.is_some() {
                    0
                } else {
                    free_for(in_force)
                };
                assert_eq!(
                    new.len(),
                    expected,
                    "OVERRIDE: key {k} granted {new:?}, the model {expected} slot(s)"
                );
                if !new.is_empty() {
                    self.stats.override_grants += 1;
                }
                let steering = &mut self.steering[k];
                steering.callers_named = match (limit, &was.limit_override) {
                    (Some(_), Some(_)) => was.callers_named.clone(),
                    (Some(_), None) => vec![before.limit],
                    (None, _) => Vec::new(),
                };
                steering.limit_override = limit;
                let reason = match limit {
                    Some(l) => format!("override {l} in force: {} slot(s) handed on", new.len()),
                    None => format!(
                        "no override: the callers' limit {in_force} in force: {} slot(s) handed on",
                        new.len()
                    ),
                };
                ("limit set", reason, Some(in_force))
            }
            other => panic!("not an operator's input: {other:?}"),
        };
        let line = Some(Line {
            kind: LogKind::Contended,
            instance: None,
            decision,
            reason,
            waited_ms: None,
        });
        let options = Options {
            limit: limit_named,
            ..Options::default()
        };
        let fills = self.steering[k].paused.is_none();
        self.decided(
            k,
            &before,
            &options,
            Allowed {
                by: By::Steer,
                caller: None,
                dropped: &[],
                take_from: &[],
                must_take: &[],
                fills,
            },
            line,
        );
        self.spawn_wakes(k, wake);
    }

    // --- checks --------------------------------------------------------------

    fn snap(&self, k: usize) -> Snap {
        let store = &self.stores[k];
        Snap {
            limit: store.limit(),
            holders: store.holders(),
            queue: store.waiters().cloned().collect(),
            max_waiting: store.max_waiting(),
        }
    }

    /// After every decision: the core's invariants, the reference model,
    /// what the decision said (its log line, `line` by the oracle's rule,
    /// and the report it says the list is due), the key's history, and
    /// the shell's alarm (committed with the decision's writes).
    fn decided(
        &mut self,
        k: usize,
        before: &Snap,
        options: &Options,
        allowed: Allowed<'_>,
        line: Option<Line>,
    ) {
        assert_invariants_deep(&self.stores[k]);
        let after = self.snap(k);
        if self.trace && after != *before {
            eprintln!("    key {k}: {after:?}");
        }
        if after.limit < before.limit && after.holders.len() as u32 > after.limit {
            self.stats.limit_lowered_below_holders += 1;
        }
        // §11 by the oracle's own record: while an override is in force it
        // is the limit, whatever a call names (remembered for when it is
        // cleared); while paused nobody is granted and a freed slot stays
        // free. An operator's decision is judged by `steer_key`.
        let mut allowed = allowed;
        let mut options = options.clone();
        if allowed.by != By::Steer {
            let steering = &mut self.steering[k];
            if let Some(o) = steering.limit_override {
                assert_eq!(
                    after.limit, o,
                    "OVERRIDE: a call changed key {k}'s override"
                );
                steering.callers_named.extend(options.limit.take());
            }
            if steering.paused.is_some() {
                allowed.fills = false;
                let new: Vec<&Holder> = after
                    .holders
                    .iter()
                    .filter(|h| before.holder(&h.id).is_none())
                    .collect();
                assert!(
                    new.is_empty(),
                    "PAUSED: key {k} granted {new:?} while paused"
                );
            }
        }
        // By the oracle's own record: the limit in force is the override,
        // else the callers' last (so clearing an override takes that one);
        // the pause is as the operator left it (`inspect`'s `paused`).
        let steering = &self.steering[k];
        let in_force = steering.limit_override.unwrap_or(steering.callers_limit);
        assert_eq!(
            after.limit, in_force,
            "LIMIT: key {k}'s limit in force (override {:?}, the callers' last {})",
            steering.limit_override, steering.callers_limit
        );
        let paused = self.stores[k]
            .paused()
            .map(|p| (p.since_ms, p.reason.clone()));
        assert_eq!(
            paused, steering.paused,
            "PAUSE: key {k}'s pause as inspect shows it"
        );
        let options = &options;
        check_transition(before, &after, options, &allowed, &|id| self.share_of(id));
        self.check_shares(k, before, &after, allowed.caller);
        self.check_fences(k, before, &after);
        let said = said();
        let [said] = said.as_slice() else {
            panic!("one decision said {said:?}")
        };
        assert_eq!(
            said.log, line,
            "LOG: the decision's line (expected by the oracle's rule)"
        );
        // §9a: a contended line's data point carries the key's holders,
        // waiters and limit in force as the decision left them (the
        // oracle's own limit); a line that writes no point carries none.
        let figures = said.figures.clone().unwrap_or_default();
        let counts = (figures.holders, figures.waiting, figures.limit);
        match said.log.as_ref().map(|l| l.kind) {
            Some(LogKind::Contended) => assert_eq!(
                counts,
                (
                    after.holders.len() as u32,
                    after.queue.len() as u32,
                    in_force
                ),
                "FIGURES: a contended line's holders, waiters and limit"
            ),
            _ => assert_eq!(figures, Default::default(), "FIGURES: none without a point"),
        }
        let due = self.check_history(k, before, &after, &allowed, said.report);
        // The alarm by the oracle's rule: the sweep while someone waits
        // behind the holders, a hand-over is unconfirmed or a holder is
        // being cancelled; while a report is owed (by the oracle's `due`);
        // and after a supersede, which owes its terminations.
        let superseded = allowed.by == By::Enqueue && !allowed.dropped.is_empty();
        let expected = match needs_alarm(&after) || due == Due::Owed || superseded {
            true => Alarm::Periodic,
            false => Alarm::Keep,
        };
        assert_eq!(
            said.alarm, expected,
            "ALARM: what the decision asks of the holder-check alarm"
        );
        self.check_state(k, before, &after);
        self.arm_alarm();
    }

    /// §10a by the oracle's own records and rule: the first that applies
    /// of paused (its own record of the operator), stalled (waiters wait
    /// and, for longer than the holder-check period, a holder has held a
    /// handed slot it has not taken up, since the grant the oracle saw, or
    /// its checks have failed, since the first failure the oracle saw),
    /// backlogged, at capacity, active, idle. Never stalled while every
    /// holder took up its slot and answered its last check.
    fn check_state(&mut self, k: usize, before: &Snap, after: &Snap) {
        for h in &before.holders {
            if after.holder(&h.id).is_none() {
                self.failing_since.remove(&(k, h.id.clone()));
                self.last_check.remove(&(k, h.id.clone()));
            }
        }
        self.check_checked(k);
        let now = self.now_ms;
        let handed = (after.holders.iter())
            .filter(|h| h.state == HolderState::Handed)
            .map(|h| self.granted_at[&(k, h.id.clone())].0);
        let failing = (after.holders.iter())
            .filter_map(|h| self.failing_since.get(&(k, h.id.clone())).copied());
        let stuck_since = handed.chain(failing).min();
        let (holders, waiting) = (after.holders.len() as u32, after.queue.len() as u32);
        let expected = if self.steering[k].paused.is_some() {
            KeyState::Paused
        } else if waiting > 0 && stuck_since.is_some_and(|s| now > s + HOLDER_CHECK_MS_DEFAULT) {
            KeyState::Stalled
        } else if waiting > 0 {
            KeyState::Backlogged
        } else if holders >= after.limit {
            KeyState::AtCapacity
        } else if holders > 0 {
            KeyState::Active
        } else {
            KeyState::Idle
        };
        let store = &self.stores[k];
        let stalled = health::stalled_from(
            &store.holders(),
            store.failing_since(),
            HOLDER_CHECK_MS_DEFAULT,
        );
        let state = health::state(&store.summary(), stalled, now);
        if stuck_since.is_none() {
            assert_ne!(
                state,
                KeyState::Stalled,
                "STATE: key {k} stalled with every holder taken up and answering"
            );
        }
        assert_eq!(state, expected, "STATE: key {k}'s §10a state at {now}");
        self.stats.states[STATES.iter().position(|s| *s == state).unwrap()] += 1;
    }

    /// §10a: each holder's `checked` (when, and what the binding said) is
    /// the last answer the model's binding gave about it while it held,
    /// whichever check asked (the alarm's, an acquire's, a wake's), by
    /// the oracle's own records; `None` for a holder never checked.
    fn check_checked(&self, k: usize) {
        let store = &self.stores[k];
        for (h, kept) in store.holders().iter().zip(store.checks()) {
            let expected = self.last_check.get(&(k, h.id.clone())).copied();
            assert_eq!(
                kept.map(|(at_ms, answer, _)| (at_ms, answer)),
                expected,
                "CHECKED: key {k}'s holder {} at {}: its last check",
                h.id,
                self.now_ms
            );
        }
    }

    /// §10 by the oracle's own records and rules: a holder that leaves on
    /// a release released, one that leaves on a check was found dead; a
    /// hold is kept in `recent` when it ended dead or with a waiter behind
    /// it, with the fence, grant time and wait the oracle saw; each slot a
    /// holder gave up and a waiter got is a hand-off; a report is owed
    /// when a holder is found dead or the key's queue becomes or stops
    /// being empty, and the counts shown (holders, waiters, limit) are
    /// worth one otherwise, on a key with waiters, or if the list shows it.
    fn check_history(
        &mut self,
        k: usize,
        before: &Snap,
        after: &Snap,
        allowed: &Allowed<'_>,
        report: Due,
    ) -> Due {
        let now = self.now_ms;
        let left: Vec<&Holder> = before
            .holders
            .iter()
            .filter(|h| after.holder(&h.id).is_none())
            .collect();
        let came: Vec<&Holder> = after
            .holders
            .iter()
            .filter(|h| before.holder(&h.id).is_none())
            .collect();
        let from_queue = came.iter().filter(|h| before.waits(&h.id)).count();
        let found_dead = allowed.by == By::Check && !left.is_empty();
        let outcome = if allowed.by == By::Release {
            Outcome::Released
        } else {
            Outcome::Dead
        };
        assert!(
            left.is_empty() || matches!(allowed.by, By::Release | By::Check),
            "a holder left on a {:?}",
            allowed.by
        );
        // §11: the list shows whether the key is paused, by the oracle's record.
        let paused_after = self.steering[k].paused.is_some();
        let paused_before = self.paused_before.take().unwrap_or(paused_after);
        // §10a: and since when its earliest hand-over not yet taken up was
        // handed, by the oracle's record of the grant (now, for this one's).
        let handed_since = |s: &Snap| {
            (s.holders.iter())
                .filter(|h| h.state == HolderState::Handed)
                .map(|h| match came.iter().any(|c| c.id == h.id) {
                    true => now,
                    false => self.granted_at[&(k, h.id.clone())].0,
                })
                .min()
        };
        let shown = |s: &Snap, paused: bool| {
            (
                s.holders.len(),
                s.queue.len(),
                s.limit,
                paused,
                handed_since(s),
            )
        };
        let due = if found_dead || before.queue.is_empty() != after.queue.is_empty() {
            Due::Owed
        } else if shown(before, paused_before) == shown(after, paused_after) {
            Due::Nothing
        } else if !after.queue.is_empty() {
            Due::Counts
        } else {
            Due::CountsIfListed
        };
        assert_eq!(report, due, "REPORT: the list report the decision is due");
        let history = &mut self.history[k];
        for h in &left {
            let key = (k, h.id.clone());
            if outcome == Outcome::Dead || !before.queue.is_empty() {
                let (from_ms, waited_ms) = self.granted_at[&key];
                history.recent.push_back(Hold {
                    id: h.id.clone(),
                    fence: self.fence_of[&key],
                    from_ms,
                    to_ms: now,
                    waited_ms,
                    outcome,
                    cancelled: false,
                });
                if history.recent.len() > RECENT_KEPT {
                    history.recent.pop_front();
                }
            }
        }
        history.hand_offs += left.len().min(from_queue) as u64;
        if found_dead {
            history.dead_holders += left.len() as u64;
            history.dead_at_ms = Some(now);
        }
        history.owed |= due == Due::Owed;
        for h in &came {
            let key = (k, h.id.clone());
            let waited = match self.joined_at.get(&key) {
                Some(at) if before.waits(&h.id) => now - at,
                _ => 0,
            };
            self.granted_at.insert(key, (now, waited));
        }
        for w in after.queue.iter().filter(|w| !before.waits(&w.id)) {
            self.joined_at.insert((k, w.id.clone()), now);
            if allowed.by == By::Enqueue {
                self.enqueued_at.insert((k, w.id.clone()), now);
            }
        }
        for id in before
            .queue
            .iter()
            .map(|w| &w.id)
            .chain(left.iter().map(|h| &h.id))
        {
            if !after.waits(id) && after.holder(id).is_none() {
                self.enqueued_at.remove(&(k, id.clone()));
            }
        }
        let kept = &self.stores[k].history;
        let history = &self.history[k];
        let counts = kept.counts;
        assert_eq!(
            (
                counts.grants,
                counts.hand_offs,
                counts.dead_holders,
                counts.superseded,
                counts.coalesced
            ),
            (
                self.grants[k],
                history.hand_offs,
                history.dead_holders,
                history.superseded,
                history.coalesced
            ),
            "COUNTS of key {k}: (grants, handOffs, deadHolders, superseded, coalesced)"
        );
        let recent: Vec<Hold> = history.recent.iter().rev().cloned().collect();
        assert_eq!(kept.recent(), recent, "RECENT of key {k}");
        assert_eq!(
            (kept.dead_at_ms, kept.report_owed),
            (history.dead_at_ms, history.owed),
            "key {k}'s (dead holder found at, report owed)"
        );
        // Now and then the shard confirms the key's report.
        if self.history[k].owed && self.rng.percent(20) {
            self.history[k].owed = false;
            let paid = Write::History(HistoryWrite::Paid);
            baton::coordinator::apply(&mut self.stores[k], &[paid]);
        }
        due
    }

    /// The oracle's fence rule: every holder that appeared in a decision is
    /// a grant, and takes the key's next fence by the oracle's own count,
    /// one after another in the order they got the key; a holder that
    /// stayed keeps its fence.
    fn check_fences(&mut self, k: usize, before: &Snap, after: &Snap) {
        for h in &after.holders {
            match before.holder(&h.id) {
                Some(b) => assert_eq!(
                    b.fence, h.fence,
                    "FENCE: {}'s fence changed while it held key {k}",
                    h.id
                ),
                None => {
                    self.grants[k] += 1;
                    assert_eq!(
                        h.fence, self.grants[k],
                        "FENCE: grant {} of key {k} (to {}) has fence {}",
                        self.grants[k], h.id, h.fence
                    );
                    self.fence_of.insert((k, h.id.clone()), h.fence);
                }
            }
        }
    }

    /// After every step.
    fn check_step(&mut self) {
        for k in 0..self.p.keys {
            let store = &self.stores[k];
            assert_invariants_deep(store);
            let holders = store.holders();
            for inst in self.insts.iter().filter(|i| i.key == k) {
                if inst.life == Life::Running && inst.in_body {
                    // Told by its grant event, it may hold before the core
                    // recorded that the engine took the event.
                    assert!(
                        holders.iter().any(|h| h.id == inst.id
                            && Some(h.fence) == inst.fence
                            && (h.state == HolderState::Holding || inst.by_event)),
                        "SAFETY: live {} is in its body with fence {:?} but key {k}'s holders are {holders:?}",
                        inst.id,
                        inst.fence
                    );
                }
            }
            // No key has more holders than its limit, except those from
            // before a lowering, whose number never grows.
            let n = holders.len();
            assert!(
                n <= store.limit() as usize || n <= self.prev_holders[k],
                "SAFETY: key {k} has {n} holders, limit {} (had {})",
                store.limit(),
                self.prev_holders[k]
            );
            self.prev_holders[k] = n;
            // The shell model keeps the alarm armed whenever a key needs it
            // (the model's rule: someone waits behind the holders, or a
            // holder has not confirmed its hand-over); the liveness claims
            // below rest on this.
            let needs_check = !holders.is_empty()
                && (store.waiter_count() > 0
                    || holders.iter().any(|h| h.state == HolderState::Handed));
            if needs_check {
                assert!(
                    self.alarm_at.is_some()
                        || self.ops.iter().any(|o| matches!(o.kind, OpKind::Tick)),
                    "key {k} needs the alarm but none is set"
                );
            }
        }
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{} t={}] {}", self.stats.steps, self.now_ms, what());
        }
    }

    fn dump(&self) -> String {
        let mut s = format!(
            "seed {} step {} t={} alarm_at={:?}\n",
            self.seed, self.stats.steps, self.now_ms, self.alarm_at,
        );
        for k in 0..self.p.keys {
            s += &format!("  key {k}: {:?}\n", self.snap(k));
        }
        for op in &self.ops {
            s += &format!("  op {op:?}\n");
        }
        for inst in &self.insts {
            s += &format!("  {inst:?}\n");
        }
        s
    }
}

// ---------------------------------------------------------------------------
// Contract §1c: priorities and tenants, judged by the oracle's own rules.

/// A priority and a tenant (`None`: the shared one), as an instance
/// registers them.
type Share = (i8, Option<Ident>);

/// How a seed draws its instances' priorities and tenants, from a stream
/// of its own (so the seed's other draws are the ones they always were):
/// a third of the seeds keep to one priority and one tenant (§1's FIFO).
struct Shares {
    rng: Rng,
    priorities: Vec<i8>,
    tenants: Vec<Option<Ident>>,
}

impl Shares {
    fn draw(seed: u64) -> Shares {
        let mut rng = Rng(seed ^ 0x1C_5EED);
        let (priorities, tenants): (&[i8], usize) = match rng.below(3) {
            0 => (&[0], 0),
            1 => (&[0, 0, 3, -2], 0),
            _ => (&[0, 0, 0, 1], rng.range(2, 4) as usize),
        };
        let mut tenants: Vec<Option<Ident>> = (0..tenants)
            .map(|t| Some(Ident::new(format!("t{t}")).expect("valid tenant")))
            .collect();
        tenants.push(None);
        Shares {
            rng,
            priorities: priorities.to_vec(),
            tenants,
        }
    }

    fn pick(&mut self) -> Share {
        let priority = *self.rng.pick(&self.priorities);
        let tenant = self.rng.pick(&self.tenants).clone();
        (priority, tenant)
    }
}

impl Sim {
    /// The share an instance registers with, by the oracle's own record.
    fn share_of(&self, id: &InstanceId) -> Share {
        self.insts[self.by_id[id]].share.clone()
    }

    /// §1c after each decision on key `k`, by the oracle's own rules:
    /// every waiter keeps the priority and tenant it registered with; a
    /// grant to a waiter (or to a caller among waiters) goes to the
    /// highest priority present and to its tenant's earliest waiter; and
    /// within a priority no tenant gets a grant while another that had a
    /// waiter at its previous grant, and has had one since, got none.
    fn check_shares(&mut self, k: usize, before: &Snap, after: &Snap, caller: Option<&InstanceId>) {
        for w in &after.queue {
            assert_eq!(
                (w.priority, &w.tenant),
                (self.share_of(&w.id).0, &self.share_of(&w.id).1),
                "ORDER: {} waits with another priority or tenant than it registered with",
                w.id
            );
        }
        // A tenant left with no waiter is owed nothing any more.
        let still: BTreeSet<Share> = after.queue.iter().map(|w| self.share_of(&w.id)).collect();
        for others in self.owed[k].values_mut() {
            others.retain(|s| still.contains(s));
        }
        // The grants to waiters in this decision (a caller that was not
        // waiting counts when others were): a batch from the front of the
        // order, judged together, since the order within it is not seen.
        let granted: Vec<&Holder> = after
            .holders
            .iter()
            .filter(|h| before.holder(&h.id).is_none())
            .filter(|h| before.waits(&h.id) || (Some(&h.id) == caller && !before.queue.is_empty()))
            .collect();
        if granted.is_empty() {
            return;
        }
        let is_granted = |id: &InstanceId| granted.iter().any(|h| h.id == *id);
        // Those still waiting of the waiters before (newcomers aside).
        let left: Vec<&Waiter> = before
            .queue
            .iter()
            .filter(|w| !is_granted(&w.id) && after.waits(&w.id))
            .collect();
        let top = left.iter().map(|w| self.share_of(&w.id).0).max();
        let mut count: BTreeMap<Share, u32> = BTreeMap::new();
        for h in &granted {
            let share = self.share_of(&h.id);
            assert!(
                top.is_none_or(|top| share.0 >= top),
                "ORDER: {} (priority {}) granted while priority {top:?} waits\n  before: {before:?}",
                h.id,
                share.0
            );
            if let Some(at) = before.queue.iter().position(|w| w.id == h.id) {
                if before.queue[..at].iter().any(|w| !is_granted(&w.id)) {
                    self.stats.grants_out_of_arrival += 1;
                }
                let earlier = before.queue[..at].iter().find(|w| {
                    self.share_of(&w.id) == share && !is_granted(&w.id) && after.waits(&w.id)
                });
                assert!(
                    earlier.is_none(),
                    "ORDER: {} granted before {:?}, an earlier waiter of its tenant\n  before: {before:?}",
                    h.id,
                    earlier.map(|w| &w.id)
                );
            }
            *count.entry(share).or_default() += 1;
        }
        let waiting_after: BTreeSet<Share> = left.iter().map(|w| self.share_of(&w.id)).collect();
        for (share, n) in &count {
            let owed: Vec<&Share> = self.owed[k]
                .get(share)
                .into_iter()
                .flatten()
                .filter(|s| !count.contains_key(*s))
                .collect();
            assert!(
                owed.is_empty(),
                "ORDER: tenant {:?} (priority {}) granted again while {owed:?} waited since its last grant with none\n  before: {before:?}",
                share.1,
                share.0
            );
            // Two grants in one go while another tenant of its priority
            // waited before and after, with none.
            let passed_over: Vec<&Share> = waiting_after
                .iter()
                .filter(|s| s.0 == share.0 && *s != share && !count.contains_key(*s))
                .collect();
            assert!(
                *n < 2 || passed_over.is_empty(),
                "ORDER: tenant {:?} (priority {}) granted {n} slots at once while {passed_over:?} waited with none\n  before: {before:?}",
                share.1,
                share.0
            );
        }
        for others in self.owed[k].values_mut() {
            others.retain(|s| !count.contains_key(s));
        }
        for share in count.keys() {
            let owed: BTreeSet<Share> = waiting_after
                .iter()
                .filter(|s| s.0 == share.0 && *s != share && !count.contains_key(*s))
                .cloned()
                .collect();
            self.owed[k].insert(share.clone(), owed);
        }
    }

    /// The place the oracle allows a `pending` reply to name: exactly its
    /// place in arrival order with one priority and one tenant; otherwise
    /// behind every waiter of a higher priority and every earlier one of
    /// its own tenant, and within the queue.
    fn check_position(&self, k: usize, id: &InstanceId, position: u32) {
        let queue = self.snap(k).queue;
        let share = self.share_of(id);
        let at = queue
            .iter()
            .position(|w| w.id == *id)
            .unwrap_or(queue.len());
        let one_share = queue.iter().all(|w| self.share_of(&w.id) == share);
        if one_share {
            assert_eq!(position as usize, at + 1, "{id}'s position");
            return;
        }
        let ahead = queue
            .iter()
            .enumerate()
            .filter(|(i, w)| {
                let s = self.share_of(&w.id);
                s.0 > share.0 || (s == share && *i < at)
            })
            .count();
        let behind = queue
            .iter()
            .filter(|w| self.share_of(&w.id).0 < share.0)
            .count();
        assert!(
            (ahead + 1..=queue.len().max(1) - behind).contains(&(position as usize)),
            "ORDER: {id}'s position {position}: {ahead} must be ahead, {behind} behind, of {queue:?}"
        );
    }
}

/// The reference model of the queue and the slots: what any decision may change.
/// A decision-log line, as the oracle words it.
fn log_line(
    kind: LogKind,
    id: &InstanceId,
    decision: &'static str,
    reason: &str,
    waited_ms: Option<u64>,
) -> Option<Line> {
    Some(Line {
        kind,
        instance: Some(id.clone()),
        decision,
        reason: reason.to_owned(),
        waited_ms,
    })
}

fn contended(id: &InstanceId, decision: &'static str, reason: &str) -> Option<Line> {
    log_line(LogKind::Contended, id, decision, reason, None)
}

/// The word of an acquire's answer, as contract §1 spells it.
fn word(reply: &AcquireReply) -> &'static str {
    match reply {
        AcquireReply::Granted { .. } => "granted",
        AcquireReply::Pending | AcquireReply::Placed(_) => "pending",
        AcquireReply::Superseded => "superseded",
        AcquireReply::Busy => "busy",
        AcquireReply::Full => "full",
    }
}

/// §1f's reason, in the oracle's words for the line.
const FULL_REASON: &str = "maxWaiting: the key has as many waiters as its cap; nothing registered";

/// The oracle's rule for the holder checks: someone waits behind the
/// holders, a holder has not confirmed its hand-over, or one is being
/// cancelled (§1d).
fn needs_alarm(snap: &Snap) -> bool {
    !snap.holders.is_empty()
        && (!snap.queue.is_empty()
            || (snap.holders.iter()).any(|h| h.state == HolderState::Handed || h.cancelling))
}

fn check_transition(
    before: &Snap,
    after: &Snap,
    options: &Options,
    allowed: &Allowed<'_>,
    share_of: &dyn Fn(&InstanceId) -> Share,
) {
    let fail = |what: &str| -> ! {
        panic!("{what}\n  before: {before:?}\n  after:  {after:?}");
    };
    let is_caller = |id: &InstanceId| Some(id) == allowed.caller;
    // The limit changes only to the one the call named.
    if after.limit != before.limit && Some(after.limit) != options.limit {
        fail("the limit changed to one no call named");
    }
    // Waiters that stay keep their order; only the caller joins, where
    // the model's rule puts it.
    let kept: Vec<&Waiter> = before.queue.iter().filter(|w| after.waits(&w.id)).collect();
    let joined: Vec<&Waiter> = after
        .queue
        .iter()
        .filter(|w| before.queue.iter().all(|b| b.id != w.id))
        .collect();
    match joined.as_slice() {
        [] => {}
        [w] if is_caller(&w.id) => {}
        _ => fail("someone other than the caller joined the queue"),
    }
    let mut expected: Vec<&InstanceId> = kept.iter().map(|w| &w.id).collect();
    if let [w] = joined.as_slice() {
        expected.insert(joins_at(&kept, w), &w.id);
    }
    if !after.queue.iter().map(|w| &w.id).eq(expected) {
        fail("the queue is not in the model's order");
    }
    // A waiter's record changes only by the caller's own call (its workflow).
    for (a, b) in after.queue.iter().zip(&kept) {
        if a != *b && !(is_caller(&a.id) && a.workflow == options.workflow) {
            fail("a waiter's record changed other than by its own call");
        }
    }
    // Holders: the new ones come from the front of the queue, in order
    // (the caller may take its own slot); the old ones change only by
    // their own call and leave only by releasing or being reported dead.
    let new: Vec<&Holder> = after
        .holders
        .iter()
        .filter(|h| before.holder(&h.id).is_none())
        .collect();
    let handed: Vec<&InstanceId> = new
        .iter()
        .map(|h| &h.id)
        .filter(|id| !is_caller(id))
        .collect();
    let front: Vec<&InstanceId> = hand_on_order(&before.queue)
        .into_iter()
        .filter(|id| !is_caller(id))
        .take(handed.len())
        .collect();
    // With one priority and one tenant, §1's FIFO; otherwise §1c's rules,
    // which `Sim::check_shares` judges.
    let one_share = before
        .queue
        .windows(2)
        .all(|w| share_of(&w[0].id) == share_of(&w[1].id));
    if one_share && handed != front {
        fail("slots went to someone other than the front of the queue");
    }
    for h in &new {
        let state = if is_caller(&h.id) {
            HolderState::Holding
        } else {
            HolderState::Handed
        };
        if h.state != state {
            fail("a new holder is Handed unless it is the caller, then Holding");
        }
    }
    if !new.is_empty() && after.holders.len() as u32 > after.limit {
        fail("a slot was given beyond the limit");
    }
    if !after
        .holders
        .iter()
        .filter(|h| before.holder(&h.id).is_some())
        .map(|h| &h.id)
        .eq(before
            .holders
            .iter()
            .filter(|h| after.holder(&h.id).is_some())
            .map(|h| &h.id))
    {
        fail("holders that stayed were reordered");
    }
    for id in allowed.must_take {
        if after.holder(id).is_some() {
            fail("a holder reported dead, holding as it was checked, kept its slot");
        }
    }
    for b in &before.holders {
        match after.holder(&b.id) {
            None if !allowed.take_from.contains(&b.id) => {
                fail("a slot left a holder that neither released nor was reported dead")
            }
            None => {}
            Some(a) if a == b => {}
            Some(a) => {
                let own = is_caller(&a.id) && a.since_ms == b.since_ms;
                let confirmed = b.state == HolderState::Handed && a.state == HolderState::Holding;
                let workflow_named = a.workflow != b.workflow && a.workflow == options.workflow;
                if !own
                    || (a.state != b.state && !confirmed)
                    || (a.workflow != b.workflow && !workflow_named)
                    || a.enqueued_ms != b.enqueued_ms
                {
                    fail("a holder's record changed other than by its own acquire");
                }
            }
        }
    }
    // Leaving the queue: the caller, the new holders, or the superseded.
    let dropped: Vec<&InstanceId> = before
        .queue
        .iter()
        .map(|w| &w.id)
        .filter(|id| !after.waits(id) && !is_caller(id) && after.holder(id).is_none())
        .collect();
    if dropped != allowed.dropped.iter().map(|w| &w.id).collect::<Vec<_>>() {
        fail("waiters left the queue without being reported superseded");
    }
    if !allowed.dropped.is_empty() && after.queue.iter().any(|w| !is_caller(&w.id)) {
        fail("a superseding enqueue left other waiters");
    }
    // A freed slot never stays free while someone waits.
    let freed = before.holders.iter().any(|b| after.holder(&b.id).is_none());
    if allowed.fills
        && freed
        && (after.holders.len() as u32) < after.limit
        && !after.queue.is_empty()
    {
        fail("a freed slot stayed free while waiters queued");
    }
}

/// The model's order of hand-on (§1): who gets the next free slots, first
/// to last. FIFO by arrival: the queue as it stands, which
/// [`check_transition`] keeps in arrival order (waiters that stay keep
/// their order, a newcomer joins where [`joins_at`] says). Priorities and
/// fair shares (§1c) are a change to these two rules.
fn hand_on_order(queue: &[Waiter]) -> Vec<&InstanceId> {
    queue.iter().map(|w| &w.id).collect()
}

/// Where a newcomer joins the waiters that stayed: at the back (FIFO).
fn joins_at(kept: &[&Waiter], _joined: &Waiter) -> usize {
    kept.len()
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).expect("valid id")
}

fn hash(s: &str) -> InputHash {
    InputHash::parse("inputHash", s).expect("valid hash")
}

fn workflow(s: &str) -> WorkflowName {
    WorkflowName::new(s.to_owned()).expect("valid workflow")
}

/// Runs one seed; on failure prints the seed, how to rerun it, and the state.
fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sim.run())) {
        report_failure("coordinator_sim", seed, sim.stats.steps);
        eprintln!("{}", sim.dump());
        resume_unwind(panic);
    }
    sim.stats.faults = sim.faults.injected;
    sim.stats.layouts = decisions::layouts();
    sim.stats
}

#[test]
fn simulation() {
    if let Some(total) = simulate("coordinator simulation", 0, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("granted", total.granted),
            ("grants_out_of_arrival", total.grants_out_of_arrival),
            ("reads of waiters kept sole", total.layouts[0]),
            ("reads of waiters kept shared", total.layouts[1]),
            ("keys spread from sole to shared", total.layouts[2]),
            ("granted_beside_others", total.granted_beside_others),
            ("superseded", total.superseded),
            ("coalesced", total.coalesced),
            ("full keys (§1f)", total.full),
            ("dead_handoffs", total.dead_handoffs),
            ("within_grace", total.within_grace),
            ("past_grace", total.past_grace),
            (
                "limit_lowered_below_holders",
                total.limit_lowered_below_holders,
            ),
            ("other_workflow_holders", total.other_workflow_holders),
            ("wake_loops_cut", total.wake_loops_cut),
            ("grant_events", total.grant_events),
            ("entered_by_event", total.entered_by_event),
            ("confirms_lost", total.confirms_lost),
            ("second_sections", total.second_sections),
            ("boundary_steps", total.boundary_steps),
            ("checks_at_grace_end", total.checks_at_grace_end),
            ("superseded_retries", total.superseded_retries),
            ("busy", total.busy),
            ("confirms_applied", total.confirms_applied),
            ("confirms_late", total.confirms_late),
            ("steer_pauses", total.steer_pauses),
            ("released_while_paused", total.released_while_paused),
            ("resume_grants", total.resume_grants),
            ("override_grants", total.override_grants),
            ("overrides_cleared", total.overrides_cleared),
            ("state paused", total.states[0]),
            ("state stalled", total.states[1]),
            ("state backlogged", total.states[2]),
            ("state at_capacity", total.states[3]),
            ("state active", total.states[4]),
            ("state idle", total.states[5]),
        ]);
        total.faults.assert_injected(&Fault::ALL);
    }
}

// ---------------------------------------------------------------------------
// Deterministic scenarios for the contract's named cases.

const GRACE: u64 = ENQUEUE_GRACE_MS_DEFAULT;

fn request(supersedes: bool, who: &str, input: Option<&str>) -> EnqueueRequest {
    EnqueueRequest {
        supersedes,
        id: id(who),
        input_hash: input.map(hash),
        options: Options::default(),
    }
}

fn acq(who: &str) -> AcquireRequest {
    AcquireRequest {
        id: id(who),
        options: Options::default(),
    }
}

fn acq_with(who: &str, workflow_name: Option<&str>, limit: Option<u32>) -> AcquireRequest {
    AcquireRequest {
        id: id(who),
        options: Options {
            workflow: workflow_name.map(workflow),
            limit,
            grant: false,
            ..Options::default()
        },
    }
}

fn granted_with(store: &mut KeyTwin, now_ms: u64, request: &AcquireRequest) -> Vec<Holder> {
    match acquire(store, now_ms, request) {
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Granted { .. },
            wake,
        })) => wake,
        other => panic!("expected {} granted, got {other:?}", request.id),
    }
}

fn granted(store: &mut KeyTwin, now_ms: u64, who: &str) {
    assert_eq!(granted_with(store, now_ms, &acq(who)), []);
}

/// The holder snapshot a first phase asks about; `who` must be that holder.
fn checks(step: Result<AcquireStep, baton::error::BatonError>, who: &str) -> Holder {
    match step {
        Ok(AcquireStep::Check { holder, .. }) if holder.id == id(who) => holder,
        other => panic!("expected a check of {who}, got {other:?}"),
    }
}

fn snap_of(store: &KeyTwin) -> (Vec<Holder>, Vec<Waiter>, u32) {
    (
        store.holders(),
        store.waiters().cloned().collect(),
        store.superseded_count(),
    )
}

fn queue(store: &KeyTwin) -> Vec<&str> {
    store.waiters().map(|w| w.id.as_str()).collect()
}

fn holders(store: &KeyTwin) -> Vec<(String, HolderState)> {
    store
        .holders()
        .into_iter()
        .map(|h| (h.id.to_string(), h.state))
        .collect()
}

fn ids(holders: &[Holder]) -> Vec<&str> {
    holders.iter().map(|h| h.id.as_str()).collect()
}

fn waiter_of(store: &KeyTwin, who: &str) -> Waiter {
    match store.member(&id(who)) {
        Member::Waiter(w) => w,
        other => panic!("{who} is not waiting: {other:?}"),
    }
}

#[test]
fn coalescing_into_a_live_waiter_registers_nothing() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    let first = request(true, "a", Some("x"));
    assert_eq!(
        enqueue(&mut s, 1, &first),
        Ok(EnqueueStep::Done(EnqueueReply::default()))
    );
    let plain = request(false, "p", None);
    assert!(enqueue(&mut s, 2, &plain).is_ok());

    let second = request(true, "b", Some("x"));
    let a = waiter_of(&s, "a");
    assert_eq!(
        enqueue(&mut s, 3, &second),
        Ok(EnqueueStep::CheckCandidate(a.clone()))
    );
    let before = snap_of(&s);
    let reply = enqueue_after_check(&mut s, 4, &second, &a, Liveness::Alive).unwrap();
    assert_eq!(
        reply,
        EnqueueReply {
            terminated: vec![],
            coalesced_into: Some(id("a")),
            busy: false,
            full: false,
            cancelled: vec![],
        }
    );
    // Nothing registered, nobody superseded (not even the plain waiter).
    assert_eq!(snap_of(&s), before);
    assert_eq!(s.member(&id("b")), Member::Stranger);

    // A candidate that is not known to be alive (or not created yet) does
    // not absorb the enqueue.
    for liveness in [Liveness::Dead, Liveness::NotFound, Liveness::Unknown] {
        let mut s2 = s.clone();
        let reply = enqueue_after_check(&mut s2, 5, &second, &a, liveness).unwrap();
        assert_eq!(reply.coalesced_into, None);
        let dropped: Vec<&str> = reply.terminated.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(dropped, ["a", "p"]);
        assert_eq!(queue(&s2), ["b"]);
    }
}

#[test]
fn coalescing_needs_the_candidate_still_waiting() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(true, "a", Some("x"))).is_ok());
    let second = request(true, "b", Some("x"));
    let a = waiter_of(&s, "a");
    assert_eq!(
        enqueue(&mut s, 2, &second),
        Ok(EnqueueStep::CheckCandidate(a.clone()))
    );
    // Between the phases, the holder releases and `a` is handed the key: it
    // starts and reads its own input, so `b` needs its own instance.
    assert_eq!(release(&mut s, 3, &id("h")).reply, Some(id("a")));
    let reply = enqueue_after_check(&mut s, 4, &second, &a, Liveness::Alive).unwrap();
    assert_eq!(reply, EnqueueReply::default());
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(holders(&s), [("a".into(), HolderState::Handed)]);
}

#[test]
fn superseded_before_start_gets_superseded() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(false, "a", None)).is_ok());
    let a = waiter_of(&s, "a");
    let reply = enqueue(&mut s, 2, &request(true, "b", None));
    assert_eq!(
        reply,
        Ok(EnqueueStep::Done(EnqueueReply {
            terminated: vec![a],
            coalesced_into: None,
            busy: false,
            full: false,
            cancelled: vec![],
        }))
    );
    let superseded = Ok(AcquireStep::Done(Decided {
        reply: AcquireReply::Superseded,
        wake: vec![],
    }));
    // `a` starts anyway (its termination was lost) and must end without running.
    assert_eq!(acquire(&mut s, 3, &acq("a")), superseded);
    // A late or retried enqueue cannot revive it, and the holder was never touched.
    assert_eq!(
        enqueue(&mut s, 4, &request(false, "a", None)),
        Ok(EnqueueStep::Done(EnqueueReply::default()))
    );
    assert_eq!(acquire(&mut s, 5, &acq("a")), superseded);
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(holders(&s), [("h".into(), HolderState::Holding)]);
}

#[test]
fn dead_holder_loses_the_key_only_if_it_still_holds_it() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    let h = checks(acquire(&mut s, 1, &acq("w")), "h");
    // While `w` asks about `h`, `h` releases and the key is handed to `w`.
    assert_eq!(release(&mut s, 2, &id("h")).reply, Some(id("w")));
    // A late "dead" about `h` (from any path) changes nothing.
    assert_eq!(
        tick_after_check(&mut s, 3, GRACE, &[(h.clone(), Liveness::Dead)]),
        []
    );
    assert_eq!(woken_after_check(&mut s, 3, GRACE, &h, Liveness::Dead), []);
    let decided = acquire_after_check(&mut s, 4, GRACE, &acq("w"), &h, Liveness::Dead);
    assert_eq!(
        decided,
        Decided {
            reply: AcquireReply::Granted { fence: 2 },
            wake: vec![],
        }
    );
    assert_eq!(holders(&s), [("w".into(), HolderState::Holding)]);

    // When it still holds the key, a dead holder loses it to the caller...
    let w = checks(acquire(&mut s, 5, &acq("x")), "w");
    let decided = acquire_after_check(&mut s, 6, GRACE, &acq("x"), &w, Liveness::Dead);
    assert!(matches!(decided.reply, AcquireReply::Granted { .. }));
    // ...but an alive or unknown one keeps it, and so does one "not found"
    // that reached the key by acquire... no: that one has no grace.
    let x = checks(acquire(&mut s, 7, &acq("y")), "x");
    for liveness in [Liveness::Alive, Liveness::Unknown] {
        let decided = acquire_after_check(&mut s, 8, GRACE, &acq("y"), &x, liveness);
        assert_eq!(decided.reply, AcquireReply::Pending);
        assert_eq!(ids(&s.holders()), ["x"]);
    }
    let decided = acquire_after_check(&mut s, 9, GRACE, &acq("y"), &x, Liveness::NotFound);
    assert!(
        matches!(decided.reply, AcquireReply::Granted { .. }),
        "acquire-only: no grace"
    );
}

#[test]
fn release_from_a_waiter_removes_it() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    for (now, who) in [(1, "a"), (2, "b")] {
        checks(acquire(&mut s, now, &acq(who)), "h");
    }
    let decided = release(&mut s, 3, &id("a"));
    assert_eq!(
        decided,
        Decided {
            reply: None,
            wake: vec![]
        }
    );
    assert_eq!(queue(&s), ["b"]);
    assert_eq!(ids(&s.holders()), ["h"]);
}

#[test]
fn release_from_a_stranger_is_a_no_op() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(acquire(&mut s, 1, &acq("a")).is_ok());
    assert!(enqueue(&mut s, 2, &request(true, "b", None)).is_ok());
    let before = snap_of(&s);
    for stranger in ["z", "a"] {
        // `a` was superseded: it is no longer anyone the key knows.
        let decided = release(&mut s, 3, &id(stranger));
        assert_eq!(decided.wake, []);
        assert_eq!(snap_of(&s), before);
    }
}

/// A "dead" answer counts only for the holder exactly as checked: a
/// "not found" sampled before the instance existed is stale once it has
/// acquired. Found by the simulation (seed 2 through `acquire_after_check`,
/// seed 0 through the wake chain); this is the minimal trace of each path,
/// with a grace of 0 so that "not found" is dead at once.
#[test]
fn a_dead_answer_from_before_creation_does_not_take_the_key_from_its_holder() {
    // Acquire path: `e` is registered on a free key; `x` acquires, which
    // hands the key to `e` and asks about it.
    let mut s = KeyTwin::default();
    assert!(enqueue(&mut s, 0, &request(false, "e", None)).is_ok());
    let e = checks(acquire(&mut s, 1, &acq("x")), "e");
    // The status call says "not found": `e` is not created yet. Then the
    // trigger creates it, and it acquires and starts its body.
    granted(&mut s, 2, "e");
    // `x` re-enters with the stale answer.
    let decided = acquire_after_check(&mut s, 3, 0, &acq("x"), &e, Liveness::NotFound);
    assert_eq!(decided.reply, AcquireReply::Pending, "two holders: e and x");
    assert_eq!(ids(&s.holders()), ["e"]);

    // Wake path: `h` releases to `e` (registered, not created yet); the
    // shell's status check says "not found"; `e` is created and acquires;
    // then the shell reports it.
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1, &request(false, "e", None)).is_ok());
    assert!(acquire(&mut s, 2, &acq("w")).is_ok());
    let handed = release(&mut s, 3, &id("h")).wake;
    assert_eq!(ids(&handed), ["e"]);
    granted(&mut s, 4, "e");
    assert_eq!(
        woken_after_check(&mut s, 5, 0, &handed[0], Liveness::NotFound),
        [],
        "w would be woken"
    );
    assert_eq!(ids(&s.holders()), ["e"]);
}

#[test]
fn a_bounded_wake_loop_leaves_the_rest_to_the_alarm() {
    // The holder releases to a queue of instances that ended before their
    // turn, with one live instance at the end.
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    let dead_count = WAKE_ATTEMPTS_PER_CALL_MAX + 8;
    for n in 0..dead_count {
        assert!(enqueue(&mut s, 1, &request(false, &format!("d{n}"), None)).is_ok());
    }
    assert!(acquire(&mut s, 2, &acq("live")).is_ok());

    let mut next = release(&mut s, 3, &id("h")).wake;
    let mut attempts = 0;
    while let Some(dead) = next.pop() {
        attempts += 1;
        if attempts == WAKE_ATTEMPTS_PER_CALL_MAX {
            break;
        }
        next = woken_after_check(&mut s, 4, GRACE, &dead, Liveness::Dead);
    }
    // The loop stopped with an unconfirmed hand-over, which the alarm re-checks.
    assert!(needs_holder_check(&s));
    let mut rounds = 0;
    loop {
        let due = tick(&s);
        if due.is_empty() {
            break;
        }
        rounds += 1;
        assert!(rounds <= dead_count + 1, "the alarm does not converge");
        let answers: Vec<(Holder, Liveness)> = due
            .into_iter()
            .map(|h| {
                let l = if h.id == id("live") {
                    Liveness::Alive
                } else {
                    Liveness::Dead
                };
                (h, l)
            })
            .collect();
        let woken = tick_after_check(&mut s, 5, GRACE, &answers);
        if ids(&woken) == ["live"] && answers.iter().any(|(h, _)| h.id == id("live")) {
            break; // the live instance is sent its turn
        }
    }
    assert_eq!(ids(&s.holders()), ["live"]);
    granted(&mut s, 6, "live");
    assert_eq!(s.waiter_count(), 0);
}

// --- §1a ----------------------------------------------------------------

#[test]
fn a_limit_of_three_grants_three_and_hands_each_slot_on() {
    let mut s = KeyTwin::default();
    let three = |who| acq_with(who, None, Some(3));
    for who in ["a", "b", "c"] {
        assert_eq!(granted_with(&mut s, 1, &three(who)), []);
    }
    let d = checks(acquire(&mut s, 2, &three("d")), "a");
    assert_eq!(queue(&s), ["d"]);
    // Any holder's release hands its slot to the earliest waiter.
    let decided = release(&mut s, 3, &id("b"));
    assert_eq!(decided.reply, Some(id("d")));
    assert_eq!(
        holders(&s),
        [
            ("a".into(), HolderState::Holding),
            ("c".into(), HolderState::Holding),
            ("d".into(), HolderState::Handed)
        ]
    );
    // `d`'s stale check of `a` ("alive") changes nothing; its acquire confirms.
    let decided = acquire_after_check(&mut s, 4, GRACE, &three("d"), &d, Liveness::Alive);
    assert!(matches!(decided.reply, AcquireReply::Granted { .. }));
    assert_eq!(s.handed_count(), 0);
    // The next acquire checks the holder checked least recently (`a` was
    // just checked, and its answer kept: §10a). A dead holder loses only
    // its own slot.
    let c = checks(acquire(&mut s, 5, &acq("e")), "c");
    let decided = acquire_after_check(&mut s, 6, GRACE, &acq("e"), &c, Liveness::Dead);
    assert!(matches!(decided.reply, AcquireReply::Granted { .. }));
    assert_eq!(ids(&s.holders()), ["a", "d", "e"]);
}

#[test]
fn a_raised_limit_hands_the_free_slots_ahead_of_the_caller() {
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    for (now, who) in [(1, "a"), (2, "b"), (3, "c")] {
        assert!(enqueue(&mut s, now, &request(false, who, None)).is_ok());
    }
    // `c` raises the limit to 3: two free slots, and `a` and `b` are ahead
    // of it, so they get them (woken) and `c` waits.
    let step = acquire(&mut s, 4, &acq_with("c", None, Some(3)));
    let Ok(AcquireStep::Check { wake, .. }) = step else {
        panic!("expected a check, got {step:?}");
    };
    assert_eq!(ids(&wake), ["a", "b"]);
    assert_eq!(queue(&s), ["c"]);
    // Raised to 5 by a newcomer: `c` is first among 2 free slots, and the
    // newcomer, counting as last, is second: both are granted.
    assert_eq!(
        granted_with(&mut s, 5, &acq_with("n", None, Some(5))),
        [Holder {
            id: id("c"),
            since_ms: 5,
            state: HolderState::Handed,
            workflow: None,
            enqueued_ms: Some(3),
            turn: Turn::Shared,
            fence: 4,
            cancelling: false,
            waited_ms: 2,
        }]
    );
    assert_eq!(ids(&s.holders()), ["h", "a", "b", "c", "n"]);
}

#[test]
fn a_lowered_limit_takes_no_slot_and_stops_grants_until_below_it() {
    let mut s = KeyTwin::default();
    for who in ["a", "b", "c"] {
        granted_with(&mut s, 1, &acq_with(who, None, Some(3)));
    }
    // Lowered to 1 by a waiter: every holder keeps its slot.
    checks(acquire(&mut s, 2, &acq_with("w", None, Some(1))), "a");
    assert_eq!(s.limit(), 1);
    assert_eq!(ids(&s.holders()), ["a", "b", "c"]);
    // Releases hand nothing on until the holders are below the limit.
    assert_eq!(release(&mut s, 3, &id("a")).wake, []);
    assert_eq!(release(&mut s, 4, &id("b")).wake, []);
    assert_eq!(queue(&s), ["w"]);
    assert_eq!(ids(&release(&mut s, 5, &id("c")).wake), ["w"]);
}

#[test]
fn not_found_within_the_grace_keeps_the_slot_without_an_event() {
    // `h` releases to `e`, enqueued at 1000 and not created yet.
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1_000, &request(false, "e", None)).is_ok());
    assert!(acquire(&mut s, 1_001, &acq("w")).is_ok());
    let handed = release(&mut s, 2_000, &id("h")).wake;
    assert_eq!(ids(&handed), ["e"]);
    // The wake's check says "not found": within the grace, `e` keeps its
    // slot, and the alarm keeps re-checking it (nothing to send it).
    assert_eq!(
        woken_after_check(&mut s, 2_001, GRACE, &handed[0], Liveness::NotFound),
        []
    );
    assert!(needs_holder_check(&s));
    let due = tick(&s);
    assert_eq!(ids(&due), ["e"]);
    let answers = [(due[0].clone(), Liveness::NotFound)];
    assert_eq!(
        tick_after_check(&mut s, 1_000 + GRACE - 1, GRACE, &answers),
        []
    );
    assert_eq!(ids(&s.holders()), ["e"]);
    // Created late, it acquires and keeps its place.
    granted(&mut s, 1_000 + GRACE - 1, "e");

    // Past the grace, "not found" is dead: the slot goes on to `w`.
    let mut s = KeyTwin::default();
    granted(&mut s, 0, "h");
    assert!(enqueue(&mut s, 1_000, &request(false, "e", None)).is_ok());
    assert!(acquire(&mut s, 1_001, &acq("w")).is_ok());
    let handed = release(&mut s, 2_000, &id("h")).wake;
    let next = woken_after_check(&mut s, 1_000 + GRACE, GRACE, &handed[0], Liveness::NotFound);
    assert_eq!(ids(&next), ["w"]);
    // When `e` is created at last, it joins the back of the queue.
    checks(acquire(&mut s, 1_000 + GRACE + 1, &acq("e")), "w");
    assert_eq!(queue(&s), ["e"]);
}

#[test]
fn the_workflow_is_remembered_per_waiter_and_holder() {
    let mut s = KeyTwin::default();
    granted_with(&mut s, 0, &acq_with("h", Some("DEPLOY"), None));
    let mut enq = request(false, "r", None);
    enq.options.workflow = Some(workflow("ROLLBACK"));
    assert!(enqueue(&mut s, 1, &enq).is_ok());
    assert_eq!(waiter_of(&s, "r").workflow, Some(workflow("ROLLBACK")));
    // The holder check goes through the holder's own Workflow.
    let h = checks(acquire(&mut s, 2, &acq("r")), "h");
    assert_eq!(h.workflow, Some(workflow("DEPLOY")));
    // An absent workflow keeps the remembered one, into the slot too.
    let decided = acquire_after_check(&mut s, 3, GRACE, &acq("r"), &h, Liveness::Dead);
    assert!(matches!(decided.reply, AcquireReply::Granted { .. }));
    let holder = s.holders().pop().unwrap();
    assert_eq!(
        (holder.id.as_str(), holder.workflow),
        ("r", Some(workflow("ROLLBACK")))
    );
    // A named one replaces it.
    granted_with(&mut s, 4, &acq_with("r", Some("DEPLOY"), None));
    assert_eq!(s.holders()[0].workflow, Some(workflow("DEPLOY")));
}
