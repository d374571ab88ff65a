//! The Coordinator's SQLite schema and its upgrade ladder.
//!
//! Each Durable Object carries its own database. An object written by an
//! older release is upgraded in place the first time a newer release touches
//! it: [`MIGRATIONS`] lists every step from an empty database, and the
//! version reached is recorded in `baton_schema`. Steps only add: a column an
//! older row lacks takes its default on read (see `sql`).

use crate::limits::{COORDINATOR_RECENT_KEPT, HOLD_TIMES_KEPT, IDLE_TENANT_KEPT_GRANTS};
use crate::sql::Ladder;
pub use crate::sql::CREATE_VERSION_TABLE;

pub const READ_VERSION: &str =
    "SELECT version FROM baton_schema WHERE name = 'coordinator' LIMIT 1";
pub const WRITE_VERSION: &str =
    "INSERT INTO baton_schema (name, version) VALUES ('coordinator', ?1) \
     ON CONFLICT(name) DO UPDATE SET version = excluded.version";

/// The triggers that keep `coordinator_keys.hold_times_ms` (v6, v12, v17) cut
/// it at 20 entries, written into their SQL; a stored step cannot name a
/// constant, so the build holds the two together.
const _: () = assert!(
    HOLD_TIMES_KEPT == 20,
    "the hold-time triggers keep 20: a new bound needs a schema step"
);

