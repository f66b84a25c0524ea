//! The nonce store: who has seen which event id.
//!
//! A fresh event takes its key with a lease holding this request's token; a 2xx
//! from the app commits it to `done` for `nonce_ttl`, whoever holds it by then;
//! any other outcome releases it, but only while it still holds the same token. Two backends: an embedded
//! memory store for one replica, and Redis (or Redis Cluster) shared by all.

use std::time::Duration;

pub mod keys;
pub mod memory;
pub mod redis;

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

    /// Makes the writes that back a promise wait for `replication` (Redis
    /// `WAIT`). The memory store has no replicas: config validation refuses
    /// `min_replicas` there, and this refuses it too.
    pub fn with_replication(self, replication: Replication) -> Result<Self, Error> {
        match self {
            Store::Memory(_) if replication.replicas > 0 => Err(Error::Unavailable(
                "the memory store has no replicas to wait for".into(),
            )),
            Store::Memory(store) => Ok(Store::Memory(store)),
            Store::Redis(store) => store.with_replication(replication).map(Store::Redis),
        }
    }

    /// Tries to take `key` for `lease`, holding `token`.
    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        match self {
            Store::Memory(store) => store.claim(key, token, lease).await,
            Store::Redis(store) => store.claim(key, token, lease).await,
        }
    }

    /// Marks `key` done for `ttl`: the app accepted the event.
    ///
    /// No token is compared. Done is a fact about the event, not about the
    /// lease: if this request's lease ran out and another request holds the key
    /// now, marking it done is still true, and it keeps that request's failure
    /// (whose release compares the token) from reopening an event the app
    /// already has. It is also safe to repeat, which the background retry of a
    /// failed commit relies on.
    pub async fn commit(&self, key: &str, ttl: Duration) -> Result<(), Error> {
        match self {
            Store::Memory(store) => store.commit(key, ttl).await,
            Store::Redis(store) => store.commit(key, ttl).await,
        }
    }

    /// Whether a commit must land before the sender is answered: only when
    /// it is a replicated write (`min_replicas`), whose `WAIT` is the promise
    /// that a failover keeps the app's 2xx from being forwarded again. A
    /// memory-store commit is a map insert and never waits.
    pub fn answers_before_commit(&self) -> bool {
        match self {
            Store::Memory(_) => false,
            Store::Redis(store) => store.min_replicas() == 0,
        }
    }

    /// Deletes `key` if it still holds `token`.
    pub async fn release(&self, key: &str, token: &str) -> Result<(), Error> {
        match self {
            Store::Memory(store) => store.release(key, token).await,
            Store::Redis(store) => store.release(key, token).await,
        }
    }

    /// The Redis backend, which the queue and the dead letters need; `None`
    /// for the memory store.
    pub fn as_redis(&self) -> Option<&redis::RedisStore> {
        match self {
            Store::Memory(_) => None,
            Store::Redis(store) => Some(store),
        }
    }

    /// Checks the backend answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), Error> {
        match self {
            Store::Memory(store) => store.ping().await,
            Store::Redis(store) => store.ping().await,
        }
    }

    /// The highest version accepted for the resource at `key`, if any.
    pub async fn version_check(&self, key: &str) -> Result<Option<i128>, Error> {
        match self {
            Store::Memory(store) => store.version_check(key).await,
            Store::Redis(store) => store.version_check(key).await,
        }
    }

    /// Atomically stores `version` at `key` if nothing or a lower version is
    /// stored there; returns whether it moved (an equal version does not).
    /// The entry lives for [`VERSION_TTL`] from its last move.
    pub async fn version_advance(&self, key: &str, version: i128) -> Result<bool, Error> {
        match self {
            Store::Memory(store) => store.version_advance(key, version).await,
            Store::Redis(store) => store.version_advance(key, version).await,
        }
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
