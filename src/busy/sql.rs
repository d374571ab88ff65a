//! A list shard's storage: one row per key it has heard of, in the
//! object's SQLite database.
//!
//! Generic over [`SqlExec`], so the same statements run in the Durable
//! Object and natively under `rusqlite` in tests. A page is one statement
//! through a partial index of the listed keys (`key > cursor ORDER BY key
//! LIMIT n`): it seeks to the cursor and reads `n` rows, so its cost does
//! not grow with the keys listed (tested). A report reads and writes its
//! key's row through the primary key; the alarm finds due rows through an
//! index on their wake time.

use super::decide::{Transition, Write};
use super::state::{Busy, Row};
use crate::sql::{
    integer, millis, millis_value, optional_millis, optional_millis_value, text, text_value,
    Ladder, SqlExec, SqlValue,
};

/// Schema version `n` is reached by running `MIGRATIONS[n - 1]`.
pub const MIGRATIONS: &[&[&str]] = &[
    // v1: a row per key. `listed` 1: on the list, with what its report
    // said; 0: gone, remembered until `wake_ms` for its stamp alone.
    // `wake_ms`: when the alarm next has something to do for the row.
    &[
        "CREATE TABLE busy_keys (
            key TEXT PRIMARY KEY,
            stamp INTEGER NOT NULL,
            listed INTEGER NOT NULL,
            holders INTEGER NOT NULL DEFAULT 0,
            waiting INTEGER NOT NULL DEFAULT 0,
            oldest_since_ms INTEGER,
            holder_limit INTEGER NOT NULL DEFAULT 1,
            dead_until_ms INTEGER,
            reported_ms INTEGER NOT NULL DEFAULT 0,
            wake_ms INTEGER
        )",
        "CREATE INDEX busy_keys_listed ON busy_keys (key) WHERE listed = 1",
        "CREATE INDEX busy_keys_wake ON busy_keys (wake_ms) WHERE wake_ms IS NOT NULL",
    ],
    // v2 (contract §11): whether an operator paused the key (0 in every
    // older row: not paused).
    &["ALTER TABLE busy_keys ADD COLUMN paused INTEGER NOT NULL DEFAULT 0"],
    // v3 (contract §10a): from when the key counts as stalled (null in
    // every older row: nothing keeps it).
    &["ALTER TABLE busy_keys ADD COLUMN stalled_from_ms INTEGER"],
];

pub const LADDER: Ladder = Ladder {
    name: "busy list",
    read_version: "SELECT version FROM baton_schema WHERE name = 'busy_list' LIMIT 1",
    write_version: "INSERT INTO baton_schema (name, version) VALUES ('busy_list', ?1) \
        ON CONFLICT(name) DO UPDATE SET version = excluded.version",
    migrations: MIGRATIONS,
    fresh: &[],
};

pub fn migrate(exec: &impl SqlExec) {
    LADDER.migrate(exec);
}

const COLUMNS: &str = "stamp, listed, holders, waiting, oldest_since_ms, holder_limit, \
     dead_until_ms, reported_ms, wake_ms, paused, stalled_from_ms";

/// A listed key as a page answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    pub stamp: u64,
    pub busy: Busy,
    /// When the shard took the report it shows (its own clock).
    pub reported_ms: u64,
}

fn row(columns: &[SqlValue]) -> Row {
    if integer(&columns[1]) == 0 {
        return Row::Gone {
            stamp: millis(&columns[0]),
            forget_ms: optional_millis(&columns[8]).expect("a gone key has a time to be forgotten"),
        };
    }
    let Listed {
        stamp,
        busy,
        reported_ms,
    } = listed(columns);
    Row::Listed {
        stamp,
        busy,
        reported_ms,
    }
}

/// A row's [`COLUMNS`] read as a listed key's, whatever its `listed`
/// column says: for a row known to be listed (by [`row`], or by a
/// statement that selects only those), so no gone row reaches a page.
fn listed(columns: &[SqlValue]) -> Listed {
    Listed {
        stamp: millis(&columns[0]),
        busy: Busy {
            holders: millis(&columns[2]) as u32,
            waiting: millis(&columns[3]) as u32,
            oldest_since_ms: optional_millis(&columns[4]),
            limit: millis(&columns[5]) as u32,
            dead_until_ms: optional_millis(&columns[6]),
            paused: integer(&columns[9]) != 0,
            stalled_from_ms: optional_millis(&columns[10]),
        },
        reported_ms: millis(&columns[7]),
    }
}

