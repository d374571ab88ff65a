//! The Coordinator's SQL store, run natively over `rusqlite`.
//!
//! - `SqlKeyStore` is measured against `MemoryKeyStore`: seeded random
//!   storage operations and decision calls on both, every read compared after
//!   every step, two keys sharing one database.
//! - A database written by a schema-v1 release (`fixtures/coordinator_v1.sql`)
//!   upgrades in place and keeps working; `migrate` is idempotent.
//! - Cost, without timing anything: statements per operation do not depend on
//!   the queue's length, SQLite's own VM-step counter stays flat, and every
//!   statement's query plan searches an index by key instead of scanning.
//!
//! A failing seeded run prints its seed; `BATON_SIM_SEED=<n>` reruns just that one.

use baton::coordinator::{
    acquire, acquire_after_check, assert_invariants, assert_invariants_deep, enqueue,
    enqueue_after_check, migrate, needs_holder_check, release, schema, tick, tick_after_check,
    woken_after_check, AcquireReply, AcquireRequest, AcquireStep, Decided, EnqueueReply,
    EnqueueRequest, EnqueueStep, Holder, HolderState, KeyStore, KeySummary, Liveness, Member,
    MemoryKeyStore, Options, SqlKeyStore, Turn, Waiter,
};
use baton::ident::{InputHash, InstanceId, WorkflowName};
use baton::sql::{SqlExec, SqlValue};
mod common;

use baton::limits::SUPERSEDED_REMEMBERED_MAX;
use common::{sqlite, Rng};
use rusqlite::Connection;
use std::cell::{Cell, RefCell};

// ---------------------------------------------------------------------------
// SqlExec over rusqlite, recording what it runs.
// ---------------------------------------------------------------------------

/// One statement as the store ran it, with SQLite's own work counters.
#[derive(Debug, Clone)]
struct Ran {
    sql: String,
    params: Vec<SqlValue>,
    /// Virtual-machine instructions executed: SQLite's measure of work,
    /// independent of the machine and of timing.
    vm_steps: i32,
    /// Rows stepped through by full table scans.
    fullscan_steps: i32,
}

struct Db {
    conn: Connection,
    recording: Cell<bool>,
    log: RefCell<Vec<Ran>>,
}

impl Db {
    fn new() -> Db {
        Db::over(Connection::open_in_memory().expect("open in-memory db"))
    }

    fn over(conn: Connection) -> Db {
        // Room for every statement the store runs, so none is prepared twice.
        conn.set_prepared_statement_cache_capacity(64);
        Db {
            conn,
            recording: Cell::new(false),
            log: RefCell::new(Vec::new()),
        }
    }

    fn migrated() -> Db {
        let db = Db::new();
        migrate(&db);
        db
    }

    /// Runs `f`, returning its result and every statement it ran through this Db.
    fn record<R>(&self, f: impl FnOnce() -> R) -> (R, Vec<Ran>) {
        self.log.borrow_mut().clear();
        self.recording.set(true);
        let result = f();
        self.recording.set(false);
        (result, self.log.take())
    }

    /// A query of the test's own, outside the store.
    fn rows(&self, sql: &str) -> Vec<Vec<SqlValue>> {
        let was = self.recording.replace(false);
        let rows = self.run(sql, &[]);
        self.recording.set(was);
        rows
    }
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let ran = sqlite::run(&self.conn, sql, params);
        if self.recording.get() {
            self.log.borrow_mut().push(Ran {
                sql: sql.to_owned(),
                params: params.to_vec(),
                vm_steps: ran.vm_steps,
                fullscan_steps: ran.fullscan_steps,
            });
        }
        ran.rows
    }
}

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).expect("valid test id")
}

fn hash(s: &str) -> InputHash {
    InputHash::parse("inputHash", s).expect("valid test hash")
}

fn workflow(s: &str) -> WorkflowName {
    WorkflowName::new(s.to_owned()).expect("valid test workflow")
}

/// The enqueue grace the tests judge "not found" with.
const GRACE_MS: u64 = 60_000;

/// Reads the tests ask of any store, through the trait.
trait Probe: KeyStore {
    /// The earliest holder, as `inspect`'s `holder`.
    fn holder(&self) -> Option<Holder> {
        self.holders().into_iter().next()
    }
    fn waiter(&self, id: &InstanceId) -> Option<Waiter> {
        match self.member(id) {
            Member::Waiter(waiter) => Some(waiter),
            _ => None,
        }
    }
    fn is_superseded(&self, id: &InstanceId) -> bool {
        self.member(id) == Member::Superseded
    }
}

impl<T: KeyStore> Probe for T {}

fn acquiring(who: &InstanceId) -> AcquireRequest {
    AcquireRequest {
        id: who.clone(),
        options: Options::default(),
    }
}

/// A random liveness answer, as a status check might give.
fn random_liveness(rng: &mut Rng) -> Liveness {
    *rng.pick(&[
        Liveness::Alive,
        Liveness::Dead,
        Liveness::NotFound,
        Liveness::Unknown,
    ])
}

/// Runs `run(seed)` for `count` seeds (or only `$BATON_SIM_SEED`), naming the
/// seed of a failing run.
fn for_each_seed(name: &str, count: u64, run: impl Fn(u64)) {
    for seed in common::seeds(0..count) {
        common::replay_on_failure(name, seed, || run(seed));
    }
}

/// Everything a `KeyStore` answers, for a fixed pool of ids and hashes.
#[derive(Debug, PartialEq)]
struct Seen {
    limit: u32,
    fence: u64,
    holders: Vec<Holder>,
    holder_count: u32,
    handed_count: u32,
    to_check: Vec<Holder>,
    /// The whole queue, in order (`MemoryKeyStore::waiters` / `SqlKeyStore::waiters`).
    waiters: Vec<Waiter>,
    members: Vec<(InstanceId, Member)>,
    positions: Vec<Option<u32>>,
    first_waiters: Vec<Waiter>,
    first_by_hash: Vec<(InputHash, Option<Waiter>)>,
    waiter_count: u32,
    superseded_count: u32,
    needs_holder_check: bool,
    tick: Vec<Holder>,
}

fn observe(
    store: &impl KeyStore,
    waiters: Vec<Waiter>,
    ids: &[InstanceId],
    hashes: &[InputHash],
) -> Seen {
    Seen {
        limit: store.limit(),
        fence: store.fence(),
        holders: store.holders(),
        holder_count: store.holder_count(),
        handed_count: store.handed_count(),
        to_check: store.holders_to_check(3),
        waiters,
        members: ids.iter().map(|i| (i.clone(), store.member(i))).collect(),
        positions: ids.iter().map(|i| store.position(i)).collect(),
        first_waiters: store.first_waiters(3),
        first_by_hash: hashes
            .iter()
            .map(|h| (h.clone(), store.first_waiter_with_hash(h)))
            .collect(),
        waiter_count: store.waiter_count(),
        superseded_count: store.superseded_count(),
        needs_holder_check: needs_holder_check(store),
        tick: tick(store),
    }
}

