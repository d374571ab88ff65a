//! The Coordinator's method bodies behind its JS methods
//! (`CoordinatorCore`, in `mod.rs`): each request checked against
//! the configuration, turned into the core's input, run by the driver, and
//! its reply shaped as the contract answers it. Apart from the object's
//! file, which keeps only the table of contents: what each JS method runs
//! and whether it answers in the caller's turn.

use super::memory::Object;
use super::rules::Coordinator;
use crate::coordinator::{self, health_rows, history, Input, Reply};
use crate::edge::coordinator::{
    Acquire, AcquireReply, Enqueue, EnqueueReply, HolderEntry, HolderView, Inspect, Inspection,
    KeyOptions, RecentHold, Release, ReleaseReply, WaiterView,
};
use crate::edge::steer::{Pause, PauseReply, Resume, ResumeReply, SetLimit, SetLimitReply};
use crate::ident::Ident;
use crate::shell::driver::{Now, Replied};
use crate::shell::encode::ToJs;
use crate::shell::js;
use crate::sql::Counted;
use js_sys::Promise;
use std::rc::Rc;
use wasm_bindgen::JsValue;

impl Object {
    /// Refuses options the configuration cannot honour (an unknown `workflow`).
    fn check_options(&self, options: Option<&KeyOptions>) -> Result<(), JsValue> {
        self.config()?
            .check_options(options)
            .map_err(|e| js::to_js_error(&e))
    }

    /// `enqueue`'s decision, in the caller's turn.
    pub(super) fn enqueue_now(&self, request: &Enqueue) -> Result<InTurn, JsValue> {
        self.check_options(request.options.as_ref())?;
        self.try_now(&request.key, Replied(Input::Enqueue(request.core())))
            .map_err(|e| js::to_js_error(&e))
    }

    /// `acquire`'s decision, in the caller's turn.
    pub(super) fn acquire_now(&self, request: &Acquire) -> Result<InTurn, JsValue> {
        self.check_options(request.options.as_ref())?;
        self.try_now(&request.key, Replied(Input::Acquire(request.core())))
            .map_err(|e| js::to_js_error(&e))
    }

    /// `acquire`'s reply as the call asked for it: §1's string, or with
    /// `grant` the object, naming a waiter's event type.
    pub(super) fn acquire_reply(
        &self,
        request: &Acquire,
        reply: Reply,
    ) -> Result<AcquireReply, JsValue> {
        let Reply::Acquire(reply) = reply else {
            return Err(js::mismatch("Coordinator"));
        };
        let base = &self.config()?.turn_event_type;
        let grant = request.options.as_ref().and_then(|o| o.grant) == Some(true);
        Ok(AcquireReply::new(reply, grant, |turn| {
            coordinator::event_type(base, request.key.as_str(), turn)
        }))
    }

    /// `release`'s decision, in the caller's turn (never refused).
    pub(super) fn release_now(&self, request: &Release) -> Result<InTurn, JsValue> {
        self.config()?;
        let input = Input::Release(request.instance_id.clone());
        self.try_now(&request.key, Replied(input))
            .map_err(|e| js::to_js_error(&e))
    }

    /// §11's steering decisions, under the gate, each answered from its
    /// reply.
    pub(super) async fn pause(self: &Rc<Self>, request: Pause) -> Result<PauseReply, JsValue> {
        match self.steer(&request.key, request.core()).await? {
            Reply::Paused(paused) => Ok(PauseReply {
                paused: paused.into(),
            }),
            _ => Err(js::mismatch("Coordinator")),
        }
    }

    pub(super) async fn resume(self: &Rc<Self>, request: Resume) -> Result<ResumeReply, JsValue> {
        match self.steer(&request.key, Input::Resume).await? {
            Reply::Resumed(granted) => Ok(ResumeReply { granted }),
            _ => Err(js::mismatch("Coordinator")),
        }
    }

    pub(super) async fn set_limit(
        self: &Rc<Self>,
        request: SetLimit,
    ) -> Result<SetLimitReply, JsValue> {
        match self.steer(&request.key, request.core()).await? {
            Reply::LimitSet {
                limit,
                limit_override,
            } => Ok(SetLimitReply {
                limit,
                limit_override,
            }),
            _ => Err(js::mismatch("Coordinator")),
        }
    }

    async fn steer(self: &Rc<Self>, key: &Ident, input: Input) -> Result<Reply, JsValue> {
        self.config()?;
        self.run(key, input)
            .await?
            .map_err(|refusal| js::to_js_error(&refusal))
    }

