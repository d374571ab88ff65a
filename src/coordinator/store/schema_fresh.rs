//! The Coordinator's schema as `super::schema::MIGRATIONS` leaves it, one
//! statement per table, index and trigger, for a database that has none
//! yet (`crate::sql::Ladder::fresh`). Generated from the ladder by
//! `BATON_BLESS=1 cargo test --test coordinator_sql the_fresh_schema`;
//! that test fails while this file and the ladder differ. Do not edit.

pub const FRESH: &[&str] = &[
    r#"CREATE TABLE coordinator_keys (
            key TEXT PRIMARY KEY,
            holder_id TEXT,
            holder_since_ms INTEGER
        , holder_state TEXT, waiter_count INTEGER NOT NULL DEFAULT 0, holder_limit INTEGER, fence INTEGER, turns INTEGER, grants INTEGER NOT NULL DEFAULT 0, hand_offs INTEGER NOT NULL DEFAULT 0, dead_holders INTEGER NOT NULL DEFAULT 0, superseded_total INTEGER NOT NULL DEFAULT 0, coalesced INTEGER NOT NULL DEFAULT 0, dead_at_ms INTEGER, list_owed INTEGER NOT NULL DEFAULT 0, hold_times_ms TEXT, paused_since_ms INTEGER, paused_reason TEXT, limit_override INTEGER, cancelled INTEGER NOT NULL DEFAULT 0, max_waiting INTEGER, sole_priority INTEGER, sole_tenant TEXT)"#,
    r#"CREATE TABLE coordinator_superseded (
            key TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL, workflow TEXT, terminate_owed INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (key, id)
        )"#,
    r#"CREATE UNIQUE INDEX coordinator_superseded_order ON coordinator_superseded (key, seq)"#,
    r#"CREATE INDEX coordinator_keys_list_owed ON coordinator_keys (key) WHERE list_owed = 1"#,
    r#"CREATE TABLE coordinator_recent (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        fence INTEGER NOT NULL,
        from_ms INTEGER NOT NULL,
        to_ms INTEGER NOT NULL,
        waited_ms INTEGER NOT NULL,
        outcome TEXT NOT NULL
    , cancelled INTEGER NOT NULL DEFAULT 0)"#,
    r#"CREATE INDEX coordinator_recent_key ON coordinator_recent (key, seq)"#,
    r#"CREATE TRIGGER coordinator_superseded_count AFTER INSERT ON coordinator_superseded BEGIN UPDATE coordinator_keys SET superseded_total = superseded_total + 1 WHERE key = new.key; END"#,
    r#"CREATE INDEX coordinator_superseded_owed ON coordinator_superseded (key, id) WHERE terminate_owed = 1"#,
    r#"CREATE TABLE "coordinator_holders" (
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
            cancelling INTEGER NOT NULL DEFAULT 0, check_answer TEXT, check_failed_ms INTEGER, waited_ms INTEGER NOT NULL DEFAULT 0, tally_hand_offs INTEGER NOT NULL DEFAULT 0, tally_dead_holders INTEGER NOT NULL DEFAULT 0, tally_coalesced INTEGER NOT NULL DEFAULT 0, tally_dead_at_ms INTEGER, tally_report_owed INTEGER NOT NULL DEFAULT 0, tally_cancelled INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (key, id)
        ) WITHOUT ROWID"#,
    r#"CREATE TRIGGER coordinator_holders_gone AFTER DELETE ON coordinator_holders WHEN old.ended_ms IS NULL BEGIN INSERT INTO coordinator_keys (key, fence, grants) VALUES (old.key, old.fence, 1) ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), grants = grants + 1; END"#,
    r#"CREATE TABLE "coordinator_waiters" (
            key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            since_ms INTEGER NOT NULL,
            input_hash TEXT,
            workflow TEXT,
            enqueued_ms INTEGER,
            turn INTEGER,
            priority INTEGER NOT NULL DEFAULT 0,
            tenant TEXT NOT NULL DEFAULT '', sole INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (key, id)
        ) WITHOUT ROWID"#,
    r#"CREATE UNIQUE INDEX coordinator_waiters_order ON coordinator_waiters (key, seq)"#,
    r#"CREATE INDEX coordinator_waiters_hash ON coordinator_waiters (key, input_hash, seq) WHERE input_hash IS NOT NULL"#,
    r#"CREATE TABLE "coordinator_tenants" (
            key TEXT NOT NULL,
            priority INTEGER NOT NULL,
            tenant TEXT NOT NULL,
            waiters INTEGER NOT NULL,
            first_seq INTEGER,
            served INTEGER,
            PRIMARY KEY (key, priority, tenant)
        ) WITHOUT ROWID"#,
    r#"CREATE INDEX coordinator_tenants_turns ON coordinator_tenants (key, priority DESC, served, first_seq) WHERE first_seq IS NOT NULL"#,
    r#"CREATE INDEX coordinator_tenants_idle ON coordinator_tenants (key, served) WHERE first_seq IS NULL"#,
    r#"CREATE TRIGGER coordinator_recent_kept AFTER INSERT ON coordinator_recent BEGIN DELETE FROM coordinator_recent WHERE key = new.key AND seq <= (SELECT seq FROM coordinator_recent WHERE key = new.key ORDER BY seq DESC LIMIT 1 OFFSET 50); END"#,
    r#"CREATE TRIGGER coordinator_tenants_served AFTER UPDATE OF served ON coordinator_tenants WHEN new.served IS NOT NULL BEGIN DELETE FROM coordinator_tenants WHERE key = new.key AND first_seq IS NULL AND served < new.served - 20000; END"#,
    r#"CREATE TRIGGER coordinator_tenants_first_served AFTER INSERT ON coordinator_tenants WHEN new.served IS NOT NULL BEGIN DELETE FROM coordinator_tenants WHERE key = new.key AND first_seq IS NULL AND served < new.served - 20000; END"#,
    r#"CREATE TRIGGER coordinator_holders_ended AFTER UPDATE OF ended_ms ON coordinator_holders WHEN new.ended_ms IS NOT NULL BEGIN INSERT INTO coordinator_keys (key, fence, grants, hold_times_ms, hand_offs, dead_holders, coalesced, dead_at_ms, list_owed, cancelled) VALUES (new.key, new.fence, 1, json_array(max(new.ended_ms - new.since_ms, 0)), new.tally_hand_offs, new.tally_dead_holders, new.tally_coalesced, new.tally_dead_at_ms, new.tally_report_owed, new.tally_cancelled) ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), grants = grants + 1, hold_times_ms = ( SELECT CASE WHEN json_array_length(t) > 20 THEN json_remove(t, '$[0]') ELSE t END FROM (SELECT json_insert(COALESCE(hold_times_ms, '[]'), '$[#]', max(new.ended_ms - new.since_ms, 0)) AS t)), hand_offs = hand_offs + excluded.hand_offs, dead_holders = dead_holders + excluded.dead_holders, coalesced = coalesced + excluded.coalesced, dead_at_ms = COALESCE(excluded.dead_at_ms, dead_at_ms), list_owed = CASE WHEN excluded.list_owed = 1 THEN 1 ELSE list_owed END, cancelled = cancelled + excluded.cancelled; DELETE FROM coordinator_holders WHERE key = new.key AND id = new.id; END"#,
    r#"CREATE INDEX coordinator_waiters_share ON coordinator_waiters (key, priority, tenant, seq) WHERE sole = 0"#,
    r#"CREATE TRIGGER coordinator_waiters_joined AFTER INSERT ON coordinator_waiters BEGIN INSERT INTO coordinator_keys (key, waiter_count, sole_priority, sole_tenant) VALUES (new.key, 1, CASE WHEN new.sole = 1 THEN new.priority END, CASE WHEN new.sole = 1 THEN new.tenant END) ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + 1, sole_priority = excluded.sole_priority, sole_tenant = excluded.sole_tenant; END"#,
    r#"CREATE VIEW coordinator_waiters_shared AS SELECT key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant FROM coordinator_waiters"#,
    r#"CREATE TRIGGER coordinator_waiters_shared_joined INSTEAD OF INSERT ON coordinator_waiters_shared BEGIN INSERT INTO coordinator_waiters (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant, sole) VALUES (new.key, new.seq, new.id, new.since_ms, new.input_hash, new.workflow, new.enqueued_ms, new.turn, new.priority, new.tenant, 0); INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) VALUES (new.key, new.priority, new.tenant, 1, new.seq) ON CONFLICT (key, priority, tenant) DO UPDATE SET waiters = waiters + 1; UPDATE coordinator_tenants SET first_seq = new.seq WHERE key = new.key AND priority = new.priority AND tenant = new.tenant AND first_seq IS NULL; END"#,
    r#"CREATE TRIGGER coordinator_waiters_left AFTER DELETE ON coordinator_waiters BEGIN UPDATE coordinator_tenants SET waiters = waiters - 1 WHERE old.sole = 0 AND key = old.key AND priority = old.priority AND tenant = old.tenant; UPDATE coordinator_tenants SET first_seq = (SELECT MIN(seq) FROM coordinator_waiters WHERE key = old.key AND priority = old.priority AND tenant = old.tenant AND sole = 0) WHERE old.sole = 0 AND key = old.key AND priority = old.priority AND tenant = old.tenant AND first_seq = old.seq; DELETE FROM coordinator_tenants WHERE old.sole = 0 AND key = old.key AND priority = old.priority AND tenant = old.tenant AND first_seq IS NULL AND served IS NULL; UPDATE coordinator_keys SET waiter_count = waiter_count - 1, sole_priority = CASE WHEN waiter_count > 1 THEN sole_priority END, sole_tenant = CASE WHEN waiter_count > 1 THEN sole_tenant END WHERE key = old.key; END"#,
];
