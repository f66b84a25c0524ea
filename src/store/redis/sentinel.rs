//! The primary that a set of Redis Sentinels names (`kind = "redis-sentinel"`).
//!
//! The redis crate's [`Sentinel`] finds it: it asks the sentinels
//! (`SENTINEL MASTERS`), skips a master they flag down, and checks with `ROLE`
//! that the node they name really is a primary. What this module adds around it:
//!
//! - **A bound on every lookup** ([`LOOKUP_TIMEOUT`]): the crate waits as long
//!   as a frozen sentinel or a frozen primary keeps the socket open.
//! - **Following a failover without a restart.** Commands go through a
//!   [`ConnectionManager`] to the node found last. When a command fails in a
//!   way that says that node is gone or no longer the primary (a connection
//!   error, no answer in time, `-READONLY` or `-MASTERDOWN` from a demoted
//!   node), the store calls [`Primary::forget`] and the next command asks the
//!   sentinels again. The crate's own client (`SentinelClient`) asks once per
//!   new connection and never notices a demotion on a connection it made.
//! - **One lookup at a time**, and a failed lookup answered from memory for
//!   `RETRY_LOOKUP_AFTER`, so a burst of requests during a failover is not a
//!   burst of sentinel queries.
//! - **"No such master" told apart from "primary down"**: both are the
//!   crate's `MasterNameNotFoundBySentinel`. [`probe`] asks each sentinel
//!   `SENTINEL GET-MASTER-ADDR-BY-NAME`; when some answer and none knows the
//!   name, the config is wrong ([`Error::NoSuchMaster`], refused by
//!   `hookgate check`, shown on `/readyz`, logged as an error), otherwise a
//!   failover is under way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use redis::aio::ConnectionManager;
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{ErrorKind, RedisConnectionInfo};

use super::{manager_config, scrub};
use crate::store::Error;

/// Upper bound on one lookup of the primary (sentinels, then `ROLE` on it).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long one sentinel may take to answer [`probe`].
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failed lookup, commands fail at once for this long instead of
/// asking again (a failover takes seconds; a request waits for none of them).
const RETRY_LOOKUP_AFTER: Duration = Duration::from_millis(100);

/// The node the sentinels named last, with its connection.
pub struct Node {
    /// Counts lookups: a failure on an older node does not drop a newer one.
    pub generation: u64,
    /// `host:port`, for the log (credentials are never part of it).
    pub addr: String,
    /// Opens the extra connections writes with `WAIT` use.
    pub client: redis::Client,
    pub conn: ConnectionManager,
}

pub struct Primary {
    master: String,
    sentinel_urls: Vec<String>,
    /// Credentials for the data nodes, applied to every node the sentinels name.
    node_info: SentinelNodeConnectionInfo,
    /// Held during a lookup: lookups run one at a time.
    sentinel: tokio::sync::Mutex<Sentinel>,
    current: ArcSwapOption<Node>,
    generations: AtomicU64,
    /// The last failed lookup, answered again until [`RETRY_LOOKUP_AFTER`].
    failed: std::sync::Mutex<Option<(Instant, Error)>>,
    /// The problem logged last, so a lasting problem is logged once.
    reported: std::sync::Mutex<Option<String>>,
    /// Scrubbed from messages: URLs and credentials.
    secrets: Vec<String>,
}

impl Primary {
    /// Does no I/O; fails only on unusable sentinel URLs.
    pub fn new(
        sentinels: &[String],
        master: &str,
        username: Option<&str>,
        password: Option<&str>,
        secrets: Vec<String>,
    ) -> Result<Primary, Error> {
        if sentinels.is_empty() {
            return Err(Error::Unavailable("no sentinel URL given".into()));
        }
        let sentinel =
            Sentinel::build(sentinels.iter().map(String::as_str).collect()).map_err(|e| {
                Error::Unavailable(scrub(&format!("invalid sentinel URLs: {e}"), &secrets))
            })?;
        let mut redis = RedisConnectionInfo::default();
        if let Some(username) = username {
            redis = redis.set_username(username);
        }
        if let Some(password) = password {
            redis = redis.set_password(password);
        }
        Ok(Primary {
            master: master.to_owned(),
            sentinel_urls: sentinels.to_vec(),
            node_info: SentinelNodeConnectionInfo::default().set_redis_connection_info(redis),
            sentinel: tokio::sync::Mutex::new(sentinel),
            current: ArcSwapOption::empty(),
            generations: AtomicU64::new(0),
            failed: std::sync::Mutex::new(None),
            reported: std::sync::Mutex::new(None),
            secrets,
        })
    }