fn observe_memory(store: &MemoryKeyStore, ids: &[InstanceId], hashes: &[InputHash]) -> Seen {
    observe(store, store.waiters().cloned().collect(), ids, hashes)
}

fn observe_sql(store: &SqlKeyStore<'_, Db>, ids: &[InstanceId], hashes: &[InputHash]) -> Seen {
    let seen = observe(store, store.waiters(), ids, hashes);
    assert_eq!(
        seen.waiter_count as usize,
        seen.waiters.len(),
        "the stored waiter_count drifted from the queue"
    );
    assert_eq!(
        seen.holder_count as usize,
        seen.holders.len(),
        "the holder count drifted from the holders"
    );
    seen
}

fn pool(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Two keys in one database; the second has a quote, to show values are bound, not spliced.
const KEYS: [&str; 2] = ["repo/main", "it's/release"];

// ---------------------------------------------------------------------------
// 1 + 2. Differential: storage operations.
// ---------------------------------------------------------------------------

fn storage_ops(seed: u64) {
    let ids: Vec<InstanceId> = pool("i", 8).iter().map(|s| id(s)).collect();
    let hashes: Vec<InputHash> = pool("h", 3).iter().map(|s| hash(s)).collect();
    let db = Db::migrated();
    let mut memory = [MemoryKeyStore::default(), MemoryKeyStore::default()];
    let mut sql = [
        SqlKeyStore::new(&db, KEYS[0]),
        SqlKeyStore::new(&db, KEYS[1]),
    ];
    let mut rng = Rng(seed);
    let mut now_ms = 1_000u64;
    let mut history: Vec<String> = Vec::new();

    for step in 0..300 {
        let k = rng.below(2) as usize;
        let (mem, sq) = (&mut memory[k], &mut sql[k]);
        let workflows = [None, Some(workflow("WF_A")), Some(workflow("WF_B"))];
        now_ms += rng.below(1_000);
        let op = match rng.below(100) {
            0..30 => {
                // The store's precondition: a superseded id never waits
                // again, and nobody waits and holds at once.
                let free: Vec<&InstanceId> = ids
                    .iter()
                    .filter(|i| mem.member(i) == Member::Stranger)
                    .collect();
                if free.is_empty() {
                    "push: queue full".to_owned()
                } else {
                    let since_ms = rng.below(1 << 50);
                    let waiter = Waiter {
                        id: (*rng.pick(&free)).clone(),
                        since_ms,
                        input_hash: rng.percent(70).then(|| rng.pick(&hashes).clone()),
                        workflow: rng.pick(&workflows).clone(),
                        enqueued_ms: rng.percent(50).then_some(since_ms),
                        turn: if rng.percent(50) {
                            Turn::Own(rng.below(1 << 50))
                        } else {
                            Turn::Shared
                        },
                    };
                    mem.push_waiter(&waiter);
                    sq.push_waiter(&waiter);
                    format!("push_waiter({waiter:?})")
                }
            }
            30..40 => {
                let who = rng.pick(&ids).clone();
                mem.remove_waiter(&who);
                sq.remove_waiter(&who);
                format!("remove_waiter({who})")
            }
            40..52 => {
                let free: Vec<&InstanceId> = ids
                    .iter()
                    .filter(|i| mem.member(i) == Member::Stranger)
                    .collect();
                if free.is_empty() {
                    "add_holder: none free".to_owned()
                } else {
                    let holder = Holder {
                        id: (*rng.pick(&free)).clone(),
                        since_ms: rng.below(1 << 50),
                        state: *rng.pick(&[HolderState::Handed, HolderState::Holding]),
                        workflow: rng.pick(&workflows).clone(),
                        enqueued_ms: rng.percent(50).then(|| rng.below(1 << 50)),
                        turn: if rng.percent(50) {
                            Turn::Own(rng.below(1 << 50))
                        } else {
                            Turn::Shared
                        },
                        fence: mem.fence() + 1 + rng.below(3),
                    };
                    mem.add_holder(&holder);
                    sq.add_holder(&holder);
                    format!("add_holder({holder:?})")
                }
            }
            52..58 => {
                let who = rng.pick(&ids).clone();
                mem.remove_holder(&who);
                sq.remove_holder(&who);
                format!("remove_holder({who})")
            }
            58..63 => match mem.holders().first() {
                Some(h) => {
                    mem.confirm_holder(&h.id);
                    sq.confirm_holder(&h.id);
                    format!("confirm_holder({})", h.id)
                }
                None => "confirm: no holder".to_owned(),
            },
            63..67 => match mem.holders().last() {
                Some(h) => {
                    mem.mark_checked(&h.id, now_ms);
                    sq.mark_checked(&h.id, now_ms);
                    format!("mark_checked({}, {now_ms})", h.id)
                }
                None => "mark: no holder".to_owned(),
            },
            67..71 => {
                let w = rng.pick(&workflows).clone();
                let who = rng.pick(&ids).clone();
                match mem.member(&who) {
                    Member::Holder(_) => {
                        mem.set_holder_workflow(&who, w.as_ref());
                        sq.set_holder_workflow(&who, w.as_ref());
                    }
                    Member::Waiter(_) => {
                        mem.set_waiter_workflow(&who, w.as_ref());
                        sq.set_waiter_workflow(&who, w.as_ref());
                    }
                    _ => {}
                }
                format!("set_workflow({who}, {w:?})")
            }
            71..72 => {
                let (m, q) = (mem.next_turn(), sq.next_turn());
                assert_eq!(m, q, "next_turn");
                format!("next_turn() = {m}")
            }
            72..74 => {
                let limit = rng.range(1, 4) as u32;
                mem.set_limit(limit);
                sq.set_limit(limit);
                format!("set_limit({limit})")
            }
            74..84 => {
                let keep = rng.pick(&ids).clone();
                let from_memory = mem.supersede_waiters_except(&keep);
                let from_sql = sq.supersede_waiters_except(&keep);
                let op = format!("supersede_waiters_except({keep}) -> {from_memory:?}");
                assert_eq!(from_memory, from_sql, "seed {seed} step {step}: {op}");
                op
            }
            84..90 => {
                let keep = rng.below(5) as u32;
                mem.forget_superseded_beyond(keep);
                sq.forget_superseded_beyond(keep);
                format!("forget_superseded_beyond({keep})")
            }
            _ => "reads".to_owned(),
        };
        history.push(format!("{step}: key {:?} {op}", KEYS[k]));
        // Both keys, every step: a write to one key must not show in the other.
        for k in 0..2 {
            assert_eq!(
                observe_memory(&memory[k], &ids, &hashes),
                observe_sql(&sql[k], &ids, &hashes),
                "seed {seed}, key {:?}, after:\n{}",
                KEYS[k],
                history.join("\n")
            );
        }
    }
}

#[test]
fn sql_store_matches_memory_store_on_storage_ops() {
    for_each_seed("storage ops", 200, storage_ops);
}

// ---------------------------------------------------------------------------
// 2. Differential: the decision functions, both phases, interleaved.
// ---------------------------------------------------------------------------

/// A decision waiting for its liveness answer; resumed later, possibly after
/// other decisions changed the key.
#[derive(Debug)]
enum Pending {
    Enqueue(EnqueueRequest, Waiter),
    Acquire(AcquireRequest, Holder),
    Woken(Holder),
    Tick(Vec<Holder>),
}

#[derive(Debug, PartialEq)]
enum Reply {
    Enqueue(Result<EnqueueStep, baton::error::BatonError>),
    EnqueueAfter(Result<EnqueueReply, baton::error::BatonError>),
    Acquire(Result<AcquireStep, baton::error::BatonError>),
    AcquireAfter(Decided<AcquireReply>),
    Release(Decided<Option<InstanceId>>),
    Wake(Vec<Holder>),
    Tick(Vec<Holder>),
}

fn decide(
    store: &mut impl KeyStore,
    now_ms: u64,
    action: &Action,
    pending: Option<&Pending>,
    liveness: Liveness,
) -> Reply {
    match (action, pending) {
        (Action::Enqueue(request), _) => Reply::Enqueue(enqueue(store, now_ms, request)),
        (Action::Acquire(request), _) => Reply::Acquire(acquire(store, now_ms, request)),
        (Action::Release(who), _) => Reply::Release(release(store, now_ms, who)),
        (Action::Tick, _) => Reply::Tick(tick(store)),
        (Action::Resume, Some(Pending::Enqueue(request, candidate))) => Reply::EnqueueAfter(
            enqueue_after_check(store, now_ms, request, candidate, liveness),
        ),
        (Action::Resume, Some(Pending::Acquire(request, checked))) => Reply::AcquireAfter(
            acquire_after_check(store, now_ms, GRACE_MS, request, checked, liveness),
        ),
        (Action::Resume, Some(Pending::Woken(checked))) => Reply::Wake(woken_after_check(
            store, now_ms, GRACE_MS, checked, liveness,
        )),
        (Action::Resume, Some(Pending::Tick(checked))) => {
            let answers: Vec<(Holder, Liveness)> =
                checked.iter().map(|h| (h.clone(), liveness)).collect();
            Reply::Wake(tick_after_check(store, now_ms, GRACE_MS, &answers))
        }
        (Action::Resume, None) => unreachable!("resume needs a pending check"),
    }
}

#[derive(Debug)]
enum Action {
    Enqueue(EnqueueRequest),
    Acquire(AcquireRequest),
    Release(InstanceId),
    Tick,
    Resume,
}

fn random_options(rng: &mut Rng) -> Options {
    Options {
        workflow: rng
            .percent(40)
            .then(|| workflow(rng.pick::<&str>(&["WF_A", "WF_B"]))),
        limit: rng.percent(20).then(|| rng.range(1, 4) as u32),
        grant: rng.percent(40),
    }
}

fn decisions(seed: u64) {
    // Instances come and go: callers are drawn from the newest `LIVE` ids, and
    // a new id joins now and then, so that superseded (forever) ids do not
    // take over the run. Reads are compared for the newest `OBSERVED` ids.
    const LIVE: usize = 8;
    const OBSERVED: usize = 14;
    let mut ids: Vec<InstanceId> = pool("run-", LIVE).iter().map(|s| id(s)).collect();
    let hashes: Vec<InputHash> = pool("in", 3).iter().map(|s| hash(s)).collect();
    let db = Db::migrated();
    let mut memory = [MemoryKeyStore::default(), MemoryKeyStore::default()];
    let mut pending: [Vec<Pending>; 2] = [Vec::new(), Vec::new()];
    // What the shell carries from one decision to the next, per key.
    let mut summaries: [Option<KeySummary>; 2] = [None, None];
    let mut rng = Rng(seed ^ 0xD1CE);
    let mut now_ms = 1_700_000_000_000u64;
    let mut history: Vec<String> = Vec::new();

    for step in 0..400 {
        now_ms += rng.below(20_000);
        if rng.percent(15) {
            ids.push(id(&format!("run-{}", ids.len())));
        }
        let live = &ids[ids.len() - LIVE..];
        let k = rng.below(2) as usize;
        let action = match rng.below(100) {
            _ if !pending[k].is_empty() && rng.percent(35) => Action::Resume,
            0..35 => Action::Enqueue(EnqueueRequest {
                supersedes: rng.percent(30),
                id: rng.pick(live).clone(),
                input_hash: rng.percent(70).then(|| rng.pick(&hashes).clone()),
                options: random_options(&mut rng),
            }),
            35..65 => Action::Acquire(AcquireRequest {
                id: rng.pick(live).clone(),
                options: random_options(&mut rng),
            }),
            65..90 => Action::Release(rng.pick(live).clone()),
            _ => Action::Tick,
        };
        let resumed = match action {
            Action::Resume => {
                let i = rng.below(pending[k].len() as u64) as usize;
                Some(pending[k].swap_remove(i))
            }
            _ => None,
        };
        let liveness = random_liveness(&mut rng);
        let from_memory = decide(&mut memory[k], now_ms, &action, resumed.as_ref(), liveness);
        // A store per decision, as the shell makes one, resuming from the
        // summary the last decision on the key left; now and then the
        // object restarts and the summary is gone.
        let mut sql = SqlKeyStore::resume(&db, KEYS[k], summaries[k].take());
        let from_sql = decide(&mut sql, now_ms, &action, resumed.as_ref(), liveness);
        summaries[k] = if rng.percent(5) {
            None
        } else {
            sql.into_summary()
        };
        if let Some(carried) = &summaries[k] {
            assert_eq!(
                Some(carried),
                fresh_summary(&db, KEYS[k]).as_ref(),
                "seed {seed}: the carried summary differs from the database after:\n{}",
                history.join("\n")
            );
        }
        history.push(format!(
            "{step}: key {:?} at {now_ms}: {action:?} {resumed:?} {liveness:?} -> {from_memory:?}",
            KEYS[k]
        ));
        assert_eq!(
            from_memory,
            from_sql,
            "seed {seed}: replies differ after:\n{}",
            history.join("\n")
        );
        let wakes = match (&action, from_memory) {
            (Action::Enqueue(request), Reply::Enqueue(Ok(EnqueueStep::CheckCandidate(c)))) => {
                pending[k].push(Pending::Enqueue(request.clone(), c));
                Vec::new()
            }
            (Action::Acquire(request), Reply::Acquire(Ok(AcquireStep::Check { holder, wake }))) => {
                pending[k].push(Pending::Acquire(request.clone(), holder));
                wake
            }
            (_, Reply::Acquire(Ok(AcquireStep::Done(d)))) => d.wake,
            (_, Reply::AcquireAfter(d)) => d.wake,
            (_, Reply::Release(d)) => d.wake,
            (_, Reply::Wake(wake)) => wake,
            (Action::Tick, Reply::Tick(checked)) if !checked.is_empty() => {
                pending[k].push(Pending::Tick(checked));
                Vec::new()
            }
            _ => Vec::new(),
        };
        pending[k].extend(wakes.into_iter().map(Pending::Woken));
        let observed = &ids[ids.len().saturating_sub(OBSERVED)..];
        for (k, memory) in memory.iter().enumerate() {
            let sql = SqlKeyStore::new(&db, KEYS[k]);
            assert_invariants_deep(memory);
            assert_invariants_deep(&sql);
            assert_eq!(
                observe_memory(memory, observed, &hashes),
                observe_sql(&sql, observed, &hashes),
                "seed {seed}, key {:?}, after:\n{}",
                KEYS[k],
                history.join("\n")
            );
        }
    }
}

/// The summary a store with nothing carried over reads.
fn fresh_summary(db: &Db, key: &str) -> Option<KeySummary> {
    let store = SqlKeyStore::new(db, key);
    _ = store.limit();
    store.into_summary()
}

#[test]
fn sql_store_matches_memory_store_on_decisions() {
    for_each_seed("decisions", 150, decisions);
}

// ---------------------------------------------------------------------------
// 3. Schema upgrade from a v1 database.
// ---------------------------------------------------------------------------

const V1_FIXTURE: &str = include_str!("fixtures/coordinator_v1.sql");

fn v1_db() -> Db {
    let conn = Connection::open_in_memory().expect("open in-memory db");
    conn.execute_batch(V1_FIXTURE).expect("fixture loads");
    Db::over(conn)
}

fn text_of(value: &SqlValue) -> String {
    match value {
        SqlValue::Text(s) => s.clone(),
        SqlValue::Integer(n) => n.to_string(),
        SqlValue::Null => "NULL".into(),
    }
}

/// Tables and indexes with their columns, as SQLite reports them (not as
/// their CREATE text, which whitespace and ALTERs change).
fn schema_shape(db: &Db) -> Vec<String> {
    let mut shape = Vec::new();
    let objects = db.rows(
        "SELECT type, name, tbl_name FROM sqlite_master \
         WHERE type IN ('table', 'index') ORDER BY type, name",
    );
    for object in objects {
        let (kind, name) = (text_of(&object[0]), text_of(&object[1]));
        let columns = if kind == "table" {
            db.rows(&format!("PRAGMA table_xinfo('{name}')"))
        } else {
            db.rows(&format!("PRAGMA index_xinfo('{name}')"))
        };
        let columns: Vec<String> = columns
            .iter()
            .map(|c| c.iter().map(text_of).collect::<Vec<_>>().join(" "))
            .collect();
        shape.push(format!(
            "{kind} {name} on {}: {}",
            text_of(&object[2]),
            columns.join(" | ")
        ));
    }
    shape
}

/// Every row of every table, for before/after comparisons.
fn contents(db: &Db) -> Vec<String> {
    let tables = db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    let mut out = Vec::new();
    for table in tables {
        let name = text_of(&table[0]);
        for row in db.rows(&format!("SELECT * FROM \"{name}\" ORDER BY 1, 2")) {
            out.push(format!(
                "{name}: {}",
                row.iter().map(text_of).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}

fn stored_version(db: &Db) -> i64 {
    match db.rows(schema::READ_VERSION).as_slice() {
        [row] => match row[0] {
            SqlValue::Integer(n) => n,
            ref other => panic!("version is {other:?}"),
        },
        rows => panic!("version rows: {rows:?}"),
    }
}

/// A waiter as a v1 database stored it: no hash, no workflow, no enqueue time.
fn waiter(who: &str, since_ms: u64) -> Waiter {
    Waiter {
        id: id(who),
        since_ms,
        input_hash: None,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
    }
}

/// A holder as a v1 database stored it.
fn v1_holder(who: &str, since_ms: u64) -> Holder {
    Holder {
        id: id(who),
        since_ms,
        state: HolderState::Holding,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        fence: 0,
    }
}

#[test]
fn v1_fixture_is_schema_v1() {
    let fresh = Db::new();
    fresh.run(schema::CREATE_VERSION_TABLE, &[]);
    for statement in schema::MIGRATIONS[0] {
        fresh.run(statement, &[]);
    }
    let fixture = v1_db();
    assert_eq!(schema_shape(&fixture), schema_shape(&fresh));
    assert_eq!(stored_version(&fixture), 1);
}

#[test]
fn v1_database_upgrades_and_reads_back() {
    let db = v1_db();
    migrate(&db);
    assert_eq!(stored_version(&db), schema::CURRENT_VERSION);

    let main = SqlKeyStore::new(&db, "repo/main");
    assert_eq!(main.holders(), [v1_holder("deploy-100", 1_700_000_000_000)]);
    assert_eq!(main.limit(), 1);
    let main_queue = vec![
        waiter("deploy-101", 1_700_000_001_000),
        waiter("deploy-102", 1_700_000_002_000),
        waiter("deploy-104", 1_700_000_004_000),
        waiter("deploy-108", 1_700_000_008_000),
    ];
    assert_eq!(main.waiters(), main_queue);
    assert_eq!(main.waiter_count(), 4);
    assert_eq!(main.first_waiters(1), [main_queue[0].clone()]);
    assert_eq!(main.waiter(&id("deploy-104")), Some(main_queue[2].clone()));
    assert_eq!(main.first_waiter_with_hash(&hash("anything")), None);
    assert_eq!(main.superseded_count(), 0);
    assert!(!main.is_superseded(&id("deploy-101")));

    let release_key = SqlKeyStore::new(&db, "it's/release");
    assert_eq!(
        release_key.holders(),
        [v1_holder("rel_7", 1_700_000_300_000)]
    );
    assert_eq!(
        release_key.waiters(),
        vec![
            waiter("rel_8", 1_700_000_301_000),
            waiter("rel_9", 1_700_000_302_000),
            waiter("rel_10", 1_700_000_303_000),
        ]
    );
    assert_eq!(release_key.waiter_count(), 3);

    let orphan = SqlKeyStore::new(&db, "orphan");
    assert_eq!(orphan.holder(), None);
    assert_eq!(
        orphan.waiters(),
        vec![
            waiter("job-a", 1_700_000_400_000),
            waiter("job-b", 1_700_000_401_000)
        ]
    );
    assert_eq!(
        orphan.waiter_count(),
        2,
        "the v2 step counts keys with no row"
    );

    let idle = SqlKeyStore::new(&db, "idle");
    assert_eq!(idle.holder(), None);
    assert_eq!(idle.waiter_count(), 0);
    assert!(idle.waiters().is_empty());

    let mut needing_check = SqlKeyStore::keys_needing_check(&db, 10);
    needing_check.sort();
    assert_eq!(needing_check, ["it's/release", "repo/main"]);
    for store in [&main, &release_key, &orphan, &idle] {
        assert_invariants_deep(store);
        assert_eq!(store.superseded_count(), 0);
    }
}

#[test]
fn decisions_work_on_an_upgraded_v1_database() {
    let db = v1_db();
    migrate(&db);
    let now = 1_800_000_000_000;

    // The holder releases: the key goes to the first waiter, handed but unconfirmed.
    let mut main = SqlKeyStore::new(&db, "repo/main");
    let released = release(&mut main, now, &id("deploy-100"));
    let handed = Holder {
        id: id("deploy-101"),
        since_ms: now,
        state: HolderState::Handed,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        // The first grant with a fence: v1 holders carry none (0).
        fence: 1,
    };
    assert_eq!(
        released,
        Decided {
            reply: Some(id("deploy-101")),
            wake: vec![handed.clone()],
        }
    );
    let mut main = SqlKeyStore::new(&db, "repo/main");
    assert_eq!(main.holders(), [handed]);
    assert_eq!(main.waiter_count(), 3);
    assert_eq!(
        acquire(&mut main, now + 1, &acquiring(&id("deploy-101"))),
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Granted { fence: 1 },
            wake: vec![]
        }))
    );
    let mut main = SqlKeyStore::new(&db, "repo/main");
    assert_eq!(main.holder().map(|h| h.state), Some(HolderState::Holding));

    // A superseding enqueue drops every v1 waiter, in queue order.
    let request = EnqueueRequest {
        supersedes: true,
        id: id("deploy-200"),
        input_hash: Some(hash("abc123")),
        options: Options {
            workflow: Some(workflow("DEPLOY")),
            limit: None,
            grant: false,
        },
    };
    assert_eq!(
        enqueue(&mut main, now + 2, &request),
        Ok(EnqueueStep::Done(EnqueueReply {
            terminated: vec![
                waiter("deploy-102", 1_700_000_002_000),
                waiter("deploy-104", 1_700_000_004_000),
                waiter("deploy-108", 1_700_000_008_000)
            ],
            coalesced_into: None,
        }))
    );
    let survivor = Waiter {
        id: id("deploy-200"),
        since_ms: now + 2,
        input_hash: Some(hash("abc123")),
        workflow: Some(workflow("DEPLOY")),
        enqueued_ms: Some(now + 2),
        turn: Turn::Shared,
    };
    let mut main = SqlKeyStore::new(&db, "repo/main");
    assert_eq!(main.waiters(), vec![survivor.clone()]);
    assert_eq!(main.waiter_count(), 1);
    assert_eq!(main.superseded_count(), 3);
    assert_eq!(
        acquire(&mut main, now + 3, &acquiring(&id("deploy-104"))),
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Superseded,
            wake: vec![]
        }))
    );
    // A second identical enqueue now coalesces into the surviving waiter.
    let twin = EnqueueRequest {
        id: id("deploy-201"),
        ..request
    };
    assert_eq!(
        enqueue(&mut main, now + 4, &twin),
        Ok(EnqueueStep::CheckCandidate(survivor))
    );
    assert_eq!(
        release(&mut main, now + 5, &id("deploy-101")).reply,
        Some(id("deploy-200"))
    );
    assert_invariants_deep(&SqlKeyStore::new(&db, "repo/main"));

    // A dead v1 holder loses the key to its first waiter, who is the caller.
    let mut release_key = SqlKeyStore::new(&db, "it's/release");
    let step = acquire(&mut release_key, now, &acquiring(&id("rel_8")));
    let Ok(AcquireStep::Check {
        holder: checked, ..
    }) = step
    else {
        panic!("expected a holder check, got {step:?}");
    };
    assert_eq!(checked.id, id("rel_7"));
    assert_eq!(checked.state, HolderState::Holding);
    let mut release_key = SqlKeyStore::new(&db, "it's/release");
    assert_eq!(
        acquire_after_check(
            &mut release_key,
            now,
            GRACE_MS,
            &acquiring(&id("rel_8")),
            &checked,
            Liveness::Dead
        ),
        Decided {
            reply: AcquireReply::Granted { fence: 1 },
            wake: vec![],
        }
    );
    let release_key = SqlKeyStore::new(&db, "it's/release");
    assert_eq!(
        release_key.waiters(),
        vec![
            waiter("rel_9", 1_700_000_302_000),
            waiter("rel_10", 1_700_000_303_000),
        ]
    );
    assert_eq!(release_key.waiter_count(), 2);

    // A key with waiters but no v1 key row: the first waiter is handed the key.
    let mut orphan = SqlKeyStore::new(&db, "orphan");
    assert!(matches!(
        acquire(&mut orphan, now, &acquiring(&id("job-c"))),
        Ok(AcquireStep::Check { holder, wake }) if holder.id == id("job-a") && wake.len() == 1
    ));
    let orphan = SqlKeyStore::new(&db, "orphan");
    assert_eq!(orphan.holder().map(|h| h.state), Some(HolderState::Handed));
    assert_eq!(orphan.waiter_count(), 2);
    assert_eq!(
        orphan
            .waiters()
            .iter()
            .map(|w| w.id.clone())
            .collect::<Vec<_>>(),
        [id("job-b"), id("job-c")]
    );

    // The idle key is simply granted, and takes a limit.
    let mut idle = SqlKeyStore::new(&db, "idle");
    let three = AcquireRequest {
        id: id("solo"),
        options: Options {
            workflow: None,
            limit: Some(3),
            grant: false,
        },
    };
    assert_eq!(
        acquire(&mut idle, now, &three),
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Granted { fence: 1 },
            wake: vec![]
        }))
    );
    let mut idle = SqlKeyStore::new(&db, "idle");
    assert_eq!(idle.limit(), 3);
    assert_eq!(
        acquire(&mut idle, now, &acquiring(&id("duo"))),
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Granted { fence: 2 },
            wake: vec![]
        }))
    );
    for key in ["repo/main", "it's/release", "orphan", "idle"] {
        assert_invariants_deep(&SqlKeyStore::new(&db, key));
    }
}

