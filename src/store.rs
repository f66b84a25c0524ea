//! The nonce store: who has seen which event id.
//!
//! A fresh event takes its key with a lease holding this request's token; a 2xx
//! from the app commits it to `done` for `nonce_ttl`, whoever holds it by then;
//! any other outcome releases it, but only while it still holds the same token.
//!
//! Three engines: SQLite (one durable file for one host), memory (nothing
//! kept across a restart; tests and trials), and Redis (single node,
//! Sentinel or Cluster) shared by replicas. The durable engines also hold
//! the queue and the dead letters (DESIGN §6), a capability written once
//! here with one backend per engine (Redis streams, SQLite tables), so
//! `crate::queue` and `crate::dlq` never reach into an engine.

use std::time::Duration;

pub mod keys;
pub mod memory;
pub mod payloads;
pub mod redis;
pub mod sqlite;

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

/// Which store to use, chosen by `[store] kind`.
#[derive(Debug)]
pub enum Store {
    Memory(memory::MemoryStore),
    Redis(redis::RedisStore),
    Sqlite(sqlite::SqliteStore),
}

/// Runs the same call on whichever engine this is.
macro_rules! each {
    ($store:expr, $s:ident => $call:expr) => {
        match $store {
            Store::Memory($s) => $call,
            Store::Redis($s) => $call,
            Store::Sqlite($s) => $call,
        }
    };
}

impl Store {
    /// The embedded store, bounded to `max_entries` live entries, of which
    /// one source's nonces hold at most `per_source`.
    pub fn memory(max_entries: usize, per_source: usize) -> Self {
        Store::Memory(memory::MemoryStore::shared_by(max_entries, per_source))
    }

    /// A single Redis node; see [`redis::RedisStore::connect`] (no I/O happens here).
    pub fn redis(url: &str) -> Result<Self, Error> {
        redis::RedisStore::connect(url).map(Store::Redis)
    }

    /// A Redis Cluster; see [`redis::RedisStore::connect_cluster`].
    pub fn redis_cluster(urls: &[String]) -> Result<Self, Error> {
        redis::RedisStore::connect_cluster(urls).map(Store::Redis)
    }

