//! A key's decisions, and the effects they return as data: each caller's
//! request a [`Call`](super::Call) typed by its answer (`debounce`, `startAt`, `flush`,
//! `cancel`), and what re-enters ([`Input`], decided by [`decide`]).
//!
//! Every decision (a call, the alarm's tick, a create's result) first *settles*
//! the key at `now_ms`: a burst whose end has passed ends and fires its
//! trailing start, a `startAt` whose time has come fires, and a create due
//! for a retry is tried again. So a late alarm and a call that arrives before
//! it behave alike, and an early or duplicate alarm finds nothing due.
//!
//! Firing a start moves it from pending to *creating* (with the time after
//! which an unreported create is presumed lost) and asks the shell for a
//! create. The shell commits the writes before it creates, and reports the
//! result back as [`Input::Created`]: success or "id exists" confirm the
//! start, anything else schedules a retry with backoff. A crash between the
//! commit and the create therefore only delays the create until the alarm.

use super::request::{DebounceCall, IdSuffix, StartAtCall, START_AT_PREFIX};
use super::state::{
    batch_params, BatchStarted, Burst, BurstRow, Creating, Edge, KeyState, Pending, PendingRow,
    Phase, StartParams, Started, TrailingBurst,
};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::limits::{
    DEBOUNCE_CREATE_LOST_MS, DEBOUNCE_CREATE_RETRY_MS_MAX, DEBOUNCE_CREATE_RETRY_MS_MIN,
    DEBOUNCE_ERROR_CHARS_MAX, DEBOUNCE_STARTED_KEPT, DEBOUNCE_UNFINISHED_STARTS_MAX,
};
use crate::transition::{Alarm, Lines};
pub use crate::transition::{Create, CreateOutcome};

/// What re-enters a key's decision ([`decide`]); a caller's request is a
/// [`Call`](super::Call) of its own, answered with its own type.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The alarm.
    Tick,
    /// The shell's report of a create it made.
    Created {
        id: InstanceId,
        outcome: CreateOutcome,
    },
}

/// `startAt`'s answer: the id, and `at` as the caller gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAtReply {
    pub instance_id: InstanceId,
    pub at: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Started,
    Scheduled,
    Suppressed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Started => "started",
            Outcome::Scheduled => "scheduled",
            Outcome::Suppressed => "suppressed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebounceReply {
    pub outcome: Outcome,
    pub instance_id: InstanceId,
    /// When the returned id starts, while it is a pending start.
    pub fire_at_ms: Option<u64>,
    /// Batches this call started at once (contract §4a), for the log: the
    /// pending one its params would have taken past `maxBytes`, and the one
    /// it brought to `maxItems`.
    pub batches_started: Vec<BatchStarted>,
}

/// One row-level change to the key's storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// The key's burst row as it now stands; `None` deletes it.
    Burst(Option<BurstRow>),
    /// The key's pending row as it now stands; `None` deletes it.
    Pending(Option<PendingRow>),
    /// Insert or replace the creating row with this id.
    Creating(Creating),
    /// Delete the creating row with this id.
    CreatingDone(InstanceId),
    /// Insert as the newest start; keep only the newest [`DEBOUNCE_STARTED_KEPT`].
    Started(Started),
    /// Delete every batched params row of the key (the batch started or was dropped).
    BatchCleared,
    /// Append one call's params to the key's batch, as its last row.
    BatchItem(String),
}

/// A decision: its writes, the creates to make after the commit (its only
/// effect: a [`Create`]), when the key next needs the alarm, and the key's
/// state once the writes are applied. A call's answer goes beside it.
pub type Transition =
    crate::transition::Transition<(), Write, KeyState, Create, super::reason::Reason>;

/// Decides what re-enters the key in `state` at `now_ms`: the alarm's
/// tick, a create's outcome. Never refused.
pub fn decide(state: &KeyState, now_ms: u64, input: Input) -> Result<Transition, BatonError> {
    let mut draft = Draft::new(state);
    match input {
        Input::Tick => draft.settle(now_ms),
        Input::Created { id, outcome } => {
            draft.created(now_ms, &id, outcome);
            draft.settle(now_ms);
        }
    }
    Ok(draft.finish())
}

