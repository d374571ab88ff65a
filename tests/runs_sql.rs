//! The Runs SQL store, run natively over `rusqlite`.
//!
//! - `SqlRunStore` is measured against `MemoryRunStore`: seeded random
//!   decisions on both, every observation compared after every step, two
//!   keys sharing one database.
//! - Cost, without timing anything: `append` and `events` run the same
//!   statements, and SQLite's own VM-step counter stays flat, whether the
//!   log keeps 10 events or 500 (with thousands appended before); every
//!   statement's query plan searches an index instead of scanning.
//! - `migrate` is idempotent.
//!
//! A failing seeded run prints its seed; `BATON_SEED=<n>` reruns just that one.

mod common;

use baton::ident::{Ident, InstanceId};
use baton::runs::{
    alarm_at, append, assert_invariants, claim, claim_after_check, complete, expire, keys_due,
    migrate, next_deletion_ms, read_events, run_view, AppendRequest, Claim, ClaimRequest,
    ClaimStep, ClaimantStatus, CompleteRequest, EventType, JsonText, MemoryRunStore, Outcome,
    RunStore, RunsConfig, SqlRunStore,
};
use baton::sql::{SqlExec, SqlValue};
use common::Rng;
use rusqlite::types::{Null, ValueRef};
use rusqlite::{Connection, StatementStatus};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// One statement as the store ran it, with SQLite's own work counter.
#[derive(Debug, Clone)]
struct Ran {
    sql: String,
    params: Vec<SqlValue>,
    /// Virtual-machine instructions executed: SQLite's measure of work,
    /// independent of the machine and of timing.
    vm_steps: i32,
}

struct Db {
    conn: Connection,
    recording: Cell<bool>,
    log: RefCell<Vec<Ran>>,
}

impl Db {
    fn migrated() -> Db {
        let db = Db {
            conn: Connection::open_in_memory().expect("open in-memory db"),
            recording: Cell::new(false),
            log: RefCell::new(Vec::new()),
        };
        migrate(&db);
        db
    }

    fn record<R>(&self, f: impl FnOnce() -> R) -> (R, Vec<Ran>) {
        self.log.borrow_mut().clear();
        self.recording.set(true);
        let result = f();
        self.recording.set(false);
        (result, self.log.take())
    }
}

fn bind(stmt: &mut rusqlite::Statement<'_>, params: &[SqlValue]) {
    for (i, param) in params.iter().enumerate() {
        match param {
            SqlValue::Null => stmt.raw_bind_parameter(i + 1, Null),
            SqlValue::Integer(n) => stmt.raw_bind_parameter(i + 1, n),
            SqlValue::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str()),
        }
        .expect("bind");
    }
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .unwrap_or_else(|e| panic!("preparing {sql:?}: {e}"));
        assert_eq!(
            stmt.parameter_count(),
            params.len(),
            "parameters of {sql:?}"
        );
        bind(&mut stmt, params);
        let columns = stmt.column_count();
        let mut out = Vec::new();
        {
            let mut rows = stmt.raw_query();
            while let Some(row) = rows.next().unwrap_or_else(|e| panic!("{sql:?}: {e}")) {
                out.push(
                    (0..columns)
                        .map(|i| match row.get_ref(i).expect("column") {
                            ValueRef::Null => SqlValue::Null,
                            ValueRef::Integer(n) => SqlValue::Integer(n),
                            ValueRef::Text(b) => {
                                SqlValue::Text(String::from_utf8(b.to_vec()).expect("UTF-8"))
                            }
                            other => panic!("column type the store never writes: {other:?}"),
                        })
                        .collect(),
                );
            }
        }
        let vm_steps = stmt.reset_status(StatementStatus::VmStep);
        if self.recording.get() {
            self.log.borrow_mut().push(Ran {
                sql: sql.to_owned(),
                params: params.to_vec(),
                vm_steps,
            });
        }
        out
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

const CONFIG: RunsConfig = RunsConfig {
    retention_ms: 1_000,
    claim_grace_ms: 100,
};

fn seeds(count: u64, run: impl Fn(u64)) {
    let only = std::env::var("BATON_SEED")
        .ok()
        .map(|s| s.parse().expect("BATON_SEED"));
    for seed in only.map_or(0..count, |s| s..s + 1) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(seed))) {
            eprintln!("failed with BATON_SEED={seed}");
            resume_unwind(panic);
        }
    }
}

/// Everything a caller could learn about a key, for comparing the stores.
fn observe(store: &impl RunStore) -> String {
    format!(
        "{:?} | {:?} | {} | {:?} | {:?} | {:?}",
        store.run(),
        store.claimant(),
        store.latest_seq(),
        store.first_kept_seq(),
        read_events(store, 0, 500),
        alarm_at(store),
    )
}

