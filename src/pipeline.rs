//! The request pipeline, in the order DESIGN §3 fixes:
//!
//! route → read raw body → verify signature → check timestamp → parse →
//! filter → nonce → version gate → forward or enqueue → commit or release.
//!
//! A forward failure (5xx, unreachable, too slow) is also counted per event
//! id; the third in a row copies the event to the dead-letter stream
//! ([`crate::dlq`]).
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

use crate::config::{Delivery, OnStoreError, Source, Unmatched, Verification};
use crate::dlq;
use crate::forward::{self, Mark, Stamp};
use crate::ordering::{Check, Gate};
use crate::outcome::{Body, Outcome};
use crate::queue::{self, Envelope, Received};
use crate::scheme::{Error, Verified};
use crate::state::{Runtime, State};
use crate::store::Claim;

mod detach;
use detach::{Detachable, Panicked};

/// How much longer than `upstream_timeout` a nonce lease lives, so the lease
/// outlasts the request holding it but a crashed replica blocks an event briefly.
const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Event ids longer than this (or holding control characters) are stored and
/// stamped as their SHA-256, so a hostile id can't make huge or odd keys.
const MAX_EVENT_ID_LEN: usize = 256;

/// A commit that fails (Redis died just after the app's 2xx) is tried again
/// in the background for this long, every [`COMMIT_RETRY_EVERY`], so that a
/// Redis back within a minute still records the event and keeps its
/// retries out. Only requests in flight when Redis failed start one.
const COMMIT_RETRY_FOR: Duration = Duration::from_secs(60);
const COMMIT_RETRY_EVERY: Duration = Duration::from_millis(500);

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
    let server = &runtime.config.server;
    forward::strip_spoofable(&mut parts.headers, server.underscores_in_headers);
    if let Err(e) = crate::route::origin_form(&mut parts) {
        tracing::debug!(reason = %e, "request target refused");
        log_unmatched(state, &parts, &Outcome::BadRequest);
        return Outcome::BadRequest.response();
    }

    let Some(index) = runtime.router.route(parts.uri.path()) else {
        // Boxed: its forward would otherwise size every request's future,
        // which hyper keeps allocated for each open connection.
        return Box::pin(unmatched(state, &runtime, parts, body, peer)).await;
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
    let body = match read_body(
        body,
        &parts.headers,
        server.max_body_bytes,
        server.request_read_timeout,
    )
    .await
    {
        Ok(body) => body,
        Err(outcome) => return finish(state, source, None, outcome, None),
    };

    // Schemes whose key comes from the provider (SNS, PayPal, Google) fetch
    // it first; every other scheme verifies as it always did.
    let verified = match source
        .scheme
        .verify_fetching(
            &state.keys,
            &source.name,
            &source.keys,
            source.tolerance,
            &parts.headers,
            &body,
            unix_now(),
        )
        .await
    {
        Ok(verified) => verified,
        Err(e) => {
            tracing::debug!(source = %source.name, reason = %e, "verification failed");
            let outcome = Outcome::from(&e);
            if source.verification == Verification::Observe && !matches!(e, Error::MalformedBody(_))
            {
                return observe(state, server, source, &parts, body, peer, outcome).await;
            }
            return finish(state, source, None, outcome, None);
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

    // From here on the event is claimed: the rest runs to completion even if
    // the sender hangs up, so no 2xx is left uncommitted and no lease held.
    let delivery = {
        let state = Arc::clone(state);
        let runtime = Arc::clone(&runtime);
        Detachable::new(async move {
            deliver(&state, &runtime, index, parts, body, verified, peer).await
        })
    };
    match delivery.await {
        Ok(response) => response,
        Err(Panicked) => {
            tracing::error!(source = %source.name, "delivery panicked");
            Outcome::UpstreamUnavailable.response()
        }
    }
}

/// Nonce → version gate → forward or enqueue → commit or release.
async fn deliver(
    state: &Arc<State>,
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
    // An id the signature does not cover names the event but cannot tell
    // copies apart: the same signed bytes under a fresh id are the same event.
    let body_digest;
    let nonce_id: &str = if source.scheme.signs_event_id() {
        &event_id
    } else {
        body_digest = hex::encode(Sha256::digest(&body));
        &body_digest
    };
    let key = nonce_key(&runtime.config.store.key_prefix, &source.name, nonce_id);
    let token = crate::store::lease_token();
    let lease = server.upstream_timeout.saturating_add(LEASE_MARGIN);
    let ev = Event {
        source,
        verified: &verified,
        event_id: &event_id,
        nonce_id,
        nonce: &key,
        token: &token,
    };

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
            if source.on_store_error == OnStoreError::ForwardUnchecked {
                let stamp = stamp(source, &event_id, &verified);
                return forward_unchecked(
                    state, runtime, source, &parts, body, &verified, stamp, peer,
                )
                .await;
            }
            return finish(
                state,
                source,
                Some(&verified),
                Outcome::StoreUnavailable,
                None,
            );
        }
    }

    // The version gate: the body is read for it only when the source has one.
    let gate = match &source.ordering {
        None => None,
        Some(ordering) => match Gate::read(ordering, &body) {
            Ok(gate) => Some(gate),
            Err(e) => {
                tracing::debug!(source = %source.name, event_id = %event_id, reason = %e, "no resource version in a verified body");
                release(state, source, &key, &token, &event_id).await;
                return finish(state, source, Some(&verified), Outcome::MalformedBody, None);
            }
        },
    };
    let lock = match &gate {
        None => None,
        Some(gate) => match pass_gate(state, runtime, &ev, gate, lease).await {
            Ok(lock) => lock,
            Err(outcome) => return finish(state, source, Some(&verified), outcome, None),
        },
    };

    if source.delivery == Delivery::Queue {
        let outcome = enqueue(state, runtime, &ev, &parts, body, peer, gate.as_ref()).await;
        return finish(state, source, Some(&verified), outcome, None);
    }

    let stamp = stamp(source, &event_id, &verified);
    let started = std::time::Instant::now();
    let sent = state
        .forwarder
        .send(server, &parts, body.clone(), peer, Mark::Verified(stamp))
        .await;
    let elapsed = started.elapsed().as_secs_f64();

    let failure = match sent {
        Ok(response) if response.status().is_success() => {
            state
                .metrics
                .upstream_response(&source.name, "2xx", elapsed);
            if let Some(gate) = &gate
                && let Err(e) = gate
                    .advance(&state.store, &runtime.config.store.key_prefix, &source.name)
                    .await
            {
                // The app has the event; only an older one could slip through later.
                state.metrics.store_errors.inc();
                tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "version advance failed");
            }
            unlock(state, source, lock, &event_id).await;
            let ttl = runtime.config.store.nonce_ttl;
            if let Err(e) = state.store.commit(&key, ttl).await {
                // The app took the event: its 2xx stands. The commit is tried
                // again in the background; if Redis stays away longer than
                // that, a retry after the lease expires is forwarded again.
                state.metrics.store_errors.inc();
                tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "nonce commit failed; retrying in the background");
                retry_commit(state, key.clone(), ttl, source.name.clone());
            }
            if let Some(ts) = verified.timestamp {
                state
                    .metrics
                    .completion(&source.name, unix_now_f64() - ts as f64);
            }
            return finish(
                state,
                source,
                Some(&verified),
                Outcome::Forwarded,
                Some(response),
            );
        }
        Ok(response) => {
            let status = response.status();
            let class = if status.is_client_error() {
                "4xx"
            } else {
                "5xx"
            };
            state
                .metrics
                .upstream_response(&source.name, class, elapsed);
            unlock(state, source, lock, &event_id).await;
            release(state, source, &key, &token, &event_id).await;
            let response = finish(
                state,
                source,
                Some(&verified),
                Outcome::Forwarded,
                Some(response),
            );
            if !status.is_server_error() {
                return response;
            }
            (response, format!("app answered {status}"))
        }
        Err(e) => {
            state
                .metrics
                .upstream_response(&source.name, "error", elapsed);
            tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "forward failed");
            unlock(state, source, lock, &event_id).await;
            release(state, source, &key, &token, &event_id).await;
            let outcome = Outcome::from(&e);
            let response = finish(state, source, Some(&verified), outcome, None);
            (response, e.to_string())
        }
    };
    let (response, error) = failure;
    let received = Received {
        source,
        event_id: &event_id,
        nonce_id,
        event_type: verified.event_type.as_deref(),
        signed_at: verified.timestamp,
        peer,
        gate: gate.as_ref(),
    };
    count_failure(state, runtime, Envelope::new(&parts, body, received), error).await;
    response
}

