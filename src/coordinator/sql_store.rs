//! [`KeyStore`] over SQLite: the Durable Object's storage, a row per waiter
//! and a row per holder.
//!
//! The store is generic over [`SqlExec`] so the very same statements run in
//! the Durable Object (its synchronous `storage.sql`) and natively under
//! `rusqlite` in tests. Every query is bounded by an index and a `LIMIT`; no
//! statement rewrites the queue, so each decision's cost is flat in its length.
//!
//! What the store knows of its key without reading (its counts and its
//! holders, a [`KeySummary`]) is loaded with one read and kept up to date by
//! the store's own writes. The object is the only writer of its database, so
//! the shell carries a key's summary from one decision to the next
//! ([`SqlKeyStore::resume`], [`SqlKeyStore::into_summary`]): an uncontended
//! acquire+release then reads nothing at all, and writes only its holder row.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed
//! (and with no summary: it is memory, rebuilt by the next read).

use super::schema;
use super::state::{Holder, HolderState, KeyStore, Member, Turn, Waiter};
use crate::ident::{InputHash, InstanceId, WorkflowName};
use crate::limits::{HOLDERS_PER_KEY_MAX, WAITERS_PER_KEY_MAX};
use crate::sql::{
    integer, millis, millis_value, optional_millis, optional_millis_value, optional_text,
    stored_id, text, Counted,
};
use std::cell::{Ref, RefCell};

use crate::sql::{SqlExec, SqlValue};

/// Brings a database to [`schema::LADDER`]'s current version; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    schema::LADDER.migrate(exec);
}

/// The key's counts, part of its [`KeySummary`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    limit: u32,
    /// The highest fence granted.
    fence: u64,
    waiters: u32,
    holders: u32,
    handed: u32,
}

/// What a store knows of its key without reading: the counts and every
/// holder (at most the key's limit of them), loaded with one statement and
/// kept up to date by the store's own writes. Valid for as long as nothing
/// else writes the key's rows: one decision, or, in the Durable Object (the
/// only writer of its database), from one decision to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    counts: Counts,
    /// In the order they got the key (their `seq`).
    holders: Vec<Holder>,
    /// The key remembers no superseded id. `false` only means "not known":
    /// forgetting old superseded ids does not set it back.
    none_superseded: bool,
}

/// The columns a waiter is read with, in [`waiter_from_row`]'s order.
pub(super) const WAITER_COLUMNS: &str = "id, since_ms, input_hash, workflow, enqueued_ms, turn";
/// [`WAITER_COLUMNS`] of the table aliased `w`.
pub(super) const WAITER_COLUMNS_OF_W: &str =
    "w.id, w.since_ms, w.input_hash, w.workflow, w.enqueued_ms, w.turn";
/// How many columns [`waiter_from_row`] reads.
pub(super) const WAITER_WIDTH: usize = 6;
/// The columns a holder is read with, in [`holder_from_row`]'s order.
pub(super) const HOLDER_COLUMNS: &str = "id, since_ms, state, workflow, enqueued_ms, turn, fence";
/// [`HOLDER_COLUMNS`] of the table aliased `h`.
pub(super) const HOLDER_COLUMNS_OF_H: &str =
    "h.id, h.since_ms, h.state, h.workflow, h.enqueued_ms, h.turn, h.fence";
/// How many columns [`holder_from_row`] reads.
pub(super) const HOLDER_WIDTH: usize = 7;

/// One key's rows, read and written through `exec`. Counts the statements it
/// runs, so the shell can report storage work per operation.
pub struct SqlKeyStore<'a, E: SqlExec> {
    sql: Counted<'a, E>,
    key: String,
    summary: RefCell<Option<KeySummary>>,
}

impl<'a, E: SqlExec> SqlKeyStore<'a, E> {
    /// A store that reads its key's summary when it first needs it.
    pub fn new(exec: &'a E, key: &str) -> Self {
        Self::resume(exec, key, None)
    }

    /// A store that starts from `summary`, the one a previous store of the
    /// same key left ([`SqlKeyStore::into_summary`]) with no write to the
    /// key's rows in between.
    pub fn resume(exec: &'a E, key: &str, summary: Option<KeySummary>) -> Self {
        SqlKeyStore {
            sql: Counted::new(exec),
            key: key.to_owned(),
            summary: RefCell::new(summary),
        }
    }

