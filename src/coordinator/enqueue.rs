//! `enqueue` (contract §1), every rule of it in one place: registering a
//! waiter, coalescing into a live waiter with the same input, superseding
//! (the other waiters dropped and owed their termination), `onBusy:
//! "skip"` ([`skips`]), §1f `maxWaiting` ([`full`], which `acquire` asks
//! too) and §1d `cancelHolders` ([`cancel_holders`]).
//!
//! `enqueue` registers waiters and records a limit but hands nothing on:
//! the next acquire, release or alarm does.
//!
//! # Cancel in progress (contract §1d)
//! A superseding enqueue with `cancelHolders` that does not coalesce (the
//! candidate is checked first) cancels every holder not cancelled yet
//! ([`cancel_holders`]): each is marked, terminated through its own
//! Workflow and its status asked (`Input::Cancelled`), and keeps its slot
//! until that status (or the alarm's, which terminates it again,
//! `Draft::check_or_terminate`) finds it dead; the slot then goes on as
//! any dead holder's does (`super::grant::apply_check`). The option is
//! refused without `supersedes` and on `acquire`, before anything else
//! ([`refuse_cancel_holders`]).

use super::draft::Draft;
use super::slots::{free_slots, full};
use super::types::{
    EnqueueCheck, EnqueueReply, EnqueueRequest, Holder, Input, Liveness, Member, Options, View,
    Waiter, Write,
};
use crate::error::BatonError;
use crate::limits::SUPERSEDED_REMEMBERED_MAX;
use crate::transition::Step;

/// An enqueue's first phase: busy (`onBusy: "skip"`), a coalescing
/// candidate to check (what waits on it, [`EnqueueCheck`], answered by
/// [`enqueue_checked`]), or committed.
pub(super) fn enqueue(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: EnqueueRequest,
) -> Result<Step<EnqueueReply, EnqueueCheck>, BatonError> {
    let member = key.member(&request.id);
    if let Some(refused) = refused(key, &member, &request) {
        return Ok(Step::Answer(refused));
    }
    if let Some(candidate) = coalescing(key.view, &member, &request, None) {
        key.check(&candidate.id, candidate.workflow.as_ref());
        return Ok(Step::Check(EnqueueCheck { request, candidate }));
    }
    Ok(Step::Answer(commit_enqueue(key, now_ms, member, &request)?))
}

/// An enqueue's second phase: the candidate's liveness decides whether it
/// coalesces; else it is committed as the first phase would have.
pub(super) fn enqueue_checked(
    key: &mut Draft<'_>,
    now_ms: u64,
    request: EnqueueRequest,
    candidate: &Waiter,
    liveness: Liveness,
) -> Result<EnqueueReply, BatonError> {
    let member = key.member(&request.id);
    if let Some(refused) = refused(key, &member, &request) {
        return Ok(refused);
    }
    let checked = Some((candidate, liveness));
    if let Some(candidate) = coalescing(key.view, &member, &request, checked) {
        return Ok(EnqueueReply {
            coalesced_into: Some(candidate.id),
            ..EnqueueReply::default()
        });
    }
    commit_enqueue(key, now_ms, member, &request)
}

/// An enqueue that registers nothing and changes nothing: busy (§1c
/// `onBusy: "skip"`), or full (§1f `maxWaiting`, answered as busy).
fn refused(key: &Draft<'_>, member: &Member, request: &EnqueueRequest) -> Option<EnqueueReply> {
    let skip = skips(key, member, &request.options);
    let full = !skip && full(&key.s, member, request.supersedes, &request.options);
    (skip || full).then(|| EnqueueReply {
        busy: true,
        full,
        ..EnqueueReply::default()
    })
}

/// An id that holds the key or was superseded: an enqueue of it changes
/// no registration (superseded is final for an id, §1).
pub(super) fn is_settled(member: &Member) -> bool {
    matches!(member, Member::Holder(_) | Member::Superseded)
}

