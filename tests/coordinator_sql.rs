//! The Coordinator's rows, run natively over `rusqlite`: `coordinator::load`
//! and `coordinator::write` (the SQL side of the one decision).
//!
//! - A database written by a schema-v1 release (`fixtures/coordinator_v1.sql`)
//!   upgrades in place, reads back and keeps working; `migrate` is idempotent.
//! - Cost, without timing anything: statements per decision do not depend on
//!   the queue's length, SQLite's own VM-step counter stays flat, and every
//!   statement's query plan searches an index by key instead of scanning.
//!
//! The rows are measured against the in-memory key, decision by decision,
//! in `tests/coordinator_transition.rs`.

mod common;

use baton::coordinator::history::{HistoryWrite, HoldEnd, Outcome, Tally};
use baton::coordinator::Effect;
use baton::coordinator::{
    self, decide, inspect, keys_due, load, load_summary, migrate, schema, terminated,
    terminations_owed, write, AcquireReply, AcquireRequest, EnqueueReply, EnqueueRequest, Holder,
    HolderState, Input, Layout, Liveness, Member, Options, Owed, Paused, Reply, Settings, Summary,
    Transition, Turn, Waiter, Write,
};
use baton::error::BatonError;
use baton::ident::{Ident, InputHash, InstanceId, WorkflowName};
use baton::limits::SUPERSEDED_REMEMBERED_MAX;
use baton::sql::{Counted, SqlExec, SqlValue};
use baton::workflow::Status;
use common::sqlite;
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

const KEY_SETTINGS_WORKFLOW: &str = "WF";

fn settings() -> Settings {
    Settings {
        grace_ms: GRACE_MS,
        workflow: KEY_SETTINGS_WORKFLOW.to_owned(),
    }
}

/// One decision as the shell makes it after a restart: the key's summary
/// read afresh, the view loaded, decided, its writes carried out.
fn step(db: &Db, key: &str, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
    let sql = Counted::new(db);
    let view = load(&sql, key, None, &input);
    let t = decide(&view, &settings(), now_ms, input)?;
    write(&sql, key, &t.writes);
    coordinator::assert_view(&t.state);
    Ok(t)
}

/// The holders a transition's wake effects name, as its writes left them.
fn woken(t: &Transition) -> Vec<Holder> {
    t.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Wake(w) => Some(
                t.state
                    .summary
                    .holders
                    .iter()
                    .find(|h| h.id == w.id)
                    .expect("a woken instance holds")
                    .clone(),
            ),
            _ => None,
        })
        .collect()
}

/// The key as `inspect` reads it: its summary, every waiter in order, and
/// how many superseded ids it remembers.
fn read(db: &Db, key: &str) -> (Summary, Vec<Waiter>, u32) {
    inspect(&Counted::new(db), key)
}

/// `id`'s place at the key, as a decision naming it would load it.
fn member(db: &Db, key: &str, id: &InstanceId) -> Member {
    load(&Counted::new(db), key, None, &Input::Release(id.clone()))
        .member
        .expect("a release names its id")
}

/// Every invariant reading the whole key can check: the counts agree with
/// the rows, no id holds twice or reads back differently, fences are at
/// most the key's and none granted twice, the front waiter only waits.
fn assert_rows(db: &Db, key: &str) {
    let (summary, waiters, superseded) = read(db, key);
    assert_eq!(summary.waiters as usize, waiters.len(), "waiter count");
    for (n, holder) in summary.holders.iter().enumerate() {
        assert!(summary.holders[..n].iter().all(|h| h.id != holder.id));
        assert!(holder.fence <= summary.fence, "fence above the key's");
        assert!(holder.fence == 0 || summary.holders[..n].iter().all(|h| h.fence != holder.fence));
        assert_eq!(member(db, key, &holder.id), Member::Holder(holder.clone()));
    }
    assert!(superseded <= SUPERSEDED_REMEMBERED_MAX);
    assert_eq!(summary.none_superseded, superseded == 0);
    if let Some(first) = waiters.first() {
        assert_eq!(member(db, key, &first.id), Member::Waiter(first.clone()));
    }
}

fn acquiring(who: &InstanceId) -> AcquireRequest {
    AcquireRequest {
        id: who.clone(),
        options: Options::default(),
    }
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
        priority: 0,
        tenant: None,
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
        cancelling: false,
        waited_ms: 0,
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

    let (main, main_waiters, main_superseded) = read(&db, "repo/main");
    assert_eq!(main.holders, [v1_holder("deploy-100", 1_700_000_000_000)]);
    assert_eq!(main.limit(), 1);
    let main_queue = vec![
        waiter("deploy-101", 1_700_000_001_000),
        waiter("deploy-102", 1_700_000_002_000),
        waiter("deploy-104", 1_700_000_004_000),
        waiter("deploy-108", 1_700_000_008_000),
    ];
    assert_eq!(main_waiters, main_queue);
    assert_eq!(main.waiters, 4);
    assert_eq!(
        member(&db, "repo/main", &id("deploy-104")),
        Member::Waiter(main_queue[2].clone())
    );
    let coalescing = Input::Enqueue(EnqueueRequest {
        input_hash: Some(hash("anything")),
        ..plain("deploy-300", true, None)
    });
    assert_eq!(
        load(&Counted::new(&db), "repo/main", None, &coalescing).candidate,
        None
    );
    assert_eq!(main_superseded, 0);
    assert_eq!(
        member(&db, "repo/main", &id("deploy-101")),
        Member::Waiter(main_queue[0].clone())
    );

    let (release_key, release_waiters, _) = read(&db, "it's/release");
    assert_eq!(release_key.holders, [v1_holder("rel_7", 1_700_000_300_000)]);
    assert_eq!(
        release_waiters,
        vec![
            waiter("rel_8", 1_700_000_301_000),
            waiter("rel_9", 1_700_000_302_000),
            waiter("rel_10", 1_700_000_303_000),
        ]
    );
    assert_eq!(release_key.waiters, 3);

    let (orphan, orphan_waiters, _) = read(&db, "orphan");
    assert!(orphan.holders.is_empty());
    assert_eq!(
        orphan_waiters,
        vec![
            waiter("job-a", 1_700_000_400_000),
            waiter("job-b", 1_700_000_401_000)
        ]
    );
    assert_eq!(orphan.waiters, 2, "the v2 step counts keys with no row");

    let (idle, idle_waiters, _) = read(&db, "idle");
    assert!(idle.holders.is_empty());
    assert_eq!(idle.waiters, 0);
    assert!(idle_waiters.is_empty());

    let mut needing_check = keys_due(&Counted::new(&db), 10);
    needing_check.sort();
    assert_eq!(needing_check, ["it's/release", "repo/main"]);
    for key in ["repo/main", "it's/release", "orphan", "idle"] {
        assert_rows(&db, key);
        assert_eq!(read(&db, key).2, 0);
    }
}

