//! A bucket's state as decisions read it ([`Rows`], the targeted view: its
//! scalars and rules, and its grant rows by indexed lookups), and the row
//! writes ([`Write`]) a decision returns for the shell to carry out.
//!
//! # How a window's use is one lookup
//! Every grant is one row: when, how many permits, and which rules it counts
//! for (a bit per rule *slot*). Each row also carries, per slot, the running
//! total of permits granted under that slot's rule up to and including the
//! row ([`GrantRow::totals`]); a row that does not count for a slot carries
//! the previous total forward. So the permits a rule granted after time `t`
//! are the newest row's total minus the total of the last row at or before
//! `t`: two indexed lookups, whatever the number of rows. And the time a
//! rule next frees a permit is found from the same totals (see `decide`).

use super::rules::RuleId;
use crate::limits::RATE_RULE_SLOTS;

/// Running totals, one per rule slot.
pub type Totals = [u64; RATE_RULE_SLOTS];

/// One grant: `permits` at `at_ms`, counting for the rules whose slot bits
/// are set in `mask`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    /// Increases with every grant; rows are in time order by `seq` too.
    pub seq: u64,
    pub at_ms: u64,
    /// At least 1: a row whose permits are all refunded is deleted.
    pub permits: u32,
    pub mask: u16,
    /// Per slot: permits granted under that slot up to and including this row.
    pub totals: Totals,
}

impl GrantRow {
    pub fn counts_for(&self, slot: usize) -> bool {
        self.mask & (1 << slot) != 0
    }

    /// The slot's total just before this row.
    pub fn total_before(&self, slot: usize) -> u64 {
        self.totals[slot]
            - if self.counts_for(slot) {
                u64::from(self.permits)
            } else {
                0
            }
    }
}

/// A rule the bucket remembers, in its slot, with its values as last given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRow {
    pub slot: u8,
    pub id: RuleId,
    pub limit: u32,
    pub window_ms: u64,
}

/// The bucket's scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meta {
    /// No grants while `now < cooldown_until_ms`.
    pub cooldown_until_ms: u64,
    /// The longest `windowMs` the bucket has seen: how long grants are kept.
    pub max_window_ms: u64,
    /// Grants before this time count for no rule. It moves forward
    /// when the longest window grows: grants older than the old longest
    /// window may already be deleted, so none of them counts, deleted or
    /// not, and every store answers the same.
    pub horizon_ms: u64,
}

/// What a decision reads of one bucket: read-only, indexed lookups, so a
/// decision reads the few rows its input needs however many are kept (the
/// view stays targeted; loading every row would make P4's flat cost and
/// P5's reads grow with the traffic). The object's cache answers most of
/// them from memory (`cached`), storage the rest (`sql`), the tests' table
/// all of them (`memory`).
///
/// Every method's cost must not depend on the number of rows kept, except
/// the bounded ones that say so.
pub trait Rows {
    fn meta(&self) -> Meta;
    /// Every remembered rule, by slot (at most [`RATE_RULE_SLOTS`]).
    fn rules(&self) -> Vec<RuleRow>;
    /// `meta()` and `rules()` together (one statement in SQL).
    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        (self.meta(), self.rules())
    }
    fn newest_grant(&self) -> Option<GrantRow>;
    fn oldest_grant(&self) -> Option<GrantRow>;
    /// The newest row with `at_ms <= t`.
    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow>;
    /// [`Rows::last_grant_at_or_before`] of `t` and the row after it (the
    /// smallest `seq` above its): until a window's start reaches that next
    /// row's time, the answer stays the same (`super::cached` keeps it).
    fn last_grant_at_or_before_and_next(&self, t: u64) -> (Option<GrantRow>, Option<GrantRow>) {
        let last = self.last_grant_at_or_before(t);
        let next = last
            .as_ref()
            .and_then(|row| self.grant_at_or_after(row.seq + 1));
        (last, next)
    }
    /// The row with the smallest `seq >= seq`.
    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow>;
    /// Up to `limit` rows with `seq < before`, newest first.
    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow>;
}

/// One row-level change a decision asks for. A decision's writes are
/// committed together, in order, in the turn that decided them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// The bucket's scalars, as they now stand.
    Meta(Meta),
    /// A rule into its slot, replacing whatever rule was there.
    Rule(RuleRow),
    /// A grant, newer than every row kept.
    Grant(GrantRow),
    /// The row with `row.seq`, rewritten (a partial refund).
    Regrant(GrantRow),
    /// The row with `seq`, deleted (a whole refund).
    Ungrant { seq: u64 },
    /// Up to `limit` of the oldest rows with `at_ms < before_ms` and
    /// `seq < keep_seq` deleted (aged out; `keep_seq` is the newest row's,
    /// which carries the running totals forward). Times rise with `seq`, so
    /// the rows deleted are the oldest kept.
    Prune {
        before_ms: u64,
        keep_seq: u64,
        limit: u32,
    },
}

impl<T: Rows> Rows for &T {
    fn meta(&self) -> Meta {
        (**self).meta()
    }
    fn rules(&self) -> Vec<RuleRow> {
        (**self).rules()
    }
    fn meta_and_rules(&self) -> (Meta, Vec<RuleRow>) {
        (**self).meta_and_rules()
    }
    fn newest_grant(&self) -> Option<GrantRow> {
        (**self).newest_grant()
    }
    fn oldest_grant(&self) -> Option<GrantRow> {
        (**self).oldest_grant()
    }
    fn last_grant_at_or_before(&self, t: u64) -> Option<GrantRow> {
        (**self).last_grant_at_or_before(t)
    }
    fn last_grant_at_or_before_and_next(&self, t: u64) -> (Option<GrantRow>, Option<GrantRow>) {
        (**self).last_grant_at_or_before_and_next(t)
    }
    fn grant_at_or_after(&self, seq: u64) -> Option<GrantRow> {
        (**self).grant_at_or_after(seq)
    }
    fn grants_before(&self, before: u64, limit: u32) -> Vec<GrantRow> {
        (**self).grants_before(before, limit)
    }
}
