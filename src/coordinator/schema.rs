//! The Coordinator's SQLite schema and its upgrade ladder.
//!
//! Each Durable Object carries its own database. An object written by an
//! older release is upgraded in place the first time a newer release touches
//! it: [`MIGRATIONS`] lists every step from an empty database, and the
//! version reached is recorded in `baton_schema`. Steps only add: a column an
//! older row lacks takes its default on read (see `sql`).

use crate::sql::Ladder;
pub use crate::sql::CREATE_VERSION_TABLE;

pub const READ_VERSION: &str =
    "SELECT version FROM baton_schema WHERE name = 'coordinator' LIMIT 1";
pub const WRITE_VERSION: &str =
    "INSERT INTO baton_schema (name, version) VALUES ('coordinator', ?1) \
     ON CONFLICT(name) DO UPDATE SET version = excluded.version";

/// Schema version `n` is reached by running `MIGRATIONS[n - 1]`.
pub const MIGRATIONS: &[&[&str]] = &[
    // v1: a holder per key and a row per waiter, ordered by `seq`.
    &[
        "CREATE TABLE coordinator_keys (
            key TEXT PRIMARY KEY,
            holder_id TEXT,
            holder_since_ms INTEGER
        )",
        "CREATE TABLE coordinator_waiters (
            key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            since_ms INTEGER NOT NULL,
            PRIMARY KEY (key, id)
        )",
        "CREATE UNIQUE INDEX coordinator_waiters_order ON coordinator_waiters (key, seq)",
    ],
    // v2: input hashes for coalescing, a remembered set of superseded ids,
    // hand-over confirmation, and a waiter count kept beside the holder so
    // that no decision has to count the queue.
    &[
        // NULL (every v1 holder) reads as 'holding': v1 only ever stored granted holders.
        "ALTER TABLE coordinator_keys ADD COLUMN holder_state TEXT",
        "ALTER TABLE coordinator_keys ADD COLUMN waiter_count INTEGER NOT NULL DEFAULT 0",
        "INSERT OR IGNORE INTO coordinator_keys (key) SELECT DISTINCT key FROM coordinator_waiters",
        "UPDATE coordinator_keys SET waiter_count = \
            (SELECT COUNT(*) FROM coordinator_waiters w WHERE w.key = coordinator_keys.key)",
        "ALTER TABLE coordinator_waiters ADD COLUMN input_hash TEXT",
        "CREATE INDEX coordinator_waiters_hash ON coordinator_waiters (key, input_hash, seq)",
        "CREATE TABLE coordinator_superseded (
            key TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (key, id)
        )",
        "CREATE UNIQUE INDEX coordinator_superseded_order ON coordinator_superseded (key, seq)",
    ],
    // v3 (contract §1a): N holders per key, each a row of its own, with the
    // Workflow binding it is reached through and, for the enqueue grace,
    // when an enqueue registered it; the key's limit beside its waiter
    // count. The one holder a v2 key row carried moves into the new table
    // (and its columns are left empty: nothing reads them any more).
    &[
        "CREATE TABLE coordinator_holders (
            key TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            since_ms INTEGER NOT NULL,
            state TEXT NOT NULL,
            workflow TEXT,
            enqueued_ms INTEGER,
            checked_ms INTEGER,
            PRIMARY KEY (key, id)
        )",
        "CREATE UNIQUE INDEX coordinator_holders_order ON coordinator_holders (key, seq)",
        "CREATE INDEX coordinator_holders_checked ON coordinator_holders (key, checked_ms, seq)",
        "INSERT INTO coordinator_holders (key, id, seq, since_ms, state) \
            SELECT key, holder_id, 1, holder_since_ms, COALESCE(holder_state, 'holding') \
            FROM coordinator_keys WHERE holder_id IS NOT NULL",
        "UPDATE coordinator_keys SET holder_id = NULL, holder_since_ms = NULL, holder_state = NULL",
        // NULL reads as 1, the contract's default.
        "ALTER TABLE coordinator_keys ADD COLUMN holder_limit INTEGER",
        "ALTER TABLE coordinator_waiters ADD COLUMN workflow TEXT",
        "ALTER TABLE coordinator_waiters ADD COLUMN enqueued_ms INTEGER",
    ],
    // v4 (contract §1b): fences and per-registration turns. The key's
    // fence is the highest it granted; every grant inserts a holder row
    // carrying its fence, and the trigger raises the key's to it in the
    // same statement, so an uncontended acquire still runs one write.
    // `turns` counts the key's grant registrations (a waiter's `turn`;
    // NULL: woken with TURN_EVENT_TYPE, as every older waiter was).
    // Holders from before have fence 0, below every later grant.
    &[
        "ALTER TABLE coordinator_keys ADD COLUMN fence INTEGER",
        "ALTER TABLE coordinator_keys ADD COLUMN turns INTEGER",
        "ALTER TABLE coordinator_holders ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE coordinator_holders ADD COLUMN turn INTEGER",
        "ALTER TABLE coordinator_waiters ADD COLUMN turn INTEGER",
        "CREATE TRIGGER coordinator_holders_fence AFTER INSERT ON coordinator_holders BEGIN \
            INSERT INTO coordinator_keys (key, fence) VALUES (new.key, new.fence) \
            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence); \
         END",
    ],
    // v5 (contract §10): a key's counts and recent holds, and what its
    // list shard is owed (`super::history` says what each holds).
    super::history::MIGRATION,
];

/// The version this release writes.
pub const CURRENT_VERSION: i64 = LADDER.current();

pub const LADDER: Ladder = Ladder {
    name: "database",
    read_version: READ_VERSION,
    write_version: WRITE_VERSION,
    migrations: MIGRATIONS,
};
