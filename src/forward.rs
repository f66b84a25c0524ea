//! Forwarding to the app: a keep-alive HTTP/1.1 client, header hygiene, timeouts.
//!
//! The request goes out with its method, path, query, headers (minus hop-by-hop)
//! and body byte for byte; the app's status, headers and body come back as they
//! are. A refused connection is `Unavailable` (502), no answer in time is
//! `Timeout` (504).
//!
//! The client is small on purpose and runs entirely in the calling request's
//! task: take an idle connection (`pool`) or open one (`connect`), write
//! the request in one write, read and parse the answer (`http1`), give the
//! connection back. A general-purpose pooled client (a map under a mutex, a
//! channel to a connection task, a second task per request) was the largest
//! user-space cost per forwarded webhook; this costs a write, a read and the
//! parsing.
//!
//! # Retries
//!
//! None once any byte of the request may have reached the app: a webhook POST
//! is not idempotent, and a 502 makes the sender retry with the nonce
//! released. The one exception is a reused idle connection whose very first
//! write fails (the app closed it between the pool's check and the write):
//! nothing was sent, so the request is written once more on a new connection.
//!
//! A connection whose exchange failed, timed out or was cancelled is dropped,
//! never returned to the pool.
//!
//! # Early answers
//!
//! An app may answer before it has read the whole body and then stop reading
//! or close. The writer watches for that answer (`http1::write_request`),
//! stops writing, and the app's answer is the sender's, settled by its status
//! like any other; when the write failed first, an answer that arrived before
//! the close is still read and preferred to the write error. That connection
//! is never pooled: the app has not read the rest of the request.

mod connect;
mod http1;
mod pool;

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{PathAndQuery, Uri};
use http::{Method, Response};
use tokio_rustls::TlsConnector;

use crate::config::{self, Underscores};
use crate::outcome::{Body, Outcome};
use crate::traces::Parent;

use self::connect::{Origin, Stream};
use self::http1::{Encoded, RequestHead};
use self::pool::Pool;

pub const X_VERIFIED_EVENT_ID: &str = "x-verified-event-id";
pub const X_VERIFIED_SOURCE: &str = "x-verified-source";
pub const X_VERIFIED_EVENT_TYPE: &str = "x-verified-event-type";
const X_VERIFIED_PREFIX: &str = "x-verified-";
const X_HOOKGATE_PREFIX: &str = "x-hookgate-";
const X_FORWARDED_FOR: &str = "x-forwarded-for";

// The same names as values: a `&str` name is parsed and validated again on
// every use, a `HeaderName` constant is not.
const X_VERIFIED_EVENT_ID_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_EVENT_ID);
const X_VERIFIED_SOURCE_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_SOURCE);
const X_VERIFIED_EVENT_TYPE_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_EVENT_TYPE);
const X_FORWARDED_FOR_NAME: HeaderName = HeaderName::from_static(X_FORWARDED_FOR);
const X_HOOKGATE_UNVERIFIED_NAME: HeaderName = HeaderName::from_static("x-hookgate-unverified");
const TRACEPARENT_NAME: HeaderName = HeaderName::from_static(crate::traces::TRACEPARENT);
const TRACESTATE_NAME: HeaderName = HeaderName::from_static(crate::traces::TRACESTATE);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("app unreachable: {0}")]
    Unavailable(String),
    #[error("app did not answer within {0:?}")]
    Timeout(Duration),
}

/// The one mapping of a failed forward to its status-table row.
impl From<&Error> for Outcome {
    fn from(e: &Error) -> Self {
        match e {
            Error::Timeout(_) => Outcome::UpstreamTimeout,
            Error::Unavailable(_) => Outcome::UpstreamUnavailable,
        }
    }
}

/// What hookgate adds to the sender's request on its way to the app.
#[derive(Debug, Clone, Copy)]
struct Added<'a> {
    /// The sender's address, appended to `X-Forwarded-For`.
    peer: Option<IpAddr>,
    mark: Mark<'a>,
    /// The span carrying the request: `traceparent`, in place of the sender's.
    trace: Option<Parent>,
}

