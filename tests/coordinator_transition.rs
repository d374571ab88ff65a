//! The Coordinator's one decision on its two storages: `decide` over the
//! view `KeyTwin::load` gives, its writes applied by `apply`, and
//! over the view `coordinator::load` reads from SQLite with the summary
//! carried between decisions as the shell's memory carries it (now and then
//! dropped, as by a restart), its writes carried out by `coordinator::write`.
//! Step by step: the same view, the same transition, the same key after,
//! on a database created fresh and on one that climbed the schema ladder.
//! And the cost of that path: P3/P5 (an uncontended pair reads nothing and
//! writes two rows) and P4 (no input's cost grows with the queue).

use baton::coordinator::Effect;
use baton::coordinator::{
    self, AcquireRequest, EnqueueRequest, Holder, Input, KeyTwin, Liveness, Member, Options, Reply,
    Settings, Summary, Turn, Waiter,
};
use baton::coordinator::{health_rows, history};
use baton::ident::{Ident, InputHash, InstanceId, WorkflowName};
use baton::sql::{Counted, SqlExec, SqlValue};
mod common;
use common::{sqlite, Rng};
use rusqlite::Connection;

struct Db(Connection);

impl SqlExec for Db {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        sqlite::run(&self.0, sql, params).rows
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).expect("valid test id")
}
fn hash(s: &str) -> InputHash {
    InputHash::parse("inputHash", s).expect("valid test hash")
}
fn workflow(s: &str) -> WorkflowName {
    WorkflowName::new(s.to_owned()).expect("valid test workflow")
}

const GRACE_MS: u64 = 60_000;
const KEY: &str = "repo/main";

fn settings() -> Settings {
    Settings {
        grace_ms: GRACE_MS,
        workflow: "WF".to_owned(),
    }
}

/// A second phase waiting for its liveness answer.
#[derive(Debug, Clone)]
enum Pending {
    Enqueue(EnqueueRequest, Waiter),
    Acquire(AcquireRequest, Holder),
    Woken(Holder),
    Tick(Holder),
    /// §1d: a cancelled holder, terminated; its status to re-enter.
    Cancelled(Holder),
}

fn woken(effects: &[Effect]) -> Vec<InstanceId> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Wake(w) => Some(w.id.clone()),
            _ => None,
        })
        .collect()
}

/// Everything the in-memory key answers, for a pool of ids.
fn observe(key: &KeyTwin, ids: &[InstanceId]) -> String {
    let members: Vec<Member> = ids.iter().map(|i| key.member(i)).collect();
    let tenants: Vec<String> = key
        .tenants()
        .iter()
        .map(|((p, t), turn)| {
            // Seqs are each store's own (the rows' restart with an empty
            // queue); the order they give shows in the waiters' order.
            format!(
                "{p} {:?} {} {:?}",
                t.as_ref().map_or("", |t| t.as_str()),
                turn.waiters,
                turn.served
            )
        })
        .collect();
    let history = &key.history;
    // §10a: each holder's last check (when, what) and the failures' start.
    let checks: Vec<_> = (key.checks().iter())
        .map(|c| c.map(|(at, answer, _)| (at, answer)))
        .collect();
    format!(
        "summary {:?} waiters {:?} superseded {} members {members:?} tenants {tenants:?} \
         recent {:?} counts {:?} dead at {:?} owed {} checks {checks:?} failing {:?}",
        key.summary(),
        key.hand_off_order(),
        key.superseded_count(),
        history.recent(),
        history.counts,
        history.dead_at_ms,
        history.report_owed,
        key.failing_since(),
    )
}

