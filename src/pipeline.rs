//! The request pipeline, in the order DESIGN §3 fixes:
//!
//! route → read raw body → verify signature → check timestamp → parse →
//! filter → nonce → forward → commit or release.
//!
//! Everything after the body is read works on plain values, so the whole
//! pipeline runs without a socket in tests. Each request ends in exactly one
//! [`Outcome`], logged once and counted once.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use sha2::{Digest, Sha256};

use crate::config::{Source, Unmatched};
use crate::forward::{self, Stamp};
use crate::outcome::{Body, Outcome};
use crate::scheme::Verified;
use crate::state::{Runtime, State};
use crate::store::Claim;

/// How much longer than `upstream_timeout` a nonce lease lives, so the lease
/// outlasts the request holding it but a crashed replica blocks an event briefly.
const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Event ids longer than this (or holding control characters) are stored and
/// stamped as their SHA-256, so a hostile id can't make huge or odd keys.
const MAX_EVENT_ID_LEN: usize = 256;

/// Handles one request from a sender. `peer` is the client's address, added
/// to `X-Forwarded-For`.
pub async fn handle<B>(
    state: &Arc<State>,
    request: Request<B>,
    peer: Option<IpAddr>,
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let runtime = state.runtime();
    let (mut parts, body) = request.into_parts();
    forward::strip_verified(&mut parts.headers);

    let Some(index) = runtime.router.route(parts.uri.path()) else {
        return unmatched(state, &runtime, parts, body, peer).await;
    };
    let source = &runtime.config.sources[index];

    if parts.method != Method::POST {
        // A provider's endpoint check (Dropbox/Nylas GET challenge, Okta,
        // X CRC, Trello HEAD) is answered here; anything else is refused.
        let reply =
            source
                .scheme
                .handshake_before(&source.keys, &parts.method, &parts.uri, &parts.headers);
        if let Some(reply) = reply {
            let response = reply.into_response();
            return finish(state, source, None, Outcome::Handshake, Some(response));
        }
        return finish(state, source, None, Outcome::MethodNotAllowed, None);
    }
    let body = match read_body(body, &parts.headers, runtime.config.server.max_body_bytes).await {
        Ok(body) => body,
        Err(outcome) => return finish(state, source, None, outcome, None),
    };

    let verified = match source.scheme.verify(
        &source.keys,
        source.tolerance,
        &parts.headers,
        &body,
        unix_now(),
    ) {
        Ok(verified) => verified,
        Err(e) => {
            tracing::debug!(source = %source.name, reason = %e, "verification failed");
            return finish(state, source, None, Outcome::from(&e), None);
        }
    };
    state
        .metrics
        .signature_match(&source.name, verified.secret_index);

    // A verified endpoint check (Slack url_verification, Zoom url_validation,
    // Twitch callback verification, Discord PING) is answered by hookgate.
    if let Some(reply) =
        source
            .scheme
            .handshake_after(&source.keys, &verified, &parts.headers, &body)
    {
        let response = reply.into_response();
        return finish(
            state,
            source,
            Some(&verified),
            Outcome::Handshake,
            Some(response),
        );
    }

    if !source.accepts_type(verified.event_type.as_deref()) {
        return finish(state, source, Some(&verified), Outcome::Ignored, None);
    }

    // From here on the event is claimed: run the rest to completion in its own
    // task, so a sender hanging up can't leave a 2xx uncommitted or a lease held.
    let task = {
        let state = Arc::clone(state);
        let runtime = Arc::clone(&runtime);
        tokio::spawn(
            async move { deliver(&state, &runtime, index, parts, body, verified, peer).await },
        )
    };
    match task.await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(source = %source.name, error = %e, "delivery task failed");
            Outcome::UpstreamUnavailable.response()
        }
    }
}

/// Nonce → forward → commit or release.
async fn deliver(
    state: &State,
    runtime: &Runtime,
    index: usize,
    parts: http::request::Parts,
    body: Bytes,
    verified: Verified,
    peer: Option<IpAddr>,
) -> Response<Body> {
    let source = &runtime.config.sources[index];
    let server = &runtime.config.server;
    let event_id = key_safe_id(&verified.event_id);
    let key = nonce_key(&runtime.config.store.key_prefix, &source.name, &event_id);
    let token = format!("{:032x}", rand::random::<u128>());
    let lease = server.upstream_timeout.saturating_add(LEASE_MARGIN);

    match state.store.claim(&key, &token, lease).await {
        Ok(Claim::Fresh) => {}
        Ok(Claim::Done) => {
            let outcome = Outcome::Duplicate {
                event_id: event_id.into_owned(),
            };
            return finish(state, source, Some(&verified), outcome, None);
        }
        Ok(Claim::InFlight) => {
            return finish(state, source, Some(&verified), Outcome::InFlight, None);
        }
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "nonce claim failed");
            return finish(
                state,
                source,
                Some(&verified),
                Outcome::StoreUnavailable,
                None,
            );
        }
    }

    let stamp = Stamp {
        event_id: &event_id,
        source: &source.name,
        event_type: verified.event_type.as_deref(),
    };
    let started = std::time::Instant::now();
    let sent = state
        .forwarder
        .send(
            &server.upstream,
            server.upstream_timeout,
            &parts,
            body,
            peer,
            Some(stamp),
        )
        .await;
    let elapsed = started.elapsed().as_secs_f64();

    match sent {
        Ok(response) if response.status().is_success() => {
            state
                .metrics
                .upstream_response(&source.name, "2xx", elapsed);
            if let Err(e) = state
                .store
                .commit(&key, &token, runtime.config.store.nonce_ttl)
                .await
            {
                // The app took the event: its 2xx stands. The lease expiring
                // is the worst case, and then a retry is forwarded again.
                state.metrics.store_errors.inc();
                tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "nonce commit failed");
            }
            if let Some(ts) = verified.timestamp {
                state
                    .metrics
                    .completion(&source.name, unix_now_f64() - ts as f64);
            }
            finish(
                state,
                source,
                Some(&verified),
                Outcome::Forwarded,
                Some(response),
            )
        }
        Ok(response) => {
            let class = if response.status().is_client_error() {
                "4xx"
            } else {
                "5xx"
            };
            state
                .metrics
                .upstream_response(&source.name, class, elapsed);
            release(state, source, &key, &token, &event_id).await;
            finish(
                state,
                source,
                Some(&verified),
                Outcome::Forwarded,
                Some(response),
            )
        }
        Err(e) => {
            state
                .metrics
                .upstream_response(&source.name, "error", elapsed);
            tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "forward failed");
            release(state, source, &key, &token, &event_id).await;
            let outcome = match e {
                forward::Error::Timeout(_) => Outcome::UpstreamTimeout,
                forward::Error::Unavailable(_) => Outcome::UpstreamUnavailable,
            };
            finish(state, source, Some(&verified), outcome, None)
        }
    }
}