fn random_status(rng: &mut Rng) -> ClaimantStatus {
    *rng.pick(&[
        ClaimantStatus::Alive,
        ClaimantStatus::Ended,
        ClaimantStatus::NotFound,
        ClaimantStatus::Unknown,
    ])
}

/// One random decision, applied alike to any store.
fn decide(store: &mut impl RunStore, rng: &mut Rng, now: u64, op: u64, who: &InstanceId) -> String {
    match op {
        0 => {
            let request = ClaimRequest {
                id: who.clone(),
                workflow: rng.percent(50).then(|| "OTHER".to_string()),
            };
            match claim(store, now, &request) {
                ClaimStep::Done(reply) => format!("{reply:?}"),
                ClaimStep::CheckClaimant(checked) => {
                    let status = random_status(rng);
                    let decided =
                        claim_after_check(store, now, &CONFIG, &request, &checked, status);
                    format!("{decided:?}")
                }
            }
        }
        1 => {
            let outcome = if rng.percent(50) {
                Outcome::Complete {
                    result: rng
                        .percent(70)
                        .then(|| JsonText::result(format!("{{\"n\":{now}}}")).unwrap()),
                }
            } else {
                Outcome::Failed {
                    error: format!("failed at {now}"),
                }
            };
            let request = CompleteRequest {
                id: who.clone(),
                outcome,
            };
            format!("{:?}", complete(store, now, &CONFIG, &request))
        }
        2 | 3 => {
            let request = AppendRequest {
                id: who.clone(),
                kind: EventType::parse("type", "progress").unwrap(),
                data: rng
                    .percent(60)
                    .then(|| JsonText::event_data(format!("[{now}]")).unwrap()),
            };
            format!("{:?}", append(store, now, &request))
        }
        4 => format!("{:?}", expire(store, now)),
        _ => format!("{:?}", run_view(store)),
    }
}

fn differential(seed: u64) {
    let mut rng = Rng(seed);
    let db = Db::migrated();
    let keys = ["k1", "k2"];
    let mut memory = [MemoryRunStore::default(), MemoryRunStore::default()];
    let who = [id("a"), id("b"), id("c")];
    let mut now = 1_000;
    for _ in 0..400 {
        now += rng.below(200);
        let k = rng.below(2) as usize;
        let op = rng.below(6);
        let caller = rng.pick(&who).clone();
        // The same random choices for both stores: fork the generator.
        let fork = rng.next();
        let mut sql = SqlRunStore::new(&db, keys[k]);
        let got_sql = decide(&mut sql, &mut Rng(fork), now, op, &caller);
        let got_mem = decide(&mut memory[k], &mut Rng(fork), now, op, &caller);
        assert_eq!(got_sql, got_mem, "reply of op {op} on {}", keys[k]);
        for (k, key) in keys.iter().enumerate() {
            let sql = SqlRunStore::new(&db, key);
            assert_eq!(observe(&sql), observe(&memory[k]), "{key} after op {op}");
            assert_invariants(&sql);
        }
        let due: Vec<String> = keys_due(&db, now, 10);
        let expected: Vec<&str> = keys
            .iter()
            .enumerate()
            .filter(|(k, _)| alarm_at(&memory[*k]).is_some_and(|at| at <= now))
            .map(|(_, key)| *key)
            .collect();
        let mut due_sorted = due.clone();
        due_sorted.sort();
        assert_eq!(due_sorted, expected, "keys due at {now}");
        assert_eq!(
            next_deletion_ms(&db),
            memory.iter().filter_map(alarm_at).min(),
            "next deletion"
        );
    }
}

#[test]
fn sql_store_matches_memory_store() {
    seeds(100, differential);
}

#[test]
fn migrate_is_idempotent() {
    let db = Db::migrated();
    migrate(&db);
    let mut store = SqlRunStore::new(&db, "k");
    store.set_claim(&Claim {
        id: id("a"),
        since_ms: 5,
        workflow: None,
    });
    migrate(&db);
    assert_eq!(SqlRunStore::new(&db, "k").claimant(), Some(id("a")));
}

// ---------------------------------------------------------------------------
// Cost: the same work with 10 events kept as with 500.

/// A claimed key whose log has had `appended` events, of which the newest
/// (at most 500) are kept.
fn log_of(appended: u64) -> Db {
    let db = Db::migrated();
    db.conn.execute_batch("BEGIN").unwrap();
    let mut store = SqlRunStore::new(&db, "k");
    store.set_claim(&Claim {
        id: id("a"),
        since_ms: 1,
        workflow: None,
    });
    for i in 0..appended {
        append(
            &mut store,
            10 + i,
            &AppendRequest {
                id: id("a"),
                kind: EventType::parse("type", "progress").unwrap(),
                data: Some(JsonText::event_data(format!("{{\"i\":{i}}}")).unwrap()),
            },
        )
        .unwrap();
    }
    db.conn.execute_batch("COMMIT").unwrap();
    db
}

