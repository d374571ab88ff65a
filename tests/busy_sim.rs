//! The list of busy keys (`baton::busy`), simulated: keys whose
//! Coordinators report to their list shards (the real [`Reporter`] in each
//! object's memory, the real shard decisions on the real SQL rows under
//! `rusqlite`), read back page by page through the real merge, with the
//! faults of the shared vocabulary.
//!
//! Each key's Coordinator is modelled here in a few lines (holders up to a
//! limit, a FIFO of waiters, holders found dead): what it reports comes
//! from the reporter, what the list must show comes from the oracle's own
//! rule (contract §10: a waiter, or a holder found dead less than an hour
//! ago), never from the core's helpers.
//!
//! Faults: an object killed between its decision and its report (the
//! report is lost with what the object knew of the list), objects reset
//! between calls, reports and their answers lost, late (overtaken by later
//! ones) and duplicated, Coordinator alarms lost, shard alarms lost,
//! doubled and spurious; time steps that land exactly on a dead holder's
//! hour ending, a forgotten key's time, and the read's doubt.
//!
//! The shards are judged against the oracle's own record of each key's
//! shard ([`Held`]): built from the reports the shard was sent, in the
//! order they reached it, and the ticks it ran, by the contract's rules
//! (the newest report wins; a key that left stays unlisted, whatever late
//! report comes, for `LIST_GONE_KEPT_MS`), never from the shard's answers
//! or rows. Every answer a shard gives (applied or not, the stamp it
//! holds, whether it shows what the report said) must be the oracle's;
//! every report an object takes as confirmed must be the latest it drew
//! (the oracle's record of the draws, which survives the object) and must
//! be what the oracle's shard shows. After every step each shard's row
//! for each key is the oracle's (a key forgotten early, or listed again by
//! a late report, is caught at once), and the union of the shards, read
//! page by page through the merge, is exactly the keys the oracle's shards
//! list, counts and stamps included. Whether the list follows the
//! Coordinators (what the reporter owes) is checked against the key's
//! truth wherever no report is in flight and the shown report is the
//! latest shape: at the end of each seed the faults stop and the repairs
//! run (reports delivered, Coordinator alarms, and a read after its doubt
//! period that asks the Coordinators of the entries it doubts): then the
//! list is exact, counts included. Before that, a key with waiters whose
//! object heard the shard show its latest report, and drew none since,
//! must be listed with its counts as they are (the oracle's record of the
//! draws and answers, not the reporter's): a change of counts made while a
//! report was on its way is owed the follow-up its answer brings, due no
//! later than `LIST_REPORT_SPACING_MS` after the last draw (the oracle's
//! clock) and checked from then on. Every
//! uncontended decision (no waiter before or after, no holder found dead)
//! must report nothing.
//! When a decision reports is the Coordinator's one rule, `reporter::due`,
//! which its decision states.

mod common;

use baton::busy::page::{merge, per_shard, ListLimit, ShardPage};
use baton::busy::reporter::{self, Due, Reporter, Shown};
use baton::busy::sql::{self, Listed};
use baton::busy::Row;
use baton::busy::{self, shard_of, Answer, Busy, Report, ShardCount, Tick, Transition};
use baton::limits::{
    LIST_GONE_KEPT_MS, LIST_REPORT_SPACING_MS, LIST_VERIFIES_PER_PAGE_MAX, LIST_VERIFY_AFTER_MS,
};
use baton::sql::{SqlExec, SqlValue};
use common::{
    assert_reached, report_failure, simulate, sqlite, Fault, Faults, Injected, Rng, SimStats,
};
use rusqlite::Connection;
use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The oracle's own reading of contract §10's "in the last hour".
const HOUR_MS: u64 = 60 * 60 * 1000;
const SIM_STEPS_DEFAULT: u64 = 150_000;
const STEPS_PER_SEED: u64 = 1_500;

struct Db(Connection);

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        sqlite::run(&self.0, sql, params).rows
    }
}

