//! The twin: one key in memory, standing in for its rows in tests and the
//! simulation (never in the Worker). It answers a decision's reads
//! ([`KeyTwin::load`]) and carries out its writes ([`apply`]) as
//! `super::store` does on the tables, so the simulation runs the real
//! decision; and it is the reference the SQL tests hold the rows to.

mod deep;
pub use deep::{assert_invariants_deep, needs_holder_check};

use super::order::{hand_off_order, place_in_order};
use super::read::load_view;
use super::slots::limit_in_force;
use super::types::history::KeyHistory;
use super::types::{
    Fetched, Holder, HolderState, Input, Layout, Member, Paused, Read, Summary, View, Waiter, Write,
};
use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};
use crate::limits::{HOLD_TIMES_KEPT, IDLE_TENANT_KEPT_GRANTS};
use crate::workflow::Status;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A priority and a tenant (`None`: the shared one): where §1c's order
/// keeps a waiter.
type Share = (i8, Option<Ident>);

/// What the key keeps of one tenant at one priority, as the
/// `coordinator_tenants` row does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TenantTurn {
    /// Its waiters now.
    pub waiters: u32,
    /// Its earliest waiter's seq, while it has one.
    pub first_seq: Option<u64>,
    /// The fence of its last grant served in its turn (`None`: never).
    pub served: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct KeyTwin {
    /// The callers' latest limit (`holder_limit`).
    limit: u32,
    /// §11: the operator's override (`limit_override`).
    limit_override: Option<u32>,
    /// §1f: the key's cap on its waiters (`max_waiting`).
    max_waiting: Option<u32>,
    /// §11: the operator's pause (`paused_since_ms`, `paused_reason`).
    paused: Option<Paused>,
    fence: u64,
    turns: u64,
    /// In the order they got the key, with when each was last checked.
    holders: Vec<(Holder, Option<u64>)>,
    /// §10a: each holder's last answer and since when its checks fail.
    checks: HashMap<InstanceId, (u64, Status, Option<u64>)>,
    waiters: BTreeMap<u64, Waiter>,
    waiter_seq: HashMap<InstanceId, u64>,
    hash_seqs: HashMap<InputHash, BTreeSet<u64>>,
    next_seq: u64,
    superseded: BTreeMap<u64, InstanceId>,
    superseded_seq: HashMap<InstanceId, u64>,
    tenants: BTreeMap<Share, TenantTurn>,
    /// The seqs of the waiters kept in `Layout::Sole` (counted in no
    /// tenant's turn), and the key's share while it keeps them so.
    sole_seqs: BTreeSet<u64>,
    sole: Option<Share>,
    /// The last finished holds' lengths, oldest first.
    hold_times_ms: Vec<u64>,
    pub history: KeyHistory,
}

impl Default for KeyTwin {
    fn default() -> Self {
        KeyTwin {
            limit: 1,
            limit_override: None,
            max_waiting: None,
            paused: None,
            fence: 0,
            turns: 0,
            holders: Vec::new(),
            checks: HashMap::new(),
            waiters: BTreeMap::new(),
            waiter_seq: HashMap::new(),
            hash_seqs: HashMap::new(),
            next_seq: 0,
            superseded: BTreeMap::new(),
            superseded_seq: HashMap::new(),
            tenants: BTreeMap::new(),
            sole_seqs: BTreeSet::new(),
            sole: None,
            hold_times_ms: Vec::new(),
            history: KeyHistory::default(),
        }
    }
}

impl KeyTwin {
    /// Waiters in the order they arrived (with neither priorities nor
    /// tenants, the order they will be handed the key).
    pub fn waiters(&self) -> impl Iterator<Item = &Waiter> {
        self.waiters.values()
    }

    /// Every tenant the key keeps a turn for, by priority and tenant.
    pub fn tenants(&self) -> &BTreeMap<Share, TenantTurn> {
        &self.tenants
    }

