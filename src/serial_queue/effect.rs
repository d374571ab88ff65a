//! What a serial decision asks of the shell, as data: the status check of
//! the holder a claim waits behind (it answers the caller), and the turn
//! events to send ([`Wake`]s carrying the serial queue's [`Event`]).

use crate::ident::{Ident, InstanceId};
pub use crate::transition::{Check, Wake};

/// One thing for the shell to do after a batch ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Ask the holder a claim waits behind how alive it is; the answer
    /// re-enters through [`super::checked`].
    Check(Check),
    /// Send an instance the event spelled out whole (D1 keeps each
    /// registration's turn, so the shell derives nothing), then ask its
    /// status.
    Wake(Wake<Event>),
}

/// An event for the shell to send as it is: of type `event_type`, with the
/// payload `{ group }` and, for [`News`] other than `Claim`, the instance's
/// id and its status (contract §2, §2a).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `TURN_EVENT_TYPE`, or the registration's own turn.
    pub event_type: String,
    pub group: Ident,
    pub news: News,
}

/// What an [`Event`] says beside its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum News {
    /// Nothing more: the group may be free; claim it.
    Claim,
    /// `status: "holding"` with `fence`: handed the group.
    Holding { fence: u64 },
    /// `status: "skipped"` with `supersededBy`: a newer arrival won.
    Skipped { by: InstanceId, by_revision: Ident },
}