#[test]
fn migrate_is_idempotent() {
    for db in [v1_db(), Db::new()] {
        migrate(&db);
        let (shape, rows) = (schema_shape(&db), contents(&db));
        let changes = db.conn.total_changes();
        let ((), ran) = db.record(|| migrate(&db));
        assert_eq!(
            ran.iter().map(|r| r.sql.as_str()).collect::<Vec<_>>(),
            [schema::CREATE_VERSION_TABLE, schema::READ_VERSION],
            "a second migrate only looks"
        );
        assert_eq!(db.conn.total_changes(), changes);
        assert_eq!(schema_shape(&db), shape);
        assert_eq!(contents(&db), rows);
        assert_eq!(stored_version(&db), schema::CURRENT_VERSION);
    }
}

#[test]
fn migrate_on_an_empty_database_reaches_the_current_version() {
    let fresh = Db::migrated();
    assert_eq!(stored_version(&fresh), schema::CURRENT_VERSION);
    // An upgraded v1 database ends with exactly the tables a new one starts with.
    let upgraded = v1_db();
    migrate(&upgraded);
    assert_eq!(schema_shape(&upgraded), schema_shape(&fresh));
}

#[test]
#[should_panic(expected = "newer than this release")]
fn migrate_refuses_a_newer_database() {
    let db = Db::migrated();
    db.run(
        schema::WRITE_VERSION,
        &[SqlValue::Integer(schema::CURRENT_VERSION + 1)],
    );
    migrate(&db);
}

