//! What a supersede still owes: the termination of each waiter it dropped.
//!
//! `Write::SupersedeAllExcept` marks every id it remembers as superseded
//! `terminate_owed`, in the decision's own commit, with the Workflow
//! binding it is reached through. The enqueue terminates them at once, best
//! effort; the holder-check alarm works through the marks
//! ([`terminations_owed`]) and clears each once the instance is known to be
//! over ([`terminated`]), so a termination that threw, never answered, or
//! was cut off by a reset of the object still happens. Without it a
//! superseded waiter would learn it was superseded only when its own wait
//! for a turn event timed out.

use super::rows::{id_value, key_value};
use crate::ident::InstanceId;
use crate::sql::{optional_text, stored_id, text, Counted, SqlExec, SqlValue};

/// A superseded instance whose termination is owed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    pub key: String,
    pub id: InstanceId,
    /// The binding it is reached through; `None`: the configured default.
    pub workflow: Option<String>,
}

/// At most `limit` terminations owed, over every key.
pub fn terminations_owed<E: SqlExec>(sql: &Counted<'_, E>, limit: u32) -> Vec<Owed> {
    sql.read(
        "SELECT key, id, workflow FROM coordinator_superseded WHERE terminate_owed = 1 LIMIT ?1",
        &[SqlValue::Integer(i64::from(limit))],
    )
    .iter()
    .map(|row| Owed {
        key: text(&row[0]),
        id: stored_id(&row[1]),
        workflow: optional_text(&row[2]),
    })
    .collect()
}

/// `id` of `key` is known to be over (terminated, ended or never
/// created): nothing more is owed.
pub fn terminated<E: SqlExec>(sql: &Counted<'_, E>, key: &str, id: &InstanceId) {
    sql.write(
        "UPDATE coordinator_superseded SET terminate_owed = 0 \
         WHERE key = ?1 AND id = ?2 AND terminate_owed = 1",
        &[key_value(key), id_value(id)],
    );
}
