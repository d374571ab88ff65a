//! The serial queue natively: the core's batches run on SQLite exactly as
//! the D1 shell runs them (a batch is a transaction; a conditional update's
//! change count says whether it matched), and its replies read from them.

mod common;

use baton::error::BatonError;
use baton::ident::{Ident, InstanceId};
use baton::serial_queue::{
    self as sq, sql, Check, ClaimReply, Effect, EnqueueReply, News, Param, Plan, Released,
};
use baton::transition::{LogKind, LogLine};
use baton::workflow::Liveness;
use common::d1;
use rusqlite::Connection;

/// A turn event the serial queue asks to send.
type Tell = sq::Wake<sq::Event>;

const TIMEOUTS: sq::SerialTimeouts = sq::SerialTimeouts {
    waiter_timeout_ms: 3_600_000,
    heartbeat_expiry_ms: 600_000,
};

/// The Worker's names the decisions write into their effects.
const NAMES: sq::Names<'static> = sq::Names {
    workflow: "WF",
    turn_event_type: "baton-turn",
};

fn id(s: &str) -> InstanceId {
    InstanceId::parse("instanceId", s).unwrap()
}

fn ident(s: &str) -> Ident {
    Ident::parse("group", s).unwrap()
}

fn ids(list: &[&str]) -> Vec<InstanceId> {
    list.iter().map(|s| id(s)).collect()
}

fn state(conn: &Connection, group: &str, instance: &str) -> Option<String> {
    let rows = d1::run(
        conn,
        sql::READ_ENTRY,
        &[Param::Text(group.into()), Param::Text(instance.into())],
    )
    .rows;
    rows.first().map(|r| r.state.clone())
}

fn enqueue(
    conn: &mut Connection,
    group: &str,
    instance: &str,
    revision: &str,
    current: Option<&str>,
    now: u64,
) -> Result<EnqueueReply, BatonError> {
    let request = request(group, instance, revision, current);
    run_enqueue(conn, &request, now).map(|t| t.reply)
}

fn request(
    group: &str,
    instance: &str,
    revision: &str,
    current: Option<&str>,
) -> sq::SerialEnqueue {
    sq::SerialEnqueue {
        group: ident(group),
        instance_id: id(instance),
        revision: ident(revision),
        current: current.map(ident),
        workflow: None,
        grant: None,
        claim: false,
    }
}

/// With `claim` and `grant` (the prefix "turn"), as `serialize` enqueues.
fn granted(group: &str, instance: &str, revision: &str) -> sq::SerialEnqueue {
    sq::SerialEnqueue {
        grant: Some("turn".into()),
        claim: true,
        ..request(group, instance, revision, None)
    }
}

fn run_enqueue(
    conn: &mut Connection,
    request: &sq::SerialEnqueue,
    now: u64,
) -> Result<sq::Decided<EnqueueReply>, BatonError> {
    match sq::enqueue(request, now, TIMEOUTS) {
        Plan::Done(decided) => Ok(*decided),
        Plan::Run(batch) => {
            let outcomes = d1::batch(conn, &batch);
            sq::enqueue_outcome(request, &outcomes, NAMES)
        }
    }
}

/// The tells a decision asks for.
fn told<R>(t: &sq::Decided<R>) -> Vec<Tell> {
    t.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Wake(tell) => Some(tell.clone()),
            _ => None,
        })
        .collect()
}

/// Where a decision says the group went on: the tell, and the hand-on
/// its status re-enters with.
fn went_on<R>(t: &sq::Decided<R>) -> Option<(Tell, sq::HandOn)> {
    match (&told(t)[..], &t.state.went_on) {
        ([], None) => None,
        ([tell], Some(hand_on)) => Some((tell.clone(), hand_on.clone())),
        (tells, hand_on) => panic!("tells {tells:?} for the hand-on {hand_on:?}"),
    }
}

const HOLDING: ClaimReply = ClaimReply::Holding { fence: None };

fn behind(holder: &str) -> ClaimReply {
    ClaimReply::Waiting {
        holder: Some(id(holder)),
        turn: None,
    }
}

/// The plain turn event to `to` in group `g`.
fn plain(to: &str) -> Tell {
    Tell {
        id: id(to),
        workflow: "WF".into(),
        event: sq::Event {
            event_type: "baton-turn".into(),
            group: ident("g"),
            news: News::Claim,
        },
    }
}

fn waiting(superseded: &[&str]) -> Result<EnqueueReply, BatonError> {
    Ok(EnqueueReply::Waiting {
        superseded: ids(superseded),
        turn: None,
    })
}

fn claim_at(
    conn: &mut Connection,
    group: &str,
    instance: &str,
    now: u64,
) -> Result<ClaimReply, BatonError> {
    let outcomes = d1::batch(
        conn,
        &sq::claim(&ident(group), &id(instance), now, TIMEOUTS),
    );
    sq::claim_outcome(&id(instance), &outcomes, NAMES).map(|c| c.reply)
}

fn claim(conn: &mut Connection, group: &str, instance: &str, now: u64) -> bool {
    claim_at(conn, group, instance, now) == Ok(HOLDING)
}

fn heartbeat(conn: &mut Connection, group: &str, instance: &str, now: u64) -> bool {
    let outcomes = d1::batch(conn, &sq::heartbeat(&ident(group), &id(instance), now));
    sq::heartbeat_outcome(&outcomes).reply
}

fn release(conn: &mut Connection, group: &str, instance: &str, now: u64) -> sq::Decided<Released> {
    let outcomes = d1::batch(conn, &sq::release(&ident(group), &id(instance), now));
    sq::release_outcome(&ident(group), &outcomes, NAMES)
}

/// The group going on past `dead`, found dead, as the core re-enters it.
fn past_dead(conn: &mut Connection, dead: &sq::HandOn, now: u64) -> sq::Decided<()> {
    let read = sq::Read {
        went_on: Some(dead.clone()),
        ..sq::Read::default()
    };
    let reentry = sq::checked(&ident("g"), &read, &dead.to, Liveness::Dead, now, TIMEOUTS);
    let past = d1::batch(conn, &reentry.follow_up.expect("a follow-up batch"));
    sq::hand_on_past_outcome(&ident("g"), &past, NAMES)
}