/// Wait before retry `failures` (1 for the first failure): doubling from
/// [`DEBOUNCE_CREATE_RETRY_MS_MIN`], capped at [`DEBOUNCE_CREATE_RETRY_MS_MAX`].
pub fn retry_backoff_ms(failures: u32) -> u64 {
    let doublings = failures.saturating_sub(1).min(32);
    DEBOUNCE_CREATE_RETRY_MS_MIN
        .saturating_mul(1u64 << doublings)
        .min(DEBOUNCE_CREATE_RETRY_MS_MAX)
}

/// The state being decided, and which of its rows changed.
pub(super) struct Draft {
    pub(super) s: KeyState,
    /// The phase's rows as they were loaded: finish writes those that changed.
    rows_before: (Option<BurstRow>, Option<PendingRow>),
    /// Ids of creating rows written or deleted, in first-touch order.
    creating_touched: Vec<InstanceId>,
    started_new: Vec<Started>,
    creates: Vec<Create>,
    /// The batch's rows still stored as they were loaded: its first this
    /// many items (the rest are appended by this decision).
    pub(super) batch_kept: usize,
    /// Whether the stored batch rows are to be deleted.
    pub(super) batch_cleared: bool,
}

impl Draft {
    pub(super) fn new(state: &KeyState) -> Draft {
        Draft {
            s: state.clone(),
            rows_before: state.phase.rows(),
            creating_touched: Vec::new(),
            started_new: Vec::new(),
            creates: Vec::new(),
            batch_kept: state.batch.len(),
            batch_cleared: false,
        }
    }

    pub(super) fn finish(self) -> Transition {
        let mut writes = Vec::new();
        let (burst, pending) = self.s.phase.rows();
        if burst != self.rows_before.0 {
            writes.push(Write::Burst(burst));
        }
        if pending != self.rows_before.1 {
            writes.push(Write::Pending(pending));
        }
        for id in &self.creating_touched {
            writes.push(match self.s.creating.iter().find(|c| c.id == *id) {
                Some(row) => Write::Creating(row.clone()),
                None => Write::CreatingDone(id.clone()),
            });
        }
        writes.extend(self.started_new.into_iter().map(Write::Started));
        if self.batch_cleared {
            writes.push(Write::BatchCleared);
        }
        let appended = &self.s.batch[self.batch_kept..];
        writes.extend(appended.iter().cloned().map(Write::BatchItem));
        Transition {
            reply: (),
            writes,
            effects: self.creates,
            alarm: Alarm::at_or_clear(self.s.next_alarm_ms()),
            log: Lines::None,
            state: self.s,
        }
    }

    /// Sets the key's phase. The pending start's batch belongs to it: the
    /// batch goes unless the new phase's pending start is the same batching one.
    pub(super) fn set_phase(&mut self, phase: Phase) {
        let same_batch = match (self.s.phase.pending(), phase.pending()) {
            (Some(old), Some(new)) => {
                old.id == new.id
                    && matches!(old.params, StartParams::Batch(_))
                    && matches!(new.params, StartParams::Batch(_))
            }
            _ => false,
        };
        if !same_batch {
            self.clear_batch();
        }
        self.s.phase = phase;
    }

    fn touch_creating(&mut self, id: &InstanceId) {
        if !self.creating_touched.contains(id) {
            self.creating_touched.push(id.clone());
        }
    }

