//! The RPC glue: for the Durable Object classes, a positional call decoded
//! into its typed request (a refusal is the caller's `BatonError`), run,
//! and its reply encoded, and the `alarm()` handler (the loop itself is
//! `shell::driver`); and the serial queue's RPC class ([`SerialQueue`],
//! whose methods `shell::serial_queue_d1` runs).

use super::driver::{Driver, Memory, Rules};
use super::js;
use super::serial_queue_d1::Shell;
use js_sys::Promise;
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::{Context, Env};

/// Serves one positional RPC method: builds the request object from
/// `(key, options)`, decodes it (a refusal is the caller's `BatonError`),
/// runs it, and answers its typed reply.
pub fn serve<T, Reply, F>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise
where
    T: serde::de::DeserializeOwned + 'static,
    Reply: serde::Serialize,
    F: Future<Output = Result<Reply, JsValue>> + 'static,
{
    serve_js(key, options, move |request| async move {
        Ok(js::to_js(&method(request).await?))
    })
}

/// [`serve`] for a method that makes its JS reply itself (the Runs
/// replies, assembled as JSON text around stored JSON).
pub fn serve_js<T, F>(
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> F + 'static,
) -> Promise
where
    T: serde::de::DeserializeOwned + 'static,
    F: Future<Output = Result<JsValue, JsValue>> + 'static,
{
    js::promise(async move {
        let request =
            js::positional(&crate::edge::KEY_ARG, key, options).map_err(|e| js::to_js_error(&e))?;
        method(request).await
    })
}

/// [`serve`] for a method that answers in the caller's turn (the
/// RateLimiter's: one synchronous decision, no effects): the arguments
/// decoded as `arg` says, then the reply itself, or a rejected promise
/// holding the refusal, so no promise is made on the hot path.
pub fn serve_now<T: serde::de::DeserializeOwned>(
    arg: &crate::edge::KeyArg,
    key: JsValue,
    options: JsValue,
    method: impl FnOnce(T) -> Result<JsValue, JsValue>,
) -> JsValue {
    let answered = js::positional(arg, key, options)
        .map_err(|e| js::to_js_error(&e))
        .and_then(method);
    answer_now(answered)
}

/// A synchronous method's answer as RPC returns it: the reply, or a
/// rejected promise holding the refusal (one copy for every method, P6).
fn answer_now(answered: Result<JsValue, JsValue>) -> JsValue {
    match answered {
        Ok(reply) => reply,
        Err(error) => Promise::reject(&error).into(),
    }
}

/// The class's `alarm()` handler: [`Driver::alarm`] as the promise the
/// runtime awaits, so each class's handler is this one call.
pub fn serve_alarm<R: Rules, M: Memory<R> + 'static>(driver: &Rc<Driver<R, M>>) -> Promise {
    let driver = driver.clone();
    js::promise(async move {
        driver.alarm().await?;
        Ok(JsValue::UNDEFINED)
    })
}

/// The Rust half of the Worker's serial-queue RPC methods (see js/worker.mjs).
#[wasm_bindgen]
pub struct SerialQueue {
    shell: Rc<Shell>,
}

#[wasm_bindgen]
impl SerialQueue {
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env, ctx: worker::worker_sys::Context) -> SerialQueue {
        console_error_panic_hook::set_once();
        super::decision_log::configure(&env);
        SerialQueue {
            shell: Rc::new(Shell::new(env, Context::new(ctx))),
        }
    }

    #[wasm_bindgen(js_name = serialEnqueue)]
    pub fn serial_enqueue(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.enqueue(r).await })
    }

    #[wasm_bindgen(js_name = serialClaim)]
    pub fn serial_claim(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.claim(r).await })
    }

    #[wasm_bindgen(js_name = serialHeartbeat)]
    pub fn serial_heartbeat(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.heartbeat(r).await })
    }

    #[wasm_bindgen(js_name = serialRelease)]
    pub fn serial_release(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.release(r).await })
    }

    #[wasm_bindgen(js_name = serialInspect)]
    pub fn serial_inspect(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.inspect(r).await })
    }

    #[wasm_bindgen(js_name = serialPause)]
    pub fn serial_pause(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.pause(r).await })
    }

    #[wasm_bindgen(js_name = serialResume)]
    pub fn serial_resume(&self, input: JsValue) -> Promise {
        let shell = self.shell.clone();
        js::serve(input, move |r| async move { shell.resume(r).await })
    }
}