/// What hookgate adds to a forwarded request about its verification.
#[derive(Debug, Clone, Copy)]
pub enum Mark<'a> {
    /// Verified: the `X-Verified-*` stamp.
    Verified(Stamp<'a>),
    /// Failed verification in observe mode: `X-Hookgate-Unverified` with
    /// the error word the request would have been refused with.
    Unverified(&'static str),
    /// Not a source's path (`unmatched = "forward"`): nothing.
    Unmatched,
}

/// What hookgate vouches for, added to a forwarded request.
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    pub event_id: &'a str,
    pub source: &'a str,
    pub event_type: Option<&'a str>,
}

/// The client to the app, shared by every request and kept across reloads:
/// idle connections per upstream, and the TLS setup for `https://` ones.
#[derive(Clone)]
pub struct Forwarder {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    tls: TlsConnector,
    /// Whether the app was found unreachable since it last took a
    /// connection: the warning is logged once each time it goes away.
    unreachable: std::sync::atomic::AtomicBool,
}

impl Default for Forwarder {
    fn default() -> Self {
        Self::new()
    }
}

impl Forwarder {
    pub fn new() -> Self {
        let mut config = crate::tls::client_config();
        // Requests are HTTP/1.1; say so, so a server that prefers h2 does not pick it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Forwarder {
            inner: Arc::new(Inner {
                pool: Pool::default(),
                tls: TlsConnector::from(Arc::new(config)),
                unreachable: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Sends `parts` + `body` to the app `server` names, keeping the path and
    /// query, and returns the app's whole answer (its body cut to nothing past
    /// `server.max_response_bytes`).
    pub async fn send(
        &self,
        server: &config::Server,
        parts: &http::request::Parts,
        body: Bytes,
        peer: Option<IpAddr>,
        mark: Mark<'_>,
        trace: Option<Parent>,
    ) -> Result<Response<Body>, Error> {
        let upstream = &server.upstream;
        let timeout = server.upstream_timeout;
        let origin = Origin::of(upstream).map_err(|e| Error::Unavailable(e.to_string()))?;
        let target = request_target(upstream, parts.uri.path_and_query());
        let keepalive = server.upstream_keepalive;
        let request = encode(
            parts,
            &target,
            origin.authority,
            &body,
            Added { peer, mark, trace },
            keepalive,
        );
        let exchange = Exchange {
            head_request: parts.method == Method::HEAD,
            keepalive,
            limit: server.max_response_bytes,
        };
        match tokio::time::timeout(timeout, self.exchange(&origin, &request, exchange)).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    /// One request and its answer on one connection; the connection goes
    /// back to the pool only when the answer left it clean.
    async fn exchange(
        &self,
        origin: &Origin<'_>,
        request: &Encoded<'_>,
        exchange: Exchange,
    ) -> Result<Response<Body>, Error> {
        let pooled = if exchange.keepalive {
            self.inner.pool.checkout(origin)
        } else {
            None
        };
        let (mut stream, mut reused) = match pooled {
            Some(stream) => (stream, true),
            None => (self.connect(origin).await?, false),
        };
        let sent = loop {
            match http1::write_request(&mut stream, request).await {
                Ok(sent) => break sent,
                Err(e) if reused && !e.accepted => {
                    tracing::debug!(error = %e, "an idle connection to the app was closed; opening a new one");
                    stream = self.connect(origin).await?;
                    reused = false;
                }
                Err(e) if e.accepted => {
                    // An app that answers and closes before reading the whole
                    // body makes the write fail; its answer, if it arrived, is
                    // the one the sender gets.
                    let answer = http1::read_response(
                        &mut stream,
                        e.read,
                        exchange.head_request,
                        exchange.limit,
                    )
                    .await
                    .map_err(|_| {
                        Error::Unavailable(format!("writing the request: {}", e.source))
                    })?;
                    return Ok(finish(answer, exchange, true));
                }
                Err(e) => {
                    return Err(Error::Unavailable(format!("writing the request: {e}")));
                }
            }
        };
        let answer = http1::read_response(
            &mut stream,
            sent.read,
            exchange.head_request,
            exchange.limit,
        )
        .await
        .map_err(|e| Error::Unavailable(format!("reading the app's response: {e}")))?;
        // After an early answer the app has not read the whole request: the
        // rest of it would be read as the next one, so the connection goes.
        if answer.reusable && exchange.keepalive && !sent.early {
            self.inner.pool.checkin(origin, stream);
        }
        Ok(finish(answer, exchange, sent.early))
    }

    async fn connect(&self, origin: &Origin<'_>) -> Result<Stream, Error> {
        use std::sync::atomic::Ordering;
        match connect::connect(origin, &self.inner.tls).await {
            Ok(stream) => {
                self.inner.unreachable.store(false, Ordering::Relaxed);
                Ok(stream)
            }
            Err(e) => {
                // Once per outage: each request's own line says the rest.
                if !self.inner.unreachable.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        upstream = origin.authority,
                        error = %e,
                        "the upstream cannot be reached: events are answered 502 upstream_unavailable (queued ones are retried) until it can; /readyz is about hookgate itself"
                    );
                }
                Err(Error::Unavailable(e.to_string()))
            }
        }
    }
}

/// The app's answer as the sender gets it: hop-by-hop headers gone, the
/// sender's own HTTP version. `early` says the app answered before it had
/// read the whole request; its answer is the sender's all the same, and the
/// event is settled by its status like any other (DESIGN §3).
fn finish(answer: http1::Answer, exchange: Exchange, early: bool) -> Response<Body> {
    let status = answer.response.status().as_u16();
    if early {
        tracing::info!(
            status,
            "the app answered before reading the whole request; its connection is closed"
        );
    }
    if answer.truncated {
        tracing::warn!(
            status,
            limit = exchange.limit,
            "the app's answer is over server.max_response_bytes: relayed without its body"
        );
    }
    let mut response = answer.response;
    strip_hop_by_hop(response.headers_mut());
    // The app's HTTP version is its own connection's business; the
    // sender's connection keeps the version it spoke.
    *response.version_mut() = http::Version::default();
    response
}

/// How one exchange reads its answer.
#[derive(Clone, Copy)]
struct Exchange {
    /// The request was a HEAD: its answer has no body whatever it says.
    head_request: bool,
    /// The connection may be kept for the next request.
    keepalive: bool,
    /// Largest body buffered.
    limit: usize,
}

/// The request as it goes to the app: the sender's end-to-end headers, then
/// `X-Forwarded-For`, then what hookgate vouches for; `Connection: close`
/// when the connection is not to be kept.
fn encode<'b>(
    parts: &http::request::Parts,
    target: &str,
    host: &str,
    body: &'b [u8],
    added: Added<'_>,
    keepalive: bool,
) -> Encoded<'b> {
    let Added { peer, mark, trace } = added;
    let mut head = RequestHead::new(&parts.method, target, body.len());
    let forwarded_for = peer.map(|ip| forwarded_for(&parts.headers, ip));
    for (name, value) in end_to_end(&parts.headers) {
        // The sender's own list is replaced by the one with its address.
        if forwarded_for.is_some() && name == X_FORWARDED_FOR_NAME {
            continue;
        }
        // With a trace of hookgate's, the sender's context is not passed on:
        // the app joins hookgate's span.
        if trace.is_some() && (name == TRACEPARENT_NAME || name == TRACESTATE_NAME) {
            continue;
        }
        head.forward(name, value);
    }
    if let Some(value) = &forwarded_for {
        head.add(&X_FORWARDED_FOR_NAME, value.as_bytes());
    }
    if let Some(parent) = trace {
        head.add(&TRACEPARENT_NAME, &parent.header());
    }
    match mark {
        Mark::Verified(stamp) => {
            for (name, value) in stamp_headers(stamp) {
                head.add(&name, value.as_bytes());
            }
        }
        Mark::Unverified(word) => head.add(&X_HOOKGATE_UNVERIFIED_NAME, word.as_bytes()),
        Mark::Unmatched => {}
    }
    if !keepalive {
        head.add(&header::CONNECTION, b"close");
    }
    head.finish(host, body)
}

