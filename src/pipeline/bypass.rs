//! Requests that go to the app without the whole pipeline: observe mode
//! (a failed verification forwarded, marked), `forward_unchecked` while the
//! store is down, and requests no source matches (`unmatched`).

use super::*;

/// Observe mode (DESIGN §3): a request that failed verification goes to the
/// app anyway, without a stamp, marked `X-Hookgate-Unverified: <word>`, and
/// is counted and logged under `outcome`'s word. Nothing is stored for it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn observe(
    state: &State,
    server: &crate::config::Server,
    source: &Source,
    parts: &http::request::Parts,
    body: Bytes,
    peer: Option<IpAddr>,
    outcome: Outcome,
    span: Span,
) -> Response<Body> {
    let started = std::time::Instant::now();
    let mut forwarding = span.child("POST", Kind::Client);
    let mark = Mark::Unverified(outcome.code());
    let sent = state
        .forwarder
        .send(server, parts, body, peer, mark, forwarding.parent())
        .await;
    answered(&mut forwarding, &sent);
    forwarding.end();
    let elapsed = started.elapsed().as_secs_f64();
    match sent {
        Ok(response) => {
            let class = crate::metrics::status_class(response.status());
            state
                .metrics
                .upstream_response(&source.name, class, elapsed);
            finish(state, span, source, None, outcome, Some(response))
        }
        Err(e) => {
            state
                .metrics
                .upstream_response(&source.name, "error", elapsed);
            tracing::warn!(source = %source.name, error = %e, "forward failed");
            let failed = Outcome::from(&e);
            finish(state, span, source, None, outcome, Some(failed.response()))
        }
    }
}

/// The store failed and the source prefers availability: forward the verified
/// event without the duplicate check (and without touching the store again).
#[allow(clippy::too_many_arguments)]
pub(super) async fn forward_unchecked(
    state: &State,
    steps: &Steps<'_>,
    event: &Event<'_>,
    source: &Source,
    parts: &http::request::Parts,
    body: Bytes,
    verified: &Verified,
    peer: Option<IpAddr>,
    span: Span,
) -> Response<Body> {
    tracing::warn!(source = %source.name, event_id = %event.event_id, "store unavailable: forwarding without the duplicate check (on_store_error = forward_unchecked)");
    let mut forwarding = forward_span(&span);
    let attempted = steps
        .attempt(event, parts, body, peer, &mut forwarding)
        .await;
    forwarding.end();
    match attempted.answer {
        Ok(response) => {
            let outcome = Outcome::ForwardedUnchecked;
            finish(state, span, source, Some(verified), outcome, Some(response))
        }
        Err(e) => {
            tracing::warn!(source = %source.name, event_id = %event.event_id, error = %e, "forward failed");
            finish(state, span, source, Some(verified), Outcome::from(&e), None)
        }
    }
}

/// A path no source serves: refused, or proxied unchanged without verification.
pub(super) async fn unmatched<B>(
    state: &State,
    runtime: &Runtime,
    parts: http::request::Parts,
    body: B,
    peer: Option<IpAddr>,
    span: Span,
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
                let mut forwarding = span.child("POST", Kind::Client);
                let sent = state
                    .forwarder
                    .send(
                        server,
                        &parts,
                        body,
                        peer,
                        Mark::Unmatched,
                        forwarding.parent(),
                    )
                    .await;
                answered(&mut forwarding, &sent);
                forwarding.end();
                match sent {
                    Ok(response) => {
                        let mut span = span;
                        span.int(
                            "http.response.status_code",
                            i64::from(response.status().as_u16()),
                        );
                        log_unmatched(state, span, &parts, &Outcome::Unmatched, peer);
                        return response;
                    }
                    Err(e) => Outcome::from(&e),
                }
            }
        },
    };
    log_unmatched(state, span, &parts, &outcome, peer);
    outcome.response()
}

/// Counts, logs and ends a request no source took (`http.response.status_code`
/// is hookgate's, unless the app's answer was set on `span` already).
pub(super) fn log_unmatched(
    state: &State,
    mut span: Span,
    parts: &http::request::Parts,
    outcome: &Outcome,
    peer: Option<IpAddr>,
) {
    state.metrics.request("", outcome.code());
    let status = outcome.status();
    if crate::rejections::kept(status) {
        let runtime = state.runtime();
        let kept = state.rejections.record(&crate::rejections::Refused {
            source: None,
            path: parts.uri.path(),
            outcome: outcome.code(),
            status: status.as_u16(),
            client: crate::allow::client_address(
                peer,
                &parts.headers,
                &runtime.config.server.trusted_proxies,
            ),
            user_agent: parts
                .headers
                .get(http::header::USER_AGENT)
                .map(http::HeaderValue::as_bytes),
            body_bytes: None,
            signature_header: None,
            outside_tolerance_secs: None,
        });
        state.metrics.rejections_kept.set(kept as i64);
    }
    let trace_id = span.trace_id();
    if span.recording() {
        span.word("hookgate.outcome", outcome.code());
        if !matches!(outcome, Outcome::Unmatched) {
            span.int("http.response.status_code", i64::from(status.as_u16()));
            mark_status(&mut span, status, outcome);
        }
    }
    span.end();
    tracing::info!(
        path = parts.uri.path(),
        outcome = outcome.code(),
        status = status.as_u16(),
        trace_id = trace_id.as_deref(),
        "request"
    );
}
