//! A bucket in memory, for the tests: [`Table::apply`] carries out a
//! decision's writes as the SQL module does, and the table is the reference
//! the SQL store and the object's cache must match answer for answer.

use super::state::{GrantRow, Meta, Rows, RuleRow, Write};
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Table {
    meta: Meta,
    rules: BTreeMap<u8, RuleRow>,
    grants: BTreeMap<u64, GrantRow>,
}

impl Table {
    /// Rows kept, deleted or not yet pruned, for cost checks.
    pub fn rows(&self) -> usize {
        self.grants.len()
    }

    /// Carries out a decision's writes, in order.
    pub fn apply(&mut self, writes: &[Write]) {
        for write in writes {
            match write {
                Write::Meta(meta) => self.meta = *meta,
                Write::Rule(rule) => {
                    self.rules.insert(rule.slot, rule.clone());
                }
                Write::Grant(row) => {
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
                Write::Regrant(row) => {
                    let old = self.grants.get_mut(&row.seq).expect("rewritten row exists");
                    *old = row.clone();
                }
                Write::Ungrant { seq } => {
                    self.grants.remove(seq);
                }
                Write::Prune {
                    before_ms,
                    keep_seq,
                    limit,
                } => {
                    let doomed: Vec<u64> = self
                        .grants
                        .range(..keep_seq)
                        .take_while(|(_, g)| g.at_ms < *before_ms)
                        .take(*limit as usize)
                        .map(|(&seq, _)| seq)
                        .collect();
                    for seq in &doomed {
                        self.grants.remove(seq);
                    }
                }
            }
        }
    }
}

impl Rows for Table {
    fn meta(&self) -> Meta {
        self.meta
    }

    fn rules(&self) -> Vec<RuleRow> {
        self.rules.values().cloned().collect()
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
}