fn all(conn: &Connection) -> Vec<sq::Row> {
    let rows = d1::all_rows(conn);
    sq::assert_invariants(&rows);
    rows
}

#[test]
fn stale_arrival_skips_and_changes_nothing() {
    let mut conn = d1::database();
    assert_eq!(enqueue(&mut conn, "g", "a", "r1", None, 1), waiting(&[]));
    let before = all(&conn);
    assert_eq!(
        enqueue(&mut conn, "g", "b", "r1", Some("r2"), 2),
        Ok(EnqueueReply::Skipped {
            current: ident("r2")
        })
    );
    assert_eq!(all(&conn), before);
}

/// An answer's one line: a command's answer says the caller's own.
fn only(log: Vec<LogLine>) -> LogLine {
    assert_eq!(log.len(), 1, "an answer's lines: {log:?}");
    log.into_iter().next().expect("one line")
}

/// A log line as the test compares it.
fn said(line: LogLine) -> (LogKind, &'static str, String, Option<u64>) {
    (
        line.kind,
        line.decision,
        line.reason.into_owned(),
        line.waited_ms,
    )
}

#[test]
fn each_decision_says_its_log_line_and_its_kind() {
    use LogKind::{Contended, Routine};
    let mut conn = d1::database();
    // A plain join involves no one else: routine.
    let a = request("g", "a", "r1", None);
    let joined = run_enqueue(&mut conn, &a, 1).unwrap();
    let line = only(sq::enqueue_answer(&a, joined, None).log);
    assert_eq!(
        said(line),
        (Routine, "waiting", "superseded 0 waiter(s)".into(), None)
    );
    // Taking a free group: routine, with how long it waited.
    let batch = sq::claim(&ident("g"), &id("a"), 5, TIMEOUTS);
    let took = sq::claim_outcome(&id("a"), &d1::batch(&mut conn, &batch), NAMES).unwrap();
    let line = only(sq::claim_answer(&id("a"), took, None, 5).log);
    assert_eq!(
        said(line),
        (Routine, "holding", "no live holder".into(), Some(4))
    );
    // Waiting behind a holder: contended.
    run_enqueue(&mut conn, &request("g", "b", "r2", None), 6).unwrap();
    let batch = sq::claim(&ident("g"), &id("b"), 7, TIMEOUTS);
    let behind = sq::claim_outcome(&id("b"), &d1::batch(&mut conn, &batch), NAMES).unwrap();
    let line = only(sq::claim_answer(&id("b"), behind, None, 7).log);
    assert_eq!(
        said(line),
        (Contended, "waiting", "behind a".into(), Some(1))
    );
    // Superseding a waiter, and a stale revision: contended.
    let c = request("g", "c", "r3", None);
    let superseding = run_enqueue(&mut conn, &c, 8).unwrap();
    let line = only(sq::enqueue_answer(&c, superseding, None).log);
    assert_eq!(
        said(line),
        (Contended, "waiting", "superseded 1 waiter(s)".into(), None)
    );
    let d = request("g", "d", "r1", Some("r3"));
    let stale = run_enqueue(&mut conn, &d, 9).unwrap();
    let line = only(sq::enqueue_answer(&d, stale, None).log);
    let reason = "revision r1 is not current (r3)".to_string();
    assert_eq!(said(line), (Contended, "skipped", reason, None));
    // A release that hands the group on is contended; one that does not, routine.
    let freed = release(&mut conn, "g", "a", 10);
    let line = only(sq::release_answer(&id("a"), freed.reply, true).log);
    assert_eq!(
        said(line),
        (Contended, "released", "freed the group".into(), None)
    );
    assert_eq!(
        only(sq::release_answer(&id("a"), freed.reply, false).log).kind,
        Routine
    );
    // The instance it went on to: woken, or abandoned when found dead.
    let (_, next) = went_on(&freed).expect("a freed group goes on");
    let check = |liveness| sq::checked(&ident("g"), &freed.state, &next.to, liveness, 11, TIMEOUTS);
    let lines = |d: sq::Decided<()>| d.log.into_iter().map(said).collect::<Vec<_>>();
    let woken = (Contended, "woken", "the group is free".to_string(), None);
    assert_eq!(lines(check(Liveness::Alive)), vec![woken]);
    let dead = (Contended, "abandoned", "woken but dead".to_string(), None);
    assert_eq!(lines(check(Liveness::Dead)), vec![dead]);
}

#[test]
fn newest_waiter_wins_without_current() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "a", "r1", None, 1).unwrap();
    assert!(claim(&mut conn, "g", "a", 2));
    assert_eq!(enqueue(&mut conn, "g", "b", "r2", None, 3), waiting(&[]));
    // C supersedes B, never the holder A, and asks for B to be told.
    let decided = run_enqueue(&mut conn, &request("g", "c", "r3", None), 4).unwrap();
    assert_eq!(decided.effects, vec![Effect::Wake(plain("b"))]);
    assert_eq!(state(&conn, "g", "a").as_deref(), Some("holding"));
    assert_eq!(state(&conn, "g", "b").as_deref(), Some("superseded"));
    // A retried enqueue of B answers the truth: it skips, for r3. Nothing changes.
    let before = all(&conn);
    assert_eq!(
        enqueue(&mut conn, "g", "b", "r2", None, 5),
        Ok(EnqueueReply::Skipped {
            current: ident("r3")
        })
    );
    // A retried enqueue of C, still waiting, keeps its place and supersedes no one.
    assert_eq!(enqueue(&mut conn, "g", "c", "r3", None, 6), waiting(&[]));
    assert_eq!(all(&conn), before);
}

