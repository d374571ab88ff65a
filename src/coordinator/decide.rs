//! The Coordinator's one decision, [`decide`], over a targeted [`View`],
//! and the rules it keeps.
//!
//! `decide(view, now_ms, input)` reads only the view the shell loaded for
//! that input (`super::store::load`: the key's summary, which the shell
//! keeps in memory, plus the rows the input names) and returns a
//! [`Transition`]: the reply, the row [`Write`]s (carried out by
//! `super::store::write` in one `match`, or by `super::twin::apply` in the
//! simulation), the history they add (`history::record`), the
//! effects (holder checks, turn events, terminations), whether the key
//! needs the holder-check alarm, the view as the writes leave it, the
//! report the key's list entry is due (`crate::busy::reporter::due`) and
//! the decision-log line (`super::log::of`): nothing about a decision is
//! decided after it ([`finish`], the one place that reads the history,
//! the log and the reporter). The decision runs its rules on a
//! [`Draft`], the view as the decision changes it, which records each
//! change as a [`Write`] as it makes it; where slots go is
//! `super::grant`'s, what an enqueue does `super::enqueue`'s, §11's
//! steering `super::steer`'s.
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
//! free (`super::slots::free_slots`), so nothing is granted; an operator's
//! limit override wins over the callers' (`Summary::limit`). `enqueue`
//! registers waiters and records a limit but hands nothing on: the next
//! acquire, release or alarm does.
//!
//! # Grants and fences (contract §1b)
//! Every grant of a slot, by `acquire` or by a hand-off, takes the key's
//! next fence (the summary's `fence` + 1), in one place of the decision, so
//! no path can grant without one. A registration made with `grant` gets a
//! [`Turn::Own`]: when a slot is handed to it, the shell sends it the grant
//! itself (key, id, fence) on that registration's own event type, and
//! reports the engine's acceptance back (`Input::Accepted`),
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
//! §1d's cancel in progress is `super::enqueue`'s; a cancelled holder's
//! status re-enters here (`Input::Cancelled`) as any holder check's does.
//!
//! A hold finishes when its holder releases, or is found dead after it
//! confirmed its slot; the last [`HOLD_TIMES_KEPT`](crate::limits::HOLD_TIMES_KEPT)
//! lengths give `etaMs` (`super::slots::eta_ms`).

use super::call::{
    Accepted, Acquire, AcquireChecked, Call, Enqueue, EnqueueChecked, HolderChecked, Pause,
    Rebound, Release, Resume, SetLimit, Tick, Woken,
};
use super::draft::{shown, Draft};
use super::enqueue::{enqueue, enqueue_checked, refuse_cancel_holders};
use super::grant::{acquire, acquire_checked, fill_slots, hand_on_checked, Acquired};
use super::log::{self, Cause, LogLine};
use super::steer;
use super::types::history::{self, HistoryWrite, Outcome};
use super::types::{
    AcquireReply, Effect, EnqueueCheck, EnqueueReply, Holder, HolderState, Input, LimitSet, Member,
    Options, Paused, Reply, Settings, Transition, Turn, View, Write,
};
use crate::busy::reporter::{self, Due};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::HOLDER_CHECKS_PER_TICK_MAX;
use crate::transition::{Alarm, NoCheck, Step};

/// The one decision: `input` on `view` (loaded for that input) at `now_ms`.
pub fn decide(
    view: &View,
    settings: &Settings,
    now_ms: u64,
    input: Input,
) -> Result<Transition, BatonError> {
    decide_in_place(&mut view.clone(), settings, now_ms, input)
}

