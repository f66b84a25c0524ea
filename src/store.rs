//! The nonce store: who has seen which event id.
//!
//! A fresh event takes its key with a lease holding this request's token; a 2xx
//! from the app commits it to `done` for `nonce_ttl`; any other outcome releases
//! it, but only while it still holds the same token. Two backends: an embedded
//! memory store for one replica, and Redis (or Redis Cluster) shared by all.

use std::time::Duration;

pub mod memory;
pub mod redis;

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

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The backend could not be reached or answered with an error.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The memory store is at its entry limit (fail closed rather than forget).
    #[error("store full: {0} entries")]
    Full(usize),
}

/// Which store to use, chosen by `[store] kind`.
pub enum Store {
    Memory(memory::MemoryStore),
    Redis(redis::RedisStore),
}

impl Store {
    /// Tries to take `key` for `lease`, holding `token`.
    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        let _ = (key, token, lease);
        todo!()
    }

    /// Marks `key` done for `ttl` if it still holds `token`.
    pub async fn commit(&self, key: &str, token: &str, ttl: Duration) -> Result<(), Error> {
        let _ = (key, token, ttl);
        todo!()
    }

    /// Deletes `key` if it still holds `token`.
    pub async fn release(&self, key: &str, token: &str) -> Result<(), Error> {
        let _ = (key, token);
        todo!()
    }

    /// Checks the backend answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), Error> {
        todo!()
    }
}
