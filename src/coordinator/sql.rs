//! The Coordinator's rows as its one decision reads and writes them: the
//! targeted [`View`] an input needs ([`load`]) and its [`Write`]s carried
//! out in one `match` ([`write`]).
//!
//! Generic over [`SqlExec`], so the very same statements run in the Durable
//! Object (its synchronous `storage.sql`) and natively under `rusqlite` in
//! tests. Every query is bounded by an index and a `LIMIT`; no statement
//! rewrites the queue, so each decision's cost is flat in its length. The
//! object is the only writer of its database, so the shell keeps a key's
//! [`Summary`] from one decision to the next: an uncontended acquire and
//! release then read nothing at all, and each writes only its holder row.
//!
//! A failing statement means the schema and this code disagree, a broken
//! invariant: it panics, and the object restarts from what was committed
//! (with no summary: it is memory, reloaded by the next decision).

use super::schema;
use super::state::Turn;
use super::state::{Holder, HolderState, Liveness, Member, Waiter};
use super::transition::{acquire_waits, front_needed, needs_place, Input, Summary, View, Write};
use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};
use crate::limits::{
    HOLDERS_PER_KEY_MAX, HOLDER_CHECKS_PER_TICK_MAX, IDLE_TENANT_KEPT_GRANTS, WAITERS_PER_KEY_MAX,
};
use crate::sql::{
    integer, millis, millis_value, optional_millis, optional_millis_value, optional_text,
    stored_id, text, Counted, SqlExec, SqlValue,
};

/// Brings a database to [`schema::LADDER`]'s current version; a no-op when it is there.
pub fn migrate(exec: &impl SqlExec) {
    schema::LADDER.migrate(exec);
}

/// The columns a waiter is read with, in [`waiter_from_row`]'s order.
const WAITER_COLUMNS: &str =
    "id, since_ms, input_hash, workflow, enqueued_ms, turn, priority, tenant";
/// [`WAITER_COLUMNS`] of the table aliased `w`.
const WAITER_COLUMNS_OF_W: &str =
    "w.id, w.since_ms, w.input_hash, w.workflow, w.enqueued_ms, w.turn, w.priority, w.tenant";
/// How many columns [`waiter_from_row`] reads.
const WAITER_WIDTH: usize = 8;
/// The columns a holder is read with, in [`holder_from_row`]'s order.
const HOLDER_COLUMNS: &str = "id, since_ms, state, workflow, enqueued_ms, turn, fence";
/// [`HOLDER_COLUMNS`] of the table aliased `h`.
const HOLDER_COLUMNS_OF_H: &str =
    "h.id, h.since_ms, h.state, h.workflow, h.enqueued_ms, h.turn, h.fence";
/// How many columns [`holder_from_row`] reads.
const HOLDER_WIDTH: usize = 7;

fn state_from(value: &SqlValue) -> HolderState {
    match text(value).as_str() {
        "handed" => HolderState::Handed,
        "holding" => HolderState::Holding,
        other => panic!("stored holder state {other:?}"),
    }
}

