//! Where slots go: an acquire's grant or its wait, the one place a slot is
//! granted ([`grant_slot`]), hand-offs to the front of the order, and what
//! a holder check's answer does to the slots.

use super::check::{check, due_for_check};
use super::decide::{apply_limit, apply_workflow, check_room, new_turn};
use super::scratch::Key;
use super::state::{Holder, HolderState, Member, Turn, Waiter};
use super::types::{AcquireReply, AcquireRequest, Place, Reply, Summary, Write};
use crate::error::BatonError;

/// §1c `onBusy: "skip"` on an acquire of an id not registered: granted if
/// it would be at once (with the limit the call names), else nothing is
/// registered and nothing changes. With nobody waiting no alarm watches
/// the holders, so a dead one would keep the key from every caller that
/// skips: the least recently checked holder is checked first, and the
/// second phase decides.
fn acquire_skip(key: &mut Key<'_>, now_ms: u64, request: AcquireRequest) -> Reply {
    let mut trial = key.clone();
    apply_limit(&mut trial, &request.options);
    let mut wake = Vec::new();
    if let Some(reply) = take_slot(
        &mut trial,
        now_ms,
        &request,
        Member::Stranger,
        &mut wake,
        false,
    ) {
        for holder in wake {
            trial.wake(holder);
        }
        *key = trial;
        return Reply::Acquire(reply);
    }
    let limit = key.s.limit_for(request.options.limit);
    if key.s.waiters == 0 && key.s.holders.len() as u32 >= limit {
        let due = due_for_check(&key.s.holders, &key.view.checked_ms, true, 1);
        if let Some(holder) = due.into_iter().next() {
            key.effects
                .push(check(&holder.id, holder.workflow.as_ref(), key.settings));
            return Reply::AcquireChecking { request, holder };
        }
    }
    Reply::Acquire(AcquireReply::Busy)
}

pub(super) fn acquire(
    key: &mut Key<'_>,
    now_ms: u64,
    request: AcquireRequest,
) -> Result<Reply, BatonError> {
    let member = key.member(&request.id);
    if member == Member::Superseded {
        return Ok(Reply::Acquire(AcquireReply::Superseded));
    }
    if request.options.skip && member == Member::Stranger {
        return Ok(acquire_skip(key, now_ms, request));
    }
    if member == Member::Stranger {
        check_room(key)?;
    }
    apply_limit(key, &request.options);
    apply_workflow(key, &member, &request.options);
    let mut wake = Vec::new();
    let taken = take_slot(key, now_ms, &request, member, &mut wake, true);
    for holder in wake {
        key.wake(holder);
    }
    if let Some(reply) = taken {
        return Ok(Reply::Acquire(reply));
    }
    // A caller left waiting finds every slot taken, or the key paused
    // (§11), perhaps with no holder to check.
    let Some(holder) = key.holders_to_check(1).pop() else {
        assert!(key.s.paused.is_some(), "a caller waits beside a free slot");
        return Ok(Reply::Acquire(pending(key, &request)));
    };
    key.effects
        .push(check(&holder.id, holder.workflow.as_ref(), key.settings));
    Ok(Reply::AcquireChecking { request, holder })
}

