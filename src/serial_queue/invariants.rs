//! The serial queue's invariants, checked on every row read back.
//!
//! A row whose columns contradict its state, two holders in a group, or
//! waiters at two revisions mean the rules were broken somewhere: the
//! checks crash (in release builds too) rather than let a decision build on
//! them. The simulation runs [`assert_invariants`] over the whole table
//! after every step; the D1 shell over every row it reads.

use super::state::{turn, Entry, EntryState, GroupRow, Paused, Row};
use crate::ident::{Ident, InstanceId};
use crate::limits::{
    PAUSE_REASON_BYTES_MAX, SERIAL_RECENT_PER_GROUP_MAX, SERIAL_WAITERS_PER_GROUP_MAX,
};

/// The row typed, or why its columns contradict its state.
pub fn check_row(row: &Row) -> Result<Entry, String> {
    // The row by its key only: Debug-printing every column would link the
    // formatting of each of their types into the Worker (P6).
    let fail = |why: &str| {
        Err(format!(
            "serial_queue row {} / {}: {why}",
            row.group_name, row.instance_id
        ))
    };
    let Ok(instance_id) = InstanceId::parse("instanceId", &row.instance_id) else {
        return fail("instance id is not valid");
    };
    let Ok(revision) = Ident::parse("revision", &row.revision) else {
        return fail("revision is not valid");
    };
    let superseded = (&row.superseded_by, &row.superseded_by_revision);
    if row.state != "superseded" && (superseded.0.is_some() || superseded.1.is_some()) {
        return fail("only a superseded row names who superseded it");
    }
    if row.fence.is_some() && row.heartbeat_at.is_none() {
        return fail("only a row that held the group has a fence");
    }
    let finished = row.finished_at;
    let state = match (row.state.as_str(), finished) {
        ("waiting", None) if row.heartbeat_at.is_none() => EntryState::Waiting,
        ("waiting", _) => return fail("a waiter has neither held nor finished"),
        ("holding", None) => match row.heartbeat_at {
            Some(heartbeat_at_ms) => EntryState::Holding { heartbeat_at_ms },
            None => return fail("a holder has a heartbeat"),
        },
        ("superseded", Some(at_ms)) => {
            // Superseding only ever touches waiters: a row that held the
            // group was never superseded.
            if row.heartbeat_at.is_some() {
                return fail("a superseded row never held the group");
            }
            let (Some(by), Some(by_revision)) = superseded else {
                return fail("a superseded row names who superseded it");
            };
            let (Ok(by), Ok(by_revision)) = (
                InstanceId::parse("supersededBy", by),
                Ident::parse("supersededByRevision", by_revision),
            ) else {
                return fail("who superseded it is not valid");
            };
            EntryState::Superseded {
                by,
                by_revision,
                at_ms,
            }
        }
        ("timed_out", Some(at_ms)) if row.heartbeat_at.is_none() => EntryState::TimedOut { at_ms },
        ("released", Some(at_ms)) => EntryState::Released {
            at_ms,
            held: row.heartbeat_at.is_some(),
        },
        ("abandoned", Some(at_ms)) => EntryState::Abandoned { at_ms },
        _ => return fail("state and finished_at disagree"),
    };
    Ok(Entry {
        instance_id,
        revision,
        enqueued_at_ms: row.enqueued_at,
        state,
        workflow: row.workflow.clone(),
        turn: row.turn_prefix.as_deref().map(|p| turn(p, row.seq)),
        fence: row.fence,
    })
}

/// A group's steering row typed: its pause, if it is paused; crashes on a
/// row that breaks the invariants (a reason without a pause, or one longer
/// than the edge lets in).
pub fn steering(row: &GroupRow) -> Option<Paused> {
    let fail = |why: &str| -> ! { panic!("serial_group row {}: {why}", row.group_name) };
    match (row.paused_at, &row.paused_reason) {
        (None, Some(_)) => fail("a reason without a pause"),
        (_, Some(reason)) if reason.len() > PAUSE_REASON_BYTES_MAX => {
            fail("its reason is too long")
        }
        (None, None) => None,
        (Some(since_ms), reason) => Some(Paused {
            since_ms,
            reason: reason.clone(),
        }),
    }
}

/// The row typed; crashes on a row that breaks the invariants.
pub fn entry(row: &Row) -> Entry {
    match check_row(row) {
        Ok(entry) => entry,
        Err(why) => panic!("{why}"),
    }
}

/// Checks rows of any groups (all of a group's rows, or any subset read
/// back): every row consistent, at most one holder per group, every waiter
/// of a group at one revision (the newest arrival superseded the rest), and
/// no group past its bounds.
pub fn assert_invariants(rows: &[Row]) {
    #[derive(Default)]
    struct Group<'a> {
        holders: u32,
        waiters: u32,
        finished: u32,
        waiting_revision: Option<&'a str>,
    }
    // A batch reads one group, the simulation a few: a list searched in
    // order costs the WASM less than a hash map of its own (P6).
    let mut groups: Vec<(&str, Group<'_>)> = Vec::new();
    for row in rows {
        let entry = entry(row);
        let name = row.group_name.as_str();
        let at = match groups.iter().position(|(g, _)| *g == name) {
            Some(at) => at,
            None => {
                groups.push((name, Group::default()));
                groups.len() - 1
            }
        };
        let group = &mut groups[at].1;
        match entry.state {
            EntryState::Holding { .. } => group.holders += 1,
            EntryState::Waiting => {
                group.waiters += 1;
                let first = *group.waiting_revision.get_or_insert(&row.revision);
                assert!(
                    first == row.revision,
                    "group {}: waiters at two revisions ({first} and {}): the newest arrival did not win",
                    row.group_name,
                    row.revision
                );
            }
            _ => group.finished += 1,
        }
    }
    for (name, group) in groups {
        assert!(
            group.holders <= 1,
            "group {name}: {} holders",
            group.holders
        );
        assert!(
            group.waiters <= SERIAL_WAITERS_PER_GROUP_MAX,
            "group {name}: {} waiters",
            group.waiters
        );
        // Pruned to the bound by every enqueue (which keeps the row with
        // the group's fence besides); since then at most every waiter and
        // the holder can have finished.
        let finished_max = SERIAL_RECENT_PER_GROUP_MAX + SERIAL_WAITERS_PER_GROUP_MAX + 2;
        assert!(
            group.finished <= finished_max,
            "group {name}: {} finished rows",
            group.finished
        );
    }
}