fn state_value(state: HolderState) -> SqlValue {
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

fn workflow_value(workflow: Option<&WorkflowName>) -> SqlValue {
    workflow.map_or(SqlValue::Null, |w| SqlValue::Text(w.to_string()))
}

/// A turn column: NULL is [`Turn::Shared`] (every row from before v4).
fn turn_from(value: &SqlValue) -> Turn {
    optional_millis(value).map_or(Turn::Shared, Turn::Own)
}

fn turn_value(turn: Turn) -> SqlValue {
    match turn {
        Turn::Shared => SqlValue::Null,
        Turn::Own(n) => millis_value(n),
    }
}

fn holder_from_row(row: &[SqlValue]) -> Holder {
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

fn waiter_from_row(row: &[SqlValue]) -> Waiter {
    Waiter {
        id: stored_id(&row[0]),
        since_ms: millis(&row[1]),
        input_hash: optional_text(&row[2])
            .map(|h| InputHash::parse("stored inputHash", &h).expect("stored hash is valid")),
        workflow: workflow_from(&row[3]),
        enqueued_ms: optional_millis(&row[4]),
        turn: turn_from(&row[5]),
        priority: priority_from(&row[6]),
        tenant: tenant_from(&row[7]),
    }
}

fn priority_from(value: &SqlValue) -> i8 {
    i8::try_from(integer(value)).expect("stored priority is in range")
}

fn priority_value(priority: i8) -> SqlValue {
    SqlValue::Integer(i64::from(priority))
}

/// A tenant column: '' is the shared tenant (a tenant is never empty).
fn tenant_from(value: &SqlValue) -> Option<Ident> {
    match text(value) {
        shared if shared.is_empty() => None,
        name => Some(Ident::new(name).expect("stored tenant is valid")),
    }
}

fn tenant_value(tenant: Option<&Ident>) -> SqlValue {
    SqlValue::Text(tenant.map_or("", Ident::as_str).to_owned())
}

/// The key row's hold times: a JSON array of integers, oldest first.
fn hold_times_from(value: &SqlValue) -> Vec<u64> {
    let Some(list) = optional_text(value) else {
        return Vec::new();
    };
    list.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.trim().parse().expect("stored hold times are integers"))
        .collect()
}

/// The key's summary: one read (the key row, whether any superseded id is
/// remembered, every holder).
pub fn load_summary<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> Summary {
    let rows = sql.read(
        &format!(
            "SELECT k.holder_limit, k.waiter_count, \
             NOT EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1), \
             k.fence, k.turns, k.hold_times_ms, {HOLDER_COLUMNS_OF_H}, h.seq \
             FROM (SELECT 1) \
             LEFT JOIN coordinator_keys k ON k.key = ?1 \
             LEFT JOIN coordinator_holders h ON h.key = ?1 LIMIT ?2"
        ),
        &[
            key_value(key),
            SqlValue::Integer(i64::from(HOLDERS_PER_KEY_MAX)),
        ],
    );
    /// Where the holder's columns start: after the key's six.
    const H: usize = 6;
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
    Summary {
        limit: match &first[0] {
            SqlValue::Null => 1,
            value => count(value),
        },
        waiters: match &first[1] {
            SqlValue::Null => 0,
            value => count(value),
        },
        none_superseded: integer(&first[2]) != 0,
        fence: optional_millis(&first[3]).unwrap_or(0),
        turns: optional_millis(&first[4]).unwrap_or(0),
        hold_times_ms: hold_times_from(&first[5]),
        holders: held.into_iter().map(|(_, holder)| holder).collect(),
    }
}

fn key_value(key: &str) -> SqlValue {
    SqlValue::Text(key.to_owned())
}

fn id_value(id: &InstanceId) -> SqlValue {
    SqlValue::Text(id.to_string())
}

/// `id`'s place: from the summary when it holds or nobody waits and
/// nobody was superseded, else one read.
fn load_member<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: &Summary,
    id: &InstanceId,
) -> Member {
    if let Some(holder) = summary.holders.iter().find(|h| h.id == *id) {
        return Member::Holder(holder.clone());
    }
    if summary.waiters == 0 && summary.none_superseded {
        return Member::Stranger;
    }
    let rows = sql.read(
        &format!(
            "SELECT {WAITER_COLUMNS_OF_W}, \
             EXISTS (SELECT 1 FROM coordinator_superseded WHERE key = ?1 AND id = ?2) \
             FROM (SELECT 1) \
             LEFT JOIN coordinator_waiters w ON w.key = ?1 AND w.id = ?2"
        ),
        &[key_value(key), id_value(id)],
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

fn read_waiters<E: SqlExec>(
    sql: &Counted<'_, E>,
    statement: &str,
    params: &[SqlValue],
) -> Vec<Waiter> {
    sql.read(statement, params)
        .iter()
        .map(|row| waiter_from_row(row))
        .collect()
}

/// Up to `n` holders due a check, least recently checked first, with when
/// each was last checked: every holder, or only the handed ones.
fn load_to_check<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    n: u32,
    everyone: bool,
) -> Vec<(Holder, Option<u64>)> {
    let filter = if everyone {
        ""
    } else {
        " AND state = 'handed'"
    };
    sql.read(
        &format!(
            "SELECT {HOLDER_COLUMNS}, checked_ms FROM coordinator_holders \
             WHERE key = ?1{filter} ORDER BY checked_ms, seq LIMIT ?2"
        ),
        &[key_value(key), SqlValue::Integer(i64::from(n))],
    )
    .iter()
    .map(|row| {
        (
            holder_from_row(&row[..HOLDER_WIDTH]),
            optional_millis(&row[HOLDER_WIDTH]),
        )
    })
    .collect()
}

/// The view `input` decides on, from `summary` (the one memory kept, or
/// `None` to read it): the caller's place, the front of the queue its
/// decision may hand slots to, and only what its path then needs.
pub fn load<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    summary: Option<Summary>,
    input: &Input,
) -> View {
    let summary = summary.unwrap_or_else(|| load_summary(sql, key));
    let named = match input {
        Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. } => Some(&r.id),
        Input::Acquire(r) | Input::AcquireChecked { request: r, .. } => Some(&r.id),
        Input::Release(id) => Some(id),
        Input::Woken { .. } | Input::Tick | Input::TickChecked { .. } => None,
    };
    let member = named.map(|id| load_member(sql, key, &summary, id));
    let n = front_needed(&summary, input);
    let front = if n > 0 {
        load_front(sql, key, n)
    } else {
        Vec::new()
    };
    let mut view = View {
        summary,
        member,
        front,
        ..View::default()
    };
    match input {
        Input::Acquire(request) | Input::AcquireChecked { request, .. } => {
            let checked = matches!(input, Input::AcquireChecked { .. });
            if needs_place(&view, request, checked) {
                let (priority, tenant) = match &view.member {
                    Some(Member::Waiter(w)) => (w.priority, w.tenant.clone()),
                    _ => (request.options.priority, request.options.tenant.clone()),
                };
                view.position = Some(load_place(sql, key, &request.id, priority, tenant.as_ref()));
            }
            if !checked && acquire_waits(&view, request) {
                view.to_check = load_to_check(sql, key, 1, true);
            }
        }
        Input::Tick => {
            let s = &view.summary;
            let handed = s.holders.iter().any(|h| h.state == HolderState::Handed);
            if !s.holders.is_empty() && (s.waiters > 0 || handed) {
                view.to_check = load_to_check(sql, key, HOLDER_CHECKS_PER_TICK_MAX, s.waiters > 0);
            }
        }
        Input::Enqueue(request) | Input::EnqueueChecked { request, .. } => {
            let settled = matches!(view.member, Some(Member::Holder(_) | Member::Superseded));
            if request.supersedes && !settled && view.summary.waiters > 0 {
                if let Some(hash) = &request.input_hash {
                    view.candidate = read_waiters(
                        sql,
                        &format!(
                            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                             WHERE key = ?1 AND input_hash = ?2 ORDER BY seq LIMIT 1"
                        ),
                        &[key_value(key), SqlValue::Text(hash.to_string())],
                    )
                    .pop();
                }
                let coalescing = match input {
                    Input::Enqueue(_) => {
                        view.candidate.as_ref().is_some_and(|c| c.id != request.id)
                    }
                    Input::EnqueueChecked {
                        candidate,
                        liveness,
                        ..
                    } => {
                        *liveness == Liveness::Alive
                            && view
                                .candidate
                                .as_ref()
                                .is_some_and(|c| c.id == candidate.id)
                    }
                    _ => false,
                };
                if !coalescing {
                    view.others = read_waiters(
                        sql,
                        &format!(
                            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                             WHERE key = ?1 AND id <> ?2 ORDER BY seq LIMIT ?3"
                        ),
                        &[
                            key_value(key),
                            id_value(&request.id),
                            SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX)),
                        ],
                    );
                }
            }
        }
        Input::Release(_) | Input::Woken { .. } | Input::TickChecked { .. } => {}
    }
    view
}