/// Lets the sender's retry through. A failed release only delays that retry
/// until the lease expires.
async fn release(state: &State, source: &Source, key: &str, token: &str, event_id: &str) {
    if let Err(e) = state.store.release(key, token).await {
        state.metrics.store_errors.inc();
        tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "nonce release failed");
    }
}

/// A path no source serves: refused, or proxied unchanged without verification.
async fn unmatched<B>(
    state: &State,
    runtime: &Runtime,
    parts: http::request::Parts,
    body: B,
    peer: Option<IpAddr>,
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let server = &runtime.config.server;
    let outcome = match server.unmatched {
        Unmatched::Reject => Outcome::UnknownSource,
        Unmatched::Forward => match read_body(body, &parts.headers, server.max_body_bytes).await {
            Err(outcome) => outcome,
            Ok(body) => {
                let sent = state
                    .forwarder
                    .send(
                        &server.upstream,
                        server.upstream_timeout,
                        &parts,
                        body,
                        peer,
                        None,
                    )
                    .await;
                match sent {
                    Ok(response) => {
                        log_unmatched(state, &parts, &Outcome::Unmatched);
                        return response;
                    }
                    Err(forward::Error::Timeout(_)) => Outcome::UpstreamTimeout,
                    Err(forward::Error::Unavailable(_)) => Outcome::UpstreamUnavailable,
                }
            }
        },
    };
    log_unmatched(state, &parts, &outcome);
    outcome.response()
}

fn log_unmatched(state: &State, parts: &http::request::Parts, outcome: &Outcome) {
    state.metrics.request("", outcome.code());
    tracing::info!(
        path = %parts.uri.path(),
        outcome = outcome.code(),
        status = outcome.status().as_u16(),
        "request"
    );
}

/// Counts and logs the end of a request, and gives its response: the app's
/// when it answered, hookgate's own otherwise.
fn finish(
    state: &State,
    source: &Source,
    verified: Option<&Verified>,
    outcome: Outcome,
    app_response: Option<Response<Body>>,
) -> Response<Body> {
    let response = app_response.unwrap_or_else(|| outcome.response());
    state.metrics.request(&source.name, outcome.code());
    tracing::info!(
        source = %source.name,
        event_id = verified.map(|v| v.event_id.as_str()),
        event_type = verified.and_then(|v| v.event_type.as_deref()),
        outcome = outcome.code(),
        status = response.status().as_u16(),
        "request"
    );
    response
}

/// Reads the whole body, refusing more than `max` bytes without buffering the
/// excess (a declared `Content-Length` over the limit is refused before reading).
async fn read_body<B>(body: B, headers: &http::HeaderMap, max: usize) -> Result<Bytes, Outcome>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(Outcome::BodyTooLarge);
    }
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Outcome::BodyTooLarge),
        Err(e) => {
            tracing::debug!(error = %e, "reading the request body failed");
            Err(Outcome::BadRequest)
        }
    }
}

/// `{prefix}:nonce:{source}:{event_id}` (DESIGN §4).
pub fn nonce_key(prefix: &str, source: &str, event_id: &str) -> String {
    format!("{prefix}:nonce:{source}:{event_id}")
}

/// The event id as stored and stamped: itself when short and printable, its
/// SHA-256 (`sha256:<hex>`) otherwise.
pub fn key_safe_id(id: &str) -> Cow<'_, str> {
    if id.len() <= MAX_EVENT_ID_LEN && !id.chars().any(char::is_control) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(id.as_bytes()))
        ))
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn unix_now_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_become_bounded_keys() {
        assert_eq!(key_safe_id("evt_123"), "evt_123");
        assert_eq!(key_safe_id("a:b*c"), "a:b*c");
        let long = "x".repeat(10_000);
        let safe = key_safe_id(&long);
        assert!(safe.starts_with("sha256:") && safe.len() == 7 + 64);
        assert!(key_safe_id("a\nb").starts_with("sha256:"));
        assert!(key_safe_id("a\0b").starts_with("sha256:"));
        assert_ne!(key_safe_id("a\nb"), key_safe_id("a\nc"));
    }

    #[test]
    fn nonce_key_layout() {
        assert_eq!(
            nonce_key("hookgate", "stripe", "evt_1"),
            "hookgate:nonce:stripe:evt_1"
        );
    }
}
