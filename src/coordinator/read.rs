//! The read plan: what a decision still needs to know beyond the key's
//! summary, named by the core and carried out by a store that decides
//! nothing.
//!
//! A decision on a key reads only the rows its input needs, so that its
//! cost stays flat in the queue's length. Which rows those are is a rule of
//! the decision (does this acquire take a slot? then it needs the front of
//! the order, not the holder to check), so it is stated here, next to it:
//! [`next_read`] names the next [`Read`] the view lacks, the store
//! (`super::store::execute`) or the twin (`super::twin`) answers it, and
//! [`load_view`] repeats that until the plan is complete. The answers are
//! plain rows; no store picks, filters or orders by a rule of its own
//! (beyond arrival order, and the §1c order's fast reads that
//! `tests/coordinator_order.rs` holds to [`super::order`]).
//!
//! The plan, in the order it reads:
//! 1. the place of the id the input names, unless the summary answers it
//!    (a holder; nobody waiting and nobody superseded: not known);
//! 2. the front of the hand-off order, as many waiters as the input may
//!    hand slots to ([`front_needed`]);
//! 3. for an acquire, the caller's place in the order when the decision
//!    reads it, and the holders' check times when the caller will wait
//!    (one holder is then checked);
//! 4. for the alarm's tick, the holders' check times when the key needs
//!    the holder-check alarm;
//! 5. for a superseding enqueue, the coalescing candidate (the earliest
//!    waiter with its input hash), then, unless it coalesces, every waiter
//!    (those the supersede drops).
//!
//! Each read of the front or of a place names the layout the key's waiters
//! are kept in ([`layout_of`]), which the store reads them by.

use super::check::needs_check;
use super::enqueue::{coalescing, enqueue_of, is_settled};
use super::layout::layout_of;
use super::slots::{free_on_resume, free_slots, limit_once_set, placement};
use super::types::{AcquireRequest, Fetched, Input, Member, Read, Summary, View};
use crate::ident::InstanceId;
use crate::limits::READS_PER_VIEW_MAX;

impl View {
    /// Records a read's rows in the view, and the read as planned.
    fn apply(&mut self, fetched: Read<Fetched>) {
        let read = match fetched {
            Read::Member(id, member) => {
                self.member = Some(member);
                Read::Member(id, ())
            }
            Read::Front(n, layout, front) => {
                self.front = front;
                Read::Front(n, layout, ())
            }
            Read::Place {
                id,
                priority,
                tenant,
                layout,
                place,
            } => {
                self.position = Some(place);
                Read::Place {
                    id,
                    priority,
                    tenant,
                    layout,
                    place: (),
                }
            }
            Read::CheckTimes(times) => {
                self.checked_ms = times;
                Read::CheckTimes(())
            }
            Read::FirstWithHash(hash, candidate) => {
                self.candidate = candidate;
                Read::FirstWithHash(hash, ())
            }
            Read::Waiters(waiters) => {
                self.arrived = waiters;
                Read::Waiters(())
            }
        };
        self.reads.push(read);
    }
}

/// The view `input` decides on: `summary`, then each read [`next_read`]
/// names, executed by `execute` (the store's or the twin's), until the
/// decision needs nothing more.
pub fn load_view(
    summary: Summary,
    input: &Input,
    mut execute: impl FnMut(Read) -> Read<Fetched>,
) -> View {
    let member = named(input).and_then(|id| member_from_summary(&summary, id));
    let mut view = View {
        summary,
        member,
        ..View::default()
    };
    for _ in 0..READS_PER_VIEW_MAX {
        let Some(read) = next_read(&view, input) else {
            return view;
        };
        view.apply(execute(read));
    }
    assert!(
        next_read(&view, input).is_none(),
        "a read plan longer than READS_PER_VIEW_MAX"
    );
    view
}

/// The id `input` names, whose place the decision reads.
fn named(input: &Input) -> Option<&InstanceId> {
    match input {
        Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. } => Some(&r.id),
        Input::Acquire(r) | Input::AcquireChecked { request: r, .. } => Some(&r.id),
        Input::Release(id) | Input::Rebound { id, .. } => Some(id),
        Input::Accepted { .. }
        | Input::Woken { .. }
        | Input::Tick
        | Input::TickChecked { .. }
        | Input::Cancelled { .. } => None,
        Input::Pause { .. } | Input::Resume | Input::SetLimit(_) => None,
    }
}

/// `id`'s place when the summary alone tells it: a holder; or, with nobody
/// waiting and no superseded id remembered, not known.
fn member_from_summary(summary: &Summary, id: &InstanceId) -> Option<Member> {
    if let Some(holder) = summary.holders.iter().find(|h| h.id == *id) {
        return Some(Member::Holder(holder.clone()));
    }
    (summary.waiters == 0 && summary.none_superseded).then_some(Member::Stranger)
}

