//! What happened at a key, and what the list of busy keys must hear of it
//! (contract §10): the key's `counts`, its `recent` holds that ended with a
//! waiter behind them or with the holder found dead, and whether a
//! decision makes a report to the key's list shard due.
//!
//! [`after`] reads a decision (the view it was taken on, its input and its
//! transition) and says what it adds to the history: nothing for an
//! uncontended acquire or release, whose only trace is the key's `grants`
//! count, which the holder row's own trigger keeps in the key row it
//! already writes (schema v5). [`write`] then runs the few statements a
//! contended decision adds, in the decision's own turn; [`inspect`] and
//! [`busy`] read them back.

use super::state::Holder;
use super::types::{Input, Reply, Transition, View, Write};
use super::Member;
use crate::busy::Busy;
use crate::ident::InstanceId;
use crate::limits::COORDINATOR_RECENT_KEPT;
use crate::sql::{
    integer, millis, millis_value, optional_millis, stored_id, text, text_value, Counted, SqlExec,
    SqlValue,
};

/// Schema v5 of the Coordinator's ladder (`super::schema`): the counts in
/// the key row (grants and hand-offs counted by the holder row's trigger,
/// superseded ids by the superseded row's), when a holder was last found
/// dead, whether a report to the list is owed, the recent holds, and how
/// long each holder that waited had waited (kept until its hold ends).
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

/// How a recorded hold ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Released,
    Dead,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Released => "released",
            Outcome::Dead => "dead",
        }
    }
}

/// A hold that ended with a waiter behind it or with its holder found dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub id: InstanceId,
    pub fence: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    /// How long the holder had waited for the key.
    pub waited_ms: u64,
    pub outcome: Outcome,
}

/// A key's counts since its object was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub grants: u64,
    pub hand_offs: u64,
    pub dead_holders: u64,
    pub superseded: u64,
    pub coalesced: u64,
}

/// What one decision adds to the key's history and its list entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Happened {
    /// Holders granted a slot after waiting, with how long they waited.
    pub waited: Vec<(InstanceId, u64)>,
    /// Holds that ended and are kept in `recent` (their `waited_ms` is
    /// read from the waited rows when written).
    pub ended: Vec<(Holder, Outcome)>,
    /// A holder was found dead (it lost its slot).
    pub found_dead: bool,
    /// An enqueue coalesced into a live waiter.
    pub coalesced: bool,
    /// The key gained its first waiter, lost its last, or a holder was
    /// found dead: the list must hear of it (`crate::busy::reporter`).
    pub report_due: bool,
}

impl Happened {
    /// Whether the decision adds anything: an uncontended acquire or
    /// release never does.
    pub fn is_empty(&self) -> bool {
        *self == Happened::default()
    }
}

/// The holder an input reports the check of (the acquire's, the alarm's,
/// a woken holder's): a decision on it that removes that holder found it
/// dead.
pub fn checked(input: &Input) -> Option<&InstanceId> {
    match input {
        Input::AcquireChecked { holder, .. }
        | Input::TickChecked { holder, .. }
        | Input::Woken { holder, .. } => Some(&holder.id),
        _ => None,
    }
}

/// What the decision that took `view` to `t` adds to the history;
/// `checked` is [`checked`] of its input. A holder removed by a decision
/// on its check was found dead; one removed by a release with a waiter
/// behind it handed its slot on.
pub fn after(view: &View, checked: Option<&InstanceId>, t: &Transition) -> Happened {
    let mut happened = Happened::default();
    let waited_before = view.summary.waiters > 0;
    for write in &t.writes {
        match write {
            Write::AddHolder(holder) => {
                let waiter = view
                    .front
                    .iter()
                    .find(|w| w.id == holder.id)
                    .or(match &view.member {
                        Some(Member::Waiter(w)) if w.id == holder.id => Some(w),
                        _ => None,
                    });
                if let Some(waiter) = waiter {
                    let waited = holder.since_ms.saturating_sub(waiter.since_ms);
                    if waited > 0 {
                        happened.waited.push((holder.id.clone(), waited));
                    }
                }
            }
            Write::RemoveHolder(id, _) => {
                let dead = checked == Some(id);
                happened.found_dead |= dead;
                let Some(holder) = view.summary.holders.iter().find(|h| h.id == *id) else {
                    continue;
                };
                if dead {
                    happened.ended.push((holder.clone(), Outcome::Dead));
                } else if waited_before {
                    happened.ended.push((holder.clone(), Outcome::Released));
                }
            }
            _ => {}
        }
    }
    happened.coalesced = matches!(
        &t.reply,
        Reply::Enqueue(reply) if reply.coalesced_into.is_some()
    );
    happened.report_due = happened.found_dead || waited_before != (t.state.summary.waiters > 0);
    happened
}

