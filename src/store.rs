//! The nonce store: who has seen which event id.
//!
//! A fresh event takes its key with a lease holding this request's token; a 2xx
//! from the app commits it to `done` for `nonce_ttl`, whoever holds it by then;
//! any other outcome releases it, but only while it still holds the same token.
//!
//! Three engines: SQLite (one durable file for one host), memory (nothing
//! kept across a restart; tests and trials), and Redis (single node,
//! Sentinel or Cluster) shared by replicas.
//!
//! A [`Store`] is asked for what it can do, never downcast:
//! - every engine keeps nonces, versions, the trail, chart counts, pauses
//!   and breaker state (the memory engine in the process);
//! - the durable engines also keep the queue, dead letters, jobs and
//!   failure counts (DESIGN §6), behind the one handle [`Store::durable`]
//!   gives, so `crate::queue` and `crate::dlq` never reach into an engine;
//! - the store holds `[store] key_prefix`, and only the engines whose keys
//!   carry it use it.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

mod durable;
pub mod keys;
pub mod memory;
pub mod payloads;
pub mod redis;
pub mod sqlite;

pub use self::durable::Durable;
pub use self::redis::queue::Cursor;
use crate::trail::Fact;

/// A queue entry or a dead letter as its engine returns it: the entry id
/// (a stream id on Redis, a row id on SQLite) and the encoded envelope.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: String,
    pub envelope: Vec<u8>,
}

/// What the store keeps readable beside an envelope's bytes (SQLite columns).
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub delivery: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub received_ms: i64,
    pub dead_ms: Option<i64>,
}

pub use crate::trail::Note;

/// Who paused a source's delivery, why, and since when (DESIGN §6a; kept
/// by the durable engines, see `crate::pause`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Paused {
    /// `cli:<user>@<host>`, `admin-api` or `console`.
    pub by: String,
    pub reason: Option<String>,
    /// Unix ms.
    pub since_ms: i64,
}

/// A lease token: 128 random bits as 32 lowercase hex digits. Every claim
/// takes one (the forward path makes one per request, duplicates included).
pub fn lease_token() -> String {
    keys::hex(&rand::random::<[u8; 16]>())
}

/// The state of an event id when a request tries to take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Taken by this request, which now holds the lease.
    Fresh,
    /// The app already accepted this event.
    Done,
    /// Another request holds the lease right now.
    InFlight,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The backend could not be reached or answered with an error.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The memory store is at its entry limit (fail closed rather than forget).
    #[error("store full: {0} entries")]
    Full(usize),
    /// The memory store keeps no queue and no dead letters.
    #[error(
        "the memory store keeps no queue and no dead letters; use kind = \"sqlite\" (one host) or a redis store"
    )]
    NotKept,
    /// A compare-and-swap lost to other writers every time it was tried.
    #[error("store contended: the record kept changing under the write")]
    Contended,
    /// Sentinels answered, and none monitors a master by this name.
    #[error("store unavailable: no sentinel monitors a master named {0:?} (store.master)")]
    NoSuchMaster(String),
    /// The primary took the write, but fewer replicas than `min_replicas`
    /// acknowledged it within `replica_timeout`: it counts as failed.
    #[error(
        "{operation} not replicated: {acked} of {wanted} replicas acknowledged within {timeout_ms}ms"
    )]
    NotReplicated {
        operation: &'static str,
        acked: i64,
        wanted: u32,
        timeout_ms: u64,
    },
}

/// `[store] min_replicas` and `replica_timeout`: what a write that backs a
/// promise waits for (Redis `WAIT`) before it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replication {
    pub replicas: u32,
    pub timeout: Duration,
}

/// How long a stored version lives after it last moved (both backends).
///
/// Versions are not kept forever: with one key per resource, a high-cardinality
/// resource (an invoice id, say) would grow the store without bound. Thirty days
/// is far longer than any sender keeps retrying (Stripe three days, Svix about
/// five, Shopify two), so an older event can only slip through the gate if it
/// arrives a month after a newer one was accepted.
pub const VERSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// What only some engines measure, for [`Store::instrument`].
pub struct Instruments {
    pub replication_timeouts: Family<crate::metrics::OperationLabel, Counter>,
    pub trail_writes_dropped: Family<crate::metrics::ReasonLabel, Counter>,
    pub sync_seconds: Histogram,
    pub batch_size: Histogram,
}

/// One engine, chosen by `[store] kind`.
#[derive(Debug)]
enum Engine {
    Memory(memory::MemoryStore),
    Redis(redis::RedisStore),
    Sqlite(sqlite::SqliteStore),
}