/// The triggers of v16 keep the newest 50 recent holds and forget tenants
/// idle for more than 20000 grants, bounds written into their SQL as the
/// hold times' are.
const _: () = assert!(
    COORDINATOR_RECENT_KEPT == 50 && IDLE_TENANT_KEPT_GRANTS == 20_000,
    "the v16 triggers keep 50 recent holds and 20000 grants: a new bound needs a schema step"
);

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
    // list shard is owed (`history.rs` says what each holds).
    super::history::MIGRATION,
    // v6 (contract §1c): priorities, tenants and hold times.
    //
    // Each waiter row carries its priority and tenant ('' is the shared
    // tenant: a tenant is a non-empty identifier). `coordinator_tenants`
    // keeps one row per key, priority and tenant: its waiter count, its
    // earliest waiter's seq and `served`, the fence of the last grant that
    // served it in its turn (NULL: never). The waiter rows' triggers keep
    // the count and the earliest seq (one index seek on
    // `coordinator_waiters_share` when the earliest leaves), and drop a
    // row that has no waiter left and was never served; `Write::Serve`
    // sets `served` and forgets the rows with no waiter served longer ago
    // than `IDLE_TENANT_KEPT_GRANTS` grants (through
    // `coordinator_tenants_idle`), so they stay bounded. The
    // next tenant is then the first entry of `coordinator_tenants_turns`
    // (highest priority, never served first by earliest waiter, then
    // served longest ago), and its earliest waiter one seek by seq, so a
    // hand-off reads the same few rows behind 10 waiters or 10,000.
    // Waiters from before read as priority 0 of the shared tenant.
    //
    // Hold times (`etaMs`): `coordinator_keys.hold_times_ms` is a JSON
    // array of the key's last 20 (`HOLD_TIMES_KEPT`) finished holds in ms, oldest first. A
    // hold ends by stamping `ended_ms` on its holder row (the statement
    // that used to delete it); the trigger appends the hold's length to
    // the key row and deletes the holder row, so an uncontended
    // acquire+release still runs one statement each. A holder row deleted
    // outright (a handed slot that was never confirmed, found dead) adds
    // no hold time. More of what a key keeps about its holds (contract
    // §10's history) goes beside it: columns on `coordinator_keys`, or a
    // further statement in the `coordinator_holders_ended` trigger, which
    // sees each finished hold's row (id, fence, since_ms, ended_ms).
    &[
        "ALTER TABLE coordinator_waiters ADD COLUMN priority INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE coordinator_waiters ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX coordinator_waiters_share ON coordinator_waiters (key, priority, tenant, seq)",
        "CREATE TABLE coordinator_tenants (
            key TEXT NOT NULL,
            priority INTEGER NOT NULL,
            tenant TEXT NOT NULL,
            waiters INTEGER NOT NULL,
            first_seq INTEGER,
            served INTEGER,
            PRIMARY KEY (key, priority, tenant)
        )",
        "CREATE INDEX coordinator_tenants_turns ON coordinator_tenants \
            (key, priority DESC, served, first_seq) WHERE waiters > 0",
        "CREATE INDEX coordinator_tenants_idle ON coordinator_tenants \
            (key, served) WHERE waiters = 0",
        "INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
            SELECT key, 0, '', COUNT(*), MIN(seq) FROM coordinator_waiters GROUP BY key",
        "CREATE TRIGGER coordinator_waiters_joined AFTER INSERT ON coordinator_waiters BEGIN \
            INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
            VALUES (new.key, new.priority, new.tenant, 1, new.seq) \
            ON CONFLICT (key, priority, tenant) DO UPDATE SET waiters = waiters + 1, \
            first_seq = COALESCE(first_seq, excluded.first_seq); \
         END",
        "CREATE TRIGGER coordinator_waiters_left AFTER DELETE ON coordinator_waiters BEGIN \
            UPDATE coordinator_tenants SET waiters = waiters - 1, \
            first_seq = CASE WHEN first_seq = old.seq THEN \
                (SELECT MIN(seq) FROM coordinator_waiters \
                 WHERE key = old.key AND priority = old.priority AND tenant = old.tenant) \
                ELSE first_seq END \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant; \
            DELETE FROM coordinator_tenants \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant \
            AND waiters = 0 AND served IS NULL; \
         END",
        "ALTER TABLE coordinator_keys ADD COLUMN hold_times_ms TEXT",
        "ALTER TABLE coordinator_holders ADD COLUMN ended_ms INTEGER",
        "CREATE TRIGGER coordinator_holders_ended AFTER UPDATE OF ended_ms ON coordinator_holders \
         WHEN new.ended_ms IS NOT NULL BEGIN \
            UPDATE coordinator_keys SET hold_times_ms = ( \
                SELECT CASE WHEN json_array_length(t) > 20 THEN json_remove(t, '$[0]') ELSE t END \
                FROM (SELECT json_insert(COALESCE(hold_times_ms, '[]'), '$[#]', \
                      max(new.ended_ms - new.since_ms, 0)) AS t)) \
            WHERE key = new.key; \
            DELETE FROM coordinator_holders WHERE key = new.key AND id = new.id; \
         END",
    ],
    // v7 (contract §10): hand-offs are counted by the decision, not by the
    // holder row's trigger (`super::history::MIGRATION_V7`).
    super::history::MIGRATION_V7,
    // v8 (contract §11): an operator's pause (`paused_since_ms` set while
    // paused, with its reason) and limit override (`limit_override`; while
    // it is set, `holder_limit` keeps the callers' latest limit for when it
    // is cleared), on the key row the summary already reads: a key never
    // steered reads and writes nothing more. NULL in every older row:
    // not paused, no override.
    &[
        "ALTER TABLE coordinator_keys ADD COLUMN paused_since_ms INTEGER",
        "ALTER TABLE coordinator_keys ADD COLUMN paused_reason TEXT",
        "ALTER TABLE coordinator_keys ADD COLUMN limit_override INTEGER",
    ],
    // v9 (contract §1d): cancelled holders, their count, and cancelled
    // holds in `recent` (`super::history::MIGRATION_CANCEL`).
    super::history::MIGRATION_CANCEL,
    // v10: a superseded waiter is owed its termination until the platform
    // confirms it (`super::store::terminations`): the binding it is reached
    // through (NULL: the default) and the owed mark, which the holder-check
    // alarm works through. Ids superseded before were terminated best effort
    // and are owed nothing.
    &[
        "ALTER TABLE coordinator_superseded ADD COLUMN workflow TEXT",
        "ALTER TABLE coordinator_superseded ADD COLUMN terminate_owed INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX coordinator_superseded_owed ON coordinator_superseded (key, id) \
         WHERE terminate_owed = 1",
    ],
    // v11: the holders' index on check times goes. No read orders by it
    // (the alarm reads a key's holders in grant order, at most its limit),
    // and every grant, release and holder check paid to keep it (issue 29).
    &["DROP INDEX IF EXISTS coordinator_holders_checked"],
    // v12 (issue 29): an uncontended acquire writes one row and nothing
    // else, a waiter's arrival and leaving one statement each.
    //
    // - `coordinator_holders` is rebuilt `WITHOUT ROWID` on its primary key
    //   (one B-tree per holder row, not a table and its key's index), and
    //   without the index on `(key, seq)`: a key's holders (at most its
    //   limit) are read whole and put in grant order by `(fence, seq)`. A
    //   new row's `seq` is its fence, so it no longer reads the highest.
    // - The key's `fence` and `grants` are folded in when a hold ends, by
    //   the trigger that already writes the key row for its hold time (or,
    //   for a row deleted outright, `coordinator_holders_gone`), not when it
    //   begins: the key row is written once per pair, not twice. A key's
    //   fence is then the highest of its row's and its holders', its grants
    //   its row's count plus its holders (`super`, `history.rs`).
    //   The rows carried over were counted when they began, so the step
    //   takes them off the count they will be counted in again.
    // - The waiter rows' triggers keep the key's `waiter_count` beside the
    //   tenant's count, so no statement of its own adjusts it.
    // - The waiters' index by input hash holds only rows that have one
    //   (coalescing looks a hash up; a waiter without one is never found by it).
    &[
        "CREATE TABLE coordinator_holders_v12 (
            key TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            since_ms INTEGER NOT NULL,
            state TEXT NOT NULL,
            workflow TEXT,
            enqueued_ms INTEGER,
            checked_ms INTEGER,
            fence INTEGER NOT NULL DEFAULT 0,
            turn INTEGER,
            ended_ms INTEGER,
            cancelling INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (key, id)
        ) WITHOUT ROWID",
        "INSERT INTO coordinator_holders_v12 \
            (key, id, seq, since_ms, state, workflow, enqueued_ms, checked_ms, fence, turn, \
             ended_ms, cancelling) \
         SELECT key, id, seq, since_ms, state, workflow, enqueued_ms, checked_ms, fence, turn, \
             ended_ms, cancelling FROM coordinator_holders",
        "UPDATE coordinator_keys SET grants = grants - \
            (SELECT COUNT(*) FROM coordinator_holders h WHERE h.key = coordinator_keys.key)",
        // Its triggers and indexes go with it.
        "DROP TABLE coordinator_holders",
        "ALTER TABLE coordinator_holders_v12 RENAME TO coordinator_holders",
        "CREATE TRIGGER coordinator_holders_ended AFTER UPDATE OF ended_ms ON coordinator_holders \
         WHEN new.ended_ms IS NOT NULL BEGIN \
            INSERT INTO coordinator_keys (key, fence, grants, hold_times_ms) \
            VALUES (new.key, new.fence, 1, json_array(max(new.ended_ms - new.since_ms, 0))) \
            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \
            grants = grants + 1, hold_times_ms = ( \
                SELECT CASE WHEN json_array_length(t) > 20 THEN json_remove(t, '$[0]') ELSE t END \
                FROM (SELECT json_insert(COALESCE(hold_times_ms, '[]'), '$[#]', \
                      max(new.ended_ms - new.since_ms, 0)) AS t)); \
            DELETE FROM coordinator_holders WHERE key = new.key AND id = new.id; \
         END",
        "CREATE TRIGGER coordinator_holders_gone AFTER DELETE ON coordinator_holders \
         WHEN old.ended_ms IS NULL BEGIN \
            INSERT INTO coordinator_keys (key, fence, grants) VALUES (old.key, old.fence, 1) \
            ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), \
            grants = grants + 1; \
         END",
        "CREATE TRIGGER coordinator_holders_waited AFTER DELETE ON coordinator_holders BEGIN \
            DELETE FROM coordinator_waited WHERE key = old.key AND id = old.id; \
         END",
        "DROP TRIGGER coordinator_waiters_joined",
        "CREATE TRIGGER coordinator_waiters_joined AFTER INSERT ON coordinator_waiters BEGIN \
            INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
            VALUES (new.key, new.priority, new.tenant, 1, new.seq) \
            ON CONFLICT (key, priority, tenant) DO UPDATE SET waiters = waiters + 1, \
            first_seq = COALESCE(first_seq, excluded.first_seq); \
            INSERT INTO coordinator_keys (key, waiter_count) VALUES (new.key, 1) \
            ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + 1; \
         END",
        "DROP TRIGGER coordinator_waiters_left",
        "CREATE TRIGGER coordinator_waiters_left AFTER DELETE ON coordinator_waiters BEGIN \
            UPDATE coordinator_tenants SET waiters = waiters - 1, \
            first_seq = CASE WHEN first_seq = old.seq THEN \
                (SELECT MIN(seq) FROM coordinator_waiters \
                 WHERE key = old.key AND priority = old.priority AND tenant = old.tenant) \
                ELSE first_seq END \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant; \
            DELETE FROM coordinator_tenants \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant \
            AND waiters = 0 AND served IS NULL; \
            UPDATE coordinator_keys SET waiter_count = waiter_count - 1 WHERE key = old.key; \
         END",
        "DROP INDEX coordinator_waiters_hash",
        "CREATE INDEX coordinator_waiters_hash ON coordinator_waiters (key, input_hash, seq) \
         WHERE input_hash IS NOT NULL",
    ],
    // v13 (issue 29): a waiter joining behind others writes its own row,
    // its two orders, its tenant's count and the key's, and nothing else.
    //
    // - `coordinator_waiters` and `coordinator_tenants` are rebuilt
    //   `WITHOUT ROWID` on their primary keys (a row is one B-tree entry,
    //   not a table row and its key's index entry). The step copies every
    //   waiter once, in the object's first call after the deploy.
    // - A tenant has waiters exactly while `first_seq` is set (the
    //   triggers keep both), so its turn and idle indexes are partial on
    //   `first_seq`, not on `waiters`: counting a waiter in or out rewrites
    //   the tenant's row alone, and its index entries move only when its
    //   earliest waiter changes.
    &[
        "CREATE TABLE coordinator_waiters_v13 (
            key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            since_ms INTEGER NOT NULL,
            input_hash TEXT,
            workflow TEXT,
            enqueued_ms INTEGER,
            turn INTEGER,
            priority INTEGER NOT NULL DEFAULT 0,
            tenant TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (key, id)
        ) WITHOUT ROWID",
        "INSERT INTO coordinator_waiters_v13 \
            (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant) \
         SELECT key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant \
         FROM coordinator_waiters",
        "DROP TABLE coordinator_waiters",
        "ALTER TABLE coordinator_waiters_v13 RENAME TO coordinator_waiters",
        "CREATE UNIQUE INDEX coordinator_waiters_order ON coordinator_waiters (key, seq)",
        "CREATE INDEX coordinator_waiters_hash ON coordinator_waiters (key, input_hash, seq) \
         WHERE input_hash IS NOT NULL",
        "CREATE INDEX coordinator_waiters_share ON coordinator_waiters (key, priority, tenant, seq)",
        "CREATE TABLE coordinator_tenants_v13 (
            key TEXT NOT NULL,
            priority INTEGER NOT NULL,
            tenant TEXT NOT NULL,
            waiters INTEGER NOT NULL,
            first_seq INTEGER,
            served INTEGER,
            PRIMARY KEY (key, priority, tenant)
        ) WITHOUT ROWID",
        "INSERT INTO coordinator_tenants_v13 (key, priority, tenant, waiters, first_seq, served) \
         SELECT key, priority, tenant, waiters, CASE WHEN waiters > 0 THEN first_seq END, served \
         FROM coordinator_tenants",
        "DROP TABLE coordinator_tenants",
        "ALTER TABLE coordinator_tenants_v13 RENAME TO coordinator_tenants",
        "CREATE INDEX coordinator_tenants_turns ON coordinator_tenants \
            (key, priority DESC, served, first_seq) WHERE first_seq IS NOT NULL",
        "CREATE INDEX coordinator_tenants_idle ON coordinator_tenants \
            (key, served) WHERE first_seq IS NULL",
        // The waiter rows' triggers went with their table. The tenant's
        // `first_seq` is written only when it changes: when the tenant
        // had no waiter, or its earliest leaves.
        "CREATE TRIGGER coordinator_waiters_joined AFTER INSERT ON coordinator_waiters BEGIN \
            INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
            VALUES (new.key, new.priority, new.tenant, 1, new.seq) \
            ON CONFLICT (key, priority, tenant) DO UPDATE SET waiters = waiters + 1; \
            UPDATE coordinator_tenants SET first_seq = new.seq \
            WHERE key = new.key AND priority = new.priority AND tenant = new.tenant \
            AND first_seq IS NULL; \
            INSERT INTO coordinator_keys (key, waiter_count) VALUES (new.key, 1) \
            ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + 1; \
         END",
        "CREATE TRIGGER coordinator_waiters_left AFTER DELETE ON coordinator_waiters BEGIN \
            UPDATE coordinator_tenants SET waiters = waiters - 1 \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant; \
            UPDATE coordinator_tenants SET first_seq = \
                (SELECT MIN(seq) FROM coordinator_waiters \
                 WHERE key = old.key AND priority = old.priority AND tenant = old.tenant) \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant \
            AND first_seq = old.seq; \
            DELETE FROM coordinator_tenants \
            WHERE key = old.key AND priority = old.priority AND tenant = old.tenant \
            AND first_seq IS NULL AND served IS NULL; \
            UPDATE coordinator_keys SET waiter_count = waiter_count - 1 WHERE key = old.key; \
         END",
    ],
    // v14 (contract §1f): a key's cap on its waiters, on the key row the
    // summary already reads. NULL in every older row: no cap but
    // `WAITERS_PER_KEY_MAX`.
    &["ALTER TABLE coordinator_keys ADD COLUMN max_waiting INTEGER"],
    // v15 (contract §10a): each holder's last status answer, and since
    // when its checks have failed in a row (null while the last answered).
    &[
        "ALTER TABLE coordinator_holders ADD COLUMN check_answer TEXT",
        "ALTER TABLE coordinator_holders ADD COLUMN check_failed_ms INTEGER",
    ],
    // v16 (issue 38): a release that hands the key on runs two statements
    // fewer before its reply. The recent holds' prune to the newest
    // `COORDINATOR_RECENT_KEPT` runs in the recorded hold's own insert, and
    // the forgetting of tenants idle for `IDLE_TENANT_KEPT_GRANTS` grants in
    // the tenant's serve (an update, or the insert of a tenant whose row was
    // gone): the same rows as the statements they replace, in the same turn.
    &[
        "CREATE TRIGGER coordinator_recent_kept AFTER INSERT ON coordinator_recent BEGIN \
            DELETE FROM coordinator_recent WHERE key = new.key AND seq <= \
            (SELECT seq FROM coordinator_recent WHERE key = new.key ORDER BY seq DESC \
             LIMIT 1 OFFSET 50); \
         END",
        "CREATE TRIGGER coordinator_tenants_served AFTER UPDATE OF served ON coordinator_tenants \
         WHEN new.served IS NOT NULL BEGIN \
            DELETE FROM coordinator_tenants \
            WHERE key = new.key AND first_seq IS NULL AND served < new.served - 20000; \
         END",
        "CREATE TRIGGER coordinator_tenants_first_served AFTER INSERT ON coordinator_tenants \
         WHEN new.served IS NOT NULL BEGIN \
            DELETE FROM coordinator_tenants \
            WHERE key = new.key AND first_seq IS NULL AND served < new.served - 20000; \
         END",
    ],
    // v17 (issue 38): a hand-off's wait on the new holder's row, its
    // counts in the ended row's trigger
    // (`super::history::MIGRATION_HAND_OFF`).
    super::history::MIGRATION_HAND_OFF,
    // v18 (issue 38): while a key's waiters are all of one priority and
    // tenant, their arrival order is their hand-off order (§1c), and they
    // are kept in that order alone (`sole = 1`, `Layout::Sole`): a join
    // writes its row, its `(key, seq)` entry and the key's count, and
    // neither the share index (partial on `sole = 0`) nor a tenant's turn.
    // The key row names that share (`sole_priority`, `sole_tenant`; both
    // NULL while nobody waits or the waiters are shared). The first waiter
    // of a second share spreads the key's rows first (`sole = 0`, their
    // seqs unchanged, their count and earliest seq into their tenant's
    // row: `store::write`'s `spread`). Rows from before are shared.
    // Every trigger on the table is compiled into each insert, so a
    // shared waiter joins through the view `coordinator_waiters_shared`,
    // whose own trigger counts it in its tenant's turn: a sole join runs
    // the key's count alone (in workerd, its insert's CPU 40 -> 27 µs).
    &[
        "ALTER TABLE coordinator_waiters ADD COLUMN sole INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE coordinator_keys ADD COLUMN sole_priority INTEGER",
        "ALTER TABLE coordinator_keys ADD COLUMN sole_tenant TEXT",
        "DROP INDEX coordinator_waiters_share",
        "CREATE INDEX coordinator_waiters_share ON coordinator_waiters \
            (key, priority, tenant, seq) WHERE sole = 0",
        "DROP TRIGGER coordinator_waiters_joined",
        "CREATE TRIGGER coordinator_waiters_joined AFTER INSERT ON coordinator_waiters BEGIN \
            INSERT INTO coordinator_keys (key, waiter_count, sole_priority, sole_tenant) \
            VALUES (new.key, 1, CASE WHEN new.sole = 1 THEN new.priority END, \
            CASE WHEN new.sole = 1 THEN new.tenant END) \
            ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + 1, \
            sole_priority = excluded.sole_priority, sole_tenant = excluded.sole_tenant; \
         END",
        "CREATE VIEW coordinator_waiters_shared AS SELECT key, seq, id, since_ms, input_hash, \
            workflow, enqueued_ms, turn, priority, tenant FROM coordinator_waiters",
        "CREATE TRIGGER coordinator_waiters_shared_joined INSTEAD OF INSERT \
         ON coordinator_waiters_shared BEGIN \
            INSERT INTO coordinator_waiters (key, seq, id, since_ms, input_hash, workflow, \
            enqueued_ms, turn, priority, tenant, sole) VALUES (new.key, new.seq, new.id, \
            new.since_ms, new.input_hash, new.workflow, new.enqueued_ms, new.turn, \
            new.priority, new.tenant, 0); \
            INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
            VALUES (new.key, new.priority, new.tenant, 1, new.seq) \
            ON CONFLICT (key, priority, tenant) DO UPDATE SET waiters = waiters + 1; \
            UPDATE coordinator_tenants SET first_seq = new.seq WHERE key = new.key \
            AND priority = new.priority AND tenant = new.tenant AND first_seq IS NULL; \
         END",
        "DROP TRIGGER coordinator_waiters_left",
        "CREATE TRIGGER coordinator_waiters_left AFTER DELETE ON coordinator_waiters BEGIN \
            UPDATE coordinator_tenants SET waiters = waiters - 1 WHERE old.sole = 0 \
            AND key = old.key AND priority = old.priority AND tenant = old.tenant; \
            UPDATE coordinator_tenants SET first_seq = \
                (SELECT MIN(seq) FROM coordinator_waiters WHERE key = old.key \
                 AND priority = old.priority AND tenant = old.tenant AND sole = 0) \
            WHERE old.sole = 0 AND key = old.key AND priority = old.priority \
            AND tenant = old.tenant AND first_seq = old.seq; \
            DELETE FROM coordinator_tenants WHERE old.sole = 0 \
            AND key = old.key AND priority = old.priority AND tenant = old.tenant \
            AND first_seq IS NULL AND served IS NULL; \
            UPDATE coordinator_keys SET waiter_count = waiter_count - 1, \
            sole_priority = CASE WHEN waiter_count > 1 THEN sole_priority END, \
            sole_tenant = CASE WHEN waiter_count > 1 THEN sole_tenant END \
            WHERE key = old.key; \
         END",
    ],
];

/// The version this release writes.
pub const CURRENT_VERSION: i64 = LADDER.current();

pub const LADDER: Ladder = Ladder {
    name: "database",
    read_version: READ_VERSION,
    write_version: WRITE_VERSION,
    migrations: MIGRATIONS,
    fresh: super::schema_fresh::FRESH,
};