/// What hookgate vouches for about a verified event: its id, its source, and
/// its type only when the signature covers it.
fn stamp<'a>(source: &'a Source, event_id: &'a str, verified: &'a Verified) -> Stamp<'a> {
    Stamp {
        event_id,
        source: &source.name,
        event_type: verified
            .event_type
            .as_deref()
            .filter(|_| source.scheme.signs_event_type()),
    }
}

/// What the steps after the claim share about the event.
struct Event<'a> {
    source: &'a Source,
    verified: &'a Verified,
    event_id: &'a str,
    /// What the nonce is keyed by (the event id, or the body's digest where
    /// the id is unsigned), the nonce key, and this request's token in it.
    nonce_id: &'a str,
    nonce: &'a str,
    token: &'a str,
}

/// The version gate (DESIGN §5). Returns the resource lease to hold until
/// the app answered (forward mode), or the outcome that ends the request. A
/// stale or equal version settles the event: its nonce is committed, so a
/// sender retry is a cheap duplicate that needs no version read.
async fn pass_gate(
    state: &State,
    runtime: &Runtime,
    ev: &Event<'_>,
    gate: &Gate,
    lease: Duration,
) -> Result<Option<(String, String)>, Outcome> {
    let source = ev.source;
    let prefix = &runtime.config.store.key_prefix;
    // Queue workers take the resource lease themselves, at delivery time.
    let lock = if source.delivery == Delivery::Forward {
        let key = gate.lock_key(prefix, &source.name);
        match state.store.claim(&key, ev.token, lease).await {
            Ok(Claim::Fresh) => Some((key, ev.token.to_owned())),
            Ok(_) => {
                release(state, source, ev.nonce, ev.token, ev.event_id).await;
                return Err(Outcome::InFlight);
            }
            Err(e) => {
                state.metrics.store_errors.inc();
                tracing::warn!(source = %source.name, event_id = %ev.event_id, error = %e, "version lock failed");
                release(state, source, ev.nonce, ev.token, ev.event_id).await;
                return Err(Outcome::StoreUnavailable);
            }
        }
    } else {
        None
    };
    let settled = match gate.check(&state.store, prefix, &source.name).await {
        Ok(Check::Newer) => return Ok(lock),
        Ok(Check::Stale) => Outcome::StaleVersion,
        Ok(Check::Equal) => Outcome::Duplicate {
            event_id: ev.event_id.to_owned(),
        },
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %source.name, event_id = %ev.event_id, error = %e, "version check failed");
            unlock(state, source, lock, ev.event_id).await;
            release(state, source, ev.nonce, ev.token, ev.event_id).await;
            return Err(Outcome::StoreUnavailable);
        }
    };
    unlock(state, source, lock, ev.event_id).await;
    if let Err(e) = state
        .store
        .commit(ev.nonce, runtime.config.store.nonce_ttl)
        .await
    {
        state.metrics.store_errors.inc();
        tracing::warn!(source = %source.name, event_id = %ev.event_id, error = %e, "nonce commit failed");
    }
    Err(settled)
}