    /// Waiters in the order the key will be handed on (§1c, the core's
    /// [`hand_off_order`]).
    pub fn hand_off_order(&self) -> Vec<Waiter> {
        let arrived: Vec<Waiter> = self.waiters.values().cloned().collect();
        hand_off_order(&arrived, |p, t| self.served(p, t))
    }

    /// The fence of the last grant that served this tenant at this
    /// priority in its turn (`None`: never, or forgotten).
    fn served(&self, priority: i8, tenant: Option<&Ident>) -> Option<u64> {
        self.tenants
            .get(&(priority, tenant.cloned()))
            .and_then(|t| t.served)
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn holder_index(&self, id: &InstanceId) -> Option<usize> {
        self.holders.iter().position(|(h, _)| h.id == *id)
    }

    /// The waiters a read in `layout` sees, in arrival order: every one
    /// in `Layout::Sole`, those counted in a turn in `Layout::Shared`.
    fn kept_in(&self, layout: Layout) -> Vec<Waiter> {
        (self.waiters.iter())
            .filter(|(seq, _)| layout == Layout::Sole || !self.sole_seqs.contains(seq))
            .map(|(_, w)| w.clone())
            .collect()
    }

    fn waiter_by_id(&self, id: &InstanceId) -> Option<Waiter> {
        self.waiter_seq.get(id).map(|seq| self.waiters[seq].clone())
    }
}

/// The key read and changed row by row, as the SQL tables are.
impl KeyTwin {
    /// `id`'s place at the key.
    pub fn member(&self, id: &InstanceId) -> Member {
        if let Some(i) = self.holder_index(id) {
            return Member::Holder(self.holders[i].0.clone());
        }
        if let Some(waiter) = self.waiter_by_id(id) {
            return Member::Waiter(waiter);
        }
        if self.superseded_seq.contains_key(id) {
            return Member::Superseded;
        }
        Member::Stranger
    }

    /// How many may hold the key at once: the operator's override while
    /// one is set, else the callers' latest (1 until a call names one).
    pub fn limit(&self) -> u32 {
        limit_in_force(self.limit, self.limit_override)
    }

    /// §11: the operator's override, if one is set.
    /// §1f: the cap on the key's waiters, as the latest call naming one set it.
    pub fn max_waiting(&self) -> Option<u32> {
        self.max_waiting
    }

    pub fn limit_override(&self) -> Option<u32> {
        self.limit_override
    }

    /// §11: the key's pause, if it is paused.
    pub fn paused(&self) -> Option<&Paused> {
        self.paused.as_ref()
    }

    /// The highest fence the key has granted (0 before its first grant).
    /// [`KeyTwin::add_holder`] raises it to the new holder's fence; it
    /// never decreases.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    pub fn holder_count(&self) -> u32 {
        self.holders.len() as u32
    }

    /// Holders handed a slot that have not yet confirmed it.
    pub fn handed_count(&self) -> u32 {
        self.holders
            .iter()
            .filter(|(h, _)| h.state == HolderState::Handed)
            .count() as u32
    }

    /// Every holder, in the order they got the key.
    pub fn holders(&self) -> Vec<Holder> {
        self.holders.iter().map(|(h, _)| h.clone()).collect()
    }

    /// Records that `id` was just checked, and what the binding answered
    /// (§10a: failures in a row keep when they began).
    pub fn mark_checked(&mut self, id: &InstanceId, now_ms: u64, answer: Status) {
        let i = self.holder_index(id).expect("marks only a holder");
        self.holders[i].1 = Some(now_ms);
        let failing = (self.checks.get(id))
            .and_then(|(_, _, since)| *since)
            .filter(|_| answer == Status::Failed)
            .or((answer == Status::Failed).then_some(now_ms));
        self.checks.insert(id.clone(), (now_ms, answer, failing));
    }

    /// §10a: each holder's last check (when, what was answered, since when
    /// its checks fail), in the order they got the key.
    pub fn checks(&self) -> Vec<Option<(u64, Status, Option<u64>)>> {
        (self.holders.iter())
            .map(|(h, _)| self.checks.get(&h.id).copied())
            .collect()
    }