    /// The primary Redis Sentinels name; see [`redis::RedisStore::connect_sentinel`].
    pub fn redis_sentinel(
        sentinels: &[String],
        master: &str,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self, Error> {
        redis::RedisStore::connect_sentinel(sentinels, master, username, password).map(Store::Redis)
    }

    /// The SQLite file at `path`; see [`sqlite::SqliteStore::open`] (opens
    /// the file and brings its schema up to date).
    pub fn sqlite(
        path: &std::path::Path,
        sync: sqlite::Sync,
        prefix: &str,
        secure_delete: sqlite::SecureDelete,
    ) -> Result<Self, Error> {
        sqlite::SqliteStore::open(path, sync, prefix, secure_delete).map(Store::Sqlite)
    }

    /// Makes the writes that back a promise wait for `replication` (Redis
    /// `WAIT`). The memory store has no replicas: config validation refuses
    /// `min_replicas` there, and this refuses it too.
    pub fn with_replication(self, replication: Replication) -> Result<Self, Error> {
        match self {
            Store::Memory(_) if replication.replicas > 0 => Err(Error::Unavailable(
                "the memory store has no replicas to wait for".into(),
            )),
            Store::Sqlite(_) if replication.replicas > 0 => Err(Error::Unavailable(
                "the sqlite store has no replicas to wait for".into(),
            )),
            Store::Memory(_) | Store::Sqlite(_) => Ok(self),
            Store::Redis(store) => store.with_replication(replication).map(Store::Redis),
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
        match self {
            Store::Memory(m) => {
                // The facts first: a copy that finds the event done finds
                // its trail too.
                if let Some(note) = note {
                    m.trail
                        .append(&note.source, &note.event_id, note.facts, note.max);
                }
                m.commit(key, ttl).await
            }
            Store::Sqlite(s) => s.commit(key, ttl, note).await,
            Store::Redis(r) => match note {
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
        match self {
            Store::Memory(_) | Store::Sqlite(_) => false,
            Store::Redis(store) => store.min_replicas() == 0,
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
        match self {
            Store::Memory(m) => {
                let done = m.release(key, token).await;
                if let Some(note) = note {
                    m.trail
                        .append(&note.source, &note.event_id, note.facts, note.max);
                }
                done
            }
            Store::Sqlite(s) => s.release(key, token, note).await,
            Store::Redis(r) => {
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
        match self {
            Store::Redis(store) => redis::eviction::read(store).await.map(Some),
            Store::Memory(_) | Store::Sqlite(_) => Ok(None),
        }
    }

    /// Whether this engine keeps a queue and dead letters (every engine but
    /// memory).
    pub fn keeps_queue(&self) -> bool {
        !matches!(self, Store::Memory(_))
    }

    /// Which engine, as `[store] kind` names its family.
    pub fn engine(&self) -> &'static str {
        match self {
            Store::Memory(_) => "memory",
            Store::Redis(_) => "redis",
            Store::Sqlite(_) => "sqlite",
        }
    }

    // -----------------------------------------------------------------------
    // The queue (DESIGN §6).

    /// Appends an envelope to `source`'s queue; returns the entry id. The
    /// event is durable once this returns (fsynced with `sync = "full"`,
    /// on `min_replicas` replicas with Redis). With `commit`, the event's
    /// nonce key is marked done for that long too: in the same transaction
    /// on SQLite (one fsync), after the enqueue on Redis. A failed commit
    /// does not fail the enqueue (only a sender retry after the lease could
    /// queue the event twice); it is logged and counted by the caller.
    pub async fn enqueue(
        &self,
        prefix: &str,
        meta: Meta,
        envelope: Vec<u8>,
        commit: Option<(&str, Duration)>,
        note: Option<Note>,
    ) -> Result<(String, Result<(), Error>), Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => {
                let id = r.enqueue(prefix, &meta.source, &envelope).await?;
                // Noted before anything else can happen to the entry: a
                // worker's facts about it queue up behind this one.
                if let Some(note) = note {
                    r.trail_note(note);
                }
                let committed = match commit {
                    Some((key, ttl)) => r.commit(key, ttl).await,
                    None => Ok(()),
                };
                Ok((id, committed))
            }
            Store::Sqlite(s) => s
                .enqueue(meta, envelope, commit, note)
                .await
                .map(|id| (id, Ok(()))),
        }
    }

    /// Up to `count` entries of `source` for `consumer` to deliver: due
    /// retries, entries whose lease ran out (a stopped process's), new ones.
    /// Each is leased to `consumer` for `lease`.
    pub async fn take(
        &self,
        prefix: &str,
        source: &str,
        consumer: &str,
        cursor: &mut Cursor,
        lease: Duration,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.take(prefix, source, consumer, cursor, lease, count).await,
            Store::Sqlite(s) => s.take(source, consumer, lease, count).await,
        }
    }

    /// Removes a delivered (or settled) entry.
    /// `note`, when given, rides on this write (see [`Note`]).
    pub async fn settle(
        &self,
        prefix: &str,
        source: &str,
        id: &str,
        note: Option<Note>,
    ) -> Result<(), Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => {
                let settled = r.settle(prefix, source, id).await;
                if let Some(note) = note {
                    r.trail_note(note);
                }
                settled
            }
            Store::Sqlite(s) => s.settle(id, note).await,
        }
    }

    /// Puts an entry back, rewritten (its attempt count raised), due after
    /// `delay`. `note`, when given, rides on this write (see [`Note`]).
    pub async fn park(
        &self,
        prefix: &str,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
        delay: Duration,
        note: Option<Note>,
    ) -> Result<(), Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => {
                let parked = r.park(prefix, &meta.source, id, &envelope, delay).await;
                if let Some(note) = note {
                    r.trail_note(note);
                }
                parked
            }
            Store::Sqlite(s) => s.park(id, meta, envelope, delay, note).await,
        }
    }

    /// Writes a dead letter and removes the queue entry `from_queue` it
    /// comes from, if any: in one transaction on SQLite; on Redis the entry
    /// is removed after the dead letter is written, so a failure between
    /// the two leaves the entry pending (delivered again after its lease,
    /// at worst written twice), never lost.
    pub async fn bury(
        &self,
        prefix: &str,
        from_queue: Option<&str>,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<String, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => {
                let id = r.dead_letter(prefix, &envelope).await?;
                if let Some(entry) = from_queue {
                    r.settle(prefix, &meta.source, entry).await?;
                }
                Ok(id)
            }
            Store::Sqlite(s) => s.bury(from_queue, meta, envelope).await,
        }
    }

    /// Entries of `source` ready or waiting for a retry.
    pub async fn queue_depth(&self, prefix: &str, source: &str) -> Result<i64, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.queue_depth(prefix, source).await,
            Store::Sqlite(s) => s.queue_depth(source).await,
        }
    }

    // -----------------------------------------------------------------------
    // Dead letters (DESIGN §6).

    pub async fn dead_depth(&self, prefix: &str) -> Result<i64, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.dead_depth(prefix).await,
            Store::Sqlite(s) => s.dead_depth().await,
        }
    }

    /// Every dead letter, oldest first, of one source or all. On Redis the
    /// engine returns all of them and `source` is applied by the caller
    /// after decoding.
    pub async fn dead_list(
        &self,
        prefix: &str,
        source: Option<&str>,
    ) -> Result<Vec<Stored>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.dead_list(prefix).await,
            Store::Sqlite(s) => s.dead_list(source).await,
        }
    }

    /// One dead letter by id; `None` when there is none.
    pub async fn dead_get(&self, prefix: &str, id: &str) -> Result<Option<Stored>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.dead_get(prefix, id).await,
            Store::Sqlite(s) => s.dead_get(id).await,
        }
    }

    /// Removes a dead letter; whether it was there to remove.
    pub async fn dead_remove(&self, prefix: &str, id: &str) -> Result<bool, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.dead_remove(prefix, id).await,
            Store::Sqlite(s) => s.dead_remove(id).await,
        }
    }

    /// Rewrites a dead letter after a failed replay; returns the id it is
    /// kept under now (a new one on Redis, whose stream entries cannot
    /// change; the same on SQLite), or `None` when it was already gone.
    pub async fn dead_replace(
        &self,
        prefix: &str,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<Option<String>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.dead_replace(prefix, id, &envelope).await,
            Store::Sqlite(s) => s.dead_replace(id, meta, envelope).await,
        }
    }

    // -----------------------------------------------------------------------
    // The event trail (DESIGN §7a). `max` is `[admin] trail_max_events`;
    // 0 writes nothing.

    /// Appends `facts` to an event's trail without holding up the caller:
    /// in place on memory, queued behind the event's own writes on SQLite,
    /// through the process's ordered trail writer on Redis (pipelined). A
    /// failure is logged at debug level.
    pub fn trail_note(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
        facts: Vec<Fact>,
        max: usize,
    ) {
        if max == 0 || facts.is_empty() {
            return;
        }
        match self {
            Store::Memory(m) => m.trail.append(source, event_id, facts, max),
            Store::Sqlite(s) => s.trail_append(source, event_id, facts, max),
            Store::Redis(r) => r.trail_note(Note {
                prefix: prefix.to_owned(),
                source: source.to_owned(),
                event_id: event_id.to_owned(),
                facts,
                max,
            }),
        }
    }

    /// Counts one `200 duplicate` answered for an event, without a write of
    /// its own: in place on memory, through the engine's tally on the
    /// durable engines (DESIGN §7a: a duplicate is a count).
    pub fn trail_duplicate(&self, prefix: &str, source: &str, event_id: &str, max: usize) {
        if max == 0 {
            return;
        }
        let now = crate::time::now_ms();
        match self {
            Store::Memory(m) => m.trail.duplicate(source, event_id, now),
            Store::Sqlite(s) => {
                s.tally()
                    .count((prefix, source, event_id), max, now, || s.note_writer());
            }
            Store::Redis(r) => {
                r.tally()
                    .count((prefix, source, event_id), max, now, || r.note_writer());
            }
        }
    }

    /// Writes the duplicates counted since the last flush of the tally,
    /// waiting for the writes (at shutdown).
    pub async fn trail_flush(&self) {
        let tally = match self {
            Store::Memory(_) => return,
            Store::Sqlite(s) => s.tally(),
            Store::Redis(r) => r.tally(),
        };
        for note in tally.take() {
            if let Err(e) = self
                .trail_write(
                    &note.prefix,
                    &note.source,
                    &note.event_id,
                    note.facts,
                    note.max,
                )
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
        prefix: &str,
        source: &str,
        event_id: &str,
        facts: Vec<Fact>,
        max: usize,
    ) -> Result<(), Error> {
        if max == 0 || facts.is_empty() {
            return Ok(());
        }
        match self {
            Store::Memory(m) => {
                m.trail.append(source, event_id, facts, max);
                Ok(())
            }
            Store::Sqlite(s) => s.trail_write(source, event_id, facts, max).await,
            Store::Redis(r) => r.trail_append(prefix, source, event_id, &facts, max).await,
        }
    }

    /// An event as the trail holds it; `None` when it holds none.
    pub async fn trail_get(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
    ) -> Result<Option<crate::trail::Summary>, Error> {
        match self {
            Store::Memory(m) => Ok(m.trail.get(source, event_id)),
            Store::Sqlite(s) => s.trail_get(source, event_id).await,
            Store::Redis(r) => r.trail_get(prefix, source, event_id).await,
        }
    }

    /// Up to `count` events received before `before`, newest first.
    pub async fn trail_scan(
        &self,
        prefix: &str,
        before: Option<&crate::trail::Cursor>,
        count: usize,
    ) -> Result<Vec<crate::trail::Stored>, Error> {
        match self {
            Store::Memory(m) => Ok(m.trail.scan(before, count)),
            Store::Sqlite(s) => s.trail_scan(before, count).await,
            Store::Redis(r) => r.trail_scan(prefix, before, count).await,
        }
    }

    /// Pauses delivery of `source`'s queue (replacing an earlier pause).
    pub async fn pause(&self, prefix: &str, source: &str, paused: &Paused) -> Result<(), Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.pause(source, paused).await,
            Store::Redis(r) => r.pause(prefix, source, paused).await,
        }
    }

    /// Reserves `count` delivery starts for `source`, `interval_ms` apart
    /// (DESIGN §6a `max_rate`), shared by every replica: each start's delay
    /// from now. `None` where the process paces alone (`crate::pace::Local`:
    /// SQLite and memory, one host).
    pub async fn pace(
        &self,
        prefix: &str,
        source: &str,
        count: usize,
        interval_ms: f64,
    ) -> Result<Option<Vec<Duration>>, Error> {
        match self {
            Store::Memory(_) | Store::Sqlite(_) => Ok(None),
            Store::Redis(r) => r.pace(prefix, source, count, interval_ms).await.map(Some),
        }
    }

    /// Resumes delivery of `source`'s queue; `false` when it was not paused.
    pub async fn resume(&self, prefix: &str, source: &str) -> Result<bool, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.resume(source).await,
            Store::Redis(r) => r.resume(prefix, source).await,
        }
    }

    /// Whether a source's breaker state is kept here, shared by every
    /// process on the store (sqlite and Redis); the memory store leaves it
    /// to the process (`crate::breaker::Breakers`).
    pub fn keeps_breakers(&self) -> bool {
        !matches!(self, Store::Memory(_))
    }

    /// `source`'s breaker state as stored (JSON), if any.
    pub async fn breaker_get(&self, prefix: &str, source: &str) -> Result<Option<String>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.breaker_get(source).await,
            Store::Redis(r) => r.breaker_get(prefix, source).await,
        }
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
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.breaker_swap(source, old, new).await,
            Store::Redis(r) => r.breaker_swap(prefix, source, old, new).await,
        }
    }

    /// Adds chart counts (DESIGN §7b) to what the store keeps, dropping
    /// what is older than [`crate::stats::KEEP`].
    pub async fn stats_add(&self, prefix: &str, rows: &[crate::stats::Row]) -> Result<(), Error> {
        match self {
            Store::Memory(m) => {
                m.stats.add(rows);
                Ok(())
            }
            Store::Sqlite(s) => s.stats_add(rows).await,
            Store::Redis(r) => r.stats_add(prefix, rows).await,
        }
    }

    /// The chart counts of `width` from the bucket starting at `since`
    /// (unix seconds) on, every replica's added.
    pub async fn stats_read(
        &self,
        prefix: &str,
        width: u32,
        since: i64,
    ) -> Result<Vec<crate::stats::Row>, Error> {
        match self {
            Store::Memory(m) => Ok(m.stats.read(width, since)),
            Store::Sqlite(s) => s.stats_read(width, since).await,
            Store::Redis(r) => r.stats_read(prefix, width, since).await,
        }
    }

    /// Every dead-letter job (DESIGN §6b) as stored: `(id, JSON)`.
    pub async fn jobs(&self, prefix: &str) -> Result<Vec<(String, String)>, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.jobs().await,
            Store::Redis(r) => r.jobs(prefix).await,
        }
    }

    /// Stores `new` as job `id` (`None`: removes it) if it still holds
    /// `old` (`None`: absent); whether it did.
    pub async fn job_swap(
        &self,
        prefix: &str,
        id: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<bool, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Sqlite(s) => s.job_swap(id, old, new).await,
            Store::Redis(r) => r.job_swap(prefix, id, old, new).await,
        }
    }

    /// Every paused source, by name.
    pub async fn paused(&self, prefix: &str) -> Result<Vec<(String, Paused)>, Error> {
        match self {
            Store::Memory(_) => Ok(Vec::new()),
            Store::Sqlite(s) => s.paused().await,
            Store::Redis(r) => r.paused(prefix).await,
        }
    }

    /// Counts a forward failure of the event whose failure key is `key`;
    /// returns the count in a row (the count lives `ttl` after the last one).
    pub async fn record_failure(&self, key: &str, ttl: Duration) -> Result<u64, Error> {
        match self {
            Store::Memory(_) => Err(Error::NotKept),
            Store::Redis(r) => r.record_failure(key, ttl).await,
            Store::Sqlite(s) => s.record_failure(key, ttl).await,
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
