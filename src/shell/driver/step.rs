//! A call whose answer may wait on a status check ([`Step`]): the
//! Coordinator's enqueue and acquire, Runs' claim. Its decision either
//! answers, or asks for an answering check (a `Check` with `answers` set)
//! and leaves what waits on it ([`Then`]); the effects loop hands the
//! check's raw status to that waiting call ([`Waiting`]), whose decision's
//! answer is the caller's. No reply carries the continuation, and no
//! input is built from a reply.

use super::effect::Asked;
use super::{Call, Decision, Driver, Memory, Rules, TransitionOf};
use crate::error::BatonError;
use crate::ident::Ident;
use crate::shell::found::Found;
pub use crate::transition::{NoCheck, Step};
use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::JsValue;

/// What waits on an answering check: given the check's status, the call
/// whose answer (of type `A`) is the caller's.
pub trait Then<R: Rules, A>: 'static {
    /// The waiting call, its answer put in `answer` once decided.
    fn then(self, answer: Rc<Cell<Option<A>>>) -> Waiting<R>;
}

impl<R: Rules, A> Then<R, A> for NoCheck {
    fn then(self, _: Rc<Cell<Option<A>>>) -> Waiting<R> {
        match self {}
    }
}

/// Who the effects being carried on answer.
pub(super) enum Caller<R: Rules> {
    /// Nobody: a deferred round, the results after a reply, the alarm.
    Nobody,
    /// A caller already answered (its reply waits only for the effects).
    Answered,
    /// A caller whose answer waits on its answering check's status.
    Waiting(Waiting<R>),
    /// A caller the decision of its check's status refused.
    Refused(BatonError),
}

/// A caller's call waiting on its answering check, its answer's type
/// erased (one copy of the effects loop per class, P6).
pub struct Waiting<R: Rules>(Box<dyn FnOnce(Found) -> Box<dyn Answering<R>>>);

impl<R: Rules> Waiting<R> {
    /// The call `then` makes of the check's status; its answer goes to
    /// `answer`.
    pub fn new<C: Call<R>>(
        then: impl FnOnce(Found) -> C + 'static,
        answer: Rc<Cell<Option<C::Answer>>>,
    ) -> Waiting<R> {
        Waiting(Box::new(move |found| {
            Box::new(Answered {
                call: then(found),
                answer,
            })
        }))
    }

    /// The decision the check's status makes.
    pub(super) fn with(self, found: Found) -> Box<dyn Answering<R>> {
        (self.0)(found)
    }
}

/// A waiting call, made of its check's status, as the driver decides it.
pub(super) trait Answering<R: Rules> {
    fn plan(&self) -> Cow<'_, R::Plan>;
    fn decide(
        self: Box<Self>,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<TransitionOf<R>, BatonError>;
}

struct Answered<C: Call<R>, R: Rules> {
    call: C,
    answer: Rc<Cell<Option<C::Answer>>>,
}

impl<R: Rules, C: Call<R>> Answering<R> for Answered<C, R> {
    fn plan(&self) -> Cow<'_, R::Plan> {
        self.call.plan()
    }
    fn decide(
        self: Box<Self>,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<TransitionOf<R>, BatonError> {
        let (answer, transition) = self.call.decide(state, now_ms)?;
        self.answer.set(Some(answer));
        Ok(transition)
    }
}

impl<R: Rules> Decision<R> for Box<dyn Answering<R>> {
    type Answer = ();
    fn plan(&self) -> Cow<'_, R::Plan> {
        Answering::plan(&**self)
    }
    fn decide(
        self,
        state: &mut R::Reads<'_>,
        now_ms: u64,
    ) -> Result<((), TransitionOf<R>), BatonError> {
        Ok(((), Answering::decide(self, state, now_ms)?))
    }
}

impl<R: Rules, M: Memory<R>> Driver<R, M> {
    /// The call waiting on its check, given the check's status: decided,
    /// it answers the caller (or refuses it); what it asks for is added to
    /// `next`.
    pub(super) async fn decide_waiting(
        self: &Rc<Self>,
        key: &Ident,
        waiting: Waiting<R>,
        found: Found,
        next: &mut Vec<Asked<R>>,
    ) -> Result<Caller<R>, JsValue> {
        match self.commit(key, waiting.with(found), None).await? {
            Ok(((), transition)) => {
                next.extend(self.committed(transition).await?);
                Ok(Caller::Answered)
            }
            Err(refusal) => Ok(Caller::Refused(refusal)),
        }
    }
}
