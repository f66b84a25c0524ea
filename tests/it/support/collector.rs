//! An OTLP/HTTP trace receiver on `127.0.0.1:0`, built on the official
//! protobuf definitions (the `opentelemetry-proto` crate's generated types):
//! it decodes every `POST /v1/traces` body as an `ExportTraceServiceRequest`
//! exactly as a collector would, and keeps the spans for tests to read.
//!
//! It can also be told to answer `503`, or to hold every request without
//! answering (a collector that is down or stuck).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// How long [`Collector::wait_for`] waits.
const WAIT: Duration = Duration::from_secs(20);

/// One received span, flattened with its resource's `service.name`.
#[derive(Debug, Clone)]
pub struct Span {
    pub service_name: String,
    pub scope: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// `SPAN_KIND_*` number: 1 internal, 2 server, 3 client, 4 producer.
    pub kind: i32,
    pub attributes: Vec<(String, String)>,
    /// `(trace id, span id)` of each link.
    pub links: Vec<(String, String)>,
    /// 0 unset, 1 ok, 2 error.
    pub status: i32,
    pub start_ns: u64,
    pub end_ns: u64,
}

pub const SERVER: i32 = 2;
pub const CLIENT: i32 = 3;
pub const PRODUCER: i32 = 4;
pub const INTERNAL: i32 = 1;

impl Span {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    spans: Mutex<Vec<Span>>,
    /// Each request's headers, as `name: value` lines.
    requests: Mutex<Vec<Vec<(String, String)>>>,
    /// 0 answer, 1 answer 503, 2 never answer.
    mode: AtomicU8,
}

pub struct Collector {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Collector {
    pub async fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the OTLP receiver");
        let addr = listener.local_addr().expect("receiver address");
        let state = Arc::new(State::default());
        let task = tokio::spawn(serve(listener, Arc::clone(&state)));
        Collector { addr, state, task }
    }

    /// The base endpoint, as `[tracing] otlp_endpoint` takes it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers every export with `503`.
    pub fn refuse(&self) {
        self.state.mode.store(1, Ordering::SeqCst);
    }

    /// Takes every export and never answers.
    pub fn hang(&self) {
        self.state.mode.store(2, Ordering::SeqCst);
    }

    pub fn spans(&self) -> Vec<Span> {
        self.state.spans.lock().expect("spans").clone()
    }

    /// The headers of every export request so far.
    pub fn requests(&self) -> Vec<Vec<(String, String)>> {
        self.state.requests.lock().expect("requests").clone()
    }

    /// Waits until a span satisfies `pred`; panics with what arrived if none does.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Span) -> bool) -> Span {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(span) = self.spans().into_iter().find(|s| pred(s)) {
                return span;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "no span {what} within {WAIT:?}; received:\n{}",
                    describe(&self.spans())
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every span of one trace.
    pub fn trace(&self, trace_id: &str) -> Vec<Span> {
        self.spans()
            .into_iter()
            .filter(|s| s.trace_id == trace_id)
            .collect()
    }
}

