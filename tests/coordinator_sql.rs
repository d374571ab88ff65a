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
//! A failing seeded run prints its seed; `BATON_SEED=<n>` reruns just that one.

use baton::coordinator::{
    acquire, acquire_after_check, assert_invariants, enqueue, enqueue_after_check,
    holder_found_dead, migrate, needs_holder_check, release, schema, tick, tick_after_check,
    AcquireReply, AcquireStep, Decided, EnqueueReply, EnqueueRequest, EnqueueStep, Holder,
    HolderState, KeyStore, Liveness, MemoryKeyStore, SqlExec, SqlKeyStore, SqlValue, TickStep,
    Waiter,
};
use baton::ident::{InputHash, InstanceId};
mod common;

use baton::limits::SUPERSEDED_REMEMBERED_MAX;
use common::Rng;
use rusqlite::types::{Null, ValueRef};
use rusqlite::{Connection, StatementStatus};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

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

fn to_sql_value(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(n) => SqlValue::Integer(n),
        ValueRef::Text(bytes) => {
            SqlValue::Text(String::from_utf8(bytes.to_vec()).expect("stored text is UTF-8"))
        }
        other => panic!("column type the store never writes: {other:?}"),
    }
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .unwrap_or_else(|e| panic!("preparing {sql:?}: {e}"));
        // Unbound parameters would silently read as NULL: the store must bind
        // exactly as many as the statement names.
        assert_eq!(
            stmt.parameter_count(),
            params.len(),
            "parameters bound for {sql:?}"
        );
        for (i, param) in params.iter().enumerate() {
            let bound = match param {
                SqlValue::Null => stmt.raw_bind_parameter(i + 1, Null),
                SqlValue::Integer(n) => stmt.raw_bind_parameter(i + 1, n),
                SqlValue::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str()),
            };
            bound.unwrap_or_else(|e| panic!("binding ?{} of {sql:?}: {e}", i + 1));
        }
        let columns = stmt.column_count();
        let mut out = Vec::new();
        {
            let mut rows = stmt.raw_query();
            while let Some(row) = rows
                .next()
                .unwrap_or_else(|e| panic!("running {sql:?} with {params:?}: {e}"))
            {
                out.push(
                    (0..columns)
                        .map(|i| to_sql_value(row.get_ref(i).expect("column in range")))
                        .collect(),
                );
            }
        }
        let vm_steps = stmt.reset_status(StatementStatus::VmStep);
        let fullscan_steps = stmt.reset_status(StatementStatus::FullscanStep);
        if self.recording.get() {
            self.log.borrow_mut().push(Ran {
                sql: sql.to_owned(),
                params: params.to_vec(),
                vm_steps,
                fullscan_steps,
            });
        }
        out
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

/// A random liveness answer, as a status check might give.
fn random_liveness(rng: &mut Rng) -> Liveness {
    *rng.pick(&[Liveness::Alive, Liveness::Dead, Liveness::Unknown])
}

/// Runs `run(seed)` for `count` seeds (or only `$BATON_SEED`), naming the
/// seed of a failing run.
fn for_each_seed(name: &str, count: u64, run: impl Fn(u64)) {
    let seeds: Vec<u64> = match std::env::var("BATON_SEED") {
        Ok(seed) => vec![seed.parse().expect("BATON_SEED is a u64")],
        Err(_) => (0..count).collect(),
    };
    for seed in seeds {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(seed))) {
            eprintln!("{name}: failed with seed {seed}; rerun with BATON_SEED={seed}");
            resume_unwind(panic);
        }
    }
}

/// Everything a `KeyStore` answers, for a fixed pool of ids and hashes.
#[derive(Debug, PartialEq)]
struct Seen {
    holder: Option<Holder>,
    /// The whole queue, in order (`MemoryKeyStore::waiters` / `SqlKeyStore::waiters`).
    waiters: Vec<Waiter>,
    waiter_by_id: Vec<(InstanceId, Option<Waiter>)>,
    first_waiter: Option<Waiter>,
    first_by_hash: Vec<(InputHash, Option<Waiter>)>,
    waiter_count: u32,
    superseded: Vec<(InstanceId, bool)>,
    superseded_count: u32,
    needs_holder_check: bool,
    tick: TickStep,
}