/// Queue delivery: the raw request goes to the source's stream, the nonce is
/// committed, and only then is the sender answered 200.
async fn enqueue(
    state: &State,
    runtime: &Runtime,
    ev: &Event<'_>,
    parts: &http::request::Parts,
    body: Bytes,
    peer: Option<IpAddr>,
    gate: Option<&Gate>,
) -> Outcome {
    let source = ev.source;
    let Some(redis) = state.store.as_redis() else {
        // Config validation refuses queue delivery on the memory store.
        release(state, source, ev.nonce, ev.token, ev.event_id).await;
        return Outcome::StoreUnavailable;
    };
    let received = Received {
        source,
        event_id: ev.event_id,
        nonce_id: ev.nonce_id,
        event_type: ev.verified.event_type.as_deref(),
        signed_at: ev.verified.timestamp,
        peer,
        gate,
    };
    let envelope = Envelope::new(parts, body, received);
    if let Err(e) = queue::enqueue(redis, &runtime.config.store.key_prefix, &envelope).await {
        state.metrics.store_errors.inc();
        tracing::warn!(source = %source.name, event_id = %ev.event_id, error = %e, "enqueue failed");
        release(state, source, ev.nonce, ev.token, ev.event_id).await;
        return Outcome::StoreUnavailable;
    }
    if let Err(e) = state
        .store
        .commit(ev.nonce, runtime.config.store.nonce_ttl)
        .await
    {
        // The event is queued and will be delivered; only a sender retry
        // after the lease could queue it a second time.
        state.metrics.store_errors.inc();
        tracing::warn!(source = %source.name, event_id = %ev.event_id, error = %e, "nonce commit failed");
    }
    Outcome::Queued {
        event_id: ev.event_id.to_owned(),
    }
}