/// The same, as the tables answer it.
fn observe_rows(db: &Db, ids: &[InstanceId]) -> String {
    let sql = Counted::new(db);
    let members: Vec<Member> = ids
        .iter()
        .map(|i| {
            coordinator::load(&sql, KEY, None, &Input::Release(i.clone()))
                .member
                .expect("a release names its id")
        })
        .collect();
    let (summary, waiters, superseded) = coordinator::inspect(&sql, KEY);
    // The rows' seqs count from 1 per key, as the in-memory key's do.
    let tenants: Vec<String> = sqlite::run(
        &db.0,
        "SELECT priority, tenant, waiters, NULL, served FROM coordinator_tenants \
         WHERE key = ?1 ORDER BY priority, tenant",
        &[SqlValue::Text(KEY.to_owned())],
    )
    .rows
    .iter()
    .map(|row| {
        let n = |v: &SqlValue| match v {
            SqlValue::Integer(n) => Some(*n as u64),
            _ => None,
        };
        let SqlValue::Text(tenant) = &row[1] else {
            panic!("tenant is text")
        };
        format!(
            "{} {tenant:?} {} {:?}",
            n(&row[0]).map_or(0, |p| p as i64 as i8),
            n(&row[2]).unwrap_or(0),
            n(&row[4])
        )
    })
    .collect();
    let (recent, counts) = history::inspect(&sql, KEY);
    let marks = sqlite::run(
        &db.0,
        "SELECT dead_at_ms, list_owed FROM coordinator_keys WHERE key = ?1",
        &[SqlValue::Text(KEY.to_owned())],
    )
    .rows;
    let (dead_at, owed) = match marks.first().map(|row| (&row[0], &row[1])) {
        Some((SqlValue::Integer(at), SqlValue::Integer(owed))) => (Some(*at as u64), *owed == 1),
        Some((_, SqlValue::Integer(owed))) => (None, *owed == 1),
        _ => (None, false),
    };
    let seen = health_rows::inspect(&sql, KEY, &summary, &waiters, &recent, 1, 0);
    let checks: Vec<_> = (seen.checked.iter())
        .map(|c| c.map(|c| (c.at_ms, c.answer)))
        .collect();
    let failing = health_rows::failing_since(&sql, KEY);
    format!(
        "summary {summary:?} waiters {:?} superseded {superseded} members {members:?} tenants {tenants:?} \
         recent {recent:?} counts {counts:?} dead at {dead_at:?} owed {owed} checks {checks:?} failing {failing:?}",
        waiters.iter().collect::<Vec<_>>()
    )
}

fn random_options(rng: &mut Rng) -> Options {
    Options {
        workflow: rng
            .percent(40)
            .then(|| workflow(rng.pick::<&str>(&["WF_A", "WF_B"]))),
        limit: rng.percent(20).then(|| rng.range(1, 4) as u32),
        grant: rng.percent(40),
        priority: *rng.pick(&[0, 0, 0, 5, -3]),
        tenant: rng
            .percent(60)
            .then(|| Ident::new(rng.pick::<&str>(&["acme", "globex", "initech"]).to_string()))
            .map(|t| t.expect("valid tenant")),
        skip: rng.percent(10),
        // Refused on acquire and without supersedes: rare, so that the
        // other paths keep their share (enqueues set it below).
        cancel_holders: rng.percent(2),
        // §1f: a small cap now and then, so that some calls find it full.
        max_waiting: rng.percent(10).then(|| rng.range(1, 4) as u32),
    }
}

/// How the run's database got its schema.
#[derive(Debug, Clone, Copy)]
enum Schema {
    /// As a new object gets it: the ladder's result in one step
    /// (`coordinator::migrate` on an empty database).
    Fresh,
    /// As an object from the first release upgraded through every one
    /// since gets it: every step of the ladder in turn, so its rows run
    /// the triggers those steps wrote.
    Climbed,
}

fn database(schema: Schema) -> Db {
    let db = Db(Connection::open_in_memory().expect("db"));
    if let Schema::Climbed = schema {
        db.run(coordinator::schema::CREATE_VERSION_TABLE, &[]);
        for step in coordinator::schema::MIGRATIONS {
            for statement in *step {
                db.run(statement, &[]);
            }
        }
        let version = SqlValue::Integer(coordinator::schema::CURRENT_VERSION);
        db.run(coordinator::schema::WRITE_VERSION, &[version]);
    }
    // A no-op on the climbed one, which is at the current version.
    coordinator::migrate(&db);
    db
}

