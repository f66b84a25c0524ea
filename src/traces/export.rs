//! Span export: a bounded queue between the requests and one background
//! task that posts batches to the collector over OTLP/HTTP (protobuf).
//!
//! - Ending a span is a `try_send` on a channel of [`QUEUE_SPANS`]: a full
//!   channel drops the span and counts it. A request never waits here.
//! - The task sends a batch once [`BATCH_SPANS`] are waiting or
//!   [`BATCH_WAIT`] after the first, one batch at a time. A batch the
//!   collector refuses (any answer but 2xx), or that is not answered within
//!   [`EXPORT_TIMEOUT`], is dropped and counted; it is not retried, so a
//!   collector that is down costs hookgate one request per batch.
//! - Requests go out on `crate::outbound`'s pooled HTTP/1.1 client (`https://` with the
//!   system's roots), with the headers of `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
//!   or else `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,key=value`, values
//!   percent-decoded), read once at start: where a collector's credentials go.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::otlp::{self, Origin};
use super::{Error, Record};
use crate::config::Tracing;

/// Spans waiting for export at most; past this they are dropped.
pub const QUEUE_SPANS: usize = 16_384;
/// Spans per OTLP request at most.
pub const BATCH_SPANS: usize = 1_024;
/// How long the first span of a batch waits for company.
pub const BATCH_WAIT: Duration = Duration::from_millis(500);
/// One batch's whole export: connecting, sending, the collector's answer.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest collector answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Failed exports are logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// The request side: where an ended span goes.
#[derive(Debug)]
pub struct Queue {
    spans: mpsc::Sender<Box<Record>>,
    dropped: Counter,
}

impl Queue {
    /// Queues an ended span, or drops and counts it when the queue is full.
    pub fn push(&self, record: Box<Record>) {
        if self.spans.try_send(record).is_err() {
            self.dropped.inc();
        }
    }
}

/// The export task, to finish at shutdown.
pub struct Handle {
    closing: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    /// The queue, to count what is left in it when the task is stopped.
    queue: mpsc::WeakSender<Box<Record>>,
}

impl Handle {
    /// Sends what is queued (at most `grace`), then stops the task. When
    /// `grace` runs out (a collector down or slow), the task is stopped
    /// there and the spans left are counted in the log.
    pub async fn finish(&self, grace: Duration) {
        self.closing.cancel();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(mut task) = task
            && tokio::time::timeout(grace, &mut task).await.is_err()
        {
            task.abort();
            let queued = self
                .queue
                .upgrade()
                .map_or(0, |q| q.max_capacity() - q.capacity());
            tracing::warn!(
                spans_left = queued,
                waited_ms = grace.as_millis() as u64,
                "spans still unexported at exit (the collector did not take them in time); they are dropped, with the batch being sent"
            );
        }
    }
}

/// Reads the headers from the environment and starts the export task on the
/// current runtime.
pub fn start(settings: &Tracing, dropped: Counter) -> Result<(Queue, Handle), Error> {
    let headers = env_headers(|name| std::env::var(name).ok())?;
    let (tx, rx) = mpsc::channel(QUEUE_SPANS);
    let weak = tx.downgrade();
    let closing = CancellationToken::new();
    let exporter = Exporter {
        spare: Arc::default(),
        url: settings.traces_url.clone(),
        headers,
        origin: Origin {
            service_name: settings.service_name.clone(),
            service_version: env!("CARGO_PKG_VERSION"),
            scope: "hookgate",
        },
        client: crate::outbound::pooled(),
        dropped: dropped.clone(),
        last_warning: None,
    };
    let task = tokio::spawn(exporter.run(rx, closing.clone()));
    Ok((
        Queue { spans: tx, dropped },
        Handle {
            closing,
            task: Mutex::new(Some(task)),
            queue: weak,
        },
    ))
}

struct Exporter {
    /// The buffer the last request was written in, back once the client is
    /// done with it: a batch is some hundred KiB, too large to allocate anew
    /// each time.
    spare: Arc<Mutex<Vec<u8>>>,
    url: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    origin: Origin,
    client: crate::outbound::Pooled,
    dropped: Counter,
    last_warning: Option<tokio::time::Instant>,
}

impl Exporter {
    /// Batches and sends until `closing`, then sends what is left once.
    async fn run(mut self, mut spans: mpsc::Receiver<Box<Record>>, closing: CancellationToken) {
        loop {
            let mut batch = Vec::with_capacity(BATCH_SPANS);
            let closed = tokio::select! {
                n = spans.recv_many(&mut batch, BATCH_SPANS) => n == 0,
                _ = closing.cancelled() => true,
            };
            if !closed {
                let wait = tokio::time::sleep(BATCH_WAIT);
                tokio::pin!(wait);
                while batch.len() < BATCH_SPANS {
                    let room = BATCH_SPANS - batch.len();
                    tokio::select! {
                        n = spans.recv_many(&mut batch, room) => if n == 0 { break },
                        _ = &mut wait => break,
                        _ = closing.cancelled() => break,
                    }
                }
            }
            let closing_now = closed || closing.is_cancelled();
            if closing_now {
                // What is queued now goes out in full batches, then the task ends.
                while batch.len() < BATCH_SPANS {
                    match spans.try_recv() {
                        Ok(span) => batch.push(span),
                        Err(_) => break,
                    }
                }
            }
            if !batch.is_empty() {
                self.send(&batch).await;
            }
            if closing_now && spans.is_empty() {
                return;
            }
        }
    }

