//! The Runs rows in SQLite: a row per run key and a row per kept event.
//! [`Rows`] reads what a decision needs, [`write()`] carries out a
//! transition's [`Write`]s in one exhaustive `match`.
//!
//! Generic over [`SqlExec`], so the very same statements run in the Durable
//! Object and natively under `rusqlite` in tests, and counted ([`Counted`]),
//! so the shell reports storage work per operation. Every statement goes
//! through the primary key of `runs` or `(key, seq)` of `run_events` and
//! carries a `LIMIT`: an append, a read and a prune touch the rows they
//! need, whatever the log holds.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed.

use super::decide::{Input, Write};
use super::input::{EventType, JsonText, Outcome};
use super::schema;
use super::state::{Claim, Event, EventsReply, Finished, Run, View};
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

fn key_value(key: &str) -> SqlValue {
    SqlValue::Text(key.to_owned())
}

/// One key's rows in SQL, as its decisions read them: one statement for
/// the record; for an append, the claimant and (only if the appender is
/// the claimant) the latest seq; for `events`, the log's ends and the
/// events asked for.
pub struct Rows<'a, E: SqlExec> {
    pub sql: &'a Counted<'a, E>,
    pub key: &'a str,
}

impl<E: SqlExec> super::state::Rows for Rows<'_, E> {
    fn record(&self) -> Run {
        record(self.sql, self.key)
    }
    fn appender(&self, appender: &InstanceId) -> (Option<InstanceId>, Option<u64>) {
        let claimant = claimant(self.sql, self.key);
        let latest_seq =
            (claimant.as_ref() == Some(appender)).then(|| latest_seq(self.sql, self.key));
        (claimant, latest_seq)
    }
    fn log(&self, after: u64, limit: u32) -> EventsReply {
        read_events(self.sql, self.key, after, limit)
    }
}

/// The view `input` reads ([`super::view`]), for the tests that compare
/// it with a transition's `state`.
pub fn load<E: SqlExec>(sql: &Counted<'_, E>, key: &str, input: &Input) -> View {
    super::call::view(&Rows { sql, key }, input)
}

/// The key's record, its log apart.
pub fn record<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Run {
    let rows = sql.read(
        "SELECT claimant_id, claimant_workflow, claimed_ms, outcome, result, error, \
         finished_ms, delete_ms FROM runs WHERE key = ?1 AND claimant_id IS NOT NULL LIMIT 1",
        &[key_value(key)],
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

/// The claimant alone, without reading an outcome of up to 1 MiB.
fn claimant<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Option<InstanceId> {
    sql.read(
        "SELECT claimant_id FROM runs WHERE key = ?1 AND claimant_id IS NOT NULL LIMIT 1",
        &[key_value(key)],
    )
    .first()
    .map(|row| stored_id(&row[0]))
}

/// The highest `seq` ever appended to the key (0: none), kept events or not.
fn latest_seq<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> u64 {
    sql.read(
        "SELECT latest_seq FROM runs WHERE key = ?1 LIMIT 1",
        &[key_value(key)],
    )
    .first()
    .map(|row| millis(&row[0]))
    .unwrap_or(0)
}

/// Events after `after`, at most `limit`, with the log's ends. The events
/// themselves are read only when there are some after `after`.
pub fn read_events<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    after: u64,
    limit: u32,
) -> EventsReply {
    let latest_seq = latest_seq(sql, key);
    let first_seq = sql
        .read(
            "SELECT seq FROM run_events WHERE key = ?1 ORDER BY seq LIMIT 1",
            &[key_value(key)],
        )
        .first()
        .map_or(latest_seq + 1, |row| millis(&row[0]));
    let events = if after >= latest_seq {
        Vec::new()
    } else {
        sql.read(
            "SELECT seq, at_ms, type, data FROM run_events WHERE key = ?1 AND seq > ?2 \
             ORDER BY seq LIMIT ?3",
            &[
                key_value(key),
                millis_value(after),
                SqlValue::Integer(i64::from(limit)),
            ],
        )
        .iter()
        .map(|row| event_from_row(row))
        .collect()
    };
    EventsReply {
        events,
        latest_seq,
        first_seq,
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

/// Carries out a transition's writes for `key`, in order. The caller
/// commits them together (one turn under the Durable Object's gate).
pub fn write<E: SqlExec>(sql: &Counted<'_, E>, key: &str, writes: &[Write]) {
    for write in writes {
        match write {
            Write::Claim(claim) => {
                sql.write(
                    "INSERT INTO runs (key, claimant_id, claimant_workflow, claimed_ms) \
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET \
                     claimant_id = excluded.claimant_id, \
                     claimant_workflow = excluded.claimant_workflow, \
                     claimed_ms = excluded.claimed_ms",
                    &[
                        key_value(key),
                        SqlValue::Text(claim.id.to_string()),
                        optional_text_value(claim.workflow.as_deref()),
                        millis_value(claim.since_ms),
                    ],
                );
            }
            Write::Finish(finished) => {
                let (outcome, result, error) = match &finished.outcome {
                    Outcome::Complete { result } => {
                        ("complete", result.as_ref().map(|r| r.as_str()), None)
                    }
                    Outcome::Failed { error } => ("failed", None, Some(error.as_str())),
                };
                sql.write(
                    "UPDATE runs SET outcome = ?2, result = ?3, error = ?4, finished_ms = ?5, \
                     delete_ms = ?6 WHERE key = ?1",
                    &[
                        key_value(key),
                        SqlValue::Text(outcome.into()),
                        optional_text_value(result),
                        optional_text_value(error),
                        millis_value(finished.at_ms),
                        millis_value(finished.delete_at_ms),
                    ],
                );
            }
            Write::Append(event) => {
                sql.write(
                    "INSERT INTO run_events (key, seq, at_ms, type, data) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    &[
                        key_value(key),
                        millis_value(event.seq),
                        millis_value(event.at_ms),
                        SqlValue::Text(event.kind.to_string()),
                        optional_text_value(event.data.as_ref().map(|d| d.as_str())),
                    ],
                );
                sql.write(
                    "INSERT INTO runs (key, latest_seq) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET latest_seq = excluded.latest_seq",
                    &[key_value(key), millis_value(event.seq)],
                );
            }
            Write::ForgetThrough(through) => {
                sql.write(
                    "DELETE FROM run_events WHERE key = ?1 AND seq <= ?2",
                    &[key_value(key), millis_value(*through)],
                );
            }
            Write::Delete => {
                sql.write("DELETE FROM run_events WHERE key = ?1", &[key_value(key)]);
                sql.write("DELETE FROM runs WHERE key = ?1", &[key_value(key)]);
            }
        }
    }
}
