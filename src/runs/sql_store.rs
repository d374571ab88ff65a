//! [`RunStore`] over SQLite: a row per run key and a row per kept event.
//!
//! Generic over the Coordinator's [`SqlExec`], so the very same statements
//! run in the Durable Object and natively under `rusqlite` in tests. Every
//! statement goes through the primary key of `runs` or `(key, seq)` of
//! `run_events` and carries a `LIMIT`: an append, a read and a prune touch
//! the rows they need, whatever the log holds.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed.

use super::input::{EventType, JsonText, Outcome};
use super::schema;
use super::state::{Claim, Event, Finished, Run, RunStore};
use crate::ident::InstanceId;
use crate::sql::{
    millis, millis_value, optional_text, optional_text_value, stored_id, text, Counted, SqlExec,
    SqlValue,
};

/// Brings a database to [`schema::LADDER`]'s current version; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    schema::LADDER.migrate(exec);
}

/// Keys whose record is due for deletion at `now_ms`, oldest first, at most `limit`.
pub fn keys_due(exec: &impl SqlExec, now_ms: u64, limit: u32) -> Vec<String> {
    exec.run(
        "SELECT key FROM runs WHERE delete_ms IS NOT NULL AND delete_ms <= ?1 \
         ORDER BY delete_ms LIMIT ?2",
        &[millis_value(now_ms), SqlValue::Integer(i64::from(limit))],
    )
    .iter()
    .map(|row| text(&row[0]))
    .collect()
}

/// The earliest deletion time of any key in the database: the retention alarm.
pub fn next_deletion_ms(exec: &impl SqlExec) -> Option<u64> {
    exec.run(
        "SELECT delete_ms FROM runs WHERE delete_ms IS NOT NULL ORDER BY delete_ms LIMIT 1",
        &[],
    )
    .first()
    .map(|row| millis(&row[0]))
}

/// One key's rows, read and written through `exec`. Counts the statements
/// it runs, so the shell can report storage work per operation.
pub struct SqlRunStore<'a, E: SqlExec> {
    sql: Counted<'a, E>,
    key: String,
}

impl<'a, E: SqlExec> SqlRunStore<'a, E> {
    pub fn new(exec: &'a E, key: &str) -> Self {
        SqlRunStore {
            sql: Counted::new(exec),
            key: key.to_owned(),
        }
    }

    /// Statements that only read, and statements that wrote, so far.
    pub fn work(&self) -> (u32, u32) {
        self.sql.work()
    }

    fn key(&self) -> SqlValue {
        SqlValue::Text(self.key.clone())
    }
}

fn event_from_row(row: &[SqlValue]) -> Event {
    Event {
        seq: millis(&row[0]),
        at_ms: millis(&row[1]),
        kind: EventType::parse("stored type", &text(&row[2])).expect("stored type is valid"),
        data: optional_text(&row[3]).map(JsonText::stored),
    }
}

