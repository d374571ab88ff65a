//! The one shape of every decision: a [`Transition`] (the reply, the row
//! writes, the effects on Workflow instances, when the key next needs the
//! alarm, and the key's state once the writes are applied) and the
//! [`Effect`]s it asks of the shell, as data.
//!
//! Each concept's `decide(state, now_ms, input) -> Result<Transition, _>`
//! is pure. The shell's driver (`shell::driver`) loads the state, calls it,
//! commits the writes in one turn, arms the alarm, replies, then performs
//! the effects; what an effect came to re-enters through the concept's
//! `decide` as an input of its own. A refusal carries no writes and no
//! effects: nothing changes.
//!
//! A decision may leave its caller's answer to the check it asks for: a
//! [`Check`] with `answers` set re-enters with the decision's reply (which
//! carries what the next decision needs), and the reply of the decision it
//! re-enters is the caller's (a claim that finds another claimant, an
//! acquire that finds a holder to check).

use crate::ident::{Ident, InstanceId};

/// A decision of a concept whose replies are `Reply`, whose storage changes
/// are `Write`s and whose state (or the part a decision reads) is `State`.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition<Reply, Write, State> {
    pub reply: Reply,
    /// Row-level changes, committed together before anything else.
    pub writes: Vec<Write>,
    /// What to do with Workflow instances once the writes are committed.
    pub effects: Vec<Effect>,
    /// When the key next needs the alarm, if ever.
    pub alarm_at_ms: Option<u64>,
    /// The state once the writes are applied: the invariants are checked
    /// on it, and the simulations check that applying the writes gives it.
    pub state: State,
}

impl<Reply, Write, State> Transition<Reply, Write, State> {
    /// The creates among the effects.
    pub fn creates(&self) -> impl Iterator<Item = &Create> {
        self.effects.iter().filter_map(|effect| match effect {
            Effect::Create(create) => Some(create),
            _ => None,
        })
    }
}

/// One thing for the shell to do with a Workflow instance after the commit.
/// Its result re-enters through the concept's `decide` as an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Create an instance (the Debouncer's starts).
    Create(Create),
    /// Ask the binding how alive an instance is; the answer
    /// ([`crate::workflow::Liveness`]) re-enters.
    Check(Check),
    /// Send an instance its turn event (the Coordinator's hand-offs), then
    /// ask its status: whether the engine accepted the event and the
    /// [`crate::workflow::Liveness`] after re-enter.
    Wake(Wake),
    /// Terminate an instance, best effort (a superseded waiter); nothing
    /// re-enters.
    Terminate(Terminate),
    /// Send an instance an event the decision spelled out whole (the
    /// serial queue's: D1 keeps each registration's turn, so its shell
    /// derives nothing), then ask its status, as for a [`Wake`]; the
    /// [`crate::workflow::Liveness`] re-enters.
    Tell(Tell),
}

/// An instance handed a slot, for the shell to send its turn event: §1's
/// `TURN_EVENT_TYPE` (`turn: None`), or for a grant registration the grant
/// itself on its own event type, carrying `fence` (§1b).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    pub id: InstanceId,
    pub workflow: String,
    /// The registration number of a grant's own turn.
    pub turn: Option<u64>,
    pub fence: u64,
}

/// An event for the shell to send as it is: of type `event_type`, with
/// the payload `{ group }` and, for [`News`] other than `Claim`, the
/// instance's id and its status (contract §2, §2a).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tell {
    pub id: InstanceId,
    /// The Workflow binding to reach it through.
    pub workflow: String,
    /// `TURN_EVENT_TYPE`, or the registration's own turn.
    pub event_type: String,
    pub group: Ident,
    pub news: News,
}

/// What a [`Tell`] says beside its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum News {
    /// Nothing more: the group may be free; claim it.
    Claim,
    /// `status: "holding"` with `fence`: handed the group.
    Holding { fence: u64 },
    /// `status: "skipped"` with `supersededBy`: a newer arrival won.
    Skipped { by: InstanceId, by_revision: Ident },
}

/// An instance for the shell to terminate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminate {
    pub id: InstanceId,
    pub workflow: String,
}

/// An instance whose liveness the shell asks the Workflow binding for,
/// after the writes are committed (outside the gate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub id: InstanceId,
    /// The Workflow binding to ask.
    pub workflow: String,
    /// Whether the caller's answer is the reply of the decision the result
    /// re-enters, rather than the reply of the decision that asked.
    pub answers: bool,
}

/// An instance for the shell to create, after the writes are committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Create {
    pub id: InstanceId,
    /// The Workflow binding to create it through.
    pub workflow: String,
    /// Its params, as JSON text.
    pub params: Option<String>,
    /// 1 for the first try.
    pub attempt: u32,
}

/// What a create of an instance came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// The id is taken: an earlier attempt succeeded (a re-fire after a
    /// crash, a reply lost on the way back) or a caller chose a used id.
    /// Either way, the start is done and starts nothing twice.
    AlreadyExists,
    /// Anything else; retried with backoff.
    Failed(String),
}
