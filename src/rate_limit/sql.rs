//! A bucket in SQLite, one row per grant: [`SqlRows`] answers the
//! decision's lookups, and [`write`] carries out its [`Write`]s, one
//! statement each, in one exhaustive `match`.
//!
//! Generic over [`SqlExec`], so the same statements run in the Durable
//! Object and natively under `rusqlite` in the tests. Every query is bounded
//! by the primary key or the time index and a `LIMIT`. A failing statement
//! is a broken invariant: it panics.

use super::schema;
use super::state::{GrantRow, Meta, Rows, RuleRow, Totals, Write};
use crate::limits::{JS_SAFE_INTEGER_MAX, RATE_RULE_SLOTS};
use crate::rate_limit::rules::RuleId;
use crate::sql::{integer, millis, millis_value, Counted, SqlExec, SqlValue};
use std::sync::OnceLock;

/// `seq, at_ms, permits, mask, t0, ..., t15`, built once: a view is made
/// per call, and formatting this each time showed in the profile.
fn grant_columns() -> &'static str {
    static COLUMNS: OnceLock<String> = OnceLock::new();
    COLUMNS.get_or_init(|| {
        format!(
            "seq, at_ms, permits, mask, {}",
            schema::total_columns().join(", ")
        )
    })
}

/// Brings a database to the current rate-limit schema; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    exec.run(schema::CREATE_VERSION_TABLE, &[]);
    let found = exec
        .run(schema::READ_VERSION, &[])
        .first()
        .map(|row| integer(&row[0]))
        .unwrap_or(0);
    let current = schema::current_version();
    assert!(
        found <= current,
        "rate_limit schema v{found} is newer than this release (v{current})"
    );
    for step in &schema::migrations()[found as usize..] {
        for statement in step {
            exec.run(statement, &[]);
        }
    }
    if found < current {
        exec.run(schema::WRITE_VERSION, &[SqlValue::Integer(current)]);
    }
}

/// One bucket's rows, read (and written, by [`write`]) through `exec`,
/// counting statements.
pub struct SqlRows<'a, E: SqlExec> {
    sql: Counted<'a, E>,
    bucket: &'a str,
    /// `seq, at_ms, permits, mask, t0, ..., t15`.
    grant_columns: &'static str,
}

impl<'a, E: SqlExec> SqlRows<'a, E> {
    pub fn new(exec: &'a E, bucket: &'a str) -> Self {
        SqlRows {
            sql: Counted::new(exec),
            bucket,
            grant_columns: grant_columns(),
        }
    }

    /// Statements that only read, and statements that wrote, so far.
    pub fn work(&self) -> (u32, u32) {
        self.sql.work()
    }

    fn bucket(&self) -> SqlValue {
        SqlValue::Text(self.bucket.to_owned())
    }

    /// The grant rows a `WHERE ... ORDER BY ... LIMIT` clause selects.
    fn grants(&self, clause: &str, params: &[SqlValue]) -> Vec<GrantRow> {
        let sql = format!(
            "SELECT {} FROM rate_grants WHERE bucket = ?1 AND {clause}",
            self.grant_columns
        );
        let mut all = vec![self.bucket()];
        all.extend_from_slice(params);
        self.sql
            .read(&sql, &all)
            .iter()
            .map(|row| grant_from_row(row))
            .collect()
    }

    fn grant(&self, clause: &str, params: &[SqlValue]) -> Option<GrantRow> {
        self.grants(clause, params).into_iter().next()
    }
}

fn rule_from_row(row: &[SqlValue]) -> RuleRow {
    RuleRow {
        slot: u8::try_from(millis(&row[0])).expect("stored slot fits u8"),
        id: match &row[1] {
            SqlValue::Text(id) => {
                RuleId::parse("stored rule id", id).expect("stored rule id is valid")
            }
            other => panic!("expected a text rule id, found {other:?}"),
        },
        limit: u32::try_from(millis(&row[2])).expect("stored limit fits u32"),
        window_ms: millis(&row[3]),
    }
}

