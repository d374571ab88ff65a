//! The Coordinator's effects as the driver performs them
//! (`shell::driver::Perform`), and what their results feed back: a status
//! check's status goes to the call waiting on it (an enqueue's candidate,
//! an acquire's holder), or re-enters as `Input::TickChecked` (the
//! alarm's); a hand-off's turn event is sent (its acceptance, and the woken
//! holder's status after the reply, re-enter as `Input::Accepted` and
//! `Input::Woken`); a
//! waiter's termination is tried once here, and owed until done
//! (`terminations.rs`); a cancelled holder's (§1d) is
//! followed by its status, which re-enters as `Input::Cancelled`.

use super::rules::Coordinator;
use crate::coordinator::{self, Handed, Input};
use crate::edge::coordinator::{AcquireOutcome, GrantEvent};
use crate::edge::TurnEvent;
use crate::ident::{InstanceId, WorkflowName};
use crate::shell::config::WorkflowConfig;
use crate::shell::decision_log;
use crate::shell::driver::{Bound, Perform, Performed, Performing, Woke};
use crate::shell::effects;
use crate::shell::found::Found;
use crate::shell::js::to_js;
use crate::shell::wake::{self, Sent, Turn};
use crate::transition::{Check, Terminate, Wake};
use std::rc::Rc;

/// The Coordinator's effects, and what their results feed back.
impl Perform<Coordinator> for coordinator::Effect {
    fn bound(&self) -> Option<Bound> {
        match self {
            coordinator::Effect::Check(_) => None,
            coordinator::Effect::Wake(_) => Some(Bound::Wakes),
            coordinator::Effect::Terminate(_) | coordinator::Effect::TerminateHolder { .. } => {
                Some(Bound::Terminations)
            }
        }
    }
    async fn perform<'a>(
        &'a self,
        with: &'a Performing<'a, Coordinator>,
    ) -> Performed<Coordinator> {
        match self {
            coordinator::Effect::Check(check) => {
                let found = effects::liveness(with.env, bindings(with), check).await;
                let rebound = rebound(&check.id, &check.workflow, &found);
                if check.answers {
                    // An enqueue's candidate or an acquire's holder: its
                    // status goes to the call waiting on it.
                    return Performed {
                        inputs: rebound.into_iter().collect(),
                        status: Some(found),
                        woke: None,
                    };
                }
                // One of the alarm's holders, as the tick left it.
                let checked = (with.asked_by.holder(&check.id)).map(|holder| Input::TickChecked {
                    holder,
                    answer: found.answer,
                });
                Performed {
                    inputs: checked.into_iter().chain(rebound).collect(),
                    status: None,
                    woke: None,
                }
            }
            coordinator::Effect::Wake(wake) => hand_off(with, wake).await,
            // Owed until done: the holder-check alarm finishes what fails
            // here (`Object::alarm_terminations`).
            coordinator::Effect::Terminate(terminate) => {
                effects::terminate(with.env, terminate).await;
                Performed::nothing()
            }
            coordinator::Effect::TerminateHolder { holder, workflow } => {
                // A failed termination is not told apart: the status says
                // whether it took, and the alarm terminates it again while
                // it is alive.
                let terminate = Terminate {
                    id: holder.id.clone(),
                    workflow: workflow.clone(),
                };
                effects::terminate(with.env, &terminate).await;
                let check = Check {
                    id: holder.id.clone(),
                    workflow: workflow.clone(),
                    answers: false,
                };
                let found = effects::liveness(with.env, bindings(with), &check).await;
                let input = Input::Cancelled {
                    holder: holder.clone(),
                    answer: found.answer,
                };
                let rebound = rebound(&holder.id, workflow, &found);
                Performed {
                    inputs: std::iter::once(input).chain(rebound).collect(),
                    status: None,
                    woke: None,
                }
            }
        }
    }
}

/// The bindings of `WORKFLOW_BINDINGS` (none if the variables are bad:
/// then nothing was decided).
fn bindings<'a>(with: &'a Performing<'a, Coordinator>) -> &'a [String] {
    with.config.map_or(&[], |c| c.workflow_bindings.as_slice())
}

/// §1a: an instance found through another binding than the one it is
/// remembered with; the key learns it as an input of its own.
fn rebound(id: &InstanceId, from: &str, found: &Found) -> Option<Input> {
    let workflow = WorkflowName::new(found.through.clone()?).ok()?;
    Some(Input::Rebound {
        id: id.clone(),
        from: from.to_owned(),
        workflow,
    })
}

/// A hand-off: the holder is sent its turn event (and the line logged). A
/// grant the engine accepted is recorded (the holder is then told, and the
/// alarm sends it no more); one that failed stays to send, and the alarm
/// retries it. The woken holder's status, read after the reply, is
/// reported back with the snapshot it was handed as (§10a keeps the
/// answer; a dead one's slot moves on to the next waiter; one not created
/// yet keeps its slot within its grace, and the alarm re-checks it).
async fn hand_off(
    with: &Performing<'_, Coordinator>,
    wake: &Wake<Handed>,
) -> Performed<Coordinator> {
    let sent = match with.config {
        Some(config) => {
            // A binding gone from the configuration sends nothing: nothing
            // is then taken on a guess (its status reads as unknown).
            let turn = turn(config, with.key.as_str(), wake);
            let sent = wake::send(with.env, wake, &turn).await.ok();
            if sent.is_some() {
                decision_log::line(with.scope, &coordinator::log::sent_turn(&wake.id));
            }
            sent
        }
        None => None,
    };
    let holder = with.asked_by.holder(&wake.id);
    let accepted = sent.as_ref().is_some_and(Sent::accepted);
    let input = match (&holder, accepted && wake.event.turn.is_some()) {
        (Some(holder), true) => Some(Input::Accepted {
            holder: holder.clone(),
        }),
        _ => None,
    };
    let (id, from) = (wake.id.clone(), wake.workflow.clone());
    let then = move |found: Found| {
        // Whatever it answered: §10a keeps the holder's last answer.
        let woken = holder.map(|holder| Input::Woken {
            holder,
            answer: found.answer,
        });
        woken
            .into_iter()
            .chain(rebound(&id, &from, &found))
            .collect()
    };
    Performed {
        inputs: input.into_iter().collect(),
        status: None,
        woke: Some(Woke {
            id: wake.id.clone(),
            sent,
            bindings: (wake.workflow.clone(), Rc::from(bindings(with))),
            then: Box::new(then),
        }),
    }
}

/// The event that tells a holder it was handed a slot of `key`: §1's
/// `{ key }` on `TURN_EVENT_TYPE`, or for a grant registration the grant
/// itself on its own type (§1b). The same for every send to the same
/// hand-over, so a re-sent grant says what the first said.
fn turn(config: &WorkflowConfig, key: &str, wake: &Wake<Handed>) -> Turn {
    let (turn, payload) = match wake.event.turn {
        None => (coordinator::Turn::Shared, to_js(&TurnEvent::Key(key))),
        Some(n) => (
            coordinator::Turn::Own(n),
            to_js(&GrantEvent {
                key,
                instance_id: wake.id.as_str(),
                status: AcquireOutcome::Granted,
                fence: wake.event.fence,
            }),
        ),
    };
    Turn {
        event_type: coordinator::event_type(&config.turn_event_type, key, turn),
        payload,
    }
}