/// Counts a forward failure (5xx, unreachable, too slow) of one event id; the
/// [`dlq::FORWARD_FAILURES`]th in a row copies it to the dead-letter stream.
async fn count_failure(state: &State, runtime: &Runtime, mut envelope: Envelope, error: String) {
    let Some(redis) = state.store.as_redis() else {
        return;
    };
    let prefix = &runtime.config.store.key_prefix;
    let key = dlq::fail_key(prefix, &envelope.source, &envelope.event_id);
    let count = match dlq::record_failure(redis, &key, runtime.config.store.nonce_ttl).await {
        Ok(count) => count,
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, error = %e, "failure count not recorded");
            return;
        }
    };
    if count != dlq::FORWARD_FAILURES {
        return;
    }
    envelope.attempts = u32::try_from(count).unwrap_or(u32::MAX);
    envelope.last_error = Some(error);
    envelope.last_attempt_ms = Some(queue::now_ms());
    envelope.dead_ms = envelope.last_attempt_ms;
    match dlq::add(redis, prefix, &envelope).await {
        Ok(id) => {
            state.metrics.dead_letter(&envelope.source);
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), dlq_id = %id, attempts = count, "the app failed this event {count} times in a row; copied to the dead-letter stream");
        }
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, error = %e, "dead letter not written");
        }
    }
}

/// Gives up a resource lease taken by the version gate.
async fn unlock(state: &State, source: &Source, lock: Option<(String, String)>, event_id: &str) {
    if let Some((key, token)) = lock
        && let Err(e) = state.store.release(&key, &token).await
    {
        state.metrics.store_errors.inc();
        tracing::warn!(source = %source.name, event_id = %event_id, error = %e, "version lock release failed; it expires with its lease");
    }
}

/// Retries a failed commit until it lands or [`COMMIT_RETRY_FOR`] passes.
/// Safe at any time: the app accepted the event, so `done` is true whoever
/// holds the key by then (see [`crate::store::Store::commit`]).
fn retry_commit(state: &Arc<State>, key: String, ttl: Duration, source: String) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + COMMIT_RETRY_FOR;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(COMMIT_RETRY_EVERY).await;
            match state.store.commit(&key, ttl).await {
                Ok(()) => {
                    tracing::info!(source = %source, "nonce committed on retry");
                    return;
                }
                Err(_) => {
                    state.metrics.store_errors.inc();
                }
            }
        }
        tracing::warn!(source = %source, "nonce commit given up: a retry may be forwarded again");
    });
}

