//! The bucket's invariants: [`assert_invariants`], the few lookups checked
//! after every committed decision, and [`assert_table_invariants`], every
//! row (tests only).

use super::state::Rows;
use crate::limits::RATE_RULE_SLOTS;

/// The bucket's invariants that a few lookups check (the rules, and the
/// newest and oldest rows against them), after every committed decision,
/// in release builds too: with the object's cache warm they read nothing
/// from storage. A broken one panics, and the object restarts from what
/// was committed.
pub fn assert_invariants(view: &impl Rows) {
    // Plain messages: formatting rows into them would cost the module's size.
    let (meta, rules) = view.meta_and_rules();
    assert!(rules.len() <= RATE_RULE_SLOTS, "more rules than slots");
    let mut slots = 0u16;
    for (i, rule) in rules.iter().enumerate() {
        assert!(
            usize::from(rule.slot) < RATE_RULE_SLOTS && slots & 1 << rule.slot == 0,
            "a rule slot out of range or taken twice"
        );
        slots |= 1 << rule.slot;
        assert!(
            rule.window_ms <= meta.max_window_ms,
            "a window past the longest"
        );
        assert!(
            rules[..i].iter().all(|other| other.id != rule.id),
            "one rule id in two slots"
        );
    }
    let (newest, oldest) = (view.newest_grant(), view.oldest_grant());
    assert!(
        newest.is_some() == oldest.is_some(),
        "newest without oldest"
    );
    if let (Some(newest), Some(oldest)) = (newest, oldest) {
        assert!(
            oldest.seq <= newest.seq && oldest.at_ms <= newest.at_ms,
            "oldest row after the newest"
        );
        assert!(
            [&newest, &oldest]
                .iter()
                .all(|row| row.permits >= 1 && row.mask != 0),
            "an empty grant row"
        );
        assert!(
            newest.mask & !slots == 0,
            "the newest grant counts for a slot with no rule"
        );
        assert!(
            (0..RATE_RULE_SLOTS).all(|slot| oldest.total_before(slot) <= newest.totals[slot]),
            "running totals fell"
        );
    }
}

/// Every invariant of the whole table, row by row (it reads every row:
/// tests only).
pub fn assert_table_invariants(store: &impl Rows) {
    assert_invariants(store);
    let rules = store.rules();
    assert_eq!(store.meta_and_rules(), (store.meta(), rules.clone()));
    let mut rows = store.grants_before(u64::MAX, u32::MAX);
    rows.reverse();
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.seq < b.seq && a.at_ms <= b.at_ms,
            "rows out of order: {a:?} {b:?}"
        );
        for slot in 0..RATE_RULE_SLOTS {
            assert_eq!(
                b.total_before(slot),
                a.totals[slot],
                "totals broken at {b:?}"
            );
        }
    }
    for row in &rows {
        assert!(row.permits >= 1 && row.mask != 0, "empty row {row:?}");
    }
    assert_eq!(store.newest_grant().as_ref(), rows.last());
    assert_eq!(store.oldest_grant().as_ref(), rows.first());
}