    /// §10a: the earliest start of an unbroken run of failed checks.
    pub fn failing_since(&self) -> Option<u64> {
        self.checks
            .values()
            .filter_map(|(_, _, since)| *since)
            .min()
    }

    /// Adds a holder behind the others and raises the key's fence to
    /// `holder.fence`, which is above it. The id is neither holding nor waiting.
    pub fn add_holder(&mut self, holder: &Holder) {
        assert!(
            self.holder_index(&holder.id).is_none() && !self.waiter_seq.contains_key(&holder.id),
            "{} already holds or waits",
            holder.id
        );
        assert!(
            holder.fence > self.fence,
            "fence {} is not new",
            holder.fence
        );
        self.fence = holder.fence;
        self.history.granted();
        self.holders.push((holder.clone(), None));
    }

    /// `Handed` becomes `Holding`.
    pub fn confirm_holder(&mut self, id: &InstanceId) {
        let i = self.holder_index(id).expect("confirms only a holder");
        self.holders[i].0.state = HolderState::Holding;
    }

    /// §1d: the holder is cancelled.
    pub fn cancel_holder(&mut self, id: &InstanceId) {
        let i = self.holder_index(id).expect("cancels only a holder");
        self.holders[i].0.cancelling = true;
    }

    pub fn set_holder_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>) {
        let i = self.holder_index(id).expect("updates only a holder");
        self.holders[i].0.workflow = workflow.cloned();
    }

    pub fn remove_holder(&mut self, id: &InstanceId) {
        self.checks.remove(id);
        if let Some(i) = self.holder_index(id) {
            self.holders.remove(i);
        }
    }

    pub fn waiter_count(&self) -> u32 {
        u32::try_from(self.waiters.len()).expect("waiters are bounded far below u32::MAX")
    }

    /// The earliest waiter registered with `hash`.
    pub fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter> {
        let seq = self.hash_seqs.get(hash)?.iter().next()?;
        Some(self.waiters[seq].clone())
    }

    /// Appends `waiter` behind every current waiter, kept in `layout`. The
    /// id is neither waiting, holding nor superseded (superseded is final
    /// for an id).
    pub fn push_waiter(&mut self, waiter: &Waiter, layout: Layout) {
        assert!(
            !self.waiter_seq.contains_key(&waiter.id) && self.holder_index(&waiter.id).is_none(),
            "{} already waits or holds",
            waiter.id
        );
        let seq = self.take_seq();
        if let Some(hash) = &waiter.input_hash {
            self.hash_seqs.entry(hash.clone()).or_default().insert(seq);
        }
        self.waiter_seq.insert(waiter.id.clone(), seq);
        self.waiters.insert(seq, waiter.clone());
        let share = (waiter.priority, waiter.tenant.clone());
        self.sole = (layout == Layout::Sole).then(|| share.clone());
        if layout == Layout::Sole {
            self.sole_seqs.insert(seq);
            return;
        }
        let turn = self.tenants.entry(share).or_default();
        turn.waiters += 1;
        turn.first_seq.get_or_insert(seq);
    }

    /// The waiters kept in `Layout::Sole` move to `Layout::Shared`: their
    /// share's turn counts them, from the earliest; no seq changes.
    pub fn spread(&mut self) {
        let Some(share) = self.sole.take() else {
            return;
        };
        let (waiters, first_seq) = (self.waiter_count(), self.waiters.keys().next().copied());
        let turn = self.tenants.entry(share).or_default();
        (turn.waiters, turn.first_seq) = (waiters, first_seq);
        self.sole_seqs.clear();
    }

    pub fn set_waiter_workflow(&mut self, id: &InstanceId, workflow: Option<&WorkflowName>) {
        let seq = self.waiter_seq[id];
        self.waiters
            .get_mut(&seq)
            .expect("index and queue agree")
            .workflow = workflow.cloned();
    }

    pub fn remove_waiter(&mut self, id: &InstanceId) {
        let Some(seq) = self.waiter_seq.remove(id) else {
            return;
        };
        let waiter = self.waiters.remove(&seq).expect("index and queue agree");
        if self.waiters.is_empty() {
            self.sole = None;
        }
        if self.sole_seqs.remove(&seq) {
            self.forget_hash(waiter.input_hash, seq);
            return;
        }
        let share = (waiter.priority, waiter.tenant.clone());
        let next = self
            .waiters
            .iter()
            .find(|(_, w)| w.priority == share.0 && w.tenant == share.1)
            .map(|(s, _)| *s);
        let turn = self
            .tenants
            .get_mut(&share)
            .expect("a waiter's tenant is kept");
        turn.waiters -= 1;
        turn.first_seq = next;
        if turn.waiters == 0 && turn.served.is_none() {
            self.tenants.remove(&share);
        }
        self.forget_hash(waiter.input_hash, seq);
    }

    fn forget_hash(&mut self, hash: Option<InputHash>, seq: u64) {
        if let Some(hash) = hash {
            let seqs = self.hash_seqs.get_mut(&hash).expect("hash index agrees");
            seqs.remove(&seq);
            if seqs.is_empty() {
                self.hash_seqs.remove(&hash);
            }
        }
    }

    /// Removes every waiter but `keep`, records each as superseded, and
    /// returns them in queue order.
    pub fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<Waiter> {
        let dropped: Vec<Waiter> = self
            .waiters
            .values()
            .filter(|w| w.id != *keep)
            .cloned()
            .collect();
        for waiter in &dropped {
            let id = &waiter.id;
            self.remove_waiter(id);
            let seq = self.take_seq();
            self.history.superseded();
            self.superseded.insert(seq, id.clone());
            // push_waiter refuses superseded ids, so none is remembered twice.
            let earlier = self.superseded_seq.insert(id.clone(), seq);
            assert!(earlier.is_none(), "{id} superseded twice");
        }
        dropped
    }

    pub fn superseded_count(&self) -> u32 {
        u32::try_from(self.superseded.len()).expect("superseded ids are bounded")
    }

    /// A grant of `fence` served a waiter of `share` in its turn: the
    /// tenant goes to the back of its priority's round. Then tenants with
    /// no waiter left served more than [`IDLE_TENANT_KEPT_GRANTS`] grants
    /// ago are forgotten.
    pub fn serve(&mut self, share: Share, fence: u64) {
        self.tenants.entry(share).or_default().served = Some(fence);
        let below = fence.saturating_sub(IDLE_TENANT_KEPT_GRANTS);
        self.tenants
            .retain(|_, t| t.waiters > 0 || t.served.is_some_and(|s| s >= below));
    }

    /// Forgets the oldest superseded ids until at most `keep` remain.
    pub fn forget_superseded_beyond(&mut self, keep: u32) {
        while self.superseded.len() > keep as usize {
            let (_, id) = self.superseded.pop_first().expect("non-empty");
            self.superseded_seq.remove(&id);
        }
    }
}

