//! Contract §1c on the Coordinator's rows, natively over `rusqlite`:
//! priorities, fair shares across tenants, `onBusy: "skip"`, positions and
//! `etaMs`, each decision made as the shell makes it (`load`, `decide`,
//! `write`); an older database's waiters reading as priority 0 of the
//! shared tenant; and P4's tenants row: enqueue, acquire and release behind
//! 10,000 waiters of 100 tenants and 3 priorities cost at most 1.5 times
//! the same behind 10 (statements, rows SQLite steps through, VM steps).

mod common;

use baton::coordinator::Effect;
use baton::coordinator::{
    self, decide, inspect, load, migrate, write, AcquireReply, AcquireRequest, EnqueueReply,
    EnqueueRequest, Holder, HolderState, Input, Liveness, Options, Place, Reply, Settings,
    Transition, Turn, Waiter, Write,
};
use baton::ident::{Ident, InstanceId};
use baton::sql::{Counted, SqlExec, SqlValue};
use baton::workflow::Status;
use common::sqlite;
use rusqlite::Connection;
use std::cell::RefCell;

/// SQLite in memory, recording SQLite's own work per statement when asked.
struct Db {
    conn: Connection,
    log: RefCell<Option<Vec<(String, i32, i32)>>>,
}

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let ran = sqlite::run(&self.conn, sql, params);
        if let Some(log) = self.log.borrow_mut().as_mut() {
            log.push((sql.to_owned(), ran.vm_steps, ran.fullscan_steps));
        }
        ran.rows
    }
}

fn db() -> Db {
    let conn = Connection::open_in_memory().expect("open in-memory db");
    conn.set_prepared_statement_cache_capacity(64);
    let db = Db {
        conn,
        log: RefCell::new(None),
    };
    migrate(&db);
    db
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).expect("valid test id")
}

fn tenant(s: &str) -> Ident {
    Ident::new(s.to_owned()).expect("valid tenant")
}

fn settings() -> Settings {
    Settings {
        grace_ms: 60_000,
        workflow: "WF".to_owned(),
    }
}

const KEY: &str = "deploy/prod";

fn step(db: &Db, now_ms: u64, input: Input) -> Transition {
    let sql = Counted::new(db);
    let view = load(&sql, KEY, None, &input);
    let t = decide(&view, &settings(), now_ms, input).expect("decided");
    write(&sql, KEY, &t.writes);
    coordinator::assert_view(&t.state);
    t
}

fn options(priority: i8, of: Option<&str>) -> Options {
    Options {
        priority,
        tenant: of.map(tenant),
        ..Options::default()
    }
}

fn enqueue(db: &Db, now_ms: u64, who: &str, priority: i8, of: Option<&str>) -> EnqueueReply {
    let request = EnqueueRequest {
        supersedes: false,
        id: id(who),
        input_hash: None,
        options: options(priority, of),
    };
    match step(db, now_ms, Input::Enqueue(request)).reply {
        Reply::Enqueue(reply) => reply,
        other => panic!("enqueue replied {other:?}"),
    }
}

fn acquire(db: &Db, now_ms: u64, who: &str, options: Options) -> Reply {
    step(
        db,
        now_ms,
        Input::Acquire(AcquireRequest {
            id: id(who),
            options,
        }),
    )
    .reply
}

/// `acquire`, and its second phase when it checks a holder (found alive).
fn acquire_alive(db: &Db, now_ms: u64, who: &str, options: Options) -> Reply {
    match acquire(db, now_ms, who, options) {
        Reply::AcquireChecking { request, holder } => {
            step(
                db,
                now_ms,
                Input::AcquireChecked {
                    request,
                    holder,
                    answer: Liveness::Alive.into(),
                },
            )
            .reply
        }
        reply => reply,
    }
}

/// Releases `who`; the instance handed its slot, if any.
fn release(db: &Db, now_ms: u64, who: &str) -> Option<String> {
    match step(db, now_ms, Input::Release(id(who))).reply {
        Reply::Release(next) => next.map(|n| n.to_string()),
        other => panic!("release replied {other:?}"),
    }
}

fn waiting(db: &Db) -> Vec<String> {
    inspect(&Counted::new(db), KEY)
        .1
        .iter()
        .map(|w| w.id.to_string())
        .collect()
}

