//! What a concept's effect is to the driver ([`Perform`]): how it is
//! performed after the commit, with what ([`Performing`]), and what its
//! result feeds back ([`Performed`], [`Woke`]). `perform.rs` runs them.

use super::Rules;
use crate::ident::{Ident, InstanceId};
use crate::shell::decision_log::Scope;
use crate::shell::found::Found;
use crate::shell::wake::Sent;
use crate::transition::NoEffect;
use std::future::Future;
use std::rc::Rc;
use worker::Env;

/// How the driver performs one of a concept's effects after the commit,
/// and what its result feeds back.
pub trait Perform<R: Rules>: 'static {
    /// The per-call bound it counts against, if any.
    fn bound(&self) -> Option<Bound> {
        None
    }
    /// Performs it (outside the gate): what its result feeds its key.
    fn perform<'a>(
        &'a self,
        with: &'a Performing<'a, R>,
    ) -> impl Future<Output = Performed<R>> + 'a;
}

/// No effect is ever performed.
impl<R: Rules> Perform<R> for NoEffect {
    async fn perform<'a>(&'a self, _: &'a Performing<'a, R>) -> Performed<R> {
        match *self {}
    }
}

/// The per-call bounds of the effects that have one
/// ([`WAKE_ATTEMPTS_PER_CALL_MAX`](crate::limits::WAKE_ATTEMPTS_PER_CALL_MAX), [`TERMINATIONS_PER_CALL_MAX`](crate::limits::TERMINATIONS_PER_CALL_MAX)).
#[derive(Clone, Copy)]
pub enum Bound {
    Wakes,
    Terminations,
}

/// What an effect is performed with.
pub struct Performing<'a, R: Rules> {
    pub env: &'a Env,
    pub key: &'a Ident,
    pub scope: Scope<'a>,
    /// The variables (absent if bad: then nothing was decided).
    pub config: Option<&'a R::Config>,
    /// The state of the decision that asked for it.
    pub asked_by: &'a Rc<R::State>,
}

/// What an effect's result feeds back.
pub struct Performed<R: Rules> {
    /// Inputs for its key (a check found through another binding adds
    /// §1a's `Rebound`-like input of its concept).
    pub inputs: Vec<R::Input>,
    /// An answering check's status, for the call waiting on it
    /// (`step.rs`).
    pub status: Option<Found>,
    /// A turn event sent, whose status is read after the reply.
    pub woke: Option<Woke<R>>,
}

impl<R: Rules> Performed<R> {
    /// Nothing re-enters.
    pub fn nothing() -> Performed<R> {
        Performed {
            inputs: Vec::new(),
            status: None,
            woke: None,
        }
    }
}

/// A turn event sent (or not: `None`), awaiting its instance's status,
/// and what that status feeds back.
pub struct Woke<R: Rules> {
    pub id: InstanceId,
    pub sent: Option<Sent>,
    /// The binding it was sent through, then the others its status is
    /// looked up through where that one cannot find it (§1a).
    pub bindings: (String, Rc<[String]>),
    pub then: Box<dyn FnOnce(Found) -> Vec<R::Input>>,
}

/// An effect, with the state of the decision that asked for it.
pub(super) struct Asked<R: Rules> {
    pub(super) effect: R::Effect,
    pub(super) by: Rc<R::State>,
}

pub(super) fn asked<R: Rules>(effects: Vec<R::Effect>, state: R::State) -> Vec<Asked<R>> {
    if effects.is_empty() {
        return Vec::new();
    }
    let by = Rc::new(state);
    effects
        .into_iter()
        .map(|effect| Asked {
            effect,
            by: by.clone(),
        })
        .collect()
}