/// One key: its Coordinator as modelled here, and what the oracle tracks.
struct Key {
    name: String,
    holders: u32,
    limit: u32,
    /// Each waiter's arrival time, in hand-on order.
    waiters: VecDeque<u64>,
    /// When a holder was last found dead.
    dead_at: Option<u64>,
    /// The object's memory: gone with a reset.
    reporter: Reporter,
    /// The object's stored mark that a decision's report is unconfirmed:
    /// survives a reset.
    owed: bool,
    /// Bumped whenever what decides the key's listing (whether it has
    /// waiters, when a holder was found dead) changes.
    version: u64,
    /// The oracle's record of what the key's shard holds.
    held: Held,
    /// The last report the key's object drew, in any of its lives: the
    /// oracle's record, which a reset does not touch.
    latest: Option<Report>,
    /// The object heard the shard show `latest` (its answer came back,
    /// saying so), and drew nothing since: the oracle's record.
    latest_shown: bool,
    /// The object's lives (a reset starts the next), and the one that drew
    /// `latest`: an answer heard by a later life says nothing of what
    /// changed while the earlier one waited for it (that is the alarm's
    /// to repair).
    life: u64,
    latest_life: u64,
    /// When `latest` was drawn (the oracle's clock).
    latest_at: u64,
}

/// The oracle's own record of what a key's shard holds, from the reports
/// the shard was sent and the ticks it ran, by the contract's rules; never
/// from the shard's answers or rows. `version` is the key's version when
/// the report shown was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Never heard of, or forgotten once its memory ran out.
    Nothing,
    /// On the list as the report `stamp` said.
    Listed {
        stamp: u64,
        busy: Busy,
        version: u64,
    },
    /// Left the list at `left_ms` with the report `stamp` (or when the
    /// dead holder's hour it showed ended): no report up to `stamp` may
    /// list it again until `left_ms + LIST_GONE_KEPT_MS`.
    Gone {
        stamp: u64,
        left_ms: u64,
        version: u64,
    },
}

/// The oracle's reading of a report: it lists its key at `now` with a
/// waiter, or a dead holder whose hour has not ended.
fn says_listed(busy: &Busy, now: u64) -> bool {
    busy.waiting > 0 || busy.dead_until_ms.is_some_and(|until| now < until)
}

impl Held {
    fn stamp(&self) -> Option<u64> {
        match self {
            Held::Nothing => None,
            Held::Listed { stamp, .. } | Held::Gone { stamp, .. } => Some(*stamp),
        }
    }

    fn version(&self) -> Option<u64> {
        match self {
            Held::Nothing => None,
            Held::Listed { version, .. } | Held::Gone { version, .. } => Some(*version),
        }
    }

    /// Whether the shard shows what a report of `busy` says at `now`.
    fn shows(&self, busy: &Busy, now: u64) -> bool {
        match self {
            Held::Nothing => false,
            Held::Listed { busy: shown, .. } => shown == busy,
            Held::Gone { .. } => !says_listed(busy, now),
        }
    }

    /// The shard is sent `report` (drawn at the key's `version`) at
    /// `now`: the newest report it has heard of wins, an older or
    /// repeated one changes nothing. Returns the answer it must give.
    fn receive(&mut self, report: Report, version: u64, now: u64) -> Answer {
        if let Some(stamp) = self.stamp().filter(|held| *held >= report.stamp) {
            return Answer {
                applied: false,
                stamp,
                same: self.shows(&report.busy, now),
            };
        }
        *self = if says_listed(&report.busy, now) {
            Held::Listed {
                stamp: report.stamp,
                busy: report.busy,
                version,
            }
        } else {
            Held::Gone {
                stamp: report.stamp,
                left_ms: now,
                version,
            }
        };
        Answer {
            applied: true,
            stamp: report.stamp,
            same: true,
        }
    }

    /// The shard's alarm ticks the key at `now`: a dead holder's hour
    /// that ended takes it off the list; a key that left is forgotten
    /// once its memory ran out; anything else stays.
    fn tick(&mut self, now: u64) {
        *self = match *self {
            Held::Gone { left_ms, .. } if now >= left_ms + LIST_GONE_KEPT_MS => Held::Nothing,
            Held::Listed {
                stamp,
                busy,
                version,
            } if !says_listed(&busy, now) => Held::Gone {
                stamp,
                left_ms: now,
                version,
            },
            held => held,
        };
    }
}

impl Key {
    /// What the Coordinator reports: its state as it is.
    fn busy(&self) -> Busy {
        Busy {
            holders: self.holders,
            waiting: self.waiters.len() as u32,
            oldest_since_ms: self.waiters.front().copied(),
            limit: self.limit,
            dead_until_ms: self.dead_at.map(Busy::dead_until),
            paused: false,
            stalled_from_ms: None,
        }
    }