pub(super) fn pending(key: &Key<'_>, request: &AcquireRequest) -> AcquireReply {
    if !request.options.grant {
        return AcquireReply::Pending(None);
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
    AcquireReply::Pending(Some(Place {
        turn,
        position,
        eta_ms: eta_ms(&key.s, position),
    }))
}

/// §1c's estimate of the wait of the waiter at `position`: the mean of the
/// key's last finished holds, times the rounds of `limit` slots ahead of
/// it (`ceil(position / limit)`); `None` before a finished hold.
pub fn eta_ms(summary: &Summary, position: u32) -> Option<u64> {
    let times = &summary.hold_times_ms;
    if times.is_empty() {
        return None;
    }
    let mean = times.iter().sum::<u64>() / times.len() as u64;
    let rounds = u64::from(position.div_ceil(summary.limit.max(1)));
    Some(mean.saturating_mul(rounds))
}

/// The caller's slot, if one is its own now: a holder's, or one of the
/// free slots that the hand-off order gives it (a waiter among the first
/// free ones; an id not registered where its priority and tenant would put
/// it, which is last when it names neither). The free slots ahead of it are
/// handed on either way. A caller not granted is registered when
/// `register` (and there is room), else left unregistered.
pub(super) fn take_slot(
    key: &mut Key<'_>,
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
    let free = key.free();
    let ahead = if free > 0 && key.s.waiters > 0 {
        key.first_waiters(free)
    } else {
        Vec::new()
    };
    let granted = match &waiting {
        Some(_) => ahead.iter().any(|w| w.id == *id),
        // Its place among the waiters as if it joined now (1 is next).
        None if free == 0 => false,
        None if key.s.waiters == 0 => true,
        None => {
            let place = key
                .view
                .position
                .expect("a caller's place is loaded when free slots meet waiters");
            place <= free
        }
    };
    // A caller not registered that takes a slot takes one of the free
    // ones: the last of those it leaves to the waiters stays with it.
    let others = if granted && waiting.is_none() {
        free as usize - 1
    } else {
        ahead.len()
    };
    for waiter in ahead.into_iter().take(others) {
        if waiter.id != *id {
            wake.push(hand(key, now_ms, waiter));
        }
    }
    if granted {
        // A waiter served in its turn moves its tenant on; so does a
        // caller placed among waiters, not one that found none.
        let (waiter, serves) = match waiting {
            Some(waiter) => {
                key.remove_waiter(id);
                let waited_ms = now_ms.saturating_sub(waiter.since_ms);
                key.did.granted_waiters.push((id.clone(), waited_ms));
                let workflow = request.options.workflow.clone().or(waiter.workflow);
                (Waiter { workflow, ..waiter }, true)
            }
            None => (
                Waiter {
                    id: id.clone(),
                    since_ms: now_ms,
                    input_hash: None,
                    workflow: request.options.workflow.clone(),
                    enqueued_ms: None,
                    turn: Turn::Shared,
                    priority: request.options.priority,
                    tenant: request.options.tenant.clone(),
                },
                key.view.summary.waiters > 0,
            ),
        };
        let holder = grant_slot(key, now_ms, waiter, HolderState::Holding, serves);
        return Some(AcquireReply::Granted {
            fence: holder.fence,
        });
    }
    if register && waiting.is_none() && check_room(key).is_ok() {
        let turn = new_turn(key, &request.options);
        key.push_waiter(Waiter {
            id: id.clone(),
            since_ms: now_ms,
            input_hash: None,
            workflow: request.options.workflow.clone(),
            enqueued_ms: None,
            turn,
            priority: request.options.priority,
            tenant: request.options.tenant.clone(),
        });
    }
    None
}

/// The one place a slot is granted: with the key's next fence; `serves`:
/// the grant is the waiter's tenant's turn (§1c), moving it to the back of
/// its priority's round.
fn grant_slot(
    key: &mut Key<'_>,
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

fn hand(key: &mut Key<'_>, now_ms: u64, waiter: Waiter) -> Holder {
    key.remove_waiter(&waiter.id);
    let waited_ms = now_ms.saturating_sub(waiter.since_ms);
    key.did.granted_waiters.push((waiter.id.clone(), waited_ms));
    grant_slot(key, now_ms, waiter, HolderState::Handed, true)
}

pub(super) fn fill_slots(key: &mut Key<'_>, now_ms: u64, wake: &mut Vec<Holder>) {
    let free = key.free();
    if free == 0 || key.s.waiters == 0 {
        return;
    }
    for waiter in key.first_waiters(free) {
        wake.push(hand(key, now_ms, waiter));
    }
}
