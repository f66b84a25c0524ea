//! Every stored payload, one page at a time: queue entries (ready, and on
//! Redis waiting for a retry) and dead letters. `hookgate store rekey`
//! rewrites them under the sealing key, and the `hookgate_store_payloads`
//! gauge counts them by key (DESIGN §4b).
//!
//! A rewrite replaces a payload only when it is still what was read
//! (compare and swap), and on Redis only a queue entry no worker holds:
//! a replica delivering or moving the entry meanwhile wins, and the entry
//! is written by that replica under the sealing key anyway.

use super::{
    Error,
    durable::{Durable, Kept},
};

/// Where a payload is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    /// The queue: ready, or (on SQLite) waiting for its retry in place.
    Queue,
    /// Redis: a source's retries waiting in its sorted set.
    Delayed,
    /// The dead letters.
    Dead,
}

/// One stored payload as read.
#[derive(Debug, Clone)]
pub struct Payload {
    pub shelf: Shelf,
    /// The source whose key holds it (Redis queue shelves); empty otherwise.
    pub source: String,
    /// Its id on the shelf: a row id, a stream id, or (a retry on Redis)
    /// its score.
    pub id: String,
    /// The stored bytes, metadata line first.
    pub bytes: Vec<u8>,
}

/// How far a walk over the shelves is.
#[derive(Debug, Clone)]
pub struct Walk {
    shelves: Vec<(Shelf, String)>,
    at: usize,
    /// The last id read on the current shelf (a rank on a sorted set).
    after: Option<String>,
}

impl Walk {
    /// A walk over everything `store` keeps for `sources`.
    pub fn new(store: Durable<'_>, sources: &[String]) -> Walk {
        let shelves = match store.engine {
            Kept::Sqlite(_) => vec![(Shelf::Queue, String::new()), (Shelf::Dead, String::new())],
            Kept::Redis(_) => {
                let mut out: Vec<(Shelf, String)> = sources
                    .iter()
                    .flat_map(|s| [(Shelf::Queue, s.clone()), (Shelf::Delayed, s.clone())])
                    .collect();
                out.push((Shelf::Dead, String::new()));
                out
            }
        };
        Walk {
            shelves,
            at: 0,
            after: None,
        }
    }

    /// Whether every shelf was read.
    pub fn done(&self) -> bool {
        self.at >= self.shelves.len()
    }
}

impl Durable<'_> {
    /// The next page of up to `limit` payloads; empty once the walk is done.
    pub async fn payload_page(self, walk: &mut Walk, limit: usize) -> Result<Vec<Payload>, Error> {
        while let Some((shelf, source)) = walk.shelves.get(walk.at).cloned() {
            let page = match self.engine {
                Kept::Sqlite(s) => s.payload_page(shelf, walk.after.as_deref(), limit).await?,
                Kept::Redis(r) => {
                    r.payload_page(self.prefix, shelf, &source, walk.after.as_deref(), limit)
                        .await?
                }
            };
            let (page, next) = page.into_iter().fold(
                (Vec::new(), None::<String>),
                |(mut out, _), (id, next, bytes)| {
                    out.push(Payload {
                        shelf,
                        source: source.clone(),
                        id,
                        bytes,
                    });
                    (out, Some(next))
                },
            );
            if page.len() < limit {
                walk.at += 1;
                walk.after = None;
            } else {
                walk.after = next;
            }
            if !page.is_empty() {
                return Ok(page);
            }
        }
        Ok(Vec::new())
    }

    /// Drops what removed entries left behind (Redis streams keep a removed
    /// entry's bytes until its whole node goes): returns the streams
    /// rewritten and those left as they were. SQLite zeroes what it removes
    /// as it goes (`secure_delete`, with `[store.encryption]`).
    pub async fn payload_compact(self, sources: &[String]) -> Result<(usize, usize), Error> {
        match self.engine {
            Kept::Redis(r) => r.payload_compact(self.prefix, sources).await,
            Kept::Sqlite(_) => Ok((0, 0)),
        }
    }

    /// Replaces `payload`'s bytes with `new` if they are still what was
    /// read (and, a Redis queue entry, no worker holds it). Returns whether
    /// it did.
    pub async fn payload_rewrite(self, payload: &Payload, new: Vec<u8>) -> Result<bool, Error> {
        match self.engine {
            Kept::Sqlite(s) => s.payload_rewrite(payload, new).await,
            Kept::Redis(r) => r.payload_rewrite(self.prefix, payload, new).await,
        }
    }
}