fn run(seed: u64, schema: Schema) {
    let mut ids: Vec<InstanceId> = (0..8).map(|i| id(&format!("run-{i}"))).collect();
    let hashes: Vec<InputHash> = (0..3).map(|i| hash(&format!("in{i}"))).collect();
    let db = database(schema);
    let mut after = KeyTwin::default();
    let mut summary: Option<Summary> = None;
    let mut pending: Vec<Pending> = Vec::new();
    let mut rng = Rng(seed ^ 0x5EED);
    let mut now_ms = 1_700_000_000_000u64;
    let mut history: Vec<String> = Vec::new();
    for step in 0..300 {
        now_ms += rng.below(40_000);
        if rng.percent(15) {
            ids.push(id(&format!("run-{}", ids.len())));
        }
        let live = ids[ids.len() - 8..].to_vec();
        let liveness = *rng.pick(&[
            Liveness::Alive,
            Liveness::Dead,
            Liveness::NotFound,
            Liveness::Unknown,
        ]);
        let input = if !pending.is_empty() && rng.percent(35) {
            let i = rng.below(pending.len() as u64) as usize;
            match pending.swap_remove(i) {
                Pending::Enqueue(request, candidate) => Input::EnqueueChecked {
                    request,
                    candidate,
                    liveness,
                },
                Pending::Acquire(request, holder) => Input::AcquireChecked {
                    request,
                    holder,
                    answer: liveness.into(),
                },
                Pending::Woken(holder) if rng.percent(50) => Input::Accepted { holder },
                Pending::Woken(holder) => Input::Woken {
                    holder,
                    answer: liveness.into(),
                },
                Pending::Tick(holder) => Input::TickChecked {
                    holder,
                    answer: liveness.into(),
                },
                Pending::Cancelled(holder) => Input::Cancelled {
                    holder,
                    answer: liveness.into(),
                },
            }
        } else {
            match rng.below(100) {
                0..35 => {
                    let supersedes = rng.percent(30);
                    let mut options = random_options(&mut rng);
                    // §1d: a superseding enqueue cancels the holders now and then.
                    options.cancel_holders |= supersedes && rng.percent(40);
                    Input::Enqueue(EnqueueRequest {
                        supersedes,
                        id: rng.pick(&live).clone(),
                        input_hash: rng.percent(70).then(|| rng.pick(&hashes).clone()),
                        options,
                    })
                }
                35..65 => Input::Acquire(AcquireRequest {
                    id: rng.pick(&live).clone(),
                    options: random_options(&mut rng),
                }),
                65..90 => Input::Release(rng.pick(&live).clone()),
                90..95 => Input::Tick,
                // §11: the operator's pause, resume and limit, on both storages.
                95..97 => Input::Pause {
                    reason: rng.percent(50).then(|| format!("r{}", rng.below(3))),
                },
                97..98 => Input::Resume,
                _ => Input::SetLimit(rng.percent(70).then(|| rng.range(1, 4) as u32)),
            }
        };
        let view = after.load(&input);
        let new = coordinator::decide(&view, &settings(), now_ms, input.clone());

        let sql = Counted::new(&db);
        let sql_view = coordinator::load(&sql, KEY, summary.take(), &input);
        assert_eq!(
            sql_view,
            view,
            "seed {seed} step {step}: the SQL view differs\n{}",
            history.join("\n")
        );
        let new_sql = coordinator::decide(&sql_view, &settings(), now_ms, input.clone());
        history.push(format!(
            "{step} at {now_ms}: {input:?} -> {:?}",
            new.as_ref().map(|t| (&t.reply, woken(&t.effects)))
        ));
        match (&new_sql, &new) {
            (Err(a), Err(b)) => assert_eq!(a, b),
            (Ok(on_rows), Ok(t)) => {
                assert_eq!(
                    on_rows,
                    t,
                    "seed {seed} step {step}: the decision on the rows\n{}",
                    history.join("\n")
                );
                coordinator::apply(&mut after, &t.writes);
                coordinator::write(&sql, KEY, &on_rows.writes);
                assert_eq!(
                    t.state.summary,
                    after.summary(),
                    "seed {seed} step {step}: state"
                );
                // The alarm's sweep across keys is `needs_check` in SQL.
                assert_eq!(
                    coordinator::keys_due(&sql, 10) == [KEY],
                    coordinator::needs_check(&after.summary()),
                    "seed {seed} step {step}: keys_due disagrees with needs_check"
                );
                for e in &t.effects {
                    match e {
                        Effect::Wake(w) => {
                            let holder = after
                                .holders()
                                .into_iter()
                                .find(|h| h.id == w.id)
                                .expect("a woken instance holds");
                            pending.push(Pending::Woken(holder));
                        }
                        Effect::TerminateHolder { holder, .. } => {
                            pending.push(Pending::Cancelled(holder.clone()))
                        }
                        Effect::Check(_) | Effect::Terminate(_) => {}
                    }
                }
                match &t.reply {
                    Reply::EnqueueChecking { request, candidate } => {
                        pending.push(Pending::Enqueue(request.clone(), candidate.clone()))
                    }
                    Reply::AcquireChecking { request, holder } => {
                        pending.push(Pending::Acquire(request.clone(), holder.clone()))
                    }
                    Reply::Ticked(due) => pending.extend(due.iter().cloned().map(Pending::Tick)),
                    _ => {}
                }
                pending.truncate(12);
            }
            (a, b) => panic!(
                "seed {seed} step {step}: {a:?} vs {b:?}\n{}",
                history.join("\n")
            ),
        }
        assert_eq!(
            observe_rows(&db, &ids),
            observe(&after, &ids),
            "seed {seed} step {step}: the tables differ\n{}",
            history.join("\n")
        );
        // The shell's memory: the summary as the decision left it, or now
        // and then none (a restart).
        summary = if rng.percent(5) {
            None
        } else {
            Some(after.summary())
        };
        if let Some(s) = &summary {
            assert_eq!(*s, coordinator::load_summary(&Counted::new(&db), KEY));
        }
    }
}