/// Observe mode (DESIGN §3): a request that failed verification goes to the
/// app anyway, without a stamp, marked `X-Hookgate-Unverified: <word>`, and
/// is counted and logged under `outcome`'s word. Nothing is stored for it.
async fn observe(
    state: &State,
    server: &crate::config::Server,
    source: &Source,
    parts: &http::request::Parts,
    body: Bytes,
    peer: Option<IpAddr>,
    outcome: Outcome,
) -> Response<Body> {
    let started = std::time::Instant::now();
    let sent = state
        .forwarder
        .send(server, parts, body, peer, Mark::Unverified(outcome.code()))
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    match sent {
        Ok(response) => {
            let class = crate::metrics::status_class(response.status());
            state
                .metrics
                .upstream_response(&source.name, class, elapsed);
            finish(state, source, None, outcome, Some(response))
        }
        Err(e) => {
            state
                .metrics
                .upstream_response(&source.name, "error", elapsed);
            tracing::warn!(source = %source.name, error = %e, "forward failed");
            let failed = Outcome::from(&e);
            finish(state, source, None, outcome, Some(failed.response()))
        }
    }
}

/// The store failed and the source prefers availability: forward the verified
/// event without the duplicate check (and without touching the store again).
#[allow(clippy::too_many_arguments)]
async fn forward_unchecked(
    state: &State,
    runtime: &Runtime,
    source: &Source,
    parts: &http::request::Parts,
    body: Bytes,
    verified: &Verified,
    stamp: Stamp<'_>,
    peer: Option<IpAddr>,
) -> Response<Body> {
    let server = &runtime.config.server;
    tracing::warn!(source = %source.name, event_id = %stamp.event_id, "store unavailable: forwarding without the duplicate check (on_store_error = forward_unchecked)");
    let started = std::time::Instant::now();
    let sent = state
        .forwarder
        .send(server, parts, body, peer, Mark::Verified(stamp))
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    match sent {
        Ok(response) => {
            let status = response.status();
            let class = crate::metrics::status_class(status);
            state
                .metrics
                .upstream_response(&source.name, class, elapsed);
            let outcome = Outcome::ForwardedUnchecked;
            finish(state, source, Some(verified), outcome, Some(response))
        }
        Err(e) => {
            state
                .metrics
                .upstream_response(&source.name, "error", elapsed);
            tracing::warn!(source = %source.name, event_id = %stamp.event_id, error = %e, "forward failed");
            let outcome = Outcome::from(&e);
            finish(state, source, Some(verified), outcome, None)
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
        Unmatched::Forward => match read_body(
            body,
            &parts.headers,
            server.max_body_bytes,
            server.request_read_timeout,
        )
        .await
        {
            Err(outcome) => outcome,
            Ok(body) => {
                let sent = state
                    .forwarder
                    .send(server, &parts, body, peer, Mark::Unmatched)
                    .await;
                match sent {
                    Ok(response) => {
                        log_unmatched(state, &parts, &Outcome::Unmatched);
                        return response;
                    }
                    Err(e) => Outcome::from(&e),
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
        path = parts.uri.path(),
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
    // The id as stored and stamped: a hostile id can't make a huge log line.
    let event_id = verified.map(|v| key_safe_id(&v.event_id));
    // Plain `&str` fields are escaped straight into the line; `%` would
    // format them into a String first.
    tracing::info!(
        source = source.name.as_str(),
        event_id = event_id.as_deref(),
        event_type = verified.and_then(|v| v.event_type.as_deref()),
        outcome = outcome.code(),
        status = response.status().as_u16(),
        "request"
    );
    response
}

/// Reads the whole body within `timeout`, refusing more than `max` bytes
/// without buffering the excess (a declared `Content-Length` over the limit is
/// refused before reading).
async fn read_body<B>(
    body: B,
    headers: &http::HeaderMap,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, Outcome>
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
    let Ok(read) = tokio::time::timeout(timeout, Limited::new(body, max).collect()).await else {
        tracing::debug!(timeout = ?timeout, "the request body did not arrive in time");
        return Err(Outcome::RequestTimeout);
    };
    match read {
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
    // Built by hand: `format!` costs more than the three copies.
    let mut key = String::with_capacity(prefix.len() + source.len() + event_id.len() + 8);
    key.push_str(prefix);
    key.push_str(":nonce:");
    key.push_str(source);
    key.push(':');
    key.push_str(event_id);
    key
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
