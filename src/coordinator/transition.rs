//! The Coordinator's one decision, [`decide`], over a targeted [`View`].
//!
//! `decide(view, now_ms, input)` reads only the view the shell loaded for
//! that input (`super::sql::load`: the key's summary, which the shell keeps
//! in memory, plus the rows the input names) and returns the shared
//! [`crate::transition::Transition`]: the reply, the row [`Write`]s (carried
//! out by `super::sql::write` in one `match`, or by `super::memory::apply` in
//! the simulation), the effects (holder checks, turn events, terminations),
//! whether the key needs the holder-check alarm, and the view as the writes
//! leave it.
//!
//! The rules are the ones `decide.rs` states (slots, grants and fences, the
//! grace); the decision runs them on [`Key`], a scratch copy of the view
//! that records each change as a [`Write`] as it makes it.

use super::effect::{Effect, Handed};
use super::state::{Holder, HolderState, Liveness, Member, Turn, Waiter};
use super::{AcquireReply, AcquireRequest, EnqueueReply, EnqueueRequest, Options, Place};
use crate::error::BatonError;
use crate::ident::{Ident, InstanceId, WorkflowName};
use crate::limits::{
    HOLDERS_PER_KEY_MAX, HOLDER_CHECKS_PER_TICK_MAX, HOLD_TIMES_KEPT, SUPERSEDED_REMEMBERED_MAX,
    WAITERS_PER_KEY_MAX,
};
use crate::transition::{Alarm, Check, Terminate, Wake};

/// A decision of the Coordinator.
pub type Transition = crate::transition::Transition<Reply, Write, View, Effect>;

/// What the key's summary holds: everything a decision knows of the key
/// without reading its queue. The shell keeps it in memory between
/// decisions (the object is the only writer of its rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub limit: u32,
    /// The highest fence granted (0 before the first grant).
    pub fence: u64,
    /// The last registration number drawn for a [`Turn::Own`].
    pub turns: u64,
    pub waiters: u32,
    /// In the order they got the key.
    pub holders: Vec<Holder>,
    /// The key remembers no superseded id (`false`: not known).
    pub none_superseded: bool,
    /// How long the key's last finished holds lasted, oldest first, at
    /// most [`HOLD_TIMES_KEPT`] (§1c's `etaMs`): a hold finishes when its
    /// holder releases, or is found dead after it confirmed its slot.
    pub hold_times_ms: Vec<u64>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            limit: 1,
            fence: 0,
            turns: 0,
            waiters: 0,
            holders: Vec::new(),
            none_superseded: true,
            hold_times_ms: Vec::new(),
        }
    }
}

/// The rows one input needs, as `super::sql::load` read them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    pub summary: Summary,
    /// The place of the id the input names (a holder's is in the summary).
    pub member: Option<Member>,
    /// The first waiters in the order the key is handed on (§1c: highest
    /// priority first, round the tenants within one), as many as the input
    /// may hand slots to.
    pub front: Vec<Waiter>,
    /// Holders due a check, least recently checked first, each with when it
    /// was last checked (`None`: never).
    pub to_check: Vec<(Holder, Option<u64>)>,
    /// A superseding enqueue's coalesce candidate (the earliest waiter with
    /// its input hash).
    pub candidate: Option<Waiter>,
    /// A superseding enqueue's victims: every waiter but the caller, in order.
    pub others: Vec<Waiter>,
    /// The caller's place in the hand-off order (1 is next), as the rows
    /// stand before the decision: a waiter's own when it waits beyond
    /// `front`; for an id not registered, where its priority and tenant
    /// would put it if it joined now (§1c). Loaded when the decision needs
    /// it (see `super::sql::load`).
    pub position: Option<u32>,
}

/// The settings the decisions read: the Worker's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// §1a's `ENQUEUE_GRACE_MS`.
    pub grace_ms: u64,
    /// `WORKFLOW_BINDING`: the binding of an instance that names none.
    pub workflow: String,
}

/// What a decision is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Enqueue(EnqueueRequest),
    /// An enqueue's second phase: the coalesce candidate's liveness.
    EnqueueChecked {
        request: EnqueueRequest,
        candidate: Waiter,
        liveness: Liveness,
    },
    Acquire(AcquireRequest),
    /// An acquire's second phase: the checked holder's liveness.
    AcquireChecked {
        request: AcquireRequest,
        holder: Holder,
        liveness: Liveness,
    },
    Release(InstanceId),
    /// What became of a turn event sent to `holder` (as it was handed):
    /// whether the engine accepted it, and the instance's status after.
    Woken {
        holder: Holder,
        accepted: bool,
        liveness: Liveness,
    },
    /// The holder-check alarm, for a key it found due.
    Tick,
    /// A holder check of the alarm's, answered.
    TickChecked {
        holder: Holder,
        liveness: Liveness,
    },
}

