//! A decision's [`Write`]s carried out on the rows: [`write`] matches each
//! to its statement in one `match`, and the statements are grouped by the
//! table they change (the key's row, its holders, its tenants, its waiters
//! and the superseded ids).

use super::history;
use super::rows::{
    id_value, key_value, priority_value, state_value, tenant_value, turn_value, workflow_value,
};
use crate::coordinator::types::history::{HoldEnd, Tally};
use crate::coordinator::types::{Holder, Layout, Paused, Waiter, Write};
use crate::ident::{Ident, InstanceId};
use crate::sql::{millis_value, optional_millis_value, Counted, SqlExec, SqlValue};
use crate::workflow::Status;

/// Carries out a transition's writes for `key`, in order, in one `match`.
/// The caller commits them together (one turn of the Durable Object).
pub fn write<E: SqlExec>(sql: &Counted<'_, E>, key: &str, writes: &[Write]) {
    let int = |n: u32| SqlValue::Integer(i64::from(n));
    for write in writes {
        match write {
            Write::SetLimit(limit) => set_key(sql, key, keys::LIMIT, int(*limit)),
            Write::SetMaxWaiting(cap) => set_key(sql, key, keys::MAX_WAITING, int(*cap)),
            Write::SetLimitOverride(limit) => {
                let value = limit.map_or(SqlValue::Null, int);
                set_key(sql, key, keys::LIMIT_OVERRIDE, value);
            }
            Write::SetPaused(paused) => set_paused(sql, key, paused.as_ref()),
            Write::DrawTurn(n) => set_key(sql, key, keys::TURNS, millis_value(*n)),
            Write::AddHolder(holder) => add_holder(sql, key, holder),
            Write::ConfirmHolder(id) => on_member(sql, key, id, holders::CONFIRM, None),
            Write::CancelHolder(id) => on_member(sql, key, id, holders::CANCEL, None),
            Write::SetHolderWorkflow(id, workflow) => {
                let value = workflow_value(workflow.as_ref());
                on_member(sql, key, id, holders::SET_WORKFLOW, Some(value));
            }
            // A finished hold is stamped: the trigger coordinator_holders_ended
            // keeps its length, adds the tally it carries to the key row
            // (schema v17) and deletes the row, in this one statement.
            Write::RemoveHolder(id, Some(end)) => end_hold(sql, key, id, end),
            Write::RemoveHolder(id, None) => on_member(sql, key, id, holders::DELETE, None),
            Write::Serve {
                priority,
                tenant,
                fence,
            } => serve(sql, key, *priority, tenant.as_ref(), *fence),
            Write::MarkChecked(id, now_ms, answer) => mark_checked(sql, key, id, *now_ms, *answer),
            Write::PushWaiter(waiter, layout) => push_waiter(sql, key, waiter, *layout),
            Write::Spread => spread(sql, key),
            Write::SetWaiterWorkflow(id, workflow) => {
                let value = workflow_value(workflow.as_ref());
                on_member(sql, key, id, waiters::SET_WORKFLOW, Some(value));
            }
            // The trigger coordinator_waiters_left counts it out.
            Write::RemoveWaiter(id) => on_member(sql, key, id, waiters::DELETE, None),
            Write::SupersedeAllExcept(keep, _) => supersede_all_except(sql, key, keep),
            Write::ForgetSupersededBeyond(keep) => {
                sql.write(
                    superseded::FORGET_BEYOND,
                    &[key_value(key), SqlValue::Integer(i64::from(*keep))],
                );
            }
            // The history's rows (contract §10): `history` holds their SQL.
            Write::History(write) => history::write(sql, key, write),
        }
    }
}

/// The key's row (`coordinator_keys`): each statement sets one column,
/// `?2`, creating the row if need be.
mod keys {
    pub const LIMIT: &str = "INSERT INTO coordinator_keys (key, holder_limit) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET holder_limit = excluded.holder_limit";
    pub const MAX_WAITING: &str =
        "INSERT INTO coordinator_keys (key, max_waiting) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET max_waiting = excluded.max_waiting";
    pub const LIMIT_OVERRIDE: &str =
        "INSERT INTO coordinator_keys (key, limit_override) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET limit_override = excluded.limit_override";
    pub const TURNS: &str = "INSERT INTO coordinator_keys (key, turns) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET turns = excluded.turns";
    pub const PAUSED: &str = "INSERT INTO coordinator_keys (key, paused_since_ms, paused_reason) \
         VALUES (?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET \
         paused_since_ms = excluded.paused_since_ms, \
         paused_reason = excluded.paused_reason";
}

