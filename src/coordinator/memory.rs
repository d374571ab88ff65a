//! An in-memory [`KeyStore`]: the simulation's storage, and the reference
//! the SQL store is measured against.

use super::state::{Holder, KeyStore, Waiter};
use crate::ident::{InputHash, InstanceId};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Default, Clone)]
pub struct MemoryKeyStore {
    holder: Option<Holder>,
    waiters: BTreeMap<u64, Waiter>,
    waiter_seq: HashMap<InstanceId, u64>,
    hash_seqs: HashMap<InputHash, BTreeSet<u64>>,
    next_seq: u64,
    superseded: BTreeMap<u64, InstanceId>,
    superseded_seq: HashMap<InstanceId, u64>,
}

impl MemoryKeyStore {
    /// Waiters in the order they will be handed the key.
    pub fn waiters(&self) -> impl Iterator<Item = &Waiter> {
        self.waiters.values()
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }
}

impl KeyStore for MemoryKeyStore {
    fn holder(&self) -> Option<Holder> {
        self.holder.clone()
    }

    fn set_holder(&mut self, holder: Option<&Holder>) {
        self.holder = holder.cloned();
    }

    fn waiter(&self, id: &InstanceId) -> Option<Waiter> {
        self.waiter_seq.get(id).map(|seq| self.waiters[seq].clone())
    }

    fn first_waiter(&self) -> Option<Waiter> {
        self.waiters.values().next().cloned()
    }

    fn first_waiter_with_hash(&self, hash: &InputHash) -> Option<Waiter> {
        let seq = self.hash_seqs.get(hash)?.iter().next()?;
        Some(self.waiters[seq].clone())
    }

    fn waiter_count(&self) -> u32 {
        u32::try_from(self.waiters.len()).expect("waiters are bounded far below u32::MAX")
    }

    fn push_waiter(&mut self, waiter: &Waiter) {
        assert!(
            !self.waiter_seq.contains_key(&waiter.id),
            "duplicate waiter"
        );
        let seq = self.take_seq();
        if let Some(hash) = &waiter.input_hash {
            self.hash_seqs.entry(hash.clone()).or_default().insert(seq);
        }
        self.waiter_seq.insert(waiter.id.clone(), seq);
        self.waiters.insert(seq, waiter.clone());
    }

    fn remove_waiter(&mut self, id: &InstanceId) {
        let Some(seq) = self.waiter_seq.remove(id) else {
            return;
        };
        let waiter = self.waiters.remove(&seq).expect("index and queue agree");
        if let Some(hash) = waiter.input_hash {
            let seqs = self.hash_seqs.get_mut(&hash).expect("hash index agrees");
            seqs.remove(&seq);
            if seqs.is_empty() {
                self.hash_seqs.remove(&hash);
            }
        }
    }

    fn supersede_waiters_except(&mut self, keep: &InstanceId) -> Vec<InstanceId> {
        let dropped: Vec<InstanceId> = self
            .waiters
            .values()
            .map(|w| w.id.clone())
            .filter(|id| id != keep)
            .collect();
        for id in &dropped {
            self.remove_waiter(id);
            let seq = self.take_seq();
            self.superseded.insert(seq, id.clone());
            // push_waiter refuses superseded ids, so none is remembered twice.
            let earlier = self.superseded_seq.insert(id.clone(), seq);
            assert!(earlier.is_none(), "{id} superseded twice");
        }
        dropped
    }

    fn is_superseded(&self, id: &InstanceId) -> bool {
        self.superseded_seq.contains_key(id)
    }

    fn superseded_count(&self) -> u32 {
        u32::try_from(self.superseded.len()).expect("superseded ids are bounded")
    }

    fn forget_superseded_beyond(&mut self, keep: u32) {
        while self.superseded.len() > keep as usize {
            let (_, id) = self.superseded.pop_first().expect("non-empty");
            self.superseded_seq.remove(&id);
        }
    }
}
