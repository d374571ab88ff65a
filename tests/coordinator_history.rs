//! A key's history and list reports (`baton::coordinator::history`, contract
//! §10) on SQLite, through the one-shape core: what each decision adds, and
//! that an uncontended acquire and release add nothing but the grant count
//! (kept by the holder row's trigger in the key row it already writes), so
//! P3 and P5 do not move.

mod common;

use baton::coordinator::history::{self, Outcome};
use baton::coordinator::{
    self, AcquireRequest, EnqueueRequest, Input, Liveness, Options, Reply, Settings, Summary,
};
use baton::ident::{InputHash, InstanceId};
use baton::sql::{Counted, SqlExec, SqlValue};
use common::sqlite;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::HashMap;

struct Db {
    conn: Connection,
    /// Rows changed by every statement since the last look, triggers included.
    changed: std::cell::Cell<u64>,
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let before = self.conn.total_changes();
        let rows = sqlite::run(&self.conn, sql, params).rows;
        self.changed
            .set(self.changed.get() + self.conn.total_changes() - before);
        rows
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

fn settings() -> Settings {
    Settings {
        grace_ms: 60_000,
        workflow: "WF".to_owned(),
    }
}

/// A key's object: its database and the summaries it keeps in memory.
struct Object {
    db: Db,
    summaries: RefCell<HashMap<String, Summary>>,
}

impl Object {
    fn new() -> Object {
        let db = Db {
            conn: Connection::open_in_memory().unwrap(),
            changed: Default::default(),
        };
        coordinator::migrate(&db);
        Object {
            db,
            summaries: RefCell::new(HashMap::new()),
        }
    }

    /// One decision as the shell takes it: load, decide, the history's
    /// reads, the writes, the history's writes. Its reply, what it added,
    /// its statements (reads, writes) and the rows it changed.
    fn step(
        &self,
        key: &str,
        now: u64,
        input: Input,
    ) -> (Reply, history::Happened, (u32, u32), u64) {
        let sql = Counted::new(&self.db);
        self.db.changed.set(0);
        let summary = self.summaries.borrow_mut().remove(key);
        let view = coordinator::load(&sql, key, summary, &input);
        let checked = history::checked(&input).cloned();
        let t = coordinator::decide(&view, &settings(), now, input).unwrap();
        let happened = history::after(&view, checked.as_ref(), &t);
        let waited = history::write_before(&sql, key, &happened);
        coordinator::write(&sql, key, &t.writes);
        history::write_after(&sql, key, &happened, &waited, now);
        self.summaries
            .borrow_mut()
            .insert(key.to_owned(), t.state.summary.clone());
        (t.reply, happened, sql.work(), self.db.changed.get())
    }

    fn acquire(
        &self,
        key: &str,
        who: &str,
        now: u64,
    ) -> (Reply, history::Happened, (u32, u32), u64) {
        let request = AcquireRequest {
            id: id(who),
            options: Options::default(),
        };
        self.step(key, now, Input::Acquire(request))
    }

    fn release(
        &self,
        key: &str,
        who: &str,
        now: u64,
    ) -> (Reply, history::Happened, (u32, u32), u64) {
        self.step(key, now, Input::Release(id(who)))
    }

