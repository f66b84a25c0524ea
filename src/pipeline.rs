//! The request pipeline, in the order DESIGN §3 fixes:
//!
//! route → read raw body → verify signature → check timestamp → parse →
//! filter → nonce → version gate → forward or enqueue → commit or release.
//! Between routing and reading the body, the method and the sender address
//! (`allow_ips`, [`crate::allow`]) are checked.
//!
//! A forward failure (5xx, unreachable, too slow) is also counted per event
//! id; the third in a row copies the event to the dead-letter stream
//! ([`crate::dlq`]).
//!
//! Everything after the body is read works on plain values, so the whole
//! pipeline runs without a socket in tests. Each request ends in exactly one
//! [`Outcome`], logged once and counted once.

use std::net::IpAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use sha2::{Digest, Sha256};

use crate::config::{Delivery, OnStoreError, Source, Unmatched, Verification};
use crate::delivery::{Attempt, Claimed, Event, Gated, Lease, Steps, trail_attempt};
use crate::dlq;
use crate::envelope::{Envelope, Place, Received};
use crate::forward::{self, Mark};
use crate::ordering::Gate;
use crate::outcome::{Body, Outcome};
use crate::scheme::{Error, Verified};
use crate::state::{Runtime, State};
use crate::store;
use crate::store::keys::{self, key_safe_id};
use crate::time::{unix_now, unix_now_f64};
use crate::traces::{Kind, Span};
use crate::trail::{self, Fact};

mod bypass;
mod detach;
mod kept;

use bypass::{forward_unchecked, log_unmatched, observe, unmatched};
use detach::{Detachable, Panicked};
use kept::{commit_behind, count_failure, enqueue, retry_commit};

/// A commit that fails (Redis died just after the app's 2xx) is tried again
/// in the background for this long, every [`COMMIT_RETRY_EVERY`], so that a
/// Redis back within a minute still records the event and keeps its
/// retries out. Only requests in flight when Redis failed start one.
const COMMIT_RETRY_FOR: Duration = Duration::from_secs(60);
const COMMIT_RETRY_EVERY: Duration = Duration::from_millis(500);