/// The enqueue `input` names, and for its second phase the candidate it
/// checked and that candidate's liveness.
pub(super) fn enqueue_of(input: &Input) -> Option<(&EnqueueRequest, Option<(&Waiter, Liveness)>)> {
    match input {
        Input::Enqueue(request) => Some((request, None)),
        Input::EnqueueChecked {
            request,
            candidate,
            liveness,
        } => Some((request, Some((candidate, *liveness)))),
        _ => None,
    }
}

/// Coalescing (contract §1): a superseding enqueue with an input hash,
/// from an id neither holding nor superseded, joins the earliest waiter
/// with that hash (another id: `View::candidate`) instead of registering,
/// once that waiter is checked and found alive. On the enqueue's first
/// phase (`checked: None`), the candidate to check; on its second, the
/// waiter it coalesces into: the one checked, found alive, and still the
/// candidate. `None`: the enqueue is committed (and, superseding, drops
/// the other waiters).
pub(super) fn coalescing(
    view: &View,
    member: &Member,
    request: &EnqueueRequest,
    checked: Option<(&Waiter, Liveness)>,
) -> Option<Waiter> {
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
    key: &mut Draft<'_>,
    now_ms: u64,
    member: Member,
    request: &EnqueueRequest,
) -> Result<EnqueueReply, BatonError> {
    if !request.supersedes && member == Member::Stranger {
        key.check_room()?;
    }
    key.name_limit(&request.options);
    key.name_max_waiting(&request.options);
    key.name_workflow(&member, &request.options);
    if is_settled(&member) {
        return Ok(EnqueueReply::default());
    }
    let terminated = if request.supersedes {
        supersede(key, request)
    } else {
        Vec::new()
    };
    if member == Member::Stranger {
        let turn = key.new_turn(&request.options);
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
        key.terminate_waiter(waiter);
    }
    Ok(EnqueueReply {
        terminated,
        cancelled,
        ..EnqueueReply::default()
    })
}

/// Supersede (contract §1): every waiter but the caller is remembered as
/// superseded and leaves, owed its termination; returns them in the order
/// they joined.
fn supersede(key: &mut Draft<'_>, request: &EnqueueRequest) -> Vec<Waiter> {
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
        if key.s.waiters == 0 {
            key.s.sole = None;
        }
        key.s.none_superseded = false;
        key.front.retain(|w| w.id == request.id);
    }
    key.writes
        .push(Write::ForgetSupersededBeyond(SUPERSEDED_REMEMBERED_MAX));
    dropped
}

/// §1d: a superseding enqueue with `cancelHolders` that does not coalesce
/// cancels every holder of the key not cancelled yet (the caller holds
/// none: an enqueue from a holder changes nothing). Each keeps its slot,
/// marked cancelling, and is terminated through its own Workflow outside
/// the gate, its status asked right after (`Input::Cancelled`); it loses
/// the slot only when found dead, and the slot then goes on by the usual
/// order with the next fence. Returns them as cancelled.
fn cancel_holders(key: &mut Draft<'_>) -> Vec<Holder> {
    let to_cancel: Vec<Holder> = (key.s.holders.iter())
        .filter(|h| !h.cancelling)
        .cloned()
        .collect();
    let mut cancelled = Vec::with_capacity(to_cancel.len());
    for holder in to_cancel {
        let holder = key.cancel_holder(&holder.id);
        key.terminate_holder(&holder);
        cancelled.push(holder);
    }
    cancelled
}

/// §1d: `cancelHolders` is an option of a superseding enqueue only.
/// Refused (naming it, before anything is decided) with `supersedes`
/// false, and on `acquire`.
pub(super) fn refuse_cancel_holders(input: &Input) -> Result<(), BatonError> {
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
/// override is in force) or someone waiting; a paused key is busy (§11).
/// An id already registered is answered as without it.
fn skips(key: &Draft<'_>, member: &Member, options: &Options) -> bool {
    let limit = key.s.limit_for(options.limit);
    options.skip
        && *member == Member::Stranger
        && (key.s.waiters > 0 || free_slots(&key.s, limit, 0) == 0)
}
