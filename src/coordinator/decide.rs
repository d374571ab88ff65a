//! The decision functions: one per entry point and phase.
//!
//! Each takes the key's [`KeyStore`], the time (`now_ms`), the configured
//! enqueue grace where a liveness answer is judged, and the request; it
//! writes through the store and returns either a reply or the next thing
//! the shell must find out. None of them blocks, awaits or fails on I/O.
//!
//! # Slots
//! A key has `limit` slots (1 unless a call named another limit). A holder
//! occupies one from the moment it is handed the key (`Handed`) or granted
//! it (`Holding`) until it releases or is found dead. Free slots always go
//! to the earliest waiters: whenever a decision frees a slot (a release, a
//! dead holder, a raised limit seen by `acquire`), it hands the free slots
//! to the front of the queue and returns those holders to be woken.
//! Lowering the limit takes no slot away; it only stops new grants until
//! the holders are below it. `enqueue` registers waiters and records a
//! limit but hands nothing on: the next acquire, release or alarm does.
//!
//! # Grants and fences (contract §1b)
//! Every grant of a slot, by `acquire` or by a hand-off, takes the key's
//! next fence ([`KeyStore::fence`] + 1), in [`grant_slot`] alone, so no path
//! can grant without one. A registration made with `grant` gets a
//! [`Turn::Own`]: when a slot is handed to it, the shell sends it the grant
//! itself (key, id, fence) on that registration's own event type, and
//! reports the engine's acceptance back through [`grant_accepted`], after
//! which the holder counts as told and the event is not sent again.

use super::state::{Holder, HolderState, KeyStore, Liveness, Member, Turn, Waiter};
use crate::error::BatonError;
use crate::ident::{InputHash, InstanceId, WorkflowName};
use crate::limits::{
    HOLDERS_PER_KEY_MAX, HOLDER_CHECKS_PER_TICK_MAX, SUPERSEDED_REMEMBERED_MAX, WAITERS_PER_KEY_MAX,
};

