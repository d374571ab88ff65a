//! Typed bindings for the Workflow binding, which workers-rs 0.8 lacks.
//!
//! Only what Baton needs: `get`, `create`, and on an instance `status`,
//! `sendEvent` and `terminate`. Every call returns a Promise in the runtime;
//! these wrappers await it, for at most [`WORKFLOW_CALL_TIMEOUT_MS`] (a
//! call left unanswered is abandoned as a transient failure), and map
//! failures to `JsValue` errors.
//!
//! A Workflow is found by name: a binding in `env`, or else a Workflow the
//! Worker declares in wrangler's `exports` (no binding), which the runtime
//! offers by its class name in `ctx.exports`, the same object as the
//! `exports` of `cloudflare:workers`. So `WORKFLOW_BINDINGS` may name the
//! class of a Workflow declared only in `exports`, in the Worker that
//! defines it (an embedding Worker: a Worker's exports are its own).

use crate::limits::WORKFLOW_CALL_TIMEOUT_MS;
use crate::workflow::{Liveness, Status};
use futures_util::future::{select, Either};
use js_sys::{Object, Promise, Reflect};
use std::pin::pin;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::Env;

#[wasm_bindgen(module = "cloudflare:workers")]
extern "C" {
    /// The Worker's own exports (`ctx.exports`); undefined on a
    /// compatibility date without them. Read on first use, which is always
    /// inside a request (where the runtime has set it), then kept.
    #[wasm_bindgen(thread_local_v2, js_name = exports)]
    static WORKER_EXPORTS: JsValue;
}

#[wasm_bindgen]
extern "C" {
    /// `env.<binding>`: a Workflow.
    #[wasm_bindgen(extends = Object)]
    pub type Workflow;
    #[wasm_bindgen(method, catch)]
    fn get(this: &Workflow, id: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn create(this: &Workflow, options: &JsValue) -> Result<Promise, JsValue>;

    /// A handle on one instance.
    #[wasm_bindgen(extends = Object)]
    pub type WorkflowInstance;
    #[wasm_bindgen(method, catch)]
    fn status(this: &WorkflowInstance) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method, catch, js_name = sendEvent)]
    fn send_event(this: &WorkflowInstance, event: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn terminate(this: &WorkflowInstance) -> Result<Promise, JsValue>;
}

impl Workflow {
    /// The Workflow bound as `name`, or else the one the Worker exports as
    /// `name` (declared in wrangler's `exports`), or an error naming the
    /// missing binding.
    pub fn from_env(env: &Env, name: &str) -> Result<Workflow, JsValue> {
        let name_value = JsValue::from_str(name);
        let bound = Reflect::get(env.as_ref(), &name_value)?;
        let found = if is_present(&bound) {
            bound
        } else {
            WORKER_EXPORTS.with(|exports| {
                if exports.is_object() {
                    Reflect::get(exports, &name_value).unwrap_or(JsValue::UNDEFINED)
                } else {
                    JsValue::UNDEFINED
                }
            })
        };
        if !is_present(&found) {
            return Err(js_sys::Error::new(&format!(
                "Baton configuration: no Workflow binding named {name:?} (set WORKFLOW_BINDING)"
            ))
            .into());
        }
        Ok(found.unchecked_into())
    }

    pub async fn instance(&self, id: &str) -> Result<WorkflowInstance, JsValue> {
        Ok(answer("get", self.get(id)?).await?.unchecked_into())
    }

    /// Creates an instance with `id` and `params` (any JSON value).
    pub async fn create_instance(
        &self,
        id: &str,
        params: &JsValue,
    ) -> Result<WorkflowInstance, JsValue> {
        let options = Object::new();
        Reflect::set(&options, &"id".into(), &id.into())?;
        Reflect::set(&options, &"params".into(), params)?;
        Ok(answer("create", self.create(&options)?)
            .await?
            .unchecked_into())
    }

    /// Sends an event of `event_type` with `payload` to instance `id`.
    pub async fn send_to(
        &self,
        id: &str,
        event_type: &str,
        payload: &JsValue,
    ) -> Result<(), JsValue> {
        self.instance(id).await?.send(event_type, payload).await
    }

    /// Whether instance `id` is alive, by its status. Not found is reported
    /// as such (dead, unless the caller allows an enqueue grace); any other
    /// failure is `Unknown`.
    pub async fn liveness(&self, id: &str) -> Liveness {
        self.answer(id).await.liveness()
    }

    /// What the binding answers about instance `id`'s status (§10a).
    pub async fn answer(&self, id: &str) -> Status {
        let status = async {
            let instance = self.instance(id).await?;
            instance.current_status().await
        };
        answer_of(status.await)
    }
}

impl WorkflowInstance {
    pub async fn current_status(&self) -> Result<Status, JsValue> {
        let details = answer("status", self.status()?).await?;
        let status = Reflect::get(&details, &"status".into())?;
        Ok(Status::of_platform(&status.as_string().unwrap_or_default()))
    }

    /// Sends an event of `event_type` with `payload`.
    pub async fn send(&self, event_type: &str, payload: &JsValue) -> Result<(), JsValue> {
        let event = Object::new();
        Reflect::set(&event, &"type".into(), &event_type.into())?;
        Reflect::set(&event, &"payload".into(), payload)?;
        answer("sendEvent", self.send_event(&event)?).await?;
        Ok(())
    }

    pub async fn stop(&self) -> Result<(), JsValue> {
        answer("terminate", self.terminate()?).await?;
        Ok(())
    }
}

/// The answer to the binding's `call`, or, once it has not come within
/// [`WORKFLOW_CALL_TIMEOUT_MS`], an error saying so: the call is abandoned
/// (its promise is dropped, not cancelled: the platform may still carry it
/// out), and every caller treats the error as any transient failure.
async fn answer(call: &str, promise: Promise) -> Result<JsValue, JsValue> {
    let answered = pin!(JsFuture::from(promise));
    let timer = pin!(worker::Delay::from(Duration::from_millis(
        WORKFLOW_CALL_TIMEOUT_MS
    )));
    match select(answered, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(_) => Err(js_sys::Error::new(&format!(
            "Baton: the Workflow binding's {call} did not answer within {WORKFLOW_CALL_TIMEOUT_MS} ms"
        ))
        .into()),
    }
}

fn is_present(value: &JsValue) -> bool {
    !value.is_undefined() && !value.is_null()
}

/// A status query's result as Baton keeps it (§10a): the status, not
/// found, or failed (threw, or did not answer in time).
pub fn answer_of(status: Result<Status, JsValue>) -> Status {
    match status {
        Ok(status) => status,
        Err(error) if is_not_found(&error) => Status::NotFound,
        Err(_) => Status::Failed,
    }
}

/// The runtime reports an unknown id as an error whose message says
/// `instance.not_found` (production words it "not found").
fn is_not_found(error: &JsValue) -> bool {
    let message = Reflect::get(error, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| error.as_string())
        .unwrap_or_default()
        .to_ascii_lowercase();
    message.contains("not_found") || message.contains("not found")
}
