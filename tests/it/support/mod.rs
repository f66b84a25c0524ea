//! Test support: real processes on loopback, nothing mocked inside hookgate.
//!
//! - [`upstream`]: the recording application hookgate forwards to.
//! - [`hookgate`]: the real `hookgate` binary, spawned with a config file.
//! - [`browser`]: a real headless chromium driven over WebDriver.
//! - [`redis`]: a real `redis-server` (and cluster) on free ports.
//! - [`prometheus`]: a real `prometheus` server scraping hookgate.
//! - [`keyserver`]: an HTTPS key server with a test CA (provider keys).
//! - [`raw_app`], [`raw_h2`]: an app and an h2 client on raw sockets, byte for byte.
//!
//! This module holds what they share: the HTTP client, responses, the config
//! builder, the test sources with their secrets, and signing.

#![allow(dead_code)] // each test file uses a different part of the helpers

pub mod browser;
pub mod collector;
pub mod hookgate;
pub mod keyserver;
pub mod process;
pub mod prometheus;
pub mod raw_app;
pub mod raw_h2;
pub mod redis;
pub mod sentinel;
pub mod upstream;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use ::hookgate::scheme::{Encoding, Generic, Locator, Scheme};
use ::hookgate::secret::Secret;

pub use self::hookgate::Hookgate;
pub use self::upstream::{Reply, Upstream};

/// The bound on every wait in the suite: a process starting, a request
/// answering, a log line or an upstream request arriving.
pub const WAIT: Duration = Duration::from_secs(20);

/// The body the recording upstream answers with by default, so a test can tell
/// the app's own 200 from one hookgate made up.
pub const APP_OK: &str = "ok";

// Secret values. Each is distinct so a test can grep the process output for it.
pub const STRIPE_SECRET: &str = "whsec_itStripeCurrent7f3b9c2d";
pub const STRIPE_PREVIOUS_SECRET: &str = "whsec_itStripePrevious41d0e2aa";
pub const GITHUB_SECRET: &str = "it-github-secret-5c2e81f9";
pub const SHOPIFY_SECRET: &str = "it-shopify-secret-a9d4f07b";
pub const SLACK_SECRET: &str = "it-slack-signing-secret-0b7e36c1";
/// `whsec_` + base64("hookgate-it-standard-key-32bytes").
pub const STANDARD_SECRET: &str = "whsec_aG9va2dhdGUtaXQtc3RhbmRhcmQta2V5LTMyYnl0ZXM=";
pub const ACME_SECRET: &str = "it-acme-secret-e41f77d2";
/// A secret no source is configured with.
pub const WRONG_SECRET: &str = "whsec_itNotConfiguredAnywhere99";
/// A well-formed `standard` secret no source is configured with.
pub const WRONG_STANDARD_SECRET: &str = "whsec_bm90LXRoZS1jb25maWd1cmVkLXN0YW5kYXJkLWtleSE=";

/// Every literal secret above, for "never printed" checks.
pub const ALL_SECRETS: &[&str] = &[
    STRIPE_SECRET,
    STRIPE_PREVIOUS_SECRET,
    GITHUB_SECRET,
    SHOPIFY_SECRET,
    SLACK_SECRET,
    STANDARD_SECRET,
    ACME_SECRET,
];

/// Current unix time in seconds.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// Hex SHA-256: the event id hookgate derives when a scheme carries none.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

// ---------------------------------------------------------------------------
// Responses and the client