// ---------------------------------------------------------------------------
// 4. Cost: statement counts, VM steps and query plans.
// ---------------------------------------------------------------------------

/// What one operation cost: the store's own count, and what SQLite ran.
#[derive(Debug)]
struct Cost {
    /// `SqlKeyStore::work()`: (reads, writes).
    work: (u32, u32),
    ran: Vec<Ran>,
}

impl Cost {
    fn vm_steps(&self) -> i32 {
        self.ran.iter().map(|r| r.vm_steps).sum()
    }
}

/// Runs `f` on a fresh store for `key`, so `work()` counts only `f`.
fn measure<R>(db: &Db, key: &str, f: impl FnOnce(&mut SqlKeyStore<'_, Db>) -> R) -> (R, Cost) {
    let mut store = SqlKeyStore::new(db, key);
    let (result, ran) = db.record(|| f(&mut store));
    (
        result,
        Cost {
            work: store.work(),
            ran,
        },
    )
}

/// A key held by `holder`, with `n` waiters `w0..` (input hashes cycling over 7 values).
fn fill(db: &Db, key: &str, n: usize) {
    db.conn.execute_batch("BEGIN").expect("begin");
    let mut store = SqlKeyStore::new(db, key);
    store.add_holder(&Holder {
        id: id("holder"),
        since_ms: 1,
        state: HolderState::Holding,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        fence: 1,
    });
    for i in 0..n {
        store.push_waiter(&Waiter {
            id: id(&format!("w{i}")),
            since_ms: 10 + i as u64,
            input_hash: Some(hash(&format!("h{}", i % 7))),
            workflow: Some(workflow("WF")),
            enqueued_ms: Some(10 + i as u64),
            turn: Turn::Own(i as u64 + 1),
        });
    }
    db.conn.execute_batch("COMMIT").expect("commit");
    assert_eq!(store.waiter_count() as usize, n);
}

/// The operations whose cost must not depend on the queue's length, applied
/// to a key filled by [`fill`]. Each returns its reply, to check that the short
/// and long queues took the same path.
type Scenario = (&'static str, fn(&mut SqlKeyStore<'_, Db>) -> String);

