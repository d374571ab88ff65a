//! The list shard's rows (`baton::busy::sql`) and the serial queue's group
//! list (`serial_queue::sql::LIST_GROUPS`), run natively over `rusqlite`.
//!
//! - Every decision's `state` is what reloading the row gives.
//! - Cost, without timing anything: a page of 500 runs the same statement
//!   and SQLite's own VM-step counter stays flat (within 1.5 times) with
//!   1,000 keys listed or 100,000, and no statement scans a table; the
//!   same for a page of groups over 1,000 or 20,000 busy groups.

mod common;

use baton::busy::{self, sql, Answer, Busy, Report, Row, Tick, Transition};
use baton::sql::{SqlExec, SqlValue};
use common::sqlite;
use rusqlite::Connection;
use std::cell::Cell;

struct Db {
    conn: Connection,
    vm_steps: Cell<i64>,
    fullscan_steps: Cell<i64>,
}

impl Db {
    fn migrated() -> Db {
        let db = Db {
            conn: Connection::open_in_memory().unwrap(),
            vm_steps: Cell::new(0),
            fullscan_steps: Cell::new(0),
        };
        sql::migrate(&db);
        sql::migrate(&db);
        db
    }

    /// What `f` cost in SQLite's own steps: (vm steps, full-scan steps).
    fn cost<R>(&self, f: impl FnOnce() -> R) -> (R, i64, i64) {
        self.vm_steps.set(0);
        self.fullscan_steps.set(0);
        let r = f();
        (r, self.vm_steps.get(), self.fullscan_steps.get())
    }
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let ran = sqlite::run(&self.conn, sql, params);
        self.vm_steps
            .set(self.vm_steps.get() + i64::from(ran.vm_steps));
        self.fullscan_steps
            .set(self.fullscan_steps.get() + i64::from(ran.fullscan_steps));
        ran.rows
    }
}

fn waiting(n: u32, since: u64) -> Busy {
    Busy {
        holders: 1,
        waiting: n,
        oldest_since_ms: (n > 0).then_some(since),
        limit: 1,
        dead_until_ms: None,
        // §11's flag rides along (stored and read back), as does §10a's
        // stall.
        paused: n % 2 == 1,
        stalled_from_ms: (n % 3 == 1).then_some(since + 7),
    }
}

/// Decides and writes one report or tick for `key`, checking the state
/// against a reload; its answer.
fn step<T>(
    db: &Db,
    key: &str,
    now: u64,
    decide: impl FnOnce(&Option<Row>, u64) -> (T, Transition),
) -> T {
    let row = sql::load(db, key);
    let (answer, transition) = decide(&row, now);
    sql::write(db, key, &transition);
    busy::assert_invariants(&transition.state);
    assert_eq!(
        sql::load(db, key),
        transition.state,
        "{key}: the rows are the state"
    );
    answer
}

fn report(db: &Db, key: &str, now: u64, stamp: u64, busy: Busy) -> Answer {
    step(db, key, now, |row, now| {
        busy::report(row, now, Report { stamp, busy })
    })
}

fn applied(stamp: u64) -> Answer {
    Answer {
        applied: true,
        stamp,
        same: true,
    }
}

#[test]
fn a_key_enters_leaves_and_is_forgotten_and_a_late_report_changes_nothing() {
    let db = Db::migrated();
    assert_eq!(report(&db, "k", 100, 10, waiting(2, 90)), applied(10));
    let page = sql::page(&db, None, 10, 100);
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].1.busy.waiting, 2);
    // The unlisting report overtook an update: the update is older.
    assert_eq!(report(&db, "k", 101, 12, waiting(0, 0)), applied(12));
    let stale = |same| Answer {
        applied: false,
        stamp: 12,
        same,
    };
    assert_eq!(report(&db, "k", 102, 11, waiting(3, 90)), stale(false));
    assert_eq!(report(&db, "k", 102, 12, waiting(3, 90)), stale(false));
    assert_eq!(
        report(&db, "k", 102, 12, waiting(0, 0)),
        stale(true),
        "a repeat"
    );
    assert!(sql::page(&db, None, 10, 102).is_empty());
    let Some(Row::Gone { forget_ms, .. }) = sql::load(&db, "k") else {
        panic!("the key is remembered as gone");
    };
    assert_eq!(sql::next_wake(&db), Some(forget_ms));
    assert!(sql::due_keys(&db, forget_ms - 1, 10).is_empty());
    assert_eq!(sql::due_keys(&db, forget_ms, 10), ["k"]);
    step(&db, "k", forget_ms, |row, now| {
        ((), busy::tick(row, now, Tick))
    });
    assert_eq!(sql::load(&db, "k"), None);
    assert_eq!(sql::next_wake(&db), None);
}

