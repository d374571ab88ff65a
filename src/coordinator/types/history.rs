//! What happened at a key (contract §10): its `counts`, its `recent` holds
//! that ended with a waiter behind them or with the holder found dead, and
//! how long each holder that waited had waited.
//!
//! The decision records what it does as it does it ([`Did`]: the holds it
//! ends and how, the waiters it grants a slot); [`record`] is the one rule
//! of what that adds to the history, as [`HistoryWrite`]s and a [`Tally`]
//! in the decision's own transition: nothing for an uncontended acquire or
//! release, whose only trace is the key's `grants` count: the holder row
//! itself while it holds, folded into the key row by the trigger that ends
//! its hold (schema v12). `store/history.rs` carries those writes out on
//! the rows and reads them back for `inspect` and the list;
//! `KeyHistory::apply` on the in-memory key (`crate::coordinator`'s twin).

use super::state::Holder;
use crate::ident::InstanceId;
#[cfg(not(target_arch = "wasm32"))]
use crate::limits::COORDINATOR_RECENT_KEPT;
#[cfg(not(target_arch = "wasm32"))]
use std::collections::VecDeque;

/// How a recorded hold ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Released,
    Dead,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Released => "released",
            Outcome::Dead => "dead",
        }
    }
}

/// A hold that ended with a waiter behind it or with its holder found
/// dead, or that was cancelled (§1d).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub id: InstanceId,
    pub fence: u64,
    pub from_ms: u64,
    pub to_ms: u64,
    /// How long the holder had waited for the key.
    pub waited_ms: u64,
    pub outcome: Outcome,
    /// Its holder was cancelled by a superseding enqueue (§1d).
    pub cancelled: bool,
}

/// A key's counts since its object was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub grants: u64,
    pub hand_offs: u64,
    pub dead_holders: u64,
    pub superseded: u64,
    pub coalesced: u64,
    /// Holders cancelled (§1d).
    pub cancelled: u64,
}

/// What one decision adds to the key row's counts and marks: carried by
/// its first finished hold's end ([`HoldEnd`]), else written on its own
/// ([`HistoryWrite::Tally`]); [`record`] says which. `grants` and
/// `superseded` are counted by the rows' own triggers, one per holder row
/// and superseded row written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub hand_offs: u32,
    pub dead_holders: u32,
    pub coalesced: u32,
    /// Holders cancelled (§1d).
    pub cancelled: u32,
    /// When a holder was found dead, if one was.
    pub dead_at_ms: Option<u64>,
    /// A list report is owed (`crate::busy::reporter::Due::Owed`): marked
    /// until the shard confirms it.
    pub report_owed: bool,
}

/// How a finished hold ends (`Write::RemoveHolder`): when, and the
/// decision's [`Tally`] when the hold carries it (else nothing: the
/// default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HoldEnd {
    pub at_ms: u64,
    pub tally: Tally,
}

/// A change to the key's history (`Write::History`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryWrite {
    /// A hold that ended goes into `recent`, with how long its holder
    /// waited ([`Holder::waited_ms`]); the oldest beyond
    /// [`COORDINATOR_RECENT_KEPT`](crate::limits::COORDINATOR_RECENT_KEPT) leave.
    Hold {
        id: InstanceId,
        fence: u64,
        from_ms: u64,
        to_ms: u64,
        waited_ms: u64,
        outcome: Outcome,
        /// Its holder was cancelled (§1d).
        cancelled: bool,
    },
    /// The key row's counts and marks grow by this much, in a decision
    /// that finishes no hold to carry them ([`HoldEnd`]).
    Tally(Tally),
    /// The shard confirmed the key's report (not a decision's: the shell
    /// writes it when the answer comes): nothing is owed.
    Paid,
}

/// What a decision did that the history records, noted as it acts.
#[derive(Debug, Clone, Default)]
pub struct Did {
    /// Holds it ended, the holder as it held, and how.
    pub ended: Vec<(Holder, Outcome)>,
    /// Waiters it granted a slot, with how long each had waited.
    pub granted_waiters: Vec<(InstanceId, u64)>,
    /// Holders it cancelled (§1d), as cancelled.
    pub cancelled: Vec<Holder>,
}

impl Did {
    /// Whether it found a holder dead.
    pub fn found_dead(&self) -> bool {
        self.ended.iter().any(|(_, o)| *o == Outcome::Dead)
    }
}

