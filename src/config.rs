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
//! This file holds [`Config`], its [`Error`] and the entry points; each table
//! has a room of its own: `server` (`[server]` and `[admin]`), `store`,
//! `source` (`[[source]]`), `generic` (`[source.generic]`, whose shape rules
//! are the scheme's `Generic::flaws`, shared with the presets), `keys`
//! (the provider-key options and `[source.keys]`) and `tracing`
//! (`[tracing]`). Below them, `raw` deserializes the file and `check`
//! collects the problems.
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
//! - `allow_ips` (per source) and `server.trusted_proxies` are lists of IPv4
//!   and IPv6 CIDRs or bare addresses (`/32`, `/128`); a CIDR with bits set
//!   past its prefix is refused (likely a typo), as is `allow_ips = []`
//!   (it would refuse every request). Each bad entry is reported as
//!   `field[i]` at its own line.

use std::fmt;
use std::path::Path;

mod check;
pub mod duration;
mod encryption;
mod filters;
mod generic;
mod keys;
mod raw;
mod secrets;
mod server;
mod source;
mod store;
mod tracing;

#[cfg(test)]
mod tests;

use check::Check;
use server::{build_admin, build_server};
use source::build_sources;
use store::build_store;

#[cfg(test)]
use {server::without_userinfo, source::DEFAULT_TOLERANCE};

pub use server::{Admin, Lifetimes, Server, Tls, Underscores, Unmatched};
pub use source::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_RETRY_SCHEDULE, Delivery, OnStoreError, Ordering, Source,
    Verification, parse_rate, warn_widened,
};
pub use store::{Sentinel, Store, StoreKind, redact_url};
pub use tracing::{DEFAULT_SERVICE_NAME, Tracing};

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub server: Server,
    pub admin: Admin,
    pub store: Store,
    pub sources: Vec<Source>,
    /// `[tracing]`, when traces are exported.
    pub tracing: Option<Tracing>,
}

/// Where `{ env = … }` and `{ file = … }` secrets come from. Tests pass a map;
/// the binary passes [`SystemSecrets`].
///
/// It is also the config's view of the filesystem where a key names a place
/// to write: `[store] path`.
pub trait SecretSource {
    fn env(&self, name: &str) -> Option<String>;
    fn file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>>;
    /// The directory relative paths in the config are taken from (the config
    /// file's); `None`: the working directory.
    fn base_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Why files cannot be created in `dir`, if they cannot: it is missing,
    /// not a directory, or refuses a new file.
    fn dir_problem(&self, dir: &std::path::Path) -> Option<String> {
        writable_dir_problem(dir)
    }
}

/// Tries to create (and removes) a file in `dir`: the one check that sees
/// permissions, read-only mounts and ACLs alike.
pub fn writable_dir_problem(dir: &std::path::Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(format!("the directory {} does not exist", dir.display()));
        }
        Err(e) => {
            return Some(format!(
                "the directory {} cannot be read: {e}",
                dir.display()
            ));
        }
        Ok(m) if !m.is_dir() => return Some(format!("{} is not a directory", dir.display())),
        Ok(_) => {}
    }
    let probe = dir.join(format!(".hookgate-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
        Err(e) => Some(format!(
            "the directory {} cannot be written: {e}",
            dir.display()
        )),
    }
}

/// Reads the process environment and the filesystem; relative paths are
/// taken from the working directory.
pub struct SystemSecrets;

impl SecretSource for SystemSecrets {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

/// [`SystemSecrets`] for a config file in `dir`: relative paths are taken
/// from there.
struct ConfigFileDir(std::path::PathBuf);

impl SecretSource for ConfigFileDir {
    fn env(&self, name: &str) -> Option<String> {
        SystemSecrets.env(name)
    }
    fn file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>> {
        SystemSecrets.file(path)
    }
    fn base_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.0.clone())
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
            lines: raw::Lines::of(src),
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
        let tracing = tracing::build_tracing(&mut c, file.tracing.as_ref());
        let mut problems = c.problems;
        if problems.is_empty() {
            if let (Some(server), Some(admin), Some(store), Some(sources), Some(tracing)) =
                (server, admin, store.store, sources, tracing)
            {
                return Ok(Config {
                    server,
                    admin,
                    store,
                    sources,
                    tracing,
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
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => std::path::PathBuf::from("."),
        };
        Config::from_toml_str(&text, &ConfigFileDir(dir))
    }
}