/// A response as the sender sees it.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {self:?}"))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }

    /// `Retry-After` as integer seconds; panics when absent or not an integer.
    pub fn retry_after(&self) -> u64 {
        let value = self
            .header("retry-after")
            .unwrap_or_else(|| panic!("no Retry-After header: {self:?}"));
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("Retry-After {value:?} is not integer seconds"))
    }

    /// A response hookgate made itself: this status, `application/json`, this exact body.
    #[track_caller]
    pub fn assert_json(&self, status: u16, body: Value) {
        assert_eq!(self.status, status, "status of {self:?}");
        let content_type = self.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("application/json"),
            "content-type {content_type:?} of {self:?}"
        );
        assert_eq!(self.json(), body, "body of {self:?}");
    }

    /// A §3 rejection: `status` with `{"error": code}`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        self.assert_json(status, json!({ "error": code }));
    }

    /// `200 {"duplicate":true,"event_id":…}`.
    #[track_caller]
    pub fn assert_duplicate(&self, event_id: &str) {
        self.assert_json(200, json!({ "duplicate": true, "event_id": event_id }));
    }

    /// The upstream's default answer, passed back by hookgate.
    #[track_caller]
    pub fn assert_app_ok(&self) {
        assert_eq!(
            (self.status, self.text().as_str()),
            (200, APP_OK),
            "expected the app's own answer: {self:?}"
        );
    }
}

/// Sends one request on a fresh connection; panics when it fails or takes longer than [`WAIT`].
pub async fn http(
    method: Method,
    url: &str,
    headers: &[(String, String)],
    body: impl Into<Bytes>,
) -> Resp {
    match tokio::time::timeout(WAIT, try_http(method.clone(), url, headers, body)).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => panic!("{method} {url} failed: {e}"),
        Err(_) => panic!("{method} {url} did not answer within {WAIT:?}"),
    }
}

/// Sends one request on a fresh connection (no pooling, so no test sees a
/// connection another request left open).
pub async fn try_http(
    method: Method,
    url: &str,
    headers: &[(String, String)],
    body: impl Into<Bytes>,
) -> Result<Resp, String> {
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut request = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(body.into()))
        .map_err(|e| e.to_string())?;
    for (name, value) in headers {
        request.headers_mut().append(
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("{name}: {e}"))?,
            value.parse().map_err(|e| format!("{name}: {e}"))?,
        );
    }
    let response = client
        .request(request)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Resp {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

pub async fn get(url: &str) -> Resp {
    http(Method::GET, url, &[], Bytes::new()).await
}

/// Header pairs from `("Name", "value")` literals.
pub fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// A response read off a raw socket (see [`raw_request`]).
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Writes `request` bytes as they are to `addr` and reads the answer until
/// the server closes (the request should say `Connection: close`).
pub async fn raw_request(addr: SocketAddr, request: &[u8]) -> RawResponse {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("raw request to {addr} did not finish within {WAIT:?}"))
        .unwrap_or_else(|e| panic!("raw request to {addr} failed: {e}"));
    parse_raw_response(&raw)
}

fn parse_raw_response(raw: &[u8]) -> RawResponse {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    RawResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size line");
        let size_field = String::from_utf8_lossy(&rest[..line_end]);
        let size_hex = size_field.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).expect("hex chunk size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

// ---------------------------------------------------------------------------
// Sources, events and signing

/// How one `secrets` entry is written in the config.
#[derive(Debug, Clone)]
pub enum SecretSpec {
    Literal(String),
    Env(String),
    File(PathBuf),
}

impl SecretSpec {
    fn toml(&self) -> String {
        match self {
            SecretSpec::Literal(s) => toml_str(s),
            SecretSpec::Env(name) => format!("{{ env = {} }}", toml_str(name)),
            SecretSpec::File(path) => {
                format!("{{ file = {} }}", toml_str(&path.to_string_lossy()))
            }
        }
    }
}

/// One `[[source]]` of a test config, and how to sign for it.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub name: String,
    pub path: String,
    pub scheme: Scheme,
    pub secrets: Vec<SecretSpec>,
    /// The value of each entry in `secrets`, for signing.
    pub secret_values: Vec<String>,
    pub tolerance: Option<String>,
    pub event_types: Vec<String>,
    /// Raw `key = value` lines written with the source's own keys.
    pub extra_keys: String,
    /// Raw TOML written after the source's keys (its `[source.generic]` table).
    pub extra_toml: String,
}

