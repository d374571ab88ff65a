//! The Worker's fetch handler. The HTTP API is not built yet; this answers
//! so that a deployment can be probed, and says where the API is.

use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(request: Request, _env: Env, _ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    if request.path() == "/" {
        return Response::from_json(&serde_json::json!({
            "service": "baton",
            "rpc": ["COORDINATOR Durable Object: enqueue, acquire, release, inspect"],
        }));
    }
    Response::error("Not found", 404)
}