/// The one rule of what a decision adds to the key's history: the holds
/// it records, which go before its own writes (a hold it ends is recorded
/// while its holder's row is still there), and its [`Tally`].
///
/// - `recent` keeps a hold that ended with the holder found dead, or with
///   a waiter behind it (`waiters_before`: the key had one before the
///   decision), or whose holder was cancelled (§1d), so the key's time
///   line shows every cancellation; with how long its holder waited.
/// - A holder's wait is how long it waited for its slot (the grant sets
///   [`Holder::waited_ms`]): kept with it until its hold ends, on its own
///   row, written by the insert that grants it (schema v17).
/// - `handOffs` counts the grants to waiters of slots that a holder or a
///   dead holder gave up in the same decision: as many as both (a slot a
///   raised limit adds was given up by no one; a slot a lowered limit
///   keeps is given to no one).
/// - `deadHolders` counts the holders found dead, `coalesced` an enqueue
///   that coalesced, `cancelled` the holders it cancelled (§1d);
///   `report_owed` marks the report the decision owes.
/// - The tally rides on the decision's first finished hold's end
///   ([`HoldEnd`], `carry` in `decide`): that row's trigger
///   (`coordinator_holders_ended`, schema v17) adds it to the key row it
///   already writes, in the stamp's own statement. A decision that
///   finishes no hold writes a tally that is not nothing on its own
///   ([`HistoryWrite::Tally`]), after its other writes.
pub fn record(
    did: &Did,
    waiters_before: u32,
    coalesced: bool,
    report_owed: bool,
    now_ms: u64,
) -> (Vec<HistoryWrite>, Tally) {
    let ended = did
        .ended
        .iter()
        .filter(|(holder, outcome)| {
            *outcome == Outcome::Dead || waiters_before > 0 || holder.cancelling
        })
        .map(|(holder, outcome)| HistoryWrite::Hold {
            id: holder.id.clone(),
            fence: holder.fence,
            from_ms: holder.since_ms,
            to_ms: now_ms.max(holder.since_ms),
            waited_ms: holder.waited_ms,
            outcome: *outcome,
            cancelled: holder.cancelling,
        })
        .collect();
    let dead_holders = did
        .ended
        .iter()
        .filter(|(_, o)| *o == Outcome::Dead)
        .count() as u32;
    let tally = Tally {
        hand_offs: did.ended.len().min(did.granted_waiters.len()) as u32,
        dead_holders,
        coalesced: u32::from(coalesced),
        cancelled: did.cancelled.len() as u32,
        dead_at_ms: (dead_holders > 0).then_some(now_ms),
        report_owed,
    };
    (ended, tally)
}

/// What the in-memory key (`crate::coordinator`'s twin) keeps of its
/// history, as its key row and `coordinator_recent` rows do (tests and the
/// simulation only, as the twin; a holder's wait is the holder's own).
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyHistory {
    pub counts: Counts,
    /// Newest last, at most [`COORDINATOR_RECENT_KEPT`].
    recent: VecDeque<Hold>,
    /// When a holder was last found dead.
    pub dead_at_ms: Option<u64>,
    /// A list report is owed, until the shard confirms one.
    pub report_owed: bool,
}

#[cfg(not(target_arch = "wasm32"))]
impl KeyHistory {
    /// `inspect`'s `recent`: newest first.
    pub fn recent(&self) -> Vec<Hold> {
        self.recent.iter().rev().cloned().collect()
    }

    /// A holder row written: its trigger counts the grant.
    pub fn granted(&mut self) {
        self.counts.grants += 1;
    }

    /// A superseded row written: its trigger counts it.
    pub fn superseded(&mut self) {
        self.counts.superseded += 1;
    }

    /// One history write, as `store/history.rs` carries it out on the rows.
    pub fn apply(&mut self, write: &HistoryWrite) {
        match write {
            HistoryWrite::Hold {
                id,
                fence,
                from_ms,
                to_ms,
                waited_ms,
                outcome,
                cancelled,
            } => {
                self.recent.push_back(Hold {
                    id: id.clone(),
                    fence: *fence,
                    from_ms: *from_ms,
                    to_ms: *to_ms,
                    waited_ms: *waited_ms,
                    outcome: *outcome,
                    cancelled: *cancelled,
                });
                let kept = COORDINATOR_RECENT_KEPT as usize;
                let over = self.recent.len().saturating_sub(kept);
                self.recent.drain(..over);
            }
            HistoryWrite::Tally(t) => self.tally(t),
            HistoryWrite::Paid => self.report_owed = false,
        }
    }

    /// A tally added to the key row, by its own statement or by the
    /// trigger of the hold end that carries it.
    pub fn tally(&mut self, t: &Tally) {
        self.counts.hand_offs += u64::from(t.hand_offs);
        self.counts.dead_holders += u64::from(t.dead_holders);
        self.counts.coalesced += u64::from(t.coalesced);
        self.counts.cancelled += u64::from(t.cancelled);
        self.dead_at_ms = t.dead_at_ms.or(self.dead_at_ms);
        self.report_owed |= t.report_owed;
    }
}
