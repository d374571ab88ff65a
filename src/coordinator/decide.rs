//! The Coordinator's one decision, [`decide`], over a targeted [`View`],
//! and the rules it keeps.
//!
//! `decide(view, now_ms, input)` reads only the view the shell loaded for
//! that input (`super::store::load`: the key's summary, which the shell
//! keeps in memory, plus the rows the input names) and returns a
//! [`Transition`]: the reply, the row [`Write`]s (carried out by
//! `super::store::write` in one `match`, or by `super::twin::apply` in the
//! simulation), the history they add (`super::history::record`), the
//! effects (holder checks, turn events, terminations), whether the key
//! needs the holder-check alarm, the view as the writes leave it, the
//! report the key's list entry is due (`crate::busy::reporter::due`) and
//! the decision-log line (`super::log::of`): nothing about a decision is
//! decided after it. The decision runs its rules on
//! [`Key`](super::scratch::Key), a scratch copy of the view that records
//! each change as a [`Write`] as it makes it; where slots go is
//! `super::grant`'s.
//!
//! # Slots
//! A key has `limit` slots (1 unless a call named another limit). A holder
//! occupies one from the moment it is handed the key (`Handed`) or granted
//! it (`Holding`) until it releases or is found dead. Free slots always go
//! to the earliest waiters: whenever a decision frees a slot (a release, a
//! dead holder, a raised limit seen by `acquire`), it hands the free slots
//! to the front of the queue and returns those holders to be woken.
//! Lowering the limit takes no slot away; it only stops new grants until
//! the holders are below it. While an operator paused the key no slot is
//! free (`super::steer::free_slots`), so nothing is granted; an operator's
//! limit override wins over the callers' (`super::steer`). `enqueue` registers waiters and records a
//! limit but hands nothing on: the next acquire, release or alarm does.
//!
//! # Grants and fences (contract §1b)
//! Every grant of a slot, by `acquire` or by a hand-off, takes the key's
//! next fence (the summary's `fence` + 1), in one place of the decision, so
//! no path can grant without one. A registration made with `grant` gets a
//! [`Turn::Own`]: when a slot is handed to it, the shell sends it the grant
//! itself (key, id, fence) on that registration's own event type, and
//! reports the engine's acceptance back (`Input::Woken` with `accepted`),
//! after which the holder counts as told and the event is not sent again.
//!
//! # Who goes next (contract §1c)
//! "The front of the queue" is the hand-off order: the highest priority
//! present first; within a priority, the tenants with waiters take turns
//! (a tenant never served first, by its earliest waiter; then the one
//! served longest ago), each turn going to that tenant's earliest waiter.
//! A tenant is served when a waiter of it is granted a slot (a
//! `Write::Serve` with the grant's fence moves it to the back of its
//! priority's round); a caller granted at once with nobody waiting serves
//! no one. An id not registered counts where its priority and tenant put
//! it (with neither: last, as §1a says). The order is the storage's to
//! read cheaply (`View::front`, `View::position`); the decision only takes
//! from the front.
//!
//! `onBusy: "skip"` applies to a call that would register the id: an
//! enqueue answers busy when every slot is held or anyone waits; an
//! acquire answers busy unless it is granted at once, and then registers
//! nothing and changes nothing (it checks a holder first when nobody
//! waits, since no alarm would). An id already registered is answered as
//! without it.
//!
//! # Cancel in progress (contract §1d)
//! A superseding enqueue with `cancelHolders` that does not coalesce (the
//! candidate is checked first) cancels every holder not cancelled yet
//! ([`cancel_holders`]): each is marked, terminated through its own
//! Workflow and its status asked (`Input::Cancelled`), and keeps its slot
//! until that status (or the alarm's, which terminates it again) finds it
//! dead; the slot then goes on as any dead holder's does. The option is
//! refused without `supersedes` and on `acquire`, before anything else.
//!
//! A hold finishes when its holder releases, or is found dead after it
//! confirmed its slot; the last [`HOLD_TIMES_KEPT`](crate::limits::HOLD_TIMES_KEPT)
//! lengths give `etaMs` (`super::grant::eta_ms`).

