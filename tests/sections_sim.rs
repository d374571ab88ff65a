//! Contract §1e, seeded: several sections, each holding its own key and
//! up to four more (`also`), over shared keys, driven through the real
//! Coordinator core (one `KeyTwin` per key) the way `withKey` drives it:
//! the keys taken in one global order (sorted by their UTF-8 bytes), each
//! by §1b's grant, a key registered on only when reached, a busy key
//! (`onBusy: "skip"`) releasing what was taken, and every key released in
//! reverse on exit. Instances are killed at random, turn events are
//! delivered in random order, late or lost (a lost one is re-checked by the
//! instance's own acquire after its turn timeout), and the holder-check
//! alarm runs at random.
//!
//! Sections belong to two Workflows (bindings `WF`, the default, and
//! `OTHER`), and some of `OTHER`'s register without naming it (§1a's
//! trap): the oracle knows each instance's true binding, a status asked
//! through another binding answers "not found", and a turn event sent
//! through another binding is lost. The shell's rule is modelled as the
//! shell states it (`shell::found`): a "not found" is looked up through the
//! other binding, and what is found there re-enters as `Input::Rebound`.
//! The oracle checks that such an instance never loses its slot while it
//! runs (the limits below), and that its `warn` line comes at most once.
//!
//! The oracle keeps its own records: which live bodies run, per key, and
//! the fences each body was given. It checks, at every body's start, that
//! no key holds more live bodies than its limit and that a limit-1 key's
//! fences rise body after body; and after a drain with no more kills, that
//! nothing deadlocked (every live section finished: its body ran exactly
//! once, or it was told busy having run nothing) and that every key is
//! left with no waiter and no live holder.

use baton::coordinator::log::LogKind;
use baton::coordinator::{
    self, apply, AcquireReply, AcquireRequest, Effect, Handed, Holder, Input, KeyTwin, Liveness,
    Member, Options, Reply, Settings, Turn,
};
use baton::ident::{InstanceId, WorkflowName};
mod common;
use common::{assert_reached, report_failure, simulate, Rng, SimStats};

const SIM_STEPS_DEFAULT: u64 = 300_000;
/// Steps of the drain after the random phase before a live section that
/// has not finished counts as deadlocked.
const DRAIN_STEPS_MAX: u64 = 20_000;
/// The shared keys, with their limits: three ordinary keys and two pools
/// named to sort last (`~`).
const KEYS: [(&str, u32); 5] = [
    ("deploy-a", 1),
    ("deploy-b", 1),
    ("deploy-c", 1),
    ("~pool", 2),
    ("~quota", 3),
];

/// `WORKFLOW_BINDINGS`: the default first.
const BINDINGS: [&str; 2] = ["WF", "OTHER"];

fn settings() -> Settings {
    Settings {
        grace_ms: 60_000,
        workflow: "WF".to_owned(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// About to acquire the `i`th key of its order (registering on it).
    Take(usize),
    /// Pending on the `i`th key for its own turn `n`.
    Waiting(usize, u64),
    /// Holds every key; the body runs for this many more steps.
    Body(u32),
    /// Finished: the body ran (`true`) or the section was told busy.
    Done { ran: bool },
}

#[derive(Debug, Clone)]
struct Section {
    id: InstanceId,
    /// Indexes into `KEYS`, in the order the section takes them.
    keys: Vec<usize>,
    skip: bool,
    phase: Phase,
    /// Keys registered on (granted or waited for), in the order taken.
    registered: Vec<usize>,
    fences: Vec<u64>,
    killed: bool,
    body_runs: u32,
    /// Its Workflow's binding, as the oracle knows it.
    binding: &'static str,
    /// The `workflow` it registers with (`None`: the default's), which
    /// for some of `OTHER`'s instances is wrongly none.
    registers_as: Option<&'static str>,
    /// §1a `warn` lines printed about it, per key (each key is its own
    /// object, which learns the binding once).
    warned: Vec<u32>,
    /// Per key, whether it was ever found through another binding.
    found_on: Vec<bool>,
    /// Per key, the binding the key should remember it with.
    remembered: Vec<&'static str>,
}

/// A turn event on its way to an instance.
#[derive(Debug, Clone)]
struct TurnEvent {
    key: usize,
    id: InstanceId,
    /// The binding it was sent through.
    workflow: String,
    handed: Handed,
    holder: Option<Holder>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    steps: u64,
    seeds: u64,
    bodies: u64,
    busy: u64,
    kills: u64,
    lost_events: u64,
    dead_found: u64,
    multi_key_bodies: u64,
    found_elsewhere: u64,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }
    fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.seeds += o.seeds;
        self.bodies += o.bodies;
        self.busy += o.busy;
        self.kills += o.kills;
        self.lost_events += o.lost_events;
        self.dead_found += o.dead_found;
        self.multi_key_bodies += o.multi_key_bodies;
        self.found_elsewhere += o.found_elsewhere;
    }
}

