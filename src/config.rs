//! Configuration: the TOML file of DESIGN §2, parsed into raw serde structs
//! (unknown keys refused), then validated into the runtime types below, with
//! secrets resolved and durations, URLs and header names parsed. Nothing
//! invalid gets past this module.
//!
//! Every problem is reported at once, each with the 1-based line of the
//! offending value (or of its table, for a missing key) and a field name such
//! as `server.listen` or `source[stripe].secrets[1]`. Sources are named by
//! `name` when they have one, else by their 0-based position; `secrets`
//! entries by their 0-based index, the same index the metrics use.
//!
//! Rules beyond the letter of DESIGN §2:
//!
//! - `server` with `listen` and `upstream` is required, and at least one
//!   `[[source]]`. `upstream` is scheme, host and port only (no path: requests
//!   keep their own), and may not point at hookgate's own listener.
//!   `admin.listen` may not share `server.listen`'s port (port 0 excepted).
//! - `[server.tls]` needs both `cert` and `key`, and both must be readable.
//! - Every duration must be longer than zero. `store.nonce_ttl` must be at
//!   least twice every source's `tolerance`: a signed request is accepted for
//!   up to twice the tolerance (clock skew either way), and its nonce has to
//!   outlive that window or a replay would be forwarded again.
//! - Redis URLs must also be usable by the Redis client as built; problems
//!   never quote them (they may hold a password), and [`StoreKind`]'s `Debug`
//!   hides the password. `key_prefix` may not be empty, contain whitespace, or
//!   contain `{`/`}` (Redis Cluster hash tags).
//! - Source names are letters, digits, `-`, `_`, `.` (they end up in metric
//!   labels and store keys). Paths start with `/`, carry no query, fragment,
//!   whitespace, or empty/`.`/`..` segment; one trailing `/` is removed.
//! - Secrets: a literal must be non-empty; `{ env }` must be set and
//!   non-empty; `{ file }` must be readable and non-empty once trailing
//!   newlines (`\n`, `\r\n`) are trimmed; relative paths are relative to the
//!   working directory. Values are never quoted in a problem.
//! - `tolerance` is an error for a scheme that signs no timestamp; such
//!   sources get `Duration::ZERO`.
//! - `event_types = []` is an error (leave the key out to accept every type),
//!   as is `event_types` on a generic sender without `event_type`.
//! - `scheme` is one of the core five, `generic`, or a provider of the
//!   catalog (`docs/providers.md`). A provider's documented replay window is
//!   the default `tolerance` for its sources.
//! - `public_url` (absolute http/https URL, no fragment) is required by
//!   schemes that sign the URL the sender posts to (`twilio`, `square`,
//!   `hubspot`, `trello`, a generic `{url}`) and refused elsewhere.
//! - Generic senders: `encoding` is required (a wrong guess would fail every
//!   request) except with `algorithm = "token"`, which takes no
//!   `signed_payload`, timestamp or `encoding`. `signed_payload` contains
//!   `{body}` exactly once and no other placeholder than `{id}`,
//!   `{timestamp}`, `{url}` and `{header:Name}`, and no stray brace.
//!   `{timestamp}` requires `timestamp_header` or `timestamp_key`, and either
//!   requires `{timestamp}` (an unsigned time proves nothing, so it can't
//!   bound replays); the two are exclusive. `timestamp_key` needs
//!   `signature_key`, which needs `signature_delimiter`. `{id}` requires
//!   `event_id = { header = … }`: the id must be known before verification,
//!   and the body is only parsed after it. An empty `signature_prefix` or
//!   `secret_prefix` means none; an empty delimiter or key is an error.
//! - JSON pointers (ordering, locators) follow RFC 6901: empty, or starting
//!   with `/`, with `~` only in `~0`/`~1`.
//! - `delivery = "queue"` is refused with the memory store: a queued event is
//!   acknowledged with 200 and must survive a restart. `retry_schedule`
//!   (a non-empty list of delays, default `["10s", "1m", "10m", "1h", "6h"]`)
//!   and `max_in_flight` (default 16) apply only to queue delivery and are
//!   errors on a forward source, where the sender owns the retries.
//! - `[admin] token` (a secret: literal, `{ env }` or `{ file }`) turns on the
//!   dead-letter endpoints of the admin listener; without it they are off.
//! - `server.max_connections` is greater than zero; `server.request_read_timeout`
//!   bounds the headers, and then the body, of each request.
//! - `on_store_error = "forward_unchecked"` needs `delivery = "forward"`.
//! - `verify_token` (a secret entry, like one of `secrets`) is taken only by
//!   schemes with a verify-token check (`meta`), and may not equal one of the
//!   source's `secrets`: it travels in URLs, the signing secret must not.
//! - Connection bounds: `server.write_timeout` (1 s to 10 min, default 10 s),
//!   `server.idle_timeout` (1 s to 1 h, default 30 s) and
//!   `server.max_connection_age` (at least `idle_timeout`, at most 24 h,
//!   default 5 min); `server.max_response_bytes` (1 KiB to 64 MiB, default
//!   1 MiB) caps an app answer hookgate buffers.
//! - `server.underscores_in_headers` is `"drop"` (default: a request header
//!   whose name holds `_` is removed before anything reads it) or `"forward"`
//!   (kept, except where it spells a name only hookgate or the framing may
//!   set); a generic source cannot name a `_` header while they are dropped.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::{HeaderName, Uri};
use toml::Spanned;

use crate::scheme::{
    Algorithm, Encoding, Generic, Labels, Locator, Scheme, SecretEncoding, TimestampFormat,
};

pub mod duration;
mod keys;
mod raw;

#[cfg(test)]
mod tests;

use crate::secret::Secret;
use raw::{
    RawAdmin, RawGeneric, RawLocator, RawSecret, RawSecrets, RawServer, RawSource, RawStore,
};

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub server: Server,
    pub admin: Admin,
    pub store: Store,
    pub sources: Vec<Source>,
}

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

/// Warns, once per source, where `[source.keys]` lets keys come from hosts
/// or roots that are not the provider's: meant for tests only.
pub fn warn_widened(sources: &[Source]) {
    for source in sources {
        if let Some(policy) = source.scheme.key_policy()
            && policy.is_widened()
        {
            tracing::warn!(
                source = source.name.as_str(),
                allow_hosts = ?policy.allow_hosts,
                ca_file = ?policy.ca_file,
                "[source.keys] widens where provider keys may come from: keys from these hosts \
                 and roots are trusted as the provider's; use this only against a test key server"
            );
        }
    }
}

/// What a source does with a request that fails verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Refused with its `400` (the default).
    Enforce,
    /// Forwarded anyway, without `X-Verified-*`, with `X-Hookgate-Unverified:
    /// <error word>`, and counted under that word; nothing stored.
    Observe,
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
}

/// `Debug` hides the password of a Redis URL.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    Redis { url: String },
    RedisCluster { urls: Vec<String> },
    RedisSentinel(Sentinel),
}

/// `kind = "redis-sentinel"`: whom to ask for the primary, and how to log in
/// to the data nodes (primary and replicas) the sentinels name.
#[derive(Clone, PartialEq, Eq)]
pub struct Sentinel {
    /// `redis://[user:password@]host:port` of each sentinel; a sentinel's own
    /// credentials, if it has any, go in its URL.
    pub sentinels: Vec<String>,
    /// The name the sentinels monitor the primary under.
    pub master: String,
    /// ACL user for the data nodes (`None`: the default user).
    pub username: Option<Secret>,
    /// Password for the data nodes (`requirepass` or the ACL user's).
    pub password: Option<Secret>,
}

impl fmt::Debug for Sentinel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sentinel")
            .field(
                "sentinels",
                &self
                    .sentinels
                    .iter()
                    .map(|u| redact_url(u))
                    .collect::<Vec<_>>(),
            )
            .field("master", &self.master)
            .field("username", &self.username)
            .field("password", &self.password)
            .finish()
    }
}

#[derive(Debug, Clone)]
pub struct Store {
    pub kind: StoreKind,
    pub nonce_ttl: Duration,
    pub key_prefix: String,
    /// Upper bound on entries the memory store holds (fail closed beyond it).
    pub memory_max_entries: usize,
    /// Replicas that must acknowledge a write backing a promise (Redis
    /// `WAIT`) before it counts; 0 = the primary's answer is enough.
    pub min_replicas: u32,
    /// How long such a write waits for those acknowledgements.
    pub replica_timeout: Duration,
    /// 1-based line of `store.master`, so `hookgate check` can point at it
    /// when the sentinels know no such master.
    pub master_line: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Forward,
    Queue,
}