/// Releases the holder `first` and every holder after it, in turn: the
/// order the key is handed on.
fn drain(db: &Db, mut now_ms: u64, first: &str) -> Vec<String> {
    let mut order = Vec::new();
    let mut holder = first.to_owned();
    while let Some(next) = release(db, now_ms, &holder) {
        now_ms += 10;
        order.push(next.clone());
        holder = next;
    }
    order
}

/// The README's worked example: three tenants behind a holder, acme with
/// four waiters, globex one, initech two, and an urgent waiter of no
/// tenant. The urgent one goes first; then the tenants take turns in the
/// order their first waiters came; acme's extra waiters wait for the
/// others' turns.
#[test]
fn priorities_first_then_tenants_take_turns() {
    let db = db();
    assert!(matches!(
        acquire(&db, 1, "holder", Options::default()),
        Reply::Acquire(AcquireReply::Granted { .. })
    ));
    for (n, (who, of)) in [
        ("a1", "acme"),
        ("a2", "acme"),
        ("a3", "acme"),
        ("a4", "acme"),
        ("g1", "globex"),
        ("i1", "initech"),
        ("i2", "initech"),
    ]
    .into_iter()
    .enumerate()
    {
        enqueue(&db, 10 + n as u64, who, 0, Some(of));
    }
    enqueue(&db, 20, "urgent", 10, None);
    enqueue(&db, 21, "later", -5, None);
    // The README's table, and a waiter of a lower priority after it.
    let expected = ["urgent", "a1", "g1", "i1", "a2", "i2", "a3", "a4", "later"];
    assert_eq!(waiting(&db), expected, "inspect lists the hand-off order");
    assert_eq!(drain(&db, 100, "holder"), expected);
}

/// A tenant served goes to the back of the round: a tenant that queues many
/// waiters gets one grant per round however early they came, and one that
/// comes back later goes first only if never served.
#[test]
fn a_busy_tenant_gets_one_grant_per_round() {
    let db = db();
    acquire(&db, 1, "holder", Options::default());
    for n in 0..6 {
        enqueue(&db, 10 + n, &format!("big{n}"), 0, Some("big"));
    }
    enqueue(&db, 20, "small0", 0, Some("small"));
    enqueue(&db, 21, "shared0", 0, None);
    // big0 first (earliest waiter of the never-served), then the others.
    assert_eq!(release(&db, 30, "holder").as_deref(), Some("big0"));
    // A newcomer of a tenant never served goes before big's next turn.
    enqueue(&db, 31, "fresh0", 0, Some("fresh"));
    assert_eq!(
        waiting(&db),
        ["small0", "shared0", "fresh0", "big1", "big2", "big3", "big4", "big5"]
    );
    assert_eq!(release(&db, 40, "big0").as_deref(), Some("small0"));
    // small, served now, comes back behind big's turn (big waits, served earlier).
    enqueue(&db, 41, "small1", 0, Some("small"));
    assert_eq!(
        drain(&db, 50, "small0"),
        ["shared0", "fresh0", "big1", "small1", "big2", "big3", "big4", "big5"]
    );
}

