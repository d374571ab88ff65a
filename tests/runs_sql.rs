//! The Runs SQL rows (`baton::runs::sql`), run natively over `rusqlite`.
//!
//! - `sql::load` + `sql::write` are measured against `MemoryRun::load` +
//!   `apply`: seeded random decisions on both, every observation compared
//!   after every step, two keys sharing one database; each transition's
//!   `state` is the view reloaded after its writes.
//! - Cost, without timing anything: `append` and `events` run the same
//!   statements, and SQLite's own VM-step counter stays flat, whether the
//!   log keeps 10 events or 500 (with thousands appended before); every
//!   statement's query plan searches an index instead of scanning.
//! - `migrate` is idempotent.
//!
//! A failing seeded run prints its seed; `BATON_SIM_SEED=<n>` reruns just that one.

mod common;

use baton::ident::{Ident, InstanceId};
use baton::runs::sql::{self, keys_due, migrate, next_deletion_ms};
use baton::runs::{
    alarm_at, apply, assert_invariants, decide, AppendRequest, ClaimRequest, CompleteRequest,
    EventLimit, EventType, EventsRequest, Input, JsonText, MemoryRun, Outcome, Reply, Transition,
    View, WaitMs, Write,
};
use baton::sql::{Counted, SqlExec, SqlValue};
use baton::workflow::Liveness;
use common::{sqlite, Rng};
use rusqlite::Connection;
use std::cell::{Cell, RefCell};

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

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let ran = sqlite::run(&self.conn, sql, params);
        if self.recording.get() {
            self.log.borrow_mut().push(Ran {
                sql: sql.to_owned(),
                params: params.to_vec(),
                vm_steps: ran.vm_steps,
            });
        }
        ran.rows
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

const GRACE_MS: u64 = 100;
const RETENTION_MS: u64 = 1_000;

fn seeds(count: u64, run: impl Fn(u64)) {
    for seed in common::seeds(0..count) {
        common::replay_on_failure("runs_sql", seed, || run(seed));
    }
}

/// One decision on `key`'s rows: load, decide, write; and the statements
/// it ran (reads, writes).
fn step_sql(db: &Db, key: &str, now: u64, input: Input) -> (String, (u32, u32)) {
    let counted = Counted::new(db);
    assert_invariants(&sql::load(&Counted::new(db), key, &input));
    let reload = input.clone();
    let decided = decide(&sql::Rows { sql: &counted, key }, now, input);
    if let Ok(transition) = &decided {
        sql::write(&counted, key, &transition.writes);
        assert_invariants(&transition.state);
        let work = counted.work();
        assert_eq!(
            sql::load(&Counted::new(db), key, &reload),
            transition.state,
            "the state a transition says it leaves"
        );
        return (format!("{decided:?}"), work);
    }
    (format!("{decided:?}"), counted.work())
}

fn step_memory(run: &mut MemoryRun, now: u64, input: Input) -> String {
    let reload = input.clone();
    let decided = decide(&*run, now, input);
    if let Ok(transition) = &decided {
        apply(run, &transition.writes);
        assert_eq!(run.load(&reload), transition.state);
    }
    format!("{decided:?}")
}

/// Everything a caller could learn about a key, for comparing the two.
fn observe_sql(db: &Db, key: &str) -> String {
    let c = Counted::new(db);
    let run = sql::record(&c, key);
    format!(
        "{run:?} | {:?} | {:?}",
        sql::read_events(&c, key, 0, 500),
        alarm_at(&run)
    )
}

fn observe_memory(run: &MemoryRun) -> String {
    format!(
        "{:?} | {:?} | {:?}",
        run.run(),
        run.read_events(0, 500),
        alarm_at(&run.run())
    )
}

fn random_liveness(rng: &mut Rng) -> Liveness {
    *rng.pick(&[
        Liveness::Alive,
        Liveness::Dead,
        Liveness::NotFound,
        Liveness::Unknown,
    ])
}

