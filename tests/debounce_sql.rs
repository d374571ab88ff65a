//! The Debouncer's SQL store (`debounce::sql`) under rusqlite: every
//! decision's writes, committed and read back, give the state the decision
//! meant, for random decisions on two keys that must not see each other.

mod common;

use baton::debounce::{
    decide, sql, CreateOutcome, DebounceCall, DebounceFields, Edge, IdSuffix, Input, KeyState,
    StartAtCall,
};
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

fn random_input(rng: &mut Rng, now: u64, state: &KeyState, n: u64) -> Input {
    let suffix = IdSuffix::new(format!("s{n}"));
    match rng.below(10) {
        0..=4 => Input::Debounce {
            call: DebounceCall::new(DebounceFields {
                delay_ms: rng.range(1, 50),
                max_wait_ms: Some(rng.range(50, 200)),
                edge: Some(*rng.pick(&[Edge::Trailing, Edge::Leading, Edge::Both])),
                params: rng.percent(80).then(|| format!("{{\"n\":{n}}}")),
                workflow: (*rng.pick(&["WORKFLOW", "OTHER"])).into(),
                id_prefix: None,
            })
            .unwrap(),
            suffix,
        },
        5 => Input::StartAt {
            call: StartAtCall::new(
                now,
                (now + rng.below(100)) as f64,
                Some("\"at\"".into()),
                "WORKFLOW".into(),
                None,
            )
            .unwrap(),
            suffix,
        },
        6 => Input::Flush,
        7 => Input::Cancel,
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
    }
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
    for n in 0..5_000 {
        now += rng.below(30);
        let which = rng.below(2) as usize;
        let input = random_input(&mut rng, now, &states[which], n);
        let Ok(transition) = decide(&states[which], now, input) else {
            continue;
        };
        sql::write(
            &db,
            keys[which],
            &transition.writes,
            transition.alarm.at_ms(),
        );
        states[which] = transition.state;
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
    let rows = db.run("SELECT COUNT(*) FROM debounce_started", &[]);
    assert_eq!(
        rows[0][0],
        SqlValue::Integer(states.iter().map(|s| s.started.len() as i64).sum())
    );
}
