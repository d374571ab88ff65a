//! What a Coordinator decision asks of the shell after its commit, as
//! data: the status check of a holder or a candidate (its liveness
//! re-enters as the matching `*Checked` input), a hand-off's turn event
//! (its acceptance, and the woken holder's status after the reply,
//! re-enter as `Input::Woken`) and the termination of a superseded waiter
//! (best effort; nothing re-enters).

use crate::transition::{Check, Terminate, Wake};

/// One thing for the shell to do once a decision is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Check(Check),
    /// A holder handed a slot, sent its turn event.
    Wake(Wake<Handed>),
    Terminate(Terminate),
}

/// What a hand-off's turn event says: §1's `TURN_EVENT_TYPE` with the key
/// (`turn: None`), or for a grant registration the grant itself on its own
/// event type, carrying `fence` (§1b).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handed {
    /// The registration number of a grant's own turn.
    pub turn: Option<u64>,
    pub fence: u64,
}
