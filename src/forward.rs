//! Forwarding to the app: a pooled keep-alive client, header hygiene, timeouts.
//!
//! The request goes out with its method, path, query, headers (minus hop-by-hop)
//! and body byte for byte; the app's status, headers and body come back as they
//! are. A refused connection is `Unavailable` (502), no answer in time is
//! `Timeout` (504).

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{PathAndQuery, Uri};
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::outcome::Body;

/// Largest app response hookgate relays; webhook answers are small.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

pub const X_VERIFIED_EVENT_ID: &str = "x-verified-event-id";
pub const X_VERIFIED_SOURCE: &str = "x-verified-source";
pub const X_VERIFIED_EVENT_TYPE: &str = "x-verified-event-type";
const X_VERIFIED_PREFIX: &str = "x-verified-";
const X_FORWARDED_FOR: &str = "x-forwarded-for";

// The same names as values: a `&str` name is parsed and validated again on
// every insert, a `HeaderName` constant is not.
const X_VERIFIED_EVENT_ID_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_EVENT_ID);
const X_VERIFIED_SOURCE_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_SOURCE);
const X_VERIFIED_EVENT_TYPE_NAME: HeaderName = HeaderName::from_static(X_VERIFIED_EVENT_TYPE);
const X_FORWARDED_FOR_NAME: HeaderName = HeaderName::from_static(X_FORWARDED_FOR);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("app unreachable: {0}")]
    Unavailable(String),
    #[error("app did not answer within {0:?}")]
    Timeout(Duration),
}

/// What hookgate vouches for, added to a forwarded request.
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    pub event_id: &'a str,
    pub source: &'a str,
    pub event_type: Option<&'a str>,
}

/// A pooled HTTP client to the app, shared by every request and kept across reloads.
#[derive(Clone)]
pub struct Forwarder {
    client: Client<HttpsConnector<HttpConnector>, Body>,
}

impl Default for Forwarder {
    fn default() -> Self {
        Self::new()
    }
}

impl Forwarder {
    pub fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        connector.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(crate::tls::client_config())
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(256)
            .pool_timer(TokioTimer::new())
            .build(connector);
        Forwarder { client }
    }

    /// Sends `parts` + `body` to `upstream`, keeping the path and query, and
    /// returns the app's whole answer.
    pub async fn send(
        &self,
        upstream: &Uri,
        timeout: Duration,
        parts: &http::request::Parts,
        body: Bytes,
        peer: Option<IpAddr>,
        stamp: Option<Stamp<'_>>,
    ) -> Result<Response<Body>, Error> {
        let uri = upstream_uri(upstream, parts.uri.path_and_query())?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        copy_end_to_end(&parts.headers, headers);
        if let Some(ip) = peer {
            append_forwarded_for(headers, ip);
        }
        if let Some(stamp) = stamp {
            set_stamp(headers, stamp);
        }

        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| Error::Unavailable(describe(&e)))?;
            let (mut parts, incoming) = response.into_parts();
            let body = Limited::new(incoming, MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| Error::Unavailable(format!("reading the app's response: {e}")))?
                .to_bytes();
            strip_hop_by_hop(&mut parts.headers);
            // The app's HTTP version is its own connection's business; the
            // sender's connection keeps the version it spoke.
            parts.version = http::Version::default();
            Ok(Response::from_parts(parts, Full::new(body)))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }
}

fn describe(e: &hyper_util::client::legacy::Error) -> String {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn upstream_uri(upstream: &Uri, path_and_query: Option<&PathAndQuery>) -> Result<Uri, Error> {
    let mut builder = Uri::builder();
    if let Some(scheme) = upstream.scheme() {
        builder = builder.scheme(scheme.clone());
    }
    if let Some(authority) = upstream.authority() {
        builder = builder.authority(authority.clone());
    }
    let base = upstream.path().trim_end_matches('/');
    let pq = path_and_query.map(|pq| pq.as_str()).unwrap_or("/");
    builder
        .path_and_query(format!("{base}{pq}"))
        .build()
        .map_err(|e| Error::Unavailable(format!("building the upstream URI: {e}")))
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1).
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

fn is_hop_by_hop(name: &HeaderName, connection_listed: &[HeaderName]) -> bool {
    name == header::UPGRADE || HOP_BY_HOP.contains(name) || connection_listed.contains(name)
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

/// Copies the end-to-end headers of a client request, dropping hop-by-hop ones
/// and any `X-Verified-*` a client sent (only hookgate may set those).
fn copy_end_to_end(from: &HeaderMap, to: &mut HeaderMap) {
    let listed = connection_listed(from);
    for (name, value) in from {
        if is_hop_by_hop(name, &listed) || is_verified_header(name) {
            continue;
        }
        to.append(name.clone(), value.clone());
    }
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

pub fn is_verified_header(name: &HeaderName) -> bool {
    name.as_str().starts_with(X_VERIFIED_PREFIX)
}

/// Removes every client-sent `X-Verified-*` header.
pub fn strip_verified(headers: &mut HeaderMap) {
    if !headers.keys().any(is_verified_header) {
        return;
    }
    let doomed: Vec<HeaderName> = headers
        .keys()
        .filter(|name| is_verified_header(name))
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(&name);
    }
}

fn append_forwarded_for(headers: &mut HeaderMap, ip: IpAddr) {
    let value = match headers
        .get(&X_FORWARDED_FOR_NAME)
        .and_then(|v| v.to_str().ok())
    {
        Some(existing) if !existing.trim().is_empty() => format!("{existing}, {ip}"),
        _ => ip.to_string(),
    };
    // `insert` replaces every earlier value, as a `remove` then `insert` would.
    if let Ok(value) = HeaderValue::try_from(value) {
        headers.insert(X_FORWARDED_FOR_NAME, value);
    }
}

fn set_stamp(headers: &mut HeaderMap, stamp: Stamp<'_>) {
    let mut set = |name: HeaderName, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(X_VERIFIED_EVENT_ID_NAME, stamp.event_id);
    set(X_VERIFIED_SOURCE_NAME, stamp.source);
    if let Some(t) = stamp.event_type {
        set(X_VERIFIED_EVENT_TYPE_NAME, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        copy_end_to_end(&from, &mut to);
        assert_eq!(to.len(), 2);
        let custom: Vec<_> = to.get_all("x-custom").iter().collect();
        assert_eq!(custom, vec!["a", "b"]);
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, "10.0.0.1".parse().expect("ip"));
        append_forwarded_for(&mut h, "::1".parse().expect("ip"));
        assert_eq!(
            h.get(X_FORWARDED_FOR).map(|v| v.as_bytes()),
            Some(&b"10.0.0.1, ::1"[..])
        );
    }

    #[test]
    fn upstream_uri_keeps_path_and_query() {
        let up: Uri = "http://127.0.0.1:3000".parse().expect("uri");
        let pq: PathAndQuery = "/webhooks/stripe?x=1&y".parse().expect("pq");
        let uri = upstream_uri(&up, Some(&pq)).expect("uri");
        assert_eq!(
            uri.to_string(),
            "http://127.0.0.1:3000/webhooks/stripe?x=1&y"
        );
        let up: Uri = "http://app:3000/base/".parse().expect("uri");
        let uri = upstream_uri(&up, Some(&pq)).expect("uri");
        assert_eq!(
            uri.to_string(),
            "http://app:3000/base/webhooks/stripe?x=1&y"
        );
    }
}