/// Handles one request from a sender. `peer` is the TCP peer's address,
/// added to `X-Forwarded-For` and, for a source with `allow_ips`, the start
/// of the client address.
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
    let mut span = match &state.traces {
        Some(traces) => traces.request(&parts.method, parts.uri.path(), &parts.headers),
        None => Span::none(),
    };
    let server = &runtime.config.server;
    forward::strip_spoofable(&mut parts.headers, server.underscores_in_headers);
    if let Err(e) = crate::route::origin_form(&mut parts) {
        tracing::debug!(reason = %e, "request target refused");
        log_unmatched(state, span, &parts, &Outcome::BadRequest, peer);
        return Outcome::BadRequest.response();
    }

    let Some(index) = runtime.router.route(parts.uri.path()) else {
        // Boxed: its forward would otherwise size every request's future,
        // which hyper keeps allocated for each open connection.
        return Box::pin(unmatched(state, &runtime, parts, body, peer, span)).await;
    };
    let source = &runtime.config.sources[index];
    if span.recording() {
        span.route(&source.path);
        span.str("hookgate.source", &source.name);
    }

    // A provider's endpoint check (Dropbox/Nylas GET challenge, Okta, Meta,
    // Worldline, X CRC, Trello HEAD; Asana's and Microsoft Graph's unsigned
    // POSTs) is answered here, before the body is read; a failed one (Meta with a
    // wrong verify token) is refused like a bad signature. Any other request
    // but a POST is refused.
    let check = source.scheme.handshake_before(
        &source.keys,
        source.verify_token.as_ref(),
        &parts.method,
        &parts.uri,
        &parts.headers,
    );
    let refuse = |span, outcome: Outcome, body_bytes: Option<usize>, why: Option<&Error>| {
        reject(
            state, &runtime, source, &parts, peer, &outcome, body_bytes, why,
        );
        finish(state, span, source, None, outcome, None)
    };
    if check.is_none() && parts.method != Method::POST {
        return refuse(span, Outcome::MethodNotAllowed, None, None);
    }
    // The sender address gate: every request the source would take, endpoint
    // checks included, comes from an allowed client or is refused before
    // its body is read. Not a signature row: observe mode refuses it too.
    if let Some(allowed) = &source.allow_ips {
        let client = crate::allow::client_address(peer, &parts.headers, &server.trusted_proxies);
        if !client.is_some_and(|ip| allowed.contains(ip)) {
            tracing::debug!(source = %source.name, client = ?client, peer = ?peer, "client address outside allow_ips");
            return refuse(span, Outcome::ForbiddenIp, None, None);
        }
    }
    match check {
        Some(Ok(reply)) => {
            let response = reply.into_response();
            return finish(
                state,
                span,
                source,
                None,
                Outcome::Handshake,
                Some(response),
            );
        }
        Some(Err(e)) => {
            tracing::debug!(source = %source.name, reason = %e, "endpoint check refused");
            return refuse(span, Outcome::from(&e), None, Some(&e));
        }
        None => {}
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
        Err(outcome) => return refuse(span, outcome, None, None),
    };

    // Schemes whose key comes from the provider (SNS, PayPal, Google) fetch
    // it first; every other scheme verifies as it always did.
    let mut verifying = span.child("verify", Kind::Internal);
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
            verifying.fail(outcome.code());
            verifying.end();
            if source.verification == Verification::Observe && !matches!(e, Error::MalformedBody(_))
            {
                let observed = observe(state, server, source, &parts, body, peer, outcome, span);
                return observed.await;
            }
            return refuse(span, outcome, Some(body.len()), Some(&e));
        }
    };
    verifying.end();
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
            span,
            source,
            Some(&verified),
            Outcome::Handshake,
            Some(response),
        );
    }

    if !source.accepts_type(verified.event_type.as_deref()) {
        return finish(state, span, source, Some(&verified), Outcome::Ignored, None);
    }
    // `[[source.filter]]` (DESIGN §3a), on the signed body only: an ignored
    // event takes no nonce and leaves nothing in the store.
    let decision = source.filters.decide(&body);
    if decision.action == crate::filter::Action::Ignore
        && let Some(rule) = decision.rule.and_then(|i| source.filters.rules().get(i))
    {
        state.metrics.filtered(&source.name, &rule.name);
        let outcome = Outcome::Filtered {
            rule: rule.name.clone(),
        };
        return finish(state, span, source, Some(&verified), outcome, None);
    }

    // From here on the event is claimed: the rest runs to completion even if
    // the sender hangs up, so no 2xx is left uncommitted and no lease held.
    let delivery = {
        let state = Arc::clone(state);
        let runtime = Arc::clone(&runtime);
        Detachable::new(async move {
            deliver(&state, &runtime, index, parts, body, verified, peer, span).await
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

/// Nonce → version gate → forward or enqueue → commit or release, through
/// the steps every delivery takes ([`crate::delivery`]).
#[allow(clippy::too_many_arguments)]
async fn deliver(
    state: &Arc<State>,
    runtime: &Runtime,
    index: usize,
    parts: http::request::Parts,
    body: Bytes,
    verified: Verified,
    peer: Option<IpAddr>,
    span: Span,
) -> Response<Body> {
    let source = &runtime.config.sources[index];
    let steps = state.steps(&runtime.config);
    let event_id = key_safe_id(&verified.event_id);
    // An id the signature does not cover names the event but cannot tell
    // copies apart: the same signed bytes under a fresh id are the same event.
    let body_digest;
    let nonce_id: &str = if source.scheme.signs_event_id() {
        &event_id
    } else {
        body_digest = keys::hex(&Sha256::digest(&body));
        &body_digest
    };
    let event = Event {
        source: &source.name,
        event_id: &event_id,
        nonce_id,
        event_type: verified.event_type.as_deref(),
        type_signed: source.scheme.signs_event_type(),
        gate: None,
    };

    let claimed_at = crate::time::now_ms();
    let mut claiming = span.child("claim", Kind::Internal);
    let claimed = steps.claim(&event).await;
    claiming.word(
        "hookgate.claim",
        match &claimed {
            Ok(Claimed::Fresh(_)) => "fresh",
            Ok(Claimed::Done) => "done",
            Ok(Claimed::InFlight) => "in_flight",
            Err(_) => "store_unavailable",
        },
    );
    if claimed.is_err() {
        claiming.fail("store_unavailable");
    }
    claiming.end();
    let nonce = match claimed {
        Ok(Claimed::Fresh(nonce)) => nonce,
        Ok(Claimed::Done) => {
            steps.duplicate(&event);
            let outcome = Outcome::Duplicate {
                event_id: event_id.into_owned(),
            };
            return finish(state, span, source, Some(&verified), outcome, None);
        }
        Ok(Claimed::InFlight) => {
            return finish(
                state,
                span,
                source,
                Some(&verified),
                Outcome::InFlight,
                None,
            );
        }
        Err(_) if source.on_store_error == OnStoreError::ForwardUnchecked => {
            let unchecked = forward_unchecked(
                state, &steps, &event, source, &parts, body, &verified, peer, span,
            );
            return unchecked.await;
        }
        Err(_) => {
            let outcome = Outcome::StoreUnavailable;
            return finish(state, span, source, Some(&verified), outcome, None);
        }
    };

    // The breaker (forward mode): open, the app is not asked and the nonce
    // is let go, so the sender's retry after `Retry-After` is taken afresh.
    if source.delivery == Delivery::Forward
        && let crate::breaker::Admit::Open { retry_after } = steps.breaker_admit(source).await
    {
        steps.release(&event, Some(nonce)).await;
        let retry_after =
            u32::try_from(retry_after.as_secs_f64().ceil() as u64).unwrap_or(u32::MAX);
        let outcome = Outcome::AppUnavailable { retry_after };
        return finish(state, span, source, Some(&verified), outcome, None);
    }

    // The version gate: the body is read for it only when the source has one.
    let gate = match &source.ordering {
        None => None,
        Some(ordering) => match Gate::read(ordering, &body) {
            Ok(gate) => Some(gate),
            Err(e) => {
                tracing::debug!(source = %source.name, event_id = %event_id, reason = %e, "no resource version in a verified body");
                steps.release(&event, Some(nonce)).await;
                return finish(
                    state,
                    span,
                    source,
                    Some(&verified),
                    Outcome::MalformedBody,
                    None,
                );
            }
        },
    };
    let event = Event {
        gate: gate.as_ref(),
        ..event
    };
    // Queue workers take the resource's lease themselves, at delivery time.
    let hold = source.delivery == Delivery::Forward;
    let lock = match &gate {
        None => None,
        Some(g) => match steps.gate(&event, g, nonce.token(), hold).await {
            Ok(Gated::Newer(lock)) => lock,
            Ok(Gated::Busy) => {
                steps.release(&event, Some(nonce)).await;
                return finish(
                    state,
                    span,
                    source,
                    Some(&verified),
                    Outcome::InFlight,
                    None,
                );
            }
            Ok(settled) => {
                // A stale or equal version settles the event: its nonce is
                // committed, so a sender retry is a cheap duplicate that
                // needs no version read. A commit that fails is counted
                // and logged by `commit`; the retry then meets the version
                // gate again, which settles it the same way.
                if steps.commit(&event, &nonce, Vec::new()).await.is_err() {
                    tracing::debug!(source = %source.name, event_id = %event_id, "stale event: the version gate settles a retry");
                }
                let outcome = if matches!(settled, Gated::Stale) {
                    Outcome::StaleVersion
                } else {
                    Outcome::Duplicate {
                        event_id: event_id.to_string(),
                    }
                };
                return finish(state, span, source, Some(&verified), outcome, None);
            }
            Err(_) => {
                steps.release(&event, Some(nonce)).await;
                let outcome = Outcome::StoreUnavailable;
                return finish(state, span, source, Some(&verified), outcome, None);
            }
        },
    };

    // What the trail records of its arrival.
    let arrival = |state: trail::State| Fact::Received {
        at: claimed_at,
        replica: trail::replica(),
        event_type: verified.event_type.clone(),
        signed_at: verified.timestamp,
        state,
        nonce_id: (nonce_id != event_id.as_ref()).then(|| nonce_id.to_owned()),
    };
    // What an envelope of this event says, should it be kept (queued, or a
    // dead letter after repeated failures).
    let received = Received {
        source,
        event_id: &event_id,
        nonce_id,
        event_type: verified.event_type.as_deref(),
        signed_at: verified.timestamp,
        peer,
        gate: gate.as_ref(),
    };
    if source.delivery == Delivery::Queue {
        let envelope = Envelope::new(&parts, body, received).traced(span.parent());
        let facts = vec![arrival(trail::State::Waiting)];
        let mut enqueuing = span.child("enqueue", Kind::Producer);
        let outcome = enqueue(state, &steps, &event, nonce, &envelope, facts).await;
        if matches!(outcome, Outcome::StoreUnavailable) {
            enqueuing.fail(outcome.code());
        }
        enqueuing.end();
        return finish(state, span, source, Some(&verified), outcome, None);
    }

    let mut forwarding = forward_span(&span);
    let attempted = steps
        .attempt(&event, &parts, body.clone(), peer, &mut forwarding)
        .await;
    let attempt_trace = forwarding.trace_id();
    forwarding.end();
    steps
        .breaker_record(source, &attempted.attempt, attempted.status())
        .await;
    let (word, settled) = match (&attempted.attempt, &attempted.answer) {
        (Attempt::Delivered, _) => ("forwarded", trail::State::Delivered),
        (_, Ok(_)) => ("forwarded", trail::State::Released),
        (_, Err(e)) => (Outcome::from(e).code(), trail::State::Released),
    };
    // The arrival and the attempt ride on the commit or the release.
    let facts = vec![
        arrival(trail::State::InFlight),
        Fact::Attempted {
            attempt: trail_attempt(
                trail::Mode::Forward,
                word,
                attempted.status(),
                attempted.elapsed,
                attempt_trace,
            ),
            state: settled,
            next_attempt_at: None,
            dead_letter_id: None,
        },
    ];
    let (response, error, trace) = match (attempted.attempt, attempted.answer) {
        (Attempt::Delivered, Ok(response)) => {
            steps.delivered(&event, lock).await;
            // The app took the event: its 2xx stands whatever the commit
            // does. On Redis without `min_replicas` the sender is answered
            // without waiting for it (one round trip less on the answer's
            // path); see `commit_behind` for why a copy still finds it done.
            if state.store.answers_before_commit() {
                let note = steps.note_of(&event, facts);
                commit_behind(state, nonce, runtime.config.store.nonce_ttl, &event, note).await;
            } else if steps.commit(&event, &nonce, facts).await.is_err() {
                retry_commit(
                    state,
                    nonce,
                    runtime.config.store.nonce_ttl,
                    source.name.clone(),
                    event.event_id.to_owned(),
                );
            }
            if let Some(ts) = verified.timestamp {
                state
                    .metrics
                    .completion(&source.name, unix_now_f64() - ts as f64);
            }
            let outcome = Outcome::Forwarded;
            return finish(
                state,
                span,
                source,
                Some(&verified),
                outcome,
                Some(response),
            );
        }
        (_, answer) => {
            // A dead letter made of this event joins this request's trace.
            let trace = span.parent();
            steps.release(&event, lock).await;
            steps.release_noting(&event, Some(nonce), facts).await;
            match answer {
                Ok(response) => {
                    let status = response.status();
                    let outcome = Outcome::Forwarded;
                    let response = finish(
                        state,
                        span,
                        source,
                        Some(&verified),
                        outcome,
                        Some(response),
                    );
                    if !status.is_server_error() {
                        return response;
                    }
                    (response, format!("app answered {status}"), trace)
                }
                Err(e) => {
                    tracing::warn!(source = %source.name, event_id = %event_id, trace_id = span.trace_id().as_deref(), error = %e, "forward failed");
                    let response = finish(
                        state,
                        span,
                        source,
                        Some(&verified),
                        Outcome::from(&e),
                        None,
                    );
                    (response, e.to_string(), trace)
                }
            }
        }
    };
    let envelope = Envelope::new(&parts, body, received).traced(trace);
    count_failure(state, runtime, envelope, error).await;
    response
}

/// A server span's status: an error for a 5xx; `error.type` alone for a
/// 4xx (the sender's fault, not hookgate's).
fn mark_status(span: &mut Span, status: http::StatusCode, outcome: &Outcome) {
    if status.is_server_error() {
        span.fail(outcome.code());
    } else if status.is_client_error() {
        span.refused(outcome.code());
    }
}

/// The client span of a forward-mode attempt: the first and only one this
/// request makes (the sender's retries are requests of their own).
fn forward_span(request: &Span) -> Span {
    let mut span = request.child("POST", Kind::Client);
    span.word("hookgate.delivery.mode", trail::Mode::Forward.word());
    span.int("hookgate.delivery.attempt", 1);
    span
}

/// Records the app's answer (or why there is none) on a client span.
fn answered(span: &mut Span, sent: &Result<Response<Body>, forward::Error>) {
    match sent {
        Ok(response) => {
            let status = response.status();
            span.int("http.response.status_code", i64::from(status.as_u16()));
            if status.is_client_error() || status.is_server_error() {
                span.fail(status.as_str());
            }
        }
        Err(e) => span.fail(Outcome::from(e).code()),
    }
}

/// Counts and logs the end of a request, and gives its response: the app's
/// when it answered, hookgate's own otherwise.
fn finish(
    state: &State,
    mut span: Span,
    source: &Source,
    verified: Option<&Verified>,
    outcome: Outcome,
    app_response: Option<Response<Body>>,
) -> Response<Body> {
    let response = app_response.unwrap_or_else(|| outcome.response());
    state.metrics.request(&source.name, outcome.code());
    state
        .metrics
        .stats
        .request(&source.name, outcome.code(), response.status());
    // The id as stored and stamped: a hostile id can't make a huge log line.
    let event_id = verified.map(|v| key_safe_id(&v.event_id));
    let trace_id = span.trace_id();
    if span.recording() {
        let status = response.status();
        span.word("hookgate.outcome", outcome.code());
        span.int("http.response.status_code", i64::from(status.as_u16()));
        if let Some(id) = &event_id {
            span.str("hookgate.event_id", id);
        }
        // The type as stamped: only one the signature covers.
        let signed_type = verified
            .filter(|_| source.scheme.signs_event_type())
            .and_then(|v| v.event_type.as_deref());
        if let Some(event_type) = signed_type {
            span.str("hookgate.event_type", event_type);
        }
        mark_status(&mut span, status, &outcome);
    }
    span.end();
    // Plain `&str` fields are escaped straight into the line; `%` would
    // format them into a String first.
    tracing::info!(
        source = source.name.as_str(),
        event_id = event_id.as_deref(),
        event_type = verified.and_then(|v| v.event_type.as_deref()),
        outcome = outcome.code(),
        rule = outcome.rule(),
        status = response.status().as_u16(),
        trace_id = trace_id.as_deref(),
        "request"
    );
    response
}

/// Keeps a refusal of a §3 row (DESIGN §7d): metadata only.
#[allow(clippy::too_many_arguments)]
fn reject(
    state: &State,
    runtime: &Runtime,
    source: &Source,
    parts: &http::request::Parts,
    peer: Option<IpAddr>,
    outcome: &Outcome,
    body_bytes: Option<usize>,
    why: Option<&Error>,
) {
    let status = outcome.status();
    if !crate::rejections::kept(status) {
        return;
    }
    let (signature_header, outside_tolerance_secs) = match why {
        Some(Error::MissingSignature(h) | Error::MalformedSignature(h)) => (Some(*h), None),
        Some(Error::TimestampOutsideWindow {
            timestamp,
            tolerance_secs,
        }) => {
            let skew = unix_now() - timestamp;
            let beyond = skew.abs() - i64::try_from(*tolerance_secs).unwrap_or(i64::MAX);
            (None, Some(beyond.max(0) * skew.signum()))
        }
        _ => (None, None),
    };
    let server = &runtime.config.server;
    let kept = state.rejections.record(&crate::rejections::Refused {
        source: Some(&source.name),
        path: parts.uri.path(),
        outcome: outcome.code(),
        status: status.as_u16(),
        client: crate::allow::client_address(peer, &parts.headers, &server.trusted_proxies),
        user_agent: parts
            .headers
            .get(http::header::USER_AGENT)
            .map(http::HeaderValue::as_bytes),
        body_bytes: body_bytes.map(|n| n as u64),
        signature_header,
        outside_tolerance_secs,
    });
    state.metrics.rejections_kept.set(kept as i64);
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