/// The store: an engine and the `key_prefix` its keys carry.
#[derive(Debug)]
pub struct Store {
    engine: Engine,
    prefix: String,
}

/// Runs the same call on whichever engine this is.
macro_rules! each {
    ($store:expr, $s:ident => $call:expr) => {
        match &$store.engine {
            Engine::Memory($s) => $call,
            Engine::Redis($s) => $call,
            Engine::Sqlite($s) => $call,
        }
    };
}

impl Store {
    fn of(engine: Engine) -> Self {
        Store {
            engine,
            prefix: keys::DEFAULT_PREFIX.to_owned(),
        }
    }

    /// The embedded store, bounded to `max_entries` live entries, of which
    /// one source's nonces hold at most `per_source`.
    pub fn memory(max_entries: usize, per_source: usize) -> Self {
        Store::of(Engine::Memory(memory::MemoryStore::shared_by(
            max_entries,
            per_source,
        )))
    }

    /// A single Redis node; see [`redis::RedisStore::connect`] (no I/O happens here).
    pub fn redis(url: &str) -> Result<Self, Error> {
        redis::RedisStore::connect(url).map(|r| Store::of(Engine::Redis(r)))
    }

    /// A Redis Cluster; see [`redis::RedisStore::connect_cluster`].
    pub fn redis_cluster(urls: &[String]) -> Result<Self, Error> {
        redis::RedisStore::connect_cluster(urls).map(|r| Store::of(Engine::Redis(r)))
    }

    /// The primary Redis Sentinels name; see [`redis::RedisStore::connect_sentinel`].
    pub fn redis_sentinel(
        sentinels: &[String],
        master: &str,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self, Error> {
        redis::RedisStore::connect_sentinel(sentinels, master, username, password)
            .map(|r| Store::of(Engine::Redis(r)))
    }

    /// The SQLite file at `path`; see [`sqlite::SqliteStore::open`] (opens
    /// the file and brings its schema up to date). `prefix` is the one the
    /// nonce keys it parses carry.
    pub fn sqlite(
        path: &std::path::Path,
        sync: sqlite::Sync,
        prefix: &str,
        secure_delete: sqlite::SecureDelete,
    ) -> Result<Self, Error> {
        let engine = sqlite::SqliteStore::open(path, sync, prefix, secure_delete)?;
        Ok(Store {
            engine: Engine::Sqlite(engine),
            prefix: prefix.to_owned(),
        })
    }

    /// Keys carry `prefix` (`[store] key_prefix`; [`keys::DEFAULT_PREFIX`]
    /// unless set). A SQLite store takes its prefix when it opens.
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        if !matches!(self.engine, Engine::Sqlite(_)) {
            self.prefix = prefix.to_owned();
        }
        self
    }

    /// The `key_prefix` every key of this store carries: fixed while the
    /// store is open (a reload that changes it takes effect on restart).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Hands each engine the instruments it reports to (DESIGN §7): Redis
    /// its replication timeouts and dropped trail writes, SQLite its fsync
    /// times and batch sizes. Called once, at start.
    pub fn instrument(&self, with: Instruments) {
        match &self.engine {
            Engine::Redis(redis) => {
                redis.count_replication_timeouts(with.replication_timeouts);
                redis.count_trail_drops(with.trail_writes_dropped);
            }
            Engine::Sqlite(sqlite) => sqlite.observe(with.sync_seconds, with.batch_size),
            Engine::Memory(_) => {}
        }
    }

    /// Entries held and the most there may be: the memory store's fill.
    /// `None` for the engines without an entry cap (a full disk or a full
    /// Redis is a store error, counted as one).
    pub fn fill(&self) -> Option<(usize, usize)> {
        match &self.engine {
            Engine::Memory(memory) => Some((memory.len(), memory.capacity())),
            Engine::Redis(_) | Engine::Sqlite(_) => None,
        }
    }

    /// Hands `report` the servers' eviction policy and count every `every`
    /// until `shutdown`, warning in the log whenever they may evict
    /// ([`redis::eviction::watch`]). Returns at once on the engines that
    /// never evict.
    pub async fn watch_eviction(
        &self,
        every: Duration,
        shutdown: tokio_util::sync::CancellationToken,
        report: impl Fn(&redis::eviction::Eviction) + Send,
    ) {
        if let Engine::Redis(redis) = &self.engine {
            redis::eviction::watch(redis.clone(), every, shutdown, report).await;
        }
    }

