//! The key's history (contract §10) on the rows: its schema steps, each
//! [`HistoryWrite`] carried out on the tables ([`write()`], for
//! `super::write`), and the reads back for `inspect` and the list
//! ([`inspect`], [`busy`], [`owed`], [`is_owed`]). What a decision adds
//! to the history is `crate::coordinator::types::history`'s rule.

use crate::busy::Busy;
use crate::coordinator::types::history::{Counts, HistoryWrite, Hold, Outcome};
use crate::limits::COORDINATOR_RECENT_KEPT;
use crate::sql::{
    integer, millis, millis_value, optional_millis, stored_id, text, text_value, Counted, SqlExec,
    SqlValue,
};

/// Schema v5 of the Coordinator's ladder (`super::schema`): the counts in
/// the key row (grants counted by the holder row's trigger, superseded ids
/// by the superseded row's; v5's trigger also counted every `handed` grant
/// as a hand-off, which v7 leaves to the decision's `Tally`), when a
/// holder was last found dead, whether a report to the list is owed, the
/// recent holds, and how long each holder that waited had waited (kept
/// until its hold ends).
pub const MIGRATION: &[&str] = &[
    "ALTER TABLE coordinator_keys ADD COLUMN grants INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN hand_offs INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN dead_holders INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN superseded_total INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN coalesced INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN dead_at_ms INTEGER",
    "ALTER TABLE coordinator_keys ADD COLUMN list_owed INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX coordinator_keys_list_owed ON coordinator_keys (key) WHERE list_owed = 1",
    "CREATE TABLE coordinator_recent (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        fence INTEGER NOT NULL,
        from_ms INTEGER NOT NULL,
        to_ms INTEGER NOT NULL,
        waited_ms INTEGER NOT NULL,
        outcome TEXT NOT NULL
    )",
    "CREATE INDEX coordinator_recent_key ON coordinator_recent (key, seq)",
    "CREATE TABLE coordinator_waited (
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        waited_ms INTEGER NOT NULL,
        PRIMARY KEY (key, id)
    )",
    // The v4 trigger, counting grants and hand-offs in the same statement.
    "DROP TRIGGER coordinator_holders_fence",
    "CREATE TRIGGER coordinator_holders_fence AFTER INSERT ON coordinator_holders BEGIN \
        INSERT INTO coordinator_keys (key, fence, grants, hand_offs) \
        VALUES (new.key, new.fence, 1, new.state = 'handed') \
        ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \
        grants = grants + 1, hand_offs = hand_offs + (new.state = 'handed'); \
     END",
    "CREATE TRIGGER coordinator_superseded_count AFTER INSERT ON coordinator_superseded BEGIN \
        UPDATE coordinator_keys SET superseded_total = superseded_total + 1 WHERE key = new.key; \
     END",
    // A hold that ends forgets how long its holder waited (a seek that
    // finds nothing for a holder that never waited: no row is written).
    "CREATE TRIGGER coordinator_holders_waited AFTER DELETE ON coordinator_holders BEGIN \
        DELETE FROM coordinator_waited WHERE key = old.key AND id = old.id; \
     END",
];

/// Schema v7: the holder row's trigger keeps the key's fence and counts
/// its grants, and no longer decides which grant is a hand-off (it counted
/// every `handed` one, and missed a waiter whose own acquire took a dead
/// holder's slot): the decision's `Tally` says how many.
pub const MIGRATION_V7: &[&str] = &[
    "DROP TRIGGER coordinator_holders_fence",
    "CREATE TRIGGER coordinator_holders_fence AFTER INSERT ON coordinator_holders BEGIN \
        INSERT INTO coordinator_keys (key, fence, grants) VALUES (new.key, new.fence, 1) \
        ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \
        grants = grants + 1; \
     END",
];

/// Schema v9 (contract §1d): a holder row's `cancelling` mark, the key's
/// `cancelled` count, and whether a recent hold's holder was cancelled.
/// Rows from before read as never cancelled.
pub const MIGRATION_CANCEL: &[&str] = &[
    "ALTER TABLE coordinator_holders ADD COLUMN cancelling INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_keys ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_recent ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0",
];