/// A tenant's turn, as `coordinator_tenants_turns` orders them, with its
/// earliest waiter.
struct Turn1 {
    priority: i8,
    tenant: Option<Ident>,
    waiters: u32,
    first_seq: i64,
    first: Waiter,
}

/// Which of the tenants in `turns` (in turn order) give the first `n`
/// hand-offs, as (index in `turns`, round): within the highest priority,
/// round 0 takes each tenant's earliest waiter in turn order, round 1 each
/// next one of those with two or more, and so on; then the next priority.
/// Serving a tenant moves it to the back of its round, behind the others
/// of this one, so the rounds repeat the same order.
fn rounds(turns: &[(i8, u32)], n: usize) -> Vec<(usize, u32)> {
    let mut picks = Vec::with_capacity(n);
    let mut start = 0;
    while start < turns.len() && picks.len() < n {
        let priority = turns[start].0;
        let end = start + turns[start..].partition_point(|(p, _)| *p == priority);
        let deepest = turns[start..end].iter().map(|(_, w)| *w).max().unwrap_or(0);
        'group: for round in 0..deepest {
            for (i, (_, waiters)) in turns.iter().enumerate().take(end).skip(start) {
                if *waiters > round {
                    if picks.len() == n {
                        break 'group;
                    }
                    picks.push((i, round));
                }
            }
        }
        start = end;
    }
    picks
}