    /// Fires, retries and ends whatever is due at `now_ms`.
    pub(super) fn settle(&mut self, now_ms: u64) {
        if let Some(burst) = self.s.phase.burst() {
            if now_ms >= burst.ends_at_ms() {
                // A trailing start fires as its burst ends; a led burst just ends.
                match self.s.phase.pending() {
                    Some(_) => self.fire(now_ms),
                    None => self.set_phase(Phase::Idle),
                }
            }
        }
        if let Phase::At { at_ms, .. } = self.s.phase {
            if now_ms >= at_ms {
                self.fire(now_ms);
            }
        }
        let due: Vec<usize> = (0..self.s.creating.len())
            .filter(|&i| self.s.creating[i].next_try_at_ms <= now_ms)
            .collect();
        for i in due {
            let row = &mut self.s.creating[i];
            row.next_try_at_ms = now_ms.saturating_add(DEBOUNCE_CREATE_LOST_MS);
            let create = Create {
                id: row.id.clone(),
                workflow: row.workflow.clone(),
                params: row.params.clone(),
                attempt: row.failures.saturating_add(1),
            };
            self.touch_creating(&create.id);
            self.creates.push(create);
        }
    }

    /// Makes the pending start: it becomes a create, with its latest
    /// params or its whole batch. A trailing start ends its burst: the key
    /// is idle after.
    pub(super) fn fire(&mut self, now_ms: u64) {
        let pending = self
            .s
            .phase
            .pending()
            .cloned()
            .expect("fire needs a pending start");
        let params = match pending.params {
            StartParams::Latest(params) => params,
            StartParams::Batch(_) => Some(batch_params(&self.s.batch)),
        };
        self.set_phase(Phase::Idle);
        self.begin_create(now_ms, pending.id, pending.workflow, params);
    }

    fn begin_create(
        &mut self,
        now_ms: u64,
        id: InstanceId,
        workflow: String,
        params: Option<String>,
    ) {
        assert!(
            !self.s.creating.iter().any(|c| c.id == id),
            "{id} fired while its create is unconfirmed"
        );
        self.creates.push(Create {
            id: id.clone(),
            workflow: workflow.clone(),
            params: params.clone(),
            attempt: 1,
        });
        self.touch_creating(&id);
        self.s.creating.push(Creating {
            id,
            workflow,
            params,
            fired_at_ms: now_ms,
            failures: 0,
            next_try_at_ms: now_ms.saturating_add(DEBOUNCE_CREATE_LOST_MS),
            last_error: None,
        });
    }

    /// Refuses a call that would promise one more start than the key may hold.
    pub(super) fn check_room(&self) -> Result<(), BatonError> {
        if self.s.unfinished_starts() >= DEBOUNCE_UNFINISHED_STARTS_MAX {
            return Err(BatonError::LimitExceeded {
                field: "key",
                reason: format!(
                    "has {DEBOUNCE_UNFINISHED_STARTS_MAX} starts not yet confirmed by the \
                     Workflow binding, the most one key holds; try again once they are created"
                ),
            });
        }
        Ok(())
    }

    pub(super) fn new_id(&self, prefix: &str, suffix: &IdSuffix) -> InstanceId {
        let id = InstanceId::parse("instanceId", &format!("{prefix}{}", suffix.as_str()))
            .expect("a checked prefix and suffix make a valid id");
        assert!(
            self.s.phase.pending().is_none_or(|p| p.id != id)
                && !self.s.creating.iter().any(|c| c.id == id),
            "the shell drew suffix {} twice",
            suffix.as_str()
        );
        id
    }

    pub(super) fn debounce(
        &mut self,
        now_ms: u64,
        call: &DebounceCall,
        suffix: &IdSuffix,
    ) -> Result<DebounceReply, BatonError> {
        let reply = match self.s.phase.clone() {
            Phase::Led { burst, leading } if now_ms < burst.ends_at_ms() => {
                self.join_led(now_ms, burst, leading, call, suffix)?
            }
            Phase::Trailing(trailing) if now_ms < trailing.burst.ends_at_ms() => {
                self.join_trailing(now_ms, trailing, call, suffix)?
            }
            _ => self.begin_burst(now_ms, call, suffix)?,
        };
        // The call's own values may have moved the burst's end to now or
        // before: then it ends here, as it would at the next tick.
        self.settle(now_ms);
        Ok(reply)
    }