/// The Coordinator's replies, and the placeholders of calls whose answer
/// an answering check decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Enqueue(EnqueueReply),
    /// An enqueue waiting for its candidate's check.
    EnqueueChecking {
        request: EnqueueRequest,
        candidate: Waiter,
    },
    Acquire(AcquireReply),
    /// An acquire waiting for its holder's check.
    AcquireChecking {
        request: AcquireRequest,
        holder: Holder,
    },
    /// `release`: the first instance handed the caller's slot.
    Release(Option<InstanceId>),
    /// The alarm's holder checks, as the holders stood.
    Ticked(Vec<Holder>),
    /// A result that re-entered and needs no answer.
    Settled,
}

/// One row-level change to a key, in the order the decision made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    SetLimit(u32),
    /// The key's registration counter becomes this (one more than before).
    DrawTurn(u64),
    /// A holder behind the others; raises the key's fence to its own.
    AddHolder(Holder),
    /// `Handed` becomes `Holding`.
    ConfirmHolder(InstanceId),
    SetHolderWorkflow(InstanceId, Option<WorkflowName>),
    /// The holder leaves; with the time its hold finished, when it counts
    /// as a finished hold (§1c's `etaMs`, [`Summary::hold_times_ms`]).
    RemoveHolder(InstanceId, Option<u64>),
    /// A grant (of this fence) served a waiter of this priority and tenant:
    /// the tenant goes to the back of its priority's round (§1c).
    Serve {
        priority: i8,
        tenant: Option<Ident>,
        fence: u64,
    },
    MarkChecked(InstanceId, u64),
    /// A waiter behind every other.
    PushWaiter(Waiter),
    SetWaiterWorkflow(InstanceId, Option<WorkflowName>),
    RemoveWaiter(InstanceId),
    /// Every waiter but this one is remembered as superseded and leaves;
    /// the count is how many.
    SupersedeAllExcept(InstanceId, u32),
    /// Forgets the oldest superseded ids beyond this many.
    ForgetSupersededBeyond(u32),
}

/// The scratch a decision works on: the view, changed as the writes it
/// records would change the rows.
#[derive(Clone)]
struct Key<'v> {
    view: &'v View,
    s: Summary,
    /// The input's id's place, as this decision left it.
    member: Option<Member>,
    /// The loaded front of the queue, less those this decision took out.
    front: Vec<Waiter>,
    /// Holders added by this decision (never checked), in order.
    added: Vec<Holder>,
    writes: Vec<Write>,
    effects: Vec<Effect>,
    settings: &'v Settings,
}

impl<'v> Key<'v> {
    fn new(view: &'v View, settings: &'v Settings) -> Self {
        Key {
            view,
            s: view.summary.clone(),
            member: view.member.clone(),
            front: view.front.clone(),
            added: Vec::new(),
            writes: Vec::new(),
            effects: Vec::new(),
            settings,
        }
    }

    fn holder(&self, id: &InstanceId) -> Option<&Holder> {
        self.s.holders.iter().find(|h| h.id == *id)
    }

    /// `id`'s place: a holder from the summary, else the loaded place of the
    /// id the input names.
    fn member(&self, id: &InstanceId) -> Member {
        if let Some(holder) = self.holder(id) {
            return Member::Holder(holder.clone());
        }
        match &self.member {
            Some(Member::Holder(h)) if h.id == *id => Member::Stranger,
            Some(Member::Waiter(w)) if w.id == *id => Member::Waiter(w.clone()),
            Some(Member::Superseded) | Some(Member::Stranger) => {
                self.member.clone().expect("matched")
            }
            _ => panic!("the place of an id the input does not name"),
        }
    }

    fn free(&self) -> u32 {
        self.s.limit.saturating_sub(self.s.holders.len() as u32)
    }

    fn first_waiters(&self, n: u32) -> Vec<Waiter> {
        let n = n.min(self.s.waiters) as usize;
        assert!(
            self.front.len() >= n,
            "the view holds fewer waiters than the decision needs"
        );
        self.front[..n].to_vec()
    }

    fn set_limit(&mut self, limit: u32) {
        self.s.limit = limit;
        self.writes.push(Write::SetLimit(limit));
    }

    fn next_turn(&mut self) -> u64 {
        self.s.turns += 1;
        self.writes.push(Write::DrawTurn(self.s.turns));
        self.s.turns
    }