/// The options of `enqueue` and `acquire` (contract §1a), validated at the
/// edge: `workflow` names a configured binding, `limit` is 1 to 1000.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The binding of the instance being registered; absent keeps the one
    /// remembered for a registered id, or the default binding for a new one.
    pub workflow: Option<WorkflowName>,
    /// The key's new limit; absent keeps the key's.
    pub limit: Option<u32>,
    /// `grant: true` (§1b): a registration made by this call gets a turn of
    /// its own, and `acquire` answers the object form ([`Place`], fences).
    pub grant: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequest {
    pub supersedes: bool,
    pub id: InstanceId,
    pub input_hash: Option<InputHash>,
    pub options: Options,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnqueueReply {
    /// Waiters dropped by this enqueue, in queue order; the shell terminates
    /// them (best effort, each through its own Workflow) after the commit.
    pub terminated: Vec<Waiter>,
    /// The live waiting instance this enqueue coalesced into; nothing was registered.
    pub coalesced_into: Option<InstanceId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueStep {
    Done(EnqueueReply),
    /// A waiter with the same input might absorb this enqueue: find out
    /// whether it is alive, then call [`enqueue_after_check`].
    CheckCandidate(Waiter),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireRequest {
    pub id: InstanceId,
    pub options: Options,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// The caller holds a slot, granted with this fence.
    Granted {
        fence: u64,
    },
    /// The caller waits; with `grant`, where and for which event.
    Pending(Option<Place>),
    Superseded,
}

/// A waiting caller's place, for a `grant` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The event it will be told its turn with.
    pub turn: Turn,
    /// 1 is next.
    pub position: u32,
}

/// A finished decision: its reply, and the holders just handed a slot (or
/// still to confirm one) that the shell must wake, through their Workflows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    pub reply: R,
    pub wake: Vec<Holder>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireStep {
    Done(Decided<AcquireReply>),
    /// The caller waits: find out whether `holder` (this snapshot) is dead,
    /// then call [`acquire_after_check`]. `wake` were handed free slots
    /// ahead of the caller and must be woken meanwhile.
    Check {
        holder: Holder,
        wake: Vec<Holder>,
    },
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

/// The turn of a registration this call makes.
fn new_turn(store: &mut impl KeyStore, options: &Options) -> Turn {
    if options.grant {
        Turn::Own(store.next_turn())
    } else {
        Turn::Shared
    }
}

/// Records the key's limit if the call named one that differs.
fn apply_limit(store: &mut impl KeyStore, options: &Options) {
    if let Some(limit) = options.limit {
        assert!(
            (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
            "limit {limit} passed the edge"
        );
        if store.limit() != limit {
            store.set_limit(limit);
        }
    }
}

/// A named workflow replaces the one remembered for a registered id; an
/// absent one keeps it.
fn apply_workflow(store: &mut impl KeyStore, member: &Member, options: &Options) {
    let Some(workflow) = &options.workflow else {
        return;
    };
    match member {
        Member::Holder(h) if h.workflow.as_ref() != Some(workflow) => {
            store.set_holder_workflow(&h.id, Some(workflow));
        }
        Member::Waiter(w) if w.workflow.as_ref() != Some(workflow) => {
            store.set_waiter_workflow(&w.id, Some(workflow));
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// enqueue

/// First phase of `enqueue`.
pub fn enqueue(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &EnqueueRequest,
) -> Result<EnqueueStep, BatonError> {
    let member = store.member(&request.id);
    if let Some(candidate) = coalesce_candidate(store, &member, request) {
        return Ok(EnqueueStep::CheckCandidate(candidate));
    }
    commit_enqueue(store, now_ms, member, request).map(EnqueueStep::Done)
}

/// Second phase of `enqueue`, once `candidate`'s liveness is known. Coalesces
/// only if the candidate is alive and *still* waiting with the same input: if
/// it started meanwhile it has read its input, and this caller needs its own
/// instance. An unknown status, or one not created yet, does not coalesce:
/// a duplicate run is better than work silently never done.
pub fn enqueue_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &EnqueueRequest,
    candidate: &Waiter,
    liveness: Liveness,
) -> Result<EnqueueReply, BatonError> {
    let member = store.member(&request.id);
    let still = coalesce_candidate(store, &member, request);
    if liveness == Liveness::Alive && still.is_some_and(|c| c.id == candidate.id) {
        return Ok(EnqueueReply {
            terminated: Vec::new(),
            coalesced_into: Some(candidate.id.clone()),
        });
    }
    commit_enqueue(store, now_ms, member, request)
}

fn coalesce_candidate(
    store: &impl KeyStore,
    member: &Member,
    request: &EnqueueRequest,
) -> Option<Waiter> {
    if !request.supersedes || is_settled(member) {
        return None;
    }
    let hash = request.input_hash.as_ref()?;
    store
        .first_waiter_with_hash(hash)
        .filter(|waiter| waiter.id != request.id)
}

/// The caller holds the key or was superseded: enqueue registers nothing.
/// Superseded is final for an id, so a late or retried enqueue cannot revive it.
fn is_settled(member: &Member) -> bool {
    matches!(member, Member::Holder(_) | Member::Superseded)
}

fn commit_enqueue(
    store: &mut impl KeyStore,
    now_ms: u64,
    member: Member,
    request: &EnqueueRequest,
) -> Result<EnqueueReply, BatonError> {
    // A superseding enqueue leaves at most the caller behind, so only a plain
    // enqueue of a new id can overflow; check before any write so a refusal
    // changes nothing.
    if !request.supersedes && member == Member::Stranger {
        check_room(store)?;
    }
    apply_limit(store, &request.options);
    apply_workflow(store, &member, &request.options);
    if is_settled(&member) {
        return Ok(EnqueueReply::default());
    }
    let terminated = if request.supersedes {
        let dropped = store.supersede_waiters_except(&request.id);
        store.forget_superseded_beyond(SUPERSEDED_REMEMBERED_MAX);
        dropped
    } else {
        Vec::new()
    };
    if member == Member::Stranger {
        let turn = new_turn(store, &request.options);
        store.push_waiter(&Waiter {
            id: request.id.clone(),
            since_ms: now_ms,
            input_hash: request.input_hash.clone(),
            workflow: request.options.workflow.clone(),
            enqueued_ms: Some(now_ms),
            turn,
        });
    }
    Ok(EnqueueReply {
        terminated,
        coalesced_into: None,
    })
}

// ---------------------------------------------------------------------------
// acquire

/// First phase of `acquire`.
///
/// Decides at once when the caller holds a slot, was superseded, or is
/// among the first (limit − holders) waiters (a caller not yet registered
/// counting as last): the free slots ahead of it go to the earlier waiters.
/// Otherwise the caller joins the queue (if it was not in it), the free
/// slots go to the waiters ahead, and a holder is named for a liveness
/// check, the one checked least recently.
pub fn acquire(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &AcquireRequest,
) -> Result<AcquireStep, BatonError> {
    let member = store.member(&request.id);
    if member == Member::Superseded {
        return Ok(AcquireStep::Done(Decided {
            reply: AcquireReply::Superseded,
            wake: Vec::new(),
        }));
    }
    if member == Member::Stranger {
        check_room(store)?;
    }
    apply_limit(store, &request.options);
    apply_workflow(store, &member, &request.options);
    let mut wake = Vec::new();
    if let Some(reply) = take_slot(store, now_ms, request, member, &mut wake) {
        return Ok(AcquireStep::Done(Decided { reply, wake }));
    }
    let holder = store
        .holders_to_check(1)
        .pop()
        .expect("a caller left waiting means every slot is taken");
    Ok(AcquireStep::Check { holder, wake })
}

/// The reply to a caller left waiting: with `grant`, its place. One that
/// found no room was not registered: it is told the shared turn and the
/// place it would take, and its re-check tries again.
fn pending(store: &impl KeyStore, request: &AcquireRequest) -> AcquireReply {
    if !request.options.grant {
        return AcquireReply::Pending(None);
    }
    let place = match store.member(&request.id) {
        Member::Waiter(waiter) => Place {
            turn: waiter.turn,
            position: store.position(&request.id).expect("a waiter has a place"),
        },
        _ => Place {
            turn: Turn::Shared,
            position: store.waiter_count() + 1,
        },
    };
    AcquireReply::Pending(Some(place))
}

/// Second phase of `acquire`, once the liveness of the holder `checked` (as
/// the first phase saw it) is known. Decides on the state as it is now: the
/// slot is taken only if the check said dead and the holder is unchanged.
pub fn acquire_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    grace_ms: u64,
    request: &AcquireRequest,
    checked: &Holder,
    liveness: Liveness,
) -> Decided<AcquireReply> {
    let mut wake = Vec::new();
    apply_check(store, now_ms, grace_ms, checked, liveness, &mut wake);
    let member = store.member(&request.id);
    // Normally registered in the first phase; if it left the queue between
    // phases and the key is full, it stays out and its next re-check tries
    // again, rather than failing a call that was valid.
    let reply = take_slot(store, now_ms, request, member, &mut wake)
        .unwrap_or_else(|| pending(store, request));
    // A slot freed by the check goes on even when the caller needed none
    // (it holds one already, or was superseded).
    fill_slots(store, now_ms, &mut wake);
    wake.retain(|h| h.id != request.id);
    Decided { reply, wake }
}

/// The caller's answer when it needs no liveness check, else `None` with
/// the caller registered as a waiter (room permitting) and every free slot
/// handed to the waiters ahead of it (pushed onto `wake`).
fn take_slot(
    store: &mut impl KeyStore,
    now_ms: u64,
    request: &AcquireRequest,
    member: Member,
    wake: &mut Vec<Holder>,
) -> Option<AcquireReply> {
    let id = &request.id;
    let waiting = match member {
        Member::Superseded => return Some(AcquireReply::Superseded),
        Member::Holder(holder) => {
            if holder.state == HolderState::Handed {
                store.confirm_holder(id);
            }
            return Some(AcquireReply::Granted {
                fence: holder.fence,
            });
        }
        Member::Waiter(waiter) => Some(waiter),
        Member::Stranger => None,
    };
    let free = store.limit().saturating_sub(store.holder_count());
    let ahead = if free > 0 && store.waiter_count() > 0 {
        store.first_waiters(free)
    } else {
        Vec::new()
    };
    let granted = match &waiting {
        Some(_) => ahead.iter().any(|w| w.id == *id),
        None => (ahead.len() as u32) < free,
    };
    for waiter in ahead {
        if waiter.id != *id {
            wake.push(hand(store, now_ms, waiter));
        }
    }
    if granted {
        let waiter = match waiting {
            Some(waiter) => {
                store.remove_waiter(id);
                // apply_workflow already stored a named workflow; the
                // snapshot predates it.
                let workflow = request.options.workflow.clone().or(waiter.workflow);
                Waiter { workflow, ..waiter }
            }
            // Granted at once: it never waits, so it needs no turn.
            None => Waiter {
                id: id.clone(),
                since_ms: now_ms,
                input_hash: None,
                workflow: request.options.workflow.clone(),
                enqueued_ms: None,
                turn: Turn::Shared,
            },
        };
        let holder = grant_slot(store, now_ms, waiter, HolderState::Holding);
        return Some(AcquireReply::Granted {
            fence: holder.fence,
        });
    }
    if waiting.is_none() && check_room(store).is_ok() {
        let turn = new_turn(store, &request.options);
        store.push_waiter(&Waiter {
            id: id.clone(),
            since_ms: now_ms,
            input_hash: None,
            workflow: request.options.workflow.clone(),
            enqueued_ms: None,
            turn,
        });
    }
    None
}

/// Gives `waiter` (no longer in the queue) a slot with the key's next
/// fence: the one place a slot is granted.
fn grant_slot(
    store: &mut impl KeyStore,
    now_ms: u64,
    waiter: Waiter,
    state: HolderState,
) -> Holder {
    let holder = Holder {
        id: waiter.id,
        since_ms: now_ms,
        state,
        workflow: waiter.workflow,
        enqueued_ms: waiter.enqueued_ms,
        turn: waiter.turn,
        fence: store.fence() + 1,
    };
    store.add_holder(&holder);
    holder
}

/// Moves `waiter` into a slot, to be woken.
fn hand(store: &mut impl KeyStore, now_ms: u64, waiter: Waiter) -> Holder {
    store.remove_waiter(&waiter.id);
    grant_slot(store, now_ms, waiter, HolderState::Handed)
}

/// Hands every free slot to the earliest waiters; pushes them onto `wake`.
fn fill_slots(store: &mut impl KeyStore, now_ms: u64, wake: &mut Vec<Holder>) {
    let free = store.limit().saturating_sub(store.holder_count());
    if free == 0 || store.waiter_count() == 0 {
        return;
    }
    for waiter in store.first_waiters(free) {
        wake.push(hand(store, now_ms, waiter));
    }
}

/// Acts on one holder check, if `checked`'s instance still holds a slot.
/// "Not found" counts only past the grace after its enqueue, and only if
/// the holder is exactly as checked (an instance not found because it did
/// not exist yet may have been created and acquired since); a finished
/// instance counts if it still holds the grant checked. A dead holder's slot is freed (the caller fills it); a live
/// holder that has not confirmed a hand-over is pushed onto `wake`, so that
/// a lost turn event is sent again (a duplicate only makes it re-check).
/// One not created yet, within its grace, keeps its slot without an event.
fn apply_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    grace_ms: u64,
    checked: &Holder,
    liveness: Liveness,
    wake: &mut Vec<Holder>,
) {
    let Member::Holder(holder) = store.member(&checked.id) else {
        return;
    };
    if liveness.is_dead(checked.enqueued_ms, now_ms, grace_ms) {
        // A finished instance is dead however its record changed since the
        // snapshot (a grant the engine accepted confirms the hand-over even
        // when the instance is dead: locally an event to a finished
        // instance is accepted), as long as it is the same grant.
        let finished = liveness == Liveness::Dead && holder.fence == checked.fence;
        if holder == *checked || finished {
            store.remove_holder(&holder.id);
        }
        return;
    }
    if holder.state == HolderState::Handed
        && matches!(liveness, Liveness::Alive | Liveness::Unknown)
    {
        wake.push(holder);
    }
}

// ---------------------------------------------------------------------------
// release, wake, alarm

/// `release`: from a holder, hands its slot on; from a waiter, leaves the
/// queue; from anyone else, changes nothing. The reply is the first
/// instance handed a slot (to be woken, and replaced through
/// [`woken_after_check`] if dead).
pub fn release(
    store: &mut impl KeyStore,
    now_ms: u64,
    id: &InstanceId,
) -> Decided<Option<InstanceId>> {
    let mut wake = Vec::new();
    match store.member(id) {
        Member::Holder(_) => {
            store.remove_holder(id);
            fill_slots(store, now_ms, &mut wake);
        }
        Member::Waiter(_) => store.remove_waiter(id),
        Member::Superseded | Member::Stranger => {}
    }
    Decided {
        reply: wake.first().map(|h| h.id.clone()),
        wake,
    }
}

/// The shell woke `checked` and its status came back `liveness`. If that
/// makes it dead (see [`Liveness::is_dead`]) and it holds its slot exactly
/// as it was handed (it has not acquired since), the slot goes to the next
/// waiter, which is returned to be woken in turn.
pub fn woken_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    grace_ms: u64,
    checked: &Holder,
    liveness: Liveness,
) -> Vec<Holder> {
    let mut wake = Vec::new();
    if !liveness.is_dead(checked.enqueued_ms, now_ms, grace_ms) {
        return wake;
    }
    apply_check(store, now_ms, grace_ms, checked, liveness, &mut wake);
    fill_slots(store, now_ms, &mut wake);
    wake
}

/// The engine accepted the grant event sent to `sent` (this snapshot, a
/// [`Turn::Own`] holder): it holds from then on, so the alarm sends the
/// event no more. Nothing changes if it is no longer that hand-over (it
/// acquired, released or was found dead since).
pub fn grant_accepted(store: &mut impl KeyStore, sent: &Holder) {
    assert!(
        matches!(sent.turn, Turn::Own(_)),
        "only grants are confirmed by their event"
    );
    if store.member(&sent.id) == Member::Holder(sent.clone()) && sent.state == HolderState::Handed {
        store.confirm_holder(&sent.id);
    }
}

/// Whether the key needs the holder-check alarm: someone waits behind the
/// holders, or a holder has not yet confirmed a hand-over (its wake may
/// have been lost, or it is not created yet and within its grace).
pub fn needs_holder_check(store: &impl KeyStore) -> bool {
    store.holder_count() > 0 && (store.waiter_count() > 0 || store.handed_count() > 0)
}

/// First phase of the holder-check alarm for one key: the holders to ask
/// about, at most [`HOLDER_CHECKS_PER_TICK_MAX`], least recently checked first.
pub fn tick(store: &impl KeyStore) -> Vec<Holder> {
    if needs_holder_check(store) {
        store.holders_to_check(HOLDER_CHECKS_PER_TICK_MAX)
    } else {
        Vec::new()
    }
}

/// Second phase of the holder-check alarm: acts on each answer (as
/// `apply_check` says), then hands the freed slots on. Returns the holders to
/// wake: those just handed a slot, and those whose hand-over is unconfirmed.
pub fn tick_after_check(
    store: &mut impl KeyStore,
    now_ms: u64,
    grace_ms: u64,
    checked: &[(Holder, Liveness)],
) -> Vec<Holder> {
    let mut wake = Vec::new();
    for (holder, liveness) in checked {
        if matches!(store.member(&holder.id), Member::Holder(_)) {
            store.mark_checked(&holder.id, now_ms);
        }
        apply_check(store, now_ms, grace_ms, holder, *liveness, &mut wake);
    }
    fill_slots(store, now_ms, &mut wake);
    wake
}

/// Broken-invariant checks on the key's counts, cheap enough to run after
/// every decision of the shell, in release builds too: they read only what
/// the decision loaded. Panics on violation.
pub fn assert_invariants(store: &impl KeyStore) {
    let (limit, holders, handed) = (store.limit(), store.holder_count(), store.handed_count());
    assert!((1..=HOLDERS_PER_KEY_MAX).contains(&limit), "limit {limit}");
    assert!(holders <= HOLDERS_PER_KEY_MAX, "{holders} holders");
    assert!(handed <= holders, "{handed} handed of {holders} holders");
    assert!(store.waiter_count() <= WAITERS_PER_KEY_MAX);
}

/// Panics unless every holder's fence is at most the key's, and no two
/// holders share one: a fence names one grant.
fn assert_fences(store: &impl KeyStore, holders: &[Holder]) {
    let fence = store.fence();
    for (n, holder) in holders.iter().enumerate() {
        assert!(
            holder.fence <= fence,
            "{} holds fence {} above the key's {fence}",
            holder.id,
            holder.fence
        );
        assert!(
            holder.fence == 0 || holders[..n].iter().all(|h| h.fence != holder.fence),
            "fence {} granted twice",
            holder.fence
        );
    }
}

/// Every invariant that reading the whole key can check, for tests and the
/// simulation: the cheap ones, plus the holders agreeing with the counts,
/// each holder holding (not waiting, not superseded), no id twice, and the
/// front of the queue neither holding nor superseded.
pub fn assert_invariants_deep(store: &impl KeyStore) {
    assert_invariants(store);
    let holders = store.holders();
    assert_eq!(holders.len() as u32, store.holder_count(), "holder count");
    let handed = holders
        .iter()
        .filter(|h| h.state == HolderState::Handed)
        .count();
    assert_eq!(handed as u32, store.handed_count(), "handed count");
    for (n, holder) in holders.iter().enumerate() {
        assert!(
            holders[..n].iter().all(|h| h.id != holder.id),
            "{} holds twice",
            holder.id
        );
        assert_eq!(
            store.member(&holder.id),
            Member::Holder(holder.clone()),
            "holder {} reads back differently",
            holder.id
        );
    }
    assert_fences(store, &holders);
    assert!(store.superseded_count() <= SUPERSEDED_REMEMBERED_MAX);
    if let Some(first) = store.first_waiters(1).pop() {
        assert!(
            matches!(store.member(&first.id), Member::Waiter(_)),
            "waiter {} is not only waiting",
            first.id
        );
    }
}
