//! The Debouncer's storage: a key's [`KeyState`] as rows in the object's
//! SQLite database, one row per part (burst, pending start, each create not
//! yet confirmed, each recent start), and the time each key next needs the
//! alarm, so one alarm serves every key an object holds.
//!
//! Generic over [`SqlExec`], so the very same statements run in the Durable
//! Object and natively under `rusqlite` in tests. Each statement touches one
//! key's rows through its primary key, with a `LIMIT` where it reads a list.
//! A failing statement means the schema and this code disagree: it panics,
//! and the object restarts from what was committed.

use super::decide::Write;
use super::state::{Burst, Creating, Edge, Fire, KeyState, Pending, Started};
use crate::coordinator::{SqlExec, SqlValue};
use crate::ident::InstanceId;
use crate::limits::{DEBOUNCE_STARTED_KEPT, DEBOUNCE_UNFINISHED_STARTS_MAX};

/// The tables, created on first use. A later release that changes them adds
/// statements here that upgrade in place (`ADD COLUMN` with defaults), so a
/// database written by this one still loads.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS debounce_keys (
        key TEXT PRIMARY KEY,
        wake_at INTEGER
    )",
    "CREATE INDEX IF NOT EXISTS debounce_keys_wake ON debounce_keys (wake_at)
        WHERE wake_at IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS debounce_bursts (
        key TEXT PRIMARY KEY,
        edge TEXT NOT NULL,
        delay_ms INTEGER NOT NULL,
        max_wait_ms INTEGER NOT NULL,
        workflow TEXT NOT NULL,
        first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL,
        calls INTEGER NOT NULL,
        leading TEXT
    )",
    // `at_ms` NULL: the start fires when the key's burst ends.
    "CREATE TABLE IF NOT EXISTS debounce_pending (
        key TEXT PRIMARY KEY,
        id TEXT NOT NULL,
        workflow TEXT NOT NULL,
        params TEXT,
        at_ms INTEGER,
        set_at_ms INTEGER
    )",
    "CREATE TABLE IF NOT EXISTS debounce_creating (
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        workflow TEXT NOT NULL,
        params TEXT,
        fired_at INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        next_try_at INTEGER NOT NULL,
        last_error TEXT,
        PRIMARY KEY (key, id)
    )",
    "CREATE TABLE IF NOT EXISTS debounce_started (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        at_ms INTEGER NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS debounce_started_key ON debounce_started (key, seq)",
];

/// Creates the tables if they are missing; cheap when they exist.
pub fn migrate(exec: &impl SqlExec) {
    for statement in SCHEMA {
        exec.run(statement, &[]);
    }
}

fn text(value: &SqlValue) -> String {
    match value {
        SqlValue::Text(s) => s.clone(),
        other => panic!("expected text, found {other:?}"),
    }
}

fn opt_text(value: &SqlValue) -> Option<String> {
    match value {
        SqlValue::Null => None,
        other => Some(text(other)),
    }
}

fn int(value: &SqlValue) -> u64 {
    match value {
        SqlValue::Integer(n) if *n >= 0 => *n as u64,
        other => panic!("expected a non-negative integer, found {other:?}"),
    }
}

fn opt_int(value: &SqlValue) -> Option<u64> {
    match value {
        SqlValue::Null => None,
        other => Some(int(other)),
    }
}

fn id(value: &SqlValue) -> InstanceId {
    let raw = text(value);
    InstanceId::parse("instanceId", &raw).unwrap_or_else(|_| panic!("stored id {raw:?} is invalid"))
}

/// Persisted integers are i64; times and counts stay far below 2^63.
fn n(value: u64) -> SqlValue {
    SqlValue::Integer(i64::try_from(value).expect("a stored integer fits i64"))
}

fn t(value: &str) -> SqlValue {
    SqlValue::Text(value.to_owned())
}

fn opt_t(value: Option<&str>) -> SqlValue {
    value.map_or(SqlValue::Null, t)
}

