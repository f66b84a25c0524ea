//! The writes the writer thread runs ([`Op`]), and what each does to the
//! tables inside its batch's transaction (`apply`). An op reads and
//! writes through that transaction only: the batch commits or rolls back
//! whole, and the writer decides when an answer may go.

use rusqlite::{OptionalExtension, Transaction, params};

use super::trail::TrailWrite;
use crate::store::{Claim, Meta, Stored, VERSION_TTL};

/// Which lease table a claim or release names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `nonces`: an event id.
    Nonces,
    /// `leases`: a gated resource while one of its versions is delivered.
    Leases,
}

/// One write, as the writer thread runs it.
#[derive(Debug)]
pub enum Op {
    Claim {
        table: Table,
        source: String,
        id: String,
        token: String,
        lease_ms: i64,
    },
    Commit {
        source: String,
        id: String,
        ttl_ms: i64,
    },
    Release {
        table: Table,
        source: String,
        id: String,
        token: String,
    },
    VersionAdvance {
        source: String,
        resource: String,
        version: i128,
    },
    Failure {
        source: String,
        id: String,
        ttl_ms: i64,
    },
    /// With `commit`: that nonce (source, id, ttl ms) marked done in the
    /// same transaction.
    Enqueue {
        meta: Meta,
        envelope: Vec<u8>,
        commit: Option<(String, String, i64)>,
    },
    Take {
        source: String,
        consumer: String,
        lease_ms: i64,
        count: i64,
    },
    Settle {
        id: i64,
    },
    Park {
        id: i64,
        meta: Meta,
        envelope: Vec<u8>,
        delay_ms: i64,
    },
    /// A dead letter, and the queue entry it comes from (removed in the same
    /// transaction), if any.
    Bury {
        from_queue: Option<i64>,
        meta: Meta,
        envelope: Vec<u8>,
    },
    DeadRemove {
        id: i64,
    },
    DeadReplace {
        id: i64,
        meta: Meta,
        envelope: Vec<u8>,
    },
    /// A queue entry's or dead letter's envelope replaced by `new` if it
    /// still is `old` (`hookgate store rekey`): [`Reply::Moved`] says
    /// whether it was.
    Rewrite {
        dead: bool,
        id: i64,
        old: Vec<u8>,
        new: Vec<u8>,
    },
    /// Facts appended to an event's trail on their own (a note that rides
    /// on no other write of the event: see [`super::writer::Job::trail`]).
    Trail(TrailWrite),
    /// A source's delivery paused (DESIGN §6a), replacing an earlier pause.
    Pause {
        source: String,
        by: String,
        reason: Option<String>,
        since_ms: i64,
    },
    /// A source's delivery resumed: [`Reply::Moved`] says whether it was paused.
    Resume {
        source: String,
    },
    /// `source`'s breaker state replaced by `new` if it is still `old`
    /// (`None`: no row): [`Reply::Moved`] says whether it was.
    BreakerSwap {
        source: String,
        old: Option<String>,
        new: String,
    },
    /// Job `id` replaced by `new` (`None`: removed) if it is still `old`
    /// (`None`: no row): [`Reply::Moved`] says whether it was.
    JobSwap {
        id: String,
        old: Option<String>,
        new: Option<String>,
    },
    /// Chart counts added (DESIGN §7b), and those older than `oldest`
    /// (unix seconds) removed.
    Stats {
        rows: Vec<crate::stats::Row>,
        oldest: i64,
    },
    /// A write that changes nothing, to show the file takes writes.
    Ping,
}

impl Op {
    /// Whether an answer relies on this write being on disk.
    pub(super) fn durable(&self) -> bool {
        !matches!(
            self,
            Op::Claim { .. }
                | Op::Release { .. }
                | Op::Failure { .. }
                | Op::Take { .. }
                | Op::Trail(_)
                | Op::BreakerSwap { .. }
                | Op::Stats { .. }
                | Op::Ping
        )
    }
}

