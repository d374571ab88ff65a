//! The Debouncer's SQL store (`debounce::sql`) under rusqlite: every
//! decision's writes, committed and read back, give the state the decision
//! meant, for random decisions (batching ones among them) on two keys that
//! must not see each other; and a database written before the schema
//! ladder (v1) upgrades in place and loads.

mod common;

use baton::debounce::{
    decide, sql, BatchBounds, BatchFields, Call, Cancel, CreateOutcome, Debounce, DebounceCall,
    DebounceFields, Edge, Fire, Flush, IdSuffix, Input, KeyState, Pending, PendingRow, StartAt,
    StartAtCall, StartParams, Transition,
};
use baton::error::BatonError;
use baton::ident::InstanceId;
use baton::limits::DEBOUNCE_STARTED_KEPT;
use baton::sql::{SqlExec, SqlValue};
use common::{sqlite, Rng};
use rusqlite::Connection;

struct Db(Connection);

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        sqlite::run(&self.0, sql, params).rows
    }
}

/// A random decision on `state`: a call (its answer left aside) or what
/// re-enters.
fn random_decision(
    rng: &mut Rng,
    now: u64,
    state: &KeyState,
    n: u64,
) -> Result<Transition, BatonError> {
    let suffix = IdSuffix::new(format!("s{n}"));
    let input = match rng.below(10) {
        0..=4 => {
            let edge = *rng.pick(&[Edge::Trailing, Edge::Leading, Edge::Both]);
            let batch = (edge == Edge::Trailing && rng.percent(50)).then(|| BatchFields {
                max_items: Some(rng.range(1, 6) as f64),
                max_bytes: Some(rng.range(30, 120) as f64),
            });
            let call = Debounce {
                call: DebounceCall::new(DebounceFields {
                    delay_ms: rng.range(1, 50),
                    max_wait_ms: Some(rng.range(50, 200)),
                    edge: Some(edge),
                    params: rng.percent(80).then(|| format!("{{\"n\":{n}}}")),
                    workflow: (*rng.pick(&["WORKFLOW", "OTHER"])).into(),
                    id_prefix: None,
                    batch,
                })
                .unwrap(),
                suffix,
            };
            return call.decide(state, now).map(|(_, t)| t);
        }
        5 => {
            let call = StartAt {
                call: StartAtCall::new(
                    now,
                    (now + rng.below(100)) as f64,
                    Some("\"at\"".into()),
                    "WORKFLOW".into(),
                    None,
                )
                .unwrap(),
                suffix,
            };
            return call.decide(state, now).map(|(_, t)| t);
        }
        6 => return Flush.decide(state, now).map(|(_, t)| t),
        7 => return Cancel.decide(state, now).map(|(_, t)| t),
        _ => match state.creating.first() {
            Some(c) => Input::Created {
                id: c.id.clone(),
                outcome: if rng.percent(30) {
                    CreateOutcome::Failed("down".into())
                } else {
                    CreateOutcome::Created
                },
            },
            None => Input::Tick,
        },
    };
    decide(state, now, input)
}

#[test]
fn writes_read_back_as_the_decided_state() {
    let db = Db(Connection::open_in_memory().unwrap());
    sql::migrate(&db);
    sql::migrate(&db); // idempotent
    let mut rng = Rng(7);
    let keys = ["a", "b:with:colons"];
    let mut states = [KeyState::default(), KeyState::default()];
    let mut now = 1_000;
    let mut batched = 0u64;
    for n in 0..5_000 {
        now += rng.below(30);
        let which = rng.below(2) as usize;
        let Ok(transition) = random_decision(&mut rng, now, &states[which], n) else {
            continue;
        };
        sql::write(
            &db,
            keys[which],
            &transition.writes,
            transition.alarm.at_ms(),
        );
        states[which] = transition.state;
        batched += u64::from(!states[which].batch.is_empty());
        for (key, state) in keys.iter().zip(&states) {
            assert_eq!(&sql::load(&db, key), state, "key {key} after step {n}");
        }
        assert!(states[which].started.len() <= DEBOUNCE_STARTED_KEPT);
        let wakes: Vec<u64> = states.iter().filter_map(KeyState::next_alarm_ms).collect();
        assert_eq!(sql::next_wake(&db), wakes.iter().copied().min());
        let due = sql::due_keys(&db, now + 100, 10);
        for (key, state) in keys.iter().zip(&states) {
            let is_due = state.next_alarm_ms().is_some_and(|w| w <= now + 100);
            assert_eq!(due.contains(&key.to_string()), is_due, "due {key}");
        }
    }
    assert!(
        batched > 100,
        "only {batched} decisions left a batch behind"
    );
    let rows = db.run("SELECT COUNT(*) FROM debounce_started", &[]);
    assert_eq!(
        rows[0][0],
        SqlValue::Integer(states.iter().map(|s| s.started.len() as i64).sum())
    );
}

