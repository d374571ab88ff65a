//! `SqlExec` over the Durable Object's synchronous SQLite API.

use crate::coordinator::{SqlExec, SqlValue};
use worker::{SqlStorage, SqlStorageValue};

pub struct ObjectSql(pub SqlStorage);

impl SqlExec for ObjectSql {
    fn run(&self, sql: &str, params: &[SqlValue]) -> Vec<Vec<SqlValue>> {
        let bindings: Vec<SqlStorageValue> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => SqlStorageValue::Null,
                SqlValue::Integer(n) => SqlStorageValue::Integer(*n),
                SqlValue::Text(s) => SqlStorageValue::String(s.clone()),
            })
            .collect();
        let cursor = self
            .0
            .exec(sql, bindings)
            .unwrap_or_else(|e| panic!("SQL failed ({e}): {sql}"));
        cursor
            .raw()
            .map(|row| {
                row.unwrap_or_else(|e| panic!("SQL row unreadable ({e}): {sql}"))
                    .into_iter()
                    .map(from_storage)
                    .collect()
            })
            .collect()
    }
}

fn from_storage(value: SqlStorageValue) -> SqlValue {
    match value {
        SqlStorageValue::Null => SqlValue::Null,
        SqlStorageValue::Integer(n) => SqlValue::Integer(n),
        // JS has one number type; an integral float is an integer column.
        SqlStorageValue::Float(f) if f.fract() == 0.0 => SqlValue::Integer(f as i64),
        SqlStorageValue::String(s) => SqlValue::Text(s),
        SqlStorageValue::Boolean(b) => SqlValue::Integer(i64::from(b)),
        other => panic!("unexpected SQL value {other:?}"),
    }
}