    fn inspect(&self, key: &str) -> (Vec<history::Hold>, history::Counts) {
        history::inspect(&Counted::new(&self.db), key)
    }
}

#[test]
fn an_uncontended_pair_adds_only_its_grant_count() {
    let object = Object::new();
    // Warm the summary, as the shell's memory holds it after a first call.
    object.acquire("k", "first", 1);
    object.release("k", "first", 2);
    for n in 0..3 {
        let (_, acquired, work, changed) = object.acquire("k", "solo", 10 + n);
        assert!(acquired.is_empty(), "{acquired:?}");
        // As without §10: no read, one write (the holder row; its trigger
        // updates the key row's fence and grants in one row change).
        assert_eq!(work, (0, 1));
        assert_eq!(changed, 2, "the holder row and the key row");
        let (_, released, work, changed) = object.release("k", "solo", 20 + n);
        assert!(released.is_empty(), "{released:?}");
        assert_eq!(work, (0, 1));
        // §1c's etaMs counts every finished hold: the statement stamps the
        // holder row's end, and its trigger appends the hold's length to
        // the key row and deletes the holder row (three row changes, one
        // statement; §10 adds none).
        assert_eq!(
            changed, 3,
            "the holder row stamped, the key row, the holder row deleted"
        );
    }
    let (recent, counts) = object.inspect("k");
    assert!(recent.is_empty());
    assert_eq!(counts.grants, 4);
    assert_eq!(counts.hand_offs, 0);
}

#[test]
fn a_hand_off_is_recorded_with_how_long_the_next_holder_waited() {
    let object = Object::new();
    object.acquire("k", "h", 1_000);
    let (_, waits, _, _) = object.acquire("k", "w", 1_500);
    assert!(waits.report_due, "the first waiter makes a report due");
    assert!(history::is_owed(&Counted::new(&object.db), "k"));
    let (_, second, _, _) = object.acquire("k", "w2", 1_600);
    assert!(!second.report_due, "a second waiter changes no listing");
    let (_, handed, _, _) = object.release("k", "h", 4_000);
    assert_eq!(handed.ended.len(), 1);
    assert_eq!(handed.ended[0].1, Outcome::Released);
    assert_eq!(handed.waited, [(id("w"), 2_500)]);
    assert!(!handed.report_due, "w2 still waits");
    // w confirms (acquires) and releases with w2 behind: its wait is kept.
    object.acquire("k", "w", 4_100);
    let (_, ended, _, _) = object.release("k", "w", 9_000);
    assert!(ended.report_due, "the last waiter became the holder");
    let (recent, counts) = object.inspect("k");
    let shown: Vec<_> = recent
        .iter()
        .map(|h| {
            (
                h.id.as_str(),
                h.fence,
                h.from_ms,
                h.to_ms,
                h.waited_ms,
                h.outcome,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("w", 2, 4_000, 9_000, 2_500, Outcome::Released),
            ("h", 1, 1_000, 4_000, 0, Outcome::Released),
        ]
    );
    assert_eq!(counts.grants, 3);
    assert_eq!(counts.hand_offs, 2);
    // w2 releases with nobody behind: not recorded, its wait forgotten.
    object.release("k", "w2", 10_000);
    assert_eq!(object.inspect("k").0.len(), 2);
    let left: i64 = object
        .db
        .conn
        .query_row("SELECT COUNT(*) FROM coordinator_waited", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn a_dead_holder_is_recorded_and_counted_and_makes_a_report_due() {
    let object = Object::new();
    object.acquire("k", "h", 1_000);
    let (reply, _, _, _) = object.acquire("k", "w", 2_000);
    let Reply::AcquireChecking { request, holder } = reply else {
        panic!("the waiter's acquire checks the holder: {reply:?}");
    };
    let input = Input::AcquireChecked {
        request,
        holder,
        liveness: Liveness::Dead,
    };
    let (_, happened, _, _) = object.step("k", 3_000, input);
    assert!(happened.found_dead && happened.report_due);
    assert_eq!(happened.ended.len(), 1);
    let (recent, counts) = object.inspect("k");
    assert_eq!(recent[0].outcome, Outcome::Dead);
    assert_eq!((recent[0].from_ms, recent[0].to_ms), (1_000, 3_000));
    assert_eq!(counts.dead_holders, 1);
    let busy = history::busy(&Counted::new(&object.db), "k", 1, 0, 1);
    assert_eq!(busy.dead_until_ms, Some(3_000 + 3_600_000));
    assert_eq!(busy.waiting, 0);
}

#[test]
fn superseded_and_coalesced_are_counted() {
    let object = Object::new();
    let enqueue = |who: &str, supersedes: bool, hash: &str| {
        Input::Enqueue(EnqueueRequest {
            supersedes,
            id: id(who),
            input_hash: Some(InputHash::parse("inputHash", hash).unwrap()),
            options: Options::default(),
        })
    };
    object.acquire("k", "h", 1);
    object.step("k", 2, enqueue("a", false, "x"));
    object.step("k", 3, enqueue("b", false, "y"));
    object.step("k", 4, enqueue("c", true, "z"));
    assert_eq!(object.inspect("k").1.superseded, 2);
    let (reply, _, _, _) = object.step("k", 5, enqueue("d", true, "z"));
    let Reply::EnqueueChecking { request, candidate } = reply else {
        panic!("a coalesce candidate is checked: {reply:?}");
    };
    let input = Input::EnqueueChecked {
        request,
        candidate,
        liveness: Liveness::Alive,
    };
    let (_, happened, _, _) = object.step("k", 6, input);
    assert!(happened.coalesced);
    assert_eq!(object.inspect("k").1.coalesced, 1);
}

/// Contract §10: `handOffs` counts "grants of a slot that a holder or a
/// dead holder gave up to a waiter". A waiter whose own acquire finds the
/// holder dead takes the slot that holder gave up: a hand-off.
#[test]
fn a_waiter_whose_own_acquire_finds_the_holder_dead_is_a_hand_off() {
    let object = Object::new();
    object.acquire("k", "h", 1_000);
    let (reply, _, _, _) = object.acquire("k", "w", 2_000);
    let Reply::AcquireChecking { request, holder } = reply else {
        panic!("the waiter's acquire checks the holder: {reply:?}");
    };
    let input = Input::AcquireChecked {
        request,
        holder,
        liveness: Liveness::Dead,
    };
    let (reply, _, _, _) = object.step("k", 3_000, input);
    assert!(
        matches!(
            reply,
            Reply::Acquire(baton::coordinator::AcquireReply::Granted { .. })
        ),
        "{reply:?}"
    );
    let counts = object.inspect("k").1;
    assert_eq!((counts.grants, counts.dead_holders), (2, 1));
    assert_eq!(
        counts.hand_offs, 1,
        "the dead holder's slot went to its waiter"
    );
}
