//! The rate limiter's core, checked by brute force over the whole grant log.
//!
//! Seeded random call sequences (acquire with random rule subsets and block
//! sizes, penalize, refund, inspect, time jumps, rule values changed) run on
//! the memory store, on the SQL store (rusqlite) and on the object's
//! write-through cache over a second SQL store in lockstep, and every
//! answer is compared with a model that keeps every grant ever made and
//! recomputes everything from scratch. The cache is checked against the
//! storage under it after every step, holds few rows in most sequences (so
//! it must ask storage for the rest), and restarts at random (dropped and
//! reloaded from storage, as after an eviction):
//!
//! - no interval `[x, x + windowMs)` of any rule holds more than its limit;
//! - `granted` is exactly what every rule and the cooldown allowed (so no
//!   refusal while a permit was free, and no partial grant short of it);
//! - `waitMs` is exact: the first time an acquire of one permit would pass;
//! - penalties are never shortened;
//! - refunds take back only permits granted, newest first, from grants still
//!   inside some rule's window, and say how many;
//! - a bucket that is named more rule ids than it has slots reuses a slot
//!   only when no kept grant counts for its rule, and otherwise refuses the
//!   call (`rules`) without changing anything.
//!
//! A fifth of the steps land exactly on a boundary the model computes from
//! its own grants and clock (a grant's time plus its window, the
//! cooldown's end) or a millisecond before it, where an off-by-one shows.
//! Every step runs `decide` and applies its writes to each store, as the
//! shell does, and checks the whole table's invariants after.
//!
//! Faults (the shared vocabulary, `tests/common/faults.rs`): the object
//! resets, and its cache is reloaded from storage (`Fault::Reset`).
//!
//! `BATON_SIM_STEPS=n` sets the total step budget (default 90,000: 300
//! sequences of 300 steps). `BATON_SIM_SEED=s` replays one sequence.

mod common;

use baton::error::BatonError;
use baton::limits::RATE_RULE_SLOTS;
use baton::rate_limit::log::Reason;
use baton::rate_limit::{
    assert_table_invariants as assert_invariants, decide, migrate, Acquire, AcquireReply, Cached,
    Call, Inspect, Inspection, Penalize, RateCache, Refund, Rule, RuleSet, SqlRows, Table,
    Transition,
};
use baton::sql::{SqlExec, SqlValue};
use baton::transition::{LogKind, LogLine};
use common::{
    assert_reached, report_failure, said, simulate, sqlite, Fault, Faults, Injected, Rng, Said,
    SimStats,
};
use rusqlite::Connection;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

// ---------------------------------------------------------------------------
// decide + apply, on each kind of bucket.
// ---------------------------------------------------------------------------

/// A bucket a test decides on and then applies the writes to, as the
/// shell does: the memory table, the SQL store, the cache over SQL.
trait Decides {
    fn run<C: Judged>(&mut self, now: u64, call: C) -> Result<C::Answer, BatonError>;
    /// An inspect, which writes nothing.
    fn peek(&self, now: u64) -> Inspection;
}

fn inspected<V>(decided: Result<(Inspection, Transition<V>), BatonError>) -> Inspection {
    match decided {
        Ok((inspection, _)) => inspection,
        Err(refused) => panic!("inspect refused: {refused:?}"),
    }
}

/// A call whose decision-log lines the test knows by its own rule
/// (contract §9): an acquire prints one line, routine when it grants any
/// permit, contended when it denies every one, naming no instance; nothing
/// else prints.
trait Judged: Call + Clone {
    fn expected(&self, answer: &Self::Answer) -> Vec<Said>;
    /// `answer`, once the decision's `log` is what the rule expects, in
    /// the test's own words.
    fn judged(&self, answer: Self::Answer, log: &[LogLine<Reason>]) -> Self::Answer {
        assert_eq!(
            said(log),
            self.expected(&answer),
            "LOG: the decision's lines"
        );
        answer
    }
}

impl Judged for Acquire {
    fn expected(&self, r: &AcquireReply) -> Vec<Said> {
        let (kind, decision) = match r.granted {
            0 => (LogKind::Contended, "denied"),
            _ => (LogKind::Routine, "granted"),
        };
        let reason = format!(
            "{} of {} permit(s); retry in {} ms",
            r.granted, self.permits, r.wait_ms
        );
        vec![Said {
            kind,
            instance: None,
            decision,
            reason,
            waited_ms: None,
        }]
    }
}

impl Judged for Penalize {
    fn expected(&self, _: &u64) -> Vec<Said> {
        Vec::new()
    }
}

impl Judged for Refund {
    fn expected(&self, _: &u32) -> Vec<Said> {
        Vec::new()
    }
}

impl Decides for Table {
    fn run<C: Judged>(&mut self, now: u64, call: C) -> Result<C::Answer, BatonError> {
        let lines = call.clone();
        let (reply, Transition { writes, log, .. }) = decide(&&*self, now, call)?;
        self.apply(&writes);
        Ok(lines.judged(reply, &log))
    }
    fn peek(&self, now: u64) -> Inspection {
        inspected(decide(&self, now, Inspect))
    }
}

impl Decides for SqlRows<'_, Db> {
    fn run<C: Judged>(&mut self, now: u64, call: C) -> Result<C::Answer, BatonError> {
        let lines = call.clone();
        let (reply, Transition { writes, log, .. }) = decide(&&*self, now, call)?;
        self.write_all(&writes);
        Ok(lines.judged(reply, &log))
    }
    fn peek(&self, now: u64) -> Inspection {
        inspected(decide(&self, now, Inspect))
    }
}

