//! The Worker's fetch handler: the HTTP API, the status page and the
//! OpenAPI document, all in `shell::http`.

use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(request: Request, env: Env, ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    super::http::handle(request, env, ctx).await
}