// ---------------------------------------------------------------------------
// The targeted view and the writes of `super::decide`.

impl KeyTwin {
    /// The key's summary, as `store::load_summary` reads it.
    pub fn summary(&self) -> Summary {
        Summary {
            callers_limit: self.limit,
            limit_override: self.limit_override,
            max_waiting: self.max_waiting,
            paused: self.paused.clone(),
            fence: self.fence,
            turns: self.turns,
            waiters: self.waiter_count(),
            holders: self.holders(),
            none_superseded: self.superseded.is_empty(),
            hold_times_ms: self.hold_times_ms.clone(),
            sole: self.sole.clone(),
        }
    }

    /// The view `input` decides on: the whole key could be handed over,
    /// but the view holds only what the core's read plan names (as
    /// `store::load` reads it), so a decision that strays beyond it fails
    /// here as it would in the object.
    pub fn load(&self, input: &Input) -> View {
        load_view(self.summary(), input, |read| self.execute(read))
    }

    /// One read of the plan, answered from memory as `store::execute`
    /// answers it from the rows.
    pub fn execute(&self, read: Read) -> Read<Fetched> {
        match read {
            Read::Member(id, ()) => {
                let member = self.member(&id);
                Read::Member(id, member)
            }
            // As the rows are read in each layout: in `Layout::Sole`, by
            // arrival alone; in `Layout::Shared`, by the turns of the
            // waiters counted in them (a sole row is in none).
            Read::Front(n, layout, ()) => {
                let mut order = match layout {
                    Layout::Sole => self.waiters.values().cloned().collect(),
                    Layout::Shared => {
                        hand_off_order(&self.kept_in(layout), |p, t| self.served(p, t))
                    }
                };
                order.truncate(n as usize);
                Read::Front(n, layout, order)
            }
            Read::Place {
                id,
                priority,
                tenant,
                layout,
                place: (),
            } => {
                let served = |p, t: Option<&Ident>| self.served(p, t);
                let arrived = self.kept_in(layout);
                let place = match self.waiter_seq.get(&id) {
                    Some(seq) if layout == Layout::Sole => {
                        self.waiters.range(..seq).count() as u32 + 1
                    }
                    _ => place_in_order(&arrived, served, &id, priority, tenant.as_ref()),
                };
                Read::Place {
                    id,
                    priority,
                    tenant,
                    layout,
                    place,
                }
            }
            Read::CheckTimes(()) => Read::CheckTimes(
                (self.holders.iter())
                    .map(|(h, checked)| (h.id.clone(), *checked))
                    .collect(),
            ),
            Read::FirstWithHash(hash, ()) => {
                let first = self.first_waiter_with_hash(&hash);
                Read::FirstWithHash(hash, first)
            }
            Read::Waiters(()) => Read::Waiters(self.waiters.values().cloned().collect()),
        }
    }
}