fn plain(who: &str, supersedes: bool, input: Option<&str>) -> EnqueueRequest {
    EnqueueRequest {
        supersedes,
        id: id(who),
        input_hash: input.map(hash),
        options: Options::default(),
    }
}

fn candidate(who: &str, seq: u64, input: &str) -> Waiter {
    Waiter {
        id: id(who),
        since_ms: 10 + seq,
        input_hash: Some(hash(input)),
        workflow: Some(workflow("WF")),
        enqueued_ms: Some(10 + seq),
        turn: Turn::Own(seq + 1),
    }
}

fn flat_scenarios() -> Vec<Scenario> {
    const T: u64 = 1_000_000;
    vec![
        ("enqueue (plain, new)", |s| {
            format!("{:?}", enqueue(s, T, &plain("late", false, None)))
        }),
        ("enqueue (plain, with hash)", |s| {
            format!(
                "{:?}",
                enqueue(s, T, &plain("late-hashed", false, Some("h3")))
            )
        }),
        ("enqueue (already waiting)", |s| {
            format!("{:?}", enqueue(s, T, &plain("w5", false, None)))
        }),
        ("enqueue (supersedes, coalesce check)", |s| {
            format!("{:?}", enqueue(s, T, &plain("twin", true, Some("h3"))))
        }),
        ("enqueue_after_check (alive: coalesce)", |s| {
            format!(
                "{:?}",
                enqueue_after_check(
                    s,
                    T,
                    &plain("twin", true, Some("h3")),
                    &candidate("w3", 3, "h3"),
                    Liveness::Alive
                )
            )
        }),
        ("enqueue (raises the limit, names a workflow)", |s| {
            let r = EnqueueRequest {
                options: Options {
                    workflow: Some(workflow("OTHER")),
                    limit: Some(2),
                    grant: false,
                },
                ..plain("w8", false, None)
            };
            format!("{:?}", enqueue(s, T, &r))
        }),
        ("acquire (new caller, held key)", |s| {
            format!("{:?}", acquire(s, T, &acquiring(&id("newcomer"))))
        }),
        ("acquire (waiting caller)", |s| {
            format!("{:?}", acquire(s, T, &acquiring(&id("w7"))))
        }),
        ("acquire_after_check (alive holder)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                acquire_after_check(
                    s,
                    T,
                    GRACE_MS,
                    &acquiring(&id("w7")),
                    &checked,
                    Liveness::Alive,
                )
            })
        }),
        ("release (a waiter leaves)", |s| {
            format!("{:?}", release(s, T, &id("w6")))
        }),
        ("release (stranger)", |s| {
            format!("{:?}", release(s, T, &id("stranger")))
        }),
        ("tick", |s| format!("{:?}", tick(s))),
        ("release (holder hands on)", |s| {
            format!("{:?}", release(s, T, &id("holder")))
        }),
        ("acquire (handed holder confirms)", |s| {
            format!("{:?}", acquire(s, T + 1, &acquiring(&id("w0"))))
        }),
        ("woken_after_check (dead: hands on)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                woken_after_check(s, T + 2, GRACE_MS, &checked, Liveness::Dead)
            })
        }),
        ("tick_after_check (handed, alive)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                tick_after_check(s, T + 3, GRACE_MS, &[(checked, Liveness::Alive)])
            })
        }),
        ("acquire_after_check (dead holder)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                acquire_after_check(
                    s,
                    T + 4,
                    GRACE_MS,
                    &acquiring(&id("newcomer")),
                    &checked,
                    Liveness::Dead,
                )
            })
        }),
        (
            "acquire (raises the limit: slots to the waiters ahead)",
            |s| {
                let r = AcquireRequest {
                    id: id("newcomer"),
                    options: Options {
                        workflow: None,
                        limit: Some(4),
                        grant: false,
                    },
                };
                format!("{:?}", acquire(s, T + 5, &r))
            },
        ),
    ]
}

