//! The shared store: one Redis node, a Redis Cluster, or the primary that a
//! set of Redis Sentinels names.
//!
//! Every verb is one command or one Lua script touching one key (one round
//! trip, atomic, and the key decides the cluster slot): a claim is `SET … NX PX
//! … GET` (a script before Redis 7.0), a commit a plain `SET … PX`, a release
//! and a version advance compare first, so they are scripts, run with EVALSHA
//! and loaded on `NOSCRIPT`.
//! A nonce key holds `inflight:<token>` while a request holds its lease and
//! `done` once the app accepted the event. A version key holds a decimal integer.
//!
//! # Connections
//!
//! Construction does no I/O, so hookgate starts (and answers 503) while Redis is
//! down. A single node goes through a lazily connected
//! [`ConnectionManager`]: the first command connects, and a command that finds
//! the connection broken or refused makes it start a new attempt in the
//! background. A cluster goes through a [`redis::cluster_async::ClusterConnection`] created pending: it
//! connects in the background, refreshes its slot map and reconnects to nodes on
//! its own. A sentinel-named primary goes through a [`ConnectionManager`] to
//! the node found last, dropped and looked up again when it fails as a primary
//! would not ([`sentinel`]). Every command runs under [`COMMAND_TIMEOUT`], so a
//! dead or frozen Redis becomes [`Error::Unavailable`] within that bound
//! instead of holding a request.
//!
//! # Replicated writes
//!
//! With `min_replicas = N` ([`Replication`]), each write that backs a promise
//! ([`RedisStore::write`]: the enqueue, the nonce commit, the version advance,
//! a dead letter, a queue worker's lease on the entries it takes and the
//! removal of one it delivered, a dead-letter job's record) is sent together with `WAIT N timeout` on a connection of its
//! own (`lanes`). Fewer acknowledgements in time make it
//! [`Error::NotReplicated`], counted in
//! `hookgate_replication_timeouts_total{operation}`: the caller treats it as a
//! failed write, although the primary has it (and may still replicate it).
//!
//! # Eviction
//!
//! Redis keeps hookgate's promises only while it never evicts keys
//! (`maxmemory-policy noeviction`); [`eviction`] reads the servers' policy
//! and eviction count for the log, `check` and the gauges.
//!
//! # Secrets
//!
//! A Redis URL can carry a password, and so can `[store] password`. Neither
//! appears in an error, a log line or `Debug` output: error messages are
//! scrubbed of the URLs and the credentials.

mod cluster;
mod commands;
pub mod eviction;
mod lanes;
mod payloads;
pub mod queue;
mod scrub;
pub mod sentinel;
mod stats;
pub mod trail;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use redis::aio::ConnectionManager;
use redis::cluster::ClusterConfig;
use redis::{ErrorKind, Script, Value};

use self::cluster::Cluster;
use self::commands::{Conn, Target, cluster_client, manager_config};
use self::lanes::{Lanes, Opener};
use self::scrub::{scrub, secrets_of};
use self::sentinel::Primary;
use super::{Claim, Error, Replication, VERSION_TTL};
use crate::metrics::{OperationLabel, ReasonLabel};

/// Upper bound on one store operation, reconnect included. Kept below the time
/// a sender waits for an answer, so a dead Redis turns into a prompt 503.
/// A write with `WAIT` may take `replica_timeout` longer.
pub const COMMAND_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long one TCP connect (plus handshake) to a node may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long Redis may take to answer one command on an open connection.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

const INFLIGHT: &str = "inflight:";

/// A write that backs a promise, as `hookgate_replication_timeouts_total`
/// labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// The queue's `XADD` before `200 queued`.
    Enqueue,
    /// A nonce turned `done` after the app's 2xx.
    Commit,
    /// The version gate moved forward.
    VersionAdvance,
    /// A dead letter appended.
    DeadLetter,
    /// Queue entries leased to a worker (`XREADGROUP`, `XAUTOCLAIM`): a
    /// worker delivers only what a replica knows it holds.
    Take,
    /// A delivered queue entry removed.
    Settle,
    /// A dead-letter job's record written (DESIGN §6b): the entry a job
    /// sends next is named there first, so a takeover after a failover
    /// knows it.
    Job,
}

impl Operation {
    pub fn label(self) -> &'static str {
        match self {
            Operation::Enqueue => "enqueue",
            Operation::Commit => "commit",
            Operation::VersionAdvance => "version_advance",
            Operation::DeadLetter => "dead_letter",
            Operation::Take => "take",
            Operation::Settle => "settle",
            Operation::Job => "job",
        }
    }
}

