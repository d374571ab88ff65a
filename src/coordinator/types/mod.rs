//! The Coordinator's vocabulary, the floor every rule stands on: the
//! requests and replies of its calls, what a decision reads ([`Summary`],
//! [`View`], the [`Read`]s its plan names, [`Settings`]), what it is about
//! ([`Input`]), and what it returns ([`Reply`], [`Write`] and [`Effect`]
//! in a [`Transition`]); the key's rows as values (`state.rs`) and what
//! its history records (`history.rs`). Nothing here imports a rule.

mod effect;
pub mod history;
pub mod reason;
mod state;

pub use effect::{Effect, Handed};
pub use state::*;

use crate::busy::reporter::Due;
use crate::ident::{Ident, InputHash, InstanceId, WorkflowName};
use crate::transition::Alarm;
use crate::workflow::Status;
use history::{HistoryWrite, HoldEnd};

/// The options of `enqueue` and `acquire` (contract §1a), validated at the
/// edge: `workflow` names a configured binding, `limit` is 1 to 1000.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The binding of the instance being registered; absent keeps the one
    /// remembered for a registered id, or the default binding for a new one.
    pub workflow: Option<WorkflowName>,
    /// The key's new limit; absent keeps the key's.
    pub limit: Option<u32>,
    /// `grant: true` (§1b): a registration made by this call gets a turn of
    /// its own, and `acquire` answers the object form ([`Place`], fences).
    pub grant: bool,
    /// §1c: the priority a registration made by this call gets (-100 to
    /// 100, checked at the edge; 0 unless named). Ignored for an id
    /// already registered: fixed by the call that registered it.
    pub priority: i8,
    /// §1c: the tenant a registration made by this call gets (`None`: the
    /// shared one). Fixed at registration, as `priority`.
    pub tenant: Option<Ident>,
    /// §1c `onBusy: "skip"`: a call that would register the id answers
    /// busy instead of waiting, registering nothing (see `decide`).
    pub skip: bool,
    /// §1d `cancelHolders: true`: a superseding enqueue that does not
    /// coalesce cancels every holder of the key (`enqueue::cancel_holders`);
    /// refused without `supersedes`, and on `acquire`.
    pub cancel_holders: bool,
    /// §1f: the key's cap on its waiters, as this call names it (1 to
    /// 20000, checked at the edge); absent keeps the key's.
    pub max_waiting: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueRequest {
    pub supersedes: bool,
    pub id: InstanceId,
    pub input_hash: Option<InputHash>,
    pub options: Options,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnqueueReply {
    /// Waiters dropped by this enqueue, in queue order; the shell terminates
    /// them (best effort, each through its own Workflow) after the commit.
    pub terminated: Vec<Waiter>,
    /// The live waiting instance this enqueue coalesced into; nothing was registered.
    pub coalesced_into: Option<InstanceId>,
    /// §1c: with `onBusy: "skip"`, the key was busy (every slot held, or
    /// someone waiting): nothing was registered, nothing changed.
    pub busy: bool,
    /// §1f: busy because the key already has `maxWaiting` waiters.
    pub full: bool,
    /// §1d: the holders this enqueue cancelled (`cancelHolders`), as they
    /// were cancelled; the shell terminates each through its own Workflow.
    pub cancelled: Vec<Holder>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireRequest {
    pub id: InstanceId,
    pub options: Options,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// The caller holds a slot, granted with this fence.
    Granted {
        fence: u64,
    },
    /// The caller waits (a call without `grant`: for the shared turn).
    Pending,
    /// With `grant` (§1b, §1c): the caller waits, and where and for which
    /// event.
    Placed(Place),
    Superseded,
    /// §1c `onBusy: "skip"`: not granted at once; nothing registered.
    Busy,
    /// §1f: the key already has `maxWaiting` waiters: not granted at once;
    /// nothing registered. Answered as [`AcquireReply::Busy`].
    Full,
}

/// An enqueue waiting on its coalesce candidate's check: what its second
/// phase ([`Input::EnqueueChecked`]) needs besides the check's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueCheck {
    pub request: EnqueueRequest,
    pub candidate: Waiter,
}

/// An acquire waiting on its holder's check: what its second phase
/// ([`Input::AcquireChecked`]) needs besides the check's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireCheck {
    pub request: AcquireRequest,
    pub holder: Holder,
}

/// §11 `setLimit`'s answer: the limit in force and the override now set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSet {
    pub limit: u32,
    pub limit_override: Option<u32>,
}

