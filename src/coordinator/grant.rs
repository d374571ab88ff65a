//! Where slots go: an acquire's grant or its wait ([`acquire`],
//! [`take_slot`], by [`placement`]), the one place a slot is granted
//! ([`grant_slot`]), hand-offs to the front of the order ([`fill_slots`]),
//! and what a holder check's answer does to the slots ([`apply_check`]).

use super::check::due_for_check;
use super::draft::Draft;
use super::slots::{eta_ms, full, placement};
use super::types::history::Outcome;
use super::types::{
    AcquireCheck, AcquireReply, AcquireRequest, Holder, HolderState, Liveness, Member, Place, Turn,
    Waiter, Write,
};
use crate::error::BatonError;
use crate::transition::Step;

/// §1c `onBusy: "skip"` on an acquire of an id not registered: granted if
/// it would be at once (with the limit the call names), else nothing is
/// registered and nothing changes. With nobody waiting no alarm watches
/// the holders, so a dead one would keep the key from every caller that
/// skips: the least recently checked holder is checked first, and the
/// second phase decides.
fn acquire_skip(key: &mut Draft<'_>, now_ms: u64, request: AcquireRequest) -> Acquired {
    let mut wake = Vec::new();
    if let Some(reply) = take_slot_or_nothing(key, now_ms, &request, Member::Stranger, &mut wake) {
        for holder in wake {
            key.wake(holder);
        }
        return Step::Answer(reply);
    }
    let limit = key.s.limit_for(request.options.limit);
    if key.s.waiters == 0 && key.s.holders.len() as u32 >= limit {
        let due = due_for_check(&key.s.holders, &key.view.checked_ms, true, 1);
        if let Some(holder) = due.into_iter().next() {
            key.check(&holder.id, holder.workflow.as_ref());
            return Step::Check(AcquireCheck { request, holder });
        }
    }
    Step::Answer(AcquireReply::Busy)
}

/// An acquire's first phase: its answer, or the holder check it waits on.
pub(super) type Acquired = Step<AcquireReply, AcquireCheck>;

/// §1c `onBusy: "skip"`: the caller takes a slot only if one is its own
/// now (judged with the limit it names), and then the decision goes on
/// from there; else nothing of the trial stands and nothing is registered.
fn take_slot_or_nothing(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: &AcquireRequest,
    member: Member,
    wake: &mut Vec<Holder>,
) -> Option<AcquireReply> {
    let mut trial = key.clone();
    let mut trial_wake = wake.clone();
    trial.name_limit(&request.options);
    let reply = take_slot(&mut trial, now_ms, request, member, &mut trial_wake, false)?;
    *key = trial;
    *wake = trial_wake;
    Some(reply)
}

/// An acquire's first phase: granted, waiting, or waiting for a holder's
/// check ([`AcquireCheck`], answered by [`acquire_checked`]).
pub(super) fn acquire(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: AcquireRequest,
) -> Result<Acquired, BatonError> {
    let member = key.member(&request.id);
    if member == Member::Superseded {
        return Ok(Step::Answer(AcquireReply::Superseded));
    }
    if request.options.skip && member == Member::Stranger {
        return Ok(acquire_skip(key, now_ms, request));
    }
    if full(&key.s, &member, false, &request.options) {
        // §1f: granted only if at once, else nothing is registered.
        let mut wake = Vec::new();
        let taken = take_slot_or_nothing(key, now_ms, &request, member, &mut wake);
        for holder in wake {
            key.wake(holder);
        }
        return Ok(Step::Answer(taken.unwrap_or(AcquireReply::Full)));
    }
    if member == Member::Stranger {
        key.check_room()?;
    }
    key.name_limit(&request.options);
    key.name_max_waiting(&request.options);
    key.name_workflow(&member, &request.options);
    let mut wake = Vec::new();
    let taken = take_slot(key, now_ms, &request, member, &mut wake, true);
    for holder in wake {
        key.wake(holder);
    }
    if let Some(reply) = taken {
        return Ok(Step::Answer(reply));
    }
    // A caller left waiting finds every slot taken, or the key paused
    // (§11), perhaps with no holder to check.
    let Some(holder) = key.holders_to_check(1).pop() else {
        assert!(key.s.paused.is_some(), "a caller waits beside a free slot");
        return Ok(Step::Answer(pending(key, &request)));
    };
    key.check(&holder.id, holder.workflow.as_ref());
    Ok(Step::Check(AcquireCheck { request, holder }))
}