    /// The oracle: listed with a waiter, or a holder found dead less than
    /// an hour ago.
    fn listed(&self, now: u64) -> bool {
        !self.waiters.is_empty() || self.dead_at.is_some_and(|at| now < at + HOUR_MS)
    }

    /// What its list entry shows that a decision changes.
    fn shown(&self) -> Shown {
        Shown {
            holders: self.holders,
            waiting: self.waiters.len() as u32,
            limit: self.limit,
            paused: false,
            handed_since_ms: None,
        }
    }

    fn shape(&self) -> (bool, Option<u64>) {
        (!self.waiters.is_empty(), self.dead_at)
    }

    /// The holder-check alarm runs while the key has waiters, or owes a report.
    fn alarm_due(&self) -> bool {
        !self.waiters.is_empty() || self.owed
    }
}

/// A follow-up report the object's shell will send at `at` (its
/// `waitUntil`, gone with the object's `life`).
#[derive(Debug, Clone, Copy)]
struct FollowUp {
    key: usize,
    at: u64,
    life: u64,
}

#[derive(Debug, Clone)]
struct InFlight {
    key: usize,
    report: Report,
    version: u64,
}

#[derive(Debug, Default, Clone)]
struct Stats {
    steps: u64,
    seeds: u64,
    reports: u64,
    applied: u64,
    stale: u64,
    confirmed: u64,
    left_held: u64,
    forgotten: u64,
    lost_with_object: u64,
    uncontended: u64,
    excused: u64,
    follow_ups: u64,
    fresh: u64,
    verified: u64,
    dead_listed: u64,
    boundary_steps: u64,
    pages: u64,
    repaired_at_drain: u64,
    faults: Injected,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }
    fn add(&mut self, o: &Self) {
        self.steps += o.steps;
        self.seeds += o.seeds;
        self.reports += o.reports;
        self.applied += o.applied;
        self.stale += o.stale;
        self.confirmed += o.confirmed;
        self.left_held += o.left_held;
        self.forgotten += o.forgotten;
        self.lost_with_object += o.lost_with_object;
        self.uncontended += o.uncontended;
        self.excused += o.excused;
        self.follow_ups += o.follow_ups;
        self.fresh += o.fresh;
        self.verified += o.verified;
        self.dead_listed += o.dead_listed;
        self.boundary_steps += o.boundary_steps;
        self.pages += o.pages;
        self.repaired_at_drain += o.repaired_at_drain;
        self.faults.add(&o.faults);
    }
}

