//! The embedded durable store (DESIGN §4a): one SQLite file in WAL mode.
//!
//! Writes go to one thread ([`writer`]) that batches the writes of
//! concurrent requests into one transaction, and with `sync = "full"` a
//! second thread answers them after one fsync of the WAL (group commit);
//! reads run on a small pool of connections on Tokio's blocking threads, and
//! in WAL mode never wait for the writer. No SQLite call runs on an async
//! worker thread. Several processes may open one file (`hookgate dlq` beside
//! `hookgate run`): SQLite's locks order their writes, and a claim is one
//! transaction, so two processes never both take one event.
//!
//! The keys the other stores use are read back into `(source, id)` rows
//! ([`keys::parse`]); the tables are listed in [`schema`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use std::time::Duration;

use prometheus_client::metrics::histogram::Histogram;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;

use super::keys::{self, Named};
use super::{Claim, Error, Meta, Note, Stored};

mod held;
pub mod ops;
mod payloads;
pub mod schema;
mod stats;
pub mod syncer;
pub mod trail;
pub mod writer;

/// Rows one purge pass deletes per table at most.
pub const PURGE_LIMIT: i64 = 2000;

use ops::{Op, Reply, Table};
use trail::TrailWrite;
use writer::Job;

/// `[store] sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Every write an answer relies on is on disk before that answer.
    Full,
    /// Survives a crash of hookgate, not of the machine.
    Normal,
}

/// How long a connection waits for another process's write lock before the
/// write counts as failed (a prompt 503, like an unreachable Redis).
const BUSY_TIMEOUT: Duration = Duration::from_millis(1500);
/// Idle read connections kept.
const READERS: usize = 4;

/// The SQLite backend. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    prefix: String,
    writer: Sender<Job>,
    readers: Mutex<Vec<Connection>>,
    observers: writer::Observers,
    /// Duplicates counted between two trail writes.
    tally: Arc<crate::trail::tally::Tally>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .finish()
    }
}

fn failed(e: rusqlite::Error) -> Error {
    Error::Unavailable(format!("sqlite: {e}"))
}

/// Statements a connection keeps prepared: the trail's take a few per
/// generation's table ([`trail::SLOTS`]) besides the others'.
const PREPARED: usize = 256;

fn connection(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(PREPARED);
    Ok(conn)
}

/// What the writer zeroes of the rows it deletes or rewrites (SQLite's
/// `secure_delete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecureDelete {
    /// Nothing: freed space keeps its bytes until reused.
    Off,
    /// Within the pages that stay in use, at no extra I/O; a page freed
    /// whole keeps its bytes (SQLite's `FAST`). A server with
    /// `[store.encryption]`: what it frees is sealed already, or was
    /// stored readable before the key was set.
    Fast,
    /// Everything, freed pages included (SQLite's `ON`): `hookgate store
    /// rekey`, so a payload it rewrites leaves no readable copy.
    Full,
}

fn id_of(id: &str) -> Option<i64> {
    id.parse().ok()
}