/// An acquire's second phase: the checked holder's liveness applied, then
/// the caller's slot if one is its own now, else its wait (with `onBusy:
/// "skip"`, the first phase registered nothing: the check's consequences
/// stand, and the caller takes a slot only if one is its own now).
pub(super) fn acquire_checked(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: AcquireRequest,
    holder: &Holder,
    liveness: Liveness,
) -> AcquireReply {
    let mut wake = Vec::new();
    apply_check(key, now_ms, holder, liveness, &mut wake);
    let member = key.member(&request.id);
    let reply = if request.options.skip && member == Member::Stranger {
        take_slot_or_nothing(key, now_ms, &request, member, &mut wake).unwrap_or(AcquireReply::Busy)
    } else {
        take_slot(key, now_ms, &request, member, &mut wake, true)
            .unwrap_or_else(|| pending(key, &request))
    };
    fill_slots(key, now_ms, &mut wake);
    wake.retain(|h| h.id != request.id);
    for holder in wake {
        key.wake(holder);
    }
    reply
}

/// A caller left waiting: where, with `grant` (§1b, §1c).
pub(super) fn pending(key: &Draft<'_>, request: &AcquireRequest) -> AcquireReply {
    if !request.options.grant {
        return AcquireReply::Pending;
    }
    let (turn, position) = match key.member(&request.id) {
        Member::Waiter(waiter) => (
            waiter.turn,
            match (
                key.front.iter().position(|w| w.id == request.id),
                key.view.position,
            ) {
                (Some(n), _) => n as u32 + 1,
                // Beyond the loaded front (or registered by this decision,
                // placed where the loaded place says): less those handed
                // from the front, who were all ahead of it.
                (None, Some(n)) => n - (key.view.front.len() - key.front.len()) as u32,
                // Registered by this decision with no place loaded: behind
                // every other.
                (None, None) => key.s.waiters,
            },
        ),
        _ => (Turn::Shared, key.s.waiters + 1),
    };
    AcquireReply::Placed(Place {
        turn,
        position,
        eta_ms: eta_ms(&key.s, position),
    })
}

/// The caller's slot, if one is its own now: a holder's, or one of the
/// free slots that the hand-off order gives it (a waiter among the first
/// free ones; an id not registered where its priority and tenant would put
/// it, which is last when it names neither). The free slots ahead of it are
/// handed on either way. A caller not granted is registered when
/// `register` (and there is room), else left unregistered.
pub(super) fn take_slot(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: &AcquireRequest,
    member: Member,
    wake: &mut Vec<Holder>,
    register: bool,
) -> Option<AcquireReply> {
    let id = &request.id;
    let waiting = match member {
        Member::Superseded => return Some(AcquireReply::Superseded),
        Member::Holder(holder) => {
            if holder.state == HolderState::Handed {
                key.confirm_holder(id);
            }
            return Some(AcquireReply::Granted {
                fence: holder.fence,
            });
        }
        Member::Waiter(waiter) => Some(waiter),
        Member::Stranger => None,
    };
    let placed = placement(
        &key.s,
        key.s.limit(),
        id,
        waiting.is_some(),
        &key.front,
        key.view.position,
    )
    .expect("a caller's place is loaded when free slots meet waiters");
    let to_front: Vec<Waiter> = (key.first_waiters(key.free()).into_iter())
        .filter(|w| w.id != *id)
        .take(placed.to_front as usize)
        .collect();
    for waiter in to_front {
        wake.push(hand(key, now_ms, waiter));
    }
    if placed.takes_slot {
        return Some(grant_caller(key, now_ms, request, waiting));
    }
    if register && waiting.is_none() && key.check_room().is_ok() {
        let turn = key.new_turn(&request.options);
        key.push_waiter(caller_as_waiter(request, now_ms, turn));
    }
    None
}

/// The caller granted the slot it takes: a waiter leaves the queue (with
/// the binding the call names, if any) and is served in its turn, moving
/// its tenant on; so is a caller placed among waiters, not one that found
/// none.
fn grant_caller(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: &AcquireRequest,
    waiting: Option<Waiter>,
) -> AcquireReply {
    let (waiter, serves) = match waiting {
        Some(waiter) => {
            key.remove_waiter(&request.id);
            let waited_ms = now_ms.saturating_sub(waiter.since_ms);
            key.did
                .granted_waiters
                .push((request.id.clone(), waited_ms));
            let workflow = request.options.workflow.clone().or(waiter.workflow);
            (Waiter { workflow, ..waiter }, true)
        }
        None => (
            caller_as_waiter(request, now_ms, Turn::Shared),
            key.before.waiters > 0,
        ),
    };
    let holder = grant_slot(key, now_ms, waiter, HolderState::Holding, serves);
    AcquireReply::Granted {
        fence: holder.fence,
    }
}