/// The request target the app is sent: the upstream's base path (without
/// its trailing `/`), then the sender's path and query as they came. Both
/// are already valid, so nothing is parsed again; with no base path (the
/// usual `http://host:port` upstream) the sender's target is used as it is.
fn request_target<'a>(upstream: &Uri, path_and_query: Option<&'a PathAndQuery>) -> Cow<'a, str> {
    let target = path_and_query.map_or("/", PathAndQuery::as_str);
    match upstream.path().trim_end_matches('/') {
        "" => Cow::Borrowed(target),
        base => Cow::Owned(format!("{base}{target}")),
    }
}

/// Whether `name` describes one connection, not the message (RFC 9110
/// §7.6.1): the fixed hop-by-hop names, `Upgrade`, and any name the message's
/// `Connection` header lists. Matched as text (names are lowercase): this
/// runs for every header of every request and response.
fn is_hop_by_hop(name: &HeaderName, connection_listed: &[HeaderName]) -> bool {
    is_hop_by_hop_name(name.as_str()) || connection_listed.contains(name)
}

/// The fixed hop-by-hop names of [`is_hop_by_hop`].
fn is_hop_by_hop_name(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

fn connection_listed(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect()
}

/// The end-to-end headers of a client request, in order: hop-by-hop ones,
/// `Expect` (the body is already here: an app told to expect it could answer
/// before reading it) and any of ours a client sent (only hookgate may set
/// those) are left out.
fn end_to_end(from: &HeaderMap) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
    let listed = connection_listed(from);
    from.iter().filter(move |(name, _)| {
        !is_hop_by_hop(name, &listed) && *name != header::EXPECT && !is_ours(name.as_str())
    })
}

pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed = connection_listed(headers);
    if !headers.keys().any(|name| is_hop_by_hop(name, &listed)) {
        return;
    }
    let doomed: Vec<HeaderName> = headers
        .keys()
        .filter(|name| is_hop_by_hop(name, &listed))
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(&name);
    }
}

/// Whether `name` is one only hookgate sets: `X-Verified-*` (what it vouches
/// for) and `X-Hookgate-*` (what it reports, such as `X-Hookgate-Unverified`).
/// Names are lowercase here.
fn is_ours(name: &str) -> bool {
    name.starts_with(X_VERIFIED_PREFIX) || name.starts_with(X_HOOKGATE_PREFIX)
}

/// Whether a client-sent header `name` must go before anything reads it:
/// one of ours (`is_ours`) in any spelling, `_` for `-` included (WSGI and
/// Rack read `X_Verified_Source` as `X-Verified-Source`); with `_` spelling a
/// framing or connection name (`Transfer_Encoding`, `Content_Length`,
/// `Host`); and under [`Underscores::Drop`], any name holding `_`.
pub fn is_spoofable(name: &HeaderName, underscores: Underscores) -> bool {
    let text = name.as_str();
    if is_ours(text) {
        return true;
    }
    if !text.contains('_') {
        return false;
    }
    if underscores == Underscores::Drop {
        return true;
    }
    let dashed = text.replace('_', "-");
    is_ours(&dashed)
        || is_hop_by_hop_name(&dashed)
        || matches!(
            dashed.as_str(),
            "content-length" | "host" | "expect" | X_FORWARDED_FOR
        )
}

/// Removes every client-sent header that [`is_spoofable`] names. Runs first
/// on every request, whatever its path.
pub fn strip_spoofable(headers: &mut HeaderMap, underscores: Underscores) {
    if !headers.keys().any(|name| is_spoofable(name, underscores)) {
        return;
    }
    let doomed: Vec<HeaderName> = headers
        .keys()
        .filter(|name| is_spoofable(name, underscores))
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(&name);
    }
}

/// The `X-Forwarded-For` value for a request from `ip`: the sender's list
/// with `ip` appended.
fn forwarded_for(headers: &HeaderMap, ip: IpAddr) -> String {
    match headers
        .get(&X_FORWARDED_FOR_NAME)
        .and_then(|v| v.to_str().ok())
    {
        Some(existing) if !existing.trim().is_empty() => format!("{existing}, {ip}"),
        _ => ip.to_string(),
    }
}