    async fn send(&mut self, batch: &[Box<Record>]) {
        let mut buf = self
            .spare
            .lock()
            .map(|mut spare| std::mem::take(&mut *spare))
            .unwrap_or_default();
        otlp::request_into(&self.origin, batch, &mut buf);
        let body = Bytes::from_owner(Lent {
            buf,
            home: Arc::clone(&self.spare),
        });
        let error = match tokio::time::timeout(EXPORT_TIMEOUT, self.post(body)).await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(_) => format!("no answer within {EXPORT_TIMEOUT:?}"),
        };
        let count = batch.len() as u64;
        self.dropped.inc_by(count);
        let now = tokio::time::Instant::now();
        if self
            .last_warning
            .is_none_or(|at| now.duration_since(at) >= WARN_EVERY)
        {
            self.last_warning = Some(now);
            tracing::warn!(spans = count, error = %error, "trace export failed; spans dropped (counted in hookgate_trace_spans_dropped_total)");
        }
    }

    async fn post(&self, body: Bytes) -> Result<(), String> {
        let mut request = Request::post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let answer = self
            .client
            .request(request)
            .await
            .map_err(|e| format!("the collector cannot be reached: {e}"))?;
        let status = answer.status();
        // The answer is read (and bounded) so the connection can be reused.
        let _ = Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the collector answered {status}"))
        }
    }
}

/// A request body that goes back to the exporter's spare when dropped.
struct Lent {
    buf: Vec<u8>,
    home: Arc<Mutex<Vec<u8>>>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Ok(mut spare) = self.home.lock()
            && spare.capacity() < self.buf.capacity()
        {
            *spare = std::mem::take(&mut self.buf);
        }
    }
}

/// The export headers of the environment (`name=value` pairs split by `,`,
/// values percent-decoded, as the OpenTelemetry exporters read them).
/// Neither names nor values ever appear in an error: they may be credentials.
fn env_headers(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
    let Some((source, text)) = [
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ]
    .into_iter()
    .find_map(|name| {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name, v))
    }) else {
        return Ok(Vec::new());
    };
    let mut headers = Vec::new();
    for (i, pair) in text.split(',').map(str::trim).enumerate() {
        if pair.is_empty() {
            continue;
        }
        let bad = || Error::Headers(format!("{source}: entry {} is not name=value", i + 1));
        let (name, value) = pair.split_once('=').ok_or_else(bad)?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
        let value = percent_decode(value.trim()).ok_or_else(bad)?;
        let value = HeaderValue::from_bytes(&value).map_err(|_| bad())?;
        headers.push((name, value));
    }
    Ok(headers)
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let mut byte = [0u8; 1];
            hex::decode_to_slice(hex, &mut byte).ok()?;
            out.push(byte[0]);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::traces::Kind;

    fn record(n: u8) -> Box<Record> {
        Box::new(Record {
            trace_id: [1; 16],
            span_id: [n; 8],
            parent_span_id: [0; 8],
            parent_remote: false,
            name: Cow::Borrowed("POST"),
            route: false,
            kind: Kind::Server,
            start: 1,
            end: 2,
            attributes: Vec::new(),
            dropped_attributes: 0,
            link: None,
            error: None,
            sampled: true,
            traces: None,
        })
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_never_waits() {
        let (tx, mut rx) = mpsc::channel(3);
        let dropped = Counter::<u64>::default();
        let queue = Queue {
            spans: tx,
            dropped: dropped.clone(),
        };
        for n in 1..=10 {
            queue.push(record(n));
        }
        assert_eq!(dropped.get(), 7);
        let mut kept = Vec::new();
        while let Ok(s) = rx.try_recv() {
            kept.push(s.span_id[0]);
        }
        assert_eq!(kept, vec![1, 2, 3]);
    }

    fn headers(pairs: &[(&str, &str)]) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
        env_headers(|name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn headers_come_from_the_environment_and_never_print() {
        assert!(headers(&[]).expect("none").is_empty());
        let got = headers(&[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "x-honeycomb-team=abc%20def, authorization=Basic%3Dxyz",
        )])
        .expect("headers");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "x-honeycomb-team");
        assert_eq!(got[0].1, "abc def");
        assert_eq!(got[1].1, "Basic=xyz");
        // The per-signal variable wins, unless it is empty (unset).
        let got = headers(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
        ])
        .expect("headers");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "b");
        let got = headers(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", " "),
        ])
        .expect("headers");
        assert_eq!(got[0].0, "a");
        for bad in ["novalue", "a=%zz-secret", "bad name=secret-value"] {
            let e = headers(&[("OTEL_EXPORTER_OTLP_HEADERS", bad)])
                .expect_err(bad)
                .to_string();
            assert!(e.contains("entry 1"), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