/// `position` (grant replies) and `etaMs`: the mean of the last finished
/// holds times the rounds of `limit` ahead, null before any finished hold.
#[test]
fn positions_and_estimates() {
    let db = db();
    let grant = |priority: i8, of: Option<&str>| Options {
        grant: true,
        ..options(priority, of)
    };
    let place = |reply: Reply| match reply {
        Reply::Acquire(AcquireReply::Placed(Place {
            position, eta_ms, ..
        })) => (position, eta_ms),
        other => panic!("not pending with a place: {other:?}"),
    };
    acquire(&db, 1_000, "h0", Options::default());
    // Before any finished hold: no estimate.
    assert_eq!(
        place(acquire_alive(&db, 1_001, "x", grant(0, Some("t1")))),
        (1, None)
    );
    // Holds of 100 (h0), 200 (x, handed h0's slot in t1's turn) and 300 ms: mean 200.
    assert_eq!(release(&db, 1_100, "h0").as_deref(), Some("x"));
    release(&db, 1_300, "x");
    acquire(&db, 1_300, "y", Options::default());
    release(&db, 1_600, "y");
    acquire(&db, 2_000, "h1", Options::default());
    for (n, of) in ["t1", "t1", "t1", "t2"].into_iter().enumerate() {
        enqueue(&db, 2_001 + n as u64, &format!("q{n}"), 0, Some(of));
    }
    // t2, never served, goes before t1, served (x).
    assert_eq!(waiting(&db), ["q3", "q0", "q1", "q2"]);
    assert_eq!(
        place(acquire_alive(&db, 2_010, "q2", grant(0, None))),
        (4, Some(800))
    );
    // A newcomer of a higher priority is next; one of t2 stands after the
    // round in which q3 goes, behind t1's next (t2 is not served yet: q3
    // is ahead of it in its own tenant, one round).
    assert_eq!(
        place(acquire_alive(&db, 2_011, "n1", grant(1, None))),
        (1, Some(200))
    );
    assert_eq!(
        place(acquire_alive(&db, 2_012, "n2", grant(0, Some("t2")))),
        (4, Some(800))
    );
    let rows = inspect(&Counted::new(&db), KEY);
    assert_eq!(
        rows.1.iter().map(|w| w.id.to_string()).collect::<Vec<_>>(),
        ["n1", "q3", "q0", "n2", "q1", "q2"]
    );
    assert_eq!(rows.0.hold_times_ms, vec![100, 200, 300]);
    // Limit 2: n1 is handed the free slot; q1 is 4th of 5, in the second
    // round of two slots.
    assert_eq!(
        place(acquire_alive(
            &db,
            2_013,
            "q1",
            Options {
                limit: Some(2),
                grant: true,
                ..Options::default()
            }
        )),
        (4, Some(400))
    );
    let summary = inspect(&Counted::new(&db), KEY).0;
    assert_eq!(coordinator::eta_ms(&summary, 5), Some(600));
}

/// The key keeps its last 20 hold times, in the trigger and in memory alike.
#[test]
fn the_last_twenty_holds_are_kept() {
    let db = db();
    let mut now = 0;
    for n in 1..=25u64 {
        acquire(&db, now, "h", Options::default());
        now += n;
        release(&db, now, "h");
    }
    let summary = inspect(&Counted::new(&db), KEY).0;
    assert_eq!(summary.hold_times_ms, (6..=25).collect::<Vec<u64>>());
    // A handed slot found dead before it was confirmed held nothing.
    acquire(&db, now, "h", Options::default());
    enqueue(&db, now, "w", 0, None);
    let handed = step(&db, now + 5, Input::Release(id("h")));
    let holder = handed.state.summary.holders[0].clone();
    assert_eq!(holder.state, HolderState::Handed);
    step(
        &db,
        now + 7,
        Input::Woken {
            holder,
            answer: Liveness::Dead.into(),
        },
    );
    let summary = inspect(&Counted::new(&db), KEY).0;
    assert_eq!(summary.hold_times_ms.last(), Some(&5));
    assert!(summary.holders.is_empty());
}