struct Sim {
    rng: Rng,
    faults: Faults,
    now: u64,
    shards: ShardCount,
    dbs: Vec<Db>,
    keys: Vec<Key>,
    in_flight: Vec<InFlight>,
    follow_ups: Vec<FollowUp>,
    stats: Stats,
    trace: bool,
    log: VecDeque<String>,
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed);
        let shards = ShardCount::parse(Some(&rng.range(1, 5).to_string())).unwrap();
        let dbs = (0..shards.get())
            .map(|_| {
                let db = Db(Connection::open_in_memory().unwrap());
                sql::migrate(&db);
                db
            })
            .collect();
        let names = ["a", "b", "ключ", "c/d", "e e", "f", "g", "h", "i", "j", "k"];
        let count = rng.range(2, names.len() as u64) as usize;
        let keys = names[..count]
            .iter()
            .map(|name| Key {
                name: name.to_string(),
                holders: 0,
                limit: 1,
                waiters: VecDeque::new(),
                dead_at: None,
                reporter: Reporter::default(),
                owed: false,
                version: 0,
                latest_shown: false,
                life: 0,
                latest_life: 0,
                latest_at: 0,
                held: Held::Nothing,
                latest: None,
            })
            .collect();
        let faults = Faults::draw(
            &mut rng,
            &[
                (Fault::ResetAfterCommit, 10),
                (Fault::Reset, 4),
                (Fault::EventLost, 10),
                (Fault::EventLate, 40),
                (Fault::EventDuplicate, 10),
                (Fault::AlarmLost, 30),
                (Fault::AlarmSpurious, 20),
                (Fault::AlarmDuplicate, 20),
            ],
        );
        Sim {
            rng,
            faults,
            now: 1_700_000_000_000,
            shards,
            dbs,
            keys,
            in_flight: Vec::new(),
            follow_ups: Vec::new(),
            stats: Stats::default(),
            trace,
            log: VecDeque::new(),
        }
    }

    fn note(&mut self, line: String) {
        if self.trace {
            eprintln!("[{}] {line}", self.now);
        }
        self.log.push_back(format!("[{}] {line}", self.now));
        if self.log.len() > 40 {
            self.log.pop_front();
        }
    }

    fn strikes(&mut self, fault: Fault) -> bool {
        self.faults.strikes(&mut self.rng, fault)
    }

    fn shard(&self, key: usize) -> usize {
        shard_of(&self.keys[key].name, self.shards) as usize
    }

    // --- the Coordinators ---

    /// One decision of a key's Coordinator, then its report after the reply.
    fn decide(&mut self, k: usize) {
        let before = self.keys[k].shape();
        let shown_before = self.keys[k].shown();
        let now = self.now;
        let action = self.rng.below(5);
        let key = &mut self.keys[k];
        let what = match action {
            0 | 1 => {
                if key.holders < key.limit && key.waiters.is_empty() {
                    key.holders += 1;
                    "acquire: granted"
                } else {
                    key.waiters.push_back(now);
                    "acquire: waits"
                }
            }
            2 => {
                if key.holders == 0 {
                    return;
                }
                key.holders -= 1;
                hand_on(key);
                "release"
            }
            3 => {
                if key.waiters.is_empty() {
                    return;
                }
                let at = self.rng.below(key.waiters.len() as u64) as usize;
                key.waiters.remove(at);
                "a waiter leaves"
            }
            _ => {
                if key.holders == 0 {
                    return;
                }
                key.holders -= 1;
                key.dead_at = Some(now);
                hand_on(key);
                "a holder found dead"
            }
        };
        if self.rng.percent(5) {
            let key = &mut self.keys[k];
            key.limit = self.rng.range(1, 3) as u32;
            hand_on(key);
        }
        let key = &mut self.keys[k];
        let after = key.shape();
        if after != before {
            key.version += 1;
        }
        let busy = key.busy();
        // The Coordinator's one rule (its decision states it), and what
        // its shell does with it.
        let found_dead = what == "a holder found dead";
        let due = reporter::due(shown_before, key.shown(), found_dead);
        // Marked in the decision's own commit.
        key.owed |= due == Due::Owed;
        let listed_for_dead = key.reporter.listed_for_dead(now);
        let report = (key.reporter.sends_now(due, now)).then(|| key.reporter.report(busy, now));
        if let Some(report) = report {
            self.drawn(k, report);
        }
        // No waiter before or after, no holder found dead (contract §10).
        let uncontended = !before.0 && !after.0 && !found_dead;
        if uncontended {
            self.stats.uncontended += 1;
            if !listed_for_dead {
                assert_eq!(report, None, "{what}: an uncontended decision reported");
            }
        }
        self.note(format!(
            "{}: {what} -> {busy:?}, report {report:?}",
            self.keys[k].name
        ));
        if let Some(report) = report {
            self.send(k, report);
        }
    }

    /// The oracle records each report an object draws: its latest, which
    /// it alone may take as confirmed. A key's stamps grow across the
    /// object's lives (the reporter's premise: a restart takes longer than
    /// a millisecond, which the simulation's resets honour).
    fn drawn(&mut self, k: usize, report: Report) {
        let key = &mut self.keys[k];
        if let Some(latest) = key.latest {
            assert!(
                report.stamp > latest.stamp,
                "{}: report {} drawn after report {}",
                key.name,
                report.stamp,
                latest.stamp
            );
        }
        key.latest = Some(report);
        key.latest_shown = false;
        key.latest_life = key.life;
        key.latest_at = self.now;
    }

    /// The object restarts: what it held in memory is gone, and the
    /// restart takes a millisecond at least.
    fn restart(&mut self, k: usize) {
        self.keys[k].reporter = Reporter::default();
        self.keys[k].life += 1;
        // A follow-up it owed is gone with it: the alarm's to repair.
        self.keys[k].latest_shown = false;
        self.now += 1;
    }

    /// A report leaves the object: or is lost with it, killed between its
    /// decision and its report.
    fn send(&mut self, k: usize, report: Report) {
        self.stats.reports += 1;
        if self.strikes(Fault::ResetAfterCommit) {
            self.stats.lost_with_object += 1;
            self.restart(k);
            self.note(format!("{}: killed before its report", self.keys[k].name));
            return;
        }
        let version = self.keys[k].version;
        self.in_flight.push(InFlight {
            key: k,
            report,
            version,
        });
    }

    fn coordinator_alarm(&mut self, k: usize) {
        if !self.keys[k].alarm_due() {
            return;
        }
        if self.strikes(Fault::AlarmLost) {
            return;
        }
        let now = self.now;
        let key = &mut self.keys[k];
        let busy = key.busy();
        if let Some(report) = key.reporter.on_alarm(busy, now, key.owed) {
            self.drawn(k, report);
            self.note(format!("{}: alarm reports {report:?}", self.keys[k].name));
            self.send(k, report);
        }
    }

    // --- the shards ---

    /// One decision of a shard (a report's or a tick's), checked against
    /// its rows; its answer.
    fn shard_decide<T>(
        &mut self,
        shard: usize,
        name: &str,
        decide: impl FnOnce(&Option<busy::Row>, u64) -> (T, Transition),
    ) -> T {
        let db = &self.dbs[shard];
        let row = sql::load(db, name);
        let (answer, transition) = decide(&row, self.now);
        sql::write(db, name, &transition);
        busy::assert_invariants(&transition.state);
        assert_eq!(
            sql::load(db, name),
            transition.state,
            "{name}: the rows are the state"
        );
        answer
    }

    /// Delivers one report in flight (the oldest, or a later one), and
    /// its answer back to the key's object as it now is.
    fn deliver(&mut self) {
        if self.in_flight.is_empty() {
            return;
        }
        let at = if self.strikes(Fault::EventLate) {
            self.rng.below(self.in_flight.len() as u64) as usize
        } else {
            0
        };
        let flight = if self.strikes(Fault::EventDuplicate) {
            self.in_flight[at].clone()
        } else {
            self.in_flight.remove(at)
        };
        self.arrive(flight);
    }

    fn arrive(&mut self, flight: InFlight) {
        let InFlight {
            key: k,
            report,
            version,
        } = flight;
        if self.strikes(Fault::EventLost) {
            self.note(format!(
                "{}: report {} lost",
                self.keys[k].name, report.stamp
            ));
            return;
        }
        let name = self.keys[k].name.clone();
        let shard = self.shard(k);
        let now = self.now;
        let held_before = self.keys[k].held;
        let expected = self.keys[k].held.receive(report, version, now);
        let answer = self.shard_decide(shard, &name, |row, now| busy::report(row, now, report));
        self.note(format!(
            "{name}: report {} (v{version}) -> {answer:?}",
            report.stamp
        ));
        assert_eq!(
            answer, expected,
            "{name}: the shard's answer to report {:?}, the oracle's shard holding {held_before:?}",
            report
        );
        if expected.applied {
            self.stats.applied += 1;
        } else {
            self.stats.stale += 1;
            if matches!(held_before, Held::Gone { .. }) && says_listed(&report.busy, now) {
                self.stats.left_held += 1;
            }
        }
        if self.strikes(Fault::EventLost) {
            return;
        }
        let answered = self.keys[k].reporter.answered(report.stamp, answer);
        if answered.confirmed {
            self.confirmed(k, report);
        }
        if answered.clears_mark {
            // Only what the shard shows may pay the mark: the oracle's
            // shard must hold the object's latest report.
            let key = &self.keys[k];
            let latest = key.latest.expect("a mark cleared before any report");
            assert!(
                key.held.shows(&latest.busy, now),
                "{name}: the owed mark cleared, but the list holds {:?}, not the latest {latest:?}",
                key.held
            );
            self.keys[k].owed = false;
        }
        let key = &mut self.keys[k];
        let latest = key
            .latest
            .is_some_and(|latest| latest.stamp == report.stamp);
        if answer.same && latest && key.latest_life == key.life {
            key.latest_shown = true;
        }
        if let Some(at) = answered.follow_up_at_ms {
            let key = &self.keys[k];
            // The oracle's spacing, from its own record of the last draw.
            assert!(
                at <= key.latest_at + LIST_REPORT_SPACING_MS,
                "{name}: a follow-up at {at}, its last report drawn at {}",
                key.latest_at
            );
            self.follow_ups.push(FollowUp {
                key: k,
                at,
                life: key.life,
            });
        }
    }

    /// The follow-ups whose time came (`all`: every one, as the drain
    /// waits them out): each sends the key as it then is, unless its
    /// object was reset meanwhile.
    fn run_follow_ups(&mut self, all: bool) {
        let now = self.now;
        let (due, later) = std::mem::take(&mut self.follow_ups)
            .into_iter()
            .partition(|f| all || f.at <= now);
        self.follow_ups = later;
        for FollowUp { key: k, life, .. } in due {
            if self.keys[k].life != life {
                continue;
            }
            let busy = self.keys[k].busy();
            let report = self.keys[k].reporter.report(busy, now);
            self.drawn(k, report);
            self.stats.follow_ups += 1;
            self.note(format!("{}: follow-up {report:?}", self.keys[k].name));
            self.send(k, report);
        }
    }

    /// The object took `report` as confirmed: it must be the latest it
    /// drew, and what the oracle's shard shows.
    fn confirmed(&mut self, k: usize, report: Report) {
        let key = &self.keys[k];
        let latest = key.latest.expect("a report confirmed before any was drawn");
        assert_eq!(
            report.stamp, latest.stamp,
            "{}: the answer to report {} confirmed it, but the object's latest is {:?}",
            key.name, report.stamp, latest
        );
        assert!(
            key.held.shows(&latest.busy, self.now),
            "{}: report {:?} confirmed, but the shard holds {:?}",
            key.name,
            latest,
            key.held
        );
        self.stats.confirmed += 1;
    }

    fn shard_alarm(&mut self, shard: usize) {
        if self.strikes(Fault::AlarmLost) {
            return;
        }
        let mut due = sql::due_keys(&self.dbs[shard], self.now, 64);
        if self.strikes(Fault::AlarmSpurious) {
            let k = self.rng.below(self.keys.len() as u64) as usize;
            due.push(self.keys[k].name.clone());
        }
        if self.strikes(Fault::AlarmDuplicate) {
            due.extend(due.clone());
        }
        let now = self.now;
        for name in due {
            self.shard_decide(shard, &name, |row, now| ((), busy::tick(row, now, Tick)));
            // A spurious tick may name a key of another shard: this one
            // has no row for it.
            let k = self.keys.iter().position(|key| key.name == name).unwrap();
            if self.shard(k) != shard {
                continue;
            }
            let key = &mut self.keys[k];
            let was = key.held;
            key.held.tick(now);
            if was != Held::Nothing && key.held == Held::Nothing {
                self.stats.forgotten += 1;
            }
        }
    }

    // --- reading ---

    /// The whole list, page by page through the merge, as `coordinatorList`
    /// reads it; with `verify`, the entries it doubts are asked about.
    fn read(&mut self, verify: bool) -> BTreeMap<String, Listed> {
        let limit = ListLimit::new(self.rng.range(1, 7) as f64).unwrap();
        let asked = per_shard(limit, self.shards.get());
        let mut all = BTreeMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1_000 {
            let pages = self
                .dbs
                .iter()
                .map(|db| {
                    let entries = sql::page(db, cursor.as_deref(), asked, self.now);
                    ShardPage {
                        full: entries.len() as u32 == asked,
                        entries,
                    }
                })
                .collect();
            let (entries, more) = merge(pages, limit);
            self.stats.pages += 1;
            assert!(entries.len() <= limit.get() as usize);
            assert!(
                !more || !entries.is_empty(),
                "an empty page with more to come"
            );
            let mut doubted = 0;
            for (name, listed) in &entries {
                assert!(
                    cursor.as_ref().is_none_or(|c| name > c),
                    "pages in key order"
                );
                assert!(
                    all.insert(name.clone(), *listed).is_none(),
                    "{name} on two pages"
                );
                if verify
                    && doubted < LIST_VERIFIES_PER_PAGE_MAX
                    && listed.reported_ms + LIST_VERIFY_AFTER_MS <= self.now
                {
                    doubted += 1;
                    let k = self.keys.iter().position(|key| key.name == *name).unwrap();
                    let (now, busy) = (self.now, self.keys[k].busy());
                    let report = self.keys[k].reporter.report(busy, now);
                    self.drawn(k, report);
                    self.stats.verified += 1;
                    let version = self.keys[k].version;
                    // The read waits for the Coordinator's report.
                    self.stats.reports += 1;
                    self.arrive(InFlight {
                        key: k,
                        report,
                        version,
                    });
                }
            }
            if !more {
                return all;
            }
            cursor = entries.last().map(|(name, _)| name.clone());
        }
        panic!("a read of a dozen keys took a thousand pages");
    }

    /// Every shard's listed keys, read whole: what the merge must give.
    fn union(&self) -> BTreeMap<String, Listed> {
        let mut all = BTreeMap::new();
        for db in &self.dbs {
            for (name, listed) in sql::page(db, None, 500, self.now) {
                assert!(all.insert(name, listed).is_none(), "a key on two shards");
            }
        }
        all
    }

    fn check(&mut self) {
        let union = self.union();
        let read = self.read(false);
        assert_eq!(
            read.keys().collect::<Vec<_>>(),
            union.keys().collect::<Vec<_>>(),
            "the pages are the union of the shards"
        );
        let now = self.now;
        for (k, key) in self.keys.iter().enumerate() {
            // The shards against the oracle's: rows and the list, exactly.
            let row = sql::load(&self.dbs[self.shard(k)], &key.name);
            match (key.held, row) {
                (Held::Nothing, None) => {}
                (
                    Held::Listed { stamp, busy, .. },
                    Some(Row::Listed {
                        stamp: got,
                        busy: shown,
                        ..
                    }),
                ) if stamp == got && busy == shown => {}
                (Held::Gone { stamp, .. }, Some(Row::Gone { stamp: got, .. })) if stamp == got => {}
                (Held::Gone { left_ms, .. }, None) => panic!(
                    "{}: forgotten, though it left at {left_ms} and is kept until {}",
                    key.name,
                    left_ms + LIST_GONE_KEPT_MS
                ),
                (held, row) => panic!(
                    "{}: the shard's row {row:?}, the oracle's shard {held:?}",
                    key.name
                ),
            }
            let shown = match key.held {
                Held::Listed { stamp, busy, .. } if says_listed(&busy, now) => Some((stamp, busy)),
                _ => None,
            };
            assert_eq!(
                union.get(&key.name).map(|l| (l.stamp, l.busy)),
                shown,
                "{}: listed as the oracle's shard holds it ({:?})",
                key.name,
                key.held
            );
            // A key with waiters whose object heard its latest report shown,
            // and drew none since, is on the list as it is: a change of its
            // counts either drew a report or, while one was on its way, is
            // owed the follow-up its answer brings.
            let follow_up_due = (self.follow_ups.iter()).any(|f| f.key == k && f.life == key.life);
            if key.latest_shown && !key.waiters.is_empty() && !follow_up_due {
                assert!(
                    key.held.shows(&key.busy(), now),
                    "{}: its latest report shown, none since, yet the list holds {:?} for {:?}",
                    key.name,
                    key.held,
                    key.busy()
                );
                self.stats.fresh += 1;
            }
            // The list against the Coordinator, where it must follow it.
            let listed = union.get(&key.name);
            let expected = key.listed(self.now);
            let excused = self.in_flight.iter().any(|f| f.key == k)
                || key.held.version().unwrap_or(0) != key.version;
            if excused {
                self.stats.excused += 1;
                continue;
            }
            assert_eq!(listed.is_some(), expected, "{}: listed as it is", key.name);
            if let Some(listed) = listed {
                assert_eq!(
                    listed.busy.waiting > 0,
                    !key.waiters.is_empty(),
                    "{}: its waiters",
                    key.name
                );
                if key.waiters.is_empty() {
                    self.stats.dead_listed += 1;
                }
            }
        }
    }

    // --- time ---

    fn advance(&mut self) {
        let boundaries: Vec<u64> = self
            .keys
            .iter()
            .filter_map(|key| key.dead_at.map(|at| at + HOUR_MS))
            .chain(self.dbs.iter().filter_map(sql::next_wake))
            .chain(
                self.union()
                    .values()
                    .map(|l| l.reported_ms + LIST_VERIFY_AFTER_MS),
            )
            .filter(|at| *at > self.now)
            .collect();
        let roll = self.rng.below(100);
        let dt = if roll < 10 && !boundaries.is_empty() {
            self.stats.boundary_steps += 1;
            let at = *self.rng.pick(&boundaries);
            at - self.now - u64::from(self.rng.percent(30) && at - self.now > 1)
        } else if roll < 20 {
            self.rng.range(60_000, 1_200_000)
        } else {
            self.rng.range(0, 2_000)
        };
        self.now += dt;
    }

    fn step(&mut self) {
        self.run_follow_ups(false);
        let roll = self.rng.below(100);
        let k = self.rng.below(self.keys.len() as u64) as usize;
        match roll {
            0..40 => self.decide(k),
            40..65 => self.deliver(),
            65..75 => self.coordinator_alarm(k),
            75..80 => {
                let shard = self.rng.below(u64::from(self.shards.get())) as usize;
                self.shard_alarm(shard);
            }
            80..95 => self.advance(),
            95..98 => {
                self.read(true);
            }
            _ => {
                if self.faults.rate(Fault::Reset) > 0
                    && self.rng.percent(self.faults.rate(Fault::Reset) * 10)
                {
                    self.faults.count(Fault::Reset);
                    self.restart(k);
                    self.note(format!("{}: reset", self.keys[k].name));
                }
            }
        }
        self.stats.steps += 1;
        self.check();
    }

    /// The faults stop and every repair runs: then the list is exact.
    fn drain(&mut self) {
        self.faults.stop();
        let excused_before = self
            .keys
            .iter()
            .enumerate()
            .filter(|(k, key)| {
                self.in_flight.iter().any(|f| f.key == *k)
                    || key.held.version().unwrap_or(0) != key.version
            })
            .count() as u64;
        for _ in 0..3 {
            self.run_follow_ups(true);
            while !self.in_flight.is_empty() {
                self.deliver();
            }
            for k in 0..self.keys.len() {
                self.coordinator_alarm(k);
            }
            while !self.in_flight.is_empty() {
                self.deliver();
            }
            self.now += LIST_VERIFY_AFTER_MS;
            self.read(true);
            for shard in 0..self.dbs.len() {
                self.shard_alarm(shard);
            }
        }
        let union = self.union();
        for key in &self.keys {
            let listed = union.get(&key.name);
            assert_eq!(
                listed.is_some(),
                key.listed(self.now),
                "{}: listed once repaired",
                key.name
            );
            if let Some(listed) = listed {
                assert_eq!(
                    listed.busy,
                    key.busy(),
                    "{}: its counts once repaired",
                    key.name
                );
            }
            // Else its alarm would run on for a report the list has.
            assert!(!key.owed, "{}: still owes a report once repaired", key.name);
        }
        self.stats.repaired_at_drain += excused_before;
    }

    fn run(&mut self) {
        for _ in 0..STEPS_PER_SEED {
            self.step();
        }
        self.drain();
        self.stats.seeds += 1;
    }
}