    fn add_holder(&mut self, holder: Holder) {
        assert!(holder.fence > self.s.fence, "a fence granted twice");
        self.s.fence = holder.fence;
        self.s.holders.push(holder.clone());
        self.added.push(holder.clone());
        self.writes.push(Write::AddHolder(holder));
    }

    fn confirm_holder(&mut self, id: &InstanceId) {
        if let Some(h) = self.s.holders.iter_mut().find(|h| h.id == *id) {
            if h.state == HolderState::Handed {
                h.state = HolderState::Holding;
                self.writes.push(Write::ConfirmHolder(id.clone()));
            }
        }
    }

    /// `ended_ms`: when its hold finished, if it counts as a finished hold.
    fn remove_holder(&mut self, id: &InstanceId, ended_ms: Option<u64>) {
        let Some(holder) = self.holder(id).cloned() else {
            return;
        };
        self.s.holders.retain(|h| h.id != *id);
        if let Some(end) = ended_ms {
            let times = &mut self.s.hold_times_ms;
            times.push(end.saturating_sub(holder.since_ms));
            let over = times.len().saturating_sub(HOLD_TIMES_KEPT);
            times.drain(..over);
        }
        self.writes.push(Write::RemoveHolder(id.clone(), ended_ms));
    }

    fn push_waiter(&mut self, waiter: Waiter) {
        self.s.waiters += 1;
        if self
            .member
            .as_ref()
            .is_some_and(|m| !matches!(m, Member::Holder(_)))
        {
            self.member = Some(Member::Waiter(waiter.clone()));
        }
        self.writes.push(Write::PushWaiter(waiter));
    }

    fn remove_waiter(&mut self, id: &InstanceId) {
        let was_member = matches!(&self.member, Some(Member::Waiter(w)) if w.id == *id);
        let in_front = self.front.iter().any(|w| w.id == *id);
        if !was_member && !in_front {
            return;
        }
        self.front.retain(|w| w.id != *id);
        if was_member {
            self.member = Some(Member::Stranger);
        }
        self.s.waiters -= 1;
        self.writes.push(Write::RemoveWaiter(id.clone()));
    }

    /// Up to `n` holders due a check, least recently checked first (never
    /// checked first, in the order they got the key): every holder when
    /// someone waits, else only the `Handed` ones.
    fn holders_to_check(&self, n: u32) -> Vec<Holder> {
        let everyone = self.s.waiters > 0;
        let held = |h: &Holder| self.holder(&h.id) == Some(h);
        let loaded = self.view.to_check.iter().filter(|(h, _)| held(h));
        let never = loaded.clone().filter(|(_, c)| c.is_none()).map(|(h, _)| h);
        let checked = loaded.filter(|(_, c)| c.is_some()).map(|(h, _)| h);
        never
            .chain(self.added.iter().filter(|h| held(h)))
            .chain(checked)
            .filter(|h| everyone || h.state == HolderState::Handed)
            .take(n as usize)
            .cloned()
            .collect()
    }

    /// Asks for `holder` to be sent its turn event (and its status after).
    fn wake(&mut self, holder: Holder) {
        self.effects
            .push(Effect::Wake(holder_wake(holder, self.settings)));
    }

    fn finish(self, reply: Reply) -> Transition {
        let needs = self.needs_holder_check();
        let Key {
            view,
            s,
            writes,
            effects,
            front,
            member,
            ..
        } = self;
        // The state is what the writes leave of the parts a decision
        // changes; the rest of the view (the superseded, the holders to
        // check) is not carried on.
        let _ = view;
        Transition {
            reply,
            writes,
            effects,
            alarm: if needs { Alarm::Periodic } else { Alarm::Keep },
            state: View {
                summary: s,
                member,
                front,
                ..View::default()
            },
        }
    }

    fn needs_holder_check(&self) -> bool {
        needs_check(&self.s)
    }
}

/// The wake of `holder`, through its own Workflow.
fn holder_wake(holder: Holder, settings: &Settings) -> Wake<Handed> {
    Wake {
        id: holder.id.clone(),
        workflow: holder
            .workflow
            .as_ref()
            .map_or_else(|| settings.workflow.clone(), |w| w.to_string()),
        event: Handed {
            turn: holder.turn_n(),
            fence: holder.fence,
        },
    }
}

impl Holder {
    /// The registration number of its own turn, if it has one.
    fn turn_n(&self) -> Option<u64> {
        match self.turn {
            Turn::Shared => None,
            Turn::Own(n) => Some(n),
        }
    }
}

