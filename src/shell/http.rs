//! The HTTP API's shell: reads the request, asks `crate::edge::http` each
//! question in its fixed order (route, token, body, command), runs the
//! command through the same methods RPC callers use, and writes the reply.
//!
//! - Coordinator, rate-limit, Debouncer and Runs commands go to the
//!   Durable Object their key (or bucket) names through its stub
//!   (`stub::call`, with the positional arguments of the method table),
//!   the code behind `env.BATON.coordinator*`, `rate*`, `debounce*` and
//!   `run*` (`shell::service`).
//! - Serial-queue commands go to the serial queue's shell
//!   (`serial_queue_d1::Shell`), the code behind `env.BATON.serial*`.
//!
//! Every refusal is decided before a command runs, so a refused request
//! changes nothing. Replies are JSON; refusals are `{ "error": message }`
//! with the status `HttpError::status` gives.

use super::busy_service;
use super::http_body::{drain_unread, internal, read_body};
use super::js::Thrown;
use super::serial_queue_d1::Shell;
use super::service;
use super::stub::{self, CallError};
use crate::edge::http::{self, Asset, Command, Endpoint, HttpError, Operation};
use crate::edge::CoordinatorCall;
use crate::limits::HTTP_BODY_BYTES_MAX;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::{Context, Env, Headers, Request, Response};

/// Answers one request. Never fails: every error becomes a response.
/// `assets`: the static files by name (`shell::entry`).
pub async fn handle(
    mut request: Request,
    env: Env,
    ctx: Context,
    assets: &JsValue,
) -> worker::Result<Response> {
    let (method, path) = (request.inner().method(), request.path());
    let matched = match http::route(&method, &path) {
        Ok(matched) => matched,
        Err(error) => {
            // No route, so no operation's limit: the API's own.
            drain_unread(&mut request, HTTP_BODY_BYTES_MAX).await;
            return error_response(&error);
        }
    };
    // Assets are public and API routes need the token, by the route table's
    // construction (tested in `edge::http`): the endpoint says which.
    match matched.endpoint {
        Endpoint::Asset(asset) => asset_response(assets, asset),
        Endpoint::Api(operation) => {
            match api(&mut request, &env, ctx, operation, matched.param).await {
                Ok(reply) => json_response(200, reply),
                Err(error) => {
                    drain_unread(&mut request, operation.body_bytes_max()).await;
                    error_response(&error)
                }
            }
        }
    }
}

/// The API path: token, body, command, run.
async fn api(
    request: &mut Request,
    env: &Env,
    ctx: Context,
    operation: Operation,
    param: Option<&str>,
) -> Result<String, HttpError> {
    let header = |name: &str| request.headers().get(name).ok().flatten();
    let content_length = header("content-length");
    let checked = http::authorize(
        configured_token(env).as_deref(),
        header("authorization").as_deref(),
    )
    .and_then(|()| {
        if !operation.has_body() {
            return Ok(());
        }
        http::check_declared_length(content_length.as_deref(), operation.body_bytes_max())?;
        http::check_content_type(header("content-type").as_deref())
    });
    checked?;
    let body = if operation.has_body() {
        let bytes = read_body(request, operation.body_bytes_max()).await?;
        Some(http::parse_json_object(&bytes)?)
    } else if operation.route().2 == http::Input::Query {
        // A list's options are its query string. Read from the raw URL
        // text: `Request::url()` parses with the `url` crate, whose host
        // and IDNA tables were a third of the gzipped WASM (P6).
        let url = request.inner().url();
        Some(http::query_fields(query_of(&url))?)
    } else {
        None
    };
    let command = Command::parse(operation, param, body)?;
    run(env, ctx, command).await
}

/// The query of a request's URL: after the first `?`, before any `#`.
fn query_of(url: &str) -> &str {
    let Some((_, rest)) = url.split_once('?') else {
        return "";
    };
    rest.split_once('#').map_or(rest, |(query, _)| query)
}

/// `BATON_TOKEN`. In workers-rs a secret (`wrangler secret put`) and a
/// plain variable (`[vars]`, `.dev.vars` for local development) are the
/// same string binding (`Secret` is `Var`), so one lookup reads either.
fn configured_token(env: &Env) -> Option<String> {
    env.secret("BATON_TOKEN")
        .ok()
        .map(|token| token.to_string())
}