/// What a source does with a verified event when the nonce store fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStoreError {
    /// `503 store_unavailable`: the sender retries later (the default: fail closed).
    Reject,
    /// Forward without the duplicate check (signature still required),
    /// counted as `forwarded_unchecked`.
    ForwardUnchecked,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ordering {
    /// JSON pointer to the resource key.
    pub resource: String,
    /// JSON pointer to an integer or RFC 3339 time.
    pub version: String,
}

/// One `[[source]]`.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// Path prefix, without a trailing slash (except "/").
    pub path: String,
    pub scheme: Scheme,
    /// HMAC keys in `secrets` order, already prepared for `scheme`.
    pub keys: Vec<Secret>,
    /// Files behind `{ file = … }` secrets, watched for changes.
    pub secret_files: Vec<PathBuf>,
    pub tolerance: Duration,
    /// Event-type patterns; empty = all. `*` at the end matches any suffix.
    pub event_types: Vec<String>,
    pub delivery: Delivery,
    pub on_store_error: OnStoreError,
    /// Whether a request that fails verification is refused or, while a
    /// deployment is being checked, forwarded unstamped (DESIGN §3).
    pub verification: Verification,
    /// Queue delivery: the delay before each retry; when they run out the
    /// event becomes a dead letter.
    pub retry_schedule: Vec<Duration>,
    /// Queue delivery: at most this many requests to the app at once, per
    /// replica, so a slow app is not flooded by a backlog.
    pub max_in_flight: usize,
    pub ordering: Option<Ordering>,
    /// Meta's subscription check: the `hub.verify_token` a `GET` must carry
    /// to have its challenge answered. Separate from `keys`: it travels in
    /// URLs.
    pub verify_token: Option<Secret>,
    /// `[source.resign]`: the key (prepared for the scheme) every delivery's
    /// signature headers are made with afresh, replacing the sender's.
    pub resign: Option<Secret>,
}

impl Source {
    /// Whether `event_types` lets an event of this type through.
    /// An event with no type passes only when no filter is set.
    pub fn accepts_type(&self, event_type: Option<&str>) -> bool {
        if self.event_types.is_empty() {
            return true;
        }
        let Some(t) = event_type else { return false };
        self.event_types.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => t.starts_with(prefix),
            None => p == t,
        })
    }
}

/// Where `{ env = … }` and `{ file = … }` secrets come from. Tests pass a map;
/// the binary passes [`SystemSecrets`].
pub trait SecretSource {
    fn env(&self, name: &str) -> Option<String>;
    fn file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>>;
}

/// Reads the process environment and the filesystem.
pub struct SystemSecrets;

impl SecretSource for SystemSecrets {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

/// One problem in a config file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// Where in the config: `server.listen`, `source[stripe].secrets[1]`, …
    pub field: String,
    pub message: String,
}

/// Every problem found in a config file.
///
/// `Display` prints one problem per line, `line N: field: message`; use
/// [`Error::display_in`] to print `FILE:N: field: message` instead.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render(None, .0))]
pub struct Error(pub Vec<Problem>);

impl Error {
    /// The problems, one per line, each prefixed with `file:line:`.
    pub fn display_in<'a>(&'a self, file: &'a Path) -> impl fmt::Display + 'a {
        InFile(self, file)
    }
}

struct InFile<'a>(&'a Error, &'a Path);

impl fmt::Display for InFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(Some(self.1), &self.0.0))
    }
}

fn render(file: Option<&Path>, problems: &[Problem]) -> String {
    if problems.is_empty() {
        return "invalid configuration".to_owned();
    }
    let file = file.map(|f| f.display().to_string());
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match (&file, p.line) {
            (Some(f), Some(l)) => out.push_str(&format!("{f}:{l}: ")),
            (Some(f), None) if *f != p.field => out.push_str(&format!("{f}: ")),
            (Some(_), None) => {}
            (None, Some(l)) => out.push_str(&format!("line {l}: ")),
            (None, None) => {}
        }
        if !p.field.is_empty() {
            out.push_str(&p.field);
            out.push_str(": ");
        }
        out.push_str(&p.message);
    }
    out
}

impl Config {
    /// Parses and validates a config file's text, reporting every problem at once.
    pub fn from_toml_str(src: &str, secrets: &dyn SecretSource) -> Result<Config, Error> {
        let mut problems = Vec::new();
        let Some(parsed) = raw::parse(src, &mut problems) else {
            return Err(Error(problems));
        };
        let mut c = Check {
            src,
            secrets,
            problems,
            poisoned: parsed.poisoned,
            drops_underscores: true,
        };
        let file = parsed.file;
        let server = build_server(&mut c, file.server.as_ref());
        c.drops_underscores = server
            .as_ref()
            .is_none_or(|s| s.underscores_in_headers == Underscores::Drop);
        let admin = build_admin(
            &mut c,
            file.admin.as_ref(),
            server.as_ref().map(|s| s.listen),
        );
        let store = build_store(&mut c, file.store.as_ref());
        let sources = build_sources(&mut c, file.source.as_ref(), &store);
        let mut problems = c.problems;
        if problems.is_empty() {
            if let (Some(server), Some(admin), Some(store), Some(sources)) =
                (server, admin, store.store, sources)
            {
                return Ok(Config {
                    server,
                    admin,
                    store,
                    sources,
                });
            }
            problems.push(Problem {
                line: None,
                field: String::new(),
                message: "invalid configuration".to_owned(),
            });
        }
        problems.sort_by_key(|p| p.line);
        Err(Error(problems))
    }

    /// Reads and validates the file at `path`, with secrets from the process
    /// environment and the filesystem. Print the error with
    /// [`Error::display_in`] to prefix each problem with the path.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error(vec![Problem {
                line: None,
                field: path.display().to_string(),
                message: format!("cannot read the config file: {e}"),
            }])
        })?;
        Config::from_toml_str(&text, &SystemSecrets)
    }
}

/// `url` with the password of its userinfo (or the whole userinfo when it
/// has no `:`) replaced by `[redacted]`, for logs and `Debug`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &rest[..at];
    let shown = match userinfo.find(':') {
        Some(colon) => format!("{}:[redacted]", &userinfo[..colon]),
        None => "[redacted]".to_owned(),
    };
    format!("{}{shown}{}", &url[..scheme_end + 3], &rest[at..])
}

impl fmt::Debug for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreKind::Memory => f.write_str("Memory"),
            StoreKind::Redis { url } => f
                .debug_struct("Redis")
                .field("url", &redact_url(url))
                .finish(),
            StoreKind::RedisCluster { urls } => f
                .debug_struct("RedisCluster")
                .field(
                    "urls",
                    &urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>(),
                )
                .finish(),
            StoreKind::RedisSentinel(sentinel) => sentinel.fmt(f),
        }
    }
}

// ---------------------------------------------------------------------------
// Validation: raw structs in, runtime types out, every problem recorded.

const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BODY_BYTES: usize = 1_048_576;
const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
const DEFAULT_REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;
const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9090);
const DEFAULT_NONCE_TTL: Duration = Duration::from_secs(24 * 3600);
const DEFAULT_KEY_PREFIX: &str = "hookgate";
const DEFAULT_MEMORY_MAX_ENTRIES: usize = 1_000_000;
const DEFAULT_REPLICA_TIMEOUT: Duration = Duration::from_millis(500);
/// A sender waits for hookgate's answer; a longer `WAIT` would outlast it.
const MAX_REPLICA_TIMEOUT: Duration = Duration::from_secs(10);
/// More replicas than any deployment has: a typo, not a setting.
const MAX_MIN_REPLICAS: i64 = 64;
const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);
const DEFAULT_SIGNED_PAYLOAD: &str = "{body}";
/// DESIGN §6: `10s, 1m, 10m, 1h, 6h`.
pub const DEFAULT_RETRY_SCHEDULE: [Duration; 5] = [
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(600),
    Duration::from_secs(3600),
    Duration::from_secs(6 * 3600),
];
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

struct Check<'a> {
    src: &'a str,
    secrets: &'a dyn SecretSource,
    problems: Vec<Problem>,
    /// Fields whose value was refused while deserializing.
    poisoned: HashSet<String>,
    /// Request headers named with `_` are dropped on arrival
    /// (`server.underscores_in_headers`), so no source may read one.
    drops_underscores: bool,
}

