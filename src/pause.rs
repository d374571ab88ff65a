//! An operator's pause (contract §11), as every object that can be paused
//! keeps it: a key's Coordinator (`coordinator::steer`) and a serial group
//! (`serial_queue::steer`). One type, so both say the same thing the same
//! way, down to the reply (`edge::serial::Paused`).

/// An operator's pause: set while the key or group is paused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    /// When it was first paused (a second pause keeps it).
    pub since_ms: u64,
    /// The operator's words, at most
    /// [`PAUSE_REASON_BYTES_MAX`](crate::limits::PAUSE_REASON_BYTES_MAX)
    /// bytes (checked at the edge).
    pub reason: Option<String>,
}