/// The first `n` waiters in hand-off order (§1c): the first `n` tenants in
/// turn order with their earliest waiters (one read, through
/// `coordinator_tenants_turns` and a seek by seq each), then, only for a
/// tenant that gives more than one of the `n` (fewer tenants than free
/// slots), its next waiters (one read each).
fn load_front<E: SqlExec>(sql: &Counted<'_, E>, key: &str, n: u32) -> Vec<Waiter> {
    let turns: Vec<Turn1> = sql
        .read(
            &format!(
                "SELECT t.priority, t.tenant, t.waiters, t.first_seq, {WAITER_COLUMNS_OF_W} \
                 FROM coordinator_tenants t \
                 JOIN coordinator_waiters w ON w.key = t.key AND w.seq = t.first_seq \
                 WHERE t.key = ?1 AND t.waiters > 0 \
                 ORDER BY t.priority DESC, t.served, t.first_seq LIMIT ?2"
            ),
            &[key_value(key), SqlValue::Integer(i64::from(n))],
        )
        .iter()
        .map(|row| Turn1 {
            priority: priority_from(&row[0]),
            tenant: tenant_from(&row[1]),
            waiters: u32::try_from(integer(&row[2])).expect("waiters are bounded"),
            first_seq: integer(&row[3]),
            first: waiter_from_row(&row[4..4 + WAITER_WIDTH]),
        })
        .collect();
    let shape: Vec<(i8, u32)> = turns.iter().map(|t| (t.priority, t.waiters)).collect();
    let picks = rounds(&shape, n as usize);
    // Each tenant's waiters as far as the picks reach, earliest first.
    let mut taken: Vec<Vec<Waiter>> = turns.iter().map(|t| vec![t.first.clone()]).collect();
    for (i, turn) in turns.iter().enumerate() {
        let deepest = picks.iter().filter(|(t, _)| *t == i).count();
        if deepest > 1 {
            taken[i].extend(read_waiters(
                sql,
                &format!(
                    "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
                     WHERE key = ?1 AND priority = ?2 AND tenant = ?3 AND seq > ?4 \
                     ORDER BY seq LIMIT ?5"
                ),
                &[
                    key_value(key),
                    priority_value(turn.priority),
                    tenant_value(turn.tenant.as_ref()),
                    SqlValue::Integer(turn.first_seq),
                    SqlValue::Integer(deepest as i64 - 1),
                ],
            ));
        }
    }
    picks
        .into_iter()
        .map(|(i, round)| taken[i][round as usize].clone())
        .collect()
}

