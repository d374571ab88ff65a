//! The Coordinator's owed terminations (`coordinator::terminations_owed`):
//! the holder-check alarm terminates each superseded instance that is still
//! running, and clears the mark once the instance is known to be over. The
//! enqueue that superseded it tried once, best effort; this is what makes
//! a termination that threw, never answered, or was cut off by a reset of
//! the object happen anyway, rather than leaving the waiter to find out at
//! its own turn timeout.

use super::memory::Object;
use crate::coordinator::{self, OwedTermination};
use crate::limits::TERMINATIONS_PER_ALARM_MAX;
use crate::shell::effects;
use crate::sql::Counted;
use crate::transition::{Check, Terminate};
use std::rc::Rc;
use wasm_bindgen::JsValue;

impl Object {
    /// The alarm's part for the owed terminations, at most
    /// [`TERMINATIONS_PER_ALARM_MAX`], each done as
    /// [`coordinator::owed_termination`] says; one still owed keeps the
    /// alarm.
    pub(super) async fn alarm_terminations(self: &Rc<Self>) -> Result<(), JsValue> {
        let owed = self
            .read(|sql| {
                let counted = Counted::new(sql);
                let owed = coordinator::terminations_owed(&counted, TERMINATIONS_PER_ALARM_MAX);
                sql.count_work(counted.work());
                owed
            })
            .await?;
        let default_workflow = self.config()?.workflow_binding.clone();
        let mut still_owed = owed.len() as u32 >= TERMINATIONS_PER_ALARM_MAX;
        for owed in owed {
            let workflow = owed
                .workflow
                .clone()
                .unwrap_or_else(|| default_workflow.clone());
            let check = Check {
                id: owed.id.clone(),
                workflow: workflow.clone(),
                answers: false,
            };
            let bindings = &self.config()?.workflow_bindings;
            let found = effects::liveness(&self.base.env, bindings, &check).await;
            let over = match coordinator::owed_termination(found.liveness()) {
                OwedTermination::Done => true,
                OwedTermination::Terminate => {
                    // Through the binding that found it (§1a), if another.
                    let terminate = Terminate {
                        id: owed.id.clone(),
                        workflow: found.through.unwrap_or(workflow),
                    };
                    effects::terminate(&self.base.env, &terminate).await
                }
                OwedTermination::Keep => false,
            };
            if !over {
                still_owed = true;
                continue;
            }
            self.read(move |sql| {
                let counted = Counted::new(sql);
                coordinator::terminated(&counted, &owed.key, &owed.id);
                sql.count_work(counted.work());
            })
            .await?;
        }
        if still_owed {
            self.arm_alarm().await?;
        }
        Ok(())
    }
}
