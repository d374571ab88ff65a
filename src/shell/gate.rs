//! Running a decision under the object's input gate.
//!
//! A decision is synchronous (the SQLite API is), so no other request can
//! interleave with it anyway; `blockConcurrencyWhile` adds the runtime's
//! guarantee on top, and resets the object if the decision panics (a broken
//! invariant), so it restarts from what was committed.

use js_sys::Promise;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectState;

/// Runs `decide` under the gate and returns its result.
pub async fn under_gate<T: 'static>(
    state: &DurableObjectState,
    decide: impl FnOnce() -> T + 'static,
) -> Result<T, JsValue> {
    let result: Rc<RefCell<Option<T>>> = Rc::new(RefCell::new(None));
    let slot = result.clone();
    gated(state, Box::new(move || *slot.borrow_mut() = Some(decide()))).await?;
    let value = result.borrow_mut().take();
    value.ok_or_else(|| JsValue::from_str("the gated decision did not run"))
}

/// The half of [`under_gate`] that does not depend on the decision's type,
/// so the deployed WASM holds one copy of the JS callback and its await
/// rather than one per decision (docs/benchmarks.md, P6).
async fn gated(state: &DurableObjectState, decide: Box<dyn FnOnce()>) -> Result<(), JsValue> {
    let mut decide = Some(decide);
    let callback: Closure<dyn FnMut() -> Promise> = Closure::new(move || {
        if let Some(decide) = decide.take() {
            decide();
        }
        Promise::resolve(&JsValue::UNDEFINED)
    });
    JsFuture::from(state.block_concurrency_while(callback.as_ref().unchecked_ref())?).await?;
    Ok(())
}