/// An acquire's caller as the waiter it registers (with `turn`), or as
/// it stands to be granted at once: no input hash, no enqueue grace.
fn caller_as_waiter(request: &AcquireRequest, now_ms: u64, turn: Turn) -> Waiter {
    Waiter {
        id: request.id.clone(),
        since_ms: now_ms,
        input_hash: None,
        workflow: request.options.workflow.clone(),
        enqueued_ms: None,
        turn,
        priority: request.options.priority,
        tenant: request.options.tenant.clone(),
    }
}

/// The one place a slot is granted: with the key's next fence; `serves`:
/// the grant is the waiter's tenant's turn (§1c), moving it to the back of
/// its priority's round.
fn grant_slot(
    key: &mut Draft<'_>,
    now_ms: u64,
    waiter: Waiter,
    state: HolderState,
    serves: bool,
) -> Holder {
    let holder = Holder {
        id: waiter.id,
        since_ms: now_ms,
        state,
        workflow: waiter.workflow,
        enqueued_ms: waiter.enqueued_ms,
        turn: waiter.turn,
        fence: key.s.fence + 1,
        cancelling: false,
        // 0 for a caller granted at its own call: it joined just now.
        waited_ms: now_ms.saturating_sub(waiter.since_ms),
    };
    key.add_holder(holder.clone());
    if serves {
        key.writes.push(Write::Serve {
            priority: waiter.priority,
            tenant: waiter.tenant,
            fence: holder.fence,
        });
    }
    holder
}

fn hand(key: &mut Draft<'_>, now_ms: u64, waiter: Waiter) -> Holder {
    key.remove_waiter(&waiter.id);
    let waited_ms = now_ms.saturating_sub(waiter.since_ms);
    key.did.granted_waiters.push((waiter.id.clone(), waited_ms));
    grant_slot(key, now_ms, waiter, HolderState::Handed, true)
}

/// Every free slot handed to the front of the order; those handed are
/// added to `wake`.
pub(super) fn fill_slots(key: &mut Draft<'_>, now_ms: u64, wake: &mut Vec<Holder>) {
    let free = key.free();
    if free == 0 || key.s.waiters == 0 {
        return;
    }
    for waiter in key.first_waiters(free) {
        wake.push(hand(key, now_ms, waiter));
    }
}

/// A checked holder's liveness applied (a dead one loses its slot), the
/// free slots filled from the queue, and everyone handed one woken: what an
/// alarm's check and a woken holder found dead both come to.
pub(super) fn hand_on_checked(
    key: &mut Draft<'_>,
    now_ms: u64,
    holder: &Holder,
    liveness: Liveness,
) {
    let mut wake = Vec::new();
    apply_check(key, now_ms, holder, liveness, &mut wake);
    fill_slots(key, now_ms, &mut wake);
    for holder in wake {
        key.wake(holder);
    }
}

/// A holder check's answer: a dead holder exactly as checked (or a
/// finished one with the same grant) loses its slot; a live one not yet
/// told of a hand-over is woken again, unless it is cancelled (§1d: it is
/// to end, not to start).
pub(super) fn apply_check(
    key: &mut Draft<'_>,
    now_ms: u64,
    checked: &Holder,
    liveness: Liveness,
    wake: &mut Vec<Holder>,
) {
    let Some(holder) = key.holder(&checked.id).cloned() else {
        return;
    };
    if liveness.is_dead(checked.enqueued_ms, now_ms, key.settings.grace_ms) {
        let finished = liveness == Liveness::Dead && holder.fence == checked.fence;
        if holder == *checked || finished {
            // A slot handed over and never confirmed was not held: no hold
            // time for the estimate.
            let held = holder.state == HolderState::Holding;
            key.remove_holder(&holder.id, held.then_some(now_ms), Outcome::Dead);
        }
        return;
    }
    if holder.state == HolderState::Handed
        && !holder.cancelling
        && matches!(liveness, Liveness::Alive | Liveness::Unknown)
    {
        wake.push(holder);
    }
}
