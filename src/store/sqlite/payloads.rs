//! Stored payloads on SQLite, page by page, and their rewrite in place
//! ([`crate::store::payloads`]).

use rusqlite::params;

use super::SqliteStore;
use super::ops::{Op, Reply};
use crate::store::Error;
use crate::store::payloads::{Payload, Shelf};

impl SqliteStore {
    /// Up to `limit` rows of `shelf` after row `after`, by id: `(id, the
    /// id to continue after, bytes)`.
    pub async fn payload_page(
        &self,
        shelf: Shelf,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String, Vec<u8>)>, Error> {
        let after: i64 = after.and_then(|a| a.parse().ok()).unwrap_or(0);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = match shelf {
            Shelf::Dead => {
                "SELECT id, envelope FROM dead_letters WHERE id > ?1 ORDER BY id LIMIT ?2"
            }
            Shelf::Queue | Shelf::Delayed => {
                "SELECT id, envelope FROM queue WHERE id > ?1 ORDER BY id LIMIT ?2"
            }
        };
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(params![after, limit], |r| {
                let id = r.get::<_, i64>(0)?.to_string();
                Ok((id.clone(), id, r.get(1)?))
            })?;
            rows.collect()
        })
        .await
    }

    /// Rewrites the row's envelope if it still holds what was read.
    pub async fn payload_rewrite(&self, payload: &Payload, new: Vec<u8>) -> Result<bool, Error> {
        let Ok(id) = payload.id.parse::<i64>() else {
            return Ok(false);
        };
        let op = Op::Rewrite {
            dead: payload.shelf == Shelf::Dead,
            id,
            old: payload.bytes.clone(),
            new,
        };
        match self.call(op).await? {
            Reply::Moved(done) => Ok(done),
            other => Err(super::unexpected(&other)),
        }
    }
}