    /// The summary as this store's writes left it, if it was loaded.
    pub fn into_summary(self) -> Option<KeySummary> {
        self.summary.into_inner()
    }

    /// The database this store runs its statements on.
    pub fn exec(&self) -> &'a E {
        self.sql.exec()
    }

    /// Statements that only read, and statements that wrote, so far.
    pub fn work(&self) -> (u32, u32) {
        self.sql.work()
    }

    fn key(&self) -> SqlValue {
        SqlValue::Text(self.key.clone())
    }

    fn id_value(id: &InstanceId) -> SqlValue {
        SqlValue::Text(id.to_string())
    }

    /// Every waiter in queue order, for `inspect` (bounded by the queue's limit).
    pub fn waiters(&self) -> Vec<Waiter> {
        self.first_waiters(WAITERS_PER_KEY_MAX)
    }

    /// Keys in this database that need the holder-check alarm, at most `limit`.
    pub fn keys_needing_check(exec: &E, limit: u32) -> Vec<String> {
        exec.run(
            "SELECT DISTINCT h.key FROM coordinator_holders h \
             LEFT JOIN coordinator_keys k ON k.key = h.key \
             WHERE h.state = 'handed' OR k.waiter_count > 0 LIMIT ?1",
            &[SqlValue::Integer(i64::from(limit))],
        )
        .iter()
        .map(|row| text(&row[0]))
        .collect()
    }

    /// The key's summary, from memory or one read: the key row, whether
    /// any superseded id is remembered, and every holder (one row each, or
    /// one row of NULLs when there is none; sorted here, by `seq`, as
    /// SQLite would sort them in a temporary B-tree after this join).
    fn summary(&self) -> Ref<'_, KeySummary> {
        if self.summary.borrow().is_none() {
            let rows = self.sql.read(
                &format!(
                    "SELECT k.holder_limit, k.waiter_count, \
                     NOT EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1), \
                     k.fence, {}, h.seq \
                     FROM (SELECT 1) \
                     LEFT JOIN coordinator_keys k ON k.key = ?1 \
                     LEFT JOIN coordinator_holders h ON h.key = ?1 LIMIT ?2",
                    HOLDER_COLUMNS_OF_H
                ),
                &[
                    self.key(),
                    SqlValue::Integer(i64::from(HOLDERS_PER_KEY_MAX)),
                ],
            );
            *self.summary.borrow_mut() = Some(summary_from_rows(&rows));
        }
        Ref::map(self.summary.borrow(), |s| s.as_ref().expect("loaded above"))
    }

    fn counts(&self) -> Counts {
        self.summary().counts
    }

    /// Applies one of this store's writes to the summary, if loaded (if
    /// not, the next read sees the write).
    fn adjust(&self, change: impl FnOnce(&mut KeySummary)) {
        if let Some(summary) = self.summary.borrow_mut().as_mut() {
            change(summary);
        }
    }

    fn adjust_waiter_count(&self, delta: i64) {
        self.sql.write(
            "INSERT INTO coordinator_keys (key, waiter_count) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + ?2",
            &[self.key(), SqlValue::Integer(delta)],
        );
        self.adjust(|s| {
            s.counts.waiters =
                u32::try_from(i64::from(s.counts.waiters) + delta).expect("count stays >= 0")
        });
    }
}

/// [`SqlKeyStore::summary`]'s rows: the key's columns repeated on each,
/// then a holder's (all NULL on the one row of a key nobody holds).
fn summary_from_rows(rows: &[Vec<SqlValue>]) -> KeySummary {
    /// Where the holder's columns start: after the key's four.
    const H: usize = 4;
    let count = |v: &SqlValue| u32::try_from(integer(v)).expect("counts are bounded");
    let first = &rows[0];
    let mut held: Vec<(i64, Holder)> = rows
        .iter()
        .filter(|row| row[H] != SqlValue::Null)
        .map(|row| {
            (
                integer(&row[H + HOLDER_WIDTH]),
                holder_from_row(&row[H..H + HOLDER_WIDTH]),
            )
        })
        .collect();
    held.sort_unstable_by_key(|(seq, _)| *seq);
    let holders: Vec<Holder> = held.into_iter().map(|(_, holder)| holder).collect();
    let handed = holders
        .iter()
        .filter(|h| h.state == HolderState::Handed)
        .count();
    KeySummary {
        counts: Counts {
            // NULL (no key row, or one from before v3) is the default limit.
            limit: match &first[0] {
                SqlValue::Null => 1,
                value => count(value),
            },
            waiters: match &first[1] {
                SqlValue::Null => 0,
                value => count(value),
            },
            // NULL: no key row, or none from before v4 (no grant had a fence).
            fence: optional_millis(&first[3]).unwrap_or(0),
            holders: holders.len() as u32,
            handed: handed as u32,
        },
        none_superseded: integer(&first[2]) != 0,
        holders,
    }
}

