//! A decision's [`Write`]s carried out on the rows, in one `match`.

use super::history;
use super::rows::{
    id_value, key_value, priority_value, state_value, tenant_value, turn_value, workflow_value,
};
use crate::coordinator::types::Write;
use crate::sql::{millis_value, optional_millis_value, Counted, SqlExec, SqlValue};
use crate::workflow::Status;

/// Carries out a transition's writes for `key`, in order, in one `match`.
/// The caller commits them together (one turn of the Durable Object).
pub fn write<E: SqlExec>(sql: &Counted<'_, E>, key: &str, writes: &[Write]) {
    for write in writes {
        match write {
            Write::SetLimit(limit) => {
                sql.write(
                    "INSERT INTO coordinator_keys (key, holder_limit) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET holder_limit = excluded.holder_limit",
                    &[key_value(key), SqlValue::Integer(i64::from(*limit))],
                );
            }
            Write::SetMaxWaiting(cap) => {
                sql.write(
                    "INSERT INTO coordinator_keys (key, max_waiting) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET max_waiting = excluded.max_waiting",
                    &[key_value(key), SqlValue::Integer(i64::from(*cap))],
                );
            }
            Write::SetLimitOverride(limit) => {
                sql.write(
                    "INSERT INTO coordinator_keys (key, limit_override) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET limit_override = excluded.limit_override",
                    &[
                        key_value(key),
                        limit.map_or(SqlValue::Null, |n| SqlValue::Integer(i64::from(n))),
                    ],
                );
            }
            Write::SetPaused(paused) => {
                let (since, reason) = match paused {
                    Some(p) => (
                        millis_value(p.since_ms),
                        p.reason.clone().map_or(SqlValue::Null, SqlValue::Text),
                    ),
                    None => (SqlValue::Null, SqlValue::Null),
                };
                sql.write(
                    "INSERT INTO coordinator_keys (key, paused_since_ms, paused_reason) \
                     VALUES (?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET \
                     paused_since_ms = excluded.paused_since_ms, \
                     paused_reason = excluded.paused_reason",
                    &[key_value(key), since, reason],
                );
            }
            Write::DrawTurn(n) => {
                sql.write(
                    "INSERT INTO coordinator_keys (key, turns) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET turns = excluded.turns",
                    &[key_value(key), millis_value(*n)],
                );
            }
            Write::AddHolder(holder) => {
                // One row and nothing else: the key's fence and grants take
                // it in when its hold ends (schema v12), and its fence is
                // its place in grant order (`seq`).
                sql.write(
                    "INSERT INTO coordinator_holders \
                     (key, seq, id, since_ms, state, workflow, enqueued_ms, turn, fence) \
                     VALUES (?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    &[
                        key_value(key),
                        id_value(&holder.id),
                        millis_value(holder.since_ms),
                        state_value(holder.state),
                        workflow_value(holder.workflow.as_ref()),
                        optional_millis_value(holder.enqueued_ms),
                        turn_value(holder.turn),
                        millis_value(holder.fence),
                    ],
                );
            }
            Write::ConfirmHolder(id) => {
                sql.write(
                    "UPDATE coordinator_holders SET state = 'holding' \
                     WHERE key = ?1 AND id = ?2 AND state = 'handed'",
                    &[key_value(key), id_value(id)],
                );
            }
            Write::CancelHolder(id) => {
                sql.write(
                    "UPDATE coordinator_holders SET cancelling = 1 WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id)],
                );
            }
            Write::SetHolderWorkflow(id, workflow) => {
                sql.write(
                    "UPDATE coordinator_holders SET workflow = ?3 WHERE key = ?1 AND id = ?2",
                    &[
                        key_value(key),
                        id_value(id),
                        workflow_value(workflow.as_ref()),
                    ],
                );
            }
            // A finished hold is stamped: the trigger coordinator_holders_ended
            // keeps its length and deletes the row, in this one statement.
            Write::RemoveHolder(id, Some(ended_ms)) => {
                sql.write(
                    "UPDATE coordinator_holders SET ended_ms = ?3 WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id), millis_value(*ended_ms)],
                );
            }
            Write::RemoveHolder(id, None) => {
                sql.write(
                    "DELETE FROM coordinator_holders WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id)],
                );
            }
            Write::Serve {
                priority,
                tenant,
                fence,
            } => {
                // The tenant's row may be gone (its last waiter just left,
                // never served before): served now, it is kept, idle.
                // Tenants with no waiter served more than
                // IDLE_TENANT_KEPT_GRANTS grants ago are forgotten by the
                // triggers on `served` (schema v16): the start of the idle
                // index, one row per grant at most.
                sql.write(
                    "INSERT INTO coordinator_tenants (key, priority, tenant, waiters, served) \
                     VALUES (?1, ?2, ?3, 0, ?4) \
                     ON CONFLICT (key, priority, tenant) DO UPDATE SET served = excluded.served",
                    &[
                        key_value(key),
                        priority_value(*priority),
                        tenant_value(tenant.as_ref()),
                        millis_value(*fence),
                    ],
                );
            }
            Write::MarkChecked(id, now_ms, answer) => {
                // §10a: a failed check keeps the start of the failures, if
                // the last one failed too; any other answer ends them.
                sql.write(
                    "UPDATE coordinator_holders SET checked_ms = ?3, check_answer = ?4, \
                     check_failed_ms = CASE WHEN ?5 THEN COALESCE(check_failed_ms, ?3) END \
                     WHERE key = ?1 AND id = ?2",
                    &[
                        key_value(key),
                        id_value(id),
                        millis_value(*now_ms),
                        SqlValue::Text(answer.name().to_owned()),
                        SqlValue::Integer(i64::from(*answer == Status::Failed)),
                    ],
                );
            }
            Write::PushWaiter(waiter) => {
                // The trigger coordinator_waiters_joined counts it in its
                // tenant and in the key's waiter count.
                sql.write(
                    "INSERT INTO coordinator_waiters \
                     (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, \
                     priority, tenant) \
                     VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_waiters \
                     WHERE key = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    &[
                        key_value(key),
                        id_value(&waiter.id),
                        millis_value(waiter.since_ms),
                        waiter
                            .input_hash
                            .as_ref()
                            .map_or(SqlValue::Null, |h| SqlValue::Text(h.to_string())),
                        workflow_value(waiter.workflow.as_ref()),
                        optional_millis_value(waiter.enqueued_ms),
                        turn_value(waiter.turn),
                        priority_value(waiter.priority),
                        tenant_value(waiter.tenant.as_ref()),
                    ],
                );
            }
            Write::SetWaiterWorkflow(id, workflow) => {
                sql.write(
                    "UPDATE coordinator_waiters SET workflow = ?3 WHERE key = ?1 AND id = ?2",
                    &[
                        key_value(key),
                        id_value(id),
                        workflow_value(workflow.as_ref()),
                    ],
                );
            }
            // The trigger coordinator_waiters_left counts it out.
            Write::RemoveWaiter(id) => {
                sql.write(
                    "DELETE FROM coordinator_waiters WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id)],
                );
            }
            Write::SupersedeAllExcept(keep, _) => {
                // Remembered in queue order right after the newest remembered
                // id, with no gaps (see `supersede_waiters_except`), each
                // owed its termination (`super::terminations`).
                sql.write(
                    "INSERT INTO coordinator_superseded (key, id, seq, workflow, terminate_owed) \
                     SELECT key, id, (SELECT COALESCE(MAX(seq), 0) FROM coordinator_superseded \
                     WHERE key = ?1) + ROW_NUMBER() OVER (ORDER BY seq), workflow, 1 \
                     FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
                    &[key_value(key), id_value(keep)],
                );
                sql.write(
                    "DELETE FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
                    &[key_value(key), id_value(keep)],
                );
            }
            Write::ForgetSupersededBeyond(keep) => {
                sql.write(
                    "DELETE FROM coordinator_superseded WHERE key = ?1 AND seq <= \
                     (SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) - ?2",
                    &[key_value(key), SqlValue::Integer(i64::from(*keep))],
                );
            }
            // The history's rows (contract §10): `history` holds their SQL.
            Write::History(write) => history::write(sql, key, write),
        }
    }
}
