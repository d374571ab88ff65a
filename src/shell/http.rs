//! The HTTP API's shell: reads the request, asks `crate::http_api` each
//! question in its fixed order (route, token, body, command), runs the
//! command through the same methods RPC callers use, and writes the reply.
//!
//! - Coordinator commands go to the key's Durable Object through its stub,
//!   with JS RPC (`Stub::into_rpc`), exactly as a Workflow's call would.
//! - Serial-queue commands go to the serial queue's shell
//!   (`serial_queue_d1::Shell`), the code behind `env.BATON.serial*`.
//!
//! Every refusal is decided before a command runs, so a refused request
//! changes nothing. Replies are JSON; refusals are `{ "error": message }`
//! with the status `HttpError::status` gives.

use super::args::to_js;
use super::serial_queue_d1::Shell;
use crate::http_api::{
    self, Asset, Command, Endpoint, GroupAction, HttpError, KeyAction, Operation,
};
use futures_util::StreamExt;
use js_sys::Promise;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Headers, Request, Response};

const STATUS_PAGE: &str = include_str!("../../static/index.html");
const STATUS_SCRIPT: &str = include_str!("../../static/app.js");
const STATUS_STYLE: &str = include_str!("../../static/style.css");
const OPENAPI: &str = include_str!("../../static/openapi.json");