impl SourceSpec {
    fn new(name: &str, scheme: Scheme, secret: &str) -> SourceSpec {
        SourceSpec {
            name: name.to_owned(),
            path: format!("/webhooks/{name}"),
            scheme,
            secrets: vec![SecretSpec::Literal(secret.to_owned())],
            secret_values: vec![secret.to_owned()],
            tolerance: None,
            event_types: Vec::new(),
            extra_keys: String::new(),
            extra_toml: String::new(),
        }
    }

    pub fn stripe() -> SourceSpec {
        SourceSpec::new("stripe", Scheme::Stripe, STRIPE_SECRET).tolerance("5m")
    }

    /// A source of catalog provider `name` (one that signs no URL).
    pub fn provider(name: &str, secret: &str) -> SourceSpec {
        let scheme = Scheme::by_name(name, None)
            .unwrap_or_else(|| panic!("{name} is not a catalog provider"));
        SourceSpec::new(name, scheme, secret)
    }

    pub fn github() -> SourceSpec {
        SourceSpec::new("github", Scheme::Github, GITHUB_SECRET)
    }

    pub fn shopify() -> SourceSpec {
        SourceSpec::new("shopify", Scheme::Shopify, SHOPIFY_SECRET)
    }

    pub fn slack() -> SourceSpec {
        SourceSpec::new("slack", Scheme::Slack, SLACK_SECRET).tolerance("5m")
    }

    pub fn standard() -> SourceSpec {
        SourceSpec::new("standard", Scheme::Standard, STANDARD_SECRET).tolerance("5m")
    }

    /// A `generic` sender: hex HMAC with a prefix over `{id}.{timestamp}.{body}`,
    /// id in a header, type at a JSON pointer.
    pub fn acme() -> SourceSpec {
        let generic = Generic {
            signature_prefix: Some("sha256=".to_owned()),
            signed_payload: "{id}.{timestamp}.{body}".to_owned(),
            timestamp_header: Some(HeaderName::from_static("x-acme-timestamp")),
            event_id: Some(Locator::Header(HeaderName::from_static("x-acme-delivery"))),
            event_type: Some(Locator::Pointer("/kind".to_owned())),
            ..Generic::new(HeaderName::from_static("x-acme-signature"), Encoding::Hex)
        };
        let mut spec = SourceSpec::new("acme", Scheme::Generic(Box::new(generic)), ACME_SECRET)
            .tolerance("5m");
        spec.extra_toml = r#"
[source.generic]
signature_header = "X-Acme-Signature"
signature_prefix = "sha256="
encoding = "hex"
signed_payload = "{id}.{timestamp}.{body}"
timestamp_header = "X-Acme-Timestamp"
event_id = { header = "X-Acme-Delivery" }
event_type = { pointer = "/kind" }
"#
        .to_owned();
        spec
    }

    /// A `generic` sender with no event type and no event id: base64 HMAC of
    /// the body alone, so the id is the body's SHA-256.
    pub fn bare() -> SourceSpec {
        let generic = Generic::new(
            HeaderName::from_static("x-bare-signature"),
            Encoding::Base64,
        );
        let mut spec = SourceSpec::new("bare", Scheme::Generic(Box::new(generic)), ACME_SECRET);
        spec.extra_toml = r#"
[source.generic]
signature_header = "X-Bare-Signature"
encoding = "base64"
"#
        .to_owned();
        spec
    }

    /// One source of each built-in scheme plus a generic one.
    pub fn every_scheme() -> Vec<SourceSpec> {
        vec![
            SourceSpec::stripe(),
            SourceSpec::github(),
            SourceSpec::shopify(),
            SourceSpec::slack(),
            SourceSpec::standard(),
            SourceSpec::acme(),
        ]
    }

    /// Renames the source; its path becomes `/webhooks/{name}`.
    pub fn named(mut self, name: &str) -> SourceSpec {
        self.name = name.to_owned();
        self.path = format!("/webhooks/{name}");
        self
    }

    pub fn path(mut self, path: &str) -> SourceSpec {
        self.path = path.to_owned();
        self
    }

    pub fn tolerance(mut self, tolerance: &str) -> SourceSpec {
        self.tolerance = Some(tolerance.to_owned());
        self
    }

