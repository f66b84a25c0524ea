//! `[store]`: the nonce store (SQLite, memory, Redis, Redis Cluster or Redis
//! Sentinel), its key prefix, nonce lifetime and replication bounds.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::check::{Check, resolve_secret};
use super::raw::{RawSecret, RawStore};
use crate::secret::Secret;
pub use crate::store::sqlite::Sync;

/// `Debug` hides the password of a Redis URL.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    /// One SQLite file (DESIGN §4a); `path` is absolute or taken from the
    /// config file's directory.
    Sqlite {
        path: PathBuf,
        sync: Sync,
    },
    Redis {
        url: String,
    },
    RedisCluster {
        urls: Vec<String>,
    },
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
    /// `[store.encryption]`: the keys that seal stored payloads (DESIGN
    /// §4b), the sealing one first; empty when payloads are stored as they
    /// are. The memory store keeps nothing at rest and ignores them.
    pub encryption: crate::seal::Keyring,
    /// `dead_letter_max_age`: dead letters older than this (since they
    /// became one) are removed in the background (DESIGN §6); `None`: kept
    /// until replayed or deleted.
    pub dead_letter_max_age: Option<Duration>,
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
            StoreKind::Sqlite { path, sync } => f
                .debug_struct("Sqlite")
                .field("path", path)
                .field("sync", sync)
                .finish(),
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

const DEFAULT_NONCE_TTL: Duration = Duration::from_secs(24 * 3600);
const DEFAULT_MEMORY_MAX_ENTRIES: usize = 1_000_000;
const DEFAULT_REPLICA_TIMEOUT: Duration = Duration::from_millis(500);
/// A sender waits for hookgate's answer; a longer `WAIT` would outlast it.
const MAX_REPLICA_TIMEOUT: Duration = Duration::from_secs(10);
/// More replicas than any deployment has: a typo, not a setting.
const MAX_MIN_REPLICAS: i64 = 64;
/// `dead_letter_max_age` bounds: a second (tests and drills) to ten years.
const MIN_DEAD_LETTER_MAX_AGE: Duration = Duration::from_secs(1);
const MAX_DEAD_LETTER_MAX_AGE: Duration = Duration::from_secs(10 * 365 * 86_400);

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum KindWord {
    Memory,
    Sqlite,
    Redis,
    Cluster,
    Sentinel,
}

/// The validated store, plus what sources need to know even when the store
/// itself has problems.
pub(super) struct StoreInfo {
    pub(super) store: Option<Store>,
    /// `None` when `kind` is invalid.
    pub(super) kind: Option<KindWord>,
    pub(super) nonce_ttl: Option<Duration>,
    pub(super) nonce_ttl_span: Option<Range<usize>>,
}