#[test]
fn a_dead_holder_keeps_its_key_listed_until_its_hour_ends() {
    let db = Db::migrated();
    let dead = Busy {
        holders: 0,
        waiting: 0,
        oldest_since_ms: None,
        limit: 1,
        dead_until_ms: Some(Busy::dead_until(1_000)),
        paused: false,
        stalled_from_ms: None,
    };
    report(&db, "d", 1_000, 1, dead);
    let until = Busy::dead_until(1_000);
    assert_eq!(sql::page(&db, None, 10, until - 1).len(), 1);
    assert!(
        sql::page(&db, None, 10, until).is_empty(),
        "not shown once the hour is over"
    );
    assert_eq!(sql::due_keys(&db, until, 10), ["d"]);
    step(&db, "d", until - 1, |row, now| {
        ((), busy::tick(row, now, Tick))
    });
    assert!(
        matches!(sql::load(&db, "d"), Some(Row::Listed { .. })),
        "an early tick changes nothing"
    );
    step(&db, "d", until, |row, now| ((), busy::tick(row, now, Tick)));
    assert!(matches!(sql::load(&db, "d"), Some(Row::Gone { .. })));
}

#[test]
fn a_page_costs_the_same_with_a_thousand_keys_listed_or_a_hundred_thousand() {
    let db = Db::migrated();
    let key = |i: u32| format!("key-{i:07}");
    let mut cost_at = Vec::new();
    let mut listed = 0;
    for target in [1_000u32, 100_000] {
        db.conn.execute_batch("BEGIN").unwrap();
        while listed < target {
            // Every third key has left the list: gone rows sit among the listed.
            report(
                &db,
                &key(listed),
                5,
                1,
                waiting(if listed % 3 == 0 { 0 } else { 2 }, 1),
            );
            listed += 1;
        }
        db.conn.execute_batch("COMMIT").unwrap();
        let after = key(target / 10);
        let (page, vm, fullscan) = db.cost(|| sql::page(&db, Some(&after), 500, 5));
        assert_eq!(page.len(), 500);
        assert!(page.iter().all(|(k, _)| *k > after));
        assert!(page.windows(2).all(|w| w[0].0 < w[1].0), "key order");
        assert_eq!(fullscan, 0, "a page scans no table");
        cost_at.push(vm);
    }
    let ratio = cost_at[1] as f64 / cost_at[0] as f64;
    eprintln!(
        "page of 500: {} VM steps at 1,000 keys, {} at 100,000 ({ratio:.2}x)",
        cost_at[0], cost_at[1]
    );
    assert!(
        ratio <= 1.5,
        "a page's work grew with the keys: {cost_at:?}"
    );
}

/// A row of `LIST_GROUPS`: group, holder, waiting, oldest since.
type GroupRow = (String, Option<String>, i64, Option<i64>);

/// One page of `LIST_GROUPS` on D1's schema: the rows and SQLite's steps.
fn list_groups(conn: &Connection, after: &str, n: i64) -> (Vec<GroupRow>, i64, i64) {
    use rusqlite::StatementStatus;
    let mut stmt = conn.prepare(baton::serial_queue::sql::LIST_GROUPS).unwrap();
    let rows = stmt
        .query_map(rusqlite::params![after, n], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let vm = stmt.get_status(StatementStatus::VmStep);
    let fullscan = stmt.get_status(StatementStatus::FullscanStep);
    (rows, i64::from(vm), i64::from(fullscan))
}

#[test]
fn a_page_of_groups_reads_the_busy_ones_alone_at_a_flat_cost() {
    let conn = common::d1::database();
    let insert = |group: &str, id: &str, state: &str, at: i64| {
        conn.execute(
            "INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at) \
             VALUES (?1, ?2, 'r', ?3, ?4)",
            rusqlite::params![group, id, state, at],
        )
        .unwrap();
    };
    let mut made = 0;
    let mut costs = Vec::new();
    for target in [1_000, 20_000] {
        conn.execute_batch("BEGIN").unwrap();
        while made < target {
            let group = format!("g-{made:06}");
            // Each busy group: a holder, two waiters, and history; beside
            // it an idle group with history only.
            insert(&group, "h", "holding", 10);
            insert(&group, "w1", "waiting", 30 + made);
            insert(&group, "w2", "waiting", 20 + made);
            for i in 0..5 {
                insert(&group, &format!("old{i}"), "released", 1);
                insert(&format!("{group}-idle"), &format!("old{i}"), "released", 1);
            }
            made += 1;
        }
        conn.execute_batch("COMMIT").unwrap();
        let (rows, vm, fullscan) = list_groups(&conn, "g-000100", 500);
        assert_eq!(rows.len(), 500);
        assert_eq!(
            rows[0],
            (
                "g-000101".to_string(),
                Some("h".to_string()),
                2,
                Some(20 + 101)
            )
        );
        assert!(
            rows.iter().all(|r| !r.0.ends_with("-idle")),
            "idle groups are not listed"
        );
        assert_eq!(fullscan, 0);
        costs.push(vm);
    }
    let ratio = costs[1] as f64 / costs[0] as f64;
    eprintln!(
        "groups page of 500: {} VM steps at 1,000 busy groups, {} at 20,000 ({ratio:.2}x)",
        costs[0], costs[1]
    );
    assert!(ratio <= 1.5, "{costs:?}");
    // A group with a waiter and no holder, and one with only a holder.
    conn.execute_batch("DELETE FROM serial_queue").unwrap();
    insert("a", "w", "waiting", 5);
    insert("b", "h", "holding", 5);
    insert("c", "x", "superseded", 5);
    let (rows, _, _) = list_groups(&conn, "", 10);
    assert_eq!(
        rows,
        [
            ("a".to_string(), None, 1, Some(5)),
            ("b".to_string(), Some("h".to_string()), 0, None)
        ]
    );
}
