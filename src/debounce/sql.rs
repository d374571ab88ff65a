//! The Debouncer's storage: a key's [`KeyState`] as rows in the object's
//! SQLite database, one row per part (burst, pending start, each create not
//! yet confirmed, each recent start), and the time each key next needs the
//! alarm, so one alarm serves every key an object holds.
//!
//! A pending start that batches (§4a) keeps each call's params in a row of
//! its own, so a call adds one row and a restart mid-batch loses none.
//!
//! Generic over [`SqlExec`], so the very same statements run in the Durable
//! Object and natively under `rusqlite` in tests. Each statement touches one
//! key's rows through its primary key, with a `LIMIT` where it reads a list.
//! A failing statement means the schema and this code disagree: it panics,
//! and the object restarts from what was committed.

use super::decide::Write;
use super::state::{
    BatchBounds, Burst, BurstRow, Creating, Edge, Fire, KeyState, Pending, PendingRow, Phase,
    StartParams, Started, CORRUPT_PHASE,
};
use crate::ident::InstanceId;
use crate::limits::{
    DEBOUNCE_BATCH_ITEMS_MAX, DEBOUNCE_STARTED_KEPT, DEBOUNCE_UNFINISHED_STARTS_MAX,
};
use crate::sql::{
    millis, millis_value, optional_millis, optional_millis_value, optional_text,
    optional_text_value, stored_id, text, text_value, Ladder, SqlExec, SqlValue,
};

pub const READ_VERSION: &str = "SELECT version FROM baton_schema WHERE name = 'debounce' LIMIT 1";
pub const WRITE_VERSION: &str = "INSERT INTO baton_schema (name, version) VALUES ('debounce', ?1) \
     ON CONFLICT(name) DO UPDATE SET version = excluded.version";

/// Schema version `n` is reached by running `MIGRATIONS[n - 1]`. Steps only
/// add, so a database written by an earlier release still loads.
pub const MIGRATIONS: &[&[&str]] = &[V1, V2];

/// v1: the tables as the first release created them, before the ladder
/// (`IF NOT EXISTS`: a database from then has them, and no version row).
const V1: &[&str] = &[
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

/// v2, batching (§4a): a pending start's bounds (both NULL: it takes the
/// latest params, as every v1 row does) and its batch, a row per call.
const V2: &[&str] = &[
    "ALTER TABLE debounce_pending ADD COLUMN batch_max_items INTEGER",
    "ALTER TABLE debounce_pending ADD COLUMN batch_max_bytes INTEGER",
    "CREATE TABLE debounce_batch_items (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        params TEXT NOT NULL,
        PRIMARY KEY (key, seq)
    )",
];

/// The version this release writes.
pub const CURRENT_VERSION: i64 = LADDER.current();

pub const LADDER: Ladder = Ladder {
    name: "debounce",
    read_version: READ_VERSION,
    write_version: WRITE_VERSION,
    migrations: MIGRATIONS,
    fresh: &[],
};

/// Brings a database to [`LADDER`]'s current version; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    LADDER.migrate(exec);
}

/// Everything one key holds.
pub fn load(exec: &impl SqlExec, key: &str) -> KeyState {
    let k = text_value(key);
    let phase =
        Phase::from_rows(load_burst(exec, &k), load_pending(exec, &k)).expect(CORRUPT_PHASE);
    // Only a batching start has a batch (the core's invariant), so a key
    // that does not batch pays no read for it.
    let batch = match phase.pending() {
        Some(Pending {
            params: StartParams::Batch(_),
            ..
        }) => exec
            .run(
                "SELECT params FROM debounce_batch_items WHERE key = ?1 ORDER BY seq LIMIT ?2",
                &[k.clone(), millis_value(u64::from(DEBOUNCE_BATCH_ITEMS_MAX))],
            )
            .iter()
            .map(|row| text(&row[0]))
            .collect(),
        _ => Vec::new(),
    };
    let creating = load_creating(exec, &k);
    let started = exec
        .run(
            "SELECT id, at_ms FROM debounce_started WHERE key = ?1 ORDER BY seq DESC LIMIT ?2",
            &[k, millis_value(DEBOUNCE_STARTED_KEPT as u64)],
        )
        .iter()
        .map(|row| Started {
            id: stored_id(&row[0]),
            at_ms: millis(&row[1]),
        })
        .collect();
    KeyState {
        phase,
        creating,
        started,
        batch,
    }
}