impl KeySummary {
    fn holder_mut(&mut self, id: &InstanceId) -> &mut Holder {
        self.holders
            .iter_mut()
            .find(|h| h.id == *id)
            .expect("a holder the database has is in the summary")
    }
}

fn state_from(value: &SqlValue) -> HolderState {
    match text(value).as_str() {
        "handed" => HolderState::Handed,
        "holding" => HolderState::Holding,
        other => panic!("stored holder state {other:?}"),
    }
}

pub(super) fn state_value(state: HolderState) -> SqlValue {
    SqlValue::Text(
        match state {
            HolderState::Handed => "handed",
            HolderState::Holding => "holding",
        }
        .into(),
    )
}

fn workflow_from(value: &SqlValue) -> Option<WorkflowName> {
    optional_text(value).map(|name| WorkflowName::new(name).expect("stored workflow name is valid"))
}

pub(super) fn workflow_value(workflow: Option<&WorkflowName>) -> SqlValue {
    workflow.map_or(SqlValue::Null, |w| SqlValue::Text(w.to_string()))
}

/// A turn column: NULL is [`Turn::Shared`] (every row from before v4).
fn turn_from(value: &SqlValue) -> Turn {
    optional_millis(value).map_or(Turn::Shared, Turn::Own)
}

pub(super) fn turn_value(turn: Turn) -> SqlValue {
    match turn {
        Turn::Shared => SqlValue::Null,
        Turn::Own(n) => millis_value(n),
    }
}

pub(super) fn holder_from_row(row: &[SqlValue]) -> Holder {
    Holder {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        state: state_from(&row[2]),
        workflow: workflow_from(&row[3]),
        enqueued_ms: optional_millis(&row[4]),
        turn: turn_from(&row[5]),
        fence: millis(&row[6]),
    }
}

pub(super) fn waiter_from_row(row: &[SqlValue]) -> Waiter {
    Waiter {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        input_hash: optional_text(&row[2])
            .map(|h| InputHash::parse("stored inputHash", &h).expect("stored hash is valid")),
        workflow: workflow_from(&row[3]),
        enqueued_ms: optional_millis(&row[4]),
        turn: turn_from(&row[5]),
    }
}

