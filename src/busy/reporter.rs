//! The Coordinator's side of the list: what a key's object reports to its
//! shard, and when.
//!
//! [`due`] is the one rule of when a decision owes the list a report: the
//! Coordinator's decision states it in its transition
//! (`crate::coordinator::Transition::report`), and the busy-list
//! simulation runs the same function. A [`Reporter`] lives in the object's
//! memory beside the key's summary, never in storage, so keeping it costs
//! an uncontended acquire and release nothing: such a pair leaves the key
//! without waiters, as it found it, and is never due a report. The shell
//! sends a report after the decision's reply when [`Reporter::sends_now`]
//! says so ([`Reporter::report`]): what [`due`] says, except that a change
//! of a listed key's counts while its last report is on its way waits for
//! that report's answer, and one report of the key as it then is follows
//! it, no sooner than [`LIST_REPORT_SPACING_MS`] after the last
//! ([`Answered::follow_up_at_ms`]). A burst of enqueues behind a held key
//! so sends its shard a few reports a second, not one per call, and the
//! list's counts are never more than that spacing (or a round trip) old. The holder-check alarm, which runs while the key
//! has waiters or owes a report, asks [`Reporter::on_alarm`]: the counts
//! when they changed, and any report the shard has not confirmed (one lost
//! with a reset object, or refused on the way). What the alarm cannot
//! repair (a report lost with the object after the last waiter left, when
//! no alarm follows) the read repairs: it asks the key's object for a fresh
//! report ([`Reporter::report`]) when a listed entry has not been confirmed
//! for a while.

use super::decide::Answer;
use super::state::{Busy, Report};
use crate::limits::LIST_REPORT_SPACING_MS;

/// What a key's list entry shows of it that its decisions change: known
/// from the key's summary, before and after a decision, with no read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    pub holders: u32,
    pub waiting: u32,
    pub limit: u32,
    /// §11: whether an operator paused the key.
    pub paused: bool,
    /// §10a: when the earliest slot handed on and not yet taken up was
    /// handed (from then a stall counts), so a hand-over taken up, or a new
    /// one, reaches the list as its counts do.
    pub handed_since_ms: Option<u64>,
}

/// What a decision owes its key's list entry (contract §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing the list shows changed.
    Nothing,
    /// The counts changed on a key that has waiters (so is listed): a
    /// report is sent after the reply, but not owed (the alarm, which runs
    /// while the key has waiters, keeps the counts fresh if it is lost).
    Counts,
    /// The counts changed on a key without waiters: the list shows it only
    /// for a dead holder's hour, which only the object's [`Reporter`]
    /// knows ([`Reporter::listed_for_dead`]); sent if it is, not owed.
    CountsIfListed,
    /// The key gained its first waiter, lost its last, or a holder was
    /// found dead: whether the list shows it changed. Owed: the decision
    /// stores the mark, and the alarm sends it again until the shard
    /// confirms it.
    Owed,
}

impl Due {
    /// Whether the report is sent after the reply: always when the counts
    /// of a listed key changed or a report is owed; for a key without
    /// waiters only while the list shows it for a dead holder's hour
    /// (`listed_for_dead`, which only the object's [`Reporter`] knows).
    pub fn sends(self, listed_for_dead: impl FnOnce() -> bool) -> bool {
        match self {
            Due::Nothing => false,
            Due::Counts | Due::Owed => true,
            Due::CountsIfListed => listed_for_dead(),
        }
    }
}

/// The one rule of what a decision that took the key from `before` to
/// `after` owes its list entry (`found_dead`: it found a holder dead). An
/// uncontended acquire or release owes nothing on a key the list does not
/// show: it changes the holders of a key with no waiter and no dead holder.
pub fn due(before: Shown, after: Shown, found_dead: bool) -> Due {
    if found_dead || (before.waiting > 0) != (after.waiting > 0) {
        Due::Owed
    } else if before == after {
        Due::Nothing
    } else if after.waiting > 0 {
        Due::Counts
    } else {
        Due::CountsIfListed
    }
}

/// What the object last told the shard, as far as it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    /// Nothing since the object started (or the reporter was dropped).
    Unknown,
    /// The last report drawn said this.
    Said { busy: Busy, confirmed: bool },
}

/// One key's reporting state, in its object's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reporter {
    told: Told,
    /// The last stamp drawn, 0 before the first.
    last_stamp: u64,
    /// The last report drawn is on its way (its answer has not come), or
    /// its follow-up is due.
    awaiting: bool,
    /// When the last report was drawn.
    drawn_ms: u64,
    /// A decision changed a listed key's counts while `awaiting`: a report
    /// of the key as it is follows the answer.
    behind: bool,
    /// The object stored the mark that a report is owed in this life (a
    /// decision that owed one), or the alarm is sending what a stored mark
    /// owes: a confirmation clears it. Without it a confirmation writes
    /// nothing, so a report of changed counts costs no statement when its
    /// answer comes. A mark stored in an earlier life is the alarm's.
    marked: bool,
}

