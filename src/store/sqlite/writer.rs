//! The one thread that writes the file, with group commit.
//!
//! Requests send [`Op`]s over a channel. The thread takes the first waiting
//! op and every op queued behind it (at most [`MAX_BATCH`]), runs them in one
//! `BEGIN IMMEDIATE` transaction (`apply`, in [`super::ops`]) and commits
//! once.
//!
//! With `sync = "full"` the writer commits with `synchronous = OFF`: its
//! commits write the WAL and never wait for the disk. A second thread, the
//! syncer ([`super::syncer`]), fdatasyncs the WAL file and only then
//! answers the ops an answer relies on: those that back a promise
//! (`Op::durable`: a nonce commit, an enqueue, a version advance, a dead
//! letter, a queue settle or retry) and a claim answered `Done` (it
//! reports a commit that may not be on disk yet). One fdatasync covers
//! every commit made before it starts (the WAL is one file), so while it
//! runs the writer commits the next batches, and the next fdatasync
//! answers all of them: under load one fsync serves many requests and no
//! commit waits for another's fsync. Every other op (claims taken or
//! refused as in flight, releases, leases, the trail) is
//! answered right after its commit; a crash ends every lease anyway.
//!
//! Checkpoints (WAL pages copied into the database file) are not left to
//! SQLite's automatic ones, which would run without a sync at
//! `synchronous = OFF`: the writer runs them itself at `synchronous = FULL`
//! (the WAL synced before the copy, the database file after it) every
//! [`CHECKPOINT_OPS`] ops or `CHECKPOINT_EVERY`, whichever comes first.
//! So the WAL is never restarted over frames whose pages are not on disk.
//!
//! With `sync = "normal"` commits run at `synchronous = NORMAL` (WAL synced
//! at SQLite's own checkpoints) and are answered at once.
//!
//! An op that fails rolls its batch back; the ops of that batch then run
//! again one transaction each, so one bad op fails alone. Expired rows are
//! purged between batches, at most [`PURGE_LIMIT`] rows per table per pass.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use super::ops::{Op, Reply, apply};
use super::syncer::{Held, start_syncer};
use super::trail::{TrailWrite, count_trail, generation, recount_trail, roll_trail, write_trail};
use super::{PURGE_LIMIT, Sync};
use crate::store::{Claim, Error};
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

pub use super::syncer::Observers;

fn failed(e: rusqlite::Error) -> Error {
    Error::Unavailable(format!("sqlite: {e}"))
}

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
    use std::path::Path;

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
        let conn = super::super::open_writer(&path, super::super::SecureDelete::Off).expect("open");
        let (jobs, receiver) = mpsc::channel();
        let mut wal = path.into_os_string();
        wal.push("-wal");
        let observers: Observers = Arc::new(std::sync::OnceLock::new());
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
