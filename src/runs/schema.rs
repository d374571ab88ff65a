//! The Runs object's SQLite schema and its upgrade ladder (the Coordinator's
//! shape: `baton_schema` records how far each concept's ladder has climbed).

use crate::sql::Ladder;
pub use crate::sql::CREATE_VERSION_TABLE;

pub const READ_VERSION: &str = "SELECT version FROM baton_schema WHERE name = 'runs' LIMIT 1";
pub const WRITE_VERSION: &str = "INSERT INTO baton_schema (name, version) VALUES ('runs', ?1) \
     ON CONFLICT(name) DO UPDATE SET version = excluded.version";

/// Schema version `n` is reached by running `MIGRATIONS[n - 1]`.
pub const MIGRATIONS: &[&[&str]] = &[
    // v1: a row per run key (claim, outcome, retention, the log's latest
    // seq) and a row per kept event, found by (key, seq).
    &[
        "CREATE TABLE runs (
            key TEXT PRIMARY KEY,
            claimant_id TEXT,
            claimant_workflow TEXT,
            claimed_ms INTEGER,
            outcome TEXT,
            result TEXT,
            error TEXT,
            finished_ms INTEGER,
            delete_ms INTEGER,
            latest_seq INTEGER NOT NULL DEFAULT 0
        )",
        "CREATE INDEX runs_retention ON runs (delete_ms) WHERE delete_ms IS NOT NULL",
        "CREATE TABLE run_events (
            key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            at_ms INTEGER NOT NULL,
            type TEXT NOT NULL,
            data TEXT,
            PRIMARY KEY (key, seq)
        )",
    ],
];

/// The version this release writes.
pub const CURRENT_VERSION: i64 = LADDER.current();

pub const LADDER: Ladder = Ladder {
    name: "runs",
    read_version: READ_VERSION,
    write_version: WRITE_VERSION,
    migrations: MIGRATIONS,
    fresh: &[],
};