    pub fn event_types(mut self, patterns: &[&str]) -> SourceSpec {
        self.event_types = patterns.iter().map(|p| (*p).to_owned()).collect();
        self
    }

    /// Adds a raw `key = value` line to the source's table.
    pub fn key(mut self, line: &str) -> SourceSpec {
        self.extra_keys.push_str(line);
        self.extra_keys.push('\n');
        self
    }

    /// Adds a `[source.ordering]` version gate (JSON pointers into the body).
    pub fn ordering(mut self, resource: &str, version: &str) -> SourceSpec {
        self.extra_toml += &format!(
            "\n[source.ordering]\nresource = {}\nversion = {}\n",
            toml_str(resource),
            toml_str(version)
        );
        self
    }

    /// Replaces `secrets`; `values[i]` is what entry `i` resolves to.
    pub fn secrets(mut self, specs: Vec<SecretSpec>, values: &[&str]) -> SourceSpec {
        assert_eq!(specs.len(), values.len(), "one value per secret entry");
        self.secrets = specs;
        self.secret_values = values.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// Replaces `secrets` with literal entries.
    pub fn literal_secrets(self, values: &[&str]) -> SourceSpec {
        let specs = values
            .iter()
            .map(|v| SecretSpec::Literal((*v).to_owned()))
            .collect();
        self.secrets(specs, values)
    }

    /// The full URL path under this source (`suffix` may carry a query).
    pub fn url_path(&self, suffix: &str) -> String {
        format!("{}{}", self.path, suffix)
    }

    /// The `[[source]]` block.
    pub fn toml(&self) -> String {
        let mut out = String::from("\n[[source]]\n");
        out += &format!("name = {}\n", toml_str(&self.name));
        out += &format!("path = {}\n", toml_str(&self.path));
        out += &format!("scheme = {}\n", toml_str(self.scheme.name()));
        let secrets: Vec<String> = self.secrets.iter().map(SecretSpec::toml).collect();
        out += &format!("secrets = [{}]\n", secrets.join(", "));
        if let Some(tolerance) = &self.tolerance {
            out += &format!("tolerance = {}\n", toml_str(tolerance));
        }
        if !self.event_types.is_empty() {
            let types: Vec<String> = self.event_types.iter().map(|t| toml_str(t)).collect();
            out += &format!("event_types = [{}]\n", types.join(", "));
        }
        out += &self.extra_keys;
        out += &self.extra_toml;
        out
    }

    /// A typical event of this source's sender with this id and type.
    pub fn event(&self, id: &str, event_type: &str) -> Event {
        match &self.scheme {
            Scheme::Stripe => Event::json(
                id,
                Some(event_type),
                json!({
                    "id": id,
                    "object": "event",
                    "type": event_type,
                    "created": now(),
                    "data": { "object": { "id": "in_1", "amount_paid": 4200 } },
                }),
            ),
            Scheme::Github => Event::json(
                id,
                Some(event_type),
                json!({ "action": "opened", "number": 7, "delivery": id }),
            )
            .header("X-GitHub-Event", event_type),
            Scheme::Shopify => Event::json(
                id,
                Some(event_type),
                json!({ "id": 820982911946154508u64, "email": "jon@example.com", "n": id }),
            )
            .header("X-Shopify-Topic", event_type)
            .header("X-Shopify-Shop-Domain", "example.myshopify.com"),
            Scheme::Slack => Event::json(
                id,
                Some(event_type),
                json!({
                    "type": "event_callback",
                    "team_id": "T1",
                    "event_id": id,
                    "event": { "type": event_type, "channel": "C1", "text": "hi" },
                }),
            ),
            Scheme::Standard => Event::json(
                id,
                Some(event_type),
                json!({ "type": event_type, "data": { "n": id } }),
            ),
            Scheme::Generic(g) => {
                let body = json!({ "kind": event_type, "n": id });
                let event_type = g.event_type.as_ref().map(|_| event_type);
                let mut event = Event::json(id, event_type, body);
                if g.event_id.is_none() {
                    event.id = sha256_hex(&event.body);
                }
                event
            }
            other => panic!("no typical event for scheme {}", other.name()),
        }
    }

    /// The signature headers for `event`, signed now with secret 0.
    pub fn sign(&self, event: &Event) -> Vec<(String, String)> {
        self.sign_with(event, 0, now())
    }

    /// The signature headers for `event`, signed at `timestamp` with secret `index`.
    pub fn sign_with(&self, event: &Event, index: usize, timestamp: i64) -> Vec<(String, String)> {
        sign_raw(
            &self.scheme,
            &self.secret_values[index],
            &event.body,
            Some(&event.id),
            timestamp,
        )
    }

    /// Request headers signed with a secret this source is not configured with.
    pub fn forged_headers(&self, event: &Event) -> Vec<(String, String)> {
        let wrong = match self.scheme {
            Scheme::Standard => WRONG_STANDARD_SECRET,
            _ => WRONG_SECRET,
        };
        let signed = sign_raw(&self.scheme, wrong, &event.body, Some(&event.id), now());
        merge_headers(signed, &event.headers)
    }

    /// Everything a sender puts on the request: signature and event headers.
    pub fn request_headers(&self, event: &Event) -> Vec<(String, String)> {
        self.request_headers_with(event, 0, now())
    }

    pub fn request_headers_with(
        &self,
        event: &Event,
        index: usize,
        timestamp: i64,
    ) -> Vec<(String, String)> {
        merge_headers(self.sign_with(event, index, timestamp), &event.headers)
    }
}

/// Signs `body` with a configured secret value (prepared for the scheme first).
pub fn sign_raw(
    scheme: &Scheme,
    secret: &str,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let key = scheme
        .prepare_key(&Secret::new(secret.as_bytes()))
        .unwrap_or_else(|e| panic!("test secret unusable for {}: {e}", scheme.name()));
    scheme
        .sign(&key, body, id, timestamp)
        .unwrap_or_else(|e| panic!("{} cannot sign: {e}", scheme.name()))
}

/// `signed` plus `extra`, where an `extra` header replaces a signed one of the same name.
pub fn merge_headers(
    signed: Vec<(String, String)>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = signed
        .into_iter()
        .filter(|(n, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(n)))
        .collect();
    out.extend(extra.iter().cloned());
    out
}

/// Replaces the value of header `name` (case-insensitive); panics when absent.
pub fn replace_header(headers: &mut [(String, String)], name: &str, value: String) {
    match headers
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        Some(i) => headers[i].1 = value,
        None => panic!("no {name} header in {headers:?}"),
    }
}

