//! The serial queue's requests, replies and the shape of its decisions
//! ([`Decided`]), with what a decision read that its effects' results
//! re-enter with ([`Read`]).

use super::effect::Effect;
use super::state::{Batch, Entry};
use crate::ident::{Ident, InstanceId};
use crate::transition::LogLine;

/// `serialEnqueue`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerialEnqueue {
    pub group: Ident,
    pub instance_id: InstanceId,
    pub revision: Ident,
    pub current: Option<Ident>,
    /// The Workflow binding it is checked and woken through (one of
    /// `WORKFLOW_BINDINGS`, checked by the shell); `None` is the default.
    pub workflow: Option<String>,
    /// Registering with grant: the prefix of its turn (`TURN_EVENT_TYPE`).
    pub grant: Option<String>,
    /// Claim in the same batch (contract §2a's claim on enqueue).
    pub claim: bool,
}

/// `serialEnqueue`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueReply {
    /// Enqueued (or already waiting); `superseded` are the waiters this
    /// arrival dropped; `turn` is its own, with grant.
    Waiting {
        superseded: Vec<InstanceId>,
        turn: Option<String>,
    },
    /// Not enqueued: `current` is the revision that runs instead (the
    /// request's `current`, or the revision that superseded this id).
    Skipped { current: Ident },
    /// With `claim`: the claim's reply, after this arrival's superseding.
    Claimed {
        superseded: Vec<InstanceId>,
        claim: ClaimReply,
    },
}

/// `serialClaim`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    /// `fence` is shown to the callers §2a gives one (grant, or a claim on
    /// enqueue) when the row has one.
    Holding {
        fence: Option<u64>,
    },
    Waiting {
        holder: Option<InstanceId>,
        turn: Option<String>,
    },
    Skipped {
        by: InstanceId,
        by_revision: Ident,
    },
    TimedOut,
}

/// How a `serialRelease` left the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The caller neither held nor waited: nothing changed.
    HeldNothing,
    /// A waiter left the queue.
    LeftQueue,
    /// The holder freed the group.
    FreedGroup,
}

/// A serial decision, taken once its batch has run (the batch writes and
/// reads back in one transaction: D1 is the state, and there is nothing
/// left to write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided<R> {
    /// The caller's answer.
    pub reply: R,
    /// [`Effect::Check`]s (a holder a claim waits behind, which answers
    /// the caller) and [`Effect::Wake`]s (turn events); their results
    /// re-enter through [`super::checked`].
    pub effects: Vec<Effect>,
    /// The batch a re-entered result asks to run next (a claim past a
    /// holder found dead, a hand-on past an instance found dead), whose
    /// outcomes are decided in turn; `None` when nothing changes.
    pub follow_up: Option<Batch>,
    /// What the decision read that its effects' results re-enter with.
    pub state: Read,
    /// The lines of what the batch did to other instances (holders
    /// abandoned, where a hand-on went). The caller's own line is its
    /// [`super::Answer`]'s, once the effects that may change it are done
    /// ([`super::enqueue_answer`], [`super::claim_answer`],
    /// [`super::release_answer`]).
    pub log: Vec<LogLine>,
}

/// What a decision read back that the shell logs and that its effects'
/// results re-enter with ([`super::checked`]): the table itself is the state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Read {
    /// The caller's row as its batch left it.
    pub me: Option<Entry>,
    /// The holders the batch abandoned (stale, or found dead).
    pub abandoned: Vec<InstanceId>,
    /// The holder a waiting claim is behind, as read: checked, dead, it is
    /// passed over only if it still holds as it was read.
    pub behind: Option<Seen>,
    /// The instance the group went on to: told, dead, it is passed over.
    pub went_on: Option<HandOn>,
}

/// The instance a group went on to: woken to claim, or handed the group
/// (then `holding_since` is the heartbeat it was handed it with). Its
/// status is checked after the reply; dead, it is passed over
/// ([`super::checked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOn {
    pub to: InstanceId,
    pub holding_since: Option<u64>,
}

/// The Worker's names a decision writes into its effects: the Workflow
/// binding of an instance that named none (`WORKFLOW_BINDING`) and the
/// plain turn event's type (`TURN_EVENT_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names<'a> {
    pub workflow: &'a str,
    pub turn_event_type: &'a str,
}

impl Names<'_> {
    /// The binding an instance is reached through.
    pub(super) fn workflow(&self, named: Option<&str>) -> String {
        named.unwrap_or(self.workflow).to_string()
    }
}

/// The holder a claim found, as it read it: the shell asks its Workflow
/// whether it is dead (contract §2a), and a dead one is abandoned only if
/// it still holds with this heartbeat ([`super::claim_past_dead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub id: InstanceId,
    pub workflow: Option<String>,
    pub heartbeat_at_ms: u64,
}

/// A command's first round: answered from the request alone, or a batch
/// to run, whose outcomes its `*_outcome` decision reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan<R> {
    Done(Box<Decided<R>>),
    Run(Batch),
}