/// A waiting caller's place, for a `grant` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The event it will be told its turn with.
    pub turn: Turn,
    /// 1 is next.
    pub position: u32,
    /// §1c: the mean of the key's last hold times times
    /// `ceil(position / limit)`; `None` before the key's first finished hold.
    pub eta_ms: Option<u64>,
}

/// A decision of the Coordinator: the shared shape's parts
/// ([`crate::transition::Transition`]), and what else it causes, as data.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub reply: Reply,
    /// Row-level changes, the history's among them, committed together
    /// before anything else.
    pub writes: Vec<Write>,
    /// What to do with Workflow instances once the writes are committed.
    pub effects: Vec<Effect>,
    /// `Periodic` when the key needs the holder-check alarm (holder checks,
    /// a report owed, terminations owed: `decide::alarm`), else `Keep`.
    pub alarm: Alarm,
    /// The view once the writes are applied.
    pub state: View,
    /// What the key's list entry is due: the owed mark is among the writes
    /// (`history::Tally::report_owed`); the shell sends the report after
    /// the reply.
    pub report: Due,
    /// The decision-log line, for the shell to print as it is.
    pub log: Option<reason::LogLine>,
}

/// What the key's summary holds: everything a decision knows of the key
/// without reading its queue. The shell keeps it in memory between
/// decisions (the object is the only writer of its rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The limit the callers named last (§1a; 1 until a call names one),
    /// as the key row's `holder_limit`: in force unless an operator's
    /// override hides it ([`Summary::limit`], `slots.rs`).
    pub callers_limit: u32,
    /// §11: the operator's override while one is set (`limit_override`).
    pub limit_override: Option<u32>,
    /// The highest fence granted (0 before the first grant).
    pub fence: u64,
    /// The last registration number drawn for a [`Turn::Own`].
    pub turns: u64,
    pub waiters: u32,
    /// In the order they got the key.
    pub holders: Vec<Holder>,
    /// The key remembers no superseded id (`false`: not known).
    pub none_superseded: bool,
    /// How long the key's last finished holds lasted, oldest first, at
    /// most [`HOLD_TIMES_KEPT`](crate::limits::HOLD_TIMES_KEPT) (§1c's `etaMs`): a hold finishes when its
    /// holder releases, or is found dead after it confirmed its slot.
    pub hold_times_ms: Vec<u64>,
    /// §11: set while an operator paused the key: no slot is granted
    /// (`steer.rs`).
    pub paused: Option<Paused>,
    /// §1f: the cap on the key's waiters the latest call that named one
    /// named (`max_waiting`); `None`: only `WAITERS_PER_KEY_MAX`.
    pub max_waiting: Option<u32>,
    /// While the key's waiters are all of one priority and tenant and kept
    /// in the [`Layout::Sole`] layout: that priority and tenant. `None`:
    /// nobody waits, or the waiters are kept in the [`Layout::Shared`] one.
    pub sole: Option<(i8, Option<Ident>)>,
}

/// How a key's waiters are kept (issue 38). The order they are handed on
/// is §1c's, stated once (`order.rs`); the layout only serves it. While
/// every waiter is of one priority and tenant, that order is the order of
/// arrival, and the rows keep nothing but it ([`Layout::Sole`]: a join
/// writes its row and the key's count, no tenant's turn). A waiter of a
/// second share moves the key's waiters to [`Layout::Shared`] first
/// ([`Write::Spread`]), none changing place. The read plan
/// (`read.rs`) picks the layout of each read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Kept in arrival order only: read the front and a place by it.
    Sole,
    /// Kept with each tenant's turn: read the front and a place by §1c's
    /// rounds.
    Shared,
}

/// §11: an operator's pause, as the key keeps it.
pub use crate::pause::Paused;

impl Default for Summary {
    fn default() -> Self {
        Summary {
            callers_limit: 1,
            limit_override: None,
            fence: 0,
            turns: 0,
            waiters: 0,
            holders: Vec::new(),
            none_superseded: true,
            hold_times_ms: Vec::new(),
            paused: None,
            max_waiting: None,
            sole: None,
        }
    }
}

