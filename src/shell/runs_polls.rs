//! The `Runs` object's long-polls. `await` and `events` decide under the
//! gate without writing (`Driver::read`); a parked one is a resolver in
//! the object's `resolvers`, registered in the core's `Waits` in that same
//! turn with a timer at its deadline. The commit of an outcome or an event
//! answers the waits it wakes in its own turn (`Driver::answer_in_turn`, with
//! `Object::waker`), and the timer answers the rest with the state as it
//! then is. Nothing polls storage. Waits live in memory only: a restart
//! drops their RPCs, and callers retry.

use super::driver::{InTurn, Rules, TransitionOf};
use super::js::now_ms;
use super::runs_object::{counted, reply, Object, Runs};
use super::sqlite::ObjectSql;
use crate::edge::runs::{wire, RunAwait, RunEvents};
use crate::ident::Ident;
use crate::runs::{self, sql, Poll, Reply, RunView, Wait, WaitFor, WaitId};
use js_sys::Promise;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &JsValue, timeout_ms: f64) -> JsValue;
}

impl Object {
    /// `await`: the run's outcome, now or once recorded.
    pub(super) async fn await_run(self: &Rc<Self>, r: RunAwait) -> Result<JsValue, JsValue> {
        let timeout = r.timeout_ms;
        self.poll(r.key, WaitFor::Outcome, move |sql, key, now, open_waits| {
            let run = counted(sql, |c| sql::record(c, key));
            match runs::await_run(&run, now, timeout, open_waits).0 {
                Poll::Answer(view) => Poll::Answer(wire::await_reply(view.as_ref())),
                Poll::Park { deadline_ms } => Poll::Park { deadline_ms },
            }
        })
        .await
    }

    /// `events`: the events after `after`, now or once appended.
    pub(super) async fn events(self: &Rc<Self>, r: RunEvents) -> Result<JsValue, JsValue> {
        let request = r.core();
        let (after, limit) = (request.after.get(), request.limit);
        let on = WaitFor::Events { after, limit };
        self.poll(r.key, on, move |sql, key, now, open_waits| {
            let slice = counted(sql, |c| sql::read_events(c, key, after, limit.get()));
            match runs::events(&slice, now, &request, open_waits).0 {
                Poll::Answer(slice) => Poll::Answer(wire::events_reply(&slice)),
                Poll::Park { deadline_ms } => Poll::Park { deadline_ms },
            }
        })
        .await
    }

    /// `await` or `events`: decided under the gate (`decide`, on what it
    /// reads, with how many long-polls are open), where it writes nothing;
    /// answered now, or parked in the same turn (so no commit can come
    /// between its read and its registration).
    async fn poll(
        self: &Rc<Self>,
        key: Ident,
        on: WaitFor,
        decide: impl FnOnce(&ObjectSql, &str, u64, u32) -> Poll<String> + 'static,
    ) -> Result<JsValue, JsValue> {
        let object = self.clone();
        let answer = self
            .driver
            .read(move |sql| {
                let now = now_ms();
                let open_waits = object.waits.borrow().open();
                match decide(sql, key.as_str(), now, open_waits) {
                    Poll::Answer(text) => Ok(text),
                    Poll::Park { deadline_ms } => Err(object.park(key, on, now, deadline_ms)),
                }
            })
            .await?;
        match answer {
            Ok(text) => reply(&text),
            Err(parked) => wasm_bindgen_futures::JsFuture::from(parked).await,
        }
    }

    /// What a commit of `key` does in its own turn: answers the waits its
    /// reply wakes (a recorded outcome's awaiters, a new event's readers).
    pub(super) fn waker(self: &Rc<Self>, key: &Ident) -> InTurn<Runs> {
        let object = self.clone();
        let key = key.clone();
        Box::new(
            move |sql, transition: &TransitionOf<Runs>| match &transition.reply {
                Reply::Complete(Some(view)) => object.wake_awaiters(&key, view),
                Reply::Append(seq) => object.wake_readers(sql, &key, *seq),
                // Nothing recorded, nothing appended: no wait wakes.
                Reply::Complete(None)
                | Reply::Claim { .. }
                | Reply::Checking(_)
                | Reply::Await(_)
                | Reply::Events(_)
                | Reply::Expired(_) => {}
            },
        )
    }

    /// Registers a wait and returns its promise; a timer answers it at its
    /// deadline unless a commit answers it first.
    fn park(self: &Rc<Self>, key: Ident, on: WaitFor, now: u64, deadline_ms: u64) -> Promise {
        let id = self.waits.borrow_mut().park(Wait {
            key,
            on,
            deadline_ms,
        });
        let object = self.clone();
        let promise = Promise::new(&mut |resolve, _reject| {
            object.resolvers.borrow_mut().insert(id, resolve);
        });
        let object = self.clone();
        // Called once, then freed; a wait answered earlier makes it a no-op.
        let timer = Closure::once_into_js(move || object.expire(id));
        set_timeout(&timer, deadline_ms.saturating_sub(now) as f64);
        promise
    }

    /// A wait's timer: answers it with the state as it is now.
    fn expire(&self, id: WaitId) {
        let Some(wait) = self.waits.borrow_mut().take(id) else {
            return;
        };
        let base = &self.driver.base;
        base.ensure_schema(Runs::migrate);
        let text = counted(&base.sql, |c| match wait.on {
            WaitFor::Outcome => {
                wire::await_reply(runs::run_view(&sql::record(c, wait.key.as_str())).as_ref())
            }
            WaitFor::Events { after, limit } => {
                wire::events_reply(&sql::read_events(c, wait.key.as_str(), after, limit.get()))
            }
        });
        self.settle(id, &reply(&text));
    }

    /// Answers the awaiters the recorded outcome `view` wakes, in the
    /// commit's turn, with one shared JS value (an outcome is up to 1 MiB:
    /// the runtime copies it into each RPC reply).
    fn wake_awaiters(&self, key: &Ident, view: &RunView) {
        let woken = self.waits.borrow_mut().woken_by_outcome(key);
        if woken.is_empty() {
            return;
        }
        let value = reply(&wire::await_reply(Some(view)));
        for (id, _) in woken {
            self.settle(id, &value);
        }
    }

    /// Answers the `events` waits event `seq` wakes, in the commit's turn;
    /// readers parked at the same place share one answer.
    fn wake_readers(&self, sql: &ObjectSql, key: &Ident, seq: u64) {
        let woken = self.waits.borrow_mut().woken_by_event(key, seq);
        let mut answers: HashMap<(u64, u32), Result<JsValue, JsValue>> = HashMap::new();
        for (id, wait) in woken {
            if let WaitFor::Events { after, limit } = wait.on {
                let value = answers.entry((after, limit.get())).or_insert_with(|| {
                    let slice = counted(sql, |c| {
                        sql::read_events(c, key.as_str(), after, limit.get())
                    });
                    reply(&wire::events_reply(&slice))
                });
                self.settle(id, value);
            }
        }
    }

    fn settle(&self, id: WaitId, value: &Result<JsValue, JsValue>) {
        let Some(resolve) = self.resolvers.borrow_mut().remove(&id) else {
            return;
        };
        let value = match value {
            Ok(value) | Err(value) => value,
        };
        let _ = resolve.call1(&JsValue::UNDEFINED, value);
    }
}