    pub(super) async fn inspect(self: &Rc<Self>, request: Inspect) -> Result<Inspection, JsValue> {
        let key = request.key;
        let name = key.clone();
        let default_workflow = self.config()?.workflow_binding.clone();
        let check_ms = self.config()?.holder_check_ms;
        let (inspection, needs_check) = self
            .read(move |sql| {
                let counted = Counted::new(sql);
                let (summary, waiters, superseded) = coordinator::inspect(&counted, key.as_str());
                let (recent, counts) = history::inspect(&counted, key.as_str());
                let (k, now) = (key.as_str(), js::now_ms());
                let health =
                    health_rows::inspect(&counted, k, &summary, &waiters, &recent, check_ms, now);
                sql.count_work(counted.work());
                let needs_check = coordinator::needs_check(&summary);
                let waiting = (1..)
                    .zip(waiters)
                    .map(|(position, w)| WaiterView::new(w, position, &summary))
                    .collect();
                let paused = summary.paused.clone().map(Into::into);
                let limit_override = summary.limit_override;
                let max_waiting = summary.max_waiting;
                let limit = summary.limit();
                let holders = summary.holders;
                let inspection = Inspection {
                    paused,
                    limit_override,
                    max_waiting,
                    key: name,
                    holder: holders.first().cloned().map(HolderView::from),
                    waiting,
                    superseded,
                    limit,
                    holders: (holders.into_iter().zip(health.checked))
                        .map(|(h, checked)| HolderEntry {
                            checked: checked.map(Into::into),
                            ..HolderEntry::new(h, &default_workflow)
                        })
                        .collect(),
                    recent: recent.into_iter().map(RecentHold::from).collect(),
                    counts: counts.into(),
                    state: health.state,
                    waits: health.waits.into(),
                };
                (inspection, needs_check)
            })
            .await?;
        // As every decision does: a key someone waits on keeps the alarm.
        if needs_check {
            self.arm_alarm().await?;
        }
        Ok(inspection)
    }
}

/// A call decided in the caller's turn, answered with the reply.
pub(super) type InTurn = Now<Reply, Coordinator>;

/// `enqueue`'s reply: whom it terminated, or that the key was busy.
pub(super) fn enqueue_reply(request: &Enqueue, reply: Reply) -> Result<EnqueueReply, JsValue> {
    // §1d: `cancelled` is in the reply of a call that asked to cancel.
    let cancel_holders = request.options.as_ref().and_then(|o| o.cancel_holders) == Some(true);
    match reply {
        Reply::Enqueue(reply) => Ok(EnqueueReply::new(reply, cancel_holders)),
        _ => Err(js::mismatch("Coordinator")),
    }
}

/// `release`'s reply: the first instance handed the caller's slot.
pub(super) fn release_reply(reply: Reply) -> Result<ReleaseReply, JsValue> {
    let Reply::Release(next) = reply else {
        return Err(js::mismatch("Coordinator"));
    };
    Ok(ReleaseReply { next })
}

/// How a call decided in the caller's turn (`Driver::try_now`) answers:
/// at once, with a value, when its decision has nothing to perform (its
/// list reports are sent at once); else with a Promise that settles once
/// its effects are under way (`carry_on` sends the reports after them).
pub(super) fn answer_in_turn<R: 'static, T: ToJs + 'static>(
    object: Rc<Object>,
    request: Result<R, JsValue>,
    decide: fn(&Object, &R) -> Result<InTurn, JsValue>,
    key: fn(&R) -> &Ident,
    answer: fn(&Object, &R, Reply) -> Result<T, JsValue>,
) -> JsValue {
    let now = request.and_then(|r| {
        let now = decide(&object, &r)?;
        Ok((r, now))
    });
    if !matches!(now, Ok((_, Now::Pending(..)))) {
        object.send_reports();
    }
    match now {
        Err(error) => Promise::reject(&error).into(),
        Ok((request, Now::Answered(reply))) => match answer(&object, &request, reply) {
            Ok(reply) => reply.to_js(),
            Err(error) => Promise::reject(&error).into(),
        },
        // The answer is the reply the effects leave (an answering check's).
        Ok((request, Now::Pending(_, t))) => js::promise(async move {
            let reply = object.carry_on(key(&request), t).await?;
            let reply = reply.map_err(|e| js::to_js_error(&e))?;
            Ok(answer(&object, &request, reply)?.to_js())
        })
        .into(),
    }
}