/// `onBusy: "skip"`: busy with nothing registered and nothing changed on a
/// held key and on a key with waiters; granted on a free key; an id already
/// waiting is answered as without it; a dead holder is checked first.
#[test]
fn skip_when_busy_registers_nothing() {
    let db = db();
    let skip = |limit: Option<u32>| Options {
        skip: true,
        limit,
        ..Options::default()
    };
    let rows = |db: &Db| format!("{:?}", inspect(&Counted::new(db), KEY));
    // A free key: granted at once.
    assert!(matches!(
        acquire(&db, 1, "a", skip(None)),
        Reply::Acquire(AcquireReply::Granted { fence: 1 })
    ));
    // Held, nobody waiting: the holder is checked first.
    let before = rows(&db);
    let checking = acquire(&db, 2, "b", skip(None));
    let Reply::AcquireChecking { request, holder } = checking else {
        panic!("{checking:?}")
    };
    assert_eq!(rows(&db), before, "a first phase that skips writes nothing");
    let alive = step(
        &db,
        3,
        Input::AcquireChecked {
            request: request.clone(),
            holder: holder.clone(),
            answer: Liveness::Alive.into(),
        },
    );
    assert_eq!(alive.reply, Reply::Acquire(AcquireReply::Busy));
    // Nothing registered or changed: the only write is the holder's
    // check, which §10a keeps whatever asked it.
    assert_eq!(
        alive.writes,
        [Write::MarkChecked(holder.id.clone(), 3, Status::Running)]
    );
    assert_eq!(rows(&db), before);
    // The holder dead: its slot is the caller's.
    let dead = step(
        &db,
        4,
        Input::AcquireChecked {
            request,
            holder,
            answer: Liveness::Dead.into(),
        },
    );
    assert_eq!(
        dead.reply,
        Reply::Acquire(AcquireReply::Granted { fence: 2 })
    );
    // With a limit it names that leaves room: granted, and the limit kept.
    assert!(matches!(
        acquire(&db, 5, "c", skip(Some(2))),
        Reply::Acquire(AcquireReply::Granted { fence: 3 })
    ));
    // A waiter: enqueue and acquire that skip answer busy, nothing changes.
    enqueue(&db, 6, "w", 0, None);
    let before = rows(&db);
    let busy = step(
        &db,
        7,
        Input::Enqueue(EnqueueRequest {
            supersedes: true,
            id: id("e"),
            input_hash: None,
            options: skip(Some(5)),
        }),
    );
    assert_eq!(
        busy.reply,
        Reply::Enqueue(EnqueueReply {
            busy: true,
            ..EnqueueReply::default()
        })
    );
    assert!(busy.writes.is_empty() && busy.effects.is_empty());
    assert_eq!(
        acquire(&db, 8, "f", skip(None)),
        Reply::Acquire(AcquireReply::Busy)
    );
    assert_eq!(rows(&db), before);
    // The waiter itself, skipping, is answered as a waiter.
    assert!(matches!(
        acquire(&db, 9, "w", skip(None)),
        Reply::AcquireChecking { .. }
    ));
    // A free slot and no waiter: an enqueue that skips registers.
    release(&db, 10, "w");
    release(&db, 11, "c");
    let free = enqueue(&db, 12, "g", 0, None);
    assert!(!free.busy);
    assert_eq!(waiting(&db), ["g"]);
}

/// Waiters of a database from before §1c read as priority 0 of the shared
/// tenant, in their order, and new ones queue behind or around them.
#[test]
fn older_waiters_read_as_priority_zero_of_the_shared_tenant() {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch(include_str!("fixtures/coordinator_v1.sql"))
        .expect("fixture loads");
    let db = Db {
        conn,
        log: RefCell::new(None),
    };
    migrate(&db);
    let (summary, waiters, _) = inspect(&Counted::new(&db), "repo/main");
    assert!(!waiters.is_empty());
    assert!(waiters
        .iter()
        .all(|w| w.priority == 0 && w.tenant.is_none()));
    let old: Vec<String> = waiters.iter().map(|w| w.id.to_string()).collect();
    let urgent = EnqueueRequest {
        supersedes: false,
        id: id("urgent"),
        input_hash: None,
        options: options(3, Some("acme")),
    };
    let sql = Counted::new(&db);
    let view = load(
        &sql,
        "repo/main",
        Some(summary),
        &Input::Enqueue(urgent.clone()),
    );
    let t = decide(
        &view,
        &settings(),
        2_000_000_000_000,
        Input::Enqueue(urgent),
    )
    .unwrap();
    write(&sql, "repo/main", &t.writes);
    let now: Vec<String> = inspect(&Counted::new(&db), "repo/main")
        .1
        .iter()
        .map(|w| w.id.to_string())
        .collect();
    assert_eq!(now[0], "urgent");
    assert_eq!(now[1..], old[..]);
}

// ---------------------------------------------------------------------------
// P4 with tenants: the flat cost of §1 behind 10,000 waiters of 100 tenants
// and 3 priorities.
// ---------------------------------------------------------------------------