use super::check::{apply_check, check, check_or_terminate, hand_on_checked, terminate_holder};
use super::effect::Effect;
use super::grant::{acquire, fill_slots, pending, take_slot};
use super::history::Outcome;
use super::log::Asked;
use super::scratch::Key;
use super::state::{Holder, HolderState, Liveness, Member, Turn, Waiter};
use super::steer::{self, free_slots, set_callers_limit};
use super::types::{
    AcquireReply, EnqueueReply, EnqueueRequest, Input, Options, Reply, Settings, Transition, View,
    Write,
};
use crate::error::BatonError;
use crate::limits::{
    HOLDERS_PER_KEY_MAX, HOLDER_CHECKS_PER_TICK_MAX, SUPERSEDED_REMEMBERED_MAX, WAITERS_PER_KEY_MAX,
};

/// The one decision: `input` on `view` (loaded for that input) at `now_ms`.
pub fn decide(
    view: &View,
    settings: &Settings,
    now_ms: u64,
    input: Input,
) -> Result<Transition, BatonError> {
    refuse_cancel_holders(&input)?;
    let mut key = Key::new(view, settings);
    let asked = Asked::of(&input);
    let coalesce = match &input {
        Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. } => {
            coalescing(view, &key.member(&r.id), &input)
        }
        _ => None,
    };
    let reply = match input {
        Input::Enqueue(request) => {
            let member = key.member(&request.id);
            if skips(&key, &member, &request.options) {
                Reply::Enqueue(EnqueueReply {
                    busy: true,
                    ..EnqueueReply::default()
                })
            } else if let Some(candidate) = coalesce {
                key.effects
                    .push(check(&candidate.id, candidate.workflow.as_ref(), settings));
                Reply::EnqueueChecking { request, candidate }
            } else {
                Reply::Enqueue(commit_enqueue(&mut key, now_ms, member, &request)?)
            }
        }
        Input::EnqueueChecked { request, .. } => {
            let member = key.member(&request.id);
            if skips(&key, &member, &request.options) {
                Reply::Enqueue(EnqueueReply {
                    busy: true,
                    ..EnqueueReply::default()
                })
            } else if let Some(candidate) = coalesce {
                Reply::Enqueue(EnqueueReply {
                    coalesced_into: Some(candidate.id),
                    ..EnqueueReply::default()
                })
            } else {
                Reply::Enqueue(commit_enqueue(&mut key, now_ms, member, &request)?)
            }
        }
        Input::Acquire(request) => acquire(&mut key, now_ms, request)?,
        Input::AcquireChecked {
            request,
            holder,
            liveness,
        } => {
            let grace_ms = settings.grace_ms;
            let mut wake = Vec::new();
            apply_check(&mut key, now_ms, grace_ms, &holder, liveness, &mut wake);
            let member = key.member(&request.id);
            let reply = if request.options.skip && member == Member::Stranger {
                // onBusy "skip" (§1c): the first phase registered nothing.
                // The check's consequences stand; the caller takes a slot
                // only if one is its own now, else nothing more changes.
                let mut trial = key.clone();
                let mut trial_wake = wake.clone();
                apply_limit(&mut trial, &request.options);
                match take_slot(&mut trial, now_ms, &request, member, &mut trial_wake, false) {
                    Some(reply) => {
                        key = trial;
                        wake = trial_wake;
                        reply
                    }
                    None => AcquireReply::Busy,
                }
            } else {
                take_slot(&mut key, now_ms, &request, member, &mut wake, true)
                    .unwrap_or_else(|| pending(&key, &request))
            };
            fill_slots(&mut key, now_ms, &mut wake);
            wake.retain(|h| h.id != request.id);
            for holder in wake {
                key.wake(holder);
            }
            Reply::Acquire(reply)
        }
        Input::Release(id) => {
            let mut wake = Vec::new();
            match key.member(&id) {
                Member::Holder(_) => {
                    key.remove_holder(&id, Some(now_ms), Outcome::Released);
                    fill_slots(&mut key, now_ms, &mut wake);
                }
                Member::Waiter(_) => key.remove_waiter(&id),
                Member::Superseded | Member::Stranger => {}
            }
            let next = wake.first().map(|h| h.id.clone());
            for holder in wake {
                key.wake(holder);
            }
            Reply::Release(next)
        }
        Input::Woken {
            holder,
            accepted,
            liveness,
        } => {
            // A grant the engine accepted is told: the alarm sends it no more.
            if accepted
                && matches!(holder.turn, Turn::Own(_))
                && holder.state == HolderState::Handed
                && key.holder(&holder.id) == Some(&holder)
            {
                key.confirm_holder(&holder.id);
            }
            if liveness.is_dead(holder.enqueued_ms, now_ms, settings.grace_ms) {
                hand_on_checked(&mut key, now_ms, settings.grace_ms, &holder, liveness);
            }
            Reply::Settled
        }
        Input::Tick => {
            let due = if key.needs_holder_check() {
                key.holders_to_check(HOLDER_CHECKS_PER_TICK_MAX)
            } else {
                Vec::new()
            };
            for holder in &due {
                key.effects.push(check_or_terminate(holder, settings));
            }
            Reply::Ticked(due)
        }
        Input::TickChecked { holder, answer } | Input::Cancelled { holder, answer } => {
            if key.holder(&holder.id).is_some() {
                key.writes
                    .push(Write::MarkChecked(holder.id.clone(), now_ms, answer));
            }
            let liveness = answer.liveness();
            hand_on_checked(&mut key, now_ms, settings.grace_ms, &holder, liveness);
            Reply::Settled
        }
        Input::Pause { reason } => steer::pause(&mut key, now_ms, reason),
        Input::Resume => steer::resume(&mut key, now_ms),
        Input::SetLimit(limit) => steer::set_limit(&mut key, now_ms, limit),
    };
    Ok(key.finish(reply, &asked, now_ms))
}

