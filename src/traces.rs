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
//! - Sampling follows OpenTelemetry's `ParentBased(TraceIdRatioBased)`: a
//!   new trace is kept when the low 63 bits of its id fall under
//!   `sample_ratio`; a child, an attempt and a replay follow their parent.
//! - A span that is not kept records nothing, but still has ids: the app
//!   gets a `traceparent` with the sampled flag off.
//! - Attributes are names from the OpenTelemetry semantic conventions and
//!   `hookgate.*`. No secret, signature or body ever becomes one, and no
//!   header value but `Host` (`server.address`); an event id is set only
//!   from a verified request, an event type only when the signature covers
//!   it (as `X-Verified-Event-Type`); text is cut to [`MAX_TEXT`] bytes.
//! - Ending a span hands it to [`export`]'s bounded queue without waiting;
//!   a full queue drops it and counts it.
//!
//! Spans are recorded here and encoded straight to OTLP protobuf by
//! [`otlp`] rather than through the OpenTelemetry SDK: with the SDK and its
//! OTLP exporter, traces cost 15-17 % of fresh-event throughput
//! (docs/performance.md), over the 10 % DESIGN §7c allows.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::metrics::counter::Counter;

use crate::config::Tracing;

pub mod export;
pub mod otlp;

/// The W3C header naming a request's trace and parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header carrying vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// A version-00 `traceparent` is exactly this long.
const TRACEPARENT_LEN: usize = 55;

/// The longest text attribute, in bytes; a longer value is cut.
pub const MAX_TEXT: usize = 256;

/// Attributes one span keeps at most; more are counted as dropped.
pub const MAX_ATTRIBUTES: usize = 16;

/// What kind of span, as OTLP numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
    Producer = 4,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Cow<'static, str>),
    Int(i64),
}