impl Default for Reporter {
    fn default() -> Self {
        Reporter {
            told: Told::Unknown,
            last_stamp: 0,
            awaiting: false,
            drawn_ms: 0,
            behind: false,
            marked: false,
        }
    }
}

/// What the answer to a report came to ([`Reporter::answered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answered {
    /// The shard shows what the report said: the object clears its stored
    /// mark that a report is owed.
    pub confirmed: bool,
    /// Decisions changed the counts while the report was on its way: the
    /// shell sends a report of the key as it then is ([`Reporter::report`])
    /// at this time (no sooner than [`LIST_REPORT_SPACING_MS`] after the
    /// last report); changes made until then go in it too.
    pub follow_up_at_ms: Option<u64>,
    /// Confirmed while the object's stored mark that a report is owed may
    /// be set: the shell clears it (one statement).
    pub clears_mark: bool,
}

/// Stamps per millisecond: a stamp is the time in ms times this, plus a
/// count within the ms. An object that restarts starts over from its clock,
/// above every stamp it drew before (a restart takes longer than a ms, and
/// no object sends a thousand reports in one).
const STAMPS_PER_MS: u64 = 1_000;

impl Reporter {
    fn draw(&mut self, busy: Busy, now_ms: u64) -> Report {
        let stamp = (now_ms.saturating_mul(STAMPS_PER_MS)).max(self.last_stamp + 1);
        self.last_stamp = stamp;
        self.told = Told::Said {
            busy,
            confirmed: false,
        };
        // This report says the key as it is: nothing is left behind it.
        self.awaiting = true;
        self.drawn_ms = now_ms;
        self.behind = false;
        Report { stamp, busy }
    }

    /// Whether a decision that made `due` sends its report now
    /// ([`Reporter::report`] after the reply). A change of a listed key's
    /// counts ([`Due::Counts`]) while the last report is on its way is
    /// not sent: it marks the key behind, and its report follows the
    /// answer ([`Answered::follow_up_at_ms`]). Should that answer never come,
    /// the holder-check alarm, which runs while the key has waiters, sends
    /// the key as it is ([`Reporter::on_alarm`]: what was said is not
    /// confirmed). A report owed (the key's listing changed) goes at once.
    pub fn sends_now(&mut self, due: Due, now_ms: u64) -> bool {
        // The decision stores the mark among its writes.
        self.marked |= due == Due::Owed;
        if !due.sends(|| self.listed_for_dead(now_ms)) {
            return false;
        }
        if due == Due::Counts && self.awaiting {
            self.behind = true;
            return false;
        }
        true
    }

    /// What the list should hear from the holder-check alarm: the key as
    /// it is when a report is `owed` (the object's stored mark that a
    /// decision's report was not confirmed: it survives the object, so a
    /// report lost with it is sent again), when it differs from what was
    /// said, or when what was said was never confirmed.
    pub fn on_alarm(&mut self, busy: Busy, now_ms: u64, owed: bool) -> Option<Report> {
        self.marked |= owed;
        let due = owed
            || match self.told {
                Told::Unknown => busy.listed_at(now_ms),
                Told::Said {
                    busy: said,
                    confirmed,
                } => !confirmed || said != busy,
            };
        due.then(|| self.draw(busy, now_ms))
    }

    /// Whether the list was told of the key with no waiter, kept only by a
    /// holder found dead less than an hour before `now_ms`: while it is,
    /// a change of its holders is worth a report (the key is on the list,
    /// so an acquire or release there is not uncontended work).
    pub fn listed_for_dead(&self, now_ms: u64) -> bool {
        matches!(self.told, Told::Said { busy, .. } if busy.waiting == 0 && busy.listed_at(now_ms))
    }

    /// A report of the key as it is, whatever was said before: after a
    /// decision [`due`] says owes one, or when a read doubts the key's
    /// entry.
    pub fn report(&mut self, busy: Busy, now_ms: u64) -> Report {
        self.draw(busy, now_ms)
    }