impl SqliteStore {
    /// Opens (creating it if needed) the file at `path` and brings its schema
    /// up to date, on the writer thread; waits for that thread's word. Fails
    /// on a file that is not a database, a newer schema, or a directory that
    /// cannot be written. `prefix` is the one the other modules build keys with.
    /// `secure_delete` is what the writer zeroes of what it deletes or
    /// rewrites ([`SecureDelete`]).
    pub fn open(
        path: &Path,
        sync: Sync,
        prefix: &str,
        secure_delete: SecureDelete,
    ) -> Result<Self, Error> {
        let (jobs, receiver) = mpsc::channel::<Job>();
        let (ready, started) = mpsc::channel::<Result<(), Error>>();
        let observers: writer::Observers = Arc::new(OnceLock::new());
        let thread_path = path.to_owned();
        let thread_observers = Arc::clone(&observers);
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                let conn = match open_writer(&thread_path, secure_delete) {
                    Ok(conn) => conn,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                let mut wal = thread_path.into_os_string();
                wal.push("-wal");
                writer::run(conn, sync, wal.into(), receiver, thread_observers);
            })
            .map_err(|e| Error::Unavailable(format!("sqlite: cannot start the writer: {e}")))?;
        started
            .recv()
            .map_err(|_| Error::Unavailable("sqlite: the writer stopped at start".into()))??;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                prefix: prefix.to_owned(),
                writer: jobs,
                readers: Mutex::new(Vec::new()),
                observers,
                tally: Arc::default(),
            }),
        })
    }

    /// Counts each group commit in `hookgate_store_batch_size` and its
    /// fsync in `hookgate_store_sync_seconds`.
    pub fn observe(&self, sync_seconds: Histogram, batch_size: Histogram) {
        let _ = self.inner.observers.set((sync_seconds, batch_size));
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    async fn call(&self, op: Op) -> Result<Reply, Error> {
        self.call_noting(op, None).await
    }

    /// [`SqliteStore::call`] with `note`'s facts written in the op's own
    /// transaction.
    async fn call_noting(&self, op: Op, note: Option<Note>) -> Result<Reply, Error> {
        let (reply, answer) = oneshot::channel();
        let trail = note.map(|n| Box::new(trail_write(n.source, n.event_id, n.facts, n.max)));
        if self.inner.writer.send(Job { op, trail, reply }).is_err() {
            return Err(Error::Unavailable("sqlite: the writer has stopped".into()));
        }
        answer
            .await
            .map_err(|_| Error::Unavailable("sqlite: the writer has stopped".into()))?
    }

    /// Runs `read` on a pooled read connection on a blocking thread.
    async fn read<T, F>(&self, read: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().ok().and_then(|mut r| r.pop());
            let conn = match pooled {
                Some(conn) => conn,
                None => connection(
                    &inner.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(failed)?,
            };
            let result = read(&conn).map_err(failed);
            if let Ok(mut pool) = inner.readers.lock()
                && pool.len() < READERS
            {
                pool.push(conn);
            }
            result
        })
        .await
        .map_err(|e| Error::Unavailable(format!("sqlite: a read did not finish: {e}")))?
    }

    fn named<'k>(&self, key: &'k str) -> Result<Named<'k>, Error> {
        keys::parse(&self.inner.prefix, key)
            .ok_or_else(|| Error::Unavailable(format!("sqlite: no table for key {key:?}")))
    }

    fn lease_row(&self, key: &str) -> Result<(Table, String, String), Error> {
        match self.named(key)? {
            Named::Nonce { source, id } => Ok((Table::Nonces, source.into(), id.into())),
            Named::VersionLock { source, resource } => {
                Ok((Table::Leases, source.into(), resource.into()))
            }
            _ => Err(Error::Unavailable(format!(
                "sqlite: {key:?} is not a lease"
            ))),
        }
    }

    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        let (table, source, id) = self.lease_row(key)?;
        match self
            .call(Op::Claim {
                table,
                source,
                id,
                token: token.to_owned(),
                lease_ms: ms(lease),
            })
            .await?
        {
            Reply::Claim(claim) => Ok(claim),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn commit(&self, key: &str, ttl: Duration, note: Option<Note>) -> Result<(), Error> {
        let Named::Nonce { source, id } = self.named(key)? else {
            return Err(Error::Unavailable(format!(
                "sqlite: {key:?} is not a nonce"
            )));
        };
        let op = Op::Commit {
            source: source.into(),
            id: id.into(),
            ttl_ms: ms(ttl),
        };
        self.call_noting(op, note).await.map(|_| ())
    }

    pub async fn release(&self, key: &str, token: &str, note: Option<Note>) -> Result<(), Error> {
        let (table, source, id) = self.lease_row(key)?;
        let op = Op::Release {
            table,
            source,
            id,
            token: token.to_owned(),
        };
        self.call_noting(op, note).await.map(|_| ())
    }

    /// What the nonce `key` holds now: done or in flight, and for how long still.
    pub async fn peek(&self, key: &str) -> Result<Option<(Claim, Duration)>, Error> {
        let Named::Nonce { source, id } = self.named(key)? else {
            return Ok(None);
        };
        let (source, id) = (source.to_owned(), id.to_owned());
        let now = crate::time::now_ms();
        let row: Option<(String, i64)> = self
            .read(move |conn| {
                let done = conn
                    .prepare_cached(
                        "SELECT state, expires_ms FROM nonces WHERE source = ?1 AND event_id = ?2 AND expires_ms > ?3",
                    )?
                    .query_row(params![source, id, now], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                if done.is_some() {
                    return Ok(done);
                }
                conn.prepare_cached(
                    "SELECT 'in_flight', expires_ms FROM claims WHERE source = ?1 AND event_id = ?2 AND expires_ms > ?3",
                )?
                .query_row(params![source, id, now], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
            })
            .await?;
        Ok(row.map(|(state, expires)| {
            let left = Duration::from_millis(u64::try_from(expires - now).unwrap_or(0));
            let held = if state == "done" {
                Claim::Done
            } else {
                Claim::InFlight
            };
            (held, left)
        }))
    }

    /// A write through the writer: the file takes writes.
    pub async fn ping(&self) -> Result<(), Error> {
        self.call(Op::Ping).await.map(|_| ())
    }

    pub async fn version_check(&self, key: &str) -> Result<Option<i128>, Error> {
        let Named::Version { source, resource } = self.named(key)? else {
            return Err(Error::Unavailable(format!(
                "sqlite: {key:?} is not a version"
            )));
        };
        let (source, resource) = (source.to_owned(), resource.to_owned());
        let now = crate::time::now_ms();
        let held: Option<String> = self
            .read(move |conn| {
                conn.prepare_cached(
                    "SELECT version FROM versions WHERE source = ?1 AND resource = ?2 AND expires_ms > ?3",
                )?
                .query_row(params![source, resource, now], |r| r.get(0))
                .optional()
            })
            .await?;
        Ok(held.and_then(|v| v.parse().ok()))
    }

    pub async fn version_advance(&self, key: &str, version: i128) -> Result<bool, Error> {
        let Named::Version { source, resource } = self.named(key)? else {
            return Err(Error::Unavailable(format!(
                "sqlite: {key:?} is not a version"
            )));
        };
        match self
            .call(Op::VersionAdvance {
                source: source.into(),
                resource: resource.into(),
                version,
            })
            .await?
        {
            Reply::Moved(moved) => Ok(moved),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn record_failure(&self, key: &str, ttl: Duration) -> Result<u64, Error> {
        let Named::Failures { source, id } = self.named(key)? else {
            return Err(Error::Unavailable(format!(
                "sqlite: {key:?} is not a failure count"
            )));
        };
        match self
            .call(Op::Failure {
                source: source.into(),
                id: id.into(),
                ttl_ms: ms(ttl),
            })
            .await?
        {
            Reply::Count(n) => Ok(n),
            other => Err(unexpected(&other)),
        }
    }

    /// Appends to the queue and, with `commit`, marks that nonce done, in
    /// one transaction.
    pub async fn enqueue(
        &self,
        meta: Meta,
        envelope: Vec<u8>,
        commit: Option<(&str, Duration)>,
        note: Option<Note>,
    ) -> Result<String, Error> {
        let commit = match commit {
            None => None,
            Some((key, ttl)) => {
                let Named::Nonce { source, id } = self.named(key)? else {
                    return Err(Error::Unavailable(format!(
                        "sqlite: {key:?} is not a nonce"
                    )));
                };
                Some((source.to_owned(), id.to_owned(), ms(ttl)))
            }
        };
        let op = Op::Enqueue {
            meta,
            envelope,
            commit,
        };
        match self.call_noting(op, note).await? {
            Reply::Id(id) => Ok(id.to_string()),
            other => Err(unexpected(&other)),
        }
    }

    /// Due entries of `source` whose lease is free (never taken, or taken by
    /// a process that stopped), leased to `consumer` for `lease`.
    pub async fn take(
        &self,
        source: &str,
        consumer: &str,
        lease: Duration,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        if count == 0 {
            return Ok(Vec::new());
        }
        match self
            .call(Op::Take {
                source: source.into(),
                consumer: consumer.into(),
                lease_ms: ms(lease),
                count: i64::try_from(count).unwrap_or(i64::MAX),
            })
            .await?
        {
            Reply::Taken(taken) => Ok(taken),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn settle(&self, id: &str, note: Option<Note>) -> Result<(), Error> {
        let Some(id) = id_of(id) else { return Ok(()) };
        self.call_noting(Op::Settle { id }, note).await.map(|_| ())
    }

    pub async fn park(
        &self,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
        delay: Duration,
        note: Option<Note>,
    ) -> Result<(), Error> {
        let Some(id) = id_of(id) else { return Ok(()) };
        let op = Op::Park {
            id,
            meta,
            envelope,
            delay_ms: ms(delay),
        };
        self.call_noting(op, note).await.map(|_| ())
    }

    /// Writes a dead letter and, in the same transaction, removes the queue
    /// entry `from_queue` it comes from.
    pub async fn bury(
        &self,
        from_queue: Option<&str>,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<String, Error> {
        match self
            .call(Op::Bury {
                from_queue: from_queue.and_then(id_of),
                meta,
                envelope,
            })
            .await?
        {
            Reply::Id(id) => Ok(id.to_string()),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn dead_remove(&self, id: &str) -> Result<bool, Error> {
        let Some(id) = id_of(id) else {
            return Ok(false);
        };
        match self.call(Op::DeadRemove { id }).await? {
            Reply::Moved(removed) => Ok(removed),
            other => Err(unexpected(&other)),
        }
    }

    /// Rewrites a dead letter in place (its id stays); `None` when it was
    /// already gone.
    pub async fn dead_replace(
        &self,
        id: &str,
        meta: Meta,
        envelope: Vec<u8>,
    ) -> Result<Option<String>, Error> {
        let Some(id) = id_of(id) else { return Ok(None) };
        match self.call(Op::DeadReplace { id, meta, envelope }).await? {
            Reply::Replaced(id) => Ok(id.map(|id| id.to_string())),
            other => Err(unexpected(&other)),
        }
    }

    /// Appends facts to an event's trail, without waiting for the write: it
    /// goes in the writer's next batch, behind the event's own writes sent
    /// before it.
    pub fn trail_append(
        &self,
        source: &str,
        event_id: &str,
        facts: Vec<crate::trail::Fact>,
        max: usize,
    ) {
        let (reply, _) = oneshot::channel();
        let op = Op::Trail(trail_write(source.into(), event_id.into(), facts, max));
        let _ = self.inner.writer.send(Job {
            op,
            trail: None,
            reply,
        });
    }

    /// [`SqliteStore::trail_append`], waiting until the write is committed.
    pub async fn trail_write(
        &self,
        source: &str,
        event_id: &str,
        facts: Vec<crate::trail::Fact>,
        max: usize,
    ) -> Result<(), Error> {
        let op = Op::Trail(trail_write(source.into(), event_id.into(), facts, max));
        self.call(op).await.map(|_| ())
    }

    /// What hands the tally's notes to the file (through the writer
    /// thread, behind the event's own writes); `false` once the store is gone.
    pub fn note_writer(&self) -> impl Fn(Note) -> bool + Send + 'static {
        let store = Arc::downgrade(&self.inner);
        move |note: Note| match store.upgrade() {
            Some(inner) => {
                SqliteStore { inner }.trail_append(
                    &note.source,
                    &note.event_id,
                    note.facts,
                    note.max,
                );
                true
            }
            None => false,
        }
    }

    /// The duplicates counted and not yet written.
    pub fn tally(&self) -> &Arc<crate::trail::tally::Tally> {
        &self.inner.tally
    }

    pub async fn trail_get(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<crate::trail::Summary>, Error> {
        let (source, event_id) = (source.to_owned(), event_id.to_owned());
        let rows = self
            .read(move |conn| {
                let g = trail::generation(conn)?;
                trail::rows_of(conn, g, &source, &event_id)
            })
            .await?;
        Ok(joined(&rows))
    }

    /// Up to `count` events received before `before`, newest first, each
    /// once (an event with rows in two generations where its newest row
    /// stands, its facts joined).
    pub async fn trail_scan(
        &self,
        before: Option<&crate::trail::Cursor>,
        count: usize,
    ) -> Result<Vec<crate::trail::Stored>, Error> {
        let before = before.cloned();
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.read(move |conn| {
            let g = trail::generation(conn)?;
            let mut cursor = before.map(|c| (c.received_ms, c.source, c.event_id));
            let mut stmt = conn.prepare_cached(
                // A range of `events_received` (no `OR`: it would read from
                // the newest row on every call); the first page starts
                // below every time.
                "SELECT generation, source, event_id, received_ms, facts FROM events \
                 WHERE (received_ms, source, event_id) < (?1, ?2, ?3) \
                 ORDER BY received_ms DESC, source DESC, event_id DESC LIMIT ?4",
            )?;
            let mut out = Vec::new();
            // A row skipped (its event listed at a newer row) is read past.
            while (out.len() as i64) < count {
                let asked = count - out.len() as i64;
                let (ms, source, id) =
                    cursor
                        .clone()
                        .unwrap_or((i64::MAX, String::new(), String::new()));
                let rows: Vec<(i64, String, String, i64, String)> = stmt
                    .query_map(params![ms, source, id, asked], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                let read = rows.len() as i64;
                for (generation, source, event_id, received_ms, facts) in rows {
                    cursor = Some((received_ms, source.clone(), event_id.clone()));
                    let all = trail::rows_of(conn, g, &source, &event_id)?;
                    // Listed where its newest row stands.
                    let newest = all.iter().map(|(n, at, _)| (*at, *n)).max();
                    if newest.is_some_and(|top| top != (received_ms, generation)) {
                        continue;
                    }
                    let summary = if all.len() > 1 {
                        joined(&all)
                    } else {
                        crate::trail::Summary::fold(crate::trail::facts_of(&facts))
                    };
                    if let Some(summary) = summary {
                        out.push(crate::trail::Stored {
                            source,
                            event_id,
                            received_ms,
                            summary,
                        });
                    }
                }
                if read < asked {
                    break;
                }
            }
            Ok(out)
        })
        .await
    }

    pub async fn queue_depth(&self, source: &str) -> Result<i64, Error> {
        let source = source.to_owned();
        self.read(move |conn| {
            conn.prepare_cached("SELECT count(*) FROM queue WHERE source = ?1")?
                .query_row(params![source], |r| r.get(0))
        })
        .await
    }

    pub async fn dead_depth(&self) -> Result<i64, Error> {
        self.read(|conn| {
            conn.prepare_cached("SELECT count(*) FROM dead_letters")?
                .query_row([], |r| r.get(0))
        })
        .await
    }

    /// Every dead letter (of one source, or all), oldest first.
    pub async fn dead_list(&self, source: Option<&str>) -> Result<Vec<Stored>, Error> {
        let source = source.map(str::to_owned);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, envelope FROM dead_letters WHERE ?1 IS NULL OR source = ?1 ORDER BY id",
            )?;
            let rows = stmt.query_map(params![source], |r| {
                Ok(Stored {
                    id: r.get::<_, i64>(0)?.to_string(),
                    envelope: r.get(1)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    pub async fn dead_get(&self, id: &str) -> Result<Option<Stored>, Error> {
        let Some(id) = id_of(id) else { return Ok(None) };
        self.read(move |conn| {
            conn.prepare_cached("SELECT envelope FROM dead_letters WHERE id = ?1")?
                .query_row(params![id], |r| {
                    Ok(Stored {
                        id: id.to_string(),
                        envelope: r.get(0)?,
                    })
                })
                .optional()
        })
        .await
    }
}

/// Opens the writer's connection: WAL mode, the schema brought up to date.
fn open_writer(path: &Path, secure_delete: SecureDelete) -> Result<Connection, Error> {
    let where_ = path.display();
    let mut conn = connection(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::Unavailable(format!("sqlite: cannot open {where_}: {e}")))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| Error::Unavailable(format!("sqlite: {where_}: {e}")))?;
    let scrub = match secure_delete {
        SecureDelete::Off => None,
        SecureDelete::Fast => Some("FAST"),
        SecureDelete::Full => Some("ON"),
    };
    if let Some(mode) = scrub {
        conn.pragma_update(None, "secure_delete", mode)
            .map_err(|e| Error::Unavailable(format!("sqlite: {where_}: {e}")))?;
    }
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Unavailable(format!(
            "sqlite: {where_}: the file stays in {mode} mode; WAL is needed (is it on a network filesystem?)"
        )));
    }
    let found = schema::migrate(&mut conn)
        .map_err(|e| Error::Unavailable(format!("sqlite: {where_}: {e}")))?;
    if found != 0 && found < schema::VERSION {
        tracing::info!(path = %where_, from = found, to = schema::VERSION, "sqlite schema migrated");
    }
    Ok(conn)
}

/// A trail write of `facts`, their JSON lines made here (off the writer).
fn trail_write(
    source: String,
    event_id: String,
    facts: Vec<crate::trail::Fact>,
    max: usize,
) -> TrailWrite {
    TrailWrite {
        lines: crate::trail::lines_of(&facts),
        source,
        event_id,
        facts,
        max,
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

fn unexpected(reply: &Reply) -> Error {
    Error::Unavailable(format!("sqlite: unexpected answer {reply:?}"))
}

/// An event's facts from its rows, oldest generation first, folded.
fn joined(rows: &[(i64, i64, String)]) -> Option<crate::trail::Summary> {
    crate::trail::Summary::fold(
        rows.iter()
            .flat_map(|(_, _, facts)| crate::trail::facts_of(facts)),
    )
}