/// The key's burst row, if one is running.
fn load_burst(exec: &impl SqlExec, k: &SqlValue) -> Option<BurstRow> {
    exec.run(
        "SELECT edge, delay_ms, max_wait_ms, workflow, first_at, last_at, calls, leading \
             FROM debounce_bursts WHERE key = ?1",
        std::slice::from_ref(k),
    )
    .first()
    .map(|row| BurstRow {
        burst: Burst {
            edge: Edge::parse(&text(&row[0])).expect("a stored edge is known"),
            delay_ms: millis(&row[1]),
            max_wait_ms: millis(&row[2]),
            workflow: text(&row[3]),
            first_at_ms: millis(&row[4]),
            last_at_ms: millis(&row[5]),
            calls: millis(&row[6]),
        },
        leading: optional_text(&row[7]).map(|_| stored_id(&row[7])),
    })
}

/// The key's pending start row, if it has one.
fn load_pending(exec: &impl SqlExec, k: &SqlValue) -> Option<PendingRow> {
    exec.run(
        "SELECT id, workflow, params, at_ms, set_at_ms, batch_max_items, batch_max_bytes \
             FROM debounce_pending WHERE key = ?1",
        std::slice::from_ref(k),
    )
    .first()
    .map(|row| PendingRow {
        start: Pending {
            id: stored_id(&row[0]),
            workflow: text(&row[1]),
            params: match (optional_millis(&row[5]), optional_millis(&row[6])) {
                (Some(max_items), Some(max_bytes)) => StartParams::Batch(BatchBounds {
                    max_items: u32::try_from(max_items).expect("a stored maxItems fits"),
                    max_bytes: u32::try_from(max_bytes).expect("a stored maxBytes fits"),
                }),
                _ => StartParams::Latest(optional_text(&row[2])),
            },
        },
        fire: match (optional_millis(&row[3]), optional_millis(&row[4])) {
            (Some(at_ms), Some(set_at_ms)) => Fire::At { at_ms, set_at_ms },
            _ => Fire::BurstEnd,
        },
    })
}

/// The key's fired starts whose creates are not confirmed, oldest first.
fn load_creating(exec: &impl SqlExec, k: &SqlValue) -> Vec<Creating> {
    exec.run(
        "SELECT id, workflow, params, fired_at, failures, next_try_at, last_error \
             FROM debounce_creating WHERE key = ?1 ORDER BY seq LIMIT ?2",
        &[
            k.clone(),
            millis_value(DEBOUNCE_UNFINISHED_STARTS_MAX as u64),
        ],
    )
    .iter()
    .map(|row| Creating {
        id: stored_id(&row[0]),
        workflow: text(&row[1]),
        params: optional_text(&row[2]),
        fired_at_ms: millis(&row[3]),
        failures: u32::try_from(millis(&row[4])).unwrap_or(u32::MAX),
        next_try_at_ms: millis(&row[5]),
        last_error: optional_text(&row[6]),
    })
    .collect()
}

/// Commits one decision's writes for `key`, and when the key next needs the alarm.
pub fn write(exec: &impl SqlExec, key: &str, writes: &[Write], wake_at_ms: Option<u64>) {
    let k = text_value(key);
    for write in writes {
        match write {
            Write::Burst(None) => {
                exec.run(
                    "DELETE FROM debounce_bursts WHERE key = ?1",
                    std::slice::from_ref(&k),
                );
            }
            Write::Burst(Some(b)) => put_burst(exec, &k, b),
            Write::Pending(None) => {
                exec.run(
                    "DELETE FROM debounce_pending WHERE key = ?1",
                    std::slice::from_ref(&k),
                );
            }
            Write::Pending(Some(p)) => put_pending(exec, &k, p),
            Write::Creating(c) => put_creating(exec, &k, c),
            Write::CreatingDone(id) => {
                exec.run(
                    "DELETE FROM debounce_creating WHERE key = ?1 AND id = ?2",
                    &[k.clone(), text_value(id.as_str())],
                );
            }
            Write::Started(s) => record_started(exec, &k, s),
            Write::BatchCleared => {
                exec.run(
                    "DELETE FROM debounce_batch_items WHERE key = ?1",
                    std::slice::from_ref(&k),
                );
            }
            Write::BatchItem(params) => {
                exec.run(
                    "INSERT INTO debounce_batch_items (key, seq, params) VALUES (?1, \
                     (SELECT COALESCE(MAX(seq), 0) + 1 FROM debounce_batch_items WHERE key = ?1), ?2)",
                    &[k.clone(), text_value(params)],
                );
            }
        }
    }
    exec.run(
        "INSERT INTO debounce_keys (key, wake_at) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET wake_at = excluded.wake_at",
        &[k, optional_millis_value(wake_at_ms)],
    );
}