/// The tables as the release before the schema ladder created them.
const V1_TABLES: &[&str] = &[
    "CREATE TABLE debounce_keys (key TEXT PRIMARY KEY, wake_at INTEGER)",
    "CREATE TABLE debounce_bursts (key TEXT PRIMARY KEY, edge TEXT NOT NULL, \
     delay_ms INTEGER NOT NULL, max_wait_ms INTEGER NOT NULL, workflow TEXT NOT NULL, \
     first_at INTEGER NOT NULL, last_at INTEGER NOT NULL, calls INTEGER NOT NULL, leading TEXT)",
    "CREATE TABLE debounce_pending (key TEXT PRIMARY KEY, id TEXT NOT NULL, \
     workflow TEXT NOT NULL, params TEXT, at_ms INTEGER, set_at_ms INTEGER)",
    "CREATE TABLE debounce_creating (key TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, \
     workflow TEXT NOT NULL, params TEXT, fired_at INTEGER NOT NULL, failures INTEGER NOT NULL, \
     next_try_at INTEGER NOT NULL, last_error TEXT, PRIMARY KEY (key, id))",
    "CREATE TABLE debounce_started (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, \
     id TEXT NOT NULL, at_ms INTEGER NOT NULL)",
];

#[test]
fn a_database_from_before_the_ladder_upgrades_and_loads() {
    let db = Db(Connection::open_in_memory().unwrap());
    for statement in V1_TABLES {
        db.run(statement, &[]);
    }
    // A trailing burst with its pending start, and a startAt, as v1 wrote them.
    for statement in [
        "INSERT INTO debounce_bursts VALUES ('push', 'trailing', 100, 1000, 'WORKFLOW', 5000, 5050, 2, NULL)",
        "INSERT INTO debounce_pending VALUES ('push', 'debounce-1', 'WORKFLOW', '{\"n\":2}', NULL, NULL)",
        "INSERT INTO debounce_keys VALUES ('push', 5150)",
        "INSERT INTO debounce_pending VALUES ('later', 'start-1', 'WORKFLOW', NULL, 9000, 4000)",
        "INSERT INTO debounce_keys VALUES ('later', 9000)",
    ] {
        db.run(statement, &[]);
    }
    sql::migrate(&db);
    sql::migrate(&db); // once upgraded, a no-op
    let version = db.run(
        "SELECT version FROM baton_schema WHERE name = 'debounce'",
        &[],
    );
    assert_eq!(version[0][0], SqlValue::Integer(sql::CURRENT_VERSION));
    let id = |text: &str| InstanceId::parse("instanceId", text).unwrap();
    let push = sql::load(&db, "push");
    assert_eq!(
        push.phase.rows().1,
        Some(PendingRow {
            start: Pending {
                id: id("debounce-1"),
                workflow: "WORKFLOW".into(),
                params: StartParams::Latest(Some("{\"n\":2}".into())),
            },
            fire: Fire::BurstEnd,
        })
    );
    assert_eq!(push.phase.burst().map(|b| b.calls), Some(2));
    assert!(push.batch.is_empty());
    let later = sql::load(&db, "later");
    assert_eq!(
        later.phase.rows().1.map(|p| (p.start.params, p.fire)),
        Some((
            StartParams::Latest(None),
            Fire::At {
                at_ms: 9000,
                set_at_ms: 4000
            }
        ))
    );
    // The upgraded database takes a batch, a row per call, and fires it whole.
    let batch = |n: u32| Debounce {
        call: DebounceCall::new(DebounceFields {
            delay_ms: 100,
            params: Some(format!("{{\"n\":{n}}}")),
            workflow: "WORKFLOW".into(),
            batch: Some(BatchFields::default()),
            ..DebounceFields::default()
        })
        .unwrap(),
        suffix: IdSuffix::new(format!("b{n}")),
    };
    let mut state = KeyState::default();
    for (n, now) in [(1, 10_000), (2, 10_010)] {
        let (_, t) = batch(n).decide(&state, now).unwrap();
        sql::write(&db, "batch", &t.writes, t.alarm.at_ms());
        state = t.state;
    }
    let loaded = sql::load(&db, "batch");
    assert_eq!(loaded, state);
    assert_eq!(loaded.batch, ["{\"n\":1}", "{\"n\":2}"]);
    assert!(matches!(
        loaded.phase.pending().map(|p| p.params.clone()),
        Some(StartParams::Batch(BatchBounds {
            max_items: 100,
            max_bytes: 1_048_576
        }))
    ));
    let rows = db.run(
        "SELECT COUNT(*) FROM debounce_batch_items WHERE key = 'batch'",
        &[],
    );
    assert_eq!(rows[0][0], SqlValue::Integer(2), "a row per call");
    let fired = decide(&state, 10_110, Input::Tick).unwrap();
    sql::write(&db, "batch", &fired.writes, fired.alarm.at_ms());
    let create = fired.effects.first().expect("the batch fires");
    assert_eq!(
        create.params.as_deref(),
        Some("{\"batch\":[{\"n\":1},{\"n\":2}]}")
    );
    assert_eq!(sql::load(&db, "batch"), fired.state);
    let rows = db.run("SELECT COUNT(*) FROM debounce_batch_items", &[]);
    assert_eq!(
        rows[0][0],
        SqlValue::Integer(0),
        "a started batch leaves no rows"
    );
}