/// The holders' rows (`coordinator_holders`): each statement changes the
/// row of `?2`, with `?3` its value where it takes one.
mod holders {
    pub const CONFIRM: &str = "UPDATE coordinator_holders SET state = 'holding' \
         WHERE key = ?1 AND id = ?2 AND state = 'handed'";
    pub const CANCEL: &str =
        "UPDATE coordinator_holders SET cancelling = 1 WHERE key = ?1 AND id = ?2";
    pub const SET_WORKFLOW: &str =
        "UPDATE coordinator_holders SET workflow = ?3 WHERE key = ?1 AND id = ?2";
    pub const END: &str = "UPDATE coordinator_holders SET ended_ms = ?3 WHERE key = ?1 AND id = ?2";
    /// [`END`] with the decision's tally (`Tally`'s fields, `?4`..`?9`),
    /// which the trigger adds to the key row.
    pub const END_TALLIED: &str = "UPDATE coordinator_holders SET ended_ms = ?3, \
         tally_hand_offs = ?4, tally_dead_holders = ?5, tally_coalesced = ?6, \
         tally_dead_at_ms = ?7, tally_report_owed = ?8, tally_cancelled = ?9 \
         WHERE key = ?1 AND id = ?2";
    pub const DELETE: &str = "DELETE FROM coordinator_holders WHERE key = ?1 AND id = ?2";
}

/// The waiters' rows (`coordinator_waiters`), as [`holders`]'.
mod waiters {
    pub const SET_WORKFLOW: &str =
        "UPDATE coordinator_waiters SET workflow = ?3 WHERE key = ?1 AND id = ?2";
    pub const DELETE: &str = "DELETE FROM coordinator_waiters WHERE key = ?1 AND id = ?2";
    pub const JOIN_SOLE: &str = "INSERT INTO coordinator_waiters \
         (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant, sole) \
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_waiters \
         WHERE key = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1)";
    pub const JOIN_SHARED: &str = "INSERT INTO coordinator_waiters_shared \
         (key, seq, id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant) \
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_waiters \
         WHERE key = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
}

/// The superseded ids (`coordinator_superseded`).
mod superseded {
    pub const FORGET_BEYOND: &str = "DELETE FROM coordinator_superseded WHERE key = ?1 AND seq <= \
         (SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) - ?2";
}

/// One column of the key's row (a statement of [`keys`]) set to `value`.
fn set_key<E: SqlExec>(sql: &Counted<'_, E>, key: &str, statement: &str, value: SqlValue) {
    sql.write(statement, &[key_value(key), value]);
}

/// §11: the key paused (since when, and why), or not.
fn set_paused<E: SqlExec>(sql: &Counted<'_, E>, key: &str, paused: Option<&Paused>) {
    let (since, reason) = match paused {
        Some(p) => (
            millis_value(p.since_ms),
            p.reason.clone().map_or(SqlValue::Null, SqlValue::Text),
        ),
        None => (SqlValue::Null, SqlValue::Null),
    };
    sql.write(keys::PAUSED, &[key_value(key), since, reason]);
}

/// A statement of [`holders`] or [`waiters`] on `id`'s row, with its
/// value if it takes one.
fn on_member<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    id: &InstanceId,
    statement: &str,
    value: Option<SqlValue>,
) {
    match value {
        Some(value) => sql.write(statement, &[key_value(key), id_value(id), value]),
        None => sql.write(statement, &[key_value(key), id_value(id)]),
    }
}

/// A finished hold stamped, with the decision's tally if it carries one
/// (a hold that carries none binds no more than its time).
fn end_hold<E: SqlExec>(sql: &Counted<'_, E>, key: &str, id: &InstanceId, end: &HoldEnd) {
    let t = &end.tally;
    if *t == Tally::default() {
        return on_member(sql, key, id, holders::END, Some(millis_value(end.at_ms)));
    }
    let int = |n: u32| SqlValue::Integer(i64::from(n));
    sql.write(
        holders::END_TALLIED,
        &[
            key_value(key),
            id_value(id),
            millis_value(end.at_ms),
            int(t.hand_offs),
            int(t.dead_holders),
            int(t.coalesced),
            optional_millis_value(t.dead_at_ms),
            SqlValue::Integer(i64::from(t.report_owed)),
            int(t.cancelled),
        ],
    );
}