/// The one decision: `input` on `view` (loaded for that input) at `now_ms`.
pub fn decide(
    view: &View,
    settings: &Settings,
    now_ms: u64,
    input: Input,
) -> Result<Transition, BatonError> {
    let mut key = Key::new(view, settings);
    let reply = match input {
        Input::Enqueue(request) => {
            let member = key.member(&request.id);
            if skips(&key, &member, &request.options) {
                Reply::Enqueue(EnqueueReply {
                    busy: true,
                    ..EnqueueReply::default()
                })
            } else if let Some(candidate) = coalesce_candidate(&key, &member, &request) {
                key.effects
                    .push(check(&candidate.id, candidate.workflow.as_ref(), settings));
                Reply::EnqueueChecking { request, candidate }
            } else {
                Reply::Enqueue(commit_enqueue(&mut key, now_ms, member, &request)?)
            }
        }
        Input::EnqueueChecked {
            request,
            candidate,
            liveness,
        } => {
            let member = key.member(&request.id);
            let still = coalesce_candidate(&key, &member, &request);
            if skips(&key, &member, &request.options) {
                Reply::Enqueue(EnqueueReply {
                    busy: true,
                    ..EnqueueReply::default()
                })
            } else if liveness == Liveness::Alive && still.is_some_and(|c| c.id == candidate.id) {
                Reply::Enqueue(EnqueueReply {
                    coalesced_into: Some(candidate.id.clone()),
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
                    key.remove_holder(&id, Some(now_ms));
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
                key.effects
                    .push(check(&holder.id, holder.workflow.as_ref(), settings));
            }
            Reply::Ticked(due)
        }
        Input::TickChecked { holder, liveness } => {
            if key.holder(&holder.id).is_some() {
                key.writes
                    .push(Write::MarkChecked(holder.id.clone(), now_ms));
            }
            hand_on_checked(&mut key, now_ms, settings.grace_ms, &holder, liveness);
            Reply::Settled
        }
    };
    Ok(key.finish(reply))
}

fn check(id: &InstanceId, workflow: Option<&WorkflowName>, settings: &Settings) -> Effect {
    Effect::Check(Check {
        id: id.clone(),
        workflow: workflow.map_or_else(|| settings.workflow.clone(), |w| w.to_string()),
        answers: true,
    })
}

fn check_room(key: &Key<'_>) -> Result<(), BatonError> {
    if key.s.waiters >= WAITERS_PER_KEY_MAX {
        return Err(BatonError::LimitExceeded {
            field: "key",
            reason: format!("already has {WAITERS_PER_KEY_MAX} waiters, the most one key holds"),
        });
    }
    Ok(())
}

fn new_turn(key: &mut Key<'_>, options: &Options) -> Turn {
    if options.grant {
        Turn::Own(key.next_turn())
    } else {
        Turn::Shared
    }
}

fn apply_limit(key: &mut Key<'_>, options: &Options) {
    if let Some(limit) = options.limit {
        assert!(
            (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
            "a limit out of range passed the edge"
        );
        if key.s.limit != limit {
            key.set_limit(limit);
        }
    }
}

fn apply_workflow(key: &mut Key<'_>, member: &Member, options: &Options) {
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

fn is_settled(member: &Member) -> bool {
    matches!(member, Member::Holder(_) | Member::Superseded)
}

fn coalesce_candidate(key: &Key<'_>, member: &Member, request: &EnqueueRequest) -> Option<Waiter> {
    if !request.supersedes || is_settled(member) {
        return None;
    }
    request.input_hash.as_ref()?;
    key.view
        .candidate
        .clone()
        .filter(|waiter| waiter.id != request.id)
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
        let dropped: Vec<Waiter> = key.view.others.clone();
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
    for waiter in &terminated {
        let workflow = waiter
            .workflow
            .as_ref()
            .map_or_else(|| key.settings.workflow.clone(), |w| w.to_string());
        key.effects.push(Effect::Terminate(Terminate {
            id: waiter.id.clone(),
            workflow,
        }));
    }
    Ok(EnqueueReply {
        terminated,
        ..EnqueueReply::default()
    })
}

/// §1c `onBusy: "skip"` on an enqueue: a call that would register the id
/// finds every slot held (judged with the limit it names) or someone
/// waiting. An id already registered is answered as without it.
fn skips(key: &Key<'_>, member: &Member, options: &Options) -> bool {
    let limit = options.limit.unwrap_or(key.s.limit);
    options.skip
        && *member == Member::Stranger
        && (key.s.waiters > 0 || key.s.holders.len() as u32 >= limit)
}

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
    let limit = request.options.limit.unwrap_or(key.s.limit);
    if key.s.waiters == 0 && key.s.holders.len() as u32 >= limit {
        let due = key
            .view
            .to_check
            .iter()
            .map(|(h, _)| h)
            .find(|h| key.holder(&h.id) == Some(*h))
            .cloned();
        if let Some(holder) = due {
            key.effects
                .push(check(&holder.id, holder.workflow.as_ref(), key.settings));
            return Reply::AcquireChecking { request, holder };
        }
    }
    Reply::Acquire(AcquireReply::Busy)
}

fn acquire(key: &mut Key<'_>, now_ms: u64, request: AcquireRequest) -> Result<Reply, BatonError> {
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
    let holder = key
        .holders_to_check(1)
        .pop()
        .expect("a caller left waiting means every slot is taken");
    key.effects
        .push(check(&holder.id, holder.workflow.as_ref(), key.settings));
    Ok(Reply::AcquireChecking { request, holder })
}

fn pending(key: &Key<'_>, request: &AcquireRequest) -> AcquireReply {
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
fn take_slot(
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
    grant_slot(key, now_ms, waiter, HolderState::Handed, true)
}

/// A checked holder's liveness applied (a dead one loses its slot), the
/// free slots filled from the queue, and everyone handed one woken: what an
/// alarm's check and a woken holder found dead both come to.
fn hand_on_checked(
    key: &mut Key<'_>,
    now_ms: u64,
    grace_ms: u64,
    holder: &Holder,
    liveness: Liveness,
) {
    let mut wake = Vec::new();
    apply_check(key, now_ms, grace_ms, holder, liveness, &mut wake);
    fill_slots(key, now_ms, &mut wake);
    for holder in wake {
        key.wake(holder);
    }
}

fn fill_slots(key: &mut Key<'_>, now_ms: u64, wake: &mut Vec<Holder>) {
    let free = key.free();
    if free == 0 || key.s.waiters == 0 {
        return;
    }
    for waiter in key.first_waiters(free) {
        wake.push(hand(key, now_ms, waiter));
    }
}

/// A holder check's answer: a dead holder exactly as checked (or a
/// finished one with the same grant) loses its slot; a live one not yet
/// told of a hand-over is woken again.
fn apply_check(
    key: &mut Key<'_>,
    now_ms: u64,
    grace_ms: u64,
    checked: &Holder,
    liveness: Liveness,
    wake: &mut Vec<Holder>,
) {
    let Some(holder) = key.holder(&checked.id).cloned() else {
        return;
    };
    if liveness.is_dead(checked.enqueued_ms, now_ms, grace_ms) {
        let finished = liveness == Liveness::Dead && holder.fence == checked.fence;
        if holder == *checked || finished {
            // A slot handed over and never confirmed was not held: no hold
            // time for the estimate.
            let held = holder.state == HolderState::Holding;
            key.remove_holder(&holder.id, held.then_some(now_ms));
        }
        return;
    }
    if holder.state == HolderState::Handed
        && matches!(liveness, Liveness::Alive | Liveness::Unknown)
    {
        wake.push(holder);
    }
}

/// How many waiters from the front `input` may hand slots to, given the
/// summary: what `super::sql::load` reads as the view's `front`.
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

/// Broken-invariant checks on a decision's view as its writes left it,
/// cheap enough to run after every decision, in release builds too: they
/// read only what the decision loaded. Panics on violation.
pub fn assert_invariants(view: &View) {
    // Plain messages: formatting rows into them costs WASM (P6); the
    // simulation's deep checks name the rows.
    let s = &view.summary;
    assert!(
        (1..=HOLDERS_PER_KEY_MAX).contains(&s.limit),
        "a key's limit out of range"
    );
    assert!(
        s.holders.len() as u32 <= HOLDERS_PER_KEY_MAX,
        "too many holders"
    );
    assert!(s.waiters <= WAITERS_PER_KEY_MAX, "too many waiters");
    for (n, holder) in s.holders.iter().enumerate() {
        assert!(holder.fence <= s.fence, "a holder's fence above the key's");
        assert!(
            s.holders[..n]
                .iter()
                .all(|h| h.id != holder.id && (holder.fence == 0 || h.fence != holder.fence)),
            "an id holding twice, or a fence granted twice"
        );
    }
}

/// Whether the key needs the holder-check alarm: someone waits behind the
/// holders, or a holder has not yet confirmed a hand-over.
pub fn needs_check(summary: &Summary) -> bool {
    !summary.holders.is_empty()
        && (summary.waiters > 0
            || summary
                .holders
                .iter()
                .any(|h| h.state == HolderState::Handed))
}