/// Carries out a transition's writes on the in-memory key, in order, in
/// one `match`, as `store::write` does on the tables.
pub fn apply(key: &mut KeyTwin, writes: &[Write]) {
    for write in writes {
        match write {
            Write::SetLimit(limit) => key.limit = *limit,
            Write::SetLimitOverride(limit) => key.limit_override = *limit,
            Write::SetMaxWaiting(cap) => key.max_waiting = Some(*cap),
            Write::SetPaused(paused) => key.paused = paused.clone(),
            Write::DrawTurn(n) => {
                assert_eq!(*n, key.turns + 1, "turns are drawn one at a time");
                key.turns = *n;
            }
            Write::AddHolder(holder) => key.add_holder(holder),
            Write::ConfirmHolder(id) => key.confirm_holder(id),
            Write::CancelHolder(id) => key.cancel_holder(id),
            Write::SetHolderWorkflow(id, workflow) => {
                key.set_holder_workflow(id, workflow.as_ref())
            }
            Write::RemoveHolder(id, end) => {
                if let (Some(end), Some(i)) = (end, key.holder_index(id)) {
                    let since = key.holders[i].0.since_ms;
                    key.hold_times_ms.push(end.at_ms.saturating_sub(since));
                    let over = key.hold_times_ms.len().saturating_sub(HOLD_TIMES_KEPT);
                    key.hold_times_ms.drain(..over);
                    // As the ended row's trigger (schema v17) adds it.
                    key.history.tally(&end.tally);
                }
                key.remove_holder(id)
            }
            Write::Serve {
                priority,
                tenant,
                fence,
            } => key.serve((*priority, tenant.clone()), *fence),
            Write::MarkChecked(id, now_ms, answer) => key.mark_checked(id, *now_ms, *answer),
            Write::PushWaiter(waiter, layout) => key.push_waiter(waiter, *layout),
            Write::Spread => key.spread(),
            Write::SetWaiterWorkflow(id, workflow) => {
                key.set_waiter_workflow(id, workflow.as_ref())
            }
            Write::RemoveWaiter(id) => key.remove_waiter(id),
            Write::SupersedeAllExcept(keep, dropped) => {
                let gone = key.supersede_waiters_except(keep);
                assert_eq!(gone.len() as u32, *dropped, "superseded count");
            }
            Write::ForgetSupersededBeyond(keep) => key.forget_superseded_beyond(*keep),
            Write::History(write) => key.history.apply(write),
        }
    }
}