pub(super) fn check_room(key: &Key<'_>) -> Result<(), BatonError> {
    if key.s.waiters >= WAITERS_PER_KEY_MAX {
        return Err(BatonError::LimitExceeded {
            field: "key",
            reason: format!("already has {WAITERS_PER_KEY_MAX} waiters, the most one key holds"),
        });
    }
    Ok(())
}

pub(super) fn new_turn(key: &mut Key<'_>, options: &Options) -> Turn {
    if options.grant {
        Turn::Own(key.next_turn())
    } else {
        Turn::Shared
    }
}

pub(super) fn apply_limit(key: &mut Key<'_>, options: &Options) {
    if let Some(limit) = options.limit {
        assert!(
            (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
            "a limit out of range passed the edge"
        );
        set_callers_limit(key, limit);
    }
}

pub(super) fn apply_workflow(key: &mut Key<'_>, member: &Member, options: &Options) {
    let Some(workflow) = &options.workflow else {
        return;
    };
    match member {
        Member::Holder(holder) if holder.workflow.as_ref() != Some(workflow) => {
            if let Some(h) = key.s.holders.iter_mut().find(|h| h.id == holder.id) {
                h.workflow = Some(workflow.clone());
            }
            key.writes.push(Write::SetHolderWorkflow(
                holder.id.clone(),
                Some(workflow.clone()),
            ));
        }
        Member::Waiter(waiter) if waiter.workflow.as_ref() != Some(workflow) => {
            let updated = Waiter {
                workflow: Some(workflow.clone()),
                ..waiter.clone()
            };
            if let Some(w) = key.front.iter_mut().find(|w| w.id == waiter.id) {
                *w = updated.clone();
            }
            key.member = Some(Member::Waiter(updated));
            key.writes.push(Write::SetWaiterWorkflow(
                waiter.id.clone(),
                Some(workflow.clone()),
            ));
        }
        _ => {}
    }
}

/// An id that holds the key or was superseded: an enqueue of it changes
/// no registration (superseded is final for an id, §1).
pub(super) fn is_settled(member: &Member) -> bool {
    matches!(member, Member::Holder(_) | Member::Superseded)
}

/// Coalescing (contract §1): a superseding enqueue with an input hash,
/// from an id neither holding nor superseded, joins the earliest waiter
/// with that hash (another id: `View::candidate`) instead of registering,
/// once that waiter is checked and found alive. On the enqueue's first
/// phase, the candidate to check; on its second, the waiter it coalesces
/// into: the one checked, found alive, and still the candidate. `None`:
/// the enqueue is committed (and, superseding, drops the other waiters).
pub(super) fn coalescing(view: &View, member: &Member, input: &Input) -> Option<Waiter> {
    let (request, checked) = match input {
        Input::Enqueue(request) => (request, None),
        Input::EnqueueChecked {
            request,
            candidate,
            liveness,
        } => (request, Some((candidate, *liveness))),
        _ => return None,
    };
    if !request.supersedes || is_settled(member) {
        return None;
    }
    request.input_hash.as_ref()?;
    let candidate = view.candidate.clone().filter(|w| w.id != request.id)?;
    match checked {
        None => Some(candidate),
        Some((was, liveness)) => {
            (liveness == Liveness::Alive && candidate.id == was.id).then_some(candidate)
        }
    }
}

fn commit_enqueue(
    key: &mut Key<'_>,
    now_ms: u64,
    member: Member,
    request: &EnqueueRequest,
) -> Result<EnqueueReply, BatonError> {
    if !request.supersedes && member == Member::Stranger {
        check_room(key)?;
    }
    apply_limit(key, &request.options);
    apply_workflow(key, &member, &request.options);
    if is_settled(&member) {
        return Ok(EnqueueReply::default());
    }
    let terminated = if request.supersedes {
        let dropped: Vec<Waiter> = (key.view.arrived.iter())
            .filter(|w| w.id != request.id)
            .cloned()
            .collect();
        if !dropped.is_empty() {
            key.writes.push(Write::SupersedeAllExcept(
                request.id.clone(),
                dropped.len() as u32,
            ));
            key.s.waiters -= dropped.len() as u32;
            key.s.none_superseded = false;
            key.front.retain(|w| w.id == request.id);
        }
        key.writes
            .push(Write::ForgetSupersededBeyond(SUPERSEDED_REMEMBERED_MAX));
        dropped
    } else {
        Vec::new()
    };
    if member == Member::Stranger {
        let turn = new_turn(key, &request.options);
        key.push_waiter(Waiter {
            id: request.id.clone(),
            since_ms: now_ms,
            input_hash: request.input_hash.clone(),
            workflow: request.options.workflow.clone(),
            enqueued_ms: Some(now_ms),
            turn,
            priority: request.options.priority,
            tenant: request.options.tenant.clone(),
        });
    }
    let cancelled = if request.options.cancel_holders {
        cancel_holders(key)
    } else {
        Vec::new()
    };
    for waiter in &terminated {
        let workflow = waiter
            .workflow
            .as_ref()
            .map_or_else(|| key.settings.workflow.clone(), |w| w.to_string());
        key.effects
            .push(Effect::Terminate(crate::transition::Terminate {
                id: waiter.id.clone(),
                workflow,
            }));
    }
    Ok(EnqueueReply {
        terminated,
        cancelled,
        ..EnqueueReply::default()
    })
}

/// §1d: a superseding enqueue with `cancelHolders` that does not coalesce
/// cancels every holder of the key not cancelled yet (the caller holds
/// none: an enqueue from a holder changes nothing). Each keeps its slot,
/// marked cancelling, and is terminated through its own Workflow outside
/// the gate, its status asked right after (`Input::Cancelled`); it loses
/// the slot only when found dead, and the slot then goes on by the usual
/// order with the next fence. Returns them as cancelled.
fn cancel_holders(key: &mut Key<'_>) -> Vec<Holder> {
    let to_cancel: Vec<Holder> = (key.s.holders.iter())
        .filter(|h| !h.cancelling)
        .cloned()
        .collect();
    let mut cancelled = Vec::with_capacity(to_cancel.len());
    for holder in to_cancel {
        let holder = key.cancel_holder(&holder.id);
        key.effects.push(terminate_holder(&holder, key.settings));
        cancelled.push(holder);
    }
    cancelled
}

/// §1d: `cancelHolders` is an option of a superseding enqueue only.
/// Refused (naming it, before anything is decided) with `supersedes`
/// false, and on `acquire`.
fn refuse_cancel_holders(input: &Input) -> Result<(), BatonError> {
    let refused = |reason: &str| {
        Err(BatonError::Invalid {
            field: "cancelHolders",
            reason: reason.to_owned(),
        })
    };
    match input {
        Input::Enqueue(r) | Input::EnqueueChecked { request: r, .. }
            if r.options.cancel_holders && !r.supersedes =>
        {
            refused("needs supersedes: true (only a superseding enqueue cancels holders)")
        }
        Input::Acquire(r) | Input::AcquireChecked { request: r, .. }
            if r.options.cancel_holders =>
        {
            refused("is an option of a superseding enqueue, not of acquire")
        }
        _ => Ok(()),
    }
}

/// §1c `onBusy: "skip"` on an enqueue: a call that would register the id
/// finds every slot held (judged with the limit it names, unless an
/// override is in force) or someone waiting; a paused key is busy (§11). An id already registered is answered as without it.
fn skips(key: &Key<'_>, member: &Member, options: &Options) -> bool {
    let limit = key.s.limit_for(options.limit);
    options.skip
        && *member == Member::Stranger
        && (key.s.waiters > 0 || free_slots(&key.s, limit, 0) == 0)
}