/// `arrived` (every waiter, earliest first) in hand-off order, given the
/// tenants' turn order: [`rounds`] over the whole queue.
fn hand_off_order(turns: &[(i8, Option<Ident>)], arrived: Vec<Waiter>) -> Vec<Waiter> {
    let mut queues: Vec<std::collections::VecDeque<Waiter>> = vec![Default::default(); turns.len()];
    let total = arrived.len();
    for waiter in arrived {
        let i = turns
            .iter()
            .position(|(p, t)| *p == waiter.priority && *t == waiter.tenant)
            .expect("every waiter's tenant has its turn row");
        queues[i].push_back(waiter);
    }
    let shape: Vec<(i8, u32)> = turns
        .iter()
        .zip(&queues)
        .map(|((p, _), q)| (*p, q.len() as u32))
        .collect();
    rounds(&shape, total)
        .into_iter()
        .map(|(i, _)| {
            queues[i]
                .pop_front()
                .expect("rounds take what each tenant has")
        })
        .collect()
}

/// Where the waiter `id` of this priority and tenant stands in hand-off
/// order (1 is next), or an id not waiting would stand if it joined now:
/// everyone of a higher priority, then at its own, `r` rounds of the other
/// tenants (`r`: its tenant's waiters ahead of it) and, in its own round,
/// the tenants whose turn comes before its tenant's. One read: one row per
/// tenant with waiters at its priority or above, and for a waiter a count
/// of its own tenant's waiters ahead of it (for an id not waiting, its
/// tenant's count, kept in the tenant's row): never a walk of the queue.
fn load_place<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    id: &InstanceId,
    priority: i8,
    tenant: Option<&Ident>,
) -> u32 {
    let rows = sql.read(
        "WITH share AS (SELECT served, waiters, first_seq FROM coordinator_tenants \
            WHERE key = ?1 AND priority = ?2 AND tenant = ?3), \
         mine AS (SELECT seq FROM coordinator_waiters WHERE key = ?1 AND id = ?4), \
         me AS (SELECT \
            CASE WHEN EXISTS (SELECT 1 FROM mine) THEN \
                (SELECT COUNT(*) FROM coordinator_waiters WHERE key = ?1 AND priority = ?2 \
                 AND tenant = ?3 AND seq < (SELECT seq FROM mine)) \
            ELSE COALESCE((SELECT waiters FROM share), 0) END AS r, \
            (SELECT served FROM share) AS served, \
            COALESCE((SELECT first_seq FROM share WHERE waiters > 0), ?5) AS first) \
         SELECT me.r + 1 + COALESCE(SUM(CASE WHEN t.priority > ?2 THEN t.waiters \
            ELSE min(t.waiters, me.r) + (t.waiters > me.r AND ( \
                (t.served IS NULL AND (me.served IS NOT NULL OR t.first_seq < me.first)) \
                OR COALESCE(t.served < me.served, 0))) END), 0) \
         FROM me LEFT JOIN coordinator_tenants t ON t.key = ?1 AND t.priority >= ?2 \
            AND t.waiters > 0 AND NOT (t.priority = ?2 AND t.tenant = ?3)",
        &[
            key_value(key),
            priority_value(priority),
            tenant_value(tenant),
            id_value(id),
            SqlValue::Integer(i64::MAX),
        ],
    );
    u32::try_from(integer(&rows[0][0])).expect("positions are bounded")
}

