//! A caller's requests of a debounce key (`debounce`, `startAt`, `flush`,
//! `cancel`) as [`Call`]s (the one core-call trait every concept's calls
//! are), each typed by its answer, and decided on the key settled first
//! (`decide.rs`'s [`Draft`]).

use super::decide::{DebounceReply, Draft, StartAtReply, Transition};
use super::log;
use super::request::{DebounceCall, IdSuffix, StartAtCall};
use super::state::{KeyState, Phase};
use crate::error::BatonError;
use crate::ident::InstanceId;
use crate::transition::Lines;

pub use crate::transition::Call;

/// `debounce`; `suffix` makes the id of a start this call makes pending.
#[derive(Debug, Clone, PartialEq)]
pub struct Debounce {
    pub call: DebounceCall,
    pub suffix: IdSuffix,
}

/// `startAt`; `suffix` makes the id when there is neither a given one nor
/// a pending start to take it from.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAt {
    pub call: StartAtCall,
    pub suffix: IdSuffix,
}

/// `flush`: answers the start it made, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flush;

/// `cancel`: answers the pending start it dropped, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancel;

impl Call<KeyState> for Debounce {
    type Answer = DebounceReply;
    type Transition = Transition;
    fn decide(
        self,
        state: &KeyState,
        now_ms: u64,
    ) -> Result<(DebounceReply, Transition), BatonError> {
        settled(state, now_ms, log::debounced, |draft| {
            draft.debounce(now_ms, &self.call, &self.suffix)
        })
    }
}

impl Call<KeyState> for StartAt {
    type Answer = StartAtReply;
    type Transition = Transition;
    fn decide(
        self,
        state: &KeyState,
        now_ms: u64,
    ) -> Result<(StartAtReply, Transition), BatonError> {
        settled(state, now_ms, log::started_at, |draft| {
            draft.start_at(now_ms, self.call, &self.suffix)
        })
    }
}

impl Call<KeyState> for Flush {
    type Answer = Option<InstanceId>;
    type Transition = Transition;
    fn decide(
        self,
        state: &KeyState,
        now_ms: u64,
    ) -> Result<(Option<InstanceId>, Transition), BatonError> {
        settled(state, now_ms, log::flushed, |draft| {
            let started = draft.s.phase.pending().map(|p| p.id.clone());
            if started.is_some() {
                draft.fire(now_ms);
            }
            draft.set_phase(Phase::Idle);
            Ok(started)
        })
    }
}

impl Call<KeyState> for Cancel {
    type Answer = Option<InstanceId>;
    type Transition = Transition;
    fn decide(
        self,
        state: &KeyState,
        now_ms: u64,
    ) -> Result<(Option<InstanceId>, Transition), BatonError> {
        settled(state, now_ms, log::cancelled, |draft| {
            let cancelled = draft.s.phase.pending().map(|p| p.id.clone());
            draft.set_phase(Phase::Idle);
            Ok(cancelled)
        })
    }
}

/// A call on the key in `state`, settled at `now_ms` first (as every
/// decision is): its answer, and the transition with the answer's
/// decision-log lines (`log.rs`).
fn settled<A>(
    state: &KeyState,
    now_ms: u64,
    lines: fn(&A) -> Lines<log::Reason>,
    call: impl FnOnce(&mut Draft) -> Result<A, BatonError>,
) -> Result<(A, Transition), BatonError> {
    let mut draft = Draft::new(state);
    draft.settle(now_ms);
    let answer = call(&mut draft)?;
    let mut transition = draft.finish();
    transition.log = lines(&answer);
    Ok((answer, transition))
}
