//! The serial queue natively: its decisions, and its SQL run against SQLite
//! exactly as the D1 shell runs it (a batch is a transaction, a claim's
//! change count says who won).

use baton::ident::{Ident, InstanceId};
use baton::serial_queue::sql;
use baton::serial_queue::*;
use rusqlite::{params_from_iter, types::Value, Connection};

const TIMEOUTS: SerialTimeouts = SerialTimeouts {
    waiter_timeout_ms: 3_600_000,
    heartbeat_expiry_ms: 600_000,
};

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

fn rev(s: &str) -> Ident {
    Ident::parse("revision", s).unwrap()
}

fn db() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    for (_, migration) in sql::MIGRATIONS {
        conn.execute_batch(migration).unwrap();
    }
    conn
}

fn text(v: &str) -> Value {
    Value::Text(v.into())
}

fn int(v: u64) -> Value {
    Value::Integer(v as i64)
}

/// Runs one statement; returns (rows, changes).
fn run(conn: &Connection, statement: &str, params: Vec<Value>) -> (Vec<Vec<Value>>, usize) {
    let mut stmt = conn.prepare(statement).unwrap();
    let columns = stmt.column_count();
    let mut rows = Vec::new();
    let mut cursor = stmt.query(params_from_iter(params)).unwrap();
    while let Some(row) = cursor.next().unwrap() {
        rows.push(
            (0..columns)
                .map(|i| row.get::<_, Value>(i).unwrap())
                .collect(),
        );
    }
    drop(cursor);
    (rows, conn.changes() as usize)
}

fn state(conn: &Connection, group: &str, instance: &str) -> Option<String> {
    let (rows, _) = run(conn, sql::READ_ENTRY, vec![text(group), text(instance)]);
    rows.first().map(|r| match &r[3] {
        Value::Text(s) => s.clone(),
        other => panic!("{other:?}"),
    })
}

/// The D1 shell's enqueue: plan, then one transaction.
fn enqueue(
    conn: &mut Connection,
    group: &str,
    instance: &str,
    revision: &str,
    current: Option<&str>,
    now: u64,
) -> Result<Vec<String>, String> {
    let request = SerialEnqueue {
        group: Ident::parse("group", group).unwrap(),
        instance_id: id(instance),
        revision: rev(revision),
        current: current.map(rev),
    };
    match plan_enqueue(&request) {
        EnqueuePlan::Skip { current } => Err(current.to_string()),
        EnqueuePlan::Insert { supersede } => {
            let tx = conn.transaction().unwrap();
            run(
                &tx,
                sql::INSERT_ENTRY,
                vec![text(group), text(instance), text(revision), int(now)],
            );
            let statement = match supersede {
                Supersede::OlderWaiters => sql::SUPERSEDE_OLDER,
                Supersede::WaitersNotAt(_) => sql::SUPERSEDE_NOT_CURRENT,
            };
            let (rows, _) = run(
                &tx,
                statement,
                vec![text(group), text(instance), text(revision), int(now)],
            );
            run(&tx, sql::PRUNE_FINISHED, vec![text(group), int(50)]);
            tx.commit().unwrap();
            Ok(rows
                .into_iter()
                .map(|r| match &r[0] {
                    Value::Text(s) => s.clone(),
                    other => panic!("{other:?}"),
                })
                .collect())
        }
    }
}

/// The claim's batch; returns whether this claimer won.
fn claim_batch(conn: &mut Connection, group: &str, instance: &str, now: u64) -> bool {
    let tx = conn.transaction().unwrap();
    run(
        &tx,
        sql::ABANDON_STALE_HOLDER,
        vec![
            text(group),
            int(now),
            int(oldest_live_heartbeat_ms(now, TIMEOUTS)),
        ],
    );
    let (_, won) = run(&tx, sql::CLAIM, vec![text(group), text(instance), int(now)]);
    tx.commit().unwrap();
    won == 1
}

#[test]
fn stale_arrival_skips_and_changes_nothing() {
    let mut conn = db();
    enqueue(&mut conn, "g", "a", "r1", None, 1).unwrap();
    assert_eq!(
        enqueue(&mut conn, "g", "b", "r1", Some("r2"), 2),
        Err("r2".into())
    );
    assert_eq!(state(&conn, "g", "a").as_deref(), Some("waiting"));
    assert_eq!(state(&conn, "g", "b"), None);
}