fn observe(
    store: &impl KeyStore,
    waiters: Vec<Waiter>,
    ids: &[InstanceId],
    hashes: &[InputHash],
) -> Seen {
    Seen {
        holder: store.holder(),
        waiters,
        waiter_by_id: ids.iter().map(|i| (i.clone(), store.waiter(i))).collect(),
        first_waiter: store.first_waiter(),
        first_by_hash: hashes
            .iter()
            .map(|h| (h.clone(), store.first_waiter_with_hash(h)))
            .collect(),
        waiter_count: store.waiter_count(),
        superseded: ids
            .iter()
            .map(|i| (i.clone(), store.is_superseded(i)))
            .collect(),
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
    let mut history: Vec<String> = Vec::new();

    for step in 0..300 {
        let k = rng.below(2) as usize;
        let (mem, sq) = (&mut memory[k], &mut sql[k]);
        let op = match rng.below(100) {
            0..35 => {
                // The store's precondition: a superseded id never waits again.
                let free: Vec<&InstanceId> = ids
                    .iter()
                    .filter(|i| mem.waiter(i).is_none() && !mem.is_superseded(i))
                    .collect();
                if free.is_empty() {
                    "push: queue full".to_owned()
                } else {
                    let waiter = Waiter {
                        id: (*rng.pick(&free)).clone(),
                        since_ms: rng.below(1 << 50),
                        input_hash: rng.percent(70).then(|| rng.pick(&hashes).clone()),
                    };
                    mem.push_waiter(&waiter);
                    sq.push_waiter(&waiter);
                    format!("push_waiter({waiter:?})")
                }
            }
            35..50 => {
                let who = rng.pick(&ids).clone();
                mem.remove_waiter(&who);
                sq.remove_waiter(&who);
                format!("remove_waiter({who})")
            }
            50..65 => {
                let holder = rng.percent(75).then(|| Holder {
                    id: rng.pick(&ids).clone(),
                    since_ms: rng.below(1 << 50),
                    state: *rng.pick(&[HolderState::Handed, HolderState::Holding]),
                });
                mem.set_holder(holder.as_ref());
                sq.set_holder(holder.as_ref());
                format!("set_holder({holder:?})")
            }
            65..77 => {
                let keep = rng.pick(&ids).clone();
                let from_memory = mem.supersede_waiters_except(&keep);
                let from_sql = sq.supersede_waiters_except(&keep);
                let op = format!("supersede_waiters_except({keep}) -> {from_memory:?}");
                assert_eq!(from_memory, from_sql, "seed {seed} step {step}: {op}");
                op
            }
            77..87 => {
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
    Enqueue(EnqueueRequest, InstanceId),
    Acquire(InstanceId, Holder),
    Tick(Holder),
}

#[derive(Debug, PartialEq)]
enum Reply {
    Enqueue(Result<EnqueueStep, baton::error::BatonError>),
    EnqueueAfter(Result<EnqueueReply, baton::error::BatonError>),
    Acquire(Result<AcquireStep, baton::error::BatonError>),
    AcquireAfter(Decided<AcquireReply>),
    Release(Decided<Option<InstanceId>>),
    Wake(Option<InstanceId>),
    Tick(TickStep),
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
        (Action::Acquire(who), _) => Reply::Acquire(acquire(store, now_ms, who)),
        (Action::Release(who), _) => Reply::Release(release(store, now_ms, who)),
        (Action::FoundDead(who), _) => Reply::Wake(holder_found_dead(store, now_ms, who)),
        (Action::Tick, _) => Reply::Tick(tick(store)),
        (Action::Resume, Some(Pending::Enqueue(request, candidate))) => Reply::EnqueueAfter(
            enqueue_after_check(store, now_ms, request, candidate, liveness),
        ),
        (Action::Resume, Some(Pending::Acquire(who, checked))) => {
            Reply::AcquireAfter(acquire_after_check(store, now_ms, who, checked, liveness))
        }
        (Action::Resume, Some(Pending::Tick(checked))) => {
            Reply::Wake(tick_after_check(store, now_ms, checked, liveness))
        }
        (Action::Resume, None) => unreachable!("resume needs a pending check"),
    }
}

#[derive(Debug)]
enum Action {
    Enqueue(EnqueueRequest),
    Acquire(InstanceId),
    Release(InstanceId),
    FoundDead(InstanceId),
    Tick,
    Resume,
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
    let mut sql = [
        SqlKeyStore::new(&db, KEYS[0]),
        SqlKeyStore::new(&db, KEYS[1]),
    ];
    let mut pending: [Vec<Pending>; 2] = [Vec::new(), Vec::new()];
    let mut rng = Rng(seed ^ 0xD1CE);
    let mut now_ms = 1_700_000_000_000u64;
    let mut history: Vec<String> = Vec::new();

    for step in 0..400 {
        now_ms += rng.below(2_000);
        if rng.percent(15) {
            ids.push(id(&format!("run-{}", ids.len())));
        }
        let live = &ids[ids.len() - LIVE..];
        let k = rng.below(2) as usize;
        let action = match rng.below(100) {
            _ if !pending[k].is_empty() && rng.percent(30) => Action::Resume,
            0..35 => Action::Enqueue(EnqueueRequest {
                supersedes: rng.percent(30),
                id: rng.pick(live).clone(),
                input_hash: rng.percent(70).then(|| rng.pick(&hashes).clone()),
            }),
            35..65 => Action::Acquire(rng.pick(live).clone()),
            65..85 => Action::Release(rng.pick(live).clone()),
            85..92 => Action::FoundDead(rng.pick(live).clone()),
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
        let from_sql = decide(&mut sql[k], now_ms, &action, resumed.as_ref(), liveness);
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
        match (&action, from_memory) {
            (Action::Enqueue(request), Reply::Enqueue(Ok(EnqueueStep::CheckCandidate(c)))) => {
                pending[k].push(Pending::Enqueue(request.clone(), c));
            }
            (Action::Acquire(who), Reply::Acquire(Ok(AcquireStep::CheckHolder(h)))) => {
                pending[k].push(Pending::Acquire(who.clone(), h));
            }
            (Action::Tick, Reply::Tick(TickStep::CheckHolder(h))) => {
                pending[k].push(Pending::Tick(h));
            }
            _ => {}
        }
        let observed = &ids[ids.len().saturating_sub(OBSERVED)..];
        for k in 0..2 {
            assert_invariants(&memory[k]);
            assert_invariants(&sql[k]);
            assert_eq!(
                observe_memory(&memory[k], observed, &hashes),
                observe_sql(&sql[k], observed, &hashes),
                "seed {seed}, key {:?}, after:\n{}",
                KEYS[k],
                history.join("\n")
            );
        }
    }
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

fn waiter(who: &str, since_ms: u64) -> Waiter {
    Waiter {
        id: id(who),
        since_ms,
        input_hash: None,
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
    assert_eq!(
        main.holder(),
        Some(Holder {
            id: id("deploy-100"),
            since_ms: 1_700_000_000_000,
            state: HolderState::Holding,
        })
    );
    let main_queue = vec![
        waiter("deploy-101", 1_700_000_001_000),
        waiter("deploy-102", 1_700_000_002_000),
        waiter("deploy-104", 1_700_000_004_000),
        waiter("deploy-108", 1_700_000_008_000),
    ];
    assert_eq!(main.waiters(), main_queue);
    assert_eq!(main.waiter_count(), 4);
    assert_eq!(main.first_waiter(), Some(main_queue[0].clone()));
    assert_eq!(main.waiter(&id("deploy-104")), Some(main_queue[2].clone()));
    assert_eq!(main.first_waiter_with_hash(&hash("anything")), None);
    assert_eq!(main.superseded_count(), 0);
    assert!(!main.is_superseded(&id("deploy-101")));

    let release_key = SqlKeyStore::new(&db, "it's/release");
    assert_eq!(
        release_key.holder(),
        Some(Holder {
            id: id("rel_7"),
            since_ms: 1_700_000_300_000,
            state: HolderState::Holding,
        })
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
        assert_invariants(store);
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
    assert_eq!(
        released,
        Decided {
            reply: Some(id("deploy-101")),
            wake: Some(id("deploy-101")),
        }
    );
    assert_eq!(
        main.holder(),
        Some(Holder {
            id: id("deploy-101"),
            since_ms: now,
            state: HolderState::Handed,
        })
    );
    assert_eq!(main.waiter_count(), 3);
    assert_eq!(
        acquire(&mut main, now + 1, &id("deploy-101")),
        Ok(AcquireStep::Done(AcquireReply::Granted))
    );
    assert_eq!(main.holder().map(|h| h.state), Some(HolderState::Holding));

    // A superseding enqueue drops every v1 waiter, in queue order.
    let request = EnqueueRequest {
        supersedes: true,
        id: id("deploy-200"),
        input_hash: Some(hash("abc123")),
    };
    assert_eq!(
        enqueue(&mut main, now + 2, &request),
        Ok(EnqueueStep::Done(EnqueueReply {
            terminated: vec![id("deploy-102"), id("deploy-104"), id("deploy-108")],
            coalesced_into: None,
        }))
    );
    assert_eq!(
        main.waiters(),
        vec![Waiter {
            id: id("deploy-200"),
            since_ms: now + 2,
            input_hash: Some(hash("abc123")),
        }]
    );
    assert_eq!(main.waiter_count(), 1);
    assert_eq!(main.superseded_count(), 3);
    assert_eq!(
        acquire(&mut main, now + 3, &id("deploy-104")),
        Ok(AcquireStep::Done(AcquireReply::Superseded))
    );
    // A second identical enqueue now coalesces into the surviving waiter.
    let twin = EnqueueRequest {
        id: id("deploy-201"),
        ..request
    };
    assert_eq!(
        enqueue(&mut main, now + 4, &twin),
        Ok(EnqueueStep::CheckCandidate(id("deploy-200")))
    );
    assert_eq!(
        release(&mut main, now + 5, &id("deploy-101")).reply,
        Some(id("deploy-200"))
    );
    assert_invariants(&main);

    // A dead v1 holder loses the key to its first waiter, who is the caller.
    let mut release_key = SqlKeyStore::new(&db, "it's/release");
    let step = acquire(&mut release_key, now, &id("rel_8"));
    let Ok(AcquireStep::CheckHolder(checked)) = step else {
        panic!("expected a holder check, got {step:?}");
    };
    assert_eq!(checked.id, id("rel_7"));
    assert_eq!(checked.state, HolderState::Holding);
    assert_eq!(
        acquire_after_check(
            &mut release_key,
            now,
            &id("rel_8"),
            &checked,
            Liveness::Dead
        ),
        Decided {
            reply: AcquireReply::Granted,
            wake: None,
        }
    );
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
        acquire(&mut orphan, now, &id("job-c")),
        Ok(AcquireStep::CheckHolder(h)) if h.id == id("job-a")
    ));
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

    // The idle key is simply granted.
    let mut idle = SqlKeyStore::new(&db, "idle");
    assert_eq!(
        acquire(&mut idle, now, &id("solo")),
        Ok(AcquireStep::Done(AcquireReply::Granted))
    );
    for store in [&main, &release_key, &orphan, &idle] {
        assert_invariants(store);
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
    store.set_holder(Some(&Holder {
        id: id("holder"),
        since_ms: 1,
        state: HolderState::Holding,
    }));
    for i in 0..n {
        store.push_waiter(&Waiter {
            id: id(&format!("w{i}")),
            since_ms: 10 + i as u64,
            input_hash: Some(hash(&format!("h{}", i % 7))),
        });
    }
    db.conn.execute_batch("COMMIT").expect("commit");
    assert_eq!(store.waiter_count() as usize, n);
}

/// The operations whose cost must not depend on the queue's length, applied
/// to a key filled by [`fill`]. Each returns its reply, to check that the short
/// and long queues took the same path.
type Scenario = (&'static str, fn(&mut SqlKeyStore<'_, Db>) -> String);

fn flat_scenarios() -> Vec<Scenario> {
    const T: u64 = 1_000_000;
    vec![
        ("enqueue (plain, new)", |s| {
            let r = EnqueueRequest {
                supersedes: false,
                id: id("late"),
                input_hash: None,
            };
            format!("{:?}", enqueue(s, T, &r))
        }),
        ("enqueue (plain, with hash)", |s| {
            let r = EnqueueRequest {
                supersedes: false,
                id: id("late-hashed"),
                input_hash: Some(hash("h3")),
            };
            format!("{:?}", enqueue(s, T, &r))
        }),
        ("enqueue (already waiting)", |s| {
            let r = EnqueueRequest {
                supersedes: false,
                id: id("w5"),
                input_hash: None,
            };
            format!("{:?}", enqueue(s, T, &r))
        }),
        ("enqueue (supersedes, coalesce check)", |s| {
            let r = EnqueueRequest {
                supersedes: true,
                id: id("twin"),
                input_hash: Some(hash("h3")),
            };
            format!("{:?}", enqueue(s, T, &r))
        }),
        ("enqueue_after_check (alive: coalesce)", |s| {
            let r = EnqueueRequest {
                supersedes: true,
                id: id("twin"),
                input_hash: Some(hash("h3")),
            };
            format!(
                "{:?}",
                enqueue_after_check(s, T, &r, &id("w3"), Liveness::Alive)
            )
        }),
        ("acquire (new caller, held key)", |s| {
            format!("{:?}", acquire(s, T, &id("newcomer")))
        }),
        ("acquire (waiting caller)", |s| {
            format!("{:?}", acquire(s, T, &id("w7")))
        }),
        ("acquire_after_check (alive holder)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                acquire_after_check(s, T, &id("w7"), &checked, Liveness::Alive)
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
            format!("{:?}", acquire(s, T + 1, &id("w0")))
        }),
        ("holder_found_dead (hands on)", |s| {
            format!("{:?}", holder_found_dead(s, T + 2, &id("w0")))
        }),
        ("tick_after_check (handed, alive)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                tick_after_check(s, T + 3, &checked, Liveness::Alive)
            })
        }),
        ("acquire_after_check (dead holder)", |s| {
            format!("{:?}", {
                let checked = s.holder().expect("the key is held");
                acquire_after_check(s, T + 4, &id("newcomer"), &checked, Liveness::Dead)
            })
        }),
    ]
}

/// An uncontended pair writes the holder twice (set, then clear) and nothing
/// else: `acquire` on a free, empty key must not also delete a waiter row for
/// a caller known not to be waiting.
#[test]
fn an_uncontended_acquire_and_release_write_at_most_two_statements() {
    let db = Db::migrated();
    fill(&db, "busy", 10_000);
    let (acquired, acquire_cost) = measure(&db, "free", |s| acquire(s, 1, &id("solo")));
    assert_eq!(acquired, Ok(AcquireStep::Done(AcquireReply::Granted)));
    let (released, release_cost) = measure(&db, "free", |s| release(s, 2, &id("solo")));
    assert_eq!(released.reply, None);
    let writes = acquire_cost.work.1 + release_cost.work.1;
    assert!(
        writes <= 2,
        "an uncontended acquire+release wrote {writes} statements:\n{:#?}",
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
    let request = EnqueueRequest {
        supersedes: true,
        id: id("w4"),
        input_hash: None,
    };
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
        assert_invariants(&store);
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
    ("holder", false, |s| _ = s.holder()),
    ("waiter", false, |s| _ = s.waiter(&id("w3"))),
    ("first_waiter", false, |s| _ = s.first_waiter()),
    ("first_waiter_with_hash", false, |s| {
        _ = s.first_waiter_with_hash(&hash("h2"))
    }),
    ("waiter_count", false, |s| _ = s.waiter_count()),
    ("waiters", true, |s| _ = s.waiters()),
    ("push_waiter", false, |s| {
        s.push_waiter(&Waiter {
            id: id("extra"),
            since_ms: 5,
            input_hash: Some(hash("h2")),
        })
    }),
    ("remove_waiter", false, |s| s.remove_waiter(&id("w9"))),
    ("set_holder", false, |s| s.set_holder(None)),
    ("supersede_waiters_except", true, |s| {
        _ = s.supersede_waiters_except(&id("w20"))
    }),
    ("is_superseded", false, |s| _ = s.is_superseded(&id("w3"))),
    ("superseded_count", true, |s| _ = s.superseded_count()),
    ("forget_superseded_beyond", true, |s| {
        s.forget_superseded_beyond(10)
    }),
];

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
        for (i, param) in ran.params.iter().enumerate() {
            match param {
                SqlValue::Null => stmt.raw_bind_parameter(i + 1, Null),
                SqlValue::Integer(n) => stmt.raw_bind_parameter(i + 1, n),
                SqlValue::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str()),
            }
            .expect("bind");
        }
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
            ]
            .iter()
            .any(|t| line.contains(&format!(" {t} ")) || line.ends_with(&format!(" {t}")));
            if !names_table {
                if line.contains("TEMP B-TREE") && !proportional {
                    failures.push(format!("{method}: {:?} sorts: {line}", ran.sql));
                }
                continue;
            }
            if whole_database && line.starts_with("SCAN coordinator_keys") {
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
