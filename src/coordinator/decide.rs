//! The decision functions: one per entry point and phase.
//!
//! Each takes the key's [`KeyStore`], the time (`now_ms`) and the request,
//! writes through the store, and returns either a reply or the next thing
//! the shell must find out. None of them blocks, awaits or fails on I/O.

use super::state::{Holder, HolderState, KeyStore, Liveness, Waiter};
use crate::error::BatonError;
use crate::ident::{InputHash, InstanceId};
use crate::limits::{SUPERSEDED_REMEMBERED_MAX, WAITERS_PER_KEY_MAX};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequest {
    pub supersedes: bool,
    pub id: InstanceId,
    pub input_hash: Option<InputHash>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnqueueReply {
    /// Waiters dropped by this enqueue, in queue order; the shell terminates
    /// them (best effort) after the commit.
    pub terminated: Vec<InstanceId>,
    /// The live waiting instance this enqueue coalesced into; nothing was registered.
    pub coalesced_into: Option<InstanceId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueStep {
    Done(EnqueueReply),
    /// A waiter with the same input might absorb this enqueue: find out
    /// whether it is alive, then call [`enqueue_after_check`].
    CheckCandidate(InstanceId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    Granted,
    Pending,
    Superseded,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireStep {
    Done(AcquireReply),
    /// The key is held by this instance: find out whether it is dead, then
    /// call [`acquire_after_check`] with this snapshot.
    CheckHolder(Holder),
}

/// A finished decision: its reply, and the instance (if any) that was just
/// handed the key and must be woken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    pub reply: R,
    pub wake: Option<InstanceId>,
}

/// What the holder-check alarm must do for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickStep {
    Idle,
    CheckHolder(Holder),
}

/// First phase of `enqueue`.
pub fn enqueue(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &EnqueueRequest,
) -> Result<EnqueueStep, BatonError> {
    if let Some(candidate) = coalesce_candidate(store, request) {
        return Ok(EnqueueStep::CheckCandidate(candidate));
    }
    commit_enqueue(store, now_ms, request).map(EnqueueStep::Done)
}

/// Second phase of `enqueue`, once `candidate`'s liveness is known. Coalesces
/// only if the candidate is alive and *still* waiting with the same input: if
/// it started meanwhile it has read its input, and this caller needs its own
/// instance. An unknown status does not coalesce: a duplicate run is better
/// than work silently never done.
pub fn enqueue_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &EnqueueRequest,
    candidate: &InstanceId,
    liveness: Liveness,
) -> Result<EnqueueReply, BatonError> {
    if liveness == Liveness::Alive && coalesce_candidate(store, request).as_ref() == Some(candidate)
    {
        return Ok(EnqueueReply {
            terminated: Vec::new(),
            coalesced_into: Some(candidate.clone()),
        });
    }
    commit_enqueue(store, now_ms, request)
}

fn coalesce_candidate(store: &impl KeyStore, request: &EnqueueRequest) -> Option<InstanceId> {
    if !request.supersedes || is_settled(store, &request.id) {
        return None;
    }
    let hash = request.input_hash.as_ref()?;
    store
        .first_waiter_with_hash(hash)
        .map(|waiter| waiter.id)
        .filter(|id| *id != request.id)
}

/// The caller holds the key or was superseded: enqueue has nothing to change.
/// Superseded is final for an id, so a late or retried enqueue cannot revive it.
fn is_settled(store: &impl KeyStore, id: &InstanceId) -> bool {
    store.holder().is_some_and(|h| h.id == *id) || store.is_superseded(id)
}

fn commit_enqueue(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &EnqueueRequest,
) -> Result<EnqueueReply, BatonError> {
    if is_settled(store, &request.id) {
        return Ok(EnqueueReply::default());
    }
    let already_waiting = store.waiter(&request.id).is_some();
    // A superseding enqueue leaves at most the caller behind, so only a plain
    // enqueue can overflow; check before any write so a refusal changes nothing.
    if !request.supersedes && !already_waiting {
        check_room(store)?;
    }
    let terminated = if request.supersedes {
        let dropped = store.supersede_waiters_except(&request.id);
        store.forget_superseded_beyond(SUPERSEDED_REMEMBERED_MAX);
        dropped
    } else {
        Vec::new()
    };
    if !already_waiting {
        store.push_waiter(&Waiter {
            id: request.id.clone(),
            since_ms: now_ms,
            input_hash: request.input_hash.clone(),
        });
    }
    Ok(EnqueueReply {
        terminated,
        coalesced_into: None,
    })
}

fn check_room(store: &impl KeyStore) -> Result<(), BatonError> {
    if store.waiter_count() >= WAITERS_PER_KEY_MAX {
        return Err(BatonError::LimitExceeded {
            field: "key",
            reason: format!("already has {WAITERS_PER_KEY_MAX} waiters, the most one key holds"),
        });
    }
    Ok(())
}

/// First phase of `acquire`.
///
/// Decides at once when the caller holds the key, was superseded, or finds the
/// key free with nobody ahead. Otherwise the caller joins the queue (if it was
/// not in it) and the holder is named for a liveness check. A free key with
/// someone ahead is first handed to the earliest waiter, so that the check
/// (and, if it is dead, the hand-on) follows the same path as for any holder.
pub fn acquire(
    store: &mut impl KeyStore,
    now_ms: u64,
    id: &InstanceId,
) -> Result<AcquireStep, BatonError> {
    if let Some(reply) = settled_acquire(store, id) {
        return Ok(AcquireStep::Done(reply));
    }
    let waiting = store.waiter(id).is_some();
    if !waiting {
        check_room(store)?;
    }
    let holder = match store.holder() {
        Some(holder) => holder,
        None => match store.first_waiter() {
            Some(first) if first.id != *id => hand_to(store, now_ms, first),
            first => {
                // Either the caller is first in the queue, or the queue is empty.
                grant(store, now_ms, id, first.is_some());
                return Ok(AcquireStep::Done(AcquireReply::Granted));
            }
        },
    };
    if !waiting {
        store.push_waiter(&Waiter {
            id: id.clone(),
            since_ms: now_ms,
            input_hash: None,
        });
    }
    Ok(AcquireStep::CheckHolder(holder))
}

/// Second phase of `acquire`, once the liveness of the holder `checked` (as
/// the first phase saw it) is known. Decides on the state as it is now: the
/// key is taken only if the check said dead and the holder is unchanged.
pub fn acquire_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    id: &InstanceId,
    checked: &Holder,
    liveness: Liveness,
) -> Decided<AcquireReply> {
    let wake = after_holder_check(store, now_ms, checked, liveness).filter(|next| next != id);
    let reply = match settled_acquire(store, id) {
        Some(reply) => reply,
        None if store.holder().is_none() && store.first_waiter().is_none_or(|w| w.id == *id) => {
            grant(store, now_ms, id, true);
            AcquireReply::Granted
        }
        None => {
            // Normally registered in the first phase; if it left the queue
            // between phases and the key is full, it stays out and its next
            // re-check tries again, rather than failing a call that was valid.
            if store.waiter(id).is_none() && check_room(store).is_ok() {
                store.push_waiter(&Waiter {
                    id: id.clone(),
                    since_ms: now_ms,
                    input_hash: None,
                });
            }
            AcquireReply::Pending
        }
    };
    Decided { reply, wake }
}