/// Everything one key holds.
pub fn load(exec: &impl SqlExec, key: &str) -> KeyState {
    let k = t(key);
    let burst = exec
        .run(
            "SELECT edge, delay_ms, max_wait_ms, workflow, first_at, last_at, calls, leading \
             FROM debounce_bursts WHERE key = ?1",
            std::slice::from_ref(&k),
        )
        .first()
        .map(|row| Burst {
            edge: Edge::parse(&text(&row[0])).expect("a stored edge is known"),
            delay_ms: int(&row[1]),
            max_wait_ms: int(&row[2]),
            workflow: text(&row[3]),
            first_at_ms: int(&row[4]),
            last_at_ms: int(&row[5]),
            calls: int(&row[6]),
            leading: opt_text(&row[7]).map(|_| id(&row[7])),
        });
    let pending = exec
        .run(
            "SELECT id, workflow, params, at_ms, set_at_ms FROM debounce_pending WHERE key = ?1",
            std::slice::from_ref(&k),
        )
        .first()
        .map(|row| Pending {
            id: id(&row[0]),
            workflow: text(&row[1]),
            params: opt_text(&row[2]),
            fire: match (opt_int(&row[3]), opt_int(&row[4])) {
                (Some(at_ms), Some(set_at_ms)) => Fire::At { at_ms, set_at_ms },
                _ => Fire::BurstEnd,
            },
        });
    let creating = exec
        .run(
            "SELECT id, workflow, params, fired_at, failures, next_try_at, last_error \
             FROM debounce_creating WHERE key = ?1 ORDER BY seq LIMIT ?2",
            &[k.clone(), n(DEBOUNCE_UNFINISHED_STARTS_MAX as u64)],
        )
        .iter()
        .map(|row| Creating {
            id: id(&row[0]),
            workflow: text(&row[1]),
            params: opt_text(&row[2]),
            fired_at_ms: int(&row[3]),
            failures: u32::try_from(int(&row[4])).unwrap_or(u32::MAX),
            next_try_at_ms: int(&row[5]),
            last_error: opt_text(&row[6]),
        })
        .collect();
    let started = exec
        .run(
            "SELECT id, at_ms FROM debounce_started WHERE key = ?1 ORDER BY seq DESC LIMIT ?2",
            &[k, n(DEBOUNCE_STARTED_KEPT as u64)],
        )
        .iter()
        .map(|row| Started {
            id: id(&row[0]),
            at_ms: int(&row[1]),
        })
        .collect();
    KeyState {
        burst,
        pending,
        creating,
        started,
    }
}