impl Check<'_> {
    fn push(&mut self, span: Option<Range<usize>>, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            line: span.map(|s| raw::line_of(self.src, s.start)),
            field: field.to_owned(),
            message: message.into(),
        });
    }

    fn at<T>(&mut self, value: &Spanned<T>, field: &str, message: impl Into<String>) {
        self.push(Some(value.span()), field, message);
    }

    /// A key that must be present: reported missing (at its table's line)
    /// unless its value was already refused.
    fn required<'v, T>(
        &mut self,
        value: &'v Option<Spanned<T>>,
        table: Option<Range<usize>>,
        field: &str,
    ) -> Option<&'v Spanned<T>> {
        if value.is_none() && !self.poisoned.contains(field) {
            self.push(table, field, "required key is missing");
        }
        value.as_ref()
    }

    /// One of a fixed set of words, or `default` when absent.
    fn word<T: Copy>(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        choices: &[(&str, T)],
        default: Option<T>,
    ) -> Option<T> {
        let Some(v) = value else {
            return if self.poisoned.contains(field) {
                None
            } else {
                default
            };
        };
        if let Some((_, t)) = choices.iter().find(|(w, _)| *w == v.get_ref().as_str()) {
            return Some(*t);
        }
        let words: Vec<String> = choices.iter().map(|(w, _)| format!("\"{w}\"")).collect();
        let expected = match words.as_slice() {
            [a, b] => format!("{a} or {b}"),
            _ => format!("one of {}", words.join(", ")),
        };
        self.at(
            v,
            field,
            format!("unknown value \"{}\"; expected {expected}", v.get_ref()),
        );
        None
    }

    fn duration(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Option<Duration> {
        let Some(v) = value else {
            return Some(default);
        };
        match duration::parse_nonzero(v.get_ref()) {
            Ok(d) => Some(d),
            Err(m) => {
                self.at(v, field, m);
                None
            }
        }
    }

    /// A duration inside `range`, or the default when absent.
    fn duration_within(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
        range: std::ops::RangeInclusive<Duration>,
    ) -> Option<Duration> {
        let d = self.duration(value, field, default)?;
        if let Some(v) = value
            && !range.contains(&d)
        {
            self.at(
                v,
                field,
                format!(
                    "\"{}\" is out of range: give {} to {}",
                    v.get_ref(),
                    humantime_secs(*range.start()),
                    humantime_secs(*range.end())
                ),
            );
            return None;
        }
        Some(d)
    }

    fn positive(
        &mut self,
        value: Option<&Spanned<i64>>,
        field: &str,
        default: usize,
    ) -> Option<usize> {
        let Some(v) = value else {
            return Some(default);
        };
        match usize::try_from(*v.get_ref()) {
            Ok(n) if n > 0 => Some(n),
            _ => {
                self.at(
                    v,
                    field,
                    format!("must be greater than zero (got {})", v.get_ref()),
                );
                None
            }
        }
    }

    fn socket_addr(&mut self, v: &Spanned<String>, field: &str) -> Option<SocketAddr> {
        match v.get_ref().parse() {
            Ok(a) => Some(a),
            Err(_) => {
                self.at(
                    v,
                    field,
                    format!(
                        "\"{}\" is not an IP address and port such as \"0.0.0.0:8080\" \
                         (host names are not resolved)",
                        v.get_ref()
                    ),
                );
                None
            }
        }
    }

    fn header_name(&mut self, v: &Spanned<String>, field: &str) -> Option<HeaderName> {
        match HeaderName::from_bytes(v.get_ref().as_bytes()) {
            Ok(h) if self.drops_underscores && h.as_str().contains('_') => {
                self.at(
                    v,
                    field,
                    format!(
                        "\"{}\" holds _, and such headers are dropped on arrival; \
                         set server.underscores_in_headers = \"forward\" to read it",
                        v.get_ref()
                    ),
                );
                None
            }
            Ok(h) => Some(h),
            Err(_) => {
                self.at(
                    v,
                    field,
                    format!("\"{}\" is not a valid HTTP header name", v.get_ref()),
                );
                None
            }
        }
    }

    fn json_pointer(&mut self, v: &Spanned<String>, field: &str) -> Option<String> {
        match pointer_problem(v.get_ref()) {
            None => Some(v.get_ref().clone()),
            Some(m) => {
                self.at(v, field, m);
                None
            }
        }
    }

    /// A file that must be readable (TLS material).
    fn readable_path(&mut self, v: &Spanned<String>, field: &str) -> Option<PathBuf> {
        let text = v.get_ref();
        if text.is_empty() {
            self.at(v, field, "is empty; give a file path");
            return None;
        }
        let path = PathBuf::from(text);
        match self.secrets.file(&path) {
            Ok(_) => Some(path),
            Err(e) => {
                self.at(v, field, format!("cannot read {text}: {e}"));
                None
            }
        }
    }
}

/// `url` with any `user:password@` part of its authority replaced by `[redacted]@`.
fn without_userinfo(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}[redacted]{}", &url[..start], &url[start + at..]),
        None => url.to_owned(),
    }
}

/// `d` as whole seconds (`"30s"`), or milliseconds below a second.
fn humantime_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Why `p` is not a JSON pointer (RFC 6901), if it is not one.
fn pointer_problem(p: &str) -> Option<String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Some(format!(
            "\"{p}\" is not a JSON pointer: it must start with / (e.g. \"/data/object/id\")"
        ));
    }
    let bytes = p.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')) {
            return Some(format!(
                "\"{p}\" is not a JSON pointer: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)"
            ));
        }
    }
    None
}

