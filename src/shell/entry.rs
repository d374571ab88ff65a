//! The Worker's fetch handler: the HTTP API, the status page and the
//! OpenAPI document, all in `shell::http`.
//!
//! A class JS constructs (`new HttpApi(env, assets)` in js/worker.mjs)
//! rather than workers-rs's `#[event(fetch)]`, because the static files
//! (static/) come from JS: `assets` is build/assets.js, which
//! scripts/assets.mjs writes from static/ at build time. Compiled into the
//! WASM they were 8% of its gzipped size (21 KB), and the module's size is
//! what cold starts and the upload limit pay for (docs/benchmarks.md, P6); as a
//! JS module they cost the same bytes, outside the WASM.

use super::js::promise;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use worker::worker_sys::web_sys;
use worker::{Context, Env, Request, Response};

/// The Rust half of the Worker's `fetch` (and of `handleFetch`, for an
/// embedding Worker).
#[wasm_bindgen]
pub struct HttpApi {
    env: Env,
    /// The request's context: work after a reply (the serial release's
    /// status check) runs in its `waitUntil`.
    ctx: worker::worker_sys::Context,
    assets: JsValue,
}

#[wasm_bindgen]
impl HttpApi {
    /// `assets`: build/assets.js's default export, each file of static/ by
    /// its name.
    #[wasm_bindgen(constructor)]
    pub fn new(env: Env, ctx: worker::worker_sys::Context, assets: JsValue) -> HttpApi {
        console_error_panic_hook::set_once();
        super::decision_log::configure(&env);
        HttpApi { env, ctx, assets }
    }

    /// Answers one request; never rejects.
    pub fn fetch(&self, request: web_sys::Request) -> Promise {
        let env = self.env.clone();
        let ctx = Context::new(self.ctx.clone().unchecked_into());
        let assets = self.assets.clone();
        promise(async move {
            let request = Request::from(request);
            let response = match super::http::handle(request, env, ctx, &assets).await {
                Ok(response) => response,
                // Only building a response can fail here (a header the
                // runtime refuses), as under `#[event(fetch)]`: a bare 500.
                Err(error) => {
                    worker::console_error!("baton: HTTP API failed: {error}");
                    Response::error("Baton: internal error", 500)?
                }
            };
            Ok(web_sys::Response::from(response).into())
        })
    }
}
