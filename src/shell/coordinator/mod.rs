//! The `Coordinator` Durable Object: `crate::coordinator` run by the
//! shell's driver (`shell::driver`). This file is the table of contents:
//! its JS methods, each saying what it runs and whether it answers in the
//! caller's turn. Below it, each file importing only from those under it:
//! - `rules.rs`: the concept as the driver runs it (`Coordinator`'s
//!   `Rules`: what a decision reads, the core's decision, the alarm's sweep);
//! - `reporters.rs`: what the object keeps for its keys' list reports
//!   (contract §10) and the report's RPC to the shard;
//! - `memory.rs`: its memory between decisions (`Summaries`: each key's
//!   summary), where every committed decision passes;
//! - `effects.rs`: its effects as the driver performs them;
//! - `calls.rs`: the method bodies; `report_sending.rs`: the reports sent
//!   after the reply, `listReport` and the alarm's part for the list;
//!   `terminations.rs`: the terminations its alarm still owes.
//!
//! Every decision is one `coordinator::decide` on the view
//! `coordinator::load` reads for its input, its writes carried out by
//! `coordinator::write`, in one synchronous turn: under the gate, or, for
//! `enqueue`, `acquire` and `release`, in the caller's turn
//! (`Driver::try_now`: a synchronous decision cannot interleave with
//! another request, and the gate's Promise is a fixed cost on every call).
//! The driver sets the holder-check alarm in that turn if the decision
//! asks for it and none is known to be set, then performs what
//! the decision asked for: the status checks (whose answers re-enter as
//! the `*Checked` inputs), the turn events (whose acceptance re-enters as
//! `Input::Accepted` after the reply, and the woken holder's status, asked
//! `HAND_ON_CHECK_DELAY_MS` after the reply, as `Input::Woken`, whatever
//! it answered: §10a keeps it) and the terminations. The tables are the truth; the
//! only memory kept between decisions is each key's summary
//! (`coordinator::Summary`, the transition's state), which equals its rows
//! since this object is their only writer.
//!
//! Everything a decision causes is in its transition
//! (`coordinator::Transition`): the history among its writes, the list
//! report it is due, its decision-log line and what it needs of the alarm.
//! `Summaries::write`, which every committed decision passes through,
//! commits the writes and queues the report; the driver then prints the
//! line as it is (`Rules::print`; the core took the key's §9a figures
//! into it) and arms the alarm.
//! None of them is decided here.
//!
//! JS callers reach these methods through the `Coordinator` class in
//! `js/worker.mjs`, which extends `DurableObject` (workerd refuses RPC to a
//! class that does not) and only turns the contract's positional arguments
//! into the request object each method here takes. That class also aborts
//! the object when a call traps (a broken invariant outside the gate).

mod calls;
mod effects;
mod memory;
mod report_sending;
mod reporters;
mod rules;
mod terminations;

use super::driver::Driver;
use super::js::{self, to_js};
use crate::edge::coordinator::{Acquire, Enqueue, KeyOptions, Release, ReleaseReply};
use crate::ident::Ident;
use calls::{answer_in_turn, enqueue_reply};
use js_sys::Promise;
use memory::Object;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::worker_sys::DurableObjectState;
use worker::Env;

/// The Rust half of the `Coordinator` Durable Object.
#[wasm_bindgen]
pub struct CoordinatorCore {
    object: Rc<Object>,
}

#[wasm_bindgen]
impl CoordinatorCore {
    #[wasm_bindgen(constructor)]
    pub fn new(raw_state: DurableObjectState, env: Env) -> CoordinatorCore {
        CoordinatorCore {
            object: Driver::new(raw_state, env),
        }
    }

    /// `enqueue`: `request` is `{ key, supersedes, instanceId, inputHash?,
    /// options? }`. Decided in the caller's turn (it needs no I/O before
    /// its decision); answers at once when there is nothing to check,
    /// terminate or arm.
    pub fn enqueue(&self, request: JsValue) -> JsValue {
        answer_in_turn(
            self.object.clone(),
            js::request::<Enqueue>(request),
            Object::enqueue_now,
            |r| &r.key,
            |_, r, reply| Ok(enqueue_reply(r, reply)),
        )
    }

