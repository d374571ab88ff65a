//! What a decision needs loaded beyond the key's summary: the planning
//! predicates the loaders (`super::store::load`, `super::twin`) read by.

use super::state::Member;
use super::types::{AcquireRequest, Input, Options, Summary, View};
use crate::ident::InstanceId;

/// How many waiters from the front `input` may hand slots to, given the
/// summary: what `super::store::load` reads as the view's `front`.
pub fn front_needed(summary: &Summary, input: &Input) -> u32 {
    let limit = |options: &Options| options.limit.unwrap_or(summary.limit);
    let free =
        |limit: u32, freed: u32| (limit + freed).saturating_sub(summary.holders.len() as u32);
    let holds = |id: &InstanceId| summary.holders.iter().any(|h| h.id == *id);
    let n = match input {
        Input::Acquire(r) => free(limit(&r.options), 0),
        // A skipping caller's second phase judges with the limit it names;
        // any other applies no limit: the first did.
        Input::AcquireChecked { request: r, .. } if r.options.skip => {
            free(limit(&r.options).max(summary.limit), 1)
        }
        Input::AcquireChecked { .. } => free(summary.limit, 1),
        Input::Release(id) if holds(id) => free(summary.limit, 1),
        // These fill every free slot, whether or not the holder still holds.
        Input::Woken { holder, .. } | Input::TickChecked { holder, .. } => {
            free(summary.limit, u32::from(holds(&holder.id)))
        }
        Input::Release(_) | Input::Enqueue(_) | Input::EnqueueChecked { .. } | Input::Tick => 0,
    };
    n.min(summary.waiters)
}

/// Whether an acquire on this view leaves the caller waiting (so the
/// holder to check must be loaded); for an id not registered, read with
/// its place (`View::position`) when [`needs_place`] loaded it.
pub fn acquire_waits(view: &View, request: &AcquireRequest) -> bool {
    let limit = request.options.limit.unwrap_or(view.summary.limit);
    let free = limit.saturating_sub(view.summary.holders.len() as u32);
    match &view.member {
        Some(Member::Waiter(_)) => !view
            .front
            .iter()
            .take(free as usize)
            .any(|w| w.id == request.id),
        Some(Member::Stranger) => {
            free == 0 || (view.summary.waiters > 0 && view.position.is_none_or(|p| p > free))
        }
        _ => false,
    }
}

/// Whether the decision on an acquire (`checked`: its second phase) needs
/// the caller's place in the hand-off order (`View::position`): a waiter
/// beyond the loaded front answering with `grant`; an id not registered
/// when someone waits and either free slots may meet the waiters (where
/// its priority and tenant put it decides whether it takes one) or it
/// will wait and answer with `grant`.
pub fn needs_place(view: &View, request: &AcquireRequest, checked: bool) -> bool {
    let s = &view.summary;
    let limit = request.options.limit.unwrap_or(s.limit);
    match &view.member {
        Some(Member::Waiter(w)) => {
            request.options.grant && !view.front.iter().any(|f| f.id == w.id)
        }
        Some(Member::Stranger) => {
            s.waiters > 0 && (request.options.grant || checked || limit > s.holders.len() as u32)
        }
        _ => false,
    }
}
