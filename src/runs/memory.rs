//! One run key's record in memory: the simulation's storage, and the
//! reference the SQL rows are measured against. Its [`Rows`] read what
//! `super::sql::Rows` reads, and [`apply`] carries out the
//! same [`Write`]s, checking on the way what the SQL schema cannot.

use super::decide::{Input, Write};
use super::state::{Claim, Event, EventsReply, Finished, Rows, Run, View};
use crate::ident::InstanceId;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MemoryRun {
    claim: Option<Claim>,
    finished: Option<Finished>,
    latest_seq: u64,
    events: BTreeMap<u64, Event>,
}

impl MemoryRun {
    /// The view `input` reads, as `super::sql::load` reads it.
    pub fn load(&self, input: &Input) -> View {
        super::call::view(self, input)
    }

    pub fn run(&self) -> Run {
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

    pub fn claimant(&self) -> Option<InstanceId> {
        self.claim.as_ref().map(|c| c.id.clone())
    }

    /// The highest `seq` ever appended (0: none), kept events or not.
    pub fn latest_seq(&self) -> u64 {
        self.latest_seq
    }

    /// Every kept event in order.
    pub fn kept(&self) -> impl Iterator<Item = &Event> {
        self.events.values()
    }

    /// Events after `after`, at most `limit`, with the log's ends.
    pub fn read_events(&self, after: u64, limit: u32) -> EventsReply {
        EventsReply {
            events: self
                .events
                .range(after + 1..)
                .take(limit as usize)
                .map(|(_, e)| e.clone())
                .collect(),
            latest_seq: self.latest_seq,
            first_seq: self
                .events
                .keys()
                .next()
                .copied()
                .unwrap_or(self.latest_seq + 1),
        }
    }
}

/// The record's rows, read as `super::sql::Rows` reads them.
impl Rows for MemoryRun {
    fn record(&self) -> Run {
        self.run()
    }
    fn appender(&self, appender: &InstanceId) -> (Option<InstanceId>, Option<u64>) {
        let claimant = self.claimant();
        let latest_seq = (claimant.as_ref() == Some(appender)).then_some(self.latest_seq);
        (claimant, latest_seq)
    }
    fn log(&self, after: u64, limit: u32) -> EventsReply {
        self.read_events(after, limit)
    }
}

/// Carries out `writes` on `run`, in order, as `super::sql::write` does.
/// Panics on a write the rows could take but no decision may make.
pub fn apply(run: &mut MemoryRun, writes: &[Write]) {
    for write in writes {
        match write {
            Write::Claim(claim) => {
                assert!(run.finished.is_none(), "claimed a finished run");
                run.claim = Some(claim.clone());
            }
            Write::Finish(finished) => {
                assert!(run.claim.is_some(), "finished an unclaimed run");
                assert!(run.finished.is_none(), "finished twice");
                run.finished = Some(finished.clone());
            }
            Write::Append(event) => {
                assert_eq!(event.seq, run.latest_seq + 1, "a gap in the event sequence");
                run.latest_seq = event.seq;
                run.events.insert(event.seq, event.clone());
            }
            Write::ForgetThrough(through) => {
                run.events = run.events.split_off(&(through + 1));
            }
            Write::Delete => *run = MemoryRun::default(),
        }
    }
}
