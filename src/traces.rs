//! Traces (DESIGN §7c): one OpenTelemetry trace per verified event, from the
//! sender's request to the app's answer, exported over OTLP/HTTP.
//!
//! The shape of a trace:
//!
//! - a server span `POST {source path}` for each request, with
//!   `hookgate.outcome`, and `hookgate.event_id` / `hookgate.event_type`
//!   only once the signature proved them;
//! - under it `verify`, `claim`, and either a client span `POST` to the app
//!   (forward mode) or a producer span `enqueue` (queue mode);
//! - each queue attempt and each replay: a client span `POST` whose parent
//!   is the request's server span, read back from the stored envelope
//!   ([`Parent`]), with `hookgate.delivery.attempt` and
//!   `hookgate.delivery.mode`.
//!
//! The app receives `traceparent` naming the client span that carries the
//! request. A sender's `traceparent` never becomes a parent (anyone can
//! send one): it is a link on the server span, and it and any `tracestate`
//! are replaced on the way to the app.
//!
//! Rules of this module:
//!
//! - No `[tracing]`, no [`Traces`]: every [`Span`] is empty and every
//!   method on it returns at once, allocating nothing.
//! - Attributes are names from the OpenTelemetry semantic conventions and
//!   `hookgate.*`. No secret, signature, header value or body ever becomes
//!   one; an event id or type is set only from a verified request.
//! - A span that was not sampled records nothing, but still has ids: the
//!   app gets a `traceparent` with the sampled flag off.
//! - Ending a span hands it to [`export`]'s bounded queue without waiting;
//!   a full queue drops it and counts it.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{
    Link, Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use prometheus_client::metrics::counter::Counter;

use crate::config::Tracing;

pub mod export;

/// The W3C header naming a request's trace and parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header carrying vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// Whatever a sender sends as `traceparent`, only this many bytes are read.
const TRACEPARENT_LEN: usize = 55;

/// The longest text attribute, in bytes; a longer value is cut.
pub const MAX_TEXT: usize = 256;

/// `text` cut to at most [`MAX_TEXT`] bytes, on a character boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The tracer, while `[tracing]` is set.
pub struct Traces {
    tracer: SdkTracer,
    provider: SdkTracerProvider,
    exporter: export::Handle,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces").finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

impl Traces {
    /// Starts the exporter (a task on the current Tokio runtime) and the
    /// tracer; spans that cannot be queued or sent are counted in `dropped`.
    pub fn start(settings: &Tracing, dropped: Counter) -> Result<Arc<Traces>, Error> {
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", settings.service_name.clone()),
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            ])
            .build();
        let (processor, exporter) = export::start(settings, &resource, dropped)?;
        let sampler =
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(settings.sample_ratio)));
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(sampler)
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("hookgate")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(Arc::new(Traces {
            tracer,
            provider,
            exporter,
        }))
    }

    /// The server span of one request from a sender. The sender's
    /// `traceparent`, when well formed, is a link, never the parent.
    pub fn request(
        self: &Arc<Self>,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
    ) -> Span {
        let mut builder = self
            .tracer
            .span_builder(method.as_str().to_owned())
            .with_kind(SpanKind::Server);
        if let Some(sender) = headers
            .get(TRACEPARENT)
            .and_then(|v| Parent::parse(v.as_bytes()))
        {
            builder = builder.with_links(vec![Link::with_context(sender.context(true))]);
        }
        let mut span = Span::live(
            self,
            builder.start_with_context(&self.tracer, &Context::new()),
        );
        if span.recording() {
            span.str("http.request.method", method.as_str());
            span.str("url.path", path);
            if let Some(host) = headers
                .get(http::header::HOST)
                .and_then(|v| v.to_str().ok())
            {
                let address = host.rsplit_once(':').map_or(host, |(name, port)| {
                    if port.bytes().all(|b| b.is_ascii_digit()) {
                        name
                    } else {
                        host
                    }
                });
                span.str("server.address", address);
            }
        }
        span
    }

    /// A client span for one attempt at the app of a stored event (a queue
    /// attempt or a replay), in the trace of the request that kept it.
    /// Without a stored parent (an entry written while tracing was off), the
    /// attempt starts a trace of its own.
    pub fn delivery(self: &Arc<Self>, parent: Option<Parent>) -> Span {
        let cx = match parent {
            Some(p) => Context::new().with_remote_span_context(p.context(true)),
            None => Context::new(),
        };
        let span = self
            .tracer
            .span_builder("POST")
            .with_kind(SpanKind::Client)
            .start_with_context(&self.tracer, &cx);
        Span::live(self, span)
    }

    /// Sends what is queued, waiting at most `grace`; at shutdown.
    pub async fn flush(&self, grace: Duration) {
        let _ = self.provider.shutdown_with_timeout(grace);
        self.exporter.finish(grace).await;
    }
}

/// Whether `text` is a trace id as hookgate writes one: 32 lowercase hex
/// digits, not all zero.
pub fn is_trace_id(text: &str) -> bool {
    text.len() == 32
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && text.bytes().any(|b| b != b'0')
}

/// A span, or nothing when tracing is off. Ends when dropped.
#[derive(Default)]
pub struct Span {
    live: Option<Live>,
}

struct Live {
    span: opentelemetry_sdk::trace::Span,
    traces: Arc<Traces>,
}

impl Span {
    /// No span: tracing is off.
    pub fn none() -> Span {
        Span { live: None }
    }