/// An uncontended pair reads the caller's place (with the key's counts) once
/// per call and writes one holder row per call: at most 3 reads and 2
/// writes (the budget), measured here as 2 and 2.
#[test]
fn an_uncontended_acquire_and_release_take_two_reads_and_two_writes() {
    let db = Db::migrated();
    fill(&db, "busy", 10_000);
    let (acquired, acquire_cost) = measure(&db, "free", |s| {
        let step = acquire(s, 1, &acquiring(&id("solo")));
        assert!(!needs_holder_check(s));
        assert_invariants(s);
        step
    });
    assert_eq!(
        acquired,
        Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Granted { fence: 1 },
            wake: vec![]
        }))
    );
    let (released, release_cost) = measure(&db, "free", |s| {
        let decided = release(s, 2, &id("solo"));
        assert!(!needs_holder_check(s));
        assert_invariants(s);
        decided
    });
    assert_eq!(released.reply, None);
    let (reads, writes) = (
        acquire_cost.work.0 + release_cost.work.0,
        acquire_cost.work.1 + release_cost.work.1,
    );
    assert!(
        reads <= 2 && writes <= 2,
        "an uncontended acquire+release ran {reads} reads and {writes} writes:\n{:#?}",
        acquire_cost
            .ran
            .iter()
            .chain(&release_cost.ran)
            .map(|r| &r.sql)
            .collect::<Vec<_>>()
    );
}

