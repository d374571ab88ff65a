//! D1 as the serial queue's tests see it: SQLite (rusqlite) running the
//! core's batches verbatim, each as one transaction, with D1's results
//! (whole rows, and `meta.changes`, which is 0 for a read).

use baton::serial_queue::{sql, Batch, GroupRow, Outcome, Param, Returns, Row};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};

/// A fresh database with the migrations applied, as wrangler applies them.
pub fn database() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    for (_, migration) in sql::MIGRATIONS {
        conn.execute_batch(migration).unwrap();
    }
    conn
}

fn value(param: &Param) -> Value {
    match param {
        Param::Text(text) => Value::Text(text.clone()),
        Param::Null => Value::Null,
        Param::Integer(n) => Value::Integer(i64::try_from(*n).expect("a JS-safe integer")),
    }
}

fn row(sql_row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let int = |name: &str| -> rusqlite::Result<u64> { Ok(sql_row.get::<_, i64>(name)? as u64) };
    let opt_int = |name: &str| -> rusqlite::Result<Option<u64>> {
        Ok(sql_row.get::<_, Option<i64>>(name)?.map(|n| n as u64))
    };
    Ok(Row {
        seq: int("seq")?,
        group_name: sql_row.get("group_name")?,
        instance_id: sql_row.get("instance_id")?,
        revision: sql_row.get("revision")?,
        state: sql_row.get("state")?,
        enqueued_at: int("enqueued_at")?,
        heartbeat_at: opt_int("heartbeat_at")?,
        superseded_by: sql_row.get("superseded_by")?,
        superseded_by_revision: sql_row.get("superseded_by_revision")?,
        finished_at: opt_int("finished_at")?,
        workflow: sql_row.get("workflow")?,
        turn_prefix: sql_row.get("turn_prefix")?,
        fence: opt_int("fence")?,
    })
}

fn group_row(sql_row: &rusqlite::Row<'_>) -> rusqlite::Result<GroupRow> {
    let opt_int = |name: &str| -> rusqlite::Result<Option<u64>> {
        Ok(sql_row.get::<_, Option<i64>>(name)?.map(|n| n as u64))
    };
    Ok(GroupRow {
        group_name: sql_row.get("group_name")?,
        paused_at: opt_int("paused_at")?,
        paused_reason: sql_row.get("paused_reason")?,
        resumed_at: opt_int("resumed_at")?,
    })
}

/// Runs one statement that returns `serial_queue` rows (or none) on
/// `conn`: its rows and its change count.
pub fn run(conn: &Connection, query: &str, params: &[Param]) -> Outcome {
    run_returning(conn, query, params, Returns::Entries)
}

/// Runs one statement on `conn`, reading its rows as `returns` says.
pub fn run_returning(
    conn: &Connection,
    query: &str,
    params: &[Param],
    returns: Returns,
) -> Outcome {
    let mut statement = conn.prepare(query).unwrap();
    let readonly = statement.readonly();
    let returns_rows = statement.column_count() > 0;
    let mut outcome = Outcome::default();
    {
        let mut cursor = statement
            .query(params_from_iter(params.iter().map(value)))
            .unwrap();
        while let Some(r) = cursor.next().unwrap() {
            match (returns_rows, returns) {
                (false, _) => {}
                (true, Returns::Entries) => outcome.rows.push(row(r).unwrap()),
                (true, Returns::Group) => outcome.groups.push(group_row(r).unwrap()),
            }
        }
    }
    outcome.changes = if readonly { 0 } else { conn.changes() };
    outcome
}

/// Runs a batch as D1 does: one transaction, statements in order.
pub fn batch(conn: &mut Connection, batch: &Batch) -> Vec<Outcome> {
    let tx = conn.transaction().unwrap();
    let outcomes = batch
        .0
        .iter()
        .map(|s| run_returning(&tx, s.sql, &s.params, s.returns))
        .collect();
    tx.commit().unwrap();
    outcomes
}

/// Every group's steering row, by name.
pub fn all_groups(conn: &Connection) -> Vec<GroupRow> {
    let query = sql::READ_GROUP.split(" FROM ").next().unwrap().to_string()
        + " FROM serial_group ORDER BY group_name";
    run_returning(conn, &query, &[], Returns::Group).groups
}

/// Every row of the table, in arrival order.
pub fn all_rows(conn: &Connection) -> Vec<Row> {
    let query = sql::READ_ENTRY.split(" FROM ").next().unwrap().to_string()
        + " FROM serial_queue ORDER BY seq";
    run(conn, &query, &[]).rows
}