/// The key's burst row, as it now stands.
fn put_burst(exec: &impl SqlExec, k: &SqlValue, row: &BurstRow) {
    let b = &row.burst;
    exec.run(
        "INSERT OR REPLACE INTO debounce_bursts \
             (key, edge, delay_ms, max_wait_ms, workflow, first_at, last_at, calls, leading) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &[
            k.clone(),
            text_value(b.edge.as_str()),
            millis_value(b.delay_ms),
            millis_value(b.max_wait_ms),
            text_value(&b.workflow),
            millis_value(b.first_at_ms),
            millis_value(b.last_at_ms),
            millis_value(b.calls),
            optional_text_value(row.leading.as_ref().map(InstanceId::as_str)),
        ],
    );
}

/// The key's pending start row, as it now stands.
fn put_pending(exec: &impl SqlExec, k: &SqlValue, row: &PendingRow) {
    let p = &row.start;
    let (at_ms, set_at_ms) = match row.fire {
        Fire::BurstEnd => (SqlValue::Null, SqlValue::Null),
        Fire::At { at_ms, set_at_ms } => (millis_value(at_ms), millis_value(set_at_ms)),
    };
    let (params, max_items, max_bytes) = match &p.params {
        StartParams::Latest(params) => (
            optional_text_value(params.as_deref()),
            SqlValue::Null,
            SqlValue::Null,
        ),
        StartParams::Batch(bounds) => (
            SqlValue::Null,
            millis_value(u64::from(bounds.max_items)),
            millis_value(u64::from(bounds.max_bytes)),
        ),
    };
    exec.run(
        "INSERT OR REPLACE INTO debounce_pending \
             (key, id, workflow, params, at_ms, set_at_ms, batch_max_items, batch_max_bytes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        &[
            k.clone(),
            text_value(p.id.as_str()),
            text_value(&p.workflow),
            params,
            at_ms,
            set_at_ms,
            max_items,
            max_bytes,
        ],
    );
}

/// A fired start whose create is not confirmed yet, new or updated.
fn put_creating(exec: &impl SqlExec, k: &SqlValue, c: &Creating) {
    // An update keeps the row's place (its seq); a new row goes last.
    let params = [
        k.clone(),
        text_value(c.id.as_str()),
        text_value(&c.workflow),
        optional_text_value(c.params.as_deref()),
        millis_value(c.fired_at_ms),
        millis_value(u64::from(c.failures)),
        millis_value(c.next_try_at_ms),
        optional_text_value(c.last_error.as_deref()),
    ];
    let updated = exec.run(
        "UPDATE debounce_creating SET workflow = ?3, params = ?4, fired_at = ?5, \
             failures = ?6, next_try_at = ?7, last_error = ?8 \
             WHERE key = ?1 AND id = ?2 RETURNING id",
        &params,
    );
    if updated.is_empty() {
        exec.run(
            "INSERT INTO debounce_creating \
                 (key, id, seq, workflow, params, fired_at, failures, next_try_at, last_error) \
                 VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM debounce_creating \
                 WHERE key = ?1), ?3, ?4, ?5, ?6, ?7, ?8)",
            &params,
        );
    }
}

/// A confirmed start, the newest of the few kept.
fn record_started(exec: &impl SqlExec, k: &SqlValue, s: &Started) {
    exec.run(
        "INSERT INTO debounce_started (key, id, at_ms) VALUES (?1, ?2, ?3)",
        &[k.clone(), text_value(s.id.as_str()), millis_value(s.at_ms)],
    );
    // Keep the newest few: the oldest beyond them goes, one per
    // insert, so the key's rows stay bounded.
    exec.run(
        "DELETE FROM debounce_started WHERE seq IN (SELECT seq FROM debounce_started \
             WHERE key = ?1 ORDER BY seq DESC LIMIT -1 OFFSET ?2)",
        &[k.clone(), millis_value(DEBOUNCE_STARTED_KEPT as u64)],
    );
}

/// Keys whose time has come at `now_ms`, earliest first, at most `limit`.
pub fn due_keys(exec: &impl SqlExec, now_ms: u64, limit: u32) -> Vec<String> {
    exec.run(
        "SELECT key FROM debounce_keys WHERE wake_at IS NOT NULL AND wake_at <= ?1 \
         ORDER BY wake_at LIMIT ?2",
        &[millis_value(now_ms), millis_value(u64::from(limit))],
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
    .map(|row| millis(&row[0]))
}