#[test]
fn operation_cost_does_not_grow_with_the_queue() {
    let db = Db::migrated();
    fill(&db, "short", 10);
    fill(&db, "long", 10_000);
    // A key sorting after both, so that a walk over either key's holders
    // ends on another key's row in both cases (the last key of an index
    // ends its walk one VM step sooner, whatever its length).
    fill(&db, "zz-neighbour", 1);
    let mut report = Vec::new();
    for (name, op) in flat_scenarios() {
        let (short_reply, short) = measure(&db, "short", op);
        let (long_reply, long) = measure(&db, "long", op);
        assert_eq!(short_reply, long_reply, "{name}: same path on both keys");
        assert_eq!(
            short.work, long.work,
            "{name}: statements (reads, writes) on 10 vs 10,000 waiters"
        );
        let statements = |c: &Cost| c.ran.iter().map(|r| r.sql.clone()).collect::<Vec<_>>();
        assert_eq!(statements(&short), statements(&long), "{name}");
        // SQLite's instruction count per statement, the work behind each
        // statement: a hidden walk over the queue would show here even when
        // the statement count stays the same. B-tree depth does not count.
        for (s, l) in short.ran.iter().zip(&long.ran) {
            assert_eq!(
                l.vm_steps, s.vm_steps,
                "{name}: VM steps of {:?} on 10,000 waiters vs 10",
                l.sql
            );
            assert_eq!(l.fullscan_steps, 0, "{name}: {:?} scanned a table", l.sql);
        }
        report.push(format!(
            "{name:40} work {:?}  vm steps {:>4} / {:>4}  -> {short_reply}",
            short.work,
            short.vm_steps(),
            long.vm_steps()
        ));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn a_superseding_enqueue_runs_as_many_statements_on_any_queue() {
    let db = Db::migrated();
    fill(&db, "short", 10);
    fill(&db, "long", 10_000);
    let request = plain("w4", true, None);
    let (short_reply, short) = measure(&db, "short", |s| enqueue(s, 5, &request));
    let (long_reply, long) = measure(&db, "long", |s| enqueue(s, 5, &request));
    assert_eq!(short.work, long.work);
    let dropped = |r: Result<EnqueueStep, _>| match r {
        Ok(EnqueueStep::Done(reply)) => reply.terminated.len(),
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(dropped(short_reply), 9);
    assert_eq!(dropped(long_reply), 9_999);
    for ran in long.ran.iter() {
        assert_eq!(ran.fullscan_steps, 0, "{:?} scanned a table", ran.sql);
    }
    for key in ["short", "long"] {
        let store = SqlKeyStore::new(&db, key);
        assert_eq!(store.waiter_count(), 1);
        assert_eq!(store.waiters()[0].id, id("w4"));
        assert_invariants_deep(&store);
    }
}

/// A statement the store ran, named by the method that ran it.
struct Labelled {
    method: &'static str,
    /// Whether the method's work may follow what it touches (the waiters
    /// superseded, the ids forgotten or counted, the queue listed): such a
    /// statement may sort or walk, but must still find the key's rows through
    /// an index.
    proportional: bool,
    ran: Ran,
}

/// A store method to run once: its name, whether it is proportional, the call.
type Call = (&'static str, bool, fn(&mut SqlKeyStore<'_, Db>));

const CALLS: &[Call] = &[
    ("member", false, |s| _ = s.member(&id("w3"))),
    ("counts", false, |s| {
        _ = SqlKeyStore::new(s_db(s), "k").limit()
    }),
    // A fresh store: the summary (which lists the holders) is not loaded yet.
    ("holders", false, |s| {
        _ = SqlKeyStore::new(s_db(s), "k").holders()
    }),
    ("holders_to_check (waiters)", false, |s| {
        _ = s.holders_to_check(3)
    }),
    ("first_waiters", false, |s| _ = s.first_waiters(3)),
    ("first_waiter_with_hash", false, |s| {
        _ = s.first_waiter_with_hash(&hash("h2"))
    }),
    ("waiters", true, |s| _ = s.waiters()),
    ("push_waiter", false, |s| {
        s.push_waiter(&Waiter {
            id: id("extra"),
            since_ms: 5,
            input_hash: Some(hash("h2")),
            workflow: None,
            enqueued_ms: Some(5),
            turn: Turn::Shared,
        })
    }),
    ("position", true, |s| _ = s.position(&id("w8"))),
    ("next_turn", false, |s| _ = s.next_turn()),
    ("set_waiter_workflow", false, |s| {
        s.set_waiter_workflow(&id("w8"), Some(&workflow("WF_B")))
    }),
    ("remove_waiter", false, |s| s.remove_waiter(&id("w9"))),
    ("set_limit", false, |s| s.set_limit(2)),
    ("add_holder", false, |s| {
        s.add_holder(&Holder {
            id: id("second"),
            since_ms: 6,
            state: HolderState::Handed,
            workflow: None,
            enqueued_ms: None,
            turn: Turn::Shared,
            fence: 2,
        })
    }),
    ("confirm_holder", false, |s| s.confirm_holder(&id("second"))),
    ("set_holder_workflow", false, |s| {
        s.set_holder_workflow(&id("second"), Some(&workflow("WF_B")))
    }),
    ("mark_checked", false, |s| s.mark_checked(&id("second"), 7)),
    ("remove_holder", false, |s| s.remove_holder(&id("second"))),
    ("supersede_waiters_except", true, |s| {
        _ = s.supersede_waiters_except(&id("w20"))
    }),
    ("holders_to_check (handed only)", false, |s| {
        _ = SqlKeyStore::new(s_db(s), "lonely").holders_to_check(3)
    }),
    ("superseded_count", true, |s| _ = s.superseded_count()),
    ("forget_superseded_beyond", true, |s| {
        s.forget_superseded_beyond(10)
    }),
];

/// The database under a store, for a call that needs a store of its own.
fn s_db<'a>(store: &SqlKeyStore<'a, Db>) -> &'a Db {
    store.exec()
}