/// A key held by `holder` with `n` waiters; `spread`: over 100 tenants and
/// priorities -1, 0 and 1 (round robin), else all of the shared tenant.
fn fill(db: &Db, key: &str, n: usize, spread: bool) {
    db.conn.execute_batch("BEGIN").expect("begin");
    let mut writes = vec![coordinator::Write::AddHolder(Holder {
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
        writes.push(coordinator::Write::PushWaiter(
            Waiter {
                id: id(&format!("w{i}")),
                since_ms: 10 + i as u64,
                input_hash: None,
                workflow: None,
                enqueued_ms: Some(10 + i as u64),
                turn: Turn::Shared,
                priority: if spread { (i % 3) as i8 - 1 } else { 0 },
                tenant: spread.then(|| tenant(&format!("tenant-{}", i % 100))),
            },
            baton::coordinator::Layout::Shared,
        ));
    }
    write(&Counted::new(db), key, &writes);
    db.conn.execute_batch("COMMIT").expect("commit");
}

/// What one decision cost SQLite: statements, VM steps, full-scan steps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cost {
    statements: usize,
    vm_steps: i32,
    fullscan_steps: i32,
}

fn measured(db: &Db, key: &str, now_ms: u64, input: Input) -> (String, Cost) {
    *db.log.borrow_mut() = Some(Vec::new());
    let sql = Counted::new(db);
    let view = load(&sql, key, None, &input);
    let t = decide(&view, &settings(), now_ms, input).expect("decided");
    write(&sql, key, &t.writes);
    let log = db.log.borrow_mut().take().expect("recording");
    let reply = match &t.reply {
        Reply::Acquire(reply) => format!("{reply:?}"),
        Reply::AcquireChecking { .. } => "checks the holder".to_owned(),
        Reply::Enqueue(_) => "enqueued".to_owned(),
        Reply::Release(next) => format!("hands to {next:?}"),
        other => format!("{other:?}"),
    };
    let woken = t
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Wake(_)))
        .count();
    (
        format!("{reply}, {woken} woken"),
        Cost {
            statements: log.len(),
            vm_steps: log.iter().map(|(_, v, _)| v).sum(),
            fullscan_steps: log.iter().map(|(_, _, f)| f).sum(),
        },
    )
}

/// P4's tenants row (printed with `--nocapture`): each operation of the
/// bench's round (enqueue, acquire that waits, release by a waiter) and
/// the hand-off (release by the holder), behind 10,000 waiters of 100
/// tenants and 3 priorities against 10 of one tenant: at most 1.5 times
/// the statements and SQLite's VM steps, and no table scanned. A grant
/// reply's `position` is measured too: it reads one row per tenant at
/// the caller's priority and above, so it is reported, not bounded.
#[test]
fn p4_tenants_cost_at_most_one_and_a_half_times_behind_ten() {
    let db = db();
    fill(&db, "short", 10, false);
    fill(&db, "long", 10_000, true);
    fill(&db, "zz-neighbour", 1, false);
    let newcomer = |who: &str, grant: bool| {
        Input::Acquire(AcquireRequest {
            id: id(who),
            options: Options {
                grant,
                tenant: Some(tenant("tenant-7")),
                ..Options::default()
            },
        })
    };
    let enqueue_new = |who: &str| {
        Input::Enqueue(EnqueueRequest {
            supersedes: false,
            id: id(who),
            input_hash: None,
            options: options(0, Some("tenant-7")),
        })
    };
    type Case<'a> = (&'a str, Box<dyn Fn() -> Input + 'a>, bool);
    let cases: Vec<Case<'_>> = vec![
        ("enqueue", Box::new(|| enqueue_new("late")), true),
        (
            "acquire (waits)",
            Box::new(|| newcomer("late2", false)),
            true,
        ),
        (
            "acquire checked (holder alive)",
            Box::new(|| Input::AcquireChecked {
                request: AcquireRequest {
                    id: id("late2"),
                    options: Options::default(),
                },
                holder: Holder {
                    id: id("holder"),
                    since_ms: 1,
                    state: HolderState::Holding,
                    workflow: None,
                    enqueued_ms: None,
                    turn: Turn::Shared,
                    fence: 1,
                    cancelling: false,
                    waited_ms: 0,
                },
                answer: Liveness::Alive.into(),
            }),
            true,
        ),
        (
            "release (a waiter leaves)",
            Box::new(|| Input::Release(id("late"))),
            true,
        ),
        (
            "release (the holder hands on)",
            Box::new(|| Input::Release(id("holder"))),
            true,
        ),
        (
            "acquire with grant (position)",
            Box::new(|| newcomer("late3", true)),
            false,
        ),
    ];
    let mut report = Vec::new();
    for (name, input, bounded) in cases {
        let (short_reply, short) = measured(&db, "short", 1_000, input());
        let (long_reply, long) = measured(&db, "long", 1_000, input());
        report.push(format!(
            "{name:32} statements {:>2} / {:>2}   VM steps {:>5} / {:>5} ({:.2}x)   {short_reply} | {long_reply}",
            short.statements,
            long.statements,
            short.vm_steps,
            long.vm_steps,
            f64::from(long.vm_steps) / f64::from(short.vm_steps)
        ));
        assert_eq!(long.fullscan_steps, 0, "{name}: a table scanned");
        if bounded {
            assert!(
                long.statements as f64 <= 1.5 * short.statements as f64,
                "{name}: {long:?} vs {short:?}"
            );
            assert!(
                f64::from(long.vm_steps) <= 1.5 * f64::from(short.vm_steps),
                "{name}: {long:?} vs {short:?}\n{}",
                report.join("\n")
            );
        }
    }
    println!("P4 with tenants (10 waiters / 10,000 of 100 tenants, 3 priorities):");
    println!("{}", report.join("\n"));
}