/// Takes a free key for a lease. KEYS[1] = key, ARGV[1] = `inflight:<token>`,
/// ARGV[2] = lease in ms. Returns 0 = taken (fresh), 1 = done, 2 = in flight.
/// Used only where the server refuses `SET … NX GET` (before Redis 7.0).
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
if v == 'done' then return 1 end
return 2
",
    )
});

/// Deletes a key only while it holds this token. KEYS[1] = key,
/// ARGV[1] = `inflight:<token>`. Returns 1 if it deleted.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
",
    )
});

/// Moves a version forward. KEYS[1] = key, ARGV[1] = version (canonical
/// decimal), ARGV[2] = ttl in ms. Returns 1 if it stored the version.
///
/// Lua numbers are doubles, exact only to 2^53, and versions are often unix
/// nanoseconds (about 2^61): the comparison works on the decimal strings (sign,
/// then length, then digits). A stored value that is not an integer is replaced.
/// GCRA with no burst for `max_rate` (see `crate::pace`). KEYS[1] holds
/// the server time (ms) the next start may happen; ARGV = the interval
/// (ms), the starts reserved. Returns each start's delay (ms) from now.
static PACE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local nextat = tonumber(redis.call('GET', KEYS[1]) or '0')
if nextat < now then nextat = now end
local out = {}
for i = 1, count do
  out[i] = math.floor(nextat + (i - 1) * interval - now)
end
local after = nextat + count * interval
redis.call('SET', KEYS[1], string.format('%.3f', after), 'PX', math.floor(after - now) + 60000)
return out
",
    )
});

/// Compare-and-set of one string key: ARGV[1] the value expected (`""`:
/// absent), ARGV[2] the new one. Returns 1 when it was set.
static SWAP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
",
    )
});

/// `KEYS[1]` a hash, `ARGV[1]` a field: set to `ARGV[3]` (`''`: removed)
/// if it holds `ARGV[2]` (`''`: absent).
static HASH_SWAP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return 0 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 1
",
    )
});

static VERSION_ADVANCE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local function less(a, b)
  local an = string.sub(a, 1, 1) == '-'
  local bn = string.sub(b, 1, 1) == '-'
  if an ~= bn then return an end
  if #a ~= #b then
    if an then return #a > #b end
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      if an then return x > y end
      return x < y
    end
  end
  return false
end
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^%-?%d+$') and not less(cur, ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
",
    )
});

/// The Redis backend (single node, cluster or sentinel primary). Cheap to
/// clone: connections are shared handles.
#[derive(Clone)]
pub struct RedisStore {
    target: Target,
    /// The node or cluster URLs, for the extra connections of write lanes.
    urls: Vec<String>,
    /// Strings scrubbed from error messages: the URLs and their credentials.
    secrets: Vec<String>,
    /// Whether a claim can be the plain `SET key inflight:<token> NX PX lease
    /// GET` (Redis 7.0 and later): one command where the server does no Lua.
    /// Cleared for good the first time the server refuses the syntax; claims
    /// then run the [`CLAIM`] script, which answers the same.
    set_nx_get: Arc<AtomicBool>,
    /// `min_replicas` and the connections its `WAIT`s run on; `None` = 0.
    replication: Option<(Replication, Arc<Lanes>)>,
    /// `hookgate_replication_timeouts_total`, once the metrics exist.
    timeouts: Arc<OnceLock<Family<OperationLabel, Counter>>>,
    /// `hookgate_trail_writes_dropped_total`, once the metrics exist, and
    /// when a drop was last logged (unix ms).
    trail_drops: Arc<(OnceLock<Family<ReasonLabel, Counter>>, AtomicI64)>,
    /// The trail's ordered writer, started on first use.
    trail_queue: Arc<OnceLock<tokio::sync::mpsc::Sender<crate::store::Note>>>,
    /// Duplicates counted between two trail writes.
    tally: Arc<crate::trail::tally::Tally>,
    /// The trail's generation last seen, per key prefix (see `trail.rs`).
    trail_generation: Arc<std::sync::Mutex<Vec<(String, trail::Seen)>>>,
}

