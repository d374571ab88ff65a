//! The effects every object may ask for, performed against the Workflow
//! binding: a create, a status check and a termination. A concept's effect
//! type (`shell::driver::Perform`) performs its own through these, and its
//! turn events through `shell::wake`. Kept out of the generic driver so
//! the WASM holds one copy of each (P6).

use super::found::{found, Found};
use super::js;
use super::workflow::Workflow;
use crate::debounce::IdSuffix;
use crate::transition::{Check, Create, CreateOutcome, Terminate};
use crate::workflow::Status;
use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use worker::Env;

/// A fresh unique suffix for a created instance's id: a UUID from the
/// runtime's CSPRNG. The core draws no randomness; this is the one place
/// it comes from.
pub fn new_suffix() -> Result<IdSuffix, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))?;
    let random_uuid: js_sys::Function =
        Reflect::get(&crypto, &JsValue::from_str("randomUUID"))?.unchecked_into();
    let uuid = random_uuid
        .call0(&crypto)?
        .as_string()
        .ok_or_else(|| JsValue::from_str("crypto.randomUUID gave no string"))?;
    Ok(IdSuffix::new(uuid))
}

/// Creates an instance: what that came to (a failure also warns).
pub async fn create(env: &Env, create: &Create) -> CreateOutcome {
    let attempt = async {
        let workflow = Workflow::from_env(env, &create.workflow)?;
        let params = match &create.params {
            Some(text) => js_sys::JSON::parse(text)?,
            None => JsValue::UNDEFINED,
        };
        workflow
            .create_instance(create.id.as_str(), &params)
            .await
            .map(|_| ())
    };
    let outcome = create_outcome(attempt.await);
    warn_failed(create, &outcome);
    outcome
}

/// What the binding says of a check's instance, looked up through the
/// other `bindings` where its own cannot find it (§1a, `shell::found`); a
/// binding that is not there is `Unknown` (never taken for dead).
pub async fn liveness(env: &Env, bindings: &[String], check: &Check) -> Found {
    let first = match Workflow::from_env(env, &check.workflow) {
        Ok(workflow) => workflow.answer(check.id.as_str()).await,
        // A binding that vanished from the configuration, or a Baton
        // deployed before its Workflow (the first deploy's step 1): nothing
        // can be said, and nothing is taken on a guess. The operator is
        // told which binding is missing.
        Err(error) => {
            let (js::Thrown::Refused(message) | js::Thrown::Failed(message)) =
                js::Thrown::of(&error);
            worker::console_warn!("{message}");
            Status::Failed
        }
    };
    found(env, bindings, &check.workflow, check.id.as_str(), first).await
}

/// Terminates an instance; whether the platform accepted. It is already
/// recorded as done with (superseded), so one that survives is refused
/// when it asks, and the holder-check alarm terminates it.
pub async fn terminate(env: &Env, terminate: &Terminate) -> bool {
    let stop = async {
        let workflow = Workflow::from_env(env, &terminate.workflow)?;
        workflow.instance(terminate.id.as_str()).await?.stop().await
    };
    stop.await.is_ok()
}

/// A failed create is a warning (an error of Baton's own I/O prints at
/// every log level); its decision line is the caller's to print.
fn warn_failed(create: &Create, outcome: &CreateOutcome) {
    if let CreateOutcome::Failed(message) = outcome {
        worker::console_warn!(
            "baton: create of {} through {} failed (attempt {}): {message}",
            create.id,
            create.workflow,
            create.attempt
        );
    }
}

/// What a create's failure means: "the id exists" is a done start.
fn create_outcome(result: Result<(), JsValue>) -> CreateOutcome {
    let Err(error) = result else {
        return CreateOutcome::Created;
    };
    let message = match js::Thrown::of(&error) {
        js::Thrown::Refused(message) | js::Thrown::Failed(message) => message,
    };
    let lower = message.to_ascii_lowercase();
    if lower.contains("already exist") || lower.contains("already_exist") {
        CreateOutcome::AlreadyExists
    } else {
        CreateOutcome::Failed(message)
    }
}