/// Writes what a decision added, at `now_ms`, in the decision's turn:
/// before the decision's own writes (`before_decision`, which reads how
/// long an ending holder waited, before its row's trigger forgets it), and
/// after them.
pub fn write_before<E: SqlExec>(sql: &Counted<'_, E>, key: &str, happened: &Happened) -> Vec<u64> {
    happened
        .ended
        .iter()
        .map(|(holder, _)| {
            sql.read(
                "SELECT waited_ms FROM coordinator_waited WHERE key = ?1 AND id = ?2",
                &[text_value(key), text_value(holder.id.as_str())],
            )
            .first()
            .map_or(0, |row| millis(&row[0]))
        })
        .collect()
}

/// The rest of [`write_before`], after the decision's writes: `waited`
/// is what it read.
pub fn write_after<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    happened: &Happened,
    waited: &[u64],
    now_ms: u64,
) {
    let k = || text_value(key);
    for (id, waited_ms) in &happened.waited {
        sql.write(
            "INSERT INTO coordinator_waited (key, id, waited_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT(key, id) DO UPDATE SET waited_ms = excluded.waited_ms",
            &[k(), text_value(id.as_str()), millis_value(*waited_ms)],
        );
    }
    for ((holder, outcome), waited_ms) in happened.ended.iter().zip(waited) {
        sql.write(
            "INSERT INTO coordinator_recent (key, id, fence, from_ms, to_ms, waited_ms, outcome) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                k(),
                text_value(holder.id.as_str()),
                millis_value(holder.fence),
                millis_value(holder.since_ms),
                millis_value(now_ms.max(holder.since_ms)),
                millis_value(*waited_ms),
                text_value(outcome.as_str()),
            ],
        );
    }
    if !happened.ended.is_empty() {
        // Keep the newest: the oldest beyond the bound leave, one seek.
        sql.write(
            "DELETE FROM coordinator_recent WHERE key = ?1 AND seq <= \
             (SELECT seq FROM coordinator_recent WHERE key = ?1 ORDER BY seq DESC \
              LIMIT 1 OFFSET ?2)",
            &[k(), millis_value(COORDINATOR_RECENT_KEPT)],
        );
    }
    if happened.found_dead || happened.coalesced || happened.report_due {
        sql.write(
            "UPDATE coordinator_keys SET \
             dead_at_ms = CASE WHEN ?2 THEN ?3 ELSE dead_at_ms END, \
             dead_holders = dead_holders + ?2, coalesced = coalesced + ?4, \
             list_owed = CASE WHEN ?5 THEN 1 ELSE list_owed END \
             WHERE key = ?1",
            &[
                k(),
                SqlValue::Integer(i64::from(happened.found_dead)),
                millis_value(now_ms),
                SqlValue::Integer(i64::from(happened.coalesced)),
                SqlValue::Integer(i64::from(happened.report_due)),
            ],
        );
    }
}

/// What the key's list entry shows: `holders`, `waiters` and `limit` from
/// its summary, its earliest waiter's arrival and its last dead holder
/// read (a report is sent only for a contended key).
pub fn busy<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    holders: u32,
    waiters: u32,
    limit: u32,
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
    sql.write(
        "UPDATE coordinator_keys SET list_owed = 0 WHERE key = ?1 AND list_owed = 1",
        &[text_value(key)],
    );
}

/// `inspect`'s `recent`, newest first, and `counts`.
pub fn inspect<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> (Vec<Hold>, Counts) {
    let recent = sql
        .read(
            "SELECT id, fence, from_ms, to_ms, waited_ms, outcome FROM coordinator_recent \
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
        })
        .collect();
    let counts = sql
        .read(
            "SELECT grants, hand_offs, dead_holders, superseded_total, coalesced \
             FROM coordinator_keys WHERE key = ?1",
            &[text_value(key)],
        )
        .first()
        .map_or_else(Counts::default, |row| Counts {
            grants: millis(&row[0]),
            hand_offs: millis(&row[1]),
            dead_holders: millis(&row[2]),
            superseded: millis(&row[3]),
            coalesced: millis(&row[4]),
        });
    (recent, counts)
}
