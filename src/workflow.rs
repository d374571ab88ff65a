//! What every object says about Workflow instances, whatever its concept:
//! how alive an instance is by the binding's answer ([`Liveness`]), and
//! the grace rule (contract §1, §1a): an instance the binding cannot find
//! counts as dead only once the grace after its enqueue (the Coordinator)
//! or its claim (Runs) is over, since it may not be created yet.
//!
//! Pure: the shell asks the binding and maps its answer here; the cores
//! decide with it, given the time.

/// What the Workflow binding said about an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Any status that is not final (queued, running, waiting, paused...).
    Alive,
    /// `complete`, `errored` or `terminated`.
    Dead,
    /// The binding cannot find the instance: dead, unless it was enqueued
    /// or claimed less than the grace ago (it may not be created yet). The
    /// core decides which, given the time.
    NotFound,
    /// The binding call failed for another reason. Treated as alive
    /// wherever acting on "dead" would take a key from a live instance.
    Unknown,
}

impl Liveness {
    /// Whether an instance whose grace counts from `grace_from_ms` (its
    /// enqueue or claim; `None`: it has no grace, its own `acquire`
    /// registered it) counts as dead at `now_ms`, given this answer and the
    /// configured grace.
    pub fn is_dead(self, grace_from_ms: Option<u64>, now_ms: u64, grace_ms: u64) -> bool {
        match self {
            Liveness::Dead => true,
            Liveness::NotFound => {
                grace_from_ms.is_none_or(|at| now_ms >= at.saturating_add(grace_ms))
            }
            Liveness::Alive | Liveness::Unknown => false,
        }
    }
}

/// §1a's decision word for an instance found through another binding than
/// the one it was registered with.
pub const FOUND_ELSEWHERE: &str = "found elsewhere";

/// The reason of §1a's one `warn` line: the instance's remembered binding
/// (`from`) cannot find it, `to` did. The same words for every concept.
pub fn found_elsewhere_reason(from: &str, to: &str) -> String {
    format!(
        "registered through the Workflow binding {from}, which cannot find it; \
         found through {to}: checked, woken and terminated through {to} from now on \
         (name its `workflow` when registering it)"
    )
}