    /// The shard answered the report with `stamp`. Only the answer to the
    /// last report drawn counts (an older one's says nothing of what the
    /// shard shows now): it is confirmed when the shard shows what it said.
    /// A shard that shows something else under a stamp as high heard it
    /// from an earlier life of this object (its stamps started over from
    /// the clock): the next stamp is drawn above the shard's, and the alarm
    /// sends the report again.
    /// The answer to the last report drawn also ends its wait, unless the
    /// key fell behind meanwhile: then its follow-up is due, and changes
    /// until it is drawn wait for it too.
    pub fn answered(&mut self, stamp: u64, answer: Answer) -> Answered {
        let Told::Said { confirmed, .. } = &mut self.told else {
            return Answered::default();
        };
        if stamp != self.last_stamp {
            return Answered::default();
        }
        if answer.same {
            *confirmed = true;
        } else {
            self.last_stamp = self.last_stamp.max(answer.stamp);
        }
        let follow_up = std::mem::take(&mut self.behind);
        self.awaiting = follow_up;
        Answered {
            confirmed: answer.same,
            follow_up_at_ms: follow_up
                .then(|| self.drawn_ms.saturating_add(LIST_REPORT_SPACING_MS)),
            clears_mark: answer.same && std::mem::take(&mut self.marked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(waiting: u32) -> Busy {
        Busy {
            holders: 1,
            waiting,
            oldest_since_ms: (waiting > 0).then_some(5),
            limit: 1,
            dead_until_ms: None,
            paused: false,
            stalled_from_ms: None,
        }
    }

    fn shown(holders: u32, waiting: u32) -> Shown {
        Shown {
            holders,
            waiting,
            limit: 1,
            paused: false,
            handed_since_ms: None,
        }
    }

    #[test]
    fn an_uncontended_key_is_never_reported() {
        let mut reporter = Reporter::default();
        assert_eq!(due(shown(0, 0), shown(1, 0), false), Due::CountsIfListed);
        assert!(!reporter.listed_for_dead(10));
        assert_eq!(reporter.on_alarm(busy(0), 10, false), None);
    }

    #[test]
    fn entering_leaving_and_a_dead_holder_are_owed_counts_are_not() {
        assert_eq!(due(shown(1, 0), shown(1, 1), false), Due::Owed);
        assert_eq!(due(shown(1, 1), shown(1, 0), false), Due::Owed);
        assert_eq!(due(shown(1, 0), shown(1, 0), true), Due::Owed);
        assert_eq!(due(shown(1, 1), shown(1, 2), false), Due::Counts);
        assert_eq!(due(shown(1, 1), shown(1, 1), false), Due::Nothing);
    }

    #[test]
    fn entering_and_leaving_report_once_each_and_the_alarm_resends_the_unconfirmed() {
        let mut reporter = Reporter::default();
        let first = reporter.report(busy(1), 10);
        let resent = reporter.on_alarm(busy(2), 11, false).unwrap();
        assert!(resent.stamp > first.stamp);
        let took = |stamp| Answer {
            applied: true,
            stamp,
            same: true,
        };
        assert!(
            !reporter.answered(first.stamp, took(first.stamp)).confirmed,
            "an older report's answer confirms nothing"
        );
        assert!(
            reporter
                .answered(resent.stamp, took(resent.stamp))
                .confirmed
        );
        assert_eq!(reporter.on_alarm(busy(2), 12, false), None);
        assert!(reporter.on_alarm(busy(2), 12, true).is_some(), "owed");
        let left = reporter.report(busy(0), 10);
        assert!(
            left.stamp > resent.stamp,
            "stamps grow even when the clock does not"
        );
        assert!(!left.busy.listed_at(10));
    }

    #[test]
    fn a_shard_holding_an_earlier_lifes_higher_stamp_is_overtaken() {
        let mut reporter = Reporter::default();
        assert!(reporter.sends_now(Due::Owed, 10), "the first waiter");
        let sent = reporter.report(busy(1), 10);
        let earlier_life = sent.stamp + 5;
        let answered = reporter.answered(
            sent.stamp,
            Answer {
                applied: false,
                stamp: earlier_life,
                same: false,
            },
        );
        assert!(!answered.confirmed);
        assert!(!answered.clears_mark, "owed until the shard shows it");
        let again = reporter.on_alarm(busy(1), 10, true).unwrap();
        assert!(again.stamp > earlier_life);
    }

    #[test]
    fn counts_changed_while_a_report_is_on_its_way_follow_its_answer() {
        let answer = |stamp| Answer {
            applied: true,
            stamp,
            same: true,
        };
        let mut reporter = Reporter::default();
        assert!(reporter.sends_now(Due::Owed, 10), "the first waiter");
        let sent = reporter.report(busy(1), 10);
        assert!(!reporter.sends_now(Due::Counts, 11), "on its way");
        assert!(!reporter.sends_now(Due::Counts, 12), "still on its way");
        assert!(reporter.sends_now(Due::Owed, 12), "owed goes at once");
        let answered = reporter.answered(sent.stamp, answer(sent.stamp));
        assert_eq!(
            answered,
            Answered {
                confirmed: true,
                follow_up_at_ms: Some(10 + LIST_REPORT_SPACING_MS),
                clears_mark: true,
            },
            "the first waiter's decision stored the mark"
        );
        assert!(!reporter.sends_now(Due::Counts, 12), "the follow-up is due");
        let follow_up = reporter.report(busy(3), 10 + LIST_REPORT_SPACING_MS);
        let answered = reporter.answered(follow_up.stamp, answer(follow_up.stamp));
        assert_eq!(answered.follow_up_at_ms, None, "nothing changed since");
        assert!(reporter.sends_now(Due::Counts, 13), "nothing on its way");
        let next = reporter.report(busy(3), 13);
        assert!(!reporter.sends_now(Due::Counts, 14));
        let later = reporter.on_alarm(busy(4), 15, false).unwrap();
        assert_eq!(
            reporter.answered(next.stamp, answer(next.stamp)),
            Answered::default(),
            "an older report's answer ends no wait"
        );
        assert_eq!(
            reporter.answered(later.stamp, answer(later.stamp)),
            Answered {
                confirmed: true,
                follow_up_at_ms: None,
                clears_mark: false,
            },
            "the alarm's report said the key as it was; no mark was stored since the last cleared"
        );
    }
}
