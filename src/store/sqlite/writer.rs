//! The one thread that writes the file, with group commit.
//!
//! Requests send [`Op`]s over a channel. The thread takes the first waiting
//! op and every op queued behind it (at most [`MAX_BATCH`]), runs them in one
//! `BEGIN IMMEDIATE` transaction and commits once.
//!
//! With `sync = "full"` the writer commits with `synchronous = OFF`: its
//! commits write the WAL and never wait for the disk. A second thread, the
//! syncer, fdatasyncs the WAL file and only then answers the ops an answer
//! relies on: those that back a promise ([`Op::durable`]: a nonce commit,
//! an enqueue, a version advance, a dead letter, a queue settle or retry)
//! and a claim answered `Done` (it reports a commit that may not be on disk
//! yet). One fdatasync covers every commit made before it starts (the WAL is
//! one file), so while it runs the writer commits the next batches, and the
//! next fdatasync answers all of them: under load one fsync serves many
//! requests and no commit waits for another's fsync. Every other op
//! (claims taken or refused as in flight, releases, leases, the trail) is
//! answered right after its commit; a crash ends every lease anyway.
//!
//! Checkpoints (WAL pages copied into the database file) are not left to
//! SQLite's automatic ones, which would run without a sync at
//! `synchronous = OFF`: the writer runs them itself at `synchronous = FULL`
//! (the WAL synced before the copy, the database file after it) every
//! [`CHECKPOINT_OPS`] ops or [`CHECKPOINT_EVERY`], whichever comes first.
//! So the WAL is never restarted over frames whose pages are not on disk.
//!
//! With `sync = "normal"` commits run at `synchronous = NORMAL` (WAL synced
//! at SQLite's own checkpoints) and are answered at once.
//!
//! An op that fails rolls its batch back; the ops of that batch then run
//! again one transaction each, so one bad op fails alone. Expired rows are
//! purged between batches, at most [`PURGE_LIMIT`] rows per table per pass.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::Histogram;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use tokio::sync::oneshot;

use super::trail::{TrailWrite, count_trail, generation, recount_trail, roll_trail, write_trail};
use super::{PURGE_LIMIT, Sync};
use crate::store::{Claim, Error, Meta, Stored, VERSION_TTL};
use crate::time::now_ms;

/// Ops one transaction holds at most.
pub const MAX_BATCH: usize = 512;
/// How often expired rows are purged.
const PURGE_EVERY: Duration = Duration::from_secs(10);
/// With `sync = "full"`: ops committed between two checkpoints at most.
pub const CHECKPOINT_OPS: usize = 4000;
/// With `sync = "full"`: the size the WAL file is cut back to when it
/// starts over after a checkpoint.
const WAL_LIMIT_BYTES: i64 = 64 << 20;
/// With `sync = "full"`: the longest a committed op waits for a checkpoint.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

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
    /// Facts appended to an event's trail on their own (a note that rides
    /// on no other write of the event: see [`Job::trail`]).
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
    /// A write that changes nothing, to show the file takes writes.
    Ping,
}

