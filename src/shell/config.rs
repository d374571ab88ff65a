//! The Worker's variables, read once per object with their defaults.

use crate::edge::coordinator::KeyOptions;
use crate::error::BatonError;
use crate::limits::{
    ENQUEUE_GRACE_MS_DEFAULT, ENQUEUE_GRACE_MS_MAX, HOLDER_CHECK_MS_DEFAULT, HOLDER_CHECK_MS_MAX,
    HOLDER_CHECK_MS_MIN,
};
use worker::Env;

/// The variables of reaching Workflow instances, which the Coordinator,
/// the Debouncer, the serial queue and Runs all read: the bindings, the
/// turn event's type, the holder-check period and the enqueue grace.
///
/// A misconfigured deployment is the operator's error, not the caller's, so
/// it is reported as such (not as `BatonError:`), naming the variable.
#[derive(Debug, Clone)]
pub struct WorkflowConfig {
    pub workflow_binding: String,
    /// `WORKFLOW_BINDINGS`: every Workflow binding `options.workflow` may
    /// name (default: `workflow_binding` alone).
    pub workflow_bindings: Vec<String>,
    pub turn_event_type: String,
    pub holder_check_ms: u64,
    /// `ENQUEUE_GRACE_MS`: how long after its enqueue an instance the
    /// Workflow binding cannot find counts as not created yet, not dead.
    pub enqueue_grace_ms: u64,
}

fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name).ok().map(|v| v.to_string())
}

/// A whole-number variable within `range`, or `default` when unset; the
/// operator's error names the variable and its range.
fn integer_var(
    env: &Env,
    name: &str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    let Some(text) = var(env, name) else {
        return Ok(default);
    };
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|value| range.contains(value))
        .ok_or_else(|| {
            format!(
                "Baton configuration: {name} must be an integer from {} to {} (got {text:?})",
                range.start(),
                range.end()
            )
        })
}

impl WorkflowConfig {
    pub fn from_env(env: &Env) -> Result<WorkflowConfig, String> {
        let workflow_binding = var(env, "WORKFLOW_BINDING").unwrap_or_else(|| "WORKFLOW".into());
        let workflow_bindings = match var(env, "WORKFLOW_BINDINGS") {
            None => vec![workflow_binding.clone()],
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect(),
        };
        let turn_event_type = var(env, "TURN_EVENT_TYPE").unwrap_or_else(|| "baton-turn".into());
        crate::coordinator::check_turn_event_type(&turn_event_type)?;
        let holder_check_ms = integer_var(
            env,
            "HOLDER_CHECK_MS",
            HOLDER_CHECK_MS_DEFAULT,
            HOLDER_CHECK_MS_MIN..=HOLDER_CHECK_MS_MAX,
        )?;
        let enqueue_grace_ms = integer_var(
            env,
            "ENQUEUE_GRACE_MS",
            ENQUEUE_GRACE_MS_DEFAULT,
            0..=ENQUEUE_GRACE_MS_MAX,
        )?;
        Ok(WorkflowConfig {
            workflow_binding,
            workflow_bindings,
            turn_event_type,
            holder_check_ms,
            enqueue_grace_ms,
        })
    }
}

impl WorkflowConfig {
    /// Refuses an `options.workflow` that names no binding in `WORKFLOW_BINDINGS`.
    pub fn check_options(&self, options: Option<&KeyOptions>) -> Result<(), BatonError> {
        let Some(name) = options.and_then(|o| o.workflow.as_ref()) else {
            return Ok(());
        };
        if self.workflow_bindings.iter().any(|b| b == name.as_str()) {
            return Ok(());
        }
        Err(BatonError::Invalid {
            field: "workflow",
            reason: format!(
                "must name one of WORKFLOW_BINDINGS ({}), not {:?}",
                self.workflow_bindings.join(", "),
                name.as_str()
            ),
        })
    }
}

/// The serial queue's variables.
#[derive(Debug, Clone)]
pub struct SerialConfig {
    pub timeouts: crate::serial_queue::SerialTimeouts,
    pub workflow_binding: String,
    /// `WORKFLOW_BINDINGS`, which an enqueue's `workflow` must name.
    pub workflows: WorkflowConfig,
    pub turn_event_type: String,
    /// `SERIAL_PUSH = "off"` disables push wake-ups (poll only): the
    /// benchmark's baseline, never a production setting.
    pub push: bool,
}

fn millis_var(env: &Env, name: &str, default: u64) -> Result<u64, String> {
    match var(env, name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| (1..=crate::limits::JS_SAFE_INTEGER_MAX).contains(ms))
            .ok_or_else(|| {
                format!("Baton configuration: {name} must be a positive integer of milliseconds (got {text:?})")
            }),
    }
}