/// On both schemas, seed by seed in turn (each gets half the seeds, and
/// the test costs what it did on one): a fresh object's, and one that
/// climbed the ladder, whose triggers are the steps' own, which a fresh
/// object never runs.
#[test]
fn the_rows_follow_the_in_memory_key_decision_by_decision() {
    for seed in common::seeds(0..200) {
        let schema = if seed % 2 == 0 {
            Schema::Fresh
        } else {
            Schema::Climbed
        };
        common::replay_on_failure("coordinator_transition", seed, || run(seed, schema));
    }
}

// ---------------------------------------------------------------------------
// Cost of the new path: `load` + `write`, counted.

/// A key held by `holder`, with `n` waiters `w0..`, written through the new
/// path itself.
fn fill(db: &Db, key: &str, n: usize) {
    db.0.execute_batch("BEGIN").expect("begin");
    let sql = Counted::new(db);
    let holder = Holder {
        id: id("holder"),
        since_ms: 1,
        state: baton::coordinator::HolderState::Holding,
        workflow: None,
        enqueued_ms: None,
        turn: Turn::Shared,
        fence: 1,
        cancelling: false,
        waited_ms: 0,
    };
    let mut writes = vec![coordinator::Write::AddHolder(holder)];
    for i in 0..n {
        writes.push(coordinator::Write::PushWaiter(
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
            baton::coordinator::Layout::Shared,
        ));
    }
    coordinator::write(&sql, key, &writes);
    db.0.execute_batch("COMMIT").expect("commit");
}

/// One decision through the new path on a fresh summary read: its reply
/// and its statements (reads, writes), the summary's read included.
fn measured(db: &Db, key: &str, summary: Option<Summary>, input: Input) -> (String, (u32, u32)) {
    let sql = Counted::new(db);
    let view = coordinator::load(&sql, key, summary, &input);
    let t = coordinator::decide(&view, &settings(), 1_000_000, input);
    let reply = format!("{:?}", t.as_ref().map(|t| (&t.reply, &t.effects)));
    if let Ok(t) = &t {
        coordinator::write(&sql, key, &t.writes);
    }
    (reply, sql.work())
}