/// [`decide`] on the view itself: its summary moves into the decision
/// and out in the transition's state, not copied (the shell's path: the
/// summary it keeps between calls). The view is left without it.
pub fn decide_in_place(
    view: &mut View,
    settings: &Settings,
    now_ms: u64,
    input: Input,
) -> Result<Transition, BatonError> {
    let (v, s, now) = (view, settings, now_ms);
    match input {
        Input::Enqueue(request) => decided(v, s, now, Enqueue(request)),
        Input::EnqueueChecked {
            request,
            candidate,
            liveness,
        } => decided(
            v,
            s,
            now,
            EnqueueChecked {
                request,
                candidate,
                liveness,
            },
        ),
        Input::Acquire(request) => decided(v, s, now, Acquire(request)),
        Input::AcquireChecked {
            request,
            holder,
            answer,
        } => decided(
            v,
            s,
            now,
            AcquireChecked {
                request,
                holder,
                answer,
            },
        ),
        Input::Release(id) => decided(v, s, now, Release(id)),
        Input::Accepted { holder } => decided(v, s, now, Accepted { holder }),
        Input::Woken { holder, answer } => decided(v, s, now, Woken { holder, answer }),
        Input::Tick => decided(v, s, now, Tick),
        Input::TickChecked { holder, answer } => {
            decided(v, s, now, HolderChecked::of(holder, answer, false))
        }
        Input::Cancelled { holder, answer } => {
            decided(v, s, now, HolderChecked::of(holder, answer, true))
        }
        Input::Pause { reason } => decided(v, s, now, Pause { reason }),
        Input::Resume => decided(v, s, now, Resume),
        Input::SetLimit(limit) => decided(v, s, now, SetLimit(limit)),
        Input::Rebound { id, from, workflow } => decided(v, s, now, Rebound { id, from, workflow }),
    }
}

fn decided<C: Call>(
    view: &mut View,
    settings: &Settings,
    now_ms: u64,
    call: C,
) -> Result<Transition, BatonError> {
    decide_call(view, settings, now_ms, call).map(|(_, transition)| transition)
}

/// One call on `view` (loaded for its [`Call::input`]) at `now_ms`: its
/// answer, and the transition (as [`decide_in_place`], the view left
/// without its summary).
pub fn decide_call<C: Call>(
    view: &mut View,
    settings: &Settings,
    now_ms: u64,
    call: C,
) -> Result<(C::Answer, Transition), BatonError> {
    let input = call.input();
    refuse_cancel_holders(&input)?;
    let cause = Cause::of(&input);
    let mut key = Draft::new(view, settings, cause.reads_holders_before());
    let answer = call.answer(&mut key, now_ms)?;
    let reply = C::reply(&answer);
    Ok((answer, finish(key, reply, cause, now_ms)))
}