/// One ended span, as the exporter sends it.
#[derive(Debug, Clone)]
pub struct Record {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// All zero for a root span.
    pub parent_span_id: [u8; 8],
    /// Whether the parent was read back from storage or another process.
    pub parent_remote: bool,
    pub name: Cow<'static, str>,
    /// The name is `{name} {http.route}` (a server span of a source).
    pub route: bool,
    pub kind: Kind,
    /// Unix nanoseconds.
    pub start: u64,
    pub end: u64,
    pub attributes: Vec<(&'static str, Value)>,
    pub dropped_attributes: u32,
    /// A sender's `traceparent`: (trace id, span id, sampled).
    pub link: Option<([u8; 16], [u8; 8], bool)>,
    /// `Some(description)`: the span failed.
    pub error: Option<Cow<'static, str>>,
    /// Whether the span is kept; one not kept only lends its ids.
    pub sampled: bool,
    /// The tracer, while the span is open (taken before it is queued, so a
    /// queued record never holds the tracer that holds the queue).
    traces: Option<Arc<Traces>>,
}

/// The tracer, while `[tracing]` is set.
pub struct Traces {
    /// Trace ids whose low 63 bits fall below this are kept.
    keep_below: u64,
    queue: export::Queue,
    exporter: export::Handle,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces").finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("OTEL_EXPORTER_OTLP_HEADERS: {0}")]
    Headers(String),
}

impl Traces {
    /// Starts the exporter (a task on the current Tokio runtime) and the
    /// tracer; spans that cannot be queued or sent are counted in `dropped`.
    pub fn start(settings: &Tracing, dropped: Counter) -> Result<Arc<Traces>, Error> {
        let (queue, exporter) = export::start(settings, dropped)?;
        Ok(Arc::new(Traces {
            keep_below: keep_below(settings.sample_ratio),
            queue,
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
        let trace_id = new_trace_id();
        let sampled = low_bits(&trace_id) < self.keep_below;
        let mut span = self.open(
            Cow::Borrowed(method_word(method)),
            Kind::Server,
            trace_id,
            None,
            sampled,
        );
        if let Some(record) = span.record_mut() {
            record.link = headers
                .get(TRACEPARENT)
                .and_then(|v| Parent::parse(v.as_bytes()))
                .map(|p| (p.trace_id, p.span_id, p.sampled));
            span.word("http.request.method", method_word(method));
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
        match parent {
            Some(p) => {
                let mut span = self.open(
                    Cow::Borrowed("POST"),
                    Kind::Client,
                    p.trace_id,
                    Some(p.span_id),
                    p.sampled,
                );
                if let Some(record) = span.record_mut() {
                    record.parent_remote = true;
                }
                span
            }
            None => {
                let trace_id = new_trace_id();
                let sampled = low_bits(&trace_id) < self.keep_below;
                self.open(Cow::Borrowed("POST"), Kind::Client, trace_id, None, sampled)
            }
        }
    }

    fn open(
        self: &Arc<Self>,
        name: Cow<'static, str>,
        kind: Kind,
        trace_id: [u8; 16],
        parent: Option<[u8; 8]>,
        sampled: bool,
    ) -> Span {
        let record = Record {
            trace_id,
            span_id: new_span_id(),
            parent_span_id: parent.unwrap_or_default(),
            parent_remote: false,
            name,
            route: false,
            kind,
            start: if sampled { unix_nanos() } else { 0 },
            end: 0,
            attributes: if sampled {
                Vec::with_capacity(8)
            } else {
                Vec::new()
            },
            dropped_attributes: 0,
            link: None,
            error: None,
            sampled,
            traces: Some(Arc::clone(self)),
        };
        Span {
            record: Some(Box::new(record)),
        }
    }

    /// Sends what is queued, waiting at most `grace`; at shutdown.
    pub async fn flush(&self, grace: Duration) {
        self.exporter.finish(grace).await;
    }
}

/// A span, or nothing when tracing is off: one pointer, so the futures
/// that hold spans across their awaits stay as small as without them. A
/// kept span's record goes to the exporter when the span is dropped.
#[derive(Default)]
pub struct Span {
    record: Option<Box<Record>>,
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take()
            && let Some(traces) = record.traces.take()
            && record.sampled
        {
            record.end = unix_nanos().max(record.start);
            traces.queue.push(record);
        }
    }
}

impl Span {
    /// No span: tracing is off.
    pub fn none() -> Span {
        Span { record: None }
    }

    /// The record of a kept span.
    fn record_mut(&mut self) -> Option<&mut Record> {
        self.record.as_deref_mut().filter(|r| r.sampled)
    }

    /// A child of this span (nothing when this is nothing).
    pub fn child(&self, name: &'static str, kind: Kind) -> Span {
        let (Some(parent), Some(traces)) = (self.parent(), self.traces()) else {
            return Span::none();
        };
        traces.open(
            Cow::Borrowed(name),
            kind,
            parent.trace_id,
            Some(parent.span_id),
            parent.sampled,
        )
    }

    fn traces(&self) -> Option<&Arc<Traces>> {
        self.record.as_ref().and_then(|r| r.traces.as_ref())
    }

    /// Whether this span is kept (sampled).
    pub fn recording(&self) -> bool {
        self.record.as_ref().is_some_and(|r| r.sampled)
    }

    /// This span as a parent: for the app's `traceparent` and for storage.
    pub fn parent(&self) -> Option<Parent> {
        self.record.as_ref().map(|r| Parent {
            trace_id: r.trace_id,
            span_id: r.span_id,
            sampled: r.sampled,
        })
    }

    /// The trace id, when the trace is kept: for log lines and the trail.
    pub fn trace_id(&self) -> Option<String> {
        self.record
            .as_ref()
            .filter(|r| r.sampled)
            .map(|r| hex::encode(r.trace_id))
    }

    /// Adds an attribute (each key is set once per span by its callers).
    fn set(&mut self, key: &'static str, value: Value) {
        if let Some(record) = self.record_mut() {
            if record.attributes.len() < MAX_ATTRIBUTES {
                record.attributes.push((key, value));
            } else {
                record.dropped_attributes += 1;
            }
        }
    }

    /// A text attribute, cut to [`MAX_TEXT`] bytes (paths and hosts come
    /// from senders).
    pub fn str(&mut self, key: &'static str, value: &str) {
        if self.recording() {
            self.set(key, Value::Text(Cow::Owned(bounded(value).to_owned())));
        }
    }

    /// A text attribute that is one of hookgate's own words.
    pub fn word(&mut self, key: &'static str, value: &'static str) {
        self.set(key, Value::Text(Cow::Borrowed(value)));
    }

    pub fn int(&mut self, key: &'static str, value: i64) {
        self.set(key, Value::Int(value));
    }

    /// Marks the span failed: `error.type` and an error status.
    pub fn fail(&mut self, error_type: &str) {
        self.str("error.type", error_type);
        if let Some(record) = self.record_mut() {
            record.error = Some(Cow::Owned(bounded(error_type).to_owned()));
        }
    }

    /// `error.type` without an error status (a server span's 4xx: the
    /// sender's fault, not hookgate's).
    pub fn refused(&mut self, error_type: &str) {
        self.str("error.type", error_type);
    }

    /// A server span's source path: `http.route`, and the span's name
    /// becomes `{method} {source path}`.
    pub fn route(&mut self, path: &str) {
        self.str("http.route", path);
        if let Some(record) = self.record_mut() {
            record.route = true;
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
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub sampled: bool,
}

impl Parent {
    /// The W3C `traceparent` value: `00-{trace id}-{span id}-{flags}`.
    pub fn traceparent(&self) -> String {
        String::from_utf8_lossy(&self.header()).into_owned()
    }

    /// [`Parent::traceparent`] as the bytes of a header value.
    pub fn header(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        // Hex of 16 and 8 bytes fills exactly 32 and 16 places.
        let _ = hex::encode_to_slice(self.trace_id, &mut out[3..35]);
        let _ = hex::encode_to_slice(self.span_id, &mut out[36..52]);
        if self.sampled {
            out[54] = b'1';
        }
        out
    }

    /// Reads a W3C `traceparent` (version `00`, or a later version's first
    /// four fields). Anything else, all-zero ids included, is `None`.
    pub fn parse(value: &[u8]) -> Option<Parent> {
        let head = value.get(..TRACEPARENT_LEN)?;
        let lower_hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let version = &head[..2];
        if !lower_hex(version) || version == b"ff" {
            return None;
        }
        // Version 00 is exactly 55 bytes; a later one may go on after a `-`.
        let more = value.len() > TRACEPARENT_LEN;
        if more && (version == b"00" || value[TRACEPARENT_LEN] != b'-') {
            return None;
        }
        if head[2] != b'-' || head[35] != b'-' || head[52] != b'-' {
            return None;
        }
        let (trace, span, flags) = (&head[3..35], &head[36..52], &head[53..55]);
        if !lower_hex(trace) || !lower_hex(span) || !lower_hex(flags) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        let mut flag = [0u8; 1];
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        hex::decode_to_slice(flags, &mut flag).ok()?;
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(Parent {
            trace_id,
            span_id,
            sampled: flag[0] & 1 == 1,
        })
    }
}

/// Whether `text` is a trace id as hookgate writes one: 32 lowercase hex
/// digits, not all zero.
pub fn is_trace_id(text: &str) -> bool {
    text.len() == 32
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && text.bytes().any(|b| b != b'0')
}

/// The bound [`Traces::keep_below`] for a ratio, as OpenTelemetry's
/// `TraceIdRatioBased` computes it.
fn keep_below(ratio: f64) -> u64 {
    (ratio.clamp(0.0, 1.0) * (1u64 << 63) as f64) as u64
}

/// The low 63 bits of a trace id, the part the sampler compares.
fn low_bits(trace_id: &[u8; 16]) -> u64 {
    let mut low = [0u8; 8];
    low.copy_from_slice(&trace_id[8..]);
    u64::from_be_bytes(low) >> 1
}

fn new_trace_id() -> [u8; 16] {
    loop {
        let id: [u8; 16] = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

fn new_span_id() -> [u8; 8] {
    loop {
        let id: [u8; 8] = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The method as a `'static` word (`OTHER`, as the conventions say, for
/// one hookgate does not know).
pub fn method_word(method: &http::Method) -> &'static str {
    match *method {
        http::Method::POST => "POST",
        http::Method::GET => "GET",
        http::Method::HEAD => "HEAD",
        http::Method::PUT => "PUT",
        http::Method::DELETE => "DELETE",
        http::Method::OPTIONS => "OPTIONS",
        http::Method::PATCH => "PATCH",
        http::Method::CONNECT => "CONNECT",
        http::Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    const W3C: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_round_trips_the_w3c_example() {
        let parent = Parent::parse(W3C.as_bytes()).expect("the specification's example");
        assert!(parent.sampled);
        assert_eq!(
            hex::encode(parent.trace_id),
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
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ];
        for text in bad {
            assert_eq!(Parent::parse(text.as_bytes()), None, "{text:?}");
        }
        // A later version may carry more fields after its first four.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next";
        assert!(Parent::parse(later.as_bytes()).is_some());
    }

    #[test]
    fn the_sampler_keeps_the_share_it_is_given() {
        assert_eq!(keep_below(1.0), 1u64 << 63);
        assert_eq!(keep_below(0.0), 0);
        let all_ones = [0xff; 16];
        assert!(
            low_bits(&all_ones) < keep_below(1.0),
            "1.0 keeps every trace"
        );
        assert!(low_bits(&[0; 16]) >= keep_below(0.0), "0.0 keeps none");
        let kept = (0..20_000)
            .filter(|_| low_bits(&new_trace_id()) < keep_below(0.25))
            .count();
        assert!(
            (4_000..6_000).contains(&kept),
            "{kept} of 20,000 kept at 0.25"
        );
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
        let child = span.child("verify", Kind::Internal);
        assert!(child.parent().is_none());
        assert!(span.trace_id().is_none());
        assert!(!span.recording());
    }
}