/// One random input; `None` if the op needs a pending claim there is none of.
fn random_input(rng: &mut Rng, now: u64, op: u64, who: &InstanceId) -> Input {
    match op {
        0 => Input::Claim {
            request: ClaimRequest {
                id: who.clone(),
                workflow: rng.percent(50).then(|| "OTHER".to_string()),
            },
            grace_ms: GRACE_MS,
            workflow: "WORKFLOW".into(),
        },
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
            Input::Complete {
                request: CompleteRequest {
                    id: who.clone(),
                    outcome,
                },
                retention_ms: RETENTION_MS,
            }
        }
        2 | 3 => Input::Append(AppendRequest {
            id: who.clone(),
            kind: EventType::parse("type", "progress").unwrap(),
            data: rng
                .percent(60)
                .then(|| JsonText::event_data(format!("[{now}]")).unwrap()),
        }),
        4 => Input::Tick,
        5 => Input::Await {
            timeout: WaitMs::new(rng.below(2) as f64).unwrap(),
            open_waits: 0,
        },
        _ => Input::Events {
            request: EventsRequest {
                after: baton::runs::After::new(rng.below(8) as f64).unwrap(),
                timeout: WaitMs::ZERO,
                limit: EventLimit::new(rng.range(1, 5) as f64).unwrap(),
            },
            open_waits: 0,
        },
    }
}

fn differential(seed: u64) {
    let mut rng = Rng(seed);
    let db = Db::migrated();
    let keys = ["k1", "k2"];
    let mut memory = [MemoryRun::default(), MemoryRun::default()];
    let who = [id("a"), id("b"), id("c")];
    let mut now = 1_000;
    for _ in 0..400 {
        now += rng.below(200);
        let k = rng.below(2) as usize;
        let op = rng.below(7);
        let caller = rng.pick(&who).clone();
        let input = random_input(&mut rng, now, op, &caller);
        let (got_sql, _) = step_sql(&db, keys[k], now, input.clone());
        let got_mem = step_memory(&mut memory[k], now, input.clone());
        assert_eq!(got_sql, got_mem, "reply of op {op} on {}", keys[k]);
        // A claim that must check its claimant: the same check's result on both.
        if let Ok(Transition {
            reply: Reply::Checking(pending),
            ..
        }) = decide(&memory[k], now, input)
        {
            let checked = Input::Checked {
                pending,
                liveness: random_liveness(&mut rng),
                through: None,
            };
            now += rng.below(2 * GRACE_MS);
            let (got_sql, _) = step_sql(&db, keys[k], now, checked.clone());
            assert_eq!(got_sql, step_memory(&mut memory[k], now, checked));
        }
        for (k, key) in keys.iter().enumerate() {
            assert_eq!(
                observe_sql(&db, key),
                observe_memory(&memory[k]),
                "{key} after op {op}"
            );
        }
        let due: Vec<String> = keys_due(&db, now, 10);
        let expected: Vec<&str> = keys
            .iter()
            .enumerate()
            .filter(|(k, _)| alarm_at(&memory[*k].run()).is_some_and(|at| at <= now))
            .map(|(_, key)| *key)
            .collect();
        let mut due_sorted = due.clone();
        due_sorted.sort();
        assert_eq!(due_sorted, expected, "keys due at {now}");
        assert_eq!(
            next_deletion_ms(&db),
            memory.iter().filter_map(|m| alarm_at(&m.run())).min(),
            "next deletion"
        );
    }
}

#[test]
fn sql_rows_match_memory() {
    seeds(100, differential);
}

fn claim_input(who: &str) -> Input {
    Input::Claim {
        request: ClaimRequest {
            id: id(who),
            workflow: None,
        },
        grace_ms: GRACE_MS,
        workflow: "WORKFLOW".into(),
    }
}

#[test]
fn migrate_is_idempotent() {
    let db = Db::migrated();
    migrate(&db);
    step_sql(&db, "k", 5, claim_input("a"));
    migrate(&db);
    let run = sql::record(&Counted::new(&db), "k");
    assert_eq!(run.claim().map(|c| c.id.clone()), Some(id("a")));
}

// ---------------------------------------------------------------------------
// Cost: the same work with 10 events kept as with 500.

fn append_input(i: i64) -> Input {
    Input::Append(AppendRequest {
        id: id("a"),
        kind: EventType::parse("type", "progress").unwrap(),
        data: Some(JsonText::event_data(format!("{{\"i\":{i}}}")).unwrap()),
    })
}

/// A claimed key whose log has had `appended` events, of which the newest
/// (at most 500) are kept.
fn log_of(appended: u64) -> Db {
    let db = Db::migrated();
    db.conn.execute_batch("BEGIN").unwrap();
    step_sql(&db, "k", 1, claim_input("a"));
    for i in 0..appended {
        step_sql(&db, "k", 10 + i, append_input(i as i64));
    }
    db.conn.execute_batch("COMMIT").unwrap();
    db
}

struct Cost {
    statements: (u32, u32),
    vm_steps: i32,
}

