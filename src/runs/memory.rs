//! An in-memory [`RunStore`]: the simulation's storage, and the reference
//! the SQL store is measured against.

use super::state::{Claim, Event, Finished, Run, RunStore};
use crate::ident::InstanceId;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct MemoryRunStore {
    claim: Option<Claim>,
    finished: Option<Finished>,
    latest_seq: u64,
    events: BTreeMap<u64, Event>,
}

impl MemoryRunStore {
    /// Every kept event in order (for the simulation's checks).
    pub fn kept(&self) -> impl Iterator<Item = &Event> {
        self.events.values()
    }
}

impl RunStore for MemoryRunStore {
    fn run(&self) -> Run {
        match (&self.claim, &self.finished) {
            (None, None) => Run::Unclaimed,
            (Some(claim), None) => Run::Running {
                claim: claim.clone(),
            },
            (Some(claim), Some(finished)) => Run::Finished {
                claim: claim.clone(),
                finished: finished.clone(),
            },
            (None, Some(_)) => panic!("an outcome without a claim"),
        }
    }

    fn claimant(&self) -> Option<InstanceId> {
        self.claim.as_ref().map(|c| c.id.clone())
    }

    fn set_claim(&mut self, claim: &Claim) {
        assert!(self.finished.is_none(), "claimed a finished run");
        self.claim = Some(claim.clone());
    }

    fn set_finished(&mut self, finished: &Finished) {
        assert!(self.claim.is_some(), "finished an unclaimed run");
        assert!(self.finished.is_none(), "finished twice");
        self.finished = Some(finished.clone());
    }

    fn latest_seq(&self) -> u64 {
        self.latest_seq
    }

    fn first_kept_seq(&self) -> Option<u64> {
        self.events.keys().next().copied()
    }

    fn push_event(&mut self, event: &Event) {
        assert_eq!(
            event.seq,
            self.latest_seq + 1,
            "a gap in the event sequence"
        );
        self.latest_seq = event.seq;
        self.events.insert(event.seq, event.clone());
    }

    fn events_after(&self, after: u64, limit: u32) -> Vec<Event> {
        self.events
            .range(after + 1..)
            .take(limit as usize)
            .map(|(_, e)| e.clone())
            .collect()
    }

    fn forget_events_through(&mut self, through: u64) {
        self.events = self.events.split_off(&(through + 1));
    }

    fn delete_run(&mut self) {
        *self = MemoryRunStore::default();
    }
}