struct World {
    keys: Vec<KeyTwin>,
    sections: Vec<Section>,
    events: Vec<TurnEvent>,
    now_ms: u64,
    /// The oracle's own records: the live sections inside their body, and
    /// the last fence a body was given per key.
    inside: Vec<Vec<usize>>,
    last_fence: Vec<u64>,
    stats: Stats,
    trace: bool,
}

/// The one global order of §1e: by UTF-8 bytes (here, `str`'s order is
/// exactly that).
fn ordered(mut keys: Vec<usize>) -> Vec<usize> {
    keys.sort_by(|a, b| KEYS[*a].0.as_bytes().cmp(KEYS[*b].0.as_bytes()));
    keys
}

impl World {
    fn new(rng: &mut Rng, trace: bool) -> World {
        let n = rng.range(4, 14) as usize;
        let sections = (0..n)
            .map(|i| {
                let own = rng.below(KEYS.len() as u64) as usize;
                let mut keys = vec![own];
                for _ in 0..rng.below(4) {
                    let k = rng.below(KEYS.len() as u64) as usize;
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
                let binding = *rng.pick(&BINDINGS);
                let registers_as = match binding {
                    "OTHER" if rng.percent(50) => None,
                    "OTHER" => Some("OTHER"),
                    _ => None,
                };
                Section {
                    binding,
                    registers_as,
                    warned: vec![0; KEYS.len()],
                    found_on: vec![false; KEYS.len()],
                    remembered: vec![registers_as.unwrap_or(BINDINGS[0]); KEYS.len()],
                    id: InstanceId::parse("instanceId", &format!("sec-{i}")).expect("valid id"),
                    keys: ordered(keys),
                    skip: rng.percent(15),
                    phase: Phase::Take(0),
                    registered: Vec::new(),
                    fences: Vec::new(),
                    killed: false,
                    body_runs: 0,
                }
            })
            .collect();
        World {
            keys: vec![KeyTwin::default(); KEYS.len()],
            sections,
            events: Vec::new(),
            now_ms: 1_000_000,
            inside: vec![Vec::new(); KEYS.len()],
            last_fence: vec![0; KEYS.len()],
            stats: Stats::default(),
            trace,
        }
    }

    fn section(&self, id: &InstanceId) -> &Section {
        self.sections
            .iter()
            .find(|s| s.id == *id)
            .expect("a known id")
    }

    /// What `binding` answers about `id`: another Workflow's binding
    /// cannot find it.
    fn status_through(&self, id: &InstanceId, binding: &str) -> Liveness {
        if self.section(id).binding == binding {
            self.liveness(id)
        } else {
            Liveness::NotFound
        }
    }

    /// The shell's §1a rule (`shell::found`): `first` (the answer through
    /// `remembered`), unless "not found": then the other bindings, and the
    /// one that found it.
    fn found(
        &self,
        id: &InstanceId,
        remembered: &str,
        first: Liveness,
    ) -> (Liveness, Option<&'static str>) {
        if first != Liveness::NotFound {
            return (first, None);
        }
        for other in BINDINGS.iter().filter(|b| **b != remembered) {
            let liveness = self.status_through(id, other);
            if liveness != Liveness::NotFound {
                return (liveness, Some(other));
            }
        }
        (first, None)
    }

    /// §1a's rebinding, fed to key `k` when an instance was found through
    /// another binding.
    fn rebound(&mut self, k: usize, id: &InstanceId, from: &str, through: Option<&'static str>) {
        if let Some(to) = through {
            self.stats.found_elsewhere += 1;
            let s = self
                .sections
                .iter()
                .position(|s| s.id == *id)
                .expect("known id");
            self.sections[s].found_on[k] = true;
            // The oracle's rule: one line when the key, which still has the
            // instance, remembered another binding for it; else none.
            let registered = matches!(
                self.keys[k].member(id),
                Member::Holder(_) | Member::Waiter(_)
            );
            let remembered = self.sections[s].remembered[k];
            let expected = u32::from(registered && remembered != to);
            let before = self.sections[s].warned[k];
            let workflow = WorkflowName::new(to.to_owned()).expect("valid binding");
            let input = Input::Rebound {
                id: id.clone(),
                from: from.to_owned(),
                workflow,
            };
            self.decide(k, input);
            let printed = self.sections[s].warned[k] - before;
            assert_eq!(
                printed, expected,
                "{id} on {}: {printed} warn lines, expected {expected}",
                KEYS[k].0
            );
            if registered {
                self.sections[s].remembered[k] = to;
            }
        }
    }

    /// The oracle's liveness: a killed or finished instance is dead.
    fn liveness(&self, id: &InstanceId) -> Liveness {
        let s = self.section(id);
        if s.killed || matches!(s.phase, Phase::Done { .. }) {
            Liveness::Dead
        } else {
            Liveness::Alive
        }
    }

    /// One decision on key `k`, its writes applied and its effects carried
    /// out as the shell does: a check answered at once by the oracle (its
    /// second phase's reply is the caller's when it answers), a turn event
    /// queued for later delivery.
    fn decide(&mut self, k: usize, input: Input) -> Reply {
        let view = self.keys[k].load(&input);
        let t = coordinator::decide(&view, &settings(), self.now_ms, input).expect("never refused");
        apply(&mut self.keys[k], &t.writes);
        if let Some(line) = t.log.as_ref().filter(|l| l.kind == LogKind::Warn) {
            let id = line
                .instance
                .clone()
                .expect("a warn line names its instance");
            let s = self
                .sections
                .iter()
                .position(|s| s.id == id)
                .expect("known id");
            self.sections[s].warned[k] += 1;
            let key = KEYS[k].0;
            assert_eq!(
                self.sections[s].warned[k], 1,
                "{id}: §1a's warn line printed twice on {key}"
            );
            let registered_right = self.sections[s].registers_as == Some(self.sections[s].binding);
            assert!(
                !registered_right,
                "{id} warned about, registered with its own binding"
            );
        }
        let mut reply = t.reply.clone();
        for effect in t.effects {
            match effect {
                Effect::Check(check) => {
                    let first = self.status_through(&check.id, &check.workflow);
                    let (liveness, through) = self.found(&check.id, &check.workflow, first);
                    if liveness == Liveness::Dead {
                        self.stats.dead_found += 1;
                    }
                    let next = match &t.reply {
                        Reply::AcquireChecking { request, holder } => Some(Input::AcquireChecked {
                            request: request.clone(),
                            holder: holder.clone(),
                            answer: liveness.into(),
                        }),
                        Reply::Ticked(due) => {
                            (due.iter().find(|h| h.id == check.id)).map(|h| Input::TickChecked {
                                holder: h.clone(),
                                answer: liveness.into(),
                            })
                        }
                        other => panic!("a check asked by {other:?}"),
                    };
                    if let Some(next) = next {
                        let answered = self.decide(k, next);
                        if check.answers {
                            reply = answered;
                        }
                    }
                    self.rebound(k, &check.id, &check.workflow, through);
                }
                Effect::Wake(wake) => {
                    let holder = t
                        .state
                        .summary
                        .holders
                        .iter()
                        .find(|h| h.id == wake.id)
                        .cloned();
                    self.events.push(TurnEvent {
                        key: k,
                        workflow: wake.workflow,
                        id: wake.id,
                        handed: wake.event,
                        holder,
                    });
                }
                Effect::Terminate(_) | Effect::TerminateHolder { .. } => {
                    panic!("no section supersedes or cancels")
                }
            }
        }
        reply
    }

    /// The section's acquire of the key it is at (a first one registers).
    fn acquire(&mut self, s: usize) {
        let (Phase::Take(i) | Phase::Waiting(i, _)) = self.sections[s].phase else {
            return;
        };
        let section = &self.sections[s];
        let k = section.keys[i];
        let request = AcquireRequest {
            id: section.id.clone(),
            options: Options {
                workflow: (section.registers_as)
                    .map(|w| WorkflowName::new(w.to_owned()).expect("valid")),
                grant: true,
                limit: Some(KEYS[k].1),
                skip: section.skip,
                ..Options::default()
            },
        };
        if !self.sections[s].registered.contains(&k) {
            self.sections[s].registered.push(k);
        }
        match self.decide(k, Input::Acquire(request)) {
            Reply::Acquire(AcquireReply::Granted { fence }) => self.granted(s, i, fence),
            Reply::Acquire(AcquireReply::Placed(place)) => {
                let Turn::Own(n) = place.turn else {
                    panic!("a grant registration's turn is its own")
                };
                self.sections[s].phase = Phase::Waiting(i, n);
            }
            Reply::Acquire(AcquireReply::Busy) => {
                assert!(self.sections[s].skip, "busy without onBusy skip");
                self.sections[s].registered.pop();
                self.release_all(s);
                self.sections[s].phase = Phase::Done { ran: false };
                self.stats.busy += 1;
            }
            other => panic!("acquire answered {other:?}"),
        }
    }

    /// The section holds its `i`th key with `fence`: on to the next, or
    /// into the body once it holds every key.
    fn granted(&mut self, s: usize, i: usize, fence: u64) {
        self.sections[s].fences.push(fence);
        if i + 1 < self.sections[s].keys.len() {
            self.sections[s].phase = Phase::Take(i + 1);
            return;
        }
        // The body starts: the oracle's checks.
        let keys = self.sections[s].keys.clone();
        for (j, &k) in keys.iter().enumerate() {
            let (name, limit) = KEYS[k];
            let live = self.inside[k]
                .iter()
                .filter(|&&o| !self.sections[o].killed)
                .count();
            assert!(
                (live as u32) < limit,
                "key {name}: a body starts beside {live} live ones, limit {limit}"
            );
            let fence = self.sections[s].fences[j];
            if limit == 1 {
                assert!(
                    fence > self.last_fence[k],
                    "key {name}: fence {fence} after {}",
                    self.last_fence[k]
                );
            }
            self.last_fence[k] = self.last_fence[k].max(fence);
            self.inside[k].push(s);
        }
        self.sections[s].body_runs += 1;
        assert_eq!(self.sections[s].body_runs, 1, "a body ran twice");
        self.stats.bodies += 1;
        if keys.len() > 1 {
            self.stats.multi_key_bodies += 1;
        }
        self.sections[s].phase = Phase::Body(2);
    }

    /// Every registered key released, in the reverse order.
    fn release_all(&mut self, s: usize) {
        let registered = std::mem::take(&mut self.sections[s].registered);
        for &k in registered.iter().rev() {
            let id = self.sections[s].id.clone();
            self.decide(k, Input::Release(id));
            self.inside[k].retain(|&o| o != s);
        }
    }

    /// A turn event reaches its instance (or its dead instance).
    fn deliver(&mut self, e: TurnEvent) {
        if self.section(&e.id).binding != e.workflow {
            // Sent through a binding that cannot find it: lost. Its status,
            // read through the same binding, is looked up elsewhere (§1a).
            let (liveness, through) = self.found(&e.id, &e.workflow, Liveness::NotFound);
            if let (Some(holder), Liveness::Dead | Liveness::NotFound) = (e.holder, liveness) {
                let woken = Input::Woken {
                    holder,
                    answer: liveness.into(),
                };
                self.decide(e.key, woken);
            }
            self.rebound(e.key, &e.id, &e.workflow, through);
            return;
        }
        let s = self
            .sections
            .iter()
            .position(|x| x.id == e.id)
            .expect("known id");
        let live = self.liveness(&e.id) == Liveness::Alive;
        if live {
            if let (Phase::Waiting(i, n), Some(turn)) = (self.sections[s].phase, e.handed.turn) {
                if n == turn && self.sections[s].keys[i] == e.key {
                    self.granted(s, i, e.handed.fence);
                }
            }
        }
        if let Some(holder) = e.holder {
            let liveness = if live {
                // The engine accepted the event (the grant is then told),
                // and the status read after it answers alive.
                let accepted = Input::Accepted {
                    holder: holder.clone(),
                };
                self.decide(e.key, accepted);
                Liveness::Alive
            } else {
                Liveness::Dead
            };
            let woken = Input::Woken {
                holder,
                answer: liveness.into(),
            };
            self.decide(e.key, woken);
        }
    }

    /// One step of a live section.
    fn act(&mut self, s: usize, rng: &mut Rng) {
        match self.sections[s].phase {
            Phase::Take(_) => self.acquire(s),
            // Its turn timeout: a re-check by acquire (an event may be lost).
            Phase::Waiting(..) if rng.percent(20) => self.acquire(s),
            Phase::Waiting(..) | Phase::Done { .. } => {}
            Phase::Body(0) => {
                self.release_all(s);
                self.sections[s].phase = Phase::Done { ran: true };
            }
            Phase::Body(n) => self.sections[s].phase = Phase::Body(n - 1),
        }
    }

    fn tick(&mut self) {
        self.now_ms += 6_000;
        for k in 0..KEYS.len() {
            self.decide(k, Input::Tick);
        }
    }

    fn step(&mut self, rng: &mut Rng, kills: bool) {
        self.now_ms += rng.below(50);
        match rng.below(100) {
            0..=44 => {
                let s = rng.below(self.sections.len() as u64) as usize;
                if !self.sections[s].killed {
                    self.act(s, rng);
                }
            }
            45..=79 if !self.events.is_empty() => {
                let e = self
                    .events
                    .swap_remove(rng.below(self.events.len() as u64) as usize);
                if rng.percent(10) {
                    self.stats.lost_events += 1;
                } else {
                    self.deliver(e);
                }
            }
            80..=89 => self.tick(),
            90..=92 if kills => {
                let s = rng.below(self.sections.len() as u64) as usize;
                if !self.sections[s].killed && !matches!(self.sections[s].phase, Phase::Done { .. })
                {
                    self.sections[s].killed = true;
                    self.stats.kills += 1;
                }
            }
            _ => {}
        }
        if self.trace {
            eprintln!(
                "{:?}",
                self.sections
                    .iter()
                    .map(|s| (s.killed, s.phase))
                    .collect::<Vec<_>>()
            );
        }
    }

    fn finished(&self) -> bool {
        self.sections
            .iter()
            .all(|s| s.killed || matches!(s.phase, Phase::Done { .. }))
    }
}

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut rng = Rng(seed);
    let mut world = World::new(&mut rng, trace);
    let random_steps = rng.range(100, 600);
    let mut step = 0;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..random_steps {
            step += 1;
            world.step(&mut rng, true);
        }
        // The drain: no more kills. Every live section must finish.
        for _ in 0..DRAIN_STEPS_MAX {
            if world.finished() {
                break;
            }
            step += 1;
            world.step(&mut rng, false);
        }
        assert!(
            world.finished(),
            "deadlock: {:?}",
            world
                .sections
                .iter()
                .map(|s| (&s.id, s.killed, s.phase))
                .collect::<Vec<_>>()
        );
        // Dead holders and waiters are found and passed over in the end.
        for _ in 0..50 {
            world.tick();
            while let Some(e) = world.events.pop() {
                world.deliver(e);
            }
        }
        for s in &world.sections {
            for (k, found) in s.found_on.iter().enumerate() {
                // Found elsewhere while registered on the key: warned once.
                let registered = s.registers_as != Some(s.binding) && *found;
                assert!(
                    !registered || s.warned[k] <= 1,
                    "{} warned {} times on {}",
                    s.id,
                    s.warned[k],
                    KEYS[k].0
                );
                assert!(
                    s.warned[k] == 0 || *found,
                    "{} warned on {} but never found elsewhere",
                    s.id,
                    KEYS[k].0
                );
            }
            if !s.killed {
                let Phase::Done { ran } = s.phase else {
                    panic!("{} not finished", s.id)
                };
                assert_eq!(
                    s.body_runs,
                    u32::from(ran),
                    "{}: ran once or was told busy",
                    s.id
                );
            }
        }
        // No one waits; a holder left is a killed one nobody waits behind
        // (a key checks its holders only while someone waits, §1).
        for (k, key) in world.keys.iter().enumerate() {
            assert_eq!(key.waiter_count(), 0, "key {} left with waiters", KEYS[k].0);
            for holder in key.holders() {
                assert_eq!(
                    world.liveness(&holder.id),
                    Liveness::Dead,
                    "key {}: live holder {} left",
                    KEYS[k].0,
                    holder.id
                );
            }
        }
    }));
    if let Err(panic) = result {
        report_failure("sections_sim", seed, step);
        std::panic::resume_unwind(panic);
    }
    world.stats.steps = step;
    world.stats.seeds = 1;
    world.stats
}

#[test]
fn simulation() {
    if let Some(t) = simulate("sections_sim", 0x5ec7_0000, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("bodies", t.bodies),
            ("bodies holding several keys", t.multi_key_bodies),
            ("sections told busy", t.busy),
            ("kills", t.kills),
            ("lost turn events", t.lost_events),
            ("dead instances found", t.dead_found),
            ("instances found through another binding", t.found_elsewhere),
        ]);
    }
}
