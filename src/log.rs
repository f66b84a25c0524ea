//! Log output: lines to stdout through one shared buffer, and the JSON line
//! format.
//!
//! Every request ends in a log line; written one by one, that is one
//! `write(2)` per request. Here lines collect in a buffer that a flusher
//! thread writes out [`FLUSH_AFTER`] after the first line arrives (or at once
//! when [`BUFFER_BYTES`] are waiting), so stdout sees one write per batch and
//! a line is never more than [`FLUSH_AFTER`] late. Call [`flush`] before the
//! process exits. An idle process has an idle flusher: it sleeps until a line
//! comes.

use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

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

/// `--log-format json`: the line tracing-subscriber's flattened JSON format
/// writes (`timestamp`, `level`, the event's fields in order, `target`; the
/// same value rules), written straight into the line instead of through
/// serde and its byte-to-`str` adaptor, which cost about as much as the rest
/// of a duplicate's handling. Log records bridged from the `log` crate get
/// their real target, as there.
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        writer.write_str("{\"timestamp\":\"")?;
        write_timestamp(&mut writer, SystemTime::now())?;
        writer.write_str("\",\"level\":\"")?;
        writer.write_str(meta.level().as_str())?;
        writer.write_char('"')?;
        let mut fields = JsonFields {
            out: &mut writer,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writer.write_str(",\"target\":")?;
        write_json_str(&mut writer, meta.target())?;
        writer.write_str("}\n")
    }
}

/// Writes each field as `,"name":value`.
struct JsonFields<'a, 'w> {
    out: &'a mut Writer<'w>,
    result: fmt::Result,
}

impl JsonFields<'_, '_> {
    fn entry(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = (|| {
                self.out.write_char(',')?;
                write_json_str(self.out, field.name())?;
                self.out.write_char(':')?;
                value(self.out)
            })();
        }
    }
}

impl Visit for JsonFields<'_, '_> {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.entry(field, |w| w.write_str(if value { "true" } else { "false" }));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.entry(field, |w| write!(w, "{value}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.entry(field, |w| write!(w, "{value}"));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // serde_json's rules: shortest round-trip text, and null when not finite.
        self.entry(field, |w| match serde_json::Number::from_f64(value) {
            Some(n) => write!(w, "{n}"),
            None => w.write_str("null"),
        });
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.entry(field, |w| write_json_str(w, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.entry(field, |w| {
            w.write_char('"')?;
            write!(Escaped(w), "{value:?}")?;
            w.write_char('"')
        });
    }
}

/// A `fmt::Write` that JSON-escapes what goes through it.
struct Escaped<'a, W: fmt::Write>(&'a mut W);

impl<W: fmt::Write> fmt::Write for Escaped<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s)
    }
}

fn write_json_str(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    write_escaped(w, s)?;
    w.write_char('"')
}

/// JSON string escaping as serde_json does it: `"` `\` and control
/// characters, with the short forms where JSON has them.
pub(crate) fn write_escaped(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so these are char boundaries.
        w.write_str(&s[start..i])?;
        if short.is_empty() {
            write!(w, "\\u{b:04x}")?;
        } else {
            w.write_str(short)?;
        }
        start = i + 1;
    }
    w.write_str(&s[start..])
}

/// RFC 3339 in UTC with microseconds, e.g. `2026-11-30T06:50:01.604400Z`,
/// as tracing-subscriber's default timer writes it.
fn write_timestamp(w: &mut impl fmt::Write, now: SystemTime) -> fmt::Result {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (year, month, day) = crate::time::civil_from_days(days);
    // Digits placed by hand: through `write!` and its padding this was a
    // quarter of the line's cost.
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, u64::try_from(year).unwrap_or(0));
    put(5, 2, u64::try_from(month).unwrap_or(0));
    put(8, 2, u64::try_from(day).unwrap_or(0));
    put(11, 2, rem / 3_600);
    put(14, 2, rem / 60 % 60);
    put(17, 2, rem % 60);
    put(20, 6, u64::from(since.subsec_micros()));
    // Only ASCII digits and separators were written.
    w.write_str(std::str::from_utf8(&out).unwrap_or("1970-01-01T00:00:00.000000Z"))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::Value;
    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;
        fn make_writer(&'a self) -> Capture {
            self.clone()
        }
    }

    fn emit() {
        let err = io::Error::other("refused \"x\"");
        tracing::info!(
            source = "stripe",
            event_id = Some("evt_1"),
            event_type = None::<&str>,
            outcome = "forwarded",
            status = 200u16,
            "request"
        );
        tracing::warn!(path = %"/a\"b\\c\n\u{1}", error = %err, n = -3i64, ok = true, f = 1.5f64, nan = f64::NAN, big = 1u128 << 100, "odd \t values");
        tracing::error!(debug = ?vec!["a", "b"], "plain");
    }

    fn lines(capture: &Capture) -> Vec<String> {
        let bytes = capture
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8(bytes)
            .expect("log lines are UTF-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The same events through tracing-subscriber's JSON format and through
    /// this one give the same keys in the same order and the same values
    /// (the timestamps differ by when they were taken).
    #[test]
    fn same_lines_as_tracing_subscriber_json() {
        let theirs = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(theirs.clone())
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .finish();
        tracing::subscriber::with_default(subscriber, emit);

        let ours = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(ours.clone())
            .event_format(JsonLines)
            .finish();
        tracing::subscriber::with_default(subscriber, emit);

        let (theirs, ours) = (lines(&theirs), lines(&ours));
        assert_eq!(theirs.len(), 3);
        assert_eq!(theirs.len(), ours.len());
        for (a, b) in theirs.iter().zip(&ours) {
            let strip = |line: &str| {
                let mut v: serde_json::Map<String, Value> =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
                let ts = v.remove("timestamp");
                (v, ts)
            };
            let (va, ta) = strip(a);
            let (vb, tb) = strip(b);
            assert_eq!(va, vb, "\n{a}\n{b}");
            assert_eq!(va.keys().collect::<Vec<_>>(), vb.keys().collect::<Vec<_>>());
            let (ta, tb) = (ta.expect("timestamp"), tb.expect("timestamp"));
            let (ta, tb) = (ta.as_str().unwrap_or(""), tb.as_str().unwrap_or(""));
            assert_eq!(ta.len(), tb.len(), "{ta} {tb}");
            assert_eq!(ta[..16], tb[..16], "same minute, same layout: {ta} {tb}");
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc_micros() {
        let at = |secs: u64, micros: u32| {
            let mut s = String::new();
            let t = UNIX_EPOCH + std::time::Duration::new(secs, micros * 1000);
            write_timestamp(&mut s, t).expect("writing to a String");
            s
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.000005Z");
        assert_eq!(at(1_796_021_401, 604_400), "2026-11-30T06:50:01.604400Z");
        assert_eq!(at(4_102_444_799, 999_999), "2099-12-31T23:59:59.999999Z");
    }
}
