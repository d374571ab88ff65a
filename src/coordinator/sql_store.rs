//! [`KeyStore`] over SQLite: the Durable Object's storage, one row per waiter.
//!
//! The store is generic over [`SqlExec`] so the very same statements run in
//! the Durable Object (its synchronous `storage.sql`) and natively under
//! `rusqlite` in tests. Every query is bounded by an index and a `LIMIT`; no
//! statement rewrites the queue, so each decision's cost is flat in its length.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed.

use super::schema;
use super::state::{Holder, HolderState, KeyStore, Waiter};
use crate::ident::{InputHash, InstanceId};
use crate::limits::{JS_SAFE_INTEGER_MAX, WAITERS_PER_KEY_MAX};
use std::cell::Cell;

#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Integer(i64),
    Text(String),
}

/// Runs one SQL statement with bound parameters (`?1`, `?2`, ...) and returns
/// its rows, each as its columns in order.
pub trait SqlExec {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>>;
}

/// Brings a database to [`schema::CURRENT_VERSION`]; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    exec.run(schema::CREATE_VERSION_TABLE, &[]);
    let found = exec
        .run(schema::READ_VERSION, &[])
        .first()
        .map(|row| integer(&row[0]))
        .unwrap_or(0);
    assert!(
        found <= schema::CURRENT_VERSION,
        "database schema v{found} is newer than this release (v{})",
        schema::CURRENT_VERSION
    );
    for step in &schema::MIGRATIONS[found as usize..] {
        for statement in *step {
            exec.run(statement, &[]);
        }
    }
    if found < schema::CURRENT_VERSION {
        exec.run(
            schema::WRITE_VERSION,
            &[SqlValue::Integer(schema::CURRENT_VERSION)],
        );
    }
}

/// One key's rows, read and written through `exec`. Counts the statements it
/// runs, so the shell can report storage work per operation.
pub struct SqlKeyStore<'a, E: SqlExec> {
    exec: &'a E,
    key: String,
    reads: Cell<u32>,
    writes: Cell<u32>,
}

impl<'a, E: SqlExec> SqlKeyStore<'a, E> {
    pub fn new(exec: &'a E, key: &str) -> Self {
        SqlKeyStore {
            exec,
            key: key.to_owned(),
            reads: Cell::new(0),
            writes: Cell::new(0),
        }
    }

    /// Statements that only read, and statements that wrote, so far.
    pub fn work(&self) -> (u32, u32) {
        (self.reads.get(), self.writes.get())
    }

    fn read(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        self.reads.set(self.reads.get() + 1);
        self.exec.run(sql, params)
    }

    fn write(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        self.writes.set(self.writes.get() + 1);
        self.exec.run(sql, params)
    }

    fn key(&self) -> SqlValue {
        SqlValue::Text(self.key.clone())
    }

    /// Every waiter in queue order, for `inspect` (bounded by the queue's limit).
    pub fn waiters(&self) -> Vec<Waiter> {
        self.read(
            "SELECT id, since_ms, input_hash FROM coordinator_waiters \
             WHERE key = ?1 ORDER BY seq LIMIT ?2",
            &[
                self.key(),
                SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
            ],
        )
        .iter()
        .map(|row| waiter_from_row(row))
        .collect()
    }

    /// Keys in this database that need the holder-check alarm, at most `limit`.
    pub fn keys_needing_check(exec: &E, limit: u32) -> Vec<String> {
        exec.run(
            "SELECT key FROM coordinator_keys WHERE holder_id IS NOT NULL \
             AND (waiter_count > 0 OR holder_state = 'handed') LIMIT ?1",
            &[SqlValue::Integer(i64::from(limit))],
        )
        .iter()
        .map(|row| text(&row[0]))
        .collect()
    }

    fn adjust_waiter_count(&self, delta: i64) {
        self.write(
            "INSERT INTO coordinator_keys (key, waiter_count) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + ?2",
            &[self.key(), SqlValue::Integer(delta)],
        );
    }
}

fn integer(value: &SqlValue) -> i64 {
    match value {
        SqlValue::Integer(n) => *n,
        other => panic!("expected an integer column, found {other:?}"),
    }
}

fn text(value: &SqlValue) -> String {
    match value {
        SqlValue::Text(s) => s.clone(),
        other => panic!("expected a text column, found {other:?}"),
    }
}

fn optional_text(value: &SqlValue) -> Option<String> {
    match value {
        SqlValue::Null => None,
        other => Some(text(other)),
    }
}

/// Milliseconds are stored as SQLite integers and must survive a JS number.
fn millis(value: &SqlValue) -> u64 {
    let ms = integer(value);
    assert!(
        (0..=JS_SAFE_INTEGER_MAX as i64).contains(&ms),
        "stored time {ms} is out of range"
    );
    ms as u64
}

fn millis_value(ms: u64) -> SqlValue {
    assert!(ms <= JS_SAFE_INTEGER_MAX, "time {ms} is out of range");
    SqlValue::Integer(ms as i64)
}

/// Stored values were validated before they were written; a value that no
/// longer parses means the database was edited by hand or corrupted.
fn stored_id(value: &SqlValue) -> InstanceId {
    InstanceId::parse("stored id", &text(value)).expect("stored instance id is valid")
}

fn waiter_from_row(row: &[SqlValue]) -> Waiter {
    Waiter {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        input_hash: optional_text(&row[2])
            .map(|h| InputHash::parse("stored inputHash", &h).expect("stored hash is valid")),
    }
}

