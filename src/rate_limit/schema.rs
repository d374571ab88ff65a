//! The rate limiter's SQLite schema and its upgrade ladder, recorded under
//! the name `rate_limit` in the same `baton_schema` table the Coordinator
//! uses (each Durable Object has its own database; the table is shared only
//! in shape).

use crate::limits::RATE_RULE_SLOTS;

pub const CREATE_VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS baton_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)";
pub const READ_VERSION: &str = "SELECT version FROM baton_schema WHERE name = 'rate_limit' LIMIT 1";
pub const WRITE_VERSION: &str =
    "INSERT INTO baton_schema (name, version) VALUES ('rate_limit', ?1) \
     ON CONFLICT(name) DO UPDATE SET version = excluded.version";

/// The running-total columns of a grant row, `t0` to `t15`.
pub fn total_columns() -> Vec<String> {
    (0..RATE_RULE_SLOTS)
        .map(|slot| format!("t{slot}"))
        .collect()
}

/// Schema version `n` is reached by running `migrations()[n - 1]`.
pub fn migrations() -> Vec<Vec<String>> {
    let totals: String = total_columns()
        .iter()
        .map(|c| format!(", {c} INTEGER NOT NULL"))
        .collect();
    vec![
        // v1: the bucket's scalars, its rules by slot, and one row per grant
        // ordered by `seq` (and by time: an index answers "the last grant at
        // or before t" without a scan).
        vec![
            "CREATE TABLE rate_buckets (
                bucket TEXT PRIMARY KEY,
                cooldown_until_ms INTEGER NOT NULL DEFAULT 0,
                max_window_ms INTEGER NOT NULL DEFAULT 0,
                horizon_ms INTEGER NOT NULL DEFAULT 0
            )"
            .to_owned(),
            "CREATE TABLE rate_rules (
                bucket TEXT NOT NULL,
                slot INTEGER NOT NULL,
                id TEXT NOT NULL,
                rule_limit INTEGER NOT NULL,
                window_ms INTEGER NOT NULL,
                PRIMARY KEY (bucket, slot)
            )"
            .to_owned(),
            format!(
                "CREATE TABLE rate_grants (
                    bucket TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    at_ms INTEGER NOT NULL,
                    permits INTEGER NOT NULL,
                    mask INTEGER NOT NULL{totals},
                    PRIMARY KEY (bucket, seq)
                )"
            ),
            "CREATE INDEX rate_grants_at ON rate_grants (bucket, at_ms, seq)".to_owned(),
        ],
    ]
}

/// The version this release writes.
pub fn current_version() -> i64 {
    migrations().len() as i64
}
