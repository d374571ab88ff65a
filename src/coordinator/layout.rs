//! Which layout a key's waiters are kept in ([`Layout`], issue 38): the
//! choice the read plan (`super::read`) names in each read of the front or
//! of a place, and the decision (`super::draft`) in each join. The order
//! they are handed on is §1c's, stated once in `super::order`; a layout
//! only serves it (the store's reads by each are held to that order by
//! `tests/coordinator_order.rs`, and the simulation judges both against
//! its own).

use super::types::{Layout, Summary};
use crate::ident::Ident;

/// The layout the key's waiters are kept in, which its reads of the front
/// and of a place take ([`Layout`]; the order they give is §1c's in both).
pub fn layout_of(summary: &Summary) -> Layout {
    match summary.sole {
        Some(_) => Layout::Sole,
        None => Layout::Shared,
    }
}

/// How a waiter of `priority` and `tenant` joins the key: whether its
/// waiters move to [`Layout::Shared`] first (`true`: it is the first of a
/// second share), and the layout its own row is kept in. A key nobody
/// waits at takes it in [`Layout::Sole`]; a shared key stays shared until
/// its waiters are gone.
pub fn joining(summary: &Summary, priority: i8, tenant: Option<&Ident>) -> (bool, Layout) {
    if summary.waiters == 0 {
        return (false, Layout::Sole);
    }
    match &summary.sole {
        Some((p, t)) if *p == priority && t.as_ref() == tenant => (false, Layout::Sole),
        Some(_) => (true, Layout::Shared),
        None => (false, Layout::Shared),
    }
}