#[test]
fn newest_waiter_wins_without_current() {
    let mut conn = db();
    enqueue(&mut conn, "g", "a", "r1", None, 1).unwrap();
    assert!(claim_batch(&mut conn, "g", "a", 2));
    assert_eq!(
        enqueue(&mut conn, "g", "b", "r2", None, 3).unwrap(),
        Vec::<String>::new()
    );
    // C supersedes B, never the holder A.
    assert_eq!(
        enqueue(&mut conn, "g", "c", "r3", None, 4).unwrap(),
        vec!["b".to_string()]
    );
    assert_eq!(state(&conn, "g", "a").as_deref(), Some("holding"));
    assert_eq!(state(&conn, "g", "b").as_deref(), Some("superseded"));
    // A retried enqueue of B (already superseded) supersedes no one.
    assert_eq!(
        enqueue(&mut conn, "g", "b", "r2", None, 5).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(state(&conn, "g", "c").as_deref(), Some("waiting"));
}

#[test]
fn current_revision_supersedes_every_non_current_waiter_whenever_it_arrived() {
    let mut conn = db();
    enqueue(&mut conn, "g", "h", "r0", None, 1).unwrap();
    assert!(claim_batch(&mut conn, "g", "h", 1));
    // Without a known head these queue in arrival order...
    enqueue(&mut conn, "g", "old", "r1", None, 2).unwrap();
    // ...and a current arrival supersedes every waiter at another revision.
    let superseded = enqueue(&mut conn, "g", "cur", "r2", Some("r2"), 3).unwrap();
    assert_eq!(superseded, vec!["old".to_string()]);
    // A later arrival at the current revision supersedes nothing at it.
    assert_eq!(
        enqueue(&mut conn, "g", "cur2", "r2", Some("r2"), 4).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(state(&conn, "g", "cur").as_deref(), Some("waiting"));
    assert_eq!(state(&conn, "g", "h").as_deref(), Some("holding"));
}

#[test]
fn claim_decisions() {
    let waiting = Entry {
        instance_id: id("w"),
        revision: rev("r"),
        enqueued_at_ms: 0,
        state: EntryState::Waiting,
    };
    let holder = |hb| Entry {
        instance_id: id("h"),
        revision: rev("r"),
        enqueued_at_ms: 0,
        state: EntryState::Holding {
            heartbeat_at_ms: hb,
        },
    };
    // No holder, or a stale one: try the claim.
    assert_eq!(
        decide_claim(Some(&waiting), None, 10, TIMEOUTS),
        Ok(ClaimStep::Attempt)
    );
    assert_eq!(
        decide_claim(Some(&waiting), Some(&holder(0)), 600_001, TIMEOUTS),
        Ok(ClaimStep::Attempt)
    );
    // A live holder: wait, until the waiter's own timeout.
    assert_eq!(
        decide_claim(Some(&waiting), Some(&holder(100)), 600_000, TIMEOUTS),
        Ok(ClaimStep::Reply(ClaimReply::Waiting {
            holder: Some(id("h"))
        }))
    );
    assert_eq!(
        decide_claim(
            Some(&waiting),
            Some(&holder(3_600_000)),
            3_600_001,
            TIMEOUTS
        ),
        Ok(ClaimStep::TimeOut)
    );
    // Final states answer for themselves.
    let superseded = Entry {
        state: EntryState::Superseded {
            by: id("c"),
            by_revision: rev("r3"),
        },
        ..waiting.clone()
    };
    assert_eq!(
        decide_claim(Some(&superseded), None, 1, TIMEOUTS),
        Ok(ClaimStep::Reply(ClaimReply::Skipped {
            by: id("c"),
            by_revision: rev("r3")
        }))
    );
    let timed_out = Entry {
        state: EntryState::TimedOut,
        ..waiting.clone()
    };
    assert_eq!(
        decide_claim(Some(&timed_out), None, 1, TIMEOUTS),
        Ok(ClaimStep::Reply(ClaimReply::TimedOut))
    );
    // Claiming without an enqueue is a caller error naming the field.
    assert_eq!(
        decide_claim(None, None, 1, TIMEOUTS).unwrap_err().field(),
        "instanceId"
    );
}

#[test]
fn interleaved_claimers_at_most_one_wins() {
    // Every order of claims by four waiters, with and without a stale holder:
    // exactly one wins, and the database's own index agrees.
    let claimers = ["a", "b", "c", "d"];
    for with_stale_holder in [false, true] {
        for rotation in 0..claimers.len() {
            let mut conn = db();
            if with_stale_holder {
                enqueue(&mut conn, "g", "old", "r0", Some("r0"), 0).unwrap();
                assert!(claim_batch(&mut conn, "g", "old", 0));
            }
            for (i, c) in claimers.iter().enumerate() {
                // Same revision as current: nobody supersedes anybody.
                enqueue(&mut conn, "g", c, "r1", Some("r1"), 1 + i as u64).unwrap();
            }
            let now = 1_000_000;
            let order: Vec<&str> = claimers
                .iter()
                .cycle()
                .skip(rotation)
                .take(claimers.len())
                .copied()
                .collect();
            let winners: Vec<&str> = order
                .iter()
                .filter(|c| claim_batch(&mut conn, "g", c, now))
                .copied()
                .collect();
            assert_eq!(
                winners,
                vec![order[0]],
                "stale={with_stale_holder} order={order:?}"
            );
            let (holders, _) = run(&conn, sql::READ_HOLDER, vec![text("g")]);
            assert_eq!(holders.len(), 1);
            if with_stale_holder {
                assert_eq!(state(&conn, "g", "old").as_deref(), Some("abandoned"));
            }
        }
    }
}

#[test]
fn live_holder_blocks_claims_and_heartbeat_keeps_it() {
    let mut conn = db();
    enqueue(&mut conn, "g", "h", "r1", None, 0).unwrap();
    assert!(claim_batch(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r2", None, 1).unwrap();
    // Heartbeat at 500_000 keeps h live past its first expiry.
    let (_, beat) = run(
        &conn,
        sql::HEARTBEAT,
        vec![text("g"), text("h"), int(500_000)],
    );
    assert_eq!(beat, 1);
    assert!(!claim_batch(&mut conn, "g", "w", 700_000));
    // Without further heartbeats it goes stale and w takes the group.
    assert!(claim_batch(&mut conn, "g", "w", 1_100_001));
    let (_, beat) = run(
        &conn,
        sql::HEARTBEAT,
        vec![text("g"), text("h"), int(1_100_002)],
    );
    assert_eq!(beat, 0, "an abandoned holder is told it no longer holds");
}

#[test]
fn release_frees_the_group_and_prune_keeps_a_bounded_history() {
    let mut conn = db();
    for i in 0..120u64 {
        let name = format!("i{i}");
        enqueue(&mut conn, "g", &name, "r", None, i).unwrap();
        assert!(claim_batch(&mut conn, "g", &name, i));
        let (released, _) = run(&conn, sql::RELEASE, vec![text("g"), text(&name), int(i)]);
        assert_eq!(released.len(), 1);
    }
    // Prune runs with each enqueue: at most 50 finished rows (+ the latest) remain.
    let (recent, _) = run(&conn, sql::READ_RECENT, vec![text("g"), int(1000)]);
    assert!(recent.len() <= 51, "{}", recent.len());
    // Groups do not see each other.
    enqueue(&mut conn, "other", "x", "r", None, 0).unwrap();
    assert!(claim_batch(&mut conn, "other", "x", 0));
}

#[test]
fn every_statement_uses_an_index() {
    let conn = db();
    for statement in [
        sql::READ_ENTRY,
        sql::READ_ENTRY_AND_HOLDER,
        sql::READ_HOLDER,
        sql::READ_WAITING,
        sql::READ_RECENT,
        sql::COUNT_WAITING,
        sql::INSERT_ENTRY,
        sql::SUPERSEDE_OLDER,
        sql::SUPERSEDE_NOT_CURRENT,
        sql::PRUNE_FINISHED,
        sql::TIME_OUT,
        sql::ABANDON_STALE_HOLDER,
        sql::CLAIM,
        sql::HEARTBEAT,
        sql::RELEASE,
        sql::ABANDON_WAITER,
    ] {
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {statement}"))
            .unwrap();
        let nulls = vec![Value::Null; explain.parameter_count()];
        let plan: Vec<String> = explain
            .query_map(params_from_iter(nulls), |row| row.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for step in &plan {
            assert!(
                !step.starts_with("SCAN serial_queue"),
                "{statement}\n{plan:?}"
            );
        }
    }
}

#[test]
fn release_says_whether_the_caller_held_the_group() {
    let mut conn = db();
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim_batch(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r1", Some("r1"), 1).unwrap();
    let release = |conn: &Connection, who: &str| {
        run(conn, sql::RELEASE, vec![text("g"), text(who), int(2)]).0
    };
    assert_eq!(
        release(&conn, "w"),
        vec![vec![Value::Integer(0)]],
        "a waiter leaves"
    );
    assert_eq!(
        release(&conn, "h"),
        vec![vec![Value::Integer(1)]],
        "the holder frees the group"
    );
    assert!(release(&conn, "h").is_empty(), "twice is a no-op");
    // One read finds both the caller's row and the holder's.
    enqueue(&mut conn, "g", "x", "r2", None, 3).unwrap();
    assert!(claim_batch(&mut conn, "g", "x", 3));
    enqueue(&mut conn, "g", "y", "r3", None, 4).unwrap();
    let (rows, _) = run(
        &conn,
        sql::READ_ENTRY_AND_HOLDER,
        vec![text("g"), text("y")],
    );
    let mut ids: Vec<_> = rows.iter().map(|r| r[0].clone()).collect();
    ids.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(ids, vec![text("x"), text("y")]);
}