#[test]
fn enqueue_of_a_holding_finished_or_changed_id_is_refused_and_changes_nothing() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", None, 1).unwrap();
    assert!(claim(&mut conn, "g", "h", 1));
    enqueue(&mut conn, "g", "w", "r2", Some("r2"), 2).unwrap();
    enqueue(&mut conn, "g", "gone", "r2", Some("r2"), 3).unwrap();
    release(&mut conn, "g", "gone", 4);
    let before = all(&conn);
    let refused = |result: Result<EnqueueReply, BatonError>| result.unwrap_err();
    assert_eq!(
        refused(enqueue(&mut conn, "g", "h", "r1", None, 5)).message(),
        "BatonError: instanceId already holds this group"
    );
    assert_eq!(
        refused(enqueue(&mut conn, "g", "gone", "r2", None, 5)).message(),
        "BatonError: instanceId already left this group (released)"
    );
    // The same id at another revision would leave waiters at two revisions.
    assert_eq!(
        refused(enqueue(&mut conn, "g", "w", "r3", Some("r3"), 5)).field(),
        "revision"
    );
    assert_eq!(all(&conn), before);
}

#[test]
fn current_revision_supersedes_every_non_current_waiter_whenever_it_arrived() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r0", None, 1).unwrap();
    assert!(claim(&mut conn, "g", "h", 1));
    // Without a known head these queue in arrival order...
    enqueue(&mut conn, "g", "old", "r1", None, 2).unwrap();
    // ...and a current arrival supersedes every waiter at another revision.
    assert_eq!(
        enqueue(&mut conn, "g", "cur", "r2", Some("r2"), 3),
        waiting(&["old"])
    );
    // A later arrival at the current revision supersedes nothing at it.
    assert_eq!(
        enqueue(&mut conn, "g", "cur2", "r2", Some("r2"), 4),
        waiting(&[])
    );
    assert_eq!(state(&conn, "g", "cur").as_deref(), Some("waiting"));
    assert_eq!(state(&conn, "g", "h").as_deref(), Some("holding"));
}

#[test]
fn the_waiter_bound_is_enforced_by_the_insert_itself() {
    let mut conn = d1::database();
    let max = baton::limits::SERIAL_WAITERS_PER_GROUP_MAX as u64;
    for i in 0..max {
        let name = format!("w{i}");
        assert_eq!(
            enqueue(&mut conn, "g", &name, "r", Some("r"), i),
            waiting(&[])
        );
    }
    let before = all(&conn);
    let refused = enqueue(&mut conn, "g", "one-more", "r", Some("r"), max).unwrap_err();
    assert_eq!(
        refused.message(),
        "BatonError: group already has 1000 waiters, the most one group holds"
    );
    // A waiter already in the queue is not counted twice.
    assert_eq!(
        enqueue(&mut conn, "g", "w0", "r", Some("r"), max),
        waiting(&[])
    );
    assert_eq!(all(&conn), before);
    // Other groups are not affected.
    assert_eq!(enqueue(&mut conn, "h", "x", "r", None, 0), waiting(&[]));
}

#[test]
fn claim_decisions() {
    let mut conn = d1::database();
    // Claiming without an enqueue is a caller error naming the field.
    assert_eq!(
        claim_at(&mut conn, "g", "nobody", 1).unwrap_err().field(),
        "instanceId"
    );
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    // No holder: take the group.
    assert_eq!(claim_at(&mut conn, "g", "h", 0), Ok(HOLDING));
    assert_eq!(claim_at(&mut conn, "g", "h", 1), Ok(HOLDING));
    enqueue(&mut conn, "g", "w", "r1", Some("r1"), 100).unwrap();
    // A live holder: wait, until the waiter's own timeout.
    assert_eq!(claim_at(&mut conn, "g", "w", 600_000), Ok(behind("h")));
    assert!(heartbeat(&mut conn, "g", "h", 3_600_000));
    assert_eq!(claim_at(&mut conn, "g", "w", 3_600_100), Ok(behind("h")));
    assert_eq!(
        claim_at(&mut conn, "g", "w", 3_600_101),
        Ok(ClaimReply::TimedOut)
    );
    assert_eq!(
        claim_at(&mut conn, "g", "w", 3_600_102),
        Ok(ClaimReply::TimedOut)
    );
    // A stale holder: abandoned in the claim's batch, the group taken.
    enqueue(&mut conn, "g", "x", "r1", Some("r1"), 3_700_000).unwrap();
    let outcomes = d1::batch(
        &mut conn,
        &sq::claim(&ident("g"), &id("x"), 4_200_001, TIMEOUTS),
    );
    let claimed = sq::claim_outcome(&id("x"), &outcomes, NAMES).unwrap();
    assert_eq!(claimed.reply, HOLDING);
    assert_eq!(claimed.state.abandoned, ids(&["h"]));
    assert!(
        !heartbeat(&mut conn, "g", "h", 4_200_002),
        "an abandoned holder is told"
    );
    // Superseded ids skip, naming who won; finished ones are refused.
    enqueue(&mut conn, "g", "y", "r2", None, 4_300_000).unwrap();
    enqueue(&mut conn, "g", "z", "r3", None, 4_300_001).unwrap();
    assert_eq!(
        claim_at(&mut conn, "g", "y", 4_300_002),
        Ok(ClaimReply::Skipped {
            by: id("z"),
            by_revision: ident("r3")
        })
    );
    assert_eq!(
        claim_at(&mut conn, "g", "h", 4_300_002)
            .unwrap_err()
            .message(),
        "BatonError: instanceId already left this group (abandoned)"
    );
    all(&conn);
}

#[test]
fn interleaved_claimers_at_most_one_wins() {
    // Every order of claims by four waiters, with and without a stale holder:
    // exactly one wins, and the database's own index agrees.
    let claimers = ["a", "b", "c", "d"];
    for with_stale_holder in [false, true] {
        for rotation in 0..claimers.len() {
            let mut conn = d1::database();
            if with_stale_holder {
                enqueue(&mut conn, "g", "old", "r1", Some("r1"), 0).unwrap();
                assert!(claim(&mut conn, "g", "old", 0));
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
                .filter(|c| claim(&mut conn, "g", c, now))
                .copied()
                .collect();
            assert_eq!(
                winners,
                vec![order[0]],
                "stale={with_stale_holder} order={order:?}"
            );
            assert_eq!(
                all(&conn).iter().filter(|r| r.state == "holding").count(),
                1
            );
            if with_stale_holder {
                assert_eq!(state(&conn, "g", "old").as_deref(), Some("abandoned"));
            }
        }
    }
}

#[test]
fn live_holder_blocks_claims_and_heartbeat_keeps_it() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", None, 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r2", None, 1).unwrap();
    // Heartbeat at 500_000 keeps h live past its first expiry.
    assert!(heartbeat(&mut conn, "g", "h", 500_000));
    assert!(!claim(&mut conn, "g", "w", 700_000));
    // Without further heartbeats it goes stale and w takes the group.
    assert!(claim(&mut conn, "g", "w", 1_100_001));
    assert!(!heartbeat(&mut conn, "g", "h", 1_100_002));
}

