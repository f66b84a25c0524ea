//! The admin listener: `/healthz`, `/readyz`, `/metrics`, one match on the path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode, header};
use http_body_util::Full;

use crate::outcome::Body;
use crate::state::State;

/// `/readyz` fails rather than wait longer than this for the store.
const READY_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Readiness beyond the store: false once shutdown began, so the load
/// balancer stops sending while in-flight requests drain.
#[derive(Debug, Default)]
pub struct Readiness {
    draining: AtomicBool,
}

impl Readiness {
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

pub async fn handle(
    state: &Arc<State>,
    readiness: &Readiness,
    method: &Method,
    path: &str,
) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    match path {
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" => {
            if readiness.is_draining() {
                return text(StatusCode::SERVICE_UNAVAILABLE, "draining\n");
            }
            match tokio::time::timeout(READY_PING_TIMEOUT, state.store.ping()).await {
                Ok(Ok(())) => text(StatusCode::OK, "ready\n"),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "readiness: store ping failed");
                    text(StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n")
                }
                Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n"),
            }
        }
        "/metrics" => {
            let mut response = text(StatusCode::OK, &state.metrics.encode());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            response
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