/// A priority and a tenant (`None`: the shared one).
type Share = (i8, Option<Ident>);

/// The key's waiters in the order they joined and each tenant's last
/// service, read straight from the tables (not through the store's reads),
/// for the pure order to work on.
fn rows_as_arrived(db: &Db) -> (Vec<Waiter>, Vec<(Share, u64)>) {
    let key = SqlValue::Text(KEY.to_owned());
    let text = |v: &SqlValue| match v {
        SqlValue::Text(s) => s.clone(),
        other => panic!("text column {other:?}"),
    };
    let int = |v: &SqlValue| match v {
        SqlValue::Integer(n) => *n,
        other => panic!("integer column {other:?}"),
    };
    let share = |p: &SqlValue, t: &SqlValue| {
        let t = text(t);
        let priority = i8::try_from(int(p)).expect("priority");
        (priority, (!t.is_empty()).then(|| tenant(&t)))
    };
    let arrived = sqlite::run(
        &db.conn,
        "SELECT id, priority, tenant FROM coordinator_waiters WHERE key = ?1 ORDER BY seq",
        std::slice::from_ref(&key),
    )
    .rows
    .iter()
    .map(|row| {
        let (priority, tenant) = share(&row[1], &row[2]);
        Waiter {
            id: id(&text(&row[0])),
            since_ms: 0,
            input_hash: None,
            workflow: None,
            enqueued_ms: None,
            turn: Turn::Shared,
            priority,
            tenant,
        }
    })
    .collect();
    let served = sqlite::run(
        &db.conn,
        "SELECT priority, tenant, served FROM coordinator_tenants \
         WHERE key = ?1 AND served IS NOT NULL",
        &[key],
    )
    .rows
    .iter()
    .map(|row| (share(&row[0], &row[1]), int(&row[2]) as u64))
    .collect();
    (arrived, served)
}

/// The place a store's answer to a `Read::Place` gives (`None`: it
/// answered another read).
fn place_of(fetched: baton::coordinator::Read<baton::coordinator::Fetched>) -> Option<u32> {
    match fetched {
        baton::coordinator::Read::Place { place, .. } => Some(place),
        _ => None,
    }
}

