//! Contract §1c's hand-off order, stated once: who is handed the key next.
//!
//! The highest priority present goes first. Within a priority, the tenants
//! with waiters take turns: a tenant never served first (among those, the
//! one whose earliest waiter arrived first), then the one served longest
//! ago (its last grant's fence lowest). Each turn goes to that tenant's
//! earliest waiter not yet taken, and the rounds repeat in the same order,
//! one waiter of each tenant that still has one per round (a tenant served
//! goes to the back of its priority's round, behind the others of this
//! one). With neither priorities nor tenants, this is the order of arrival.
//!
//! The twin (`super::twin`) and `inspect` read the order from here. The
//! store's reads of the front of the order and of one id's place in it
//! (`super::store`'s `load_front` and `load_place`) give the same answer
//! without walking the queue; `tests/coordinator_order.rs` holds them to
//! these functions.

use super::types::{Turn, Waiter};
use crate::ident::{Ident, InstanceId};
use std::cmp::Reverse;
use std::collections::HashMap;

/// `arrived` (every waiter, in the order they joined the key) in hand-off
/// order. `served(priority, tenant)`: the fence of that tenant's last grant
/// served in its turn at that priority (`None`: never served).
pub fn hand_off_order(
    arrived: &[Waiter],
    served: impl Fn(i8, Option<&Ident>) -> Option<u64>,
) -> Vec<Waiter> {
    /// One tenant at one priority: when it was last served, when its
    /// earliest waiter arrived (an index in `arrived`), its waiters in order.
    struct Share<'w> {
        priority: i8,
        served: Option<u64>,
        first: usize,
        waiters: Vec<&'w Waiter>,
    }
    let mut shares: Vec<Share<'_>> = Vec::new();
    let mut index: HashMap<(i8, Option<&Ident>), usize> = HashMap::new();
    for (n, waiter) in arrived.iter().enumerate() {
        let at = (waiter.priority, waiter.tenant.as_ref());
        let i = *index.entry(at).or_insert_with(|| {
            shares.push(Share {
                priority: waiter.priority,
                served: served(waiter.priority, waiter.tenant.as_ref()),
                first: n,
                waiters: Vec::new(),
            });
            shares.len() - 1
        });
        shares[i].waiters.push(waiter);
    }
    // The turn order: highest priority first; within one, never served
    // (`None` sorts first), then served longest ago, then earliest waiter.
    shares.sort_by_key(|s| (Reverse(s.priority), s.served, s.first));
    let mut order = Vec::with_capacity(arrived.len());
    let mut start = 0;
    while start < shares.len() {
        let priority = shares[start].priority;
        let end = start + shares[start..].partition_point(|s| s.priority == priority);
        let group = &shares[start..end];
        let rounds = group.iter().map(|s| s.waiters.len()).max().unwrap_or(0);
        for round in 0..rounds {
            for share in group {
                if let Some(waiter) = share.waiters.get(round) {
                    order.push((*waiter).clone());
                }
            }
        }
        start = end;
    }
    order
}

/// Where `id` stands in hand-off order (1 is next) if it waits; for an id
/// not waiting, where a waiter of `priority` and `tenant` would stand if it
/// joined now (behind every waiter there is, at its priority and tenant).
pub fn place_in_order(
    arrived: &[Waiter],
    served: impl Fn(i8, Option<&Ident>) -> Option<u64>,
    id: &InstanceId,
    priority: i8,
    tenant: Option<&Ident>,
) -> u32 {
    let mut queue = arrived.to_vec();
    if !queue.iter().any(|w| w.id == *id) {
        queue.push(Waiter {
            id: id.clone(),
            since_ms: 0,
            input_hash: None,
            workflow: None,
            enqueued_ms: None,
            turn: Turn::Shared,
            priority,
            tenant: tenant.cloned(),
        });
    }
    let order = hand_off_order(&queue, served);
    let n = order
        .iter()
        .position(|w| w.id == *id)
        .expect("the id is in the order");
    u32::try_from(n + 1).expect("places are bounded by the queue")
}