fn build_server(c: &mut Check<'_>, raw: Option<&Spanned<RawServer>>) -> Option<Server> {
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

fn build_admin(
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
    Some(Admin {
        listen: listen?,
        token: token?,
        token_file: token_files.pop(),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KindWord {
    Memory,
    Redis,
    Cluster,
    Sentinel,
}

/// The validated store, plus what sources need to know even when the store
/// itself has problems.
struct StoreInfo {
    store: Option<Store>,
    /// `None` when `kind` is invalid.
    kind: Option<KindWord>,
    nonce_ttl: Option<Duration>,
    nonce_ttl_span: Option<Range<usize>>,
}

fn build_store(c: &mut Check<'_>, raw: Option<&Spanned<RawStore>>) -> StoreInfo {
    let table = raw.map(|r| r.span());
    let r = raw.map(|r| r.get_ref());
    let kind = c.word(
        r.and_then(|r| r.kind.as_ref()),
        "store.kind",
        &[
            ("memory", KindWord::Memory),
            ("redis", KindWord::Redis),
            ("redis-cluster", KindWord::Cluster),
            ("redis-sentinel", KindWord::Sentinel),
        ],
        Some(KindWord::Memory),
    );
    let url = r.and_then(|r| r.url.as_ref());
    let urls = r.and_then(|r| r.urls.as_ref());
    let sentinel_keys_ok = kind == Some(KindWord::Sentinel) || refuse_sentinel_keys(c, r);
    let store_kind = match kind {
        Some(KindWord::Memory) => {
            if let Some(u) = url {
                c.at(
                    u,
                    "store.url",
                    r#"the memory store takes no url; set kind = "redis" to use one"#,
                );
            }
            if let Some(u) = urls {
                c.at(
                    u,
                    "store.urls",
                    r#"the memory store takes no urls; set kind = "redis-cluster" to use them"#,
                );
            }
            (url.is_none() && urls.is_none()).then_some(StoreKind::Memory)
        }
        Some(KindWord::Redis) => {
            if let Some(u) = urls {
                c.at(
                    u,
                    "store.urls",
                    r#"kind = "redis" takes url, not urls; use kind = "redis-cluster" for a cluster"#,
                );
            }
            let url = match url {
                Some(u) => redis_url(c, u, "store.url"),
                None => {
                    if !c.poisoned.contains("store.url") {
                        c.push(
                            table.clone(),
                            "store.url",
                            r#"kind = "redis" needs url = "redis://host:6379""#,
                        );
                    }
                    None
                }
            };
            url.filter(|_| urls.is_none())
                .map(|url| StoreKind::Redis { url })
        }
        Some(KindWord::Cluster) => {
            if let Some(u) = url {
                c.at(
                    u,
                    "store.url",
                    r#"kind = "redis-cluster" takes urls (a list of nodes), not url"#,
                );
            }
            let list = match urls {
                None => {
                    if !c.poisoned.contains("store.urls") {
                        c.push(
                            table.clone(),
                            "store.urls",
                            r#"kind = "redis-cluster" needs urls = ["redis://node:7000", …]"#,
                        );
                    }
                    None
                }
                Some(u) if u.get_ref().is_empty() => {
                    c.at(u, "store.urls", "is empty; list at least one cluster node");
                    None
                }
                Some(u) => redis_urls(c, u),
            };
            list.filter(|_| url.is_none())
                .map(|urls| StoreKind::RedisCluster { urls })
        }
        Some(KindWord::Sentinel) => sentinel(c, r, table.clone()),
        None => {
            // Still check what can be checked.
            if let Some(u) = url {
                redis_url(c, u, "store.url");
            }
            if let Some(u) = urls {
                redis_urls(c, u);
            }
            None
        }
    };
    let ttl_value = r.and_then(|r| r.nonce_ttl.as_ref());
    let nonce_ttl = c.duration(ttl_value, "store.nonce_ttl", DEFAULT_NONCE_TTL);
    let key_prefix = match r.and_then(|r| r.key_prefix.as_ref()) {
        None => Some(DEFAULT_KEY_PREFIX.to_owned()),
        Some(v) => key_prefix(c, v),
    };
    let memory_max_entries = c.positive(
        r.and_then(|r| r.memory_max_entries.as_ref()),
        "store.memory_max_entries",
        DEFAULT_MEMORY_MAX_ENTRIES,
    );
    let (min_replicas, replica_timeout) = replication(c, r, kind);
    let store = match (
        store_kind.filter(|_| sentinel_keys_ok),
        nonce_ttl,
        key_prefix,
        memory_max_entries,
        min_replicas,
        replica_timeout,
    ) {
        (
            Some(kind),
            Some(nonce_ttl),
            Some(key_prefix),
            Some(memory_max_entries),
            Some(min_replicas),
            Some(replica_timeout),
        ) => Some(Store {
            kind,
            nonce_ttl,
            key_prefix,
            memory_max_entries,
            min_replicas,
            replica_timeout,
            master_line: r
                .and_then(|r| r.master.as_ref())
                .map(|m| raw::line_of(c.src, m.span().start)),
        }),
        _ => None,
    };
    StoreInfo {
        store,
        kind,
        nonce_ttl,
        nonce_ttl_span: ttl_value.map(|v| v.span()).or(table),
    }
}

/// `sentinels`, `master`, `username`, `password` on another kind than
/// `redis-sentinel`: each is a problem. Returns whether there was none.
fn refuse_sentinel_keys(c: &mut Check<'_>, r: Option<&RawStore>) -> bool {
    let Some(r) = r else { return true };
    let mut ok = true;
    let hint = r#"only kind = "redis-sentinel" takes it"#;
    if let Some(v) = &r.sentinels {
        c.at(v, "store.sentinels", hint);
        ok = false;
    }
    if let Some(v) = &r.master {
        c.at(v, "store.master", hint);
        ok = false;
    }
    let url_hint = r#"only kind = "redis-sentinel" takes it; for kind = "redis" or "redis-cluster" put the credentials in the URL (redis://user:password@host:port)"#;
    if let Some(v) = &r.username {
        c.at(v, "store.username", url_hint);
        ok = false;
    }
    if let Some(v) = &r.password {
        c.at(v, "store.password", url_hint);
        ok = false;
    }
    ok
}

/// `kind = "redis-sentinel"`: `sentinels` (a non-empty list of URLs),
/// `master` (a name), optional `username` / `password` secret entries.
fn sentinel(
    c: &mut Check<'_>,
    r: Option<&RawStore>,
    table: Option<Range<usize>>,
) -> Option<StoreKind> {
    let mut ok = true;
    if let Some(r) = r {
        if let Some(u) = &r.url {
            c.at(
                u,
                "store.url",
                r#"kind = "redis-sentinel" finds the primary through sentinels = [...], not url"#,
            );
            ok = false;
        }
        if let Some(u) = &r.urls {
            c.at(
                u,
                "store.urls",
                r#"kind = "redis-sentinel" takes sentinels = [...], not urls"#,
            );
            ok = false;
        }
    }
    let sentinels = match r.and_then(|r| r.sentinels.as_ref()) {
        None => {
            if !c.poisoned.contains("store.sentinels") {
                c.push(
                    table.clone(),
                    "store.sentinels",
                    r#"kind = "redis-sentinel" needs sentinels = ["redis://sentinel:26379", …]"#,
                );
            }
            None
        }
        Some(v) if v.get_ref().is_empty() => {
            c.at(v, "store.sentinels", "is empty; list at least one sentinel");
            None
        }
        Some(v) => {
            let mut all = Some(Vec::new());
            for (i, u) in v.get_ref().iter().enumerate() {
                match redis_url(c, u, &format!("store.sentinels[{i}]")) {
                    Some(u) => {
                        if let Some(list) = all.as_mut() {
                            list.push(u);
                        }
                    }
                    None => all = None,
                }
            }
            all
        }
    };
    let master = match r.and_then(|r| r.master.as_ref()) {
        None => {
            if !c.poisoned.contains("store.master") {
                c.push(
                    table,
                    "store.master",
                    r#"kind = "redis-sentinel" needs master = "NAME", the name the sentinels monitor"#,
                );
            }
            None
        }
        Some(v) => {
            let name = v.get_ref();
            if name.is_empty() || name.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
                c.at(
                    v,
                    "store.master",
                    "must be a non-empty name without spaces or control characters",
                );
                None
            } else {
                Some(name.clone())
            }
        }
    };
    let mut credential = |entry: Option<&Spanned<RawSecret>>, field: &str| match entry {
        None => Some(None),
        Some(entry) => {
            let (secret, _) = resolve_secret(c, entry, field, &mut Vec::new())?;
            if std::str::from_utf8(secret.expose()).is_err() {
                c.at(entry, field, "must be UTF-8 text");
                return None;
            }
            Some(Some(secret))
        }
    };
    let username = credential(r.and_then(|r| r.username.as_ref()), "store.username");
    let password = credential(r.and_then(|r| r.password.as_ref()), "store.password");
    match (ok, sentinels, master, username, password) {
        (true, Some(sentinels), Some(master), Some(username), Some(password)) => {
            Some(StoreKind::RedisSentinel(Sentinel {
                sentinels,
                master,
                username,
                password,
            }))
        }
        _ => None,
    }
}

/// `min_replicas` (0 to [`MAX_MIN_REPLICAS`], refused above 0 on the memory
/// store) and `replica_timeout` (at most [`MAX_REPLICA_TIMEOUT`]).
fn replication(
    c: &mut Check<'_>,
    r: Option<&RawStore>,
    kind: Option<KindWord>,
) -> (Option<u32>, Option<Duration>) {
    let min_value = r.and_then(|r| r.min_replicas.as_ref());
    let min_replicas = match min_value {
        None => Some(0),
        Some(v) => match u32::try_from(*v.get_ref()) {
            Ok(n) if i64::from(n) <= MAX_MIN_REPLICAS => {
                if n > 0 && kind == Some(KindWord::Memory) {
                    c.at(
                        v,
                        "store.min_replicas",
                        "the memory store has no replicas to wait for; use a redis, redis-cluster or redis-sentinel store with replicas",
                    );
                    None
                } else {
                    Some(n)
                }
            }
            _ => {
                c.at(
                    v,
                    "store.min_replicas",
                    format!(
                        "must be a whole number from 0 to {MAX_MIN_REPLICAS} (got {})",
                        v.get_ref()
                    ),
                );
                None
            }
        },
    };
    let timeout_value = r.and_then(|r| r.replica_timeout.as_ref());
    let mut replica_timeout = c.duration(
        timeout_value,
        "store.replica_timeout",
        DEFAULT_REPLICA_TIMEOUT,
    );
    if let (Some(t), Some(v)) = (replica_timeout, timeout_value) {
        if t > MAX_REPLICA_TIMEOUT {
            c.at(
                v,
                "store.replica_timeout",
                format!(
                    "must be at most {}s: the sender is waiting for the answer",
                    MAX_REPLICA_TIMEOUT.as_secs()
                ),
            );
            replica_timeout = None;
        } else if kind == Some(KindWord::Memory) {
            c.at(
                v,
                "store.replica_timeout",
                "the memory store has no replicas to wait for",
            );
            replica_timeout = None;
        }
    }
    (min_replicas, replica_timeout)
}

/// A Redis URL; the message never quotes it (it may hold a password).
fn redis_url(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<String> {
    use redis::IntoConnectionInfo;
    let text = v.get_ref();
    if !(text.starts_with("redis://") || text.starts_with("rediss://")) {
        c.at(v, field, "must start with redis:// or rediss://");
        return None;
    }
    match text.as_str().into_connection_info() {
        Ok(_) => Some(text.clone()),
        Err(e) => {
            c.at(v, field, format!("is not a usable Redis URL: {e}"));
            None
        }
    }
}

fn redis_urls(c: &mut Check<'_>, v: &Spanned<Vec<Spanned<String>>>) -> Option<Vec<String>> {
    let mut ok = true;
    let mut out = Vec::new();
    for (i, u) in v.get_ref().iter().enumerate() {
        match redis_url(c, u, &format!("store.urls[{i}]")) {
            Some(u) => out.push(u),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn key_prefix(c: &mut Check<'_>, v: &Spanned<String>) -> Option<String> {
    let text = v.get_ref();
    let message = if text.is_empty() {
        "is empty; keys need a prefix"
    } else if text.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
        "must not contain spaces or control characters"
    } else if text.contains(['{', '}']) {
        "must not contain { or } (Redis Cluster reads them as hash tags)"
    } else {
        return Some(text.clone());
    };
    c.at(v, "store.key_prefix", message);
    None
}

fn build_sources(
    c: &mut Check<'_>,
    raw: Option<&Spanned<Vec<Spanned<RawSource>>>>,
    store: &StoreInfo,
) -> Option<Vec<Source>> {
    let list = match raw {
        Some(list) if !list.get_ref().is_empty() => list.get_ref(),
        Some(list) => {
            c.at(
                list,
                "source",
                "no sources; add at least one [[source]] table",
            );
            return None;
        }
        None => {
            if !c.poisoned.contains("source") {
                c.push(
                    None,
                    "source",
                    "no [[source]] table; add at least one source to verify",
                );
            }
            return None;
        }
    };
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut paths: HashMap<String, (String, usize)> = HashMap::new();
    let mut out = Some(Vec::new());
    for (i, rs) in list.iter().enumerate() {
        let r = rs.get_ref();
        let label = raw::source_label(i, r.name.as_ref().map(|n| n.get_ref().as_str()));
        let table = Some(rs.span());

        let name_field = format!("{label}.name");
        let name = c
            .required(&r.name, table.clone(), &name_field)
            .and_then(|v| source_name(c, v, &name_field));
        if let (Some(n), Some(v)) = (&name, &r.name) {
            let line = raw::line_of(c.src, v.span().start);
            match names.get(n) {
                Some(first) => {
                    c.at(
                        v,
                        &name_field,
                        format!("duplicate source name \"{n}\" (first used on line {first})"),
                    );
                }
                None => {
                    names.insert(n.clone(), line);
                }
            }
        }

        let path_field = format!("{label}.path");
        let path = c.required(&r.path, table, &path_field).and_then(|v| {
            match normalise_path(v.get_ref()) {
                Ok(p) => Some((v, p)),
                Err(m) => {
                    c.at(v, &path_field, m);
                    None
                }
            }
        });
        // Routing ignores ASCII case, so two paths that differ only in case collide.
        let path = match path {
            Some((v, p)) => match paths.get(&p.to_ascii_lowercase()) {
                Some((other, line)) => {
                    let shown = if *v.get_ref() == p {
                        format!("\"{p}\"")
                    } else {
                        format!("\"{}\" (that is, \"{p}\")", v.get_ref())
                    };
                    c.at(
                        v,
                        &path_field,
                        format!("path {shown} is already used by {other} on line {line}"),
                    );
                    None
                }
                None => {
                    let line = raw::line_of(c.src, v.span().start);
                    paths.insert(p.to_ascii_lowercase(), (label.clone(), line));
                    Some(p)
                }
            },
            None => None,
        };

        let body = source_body(c, &label, rs, store);
        match (name, path, body, &mut out) {
            (Some(name), Some(path), Some(b), Some(out)) => out.push(Source {
                name,
                path,
                scheme: b.scheme,
                keys: b.keys,
                secret_files: b.secret_files,
                tolerance: b.tolerance,
                event_types: b.event_types,
                delivery: b.delivery,
                on_store_error: b.on_store_error,
                verification: b.verification,
                retry_schedule: b.retry_schedule,
                max_in_flight: b.max_in_flight,
                ordering: b.ordering,
                verify_token: b.verify_token,
                resign: b.resign,
            }),
            _ => out = None,
        }
    }
    out
}

fn source_name(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<String> {
    let n = v.get_ref();
    let ok = !n.is_empty()
        && n.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'));
    if ok {
        Some(n.clone())
    } else {
        c.at(
            v,
            field,
            format!(
                "\"{n}\" is not a valid source name: use letters, digits, -, _ and . \
                 (it appears in metric labels and store keys)"
            ),
        );
        None
    }
}

/// Checks a source path and removes one trailing `/` (except from `/`).
fn normalise_path(text: &str) -> Result<String, String> {
    if !text.starts_with('/') {
        return Err(format!("\"{text}\" must start with /"));
    }
    if text.contains(['?', '#']) {
        return Err(format!("\"{text}\" must be a path only, without ? or #"));
    }
    if text.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
        return Err(format!(
            "\"{text}\" must not contain spaces or control characters"
        ));
    }
    // Every segment but a final empty one (the trailing slash) must be a name.
    let segments: Vec<&str> = text[1..].split('/').collect();
    let last = segments.len().saturating_sub(1);
    let bad = segments
        .iter()
        .enumerate()
        .any(|(i, s)| (s.is_empty() && i != last) || *s == "." || *s == "..");
    if bad {
        return Err(format!("\"{text}\" has an empty, . or .. segment"));
    }
    let p = match text.strip_suffix('/') {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => text,
    };
    if http::uri::PathAndQuery::try_from(p).is_err() {
        return Err(format!("\"{text}\" is not a valid URL path"));
    }
    if let Err(e) = crate::route::canonical(p) {
        return Err(format!("\"{text}\" is not a canonical path: {e}"));
    }
    Ok(p.to_owned())
}

/// A `scheme = "…"` word: `generic`, or any name [`Scheme::by_name`] knows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SchemeWord {
    Generic,
    Named(&'static str),
}

fn scheme_word(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<SchemeWord> {
    let word = v.get_ref().as_str();
    if word == "generic" {
        return Some(SchemeWord::Generic);
    }
    if let Some(name) = Scheme::names().find(|n| *n == word) {
        return Some(SchemeWord::Named(name));
    }
    c.at(
        v,
        field,
        format!(
            "unknown value \"{word}\"; expected \"stripe\", \"github\", \"shopify\", \"slack\", \
             \"standard\", \"generic\" or a provider of docs/providers.md (\"twilio\", \"zoom\", …)"
        ),
    );
    None
}

/// An absolute http(s) URL as the sender sees it.
fn public_url(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<String> {
    let text = v.get_ref();
    let ok =
        text.parse::<Uri>().ok().is_some_and(|u| {
            matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some()
        }) && !text.contains(['#', ' ']);
    if ok {
        Some(text.clone())
    } else {
        c.at(
            v,
            field,
            format!(
                "\"{text}\" is not an absolute http(s) URL; give the URL exactly as configured \
                 at the sender, e.g. \"https://hooks.example.com/webhooks/twilio\""
            ),
        );
        None
    }
}

/// Everything in a source but its name and path.
struct SourceBody {
    scheme: Scheme,
    keys: Vec<Secret>,
    secret_files: Vec<PathBuf>,
    tolerance: Duration,
    event_types: Vec<String>,
    delivery: Delivery,
    on_store_error: OnStoreError,
    verification: Verification,
    retry_schedule: Vec<Duration>,
    max_in_flight: usize,
    ordering: Option<Ordering>,
    verify_token: Option<Secret>,
    resign: Option<Secret>,
}

fn source_body(
    c: &mut Check<'_>,
    label: &str,
    rs: &Spanned<RawSource>,
    store: &StoreInfo,
) -> Option<SourceBody> {
    let r = rs.get_ref();
    let table = Some(rs.span());
    let field = |k: &str| format!("{label}.{k}");

    // Scheme, with its [source.generic] table and public URL.
    let scheme_field = field("scheme");
    let word = c
        .required(&r.scheme, table.clone(), &scheme_field)
        .and_then(|v| scheme_word(c, v, &scheme_field));
    let url_field = field("public_url");
    let url = match &r.public_url {
        None => Some(None),
        Some(v) => public_url(c, v, &url_field).map(Some),
    };
    let generic = match (&r.generic, word) {
        (Some(g), Some(SchemeWord::Generic) | None) => build_generic(c, label, g),
        (Some(g), Some(_)) => {
            c.at(
                g,
                &field("generic"),
                r#"only scheme = "generic" takes a [source.generic] table"#,
            );
            None
        }
        (None, Some(SchemeWord::Generic)) => {
            if !c.poisoned.contains(&field("generic")) {
                let span = r.scheme.as_ref().map(|s| s.span()).or(table.clone());
                c.push(
                    span,
                    &field("generic"),
                    r#"scheme = "generic" needs a [source.generic] table describing the sender"#,
                );
            }
            None
        }
        (None, _) => None,
    };
    let given_url = url.clone().flatten();
    let scheme = match word {
        Some(SchemeWord::Named(name)) => Scheme::by_name(name, given_url.as_deref()),
        Some(SchemeWord::Generic) => generic.map(|mut g| {
            g.public_url = given_url.clone();
            Scheme::Generic(Box::new(g))
        }),
        None => None,
    };
    let scheme = match (scheme, url) {
        (Some(s), Some(url)) => match (s.needs_public_url(), url, &r.public_url) {
            (true, None, _) if !c.poisoned.contains(&url_field) => {
                let span = r.scheme.as_ref().map(|v| v.span()).or(table.clone());
                let what = match &s {
                    Scheme::Generic(_) => "generic.signed_payload uses {url}".to_owned(),
                    _ => format!("scheme \"{}\" signs the URL the sender posts to", s.name()),
                };
                c.push(
                    span,
                    &url_field,
                    format!(
                        "{what}; set public_url to that URL exactly as configured at the sender \
                         (behind a proxy the request arrives with another scheme, host or path)"
                    ),
                );
                None
            }
            (false, Some(_), Some(v)) => {
                c.at(
                    v,
                    &url_field,
                    format!(
                        "does not apply: scheme \"{}\" does not sign the URL; remove it",
                        s.name()
                    ),
                );
                None
            }
            _ => Some(s),
        },
        _ => None,
    };

    let remote = scheme
        .as_ref()
        .filter(|s| s.fetches_keys())
        .map(Scheme::name);
    let scheme = keys::apply(c, label, r, table.clone(), scheme);

    // Secrets, resolved and prepared for the scheme. Schemes whose key
    // comes from the provider take none.
    let secrets_field = field("secrets");
    let mut secret_files = Vec::new();
    if let (Some(name), Some(v)) = (remote, &r.secrets) {
        c.at(
            v,
            &secrets_field,
            format!(
                "does not apply: scheme \"{name}\" fetches the provider's key itself; remove it"
            ),
        );
    }
    let required = match remote {
        Some(_) => None,
        None => c.required(&r.secrets, table.clone(), &secrets_field),
    };
    let keys = match required {
        None => (remote.is_some() && r.secrets.is_none()).then(Vec::new),
        Some(s) => match s.get_ref() {
            RawSecrets::NotAnArray => {
                c.at(
                    s,
                    &secrets_field,
                    r#"must be an array: secrets = ["…", { env = "NAME" }, { file = "PATH" }]"#,
                );
                None
            }
            RawSecrets::List(list) if list.is_empty() => {
                c.at(
                    s,
                    &secrets_field,
                    "is empty; at least one secret is required",
                );
                None
            }
            RawSecrets::List(list) => {
                let mut keys = Some(Vec::new());
                for (j, entry) in list.iter().enumerate() {
                    let f = format!("{secrets_field}[{j}]");
                    let key = resolve_secret(c, entry, &f, &mut secret_files).and_then(
                        |(secret, origin)| match &scheme {
                            None => None,
                            Some(scheme) => match scheme.prepare_key(&secret) {
                                Ok(k) => Some(k),
                                Err(m) => {
                                    c.at(entry, &f, format!("{origin}{m}"));
                                    None
                                }
                            },
                        },
                    );
                    match (key, &mut keys) {
                        (Some(k), Some(keys)) => keys.push(k),
                        _ => keys = None,
                    }
                }
                keys
            }
        },
    };

    let verify_token = verify_token(
        c,
        &field("verify_token"),
        r,
        scheme.as_ref(),
        keys.as_deref(),
        &mut secret_files,
    );
    let resign = resign(
        c,
        &field("resign"),
        r,
        scheme.as_ref(),
        keys.as_deref(),
        &mut secret_files,
    );

    // Tolerance: only for schemes that sign a timestamp.
    let tolerance_field = field("tolerance");
    let tolerance = match &scheme {
        Some(s) if s.signs_timestamp() => {
            let default = s.default_tolerance().unwrap_or(DEFAULT_TOLERANCE);
            let t = c.duration(r.tolerance.as_ref(), &tolerance_field, default);
            if let (Some(t), Some(ttl)) = (t, store.nonce_ttl)
                && ttl < t.saturating_mul(2)
            {
                let message = format!(
                    "store.nonce_ttl ({}) must be at least twice the tolerance ({}): \
                     a signed request is accepted for up to twice the tolerance, and \
                     a replay after its nonce expired would be forwarded again",
                    humantime::format_duration(ttl),
                    humantime::format_duration(t)
                );
                match &r.tolerance {
                    Some(v) => c.at(v, &tolerance_field, message),
                    None => c.push(store.nonce_ttl_span.clone(), "store.nonce_ttl", message),
                }
            }
            t
        }
        Some(s) => match &r.tolerance {
            None => Some(Duration::ZERO),
            Some(v) => {
                let message = match s {
                    Scheme::Generic(_) => "does not apply: this sender has no \
                        generic.timestamp_header or generic.timestamp_key, so no signed time \
                        to check"
                        .to_owned(),
                    _ => format!(
                        "does not apply: scheme \"{}\" signs no timestamp; remove it",
                        s.name()
                    ),
                };
                c.at(v, &tolerance_field, message);
                None
            }
        },
        None => {
            if let Some(v) = &r.tolerance {
                c.duration(Some(v), &tolerance_field, DEFAULT_TOLERANCE);
            }
            None
        }
    };

    // Event-type filter.
    let types_field = field("event_types");
    let event_types = match &r.event_types {
        None => Some(Vec::new()),
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &types_field,
                "is empty; leave event_types out to accept every event type",
            );
            None
        }
        Some(list) => {
            let mut ok = true;
            for (j, p) in list.get_ref().iter().enumerate() {
                if let Some(m) = pattern_problem(p.get_ref()) {
                    c.at(p, &format!("{types_field}[{j}]"), m);
                    ok = false;
                }
            }
            if let Some(Scheme::Generic(g)) = &scheme
                && g.event_type.is_none()
            {
                c.at(
                    list,
                    &types_field,
                    "this sender has no generic.event_type, so no event could match; \
                     set generic.event_type or remove event_types",
                );
                ok = false;
            }
            ok.then(|| list.get_ref().iter().map(|p| p.get_ref().clone()).collect())
        }
    };

    // Delivery.
    let delivery_field = field("delivery");
    let delivery = c.word(
        r.delivery.as_ref(),
        &delivery_field,
        &[("forward", Delivery::Forward), ("queue", Delivery::Queue)],
        Some(Delivery::Forward),
    );
    if let (Some(Delivery::Queue), Some(KindWord::Memory), Some(v)) =
        (delivery, store.kind, &r.delivery)
    {
        c.at(
            v,
            &delivery_field,
            r#"delivery = "queue" needs a redis, redis-cluster or redis-sentinel store: the memory store loses its queue on restart, so a queued event would not be durable"#,
        );
    }

    // What to do when the store fails.
    let on_store_error_field = field("on_store_error");
    let on_store_error = c.word(
        r.on_store_error.as_ref(),
        &on_store_error_field,
        &[
            ("reject", OnStoreError::Reject),
            ("forward_unchecked", OnStoreError::ForwardUnchecked),
        ],
        Some(OnStoreError::Reject),
    );
    if let (Some(OnStoreError::ForwardUnchecked), Some(Delivery::Queue), Some(v)) =
        (on_store_error, delivery, &r.on_store_error)
    {
        c.at(
            v,
            &on_store_error_field,
            r#""forward_unchecked" needs delivery = "forward": a queued event is stored before the 200, so without the store there is nothing to answer with"#,
        );
    }
    let verification = c.word(
        r.verification.as_ref(),
        &field("verification"),
        &[
            ("enforce", Verification::Enforce),
            ("observe", Verification::Observe),
        ],
        Some(Verification::Enforce),
    );
    // Queue settings: only where hookgate owns the retries.
    let schedule_field = field("retry_schedule");
    let retry_schedule = match &r.retry_schedule {
        None => Some(DEFAULT_RETRY_SCHEDULE.to_vec()),
        Some(list) if delivery == Some(Delivery::Forward) => {
            c.at(list, &schedule_field, NOT_QUEUED);
            None
        }
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &schedule_field,
                "is empty; leave retry_schedule out for the default \
                 [\"10s\", \"1m\", \"10m\", \"1h\", \"6h\"] or list at least one delay",
            );
            None
        }
        Some(list) => {
            let mut delays = Some(Vec::new());
            for (j, d) in list.get_ref().iter().enumerate() {
                let parsed = c.duration(Some(d), &format!("{schedule_field}[{j}]"), Duration::ZERO);
                match (parsed, &mut delays) {
                    (Some(d), Some(delays)) => delays.push(d),
                    _ => delays = None,
                }
            }
            delays
        }
    };
    let in_flight_field = field("max_in_flight");
    let max_in_flight = match &r.max_in_flight {
        Some(v) if delivery == Some(Delivery::Forward) => {
            c.at(v, &in_flight_field, NOT_QUEUED);
            None
        }
        other => c.positive(other.as_ref(), &in_flight_field, DEFAULT_MAX_IN_FLIGHT),
    };

    // Ordering gate.
    let ordering = match &r.ordering {
        None => Some(None),
        Some(o) => {
            let span = Some(o.span());
            let rf = field("ordering.resource");
            let vf = field("ordering.version");
            let resource = c
                .required(&o.get_ref().resource, span.clone(), &rf)
                .and_then(|v| c.json_pointer(v, &rf));
            let version = c
                .required(&o.get_ref().version, span, &vf)
                .and_then(|v| c.json_pointer(v, &vf));
            match (resource, version) {
                (Some(resource), Some(version)) => Some(Some(Ordering { resource, version })),
                _ => None,
            }
        }
    };

    Some(SourceBody {
        scheme: scheme?,
        keys: keys?,
        secret_files,
        tolerance: tolerance?,
        event_types: event_types?,
        delivery: delivery?,
        on_store_error: on_store_error?,
        verification: verification?,
        retry_schedule: retry_schedule?,
        max_in_flight: max_in_flight?,
        ordering: ordering?,
        verify_token: verify_token?,
        resign: resign?,
    })
}

/// `verify_token`: resolved like a `secrets` entry, for schemes with a
/// verify-token check only, and never one of the signing secrets.
fn verify_token(
    c: &mut Check<'_>,
    field: &str,
    r: &RawSource,
    scheme: Option<&Scheme>,
    keys: Option<&[Secret]>,
    files: &mut Vec<PathBuf>,
) -> Option<Option<Secret>> {
    let Some(entry) = &r.verify_token else {
        return Some(None);
    };
    if let Some(s) = scheme.filter(|s| !s.takes_verify_token()) {
        c.at(
            entry,
            field,
            format!(
                "does not apply: scheme \"{}\" makes no verify-token check; remove it",
                s.name()
            ),
        );
        return None;
    }
    let (token, _) = resolve_secret(c, entry, field, files)?;
    if keys.is_some_and(|keys| keys.iter().any(|k| k.expose() == token.expose())) {
        c.at(
            entry,
            field,
            "is one of this source's secrets; choose another value: the verify token \
             travels in URLs, the signing secret must not",
        );
        return None;
    }
    Some(Some(token))
}

/// `[source.resign]`: the secret every delivery is signed with afresh
/// (default: the first of `secrets`), for schemes hookgate can sign.
fn resign(
    c: &mut Check<'_>,
    field: &str,
    r: &RawSource,
    scheme: Option<&Scheme>,
    keys: Option<&[Secret]>,
    files: &mut Vec<PathBuf>,
) -> Option<Option<Secret>> {
    let Some(table) = &r.resign else {
        return Some(None);
    };
    let scheme = scheme?;
    if let Err(why) = scheme.resign_names() {
        c.at(
            table,
            field,
            format!(
                "scheme \"{}\" cannot be re-signed by hookgate: {why}; remove [source.resign]",
                scheme.name()
            ),
        );
        return None;
    }
    match &table.get_ref().secret {
        None => Some(keys?.first().cloned()),
        Some(entry) => {
            let secret_field = format!("{field}.secret");
            let (secret, origin) = resolve_secret(c, entry, &secret_field, files)?;
            match scheme.prepare_key(&secret) {
                Ok(key) => Some(Some(key)),
                Err(m) => {
                    c.at(entry, &secret_field, format!("{origin}{m}"));
                    None
                }
            }
        }
    }
}

const NOT_QUEUED: &str = "applies only to delivery = \"queue\"; with forward delivery \
     the sender retries on its own schedule";

/// Resolves one `secrets` entry. Returns the secret and a prefix naming
/// where it came from, for messages about its shape. Never quotes a value.
fn resolve_secret(
    c: &mut Check<'_>,
    entry: &Spanned<RawSecret>,
    field: &str,
    files: &mut Vec<PathBuf>,
) -> Option<(Secret, String)> {
    match entry.get_ref() {
        RawSecret::Literal(s) if s.is_empty() => {
            c.at(entry, field, "is an empty string");
            None
        }
        RawSecret::Literal(s) => Some((Secret::new(s.as_bytes()), String::new())),
        RawSecret::Env(name) if name.is_empty() => {
            c.at(
                entry,
                field,
                r#"env needs a variable name: { env = "NAME" }"#,
            );
            None
        }
        RawSecret::Env(name) => match c.secrets.env(name) {
            None => {
                c.at(
                    entry,
                    field,
                    format!("environment variable {name} is not set"),
                );
                None
            }
            Some(v) if v.is_empty() => {
                c.at(
                    entry,
                    field,
                    format!("environment variable {name} is empty"),
                );
                None
            }
            Some(v) => Some((
                Secret::new(v.into_bytes()),
                format!("environment variable {name}: "),
            )),
        },
        RawSecret::File(path) if path.is_empty() => {
            c.at(entry, field, r#"file needs a path: { file = "PATH" }"#);
            None
        }
        RawSecret::File(path) => {
            let p = PathBuf::from(path);
            if !files.contains(&p) {
                files.push(p.clone());
            }
            match c.secrets.file(&p) {
                Err(e) => {
                    c.at(entry, field, format!("cannot read secret file {path}: {e}"));
                    None
                }
                Ok(mut bytes) => {
                    while bytes.last() == Some(&b'\n') {
                        bytes.pop();
                        if bytes.last() == Some(&b'\r') {
                            bytes.pop();
                        }
                    }
                    if bytes.is_empty() {
                        c.at(entry, field, format!("secret file {path} is empty"));
                        None
                    } else {
                        Some((Secret::new(bytes), format!("secret file {path}: ")))
                    }
                }
            }
        }
        RawSecret::Invalid(m) => {
            c.at(entry, field, *m);
            None
        }
    }
}

/// Why an `event_types` pattern is invalid, if it is.
fn pattern_problem(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("is an empty pattern".to_owned());
    }
    let head = p.strip_suffix('*').unwrap_or(p);
    if head.contains('*') {
        return Some(format!(
            "\"{p}\": * may only be the last character (\"customer.*\")"
        ));
    }
    None
}

/// Which placeholders a signed-payload template uses.
struct Placeholders {
    id: bool,
    timestamp: bool,
    url: bool,
}

fn parse_template(t: &str) -> Result<Placeholders, String> {
    let mut found = Placeholders {
        id: false,
        timestamp: false,
        url: false,
    };
    let mut bodies = 0;
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        if rest[i..].starts_with('}') {
            return Err(format!("\"{t}\" has a }} without a matching {{"));
        }
        let after = &rest[i + 1..];
        let Some(end) = after.find('}') else {
            return Err(format!("\"{t}\" has a {{ without a matching }}"));
        };
        match &after[..end] {
            "id" => found.id = true,
            "timestamp" => found.timestamp = true,
            "body" => bodies += 1,
            "url" => found.url = true,
            other => match other.strip_prefix("header:") {
                Some(name) if HeaderName::from_bytes(name.as_bytes()).is_ok() => {}
                Some(name) => {
                    return Err(format!(
                        "\"{t}\" uses {{header:{name}}}, but \"{name}\" is not a valid header name"
                    ));
                }
                None => {
                    return Err(format!(
                        "\"{t}\" uses {{{other}}}; only {{id}}, {{timestamp}}, {{body}}, {{url}} \
                         and {{header:Name}} are allowed"
                    ));
                }
            },
        }
        rest = &after[end + 1..];
    }
    match bodies {
        0 => Err(format!("\"{t}\" must contain {{body}}")),
        1 => Ok(found),
        _ => Err(format!("\"{t}\" contains {{body}} more than once")),
    }
}

/// A string key that may be absent but, when given, must not be empty.
fn non_empty(
    c: &mut Check<'_>,
    v: Option<&Spanned<String>>,
    field: &str,
) -> Option<Option<String>> {
    match v {
        None => Some(None),
        Some(v) if v.get_ref().is_empty() => {
            c.at(v, field, "is empty; leave it out instead");
            None
        }
        Some(v) => Some(Some(v.get_ref().clone())),
    }
}

fn build_generic(c: &mut Check<'_>, label: &str, raw: &Spanned<RawGeneric>) -> Option<Generic> {
    let g = raw.get_ref();
    let table = Some(raw.span());
    let field = |k: &str| format!("{label}.generic.{k}");

    let sh = field("signature_header");
    let signature_header = c
        .required(&g.signature_header, table.clone(), &sh)
        .and_then(|v| c.header_name(v, &sh));
    let ah = field("alternate_signature_headers");
    let alternates = match &g.alternate_signature_headers {
        None => Some(Vec::new()),
        Some(list) => {
            let names: Vec<Option<HeaderName>> = list
                .get_ref()
                .iter()
                .enumerate()
                .map(|(j, v)| c.header_name(v, &format!("{ah}[{j}]")))
                .collect();
            names.into_iter().collect::<Option<Vec<_>>>()
        }
    };
    let signature_prefix = g
        .signature_prefix
        .as_ref()
        .map(|p| p.get_ref().clone())
        .filter(|p| !p.is_empty());
    let delimiter = non_empty(
        c,
        g.signature_delimiter.as_ref(),
        &field("signature_delimiter"),
    );
    let signature_key = non_empty(c, g.signature_key.as_ref(), &field("signature_key"));
    let timestamp_key = non_empty(c, g.timestamp_key.as_ref(), &field("timestamp_key"));
    let secret_prefix = g
        .secret_prefix
        .as_ref()
        .map(|p| p.get_ref().clone())
        .filter(|p| !p.is_empty());

    let alg = field("algorithm");
    let algorithm = c.word(
        g.algorithm.as_ref(),
        &alg,
        &[
            ("sha1", Algorithm::Sha1),
            ("sha256", Algorithm::Sha256),
            ("sha512", Algorithm::Sha512),
            ("token", Algorithm::Token),
        ],
        Some(Algorithm::Sha256),
    );
    let is_token = algorithm == Some(Algorithm::Token);
    let enc = field("encoding");
    let encodings = [
        ("hex", Encoding::Hex),
        ("base64", Encoding::Base64),
        ("base64url", Encoding::Base64Url),
    ];
    let encoding = if is_token {
        c.word(g.encoding.as_ref(), &enc, &encodings, Some(Encoding::Hex))
    } else {
        c.required(&g.encoding, table, &enc)
            .and_then(|v| c.word(Some(v), &enc, &encodings, None))
    };
    let timestamp_format = c.word(
        g.timestamp_format.as_ref(),
        &field("timestamp_format"),
        &[
            ("seconds", TimestampFormat::Seconds),
            ("milliseconds", TimestampFormat::Milliseconds),
            ("rfc3339", TimestampFormat::Rfc3339),
        ],
        Some(TimestampFormat::Seconds),
    );
    let secret_encoding = c.word(
        g.secret_encoding.as_ref(),
        &field("secret_encoding"),
        &[
            ("raw", SecretEncoding::Raw),
            ("base64", SecretEncoding::Base64),
            ("hex", SecretEncoding::Hex),
        ],
        Some(SecretEncoding::Raw),
    );
    let sp = field("signed_payload");
    let (signed_payload, placeholders) = match &g.signed_payload {
        None if c.poisoned.contains(&sp) => (None, None),
        Some(v) if is_token => {
            c.at(
                v,
                &sp,
                "does not apply: with algorithm = \"token\" the header carries the secret and nothing is signed",
            );
            (None, None)
        }
        None if is_token => (Some(String::new()), None),
        None => (
            Some(DEFAULT_SIGNED_PAYLOAD.to_owned()),
            Some(Placeholders {
                id: false,
                timestamp: false,
                url: false,
            }),
        ),
        Some(v) => match parse_template(v.get_ref()) {
            Ok(p) => (Some(v.get_ref().clone()), Some(p)),
            Err(m) => {
                c.at(v, &sp, m);
                (None, None)
            }
        },
    };
    let th = field("timestamp_header");
    let timestamp_header = match &g.timestamp_header {
        None => Some(None),
        Some(v) => c.header_name(v, &th).map(Some),
    };
    let event_id = locator(c, g.event_id.as_ref(), &field("event_id"));
    let event_type = locator(c, g.event_type.as_ref(), &field("event_type"));

    // A delimiter made of signature characters would cut every signature
    // apart: refuse it here rather than fail every request.
    if let (Some(v), Some(enc)) = (&g.signature_delimiter, encoding) {
        let in_alphabet = |ch: char| match enc {
            Encoding::Hex => ch.is_ascii_hexdigit(),
            Encoding::Base64 => ch.is_ascii_alphanumeric() || matches!(ch, '+' | '/' | '='),
            Encoding::Base64Url => ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '='),
        };
        if v.get_ref().chars().all(in_alphabet) && !v.get_ref().is_empty() {
            c.at(
                v,
                &field("signature_delimiter"),
                "is made of characters a signature itself uses; pick a separator such as \",\" or \" \"",
            );
        }
    }
    // Cross-checks between the list keys.
    if let (Some(v), None) = (&g.signature_key, &g.signature_delimiter) {
        c.at(
            v,
            &field("signature_key"),
            "needs signature_delimiter: a key=value list has several entries",
        );
    }
    if let Some(v) = &g.timestamp_key {
        if g.signature_key.is_none() {
            c.at(
                v,
                &field("timestamp_key"),
                "needs signature_key: the timestamp is an entry of a key=value list",
            );
        }
        if g.timestamp_header.is_some() {
            c.at(
                v,
                &field("timestamp_key"),
                "and timestamp_header both name the timestamp; keep one",
            );
        }
    }
    if is_token {
        for (v, k) in [
            (&g.timestamp_header, "timestamp_header"),
            (&g.timestamp_key, "timestamp_key"),
        ] {
            if let Some(v) = v {
                c.at(
                    v,
                    &field(k),
                    "does not apply: a token signs nothing, so no timestamp is signed",
                );
            }
        }
    }
    // Cross-checks between the template and where values come from.
    let has_ts_source = g.timestamp_header.is_some() || g.timestamp_key.is_some();
    let ts_poisoned = c.poisoned.contains(&th) || c.poisoned.contains(&field("timestamp_key"));
    if let Some(p) = &placeholders {
        let payload_span = g.signed_payload.as_ref().map(|v| v.span());
        if p.timestamp && !has_ts_source && !ts_poisoned {
            c.push(
                payload_span.clone(),
                &sp,
                "uses {timestamp} but neither generic.timestamp_header nor generic.timestamp_key is set",
            );
        }
        if !p.timestamp {
            for (v, k) in [
                (&g.timestamp_header, "timestamp_header"),
                (&g.timestamp_key, "timestamp_key"),
            ] {
                if let Some(v) = v {
                    c.at(
                        v,
                        &field(k),
                        "is set but signed_payload has no {timestamp}: an unsigned timestamp \
                         proves nothing, so it cannot bound replays",
                    );
                }
            }
        }
        if p.id {
            match &g.event_id {
                Some(v) if matches!(v.get_ref(), RawLocator::Pointer(_)) => c.at(
                    v,
                    &field("event_id"),
                    "{id} in signed_payload needs the id from a header: \
                     { header = \"…\" } (the body is only read after the signature is verified)",
                ),
                Some(_) => {}
                None if c.poisoned.contains(&field("event_id")) => {}
                None => c.push(
                    payload_span,
                    &sp,
                    "uses {id} but generic.event_id is not set; {id} needs \
                     event_id = { header = \"…\" }",
                ),
            }
        }
    }

    Some(Generic {
        signature_header: signature_header?,
        alternate_signature_headers: alternates?,
        signature_prefix,
        signature_delimiter: delimiter?,
        signature_key: signature_key?,
        encoding: encoding?,
        algorithm: algorithm?,
        signed_payload: signed_payload?,
        timestamp_header: timestamp_header?,
        timestamp_key: timestamp_key?,
        timestamp_format: timestamp_format?,
        secret_encoding: secret_encoding?,
        secret_prefix,
        public_url: None,
        event_id: event_id?,
        event_type: event_type?,
        labels: Labels::CONFIG,
    })
}

/// An optional `{ header = … }` / `{ pointer = … }`; outer `None` = invalid.
fn locator(
    c: &mut Check<'_>,
    value: Option<&Spanned<RawLocator>>,
    field: &str,
) -> Option<Option<Locator>> {
    let Some(v) = value else {
        return Some(None);
    };
    match v.get_ref() {
        RawLocator::Header(h) => match HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) => Some(Some(Locator::Header(name))),
            Err(_) => {
                c.at(v, field, format!("\"{h}\" is not a valid HTTP header name"));
                None
            }
        },
        RawLocator::Pointer(p) => match pointer_problem(p) {
            None => Some(Some(Locator::Pointer(p.clone()))),
            Some(m) => {
                c.at(v, field, m);
                None
            }
        },
        RawLocator::Invalid(m) => {
            c.at(v, field, *m);
            None
        }
    }
}
