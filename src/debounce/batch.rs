//! Batching a burst into one run (contract §4a): the rules, each stated
//! once, as parts of [`decide`](super::decide)'s draft.
//!
//! A trailing start made pending by a call with `batch` gathers the params
//! of every call of its burst that sent any, in the order the object
//! received them ([`KeyState::batch`](super::KeyState::batch), a row each),
//! and is created with `{ "batch": [...] }` instead of the latest params.
//! Whether a start batches, and its bounds, are decided by the call that
//! makes it pending (as its id is): a batch gathered under its bounds is
//! never reshaped by a later call. The call that brings the batch to
//! `maxItems` starts it at once; a call whose params would take it past
//! `maxBytes` starts it at once without them and begins the next burst.

use super::decide::{DebounceReply, Draft, Outcome};
use super::request::{DebounceCall, IdSuffix};
use super::state::{
    batch_bytes, BatchBounds, BatchLimit, BatchStarted, Burst, Pending, Phase, StartParams,
    TrailingBurst,
};
use crate::error::BatonError;
use crate::ident::InstanceId;

impl Draft {
    /// Drops the key's batch (it started, or its start was dropped or
    /// replaced): its stored rows go with it.
    pub(super) fn clear_batch(&mut self) {
        if self.batch_kept > 0 {
            self.batch_cleared = true;
            self.batch_kept = 0;
        }
        self.s.batch.clear();
    }

    /// Makes `id` the pending trailing start of `burst` (beside the start
    /// its first call made, if `leading`), with the call's params, or (the
    /// call has `batch`) a batch of them, which starts at once if that fills it.
    pub(super) fn pend_trailing(
        &mut self,
        now_ms: u64,
        burst: Burst,
        leading: Option<InstanceId>,
        id: InstanceId,
        call: &DebounceCall,
    ) -> DebounceReply {
        let params = match call.batch {
            Some(bounds) => StartParams::Batch(bounds),
            None => StartParams::Latest(call.params.clone()),
        };
        let fire_at_ms = burst.ends_at_ms().max(now_ms);
        self.set_phase(Phase::Trailing(TrailingBurst {
            burst,
            leading,
            start: Pending {
                id: id.clone(),
                workflow: call.workflow.clone(),
                params,
            },
        }));
        let scheduled = DebounceReply {
            outcome: Outcome::Scheduled,
            instance_id: id,
            fire_at_ms: Some(fire_at_ms),
            batches_started: Vec::new(),
        };
        match (call.batch, &call.params) {
            // The request's own check let in only params that fit a batch
            // of one under the call's bounds.
            (Some(bounds), Some(params)) => self.add_to_batch(now_ms, bounds, params, scheduled),
            _ => scheduled,
        }
    }

    /// A call joining the open burst (already extended by it), whose
    /// pending start batches.
    pub(super) fn join_batch(
        &mut self,
        now_ms: u64,
        trailing: TrailingBurst,
        bounds: BatchBounds,
        call: &DebounceCall,
        suffix: &IdSuffix,
    ) -> Result<DebounceReply, BatonError> {
        let Some(params) = &call.params else {
            // Adds nothing; extends the burst as any call does.
            return Ok(self.extend(now_ms, trailing, call));
        };
        // The batch's bytes with these params as its last item: one comma
        // more unless they are the first.
        let separator = u64::from(!self.s.batch.is_empty());
        let after = batch_bytes(&self.s.batch) + separator + params.len() as u64;
        if after > u64::from(bounds.max_bytes) {
            // Starts the pending batch without them (through the workflow
            // it was gathered for), and they begin the next burst.
            let started = self.started(&trailing.start.id, BatchLimit::MaxBytes(bounds.max_bytes));
            self.fire(now_ms);
            let mut reply = self.begin_burst(now_ms, call, suffix)?;
            reply.batches_started.insert(0, started);
            return Ok(reply);
        }
        let scheduled = self.extend(now_ms, trailing, call);
        Ok(self.add_to_batch(now_ms, bounds, params, scheduled))
    }

    /// The call extends the burst and its pending start, whose workflow
    /// becomes the call's ("applies from that call on").
    fn extend(
        &mut self,
        now_ms: u64,
        trailing: TrailingBurst,
        call: &DebounceCall,
    ) -> DebounceReply {
        let reply = DebounceReply {
            outcome: Outcome::Scheduled,
            instance_id: trailing.start.id.clone(),
            fire_at_ms: Some(trailing.burst.ends_at_ms().max(now_ms)),
            batches_started: Vec::new(),
        };
        self.keep_trailing(trailing, call);
        reply
    }

    /// Appends `params` to the pending batch; the call that brings it to
    /// `maxItems` starts it at once and ends the burst (outcome `started`).
    fn add_to_batch(
        &mut self,
        now_ms: u64,
        bounds: BatchBounds,
        params: &str,
        scheduled: DebounceReply,
    ) -> DebounceReply {
        self.s.batch.push(params.to_owned());
        if (self.s.batch.len() as u64) < u64::from(bounds.max_items) {
            return scheduled;
        }
        let started = self.started(
            &scheduled.instance_id,
            BatchLimit::MaxItems(bounds.max_items),
        );
        self.fire(now_ms);
        DebounceReply {
            outcome: Outcome::Started,
            fire_at_ms: None,
            batches_started: vec![started],
            ..scheduled
        }
    }

    fn started(&self, id: &InstanceId, by: BatchLimit) -> BatchStarted {
        BatchStarted {
            id: id.clone(),
            items: u32::try_from(self.s.batch.len()).expect("a batch holds at most 1000 params"),
            bytes: batch_bytes(&self.s.batch),
            by,
        }
    }
}
