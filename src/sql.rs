//! Rows as the Durable Objects' SQLite stores read and write them: a
//! statement's values, the executor every store runs on (the object's
//! `storage.sql` in the shell, `rusqlite` in native tests), the storage-work
//! count the benchmark reads, the schema ladder, and the column conversions.
//!
//! A stored value was checked before it was written, so one that does not
//! convert means the schema and the code disagree or the database was
//! edited by hand: a broken invariant. The conversions panic, and the object
//! restarts from what was committed.

use crate::ident::InstanceId;
use crate::limits::JS_SAFE_INTEGER_MAX;
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

    /// Runs a statement whose rows nobody reads (a write without
    /// `RETURNING`). An executor whose rows cost to fetch may skip them:
    /// the Durable Object's runs the statement in `exec` and never reads
    /// its cursor (issue 29: one crossing fewer per write).
    fn execute(&self, sql: &str, params: &[SqlValue]) {
        self.run(sql, params);
    }
}

/// An executor that counts the statements run through it, reads and writes
/// apart, so a store can report its storage work per operation.
pub struct Counted<'a, E: SqlExec> {
    exec: &'a E,
    reads: Cell<u32>,
    writes: Cell<u32>,
}

impl<'a, E: SqlExec> Counted<'a, E> {
    pub fn new(exec: &'a E) -> Self {
        Counted {
            exec,
            reads: Cell::new(0),
            writes: Cell::new(0),
        }
    }

    /// The executor under the count.
    pub fn exec(&self) -> &'a E {
        self.exec
    }

    /// Statements that only read, and statements that wrote, so far.
    pub fn work(&self) -> (u32, u32) {
        (self.reads.get(), self.writes.get())
    }

    pub fn read(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        self.reads.set(self.reads.get() + 1);
        self.exec.run(sql, params)
    }

    pub fn write(&self, sql: &str, params: &[SqlValue]) {
        self.writes.set(self.writes.get() + 1);
        self.exec.execute(sql, params);
    }

    /// A write whose `RETURNING` rows the caller reads.
    pub fn write_returning(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        self.writes.set(self.writes.get() + 1);
        self.exec.run(sql, params)
    }
}

/// Tracks how far each concept's schema ladder has been climbed, a row per
/// concept; created before anything else.
pub const CREATE_VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS baton_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)";

/// One concept's schema and its upgrade ladder: version `n` is reached by
/// running `migrations[n - 1]`, and the version reached is recorded in
/// `baton_schema` by `write_version` (`?1`: the version) and read back by
/// `read_version`. Steps only add, so an object written by an older release
/// is upgraded in place the first time a newer one touches it.
pub struct Ladder {
    /// The concept, for the message when a database is newer than the code.
    pub name: &'static str,
    pub read_version: &'static str,
    pub write_version: &'static str,
    pub migrations: &'static [&'static [&'static str]],
    /// The schema the ladder builds, as one script for a database that has
    /// none yet (empty: climb the ladder). Generated from `migrations`,
    /// never written by hand: a fresh object then runs one statement per
    /// table, index and trigger instead of every step since v1, each of
    /// which reparses the schema (P6's cold start).
    pub fresh: &'static [&'static str],
}

impl Ladder {
    /// The version this release writes.
    pub const fn current(&self) -> i64 {
        self.migrations.len() as i64
    }

    /// Brings a database to [`Ladder::current`]; a no-op when it is there.
    /// A database newer than this release is refused, not downgraded.
    pub fn migrate(&self, exec: &impl SqlExec) {
        exec.run(CREATE_VERSION_TABLE, &[]);
        let found = exec
            .run(self.read_version, &[])
            .first()
            .map(|row| integer(&row[0]))
            .unwrap_or(0);
        assert!(
            found <= self.current(),
            "{} schema v{found} is newer than this release (v{})",
            self.name,
            self.current()
        );
        if found == 0 && !self.fresh.is_empty() {
            for statement in self.fresh {
                exec.run(statement, &[]);
            }
        } else {
            for step in &self.migrations[found as usize..] {
                for statement in *step {
                    exec.run(statement, &[]);
                }
            }
        }
        if found < self.current() {
            exec.run(self.write_version, &[SqlValue::Integer(self.current())]);
        }
    }
}

pub fn integer(value: &SqlValue) -> i64 {
    match value {
        SqlValue::Integer(n) => *n,
        other => panic!("expected an integer column, found {other:?}"),
    }
}

pub fn text(value: &SqlValue) -> String {
    match value {
        SqlValue::Text(s) => s.clone(),
        other => panic!("expected a text column, found {other:?}"),
    }
}

pub fn optional_text(value: &SqlValue) -> Option<String> {
    match value {
        SqlValue::Null => None,
        other => Some(text(other)),
    }
}

pub fn text_value(value: &str) -> SqlValue {
    SqlValue::Text(value.to_owned())
}

pub fn optional_text_value(value: Option<&str>) -> SqlValue {
    value.map_or(SqlValue::Null, text_value)
}

/// A stored time, count or sequence number: never negative, and always a
/// safe JS integer, since replies carry it as a JS number.
pub fn millis(value: &SqlValue) -> u64 {
    let n = integer(value);
    assert!(
        (0..=JS_SAFE_INTEGER_MAX as i64).contains(&n),
        "stored number {n} is out of range"
    );
    n as u64
}

pub fn optional_millis(value: &SqlValue) -> Option<u64> {
    match value {
        SqlValue::Null => None,
        other => Some(millis(other)),
    }
}

pub fn millis_value(n: u64) -> SqlValue {
    assert!(n <= JS_SAFE_INTEGER_MAX, "number {n} is out of range");
    SqlValue::Integer(n as i64)
}

pub fn optional_millis_value(n: Option<u64>) -> SqlValue {
    n.map_or(SqlValue::Null, millis_value)
}

pub fn stored_id(value: &SqlValue) -> InstanceId {
    InstanceId::parse("stored id", &text(value)).expect("stored instance id is valid")
}