    fn live(traces: &Arc<Traces>, span: opentelemetry_sdk::trace::Span) -> Span {
        Span {
            live: Some(Live {
                span,
                traces: Arc::clone(traces),
            }),
        }
    }

    /// A child of this span (nothing when this is nothing).
    pub fn child(&self, name: &'static str, kind: SpanKind) -> Span {
        let Some(live) = &self.live else {
            return Span::none();
        };
        let cx = Context::new().with_remote_span_context(live.span.span_context().clone());
        let span = live
            .traces
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .start_with_context(&live.traces.tracer, &cx);
        Span::live(&live.traces, span)
    }

    /// Whether this span is kept (sampled).
    pub fn recording(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.span.is_recording())
    }

    /// This span as a parent: for the app's `traceparent` and for storage.
    pub fn parent(&self) -> Option<Parent> {
        let live = self.live.as_ref()?;
        let cx = live.span.span_context();
        cx.is_valid().then(|| Parent {
            trace_id: cx.trace_id(),
            span_id: cx.span_id(),
            sampled: cx.is_sampled(),
        })
    }

    /// The trace id, when the trace is kept: for log lines and the trail.
    pub fn trace_id(&self) -> Option<String> {
        self.recording()
            .then(|| self.parent().map(|p| p.trace_id.to_string()))
            .flatten()
    }

    /// A text attribute, cut to [`MAX_TEXT`] bytes (paths and hosts come
    /// from senders).
    pub fn str(&mut self, key: &'static str, value: &str) {
        if let Some(live) = self.live.as_mut().filter(|l| l.span.is_recording()) {
            live.span
                .set_attribute(KeyValue::new(key, bounded(value).to_owned()));
        }
    }

    pub fn int(&mut self, key: &'static str, value: i64) {
        if let Some(live) = self.live.as_mut().filter(|l| l.span.is_recording()) {
            live.span.set_attribute(KeyValue::new(key, value));
        }
    }

    /// Marks the span failed: `error.type` and an error status.
    pub fn fail(&mut self, error_type: &str) {
        if let Some(live) = self.live.as_mut().filter(|l| l.span.is_recording()) {
            live.span
                .set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            live.span.set_status(Status::error(error_type.to_owned()));
        }
    }

    /// `error.type` without an error status (a server span's 4xx: the
    /// sender's fault, not hookgate's).
    pub fn refused(&mut self, error_type: &str) {
        self.str("error.type", error_type);
    }

    /// The name a server span gets once its source is known:
    /// `{method} {source path}`.
    pub fn rename(&mut self, name: String) {
        if let Some(live) = self.live.as_mut().filter(|l| l.span.is_recording()) {
            live.span.update_name(name);
        }
    }

    /// Ends the span now.
    pub fn end(self) {
        drop(self);
    }
}

/// A span named as a parent: what `traceparent` carries, and what an
/// envelope keeps so that later attempts join the request's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub sampled: bool,
}

impl Parent {
    /// The W3C `traceparent` value: `00-{trace id}-{span id}-{flags}`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            self.trace_id,
            self.span_id,
            if self.sampled { "01" } else { "00" }
        )
    }

    /// Reads a W3C `traceparent` (version `00`, or a later version's first
    /// four fields). Anything else, all-zero ids included, is `None`.
    pub fn parse(value: &[u8]) -> Option<Parent> {
        let head = value.get(..TRACEPARENT_LEN)?;
        let text = std::str::from_utf8(head).ok()?;
        let lower_hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let (version, rest) = text.split_at(2);
        if !lower_hex(version) || version == "ff" {
            return None;
        }
        // Version 00 is exactly 55 bytes; a later one may go on after a `-`.
        if version == "00" && value.len() != TRACEPARENT_LEN
            || version != "00" && value.len() > TRACEPARENT_LEN && value[TRACEPARENT_LEN] != b'-'
        {
            return None;
        }
        let bytes = rest.as_bytes();
        if bytes[0] != b'-' || bytes[33] != b'-' || bytes[50] != b'-' {
            return None;
        }
        let (trace, span, flags) = (&rest[1..33], &rest[34..50], &rest[51..53]);
        if !lower_hex(trace) || !lower_hex(span) || !lower_hex(flags) {
            return None;
        }
        let trace_id = TraceId::from_hex(trace).ok()?;
        let span_id = SpanId::from_hex(span).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        (trace_id != TraceId::INVALID && span_id != SpanId::INVALID).then_some(Parent {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    fn context(&self, remote: bool) -> SpanContext {
        let flags = if self.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(self.trace_id, self.span_id, flags, remote, TraceState::NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W3C: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_round_trips_the_w3c_example() {
        let parent = Parent::parse(W3C.as_bytes()).expect("the specification's example");
        assert!(parent.sampled);
        assert_eq!(
            parent.trace_id.to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(parent.traceparent(), W3C);
        let unsampled = W3C.replace("-01", "-00");
        assert_eq!(
            Parent::parse(unsampled.as_bytes()).map(|p| p.sampled),
            Some(false)
        );
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        let bad = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ];
        for text in bad {
            assert_eq!(Parent::parse(text.as_bytes()), None, "{text:?}");
        }
        // A later version may carry more fields after its first four.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next";
        assert!(Parent::parse(later.as_bytes()).is_some());
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_TEXT);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_TEXT && cut.len() > MAX_TEXT - 2);
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn no_tracing_means_empty_spans() {
        let mut span = Span::none();
        span.str("hookgate.source", "s");
        let child = span.child("verify", SpanKind::Internal);
        assert!(child.parent().is_none());
        assert!(span.trace_id().is_none());
        assert!(!span.recording());
    }
}