/// Commits one decision's writes for `key`, and when the key next needs the alarm.
pub fn write(exec: &impl SqlExec, key: &str, writes: &[Write], wake_at_ms: Option<u64>) {
    let k = t(key);
    for write in writes {
        match write {
            Write::Burst(None) => {
                exec.run(
                    "DELETE FROM debounce_bursts WHERE key = ?1",
                    std::slice::from_ref(&k),
                );
            }
            Write::Burst(Some(b)) => {
                exec.run(
                    "INSERT OR REPLACE INTO debounce_bursts \
                     (key, edge, delay_ms, max_wait_ms, workflow, first_at, last_at, calls, leading) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    &[
                        k.clone(),
                        t(b.edge.as_str()),
                        n(b.delay_ms),
                        n(b.max_wait_ms),
                        t(&b.workflow),
                        n(b.first_at_ms),
                        n(b.last_at_ms),
                        n(b.calls),
                        opt_t(b.leading.as_ref().map(InstanceId::as_str)),
                    ],
                );
            }
            Write::Pending(None) => {
                exec.run(
                    "DELETE FROM debounce_pending WHERE key = ?1",
                    std::slice::from_ref(&k),
                );
            }
            Write::Pending(Some(p)) => {
                let (at_ms, set_at_ms) = match p.fire {
                    Fire::BurstEnd => (SqlValue::Null, SqlValue::Null),
                    Fire::At { at_ms, set_at_ms } => (n(at_ms), n(set_at_ms)),
                };
                exec.run(
                    "INSERT OR REPLACE INTO debounce_pending \
                     (key, id, workflow, params, at_ms, set_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &[
                        k.clone(),
                        t(p.id.as_str()),
                        t(&p.workflow),
                        opt_t(p.params.as_deref()),
                        at_ms,
                        set_at_ms,
                    ],
                );
            }
            Write::Creating(c) => {
                // An update keeps the row's place (its seq); a new row goes last.
                let updated = exec.run(
                    "UPDATE debounce_creating SET workflow = ?3, params = ?4, fired_at = ?5, \
                     failures = ?6, next_try_at = ?7, last_error = ?8 \
                     WHERE key = ?1 AND id = ?2 RETURNING id",
                    &[
                        k.clone(),
                        t(c.id.as_str()),
                        t(&c.workflow),
                        opt_t(c.params.as_deref()),
                        n(c.fired_at_ms),
                        n(u64::from(c.failures)),
                        n(c.next_try_at_ms),
                        opt_t(c.last_error.as_deref()),
                    ],
                );
                if updated.is_empty() {
                    exec.run(
                        "INSERT INTO debounce_creating \
                         (key, id, seq, workflow, params, fired_at, failures, next_try_at, last_error) \
                         VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM debounce_creating \
                         WHERE key = ?1), ?3, ?4, ?5, ?6, ?7, ?8)",
                        &[
                            k.clone(),
                            t(c.id.as_str()),
                            t(&c.workflow),
                            opt_t(c.params.as_deref()),
                            n(c.fired_at_ms),
                            n(u64::from(c.failures)),
                            n(c.next_try_at_ms),
                            opt_t(c.last_error.as_deref()),
                        ],
                    );
                }
            }
            Write::CreatingDone(id) => {
                exec.run(
                    "DELETE FROM debounce_creating WHERE key = ?1 AND id = ?2",
                    &[k.clone(), t(id.as_str())],
                );
            }
            Write::Started(s) => {
                exec.run(
                    "INSERT INTO debounce_started (key, id, at_ms) VALUES (?1, ?2, ?3)",
                    &[k.clone(), t(s.id.as_str()), n(s.at_ms)],
                );
                // Keep the newest few: the oldest beyond them goes, one per
                // insert, so the key's rows stay bounded.
                exec.run(
                    "DELETE FROM debounce_started WHERE seq IN (SELECT seq FROM debounce_started \
                     WHERE key = ?1 ORDER BY seq DESC LIMIT -1 OFFSET ?2)",
                    &[k.clone(), n(DEBOUNCE_STARTED_KEPT as u64)],
                );
            }
        }
    }
    exec.run(
        "INSERT INTO debounce_keys (key, wake_at) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET wake_at = excluded.wake_at",
        &[k, wake_at_ms.map_or(SqlValue::Null, n)],
    );
}

/// Keys whose time has come at `now_ms`, earliest first, at most `limit`.
pub fn due_keys(exec: &impl SqlExec, now_ms: u64, limit: u32) -> Vec<String> {
    exec.run(
        "SELECT key FROM debounce_keys WHERE wake_at IS NOT NULL AND wake_at <= ?1 \
         ORDER BY wake_at LIMIT ?2",
        &[n(now_ms), n(u64::from(limit))],
    )
    .iter()
    .map(|row| text(&row[0]))
    .collect()
}

/// When the object's alarm should next run: the earliest key's time.
pub fn next_wake(exec: &impl SqlExec) -> Option<u64> {
    exec.run(
        "SELECT wake_at FROM debounce_keys WHERE wake_at IS NOT NULL ORDER BY wake_at LIMIT 1",
        &[],
    )
    .first()
    .map(|row| int(&row[0]))
}