#[test]
fn release_frees_the_group_and_prune_keeps_a_bounded_history() {
    let mut conn = d1::database();
    for i in 0..120u64 {
        let name = format!("i{i}");
        enqueue(&mut conn, "g", &name, "r", None, i).unwrap();
        assert!(claim(&mut conn, "g", &name, i));
        assert_eq!(
            release(&mut conn, "g", &name, i).reply,
            Released::FreedGroup
        );
    }
    // Prune runs with each enqueue: at most 50 finished rows (+ the latest) remain.
    let outcomes = d1::batch(&mut conn, &sq::inspect(&ident("g")));
    let view = sq::inspect_outcome(&outcomes);
    assert_eq!(view.recent.len(), 50);
    assert!(all(&conn).len() <= 51);
    assert_eq!(view.recent[0].instance_id, id("i119"), "newest first");
    // Groups do not see each other.
    enqueue(&mut conn, "other", "x", "r", None, 0).unwrap();
    assert!(claim(&mut conn, "other", "x", 0));
}

#[test]
fn every_statement_uses_an_index() {
    let conn = d1::database();
    for statement in sql::ALL {
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {statement}"))
            .unwrap();
        let nulls = vec![rusqlite::types::Value::Null; explain.parameter_count()];
        let plan: Vec<String> = explain
            .query_map(rusqlite::params_from_iter(nulls), |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for step in &plan {
            assert!(
                !step.starts_with("SCAN serial_queue") && !step.starts_with("SCAN serial_group"),
                "{statement}\n{plan:?}"
            );
        }
    }
}

#[test]
fn release_says_how_the_caller_left_and_whom_to_wake() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    for w in ["w1", "w2", "w3"] {
        enqueue(&mut conn, "g", w, "r1", Some("r1"), 1).unwrap();
    }
    let left = release(&mut conn, "g", "w2", 2);
    assert_eq!((left.reply, went_on(&left)), (Released::LeftQueue, None));
    let freed = release(&mut conn, "g", "h", 3);
    assert_eq!(freed.reply, Released::FreedGroup);
    let Some((tell, first)) = went_on(&freed) else {
        panic!("a freed group goes on: {:?}", freed.effects)
    };
    assert_eq!((&tell, first.holding_since), (&plain("w1"), None));
    let again = release(&mut conn, "g", "h", 4);
    assert_eq!(
        (again.reply, went_on(&again)),
        (Released::HeldNothing, None)
    );
    // Alive (or unknown), the instance the group went to keeps its place.
    let read = freed.state.clone();
    for alive in [Liveness::Alive, Liveness::Unknown] {
        let reentry = sq::checked(&ident("g"), &read, &id("w1"), alive, 5, TIMEOUTS);
        assert!(reentry.follow_up.is_none() && reentry.effects.is_empty());
    }
    // A dead waiter is abandoned only if it still waits; the group goes on
    // to the next.
    let past = past_dead(&mut conn, &first, 5);
    assert_eq!(state(&conn, "g", "w1").as_deref(), Some("abandoned"));
    let Some((tell, next)) = went_on(&past) else {
        panic!("the group goes on past a dead waiter")
    };
    assert_eq!(tell, plain("w3"));
    assert!(claim(&mut conn, "g", "w3", 6));
    let past = past_dead(&mut conn, &next, 7);
    assert_eq!(state(&conn, "g", "w3").as_deref(), Some("holding"));
    assert_eq!(went_on(&past), None);
    all(&conn);
}

#[test]
#[should_panic(expected = "holders")]
fn invariants_catch_two_holders() {
    let row = |id: &str| sq::Row {
        seq: 1,
        group_name: "g".into(),
        instance_id: id.into(),
        revision: "r".into(),
        state: "holding".into(),
        enqueued_at: 0,
        heartbeat_at: Some(0),
        superseded_by: None,
        superseded_by_revision: None,
        finished_at: None,
        workflow: None,
        turn_prefix: None,
        fence: None,
    };
    sq::assert_invariants(&[row("a"), row("b")]);
}

#[test]
fn invariants_catch_a_superseded_row_that_held() {
    let row = sq::Row {
        seq: 1,
        group_name: "g".into(),
        instance_id: "a".into(),
        revision: "r".into(),
        state: "superseded".into(),
        enqueued_at: 0,
        heartbeat_at: Some(0),
        superseded_by: Some("b".into()),
        superseded_by_revision: Some("r2".into()),
        finished_at: Some(1),
        workflow: None,
        turn_prefix: None,
        fence: None,
    };
    assert!(sq::check_row(&row).is_err());
}

// --- contract §2a: grant, claim on enqueue, dead holders by status ----------

/// The enqueue with claim and grant, its reply.
fn enqueue_granted(
    conn: &mut Connection,
    group: &str,
    instance: &str,
    revision: &str,
    now: u64,
) -> EnqueueReply {
    run_enqueue(conn, &granted(group, instance, revision), now)
        .unwrap()
        .reply
}

fn turn_of(conn: &Connection, group: &str, instance: &str) -> Option<String> {
    let rows = d1::run(
        conn,
        sql::READ_ENTRY,
        &[Param::Text(group.into()), Param::Text(instance.into())],
    )
    .rows;
    sq::entry(&rows[0]).turn
}

