//! What only the durable engines keep: the queue, the dead letters, the
//! dead-letter jobs and the forward path's failure counts (DESIGN §6, §6b).
//!
//! [`Durable`] is the one handle to them, given by
//! [`Store::durable`](super::Store::durable) on SQLite and Redis and refused
//! ([`Error::NotKept`]) on the memory store. Each call is written once here
//! with one backend per engine (Redis streams and hashes, SQLite tables).

use std::time::Duration;

use super::{Cursor, Engine, Error, Meta, Note, Stored, redis::RedisStore, sqlite::SqliteStore};

/// A durable engine and the `key_prefix` its keys carry.
#[derive(Debug, Clone, Copy)]
pub struct Durable<'a> {
    pub(super) engine: Kept<'a>,
    pub(super) prefix: &'a str,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Kept<'a> {
    Redis(&'a RedisStore),
    Sqlite(&'a SqliteStore),
}

impl<'a> Durable<'a> {
    pub(super) fn of(engine: &'a Engine, prefix: &'a str) -> Result<Self, Error> {
        let engine = match engine {
            Engine::Memory(_) => return Err(Error::NotKept),
            Engine::Redis(r) => Kept::Redis(r),
            Engine::Sqlite(s) => Kept::Sqlite(s),
        };
        Ok(Durable { engine, prefix })
    }

    // -----------------------------------------------------------------------
    // The queue (DESIGN §6).

    /// Appends an envelope to `meta.source`'s queue; returns the entry id.
    /// The event is durable once this returns (fsynced with `sync =
    /// "full"`, on `min_replicas` replicas with Redis). With `commit`, the
    /// event's nonce key is marked done for that long too: in the same
    /// transaction on SQLite (one fsync), after the enqueue on Redis. A
    /// failed commit does not fail the enqueue (only a sender retry after
    /// the lease could queue the event twice); it is logged and counted by
    /// the caller.
    pub async fn enqueue(
        self,
        meta: Meta,
        envelope: Vec<u8>,
        commit: Option<(&str, Duration)>,
        note: Option<Note>,
    ) -> Result<(String, Result<(), Error>), Error> {
        match self.engine {
            Kept::Redis(r) => {
                let id = r.enqueue(self.prefix, &meta.source, &envelope).await?;
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
            Kept::Sqlite(s) => s
                .enqueue(meta, envelope, commit, note)
                .await
                .map(|id| (id, Ok(()))),
        }
    }

    /// Up to `count` entries of `source` for `consumer` to deliver: due
    /// retries, entries whose lease ran out (a stopped process's), new ones.
    /// Each is leased to `consumer` for `lease`.
    pub async fn take(
        self,
        source: &str,
        consumer: &str,
        cursor: &mut Cursor,
        lease: Duration,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        match self.engine {
            Kept::Redis(r) => {
                r.take(self.prefix, source, consumer, cursor, lease, count)
                    .await
            }
            Kept::Sqlite(s) => s.take(source, consumer, lease, count).await,
        }
    }

    /// Removes a delivered (or settled) entry.
    /// `note`, when given, rides on this write (see [`Note`]).
    pub async fn settle(self, source: &str, id: &str, note: Option<Note>) -> Result<(), Error> {
        match self.engine {
            Kept::Redis(r) => {
                let settled = r.settle(self.prefix, source, id).await;
                if let Some(note) = note {
                    r.trail_note(note);
                }
                settled
            }
            Kept::Sqlite(s) => s.settle(id, note).await,
        }
    }

    /// Puts an entry back, rewritten (its attempt count raised), due after
    /// `delay`. `note`, when given, rides on this write (see [`Note`]).
    pub async fn park(
        self,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
        delay: Duration,
        note: Option<Note>,
    ) -> Result<(), Error> {
        match self.engine {
            Kept::Redis(r) => {
                let parked = r
                    .park(self.prefix, &meta.source, id, &envelope, delay)
                    .await;
                if let Some(note) = note {
                    r.trail_note(note);
                }
                parked
            }
            Kept::Sqlite(s) => s.park(id, meta, envelope, delay, note).await,
        }
    }

    /// Writes a dead letter and removes the queue entry `from_queue` it
    /// comes from, if any: in one transaction on SQLite; on Redis the entry
    /// is removed after the dead letter is written, so a failure between
    /// the two leaves the entry pending (delivered again after its lease,
    /// at worst written twice), never lost.
    pub async fn bury(
        self,
        from_queue: Option<&str>,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<String, Error> {
        match self.engine {
            Kept::Redis(r) => {
                let id = r.dead_letter(self.prefix, &envelope).await?;
                if let Some(entry) = from_queue {
                    r.settle(self.prefix, &meta.source, entry).await?;
                }
                Ok(id)
            }
            Kept::Sqlite(s) => s.bury(from_queue, meta, envelope).await,
        }
    }

    /// Entries of `source` ready or waiting for a retry.
    pub async fn queue_depth(self, source: &str) -> Result<i64, Error> {
        match self.engine {
            Kept::Redis(r) => r.queue_depth(self.prefix, source).await,
            Kept::Sqlite(s) => s.queue_depth(source).await,
        }
    }

    // -----------------------------------------------------------------------
    // Dead letters (DESIGN §6).

    /// How many dead letters there are, of every source.
    pub async fn dead_depth(self) -> Result<i64, Error> {
        match self.engine {
            Kept::Redis(r) => r.dead_depth(self.prefix).await,
            Kept::Sqlite(s) => s.dead_depth().await,
        }
    }

    /// Every dead letter, oldest first, of one source or all. On Redis the
    /// engine returns all of them and `source` is applied by the caller
    /// after decoding.
    pub async fn dead_list(self, source: Option<&str>) -> Result<Vec<Stored>, Error> {
        match self.engine {
            Kept::Redis(r) => r.dead_list(self.prefix).await,
            Kept::Sqlite(s) => s.dead_list(source).await,
        }
    }

    /// One dead letter by id; `None` when there is none.
    pub async fn dead_get(self, id: &str) -> Result<Option<Stored>, Error> {
        match self.engine {
            Kept::Redis(r) => r.dead_get(self.prefix, id).await,
            Kept::Sqlite(s) => s.dead_get(id).await,
        }
    }

    /// Removes a dead letter; whether it was there to remove.
    pub async fn dead_remove(self, id: &str) -> Result<bool, Error> {
        match self.engine {
            Kept::Redis(r) => r.dead_remove(self.prefix, id).await,
            Kept::Sqlite(s) => s.dead_remove(id).await,
        }
    }

    /// Rewrites a dead letter after a failed replay; returns the id it is
    /// kept under now (a new one on Redis, whose stream entries cannot
    /// change; the same on SQLite), or `None` when it was already gone.
    pub async fn dead_replace(
        self,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<Option<String>, Error> {
        match self.engine {
            Kept::Redis(r) => r.dead_replace(self.prefix, id, &envelope).await,
            Kept::Sqlite(s) => s.dead_replace(id, meta, envelope).await,
        }
    }

    // -----------------------------------------------------------------------
    // Dead-letter jobs (DESIGN §6b) and failure counts.

    /// Every dead-letter job as stored: `(id, JSON)`.
    pub async fn jobs(self) -> Result<Vec<(String, String)>, Error> {
        match self.engine {
            Kept::Redis(r) => r.jobs(self.prefix).await,
            Kept::Sqlite(s) => s.jobs().await,
        }
    }

    /// Stores `new` as job `id` (`None`: removes it) if it still holds
    /// `old` (`None`: absent); whether it did.
    pub async fn job_swap(
        self,
        id: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<bool, Error> {
        match self.engine {
            Kept::Redis(r) => r.job_swap(self.prefix, id, old, new).await,
            Kept::Sqlite(s) => s.job_swap(id, old, new).await,
        }
    }

    /// Counts a forward failure of the event whose failure key is `key`;
    /// returns the count in a row (the count lives `ttl` after the last one).
    pub async fn record_failure(self, key: &str, ttl: Duration) -> Result<u64, Error> {
        match self.engine {
            Kept::Redis(r) => r.record_failure(key, ttl).await,
            Kept::Sqlite(s) => s.record_failure(key, ttl).await,
        }
    }
}
