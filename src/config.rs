//! Configuration: the TOML file of DESIGN §2, parsed into raw serde structs
//! (unknown keys refused), then validated into the runtime types below, with
//! secrets resolved and durations, URLs and header names parsed. Nothing
//! invalid gets past this module.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use http::Uri;

use crate::scheme::Scheme;

pub mod duration;
pub mod secret;
#[cfg(test)]
mod tests;

use secret::Secret;

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
    pub tls: Option<Tls>,
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    Redis { url: String },
    RedisCluster { urls: Vec<String> },
}

#[derive(Debug, Clone)]
pub struct Store {
    pub kind: StoreKind,
    pub nonce_ttl: Duration,
    pub key_prefix: String,
    /// Upper bound on entries the memory store holds (fail closed beyond it).
    pub memory_max_entries: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Forward,
    Queue,
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
    pub ordering: Option<Ordering>,
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
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render(.0))]
pub struct Error(pub Vec<Problem>);

fn render(problems: &[Problem]) -> String {
    let _ = problems;
    todo!()
}

impl Config {
    /// Parses and validates a config file's text, reporting every problem at once.
    pub fn from_toml_str(src: &str, secrets: &dyn SecretSource) -> Result<Config, Error> {
        let _ = (src, secrets);
        todo!()
    }

    /// Reads and validates the file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Config, Error> {
        let _ = path;
        todo!()
    }
}