fn adjust_waiter_count<E: SqlExec>(sql: &Counted<'_, E>, key: &str, delta: i64) {
    sql.write(
        "INSERT INTO coordinator_keys (key, waiter_count) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET waiter_count = waiter_count + ?2",
        &[key_value(key), SqlValue::Integer(delta)],
    );
}

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
            Write::DrawTurn(n) => {
                sql.write(
                    "INSERT INTO coordinator_keys (key, turns) VALUES (?1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET turns = excluded.turns",
                    &[key_value(key), millis_value(*n)],
                );
            }
            Write::AddHolder(holder) => {
                // The trigger coordinator_holders_fence raises the key's fence.
                sql.write(
                    "INSERT INTO coordinator_holders \
                     (key, seq, id, since_ms, state, workflow, enqueued_ms, turn, fence) \
                     VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM coordinator_holders \
                     WHERE key = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
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
                // Tenants with no waiter served more than
                // IDLE_TENANT_KEPT_GRANTS grants ago are forgotten: the
                // start of the idle index, one row per grant at most.
                sql.write(
                    "DELETE FROM coordinator_tenants \
                     WHERE key = ?1 AND waiters = 0 AND served < ?2 - ?3",
                    &[
                        key_value(key),
                        millis_value(*fence),
                        millis_value(IDLE_TENANT_KEPT_GRANTS),
                    ],
                );
            }
            Write::MarkChecked(id, now_ms) => {
                sql.write(
                    "UPDATE coordinator_holders SET checked_ms = ?3 WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id), millis_value(*now_ms)],
                );
            }
            Write::PushWaiter(waiter) => {
                // The trigger coordinator_waiters_joined counts it in its tenant.
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
                adjust_waiter_count(sql, key, 1);
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
            Write::RemoveWaiter(id) => {
                sql.write(
                    "DELETE FROM coordinator_waiters WHERE key = ?1 AND id = ?2",
                    &[key_value(key), id_value(id)],
                );
                adjust_waiter_count(sql, key, -1);
            }
            Write::SupersedeAllExcept(keep, dropped) => {
                // Remembered in queue order right after the newest remembered
                // id, with no gaps (see `supersede_waiters_except`).
                sql.write(
                    "INSERT INTO coordinator_superseded (key, id, seq) \
                     SELECT key, id, (SELECT COALESCE(MAX(seq), 0) FROM coordinator_superseded \
                     WHERE key = ?1) + ROW_NUMBER() OVER (ORDER BY seq) \
                     FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
                    &[key_value(key), id_value(keep)],
                );
                sql.write(
                    "DELETE FROM coordinator_waiters WHERE key = ?1 AND id <> ?2",
                    &[key_value(key), id_value(keep)],
                );
                adjust_waiter_count(sql, key, -i64::from(*dropped));
            }
            Write::ForgetSupersededBeyond(keep) => {
                sql.write(
                    "DELETE FROM coordinator_superseded WHERE key = ?1 AND seq <= \
                     (SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) - ?2",
                    &[key_value(key), SqlValue::Integer(i64::from(*keep))],
                );
            }
        }
    }
}

/// Keys that need the holder-check alarm, at most `limit`.
pub fn keys_due<E: SqlExec>(sql: &Counted<'_, E>, limit: u32) -> Vec<String> {
    sql.read(
        "SELECT DISTINCT h.key FROM coordinator_holders h \
         LEFT JOIN coordinator_keys k ON k.key = h.key \
         WHERE h.state = 'handed' OR k.waiter_count > 0 LIMIT ?1",
        &[SqlValue::Integer(i64::from(limit))],
    )
    .iter()
    .map(|row| crate::sql::text(&row[0]))
    .collect()
}

/// What `inspect` shows of a key: its summary, every waiter in order
/// (bounded by the queue's limit) and how many superseded ids it remembers.
pub fn inspect<E: SqlExec>(sql: &Counted<'_, E>, key: &str) -> (Summary, Vec<Waiter>, u32) {
    let summary = load_summary(sql, key);
    let bound = SqlValue::Integer(i64::from(WAITERS_PER_KEY_MAX));
    let arrived = read_waiters(
        sql,
        &format!(
            "SELECT {WAITER_COLUMNS} FROM coordinator_waiters \
             WHERE key = ?1 ORDER BY seq LIMIT ?2"
        ),
        &[key_value(key), bound.clone()],
    );
    let turns: Vec<(i8, Option<Ident>)> = sql
        .read(
            "SELECT priority, tenant FROM coordinator_tenants WHERE key = ?1 AND waiters > 0 \
             ORDER BY priority DESC, served, first_seq LIMIT ?2",
            &[key_value(key), bound],
        )
        .iter()
        .map(|row| (priority_from(&row[0]), tenant_from(&row[1])))
        .collect();
    let waiters = hand_off_order(&turns, arrived);
    let superseded = sql
        .read(
            "SELECT COALESCE((SELECT MAX(seq) FROM coordinator_superseded WHERE key = ?1) \
             - (SELECT MIN(seq) FROM coordinator_superseded WHERE key = ?1) + 1, 0)",
            &[key_value(key)],
        )
        .first()
        .map(|row| u32::try_from(integer(&row[0])).expect("superseded count is bounded"))
        .unwrap_or(0);
    (summary, waiters, superseded)
}
