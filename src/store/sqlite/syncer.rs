//! With `sync = "full"`, the thread that makes commits durable: it
//! fdatasyncs the WAL file and only then answers the ops that waited for
//! it. One fdatasync covers every commit made before it starts (the WAL is
//! one file), so the answers queued while one runs all go after the next.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Instant;

use tokio::sync::oneshot;

use super::ops::Reply;
use crate::store::Error;

/// An answer held until the WAL is on disk.
pub(super) type Held = (oneshot::Sender<Result<Reply, Error>>, Result<Reply, Error>);

/// The group-commit histograms (sync seconds, batch size), once the
/// metrics exist: the writer counts batches, this thread their fsyncs.
pub type Observers = std::sync::Arc<
    std::sync::OnceLock<(
        prometheus_client::metrics::histogram::Histogram,
        prometheus_client::metrics::histogram::Histogram,
    )>,
>;

/// Starts the thread that fdatasyncs `wal` and then answers what waited
/// for it; it ends when the writer drops the sender.
pub(super) fn start_syncer(wal: PathBuf, observers: Observers) -> Sender<Vec<Held>> {
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