pub(super) fn build_store(c: &mut Check<'_>, raw: Option<&Spanned<RawStore>>) -> StoreInfo {
    let table = raw.map(|r| r.span());
    let r = raw.map(|r| r.get_ref());
    let kind = c.word(
        r.and_then(|r| r.kind.as_ref()),
        "store.kind",
        &[
            ("memory", KindWord::Memory),
            ("sqlite", KindWord::Sqlite),
            ("redis", KindWord::Redis),
            ("redis-cluster", KindWord::Cluster),
            ("redis-sentinel", KindWord::Sentinel),
        ],
        Some(KindWord::Memory),
    );
    let url = r.and_then(|r| r.url.as_ref());
    let urls = r.and_then(|r| r.urls.as_ref());
    let sentinel_keys_ok = kind == Some(KindWord::Sentinel) || refuse_sentinel_keys(c, r);
    let sqlite_keys_ok = kind == Some(KindWord::Sqlite) || refuse_sqlite_keys(c, r);
    let store_kind = match kind {
        Some(KindWord::Sqlite) => sqlite(c, r, table.clone()),
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
        None => Some(crate::store::keys::DEFAULT_PREFIX.to_owned()),
        // Checked, and without effect: one SQLite file is one namespace.
        Some(v) if kind == Some(KindWord::Sqlite) => {
            key_prefix(c, v).map(|_| crate::store::keys::DEFAULT_PREFIX.to_owned())
        }
        Some(v) => key_prefix(c, v),
    };
    let memory_max_entries = c.positive(
        r.and_then(|r| r.memory_max_entries.as_ref()),
        "store.memory_max_entries",
        DEFAULT_MEMORY_MAX_ENTRIES,
    );
    let (min_replicas, replica_timeout) = replication(c, r, kind);
    let encryption = super::encryption::keyring(c, r.and_then(|r| r.encryption.as_ref()));
    let max_age_value = r.and_then(|r| r.dead_letter_max_age.as_ref());
    let dead_letter_max_age = match max_age_value {
        None => Some(None),
        Some(v) if kind == Some(KindWord::Memory) => {
            c.at(
                v,
                "store.dead_letter_max_age",
                "the memory store keeps no dead letters",
            );
            None
        }
        Some(v) => c
            .duration_within(
                Some(v),
                "store.dead_letter_max_age",
                MIN_DEAD_LETTER_MAX_AGE,
                MIN_DEAD_LETTER_MAX_AGE..=MAX_DEAD_LETTER_MAX_AGE,
            )
            .map(Some),
    };
    let store = match (
        store_kind.filter(|_| sentinel_keys_ok && sqlite_keys_ok),
        nonce_ttl,
        key_prefix,
        memory_max_entries,
        min_replicas,
        replica_timeout,
        encryption,
        dead_letter_max_age,
    ) {
        (
            Some(kind),
            Some(nonce_ttl),
            Some(key_prefix),
            Some(memory_max_entries),
            Some(min_replicas),
            Some(replica_timeout),
            Some(encryption),
            Some(dead_letter_max_age),
        ) => Some(Store {
            kind,
            nonce_ttl,
            key_prefix,
            memory_max_entries,
            min_replicas,
            replica_timeout,
            master_line: r
                .and_then(|r| r.master.as_ref())
                .map(|m| c.lines.line(m.span().start)),
            encryption,
            dead_letter_max_age,
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

/// `path` and `sync` on another kind than `sqlite`: each is a problem.
/// Returns whether there was none.
fn refuse_sqlite_keys(c: &mut Check<'_>, r: Option<&RawStore>) -> bool {
    let Some(r) = r else { return true };
    let mut ok = true;
    if let Some(v) = &r.path {
        c.at(v, "store.path", r#"only kind = "sqlite" takes a path"#);
        ok = false;
    }
    if let Some(v) = &r.sync {
        c.at(v, "store.sync", r#"only kind = "sqlite" takes sync"#);
        ok = false;
    }
    ok
}

/// `kind = "sqlite"`: `path` (required; its directory must exist and take
/// new files) and `sync` (`"full"`, the default, or `"normal"`).
fn sqlite(
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
                r#"kind = "sqlite" takes path = "FILE", not url"#,
            );
            ok = false;
        }
        if let Some(u) = &r.urls {
            c.at(
                u,
                "store.urls",
                r#"kind = "sqlite" takes path = "FILE", not urls"#,
            );
            ok = false;
        }
    }
    let sync = c.word(
        r.and_then(|r| r.sync.as_ref()),
        "store.sync",
        &[("full", Sync::Full), ("normal", Sync::Normal)],
        Some(Sync::Full),
    );
    let path = match r.and_then(|r| r.path.as_ref()) {
        None => {
            if !c.poisoned.contains("store.path") {
                c.push(
                    table,
                    "store.path",
                    r#"kind = "sqlite" needs path = "/var/lib/hookgate/hookgate.db" (a file in a directory that exists)"#,
                );
            }
            None
        }
        Some(v) if v.get_ref().is_empty() || v.get_ref().ends_with('/') => {
            c.at(v, "store.path", "must name a file, not a directory");
            None
        }
        Some(v) => {
            let given = Path::new(v.get_ref());
            let path = match c.secrets.base_dir() {
                Some(base) if given.is_relative() => base.join(given),
                _ => given.to_owned(),
            };
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
                _ => PathBuf::from("."),
            };
            if path.is_dir() {
                c.at(
                    v,
                    "store.path",
                    format!("{} is a directory; name a file in it", path.display()),
                );
                None
            } else if let Some(problem) = c.secrets.dir_problem(&dir) {
                c.at(v, "store.path", format!("{problem}: hookgate keeps its database file (and its -wal and -shm files) there"));
                None
            } else {
                Some(path)
            }
        }
    };
    match (ok, path, sync) {
        (true, Some(path), Some(sync)) => Some(StoreKind::Sqlite { path, sync }),
        _ => None,
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
                if n > 0 && matches!(kind, Some(KindWord::Memory | KindWord::Sqlite)) {
                    c.at(
                        v,
                        "store.min_replicas",
                        format!(
                            "the {} store has no replicas to wait for; use a redis, redis-cluster or redis-sentinel store with replicas",
                            if kind == Some(KindWord::Sqlite) { "sqlite" } else { "memory" }
                        ),
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
        } else if matches!(kind, Some(KindWord::Memory | KindWord::Sqlite)) {
            c.at(
                v,
                "store.replica_timeout",
                format!(
                    "the {} store has no replicas to wait for",
                    if kind == Some(KindWord::Sqlite) {
                        "sqlite"
                    } else {
                        "memory"
                    }
                ),
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
