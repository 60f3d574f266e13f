//! HTTP plumbing: response bodies (whole or streamed) and JSON answers.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::{
    Response, StatusCode,
    body::Frame,
    header::{CONTENT_TYPE, HeaderValue},
};
use kube_core::Status;
use serde::Serialize;

/// Every response body: a whole JSON document or a watch stream.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// An HTTP response.
pub type Reply = Response<Body>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A body streamed from `rx`: each message is sent as it arrives; the body ends when every
/// sender is gone.
pub fn streamed(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (Ok::<_, Infallible>(Frame::data(chunk)), rx))
    });
    StreamBody::new(stream).boxed_unsync()
}

/// `value` as JSON with `code`.
pub fn json(code: u16, value: &impl Serialize) -> Reply {
    match serde_json::to_vec(value) {
        Ok(bytes) => with_type(code, full(bytes), "application/json"),
        Err(e) => status(&model_apiserver::errors::internal_error(&format!("encoding the answer: {e}"))),
    }
}

/// A body with a status code and content type.
pub fn with_type(code: u16, body: Body, content_type: &'static str) -> Reply {
    let mut reply = Response::new(body);
    *reply.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    reply.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    reply
}

/// A `Status` as kube-apiserver writes it: with `kind` and `apiVersion`, its code as the HTTP
/// status, and a `Retry-After` header when its details suggest a delay (an eviction whose
/// budget is still being processed: client-go waits and retries on it).
pub fn status(s: &Status) -> Reply {
    let code = if s.code == 0 { 500 } else { s.code };
    let mut reply = json(code, &status_json(s));
    let retry_after = s.details.as_ref().map_or(0, |d| d.retry_after_seconds);
    if retry_after > 0 {
        reply.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from(retry_after));
    }
    reply
}

/// The JSON of a `Status` object (kube-core's type leaves out `kind` and `apiVersion`).
pub fn status_json(s: &Status) -> serde_json::Value {
    let mut value = serde_json::to_value(s).unwrap_or_else(|_| serde_json::json!({}));
    if let serde_json::Value::Object(m) = &mut value {
        m.insert("kind".to_owned(), "Status".into());
        m.insert("apiVersion".to_owned(), "v1".into());
        m.entry("metadata").or_insert_with(|| serde_json::json!({}));
    }
    value
}