    /// Makes the writes that back a promise wait for `replication` (Redis
    /// `WAIT`). The memory store has no replicas: config validation refuses
    /// `min_replicas` there, and this refuses it too.
    pub fn with_replication(self, replication: Replication) -> Result<Self, Error> {
        let Store { engine, prefix } = self;
        let engine = match engine {
            Engine::Memory(_) if replication.replicas > 0 => {
                return Err(Error::Unavailable(
                    "the memory store has no replicas to wait for".into(),
                ));
            }
            Engine::Sqlite(_) if replication.replicas > 0 => {
                return Err(Error::Unavailable(
                    "the sqlite store has no replicas to wait for".into(),
                ));
            }
            Engine::Redis(store) => Engine::Redis(store.with_replication(replication)?),
            engine => engine,
        };
        Ok(Store { engine, prefix })
    }

    /// The queue, dead letters, jobs and failure counts, which only the
    /// durable engines keep; [`Error::NotKept`] on the memory store.
    pub fn durable(&self) -> Result<Durable<'_>, Error> {
        Durable::of(&self.engine, &self.prefix)
    }

    /// Whether this engine keeps a queue and dead letters (every engine but
    /// memory).
    pub fn keeps_queue(&self) -> bool {
        self.durable().is_ok()
    }

    /// Which engine, as `[store] kind` names its family.
    pub fn kind(&self) -> &'static str {
        match self.engine {
            Engine::Memory(_) => "memory",
            Engine::Redis(_) => "redis",
            Engine::Sqlite(_) => "sqlite",
        }
    }

    /// Tries to take `key` for `lease`, holding `token`.
    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        each!(self, store => store.claim(key, token, lease).await)
    }

    /// Marks `key` done for `ttl`: the app accepted the event.
    ///
    /// No token is compared. Done is a fact about the event, not about the
    /// lease: if this request's lease ran out and another request holds the key
    /// now, marking it done is still true, and it keeps that request's failure
    /// (whose release compares the token) from reopening an event the app
    /// already has. It is also safe to repeat, which the background retry of a
    /// failed commit relies on.
    ///
    /// `note`, when given, rides on this write (see [`Note`]).
    pub async fn commit(&self, key: &str, ttl: Duration, note: Option<Note>) -> Result<(), Error> {
        match &self.engine {
            Engine::Memory(m) => {
                // The facts first: a copy that finds the event done finds
                // its trail too.
                if let Some(note) = note {
                    m.trail
                        .append(&note.source, &note.event_id, note.facts, note.max);
                }
                m.commit(key, ttl).await
            }
            Engine::Sqlite(s) => s.commit(key, ttl, note).await,
            Engine::Redis(r) => match note {
                Some(note) => r.commit_noting(key, ttl, note).await,
                None => r.commit(key, ttl).await,
            },
        }
    }

    /// Whether a commit must land before the sender is answered: only when
    /// it is a replicated write (`min_replicas`), whose `WAIT` is the promise
    /// that a failover keeps the app's 2xx from being forwarded again. A
    /// memory-store commit is a map insert and never waits; a SQLite
    /// commit is the write the answer relies on (`sync`).
    pub fn answers_before_commit(&self) -> bool {
        match &self.engine {
            Engine::Memory(_) | Engine::Sqlite(_) => false,
            Engine::Redis(store) => store.min_replicas() == 0,
        }
    }

    /// What `key` holds now (read only): done or in flight, and how long
    /// until it expires; `None` when nothing holds it.
    pub async fn peek(&self, key: &str) -> Result<Option<(Claim, Duration)>, Error> {
        each!(self, store => store.peek(key).await)
    }

    /// Deletes `key` if it still holds `token`. `note`, when given, rides
    /// on this write (see [`Note`]).
    pub async fn release(&self, key: &str, token: &str, note: Option<Note>) -> Result<(), Error> {
        match &self.engine {
            Engine::Memory(m) => {
                let done = m.release(key, token).await;
                if let Some(note) = note {
                    m.trail
                        .append(&note.source, &note.event_id, note.facts, note.max);
                }
                done
            }
            Engine::Sqlite(s) => s.release(key, token, note).await,
            Engine::Redis(r) => {
                let done = r.release(key, token).await;
                if let Some(note) = note {
                    r.trail_note(note);
                }
                done
            }
        }
    }

    /// Whether the servers may evict keys, and how many they did (DESIGN §7,
    /// [`redis::eviction`]); `None` for the engines that never evict.
    pub async fn eviction(&self) -> Result<Option<redis::eviction::Eviction>, Error> {
        match &self.engine {
            Engine::Redis(store) => redis::eviction::read(store).await.map(Some),
            Engine::Memory(_) | Engine::Sqlite(_) => Ok(None),
        }
    }

    // -----------------------------------------------------------------------
    // The event trail (DESIGN §7a). `max` is `[admin] trail_max_events`;
    // 0 writes nothing.

    /// A [`Note`] of `facts` about one event, for a write to carry.
    pub fn note(&self, source: &str, event_id: &str, facts: Vec<Fact>, max: usize) -> Note {
        Note {
            prefix: self.prefix.clone(),
            source: source.to_owned(),
            event_id: event_id.to_owned(),
            facts,
            max,
        }
    }

    /// Appends `facts` to an event's trail without holding up the caller:
    /// in place on memory, queued behind the event's own writes on SQLite,
    /// through the process's ordered trail writer on Redis (pipelined). A
    /// failure is logged at debug level.
    pub fn trail_note(&self, source: &str, event_id: &str, facts: Vec<Fact>, max: usize) {
        if max == 0 || facts.is_empty() {
            return;
        }
        match &self.engine {
            Engine::Memory(m) => m.trail.append(source, event_id, facts, max),
            Engine::Sqlite(s) => s.trail_append(source, event_id, facts, max),
            Engine::Redis(r) => r.trail_note(self.note(source, event_id, facts, max)),
        }
    }

    /// Counts one `200 duplicate` answered for an event, without a write of
    /// its own: in place on memory, through the engine's tally on the
    /// durable engines (DESIGN §7a: a duplicate is a count).
    pub fn trail_duplicate(&self, source: &str, event_id: &str, max: usize) {
        if max == 0 {
            return;
        }
        let now = crate::time::now_ms();
        let at = (self.prefix.as_str(), source, event_id);
        match &self.engine {
            Engine::Memory(m) => m.trail.duplicate(source, event_id, now),
            Engine::Sqlite(s) => s.tally().count(at, max, now, || s.note_writer()),
            Engine::Redis(r) => r.tally().count(at, max, now, || r.note_writer()),
        }
    }

    /// Writes the duplicates counted since the last flush of the tally,
    /// waiting for the writes (at shutdown).
    pub async fn trail_flush(&self) {
        let tally = match &self.engine {
            Engine::Memory(_) => return,
            Engine::Sqlite(s) => s.tally(),
            Engine::Redis(r) => r.tally(),
        };
        for note in tally.take() {
            if let Err(e) = self
                .trail_write(&note.source, &note.event_id, note.facts, note.max)
                .await
            {
                tracing::debug!(source = %note.source, event_id = %note.event_id, error = %e, "trail write failed");
            }
        }
    }

    /// [`Store::trail_note`], waiting for the write (a command that exits
    /// right after, such as `hookgate dlq replay`).
    pub async fn trail_write(
        &self,
        source: &str,
        event_id: &str,
        facts: Vec<Fact>,
        max: usize,
    ) -> Result<(), Error> {
        if max == 0 || facts.is_empty() {
            return Ok(());
        }
        match &self.engine {
            Engine::Memory(m) => {
                m.trail.append(source, event_id, facts, max);
                Ok(())
            }
            Engine::Sqlite(s) => s.trail_write(source, event_id, facts, max).await,
            Engine::Redis(r) => {
                r.trail_append(&self.prefix, source, event_id, &facts, max)
                    .await
            }
        }
    }

    /// An event as the trail holds it; `None` when it holds none.
    pub async fn trail_get(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<crate::trail::Summary>, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.trail.get(source, event_id)),
            Engine::Sqlite(s) => s.trail_get(source, event_id).await,
            Engine::Redis(r) => r.trail_get(&self.prefix, source, event_id).await,
        }
    }

    /// Up to `count` events received before `before`, newest first.
    pub async fn trail_scan(
        &self,
        before: Option<&crate::trail::Cursor>,
        count: usize,
    ) -> Result<Vec<crate::trail::Stored>, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.trail.scan(before, count)),
            Engine::Sqlite(s) => s.trail_scan(before, count).await,
            Engine::Redis(r) => r.trail_scan(&self.prefix, before, count).await,
        }
    }

    // -----------------------------------------------------------------------
    // Pause and the breaker (DESIGN §6a): kept by every engine, the memory
    // engine in the process.

    /// Pauses delivery of `source`'s queue (replacing an earlier pause).
    pub async fn pause(&self, source: &str, paused: &Paused) -> Result<(), Error> {
        match &self.engine {
            Engine::Memory(m) => {
                m.held.pause(source, paused);
                Ok(())
            }
            Engine::Sqlite(s) => s.pause(source, paused).await,
            Engine::Redis(r) => r.pause(&self.prefix, source, paused).await,
        }
    }

    /// Resumes delivery of `source`'s queue; `false` when it was not paused.
    pub async fn resume(&self, source: &str) -> Result<bool, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.held.resume(source)),
            Engine::Sqlite(s) => s.resume(source).await,
            Engine::Redis(r) => r.resume(&self.prefix, source).await,
        }
    }

    /// Every paused source, by name.
    pub async fn paused(&self) -> Result<Vec<(String, Paused)>, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.held.paused()),
            Engine::Sqlite(s) => s.paused().await,
            Engine::Redis(r) => r.paused(&self.prefix).await,
        }
    }

    /// `source`'s breaker state as stored (JSON), if any.
    pub async fn breaker_get(&self, source: &str) -> Result<Option<String>, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.held.breaker_get(source)),
            Engine::Sqlite(s) => s.breaker_get(source).await,
            Engine::Redis(r) => r.breaker_get(&self.prefix, source).await,
        }
    }

    /// Stores `new` as `source`'s breaker state if it still holds `old`
    /// (`None`: absent); whether it did.
    pub async fn breaker_swap(
        &self,
        source: &str,
        old: Option<&str>,
        new: &str,
    ) -> Result<bool, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.held.breaker_swap(source, old, new)),
            Engine::Sqlite(s) => s.breaker_swap(source, old, new).await,
            Engine::Redis(r) => r.breaker_swap(&self.prefix, source, old, new).await,
        }
    }

    /// Reserves `count` delivery starts for `source`, `interval_ms` apart
    /// (DESIGN §6a `max_rate`), shared by every replica: each start's delay
    /// from now. `None` where the process paces alone (`crate::pace::Local`:
    /// SQLite and memory, one host).
    pub async fn pace(
        &self,
        source: &str,
        count: usize,
        interval_ms: f64,
    ) -> Result<Option<Vec<Duration>>, Error> {
        match &self.engine {
            Engine::Memory(_) | Engine::Sqlite(_) => Ok(None),
            Engine::Redis(r) => r
                .pace(&self.prefix, source, count, interval_ms)
                .await
                .map(Some),
        }
    }

    // -----------------------------------------------------------------------
    // Chart counts (DESIGN §7b).

    /// Adds chart counts to what the store keeps, dropping what is older
    /// than [`crate::stats::KEEP`].
    pub async fn stats_add(&self, rows: &[crate::stats::Row]) -> Result<(), Error> {
        match &self.engine {
            Engine::Memory(m) => {
                m.stats.add(rows);
                Ok(())
            }
            Engine::Sqlite(s) => s.stats_add(rows).await,
            Engine::Redis(r) => r.stats_add(&self.prefix, rows).await,
        }
    }

    /// The chart counts of `width` from the bucket starting at `since`
    /// (unix seconds) on, every replica's added.
    pub async fn stats_read(
        &self,
        width: u32,
        since: i64,
    ) -> Result<Vec<crate::stats::Row>, Error> {
        match &self.engine {
            Engine::Memory(m) => Ok(m.stats.read(width, since)),
            Engine::Sqlite(s) => s.stats_read(width, since).await,
            Engine::Redis(r) => r.stats_read(&self.prefix, width, since).await,
        }
    }

    /// Checks the backend answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), Error> {
        each!(self, store => store.ping().await)
    }

    /// The highest version accepted for the resource at `key`, if any.
    pub async fn version_check(&self, key: &str) -> Result<Option<i128>, Error> {
        each!(self, store => store.version_check(key).await)
    }

    /// Atomically stores `version` at `key` if nothing or a lower version is
    /// stored there; returns whether it moved (an equal version does not).
    /// The entry lives for [`VERSION_TTL`] from its last move.
    pub async fn version_advance(&self, key: &str, version: i128) -> Result<bool, Error> {
        each!(self, store => store.version_advance(key, version).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_tokens_are_32_lowercase_hex_digits_and_differ() {
        let a = lease_token();
        let b = lease_token();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
            "{a}"
        );
        assert_ne!(a, b);
        // Every digit value shows up over a few tokens (the table is whole).
        let seen: std::collections::BTreeSet<char> = (0..64)
            .flat_map(|_| lease_token().chars().collect::<Vec<_>>())
            .collect();
        assert_eq!(seen.len(), 16, "{seen:?}");
    }
}