/// Answers that need no liveness check: the caller holds the key (confirming
/// a hand-over), or was superseded.
fn settled_acquire(store: &mut impl KeyStore, id: &InstanceId) -> Option<AcquireReply> {
    if let Some(holder) = store.holder().filter(|h| h.id == *id) {
        if holder.state == HolderState::Handed {
            store.set_holder(Some(&Holder {
                state: HolderState::Holding,
                ..holder
            }));
        }
        return Some(AcquireReply::Granted);
    }
    if store.is_superseded(id) {
        return Some(AcquireReply::Superseded);
    }
    None
}

/// `waiting`: whether `id` may be in the queue; a caller known not to be
/// skips the delete, so an uncontended acquire writes only the holder.
fn grant(store: &mut impl KeyStore, now_ms: u64, id: &InstanceId, waiting: bool) {
    if waiting {
        store.remove_waiter(id);
    }
    store.set_holder(Some(&Holder {
        id: id.clone(),
        since_ms: now_ms,
        state: HolderState::Holding,
    }));
}

fn hand_to(store: &mut impl KeyStore, now_ms: u64, waiter: Waiter) -> Holder {
    store.remove_waiter(&waiter.id);
    let holder = Holder {
        id: waiter.id,
        since_ms: now_ms,
        state: HolderState::Handed,
    };
    store.set_holder(Some(&holder));
    holder
}

