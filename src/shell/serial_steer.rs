//! The serial queue's §11 steering over D1: `serialPause` and
//! `serialResume`, the same short loop as the other serial methods
//! (`shell::serial_queue_d1`): the core's batch, run; its decision; its
//! log lines; a resume's hand-on performed as a release's is (the event
//! before the reply, the status check after it).

use super::js::now_ms;
use super::serial_queue_d1::{print, Shell};
use crate::edge::serial::{SerialPause, SerialPauseReply, SerialResume, SerialResumeReply};
use crate::serial_queue as core;
use std::rc::Rc;
use wasm_bindgen::JsValue;

impl Shell {
    /// Pauses the group: no claim succeeds, and nobody is handed it, until
    /// `resume`; nothing else changes, so there is nothing to perform.
    pub(crate) async fn pause(&self, request: SerialPause) -> Result<SerialPauseReply, JsValue> {
        let request = request.into_core();
        let outcomes = self.run(&core::pause(&request, now_ms())).await?;
        let decided = core::pause_outcome(&outcomes);
        print(&request.group, &decided.log);
        Ok(SerialPauseReply {
            paused: decided.reply.into(),
        })
    }

    /// Resumes the group and hands it on as a release would: `granted`
    /// is the instance sent its event (handed the group by its turn, or
    /// woken to claim it), whose status is checked after the reply.
    pub(crate) async fn resume(
        self: &Rc<Self>,
        request: SerialResume,
    ) -> Result<SerialResumeReply, JsValue> {
        let SerialResume { group } = request;
        let config = self.config()?;
        let outcomes = self.run(&core::resume(&group, now_ms())).await?;
        let decided = core::resume_outcome(&group, &outcomes, config.names());
        print(&group, &decided.log);
        let performed = self.perform(&config, &group, &decided).await?;
        let granted = performed
            .handed
            .map(|sent| self.hand_on(&config, &group, decided.state, sent));
        Ok(SerialResumeReply { granted })
    }
}