#[test]
fn decisions_work_on_an_upgraded_v1_database() {
    let db = v1_db();
    migrate(&db);
    let now = 1_800_000_000_000;

    // The holder releases: the key goes to the first waiter, handed but unconfirmed.
    let released = step(&db, "repo/main", now, Input::Release(id("deploy-100"))).expect("release");
    let handed = Holder {
        id: id("deploy-101"),
        since_ms: now,
        state: HolderState::Handed,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        // The first grant with a fence: v1 holders carry none (0).
        fence: 1,
        cancelling: false,
        // Since it joined, in the v1 rows.
        waited_ms: now - 1_700_000_001_000,
    };
    assert_eq!(released.reply, Reply::Release(Some(id("deploy-101"))));
    assert_eq!(woken(&released), std::slice::from_ref(&handed));
    let (main, _, _) = read(&db, "repo/main");
    assert_eq!(main.holders, [handed]);
    assert_eq!(main.waiters, 3);
    let acquired = step(
        &db,
        "repo/main",
        now + 1,
        Input::Acquire(acquiring(&id("deploy-101"))),
    )
    .expect("acquire");
    assert_eq!(
        acquired.reply,
        Reply::Acquire(AcquireReply::Granted { fence: 1 })
    );
    assert!(woken(&acquired).is_empty());
    assert_eq!(
        read(&db, "repo/main").0.holders[0].state,
        HolderState::Holding
    );

    // A superseding enqueue drops every v1 waiter, in queue order.
    let request = EnqueueRequest {
        supersedes: true,
        id: id("deploy-200"),
        input_hash: Some(hash("abc123")),
        options: Options {
            workflow: Some(workflow("DEPLOY")),
            limit: None,
            grant: false,
            ..Options::default()
        },
    };
    assert_eq!(
        step(&db, "repo/main", now + 2, Input::Enqueue(request.clone()))
            .expect("enqueue")
            .reply,
        Reply::Enqueue(EnqueueReply {
            terminated: vec![
                waiter("deploy-102", 1_700_000_002_000),
                waiter("deploy-104", 1_700_000_004_000),
                waiter("deploy-108", 1_700_000_008_000)
            ],
            coalesced_into: None,
            busy: false,
            full: false,
            cancelled: vec![],
        })
    );
    let survivor = Waiter {
        id: id("deploy-200"),
        since_ms: now + 2,
        input_hash: Some(hash("abc123")),
        workflow: Some(workflow("DEPLOY")),
        enqueued_ms: Some(now + 2),
        turn: Turn::Shared,
        priority: 0,
        tenant: None,
    };
    let (main, main_waiters, main_superseded) = read(&db, "repo/main");
    assert_eq!(main_waiters, vec![survivor.clone()]);
    assert_eq!(main.waiters, 1);
    assert_eq!(main_superseded, 3);
    let late = step(
        &db,
        "repo/main",
        now + 3,
        Input::Acquire(acquiring(&id("deploy-104"))),
    )
    .expect("acquire");
    assert_eq!(late.reply, Reply::Acquire(AcquireReply::Superseded));
    assert!(woken(&late).is_empty());
    // A second identical enqueue now asks whether the surviving waiter lives.
    let twin = EnqueueRequest {
        id: id("deploy-201"),
        ..request
    };
    assert_eq!(
        step(&db, "repo/main", now + 4, Input::Enqueue(twin.clone()))
            .expect("enqueue")
            .reply,
        Reply::EnqueueChecking {
            request: twin,
            candidate: survivor
        }
    );
    assert_eq!(
        step(&db, "repo/main", now + 5, Input::Release(id("deploy-101")))
            .expect("release")
            .reply,
        Reply::Release(Some(id("deploy-200")))
    );
    assert_rows(&db, "repo/main");

    // A dead v1 holder loses the key to its first waiter, who is the caller.
    let asked = step(
        &db,
        "it's/release",
        now,
        Input::Acquire(acquiring(&id("rel_8"))),
    )
    .expect("acquire");
    let Reply::AcquireChecking {
        holder: checked, ..
    } = asked.reply
    else {
        panic!("expected a holder check, got {:?}", asked.reply);
    };
    assert_eq!(checked.id, id("rel_7"));
    assert_eq!(checked.state, HolderState::Holding);
    let answered = step(
        &db,
        "it's/release",
        now,
        Input::AcquireChecked {
            request: acquiring(&id("rel_8")),
            holder: checked,
            answer: Liveness::Dead.into(),
        },
    )
    .expect("a second phase");
    assert_eq!(
        answered.reply,
        Reply::Acquire(AcquireReply::Granted { fence: 1 })
    );
    assert!(woken(&answered).is_empty());
    let (release_key, release_waiters, _) = read(&db, "it's/release");
    assert_eq!(
        release_waiters,
        vec![
            waiter("rel_9", 1_700_000_302_000),
            waiter("rel_10", 1_700_000_303_000),
        ]
    );
    assert_eq!(release_key.waiters, 2);

    // A key with waiters but no v1 key row: the first waiter is handed the key.
    let orphaned =
        step(&db, "orphan", now, Input::Acquire(acquiring(&id("job-c")))).expect("acquire");
    assert!(
        matches!(&orphaned.reply, Reply::AcquireChecking { holder, .. } if holder.id == id("job-a")),
        "{:?}",
        orphaned.reply
    );
    assert_eq!(woken(&orphaned).len(), 1);
    let (orphan, orphan_waiters, _) = read(&db, "orphan");
    assert_eq!(orphan.holders[0].state, HolderState::Handed);
    assert_eq!(orphan.waiters, 2);
    assert_eq!(
        orphan_waiters
            .iter()
            .map(|w| w.id.clone())
            .collect::<Vec<_>>(),
        [id("job-b"), id("job-c")]
    );

    // The idle key is simply granted, and takes a limit.
    let three = AcquireRequest {
        id: id("solo"),
        options: Options {
            workflow: None,
            limit: Some(3),
            grant: false,
            ..Options::default()
        },
    };
    let solo = step(&db, "idle", now, Input::Acquire(three)).expect("acquire");
    assert_eq!(
        solo.reply,
        Reply::Acquire(AcquireReply::Granted { fence: 1 })
    );
    assert!(woken(&solo).is_empty());
    assert_eq!(read(&db, "idle").0.limit(), 3);
    let duo = step(&db, "idle", now, Input::Acquire(acquiring(&id("duo")))).expect("acquire");
    assert_eq!(
        duo.reply,
        Reply::Acquire(AcquireReply::Granted { fence: 2 })
    );
    assert!(woken(&duo).is_empty());
    for key in ["repo/main", "it's/release", "orphan", "idle"] {
        assert_rows(&db, key);
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

/// What one decision cost: its own count, and what SQLite ran.
#[derive(Debug)]
struct Cost {
    /// `Counted::work()`: (reads, writes).
    work: (u32, u32),
    ran: Vec<Ran>,
}

impl Cost {
    fn vm_steps(&self) -> i32 {
        self.ran.iter().map(|r| r.vm_steps).sum()
    }
}

/// Runs `f` with a fresh statement count, so `work` counts only `f`.
fn measure<R>(db: &Db, f: impl FnOnce(&Counted<'_, Db>) -> R) -> (R, Cost) {
    let sql = Counted::new(db);
    let (result, ran) = db.record(|| f(&sql));
    (
        result,
        Cost {
            work: sql.work(),
            ran,
        },
    )
}

/// One decision on `key` (with `summary`, or its summary read afresh),
/// measured; the reply and effects as text, to compare paths.
fn decided(
    db: &Db,
    key: &str,
    summary: Option<Summary>,
    now_ms: u64,
    input: Input,
) -> (String, Cost) {
    measure(db, |sql| {
        let view = load(sql, key, summary, &input);
        match decide(&view, &settings(), now_ms, input) {
            Ok(t) => {
                write(sql, key, &t.writes);
                coordinator::assert_view(&t.state);
                format!("{:?} {:?}", t.reply, t.effects)
            }
            Err(e) => format!("{e:?}"),
        }
    })
}

/// A key held by `holder`, with `n` waiters `w0..` (input hashes cycling
/// over 7 values), written in one batch of writes.
fn fill(db: &Db, key: &str, n: usize) {
    fill_in(db, key, n, Layout::Shared);
}

/// [`fill`], the waiters kept in `layout`.
fn fill_in(db: &Db, key: &str, n: usize, layout: Layout) {
    db.conn.execute_batch("BEGIN").expect("begin");
    let mut writes = vec![Write::AddHolder(Holder {
        id: id("holder"),
        since_ms: 1,
        state: HolderState::Holding,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        fence: 1,
        cancelling: false,
        waited_ms: 0,
    })];
    for i in 0..n {
        writes.push(Write::PushWaiter(
            Waiter {
                id: id(&format!("w{i}")),
                since_ms: 10 + i as u64,
                input_hash: Some(hash(&format!("h{}", i % 7))),
                workflow: Some(workflow("WF")),
                enqueued_ms: Some(10 + i as u64),
                turn: Turn::Own(i as u64 + 1),
                priority: 0,
                tenant: None,
            },
            layout,
        ));
    }
    write(&Counted::new(db), key, &writes);
    db.conn.execute_batch("COMMIT").expect("commit");
    assert_eq!(read(db, key).0.waiters as usize, n);
}

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
        priority: 0,
        tenant: None,
    }
}

/// The key's first holder, as a status check would have been asked about.
fn first_holder(db: &Db, key: &str) -> Holder {
    read(db, key).0.holders[0].clone()
}

/// An input built for the key it runs on (some name the key's holder).
type Scenario = (&'static str, u64, fn(&Db, &str) -> Input);

/// The decisions whose cost must not depend on the queue's length, made in
/// order on a key filled by [`fill`].
fn flat_scenarios() -> Vec<Scenario> {
    const T: u64 = 1_000_000;
    vec![
        ("enqueue (plain, new)", T, |_, _| {
            Input::Enqueue(plain("late", false, None))
        }),
        ("enqueue (plain, with hash)", T, |_, _| {
            Input::Enqueue(plain("late-hashed", false, Some("h3")))
        }),
        ("enqueue (already waiting)", T, |_, _| {
            Input::Enqueue(plain("w5", false, None))
        }),
        ("enqueue (supersedes, coalesce check)", T, |_, _| {
            Input::Enqueue(plain("twin", true, Some("h3")))
        }),
        ("enqueue checked (alive: coalesce)", T, |_, _| {
            Input::EnqueueChecked {
                request: plain("twin", true, Some("h3")),
                candidate: candidate("w3", 3, "h3"),
                liveness: Liveness::Alive,
            }
        }),
        ("enqueue (raises the limit, names a workflow)", T, |_, _| {
            Input::Enqueue(EnqueueRequest {
                options: Options {
                    workflow: Some(workflow("OTHER")),
                    limit: Some(2),
                    grant: false,
                    ..Options::default()
                },
                ..plain("w8", false, None)
            })
        }),
        ("acquire (new caller, held key)", T, |_, _| {
            Input::Acquire(acquiring(&id("newcomer")))
        }),
        ("acquire (waiting caller)", T, |_, _| {
            Input::Acquire(acquiring(&id("w7")))
        }),
        ("acquire checked (alive holder)", T, |db, key| {
            Input::AcquireChecked {
                request: acquiring(&id("w7")),
                holder: first_holder(db, key),
                answer: Liveness::Alive.into(),
            }
        }),
        ("release (a waiter leaves)", T, |_, _| {
            Input::Release(id("w6"))
        }),
        ("release (stranger)", T, |_, _| {
            Input::Release(id("stranger"))
        }),
        ("tick", T, |_, _| Input::Tick),
        ("release (holder hands on)", T, |_, _| {
            Input::Release(id("holder"))
        }),
        ("acquire (handed holder confirms)", T + 1, |_, _| {
            Input::Acquire(acquiring(&id("w0")))
        }),
        ("woken (dead: hands on)", T + 2, |db, key| Input::Woken {
            holder: first_holder(db, key),
            answer: Liveness::Dead.into(),
        }),
        ("tick checked (handed, alive)", T + 3, |db, key| {
            Input::TickChecked {
                holder: first_holder(db, key),
                answer: Liveness::Alive.into(),
            }
        }),
        ("acquire checked (dead holder)", T + 4, |db, key| {
            Input::AcquireChecked {
                request: acquiring(&id("newcomer")),
                holder: first_holder(db, key),
                answer: Liveness::Dead.into(),
            }
        }),
        (
            "acquire (raises the limit: slots to the waiters ahead)",
            T + 5,
            |_, _| {
                Input::Acquire(AcquireRequest {
                    id: id("newcomer"),
                    options: Options {
                        workflow: None,
                        limit: Some(4),
                        grant: false,
                        ..Options::default()
                    },
                })
            },
        ),
    ]
}

/// P3/P5: an uncontended pair reads the caller's place (with the key's
/// counts) once per call and writes one holder row per call: at most 3
/// reads and 2 writes (the budget), measured here as 2 and 2 after
/// a restart; with the summary the shell keeps, no read at all.
#[test]
fn an_uncontended_acquire_and_release_take_two_reads_and_two_writes() {
    let db = Db::migrated();
    fill(&db, "busy", 10_000);
    let (acquired, acquire_cost) =
        decided(&db, "free", None, 1, Input::Acquire(acquiring(&id("solo"))));
    assert_eq!(acquired, "Acquire(Granted { fence: 1 }) []");
    assert!(!coordinator::needs_check(&read(&db, "free").0));
    let (released, release_cost) = decided(&db, "free", None, 2, Input::Release(id("solo")));
    assert_eq!(released, "Release(None) []");
    assert!(!coordinator::needs_check(&read(&db, "free").0));
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
    // The shell's memory: the summary each decision left.
    let summary = load_summary(&Counted::new(&db), "free");
    let (_, acquire_cost) = decided(
        &db,
        "free",
        Some(summary),
        3,
        Input::Acquire(acquiring(&id("solo"))),
    );
    let summary = load_summary(&Counted::new(&db), "free");
    let (_, release_cost) = decided(&db, "free", Some(summary), 4, Input::Release(id("solo")));
    assert_eq!((acquire_cost.work, release_cost.work), ((0, 1), (0, 1)));
}

/// P4: every decision runs the same statements, with the same SQLite work,
/// behind 10,000 waiters as behind 10, and takes the same path.
#[test]
fn operation_cost_does_not_grow_with_the_queue() {
    let db = Db::migrated();
    fill(&db, "short", 10);
    fill(&db, "long", 10_000);
    // A key sorting after both, so that a walk over either key's holders
    // ends on another key's row in both cases (the last key of an index
    // ends its walk one VM step sooner, whatever its length).
    fill(&db, "zz-neighbour", 1);
    // A hold already recorded (on other keys): the first row ever in
    // `coordinator_recent` also creates its AUTOINCREMENT counter, a cost
    // of the table's first insert, not of either queue.
    let recorded = HistoryWrite::Hold {
        id: id("holder"),
        fence: 1,
        from_ms: 1,
        to_ms: 2,
        waited_ms: 0,
        outcome: Outcome::Released,
        cancelled: false,
    };
    // And one on a key sorting before both, so that a walk down either
    // key's recent holds ends on another key's row too.
    for neighbour in ["aa-neighbour", "zz-neighbour"] {
        let recorded = Write::History(recorded.clone());
        write(&Counted::new(&db), neighbour, &[recorded]);
    }
    let mut report = Vec::new();
    for (name, now_ms, input) in flat_scenarios() {
        let (short_reply, short) = decided(&db, "short", None, now_ms, input(&db, "short"));
        let (long_reply, long) = decided(&db, "long", None, now_ms, input(&db, "long"));
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
    let dropped = |key: &str| {
        measure(&db, |sql| {
            let input = Input::Enqueue(request.clone());
            let view = load(sql, key, None, &input);
            let t = decide(&view, &settings(), 5, input).expect("enqueue");
            write(sql, key, &t.writes);
            match t.reply {
                Reply::Enqueue(reply) => reply.terminated.len(),
                other => panic!("unexpected {other:?}"),
            }
        })
    };
    let ((short_dropped, short), (long_dropped, long)) = (dropped("short"), dropped("long"));
    assert_eq!(short.work, long.work);
    assert_eq!(short_dropped, 9);
    assert_eq!(long_dropped, 9_999);
    for ran in long.ran.iter() {
        assert_eq!(ran.fullscan_steps, 0, "{:?} scanned a table", ran.sql);
    }
    for key in ["short", "long"] {
        let (summary, waiters, _) = read(&db, key);
        assert_eq!(summary.waiters, 1);
        assert_eq!(waiters[0].id, id("w4"));
        assert_rows(&db, key);
    }
}

/// A statement run, named by the call that ran it.
struct Labelled {
    call: &'static str,
    /// Whether the call's work may follow what it touches (the waiters
    /// superseded, the ids forgotten, the queue listed or counted): such a
    /// statement may sort or walk, but must still find the key's rows
    /// through an index.
    proportional: bool,
    ran: Ran,
}

/// A call to run once: its name, whether it is proportional, the call.
type Call = (&'static str, bool, fn(&Counted<'_, Db>));

/// A view loaded for `input` on key `k`, its summary read afresh.
fn loads(sql: &Counted<'_, Db>, input: Input) {
    _ = load(sql, "k", None, &input);
}

/// `writes` carried out on key `k`.
fn writes(sql: &Counted<'_, Db>, writes: &[Write]) {
    write(sql, "k", writes);
}

fn grant_acquire(who: &str) -> Input {
    Input::Acquire(AcquireRequest {
        id: id(who),
        options: Options {
            grant: true,
            ..Options::default()
        },
    })
}

/// Each call runs its statements in order; a statement counts under the
/// first call that ran it, so calls come in the order that names them.
const CALLS: &[Call] = &[
    ("summary", false, |sql| _ = load_summary(sql, "k")),
    ("member", false, |sql| {
        loads(sql, Input::Enqueue(plain("w3", false, None)))
    }),
    ("front", false, |sql| {
        loads(sql, Input::Release(id("holder")))
    }),
    ("front (a tenant gives more than one)", false, |sql| {
        loads(
            sql,
            Input::Acquire(AcquireRequest {
                id: id("w9"),
                options: Options {
                    limit: Some(3),
                    ..Options::default()
                },
            }),
        )
    }),
    ("holders to check (waiters)", false, |sql| {
        loads(sql, Input::Tick)
    }),
    ("position", true, |sql| loads(sql, grant_acquire("w8"))),
    ("front (sole)", false, |sql| {
        _ = load(sql, "s", None, &Input::Release(id("holder")))
    }),
    ("position (sole)", true, |sql| {
        _ = load(sql, "s", None, &grant_acquire("w8"))
    }),
    ("push waiter (sole)", false, |sql| {
        let waiter = Waiter {
            id: id("late"),
            since_ms: 5,
            input_hash: None,
            workflow: None,
            enqueued_ms: Some(5),
            turn: Turn::Shared,
            priority: 0,
            tenant: None,
        };
        write(sql, "s", &[Write::PushWaiter(waiter, Layout::Sole)])
    }),
    ("spread", true, |sql| write(sql, "s", &[Write::Spread])),
    ("coalesce candidate", false, |sql| {
        loads(sql, Input::Enqueue(plain("twin", true, Some("h2"))))
    }),
    ("supersede victims", true, |sql| {
        loads(sql, Input::Enqueue(plain("twin", true, None)))
    }),
    ("holders to check (handed only)", false, |sql| {
        _ = load(sql, "lonely", None, &Input::Tick)
    }),
    ("set limit", false, |sql| writes(sql, &[Write::SetLimit(2)])),
    ("draw turn", false, |sql| {
        writes(sql, &[Write::DrawTurn(51)])
    }),
    ("add holder", false, |sql| {
        writes(
            sql,
            &[Write::AddHolder(Holder {
                id: id("second"),
                since_ms: 6,
                state: HolderState::Handed,
                workflow: None,
                enqueued_ms: None,
                turn: Turn::Shared,
                fence: 2,
                cancelling: false,
                waited_ms: 1,
            })],
        )
    }),
    ("confirm holder", false, |sql| {
        writes(sql, &[Write::ConfirmHolder(id("second"))])
    }),
    ("cancel holder", false, |sql| {
        writes(sql, &[Write::CancelHolder(id("second"))])
    }),
    ("set holder workflow", false, |sql| {
        writes(
            sql,
            &[Write::SetHolderWorkflow(
                id("second"),
                Some(workflow("WF_B")),
            )],
        )
    }),
    ("mark checked", false, |sql| {
        writes(
            sql,
            &[
                Write::MarkChecked(id("second"), 7, Status::Failed),
                Write::MarkChecked(id("second"), 8, Status::Failed),
                Write::MarkChecked(id("holder"), 8, Status::Waiting),
            ],
        )
    }),
    ("remove holder", false, |sql| {
        writes(sql, &[Write::RemoveHolder(id("second"), None)])
    }),
    ("end a hold", false, |sql| {
        writes(
            sql,
            &[Write::RemoveHolder(
                id("holder"),
                Some(HoldEnd {
                    at_ms: 9,
                    ..HoldEnd::default()
                }),
            )],
        )
    }),
    ("end a hold carrying a tally", false, |sql| {
        let end = HoldEnd {
            at_ms: 9,
            tally: Tally {
                hand_offs: 1,
                ..Tally::default()
            },
        };
        writes(sql, &[Write::RemoveHolder(id("second"), Some(end))])
    }),
    ("serve a tenant", false, |sql| {
        writes(
            sql,
            &[Write::Serve {
                priority: 0,
                tenant: None,
                fence: 3,
            }],
        )
    }),
    ("push waiter", false, |sql| {
        writes(
            sql,
            &[Write::PushWaiter(
                Waiter {
                    id: id("extra"),
                    since_ms: 5,
                    input_hash: Some(hash("h2")),
                    workflow: None,
                    enqueued_ms: Some(5),
                    turn: Turn::Shared,
                    priority: 0,
                    tenant: None,
                },
                Layout::Shared,
            )],
        )
    }),
    ("set waiter workflow", false, |sql| {
        writes(
            sql,
            &[Write::SetWaiterWorkflow(id("w8"), Some(workflow("WF_B")))],
        )
    }),
    ("remove waiter", false, |sql| {
        writes(sql, &[Write::RemoveWaiter(id("w9"))])
    }),
    ("supersede all except", true, |sql| {
        writes(sql, &[Write::SupersedeAllExcept(id("w20"), 48)])
    }),
    ("forget superseded beyond", true, |sql| {
        writes(sql, &[Write::ForgetSupersededBeyond(10)])
    }),
    ("inspect", true, |sql| _ = inspect(sql, "k")),
    ("keys due", false, |sql| _ = keys_due(sql, 10)),
    ("set a limit override", false, |sql| {
        writes(sql, &[Write::SetLimitOverride(Some(3))])
    }),
    ("set a cap on the waiters", false, |sql| {
        writes(sql, &[Write::SetMaxWaiting(5)])
    }),
    ("pause", false, |sql| {
        writes(
            sql,
            &[Write::SetPaused(Some(Paused {
                since_ms: 4,
                reason: Some("an incident".into()),
            }))],
        )
    }),
    ("terminations owed", false, |sql| {
        _ = terminations_owed(sql, 10)
    }),
    ("terminated", false, |sql| terminated(sql, "k", &id("w3"))),
];

/// Every statement `coordinator::load`/`write` and their helpers run, each
/// once, with the parameters of a real call.
fn every_statement(db: &Db) -> Vec<Labelled> {
    fill(db, "other", 50);
    fill(db, "k", 50);
    fill_in(db, "s", 50, Layout::Sole);
    // A key whose only holder was handed the key and has not confirmed it.
    write(
        &Counted::new(db),
        "lonely",
        &[Write::AddHolder(Holder {
            id: id("handed"),
            since_ms: 1,
            state: HolderState::Handed,
            workflow: None,
            enqueued_ms: None,
            turn: Turn::Shared,
            fence: 1,
            cancelling: false,
            waited_ms: 0,
        })],
    );
    let mut statements: Vec<Labelled> = Vec::new();
    for (call, proportional, run) in CALLS {
        let ((), cost) = measure(db, run);
        assert!(!cost.ran.is_empty(), "{call} ran no statement");
        for ran in cost.ran {
            if !statements.iter().any(|l| l.ran.sql == ran.sql) {
                statements.push(Labelled {
                    call,
                    proportional: *proportional,
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
    let statements = every_statement(&db);

    // The test must see every statement in the store: count the literals
    // there.
    let source = [
        include_str!("../src/coordinator/store/mod.rs"),
        include_str!("../src/coordinator/store/order.rs"),
        include_str!("../src/coordinator/store/write.rs"),
        include_str!("../src/coordinator/store/terminations.rs"),
    ]
    .concat();
    let in_source = [
        "\"SELECT ",
        "\"INSERT ",
        "\"DELETE ",
        "\"UPDATE ",
        "\"WITH ",
    ]
    .iter()
    .map(|start| source.matches(start).count())
    .sum::<usize>();
    assert_eq!(
        statements.len(),
        in_source,
        "statements exercised vs. SQL literals in the store:\n{:#?}",
        statements.iter().map(|l| &l.ran.sql).collect::<Vec<_>>()
    );

    let mut failures = Vec::new();
    let mut report = Vec::new();
    for Labelled {
        call,
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
        report.push(format!("{call}: {}\n    {}", ran.sql, plan.join("\n    ")));

        // keys_due and terminations_owed look across keys, bounded by their LIMIT.
        let whole_database = *call == "keys due" || *call == "terminations owed";
        for line in &plan {
            let names_table = [
                "coordinator_waiters",
                "coordinator_superseded",
                "coordinator_keys",
                "coordinator_holders",
                "coordinator_tenants",
            ]
            .iter()
            .any(|t| line.contains(&format!(" {t} ")) || line.ends_with(&format!(" {t}")));
            if !names_table {
                if line.contains("TEMP B-TREE") && !proportional {
                    failures.push(format!("{call}: {:?} sorts: {line}", ran.sql));
                }
                continue;
            }
            if whole_database && line.starts_with("SCAN ") {
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
                    "{call}: {:?} does not search by key: {line}",
                    ran.sql
                ));
            }
        }
        assert!(
            whole_database
                || ran.sql.starts_with("INSERT ")
                || plan.iter().any(|l| l.starts_with("SEARCH ")),
            "{call}: no plan for {:?}: {plan:?}",
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
        write(
            &Counted::new(&db),
            key,
            &[Write::SupersedeAllExcept(id("nobody"), n as u32)],
        );
        db.conn.execute_batch("COMMIT").expect("commit");
        assert_eq!(read(&db, key).2 as usize, n);
        assert_eq!(read(&db, key).0.waiters, 0);
    }
    // Forgetting and counting, as a superseding enqueue and `inspect` do.
    let cost = |key: &str| {
        measure(&db, |sql| {
            write(
                sql,
                key,
                &[Write::ForgetSupersededBeyond(SUPERSEDED_REMEMBERED_MAX)],
            );
            inspect(sql, key).2
        })
    };
    let ((few_count, few), (many_count, many)) = (cost("few"), cost("many"));
    assert_eq!((few_count, many_count), (10, 10_000));
    // The forget and the count (the last statement); the listing of the
    // (now empty) queue between them is flat by its own test.
    for (f, m) in [
        (few.ran.first(), many.ran.first()),
        (few.ran.last(), many.ran.last()),
    ] {
        let (f, m) = (f.expect("ran"), m.expect("ran"));
        assert_eq!(f.vm_steps, m.vm_steps, "VM steps of {:?}", f.sql);
    }
    // Forgetting keeps the newest, and the count follows.
    write(
        &Counted::new(&db),
        "many",
        &[Write::ForgetSupersededBeyond(3)],
    );
    assert_eq!(read(&db, "many").2, 3);
    assert_eq!(member(&db, "many", &id("w9999")), Member::Superseded);
    assert_eq!(member(&db, "many", &id("w9996")), Member::Stranger);
}

/// Fences (contract §1b) live in the database, not only in the summary: a
/// decision on a summary read afresh (as after a restart) continues from
/// the highest fence granted, also once every holder row that carried one
/// is gone.
#[test]
fn fences_continue_from_the_database_after_every_holder_left() {
    let db = Db::migrated();
    let granted =
        |who: &str, now: u64| match step(&db, "k", now, Input::Acquire(acquiring(&id(who))))
            .expect("acquire")
            .reply
        {
            Reply::Acquire(AcquireReply::Granted { fence }) => fence,
            other => panic!("{who}: {other:?}"),
        };
    assert_eq!(granted("a", 1), 1);
    assert_eq!(
        granted("a", 2),
        1,
        "a holder's repeated acquire keeps its fence"
    );
    step(&db, "k", 3, Input::Release(id("a"))).expect("release");
    assert_eq!(granted("b", 4), 2);
    step(&db, "k", 5, Input::Release(id("b"))).expect("release");
    assert_eq!(read(&db, "k").0.fence, 2);
    assert_eq!(read(&db, "other").0.fence, 0);
    assert_eq!(granted("a", 6), 3, "a new grant to an earlier holder");
}

/// A superseding enqueue leaves each waiter it drops owed its termination,
/// with the binding it is reached through, in its own commit; the mark
/// stays until `terminated` clears it, and a second supersede owes only
/// its own. What the holder-check alarm works through
/// (`shell::coordinator_terminations`).
#[test]
fn a_supersede_owes_each_dropped_waiter_its_termination_until_it_is_done() {
    let db = Db::migrated();
    let key = "owed";
    let mut other = plain("b", false, None);
    other.options.workflow = Some(workflow("WF_B"));
    for request in [plain("holder", false, None), plain("a", false, None), other] {
        step(&db, key, 1, Input::Enqueue(request)).expect("enqueued");
    }
    step(&db, key, 2, Input::Acquire(acquiring(&id("holder")))).expect("acquired");
    let owed = |db: &Db| terminations_owed(&Counted::new(db), 100);
    assert_eq!(owed(&db), []);

    let t = step(&db, key, 3, Input::Enqueue(plain("c", true, None))).expect("superseded");
    let terminated_ids = (t.effects.iter())
        .filter_map(|e| match e {
            Effect::Terminate(t) => Some(t.id.clone()),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(terminated_ids, [id("a"), id("b")]);
    let by = |who: &str, workflow: Option<&str>| Owed {
        key: key.to_owned(),
        id: id(who),
        workflow: workflow.map(str::to_owned),
    };
    assert_eq!(owed(&db), [by("a", None), by("b", Some("WF_B"))]);

    terminated(&Counted::new(&db), key, &id("a"));
    assert_eq!(owed(&db), [by("b", Some("WF_B"))]);
    step(&db, key, 4, Input::Enqueue(plain("d", true, None))).expect("superseded again");
    assert_eq!(owed(&db), [by("b", Some("WF_B")), by("c", None)]);
    assert_rows(&db, key);
}

/// A database as the ladder left it at `version`, as an object of that
/// release would have it.
fn db_at_version(version: usize) -> Db {
    let db = Db::new();
    db.run(schema::CREATE_VERSION_TABLE, &[]);
    for statement in schema::MIGRATIONS[..version].iter().copied().flatten() {
        db.run(statement, &[]);
    }
    db.run(schema::WRITE_VERSION, &[SqlValue::Integer(version as i64)]);
    db
}

/// Schema v12 moves the key's fence and grant count from a hold's start
/// to its end (and rebuilds the holders' table): a key upgraded with
/// holders still holding reads the same fence, counts and holders, keeps
/// counting each grant once, and goes on from its fence.
#[test]
fn a_v11_key_with_holders_upgrades_with_its_fence_and_counts() {
    let db = db_at_version(11);
    // Three grants on `k` under v11 (its triggers raised the fence and
    // counted each at its start); the first ended, two still hold.
    for (who, fence) in [("a", 1), ("b", 2), ("c", 3)] {
        db.run(
            "INSERT INTO coordinator_holders (key, seq, id, since_ms, state, fence) \
             VALUES ('k', ?1, ?2, 100, 'holding', ?1)",
            &[SqlValue::Integer(fence), SqlValue::Text(who.into())],
        );
    }
    db.run(
        "UPDATE coordinator_holders SET ended_ms = 150 WHERE key = 'k' AND id = 'a'",
        &[],
    );
    assert_eq!(
        db.rows("SELECT fence, grants, hold_times_ms FROM coordinator_keys WHERE key = 'k'"),
        [[
            SqlValue::Integer(3),
            SqlValue::Integer(3),
            SqlValue::Text("[50]".into())
        ]]
    );

    migrate(&db);
    assert_eq!(stored_version(&db), schema::CURRENT_VERSION);
    let (summary, _, _) = read(&db, "k");
    assert_eq!(summary.fence, 3);
    let holders: Vec<(String, u64)> = summary
        .holders
        .iter()
        .map(|h| (h.id.to_string(), h.fence))
        .collect();
    assert_eq!(
        holders,
        [("b".into(), 2), ("c".into(), 3)],
        "in grant order"
    );
    assert_eq!(history_counts(&db, "k").grants, 3);

    // Each grant is counted once: ending the two carried-over holds and
    // granting a new one counts one more grant, with the next fence.
    step(&db, "k", 200, Input::Release(id("b"))).expect("release");
    step(&db, "k", 201, Input::Release(id("c"))).expect("release");
    let (summary, _, _) = read(&db, "k");
    assert!(summary.holders.is_empty());
    assert_eq!(summary.fence, 3);
    assert_eq!(history_counts(&db, "k").grants, 3);
    match step(&db, "k", 202, Input::Acquire(acquiring(&id("d"))))
        .expect("acquire")
        .reply
    {
        Reply::Acquire(AcquireReply::Granted { fence }) => assert_eq!(fence, 4),
        other => panic!("{other:?}"),
    }
    assert_eq!(history_counts(&db, "k").grants, 4);
    // The hold times went on from the v11 row's: a's 50 ms, then b's and c's.
    assert_eq!(read(&db, "k").0.hold_times_ms, [50, 100, 101]);
}

fn history_counts(db: &Db, key: &str) -> coordinator::history::Counts {
    coordinator::history::inspect(&Counted::new(db), key).1
}

/// Schema v13 rebuilds the waiters and tenants on their primary keys and
/// keys a tenant's turn on its earliest waiter: a v12 key with tenants
/// waiting, served and idle reads the same queue, in the same order, with
/// the same positions, and goes on counting.
#[test]
fn a_v12_queue_of_tenants_upgrades_in_the_same_order() {
    let db = db_at_version(12);
    let join = |seq: i64, who: &str, priority: i64, tenant: &str| {
        db.run(
            "INSERT INTO coordinator_waiters (key, seq, id, since_ms, priority, tenant) \
             VALUES ('k', ?1, ?2, ?1, ?3, ?4)",
            &[
                SqlValue::Integer(seq),
                SqlValue::Text(who.into()),
                SqlValue::Integer(priority),
                SqlValue::Text(tenant.into()),
            ],
        );
    };
    for (seq, who, priority, tenant) in [
        (1, "a1", 0, "a"),
        (2, "a2", 0, "a"),
        (3, "b1", 0, "b"),
        (4, "c1", 1, "c"),
        (5, "idle1", 0, "idle"),
    ] {
        join(seq, who, priority, tenant);
    }
    // `a` was served by fence 7, `idle` too, and its one waiter left.
    for tenant in ["a", "idle"] {
        db.run(
            "UPDATE coordinator_tenants SET served = 7 WHERE key = 'k' AND tenant = ?1",
            &[SqlValue::Text(tenant.into())],
        );
    }
    db.run(
        "DELETE FROM coordinator_waiters WHERE key = 'k' AND id = 'idle1'",
        &[],
    );
    let queue = |db: &Db| {
        let (summary, waiting, _) = read(db, "k");
        let order: Vec<String> = waiting.iter().map(|w| w.id.to_string()).collect();
        // Where a newcomer of each tenant and priority would stand.
        let positions: Vec<Option<u32>> = [(0, "a"), (0, "b"), (0, "idle"), (0, "new"), (1, "c")]
            .iter()
            .map(|(priority, tenant)| {
                let input = Input::Acquire(AcquireRequest {
                    id: id("newcomer"),
                    options: Options {
                        grant: true,
                        priority: *priority,
                        tenant: Some(Ident::parse("tenant", tenant).expect("tenant")),
                        ..Options::default()
                    },
                });
                load(&Counted::new(db), "k", Some(summary.clone()), &input).position
            })
            .collect();
        assert!(positions.iter().all(Option::is_some), "{positions:?}");
        (summary.waiters, order, positions)
    };
    // This release's reads name later steps' columns too (v14's
    // `max_waiting`, v17's `waited_ms`, v18's layout): lent to the v12 rows
    // for the read, then taken back, so the upgrade below starts from v12
    // as it was.
    let lent = [
        ("coordinator_keys", "max_waiting INTEGER"),
        (
            "coordinator_holders",
            "waited_ms INTEGER NOT NULL DEFAULT 0",
        ),
        ("coordinator_keys", "sole_priority INTEGER"),
        ("coordinator_keys", "sole_tenant TEXT"),
        ("coordinator_waiters", "sole INTEGER NOT NULL DEFAULT 0"),
    ];
    for (table, column) in lent {
        db.run(&format!("ALTER TABLE {table} ADD COLUMN {column}"), &[]);
    }
    let before = queue(&db);
    for (table, column) in lent {
        let name = column.split(' ').next().expect("a column name");
        db.run(&format!("ALTER TABLE {table} DROP COLUMN {name}"), &[]);
    }
    assert_eq!(before.1, ["c1", "b1", "a1", "a2"]);

    migrate(&db);
    assert_eq!(stored_version(&db), schema::CURRENT_VERSION);
    assert_eq!(queue(&db), before);
    assert_eq!(
        db.rows(
            "SELECT tenant, waiters, first_seq, served FROM coordinator_tenants \
             WHERE key = 'k' ORDER BY tenant"
        ),
        [
            ["a", "2", "1", "7"],
            ["b", "1", "3", "NULL"],
            ["c", "1", "4", "NULL"],
            ["idle", "0", "NULL", "7"],
        ]
        .map(|row| row.map(|v| match v {
            "NULL" => SqlValue::Null,
            v => v
                .parse()
                .map_or_else(|_| SqlValue::Text(v.into()), SqlValue::Integer),
        })),
        "an idle tenant has no earliest waiter"
    );
    // The triggers go on: the idle tenant's next waiter is its earliest,
    // and the key counts it (a shared waiter joins through the view, v18).
    db.run(
        "INSERT INTO coordinator_waiters_shared (key, seq, id, since_ms, priority, tenant) \
         VALUES ('k', 6, 'idle2', 6, 0, 'idle')",
        &[],
    );
    assert_eq!(
        db.rows(
            "SELECT waiters, first_seq FROM coordinator_tenants \
             WHERE key = 'k' AND tenant = 'idle'"
        ),
        [[SqlValue::Integer(1), SqlValue::Integer(6)]]
    );
    assert_eq!(read(&db, "k").0.waiters, 5);
}

/// The schema a fresh object is created with in one step (`schema::LADDER`'s
/// `fresh`, generated into `src/coordinator/store/schema_fresh.rs`) is what
/// climbing every step of the ladder builds: the same statements, in an
/// order that creates each table before its indexes and triggers. With
/// `BATON_BLESS=1` the file is rewritten from the ladder.
#[test]
fn the_fresh_schema_is_what_the_ladder_builds() {
    let climbed = Db::new();
    climbed.run(schema::CREATE_VERSION_TABLE, &[]);
    for statement in schema::MIGRATIONS.iter().copied().flatten() {
        climbed.run(statement, &[]);
    }
    let dump: Vec<String> = climbed
        .rows(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL \
             AND name NOT LIKE 'sqlite_%' AND name <> 'baton_schema' ORDER BY rowid",
        )
        .iter()
        .map(|row| text_of(&row[0]))
        .collect();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/coordinator/store/schema_fresh.rs"
    );
    if std::env::var_os("BATON_BLESS").is_some() {
        let statements: String = dump
            .iter()
            .map(|sql| {
                assert!(
                    !sql.contains("\"#"),
                    "a statement ends the raw string: {sql}"
                );
                format!("    r#\"{sql}\"#,\n")
            })
            .collect();
        std::fs::write(
            path,
            format!(
                "//! The Coordinator's schema as `super::schema::MIGRATIONS` leaves it, one\n\
                 //! statement per table, index and trigger, for a database that has none\n\
                 //! yet (`crate::sql::Ladder::fresh`). Generated from the ladder by\n\
                 //! `BATON_BLESS=1 cargo test --test coordinator_sql the_fresh_schema`;\n\
                 //! that test fails while this file and the ladder differ. Do not edit.\n\
                 \n\
                 pub const FRESH: &[&str] = &[\n{statements}];\n"
            ),
        )
        .expect("write the fresh schema");
        println!("wrote {path}: rerun without BATON_BLESS to check it");
        return;
    }
    assert_eq!(
        schema::LADDER.fresh,
        dump.as_slice(),
        "the fresh schema is stale: rerun with BATON_BLESS=1"
    );

    // A fresh database made with it is the climbed one, and at its version.
    let fresh = Db::migrated();
    assert_eq!(stored_version(&fresh), schema::CURRENT_VERSION);
    assert_eq!(schema_shape(&fresh), schema_shape(&climbed));
    let definitions = |db: &Db| {
        db.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
            .iter()
            .map(|row| row.iter().map(text_of).collect::<Vec<_>>().join(" | "))
            .collect::<Vec<_>>()
    };
    assert_eq!(definitions(&fresh), definitions(&climbed));
}

/// Schema v16: the recent holds' prune and the forgetting of idle tenants
/// run inside the statements that record a hold and serve a tenant, and
/// leave the rows the statements of their own left: the newest 50 holds of
/// the key (no other key's touched), and every tenant with no waiter
/// served more than 20,000 grants before the serve (by the insert of a
/// tenant whose row was gone, or the update of one that is there), never
/// a tenant that waits.
#[test]
fn recorded_holds_are_pruned_and_idle_tenants_forgotten_by_their_own_statements() {
    let db = Db::migrated();
    let hold = |fence: u64| {
        Write::History(HistoryWrite::Hold {
            id: id(&format!("h{fence}")),
            fence,
            from_ms: fence,
            to_ms: fence + 1,
            waited_ms: 0,
            outcome: Outcome::Released,
            cancelled: false,
        })
    };
    write(&Counted::new(&db), "other", &[hold(1)]);
    let writes: Vec<Write> = (1..=60).map(hold).collect();
    let (_, cost) = measure(&db, |sql| write(sql, "k", &writes));
    assert_eq!(cost.work, (0, 60), "one statement per recorded hold");
    // The first column of `select`'s rows on `key`, as text.
    let column = |select: &str, key: &str| -> Vec<String> {
        let rows = db.rows(&select.replace("?key", &format!("'{key}'")));
        rows.iter().map(|row| text_of(&row[0])).collect()
    };
    let fences = |key| {
        column(
            "SELECT fence FROM coordinator_recent WHERE key = ?key ORDER BY seq",
            key,
        )
    };
    let newest: Vec<String> = (11..=60).map(|f| f.to_string()).collect();
    assert_eq!(fences("k"), newest, "the newest 50 of the key");
    assert_eq!(fences("other"), ["1"], "another key's holds stay");

    let tenant = |t: &str| Some(Ident::parse("tenant", t).expect("a tenant"));
    let serve = |t: &str, fence: u64| Write::Serve {
        priority: 0,
        tenant: tenant(t),
        fence,
    };
    let waits = Write::PushWaiter(
        Waiter {
            tenant: tenant("waits"),
            ..waiter("w", 1)
        },
        Layout::Shared,
    );
    let steps = [
        serve("a", 1),
        serve("b", 5),
        serve("b", 8),
        waits,
        serve("waits", 1),
    ];
    write(&Counted::new(&db), "k", &steps);
    write(&Counted::new(&db), "other", &[serve("a", 1)]);
    let tenants = |key| {
        column(
            "SELECT tenant FROM coordinator_tenants WHERE key = ?key ORDER BY tenant",
            key,
        )
    };
    assert_eq!(tenants("k"), ["a", "b", "waits"]);
    // c's row is new: a (served at 1 < 20,002 - 20,000) is forgotten.
    let (_, cost) = measure(&db, |sql| write(sql, "k", &[serve("c", 20_002)]));
    assert_eq!(cost.work, (0, 1), "one statement per serve");
    assert_eq!(tenants("k"), ["b", "c", "waits"]);
    // c's row is updated: b (served at 8 < 9) is; the waiting tenant never.
    write(&Counted::new(&db), "k", &[serve("c", 20_009)]);
    assert_eq!(tenants("k"), ["c", "waits"]);
    assert_eq!(tenants("other"), ["a"], "another key's tenants stay");
}

/// §10a: each holder's last check and since when its checks fail read
/// back from the rows as the twin keeps them: failures in a row keep when
/// they began, an answer ends them, a holder that leaves takes its record
/// with it; and `inspect`'s state and waits come out of them.
#[test]
fn holder_checks_read_back_from_the_rows_as_the_twin_keeps_them() {
    use baton::coordinator::{apply, health_rows, KeyTwin};
    use baton::health::KeyState;
    let db = Db::migrated();
    let mut twin = KeyTwin::default();
    let both = |twin: &mut KeyTwin, now: u64, input: Input| {
        let t = step(&db, "k", now, input.clone()).expect("decided");
        let view = twin.load(&input);
        let mirrored = decide(&view, &settings(), now, input).expect("decided");
        assert_eq!(mirrored.writes, t.writes, "the twin decides as the rows");
        apply(twin, &t.writes);
        t
    };
    let limit_two = AcquireRequest {
        options: Options {
            limit: Some(2),
            ..Options::default()
        },
        ..acquiring(&id("a"))
    };
    both(&mut twin, 1, Input::Acquire(limit_two.clone()));
    both(
        &mut twin,
        2,
        Input::Acquire(AcquireRequest {
            id: id("b"),
            ..limit_two
        }),
    );
    both(&mut twin, 3, Input::Acquire(acquiring(&id("w"))));
    let holder = |name: &str| {
        read(&db, "k")
            .0
            .holders
            .into_iter()
            .find(|h| h.id == id(name))
            .unwrap()
    };
    let check = |name: &str, answer: Status| Input::TickChecked {
        holder: holder(name),
        answer,
    };
    let compare = |db: &Db, twin: &KeyTwin, now: u64| {
        let sql = Counted::new(db);
        let (summary, waiters, _) = inspect(&sql, "k");
        let seen = health_rows::inspect(&sql, "k", &summary, &waiters, &[], 100, now);
        let kept: Vec<_> = twin
            .checks()
            .iter()
            .map(|c| c.map(|(at_ms, answer, _)| (at_ms, answer)))
            .collect();
        let read: Vec<_> = seen
            .checked
            .iter()
            .map(|c| c.map(|c| (c.at_ms, c.answer)))
            .collect();
        assert_eq!(read, kept, "each holder's last check");
        assert_eq!(health_rows::failing_since(&sql, "k"), twin.failing_since());
        seen
    };
    both(&mut twin, 10, check("a", Status::Failed));
    both(&mut twin, 20, check("a", Status::Failed));
    both(&mut twin, 20, check("b", Status::Waiting));
    let seen = compare(&db, &twin, 115);
    assert_eq!(
        twin.failing_since(),
        Some(10),
        "failures in a row keep their start"
    );
    assert_eq!(
        seen.state,
        KeyState::Stalled,
        "failing for longer than the period"
    );
    assert_eq!(seen.waits.n, 1, "the one waiter");
    assert_eq!(
        compare(&db, &twin, 110).state,
        KeyState::Backlogged,
        "not longer yet"
    );
    both(&mut twin, 30, check("a", Status::Running));
    assert_eq!(
        compare(&db, &twin, 500).state,
        KeyState::Backlogged,
        "an answer ends it"
    );
    both(&mut twin, 40, check("a", Status::Failed));
    assert_eq!(twin.failing_since(), Some(40), "a new run of failures");
    both(&mut twin, 50, Input::Release(id("a")));
    compare(&db, &twin, 500);
    assert_eq!(
        twin.failing_since(),
        None,
        "the holder left with its record"
    );
}

/// Issue 38: a release that hands the key on to a waiter (registered with
/// `grant`, as withKey registers) runs one read and five writes before its
/// reply, with its key's summary kept in memory: the front, and the recent
/// hold, the ended row (whose trigger adds the key's counters, schema
/// v17), the waiter's row, the new holder's row (with its wait, v17) and
/// the tenant's serve.
#[test]
fn a_release_that_hands_the_key_on_runs_one_read_and_five_writes() {
    let db = Db::migrated();
    let granted = |who: &str| AcquireRequest {
        options: Options {
            grant: true,
            ..Options::default()
        },
        ..acquiring(&id(who))
    };
    step(&db, "k", 1, Input::Acquire(granted("a"))).expect("granted");
    step(&db, "k", 2, Input::Acquire(granted("b"))).expect("waits");
    let kept = Some(read(&db, "k").0);
    let (_, cost) = decided(&db, "k", kept, 10, Input::Release(id("a")));
    let holders = read(&db, "k").0.holders;
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0].id, id("b"), "handed on");
    assert_eq!(cost.work, (1, 5), "(reads, writes): {:#?}", cost.ran);
}

/// Schema v17: a holder's wait is its own row's, and a decision's tally
/// rides on its finished hold's stamp. A v16 key climbs with each kept
/// wait on its holder (and `coordinator_waited` gone); then on the
/// climbed and on a fresh database alike, each tally carried by a stamp
/// leaves the key row as the stamp and the tally's own statement (the one
/// it replaced, still run by a decision that finishes no hold) leave it.
#[test]
fn a_carried_tally_and_a_kept_wait_leave_the_rows_their_statements_left() {
    // A key with two holders, `b` kept as having waited 700 ms: climbed
    // from v16's rows, or written so on a fresh database; with a key row
    // (the ended row's trigger updates it) or none yet (it inserts one).
    let start = |climb: bool, key_row: bool| {
        if !climb {
            let db = Db::migrated();
            let holder = |who: &str, since_ms, fence, waited_ms| {
                Write::AddHolder(Holder {
                    fence,
                    waited_ms,
                    ..v1_holder(who, since_ms)
                })
            };
            let rows = [holder("a", 100, 1, 0), holder("b", 150, 2, 700)];
            write(&Counted::new(&db), "k", &rows);
            if key_row {
                write(&Counted::new(&db), "k", &[Write::SetLimit(2)]);
            }
            return db;
        }
        let db = db_at_version(16);
        db.run(
            "INSERT INTO coordinator_holders (key, seq, id, since_ms, state, fence) \
             VALUES ('k', 1, 'a', 100, 'holding', 1), ('k', 2, 'b', 150, 'holding', 2)",
            &[],
        );
        db.run(
            "INSERT INTO coordinator_waited (key, id, waited_ms) VALUES ('k', 'b', 700)",
            &[],
        );
        if key_row {
            db.run(
                "INSERT INTO coordinator_keys (key, holder_limit) VALUES ('k', 2)",
                &[],
            );
        }
        migrate(&db);
        db
    };
    let climbed = start(true, true);
    let waits: Vec<(InstanceId, u64)> = (read(&climbed, "k").0.holders.iter())
        .map(|h| (h.id.clone(), h.waited_ms))
        .collect();
    assert_eq!(waits, [(id("a"), 0), (id("b"), 700)], "each wait kept");
    assert!(climbed
        .rows("SELECT name FROM sqlite_master WHERE name LIKE 'coordinator_waited%'")
        .is_empty());
    assert_eq!(contents(&climbed), contents(&start(false, true)));

    let tallies = [
        Tally {
            hand_offs: 1,
            report_owed: true,
            ..Tally::default()
        },
        Tally {
            dead_holders: 1,
            dead_at_ms: Some(400),
            ..Tally::default()
        },
        Tally {
            coalesced: 1,
            cancelled: 2,
            ..Tally::default()
        },
    ];
    let end = |tally| Some(HoldEnd { at_ms: 500, tally });
    let starts = [(true, true), (true, false), (false, true), (false, false)];
    for (tally, (climb, key_row)) in tallies.iter().flat_map(|t| starts.map(|s| (*t, s))) {
        let (carried, apart) = (start(climb, key_row), start(climb, key_row));
        let (_, cost) = measure(&carried, |sql| {
            write(sql, "k", &[Write::RemoveHolder(id("b"), end(tally))])
        });
        assert_eq!(cost.work, (0, 1), "one statement");
        let separate = [
            Write::RemoveHolder(id("b"), end(Tally::default())),
            Write::History(HistoryWrite::Tally(tally)),
        ];
        write(&Counted::new(&apart), "k", &separate);
        let case = format!("{tally:?}, climbed {climb}, key row {key_row}");
        assert_eq!(contents(&carried), contents(&apart), "{case}");
        let counts = history_counts(&carried, "k");
        assert_eq!(counts.hand_offs, u64::from(tally.hand_offs));
        assert_eq!(counts.cancelled, u64::from(tally.cancelled));
    }
}
