//! Log output: lines to stdout through one shared buffer.
//!
//! Every request ends in a log line; written one by one, that is one
//! `write(2)` per request. Here lines collect in a buffer that a flusher
//! thread writes out [`FLUSH_AFTER`] after the first line arrives (or at once
//! when [`BUFFER_BYTES`] are waiting), so stdout sees one write per batch and
//! a line is never more than [`FLUSH_AFTER`] late. Call [`flush`] before the
//! process exits. An idle process has an idle flusher: it sleeps until a line
//! comes.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once, PoisonError};
use std::time::Duration;

/// How long the first line of a batch may wait for company.
pub const FLUSH_AFTER: Duration = Duration::from_millis(50);

/// Waiting bytes that make the writer flush at once instead.
pub const BUFFER_BYTES: usize = 64 * 1024;

static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static ARRIVED: Condvar = Condvar::new();
static FLUSHER: Once = Once::new();
/// Set once the flusher runs; until then (or if it cannot start) every line
/// is written at once.
static BUFFERING: AtomicBool = AtomicBool::new(false);

/// The writer to hand to `tracing_subscriber::fmt().with_writer(log::stdout)`.
pub fn stdout() -> Buffered {
    FLUSHER.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("log-flush".into())
            .spawn(flusher);
        match spawned {
            Ok(_) => BUFFERING.store(true, Ordering::Release),
            Err(e) => eprintln!("hookgate: cannot start the log flusher ({e}); logging unbuffered"),
        }
    });
    Buffered
}

/// Writes out whatever is waiting.
pub fn flush() {
    let mut pending = lock();
    write_out(&mut pending);
}

/// One log line (tracing's fmt layer writes each event with one `write_all`).
pub struct Buffered;

impl Write for Buffered {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut pending = lock();
        let was_empty = pending.is_empty();
        pending.extend_from_slice(buf);
        if pending.len() >= BUFFER_BYTES || !BUFFERING.load(Ordering::Acquire) {
            write_out(&mut pending);
        } else if was_empty {
            ARRIVED.notify_one();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn lock() -> MutexGuard<'static, Vec<u8>> {
    // A panic elsewhere while holding the lock leaves at worst a partial line.
    PENDING.lock().unwrap_or_else(PoisonError::into_inner)
}

fn write_out(pending: &mut Vec<u8>) {
    if pending.is_empty() {
        return;
    }
    let mut out = io::stdout().lock();
    // Nowhere to report a failing stdout; the lines are dropped as tracing's
    // own writer would drop them.
    let _ = out.write_all(pending);
    let _ = out.flush();
    pending.clear();
    // Keep the buffer's memory bounded after a burst of long lines.
    pending.shrink_to(BUFFER_BYTES);
}

fn flusher() {
    loop {
        {
            let pending = lock();
            let _pending = ARRIVED
                .wait_while(pending, |p| p.is_empty())
                .unwrap_or_else(PoisonError::into_inner);
        }
        std::thread::sleep(FLUSH_AFTER);
        flush();
    }
}