/// The statements and VM steps of running `inputs` on key `k`, each as one
/// decision (load, decide, write).
fn cost_of(db: &Db, inputs: Vec<Input>) -> Cost {
    let (statements, ran) = db.record(|| {
        let mut total = (0, 0);
        for input in inputs {
            let counted = Counted::new(db);
            let rows = sql::Rows {
                sql: &counted,
                key: "k",
            };
            let transition = decide(&rows, 1_000_000, input).unwrap();
            sql::write(&counted, "k", &transition.writes);
            let (reads, writes) = counted.work();
            total = (total.0 + reads, total.1 + writes);
        }
        total
    });
    Cost {
        statements,
        vm_steps: ran.iter().map(|r| r.vm_steps).sum(),
    }
}

fn events_input(after: u64, limit: u32) -> Input {
    Input::Events {
        request: EventsRequest {
            after: baton::runs::After::new(after as f64).unwrap(),
            timeout: WaitMs::ZERO,
            limit: EventLimit::new(f64::from(limit)).unwrap(),
        },
        open_waits: 0,
    }
}

#[test]
fn append_and_events_cost_the_same_whatever_the_log_holds() {
    // 10 kept; 500 kept after 500 appends; 500 kept after 5,000 appends.
    // (each with one more appended by the append measured first)
    let logs = [(log_of(10), 11), (log_of(500), 501), (log_of(5_000), 5_001)];
    let appends: Vec<Cost> = logs
        .iter()
        .map(|(db, _)| cost_of(db, vec![append_input(-1)]))
        .collect();
    // Reading the newest 10 events, and the next ones after a cursor
    // (nothing new): what a follower does.
    let reads: Vec<Cost> = logs
        .iter()
        .map(|(db, latest)| {
            cost_of(
                db,
                vec![events_input(latest - 10, 10), events_input(*latest, 100)],
            )
        })
        .collect();
    // An append reads the claimant and the latest seq and writes the event
    // and the seq; a read of the newest reads the ends and the events, one
    // after the end only the ends: the figures `storageWork()` reports.
    assert_eq!(appends[0].statements, (2, 2));
    assert_eq!(reads[0].statements, (5, 0));
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
    let slice = sql::read_events(&Counted::new(&logs[2].0), "k", 0, 1);
    assert_eq!(slice.latest_seq, 5_001);
    assert_eq!(slice.first_seq, 4_502);
}

/// A refused append reads only the claimant, as the store it replaced did.
#[test]
fn a_refused_append_reads_one_row() {
    let db = log_of(3);
    let counted = Counted::new(&db);
    let input = Input::Append(AppendRequest {
        id: id("intruder"),
        kind: EventType::parse("type", "t").unwrap(),
        data: None,
    });
    let rows = sql::Rows {
        sql: &counted,
        key: "k",
    };
    assert!(decide(&rows, 5, input).is_err());
    assert_eq!(counted.work(), (1, 0));
}

/// Every statement in src/runs/sql.rs, run once, searches an index.
#[test]
fn every_statement_searches_an_index() {
    let db = log_of(600);
    let (_, mut ran) = db.record(|| {
        let c = Counted::new(&db);
        sql::load(&c, "k", &append_input(0));
        sql::read_events(&c, "k", 3, 10);
        sql::record(&c, "k");
        let complete = Input::Complete {
            request: CompleteRequest {
                id: id("a"),
                outcome: Outcome::Complete { result: None },
            },
            retention_ms: RETENTION_MS,
        };
        for input in [append_input(-1), complete] {
            step_sql(&db, "k", 2_000_000, input);
        }
        keys_due(&db, 3_000_000, 5);
        next_deletion_ms(&db);
        sql::write(&c, "k", &[Write::Delete]);
        // A first claim inserts the row.
        step_sql(&db, "k", 4_000_000, claim_input("b"));
    });
    ran.dedup_by(|a, b| a.sql == b.sql);
    let source = include_str!("../src/runs/sql.rs");
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
        sqlite::bind(&mut stmt, &r.sql, &r.params);
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
    let key = Ident::parse("key", "a").unwrap();
    step_sql(&db, "a", 1, claim_input("x"));
    let c = Counted::new(&db);
    assert_eq!(sql::record(&c, "b"), baton::runs::Run::Unclaimed, "{key:?}");
    assert_eq!(
        sql::record(&c, "a").claim().map(|c| c.id.clone()),
        Some(id("x"))
    );
    assert!(matches!(
        sql::load(&c, "b", &append_input(0)),
        View::Appender {
            claimant: None,
            latest_seq: None
        }
    ));
}