/// The key's row, if the shard has one.
pub fn load(exec: &impl SqlExec, key: &str) -> Option<Row> {
    exec.run(
        &format!("SELECT {COLUMNS} FROM busy_keys WHERE key = ?1"),
        &[text_value(key)],
    )
    .first()
    .map(|columns| row(columns))
}

/// Carries out a decision's writes.
pub fn write(exec: &impl SqlExec, key: &str, transition: &Transition) {
    for write in &transition.writes {
        match write {
            Write::Put(new) => put(exec, key, new),
            Write::Delete => {
                exec.run("DELETE FROM busy_keys WHERE key = ?1", &[text_value(key)]);
            }
        }
    }
}

fn put(exec: &impl SqlExec, key: &str, new: &Row) {
    let number = |n: u32| millis_value(u64::from(n));
    let wake = optional_millis_value(new.wake_ms());
    let values = match new {
        Row::Listed {
            stamp,
            busy,
            reported_ms,
        } => [
            millis_value(*stamp),
            SqlValue::Integer(1),
            number(busy.holders),
            number(busy.waiting),
            optional_millis_value(busy.oldest_since_ms),
            number(busy.limit),
            optional_millis_value(busy.dead_until_ms),
            millis_value(*reported_ms),
            wake,
            SqlValue::Integer(i64::from(busy.paused)),
            optional_millis_value(busy.stalled_from_ms),
        ],
        Row::Gone { stamp, .. } => [
            millis_value(*stamp),
            SqlValue::Integer(0),
            number(0),
            number(0),
            SqlValue::Null,
            number(1),
            SqlValue::Null,
            number(0),
            wake,
            SqlValue::Integer(0),
            SqlValue::Null,
        ],
    };
    let mut params = vec![text_value(key)];
    params.extend(values);
    exec.run(
        &format!(
            "INSERT INTO busy_keys (key, {COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT(key) DO UPDATE SET stamp = ?2, listed = ?3, holders = ?4, waiting = ?5, \
             oldest_since_ms = ?6, holder_limit = ?7, dead_until_ms = ?8, reported_ms = ?9, \
             wake_ms = ?10, paused = ?11, stalled_from_ms = ?12"
        ),
        &params,
    );
}

/// Up to `n` listed keys after `after` (from the first without), in key
/// order, as they stand at `now_ms` (a dead holder's hour that ended
/// before the alarm came is not shown).
pub fn page(
    exec: &impl SqlExec,
    after: Option<&str>,
    n: u32,
    now_ms: u64,
) -> Vec<(String, Listed)> {
    exec.run(
        &format!(
            "SELECT key, {COLUMNS} FROM busy_keys INDEXED BY busy_keys_listed \
             WHERE listed = 1 AND key > ?1 AND (waiting > 0 OR dead_until_ms > ?2) \
             ORDER BY key LIMIT ?3"
        ),
        &[
            text_value(after.unwrap_or("")),
            millis_value(now_ms),
            millis_value(u64::from(n)),
        ],
    )
    .iter()
    .map(|columns| (text(&columns[0]), listed(&columns[1..])))
    .collect()
}

/// The earliest time a row needs the alarm.
pub fn next_wake(exec: &impl SqlExec) -> Option<u64> {
    exec.run(
        "SELECT wake_ms FROM busy_keys WHERE wake_ms IS NOT NULL ORDER BY wake_ms LIMIT 1",
        &[],
    )
    .first()
    .map(|columns| millis(&columns[0]))
}

/// Keys whose row's time has come, earliest first, at most `limit`.
pub fn due_keys(exec: &impl SqlExec, now_ms: u64, limit: u32) -> Vec<String> {
    exec.run(
        "SELECT key FROM busy_keys WHERE wake_ms IS NOT NULL AND wake_ms <= ?1 \
         ORDER BY wake_ms LIMIT ?2",
        &[millis_value(now_ms), millis_value(u64::from(limit))],
    )
    .iter()
    .map(|columns| text(&columns[0]))
    .collect()
}