/// P3/P5: with the summary the shell keeps, an uncontended acquire and
/// release read nothing and write one holder row each.
#[test]
fn an_uncontended_pair_reads_nothing_and_writes_two_rows() {
    let db = Db(Connection::open_in_memory().expect("db"));
    coordinator::migrate(&db);
    fill(&db, "busy", 10_000);
    let summary = coordinator::load_summary(&Counted::new(&db), "free");
    let acquire = Input::Acquire(AcquireRequest {
        id: id("solo"),
        options: Options::default(),
    });
    let (reply, acquired) = measured(&db, "free", Some(summary), acquire);
    assert!(reply.contains("Granted { fence: 1 }"), "{reply}");
    let summary = coordinator::load_summary(&Counted::new(&db), "free");
    let (_, released) = measured(&db, "free", Some(summary), Input::Release(id("solo")));
    assert_eq!((acquired, released), ((0, 1), (0, 1)));
}

/// An input, built for the key it runs on.
type InputFor<'a> = Box<dyn Fn(&str) -> Input + 'a>;

/// P4: every input costs as many statements behind 10,000 waiters as
/// behind 10, and takes the same path.
#[test]
fn the_cost_of_each_input_does_not_grow_with_the_queue() {
    let db = Db(Connection::open_in_memory().expect("db"));
    coordinator::migrate(&db);
    fill(&db, "short", 10);
    fill(&db, "long", 10_000);
    let held = |key: &str| coordinator::load_summary(&Counted::new(&db), key).holders[0].clone();
    let acquiring = |who: &str, limit: Option<u32>| AcquireRequest {
        id: id(who),
        options: Options {
            limit,
            grant: true,
            ..Options::default()
        },
    };
    let plain = |who: &str, supersedes: bool, input: Option<&str>| EnqueueRequest {
        supersedes,
        id: id(who),
        input_hash: input.map(hash),
        options: Options::default(),
    };
    let inputs: Vec<(&str, InputFor<'_>)> = vec![
        (
            "enqueue (plain, new)",
            Box::new(|_| Input::Enqueue(plain("late", false, None))),
        ),
        (
            "enqueue (supersedes, coalesce check)",
            Box::new(|_| Input::Enqueue(plain("twin", true, Some("h3")))),
        ),
        (
            "acquire (new caller, held key)",
            Box::new(|_| Input::Acquire(acquiring("newcomer", None))),
        ),
        (
            "acquire (waiting caller)",
            Box::new(|_| Input::Acquire(acquiring("w7", None))),
        ),
        (
            "acquire checked (alive holder)",
            Box::new(move |k| Input::AcquireChecked {
                request: acquiring("w7", None),
                holder: held(k),
                answer: Liveness::Alive.into(),
            }),
        ),
        (
            "release (a waiter leaves)",
            Box::new(|_| Input::Release(id("w6"))),
        ),
        ("tick", Box::new(|_| Input::Tick)),
        (
            "release (holder hands on)",
            Box::new(|_| Input::Release(id("holder"))),
        ),
        (
            "woken (dead: hands on)",
            Box::new(move |k| Input::Woken {
                holder: held(k),
                answer: Liveness::Dead.into(),
            }),
        ),
        (
            "acquire (raises the limit)",
            Box::new(|_| Input::Acquire(acquiring("newcomer", Some(4)))),
        ),
    ];
    for (name, input) in inputs {
        let (short_reply, short) = measured(&db, "short", None, input("short"));
        let (long_reply, long) = measured(&db, "long", None, input("long"));
        assert_eq!(short_reply, long_reply, "{name}: same path");
        assert_eq!(
            short, long,
            "{name}: statements (reads, writes) on 10 vs 10,000 waiters"
        );
        println!("{name:40} {short:?} -> {short_reply}");
    }
}