impl<E: SqlExec> RunStore for SqlRunStore<'_, E> {
    fn run(&self) -> Run {
        let rows = self.sql.read(
            "SELECT claimant_id, claimant_workflow, claimed_ms, outcome, result, error, \
             finished_ms, delete_ms FROM runs WHERE key = ?1 AND claimant_id IS NOT NULL LIMIT 1",
            &[self.key()],
        );
        let Some(row) = rows.first() else {
            return Run::Unclaimed;
        };
        let claim = Claim {
            id: stored_id(&row[0]),
            workflow: optional_text(&row[1]),
            since_ms: millis(&row[2]),
        };
        let outcome = match optional_text(&row[3]).as_deref() {
            None => return Run::Running { claim },
            Some("complete") => Outcome::Complete {
                result: optional_text(&row[4]).map(JsonText::stored),
            },
            Some("failed") => Outcome::Failed {
                error: optional_text(&row[5]).unwrap_or_default(),
            },
            Some(other) => panic!("unknown stored outcome {other:?}"),
        };
        Run::Finished {
            claim,
            finished: Finished {
                outcome,
                at_ms: millis(&row[6]),
                delete_at_ms: millis(&row[7]),
            },
        }
    }

    fn claimant(&self) -> Option<InstanceId> {
        self.sql
            .read(
                "SELECT claimant_id FROM runs WHERE key = ?1 AND claimant_id IS NOT NULL LIMIT 1",
                &[self.key()],
            )
            .first()
            .map(|row| stored_id(&row[0]))
    }

    fn set_claim(&mut self, claim: &Claim) {
        self.sql.write(
            "INSERT INTO runs (key, claimant_id, claimant_workflow, claimed_ms) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET \
             claimant_id = excluded.claimant_id, claimant_workflow = excluded.claimant_workflow, \
             claimed_ms = excluded.claimed_ms",
            &[
                self.key(),
                SqlValue::Text(claim.id.to_string()),
                optional_text_value(claim.workflow.as_deref()),
                millis_value(claim.since_ms),
            ],
        );
    }

    fn set_finished(&mut self, finished: &Finished) {
        let (outcome, result, error) = match &finished.outcome {
            Outcome::Complete { result } => ("complete", result.as_ref().map(|r| r.as_str()), None),
            Outcome::Failed { error } => ("failed", None, Some(error.as_str())),
        };
        self.sql.write(
            "UPDATE runs SET outcome = ?2, result = ?3, error = ?4, finished_ms = ?5, \
             delete_ms = ?6 WHERE key = ?1",
            &[
                self.key(),
                SqlValue::Text(outcome.into()),
                optional_text_value(result),
                optional_text_value(error),
                millis_value(finished.at_ms),
                millis_value(finished.delete_at_ms),
            ],
        );
    }

    fn latest_seq(&self) -> u64 {
        self.sql
            .read(
                "SELECT latest_seq FROM runs WHERE key = ?1 LIMIT 1",
                &[self.key()],
            )
            .first()
            .map(|row| millis(&row[0]))
            .unwrap_or(0)
    }

    fn first_kept_seq(&self) -> Option<u64> {
        self.sql
            .read(
                "SELECT seq FROM run_events WHERE key = ?1 ORDER BY seq LIMIT 1",
                &[self.key()],
            )
            .first()
            .map(|row| millis(&row[0]))
    }

    fn push_event(&mut self, event: &Event) {
        self.sql.write(
            "INSERT INTO run_events (key, seq, at_ms, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                self.key(),
                millis_value(event.seq),
                millis_value(event.at_ms),
                SqlValue::Text(event.kind.to_string()),
                optional_text_value(event.data.as_ref().map(|d| d.as_str())),
            ],
        );
        self.sql.write(
            "INSERT INTO runs (key, latest_seq) VALUES (?1, ?2) \
             ON CONFLICT(key) DO UPDATE SET latest_seq = excluded.latest_seq",
            &[self.key(), millis_value(event.seq)],
        );
    }

    fn events_after(&self, after: u64, limit: u32) -> Vec<Event> {
        self.sql
            .read(
                "SELECT seq, at_ms, type, data FROM run_events WHERE key = ?1 AND seq > ?2 \
             ORDER BY seq LIMIT ?3",
                &[
                    self.key(),
                    millis_value(after),
                    SqlValue::Integer(i64::from(limit)),
                ],
            )
            .iter()
            .map(|row| event_from_row(row))
            .collect()
    }

    fn forget_events_through(&mut self, through: u64) {
        self.sql.write(
            "DELETE FROM run_events WHERE key = ?1 AND seq <= ?2",
            &[self.key(), millis_value(through)],
        );
    }

    fn delete_run(&mut self) {
        self.sql
            .write("DELETE FROM run_events WHERE key = ?1", &[self.key()]);
        self.sql
            .write("DELETE FROM runs WHERE key = ?1", &[self.key()]);
    }
}
