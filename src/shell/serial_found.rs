//! §1a in the serial queue's shell: a holder or a handed waiter its
//! remembered binding cannot find is looked up through the others
//! (`shell::found`); found there, the core's rebinding batch runs
//! (`serial_queue::rebind`) and its `warn` line prints.

use super::config::SerialConfig;
use super::found::found;
use super::serial_queue_d1::{print, Shell};
use super::wake::Sent;
use super::workflow::Workflow;
use crate::ident::{Ident, InstanceId};
use crate::serial_queue as core;
use crate::transition::Check;
use crate::workflow::Liveness;
use wasm_bindgen::JsValue;

impl Shell {
    /// The liveness of the holder a claim waits behind (`check`).
    pub(super) async fn checked(
        &self,
        config: &SerialConfig,
        group: &Ident,
        check: &Check,
    ) -> Result<Liveness, JsValue> {
        let workflow = Workflow::from_env(&self.env, &check.workflow)?;
        let first = workflow.liveness(check.id.as_str()).await;
        self.found(config, group, &check.id, &check.workflow, first)
            .await
    }

    /// The liveness of `id`, sent the turn event (`sent`).
    pub(super) async fn woken(
        &self,
        config: &SerialConfig,
        group: &Ident,
        id: &InstanceId,
        sent: Sent,
    ) -> Result<Liveness, JsValue> {
        let binding = sent.binding.clone();
        let first = sent.liveness(id).await;
        self.found(config, group, id, &binding, first).await
    }

    /// `first` (the answer through `remembered`), or what another binding
    /// of `WORKFLOW_BINDINGS` found, remembered from then on.
    async fn found(
        &self,
        config: &SerialConfig,
        group: &Ident,
        id: &InstanceId,
        remembered: &str,
        first: Liveness,
    ) -> Result<Liveness, JsValue> {
        let bindings = &config.workflows.workflow_bindings;
        let answer = found(&self.env, bindings, remembered, id.as_str(), first).await;
        if let Some(to) = &answer.through {
            let outcomes = self.run(&core::rebind(group, id, to)).await?;
            print(group, &core::rebind_outcome(id, remembered, to, &outcomes));
        }
        Ok(answer.liveness())
    }
}
