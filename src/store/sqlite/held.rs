//! What holds a source's delivery, kept in the file so that every process
//! on it (the server, `hookgate sources`, `hookgate dlq replay`) sees one
//! state (DESIGN §6a): its pause (`paused`) and its circuit breaker
//! (`breakers`); and the dead-letter jobs (`jobs`, DESIGN §6b), which any
//! of them may take over.

use rusqlite::{OptionalExtension, params};

use super::ops::{Op, Reply};
use super::{SqliteStore, unexpected};
use crate::store::Error;

impl SqliteStore {
    /// Pauses `source` (DESIGN §6a), on disk before it returns.
    pub async fn pause(&self, source: &str, paused: &crate::store::Paused) -> Result<(), Error> {
        self.call(Op::Pause {
            source: source.to_owned(),
            by: paused.by.clone(),
            reason: paused.reason.clone(),
            since_ms: paused.since_ms,
        })
        .await
        .map(drop)
    }

    /// Resumes `source`; whether it was paused.
    pub async fn resume(&self, source: &str) -> Result<bool, Error> {
        match self
            .call(Op::Resume {
                source: source.to_owned(),
            })
            .await?
        {
            Reply::Moved(was) => Ok(was),
            other => Err(unexpected(&other)),
        }
    }

    /// The breaker state of `source` as stored (JSON), if any.
    pub async fn breaker_get(&self, source: &str) -> Result<Option<String>, Error> {
        let source = source.to_owned();
        self.read(move |conn| {
            conn.prepare_cached("SELECT state FROM breakers WHERE source = ?1")?
                .query_row(params![source], |r| r.get(0))
                .optional()
        })
        .await
    }

    /// Stores `new` as `source`'s breaker state if it still holds `old`
    /// (`None`: absent); whether it did.
    pub async fn breaker_swap(
        &self,
        source: &str,
        old: Option<&str>,
        new: &str,
    ) -> Result<bool, Error> {
        let op = Op::BreakerSwap {
            source: source.to_owned(),
            old: old.map(str::to_owned),
            new: new.to_owned(),
        };
        match self.call(op).await? {
            Reply::Moved(done) => Ok(done),
            other => Err(unexpected(&other)),
        }
    }

    /// Every dead-letter job: `(id, JSON)`.
    pub async fn jobs(&self) -> Result<Vec<(String, String)>, Error> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached("SELECT id, body FROM jobs ORDER BY id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .await
    }

    /// Stores `new` as job `id` (`None`: removes it) if it still holds
    /// `old` (`None`: absent); whether it did.
    pub async fn job_swap(
        &self,
        id: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<bool, Error> {
        let op = Op::JobSwap {
            id: id.to_owned(),
            old: old.map(str::to_owned),
            new: new.map(str::to_owned),
        };
        match self.call(op).await? {
            Reply::Moved(done) => Ok(done),
            other => Err(unexpected(&other)),
        }
    }

    /// Every paused source.
    pub async fn paused(&self) -> Result<Vec<(String, crate::store::Paused)>, Error> {
        self.read(|conn| {
            let mut stmt =
                conn.prepare_cached("SELECT source, paused_by, reason, since_ms FROM paused")?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    crate::store::Paused {
                        by: r.get(1)?,
                        reason: r.get(2)?,
                        since_ms: r.get(3)?,
                    },
                ))
            })?;
            rows.collect()
        })
        .await
    }
}