impl Op {
    /// Whether an answer relies on this write being on disk.
    fn durable(&self) -> bool {
        !matches!(
            self,
            Op::Claim { .. }
                | Op::Release { .. }
                | Op::Failure { .. }
                | Op::Take { .. }
                | Op::Trail(_)
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

pub struct Job {
    pub op: Op,
    /// Trail facts written in the op's own transaction, after it (DESIGN
    /// §7a: the trail rides on the event's writes). A failure of either
    /// fails both.
    pub trail: Option<Box<TrailWrite>>,
    pub reply: oneshot::Sender<Result<Reply, Error>>,
}

impl Job {
    /// The trail facts this job writes: riding on its op, or its op.
    fn facts(&self) -> Option<&TrailWrite> {
        match (&self.op, &self.trail) {
            (_, Some(t)) => Some(t),
            (Op::Trail(t), None) => Some(t),
            _ => None,
        }
    }
}

/// The group-commit histograms, once the metrics exist.
pub type Observers = Arc<OnceLock<(Histogram, Histogram)>>;

fn failed(e: rusqlite::Error) -> Error {
    Error::Unavailable(format!("sqlite: {e}"))
}

/// An answer held until the WAL is on disk.
type Held = (oneshot::Sender<Result<Reply, Error>>, Result<Reply, Error>);

/// Runs until every sender is gone. `wal` is the file the syncer
/// fdatasyncs (with `sync = "full"`).
pub fn run(
    mut conn: Connection,
    sync: Sync,
    wal: PathBuf,
    jobs: Receiver<Job>,
    observers: Observers,
) {
    let syncer = match sync {
        Sync::Full => match setup_full(&conn) {
            Ok(()) => Some(start_syncer(wal, Arc::clone(&observers))),
            Err(e) => {
                tracing::error!(error = %e, "sqlite: the writer cannot turn its own syncs off");
                fail_all(&jobs, &failed(e));
                return;
            }
        },
        Sync::Normal => {
            if let Err(e) = conn.pragma_update(None, "synchronous", "NORMAL") {
                fail_all(&jobs, &failed(e));
                return;
            }
            None
        }
    };
    // The trail's bound, as the latest trail write gave it.
    let mut trail_max = None;
    if let Err(e) = recount_trail(&conn) {
        tracing::warn!(error = %e, "sqlite: counting the trail failed");
    }
    let mut last_purge = Instant::now();
    let mut unchecked = 0usize;
    let mut last_checkpoint = Instant::now();
    loop {
        let first = match jobs.recv_timeout(CHECKPOINT_EVERY) {
            Ok(job) => Some(job),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if last_purge.elapsed() >= PURGE_EVERY {
            last_purge = Instant::now();
            if let Err(e) = purge(&mut conn, now_ms(), trail_max) {
                tracing::warn!(error = %e, "sqlite: purging expired rows failed");
            }
            unchecked += 1;
        }
        if let Some(first) = first {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            if let Some(max) = batch.iter().rev().find_map(|j| j.facts().map(|t| t.max)) {
                trail_max = Some(max);
            }
            unchecked += batch.len();
            commit_batch(&mut conn, batch, trail_max, syncer.as_ref(), &observers);
        }
        if syncer.is_some()
            && unchecked > 0
            && (unchecked >= CHECKPOINT_OPS || last_checkpoint.elapsed() >= CHECKPOINT_EVERY)
        {
            if let Err(e) = checkpoint(&conn) {
                tracing::warn!(error = %e, "sqlite: checkpoint failed; the WAL keeps the writes");
            }
            unchecked = 0;
            last_checkpoint = Instant::now();
        }
    }
    if syncer.is_some()
        && let Err(e) = checkpoint(&conn)
    {
        tracing::warn!(error = %e, "sqlite: the last checkpoint failed; the WAL keeps the writes");
    }
}

/// The writer's settings with `sync = "full"`: its commits do not sync,
/// and SQLite's own checkpoints are off (see the module docs).
fn setup_full(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // A WAL grown by a burst is cut back to this when it starts over.
    let _: i64 = conn.query_row(
        &format!("PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}"),
        [],
        |r| r.get(0),
    )?;
    Ok(())
}

/// Copies the WAL into the database file, syncing both (the WAL before,
/// the file after), then turns the writer's syncs off again.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "FULL")?;
    let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
    conn.pragma_update(None, "synchronous", "OFF")?;
    copied.map(drop)
}

/// Answers every job waiting in `jobs` with `e`.
fn fail_all(jobs: &Receiver<Job>, e: &Error) {
    while let Ok(job) = jobs.recv() {
        let _ = job.reply.send(Err(e.clone()));
    }
}

/// Runs `batch` in one transaction, counts it, and answers each op: at
/// once, or (with a syncer) after the WAL is on disk when the answer relies
/// on it. A batch that adds events to the trail also keeps its bound of
/// `trail_max` in the same transaction ([`roll_trail`]).
fn commit_batch(
    conn: &mut Connection,
    batch: Vec<Job>,
    trail_max: Option<usize>,
    syncer: Option<&Sender<Vec<Held>>>,
    observers: &Observers,
) {
    let results = match run_batch(conn, &batch, trail_max) {
        Ok(results) => results,
        // One op failed: each alone, so the others still land.
        Err(_) => batch
            .iter()
            .map(|job| run_batch(conn, std::slice::from_ref(job), trail_max).and_then(one))
            .collect(),
    };
    if let Some((_, batch_size)) = observers.get() {
        batch_size.observe(batch.len() as f64);
    }
    let mut held = Vec::new();
    for (job, result) in batch.into_iter().zip(results) {
        let relies_on_disk = match &result {
            Ok(Reply::Claim(Claim::Done)) => true,
            Ok(_) => job.op.durable(),
            Err(_) => false,
        };
        if syncer.is_some() && relies_on_disk {
            held.push((job.reply, result));
        } else {
            let _ = job.reply.send(result);
        }
    }
    if let Some(syncer) = syncer
        && !held.is_empty()
        && let Err(mpsc::SendError(held)) = syncer.send(held)
    {
        let e = Error::Unavailable("sqlite: the syncer has stopped".into());
        for (reply, _) in held {
            let _ = reply.send(Err(e.clone()));
        }
    }
}

/// Starts the thread that fdatasyncs `wal` and then answers what waited
/// for it; it ends when the writer drops the sender.
fn start_syncer(wal: PathBuf, observers: Observers) -> Sender<Vec<Held>> {
    let (sender, pending) = mpsc::channel::<Vec<Held>>();
    let spawned = std::thread::Builder::new()
        .name("sqlite-syncer".into())
        .spawn(move || sync_loop(&wal, &pending, &observers));
    if let Err(e) = spawned {
        // The receiver is gone with the closure: every held answer then
        // fails in commit_batch.
        tracing::error!(error = %e, "sqlite: cannot start the syncer");
    }
    sender
}

fn sync_loop(wal: &Path, pending: &Receiver<Vec<Held>>, observers: &Observers) {
    let mut file: Option<(File, u64)> = None;
    while let Ok(mut held) = pending.recv() {
        // Everything committed so far is covered by the one sync below.
        while let Ok(more) = pending.try_recv() {
            held.extend(more);
        }
        let started = Instant::now();
        let synced = sync_wal(wal, &mut file);
        if let Some((sync_seconds, _)) = observers.get() {
            sync_seconds.observe(started.elapsed().as_secs_f64());
        }
        match synced {
            Ok(()) => {
                for (reply, result) in held {
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "sqlite: syncing the WAL failed; the writes waiting for it are answered as failed");
                let e = Error::Unavailable(format!("sqlite: syncing the WAL failed: {e}"));
                for (reply, _) in held {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// fdatasyncs the WAL, reopening it when the path names another file than
/// the one held (SQLite deleted and made it again).
fn sync_wal(wal: &Path, file: &mut Option<(File, u64)>) -> std::io::Result<()> {
    let inode = std::fs::metadata(wal)?.ino();
    let current = match file.take() {
        Some((held, held_inode)) if held_inode == inode => held,
        _ => std::fs::OpenOptions::new().write(true).open(wal)?,
    };
    let synced = current.sync_data();
    *file = Some((current, inode));
    synced
}

fn one(mut results: Vec<Result<Reply, Error>>) -> Result<Reply, Error> {
    results
        .pop()
        .unwrap_or_else(|| Err(Error::Unavailable("sqlite: no result".into())))
}

/// Runs `batch` in one transaction, each op with the trail facts riding
/// on it; when it added events to the trail, the next generation starts
/// and the ones past the kept go in the same transaction ([`roll_trail`]). `Err` when any op failed
/// (nothing of the batch is kept then).
fn run_batch(
    conn: &mut Connection,
    batch: &[Job],
    trail_max: Option<usize>,
) -> Result<Vec<Result<Reply, Error>>, Error> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    let now = now_ms();
    let mut out = Vec::with_capacity(batch.len());
    let mut added = 0i64;
    let mut at = None;
    for job in batch {
        let reply = apply(&tx, &job.op, now).map_err(failed)?;
        if let Some(t) = job.facts() {
            let g = match at {
                Some(g) => g,
                None => *at.insert(generation(&tx).map_err(failed)?),
            };
            added += i64::from(write_trail(&tx, t, now, g).map_err(failed)?);
        }
        out.push(Ok(reply));
    }
    if added > 0 {
        count_trail(&tx, added).map_err(failed)?;
    }
    if let Some(max) = trail_max.filter(|_| added > 0) {
        // Its own failure loses no op: the next batch rolls instead.
        if let Err(e) = roll_trail(&tx, max) {
            tracing::warn!(error = %e, "sqlite: starting a trail generation failed");
        }
    }
    tx.commit().map_err(failed)?;
    Ok(out)
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

fn apply(tx: &Transaction<'_>, op: &Op, now: i64) -> rusqlite::Result<Reply> {
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
            tx.prepare_cached("DELETE FROM dead_letters WHERE id = ?1")?
                .execute(params![id])?;
            Ok(Reply::Done)
        }
        Op::DeadReplace { id, meta, envelope } => {
            let n = tx
                .prepare_cached(
                    "UPDATE dead_letters SET attempts = ?2, last_error = ?3, envelope = ?4 WHERE id = ?1",
                )?
                .execute(params![id, meta.attempts, meta.last_error, envelope])?;
            Ok(Reply::Replaced((n == 1).then_some(*id)))
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

/// Deletes expired nonces, claims, leases, versions and failure counts, at
/// most [`PURGE_LIMIT`] of each, and empties the tables of trail
/// generations past the kept ones ([`roll_trail`], as the batches that add
/// events do).
fn purge(conn: &mut Connection, now: i64, trail_max: Option<usize>) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for (table, key) in [
        ("nonces", "source, event_id"),
        ("claims", "source, event_id"),
        ("leases", "source, resource"),
        ("versions", "source, resource"),
        ("failures", "source, event_id"),
    ] {
        tx.execute(
            &format!(
                "DELETE FROM {table} WHERE ({key}) IN \
                 (SELECT {key} FROM {table} WHERE expires_ms <= ?1 LIMIT ?2)"
            ),
            params![now, PURGE_LIMIT],
        )?;
    }
    if let Some(max) = trail_max {
        roll_trail(&tx, max)?;
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::trail::table;

    /// The rows of `table` in the database file alone, the WAL ignored.
    fn rows_in_the_file(path: &Path, table: &str) -> i64 {
        let uri = format!("file:{}?immutable=1", path.display());
        let conn = Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .expect("open the file alone");
        // Before the first checkpoint even the schema is in the WAL only.
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap_or(0)
    }

    fn commit(jobs: &Sender<Job>, id: &str) -> oneshot::Receiver<Result<Reply, Error>> {
        commit_noting(jobs, id, None)
    }

    /// A commit of `id`, with trail facts riding on it when `max` is given.
    fn commit_noting(
        jobs: &Sender<Job>,
        id: &str,
        max: Option<usize>,
    ) -> oneshot::Receiver<Result<Reply, Error>> {
        let trail = max.map(|max| {
            Box::new(TrailWrite {
                source: "s".into(),
                event_id: id.into(),
                lines: "{}\n".into(),
                facts: vec![crate::trail::received(
                    "r",
                    None,
                    None,
                    crate::trail::State::Delivered,
                )],
                max,
            })
        });
        let (reply, answer) = oneshot::channel();
        jobs.send(Job {
            op: Op::Commit {
                source: "s".into(),
                id: id.into(),
                ttl_ms: 60_000,
            },
            trail,
            reply,
        })
        .expect("writer running");
        answer
    }

    /// A writer thread on a new file `t.db` in `dir`.
    fn start(dir: &Path, sync: Sync) -> (Sender<Job>, std::thread::JoinHandle<()>) {
        let path = dir.join("t.db");
        let conn = super::super::open_writer(&path).expect("open");
        let (jobs, receiver) = mpsc::channel();
        let mut wal = path.into_os_string();
        wal.push("-wal");
        let observers: Observers = Arc::new(OnceLock::new());
        let writer = std::thread::spawn(move || {
            run(conn, sync, wal.into(), receiver, observers);
        });
        (jobs, writer)
    }

    /// The rows of `events`, and of its current generation as
    /// `trail_generation` counts them.
    fn trail_rows(path: &Path) -> (i64, i64) {
        let reader = Connection::open(path).expect("read");
        let rows = reader
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .expect("count");
        let size = reader
            .query_row("SELECT events FROM trail_generation", [], |r| r.get(0))
            .expect("size");
        (rows, size)
    }

    /// Commits events `e{n:03}` for `ids` one after the other, each in a
    /// transaction of its own.
    fn commit_each(jobs: &Sender<Job>, ids: std::ops::Range<usize>, max: usize) {
        for i in ids {
            let answer = commit_noting(jobs, &format!("e{i:03}"), Some(max));
            assert!(matches!(answer.blocking_recv(), Ok(Ok(Reply::Done))));
        }
    }

    /// The rows of the current generation, counted.
    fn current_rows(path: &Path) -> i64 {
        Connection::open(path)
            .expect("read")
            .query_row(
                "SELECT count(*) FROM events WHERE generation = (SELECT current FROM trail_generation)",
                [],
                |r| r.get(0),
            )
            .expect("count")
    }

    /// Rows an operator deletes by hand from the current generation are
    /// not in `trail_generation` until a writer opens the file again.
    #[test]
    fn a_trail_thinned_by_hand_is_counted_again_when_a_writer_opens_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.db");
        let (jobs, writer) = start(dir.path(), Sync::Normal);
        // A bound of 100: generations of 7, 15 of them kept.
        commit_each(&jobs, 0..150, 100);
        // 150 = 21 × 7 + 3: generations 6 to 20 kept, 21 holds three.
        assert_eq!(trail_rows(&path), (15 * 7 + 3, 3));
        drop(jobs);
        writer.join().expect("writer thread");

        Connection::open(&path)
            .expect("open")
            .execute(
                &format!("DELETE FROM {} WHERE event_id >= 'e147'", table(21)),
                [],
            )
            .expect("delete by hand");
        assert_eq!(trail_rows(&path), (15 * 7, 3), "the count does not see it");

        let (jobs, writer) = start(dir.path(), Sync::Normal);
        commit_each(&jobs, 150..157, 100);
        // Counted again at start (0): the seven fill generation 21, 22
        // starts and 6 goes; counted as three, 21 would have taken four.
        assert_eq!(trail_rows(&path), (15 * 7, 0));
        assert_eq!(current_rows(&path), 0, "generation 22 started");
        drop(jobs);
        writer.join().expect("writer thread");

        // A row deleted by hand is put back, once, from the rows held (the
        // newest generation with rows is taken as current: 21, full, so
        // the next commit starts 22).
        let conn = Connection::open(&path).expect("open");
        conn.execute("DELETE FROM trail_generation", [])
            .expect("delete by hand");
        let (jobs, writer) = start(dir.path(), Sync::Normal);
        commit_each(&jobs, 157..158, 100);
        drop(jobs);
        writer.join().expect("writer thread");
        let (jobs, writer) = start(dir.path(), Sync::Normal);
        drop(jobs);
        writer.join().expect("writer thread");
        let rows: Vec<(i64, i64, i64)> = conn
            .prepare("SELECT current, oldest, events FROM trail_generation")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(rows, [(22, 7, 0)], "one row");
    }

    /// With `sync = "full"` SQLite's own checkpoints are off: the writer's
    /// copy the WAL into the file within CHECKPOINT_EVERY of a commit, and
    /// a commit is answered once the WAL is synced.
    #[test]
    fn commits_are_answered_and_copied_into_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.db");
        let (jobs, writer) = start(dir.path(), Sync::Full);
        let answers: Vec<_> = (0..20).map(|i| commit(&jobs, &format!("e{i}"))).collect();
        for answer in answers {
            assert!(matches!(answer.blocking_recv(), Ok(Ok(Reply::Done))));
        }
        assert_eq!(
            rows_in_the_file(&path, "nonces"),
            0,
            "committed rows wait in the WAL first"
        );
        let deadline = Instant::now() + 10 * CHECKPOINT_EVERY;
        while rows_in_the_file(&path, "nonces") < 20 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(rows_in_the_file(&path, "nonces"), 20);
        drop(jobs);
        writer.join().expect("writer thread");
    }

    /// The trail keeps to its bound while writes keep coming, long before
    /// the first purge pass: the newest events are the ones kept, each in
    /// the transaction of its commit, and at most two generations over.
    #[test]
    fn the_trail_keeps_to_its_bound_between_purges() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.db");
        let (jobs, writer) = start(dir.path(), Sync::Normal);
        commit_each(&jobs, 0..300, 100);
        let reader = Connection::open(&path).expect("read");
        let (held, oldest): (i64, String) = reader
            .query_row("SELECT count(*), min(event_id) FROM events", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("count");
        // Generations of 7, 15 kept besides the current one: 300 = 42 × 7
        // + 6, so generations 27 to 41 (e189 to e293) and e294 to e299.
        assert_eq!(held, 15 * 7 + 6, "the trail holds its bound");
        assert_eq!(oldest, "e189", "the newest are kept");
        let done: i64 = reader
            .query_row("SELECT count(*) FROM nonces", [], |r| r.get(0))
            .expect("nonces");
        assert_eq!(done, 300, "every commit landed with its facts");
        drop(jobs);
        writer.join().expect("writer thread");
    }
}