impl RedisStore {
    /// A store on one Redis node at `url` (`redis://[:password@]host:port[/db]`,
    /// or `rediss://`). Does no I/O: the connection is made by the first command
    /// and remade after failures, so this succeeds while Redis is down. Fails
    /// only on an invalid URL or outside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Self, Error> {
        let secrets = secrets_of(&[url]);
        require_runtime()?;
        let client = redis::Client::open(url)
            .map_err(|e| Error::Unavailable(scrub(&format!("invalid Redis URL: {e}"), &secrets)))?;
        let manager = ConnectionManager::new_lazy_with_config(client, manager_config())
            .map_err(|e| Error::Unavailable(scrub(&e.to_string(), &secrets)))?;
        let urls = vec![url.to_owned()];
        Ok(RedisStore::new(
            Target::Fixed(Conn::Single(manager)),
            urls,
            secrets,
        ))
    }

    /// A store on a Redis Cluster reached through any of `urls` (the slot map
    /// is discovered from them). Does no I/O: the connection is made in the
    /// background. Fails only on invalid URLs or outside a Tokio runtime.
    pub fn connect_cluster(urls: &[String]) -> Result<Self, Error> {
        let secrets = secrets_of(&urls.iter().map(String::as_str).collect::<Vec<_>>());
        require_runtime()?;
        let client = cluster_client(urls, Duration::ZERO, &secrets)?;
        let config = ClusterConfig::new()
            .set_connection_timeout(CONNECT_TIMEOUT)
            .set_response_timeout(RESPONSE_TIMEOUT);
        Ok(RedisStore::new(
            Target::Cluster(Arc::new(Cluster::new(client, config))),
            urls.to_vec(),
            secrets,
        ))
    }

    /// A store on the primary the `sentinels` name for `master`, logged in to
    /// with `username` / `password` (the data nodes'; a sentinel's own
    /// credentials go in its URL). Does no I/O: the first command asks the
    /// sentinels. Fails only on invalid URLs or outside a Tokio runtime.
    pub fn connect_sentinel(
        sentinels: &[String],
        master: &str,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self, Error> {
        let mut secrets = secrets_of(&sentinels.iter().map(String::as_str).collect::<Vec<_>>());
        secrets.extend(username.into_iter().chain(password).map(str::to_owned));
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        require_runtime()?;
        let primary = Primary::new(sentinels, master, username, password, secrets.clone())?;
        Ok(RedisStore::new(
            Target::Sentinel(Arc::new(primary)),
            Vec::new(),
            secrets,
        ))
    }

    fn new(target: Target, urls: Vec<String>, secrets: Vec<String>) -> Self {
        RedisStore {
            target,
            urls,
            secrets,
            set_nx_get: Arc::new(AtomicBool::new(true)),
            replication: None,
            timeouts: Arc::new(OnceLock::new()),
            trail_drops: Arc::new((OnceLock::new(), AtomicI64::new(i64::MIN))),
            trail_queue: Arc::new(OnceLock::new()),
            tally: Arc::default(),
            trail_generation: Arc::default(),
        }
    }

    /// Makes every write that backs a promise wait for `replication` (see
    /// the module docs). `replicas = 0` leaves writes as they are.
    pub fn with_replication(mut self, replication: Replication) -> Result<Self, Error> {
        if replication.replicas == 0 {
            self.replication = None;
            return Ok(self);
        }
        let opener = match &self.target {
            Target::Cluster(_) => Opener::Cluster(Box::new(cluster_client(
                &self.urls,
                replication.timeout,
                &self.secrets,
            )?)),
            Target::Fixed(_) => Opener::Node(self.node_client()?),
            Target::Sentinel(_) => Opener::Primary,
        };
        self.replication = Some((
            replication,
            Arc::new(Lanes::new(opener, replication.timeout)),
        ));
        Ok(self)
    }

    /// Where WAIT timeouts are counted (`hookgate_replication_timeouts_total`).
    pub fn count_replication_timeouts(&self, family: Family<OperationLabel, Counter>) {
        let _ = self.timeouts.set(family);
    }

    /// Where trail writes that did not land are counted
    /// (`hookgate_trail_writes_dropped_total`).
    pub fn count_trail_drops(&self, family: Family<ReasonLabel, Counter>) {
        let _ = self.trail_drops.0.set(family);
    }

    /// The replicas each promise-backing write waits for (0 = none).
    pub fn min_replicas(&self) -> u32 {
        self.replication.as_ref().map_or(0, |(r, _)| r.replicas)
    }

    /// Tries to take `key` for `lease`, holding `token`. One round trip.
    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        let holder = format!("{INFLIGHT}{token}");
        if self.set_nx_get.load(Ordering::Relaxed) {
            let lease = millis(lease);
            let reply = self
                .run(|mut conn| {
                    let holder = &holder;
                    async move {
                        let set = redis::cmd("SET")
                            .arg(key)
                            .arg(holder)
                            .arg("NX")
                            .arg("PX")
                            .arg(lease)
                            .arg("GET")
                            .query_async::<Option<String>>(&mut conn)
                            .await;
                        match set {
                            // The syntax error of a server before 7.0: answered,
                            // so not a failure of the store.
                            Err(e)
                                if matches!(e.kind(), ErrorKind::Server(_))
                                    && e.to_string().contains("syntax error") =>
                            {
                                Ok(None::<Option<String>>)
                            }
                            other => other.map(Some),
                        }
                    }
                })
                .await?;
            match reply {
                // The key was absent and now holds this request's token.
                Some(None) => return Ok(Claim::Fresh),
                Some(Some(old)) if old == "done" => return Ok(Claim::Done),
                Some(Some(_)) => return Ok(Claim::InFlight),
                None => {
                    tracing::info!("Redis refuses SET NX GET (before 7.0): claims use a script");
                    self.set_nx_get.store(false, Ordering::Relaxed);
                }
            }
        }
        let code: i64 = self
            .script(&CLAIM, key, &[&holder, &millis(lease).to_string()])
            .await?;
        match code {
            0 => Ok(Claim::Fresh),
            1 => Ok(Claim::Done),
            _ => Ok(Claim::InFlight),
        }
    }

    /// Marks `key` done for `ttl` with a plain `SET key done PX ttl`: no token
    /// to compare (see [`super::Store::commit`]), so no script runs. Waits
    /// for `min_replicas`.
    pub async fn commit(&self, key: &str, ttl: Duration) -> Result<(), Error> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg("done").arg("PX").arg(millis(ttl));
        self.write::<Value>(Operation::Commit, &cmd).await.map(drop)
    }

    /// Deletes `key` if it holds `token`.
    pub async fn release(&self, key: &str, token: &str) -> Result<(), Error> {
        let holder = format!("{INFLIGHT}{token}");
        let _: i64 = self.script(&RELEASE, key, &[&holder]).await?;
        Ok(())
    }

    /// Whether one pipelined round trip can carry a nonce write and trail
    /// writes together: not on a cluster (other slots) nor with
    /// `min_replicas` (the write goes with its `WAIT`).
    fn carries_trail(&self) -> bool {
        self.replication.is_none() && !matches!(self.target, Target::Cluster(_))
    }

    /// `PING` (on a cluster, every node must answer; for sentinels, the
    /// primary they name).
    pub async fn ping(&self) -> Result<(), Error> {
        self.run(|mut conn| async move { redis::cmd("PING").query_async::<Value>(&mut conn).await })
            .await
            .map(drop)
    }

    /// Pauses `source` (DESIGN §6a): one field of `{prefix}:paused`.
    pub async fn pause(
        &self,
        prefix: &str,
        source: &str,
        paused: &super::Paused,
    ) -> Result<(), Error> {
        let value = serde_json::to_string(paused)
            .map_err(|e| Error::Unavailable(format!("pause state: {e}")))?;
        let mut cmd = redis::cmd("HSET");
        cmd.arg(paused_key(prefix)).arg(source).arg(value);
        self.query::<i64>(&cmd).await.map(drop)
    }

    /// Reserves `count` starts `interval_ms` apart for `source` (`PACE`,
    /// on the server's clock so replicas agree).
    pub async fn pace(
        &self,
        prefix: &str,
        source: &str,
        count: usize,
        interval_ms: f64,
    ) -> Result<Vec<Duration>, Error> {
        let key = format!("{prefix}:rate:{{{source}}}");
        let (interval, count) = (format!("{interval_ms:.3}"), count.to_string());
        let delays: Vec<i64> = self
            .eval(&PACE, &[&key], &[interval.as_bytes(), count.as_bytes()])
            .await?;
        Ok(delays
            .into_iter()
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
            .collect())
    }

    /// The breaker state of `source` as stored (JSON), if any.
    pub async fn breaker_get(&self, prefix: &str, source: &str) -> Result<Option<String>, Error> {
        self.query(redis::cmd("GET").arg(breaker_key(prefix, source)))
            .await
    }

    /// Stores `new` as `source`'s breaker state if it still holds `old`
    /// (`None`: absent); whether it did.
    pub async fn breaker_swap(
        &self,
        prefix: &str,
        source: &str,
        old: Option<&str>,
        new: &str,
    ) -> Result<bool, Error> {
        let key = breaker_key(prefix, source);
        let old = old.unwrap_or("");
        let done: i64 = self
            .eval(&SWAP, &[&key], &[old.as_bytes(), new.as_bytes()])
            .await?;
        Ok(done == 1)
    }

    /// Every dead-letter job: `(id, JSON)`.
    pub async fn jobs(&self, prefix: &str) -> Result<Vec<(String, String)>, Error> {
        self.query(redis::cmd("HGETALL").arg(super::keys::jobs_key(prefix)))
            .await
    }

    /// Stores `new` as job `id` (`None`: removes it) if it still holds
    /// `old` (`None`: absent); whether it did. With `min_replicas`, a swap
    /// fewer replicas acknowledge is [`Error::NotReplicated`]: the job's
    /// owner stops before sending the entry it named, and the record the
    /// primary holds is taken over once its lease runs out.
    pub async fn job_swap(
        &self,
        prefix: &str,
        id: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<bool, Error> {
        let key = super::keys::jobs_key(prefix);
        let (old, new) = (old.unwrap_or(""), new.unwrap_or(""));
        let done: i64 = self
            .write_eval(
                Operation::Job,
                &HASH_SWAP,
                &[&key],
                &[id.as_bytes(), old.as_bytes(), new.as_bytes()],
            )
            .await?;
        Ok(done == 1)
    }

    /// Resumes `source`; whether it was paused.
    pub async fn resume(&self, prefix: &str, source: &str) -> Result<bool, Error> {
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(paused_key(prefix)).arg(source);
        self.query::<i64>(&cmd).await.map(|n| n > 0)
    }

    /// Every paused source.
    pub async fn paused(&self, prefix: &str) -> Result<Vec<(String, super::Paused)>, Error> {
        let all: Vec<(String, String)> = self
            .query(redis::cmd("HGETALL").arg(paused_key(prefix)))
            .await?;
        Ok(all
            .into_iter()
            .filter_map(|(source, v)| Some((source, serde_json::from_str(&v).ok()?)))
            .collect())
    }

    /// The version stored at `key`. A value that is not an integer counts as absent.
    pub async fn version_check(&self, key: &str) -> Result<Option<i128>, Error> {
        let value: Option<String> = self
            .run(|mut conn| async move { redis::cmd("GET").arg(key).query_async(&mut conn).await })
            .await?;
        Ok(value.and_then(|v| v.parse().ok()))
    }

    /// Stores `version` at `key` unless an equal or higher one is there; the key
    /// then lives for [`VERSION_TTL`]. Returns whether it moved. Waits for
    /// `min_replicas`.
    pub async fn version_advance(&self, key: &str, version: i128) -> Result<bool, Error> {
        let version = version.to_string();
        let ttl = millis(VERSION_TTL).to_string();
        let moved: i64 = self
            .write_eval(
                Operation::VersionAdvance,
                &VERSION_ADVANCE,
                &[key],
                &[version.as_bytes(), ttl.as_bytes()],
            )
            .await?;
        Ok(moved == 1)
    }

    /// What `key` holds now: done or in flight, and for how long still.
    pub async fn peek(&self, key: &str) -> Result<Option<(Claim, Duration)>, Error> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(key).cmd("PTTL").arg(key);
        let (value, ttl): (Option<String>, i64) = self.query_pipeline(&pipe).await?;
        Ok(value.map(|v| {
            let held = if v == "done" {
                Claim::Done
            } else {
                Claim::InFlight
            };
            (held, Duration::from_millis(u64::try_from(ttl).unwrap_or(0)))
        }))
    }
}

impl std::fmt::Debug for RedisStore {
    /// Names the deployment only: the URL may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.target {
            Target::Cluster(_) => "cluster",
            Target::Fixed(_) => "single",
            Target::Sentinel(_) => "sentinel",
        };
        f.debug_struct("RedisStore")
            .field("kind", &kind)
            .field("min_replicas", &self.min_replicas())
            .finish()
    }
}

/// Both redis connection types spawn tasks when they are built.
fn require_runtime() -> Result<(), Error> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|_| {
            Error::Unavailable("the Redis store must be built inside a Tokio runtime".into())
        })
}

/// A source's breaker state (DESIGN §6a).
fn breaker_key(prefix: &str, source: &str) -> String {
    format!("{prefix}:breaker:{{{source}}}")
}

/// The hash of paused sources (DESIGN §6a): source name to its pause.
fn paused_key(prefix: &str) -> String {
    format!("{prefix}:paused")
}

/// Milliseconds for `PX`, at least 1 (`PX 0` is an error).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests;