/// The object's cache over a SQL store, as the shell holds them.
struct CachedStore<'a> {
    inner: SqlRows<'a, Db>,
    cache: &'a mut RateCache,
}

impl<'a> CachedStore<'a> {
    fn new(inner: SqlRows<'a, Db>, cache: &'a mut RateCache) -> Self {
        CachedStore { inner, cache }
    }
    fn inner(&self) -> &SqlRows<'a, Db> {
        &self.inner
    }
    fn view(&self) -> Cached<'_, SqlRows<'a, Db>> {
        Cached {
            cache: self.cache,
            inner: &self.inner,
        }
    }
}

impl Decides for CachedStore<'_> {
    fn run<C: Judged>(&mut self, now: u64, call: C) -> Result<C::Answer, BatonError> {
        let lines = call.clone();
        let (reply, Transition { writes, log, .. }) = decide(&self.view(), now, call)?;
        self.cache.write(&self.inner, &writes);
        Ok(lines.judged(reply, &log))
    }
    fn peek(&self, now: u64) -> Inspection {
        inspected(decide(&self.view(), now, Inspect))
    }
}

fn acquire(
    s: &mut impl Decides,
    now: u64,
    rules: &RuleSet,
    permits: u32,
) -> Result<AcquireReply, BatonError> {
    let call = Acquire {
        rules: std::rc::Rc::new(rules.clone()),
        permits,
    };
    s.run(now, call)
}

fn penalize(s: &mut impl Decides, now: u64, cooldown_ms: u64) -> u64 {
    match s.run(now, Penalize { cooldown_ms }) {
        Ok(until_ms) => until_ms,
        Err(refused) => panic!("penalize refused: {refused:?}"),
    }
}

fn refund(s: &mut impl Decides, now: u64, permits: u32) -> u32 {
    match s.run(now, Refund { permits }) {
        Ok(refunded) => refunded,
        Err(refused) => panic!("refund refused: {refused:?}"),
    }
}

fn inspect(s: &impl Decides, now: u64) -> Inspection {
    s.peek(now)
}

// ---------------------------------------------------------------------------
// SqlExec over rusqlite, counting SQLite's own work.
// ---------------------------------------------------------------------------

struct Db {
    conn: Connection,
    /// Rows stepped through by full table scans, summed over statements.
    fullscan_steps: Cell<i64>,
    /// SQLite virtual-machine instructions, summed over statements: its
    /// measure of work, independent of the machine and of timing.
    vm_steps: Cell<i64>,
    /// Statements that scanned a table instead of searching an index.
    scans: RefCell<Vec<String>>,
    /// Statements whose plan was checked already.
    planned: RefCell<BTreeSet<String>>,
}

impl Db {
    fn migrated() -> Db {
        let db = Db {
            conn: Connection::open_in_memory().expect("open in-memory db"),
            fullscan_steps: Cell::new(0),
            vm_steps: Cell::new(0),
            scans: RefCell::new(Vec::new()),
            planned: RefCell::new(BTreeSet::new()),
        };
        migrate(&db);
        db
    }

    /// The statement's query plan, one line per step.
    fn plan(&self, sql: &str, params: &[SqlValue]) -> Vec<String> {
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut stmt = self.conn.prepare(&explain).expect("explain");
        sqlite::bind(&mut stmt, sql, params);
        let mut rows = stmt.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next().expect("plan row") {
            out.push(row.get::<_, String>(3).expect("plan detail"));
        }
        out
    }
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        if !sql.trim_start().starts_with("CREATE")
            && self.planned.borrow_mut().insert(sql.to_owned())
        {
            // A table scan is allowed only where SQLite proves it empty-or-tiny
            // (never here): every statement must search an index.
            for line in self.plan(sql, params) {
                if line.starts_with("SCAN") {
                    self.scans.borrow_mut().push(format!("{line}: {sql}"));
                }
            }
        }
        let ran = sqlite::run(&self.conn, sql, params);
        self.vm_steps
            .set(self.vm_steps.get() + i64::from(ran.vm_steps));
        self.fullscan_steps
            .set(self.fullscan_steps.get() + i64::from(ran.fullscan_steps));
        ran.rows
    }
}

// ---------------------------------------------------------------------------
// The model: every grant ever made, and brute force.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct MGrant {
    at: u64,
    permits: u64,
    rules: BTreeSet<String>,
}

#[derive(Debug, Clone, Default)]
struct Model {
    /// Every grant ever made, in order, with refunds subtracted (never deleted).
    grants: Vec<MGrant>,
    rules: BTreeMap<String, (u64, u64)>,
    /// Rule ids whose limit or window changed at some point: the interval
    /// guarantee is checked for the others (a changed rule is checked at
    /// each grant against its values then).
    changed: BTreeSet<String>,
    max_window: u64,
    horizon: u64,
    cooldown_until: u64,
    /// The rule id in each of the bucket's slots.
    slots: Vec<Option<String>>,
    /// Every rule id's values as last given, forgotten or not.
    values_seen: BTreeMap<String, (u64, u64)>,
}

