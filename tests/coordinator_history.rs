//! A key's history and list reports (`baton::coordinator::history`, contract
//! §10) on SQLite, through the core: what each decision's transition adds
//! (its history writes and the report it is due), and that an uncontended
//! acquire and release add nothing but the grant count (kept by the holder
//! row's trigger in the key row it already writes), so P3 and P5 do not
//! move.

mod common;

use baton::busy::reporter::Due;
use baton::coordinator::history::{self, HistoryWrite, Outcome};
use baton::coordinator::{
    self, AcquireRequest, EnqueueRequest, Input, Liveness, Options, Reply, Settings, Summary,
    Transition, Write,
};
use baton::ident::{InputHash, InstanceId};
use baton::sql::{Counted, SqlExec, SqlValue};
use common::sqlite;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::BTreeMap;

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
    summaries: RefCell<BTreeMap<String, Summary>>,
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
            summaries: RefCell::new(BTreeMap::new()),
        }
    }

    /// One decision as the shell takes it: load, decide, write. Its
    /// transition, its statements (reads, writes) and the rows it changed.
    fn step(&self, key: &str, now: u64, input: Input) -> (Transition, (u32, u32), u64) {
        let sql = Counted::new(&self.db);
        self.db.changed.set(0);
        let summary = self.summaries.borrow_mut().remove(key);
        let view = coordinator::load(&sql, key, summary, &input);
        let t = coordinator::decide(&view, &settings(), now, input).unwrap();
        coordinator::write(&sql, key, &t.writes);
        self.summaries
            .borrow_mut()
            .insert(key.to_owned(), t.state.summary.clone());
        (t, sql.work(), self.db.changed.get())
    }

    fn acquire(&self, key: &str, who: &str, now: u64) -> (Transition, (u32, u32), u64) {
        let request = AcquireRequest {
            id: id(who),
            options: Options::default(),
        };
        self.step(key, now, Input::Acquire(request))
    }

    fn release(&self, key: &str, who: &str, now: u64) -> (Transition, (u32, u32), u64) {
        self.step(key, now, Input::Release(id(who)))
    }

    fn inspect(&self, key: &str) -> (Vec<history::Hold>, history::Counts) {
        history::inspect(&Counted::new(&self.db), key)
    }
}

/// The history's own writes among a transition's.
fn recorded(t: &Transition) -> Vec<&HistoryWrite> {
    t.writes
        .iter()
        .filter_map(|w| match w {
            Write::History(h) => Some(h),
            _ => None,
        })
        .collect()
}