/// Runs a parsed command through the method an RPC caller would use; the
/// reply as JSON text.
async fn run(env: &Env, ctx: Context, command: Command) -> Result<String, HttpError> {
    match command {
        Command::Coordinator(call) => {
            let is_acquire = matches!(call, CoordinatorCall::Acquire(_));
            let reply = stub::call(env, &call).await.map_err(stub_error)?;
            if is_acquire && reply.is_string() {
                // Every HTTP reply is an object: `acquire`'s string (the
                // object's encoding of its outcome) becomes `{ status }`
                // as it is, encoded once, not read back into a type (with
                // `grant` it is an object already).
                return Ok(format!("{{\"status\":{}}}", stringify(&reply)?));
            }
            stringify(&reply)
        }
        Command::Rate(call) => {
            let reply = stub::call(env, &call).await.map_err(stub_error)?;
            stringify(&reply)
        }
        Command::Debounce(call) => {
            let reply = stub::call(env, &call).await.map_err(stub_error)?;
            stringify(&reply)
        }
        Command::Serial(call) => {
            let shell = Rc::new(Shell::new(env.clone(), ctx));
            let reply = service::serial(&shell, call).await.map_err(thrown)?;
            stringify(&reply)
        }
        Command::List(call) => {
            let reply = busy_service::call(env, call).await.map_err(stub_error)?;
            stringify(&reply)
        }
        Command::Run(call) => {
            let reply = stub::call(env, &call).await.map_err(stub_error)?;
            stringify(&reply)
        }
    }
}

/// Whatever a method threw: its refusals are the caller's fault (400, the
/// same message), anything else is Baton's (500).
fn thrown(error: JsValue) -> HttpError {
    match Thrown::of(&error) {
        Thrown::Refused(message) => HttpError::Rejected(message),
        Thrown::Failed(message) => HttpError::Internal(message),
    }
}

fn json_response(status: u16, body: String) -> worker::Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json; charset=utf-8")?;
    // Replies are live state; no cache may keep them.
    headers.set("cache-control", "no-store")?;
    Ok(Response::builder()
        .with_status(status)
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

/// `{ "error": message }` with the refusal's status and headers. Baton's
/// own failures are also logged (the message only: never a token or body).
fn error_response(error: &HttpError) -> worker::Result<Response> {
    if let HttpError::Internal(message) = error {
        worker::console_error!("baton: HTTP API failed: {message}");
    }
    let body = serde_json::to_string(&error.reply()).expect("a string always serializes");
    let mut response = json_response(error.status(), body)?;
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

/// One static file, from build/assets.js (`shell::entry` says why there).
fn asset_response(assets: &JsValue, asset: Asset) -> worker::Result<Response> {
    let (file, content_type) = match asset {
        Asset::StatusPage => ("index.html", "text/html; charset=utf-8"),
        Asset::StatusScript => ("app.js", "text/javascript; charset=utf-8"),
        Asset::StatusStyle => ("style.css", "text/css; charset=utf-8"),
        Asset::OpenApi => ("openapi.json", "application/json; charset=utf-8"),
    };
    let Some(body) = js_sys::Reflect::get(assets, &JsValue::from_str(file))
        .ok()
        .and_then(|body| body.as_string())
    else {
        // A build without scripts/assets.mjs's module; say which file.
        return error_response(&internal(format_args!(
            "static/{file} is missing from build/assets.js"
        )));
    };
    let headers = Headers::new();
    headers.set("content-type", content_type)?;
    headers.set("x-content-type-options", "nosniff")?;
    Ok(Response::builder()
        .with_headers(headers)
        .fixed(body.into_bytes()))
}

/// A stub call's failure as the API answers it: a refusal is the caller's
/// bad input (400), anything else is Baton's.
fn stub_error(error: CallError) -> HttpError {
    match error {
        CallError::Refused(error) => HttpError::BadInput(error),
        CallError::Thrown(error) => thrown(error),
    }
}

/// An object's reply, already a JS value, as the JSON body.
fn stringify(reply: &JsValue) -> Result<String, HttpError> {
    js_sys::JSON::stringify(reply)
        .map(String::from)
        .map_err(thrown)
}