#[test]
fn claim_on_enqueue_holds_or_waits_in_one_batch_with_fences_and_turns() {
    let mut conn = d1::database();
    assert_eq!(
        enqueue_granted(&mut conn, "g", "a", "r1", 1),
        EnqueueReply::Claimed {
            superseded: vec![],
            claim: ClaimReply::Holding { fence: Some(1) }
        }
    );
    let b_turn = match enqueue_granted(&mut conn, "g", "b", "r2", 2) {
        EnqueueReply::Claimed {
            claim:
                ClaimReply::Waiting {
                    holder,
                    turn: Some(turn),
                },
            ..
        } => {
            assert_eq!(holder, Some(id("a")));
            turn
        }
        other => panic!("b waits behind a: {other:?}"),
    };
    assert!(b_turn.starts_with("turn-serial-") && b_turn.len() <= 100);
    // A repeated claim (and a retried enqueue) answers the same turn; a
    // grant holder's claim answers its fence.
    assert_eq!(
        claim_at(&mut conn, "g", "b", 3),
        Ok(ClaimReply::Waiting {
            holder: Some(id("a")),
            turn: Some(b_turn.clone())
        })
    );
    assert_eq!(
        claim_at(&mut conn, "g", "a", 3),
        Ok(ClaimReply::Holding { fence: Some(1) })
    );
    assert_eq!(
        enqueue_granted(&mut conn, "g", "a", "r1", 4),
        EnqueueReply::Claimed {
            superseded: vec![],
            claim: ClaimReply::Holding { fence: Some(1) }
        }
    );
    // Another group gives other turns, and its own fences from 1.
    assert_eq!(
        enqueue_granted(&mut conn, "other", "b", "r1", 5),
        EnqueueReply::Claimed {
            superseded: vec![],
            claim: ClaimReply::Holding { fence: Some(1) }
        }
    );
    enqueue_granted(&mut conn, "other", "c", "r1", 6);
    let turns = [
        b_turn,
        turn_of(&conn, "other", "b").unwrap(),
        turn_of(&conn, "other", "c").unwrap(),
    ];
    assert!(turns[0] != turns[1] && turns[1] != turns[2] && turns[0] != turns[2]);
    // Without grant nothing new shows: no fence, no turn.
    enqueue(&mut conn, "plain", "p", "r1", None, 7).unwrap();
    assert_eq!(claim_at(&mut conn, "plain", "p", 8), Ok(HOLDING));
    all(&conn);
}

#[test]
fn release_hands_the_group_to_a_grant_waiter_which_a_newer_arrival_cannot_supersede() {
    let mut conn = d1::database();
    enqueue_granted(&mut conn, "g", "a", "r1", 1);
    enqueue_granted(&mut conn, "g", "b", "r2", 2);
    let turn = turn_of(&conn, "g", "b").unwrap();
    let freed = release(&mut conn, "g", "a", 10);
    assert_eq!(freed.reply, Released::FreedGroup);
    assert_eq!(
        went_on(&freed),
        Some((
            Tell {
                id: id("b"),
                workflow: "WF".into(),
                event: sq::Event {
                    event_type: turn,
                    group: ident("g"),
                    news: News::Holding { fence: 2 },
                },
            },
            sq::HandOn {
                to: id("b"),
                holding_since: Some(10),
            }
        ))
    );
    assert_eq!(state(&conn, "g", "b").as_deref(), Some("holding"));
    // A newer arrival does not supersede the handed holder: it waits behind it.
    assert_eq!(
        enqueue_granted(&mut conn, "g", "c", "r3", 11),
        EnqueueReply::Claimed {
            superseded: vec![],
            claim: ClaimReply::Waiting {
                holder: Some(id("b")),
                turn: turn_of(&conn, "g", "c")
            }
        }
    );
    assert_eq!(
        claim_at(&mut conn, "g", "b", 12),
        Ok(ClaimReply::Holding { fence: Some(2) })
    );
    assert!(heartbeat(&mut conn, "g", "b", 13));
    // Its heartbeat counted from the hand-off: stale only an expiry after it.
    let outcomes = d1::batch(
        &mut conn,
        &sq::claim(&ident("g"), &id("c"), 10 + 600_000 + 13, TIMEOUTS),
    );
    assert_eq!(
        sq::claim_outcome(&id("c"), &outcomes, NAMES).unwrap().reply,
        ClaimReply::Holding { fence: Some(3) }
    );
    all(&conn);
}

#[test]
fn a_superseded_grant_waiter_is_told_by_its_own_turn() {
    let mut conn = d1::database();
    enqueue_granted(&mut conn, "g", "h", "r1", 1);
    enqueue_granted(&mut conn, "g", "b", "r2", 2);
    let turn = turn_of(&conn, "g", "b").unwrap();
    let decided = run_enqueue(&mut conn, &granted("g", "c", "r3"), 3).unwrap();
    assert_eq!(
        told(&decided),
        vec![Tell {
            id: id("b"),
            workflow: "WF".into(),
            event: sq::Event {
                event_type: turn,
                group: ident("g"),
                news: News::Skipped {
                    by: id("c"),
                    by_revision: ident("r3")
                },
            },
        }]
    );
}