    /// `acquire(key, instanceId, options?)`, the request `{ key, instanceId,
    /// options? }`. Answers at once (a value, not a Promise) when the
    /// decision has nothing to perform: the uncontended path. Its
    /// statements bind the key and id as the JS strings the call brought.
    pub fn acquire(&self, key: JsValue, instance_id: JsValue, options: JsValue) -> JsValue {
        let request =
            js::positional_request(&key, &instance_id, Some(&options), |key, id, grant| {
                Acquire {
                    key,
                    instance_id: id,
                    options: grant.then(KeyOptions::granting),
                }
            });
        let _bound = (request.as_ref().ok())
            .map(|r| self.bind_call(&r.key, &r.instance_id, [key, instance_id]));
        answer_in_turn(
            self.object.clone(),
            request,
            Object::acquire_now,
            |r| &r.key,
            Object::acquire_reply,
        )
    }

    /// `release(key, instanceId)`, the request `{ key, instanceId }`.
    /// Answers at once when nobody is to be woken and no alarm is to be armed.
    pub fn release(&self, key: JsValue, instance_id: JsValue) -> JsValue {
        let request = js::positional_request(&key, &instance_id, None, |key, id, _| Release {
            key,
            instance_id: id,
        });
        let _bound = (request.as_ref().ok())
            .map(|r| self.bind_call(&r.key, &r.instance_id, [key, instance_id]));
        answer_in_turn(
            self.object.clone(),
            request,
            Object::release_now,
            |r| &r.key,
            |_, _, next| Ok(ReleaseReply { next }),
        )
    }

    /// `inspect`: `request` is `{ key }`.
    pub fn inspect(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.inspect(r).await })
    }

    /// §11 `pause(key, { reason? })`, under the gate.
    pub fn pause(&self, key: JsValue, options: JsValue) -> Promise {
        let object = self.object.clone();
        super::rpc::serve(key, options, move |r| async move { object.pause(r).await })
    }

    /// §11 `resume(key)`: `request` is `{ key }`.
    pub fn resume(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.resume(r).await })
    }

    /// §11 `setLimit(key, limit)`: `request` is `{ key, limit }`.
    #[wasm_bindgen(js_name = setLimit)]
    pub fn set_limit(&self, request: JsValue) -> Promise {
        let object = self.object.clone();
        js::serve(request, move |r| async move { object.set_limit(r).await })
    }

    pub fn alarm(&self) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            object.config()?;
            let keys = object.alarm().await?;
            object.alarm_reports(keys).await?;
            object.alarm_terminations().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `listReport(key)`: reports the key to its list shard as it is now,
    /// and answers what it reported (`{ listed, holders, waiting,
    /// oldestSince, limit }`). `coordinatorList` asks it of an entry it
    /// doubts (one no report has confirmed for a while); not part of the
    /// contract.
    #[wasm_bindgen(js_name = listReport)]
    pub fn list_report(&self, key: JsValue) -> Promise {
        let object = self.object.clone();
        js::promise(async move {
            let key = key
                .as_string()
                .and_then(|k| Ident::new(k).ok())
                .ok_or_else(|| JsValue::from_str("listReport takes a key"))?;
            Ok(to_js(&object.list_report(&key).await?))
        })
    }

    /// Storage statements run since the object started: `{ reads, writes }`.
    #[wasm_bindgen(js_name = storageWork)]
    pub fn storage_work(&self) -> JsValue {
        self.object.base.storage_work()
    }
}

impl CoordinatorCore {
    /// Until the guard drops, the call's key and id are bound as the JS
    /// strings it brought (`ObjectSql::bind_as`), for acquire and release.
    fn bind_call(
        &self,
        key: &Ident,
        id: &crate::ident::InstanceId,
        strings: [JsValue; 2],
    ) -> crate::shell::sqlite::BoundAs<'_> {
        (self.object.base.sql).bind_as([key.as_str(), id.as_str()], strings)
    }
}