/// Every statement the store runs, each once, with the parameters of a real call.
fn every_store_statement(db: &Db) -> Vec<Labelled> {
    fill(db, "other", 50);
    fill(db, "k", 50);
    let mut store = SqlKeyStore::new(db, "k");
    let mut runs: Vec<(&'static str, bool, Vec<Ran>)> = CALLS
        .iter()
        .map(|(method, proportional, call)| {
            let ((), ran) = db.record(|| call(&mut store));
            (*method, *proportional, ran)
        })
        .collect();
    let ((), ran) = db.record(|| _ = SqlKeyStore::keys_needing_check(db, 10));
    runs.push(("keys_needing_check", false, ran));

    let mut statements: Vec<Labelled> = Vec::new();
    for (method, proportional, ran) in runs {
        assert!(!ran.is_empty(), "{method} ran no statement");
        for ran in ran {
            if !statements.iter().any(|l| l.ran.sql == ran.sql) {
                statements.push(Labelled {
                    method,
                    proportional,
                    ran,
                });
            }
        }
    }
    statements
}

#[test]
fn every_statement_searches_by_key() {
    let db = Db::migrated();
    let statements = every_store_statement(&db);

    // The test must see every statement in sql_store.rs: count the literals there.
    let source = include_str!("../src/coordinator/sql_store.rs");
    let in_source = ["\"SELECT ", "\"INSERT ", "\"DELETE ", "\"UPDATE "]
        .iter()
        .map(|start| source.matches(start).count())
        .sum::<usize>();
    assert_eq!(
        statements.len(),
        in_source,
        "statements exercised vs. SQL literals in sql_store.rs:\n{:#?}",
        statements.iter().map(|l| &l.ran.sql).collect::<Vec<_>>()
    );

    let mut failures = Vec::new();
    let mut report = Vec::new();
    for Labelled {
        method,
        proportional,
        ran,
    } in &statements
    {
        let mut stmt = db
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", ran.sql))
            .expect("explain prepares");
        sqlite::bind(&mut stmt, &ran.sql, &ran.params);
        let mut plan = Vec::new();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().expect("explain runs") {
            plan.push(row.get::<_, String>(3).expect("detail column"));
        }
        report.push(format!(
            "{method}: {}\n    {}",
            ran.sql,
            plan.join("\n    ")
        ));

        let whole_database = *method == "keys_needing_check";
        for line in &plan {
            let names_table = [
                "coordinator_waiters",
                "coordinator_superseded",
                "coordinator_keys",
                "coordinator_holders",
            ]
            .iter()
            .any(|t| line.contains(&format!(" {t} ")) || line.ends_with(&format!(" {t}")));
            if !names_table {
                if line.contains("TEMP B-TREE") && !proportional {
                    failures.push(format!("{method}: {:?} sorts: {line}", ran.sql));
                }
                continue;
            }
            if whole_database && line.starts_with("SCAN ") {
                // keys_needing_check looks across keys, bounded by its LIMIT.
                continue;
            }
            let searches = line.starts_with("SEARCH ")
                && (line.contains(" USING INDEX ")
                    || line.contains(" USING COVERING INDEX ")
                    || line.contains(" USING PRIMARY KEY ")
                    || line.contains(" USING INTEGER PRIMARY KEY "))
                && line.contains("(key=?");
            if !searches {
                failures.push(format!(
                    "{method}: {:?} does not search by key: {line}",
                    ran.sql
                ));
            }
        }
        assert!(
            whole_database
                || ran.sql.starts_with("INSERT ")
                || plan.iter().any(|l| l.starts_with("SEARCH ")),
            "{method}: no plan for {:?}: {plan:?}",
            ran.sql
        );
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Remembered superseded ids are one gap-free run of seqs per key, so
/// counting them and forgetting beyond the bound touch only its two ends:
/// the same SQLite work with 10 or 10,000 ids remembered (the bound is
/// 20,000, so nothing is forgotten here; what is deleted when something is
/// costs in proportion to it).
#[test]
fn counting_and_forgetting_superseded_ids_is_flat_in_how_many_are_remembered() {
    let db = Db::migrated();
    for (key, n) in [("few", 10), ("many", 10_000)] {
        fill(&db, key, n);
        db.conn.execute_batch("BEGIN").expect("begin");
        let mut store = SqlKeyStore::new(&db, key);
        assert_eq!(store.supersede_waiters_except(&id("nobody")).len(), n);
        db.conn.execute_batch("COMMIT").expect("commit");
        assert_eq!(store.superseded_count() as usize, n);
    }
    let cost = |key: &str| {
        measure(&db, key, |s| {
            s.forget_superseded_beyond(SUPERSEDED_REMEMBERED_MAX);
            s.superseded_count()
        })
    };
    let ((few_count, few), (many_count, many)) = (cost("few"), cost("many"));
    assert_eq!((few_count, many_count), (10, 10_000));
    for (f, m) in few.ran.iter().zip(&many.ran) {
        assert_eq!(f.vm_steps, m.vm_steps, "VM steps of {:?}", f.sql);
    }
    // Forgetting keeps the newest, and the count follows.
    measure(&db, "many", |s| s.forget_superseded_beyond(3));
    let store = SqlKeyStore::new(&db, "many");
    assert_eq!(store.superseded_count(), 3);
    assert!(store.is_superseded(&id("w9999")) && !store.is_superseded(&id("w9996")));
}

/// Fences (contract §1b) live in the database, not in the summary: a store
/// opened afresh (as after a restart) continues from the highest fence
/// granted, also once every holder row that carried one is gone.
#[test]
fn fences_continue_from_the_database_after_every_holder_left() {
    let db = Db::migrated();
    let granted = |who: &str, now: u64| {
        let mut store = SqlKeyStore::new(&db, "k");
        match acquire(&mut store, now, &acquiring(&id(who))) {
            Ok(AcquireStep::Done(Decided {
                reply: AcquireReply::Granted { fence },
                ..
            })) => fence,
            other => panic!("{who}: {other:?}"),
        }
    };
    assert_eq!(granted("a", 1), 1);
    assert_eq!(
        granted("a", 2),
        1,
        "a holder's repeated acquire keeps its fence"
    );
    release(&mut SqlKeyStore::new(&db, "k"), 3, &id("a"));
    assert_eq!(granted("b", 4), 2);
    release(&mut SqlKeyStore::new(&db, "k"), 5, &id("b"));
    assert_eq!(SqlKeyStore::new(&db, "k").fence(), 2);
    assert_eq!(SqlKeyStore::new(&db, "other").fence(), 0);
    assert_eq!(granted("a", 6), 3, "a new grant to an earlier holder");
}
