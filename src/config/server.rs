//! `[server]` and `[admin]`: the public listener, the application behind it,
//! connection bounds and TLS; the admin listener and its token.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use http::Uri;
use toml::Spanned;

use super::check::{Check, resolve_secret};
use super::raw::{RawAdmin, RawServer};
use crate::allow::Ranges;
use crate::secret::Secret;

#[derive(Debug, Clone)]
pub struct Server {
    pub listen: SocketAddr,
    pub upstream: Uri,
    pub upstream_timeout: Duration,
    pub max_body_bytes: usize,
    pub unmatched: Unmatched,
    /// Open connections on the public listener beyond which a new one is
    /// answered `503` and closed (read at start).
    pub max_connections: usize,
    /// A sender has this long to send its request headers, and then this long
    /// again for its body (slow clients cost a timer, not a worker).
    pub request_read_timeout: Duration,
    /// How long the server waits on the client, and how long connections live.
    pub lifetimes: Lifetimes,
    /// Largest app answer buffered for the sender; a larger one is relayed
    /// as its status and headers with an empty body.
    pub max_response_bytes: usize,
    /// Keep connections to the app open between requests (off for apps that
    /// misframe their answers: each request then gets a connection of its own).
    pub upstream_keepalive: bool,
    pub underscores_in_headers: Underscores,
    /// Peers whose `X-Forwarded-For` is believed when a source's
    /// `allow_ips` is checked (`crate::allow::client_address`); empty:
    /// the TCP peer is the client.
    pub trusted_proxies: Ranges,
    pub tls: Option<Tls>,
}

/// The three bounds on a connection's life (`crate::server` enforces them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    pub write_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connection_age: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes {
            write_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_connection_age: Duration::from_secs(300),
        }
    }
}

/// What happens to request headers whose name holds `_` (servers such as
/// WSGI and Rack read `X_Foo` as `X-Foo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Underscores {
    /// Removed before anything reads them, as nginx does by default.
    Drop,
    /// Kept, unless they spell a name only hookgate or the framing may set.
    Forward,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatched {
    Reject,
    Forward,
}

#[derive(Debug, Clone)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, Clone)]
pub struct Admin {
    pub listen: SocketAddr,
    /// Bearer token for `/dlq` and `/dlq/replay`; `None` keeps them off.
    pub token: Option<Secret>,
    /// The file behind a `{ file = … }` token, watched for changes.
    pub token_file: Option<PathBuf>,
    /// Events the trail keeps (DESIGN §7a); 0 turns it off.
    pub trail_max_events: usize,
}

/// More events than a trail is for: a typo, not a setting.
const MAX_TRAIL_EVENTS: usize = 10_000_000;
const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BODY_BYTES: usize = 1_048_576;
const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
const DEFAULT_REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;
const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9090);

/// `url` with any `user:password@` part of its authority replaced by `[redacted]@`.
pub(super) fn without_userinfo(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}[redacted]{}", &url[..start], &url[start + at..]),
        None => url.to_owned(),
    }
}