#[test]
fn a_dead_holder_loses_the_group_only_while_it_holds_as_it_was_read() {
    let mut conn = d1::database();
    enqueue_granted(&mut conn, "g", "h", "r1", 10);
    let mut w = granted("g", "w", "r2");
    w.workflow = Some("OTHER".into());
    let decided = run_enqueue(&mut conn, &w, 11).unwrap();
    // Its effect is the holder's check, whose result answers the caller.
    assert_eq!(
        decided.effects,
        vec![Effect::Check(Check {
            id: id("h"),
            workflow: "WF".into(),
            answers: true,
        })]
    );
    let seen = decided.state.behind.clone();
    let seen = seen.expect("a claim behind a holder names it to check");
    assert_eq!(
        (
            seen.id.as_str(),
            seen.heartbeat_at_ms,
            seen.workflow.as_deref()
        ),
        ("h", 10, None)
    );
    // The holder heartbeat since its status was read: it keeps the group.
    assert!(heartbeat(&mut conn, "g", "h", 12));
    let before = all(&conn);
    // Found dead, it re-enters as the claim again past it, as it was read.
    let reentry = sq::checked(
        &ident("g"),
        &decided.state,
        &id("h"),
        Liveness::Dead,
        13,
        TIMEOUTS,
    );
    let batch = sq::claim_past_dead(&ident("g"), &id("w"), &seen, 13, TIMEOUTS);
    assert_eq!(reentry.follow_up, Some(batch.clone()));
    let claimed = sq::claim_outcome(&id("w"), &d1::batch(&mut conn, &batch), NAMES).unwrap();
    assert!(matches!(claimed.reply, ClaimReply::Waiting { .. }));
    assert_eq!(all(&conn), before);
    // As it was read: abandoned, and the claim proceeds in the same batch.
    let seen = claimed.state.behind.unwrap();
    let batch = sq::claim_past_dead(&ident("g"), &id("w"), &seen, 14, TIMEOUTS);
    let claimed = sq::claim_outcome(&id("w"), &d1::batch(&mut conn, &batch), NAMES).unwrap();
    assert_eq!(claimed.reply, ClaimReply::Holding { fence: Some(2) });
    assert_eq!(claimed.state.abandoned, ids(&["h"]));
    assert_eq!(state(&conn, "g", "h").as_deref(), Some("abandoned"));
    let me = claimed.state.me.unwrap();
    assert_eq!(me.workflow.as_deref(), Some("OTHER"));
    all(&conn);
}

#[test]
fn a_dead_handed_holder_loses_the_group_to_the_next_waiter() {
    let mut conn = d1::database();
    enqueue_granted(&mut conn, "g", "a", "r1", 1);
    for w in ["b", "c"] {
        run_enqueue(
            &mut conn,
            &sq::SerialEnqueue {
                grant: Some("turn".into()),
                ..request("g", w, "r1", Some("r1"))
            },
            2,
        )
        .unwrap();
    }
    let Some((tell, handed)) = went_on(&release(&mut conn, "g", "a", 3)) else {
        panic!()
    };
    assert_eq!((&tell.id, &handed.to), (&id("b"), &id("b")));
    let past = past_dead(&mut conn, &handed, 4);
    assert_eq!(state(&conn, "g", "b").as_deref(), Some("abandoned"));
    let Some((next, _)) = went_on(&past) else {
        panic!()
    };
    assert_eq!(next.id, id("c"));
    assert_eq!(next.event.news, News::Holding { fence: 3 });
    all(&conn);
}

#[test]
fn a_claim_on_enqueue_at_another_revision_is_refused_and_changes_nothing() {
    let mut conn = d1::database();
    enqueue_granted(&mut conn, "g", "h", "r1", 1);
    enqueue(&mut conn, "g", "w", "r2", None, 2).unwrap();
    let before = all(&conn);
    let refused = run_enqueue(&mut conn, &granted("g", "w", "r3"), 3).unwrap_err();
    assert_eq!(refused.field(), "revision");
    assert_eq!(all(&conn), before);
}

#[test]
fn the_group_fence_never_goes_back_however_much_is_pruned() {
    let mut conn = d1::database();
    let mut now = 1;
    let mut fences = vec![];
    for round in 0..3 {
        let holder = format!("h{round}");
        match enqueue_granted(&mut conn, "g", &holder, "r", now) {
            EnqueueReply::Claimed {
                claim: ClaimReply::Holding { fence: Some(f) },
                ..
            } => fences.push(f),
            other => panic!("{other:?}"),
        }
        release(&mut conn, "g", &holder, now + 1);
        // Enough finished rows after it to prune it, were it not the fence's row.
        for i in 0..60 {
            now += 2;
            enqueue(&mut conn, "g", &format!("s{round}-{i}"), "r", None, now).unwrap();
        }
        release(&mut conn, "g", &format!("s{round}-59"), now + 1);
    }
    assert_eq!(fences, [1, 2, 3]);
    all(&conn);
}

#[test]
fn rows_written_before_the_grant_migration_still_work() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(sql::MIGRATIONS[0].1).unwrap();
    conn.execute_batch(
        "INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at, heartbeat_at) \
         VALUES ('g', 'old-h', 'r1', 'holding', 1, 5); \
         INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at) \
         VALUES ('g', 'old-w', 'r1', 'waiting', 2);",
    )
    .unwrap();
    for (_, migration) in &sql::MIGRATIONS[1..] {
        conn.execute_batch(migration).unwrap();
    }
    let mut conn = conn;
    all(&conn);
    assert_eq!(claim_at(&mut conn, "g", "old-h", 6), Ok(HOLDING));
    assert_eq!(claim_at(&mut conn, "g", "old-w", 6), Ok(behind("old-h")));
    let freed = release(&mut conn, "g", "old-h", 7);
    let Some((tell, next)) = went_on(&freed) else {
        panic!()
    };
    assert_eq!((tell, next.holding_since), (plain("old-w"), None));
    // The group's first fence: 1.
    assert_eq!(
        enqueue_granted(&mut conn, "g", "new", "r1", 8),
        EnqueueReply::Claimed {
            superseded: ids(&["old-w"]),
            claim: ClaimReply::Holding { fence: Some(1) }
        }
    );
    all(&conn);
}

#[test]
fn a_hand_on_past_a_waiter_that_moved_on_still_sends_the_grant_it_makes() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", None, 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r1", None, 1).unwrap();
    let freed = release(&mut conn, "g", "h", 2);
    let Some((tell, woken)) = went_on(&freed) else {
        panic!("a freed group goes on: {:?}", freed.effects)
    };
    assert_eq!(tell, plain("w"));
    // Before w's status comes back, a newer arrival registered with grant
    // (no claim) supersedes it and waits first in the free group.
    let newer = sq::SerialEnqueue {
        grant: Some("turn".into()),
        ..request("g", "x", "r2", None)
    };
    run_enqueue(&mut conn, &newer, 3).unwrap();
    assert_eq!(state(&conn, "g", "w").as_deref(), Some("superseded"));
    // w is found dead: the abandon finds it moved on, but the hand-over in
    // the same batch gives the free group to x, and that grant is sent.
    let past = past_dead(&mut conn, &woken, 4);
    assert_eq!(state(&conn, "g", "x").as_deref(), Some("holding"));
    let Some((next, _)) = went_on(&past) else {
        panic!("the grant made is not sent")
    };
    assert_eq!(next.id, id("x"));
    assert!(matches!(next.event.news, News::Holding { .. }));
    all(&conn);
}

