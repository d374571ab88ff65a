//! What a Coordinator decision asks of the shell after its commit, as
//! data: the status check of a holder or a candidate (its answer
//! re-enters as the matching `*Checked` input), a hand-off's turn event
//! (its acceptance re-enters as `Input::Accepted`, the woken holder's
//! status after the reply as `Input::Woken`), the termination of a superseded waiter
//! (best effort; nothing re-enters) and the termination of a cancelled
//! holder (§1d: its status, asked right after, re-enters as
//! `Input::Cancelled`).

use super::state::Holder;
use crate::transition::{Check, Terminate, Wake};

/// One thing for the shell to do once a decision is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Check(Check),
    /// A holder handed a slot, sent its turn event.
    Wake(Wake<Handed>),
    Terminate(Terminate),
    /// §1d: a cancelled holder, terminated through `workflow` (its own);
    /// its status is asked right after, and re-enters as
    /// `Input::Cancelled` with `holder` (as it was when this was asked).
    /// Asked again by every holder check of the alarm until it is dead,
    /// which retries a termination that failed.
    TerminateHolder {
        holder: Holder,
        workflow: String,
    },
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