/// Holds the store's fast reads of the §1c order (`Read::Front`, which
/// seeks each tenant's turn through `coordinator_tenants`, and
/// `Read::Place`, which counts without walking the queue) to the order's
/// one statement, `coordinator::hand_off_order`, on queues built row by
/// row: several tenants at equal priorities, tenants never served beside
/// served ones, tenants served by the same fence (a tie only the tenants'
/// earliest waiters, their seqs, break), waiters leaving from anywhere, and
/// newcomers of every priority and tenant, present or not. Every other
/// seed, one share joins, kept in `Layout::Sole`, and the reads go by it
/// (the front by arrival, a place by `store::order::load_sole_place`).
#[test]
fn the_stores_fast_reads_agree_with_the_pure_order() {
    use baton::coordinator::{
        execute, hand_off_order, layout_of, place_in_order, Layout, Read, Write,
    };
    let tenants = [None, Some("a"), Some("b"), Some("c"), Some("d")];
    let priorities = [0i8, 0, 0, 5, -3];
    let mut checked = (0u32, 0u32, 0u32);
    for seed in 0..40u64 {
        let db = db();
        let sql = Counted::new(&db);
        let mut rng = common::Rng(seed);
        let mut next = 0;
        let mut fence = 0;
        let mut waiting: Vec<InstanceId> = Vec::new();
        // Every other seed, one share joins, kept in `Layout::Sole`.
        let sole = (seed % 2 == 1).then(|| (*rng.pick(&priorities), *rng.pick(&tenants)));
        for _ in 0..rng.range(1, 60) {
            let writes = match rng.below(10) {
                0..=5 => {
                    next += 1;
                    let who = id(&format!("w{next}"));
                    waiting.push(who.clone());
                    vec![Write::PushWaiter(
                        Waiter {
                            id: who,
                            since_ms: next,
                            input_hash: None,
                            workflow: None,
                            enqueued_ms: None,
                            turn: Turn::Shared,
                            priority: sole.map_or_else(|| *rng.pick(&priorities), |s| s.0),
                            tenant: sole
                                .map_or_else(|| *rng.pick(&tenants), |s| s.1)
                                .map(tenant),
                        },
                        sole.map_or(Layout::Shared, |_| Layout::Sole),
                    )]
                }
                6 | 7 => {
                    // Every few services, two tenants share one fence.
                    if !rng.percent(20) {
                        fence += 1;
                    }
                    vec![Write::Serve {
                        priority: *rng.pick(&priorities),
                        tenant: rng.pick(&tenants).map(tenant),
                        fence: fence.max(1),
                    }]
                }
                _ if waiting.is_empty() => Vec::new(),
                _ => {
                    let gone = waiting.remove(rng.below(waiting.len() as u64) as usize);
                    vec![Write::RemoveWaiter(gone)]
                }
            };
            write(&sql, KEY, &writes);
        }
        let (arrived, served) = rows_as_arrived(&db);
        let served_of = |p: i8, t: Option<&Ident>| {
            served
                .iter()
                .find(|((sp, st), _)| *sp == p && st.as_ref() == t)
                .map(|(_, f)| *f)
        };
        let order = hand_off_order(&arrived, served_of);
        let layout = layout_of(&coordinator::load_summary(&sql, KEY));
        let ids = |ws: &[Waiter]| ws.iter().map(|w| w.id.to_string()).collect::<Vec<_>>();
        for n in 1..=order.len() {
            let Read::Front(_, _, front) = execute(&sql, KEY, Read::Front(n as u32, layout, ()))
            else {
                panic!("a front answers a front")
            };
            assert_eq!(ids(&front), ids(&order[..n]), "seed {seed}: front of {n}");
            checked.0 += 1;
        }
        for (n, waiter) in order.iter().enumerate() {
            let read = Read::Place {
                id: waiter.id.clone(),
                priority: waiter.priority,
                tenant: waiter.tenant.clone(),
                layout,
                place: (),
            };
            assert_eq!(
                place_of(execute(&sql, KEY, read)),
                Some(n as u32 + 1),
                "seed {seed}: place of {}",
                waiter.id
            );
            checked.1 += 1;
        }
        for priority in [0i8, 5, -3, 7, -100] {
            for of in tenants.iter().chain(&[Some("new")]) {
                let of = of.map(tenant);
                let newcomer = id("newcomer");
                let expected =
                    place_in_order(&arrived, served_of, &newcomer, priority, of.as_ref());
                let read = Read::Place {
                    id: newcomer,
                    priority,
                    tenant: of.clone(),
                    layout,
                    place: (),
                };
                assert_eq!(
                    place_of(execute(&sql, KEY, read)),
                    Some(expected),
                    "seed {seed}: a newcomer of priority {priority}, tenant {of:?}"
                );
                checked.2 += 1;
            }
        }
    }
    // Each kind of comparison ran, many times over.
    assert!(
        checked.0 > 200 && checked.1 > 200 && checked.2 > 200,
        "{checked:?}"
    );
}