// --- contract §11: pause and resume -----------------------------------------

fn pause(conn: &mut Connection, group: &str, reason: Option<&str>, now: u64) -> sq::Paused {
    let request = sq::SerialPause {
        group: ident(group),
        reason: reason.map(str::to_string),
    };
    let decided = sq::pause_outcome(&d1::batch(conn, &sq::pause(&request, now)));
    assert!(decided.effects.is_empty() && decided.follow_up.is_none());
    decided.reply
}

fn resume(conn: &mut Connection, group: &str, now: u64) -> sq::Decided<Option<InstanceId>> {
    let outcomes = d1::batch(conn, &sq::resume(&ident(group), now));
    sq::resume_outcome(&ident(group), &outcomes, NAMES)
}

fn inspect(conn: &mut Connection, group: &str) -> sq::Inspection {
    sq::inspect_outcome(&d1::batch(conn, &sq::inspect(&ident(group))))
}

#[test]
fn a_paused_group_lets_no_claim_in_and_hands_a_release_on_to_nobody() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w1", "r1", Some("r1"), 1).unwrap();
    let at_current = |name| sq::SerialEnqueue {
        current: Some(ident("r1")),
        ..granted("g", name, "r1")
    };
    run_enqueue(&mut conn, &at_current("w2"), 2).unwrap();
    let paused = pause(&mut conn, "g", Some("incident 42"), 3);
    assert_eq!(
        paused,
        sq::Paused {
            since_ms: 3,
            reason: Some("incident 42".into())
        }
    );
    // The holder keeps its hold and heartbeats.
    assert!(heartbeat(&mut conn, "g", "h", 4));
    assert_eq!(claim_at(&mut conn, "g", "w1", 4), Ok(behind("h")));
    // Its release frees the group and hands it on to nobody.
    let freed = release(&mut conn, "g", "h", 5);
    assert_eq!((freed.reply, went_on(&freed)), (Released::FreedGroup, None));
    // No claim succeeds in the free, paused group, none times out, and a
    // claim on enqueue waits too, behind nobody.
    let paused_wait = ClaimReply::Waiting {
        holder: None,
        turn: None,
    };
    assert_eq!(claim_at(&mut conn, "g", "w1", 6), Ok(paused_wait.clone()));
    let far = 6 + TIMEOUTS.waiter_timeout_ms * 3;
    assert_eq!(claim_at(&mut conn, "g", "w1", far), Ok(paused_wait.clone()));
    let late = run_enqueue(&mut conn, &at_current("w3"), far).unwrap();
    let EnqueueReply::Claimed {
        claim: ClaimReply::Waiting { holder: None, .. },
        ..
    } = late.reply
    else {
        panic!("a claim on enqueue in a paused group: {:?}", late.reply)
    };
    let line = only(
        sq::claim_answer(
            &id("w1"),
            sq::Decided {
                reply: paused_wait.clone(),
                effects: Vec::new(),
                follow_up: None,
                state: sq::Read::default(),
                log: Vec::new(),
            },
            None,
            far,
        )
        .log,
    );
    assert_eq!(
        said(line),
        (
            LogKind::Contended,
            "waiting",
            "the group is paused".into(),
            None
        )
    );
    // Superseding works as usual: the newest arrival without `current`
    // drops the older waiters.
    let newest = run_enqueue(&mut conn, &granted("g", "w4", "r2"), far + 1).unwrap();
    let EnqueueReply::Claimed { superseded, .. } = newest.reply else {
        panic!("{:?}", newest.reply)
    };
    assert_eq!(superseded, ids(&["w1", "w2", "w3"]));
    let view = inspect(&mut conn, "g");
    assert_eq!(view.holder, None);
    assert_eq!(view.paused.map(|p| p.since_ms), Some(3));
    all(&conn);
    // Resume hands the group to the waiter next in line (by grant, its
    // turn carrying the group's next fence), and names it.
    let resumed = resume(&mut conn, "g", far + 2);
    assert_eq!(resumed.reply, Some(id("w4")));
    let Some((tell, next)) = went_on(&resumed) else {
        panic!("resume hands on: {:?}", resumed.effects)
    };
    assert_eq!(tell.event.news, News::Holding { fence: 2 });
    assert_eq!(next.holding_since, Some(far + 2));
    assert_eq!(
        said(resumed.log[0].clone()),
        (
            LogKind::Contended,
            "resumed",
            "resumed: the group went on to w4".into(),
            None
        )
    );
    assert_eq!(resumed.log[0].instance, None);
    assert_eq!(inspect(&mut conn, "g").paused, None);
    // A second resume changes nothing and names nobody.
    let before = all(&conn);
    let again = resume(&mut conn, "g", far + 3);
    assert_eq!((again.reply.clone(), went_on(&again)), (None, None));
    assert_eq!(again.log[0].reason, "was not paused");
    assert_eq!(all(&conn), before);
}

#[test]
fn pausing_twice_keeps_the_first_since_and_takes_the_new_reason() {
    let mut conn = d1::database();
    let first = sq::pause_outcome(&d1::batch(
        &mut conn,
        &sq::pause(
            &sq::SerialPause {
                group: ident("g"),
                reason: Some("a".into()),
            },
            10,
        ),
    ));
    assert_eq!(
        first.log[0].reason,
        "paused by an operator: no claim succeeds and nobody is handed the group until resume"
    );
    assert_eq!(first.log[0].kind, LogKind::Contended);
    assert_eq!(
        pause(&mut conn, "g", None, 20),
        sq::Paused {
            since_ms: 10,
            reason: None
        }
    );
    assert_eq!(
        pause(&mut conn, "g", Some("b"), 30),
        sq::Paused {
            since_ms: 10,
            reason: Some("b".into())
        }
    );
    // Another group is not paused by it.
    enqueue(&mut conn, "other", "a", "r1", None, 31).unwrap();
    assert!(claim(&mut conn, "other", "a", 31));
    // Paused again after a resume: a new since.
    resume(&mut conn, "g", 40);
    assert_eq!(pause(&mut conn, "g", None, 50).since_ms, 50);
}