/// Free slots go to the earliest waiters.
fn hand_on(key: &mut Key) {
    while key.holders < key.limit {
        if key.waiters.pop_front().is_none() {
            break;
        }
        key.holders += 1;
    }
}

fn run_seed(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sim.run())) {
        report_failure("busy_sim", seed, sim.stats.steps);
        eprintln!("last steps:\n{}", Vec::from(sim.log.clone()).join("\n"));
        resume_unwind(panic);
    }
    sim.stats.faults = sim.faults.injected;
    sim.stats
}

#[test]
fn simulation() {
    if let Some(total) = simulate("busy simulation", 0, SIM_STEPS_DEFAULT, run_seed) {
        assert_reached(&[
            ("reports", total.reports),
            ("reports applied", total.applied),
            ("stale reports", total.stale),
            ("confirmations", total.confirmed),
            ("late reports refused for a key that left", total.left_held),
            ("left keys forgotten", total.forgotten),
            ("reports lost with their object", total.lost_with_object),
            ("uncontended decisions", total.uncontended),
            ("steps excused by a report in flight or lost", total.excused),
            ("follow-ups of counts changed on the way", total.follow_ups),
            ("keys checked fresh after an answer", total.fresh),
            ("reads that doubted an entry", total.verified),
            ("keys listed for a dead holder alone", total.dead_listed),
            ("time steps onto a boundary", total.boundary_steps),
            ("keys repaired at the drain", total.repaired_at_drain),
        ]);
        total.faults.assert_injected(&[
            Fault::ResetAfterCommit,
            Fault::Reset,
            Fault::EventLost,
            Fault::EventLate,
            Fault::EventDuplicate,
            Fault::AlarmLost,
            Fault::AlarmSpurious,
            Fault::AlarmDuplicate,
        ]);
    }
}
