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

/// What the Workflow binding answered a status query, as Baton keeps it
/// for a holder (contract §10a's `checked.status`): the platform's status,
/// `not_found`, or `failed` when the query threw or did not answer in
/// time. Its [`Liveness`] is what the decisions act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Queued,
    Running,
    Paused,
    Waiting,
    WaitingForPause,
    Complete,
    Errored,
    Terminated,
    /// A status this code does not know: alive, the cautious reading.
    Other,
    NotFound,
    Failed,
}

/// Every answer, for reading a stored name back.
const ANSWERS: [Status; 11] = [
    Status::Queued,
    Status::Running,
    Status::Paused,
    Status::Waiting,
    Status::WaitingForPause,
    Status::Complete,
    Status::Errored,
    Status::Terminated,
    Status::Other,
    Status::NotFound,
    Status::Failed,
];

impl Status {
    /// The status the platform names `text` (`"waitingForPause"`...); one
    /// this code does not know reads as [`Status::Other`].
    pub fn of_platform(text: &str) -> Status {
        match text {
            "queued" => Status::Queued,
            "running" => Status::Running,
            "paused" => Status::Paused,
            "waiting" => Status::Waiting,
            "waitingForPause" => Status::WaitingForPause,
            "complete" => Status::Complete,
            "errored" => Status::Errored,
            "terminated" => Status::Terminated,
            _ => Status::Other,
        }
    }

    /// Its name, as stored and as `inspect` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Waiting => "waiting",
            Status::WaitingForPause => "waiting_for_pause",
            Status::Complete => "complete",
            Status::Errored => "errored",
            Status::Terminated => "terminated",
            Status::Other => "unknown_status",
            Status::NotFound => "not_found",
            Status::Failed => "failed",
        }
    }

    /// The answer stored as `name` (a name of an older release reads as
    /// a status this code does not know).
    pub fn from_name(name: &str) -> Status {
        ANSWERS
            .into_iter()
            .find(|a| a.name() == name)
            .unwrap_or(Status::Other)
    }

    pub fn liveness(self) -> Liveness {
        match self {
            Status::Complete | Status::Errored | Status::Terminated => Liveness::Dead,
            Status::NotFound => Liveness::NotFound,
            Status::Failed => Liveness::Unknown,
            Status::Queued
            | Status::Running
            | Status::Paused
            | Status::Waiting
            | Status::WaitingForPause
            | Status::Other => Liveness::Alive,
        }
    }
}

/// The plainest answer of each liveness (tests and simulations, whose
/// engines speak in liveness).
impl From<Liveness> for Status {
    fn from(liveness: Liveness) -> Status {
        match liveness {
            Liveness::Alive => Status::Running,
            Liveness::Dead => Status::Complete,
            Liveness::NotFound => Status::NotFound,
            Liveness::Unknown => Status::Failed,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_reads_back_by_name_and_maps_to_its_liveness() {
        for answer in ANSWERS {
            assert_eq!(Status::from_name(answer.name()), answer);
            assert_eq!(
                Status::from(answer.liveness()).liveness(),
                answer.liveness()
            );
        }
        assert_eq!(Status::from_name("teleported"), Status::Other);
        assert_eq!(
            Status::of_platform("waitingForPause"),
            Status::WaitingForPause
        );
        assert_eq!(Status::of_platform("teleported"), Status::Other);
        assert_eq!(Status::of_platform("errored").liveness(), Liveness::Dead);
        assert_eq!(Status::Failed.liveness(), Liveness::Unknown);
    }
}