pub(super) fn build_server(c: &mut Check<'_>, raw: Option<&Spanned<RawServer>>) -> Option<Server> {
    let Some(raw) = raw else {
        if !c.poisoned.contains("server") {
            c.push(
                None,
                "server",
                "the [server] table is missing; it needs at least listen and upstream",
            );
        }
        return None;
    };
    let table = Some(raw.span());
    let r = raw.get_ref();
    let listen = c
        .required(&r.listen, table.clone(), "server.listen")
        .and_then(|v| c.socket_addr(v, "server.listen"));
    let upstream = c
        .required(&r.upstream, table.clone(), "server.upstream")
        .and_then(|v| upstream_uri(c, v, listen));
    let upstream_timeout = c.duration(
        r.upstream_timeout.as_ref(),
        "server.upstream_timeout",
        DEFAULT_UPSTREAM_TIMEOUT,
    );
    let max_body_bytes = c.positive(
        r.max_body_bytes.as_ref(),
        "server.max_body_bytes",
        DEFAULT_MAX_BODY_BYTES,
    );
    let max_connections = c.positive(
        r.max_connections.as_ref(),
        "server.max_connections",
        DEFAULT_MAX_CONNECTIONS,
    );
    let request_read_timeout = c.duration(
        r.request_read_timeout.as_ref(),
        "server.request_read_timeout",
        DEFAULT_REQUEST_READ_TIMEOUT,
    );
    let defaults = Lifetimes::default();
    let write_timeout = c.duration_within(
        r.write_timeout.as_ref(),
        "server.write_timeout",
        defaults.write_timeout,
        Duration::from_secs(1)..=Duration::from_secs(600),
    );
    let idle_timeout = c.duration_within(
        r.idle_timeout.as_ref(),
        "server.idle_timeout",
        defaults.idle_timeout,
        Duration::from_secs(1)..=Duration::from_secs(3600),
    );
    let max_connection_age = c.duration_within(
        r.max_connection_age.as_ref(),
        "server.max_connection_age",
        defaults.max_connection_age,
        idle_timeout.unwrap_or(Duration::from_secs(1))..=Duration::from_secs(24 * 3600),
    );
    let max_response_bytes = c.positive(
        r.max_response_bytes.as_ref(),
        "server.max_response_bytes",
        DEFAULT_MAX_RESPONSE_BYTES,
    );
    let max_response_bytes = match (max_response_bytes, &r.max_response_bytes) {
        (Some(n), Some(v)) if !(1024..=64 * 1024 * 1024).contains(&n) => {
            c.at(
                v,
                "server.max_response_bytes",
                format!("{n} is out of range: give 1024 to 67108864 bytes"),
            );
            None
        }
        (n, _) => n,
    };
    let underscores_in_headers = c.word(
        r.underscores_in_headers.as_ref(),
        "server.underscores_in_headers",
        &[
            ("drop", Underscores::Drop),
            ("forward", Underscores::Forward),
        ],
        Some(Underscores::Drop),
    );
    let unmatched = c.word(
        r.unmatched.as_ref(),
        "server.unmatched",
        &[
            ("reject", Unmatched::Reject),
            ("forward", Unmatched::Forward),
        ],
        Some(Unmatched::Reject),
    );
    let trusted_proxies = match &r.trusted_proxies {
        None => Some(Ranges::default()),
        Some(list) => c.ip_ranges(list, "server.trusted_proxies"),
    };
    let tls = match &r.tls {
        None => Some(None),
        Some(t) => {
            let span = Some(t.span());
            let cert = c
                .required(&t.get_ref().cert, span.clone(), "server.tls.cert")
                .and_then(|v| c.readable_path(v, "server.tls.cert"));
            let key = c
                .required(&t.get_ref().key, span, "server.tls.key")
                .and_then(|v| c.readable_path(v, "server.tls.key"));
            match (cert, key) {
                (Some(cert), Some(key)) => Some(Some(Tls { cert, key })),
                _ => None,
            }
        }
    };
    Some(Server {
        listen: listen?,
        upstream: upstream?,
        upstream_timeout: upstream_timeout?,
        max_body_bytes: max_body_bytes?,
        unmatched: unmatched?,
        max_connections: max_connections?,
        request_read_timeout: request_read_timeout?,
        lifetimes: Lifetimes {
            write_timeout: write_timeout?,
            idle_timeout: idle_timeout?,
            max_connection_age: max_connection_age?,
        },
        max_response_bytes: max_response_bytes?,
        upstream_keepalive: r.upstream_keepalive.as_ref().is_none_or(|v| *v.get_ref()),
        underscores_in_headers: underscores_in_headers?,
        trusted_proxies: trusted_proxies?,
        tls: tls?,
    })
}