impl SerialConfig {
    /// The names the core writes into its effects.
    pub fn names(&self) -> crate::serial_queue::Names<'_> {
        crate::serial_queue::Names {
            workflow: &self.workflow_binding,
            turn_event_type: &self.turn_event_type,
        }
    }

    /// The variables, read on the isolate's first call: a Worker's
    /// variables do not change while its isolate lives, and reading them
    /// (eight lookups in `env`, each a crossing into JS, and a string
    /// copied for each one set) was about 2% of every call's busy time in
    /// Baton's isolate (`bench/profile.mjs serial`).
    pub fn cached(env: &Env) -> Result<std::rc::Rc<SerialConfig>, String> {
        thread_local! {
            static CONFIG: std::cell::OnceCell<Result<std::rc::Rc<SerialConfig>, String>> =
                const { std::cell::OnceCell::new() };
        }
        CONFIG.with(|config| {
            config
                .get_or_init(|| SerialConfig::from_env(env).map(std::rc::Rc::new))
                .clone()
        })
    }

    pub fn from_env(env: &Env) -> Result<SerialConfig, String> {
        let coordinator = WorkflowConfig::from_env(env)?;
        Ok(SerialConfig {
            timeouts: crate::serial_queue::SerialTimeouts {
                waiter_timeout_ms: millis_var(
                    env,
                    "SERIAL_WAITER_TIMEOUT_MS",
                    crate::limits::SERIAL_WAITER_TIMEOUT_MS_DEFAULT,
                )?,
                heartbeat_expiry_ms: millis_var(
                    env,
                    "SERIAL_HEARTBEAT_EXPIRY_MS",
                    crate::limits::SERIAL_HEARTBEAT_EXPIRY_MS_DEFAULT,
                )?,
            },
            workflow_binding: coordinator.workflow_binding.clone(),
            turn_event_type: coordinator.turn_event_type.clone(),
            workflows: coordinator,
            push: var(env, "SERIAL_PUSH").as_deref() != Some("off"),
        })
    }

    /// Refuses an enqueue's `workflow` that names no binding in
    /// `WORKFLOW_BINDINGS`; a grant needs a `TURN_EVENT_TYPE` short enough
    /// to make turns of (the operator's error, not the caller's).
    pub fn check(&self, request: &crate::edge::serial::SerialEnqueue) -> Result<(), BatonError> {
        let options = KeyOptions {
            workflow: request.workflow.clone(),
            limit: None,
            grant: None,
            ..KeyOptions::default()
        };
        self.workflows.check_options(Some(&options))?;
        let max = crate::limits::SERIAL_TURN_PREFIX_CHARS_MAX;
        // The message names the bound as a literal (no format! in the WASM).
        const _: () = assert!(crate::limits::SERIAL_TURN_PREFIX_CHARS_MAX == 64);
        if request.grant == Some(true) && self.turn_event_type.len() > max {
            return Err(BatonError::Invalid {
                field: "grant",
                reason: "needs a TURN_EVENT_TYPE of at most 64 characters (Baton configuration)"
                    .into(),
            });
        }
        Ok(())
    }
}

/// The Runs object's variables.
#[derive(Debug, Clone)]
pub struct RunsShellConfig {
    pub decide: crate::runs::RunsConfig,
    /// The Workflow bindings (`WORKFLOW_BINDING`, `WORKFLOW_BINDINGS`), as
    /// the Coordinator reads them: a claim's `workflow` names one.
    pub workflows: WorkflowConfig,
}

impl RunsShellConfig {
    pub fn from_env(env: &Env) -> Result<RunsShellConfig, String> {
        use crate::limits::{RUN_RETENTION_MS_DEFAULT, RUN_RETENTION_MS_MAX, RUN_RETENTION_MS_MIN};
        let retention_ms = integer_var(
            env,
            "RUN_RETENTION_MS",
            RUN_RETENTION_MS_DEFAULT,
            RUN_RETENTION_MS_MIN..=RUN_RETENTION_MS_MAX,
        )?;
        // `ENQUEUE_GRACE_MS` is read once, as the Coordinator reads it: the
        // claim grace is the same rule (contract §1a), with the same bounds.
        let workflows = WorkflowConfig::from_env(env)?;
        Ok(RunsShellConfig {
            decide: crate::runs::RunsConfig {
                retention_ms,
                claim_grace_ms: workflows.enqueue_grace_ms,
            },
            workflows,
        })
    }

    /// Refuses a claim's `workflow` that names no binding in `WORKFLOW_BINDINGS`.
    pub fn check_workflow(
        &self,
        workflow: Option<&crate::ident::WorkflowName>,
    ) -> Result<(), BatonError> {
        let options = KeyOptions {
            workflow: workflow.cloned(),
            limit: None,
            grant: None,
            ..KeyOptions::default()
        };
        self.workflows.check_options(Some(&options))
    }
}