/// What an op answers.
#[derive(Debug)]
pub enum Reply {
    Done,
    Claim(Claim),
    Moved(bool),
    Count(u64),
    Id(i64),
    Replaced(Option<i64>),
    Taken(Vec<Stored>),
}

/// The query for the expiry of `t`'s lease on `(source, id)`.
fn lease_expiry(t: Table) -> &'static str {
    match t {
        Table::Nonces => "SELECT expires_ms FROM claims WHERE source = ?1 AND event_id = ?2",
        Table::Leases => "SELECT expires_ms FROM leases WHERE source = ?1 AND resource = ?2",
    }
}

/// Marks an event id done for `ttl_ms` and ends its claim, whoever holds it.
fn mark_done(
    tx: &Transaction<'_>,
    source: &str,
    id: &str,
    ttl_ms: i64,
    now: i64,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO nonces (source, event_id, state, token, expires_ms) \
         VALUES (?1, ?2, 'done', NULL, ?3)",
    )?
    .execute(params![source, id, now.saturating_add(ttl_ms)])?;
    tx.prepare_cached("DELETE FROM claims WHERE source = ?1 AND event_id = ?2")?
        .execute(params![source, id])?;
    Ok(())
}

pub(super) fn apply(tx: &Transaction<'_>, op: &Op, now: i64) -> rusqlite::Result<Reply> {
    match op {
        Op::Claim {
            table: t,
            source,
            id,
            token,
            lease_ms,
        } => {
            // An event id: taken when `nonces` holds it (done), or in flight
            // when `claims` does; a lease: in flight when `leases` does.
            if *t == Table::Nonces {
                let done: Option<(String, i64)> = tx
                    .prepare_cached(
                        "SELECT state, expires_ms FROM nonces WHERE source = ?1 AND event_id = ?2",
                    )?
                    .query_row(params![source, id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                if let Some((state, expires)) = done
                    && expires > now
                {
                    return Ok(Reply::Claim(if state == "done" {
                        Claim::Done
                    } else {
                        Claim::InFlight
                    }));
                }
            }
            let held: Option<i64> = tx
                .prepare_cached(lease_expiry(*t))?
                .query_row(params![source, id], |r| r.get(0))
                .optional()?;
            if held.is_some_and(|expires| expires > now) {
                return Ok(Reply::Claim(Claim::InFlight));
            }
            let expires = now.saturating_add(*lease_ms);
            match t {
                Table::Nonces => tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO claims (source, event_id, token, expires_ms) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![source, id, token, expires])?,
                Table::Leases => tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO leases (source, resource, token, expires_ms) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![source, id, token, expires])?,
            };
            Ok(Reply::Claim(Claim::Fresh))
        }
        Op::Commit { source, id, ttl_ms } => {
            mark_done(tx, source, id, *ttl_ms, now)?;
            Ok(Reply::Done)
        }
        Op::Release {
            table: t,
            source,
            id,
            token,
        } => {
            match t {
                Table::Nonces => tx
                    .prepare_cached(
                        "DELETE FROM claims WHERE source = ?1 AND event_id = ?2 AND token = ?3",
                    )?
                    .execute(params![source, id, token])?,
                Table::Leases => tx
                    .prepare_cached(
                        "DELETE FROM leases WHERE source = ?1 AND resource = ?2 AND token = ?3",
                    )?
                    .execute(params![source, id, token])?,
            };
            Ok(Reply::Done)
        }
        Op::Pause {
            source,
            by,
            reason,
            since_ms,
        } => {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO paused (source, paused_by, reason, since_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![source, by, reason, since_ms])?;
            Ok(Reply::Done)
        }
        Op::Resume { source } => {
            let gone = tx
                .prepare_cached("DELETE FROM paused WHERE source = ?1")?
                .execute(params![source])?;
            Ok(Reply::Moved(gone > 0))
        }
        Op::VersionAdvance {
            source,
            resource,
            version,
        } => {
            let current: Option<(String, i64)> = tx
                .prepare_cached(
                    "SELECT version, expires_ms FROM versions WHERE source = ?1 AND resource = ?2",
                )?
                .query_row(params![source, resource], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let held = current
                .filter(|(_, expires)| *expires > now)
                .and_then(|(v, _)| v.parse::<i128>().ok());
            if held.is_some_and(|held| held >= *version) {
                return Ok(Reply::Moved(false));
            }
            let ttl = i64::try_from(VERSION_TTL.as_millis()).unwrap_or(i64::MAX);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO versions (source, resource, version, expires_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                source,
                resource,
                version.to_string(),
                now.saturating_add(ttl)
            ])?;
            Ok(Reply::Moved(true))
        }
        Op::Failure { source, id, ttl_ms } => {
            let count: i64 = tx
                .prepare_cached(
                    "INSERT INTO failures (source, event_id, count, expires_ms) VALUES (?1, ?2, 1, ?4) \
                     ON CONFLICT (source, event_id) DO UPDATE SET \
                       count = CASE WHEN expires_ms > ?3 THEN count + 1 ELSE 1 END, \
                       expires_ms = excluded.expires_ms \
                     RETURNING count",
                )?
                .query_row(params![source, id, now, now.saturating_add(*ttl_ms)], |r| {
                    r.get(0)
                })?;
            Ok(Reply::Count(u64::try_from(count).unwrap_or(0)))
        }
        Op::Enqueue {
            meta,
            envelope,
            commit,
        } => {
            if let Some((source, id, ttl_ms)) = commit {
                mark_done(tx, source, id, *ttl_ms, now)?;
            }
            tx.prepare_cached(
                "INSERT INTO queue (source, event_id, event_type, attempts, last_error, \
                 enqueued_ms, due_ms, envelope) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
            )?
            .execute(params![
                meta.source,
                meta.event_id,
                meta.event_type,
                meta.attempts,
                meta.last_error,
                now,
                envelope
            ])?;
            Ok(Reply::Id(tx.last_insert_rowid()))
        }
        Op::Take {
            source,
            consumer,
            lease_ms,
            count,
        } => {
            let mut taken = Vec::new();
            let mut reclaimed = 0usize;
            {
                let mut select = tx.prepare_cached(
                    "SELECT id, envelope, lease_owner FROM queue WHERE source = ?1 AND due_ms <= ?2 \
                     AND (lease_until_ms IS NULL OR lease_until_ms <= ?2) ORDER BY due_ms, id LIMIT ?3",
                )?;
                let rows = select.query_map(params![source, now, count], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Vec<u8>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                })?;
                for row in rows {
                    let (id, envelope, owner) = row?;
                    if owner.is_some() {
                        reclaimed += 1;
                    }
                    taken.push(Stored {
                        id: id.to_string(),
                        envelope,
                    });
                }
            }
            let mut lease = tx.prepare_cached(
                "UPDATE queue SET lease_owner = ?1, lease_until_ms = ?2 WHERE id = ?3",
            )?;
            for entry in &taken {
                lease.execute(params![consumer, now.saturating_add(*lease_ms), entry.id])?;
            }
            if reclaimed > 0 {
                tracing::info!(source = %source, entries = reclaimed, "took over queue entries whose lease ran out (a stopped process's)");
            }
            Ok(Reply::Taken(taken))
        }
        Op::Settle { id } => {
            tx.prepare_cached("DELETE FROM queue WHERE id = ?1")?
                .execute(params![id])?;
            Ok(Reply::Done)
        }
        Op::Park {
            id,
            meta,
            envelope,
            delay_ms,
        } => {
            tx.prepare_cached(
                "UPDATE queue SET envelope = ?2, attempts = ?3, last_error = ?4, due_ms = ?5, \
                 lease_owner = NULL, lease_until_ms = NULL WHERE id = ?1",
            )?
            .execute(params![
                id,
                envelope,
                meta.attempts,
                meta.last_error,
                now.saturating_add(*delay_ms)
            ])?;
            Ok(Reply::Done)
        }
        Op::Bury {
            from_queue,
            meta,
            envelope,
        } => {
            tx.prepare_cached(
                "INSERT INTO dead_letters (source, event_id, event_type, delivery, attempts, \
                 last_error, received_ms, dead_ms, envelope) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                meta.source,
                meta.event_id,
                meta.event_type,
                meta.delivery,
                meta.attempts,
                meta.last_error,
                meta.received_ms,
                meta.dead_ms,
                envelope
            ])?;
            let id = tx.last_insert_rowid();
            if let Some(entry) = from_queue {
                tx.prepare_cached("DELETE FROM queue WHERE id = ?1")?
                    .execute(params![entry])?;
            }
            Ok(Reply::Id(id))
        }
        Op::DeadRemove { id } => {
            let n = tx
                .prepare_cached("DELETE FROM dead_letters WHERE id = ?1")?
                .execute(params![id])?;
            Ok(Reply::Moved(n == 1))
        }
        Op::DeadReplace { id, meta, envelope } => {
            let n = tx
                .prepare_cached(
                    "UPDATE dead_letters SET attempts = ?2, last_error = ?3, envelope = ?4 WHERE id = ?1",
                )?
                .execute(params![id, meta.attempts, meta.last_error, envelope])?;
            Ok(Reply::Replaced((n == 1).then_some(*id)))
        }
        Op::Rewrite { dead, id, old, new } => {
            let sql = if *dead {
                "UPDATE dead_letters SET envelope = ?3 WHERE id = ?1 AND envelope = ?2"
            } else {
                "UPDATE queue SET envelope = ?3 WHERE id = ?1 AND envelope = ?2"
            };
            let n = tx.prepare_cached(sql)?.execute(params![id, old, new])?;
            Ok(Reply::Moved(n == 1))
        }
        Op::BreakerSwap { source, old, new } => {
            let n = match old {
                Some(old) => tx
                    .prepare_cached(
                        "UPDATE breakers SET state = ?3 WHERE source = ?1 AND state = ?2",
                    )?
                    .execute(params![source, old, new])?,
                None => tx
                    .prepare_cached(
                        "INSERT INTO breakers (source, state) VALUES (?1, ?2) ON CONFLICT (source) DO NOTHING",
                    )?
                    .execute(params![source, new])?,
            };
            Ok(Reply::Moved(n == 1))
        }
        Op::JobSwap { id, old, new } => {
            let n = match (old, new) {
                (Some(old), Some(new)) => tx
                    .prepare_cached("UPDATE jobs SET body = ?3 WHERE id = ?1 AND body = ?2")?
                    .execute(params![id, old, new])?,
                (Some(old), None) => tx
                    .prepare_cached("DELETE FROM jobs WHERE id = ?1 AND body = ?2")?
                    .execute(params![id, old])?,
                (None, Some(new)) => tx
                    .prepare_cached(
                        "INSERT INTO jobs (id, body) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
                    )?
                    .execute(params![id, new])?,
                (None, None) => tx
                    .prepare_cached("SELECT count(*) FROM jobs WHERE id = ?1")?
                    .query_row(params![id], |r| r.get::<_, i64>(0))
                    .map(|n| usize::from(n == 0))?,
            };
            Ok(Reply::Moved(n == 1))
        }
        Op::Stats { rows, oldest } => {
            super::stats::add(tx, rows, *oldest)?;
            Ok(Reply::Done)
        }
        // Written by `run_batch` with the op it rides on.
        Op::Trail(_) => Ok(Reply::Done),
        Op::Ping => {
            // Rewrites the header page: a real write through the WAL.
            tx.pragma_update(None, "user_version", super::schema::VERSION)?;
            Ok(Reply::Done)
        }
    }
}