/// What one decision knows of the key: the summary, and the answers to
/// the reads its plan named (`read.rs`, in the order of
/// [`View::reads`]); what no read asked for is left empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    pub summary: Summary,
    /// The place of the id the input names (a holder's, and with nobody
    /// waiting and nobody superseded a stranger's, from the summary).
    pub member: Option<Member>,
    /// The first waiters in the order the key is handed on (§1c: highest
    /// priority first, round the tenants within one), as many as the input
    /// may hand slots to.
    pub front: Vec<Waiter>,
    /// The caller's place in the hand-off order (1 is next), as the rows
    /// stand before the decision: a waiter's own when it waits beyond
    /// `front`; for an id not registered, where its priority and tenant
    /// would put it if it joined now (§1c).
    pub position: Option<u32>,
    /// When each holder was last checked (`None`: never), for the holders
    /// due a check (`check::due_for_check`).
    pub checked_ms: Vec<(InstanceId, Option<u64>)>,
    /// A superseding enqueue's coalesce candidate: the earliest waiter with
    /// its input hash.
    pub candidate: Option<Waiter>,
    /// Every waiter in the order they joined, for a superseding enqueue
    /// that does not coalesce: all but the caller are dropped.
    pub arrived: Vec<Waiter>,
    /// The reads that filled this view, in order.
    pub reads: Vec<Read>,
}

/// One read a decision still needs, beyond the key's summary (the plan is
/// `read.rs`'s), with its answer's slot: empty while it is planned
/// ([`Planned`]), the rows once a store has executed it ([`Fetched`]). A
/// store turns each read into the same read answered, so a read and its
/// answer are one value and cannot be paired wrongly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read<S: Stage = Planned> {
    /// Where `id` stands at the key: waiting (as which waiter), superseded,
    /// or not known ([`Member`]; never a holder: those are in the summary).
    Member(InstanceId, S::Slot<Member>),
    /// The first `n` waiters in hand-off order (§1c,
    /// [`hand_off_order`](crate::coordinator::hand_off_order)).
    Front(u32, Layout, S::Slot<Vec<Waiter>>),
    /// Where `id` stands in hand-off order (1 is next) if it waits; else
    /// where a waiter of `priority` and `tenant` would stand if it joined
    /// now ([`place_in_order`](crate::coordinator::place_in_order)).
    Place {
        id: InstanceId,
        priority: i8,
        tenant: Option<Ident>,
        layout: Layout,
        place: S::Slot<u32>,
    },
    /// When each holder was last checked (`None`: never), in the order
    /// they got the key.
    CheckTimes(S::Slot<Vec<(InstanceId, Option<u64>)>>),
    /// The earliest waiter registered with this input hash, if any.
    FirstWithHash(InputHash, S::Slot<Option<Waiter>>),
    /// Every waiter, in the order they joined.
    Waiters(S::Slot<Vec<Waiter>>),
}

/// Whether a [`Read`] is planned or answered: what its answer's slot holds.
pub trait Stage {
    type Slot<T: std::fmt::Debug + Clone + PartialEq + Eq>: std::fmt::Debug + Clone + PartialEq + Eq;
}

/// A read the plan names: its slot is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned;

/// A read a store executed: its slot holds the rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched;

impl Stage for Planned {
    type Slot<T: std::fmt::Debug + Clone + PartialEq + Eq> = ();
}

impl Stage for Fetched {
    type Slot<T: std::fmt::Debug + Clone + PartialEq + Eq> = T;
}

/// The settings the decisions read: the Worker's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// §1a's `ENQUEUE_GRACE_MS`.
    pub grace_ms: u64,
    /// `WORKFLOW_BINDING`: the binding of an instance that names none.
    pub workflow: String,
}

impl Settings {
    /// The binding an instance is checked, woken and terminated through:
    /// its own, or the default one when it names none.
    pub fn binding(&self, workflow: Option<&WorkflowName>) -> String {
        workflow.map_or_else(|| self.workflow.clone(), |w| w.to_string())
    }
}

/// What a decision is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Enqueue(EnqueueRequest),
    /// An enqueue's second phase: the coalesce candidate's liveness.
    EnqueueChecked {
        request: EnqueueRequest,
        candidate: Waiter,
        liveness: Liveness,
    },
    Acquire(AcquireRequest),
    /// An acquire's second phase: what the binding answered about the
    /// checked holder (§10a: the answer is kept).
    AcquireChecked {
        request: AcquireRequest,
        holder: Holder,
        answer: Status,
    },
    Release(InstanceId),
    /// The engine accepted the grant event sent to `holder` (as it was
    /// handed, §1b): the holder is told.
    Accepted {
        holder: Holder,
    },
    /// A woken holder's status, asked after its turn event (`holder` as
    /// it was handed; §10a: the answer is kept).
    Woken {
        holder: Holder,
        answer: Status,
    },
    /// The holder-check alarm, for a key it found due.
    Tick,
    /// A holder check of the alarm's, answered (§10a: the answer is kept).
    TickChecked {
        holder: Holder,
        answer: Status,
    },
    /// §11 `pause(key, { reason? })`.
    Pause {
        reason: Option<String>,
    },
    /// §11 `resume(key)`.
    Resume,
    /// §11 `setLimit(key, limit)`: an override, or `None` to clear it.
    SetLimit(Option<u32>),
    /// §1d: a cancelled holder's status, asked right after the object
    /// terminated it (on the enqueue that cancelled it, or again on the
    /// alarm), with the holder as it was when the termination was asked.
    Cancelled {
        holder: Holder,
        answer: Status,
    },
    /// §1a, found through any binding: `id`, remembered with the binding
    /// `from`, was not found there but through `workflow`. From now on it
    /// is that Workflow's instance (checked, woken and terminated through
    /// it).
    Rebound {
        id: InstanceId,
        from: String,
        workflow: WorkflowName,
    },
}