impl Collector {
    /// What the app's own OpenTelemetry SDK does with the `traceparent` it
    /// received: a server span of service `app` whose parent is the span the
    /// header names, posted to this receiver as an OTLP/HTTP export built
    /// with the official types. Returns its span id (hex); the receiver
    /// holds the span by then (it keeps spans before it answers).
    pub async fn post_app_span(&self, traceparent: &str) -> String {
        use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
        use opentelemetry_proto::tonic::resource::v1::Resource;
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as ProtoSpan};
        let parts: Vec<&str> = traceparent.split('-').collect();
        let trace_id = hex::decode(parts[1]).expect("trace id");
        let parent = hex::decode(parts[2]).expect("span id");
        let span_id: [u8; 8] = rand::random();
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![KeyValue {
                        key: "service.name".into(),
                        value: Some(AnyValue {
                            value: Some(any_value::Value::StringValue("app".into())),
                        }),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![ProtoSpan {
                        trace_id,
                        span_id: span_id.to_vec(),
                        parent_span_id: parent,
                        name: "POST /webhooks".into(),
                        kind: SERVER,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let answer = super::http(
            http::Method::POST,
            &format!("{}/v1/traces", self.url()),
            &[(
                "content-type".to_owned(),
                "application/x-protobuf".to_owned(),
            )],
            request.encode_to_vec(),
        )
        .await;
        assert_eq!(answer.status, 200);
        hex::encode(span_id)
    }
}

impl Collector {
    /// Asserts that trace `trace_id` is connected (see [`assert_connected`])
    /// and holds the app's span `app_span`; returns its spans.
    pub fn assert_joined(&self, trace_id: &str, app_span: &str) -> Vec<Span> {
        let spans = self.trace(trace_id);
        assert_connected(&spans);
        assert!(
            spans
                .iter()
                .any(|s| s.span_id == app_span && s.service_name == "app"),
            "the app's span {app_span} is not in the trace:\n{}",
            describe(&spans)
        );
        spans
    }
}

/// Asserts that `spans` are one connected trace: one root, and every other
/// span's parent among them.
pub fn assert_connected(spans: &[Span]) {
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one root:\n{}", describe(spans));
    for span in spans {
        assert!(
            span.parent_span_id.is_empty()
                || spans.iter().any(|p| p.span_id == span.parent_span_id),
            "span {} ({}) has its parent outside the trace:\n{}",
            span.span_id,
            span.name,
            describe(spans)
        );
        assert_eq!(span.trace_id, roots[0].trace_id);
    }
}

/// One line per span, for failure messages.
pub fn describe(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| {
            format!(
                "{} {} parent={} kind={} name={:?} status={} attrs={:?} links={:?}",
                s.trace_id,
                s.span_id,
                s.parent_span_id,
                s.kind,
                s.name,
                s.status,
                s.attributes,
                s.links
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = Arc::clone(&state);
        connections.spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(answer(&state, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    state.requests.lock().expect("requests").push(headers);
    match state.mode.load(Ordering::SeqCst) {
        1 => return status(StatusCode::SERVICE_UNAVAILABLE, Bytes::new()),
        2 => std::future::pending::<()>().await,
        _ => {}
    }
    let wrong_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_none_or(|v| v.as_bytes() != b"application/x-protobuf");
    if request.uri().path() != "/v1/traces" || wrong_type {
        return status(StatusCode::NOT_FOUND, Bytes::new());
    }
    let Ok(body) = request.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST, Bytes::new());
    };
    let Ok(export) = ExportTraceServiceRequest::decode(body.to_bytes()) else {
        return status(StatusCode::BAD_REQUEST, Bytes::new());
    };
    let mut spans = Vec::new();
    for resource_spans in export.resource_spans {
        let service_name = resource_spans
            .resource
            .as_ref()
            .and_then(|r| {
                r.attributes
                    .iter()
                    .find(|kv| kv.key == "service.name")
                    .map(value_text)
            })
            .unwrap_or_default();
        for scope_spans in resource_spans.scope_spans {
            let scope = scope_spans.scope.map(|s| s.name).unwrap_or_default();
            for s in scope_spans.spans {
                spans.push(Span {
                    service_name: service_name.clone(),
                    scope: scope.clone(),
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent_span_id: hex::encode(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    attributes: s
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), value_text(kv)))
                        .collect(),
                    links: s
                        .links
                        .iter()
                        .map(|l| (hex::encode(&l.trace_id), hex::encode(&l.span_id)))
                        .collect(),
                    status: s.status.map(|st| st.code).unwrap_or_default(),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                });
            }
        }
    }
    state.spans.lock().expect("spans").extend(spans);
    let reply = ExportTraceServiceResponse {
        partial_success: None,
    };
    status(StatusCode::OK, Bytes::from(reply.encode_to_vec()))
}

fn value_text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v: &AnyValue| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn status(code: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-protobuf"),
    );
    response
}