#[test]
fn a_waiter_s_timeout_runs_from_the_later_of_its_enqueue_and_the_last_resume() {
    let mut conn = d1::database();
    let timeout = TIMEOUTS.waiter_timeout_ms;
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r1", Some("r1"), 10).unwrap();
    pause(&mut conn, "g", None, 20);
    // Paused far longer than the timeout, the holder heartbeating.
    assert!(heartbeat(&mut conn, "g", "h", 20 + 2 * timeout));
    resume(&mut conn, "g", 20 + 2 * timeout);
    // Behind the live holder, the waiter's time counts from the resume:
    // it may wait up to the timeout after it, not a ms longer.
    let resumed_at = 20 + 2 * timeout;
    assert!(heartbeat(&mut conn, "g", "h", resumed_at + timeout - 1));
    assert_eq!(
        claim_at(&mut conn, "g", "w", resumed_at + timeout),
        Ok(behind("h"))
    );
    assert_eq!(
        claim_at(&mut conn, "g", "w", resumed_at + timeout + 1),
        Ok(ClaimReply::TimedOut)
    );
    // A waiter enqueued after the resume counts from its enqueue.
    enqueue(&mut conn, "g", "v", "r1", Some("r1"), resumed_at + 100).unwrap();
    assert!(heartbeat(&mut conn, "g", "h", resumed_at + timeout + 90));
    assert_eq!(
        claim_at(&mut conn, "g", "v", resumed_at + 100 + timeout),
        Ok(behind("h"))
    );
    assert_eq!(
        claim_at(&mut conn, "g", "v", resumed_at + 101 + timeout),
        Ok(ClaimReply::TimedOut)
    );
}

#[test]
fn a_stale_holder_of_a_paused_group_frees_it_to_nobody() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    enqueue(&mut conn, "g", "w", "r1", Some("r1"), 1).unwrap();
    pause(&mut conn, "g", None, 2);
    let stale = 1 + TIMEOUTS.heartbeat_expiry_ms;
    assert_eq!(
        claim_at(&mut conn, "g", "w", stale),
        Ok(ClaimReply::Waiting {
            holder: None,
            turn: None
        })
    );
    assert_eq!(state(&conn, "g", "h").as_deref(), Some("abandoned"));
    // Resumed with nobody holding: the waiter without grant is woken to claim.
    let resumed = resume(&mut conn, "g", stale + 1);
    assert_eq!(resumed.reply, Some(id("w")));
    let Some((tell, next)) = went_on(&resumed) else {
        panic!()
    };
    assert_eq!((tell, next.holding_since), (plain("w"), None));
    assert!(claim(&mut conn, "g", "w", stale + 2));
}

#[test]
fn resuming_a_held_group_hands_it_to_nobody() {
    let mut conn = d1::database();
    enqueue(&mut conn, "g", "h", "r1", Some("r1"), 0).unwrap();
    assert!(claim(&mut conn, "g", "h", 0));
    run_enqueue(&mut conn, &granted("g", "w", "r1"), 1).unwrap();
    pause(&mut conn, "g", None, 2);
    let resumed = resume(&mut conn, "g", 3);
    assert_eq!((resumed.reply.clone(), went_on(&resumed)), (None, None));
    assert_eq!(
        resumed.log[0].reason,
        "resumed: nobody waits for a free group"
    );
    // The holder's release then hands it on as usual.
    let freed = release(&mut conn, "g", "h", 4);
    assert_eq!(went_on(&freed).map(|(t, _)| t.id), Some(id("w")));
}

#[test]
fn rows_written_before_the_pause_migration_still_work_and_migrate() {
    let mut conn = Connection::open_in_memory().unwrap();
    for (_, migration) in &sql::MIGRATIONS[..3] {
        conn.execute_batch(migration).unwrap();
    }
    // As Baton wrote them before §11: a holder with a fence, a grant
    // waiter and a plain one.
    conn.execute_batch(
        "INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at, heartbeat_at, fence) \
         VALUES ('g', 'old-h', 'r1', 'holding', 1, 5, 3); \
         INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at, turn_prefix) \
         VALUES ('g', 'old-g', 'r1', 'waiting', 2, 'turn'); \
         INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at) \
         VALUES ('g', 'old-w', 'r1', 'waiting', 3);",
    )
    .unwrap();
    let before = all(&conn);
    conn.execute_batch(sql::MIGRATIONS[3].1).unwrap();
    assert_eq!(all(&conn), before, "the migration changes no row");
    assert_eq!(d1::all_groups(&conn), vec![]);
    let view = inspect(&mut conn, "g");
    assert_eq!(view.paused, None);
    // Every old group is unpaused, its waiters timed from their enqueue.
    assert_eq!(claim_at(&mut conn, "g", "old-w", 6), Ok(behind("old-h")));
    let timed_out_at = 3 + TIMEOUTS.waiter_timeout_ms + 1;
    assert!(heartbeat(&mut conn, "g", "old-h", timed_out_at));
    assert_eq!(
        claim_at(&mut conn, "g", "old-w", timed_out_at),
        Ok(ClaimReply::TimedOut)
    );
    let t = timed_out_at;
    pause(&mut conn, "g", Some("upgrade"), t + 1);
    let freed = release(&mut conn, "g", "old-h", t + 2);
    assert_eq!(went_on(&freed), None);
    let resumed = resume(&mut conn, "g", t + 3);
    assert_eq!(resumed.reply, Some(id("old-g")));
    let Some((tell, _)) = went_on(&resumed) else {
        panic!()
    };
    assert_eq!(tell.event.news, News::Holding { fence: 4 });
    all(&conn);
}
