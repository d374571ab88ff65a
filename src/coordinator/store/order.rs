//! The §1c hand-off order as the rows give it cheaply: the front of the
//! order ([`load_front`]) and one id's place in it ([`load_place`]),
//! each without walking the queue, from waiters kept in `Layout::Shared`;
//! and one id's place among waiters kept in `Layout::Sole`
//! ([`load_sole_place`]; their front is the first in arrival order).

use super::read_waiters;
use super::rows::{
    id_value, key_value, priority_from, priority_value, tenant_from, tenant_value, waiter_from_row,
    WAITER_COLUMNS, WAITER_COLUMNS_OF_W, WAITER_WIDTH,
};
use crate::coordinator::types::Waiter;
use crate::ident::{Ident, InstanceId};
use crate::sql::{integer, Counted, SqlExec, SqlValue};

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
pub(super) fn load_front<E: SqlExec>(sql: &Counted<'_, E>, key: &str, n: u32) -> Vec<Waiter> {
    let turns: Vec<Turn1> = sql
        .read(
            &format!(
                "SELECT t.priority, t.tenant, t.waiters, t.first_seq, {WAITER_COLUMNS_OF_W} \
                 FROM coordinator_tenants t \
                 JOIN coordinator_waiters w ON w.key = t.key AND w.seq = t.first_seq \
                 WHERE t.key = ?1 AND t.first_seq IS NOT NULL \
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
                     WHERE key = ?1 AND priority = ?2 AND tenant = ?3 AND sole = 0 \
                     AND seq > ?4 ORDER BY seq LIMIT ?5"
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

/// Where the waiter `id` of this priority and tenant stands in hand-off
/// order (1 is next), or an id not waiting would stand if it joined now:
/// everyone of a higher priority, then at its own, `r` rounds of the other
/// tenants (`r`: its tenant's waiters ahead of it) and, in its own round,
/// the tenants whose turn comes before its tenant's. One read: one row per
/// tenant with waiters at its priority or above, and for a waiter a count
/// of its own tenant's waiters ahead of it (for an id not waiting, its
/// tenant's count, kept in the tenant's row): never a walk of the queue.
pub(super) fn load_place<E: SqlExec>(
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
                 AND tenant = ?3 AND sole = 0 AND seq < (SELECT seq FROM mine)) \
            ELSE COALESCE((SELECT waiters FROM share), 0) END AS r, \
            (SELECT served FROM share) AS served, \
            COALESCE((SELECT first_seq FROM share), ?5) AS first) \
         SELECT me.r + 1 + COALESCE(SUM(CASE WHEN t.priority > ?2 THEN t.waiters \
            ELSE min(t.waiters, me.r) + (t.waiters > me.r AND ( \
                (t.served IS NULL AND (me.served IS NOT NULL OR t.first_seq < me.first)) \
                OR COALESCE(t.served < me.served \
                    OR (t.served = me.served AND t.first_seq < me.first), 0))) END), 0) \
         FROM me LEFT JOIN coordinator_tenants t ON t.key = ?1 AND t.priority >= ?2 \
            AND t.first_seq IS NOT NULL AND NOT (t.priority = ?2 AND t.tenant = ?3)",
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

/// [`load_place`] for a key whose waiters are kept in `Layout::Sole`, all
/// of one share (the key row's `sole_priority`, `sole_tenant`), in arrival
/// order: a waiter stands behind those who came before it; an id not
/// waiting of a higher priority first, of a lower one or of the same share
/// last; of another tenant at that priority, in the first round, behind
/// the share's earliest waiter unless its own tenant was served before
/// that one (§1c). One read, never a walk of the queue but for a waiter's
/// count of those ahead (as `load_place`'s).
pub(super) fn load_sole_place<E: SqlExec>(
    sql: &Counted<'_, E>,
    key: &str,
    id: &InstanceId,
    priority: i8,
    tenant: Option<&Ident>,
) -> u32 {
    let rows = sql.read(
        "WITH mine AS (SELECT seq FROM coordinator_waiters WHERE key = ?1 AND id = ?4) \
         SELECT CASE \
            WHEN EXISTS (SELECT 1 FROM mine) THEN 1 + (SELECT COUNT(*) FROM coordinator_waiters \
                WHERE key = ?1 AND seq < (SELECT seq FROM mine)) \
            WHEN ?2 > k.sole_priority THEN 1 \
            WHEN ?2 < k.sole_priority OR ?3 = k.sole_tenant THEN k.waiter_count + 1 \
            ELSE 1 + (s.served IS NULL OR COALESCE(s.served < m.served, 0)) END \
         FROM coordinator_keys k \
         LEFT JOIN coordinator_tenants s ON s.key = ?1 AND s.priority = k.sole_priority \
            AND s.tenant = k.sole_tenant \
         LEFT JOIN coordinator_tenants m ON m.key = ?1 AND m.priority = ?2 AND m.tenant = ?3 \
         WHERE k.key = ?1",
        &[
            key_value(key),
            priority_value(priority),
            tenant_value(tenant),
            id_value(id),
        ],
    );
    u32::try_from(integer(&rows[0][0])).expect("positions are bounded")
}