fn grant_from_row(row: &[SqlValue]) -> GrantRow {
    let mut totals: Totals = [0; RATE_RULE_SLOTS];
    for (slot, total) in totals.iter_mut().enumerate() {
        *total = millis(&row[4 + slot]);
    }
    GrantRow {
        seq: millis(&row[0]),
        at_ms: millis(&row[1]),
        permits: u32::try_from(millis(&row[2])).expect("stored permits fit u32"),
        mask: u16::try_from(millis(&row[3])).expect("stored mask fits u16"),
        totals,
    }
}

fn grant_values(row: &GrantRow) -> Vec<SqlValue> {
    let mut values = vec![
        millis_value(row.seq),
        millis_value(row.at_ms),
        millis_value(u64::from(row.permits)),
        millis_value(u64::from(row.mask)),
    ];
    values.extend(row.totals.iter().map(|&t| millis_value(t)));
    values
}

impl<E: SqlExec> Rows for SqlRows<'_, E> {
    fn meta(&self) -> Meta {
        self.sql
            .read(
                "SELECT cooldown_until_ms, max_window_ms, horizon_ms FROM rate_buckets \
             WHERE bucket = ?1 LIMIT 1",
                &[self.bucket()],
            )
            .first()
            .map_or_else(Meta::default, |row| Meta {
                cooldown_until_ms: millis(&row[0]),
                max_window_ms: millis(&row[1]),
                horizon_ms: millis(&row[2]),
            })
    }

    fn rules(&self) -> Vec<RuleRow> {
        self.sql
            .read(
                "SELECT slot, id, rule_limit, window_ms FROM rate_rules \
             WHERE bucket = ?1 ORDER BY slot LIMIT ?2",
                &[self.bucket(), millis_value(RATE_RULE_SLOTS as u64)],
            )
            .iter()
            .map(|row| rule_from_row(row))
            .collect()
    }

    /// One statement for both: the bucket's row joined with its rules.
    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        let rows = self.sql.read(
            "SELECT b.cooldown_until_ms, b.max_window_ms, b.horizon_ms, \
             r.slot, r.id, r.rule_limit, r.window_ms \
             FROM rate_buckets b LEFT JOIN rate_rules r ON r.bucket = b.bucket \
             WHERE b.bucket = ?1 ORDER BY r.slot LIMIT ?2",
            &[self.bucket(), millis_value(RATE_RULE_SLOTS as u64)],
        );
        let Some(first) = rows.first() else {
            // No row yet; rules are only ever written with (after) the bucket's row.
            return (Meta::default(), Vec::new());
        };
        let meta = Meta {
            cooldown_until_ms: millis(&first[0]),
            max_window_ms: millis(&first[1]),
            horizon_ms: millis(&first[2]),
        };
        let rules = rows
            .iter()
            .filter(|row| row[3] != SqlValue::Null)
            .map(|row| rule_from_row(&row[3..]))
            .collect();
        (meta, rules)
    }

    fn newest_grant(&self) -> Option<GrantRow> {
        self.grant("1 ORDER BY seq DESC LIMIT 1", &[])
    }

    fn oldest_grant(&self) -> Option<GrantRow> {
        self.grant("1 ORDER BY seq LIMIT 1", &[])
    }

    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow> {
        self.grant(
            "at_ms <= ?2 ORDER BY at_ms DESC, seq DESC LIMIT 1",
            &[millis_value(t)],
        )
    }

    fn last_grant_at_or_before_and_next(&self, t: u64) -> (Option<GrantRow>, Option<GrantRow>) {
        // One read: the last row at or before t by the time index, then it
        // and the row after it by seq.
        let mut rows = self
            .grants(
                "seq >= (SELECT seq FROM rate_grants WHERE bucket = ?1 AND at_ms <= ?2 \
                 ORDER BY at_ms DESC, seq DESC LIMIT 1) ORDER BY seq LIMIT 2",
                &[millis_value(t)],
            )
            .into_iter();
        (rows.next(), rows.next())
    }

    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow> {
        self.grant("seq >= ?2 ORDER BY seq LIMIT 1", &[millis_value(seq)])
    }

    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow> {
        // `before` may be u64::MAX ("from the newest"), beyond any stored seq.
        let before = before.min(JS_SAFE_INTEGER_MAX);
        self.grants(
            "seq < ?2 ORDER BY seq DESC LIMIT ?3",
            &[millis_value(before), millis_value(u64::from(limit))],
        )
    }
}