impl<E: SqlExec> KeyStore for SqlKeyStore<'_, E> {
    fn holder(&self) -> Option<Holder> {
        let rows = self.read(
            "SELECT holder_id, holder_since_ms, holder_state FROM coordinator_keys \
             WHERE key = ?1 AND holder_id IS NOT NULL LIMIT 1",
            &[self.key()],
        );
        let row = rows.first()?;
        Some(Holder {
            id: stored_id(&row[0]),
            since_ms: millis(&row[1]),
            state: match optional_text(&row[2]).as_deref() {
                Some("handed") => HolderState::Handed,
                // Missing (a v1 row) or 'holding'.
                _ => HolderState::Holding,
            },
        })
    }

    fn set_holder(&mut self, holder: Option<&Holder>) {
        let (id, since, state) = match holder {
            Some(h) => (
                SqlValue::Text(h.id.to_string()),
                millis_value(h.since_ms),
                SqlValue::Text(
                    match h.state {
                        HolderState::Handed => "handed",
                        HolderState::Holding => "holding",
                    }
                    .into(),
                ),
            ),
            None => (SqlValue::Null, SqlValue::Null, SqlValue::Null),
        };
        self.write(
            "INSERT INTO coordinator_keys (key, holder_id, holder_since_ms, holder_state) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET \
             holder_id = excluded.holder_id, holder_since_ms = excluded.holder_since_ms, \
             holder_state = excluded.holder_state",
            &[self.key(), id, since, state],
        );
    }

    fn waiter(&self, id: &InstanceId) -> Option<Waiter> {
        self.read(
            "SELECT id, since_ms, input_hash FROM coordinator_waiters \
             WHERE key = ?1 AND id = ?2 LIMIT 1",
            &[self.key(), SqlValue::Text(id.to_string())],
        )
        .first()
        .map(|row| waiter_from_row(row))
    }

    fn first_waiter(&self) -> Option<Waiter> {
        self.read(
            "SELECT id, since_ms, input_hash FROM coordinator_waiters \
             WHERE key = ?1 ORDER BY seq LIMIT 1",
            &[self.key()],
        )
        .first()
        .map(|row| waiter_from_row(row))
    }

    fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter> {
        self.read(
            "SELECT id, since_ms, input_hash FROM coordinator_waiters \
             WHERE key = ?1 AND input_hash = ?2 ORDER BY seq LIMIT 1",
            &[self.key(), SqlValue::Text(hash.to_string())],
        )
        .first()
        .map(|row| waiter_from_row(row))
    }

    fn waiter_count(&self) -> u32 {
        self.read(
            "SELECT waiter_count FROM coordinator_keys WHERE key = ?1 LIMIT 1",
            &[self.key()],
        )
        .first()
        .map(|row| u32::try_from(integer(&row[0])).expect("waiter count is bounded"))
        .unwrap_or(0)
    }

    fn push_waiter(&mut self, waiter: &Waiter) {
        self.write(
            "INSERT INTO coordinator_waiters (key, seq, id, since_ms, input_hash) \
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_waiters WHERE key = ?1), \
             ?2, ?3, ?4)",
            &[
                self.key(),
                SqlValue::Text(waiter.id.to_string()),
                millis_value(waiter.since_ms),
                waiter
                    .input_hash
                    .as_ref()
                    .map_or(SqlValue::Null, |h| SqlValue::Text(h.to_string())),
            ],
        );
        self.adjust_waiter_count(1);
    }

    fn remove_waiter(&mut self, id: &InstanceId) {
        let removed = self.write(
            "DELETE FROM coordinator_waiters WHERE key = ?1 AND id = ?2 RETURNING seq",
            &[self.key(), SqlValue::Text(id.to_string())],
        );
        if !removed.is_empty() {
            self.adjust_waiter_count(-1);
        }
    }

    fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<InstanceId> {
        let keep_value = SqlValue::Text(keep.to_string());
        let dropped: Vec<InstanceId> = self
            .read(
                "SELECT id FROM coordinator_waiters WHERE key = ?1 AND id <> ?2 \
                 ORDER BY seq LIMIT ?3",
                &[
                    self.key(),
                    keep_value.clone(),
                    SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
                ],
            )
            .iter()
            .map(|row| stored_id(&row[0]))
            .collect();
        if dropped.is_empty() {
            return dropped;
        }
        // Remembered in queue order right after the newest remembered id,
        // with no gaps: the remembered seqs of a key are always one run, so
        // counting them and forgetting the oldest need only its two ends.
        // (A superseded id is never a waiter, so the insert cannot collide.)
        self.write(
            "INSERT INTO coordinator_superseded (key, id, seq) \
             SELECT key, id, (SELECT COALESCE(MAX(seq), 0) FROM coordinator_superseded \
             WHERE key = ?1) + ROW_NUMBER() OVER (ORDER BY seq) \
             FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
            &[self.key(), keep_value.clone()],
        );
        self.write(
            "DELETE FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
            &[self.key(), keep_value],
        );
        self.adjust_waiter_count(-(dropped.len() as i64));
        dropped
    }

    fn is_superseded(&self, id: &InstanceId) -> bool {
        !self
            .read(
                "SELECT 1 FROM coordinator_superseded WHERE key = ?1 AND id = ?2 LIMIT 1",
                &[self.key(), SqlValue::Text(id.to_string())],
            )
            .is_empty()
    }

    fn superseded_count(&self) -> u32 {
        self.read(
            "SELECT COALESCE((SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) \
             - (SELECT MIN(seq) FROM coordinator_superseded WHERE key = ?1) + 1, 0)",
            &[self.key()],
        )
        .first()
        .map(|row| u32::try_from(integer(&row[0])).expect("superseded count is bounded"))
        .unwrap_or(0)
    }

    fn forget_superseded_beyond(&mut self, keep: u32) {
        self.write(
            "DELETE FROM coordinator_superseded WHERE key = ?1 AND seq <= \
             (SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) - ?2",
            &[self.key(), SqlValue::Integer(i64::from(keep))],
        );
    }
}