/// What any decision answered, as one value: what its log line and history
/// read, and what the simulations follow (their second phases made from
/// the `*Checking` variants). The object's methods never read it: each
/// call answers its own type ([`crate::coordinator::Call`], where a check's
/// continuation is apart from the answer: [`Step`](crate::transition::Step)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Enqueue(EnqueueReply),
    /// An enqueue waiting for its candidate's check.
    EnqueueChecking {
        request: EnqueueRequest,
        candidate: Waiter,
    },
    Acquire(AcquireReply),
    /// An acquire waiting for its holder's check.
    AcquireChecking {
        request: AcquireRequest,
        holder: Holder,
    },
    /// `release`: the first instance handed the caller's slot.
    Release(Option<InstanceId>),
    /// The alarm's holder checks, as the holders stood.
    Ticked(Vec<Holder>),
    /// A result that re-entered and needs no answer.
    Settled,
    /// §11 `pause`: the pause as it stands.
    Paused(Paused),
    /// §11 `resume`: who was handed a slot, in the order they were.
    Resumed(Vec<InstanceId>),
    /// §11 `setLimit`: the limit in force and the override now set.
    LimitSet {
        limit: u32,
        limit_override: Option<u32>,
    },
}

/// One row-level change to a key, in the order the decision made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// The callers' limit (§1a): the key's, unless an override hides it.
    SetLimit(u32),
    /// §11: the operator's override, or none.
    SetLimitOverride(Option<u32>),
    /// §1f: the key's cap on its waiters, as a call named it.
    SetMaxWaiting(u32),
    /// §11: the key paused (as this), or not.
    SetPaused(Option<Paused>),
    /// The key's registration counter becomes this (one more than before).
    DrawTurn(u64),
    /// A holder behind the others; raises the key's fence to its own.
    AddHolder(Holder),
    /// `Handed` becomes `Holding`.
    ConfirmHolder(InstanceId),
    /// §1d: the holder is cancelled (it keeps its slot until found dead).
    CancelHolder(InstanceId),
    SetHolderWorkflow(InstanceId, Option<WorkflowName>),
    /// The holder leaves; with its hold's end, when it counts as a
    /// finished hold (§1c's `etaMs`, [`Summary::hold_times_ms`]), which
    /// carries the decision's tally to the key row (`history::record`).
    RemoveHolder(InstanceId, Option<HoldEnd>),
    /// A grant (of this fence) served a waiter of this priority and tenant:
    /// the tenant goes to the back of its priority's round (§1c).
    Serve {
        priority: i8,
        tenant: Option<Ident>,
        fence: u64,
    },
    /// The holder was checked at this time and the binding answered this
    /// (§10a); a failed answer after a failed one keeps when the failures
    /// began, any other ends them.
    MarkChecked(InstanceId, u64, Status),
    /// A waiter behind every other, kept in this layout (the key's, or
    /// [`Layout::Shared`] right after a [`Write::Spread`]).
    PushWaiter(Waiter, Layout),
    /// The key's waiters, kept in [`Layout::Sole`], move to
    /// [`Layout::Shared`] in arrival order: none changes place.
    Spread,
    SetWaiterWorkflow(InstanceId, Option<WorkflowName>),
    RemoveWaiter(InstanceId),
    /// Every waiter but this one is remembered as superseded and leaves;
    /// the count is how many.
    SupersedeAllExcept(InstanceId, u32),
    /// Forgets the oldest superseded ids beyond this many.
    ForgetSupersededBeyond(u32),
    /// A change to the key's history (contract §10): `history.rs`
    /// says which, and carries them out.
    History(HistoryWrite),
}