impl<E: SqlExec> SqlRows<'_, E> {
    /// Carries out one write; a prune answers the newest `seq` it deleted.
    pub fn write(&self, write: &Write) -> Option<u64> {
        match write {
            Write::Meta(meta) => self.set_meta(meta),
            Write::Rule(rule) => self.put_rule(rule),
            Write::Grant(row) => self.push_grant(row),
            Write::Regrant(row) => self.replace_grant(row),
            Write::Ungrant { seq } => self.delete_grant(*seq),
            Write::Prune {
                before_ms,
                keep_seq,
                limit,
            } => return self.prune(*before_ms, *keep_seq, *limit),
        }
        None
    }

    /// Carries out a decision's writes, in order.
    pub fn write_all(&self, writes: &[Write]) {
        for write in writes {
            self.write(write);
        }
    }

    fn set_meta(&self, meta: &Meta) {
        self.sql.write(
            "INSERT INTO rate_buckets (bucket, cooldown_until_ms, max_window_ms, horizon_ms) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT(bucket) DO UPDATE SET \
             cooldown_until_ms = excluded.cooldown_until_ms, \
             max_window_ms = excluded.max_window_ms, horizon_ms = excluded.horizon_ms",
            &[
                self.bucket(),
                millis_value(meta.cooldown_until_ms),
                millis_value(meta.max_window_ms),
                millis_value(meta.horizon_ms),
            ],
        );
    }

    fn put_rule(&self, rule: &RuleRow) {
        self.sql.write(
            "INSERT INTO rate_rules (bucket, slot, id, rule_limit, window_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(bucket, slot) DO UPDATE SET \
             id = excluded.id, rule_limit = excluded.rule_limit, window_ms = excluded.window_ms",
            &[
                self.bucket(),
                millis_value(u64::from(rule.slot)),
                SqlValue::Text(rule.id.to_string()),
                millis_value(u64::from(rule.limit)),
                millis_value(rule.window_ms),
            ],
        );
    }

    fn push_grant(&self, row: &GrantRow) {
        // Every grant runs this: its text is built once.
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            let placeholders: Vec<String> =
                (2..=5 + RATE_RULE_SLOTS).map(|i| format!("?{i}")).collect();
            format!(
                "INSERT INTO rate_grants (bucket, {}) VALUES (?1, {})",
                grant_columns(),
                placeholders.join(", ")
            )
        });
        let mut params = vec![self.bucket()];
        params.extend(grant_values(row));
        self.sql.write(sql, &params);
    }

    fn replace_grant(&self, row: &GrantRow) {
        let sets: Vec<String> = schema::total_columns()
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ?{}", i + 4))
            .collect();
        let sql = format!(
            "UPDATE rate_grants SET permits = ?3, {} WHERE bucket = ?1 AND seq = ?2",
            sets.join(", ")
        );
        let mut params = vec![
            self.bucket(),
            millis_value(row.seq),
            millis_value(u64::from(row.permits)),
        ];
        params.extend(row.totals.iter().map(|&t| millis_value(t)));
        self.sql.write(&sql, &params);
    }

    fn delete_grant(&self, seq: u64) {
        self.sql.write(
            "DELETE FROM rate_grants WHERE bucket = ?1 AND seq = ?2",
            &[self.bucket(), millis_value(seq)],
        );
    }

    fn prune(&self, before_ms: u64, keep_seq: u64, limit: u32) -> Option<u64> {
        // Times rise with seq, so the oldest rows are the ones aged out. The
        // time index bounds the search to them: ordered by seq alone, SQLite
        // would walk every kept row to find that none has aged out.
        let deleted = self.sql.write_returning(
            "DELETE FROM rate_grants WHERE bucket = ?1 AND seq IN (SELECT seq FROM rate_grants \
             WHERE bucket = ?1 AND at_ms < ?3 AND seq < ?2 ORDER BY at_ms, seq LIMIT ?4) \
             RETURNING seq",
            &[
                self.bucket(),
                millis_value(keep_seq),
                millis_value(before_ms),
                millis_value(u64::from(limit)),
            ],
        );
        deleted.iter().map(|row| millis(&row[0])).max()
    }
}
