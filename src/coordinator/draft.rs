//! [`Draft`], the key as one decision is changing it: the view it was
//! given, changed as each write it records would change the rows, with
//! the effects it asks for and what its history records. Every rule file
//! works on it; none of them writes a row or an effect any other way.
//! The draft owns the key's summary, moved out of the view it was given
//! (the summary the shell keeps is not copied); what the decision reads of
//! the key as it was is [`Before`].

use super::check::{due_for_check, needs_check};
use super::layout::joining;
use super::slots::free_slots;
use super::types::history::{Did, HoldEnd, Outcome};
use super::types::{
    Effect, Handed, Holder, HolderState, Layout, Member, Options, Settings, Summary, Turn, View,
    Waiter, Write,
};
use crate::busy::reporter::Shown;
use crate::error::BatonError;
use crate::ident::{InstanceId, WorkflowName};
use crate::limits::{HOLDERS_PER_KEY_MAX, HOLD_TIMES_KEPT, WAITERS_PER_KEY_MAX};
use crate::transition::{Check, Terminate, Wake};
use crate::workflow::Status;

/// What a decision reads of the key's summary as it was before it: the
/// figures its list report and log line compare with, and its holders
/// where the log line reads them (`log::Cause::reads_holders_before`).
#[derive(Clone)]
pub struct Before {
    pub(super) shown: Shown,
    pub(super) waiters: u32,
    pub(super) paused: bool,
    /// Empty unless the decision was asked to keep them.
    pub(super) holders: Vec<Holder>,
}

/// The figures of `s` the list is told (`crate::busy::reporter::due`).
pub(super) fn shown(s: &Summary) -> Shown {
    Shown {
        holders: s.holders.len() as u32,
        waiting: s.waiters,
        limit: s.limit(),
        paused: s.paused.is_some(),
        handed_since_ms: (s.holders.iter())
            .filter(|h| h.state == HolderState::Handed)
            .map(|h| h.since_ms)
            .min(),
    }
}

/// The key as one decision is changing it: the view, changed as the
/// writes it records would change the rows.
#[derive(Clone)]
pub struct Draft<'v> {
    /// The view the decision was given, without its summary (moved to `s`).
    pub(super) view: &'v View,
    pub(super) before: Before,
    pub(super) s: Summary,
    /// The input's id's place, as this decision left it.
    pub(super) member: Option<Member>,
    /// The loaded front of the queue, less those this decision took out.
    pub(super) front: Vec<Waiter>,
    pub(super) writes: Vec<Write>,
    pub(super) effects: Vec<Effect>,
    pub(super) settings: &'v Settings,
    /// What the history records of this decision.
    pub(super) did: Did,
}

impl<'v> Draft<'v> {
    /// A draft of `view`, whose summary it takes; `holders_before`: the
    /// holders as they were are kept in [`Before`].
    pub(super) fn new(view: &'v mut View, settings: &'v Settings, holders_before: bool) -> Self {
        let s = std::mem::take(&mut view.summary);
        let before = Before {
            shown: shown(&s),
            waiters: s.waiters,
            paused: s.paused.is_some(),
            holders: if holders_before {
                s.holders.clone()
            } else {
                Vec::new()
            },
        };
        let view: &'v View = view;
        Draft {
            view,
            before,
            s,
            member: view.member.clone(),
            front: view.front.clone(),
            writes: Vec::new(),
            effects: Vec::new(),
            settings,
            did: Did::default(),
        }
    }

    pub(super) fn holder(&self, id: &InstanceId) -> Option<&Holder> {
        self.s.holders.iter().find(|h| h.id == *id)
    }