    /// A call that finds no open burst begins one. A pending `startAt` is
    /// replaced by the burst's start, which keeps its id (as a `startAt`
    /// keeps a burst's), so no caller is left holding an id that never starts.
    pub(super) fn begin_burst(
        &mut self,
        now_ms: u64,
        call: &DebounceCall,
        suffix: &IdSuffix,
    ) -> Result<DebounceReply, BatonError> {
        let id = match self.s.phase.pending() {
            Some(pending) => pending.id.clone(),
            None => {
                self.check_room()?;
                self.new_id(&call.id_prefix, suffix)
            }
        };
        let burst = Burst {
            edge: call.edge,
            delay_ms: call.delay_ms,
            max_wait_ms: call.max_wait_ms,
            workflow: call.workflow.clone(),
            first_at_ms: now_ms,
            last_at_ms: now_ms,
            calls: 1,
        };
        match call.edge {
            Edge::Trailing => Ok(self.pend_trailing(now_ms, burst, None, id, call)),
            Edge::Leading | Edge::Both => {
                self.set_phase(Phase::Led {
                    burst,
                    leading: id.clone(),
                });
                self.begin_create(
                    now_ms,
                    id.clone(),
                    call.workflow.clone(),
                    call.params.clone(),
                );
                Ok(DebounceReply {
                    outcome: Outcome::Started,
                    instance_id: id,
                    fire_at_ms: None,
                    batches_started: Vec::new(),
                })
            }
        }
    }

    /// A call within the open burst, which made its start at its first call
    /// (`leading`) and has none pending: a leading call is suppressed; a
    /// trailing one makes a trailing start pending.
    fn join_led(
        &mut self,
        now_ms: u64,
        burst: Burst,
        leading: InstanceId,
        call: &DebounceCall,
        suffix: &IdSuffix,
    ) -> Result<DebounceReply, BatonError> {
        let burst = extended(burst, now_ms, call);
        match call.edge {
            Edge::Trailing | Edge::Both => {
                self.check_room()?;
                let id = self.new_id(&call.id_prefix, suffix);
                Ok(self.pend_trailing(now_ms, burst, Some(leading), id, call))
            }
            Edge::Leading => {
                self.set_phase(Phase::Led {
                    burst,
                    leading: leading.clone(),
                });
                Ok(suppressed(leading, None))
            }
        }
    }

    /// A call within the open burst whose trailing start is pending: it
    /// extends the burst, and its values apply from here on.
    fn join_trailing(
        &mut self,
        now_ms: u64,
        trailing: TrailingBurst,
        call: &DebounceCall,
        suffix: &IdSuffix,
    ) -> Result<DebounceReply, BatonError> {
        let trailing = TrailingBurst {
            burst: extended(trailing.burst, now_ms, call),
            ..trailing
        };
        let fire_at_ms = trailing.burst.ends_at_ms().max(now_ms);
        match (call.edge, trailing.start.params.clone()) {
            (Edge::Trailing | Edge::Both, StartParams::Batch(bounds)) => {
                self.join_batch(now_ms, trailing, bounds, call, suffix)
            }
            (Edge::Trailing | Edge::Both, StartParams::Latest(_)) => {
                let id = trailing.start.id.clone();
                self.set_phase(Phase::Trailing(TrailingBurst {
                    start: Pending {
                        workflow: call.workflow.clone(),
                        params: StartParams::Latest(call.params.clone()),
                        ..trailing.start
                    },
                    ..trailing
                }));
                Ok(DebounceReply {
                    outcome: Outcome::Scheduled,
                    instance_id: id,
                    fire_at_ms: Some(fire_at_ms),
                    batches_started: Vec::new(),
                })
            }
            (Edge::Leading, _) => Ok(self.suppress(trailing, call, fire_at_ms)),
        }
    }

