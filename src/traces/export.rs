//! Span export: a bounded queue between the requests and one background
//! task that posts batches with OpenTelemetry's OTLP/HTTP exporter.
//!
//! - Ending a span is a `try_send` on a channel of [`QUEUE_SPANS`]: a full
//!   channel drops the span and counts it. A request never waits here.
//! - The task sends a batch once [`BATCH_SPANS`] are waiting or
//!   [`BATCH_WAIT`] after the first, one batch at a time. A batch the
//!   collector refuses, or that is not sent within [`EXPORT_TIMEOUT`]
//!   (the exporter's own retries included), is dropped and counted.
//! - Requests go out on a pooled HTTP/1.1 client (`https://` with the
//!   system's roots), with the `OTEL_EXPORTER_OTLP_TRACES_HEADERS` /
//!   `OTEL_EXPORTER_OTLP_HEADERS` headers the exporter reads from the
//!   environment.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry::Context;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Error;
use crate::config::Tracing;

/// Spans waiting for export at most; past this they are dropped.
pub const QUEUE_SPANS: usize = 16_384;
/// Spans per OTLP request at most.
pub const BATCH_SPANS: usize = 1_024;
/// How long the first span of a batch waits for company.
pub const BATCH_WAIT: Duration = Duration::from_millis(500);
/// One batch's whole export, retries included.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest collector answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Failed exports are logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// The processor side: what ending a span calls.
#[derive(Debug)]
pub struct Queue {
    spans: mpsc::Sender<SpanData>,
    dropped: Counter,
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if span.span_context.is_sampled() && self.spans.try_send(span).is_err() {
            self.dropped.inc();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The export task, to finish at shutdown.
pub struct Handle {
    closing: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Handle {
    /// Sends what is queued (at most `grace`), then stops the task.
    pub async fn finish(&self, grace: Duration) {
        self.closing.cancel();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task
            && tokio::time::timeout(grace, task).await.is_err()
        {
            tracing::warn!("spans still unexported at exit");
        }
    }
}

/// Builds the exporter and starts its task on the current runtime.
pub fn start(
    settings: &Tracing,
    resource: &opentelemetry_sdk::Resource,
    dropped: Counter,
) -> Result<(Queue, Handle), Error> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Collector::new())
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.traces_url.to_string())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| Error::Exporter(e.to_string()))?;
    exporter.set_resource(resource);
    let (tx, rx) = mpsc::channel(QUEUE_SPANS);
    let closing = CancellationToken::new();
    let task = tokio::spawn(run(exporter, rx, dropped.clone(), closing.clone()));
    Ok((
        Queue { spans: tx, dropped },
        Handle {
            closing,
            task: Mutex::new(Some(task)),
        },
    ))
}

/// Batches and sends until `closing`, then sends what is left once.
async fn run(
    exporter: opentelemetry_otlp::SpanExporter,
    mut spans: mpsc::Receiver<SpanData>,
    dropped: Counter,
    closing: CancellationToken,
) {
    let mut last_warning: Option<tokio::time::Instant> = None;
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
        if closed || closing.is_cancelled() {
            // What is queued now goes out in full batches, then the task ends.
            while batch.len() < BATCH_SPANS {
                match spans.try_recv() {
                    Ok(span) => batch.push(span),
                    Err(_) => break,
                }
            }
        }
        if !batch.is_empty() {
            send(&exporter, batch, &dropped, &mut last_warning).await;
        }
        if (closed || closing.is_cancelled()) && spans.is_empty() {
            return;
        }
    }
}

async fn send(
    exporter: &opentelemetry_otlp::SpanExporter,
    batch: Vec<SpanData>,
    dropped: &Counter,
    last_warning: &mut Option<tokio::time::Instant>,
) {
    let count = batch.len() as u64;
    let error = match tokio::time::timeout(EXPORT_TIMEOUT, exporter.export(batch)).await {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {EXPORT_TIMEOUT:?}"),
    };
    dropped.inc_by(count);
    let now = tokio::time::Instant::now();
    if last_warning.is_none_or(|at| now.duration_since(at) >= WARN_EVERY) {
        *last_warning = Some(now);
        tracing::warn!(spans = count, error = %error, "trace export failed; spans dropped (counted in hookgate_trace_spans_dropped_total)");
    }
}

/// The HTTP client the exporter posts with.
#[derive(Debug, Clone)]
struct Collector {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Collector {
    fn new() -> Collector {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(crate::tls::client_config())
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Collector { client }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Collector {
    async fn send_bytes(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let answer = self
            .client
            .request(Request::from_parts(parts, Full::new(body)))
            .await?;
        let (parts, body) = answer.into_parts();
        let body = Limited::new(body, MAX_ANSWER_BYTES)
            .collect()
            .await?
            .to_bytes();
        Ok(Response::from_parts(parts, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::InstrumentationScope;
    use opentelemetry::trace::{
        SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
    };

    fn span(n: u64, sampled: bool) -> SpanData {
        let flags = if sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(u128::from(n) + 1),
                SpanId::from(n + 1),
                flags,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: "POST".into(),
            start_time: std::time::SystemTime::UNIX_EPOCH,
            end_time: std::time::SystemTime::UNIX_EPOCH,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: InstrumentationScope::builder("hookgate").build(),
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_never_waits() {
        let (tx, mut rx) = mpsc::channel(3);
        let dropped = Counter::<u64>::default();
        let queue = Queue {
            spans: tx,
            dropped: dropped.clone(),
        };
        for n in 0..10 {
            queue.on_end(span(n, true));
        }
        assert_eq!(dropped.get(), 7);
        let mut kept = Vec::new();
        while let Ok(s) = rx.try_recv() {
            kept.push(s.span_context.span_id());
        }
        assert_eq!(
            kept,
            vec![SpanId::from(1), SpanId::from(2), SpanId::from(3)]
        );
        // A span not sampled is never queued (nor counted as dropped).
        queue.on_end(span(99, false));
        assert!(rx.try_recv().is_err());
        assert_eq!(dropped.get(), 7);
    }
}