    /// The primary to send commands to: the one found last, or a new lookup.
    pub async fn node(&self) -> Result<Arc<Node>, Error> {
        if let Some(node) = self.current.load_full() {
            return Ok(node);
        }
        let mut sentinel = self.sentinel.lock().await;
        // Another request may have found it while this one waited.
        if let Some(node) = self.current.load_full() {
            return Ok(node);
        }
        if let Some((at, error)) = &*lock(&self.failed)
            && at.elapsed() < RETRY_LOOKUP_AFTER
        {
            return Err(error.clone());
        }
        let found = tokio::time::timeout(
            LOOKUP_TIMEOUT,
            sentinel.async_master_for(&self.master, Some(&self.node_info)),
        )
        .await;
        drop(sentinel);
        let client = match found {
            Ok(Ok(client)) => client,
            Ok(Err(e)) if e.kind() == ErrorKind::MasterNameNotFoundBySentinel => {
                return Err(self.failed(match probe(&self.sentinel_urls, &self.master).await {
                    Probe::Unknown => Error::NoSuchMaster(self.master.clone()),
                    _ => Error::Unavailable(format!(
                        "the sentinels name no primary for {:?} that answers (down, or a failover under way)",
                        self.master
                    )),
                }));
            }
            Ok(Err(e)) => {
                return Err(self.failed(Error::Unavailable(scrub(
                    &format!("asking the sentinels for {:?}: {e}", self.master),
                    &self.secrets,
                ))));
            }
            Err(_) => {
                return Err(self.failed(Error::Unavailable(format!(
                    "the sentinels named no answering primary for {:?} within {}ms",
                    self.master,
                    LOOKUP_TIMEOUT.as_millis()
                ))));
            }
        };
        let addr = client.get_connection_info().addr().to_string();
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager_config())
            .map_err(|e| self.failed(Error::Unavailable(scrub(&e.to_string(), &self.secrets))))?;
        let node = Arc::new(Node {
            generation: self.generations.fetch_add(1, Ordering::Relaxed) + 1,
            addr,
            client,
            conn,
        });
        *lock(&self.failed) = None;
        *lock(&self.reported) = None;
        tracing::info!(master = %self.master, primary = %node.addr, "the sentinels name this primary; commands go there");
        self.current.store(Some(Arc::clone(&node)));
        Ok(node)
    }

    /// Drops `node` (when it is still the current one): a command found it
    /// gone or demoted, so the next command asks the sentinels again.
    pub fn forget(&self, node: &Node, why: &str) {
        let current = self.current.load();
        if current
            .as_ref()
            .is_some_and(|c| c.generation == node.generation)
        {
            self.current.store(None);
            tracing::warn!(master = %self.master, primary = %node.addr, reason = %why, "the primary stopped answering as one; asking the sentinels again");
        }
    }

    /// Drops whatever node is current (after a command got no answer in time).
    pub fn forget_current(&self, why: &str) {
        if let Some(node) = self.current.load_full() {
            self.forget(&node, why);
        }
    }

    /// Remembers a failed lookup and logs it once per distinct problem.
    fn failed(&self, error: Error) -> Error {
        *lock(&self.failed) = Some((Instant::now(), error.clone()));
        let message = error.to_string();
        let mut reported = lock(&self.reported);
        if reported.as_deref() != Some(message.as_str()) {
            match &error {
                Error::NoSuchMaster(_) => {
                    tracing::error!(master = %self.master, error = %message, "store.master: check the name the sentinels monitor");
                }
                _ => tracing::warn!(master = %self.master, error = %message, "no primary"),
            }
            *reported = Some(message);
        }
        error
    }

    pub fn master(&self) -> &str {
        &self.master
    }
}

/// What the sentinels say about a master name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// At least one sentinel knows it.
    Known,
    /// Some sentinels answered, and none knows it.
    Unknown,
    /// No sentinel answered.
    Unreachable,
}

/// Asks every sentinel (at once, each within `PROBE_TIMEOUT`) whether it
/// monitors `master` (`SENTINEL GET-MASTER-ADDR-BY-NAME`).
pub async fn probe(sentinels: &[String], master: &str) -> Probe {
    let mut asks = tokio::task::JoinSet::new();
    for url in sentinels {
        let (url, master) = (url.clone(), master.to_owned());
        asks.spawn(async move {
            let ask = async {
                let client = redis::Client::open(url.as_str())?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                redis::cmd("SENTINEL")
                    .arg("GET-MASTER-ADDR-BY-NAME")
                    .arg(&master)
                    .query_async::<Option<(String, u16)>>(&mut conn)
                    .await
            };
            match tokio::time::timeout(PROBE_TIMEOUT, ask).await {
                Ok(Ok(addr)) => Some(addr.is_some()),
                _ => None,
            }
        });
    }
    let (mut answered, mut known) = (false, false);
    while let Some(result) = asks.join_next().await {
        if let Ok(Some(knows)) = result {
            answered = true;
            known |= knows;
        }
    }
    match (answered, known) {
        (_, true) => Probe::Known,
        (true, false) => Probe::Unknown,
        (false, _) => Probe::Unreachable,
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