impl Model {
    /// The times at or after `now` where something frees: each grant's
    /// time plus each of its rules' windows (it stops counting there), the
    /// cooldown's end, and the millisecond before each.
    fn boundaries(&self, now: u64) -> Vec<u64> {
        let mut edges = vec![self.cooldown_until];
        for g in self.grants.iter().rev().take(32) {
            for rule in &g.rules {
                if let Some(&(_, window)) = self.rules.get(rule) {
                    edges.push(g.at + window);
                }
            }
        }
        let mut all: Vec<u64> = edges
            .iter()
            .flat_map(|&t| [t.saturating_sub(1), t])
            .filter(|&t| t >= now)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    fn used(&self, rule: &str, t: u64) -> u64 {
        let (_, window) = self.rules[rule];
        // Counted at t: granted after t - window (and not before the horizon).
        let from = (t + 1).saturating_sub(window).max(self.horizon);
        self.grants
            .iter()
            .filter(|g| g.rules.contains(rule) && g.at >= from && g.at <= t)
            .map(|g| g.permits)
            .sum()
    }

    /// The first time at or after `now` when `rules` all have a free permit.
    fn rule_free_at(&self, rule: &str, now: u64) -> u64 {
        let (limit, window) = self.rules[rule];
        let mut candidates: Vec<u64> = vec![now];
        candidates.extend(
            self.grants
                .iter()
                .filter(|g| g.rules.contains(rule))
                .map(|g| g.at + window),
        );
        candidates.retain(|&t| t >= now);
        candidates.sort_unstable();
        *candidates
            .iter()
            .find(|&&t| self.used(rule, t) < limit)
            .expect("every grant leaves its window")
    }

    /// `None` when the bucket has no slot for a new rule id (the refusal
    /// changes nothing).
    fn acquire(
        &mut self,
        now: u64,
        rules: &[(String, u64, u64)],
        permits: u64,
    ) -> Option<AcquireReply> {
        let call_max = rules.iter().map(|r| r.2).max().unwrap();
        let mut horizon = self.horizon;
        if call_max > self.max_window && self.max_window > 0 {
            horizon = horizon.max((now + 1).saturating_sub(self.max_window));
        }
        let max_window = self.max_window.max(call_max);
        // Slots, as the store's policy assigns them: a remembered id keeps
        // its slot; a new one takes the lowest free slot, then the lowest
        // slot whose rule (not named in the call) has no permit granted at
        // or after the start of what is kept.
        let kept_from = horizon.max((now + 1).saturating_sub(max_window));
        let mut slots = self.slots.clone();
        let named: BTreeSet<&String> = rules.iter().map(|r| &r.0).collect();
        let reusable: Vec<usize> = (0..slots.len())
            .filter(|&i| {
                slots[i].as_ref().is_some_and(|id| {
                    !named.contains(id)
                        && !self
                            .grants
                            .iter()
                            .any(|g| g.permits > 0 && g.at >= kept_from && g.rules.contains(id))
                })
            })
            .collect();
        let free: Vec<usize> = (0..slots.len()).filter(|&i| slots[i].is_none()).collect();
        let mut free = free.into_iter();
        let mut reusable = reusable.into_iter();
        let mut forgotten = Vec::new();
        for (id, _, _) in rules {
            if slots.iter().any(|s| s.as_ref() == Some(id)) {
                continue;
            }
            let slot = free.next().or_else(|| reusable.next())?;
            forgotten.extend(slots[slot].replace(id.clone()));
        }
        // Only now that every id has a slot does anything change.
        for old in forgotten {
            self.rules.remove(&old);
        }
        self.slots = slots;
        self.horizon = horizon;
        self.max_window = max_window;
        for (id, limit, window) in rules {
            // Against the values last seen, also for an id forgotten since.
            if let Some(&old) = self.values_seen.get(id) {
                if old != (*limit, *window) {
                    self.changed.insert(id.clone());
                }
            }
            self.values_seen.insert(id.clone(), (*limit, *window));
            self.rules.insert(id.clone(), (*limit, *window));
        }
        let cooling = now < self.cooldown_until;
        let free = rules
            .iter()
            .map(|(id, limit, _)| limit.saturating_sub(self.used(id, now)))
            .min()
            .unwrap();
        let granted = if cooling { 0 } else { free.min(permits) };
        if granted > 0 {
            self.grants.push(MGrant {
                at: now,
                permits: granted,
                rules: rules.iter().map(|r| r.0.clone()).collect(),
            });
            // The guarantee at the moment of granting, with the values in force.
            for (id, limit, _) in rules {
                assert!(self.used(id, now) <= *limit, "{id} over its limit at {now}");
            }
            return Some(AcquireReply {
                granted: granted as u32,
                wait_ms: 0,
            });
        }
        let mut at = if cooling { self.cooldown_until } else { now };
        for (id, _, _) in rules {
            at = at.max(self.rule_free_at(id, now));
        }
        // Exactness by definition: one millisecond earlier some rule (or the
        // cooldown) is still full; at `at` all are free.
        if at > now {
            let early = at - 1;
            let blocked = early < self.cooldown_until
                || rules
                    .iter()
                    .any(|(id, limit, _)| self.used(id, early) >= *limit);
            assert!(
                blocked,
                "nothing blocks at {early}, yet the model waits until {at}"
            );
        }
        assert!(at >= self.cooldown_until);
        for (id, limit, _) in rules {
            assert!(self.used(id, at) < *limit);
        }
        Some(AcquireReply {
            granted: 0,
            wait_ms: at - now,
        })
    }

    fn penalize(&mut self, now: u64, cooldown: u64) -> u64 {
        let before = self.cooldown_until;
        self.cooldown_until = self.cooldown_until.max(now + cooldown);
        assert!(self.cooldown_until >= before, "a penalty was shortened");
        self.cooldown_until
    }

    fn refund(&mut self, now: u64, permits: u64) -> u64 {
        let kept_from = self.horizon.max((now + 1).saturating_sub(self.max_window));
        let total_before: u64 = self.grants.iter().map(|g| g.permits).sum();
        let mut remaining = permits;
        for g in self.grants.iter_mut().rev() {
            if remaining == 0 || g.at < kept_from {
                break;
            }
            // A forgotten rule's grants all lie before what is kept.
            let live = g
                .rules
                .iter()
                .filter(|r| self.rules.contains_key(*r))
                .any(|r| {
                    let (_, window) = self.rules[r];
                    g.at >= (now + 1).saturating_sub(window).max(self.horizon)
                });
            if live {
                let take = remaining.min(g.permits);
                g.permits -= take;
                remaining -= take;
            }
        }
        let refunded = permits - remaining;
        let total_after: u64 = self.grants.iter().map(|g| g.permits).sum();
        assert_eq!(
            total_before - total_after,
            refunded,
            "refunds take back only granted permits"
        );
        refunded
    }

    fn inspect(&self, now: u64) -> BTreeMap<String, (u64, u64)> {
        self.rules
            .keys()
            .map(|id| (id.clone(), (self.used(id, now), self.rule_free_at(id, now))))
            .collect()
    }

    /// The guarantee over the whole log: for every rule whose values never
    /// changed, no interval `[x, x + window)` holds more than its limit. The
    /// fullest intervals start at a grant, so those are the ones checked.
    fn check_intervals(&self) {
        for (id, &(limit, window)) in &self.rules {
            if self.changed.contains(id) {
                continue;
            }
            let mine: Vec<&MGrant> = self
                .grants
                .iter()
                .filter(|g| g.rules.contains(id))
                .collect();
            for (i, g) in mine.iter().enumerate() {
                let inside: u64 = mine[i..]
                    .iter()
                    .take_while(|h| h.at < g.at + window)
                    .map(|h| h.permits)
                    .sum();
                assert!(
                    inside <= limit,
                    "rule {id}: {inside} permits in [{}, {})",
                    g.at,
                    g.at + window
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Both stores in lockstep with the model.
// ---------------------------------------------------------------------------

fn rule_set(rules: &[(String, u64, u64)]) -> RuleSet {
    RuleSet::new(
        rules
            .iter()
            .map(|(id, limit, window)| Rule::parse(id, *limit as f64, *window as f64).unwrap())
            .collect(),
    )
    .unwrap()
}

fn views(inspection: &Inspection) -> BTreeMap<String, (u64, u64)> {
    inspection
        .rules
        .iter()
        .map(|r| (r.id.to_string(), (r.used, r.next_free_at_ms)))
        .collect()
}

struct Pool {
    /// (id, limit, window) per rule id of this sequence.
    rules: Vec<(String, u64, u64)>,
    max_window: u64,
}

fn pool(rng: &mut Rng) -> Pool {
    // One sequence in four names more rule ids than a bucket remembers, so
    // slots are reused (and calls refused when none can be).
    let count = if rng.percent(25) {
        rng.range(17, 24)
    } else {
        rng.range(1, 10)
    } as usize;
    // Short windows and small limits so that rules fill, free and overlap.
    let long = rng.percent(20);
    let rules: Vec<(String, u64, u64)> = (0..count)
        .map(|i| {
            let window = if long {
                rng.range(1, 2_000)
            } else {
                rng.range(1, 60)
            };
            (format!("r{i}"), rng.range(1, 12), window)
        })
        .collect();
    let max_window = rules.iter().map(|r| r.2).max().unwrap();
    Pool { rules, max_window }
}

/// Total steps per `cargo test` unless `BATON_SIM_STEPS` says otherwise.
const SIM_STEPS_DEFAULT: u64 = 90_000;
/// Steps of one sequence (one seed).
const STEPS_PER_SEQUENCE: u64 = 300;

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    steps: u64,
    grants: u64,
    /// Acquires refused because no rule slot could be reused.
    refused_for_slots: u64,
    /// Sequences that named more rule ids than a bucket has slots.
    reusing_slots: u64,
    boundary_steps: u64,
    faults: Injected,
}

impl SimStats for Stats {
    fn steps(&self) -> u64 {
        self.steps
    }

    fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.grants += o.grants;
        self.refused_for_slots += o.refused_for_slots;
        self.reusing_slots += o.reusing_slots;
        self.boundary_steps += o.boundary_steps;
        self.faults.add(&o.faults);
    }
}

/// One random sequence of `steps` steps; `stats.steps` counts them as they run.
fn run_sequence(seed: u64, steps: u64, stats: &mut Stats) {
    let mut rng = Rng(seed);
    let mut pool = pool(&mut rng);
    let db = Db::migrated();
    let mut mem = Table::default();
    let mut model = Model {
        slots: vec![None; RATE_RULE_SLOTS],
        ..Model::default()
    };
    let mut refusals = 0;
    let mut now: u64 = rng.range(0, 1_000_000);
    let mut last_cooldown = 0;
    let change_values = rng.percent(25);
    // The cache's own randomness, apart, so the sequences stay as they were.
    let mut cache_rng = Rng(seed ^ 0xCAC4E);
    let mut faults = Faults::none();
    faults.set_rate(Fault::Reset, 3);
    let capacity = [1, 2, 3, 5, 8, 64][(seed % 6) as usize];
    // Rows read at a (re)start: all of the capacity, or fewer (it grows).
    let load_rows = [capacity, 1, 2, capacity / 2][(seed / 6 % 4) as usize];
    let cached_db = Db::migrated();
    let mut cache = RateCache::load(&SqlRows::new(&cached_db, "bucket"), load_rows, capacity);

    for step in 0..steps {
        stats.steps = step + 1;
        // Time: often still, often a little, sometimes past every window.
        now += match rng.below(10) {
            0..=2 => 0,
            3..=7 => rng.range(1, pool.max_window.max(2) / 2 + 1),
            8 => rng.range(1, pool.max_window * 2),
            _ => rng.range(0, 3),
        };
        if rng.percent(20) {
            // Exactly on a boundary, or a millisecond before it: where a
            // grant leaves a window, where the cooldown ends. The model's
            // own times, never the core's.
            let edges = model.boundaries(now);
            if !edges.is_empty() {
                now = *rng.pick(&edges);
                stats.boundary_steps += 1;
            }
        }
        let mut sql = SqlRows::new(&db, "bucket");
        let cache_before = cache.clone();
        let mut refused = false;
        let mut cached = CachedStore::new(SqlRows::new(&cached_db, "bucket"), &mut cache);
        match rng.below(100) {
            0..=69 => {
                let mut chosen: Vec<(String, u64, u64)> = pool
                    .rules
                    .iter()
                    .filter(|_| rng.percent(50))
                    .take(8)
                    .cloned()
                    .collect();
                if chosen.is_empty() {
                    chosen.push(rng.pick(&pool.rules).clone());
                }
                if change_values && rng.percent(5) {
                    // New values for one rule: they apply to its grants so far.
                    let i = rng.below(chosen.len() as u64) as usize;
                    let window = rng.range(1, 80);
                    chosen[i].1 = rng.range(1, 12);
                    chosen[i].2 = window;
                    let id = chosen[i].0.clone();
                    let entry = pool.rules.iter_mut().find(|r| r.0 == id).unwrap();
                    *entry = chosen[i].clone();
                    pool.max_window = pool.max_window.max(window);
                }
                let permits = if rng.percent(70) { 1 } else { rng.range(1, 15) };
                let set = rule_set(&chosen);
                let expected = model.acquire(now, &chosen, permits);
                let before = format!("{mem:?}");
                let from_mem = acquire(&mut mem, now, &set, permits as u32);
                let from_sql = acquire(&mut sql, now, &set, permits as u32);
                let from_cached = acquire(&mut cached, now, &set, permits as u32);
                assert_eq!(from_cached, from_sql, "cached store, step {step}");
                match expected {
                    Some(expected) => {
                        assert_eq!(
                            from_mem,
                            Ok(expected),
                            "memory store, step {step}, acquire {chosen:?} x{permits} at {now}"
                        );
                        assert_eq!(from_sql, Ok(expected), "SQL store, step {step}");
                    }
                    None => {
                        refusals += 1;
                        assert_eq!(from_mem.map_err(|e| e.field()), Err("rules"), "step {step}");
                        assert_eq!(from_sql.map_err(|e| e.field()), Err("rules"), "step {step}");
                        assert_eq!(format!("{mem:?}"), before, "a refusal changed the store");
                        refused = true;
                    }
                }
            }
            70..=74 => {
                let cooldown = rng.range(1, pool.max_window * 2);
                let expected = model.penalize(now, cooldown);
                assert!(expected >= last_cooldown, "penalty shortened");
                last_cooldown = expected;
                assert_eq!(
                    penalize(&mut mem, now, cooldown),
                    expected,
                    "memory penalize, step {step}"
                );
                assert_eq!(
                    penalize(&mut sql, now, cooldown),
                    expected,
                    "SQL penalize, step {step}"
                );
                assert_eq!(
                    penalize(&mut cached, now, cooldown),
                    expected,
                    "cached penalize, step {step}"
                );
            }
            75..=84 => {
                let permits = rng.range(1, 20);
                let expected = model.refund(now, permits);
                assert_eq!(
                    u64::from(refund(&mut mem, now, permits as u32)),
                    expected,
                    "memory refund, step {step}"
                );
                assert_eq!(
                    u64::from(refund(&mut sql, now, permits as u32)),
                    expected,
                    "SQL refund, step {step}"
                );
                assert_eq!(
                    u64::from(refund(&mut cached, now, permits as u32)),
                    expected,
                    "cached refund, step {step}"
                );
            }
            _ => {
                let expected = model.inspect(now);
                let from_mem = inspect(&mem, now);
                let from_sql = inspect(&sql, now);
                assert_eq!(views(&from_mem), expected, "memory inspect, step {step}");
                assert_eq!(from_sql, from_mem, "SQL inspect, step {step}");
                assert_eq!(
                    inspect(&cached, now),
                    from_mem,
                    "cached inspect, step {step}"
                );
                let cooling = (model.cooldown_until > now).then_some(model.cooldown_until);
                assert_eq!(from_mem.cooldown_until_ms, cooling);
            }
        }
        assert_invariants(&mem);
        assert_invariants(&SqlRows::new(&db, "bucket"));
        assert_invariants(&cached.view());
        if refused {
            assert_eq!(cache, cache_before, "a refusal changed the cache");
        }
        let storage = SqlRows::new(&cached_db, "bucket");
        cache.assert_matches(&storage);
        assert_invariants(&storage);
        if faults.strikes(&mut cache_rng, Fault::Reset) {
            // A restart: the object forgets its cache and reloads it.
            cache = RateCache::load(&storage, load_rows, capacity);
        }
    }
    model.check_intervals();
    stats.refused_for_slots += refusals;
    stats.reusing_slots += u64::from(model.values_seen.len() > RATE_RULE_SLOTS);
    stats.faults = faults.injected;
    assert_eq!(
        db.scans.borrow().as_slice(),
        &[] as &[String],
        "statements that scan a table"
    );
    stats.grants = model.grants.len() as u64;
}

fn run_seed(seed: u64, _trace: bool) -> Stats {
    let mut stats = Stats::default();
    let ran = catch_unwind(AssertUnwindSafe(|| {
        run_sequence(seed, STEPS_PER_SEQUENCE, &mut stats)
    }));
    if let Err(panic) = ran {
        report_failure("rate_limit_props", seed, stats.steps);
        resume_unwind(panic);
    }
    stats
}

#[test]
fn simulation() {
    if let Some(total) = simulate(
        "rate limit simulation",
        0x5EED_0000,
        SIM_STEPS_DEFAULT,
        run_seed,
    ) {
        // The full run must exercise grants at scale.
        assert!(
            total.grants > 10_000,
            "the sequences should grant often ({})",
            total.grants
        );
        assert_reached(&[
            ("sequences that reuse rule slots", total.reusing_slots),
            (
                "acquires refused for want of a slot",
                total.refused_for_slots,
            ),
            ("time steps onto a boundary", total.boundary_steps),
        ]);
        total.faults.assert_injected(&[Fault::Reset]);
    }
}

// ---------------------------------------------------------------------------
// Cases worth reading on their own.
// ---------------------------------------------------------------------------

fn rules(list: &[(&str, u64, u64)]) -> RuleSet {
    rule_set(
        &list
            .iter()
            .map(|(id, l, w)| (id.to_string(), *l, *w))
            .collect::<Vec<_>>(),
    )
}

fn granted(granted: u32) -> AcquireReply {
    AcquireReply {
        granted,
        wait_ms: 0,
    }
}

fn wait(wait_ms: u64) -> AcquireReply {
    AcquireReply {
        granted: 0,
        wait_ms,
    }
}

/// The README's example: 5 a second and 100 a minute.
#[test]
fn two_rules_five_a_second_and_a_hundred_a_minute() {
    let mut s = Table::default();
    let both = rules(&[("second", 5, 1_000), ("minute", 100, 60_000)]);
    let t0 = 1_000_000;
    assert_eq!(acquire(&mut s, t0, &both, 3).unwrap(), granted(3));
    assert_eq!(
        acquire(&mut s, t0 + 400, &both, 3).unwrap(),
        granted(2),
        "a partial block"
    );
    // Full for the second: the first block frees at t0 + 1000.
    assert_eq!(acquire(&mut s, t0 + 500, &both, 1).unwrap(), wait(500));
    assert_eq!(acquire(&mut s, t0 + 999, &both, 1).unwrap(), wait(1));
    // At t0 + 1000 the first three leave the window: a sliding window, so
    // the two from t0 + 400 still count and only three are free.
    assert_eq!(acquire(&mut s, t0 + 1_000, &both, 5).unwrap(), granted(3));
    // Spend the minute: 8 so far, 5 a second for 18 more seconds is 98,
    // and the next second only 2 are left.
    let mut t = t0 + 1_000;
    for _ in 0..18 {
        t += 1_000;
        assert_eq!(acquire(&mut s, t, &both, 5).unwrap(), granted(5));
    }
    t += 1_000;
    assert_eq!(acquire(&mut s, t, &both, 5).unwrap(), granted(2));
    let view = inspect(&s, t);
    assert_eq!(view.rules[1].used, 100);
    // The minute is now the binding rule: the oldest grant (t0) frees at t0 + 60000.
    assert_eq!(
        acquire(&mut s, t + 1_000, &both, 1).unwrap(),
        wait(t0 + 60_000 - (t + 1_000))
    );
}

#[test]
fn a_burst_at_a_window_edge_cannot_double_the_rate() {
    let mut s = Table::default();
    let r = rules(&[("r", 10, 1_000)]);
    assert_eq!(acquire(&mut s, 999, &r, 10).unwrap(), granted(10));
    // A fixed window would reset at 1000; the sliding one waits for 1999.
    assert_eq!(acquire(&mut s, 1_000, &r, 10).unwrap(), wait(999));
    assert_eq!(acquire(&mut s, 1_999, &r, 10).unwrap(), granted(10));
}

#[test]
fn penalties_are_never_shortened_and_block_until_their_end() {
    let mut s = Table::default();
    let r = rules(&[("r", 100, 1_000)]);
    assert_eq!(penalize(&mut s, 1_000, 5_000), 6_000);
    assert_eq!(
        penalize(&mut s, 2_000, 1_000),
        6_000,
        "a shorter penalty changes nothing"
    );
    assert_eq!(acquire(&mut s, 3_000, &r, 1).unwrap(), wait(3_000));
    assert_eq!(inspect(&s, 3_000).cooldown_until_ms, Some(6_000));
    assert_eq!(
        penalize(&mut s, 4_000, 4_000),
        8_000,
        "a longer one extends it"
    );
    assert_eq!(acquire(&mut s, 8_000, &r, 1).unwrap(), granted(1));
    assert_eq!(inspect(&s, 8_000).cooldown_until_ms, None);
}

#[test]
fn refunds_take_the_newest_live_grants_first() {
    let mut s = Table::default();
    let r = rules(&[("r", 10, 1_000)]);
    assert_eq!(acquire(&mut s, 0, &r, 4).unwrap(), granted(4));
    assert_eq!(acquire(&mut s, 100, &r, 4).unwrap(), granted(4));
    // 5 back: all 4 of t=100 and 1 of t=0.
    assert_eq!(refund(&mut s, 200, 5), 5);
    assert_eq!(inspect(&s, 200).rules[0].used, 3);
    // Only 3 are left to refund.
    assert_eq!(refund(&mut s, 200, 10), 3);
    assert_eq!(inspect(&s, 200).rules[0].used, 0);
    // Grants that left every window are not refundable.
    assert_eq!(acquire(&mut s, 300, &r, 2).unwrap(), granted(2));
    assert_eq!(refund(&mut s, 1_300, 2), 0);
    assert_invariants(&s);
}

#[test]
fn new_values_apply_to_grants_already_made() {
    let mut s = Table::default();
    assert_eq!(
        acquire(&mut s, 0, &rules(&[("r", 10, 1_000)]), 6).unwrap(),
        granted(6)
    );
    // Lowered: the 6 already granted exceed 4; the first frees at 1000.
    assert_eq!(
        acquire(&mut s, 500, &rules(&[("r", 4, 1_000)]), 1).unwrap(),
        wait(500)
    );
    // Lengthened while they are kept (younger than the longest window seen,
    // 1000): the grants made at 0 count until 3000.
    assert_eq!(
        acquire(&mut s, 900, &rules(&[("r", 6, 3_000)]), 1).unwrap(),
        wait(2_100)
    );
    let view = inspect(&s, 1_500);
    assert_eq!(
        (
            view.rules[0].limit,
            view.rules[0].window_ms,
            view.rules[0].used
        ),
        (6, 3_000, 6)
    );
    assert_eq!(view.rules[0].next_free_at_ms, 3_000);
}

#[test]
fn a_rule_counts_only_the_grants_made_under_it() {
    let mut s = Table::default();
    assert_eq!(
        acquire(&mut s, 0, &rules(&[("a", 5, 1_000)]), 5).unwrap(),
        granted(5)
    );
    // "b" has never granted: it allows its own 3, "a" is full.
    assert_eq!(
        acquire(&mut s, 1, &rules(&[("b", 3, 1_000)]), 5).unwrap(),
        granted(3)
    );
    // "a" frees at 1000, "b" at 1001: both must be free.
    assert_eq!(
        acquire(&mut s, 2, &rules(&[("a", 5, 1_000), ("b", 3, 1_000)]), 1).unwrap(),
        wait(999)
    );
    let used: Vec<u64> = inspect(&s, 2).rules.iter().map(|r| r.used).collect();
    assert_eq!(used, vec![5, 3]);
}

#[test]
fn rule_ids_are_forgotten_only_once_their_grants_aged_out() {
    let mut s = Table::default();
    for i in 0..16u64 {
        let r = rules(&[(&format!("r{i}"), 1, 1_000)]);
        assert_eq!(acquire(&mut s, i, &r, 1).unwrap(), granted(1));
    }
    let before = s.clone();
    let err = acquire(&mut s, 100, &rules(&[("new", 1, 1_000)]), 1).unwrap_err();
    assert_eq!(err.field(), "rules");
    assert_eq!(
        format!("{:?}", s),
        format!("{:?}", before),
        "a refusal changes nothing"
    );
    // Once r0's grant is out of every window (the longest is 1000), r0's slot is reused.
    assert_eq!(
        acquire(&mut s, 1_000, &rules(&[("new", 1, 1_000)]), 1).unwrap(),
        granted(1)
    );
    let ids: Vec<String> = inspect(&s, 1_000)
        .rules
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert!(
        ids.contains(&"new".to_string()) && !ids.contains(&"r0".to_string()),
        "{ids:?}"
    );
    assert_eq!(ids.len(), 16);
    assert_invariants(&s);
}

// ---------------------------------------------------------------------------
// Cost: flat in the rows kept.
// ---------------------------------------------------------------------------

/// What one granted and one refused acquire cost: statements run by each,
/// rows SQLite scanned in full, and SQLite's instructions for each.
struct Cost {
    grant_statements: (u32, u32),
    refuse_statements: (u32, u32),
    scanned: i64,
    grant_vm_steps: i64,
    refuse_vm_steps: i64,
}

/// Fills a bucket with `live` one-permit grants inside a day-long window,
/// then measures one granted acquire and one refused acquire.
fn cost_with(live: u64) -> Cost {
    let db = Db::migrated();
    let day = rules(&[("day", 20_000, 86_400_000), ("second", 5, 1_000)]);
    let mut store = SqlRows::new(&db, "b");
    for i in 0..live {
        // One second apart: "second" never binds while filling.
        assert_eq!(acquire(&mut store, i * 1_000, &day, 1).unwrap(), granted(1));
    }
    let now = live * 1_000;
    let scans_before = db.fullscan_steps.get();
    let steps_before = db.vm_steps.get();
    let mut store = SqlRows::new(&db, "b");
    assert_eq!(acquire(&mut store, now, &day, 5).unwrap(), granted(5));
    let grant_statements = store.work();
    let grant_vm_steps = db.vm_steps.get() - steps_before;
    let steps_before = db.vm_steps.get();
    let mut store = SqlRows::new(&db, "b");
    assert_eq!(acquire(&mut store, now, &day, 1).unwrap(), wait(1_000));
    Cost {
        grant_statements,
        refuse_statements: store.work(),
        scanned: db.fullscan_steps.get() - scans_before,
        grant_vm_steps,
        refuse_vm_steps: db.vm_steps.get() - steps_before,
    }
}

#[test]
fn an_acquire_costs_the_same_with_ten_or_ten_thousand_live_grants() {
    let small = cost_with(10);
    let large = cost_with(10_000);
    assert_eq!(
        small.grant_statements, large.grant_statements,
        "statements of a granted acquire"
    );
    assert_eq!(
        small.refuse_statements, large.refuse_statements,
        "statements of a refused acquire"
    );
    assert_eq!((small.scanned, large.scanned), (0, 0), "rows scanned");
    // SQLite's own work: a few more instructions for a deeper B-tree at
    // most, never any per row kept (a walk over the rows would be thousands).
    for (what, s, l) in [
        ("granted", small.grant_vm_steps, large.grant_vm_steps),
        ("refused", small.refuse_vm_steps, large.refuse_vm_steps),
    ] {
        eprintln!("{what} acquire: {s} VM steps with 10 live grants, {l} with 10,000");
        assert!(
            l <= s + s / 5,
            "{what} acquire: {l} VM steps with 10,000 grants, {s} with 10"
        );
    }
}

// ---------------------------------------------------------------------------
// The object's cache: what it saves.
// ---------------------------------------------------------------------------

/// With the cache warm, a refused acquire runs no statement and a granted
/// one only its insert, whether the bucket holds a few grants or more than
/// the cache does (the README's rules; then a day-long window over 5,000).
#[test]
fn with_the_cache_a_refusal_runs_no_statement_and_a_grant_one() {
    use baton::limits::{RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS};
    let example = rules(&[("second", 5, 1_000), ("minute", 100, 60_000)]);
    let db = Db::migrated();
    let mut cache = RateCache::load(
        &SqlRows::new(&db, "b"),
        RATE_CACHE_LOAD_ROWS,
        RATE_CACHE_ROWS,
    );
    let (mut grants, mut refusals) = (0, 0);
    for i in 0..400u64 {
        let mut store = CachedStore::new(SqlRows::new(&db, "b"), &mut cache);
        let reply = acquire(&mut store, 1_000_000 + i * 37, &example, 1).unwrap();
        let work = store.inner().work();
        if i == 0 {
            continue; // the first call writes the bucket's rules and scalars
        }
        if reply.granted > 0 {
            grants += 1;
            // After the first minute, a grant also prunes what aged out.
            assert_eq!(work.0, 0, "reads of a grant, call {i}");
            assert!(work.1 <= 2, "writes of a grant, call {i}: {work:?}");
        } else {
            refusals += 1;
            assert_eq!(work, (0, 0), "statements of a refusal, call {i}");
        }
    }
    assert!(
        grants > 50 && refusals > 50,
        "{grants} grants, {refusals} refusals"
    );

    let day = rules(&[("day", 20_000, 86_400_000)]);
    let db = Db::migrated();
    let mut store = SqlRows::new(&db, "b");
    for i in 0..5_000 {
        acquire(&mut store, i * 1_000, &day, 1).unwrap();
    }
    let mut cache = RateCache::load(&store, RATE_CACHE_LOAD_ROWS, RATE_CACHE_ROWS);
    for i in 0..50 {
        let mut store = CachedStore::new(SqlRows::new(&db, "b"), &mut cache);
        assert_eq!(
            acquire(&mut store, 5_000_000 + i, &day, 1).unwrap(),
            granted(1)
        );
        assert_eq!(
            store.inner().work(),
            (0, 1),
            "statements of a grant, call {i}"
        );
    }
}

/// An acquire as the object decodes its positional arguments from scratch:
/// the bucket and the options' JSON text, each read whole (`BUCKET_ARG`).
fn fresh_acquire(bucket: &str, text: &str) -> Result<Acquire, BatonError> {
    use baton::edge::rate::{RateAcquire, BUCKET_ARG};
    let options = serde_json::from_str(text).expect("a JSON text");
    let tree = baton::edge::with_key(&BUCKET_ARG, bucket.into(), Some(options))?;
    let request: RateAcquire = baton::edge::decode_value(&tree)?;
    Ok(Acquire {
        rules: std::rc::Rc::new(request.rules.0),
        permits: request.permits.map_or(1, |p| p.0),
    })
}

/// The rules an object keeps beside its bucket (`SeenCall`) give every
/// call what a fresh decode of its options gives: the same text skips the
/// decode, a different one is decoded anew, and bad rules are refused by
/// the decode every time, with the same typed error naming the field.
/// (That a refusal leaves the bucket as it was, through the object itself:
/// tests/miniflare/rate-limit.test.mjs.)
#[test]
fn rules_kept_by_their_text_decide_as_a_fresh_decode() {
    use baton::rate_limit::SeenCall;
    let texts = [
        r#"{"rules":[{"id":"s","limit":5,"windowMs":1000}]}"#,
        r#"{"rules":[{"id":"s","limit":5,"windowMs":1000}]}"#,
        r#"{"rules":[{"id":"s","limit":6,"windowMs":1000}],"permits":2}"#,
        r#"{"rules":[{"id":"s","limit":0,"windowMs":1000}]}"#,
        r#"{"rules":[{"id":"s","limit":0,"windowMs":1000}]}"#,
        r#"{"rules":[{"id":"s","limit":6,"windowMs":1000}],"permits":2}"#,
        r#"{"rules":[{"id":"a","limit":1,"windowMs":1},{"id":"a","limit":1,"windowMs":1}]}"#,
        r#"{"rules":[{"id":"s","limit":5,"windowMs":1000}],"bucket":"b"}"#,
        r#"{"rules":[{"id":"s","limit":5,"windowMs":1000}]}"#,
    ];
    let mut seen = SeenCall::default();
    let mut bucket = Table::default();
    let (mut skipped, mut refused) = (0, Vec::new());
    for (now, text) in (1_000..).zip(texts) {
        // As the object does: the kept call for this text, or a decode,
        // kept if it decoded.
        let call = match seen.get(text) {
            Some(call) => {
                skipped += 1;
                Ok(call)
            }
            None => fresh_acquire("b", text).inspect(|call| seen.keep(text.to_owned(), call)),
        };
        assert_eq!(call, fresh_acquire("b", text), "{text}: as a fresh decode");
        match call {
            Ok(call) => {
                acquire(&mut bucket, now, &call.rules, call.permits).expect("good rules");
            }
            Err(error) => refused.push(error.field()),
        }
    }
    assert_eq!(skipped, 2, "each text repeated at once skipped the decode");
    assert_eq!(refused, ["limit", "limit", "rules", "options"]);
}