    /// `id`'s place: a holder from the summary, else the loaded place of the
    /// id the input names.
    pub(super) fn member(&self, id: &InstanceId) -> Member {
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

    /// The slots this decision may grant (none while paused, §11).
    pub(super) fn free(&self) -> u32 {
        free_slots(&self.s, self.s.limit(), 0)
    }

    pub(super) fn first_waiters(&self, n: u32) -> Vec<Waiter> {
        let n = n.min(self.s.waiters) as usize;
        assert!(
            self.front.len() >= n,
            "the view holds fewer waiters than the decision needs"
        );
        self.front[..n].to_vec()
    }

    pub(super) fn next_turn(&mut self) -> u64 {
        self.s.turns += 1;
        self.writes.push(Write::DrawTurn(self.s.turns));
        self.s.turns
    }

    pub(super) fn add_holder(&mut self, holder: Holder) {
        assert!(holder.fence > self.s.fence, "a fence granted twice");
        assert!(self.s.paused.is_none(), "a slot granted while paused");
        self.s.fence = holder.fence;
        self.s.holders.push(holder.clone());
        self.writes.push(Write::AddHolder(holder));
    }

    pub(super) fn confirm_holder(&mut self, id: &InstanceId) {
        if let Some(h) = self.s.holders.iter_mut().find(|h| h.id == *id) {
            if h.state == HolderState::Handed {
                h.state = HolderState::Holding;
                self.writes.push(Write::ConfirmHolder(id.clone()));
            }
        }
    }

    /// §10a: records what the Workflow binding answered, at `now_ms`, about
    /// the holder `id` (the last answer is its `checked`, whatever asked:
    /// the alarm, an acquire, a wake or a cancellation); nothing if `id`
    /// holds no more.
    pub(super) fn record_check(&mut self, id: &InstanceId, now_ms: u64, answer: Status) {
        if self.holder(id).is_some() {
            self.writes
                .push(Write::MarkChecked(id.clone(), now_ms, answer));
        }
    }

    /// §1d: the holder `id` is cancelled; returns it as cancelled.
    pub(super) fn cancel_holder(&mut self, id: &InstanceId) -> Holder {
        let holder = (self.s.holders.iter_mut())
            .find(|h| h.id == *id)
            .expect("cancels only a holder");
        holder.cancelling = true;
        let holder = holder.clone();
        self.did.cancelled.push(holder.clone());
        self.writes.push(Write::CancelHolder(id.clone()));
        holder
    }

    /// `ended_ms`: when its hold finished, if it counts as a finished hold.
    pub(super) fn remove_holder(
        &mut self,
        id: &InstanceId,
        ended_ms: Option<u64>,
        outcome: Outcome,
    ) {
        let Some(holder) = self.holder(id).cloned() else {
            return;
        };
        self.did.ended.push((holder.clone(), outcome));
        self.s.holders.retain(|h| h.id != *id);
        if let Some(end) = ended_ms {
            let times = &mut self.s.hold_times_ms;
            times.push(end.saturating_sub(holder.since_ms));
            let over = times.len().saturating_sub(HOLD_TIMES_KEPT);
            times.drain(..over);
        }
        // The decision's tally, if this end carries it, is put on by
        // `decide::carry` once the decision is done.
        let end = ended_ms.map(|at_ms| HoldEnd {
            at_ms,
            ..HoldEnd::default()
        });
        self.writes.push(Write::RemoveHolder(id.clone(), end));
    }

    /// A waiter behind every other, kept as [`joining`] says: the key's
    /// waiters spread first if it is the first of a second share.
    pub(super) fn push_waiter(&mut self, waiter: Waiter) {
        let (spread, layout) = joining(&self.s, waiter.priority, waiter.tenant.as_ref());
        if spread {
            self.writes.push(Write::Spread);
        }
        self.s.sole = match layout {
            Layout::Sole => Some((waiter.priority, waiter.tenant.clone())),
            Layout::Shared => None,
        };
        self.s.waiters += 1;
        if self
            .member
            .as_ref()
            .is_some_and(|m| !matches!(m, Member::Holder(_)))
        {
            self.member = Some(Member::Waiter(waiter.clone()));
        }
        self.writes.push(Write::PushWaiter(waiter, layout));
    }

    pub(super) fn remove_waiter(&mut self, id: &InstanceId) {
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
        if self.s.waiters == 0 {
            self.s.sole = None;
        }
        self.writes.push(Write::RemoveWaiter(id.clone()));
    }

    /// Up to `n` holders due a check ([`due_for_check`]) as this
    /// decision leaves them: every holder when someone waits, else only
    /// the `Handed` ones.
    pub(super) fn holders_to_check(&self, n: u32) -> Vec<Holder> {
        let everyone = self.s.waiters > 0;
        due_for_check(&self.s.holders, &self.view.checked_ms, everyone, n)
    }

    /// Asks for `holder` to be sent its turn event (and its status after),
    /// through its own Workflow.
    pub(super) fn wake(&mut self, holder: Holder) {
        let wake = Wake {
            id: holder.id.clone(),
            workflow: self.settings.binding(holder.workflow.as_ref()),
            event: Handed {
                turn: holder.turn_n(),
                fence: holder.fence,
            },
        };
        self.effects.push(Effect::Wake(wake));
    }

    /// Asks for `id`'s status (through `workflow`, or the default), which
    /// the call's answer waits on (its second phase).
    pub(super) fn check(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>) {
        self.ask_check(id, workflow, true);
    }

    /// A status check; `answers`: the call's answer waits on it (else its
    /// status re-enters for the holder as this decision left it: the
    /// alarm's).
    fn ask_check(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>, answers: bool) {
        self.effects.push(Effect::Check(Check {
            id: id.clone(),
            workflow: self.settings.binding(workflow),
            answers,
        }));
    }

    /// §1d: asks for a cancelled holder's termination through its own
    /// Workflow, its status asked right after.
    pub(super) fn terminate_holder(&mut self, holder: &Holder) {
        self.effects.push(Effect::TerminateHolder {
            holder: holder.clone(),
            workflow: self.settings.binding(holder.workflow.as_ref()),
        });
    }

    /// Asks for a dropped waiter's termination through its own Workflow
    /// (best effort; nothing re-enters).
    pub(super) fn terminate_waiter(&mut self, waiter: &Waiter) {
        self.effects.push(Effect::Terminate(Terminate {
            id: waiter.id.clone(),
            workflow: self.settings.binding(waiter.workflow.as_ref()),
        }));
    }

    /// What the alarm asks for a holder due a check: its status, or for a
    /// cancelled holder (§1d) its termination and then its status, so a
    /// termination that failed is tried again until the holder is dead.
    pub(super) fn check_or_terminate(&mut self, holder: &Holder) {
        if holder.cancelling {
            self.terminate_holder(holder);
        } else {
            self.ask_check(&holder.id, holder.workflow.as_ref(), false);
        }
    }

    /// Refuses a registration beyond the key's bound on waiters.
    pub(super) fn check_room(&self) -> Result<(), BatonError> {
        if self.s.waiters >= WAITERS_PER_KEY_MAX {
            return Err(BatonError::LimitExceeded {
                field: "key",
                reason: format!(
                    "already has {WAITERS_PER_KEY_MAX} waiters, the most one key holds"
                ),
            });
        }
        Ok(())
    }

    /// The turn a registration made with `options` is told by: its own
    /// (a registration number drawn now) with `grant`, else the shared one.
    pub(super) fn new_turn(&mut self, options: &Options) -> Turn {
        if options.grant {
            Turn::Own(self.next_turn())
        } else {
            Turn::Shared
        }
    }

    /// The callers' `options.limit`, as the key records it
    /// (`Summary::name_callers_limit`).
    pub(super) fn name_limit(&mut self, options: &Options) {
        if let Some(limit) = options.limit {
            assert!(
                (1..=HOLDERS_PER_KEY_MAX).contains(&limit),
                "a limit out of range passed the edge"
            );
            self.writes.extend(self.s.name_callers_limit(limit));
        }
    }

    /// §1f: the key keeps the cap on its waiters of the latest call that
    /// named one.
    pub(super) fn name_max_waiting(&mut self, options: &Options) {
        if let Some(cap) = options
            .max_waiting
            .filter(|c| self.s.max_waiting != Some(*c))
        {
            self.s.max_waiting = Some(cap);
            self.writes.push(Write::SetMaxWaiting(cap));
        }
    }

    /// A registered id's binding, when the call names another: the one it
    /// is reached through from now on.
    pub(super) fn name_workflow(&mut self, member: &Member, options: &Options) {
        let Some(workflow) = &options.workflow else {
            return;
        };
        match member {
            Member::Holder(holder) if holder.workflow.as_ref() != Some(workflow) => {
                if let Some(h) = self.s.holders.iter_mut().find(|h| h.id == holder.id) {
                    h.workflow = Some(workflow.clone());
                }
                self.writes.push(Write::SetHolderWorkflow(
                    holder.id.clone(),
                    Some(workflow.clone()),
                ));
            }
            Member::Waiter(waiter) if waiter.workflow.as_ref() != Some(workflow) => {
                let updated = Waiter {
                    workflow: Some(workflow.clone()),
                    ..waiter.clone()
                };
                if let Some(w) = self.front.iter_mut().find(|w| w.id == waiter.id) {
                    *w = updated.clone();
                }
                self.member = Some(Member::Waiter(updated));
                self.writes.push(Write::SetWaiterWorkflow(
                    waiter.id.clone(),
                    Some(workflow.clone()),
                ));
            }
            _ => {}
        }
    }

    pub(super) fn needs_holder_check(&self) -> bool {
        needs_check(&self.s)
    }
}

impl Holder {
    /// The registration number of its own turn, if it has one.
    pub(super) fn turn_n(&self) -> Option<u64> {
        match self.turn {
            Turn::Shared => None,
            Turn::Own(n) => Some(n),
        }
    }
}
