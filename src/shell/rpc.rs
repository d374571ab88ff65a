//! The RPC glue: for the Durable Object classes, a positional call decoded
//! into its typed request (a refusal is the caller's `BatonError`), run,
//! and its reply encoded, and the `alarm()` handler (the loop itself is
//! `shell::driver`). The serial queue's class is generated with the other
//! services' (`shell::service`).

use super::driver::{Driver, Memory, Rules};
use super::js;
use js_sys::Promise;
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

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
pub fn answer_now(answered: Result<JsValue, JsValue>) -> JsValue {
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