#[test]
fn an_uncontended_pair_adds_only_its_grant_count() {
    let object = Object::new();
    // Warm the summary, as the shell's memory holds it after a first call.
    object.acquire("k", "first", 1);
    object.release("k", "first", 2);
    for n in 0..3 {
        let (acquired, work, changed) = object.acquire("k", "solo", 10 + n);
        assert!(recorded(&acquired).is_empty(), "{acquired:?}");
        // The list may show the key only for a dead holder's hour: the
        // shell's reporter knows whether it does.
        assert_eq!(acquired.report, Due::CountsIfListed);
        // As without §10: no read, one write, one row: the holder row
        // (schema v12: the key's fence and grants take it in when its
        // hold ends).
        assert_eq!(work, (0, 1));
        assert_eq!(changed, 1, "the holder row alone");
        let (released, work, changed) = object.release("k", "solo", 20 + n);
        assert!(recorded(&released).is_empty(), "{released:?}");
        assert_eq!(work, (0, 1));
        // §1c's etaMs counts every finished hold: the statement stamps the
        // holder row's end, and its trigger appends the hold's length to
        // the key row with its fence and grant and deletes the holder row
        // (three row changes, one statement; §10 adds none).
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
    let (waits, _, _) = object.acquire("k", "w", 1_500);
    assert_eq!(
        waits.report,
        Due::Owed,
        "the first waiter makes a report due"
    );
    assert!(history::is_owed(&Counted::new(&object.db), "k"));
    let (second, _, _) = object.acquire("k", "w2", 1_600);
    assert_eq!(
        second.report,
        Due::Counts,
        "a second waiter changes no listing"
    );
    let (handed, _, _) = object.release("k", "h", 4_000);
    assert!(
        matches!(recorded(&handed)[0], HistoryWrite::Hold { id: h, outcome: Outcome::Released, .. } if h.as_str() == "h"),
        "{handed:?}"
    );
    // The new holder's row keeps its wait (schema v17), and the ended
    // row's stamp carries the hand-off's count to the key row.
    assert!(handed
        .writes
        .iter()
        .any(|w| matches!(w, Write::AddHolder(h) if h.id == id("w") && h.waited_ms == 2_500)));
    assert!(handed.writes.iter().any(|w| matches!(
        w,
        Write::RemoveHolder(h, Some(end)) if h.as_str() == "h" && end.tally.hand_offs == 1
    )));
    assert!(
        !recorded(&handed)
            .iter()
            .any(|w| matches!(w, HistoryWrite::Tally(_))),
        "the tally rides on the ended hold"
    );
    assert_eq!(handed.report, Due::Counts, "w2 still waits");
    // w confirms (acquires) and releases with w2 behind: its wait is kept.
    object.acquire("k", "w", 4_100);
    let (ended, _, _) = object.release("k", "w", 9_000);
    assert_eq!(ended.report, Due::Owed, "the last waiter became the holder");
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
    // w2 releases with nobody behind: not recorded, its wait gone with
    // its row.
    object.release("k", "w2", 10_000);
    assert_eq!(object.inspect("k").0.len(), 2);
    let left: i64 = object
        .db
        .conn
        .query_row("SELECT COUNT(*) FROM coordinator_holders", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn a_dead_holder_is_recorded_and_counted_and_makes_a_report_due() {
    let object = Object::new();
    object.acquire("k", "h", 1_000);
    let (t, _, _) = object.acquire("k", "w", 2_000);
    let Reply::AcquireChecking { request, holder } = t.reply else {
        panic!("the waiter's acquire checks the holder: {:?}", t.reply);
    };
    let input = Input::AcquireChecked {
        request,
        holder,
        answer: Liveness::Dead.into(),
    };
    let (t, _, _) = object.step("k", 3_000, input);
    assert_eq!(t.report, Due::Owed);
    assert_eq!(
        recorded(&t)
            .iter()
            .filter(|w| matches!(w, HistoryWrite::Hold { .. }))
            .count(),
        1
    );
    let (recent, counts) = object.inspect("k");
    assert_eq!(recent[0].outcome, Outcome::Dead);
    assert_eq!((recent[0].from_ms, recent[0].to_ms), (1_000, 3_000));
    assert_eq!(counts.dead_holders, 1);
    let busy = history::busy(&Counted::new(&object.db), "k", 1, 0, 1, false);
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
    let (t, _, _) = object.step("k", 5, enqueue("d", true, "z"));
    let Reply::EnqueueChecking { request, candidate } = t.reply else {
        panic!("a coalesce candidate is checked: {:?}", t.reply);
    };
    let input = Input::EnqueueChecked {
        request,
        candidate,
        liveness: Liveness::Alive,
    };
    let (t, _, _) = object.step("k", 6, input);
    assert!(matches!(&t.reply, Reply::Enqueue(r) if r.coalesced_into.is_some()));
    assert_eq!(object.inspect("k").1.coalesced, 1);
}

/// Contract §10: `handOffs` counts "grants of a slot that a holder or a
/// dead holder gave up to a waiter". A waiter whose own acquire finds the
/// holder dead takes the slot that holder gave up: a hand-off.
#[test]
fn a_waiter_whose_own_acquire_finds_the_holder_dead_is_a_hand_off() {
    let object = Object::new();
    object.acquire("k", "h", 1_000);
    let (t, _, _) = object.acquire("k", "w", 2_000);
    let Reply::AcquireChecking { request, holder } = t.reply else {
        panic!("the waiter's acquire checks the holder: {:?}", t.reply);
    };
    let (t, _, _) = object.step(
        "k",
        3_000,
        Input::AcquireChecked {
            request,
            holder,
            answer: Liveness::Dead.into(),
        },
    );
    assert!(
        matches!(
            t.reply,
            Reply::Acquire(baton::coordinator::AcquireReply::Granted { .. })
        ),
        "{:?}",
        t.reply
    );
    let counts = object.inspect("k").1;
    assert_eq!((counts.grants, counts.dead_holders), (2, 1));
    assert_eq!(
        counts.hand_offs, 1,
        "the dead holder's slot went to its waiter"
    );
}

/// A woken holder's deferred status check logs "skipped" only when the
/// decision skips it: a holder that was handed the key, ran and released
/// before the check is not skipped, whatever its status says by then.
#[test]
fn a_woken_holder_is_logged_skipped_only_when_it_is_skipped() {
    use baton::coordinator::log::LogKind;
    let object = Object::new();
    // `who` waits: its acquire finds the holder alive.
    let wait = |who: &str, now: u64| {
        let (t, _, _) = object.acquire("k", who, now);
        let Reply::AcquireChecking { request, holder } = t.reply else {
            panic!("the waiter's acquire checks the holder: {:?}", t.reply);
        };
        let input = Input::AcquireChecked {
            request,
            holder,
            answer: Liveness::Alive.into(),
        };
        object.step("k", now, input);
    };
    object.acquire("k", "h", 1_000);
    wait("w", 2_000);
    let (t, _, _) = object.release("k", "h", 3_000);
    let handed = t.state.summary.holders[0].clone();
    assert_eq!(handed.id, id("w"));
    let woken = |holder| Input::Woken {
        holder,
        answer: Liveness::Dead.into(),
    };
    // w acquires (confirms), runs, and releases before its check.
    object.acquire("k", "w", 3_100);
    object.release("k", "w", 3_200);
    let (t, _, _) = object.step("k", 4_000, woken(handed.clone()));
    assert_eq!(t.log, None, "w was never skipped");
    assert!(t.writes.is_empty(), "{t:?}");

    // Still holding as handed when its check finds it dead: skipped.
    object.acquire("k", "h2", 5_000);
    wait("w2", 5_100);
    let (t, _, _) = object.release("k", "h2", 6_000);
    let handed = t.state.summary.holders[0].clone();
    let (t, _, _) = object.step("k", 7_000, woken(handed));
    let line = t.log.expect("a skip prints its line");
    assert_eq!(
        (
            line.kind,
            line.instance.as_ref().map(|i| i.as_str()),
            line.decision,
            line.reason.to_string()
        ),
        (
            LogKind::Contended,
            Some("w2"),
            "skipped",
            "handed the key but dead".to_string()
        )
    );
}