/// A holder behind the others.
fn add_holder<E: SqlExec>(sql: &Counted<'_, E>, key: &str, holder: &Holder) {
    // One row and nothing else: the key's fence and grants take it in
    // when its hold ends (schema v12), its fence is its place in grant
    // order (`seq`), and it keeps how long it waited (schema v17).
    sql.write(
        "INSERT INTO coordinator_holders \
         (key, seq, id, since_ms, state, workflow, enqueued_ms, turn, fence, waited_ms) \
         VALUES (?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &[
            key_value(key),
            id_value(&holder.id),
            millis_value(holder.since_ms),
            state_value(holder.state),
            workflow_value(holder.workflow.as_ref()),
            optional_millis_value(holder.enqueued_ms),
            turn_value(holder.turn),
            millis_value(holder.fence),
            millis_value(holder.waited_ms),
        ],
    );
}

/// §10a: the holder's last check; a failed check keeps the start of the
/// failures, if the last one failed too; any other answer ends them.
fn mark_checked<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    id: &InstanceId,
    now_ms: u64,
    answer: Status,
) {
    sql.write(
        "UPDATE coordinator_holders SET checked_ms = ?3, check_answer = ?4, \
         check_failed_ms = CASE WHEN ?5 THEN COALESCE(check_failed_ms, ?3) END \
         WHERE key = ?1 AND id = ?2",
        &[
            key_value(key),
            id_value(id),
            millis_value(now_ms),
            SqlValue::Text(answer.name().to_owned()),
            SqlValue::Integer(i64::from(answer == Status::Failed)),
        ],
    );
}

/// §1c: a grant (of `fence`) served this priority and tenant, which goes
/// to the back of its round.
fn serve<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    priority: i8,
    tenant: Option<&Ident>,
    fence: u64,
) {
    // The tenant's row may be gone (its last waiter just left, never
    // served before): served now, it is kept, idle. Tenants with no waiter
    // served more than IDLE_TENANT_KEPT_GRANTS grants ago are forgotten by
    // the triggers on `served` (schema v16): the start of the idle index,
    // one row per grant at most.
    sql.write(
        "INSERT INTO coordinator_tenants (key, priority, tenant, waiters, served) \
         VALUES (?1, ?2, ?3, 0, ?4) \
         ON CONFLICT (key, priority, tenant) DO UPDATE SET served = excluded.served",
        &[
            key_value(key),
            priority_value(priority),
            tenant_value(tenant),
            millis_value(fence),
        ],
    );
}

/// A waiter behind every other, kept in `layout`.
fn push_waiter<E: SqlExec>(sql: &Counted<'_, E>, key: &str, waiter: &Waiter, layout: Layout) {
    // The trigger coordinator_waiters_joined counts it in the key (and
    // names the key's share while it is sole); a shared waiter joins
    // through the view, whose trigger counts it in its tenant's turn too
    // (schema v17).
    let statement = match layout {
        Layout::Sole => waiters::JOIN_SOLE,
        Layout::Shared => waiters::JOIN_SHARED,
    };
    sql.write(
        statement,
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

/// The key's waiters, kept in `Layout::Sole`, move to `Layout::Shared`:
/// their share's row counts them, from their earliest, and each row enters
/// the share index with its seq unchanged (no one changes place).
fn spread<E: SqlExec>(sql: &Counted<'_, E>, key: &str) {
    sql.write(
        "INSERT INTO coordinator_tenants (key, priority, tenant, waiters, first_seq) \
         SELECT key, sole_priority, sole_tenant, waiter_count, \
         (SELECT MIN(seq) FROM coordinator_waiters WHERE key = ?1) \
         FROM coordinator_keys WHERE key = ?1 AND sole_priority IS NOT NULL \
         ON CONFLICT (key, priority, tenant) DO UPDATE SET \
         waiters = excluded.waiters, first_seq = excluded.first_seq",
        &[key_value(key)],
    );
    sql.write(
        "UPDATE coordinator_waiters SET sole = 0 WHERE key = ?1 AND sole = 1",
        &[key_value(key)],
    );
    sql.write(
        "UPDATE coordinator_keys SET sole_priority = NULL, sole_tenant = NULL WHERE key = ?1",
        &[key_value(key)],
    );
}

/// Every waiter but `keep` is remembered as superseded and leaves.
fn supersede_all_except<E: SqlExec>(sql: &Counted<'_, E>, key: &str, keep: &InstanceId) {
    // Remembered in queue order right after the newest remembered id, with
    // no gaps (see `supersede_waiters_except`), each owed its termination
    // (`super::terminations`).
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