    /// A leading call within a burst whose trailing start is pending,
    /// suppressed: its params are not kept. It still extends the burst, so
    /// the trailing start moves with it and goes through the latest workflow.
    fn suppress(
        &mut self,
        trailing: TrailingBurst,
        call: &DebounceCall,
        fire_at_ms: u64,
    ) -> DebounceReply {
        let reply = match &trailing.leading {
            Some(id) => suppressed(id.clone(), None),
            None => suppressed(trailing.start.id.clone(), Some(fire_at_ms)),
        };
        self.keep_trailing(trailing, call);
        reply
    }

    /// Keeps the burst (extended by `call`) and its trailing start, which
    /// goes through the call's workflow ("applies from that call on").
    pub(super) fn keep_trailing(&mut self, trailing: TrailingBurst, call: &DebounceCall) {
        self.set_phase(Phase::Trailing(TrailingBurst {
            start: Pending {
                workflow: call.workflow.clone(),
                ..trailing.start
            },
            ..trailing
        }));
    }

    pub(super) fn start_at(
        &mut self,
        now_ms: u64,
        call: StartAtCall,
        suffix: &IdSuffix,
    ) -> Result<StartAtReply, BatonError> {
        let id = match (&call.instance_id, self.s.phase.pending()) {
            (Some(id), _) => id.clone(),
            (None, Some(pending)) => pending.id.clone(),
            (None, None) => self.new_id(START_AT_PREFIX, suffix),
        };
        if self.s.phase.pending().is_none() {
            self.check_room()?;
        }
        if self.s.creating.iter().any(|c| c.id == id) {
            return Err(BatonError::Invalid {
                field: "instanceId",
                reason: format!(
                    "is being started by this key already ({id}: its create is not yet confirmed)"
                ),
            });
        }
        let at_ms = call.at_ms();
        self.set_phase(Phase::At {
            start: Pending {
                id: id.clone(),
                workflow: call.workflow,
                params: StartParams::Latest(call.params),
            },
            at_ms,
            set_at_ms: now_ms,
        });
        if at_ms <= now_ms {
            self.fire(now_ms);
        }
        Ok(StartAtReply {
            instance_id: id,
            at: call.at,
        })
    }

    fn created(&mut self, now_ms: u64, id: &InstanceId, outcome: CreateOutcome) {
        let Some(index) = self.s.creating.iter().position(|c| c.id == *id) else {
            // A report for a start already confirmed (a duplicate create): nothing to do.
            return;
        };
        self.touch_creating(id);
        match outcome {
            CreateOutcome::Created | CreateOutcome::AlreadyExists => {
                self.s.creating.remove(index);
                let started = Started {
                    id: id.clone(),
                    at_ms: now_ms,
                };
                self.s.started.insert(0, started.clone());
                self.s.started.truncate(DEBOUNCE_STARTED_KEPT);
                self.started_new.push(started);
            }
            CreateOutcome::Failed(message) => {
                let row = &mut self.s.creating[index];
                row.failures = row.failures.saturating_add(1);
                row.next_try_at_ms = now_ms.saturating_add(retry_backoff_ms(row.failures));
                row.last_error = Some(message.chars().take(DEBOUNCE_ERROR_CHARS_MAX).collect());
            }
        }
    }
}

/// The open `burst` extended by `call` at `now_ms`: the call's values
/// apply from here on.
fn extended(burst: Burst, now_ms: u64, call: &DebounceCall) -> Burst {
    Burst {
        edge: call.edge,
        delay_ms: call.delay_ms,
        max_wait_ms: call.max_wait_ms,
        workflow: call.workflow.clone(),
        last_at_ms: now_ms,
        calls: burst.calls.saturating_add(1),
        ..burst
    }
}

/// A suppressed call's answer: the id its burst's start goes by, and when
/// that start fires while it is pending.
fn suppressed(instance_id: InstanceId, fire_at_ms: Option<u64>) -> DebounceReply {
    DebounceReply {
        outcome: Outcome::Suppressed,
        instance_id,
        fire_at_ms,
        batches_started: Vec::new(),
    }
}
