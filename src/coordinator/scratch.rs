//! [`Key`], the scratch a decision works on: the view, changed as each
//! write it records would change the rows.

use super::check::{due_for_check, needs_check};
use super::effect::{Effect, Handed};
use super::history::{self, Did, Outcome};
use super::log::{self, Asked};
use super::state::{Holder, HolderState, Member, Turn, Waiter};
use super::steer::free_slots;
use super::types::{Reply, Settings, Summary, Transition, View, Write};
use crate::busy::reporter::{self, Due, Shown};
use crate::ident::InstanceId;
use crate::limits::HOLD_TIMES_KEPT;
use crate::transition::{Alarm, Wake};

/// The scratch a decision works on: the view, changed as the writes it
/// records would change the rows.
#[derive(Clone)]
pub(super) struct Key<'v> {
    pub(super) view: &'v View,
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

impl<'v> Key<'v> {
    pub(super) fn new(view: &'v View, settings: &'v Settings) -> Self {
        Key {
            view,
            s: view.summary.clone(),
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
        free_slots(&self.s, self.s.limit, 0)
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
        self.writes.push(Write::RemoveHolder(id.clone(), ended_ms));
    }

    pub(super) fn push_waiter(&mut self, waiter: Waiter) {
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
        self.writes.push(Write::RemoveWaiter(id.clone()));
    }

    /// Up to `n` holders due a check ([`due_for_check`]) as this
    /// decision leaves them: every holder when someone waits, else only
    /// the `Handed` ones.
    pub(super) fn holders_to_check(&self, n: u32) -> Vec<Holder> {
        let everyone = self.s.waiters > 0;
        due_for_check(&self.s.holders, &self.view.checked_ms, everyone, n)
    }

    /// Asks for `holder` to be sent its turn event (and its status after).
    pub(super) fn wake(&mut self, holder: Holder) {
        self.effects
            .push(Effect::Wake(holder_wake(holder, self.settings)));
    }

    /// The transition: the writes with the history's around them
    /// (`history::record`), the report the list is due (`reporter::due`),
    /// and the log line (`log::of`).
    pub(super) fn finish(self, reply: Reply, asked: &Asked, now_ms: u64) -> Transition {
        let needs = self.needs_holder_check();
        let shown = |s: &Summary| Shown {
            holders: s.holders.len() as u32,
            waiting: s.waiters,
            limit: s.limit,
            paused: s.paused.is_some(),
        };
        let before = &self.view.summary;
        let report = reporter::due(shown(before), shown(&self.s), self.did.found_dead());
        let coalesced = matches!(&reply, Reply::Enqueue(r) if r.coalesced_into.is_some());
        let (mut writes, recorded) = history::record(
            &self.did,
            before.waiters,
            coalesced,
            report == Due::Owed,
            now_ms,
        );
        let log = log::of(
            asked,
            &log::Decided {
                before: self.view,
                reply: &reply,
                quiet: self.effects.is_empty() && !needs,
                member: self.member.as_ref(),
                did: &self.did,
                now_ms,
            },
        );
        let Key {
            s,
            writes: decided,
            effects,
            front,
            member,
            ..
        } = self;
        writes.extend(decided);
        writes.extend(recorded);
        // The state is what the writes leave of the parts a decision
        // changes; the rest of the view (the superseded, the holders to
        // check) is not carried on.
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
            report,
            log,
        }
    }

    pub(super) fn needs_holder_check(&self) -> bool {
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
    pub(super) fn turn_n(&self) -> Option<u64> {
        match self.turn {
            Turn::Shared => None,
            Turn::Own(n) => Some(n),
        }
    }
}
