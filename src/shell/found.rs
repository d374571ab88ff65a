//! Contract §1a, "found through any binding": the one rule every liveness
//! check of the shell goes through (the Coordinator's holders, waiters and
//! candidates, the serial queue's holders, Runs' claimants).
//!
//! An instance its remembered binding cannot find is looked up through
//! every other binding of `WORKFLOW_BINDINGS` before it counts as "not
//! found". Found there, it is that Workflow's instance: the answer names
//! the binding ([`Found::through`]) and the concept's core decides on it
//! as an input of its own (it remembers the binding, and prints the one
//! `warn` line). So an instance registered without its `workflow`, or
//! with the wrong one, is never taken for dead while it runs. Ids are
//! unique within one Workflow only: an instance of another Workflow with
//! the same id keeps the slot until it ends, which errs toward exclusion.
//!
//! It costs nothing on the uncontended path: the other bindings are asked
//! only where the remembered one answered "not found".

use super::workflow::Workflow;
use crate::workflow::{Liveness, Status};
use worker::Env;

/// What the lookup came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What the binding that answered said (§10a's `checked.status`).
    pub answer: Status,
    /// The other binding that found the instance, when the remembered one
    /// could not.
    pub through: Option<String>,
}

impl Found {
    /// What the decisions act on.
    pub fn liveness(&self) -> Liveness {
        self.answer.liveness()
    }
}

/// `first`, the answer through `remembered`, unless it is "not found":
/// then the first other binding of `bindings` that finds `id`, in the
/// order `WORKFLOW_BINDINGS` lists them. A binding whose call failed
/// leaves the answer failed (unknown) unless another finds it: the
/// instance may be there, so it is not taken for dead.
pub async fn found(
    env: &Env,
    bindings: &[String],
    remembered: &str,
    id: &str,
    first: impl Into<Status>,
) -> Found {
    let mut found = Found {
        answer: first.into(),
        through: None,
    };
    if found.liveness() != Liveness::NotFound {
        return found;
    }
    for other in bindings.iter().filter(|b| b.as_str() != remembered) {
        let Ok(workflow) = Workflow::from_env(env, other) else {
            continue;
        };
        let answer = workflow.answer(id).await;
        match answer.liveness() {
            Liveness::NotFound => {}
            Liveness::Unknown => found.answer = answer,
            Liveness::Alive | Liveness::Dead => {
                return Found {
                    answer,
                    through: Some(other.clone()),
                }
            }
        }
    }
    found
}