impl Call for Enqueue {
    type Answer = Step<EnqueueReply, EnqueueCheck>;
    fn input(&self) -> Input {
        Input::Enqueue(self.0.clone())
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Self::Answer, BatonError> {
        enqueue(key, now_ms, self.0)
    }
    fn reply(answer: &Self::Answer) -> Reply {
        match answer {
            Step::Answer(reply) => Reply::Enqueue(reply.clone()),
            Step::Check(EnqueueCheck { request, candidate }) => Reply::EnqueueChecking {
                request: request.clone(),
                candidate: candidate.clone(),
            },
        }
    }
}

impl Call for EnqueueChecked {
    type Answer = EnqueueReply;
    fn input(&self) -> Input {
        Input::EnqueueChecked {
            request: self.request.clone(),
            candidate: self.candidate.clone(),
            liveness: self.liveness,
        }
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<EnqueueReply, BatonError> {
        let (request, candidate) = (self.request, &self.candidate);
        enqueue_checked(key, now_ms, request, candidate, self.liveness)
    }
    fn reply(answer: &EnqueueReply) -> Reply {
        Reply::Enqueue(answer.clone())
    }
}

impl Call for Acquire {
    type Answer = Acquired;
    fn input(&self) -> Input {
        Input::Acquire(self.0.clone())
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Acquired, BatonError> {
        acquire(key, now_ms, self.0)
    }
    fn reply(answer: &Acquired) -> Reply {
        match answer {
            Step::Answer(reply) => Reply::Acquire(*reply),
            Step::Check(check) => Reply::AcquireChecking {
                request: check.request.clone(),
                holder: check.holder.clone(),
            },
        }
    }
}

impl Call for AcquireChecked {
    type Answer = AcquireReply;
    fn input(&self) -> Input {
        Input::AcquireChecked {
            request: self.request.clone(),
            holder: self.holder.clone(),
            answer: self.answer,
        }
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<AcquireReply, BatonError> {
        let AcquireChecked {
            request,
            holder,
            answer,
        } = self;
        key.record_check(&holder.id, now_ms, answer);
        Ok(acquire_checked(
            key,
            now_ms,
            request,
            &holder,
            answer.liveness(),
        ))
    }
    fn reply(answer: &AcquireReply) -> Reply {
        Reply::Acquire(*answer)
    }
}

/// `release`: a holder's slot goes to the front of the order; a waiter
/// leaves the queue; anyone else changes nothing. Answers the first
/// instance handed the slot (never after a check).
impl Call for Release {
    type Answer = Step<Option<InstanceId>, NoCheck>;
    fn input(&self) -> Input {
        Input::Release(self.0.clone())
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Self::Answer, BatonError> {
        let id = &self.0;
        let mut wake = Vec::new();
        match key.member(id) {
            Member::Holder(_) => {
                key.remove_holder(id, Some(now_ms), Outcome::Released);
                fill_slots(key, now_ms, &mut wake);
            }
            Member::Waiter(_) => key.remove_waiter(id),
            Member::Superseded | Member::Stranger => {}
        }
        let next = wake.first().map(|h| h.id.clone());
        for holder in wake {
            key.wake(holder);
        }
        Ok(Step::Answer(next))
    }
    fn reply(answer: &Self::Answer) -> Reply {
        match answer {
            Step::Answer(next) => Reply::Release(next.clone()),
            Step::Check(never) => match *never {},
        }
    }
}

impl Call for Pause {
    type Answer = Paused;
    fn input(&self) -> Input {
        Input::Pause {
            reason: self.reason.clone(),
        }
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Paused, BatonError> {
        Ok(steer::pause(key, now_ms, self.reason))
    }
    fn reply(answer: &Paused) -> Reply {
        Reply::Paused(answer.clone())
    }
}

impl Call for Resume {
    type Answer = Vec<InstanceId>;
    fn input(&self) -> Input {
        Input::Resume
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<Vec<InstanceId>, BatonError> {
        Ok(steer::resume(key, now_ms))
    }
    fn reply(answer: &Vec<InstanceId>) -> Reply {
        Reply::Resumed(answer.clone())
    }
}

impl Call for SetLimit {
    type Answer = LimitSet;
    fn input(&self) -> Input {
        Input::SetLimit(self.0)
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<LimitSet, BatonError> {
        Ok(steer::set_limit(key, now_ms, self.0))
    }
    fn reply(answer: &LimitSet) -> Reply {
        Reply::LimitSet {
            limit: answer.limit,
            limit_override: answer.limit_override,
        }
    }
}

/// The engine accepted the grant event sent to `holder` (as it was
/// handed): the holder is told, and the alarm sends it no more.
impl Call for Accepted {
    type Answer = ();
    fn input(&self) -> Input {
        Input::Accepted {
            holder: self.holder.clone(),
        }
    }
    fn answer(self, key: &mut Draft<'_>, _: u64) -> Result<(), BatonError> {
        let holder = &self.holder;
        if matches!(holder.turn, Turn::Own(_))
            && holder.state == HolderState::Handed
            && key.holder(&holder.id) == Some(holder)
        {
            key.confirm_holder(&holder.id);
        }
        Ok(())
    }
    fn reply(_: &()) -> Reply {
        Reply::Settled
    }
}

/// A woken holder's status (`holder` as it was handed): one found dead
/// loses its slot, which goes on; a live one is left to act on its event.
impl Call for Woken {
    type Answer = ();
    fn input(&self) -> Input {
        Input::Woken {
            holder: self.holder.clone(),
            answer: self.answer,
        }
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<(), BatonError> {
        let Woken { holder, answer } = self;
        key.record_check(&holder.id, now_ms, answer);
        woken(key, now_ms, &holder, answer.liveness());
        Ok(())
    }
    fn reply(_: &()) -> Reply {
        Reply::Settled
    }
}

fn woken(key: &mut Draft<'_>, now_ms: u64, holder: &Holder, liveness: super::types::Liveness) {
    if liveness.is_dead(holder.enqueued_ms, now_ms, key.settings.grace_ms) {
        hand_on_checked(key, now_ms, holder, liveness);
    }
}

/// The holder-check alarm on a key it found due: the holders due a check
/// are checked (a cancelled one terminated again first, §1d).
impl Call for Tick {
    type Answer = Vec<Holder>;
    fn input(&self) -> Input {
        Input::Tick
    }
    fn answer(self, key: &mut Draft<'_>, _: u64) -> Result<Vec<Holder>, BatonError> {
        let due = if key.needs_holder_check() {
            key.holders_to_check(HOLDER_CHECKS_PER_TICK_MAX)
        } else {
            Vec::new()
        };
        for holder in &due {
            key.check_or_terminate(holder);
        }
        Ok(due)
    }
    fn reply(due: &Vec<Holder>) -> Reply {
        Reply::Ticked(due.clone())
    }
}

impl Call for HolderChecked {
    type Answer = ();
    fn input(&self) -> Input {
        let (holder, answer) = (self.holder.clone(), self.answer);
        if self.cancelled {
            Input::Cancelled { holder, answer }
        } else {
            Input::TickChecked { holder, answer }
        }
    }
    fn answer(self, key: &mut Draft<'_>, now_ms: u64) -> Result<(), BatonError> {
        let HolderChecked { holder, answer, .. } = self;
        key.record_check(&holder.id, now_ms, answer);
        hand_on_checked(key, now_ms, &holder, answer.liveness());
        Ok(())
    }
    fn reply(_: &()) -> Reply {
        Reply::Settled
    }
}

impl Call for Rebound {
    type Answer = ();
    fn input(&self) -> Input {
        Input::Rebound {
            id: self.id.clone(),
            from: self.from.clone(),
            workflow: self.workflow.clone(),
        }
    }
    fn answer(self, key: &mut Draft<'_>, _: u64) -> Result<(), BatonError> {
        let member = key.member(&self.id);
        let options = Options {
            workflow: Some(self.workflow),
            ..Options::default()
        };
        key.name_workflow(&member, &options);
        Ok(())
    }
    fn reply(_: &()) -> Reply {
        Reply::Settled
    }
}

/// What a decision needs of the holder-check alarm, the one rule: the
/// periodic sweep while the key needs holder checks (someone waits behind
/// its holders, a hand-over is unconfirmed, a holder is being cancelled),
/// while it owes its list a report (`Due::Owed`: the alarm sends it again
/// until the shard confirms it, should the one sent after the reply be
/// lost), and after a supersede, which owes its terminations until done
/// (the alarm finishes them should the enqueue's own attempt fail or never
/// run). The alarm is then at most one holder-check period away: the shell
/// arms one from now unless one is known to be set, and every one it sets
/// is at most a period away.
fn alarm(needs_check: bool, report: Due, effects: &[Effect]) -> Alarm {
    let terminates = (effects.iter()).any(|e| matches!(e, Effect::Terminate(_)));
    if needs_check || report == Due::Owed || terminates {
        Alarm::Periodic
    } else {
        Alarm::Keep
    }
}

/// The transition: the writes with the history's before them and its
/// tally carried (`history::record`, [`carry`]), the report the list is
/// due (`reporter::due`), and the log line (`log::of`) with its §9a
/// figures (`log::figures`).
fn finish(key: Draft<'_>, reply: Reply, cause: Cause, now_ms: u64) -> Transition {
    let needs = key.needs_holder_check();
    let report = reporter::due(key.before.shown, shown(&key.s), key.did.found_dead());
    let coalesced = matches!(&reply, Reply::Enqueue(r) if r.coalesced_into.is_some());
    let (recorded, tally) = history::record(
        &key.did,
        key.before.waiters,
        coalesced,
        report == Due::Owed,
        now_ms,
    );
    let line = log::of(
        cause,
        &log::Consequence {
            before: key.view,
            was: &key.before,
            reply: &reply,
            quiet: key.effects.is_empty() && !needs,
            member: key.member.as_ref(),
            did: &key.did,
            now_ms,
        },
    );
    let Draft {
        s,
        writes: decided,
        effects,
        front,
        member,
        settings,
        ..
    } = key;
    let mut writes: Vec<Write> = (recorded.into_iter().map(Write::History))
        .chain(decided)
        .collect();
    carry(&mut writes, tally);
    let log = line.map(|line| LogLine {
        figures: log::figures(&line, &writes, &s, settings),
        ..line
    });
    // The state is what the writes leave of the parts a decision
    // changes; the rest of the view (the superseded, the holders to
    // check) is not carried on.
    Transition {
        alarm: alarm(needs, report, &effects),
        reply,
        writes,
        effects,
        state: View {
            summary: s,
            member,
            front,
            ..View::default()
        },
        report,
        log,
    }
}

/// The decision's tally onto its first finished hold's end, whose row's
/// trigger adds it to the key row (`history::record` states the rule);
/// without one, a tally that is not nothing is its own write, last.
fn carry(writes: &mut Vec<Write>, tally: history::Tally) {
    if tally == history::Tally::default() {
        return;
    }
    let end = writes.iter_mut().find_map(|w| match w {
        Write::RemoveHolder(_, Some(end)) => Some(end),
        _ => None,
    });
    match end {
        Some(end) => end.tally = tally,
        None => writes.push(Write::History(HistoryWrite::Tally(tally))),
    }
}
