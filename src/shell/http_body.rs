//! Reading a request's body for the HTTP API, and discarding what is left
//! of a refused one before the answer goes (`limits::HTTP_BODY_DRAIN_BYTES_MAX`
//! says why): every refusal, the unrouted ones included.

use crate::edge::http::{self, HttpError};
use futures_util::StreamExt;
use worker::Request;

/// The body, read chunk by chunk; past the limit the rest is read and
/// discarded (up to `http::drain_bytes_max`) and the request refused,
/// whatever the `Content-Length` claimed.
pub async fn read_body(request: &mut Request, bytes_max: usize) -> Result<Vec<u8>, HttpError> {
    if request.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = request.stream().map_err(internal)?;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(internal)?;
        if let Err(refused) = http::check_body_length(body.len() + chunk.len(), bytes_max) {
            discard(&mut stream, body.len() + chunk.len(), bytes_max).await;
            return Err(refused);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Before a refusal's answer: reads and discards the body if nothing has
/// read it yet, unless its declared length is past the drain bound
/// (`http::worth_draining`). `bytes_max` is the refused operation's limit
/// (the API's own for a path no route matches).
pub async fn drain_unread(request: &mut Request, bytes_max: usize) {
    let inner = request.inner();
    if inner.body().is_none() || inner.body_used() {
        return;
    }
    let content_length = request.headers().get("content-length").ok().flatten();
    if !http::worth_draining(content_length.as_deref(), bytes_max) {
        return;
    }
    if let Ok(mut stream) = request.stream() {
        discard(&mut stream, 0, bytes_max).await;
    }
}

/// Reads what is left of a refused body, so that the client has finished
/// writing when its answer comes; `read` bytes are already read,
/// `bytes_max` is the operation's limit. Stops at the bound or on a read
/// error: the answer is the refusal either way.
async fn discard(stream: &mut worker::ByteStream, mut read: usize, bytes_max: usize) {
    while read <= http::drain_bytes_max(bytes_max) {
        match stream.next().await {
            Some(Ok(chunk)) => read += chunk.len(),
            Some(Err(_)) | None => return,
        }
    }
}

pub fn internal(error: impl std::fmt::Display) -> HttpError {
    HttpError::Internal(format!("Baton: {error}"))
}