/// Passes the key from its holder to the earliest waiter, or frees it.
/// Returns the new holder, which must be woken.
fn hand_on(store: &mut impl KeyStore, now_ms: u64) -> Option<InstanceId> {
    match store.first_waiter() {
        Some(next) => Some(hand_to(store, now_ms, next).id),
        None => {
            store.set_holder(None);
            None
        }
    }
}

/// `release`: from the holder, hands the key on; from a waiter, leaves the
/// queue; from anyone else, changes nothing. The reply's `next` is the new
/// holder, to be woken (and replaced through [`holder_found_dead`] if dead).
pub fn release(
    store: &mut impl KeyStore,
    now_ms: u64,
    id: &InstanceId,
) -> Decided<Option<InstanceId>> {
    if store.holder().is_some_and(|h| h.id == *id) {
        let next = hand_on(store, now_ms);
        return Decided {
            reply: next.clone(),
            wake: next,
        };
    }
    if store.waiter(id).is_some() {
        store.remove_waiter(id);
    }
    Decided {
        reply: None,
        wake: None,
    }
}

/// `dead` was found dead while being woken. If it still holds the key by a
/// hand-over it has not confirmed, the key goes to the next waiter, which is
/// returned to be woken. Once it has acquired, a "dead" from before that may
/// only mean "not created yet", so it keeps the key; the alarm and later
/// checks, which carry a holder snapshot, judge it from then on.
pub fn holder_found_dead(
    store: &mut impl KeyStore,
    now_ms: u64,
    dead: &InstanceId,
) -> Option<InstanceId> {
    if store
        .holder()
        .is_some_and(|h| h.id == *dead && h.state == HolderState::Handed)
    {
        hand_on(store, now_ms)
    } else {
        None
    }
}

/// Whether the key needs the holder-check alarm: someone waits behind the
/// holder, or the holder has not yet confirmed a hand-over (its wake may
/// have been lost).
pub fn needs_holder_check(store: &impl KeyStore) -> bool {
    match store.holder() {
        Some(holder) => holder.state == HolderState::Handed || store.waiter_count() > 0,
        None => false,
    }
}

/// First phase of the holder-check alarm for one key.
pub fn tick(store: &impl KeyStore) -> TickStep {
    match store.holder() {
        Some(holder) if needs_holder_check(store) => TickStep::CheckHolder(holder),
        _ => TickStep::Idle,
    }
}

/// Second phase of the holder-check alarm.
pub fn tick_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    checked: &Holder,
    liveness: Liveness,
) -> Option<InstanceId> {
    after_holder_check(store, now_ms, checked, liveness)
}

/// Acts on a holder check, if `checked`'s instance still holds the key.
/// "Dead" counts only if the holder is exactly as checked: an instance that
/// was not found because it did not exist yet may have been created and
/// acquired since. Returns the instance to wake: the next holder if the
/// holder was dead, or the holder itself if it has not yet confirmed a
/// hand-over, so that a lost turn event is sent again (a duplicate only
/// makes it re-check).
fn after_holder_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    checked: &Holder,
    liveness: Liveness,
) -> Option<InstanceId> {
    let holder = store.holder().filter(|h| h.id == checked.id)?;
    match liveness {
        Liveness::Dead if holder == *checked => hand_on(store, now_ms),
        Liveness::Dead | Liveness::Alive | Liveness::Unknown => {
            (holder.state == HolderState::Handed).then_some(holder.id)
        }
    }
}

/// Broken-invariant checks, run after every step of the simulation and
/// after every decision of the shell, in release builds too (a few indexed
/// reads). Panics on violation.
pub fn assert_invariants(store: &impl KeyStore) {
    if let Some(holder) = store.holder() {
        assert!(
            store.waiter(&holder.id).is_none(),
            "holder {} is also waiting",
            holder.id
        );
        assert!(
            !store.is_superseded(&holder.id),
            "holder {} is superseded",
            holder.id
        );
    }
    assert!(store.waiter_count() <= WAITERS_PER_KEY_MAX);
    assert!(store.superseded_count() <= SUPERSEDED_REMEMBERED_MAX);
    if let Some(first) = store.first_waiter() {
        assert!(
            !store.is_superseded(&first.id),
            "waiter {} is superseded",
            first.id
        );
    }
}