struct Cost {
    statements: (u32, u32),
    vm_steps: i32,
}

fn cost_of(db: &Db, f: impl FnOnce(&mut SqlRunStore<'_, Db>)) -> Cost {
    let mut store = SqlRunStore::new(db, "k");
    let ((), ran) = db.record(|| f(&mut store));
    Cost {
        statements: store.work(),
        vm_steps: ran.iter().map(|r| r.vm_steps).sum(),
    }
}

fn append_one(store: &mut SqlRunStore<'_, Db>) {
    append(
        store,
        1_000_000,
        &AppendRequest {
            id: id("a"),
            kind: EventType::parse("type", "progress").unwrap(),
            data: Some(JsonText::event_data("{\"i\":-1}".into()).unwrap()),
        },
    )
    .unwrap();
}

#[test]
fn append_and_events_cost_the_same_whatever_the_log_holds() {
    // 10 kept; 500 kept after 500 appends; 500 kept after 5,000 appends.
    let logs = [log_of(10), log_of(500), log_of(5_000)];
    let appends: Vec<Cost> = logs.iter().map(|db| cost_of(db, append_one)).collect();
    // Reading the newest 10 events, and the next ones after a cursor
    // (nothing new): what a follower does.
    let reads: Vec<Cost> = logs
        .iter()
        .map(|db| {
            cost_of(db, |store| {
                let latest = store.latest_seq();
                let reply = read_events(store, latest - 10, 10);
                assert_eq!(reply.events.len(), 10);
                read_events(store, latest, 100);
            })
        })
        .collect();
    for (name, costs) in [("append", &appends), ("events", &reads)] {
        let base = &costs[0];
        for cost in &costs[1..] {
            // A full log also deletes the one event that leaves the window.
            let pruned = u32::from(name == "append");
            assert_eq!(
                cost.statements,
                (base.statements.0, base.statements.1 + pruned),
                "{name}: statements"
            );
            let ratio = f64::from(cost.vm_steps) / f64::from(base.vm_steps);
            assert!(
                ratio <= 1.5,
                "{name}: {} VM steps vs {} with 10 kept",
                cost.vm_steps,
                base.vm_steps
            );
        }
        println!(
            "{name}: VM steps {:?}",
            costs.iter().map(|c| c.vm_steps).collect::<Vec<_>>()
        );
    }
    // The log keeps exactly the newest 500.
    let store = SqlRunStore::new(&logs[2], "k");
    assert_eq!(store.latest_seq(), 5_001);
    assert_eq!(store.first_kept_seq(), Some(4_502));
}

/// Every statement in sql_store.rs, run once, searches an index.
#[test]
fn every_statement_searches_an_index() {
    let db = log_of(600);
    let (_, mut ran) = db.record(|| {
        let mut store = SqlRunStore::new(&db, "k");
        store.run();
        store.claimant();
        store.latest_seq();
        store.first_kept_seq();
        store.events_after(3, 10);
        append_one(&mut store);
        complete(
            &mut store,
            2_000_000,
            &CONFIG,
            &CompleteRequest {
                id: id("a"),
                outcome: Outcome::Complete { result: None },
            },
        );
        keys_due(&db, 3_000_000, 5);
        next_deletion_ms(&db);
        store.delete_run();
        // A first claim inserts the row.
        claim(
            &mut store,
            4_000_000,
            &ClaimRequest {
                id: id("b"),
                workflow: None,
            },
        );
    });
    ran.dedup_by(|a, b| a.sql == b.sql);
    let source = include_str!("../src/runs/sql_store.rs");
    let in_source = ["\"SELECT ", "\"INSERT ", "\"DELETE ", "\"UPDATE "]
        .iter()
        .map(|start| source.matches(start).count())
        .sum::<usize>();
    let mut distinct: Vec<&str> = ran.iter().map(|r| r.sql.as_str()).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), in_source, "statements run: {distinct:#?}");
    let mut failures = Vec::new();
    for r in &ran {
        let mut stmt = db
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", r.sql))
            .unwrap();
        bind(&mut stmt, &r.params);
        let mut rows = stmt.raw_query();
        let mut plan = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            plan.push(row.get::<_, String>(3).unwrap());
        }
        for line in &plan {
            if line.starts_with("SCAN ") || line.contains("TEMP B-TREE") {
                failures.push(format!("{}: {line}", r.sql));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn keys_are_kept_apart() {
    let db = Db::migrated();
    let mut a = SqlRunStore::new(&db, "a");
    let key = Ident::parse("key", "a").unwrap();
    assert!(matches!(
        claim(
            &mut a,
            1,
            &ClaimRequest {
                id: id("x"),
                workflow: None
            }
        ),
        ClaimStep::Done(_)
    ));
    let b = SqlRunStore::new(&db, "b");
    assert_eq!(b.claimant(), None, "{key:?}");
    assert_eq!(a.claimant(), Some(id("x")));
}
