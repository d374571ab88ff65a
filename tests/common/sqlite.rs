//! The Durable Objects' `SqlExec` on rusqlite, as the native tests run every
//! store: bind exactly the parameters a statement names (an unbound one
//! would silently read as NULL), step every row, turn each column into the
//! `SqlValue` the object's `storage.sql` would give, and report SQLite's own
//! work counters for the flat-cost tests.

use baton::sql::SqlValue;
use rusqlite::types::{Null, ValueRef};
use rusqlite::{Connection, StatementStatus};

/// One statement's rows and SQLite's measure of its work.
pub struct Ran {
    pub rows: Vec<Vec<SqlValue>>,
    /// Virtual-machine instructions executed: SQLite's measure of work,
    /// independent of the machine and of timing.
    pub vm_steps: i32,
    /// Rows stepped through by full table scans.
    pub fullscan_steps: i32,
}

/// Binds `params` to `stmt`, asserting that they are exactly the ones it names.
pub fn bind(stmt: &mut rusqlite::Statement<'_>, sql: &str, params: &[SqlValue]) {
    assert_eq!(
        stmt.parameter_count(),
        params.len(),
        "parameters bound for {sql:?}"
    );
    for (i, param) in params.iter().enumerate() {
        let bound = match param {
            SqlValue::Null => stmt.raw_bind_parameter(i + 1, Null),
            SqlValue::Integer(n) => stmt.raw_bind_parameter(i + 1, n),
            SqlValue::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str()),
        };
        bound.unwrap_or_else(|e| panic!("binding ?{} of {sql:?}: {e}", i + 1));
    }
}

/// Runs `sql` with `params` on `conn` (prepared statements cached).
pub fn run(conn: &Connection, sql: &str, params: &[SqlValue]) -> Ran {
    let mut stmt = conn
        .prepare_cached(sql)
        .unwrap_or_else(|e| panic!("preparing {sql:?}: {e}"));
    bind(&mut stmt, sql, params);
    let columns = stmt.column_count();
    let mut rows = Vec::new();
    {
        let mut cursor = stmt.raw_query();
        while let Some(row) = cursor
            .next()
            .unwrap_or_else(|e| panic!("running {sql:?} with {params:?}: {e}"))
        {
            rows.push(
                (0..columns)
                    .map(|i| value(row.get_ref(i).expect("column in range")))
                    .collect(),
            );
        }
    }
    Ran {
        rows,
        vm_steps: stmt.reset_status(StatementStatus::VmStep),
        fullscan_steps: stmt.reset_status(StatementStatus::FullscanStep),
    }
}

fn value(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(n) => SqlValue::Integer(n),
        ValueRef::Text(bytes) => {
            SqlValue::Text(String::from_utf8(bytes.to_vec()).expect("stored text is UTF-8"))
        }
        other => panic!("column type the stores never write: {other:?}"),
    }
}