#[wasm_bindgen]
extern "C" {
    /// A `Coordinator` stub's JS RPC methods (`js/worker.mjs`, contract §1).
    /// Each call returns a promise that rejects with the object's error.
    #[wasm_bindgen(extends = js_sys::Object)]
    type CoordinatorRpc;

    #[wasm_bindgen(method, catch)]
    fn enqueue(
        this: &CoordinatorRpc,
        key: &str,
        supersedes: bool,
        instance_id: &str,
        input_hash: JsValue,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn acquire(this: &CoordinatorRpc, key: &str, instance_id: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn release(this: &CoordinatorRpc, key: &str, instance_id: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn inspect(this: &CoordinatorRpc, key: &str) -> Result<Promise, JsValue>;
}

/// Answers one request. Never fails: every error becomes a response.
pub async fn handle(request: Request, env: Env) -> worker::Result<Response> {
    let method = request.inner().method();
    let path = request.path();
    let matched = match http_api::route(&method, &path) {
        Ok(matched) => matched,
        Err(error) => return error_response(&error),
    };
    // Assets are public and API routes need the token, by the route table's
    // construction (tested in `http_api`): the endpoint says which.
    match matched.endpoint {
        Endpoint::Asset(asset) => asset_response(asset),
        Endpoint::Api(operation) => match api(request, &env, operation, matched.param).await {
            Ok(reply) => json_response(200, &operation.reply(reply)),
            Err(error) => error_response(&error),
        },
    }
}

/// The API path: token, body, command, run.
async fn api(
    mut request: Request,
    env: &Env,
    operation: Operation,
    param: Option<&str>,
) -> Result<Value, HttpError> {
    let header = |name: &str| request.headers().get(name).ok().flatten();
    http_api::authorize(
        configured_token(env).as_deref(),
        header("authorization").as_deref(),
    )?;
    let body = if operation.has_body() {
        http_api::check_declared_length(header("content-length").as_deref())?;
        http_api::check_content_type(header("content-type").as_deref())?;
        let bytes = read_body(&mut request).await?;
        Some(http_api::parse_json_object(&bytes)?)
    } else {
        None
    };
    let command = Command::parse(operation, param, body)?;
    run(env, command).await
}

/// `BATON_TOKEN`. In workers-rs a secret (`wrangler secret put`) and a
/// plain variable (`[vars]`, `.dev.vars` for local development) are the
/// same string binding (`Secret` is `Var`), so one lookup reads either.
fn configured_token(env: &Env) -> Option<String> {
    env.secret("BATON_TOKEN")
        .ok()
        .map(|token| token.to_string())
}

/// The body, read chunk by chunk and abandoned as soon as it passes the
/// limit, whatever the `Content-Length` claimed.
async fn read_body(request: &mut Request) -> Result<Vec<u8>, HttpError> {
    if request.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = request.stream().map_err(internal)?;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(internal)?;
        http_api::check_body_length(body.len() + chunk.len())?;
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn internal(error: impl std::fmt::Display) -> HttpError {
    HttpError::Internal(format!("Baton: {error}"))
}

/// Runs a parsed command through the method an RPC caller would use.
async fn run(env: &Env, command: Command) -> Result<Value, HttpError> {
    match command {
        Command::Key { key, action } => {
            let stub = coordinator(env, key.as_str())?;
            let key = key.as_str();
            let call = match action {
                KeyAction::Enqueue {
                    supersedes,
                    instance_id,
                    input_hash,
                } => stub.enqueue(
                    key,
                    supersedes,
                    instance_id.as_str(),
                    input_hash.map_or(JsValue::UNDEFINED, |h| JsValue::from_str(h.as_str())),
                ),
                KeyAction::Acquire { instance_id } => stub.acquire(key, instance_id.as_str()),
                KeyAction::Release { instance_id } => stub.release(key, instance_id.as_str()),
                KeyAction::Inspect => stub.inspect(key),
            };
            settle(JsFuture::from(call.map_err(thrown)?).await)
        }
        Command::Group { group, action } => {
            let shell = Shell::new(env.clone());
            let input = to_js(&action.serial_input(&group));
            settle(match action {
                GroupAction::Enqueue { .. } => shell.enqueue_js(&input).await,
                GroupAction::Claim { .. } => shell.claim_js(&input).await,
                GroupAction::Heartbeat { .. } => shell.heartbeat_js(&input).await,
                GroupAction::Release { .. } => shell.release_js(&input).await,
                GroupAction::Inspect => shell.inspect_js(&input).await,
            })
        }
    }
}

/// The key's Coordinator stub, as a Workflow would address it (contract §1).
fn coordinator(env: &Env, key: &str) -> Result<CoordinatorRpc, HttpError> {
    let stub = env
        .durable_object("COORDINATOR")
        .and_then(|namespace| namespace.id_from_name(key)?.get_stub())
        .map_err(|error| {
            HttpError::Internal(format!(
                "Baton configuration: no usable Durable Object binding named \"COORDINATOR\": {error}"
            ))
        })?;
    Ok(stub.into_rpc::<CoordinatorRpc>())
}

/// A method's outcome as JSON, or its error classified by its message.
fn settle(result: Result<JsValue, JsValue>) -> Result<Value, HttpError> {
    let value = result.map_err(thrown)?;
    serde_wasm_bindgen::from_value(value).map_err(internal)
}

/// The message of whatever a method threw.
fn thrown(error: JsValue) -> HttpError {
    let message = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("Baton: {error:?}"));
    HttpError::from_thrown(message)
}

fn json_response(status: u16, value: &Value) -> worker::Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json; charset=utf-8")?;
    // Replies are live state; no cache may keep them.
    headers.set("cache-control", "no-store")?;
    Ok(Response::builder()
        .with_status(status)
        .with_headers(headers)
        .fixed(value.to_string().into_bytes()))
}

/// `{ "error": message }` with the refusal's status and headers. Baton's
/// own failures are also logged (the message only: never a token or body).
fn error_response(error: &HttpError) -> worker::Result<Response> {
    if let HttpError::Internal(message) = error {
        worker::console_error!("baton: HTTP API failed: {message}");
    }
    let mut response = json_response(error.status(), &json!({ "error": error.message() }))?;
    match error {
        HttpError::MethodNotAllowed { allow } => {
            response.headers_mut().set("allow", &allow.join(", "))?;
        }
        HttpError::Unauthorized { .. } => {
            response
                .headers_mut()
                .set("www-authenticate", "Bearer realm=\"baton\"")?;
        }
        _ => {}
    }
    Ok(response)
}

fn asset_response(asset: Asset) -> worker::Result<Response> {
    let (content_type, body) = match asset {
        Asset::StatusPage => ("text/html; charset=utf-8", STATUS_PAGE),
        Asset::StatusScript => ("text/javascript; charset=utf-8", STATUS_SCRIPT),
        Asset::StatusStyle => ("text/css; charset=utf-8", STATUS_STYLE),
        Asset::OpenApi => ("application/json; charset=utf-8", OPENAPI),
    };
    let headers = Headers::new();
    headers.set("content-type", content_type)?;
    headers.set("x-content-type-options", "nosniff")?;
    Ok(Response::builder()
        .with_headers(headers)
        .fixed(body.as_bytes().to_vec()))
}