/// The value of header `name` (case-insensitive); panics when absent.
pub fn header_value(headers: &[(String, String)], name: &str) -> String {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
}

/// A webhook as a sender would post it, before signing.
#[derive(Debug, Clone)]
pub struct Event {
    /// The id hookgate should derive (and echo in `X-Verified-Event-Id`).
    pub id: String,
    pub event_type: Option<String>,
    pub body: Vec<u8>,
    /// Headers that are not part of the signature (event type, content type, …).
    pub headers: Vec<(String, String)>,
}

impl Event {
    pub fn json(id: &str, event_type: Option<&str>, body: Value) -> Event {
        Event {
            id: id.to_owned(),
            event_type: event_type.map(str::to_owned),
            body: serde_json::to_vec(&body).expect("JSON serializes"),
            headers: headers(&[("Content-Type", "application/json")]),
        }
    }

    /// An event with an arbitrary body (for schemes whose id is a header).
    pub fn raw(id: &str, event_type: Option<&str>, body: impl Into<Vec<u8>>) -> Event {
        Event {
            id: id.to_owned(),
            event_type: event_type.map(str::to_owned),
            body: body.into(),
            headers: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Event {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

// ---------------------------------------------------------------------------
// Config

/// The `[store]` a test config uses.
#[derive(Debug, Clone)]
pub enum StoreSpec {
    Memory,
    Redis(String),
    Cluster(Vec<String>),
    /// `kind = "redis-sentinel"`: the sentinels' URLs and the master name.
    Sentinel(Vec<String>, String),
}

/// Builds a hookgate config file: listeners on `127.0.0.1:0`, one upstream,
/// a store and any number of sources.
#[derive(Debug, Clone)]
pub struct ConfigBuilder {
    pub upstream: String,
    pub upstream_timeout: String,
    pub max_body_bytes: Option<usize>,
    pub unmatched: Option<String>,
    pub store: StoreSpec,
    pub nonce_ttl: Option<String>,
    pub key_prefix: Option<String>,
    /// Raw `key = value` lines added to `[server]`.
    pub server_keys: String,
    /// Raw `key = value` lines added to `[store]`.
    pub store_keys: String,
    pub sources: Vec<SourceSpec>,
}

impl ConfigBuilder {
    pub fn new(upstream: &str) -> ConfigBuilder {
        ConfigBuilder {
            upstream: upstream.to_owned(),
            upstream_timeout: "10s".to_owned(),
            max_body_bytes: None,
            unmatched: None,
            store: StoreSpec::Memory,
            nonce_ttl: None,
            key_prefix: None,
            server_keys: String::new(),
            store_keys: String::new(),
            sources: Vec::new(),
        }
    }

    pub fn source(mut self, source: SourceSpec) -> ConfigBuilder {
        self.sources.push(source);
        self
    }

    pub fn sources(mut self, sources: impl IntoIterator<Item = SourceSpec>) -> ConfigBuilder {
        self.sources.extend(sources);
        self
    }

    pub fn store(mut self, store: StoreSpec) -> ConfigBuilder {
        self.store = store;
        self
    }

    pub fn redis(self, url: &str) -> ConfigBuilder {
        self.store(StoreSpec::Redis(url.to_owned()))
    }

    pub fn upstream_timeout(mut self, timeout: &str) -> ConfigBuilder {
        self.upstream_timeout = timeout.to_owned();
        self
    }

    pub fn max_body_bytes(mut self, max: usize) -> ConfigBuilder {
        self.max_body_bytes = Some(max);
        self
    }

    pub fn unmatched(mut self, policy: &str) -> ConfigBuilder {
        self.unmatched = Some(policy.to_owned());
        self
    }

    pub fn nonce_ttl(mut self, ttl: &str) -> ConfigBuilder {
        self.nonce_ttl = Some(ttl.to_owned());
        self
    }

    pub fn key_prefix(mut self, prefix: &str) -> ConfigBuilder {
        self.key_prefix = Some(prefix.to_owned());
        self
    }

    /// Adds a raw `key = value` line to `[store]` (`min_replicas = 1`, …).
    pub fn store_key(mut self, line: &str) -> ConfigBuilder {
        self.store_keys.push_str(line);
        self.store_keys.push('\n');
        self
    }

    /// Adds a raw `key = value` line to `[server]`.
    pub fn server_key(mut self, line: &str) -> ConfigBuilder {
        self.server_keys.push_str(line);
        self.server_keys.push('\n');
        self
    }

    pub fn toml(&self) -> String {
        let mut out = String::from("[server]\nlisten = \"127.0.0.1:0\"\n");
        out += &self.server_keys;
        out += &format!("upstream = {}\n", toml_str(&self.upstream));
        out += &format!("upstream_timeout = {}\n", toml_str(&self.upstream_timeout));
        if let Some(max) = self.max_body_bytes {
            out += &format!("max_body_bytes = {max}\n");
        }
        if let Some(unmatched) = &self.unmatched {
            out += &format!("unmatched = {}\n", toml_str(unmatched));
        }
        out += "\n[admin]\nlisten = \"127.0.0.1:0\"\n\n[store]\n";
        match &self.store {
            StoreSpec::Memory => out += "kind = \"memory\"\n",
            StoreSpec::Redis(url) => {
                out += &format!("kind = \"redis\"\nurl = {}\n", toml_str(url));
            }
            StoreSpec::Cluster(urls) => {
                let urls: Vec<String> = urls.iter().map(|u| toml_str(u)).collect();
                out += &format!("kind = \"redis-cluster\"\nurls = [{}]\n", urls.join(", "));
            }
            StoreSpec::Sentinel(urls, master) => {
                let urls: Vec<String> = urls.iter().map(|u| toml_str(u)).collect();
                out += &format!(
                    "kind = \"redis-sentinel\"\nsentinels = [{}]\nmaster = {}\n",
                    urls.join(", "),
                    toml_str(master)
                );
            }
        }
        out += &self.store_keys;
        if let Some(ttl) = &self.nonce_ttl {
            out += &format!("nonce_ttl = {}\n", toml_str(ttl));
        }
        if let Some(prefix) = &self.key_prefix {
            out += &format!("key_prefix = {}\n", toml_str(prefix));
        }
        for source in &self.sources {
            out += &source.toml();
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Metrics

/// One sample of the Prometheus text format.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed `/metrics` page.
#[derive(Debug, Clone)]
pub struct Metrics {
    pub text: String,
    pub samples: Vec<Sample>,
}

impl Metrics {
    pub fn parse(text: &str) -> Metrics {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(parse_sample)
            .collect();
        Metrics {
            text: text.to_owned(),
            samples,
        }
    }

    /// The value of the sample named `name` whose labels include `labels`
    /// (summed when several match); `None` when none does.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .collect();
        (!matching.is_empty()).then(|| matching.iter().sum())
    }
}

fn parse_sample(line: &str) -> Option<Sample> {
    let (series, rest) = match line.find('{') {
        Some(_) => {
            let close = line.rfind('}')?;
            (&line[..close + 1], &line[close + 1..])
        }
        None => line.split_at(line.find(' ')?),
    };
    let value = rest.split_whitespace().next()?.parse().ok()?;
    let (name, labels) = match series.find('{') {
        Some(open) => (
            &series[..open],
            parse_labels(&series[open + 1..series.len() - 1]),
        ),
        None => (series, BTreeMap::new()),
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

fn parse_labels(mut s: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    while let Some(eq) = s.find("=\"") {
        let key = s[..eq].trim().trim_start_matches(',').trim().to_owned();
        let mut value = String::new();
        let mut chars = s[eq + 2..].char_indices();
        let mut end = s.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = eq + 2 + i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(key, value);
        s = &s[end.min(s.len())..];
    }
    labels
}

impl ConfigBuilder {
    /// Starts `hookgate run` with this config.
    pub async fn start(&self) -> Hookgate {
        Hookgate::start(&self.toml()).await
    }
}

/// A loopback address nothing listens on (bound once, then released).
pub fn closed_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a probe port");
    listener.local_addr().expect("probe address")
}

/// Polls `check` every 100 ms until it returns `Some`, for at most [`WAIT`];
/// panics with `what` and the last observation otherwise.
/// `GET /events/{source}/{id}` on `admin_url` with `token`, until `ready`
/// holds for the event's JSON (bounded); the JSON.
pub async fn trail_event(
    admin_url: &str,
    token: &str,
    source: &str,
    id: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let url = format!("{admin_url}/events/{source}/{id}");
    let auth = format!("Bearer {token}");
    eventually(&format!("{id}'s trail"), || async {
        let r = http(
            http::Method::GET,
            &url,
            &headers(&[("Authorization", &auth)]),
            String::new(),
        )
        .await;
        let v: Value = serde_json::from_slice(&r.body).unwrap_or_default();
        if ready(&v) { Ok(v) } else { Err(v.to_string()) }
    })
    .await
}

/// An RFC 3339 time of the trail as unix ms.
pub fn rfc3339_ms(t: &Value) -> i64 {
    let text = t.as_str().unwrap_or_else(|| panic!("{t} is not a time"));
    humantime::parse_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let last = match check().await {
            Ok(value) => return value,
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("{what}: not true within {WAIT:?}; last seen: {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