/// The `X-Verified-*` headers for `stamp`; a value that cannot be a header
/// value (a control character) is left out rather than sent broken.
fn stamp_headers(stamp: Stamp<'_>) -> impl Iterator<Item = (HeaderName, &str)> {
    [
        (X_VERIFIED_EVENT_ID_NAME, Some(stamp.event_id)),
        (X_VERIFIED_SOURCE_NAME, Some(stamp.source)),
        (X_VERIFIED_EVENT_TYPE_NAME, stamp.event_type),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value.filter(|v| is_header_value(v))?)))
}

/// What `HeaderValue::from_str` accepts, without building one.
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hop_by_hop_names_and_only_those() {
        for name in [
            "connection",
            "keep-alive",
            "proxy-connection",
            "proxy-authenticate",
            "proxy-authorization",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
        ] {
            let name = HeaderName::from_static(name);
            assert!(is_hop_by_hop(&name, &[]), "{name}");
        }
        for name in ["content-length", "host", "x-te", "trailers", "x-connection"] {
            let name = HeaderName::from_static(name);
            assert!(!is_hop_by_hop(&name, &[]), "{name}");
        }
        let listed = [HeaderName::from_static("x-hop")];
        assert!(is_hop_by_hop(&HeaderName::from_static("x-hop"), &listed));
    }

    #[test]
    fn hop_by_hop_and_spoofed_headers_are_dropped() {
        let mut from = HeaderMap::new();
        from.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-private"),
        );
        from.insert("x-private", HeaderValue::from_static("1"));
        from.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        from.insert("x-verified-event-id", HeaderValue::from_static("spoof"));
        from.insert("X-Verified-Anything", HeaderValue::from_static("spoof"));
        from.append("x-custom", HeaderValue::from_static("a"));
        from.append("x-custom", HeaderValue::from_static("b"));
        let mut to = HeaderMap::new();
        for (name, value) in end_to_end(&from) {
            to.append(name.clone(), value.clone());
        }
        assert_eq!(to.len(), 2);
        let custom: Vec<_> = to.get_all("x-custom").iter().collect();
        assert_eq!(custom, vec!["a", "b"]);
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        assert_eq!(
            forwarded_for(&h, "10.0.0.1".parse().expect("ip")),
            "10.0.0.1"
        );
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("10.0.0.1"));
        assert_eq!(
            forwarded_for(&h, "::1".parse().expect("ip")),
            "10.0.0.1, ::1"
        );
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("  "));
        assert_eq!(forwarded_for(&h, "::1".parse().expect("ip")), "::1");
    }

    fn request(headers: &[(&str, &[u8])]) -> http::request::Parts {
        let mut request = http::Request::new(());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = "/hooks/a?b=c".parse().expect("uri");
        for (name, value) in headers {
            request.headers_mut().append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_bytes(value).expect("value"),
            );
        }
        request.into_parts().0
    }

    fn wire(encoded: &Encoded<'_>) -> String {
        let mut bytes = encoded.head.clone();
        bytes.extend_from_slice(encoded.rest);
        String::from_utf8(bytes).expect("ASCII here")
    }

    #[test]
    fn the_request_as_the_app_sees_it() {
        let parts = request(&[
            ("host", b"hooks.example.com"),
            ("content-type", b"application/json"),
            ("x-forwarded-for", b"203.0.113.9"),
            ("content-length", b"2"),
            ("connection", b"keep-alive, x-hop"),
            ("x-hop", b"1"),
            ("x-verified-source", b"spoofed"),
            ("x-multi", b"1"),
            ("x-multi", b"2"),
        ]);
        let stamp = Stamp {
            event_id: "evt_1",
            source: "stripe",
            event_type: Some("invoice.paid"),
        };
        let peer = Some("10.1.2.3".parse().expect("ip"));
        let encoded = encode(
            &parts,
            "/hooks/a?b=c",
            "app:3000",
            b"{}",
            Added {
                peer,
                mark: Mark::Verified(stamp),
                trace: None,
            },
            true,
        );
        assert_eq!(
            wire(&encoded),
            "POST /hooks/a?b=c HTTP/1.1\r\n\
             host: hooks.example.com\r\n\
             content-type: application/json\r\n\
             x-multi: 1\r\n\
             x-multi: 2\r\n\
             x-forwarded-for: 203.0.113.9, 10.1.2.3\r\n\
             x-verified-event-id: evt_1\r\n\
             x-verified-source: stripe\r\n\
             x-verified-event-type: invoice.paid\r\n\
             content-length: 2\r\n\
             \r\n\
             {}"
        );
    }

    #[test]
    fn without_a_peer_or_stamp_only_the_senders_headers_go() {
        let parts = request(&[("x-forwarded-for", b"203.0.113.9")]);
        let encoded = encode(
            &parts,
            "/",
            "app:3000",
            b"",
            Added {
                peer: None,
                mark: Mark::Unmatched,
                trace: None,
            },
            true,
        );
        assert_eq!(
            wire(&encoded),
            "POST / HTTP/1.1\r\n\
             x-forwarded-for: 203.0.113.9\r\n\
             host: app:3000\r\n\
             content-length: 0\r\n\r\n"
        );
    }

    #[test]
    fn with_a_trace_the_senders_context_is_replaced_by_hookgates() {
        let sender = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parts = request(&[("traceparent", sender), ("tracestate", b"vendor=x")]);
        // Without a trace of hookgate's, the sender's headers pass untouched.
        let text = wire(&encode(
            &parts,
            "/",
            "app",
            b"",
            Added {
                peer: None,
                mark: Mark::Unmatched,
                trace: None,
            },
            true,
        ));
        assert!(text.contains("traceparent: 00-4bf92f35"), "{text}");
        assert!(text.contains("tracestate: vendor=x"), "{text}");
        let ours = Parent::parse(b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .expect("a traceparent");
        let text = wire(&encode(
            &parts,
            "/",
            "app",
            b"",
            Added {
                peer: None,
                mark: Mark::Unmatched,
                trace: Some(ours),
            },
            true,
        ));
        assert_eq!(text.matches("traceparent:").count(), 1, "{text}");
        assert!(
            text.contains(
                "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
            ),
            "{text}"
        );
        assert!(!text.contains("tracestate"), "{text}");
        assert!(!text.contains("4bf92f35"), "{text}");
    }

    #[test]
    fn a_stamp_value_that_cannot_be_a_header_is_left_out() {
        let parts = request(&[]);
        let stamp = Stamp {
            event_id: "evt\r\nx-injected: 1",
            source: "s",
            event_type: Some("t\u{7f}"),
        };
        let text = wire(&encode(
            &parts,
            "/",
            "app",
            b"",
            Added {
                peer: None,
                mark: Mark::Verified(stamp),
                trace: None,
            },
            true,
        ));
        assert!(!text.contains("x-injected"), "{text}");
        assert!(!text.contains("x-verified-event-id"), "{text}");
        assert!(!text.contains("x-verified-event-type"), "{text}");
        assert!(text.contains("x-verified-source: s\r\n"), "{text}");
    }

    #[test]
    fn header_value_check_matches_http() {
        for b in 0..=255u8 {
            let Ok(text) = std::str::from_utf8(std::slice::from_ref(&b)) else {
                continue;
            };
            assert_eq!(
                is_header_value(text),
                HeaderValue::from_str(text).is_ok(),
                "byte {b:#x}"
            );
        }
        assert!(is_header_value("caf\u{e9} ok"));
        assert_eq!(
            is_header_value("caf\u{e9} ok"),
            HeaderValue::from_str("caf\u{e9} ok").is_ok()
        );
    }

    #[test]
    fn request_target_keeps_path_and_query() {
        let up: Uri = "http://127.0.0.1:3000".parse().expect("uri");
        let pq: PathAndQuery = "/webhooks/stripe?x=1&y".parse().expect("pq");
        assert_eq!(request_target(&up, Some(&pq)), "/webhooks/stripe?x=1&y");
        let up: Uri = "http://app:3000/base/".parse().expect("uri");
        assert_eq!(
            request_target(&up, Some(&pq)),
            "/base/webhooks/stripe?x=1&y"
        );
    }
}