/// A schema step (issue 38): a release that hands the key on runs two
/// statements fewer before its reply, and keeps what it kept.
///
/// - A holder's wait (`Holder::waited_ms`) is a column of its own row,
///   written by the insert that grants it (0: it never waited), instead
///   of a row of `coordinator_waited` written after it; the recorded hold
///   takes it from the decision. The rows kept move onto their holders,
///   and the table goes with the trigger that forgot them: a holder that
///   leaves takes its wait with it.
/// - The decision's tally (`history::Tally`, `history::record`) rides on
///   its first finished hold's stamp, in columns of the holder row
///   (`tally_*`, 0 and NULL: nothing) that the row's trigger
///   `coordinator_holders_ended` adds to the key row it already writes,
///   as the statement of its own did (`HistoryWrite::Tally`): counts
///   grow, `dead_at_ms` is the tally's if it has one, `list_owed` is
///   marked if owed. The row is deleted in the same trigger.
pub const MIGRATION_HAND_OFF: &[&str] = &[
    "ALTER TABLE coordinator_holders ADD COLUMN waited_ms INTEGER NOT NULL DEFAULT 0",
    "UPDATE coordinator_holders SET waited_ms = (SELECT w.waited_ms FROM coordinator_waited w \
     WHERE w.key = coordinator_holders.key AND w.id = coordinator_holders.id) \
     WHERE EXISTS (SELECT 1 FROM coordinator_waited w \
     WHERE w.key = coordinator_holders.key AND w.id = coordinator_holders.id)",
    "DROP TRIGGER coordinator_holders_waited",
    "DROP TABLE coordinator_waited",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_hand_offs INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_dead_holders INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_coalesced INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_dead_at_ms INTEGER",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_report_owed INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE coordinator_holders ADD COLUMN tally_cancelled INTEGER NOT NULL DEFAULT 0",
    "DROP TRIGGER coordinator_holders_ended",
    // v12's trigger (the fence, the grant, the hold time kept to the last
    // 20, `super::schema`'s HOLD_TIMES_KEPT check), with the tally added.
    "CREATE TRIGGER coordinator_holders_ended AFTER UPDATE OF ended_ms ON coordinator_holders \
     WHEN new.ended_ms IS NOT NULL BEGIN \
        INSERT INTO coordinator_keys (key, fence, grants, hold_times_ms, hand_offs, \
            dead_holders, coalesced, dead_at_ms, list_owed, cancelled) \
        VALUES (new.key, new.fence, 1, json_array(max(new.ended_ms - new.since_ms, 0)), \
            new.tally_hand_offs, new.tally_dead_holders, new.tally_coalesced, \
            new.tally_dead_at_ms, new.tally_report_owed, new.tally_cancelled) \
        ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \
        grants = grants + 1, hold_times_ms = ( \
            SELECT CASE WHEN json_array_length(t) > 20 THEN json_remove(t, '$[0]') ELSE t END \
            FROM (SELECT json_insert(COALESCE(hold_times_ms, '[]'), '$[#]', \
                  max(new.ended_ms - new.since_ms, 0)) AS t)), \
        hand_offs = hand_offs + excluded.hand_offs, \
        dead_holders = dead_holders + excluded.dead_holders, \
        coalesced = coalesced + excluded.coalesced, \
        dead_at_ms = COALESCE(excluded.dead_at_ms, dead_at_ms), \
        list_owed = CASE WHEN excluded.list_owed = 1 THEN 1 ELSE list_owed END, \
        cancelled = cancelled + excluded.cancelled; \
        DELETE FROM coordinator_holders WHERE key = new.key AND id = new.id; \
     END",
];

/// One history write carried out on the tables (`super::write` hands
/// them here).
pub fn write<E: SqlExec>(sql: &Counted<'_, E>, key: &str, write: &HistoryWrite) {
    let k = || text_value(key);
    match write {
        HistoryWrite::Hold {
            id,
            fence,
            from_ms,
            to_ms,
            waited_ms,
            outcome,
            cancelled,
        } => {
            sql.write(
                "INSERT INTO coordinator_recent \
                 (key, id, fence, from_ms, to_ms, waited_ms, outcome, cancelled) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                &[
                    k(),
                    text_value(id.as_str()),
                    millis_value(*fence),
                    millis_value(*from_ms),
                    millis_value(*to_ms),
                    millis_value(*waited_ms),
                    text_value(outcome.as_str()),
                    SqlValue::Integer(i64::from(*cancelled)),
                ],
            );
            // The newest are kept: the trigger coordinator_recent_kept
            // (schema v16) deletes the oldest beyond the bound, one seek.
        }
        // A decision that finishes no hold (`history::record`); one that
        // does, `coordinator_holders_ended` adds it (MIGRATION_HAND_OFF).
        HistoryWrite::Tally(t) => {
            sql.write(
                "UPDATE coordinator_keys SET hand_offs = hand_offs + ?2, \
                 dead_holders = dead_holders + ?3, coalesced = coalesced + ?4, \
                 dead_at_ms = COALESCE(?5, dead_at_ms), \
                 list_owed = CASE WHEN ?6 THEN 1 ELSE list_owed END, \
                 cancelled = cancelled + ?7 \
                 WHERE key = ?1",
                &[
                    k(),
                    SqlValue::Integer(i64::from(t.hand_offs)),
                    SqlValue::Integer(i64::from(t.dead_holders)),
                    SqlValue::Integer(i64::from(t.coalesced)),
                    t.dead_at_ms.map_or(SqlValue::Null, millis_value),
                    SqlValue::Integer(i64::from(t.report_owed)),
                    SqlValue::Integer(i64::from(t.cancelled)),
                ],
            );
        }
        HistoryWrite::Paid => {
            sql.write(
                "UPDATE coordinator_keys SET list_owed = 0 WHERE key = ?1 AND list_owed = 1",
                &[k()],
            );
        }
    }
}

