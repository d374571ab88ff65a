//! An in-memory [`RateStore`]: the property tests' reference, which the SQL
//! store must match answer for answer.

use super::state::{GrantRow, Meta, RateStore, RuleRow};
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct MemoryRateStore {
    meta: Meta,
    rules: BTreeMap<u8, RuleRow>,
    grants: BTreeMap<u64, GrantRow>,
}

impl MemoryRateStore {
    /// Rows kept, deleted or not yet pruned, for cost checks.
    pub fn rows(&self) -> usize {
        self.grants.len()
    }
}

impl RateStore for MemoryRateStore {
    fn meta(&self) -> Meta {
        self.meta
    }

    fn set_meta(&mut self, meta: &Meta) {
        self.meta = *meta;
    }

    fn rules(&self) -> Vec<RuleRow> {
        self.rules.values().cloned().collect()
    }

    fn put_rule(&mut self, rule: &RuleRow) {
        self.rules.insert(rule.slot, rule.clone());
    }

    fn newest_grant(&self) -> Option<GrantRow> {
        self.grants.values().next_back().cloned()
    }

    fn oldest_grant(&self) -> Option<GrantRow> {
        self.grants.values().next().cloned()
    }

    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow> {
        self.grants.values().rev().find(|g| g.at_ms <= t).cloned()
    }

    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow> {
        self.grants.range(seq..).next().map(|(_, g)| g.clone())
    }

    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow> {
        self.grants
            .range(..before)
            .rev()
            .take(limit as usize)
            .map(|(_, g)| g.clone())
            .collect()
    }

    fn push_grant(&mut self, row: &GrantRow) {
        assert!(
            self.grants
                .keys()
                .next_back()
                .is_none_or(|&last| last < row.seq),
            "grant {} is not the newest",
            row.seq
        );
        self.grants.insert(row.seq, row.clone());
    }

    fn replace_grant(&mut self, row: &GrantRow) {
        let old = self.grants.get_mut(&row.seq).expect("replaced row exists");
        *old = row.clone();
    }

    fn delete_grant(&mut self, seq: u64) {
        self.grants.remove(&seq);
    }

    fn prune(&mut self, before_ms: u64, keep_seq: u64, limit: u32) -> Option<u64> {
        let doomed: Vec<u64> = self
            .grants
            .range(..keep_seq)
            .take_while(|(_, g)| g.at_ms < before_ms)
            .take(limit as usize)
            .map(|(&seq, _)| seq)
            .collect();
        for seq in &doomed {
            self.grants.remove(seq);
        }
        doomed.last().copied()
    }
}