impl<E: SqlExec> KeyStore for SqlKeyStore<'_, E> {
    fn member(&self, id: &InstanceId) -> Member {
        let summary = self.summary();
        if let Some(holder) = summary.holders.iter().find(|h| h.id == *id) {
            return Member::Holder(holder.clone());
        }
        // Nobody waits and nobody was superseded: a stranger, with no read.
        if summary.counts.waiters == 0 && summary.none_superseded {
            return Member::Stranger;
        }
        drop(summary);
        let rows = self.sql.read(
            &format!(
                "SELECT {WAITER_COLUMNS_OF_W}, \
                 EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1 AND id = ?2) \
                 FROM (SELECT 1) \
                 LEFT JOIN coordinator_waiters w ON w.key = ?1 AND w.id = ?2"
            ),
            &[self.key(), Self::id_value(id)],
        );
        let row = &rows[0];
        if row[0] != SqlValue::Null {
            Member::Waiter(waiter_from_row(&row[..WAITER_WIDTH]))
        } else if integer(&row[WAITER_WIDTH]) != 0 {
            Member::Superseded
        } else {
            Member::Stranger
        }
    }

    fn limit(&self) -> u32 {
        self.counts().limit
    }

    fn set_limit(&mut self, limit: u32) {
        self.sql.write(
            "INSERT INTO coordinator_keys (key, holder_limit) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET holder_limit = excluded.holder_limit",
            &[self.key(), SqlValue::Integer(i64::from(limit))],
        );
        self.adjust(|s| s.counts.limit = limit);
    }

    fn fence(&self) -> u64 {
        self.counts().fence
    }

    fn next_turn(&mut self) -> u64 {
        let rows = self.sql.write(
            "INSERT INTO coordinator_keys (key, turns) VALUES (?1, 1) \
             ON CONFLICT(key) DO UPDATE SET turns = COALESCE(turns, 0) + 1 RETURNING turns",
            &[self.key()],
        );
        millis(&rows[0][0])
    }

    fn holder_count(&self) -> u32 {
        self.counts().holders
    }

    fn handed_count(&self) -> u32 {
        self.counts().handed
    }

    fn holders(&self) -> Vec<Holder> {
        self.summary().holders.clone()
    }

    fn holders_to_check(&self, n: u32) -> Vec<Holder> {
        // NULL (never checked) sorts first.
        let sql = if self.waiter_count() > 0 {
            format!(
                "SELECT {HOLDER_COLUMNS} FROM coordinator_holders \
                 WHERE key = ?1 ORDER BY checked_ms, seq LIMIT ?2"
            )
        } else {
            format!(
                "SELECT {HOLDER_COLUMNS} FROM coordinator_holders \
                 WHERE key = ?1 AND state = 'handed' ORDER BY checked_ms, seq LIMIT ?2"
            )
        };
        self.sql
            .read(&sql, &[self.key(), SqlValue::Integer(i64::from(n))])
            .iter()
            .map(|row| holder_from_row(row))
            .collect()
    }

    fn mark_checked(&mut self, id: &InstanceId, now_ms: u64) {
        self.sql.write(
            "UPDATE coordinator_holders SET checked_ms = ?3 WHERE key = ?1 AND id = ?2",
            &[self.key(), Self::id_value(id), millis_value(now_ms)],
        );
    }

    fn add_holder(&mut self, holder: &Holder) {
        assert!(
            holder.fence > self.fence(),
            "fence {} is not new",
            holder.fence
        );
        // The trigger coordinator_holders_fence raises the key's fence.
        self.sql.write(
            "INSERT INTO coordinator_holders \
             (key, seq, id, since_ms, state, workflow, enqueued_ms, turn, fence) \
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_holders WHERE key = ?1), \
             ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                self.key(),
                Self::id_value(&holder.id),
                millis_value(holder.since_ms),
                state_value(holder.state),
                workflow_value(holder.workflow.as_ref()),
                optional_millis_value(holder.enqueued_ms),
                turn_value(holder.turn),
                millis_value(holder.fence),
            ],
        );
        let handed = holder.state == HolderState::Handed;
        self.adjust(|s| {
            s.counts.fence = holder.fence;
            s.counts.holders += 1;
            s.counts.handed += u32::from(handed);
            s.holders.push(holder.clone());
        });
    }

    fn confirm_holder(&mut self, id: &InstanceId) {
        let changed = self.sql.write(
            "UPDATE coordinator_holders SET state = 'holding' \
             WHERE key = ?1 AND id = ?2 AND state = 'handed' RETURNING 1",
            &[self.key(), Self::id_value(id)],
        );
        if !changed.is_empty() {
            self.adjust(|s| {
                s.counts.handed -= 1;
                s.holder_mut(id).state = HolderState::Holding;
            });
        }
    }

    fn set_holder_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>) {
        self.sql.write(
            "UPDATE coordinator_holders SET workflow = ?3 WHERE key = ?1 AND id = ?2",
            &[self.key(), Self::id_value(id), workflow_value(workflow)],
        );
        self.adjust(|s| {
            if let Some(holder) = s.holders.iter_mut().find(|h| h.id == *id) {
                holder.workflow = workflow.cloned();
            }
        });
    }

    fn remove_holder(&mut self, id: &InstanceId) {
        let removed = self.sql.write(
            "DELETE FROM coordinator_holders WHERE key = ?1 AND id = ?2 RETURNING state",
            &[self.key(), Self::id_value(id)],
        );
        if let Some(row) = removed.first() {
            let handed = state_from(&row[0]) == HolderState::Handed;
            self.adjust(|s| {
                s.counts.holders -= 1;
                s.counts.handed -= u32::from(handed);
                s.holders.retain(|h| h.id != *id);
            });
        }
    }

    fn waiter_count(&self) -> u32 {
        self.counts().waiters
    }

    fn first_waiters(&self, n: u32) -> Vec<Waiter> {
        self.sql
            .read(
                &format!(
                    "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                 WHERE key = ?1 ORDER BY seq LIMIT ?2"
                ),
                &[self.key(), SqlValue::Integer(i64::from(n))],
            )
            .iter()
            .map(|row| waiter_from_row(row))
            .collect()
    }

    fn position(&self, id: &InstanceId) -> Option<u32> {
        // Counted on the (key, seq) index, up to the waiter's own row.
        let rows = self.sql.read(
            "SELECT COUNT(*) FROM coordinator_waiters WHERE key = ?1 AND seq <= \
             (SELECT seq FROM coordinator_waiters WHERE key = ?1 AND id = ?2)",
            &[self.key(), Self::id_value(id)],
        );
        let n = u32::try_from(integer(&rows[0][0])).expect("waiters are bounded");
        (n > 0).then_some(n)
    }

    fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter> {
        self.sql
            .read(
                &format!(
                    "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                 WHERE key = ?1 AND input_hash = ?2 ORDER BY seq LIMIT 1"
                ),
                &[self.key(), SqlValue::Text(hash.to_string())],
            )
            .first()
            .map(|row| waiter_from_row(row))
    }

    fn push_waiter(&mut self, waiter: &Waiter) {
        self.sql.write(
            "INSERT INTO coordinator_waiters \
             (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn) \
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_waiters WHERE key = ?1), \
             ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                self.key(),
                Self::id_value(&waiter.id),
                millis_value(waiter.since_ms),
                waiter
                    .input_hash
                    .as_ref()
                    .map_or(SqlValue::Null, |h| SqlValue::Text(h.to_string())),
                workflow_value(waiter.workflow.as_ref()),
                optional_millis_value(waiter.enqueued_ms),
                turn_value(waiter.turn),
            ],
        );
        self.adjust_waiter_count(1);
    }

    fn set_waiter_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>) {
        self.sql.write(
            "UPDATE coordinator_waiters SET workflow = ?3 WHERE key = ?1 AND id = ?2",
            &[self.key(), Self::id_value(id), workflow_value(workflow)],
        );
    }

    fn remove_waiter(&mut self, id: &InstanceId) {
        let removed = self.sql.write(
            "DELETE FROM coordinator_waiters WHERE key = ?1 AND id = ?2 RETURNING seq",
            &[self.key(), Self::id_value(id)],
        );
        if !removed.is_empty() {
            self.adjust_waiter_count(-1);
        }
    }

    fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<Waiter> {
        let keep_value = Self::id_value(keep);
        let dropped: Vec<Waiter> = self
            .sql
            .read(
                &format!(
                    "SELECT {WAITER_COLUMNS} FROM coordinator_waiters WHERE key = ?1 AND id <> ?2 \
                     ORDER BY seq LIMIT ?3"
                ),
                &[
                    self.key(),
                    keep_value.clone(),
                    SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
                ],
            )
            .iter()
            .map(|row| waiter_from_row(row))
            .collect();
        if dropped.is_empty() {
            return dropped;
        }
        // Remembered in queue order right after the newest remembered id,
        // with no gaps: the remembered seqs of a key are always one run, so
        // counting them and forgetting the oldest need only its two ends.
        // (A superseded id is never a waiter, so the insert cannot collide.)
        self.sql.write(
            "INSERT INTO coordinator_superseded (key, id, seq) \
             SELECT key, id, (SELECT COALESCE(MAX(seq), 0) FROM coordinator_superseded \
             WHERE key = ?1) + ROW_NUMBER() OVER (ORDER BY seq) \
             FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
            &[self.key(), keep_value.clone()],
        );
        self.sql.write(
            "DELETE FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
            &[self.key(), keep_value],
        );
        self.adjust_waiter_count(-(dropped.len() as i64));
        self.adjust(|s| s.none_superseded = false);
        dropped
    }

    fn superseded_count(&self) -> u32 {
        self.sql
            .read(
                "SELECT COALESCE((SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) \
             - (SELECT MIN(seq) FROM coordinator_superseded WHERE key = ?1) + 1, 0)",
                &[self.key()],
            )
            .first()
            .map(|row| u32::try_from(integer(&row[0])).expect("superseded count is bounded"))
            .unwrap_or(0)
    }

    fn forget_superseded_beyond(&mut self, keep: u32) {
        self.sql.write(
            "DELETE FROM coordinator_superseded WHERE key = ?1 AND seq <= \
             (SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) - ?2",
            &[self.key(), SqlValue::Integer(i64::from(keep))],
        );
    }
}