/// The next read the decision on `input` needs that `view` has not had,
/// or `None` when the view is complete (see the module's plan).
pub fn next_read(view: &View, input: &Input) -> Option<Read> {
    let unread = |read: Read| (!view.reads.contains(&read)).then_some(read);
    if let Some(id) = named(input) {
        if view.member.is_none() {
            return Some(Read::Member(id.clone(), ()));
        }
    }
    let s = &view.summary;
    let n = front_needed(s, input);
    if n > 0 {
        if let Some(read) = unread(Read::Front(n, layout_of(s), ())) {
            return Some(read);
        }
    }
    match input {
        Input::Acquire(request) | Input::AcquireChecked { request, .. } => {
            let checked = matches!(input, Input::AcquireChecked { .. });
            acquire_read(view, request, checked).and_then(unread)
        }
        Input::Tick if needs_check(s) => unread(Read::CheckTimes(())),
        Input::Enqueue(_) | Input::EnqueueChecked { .. } => {
            let (request, checked) = enqueue_of(input).expect("an enqueue");
            let member = view.member.as_ref().expect("read first");
            if !request.supersedes || is_settled(member) || s.waiters == 0 {
                return None;
            }
            if let Some(hash) = &request.input_hash {
                if let Some(read) = unread(Read::FirstWithHash(hash.clone(), ())) {
                    return Some(read);
                }
            }
            if coalescing(view, member, request, checked).is_some() {
                return None;
            }
            unread(Read::Waiters(()))
        }
        Input::Tick
        | Input::Release(_)
        | Input::Accepted { .. }
        | Input::Woken { .. }
        | Input::TickChecked { .. }
        | Input::Cancelled { .. }
        | Input::Rebound { .. } => None,
        Input::Pause { .. } | Input::Resume | Input::SetLimit(_) => None,
    }
}

/// How many waiters from the front `input` may hand slots to, given the
/// summary: how many [`Read::Front`] asks for.
fn front_needed(summary: &Summary, input: &Input) -> u32 {
    let limit = |options: &crate::coordinator::types::Options| summary.limit_for(options.limit);
    let free = |limit: u32, freed: u32| free_slots(summary, limit, freed);
    let holds = |id: &InstanceId| summary.holders.iter().any(|h| h.id == *id);
    let n = match input {
        Input::Acquire(r) => free(limit(&r.options), 0),
        // A skipping caller's second phase judges with the limit it names;
        // any other applies no limit: the first did.
        Input::AcquireChecked { request: r, .. } if r.options.skip => {
            free(limit(&r.options).max(summary.limit()), 1)
        }
        Input::AcquireChecked { .. } => free(summary.limit(), 1),
        Input::Release(id) if holds(id) => free(summary.limit(), 1),
        // These fill every free slot, whether or not the holder still holds.
        Input::Woken { holder, .. }
        | Input::TickChecked { holder, .. }
        | Input::Cancelled { holder, .. } => free(summary.limit(), u32::from(holds(&holder.id))),
        // §11: resume hands on every slot free once unpaused; a new limit
        // every slot it frees (none while paused).
        Input::Resume => free_on_resume(summary),
        Input::SetLimit(limit) => free(limit_once_set(summary, *limit), 0),
        Input::Release(_) | Input::Enqueue(_) | Input::EnqueueChecked { .. } | Input::Tick => 0,
        // An accepted grant event hands nothing on.
        Input::Pause { .. } | Input::Rebound { .. } | Input::Accepted { .. } => 0,
    };
    n.min(summary.waiters)
}

/// What an acquire (`checked`: its second phase) reads beyond the
/// caller's place at the key, read already: its place in the hand-off
/// order (`View::position`) when that decides whether it takes a slot
/// ([`placement`]) or when it answers with `grant` from beyond the loaded
/// front; then, on the first phase, the holders' check times when it will
/// wait (one holder is then checked).
fn acquire_read(view: &View, request: &AcquireRequest, checked: bool) -> Option<Read> {
    let s = &view.summary;
    let member = view.member.as_ref().expect("read first");
    let (waits, priority, tenant) = match member {
        Member::Waiter(w) => (true, w.priority, w.tenant.clone()),
        Member::Stranger => (
            false,
            request.options.priority,
            request.options.tenant.clone(),
        ),
        Member::Holder(_) | Member::Superseded => return None,
    };
    let limit = s.limit_for(request.options.limit);
    let placed = placement(s, limit, &request.id, waits, &view.front, view.position);
    let needs_place = if waits {
        request.options.grant && !view.front.iter().any(|f| f.id == request.id)
    } else {
        s.waiters > 0 && (request.options.grant || checked || placed.is_none())
    };
    if needs_place && view.position.is_none() {
        return Some(Read::Place {
            id: request.id.clone(),
            priority,
            tenant,
            layout: layout_of(s),
            place: (),
        });
    }
    let waits_after = !placed.is_some_and(|p| p.takes_slot);
    (!checked && waits_after).then_some(Read::CheckTimes(()))
}