fn upstream_uri(c: &mut Check<'_>, v: &Spanned<String>, listen: Option<SocketAddr>) -> Option<Uri> {
    const FIELD: &str = "server.upstream";
    let raw = v.get_ref();
    // The URL as shown in messages: credentials never appear, even in a
    // value that fails to parse.
    let shown = without_userinfo(raw);
    let text = shown.as_str();
    if shown != *raw {
        c.at(
            v,
            FIELD,
            format!("\"{text}\" carries credentials; hookgate does not send them to the app"),
        );
        return None;
    }
    let uri: Uri = match raw.parse() {
        Ok(u) => u,
        Err(e) => {
            c.at(v, FIELD, format!("\"{text}\" is not a URI ({e})"));
            return None;
        }
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        c.at(
            v,
            FIELD,
            format!("\"{text}\" must be an absolute http:// or https:// URI"),
        );
        return None;
    }
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        c.at(v, FIELD, format!("\"{text}\" has no host"));
        return None;
    };
    if uri
        .path_and_query()
        .is_some_and(|pq| !matches!(pq.as_str(), "" | "/"))
    {
        c.at(
            v,
            FIELD,
            format!(
                "\"{text}\" has a path or query; give only scheme, host and port \
                 (requests are forwarded with their own path)"
            ),
        );
        return None;
    }
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    if let Some(l) = listen
        && points_at_listener(host, port, l)
    {
        c.at(
            v,
            FIELD,
            format!("\"{text}\" is hookgate's own listener ({l}); it must be the application"),
        );
        return None;
    }
    Some(uri)
}

fn points_at_listener(host: &str, port: u16, listen: SocketAddr) -> bool {
    if port != listen.port() || port == 0 {
        return false;
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: Option<std::net::IpAddr> = if host.eq_ignore_ascii_case("localhost") {
        Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    } else {
        host.parse().ok()
    };
    match ip {
        Some(ip) => {
            ip == listen.ip()
                || (listen.ip().is_unspecified() && (ip.is_loopback() || ip.is_unspecified()))
        }
        None => false,
    }
}

pub(super) fn build_admin(
    c: &mut Check<'_>,
    raw: Option<&Spanned<RawAdmin>>,
    server_listen: Option<SocketAddr>,
) -> Option<Admin> {
    let listen = match raw.and_then(|r| r.get_ref().listen.as_ref()) {
        None if c.poisoned.contains("admin.listen") => None,
        None => Some(DEFAULT_ADMIN_LISTEN),
        Some(v) => {
            let listen = c.socket_addr(v, "admin.listen")?;
            if let Some(s) = server_listen
                && s.port() == listen.port()
                && s.port() != 0
                && (s.ip() == listen.ip()
                    || s.ip().is_unspecified()
                    || listen.ip().is_unspecified())
            {
                c.at(
                    v,
                    "admin.listen",
                    format!("{listen} clashes with server.listen ({s}); use another port"),
                );
                return None;
            }
            Some(listen)
        }
    };
    let mut token_files = Vec::new();
    let token = match raw.and_then(|r| r.get_ref().token.as_ref()) {
        None => Some(None),
        Some(entry) => resolve_secret(c, entry, "admin.token", &mut token_files)
            .map(|(secret, _)| Some(secret)),
    };
    let trail_max_events = match raw.and_then(|r| r.get_ref().trail_max_events.as_ref()) {
        None => Some(crate::trail::DEFAULT_MAX_EVENTS),
        Some(v) => match usize::try_from(*v.get_ref()) {
            Ok(n) if n <= MAX_TRAIL_EVENTS => Some(n),
            _ => {
                c.at(
                    v,
                    "admin.trail_max_events",
                    format!("must be a whole number from 0 (no trail) to {MAX_TRAIL_EVENTS}"),
                );
                None
            }
        },
    };
    Some(Admin {
        listen: listen?,
        token: token?,
        token_file: token_files.pop(),
        trail_max_events: trail_max_events?,
    })
}