/// What the key's list entry shows: `holders`, `waiters`, `limit` and
/// whether it is `paused` from its summary, its earliest waiter's arrival and its last dead holder
/// read (a report is sent only for a contended key).
pub fn busy<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    holders: u32,
    waiters: u32,
    limit: u32,
    paused: bool,
) -> Busy {
    let oldest_since_ms = if waiters > 0 {
        sql.read(
            "SELECT since_ms FROM coordinator_waiters WHERE key = ?1 ORDER BY seq LIMIT 1",
            &[text_value(key)],
        )
        .first()
        .map(|row| millis(&row[0]))
    } else {
        None
    };
    let dead_at = sql
        .read(
            "SELECT dead_at_ms FROM coordinator_keys WHERE key = ?1",
            &[text_value(key)],
        )
        .first()
        .and_then(|row| optional_millis(&row[0]));
    Busy {
        holders,
        waiting: if oldest_since_ms.is_some() {
            waiters
        } else {
            0
        },
        oldest_since_ms,
        limit: limit.max(1),
        dead_until_ms: dead_at.map(Busy::dead_until),
        paused,
        // The holders' part (§10a): `super::health::busy` fills it in.
        stalled_from_ms: None,
    }
}

/// Keys that owe their list shard a report, at most `limit`.
pub fn owed<E: SqlExec>(sql: &Counted<'_, E>, limit: u32) -> Vec<String> {
    sql.read(
        "SELECT key FROM coordinator_keys WHERE list_owed = 1 LIMIT ?1",
        &[millis_value(u64::from(limit))],
    )
    .iter()
    .map(|row| text(&row[0]))
    .collect()
}

/// Whether `key` owes its list shard a report.
pub fn is_owed<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> bool {
    sql.read(
        "SELECT list_owed FROM coordinator_keys WHERE key = ?1",
        &[text_value(key)],
    )
    .first()
    .is_some_and(|row| integer(&row[0]) == 1)
}

/// The shard confirmed the key's report.
pub fn paid<E: SqlExec>(sql: &Counted<'_, E>, key: &str) {
    write(sql, key, &HistoryWrite::Paid);
}

/// `inspect`'s `recent`, newest first, and `counts`.
pub fn inspect<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> (Vec<Hold>, Counts) {
    let recent = sql
        .read(
            "SELECT id, fence, from_ms, to_ms, waited_ms, outcome, cancelled \
             FROM coordinator_recent \
             WHERE key = ?1 ORDER BY seq DESC LIMIT ?2",
            &[text_value(key), millis_value(COORDINATOR_RECENT_KEPT)],
        )
        .iter()
        .map(|row| Hold {
            id: stored_id(&row[0]),
            fence: millis(&row[1]),
            from_ms: millis(&row[2]),
            to_ms: millis(&row[3]),
            waited_ms: millis(&row[4]),
            outcome: if text(&row[5]) == "dead" {
                Outcome::Dead
            } else {
                Outcome::Released
            },
            cancelled: integer(&row[6]) != 0,
        })
        .collect();
    let counts = sql
        .read(
            // A grant is folded into the key row when its hold ends (schema
            // v12): the holders' rows are the grants not folded in yet, and
            // a key whose first holder still holds may have no row at all.
            "SELECT COALESCE(k.grants, 0) + \
             (SELECT COUNT(*) FROM coordinator_holders WHERE key = ?1), \
             COALESCE(k.hand_offs, 0), COALESCE(k.dead_holders, 0), \
             COALESCE(k.superseded_total, 0), COALESCE(k.coalesced, 0), \
             COALESCE(k.cancelled, 0) \
             FROM (SELECT 1) LEFT JOIN coordinator_keys k ON k.key = ?1",
            &[text_value(key)],
        )
        .first()
        .map_or_else(Counts::default, |row| Counts {
            grants: millis(&row[0]),
            hand_offs: millis(&row[1]),
            dead_holders: millis(&row[2]),
            superseded: millis(&row[3]),
            coalesced: millis(&row[4]),
            cancelled: millis(&row[5]),
        });
    (recent, counts)
}
