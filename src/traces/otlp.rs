//! Spans as an OTLP `ExportTraceServiceRequest`, in protobuf, written
//! straight from [`Record`]s with prost's wire primitives (keys, varints).
//!
//! The message layout and field numbers are those of
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto` and
//! `opentelemetry/proto/trace/v1/trace.proto` (OTLP 1.x): one
//! `ResourceSpans` (the resource: `service.name`, `service.version`), one
//! `ScopeSpans` (scope `hookgate`), then the spans. The tests decode the
//! output with the official generated types.
//!
//! Every length is known before it is written: a nested message is encoded
//! into a scratch buffer first, so no length is ever guessed. Text comes
//! from `&str` (valid UTF-8) and is already cut to [`super::MAX_TEXT`].

use bytes::BufMut;
use prost::encoding::{WireType, encode_key, encode_varint};

use super::{Record, Value};

/// `Span.flags`: the sampled trace flag, and whether the parent is remote
/// (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`, `…_IS_REMOTE_MASK`).
const SAMPLED: u32 = 0x01;
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;
/// `Status.code`: `STATUS_CODE_ERROR`.
const STATUS_ERROR: u64 = 2;

/// What every batch says of where its spans come from.
#[derive(Debug, Clone)]
pub struct Origin {
    pub service_name: String,
    pub service_version: &'static str,
    pub scope: &'static str,
}

/// One export request holding `spans`.
pub fn request(origin: &Origin, spans: &[Box<Record>]) -> Vec<u8> {
    let mut scratch = Vec::with_capacity(512);
    // ScopeSpans: scope = 1, spans = 2.
    let mut scope_spans = Vec::with_capacity(spans.len() * 400 + 64);
    let mut scope = Vec::with_capacity(32);
    text(1, origin.scope, &mut scope);
    text(2, origin.service_version, &mut scope);
    nested(1, &scope, &mut scope_spans);
    for record in spans {
        scratch.clear();
        span(record, &mut scratch);
        nested(2, &scratch, &mut scope_spans);
    }
    // Resource: attributes = 1.
    let mut resource = Vec::with_capacity(96);
    scratch.clear();
    key_value(
        "service.name",
        &Value::Text(origin.service_name.clone().into()),
        &mut scratch,
    );
    nested(1, &scratch, &mut resource);
    scratch.clear();
    key_value(
        "service.version",
        &Value::Text(origin.service_version.into()),
        &mut scratch,
    );
    nested(1, &scratch, &mut resource);
    // ResourceSpans: resource = 1, scope_spans = 2.
    let mut resource_spans = Vec::with_capacity(scope_spans.len() + resource.len() + 16);
    nested(1, &resource, &mut resource_spans);
    nested(2, &scope_spans, &mut resource_spans);
    // ExportTraceServiceRequest: resource_spans = 1.
    let mut out = Vec::with_capacity(resource_spans.len() + 8);
    nested(1, &resource_spans, &mut out);
    out
}

/// A `Span` message's fields.
fn span(r: &Record, out: &mut Vec<u8>) {
    bytes(1, &r.trace_id, out);
    bytes(2, &r.span_id, out);
    if r.parent_span_id != [0; 8] {
        bytes(4, &r.parent_span_id, out);
    }
    text(5, &r.name, out);
    varint(6, r.kind as u64, out);
    fixed64(7, r.start, out);
    fixed64(8, r.end, out);
    let mut attribute = Vec::with_capacity(64);
    for (key, value) in &r.attributes {
        attribute.clear();
        key_value(key, value, &mut attribute);
        nested(9, &attribute, out);
    }
    if r.dropped_attributes > 0 {
        varint(10, u64::from(r.dropped_attributes), out);
    }
    if let Some((trace_id, span_id)) = &r.link {
        // Link: trace_id = 1, span_id = 2, flags = 6.
        let mut link = Vec::with_capacity(40);
        bytes(1, trace_id, &mut link);
        bytes(2, span_id, &mut link);
        fixed32(6, HAS_IS_REMOTE | IS_REMOTE, &mut link);
        nested(13, &link, out);
    }
    if let Some(message) = &r.error {
        // Status: message = 2, code = 3.
        let mut status = Vec::with_capacity(message.len() + 8);
        text(2, message, &mut status);
        varint(3, STATUS_ERROR, &mut status);
        nested(15, &status, out);
    }
    let remote = if r.parent_remote { IS_REMOTE } else { 0 };
    fixed32(16, SAMPLED | HAS_IS_REMOTE | remote, out);
}

/// A `KeyValue` message's fields: key = 1, value = 2 (an `AnyValue`:
/// string_value = 1, int_value = 3).
fn key_value(key: &str, value: &Value, out: &mut Vec<u8>) {
    text(1, key, out);
    let mut any = Vec::with_capacity(32);
    match value {
        Value::Text(t) => text(1, t, &mut any),
        Value::Int(i) => varint(3, *i as u64, &mut any),
    }
    nested(2, &any, out);
}

fn nested(tag: u32, message: &[u8], out: &mut Vec<u8>) {
    bytes(tag, message, out);
}

fn bytes(tag: u32, value: &[u8], out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(value.len() as u64, out);
    out.put_slice(value);
}

fn text(tag: u32, value: &str, out: &mut Vec<u8>) {
    bytes(tag, value.as_bytes(), out);
}

fn varint(tag: u32, value: u64, out: &mut Vec<u8>) {
    encode_key(tag, WireType::Varint, out);
    encode_varint(value, out);
}

fn fixed64(tag: u32, value: u64, out: &mut Vec<u8>) {
    encode_key(tag, WireType::SixtyFourBit, out);
    out.put_u64_le(value);
}

fn fixed32(tag: u32, value: u32, out: &mut Vec<u8>) {
    encode_key(tag, WireType::ThirtyTwoBit, out);
    out.put_u32_le(value);
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use prost::Message;

    use super::*;
    use crate::traces::Kind;

    fn record(n: u8) -> Box<Record> {
        Box::new(Record {
            trace_id: [n; 16],
            span_id: [n + 1; 8],
            parent_span_id: if n == 1 { [0; 8] } else { [9; 8] },
            parent_remote: n == 3,
            name: Cow::Owned(format!("POST /webhooks/{n}")),
            kind: if n == 1 { Kind::Server } else { Kind::Client },
            start: 1_700_000_000_000_000_000 + u64::from(n),
            end: 1_700_000_000_000_500_000 + u64::from(n),
            attributes: vec![
                ("hookgate.source", Value::Text(Cow::Borrowed("github"))),
                (
                    "url.path",
                    Value::Text(Cow::Owned("/webhooks/é\u{0}\"<x>".into())),
                ),
                ("http.response.status_code", Value::Int(200)),
                ("hookgate.delivery.attempt", Value::Int(-1)),
            ],
            dropped_attributes: u32::from(n == 2),
            link: (n == 1).then_some(([0xab; 16], [0xcd; 8])),
            error: (n == 3).then(|| Cow::Borrowed("upstream_timeout")),
        })
    }

    #[test]
    fn the_official_types_read_every_field_back() {
        let origin = Origin {
            service_name: "hookgate-test".into(),
            service_version: "1.2.3",
            scope: "hookgate",
        };
        let spans: Vec<Box<Record>> = (1..=3).map(record).collect();
        let bytes = request(&origin, &spans);
        let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("valid OTLP");
        assert_eq!(decoded.resource_spans.len(), 1);
        let rs = &decoded.resource_spans[0];
        let resource: Vec<(String, String)> = rs
            .resource
            .as_ref()
            .expect("a resource")
            .attributes
            .iter()
            .map(|kv| {
                let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(any_value::Value::StringValue(s)) => s.clone(),
                    other => panic!("{other:?}"),
                };
                (kv.key.clone(), v)
            })
            .collect();
        assert_eq!(
            resource,
            vec![
                ("service.name".into(), "hookgate-test".into()),
                ("service.version".into(), "1.2.3".into())
            ]
        );
        let scope = &rs.scope_spans[0];
        let s = scope.scope.as_ref().expect("a scope");
        assert_eq!((s.name.as_str(), s.version.as_str()), ("hookgate", "1.2.3"));
        assert_eq!(scope.spans.len(), 3);
        for (got, want) in scope.spans.iter().zip(&spans) {
            assert_eq!(got.trace_id, want.trace_id);
            assert_eq!(got.span_id, want.span_id);
            let parent: &[u8] = if want.parent_span_id == [0; 8] {
                &[]
            } else {
                &want.parent_span_id
            };
            assert_eq!(got.parent_span_id, parent);
            assert_eq!(got.name, want.name);
            assert_eq!(got.kind, want.kind as i32);
            assert_eq!(got.start_time_unix_nano, want.start);
            assert_eq!(got.end_time_unix_nano, want.end);
            assert_eq!(got.dropped_attributes_count, want.dropped_attributes);
            let attrs: Vec<(String, String)> = got
                .attributes
                .iter()
                .map(|kv| {
                    let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(any_value::Value::StringValue(s)) => s.clone(),
                        Some(any_value::Value::IntValue(i)) => i.to_string(),
                        other => panic!("{other:?}"),
                    };
                    (kv.key.clone(), v)
                })
                .collect();
            assert_eq!(
                attrs,
                vec![
                    ("hookgate.source".into(), "github".into()),
                    ("url.path".into(), "/webhooks/é\u{0}\"<x>".into()),
                    ("http.response.status_code".into(), "200".into()),
                    ("hookgate.delivery.attempt".into(), "-1".into()),
                ]
            );
            let remote = if want.parent_remote { IS_REMOTE } else { 0 };
            assert_eq!(got.flags, SAMPLED | HAS_IS_REMOTE | remote);
            match &want.link {
                Some((t, s)) => {
                    assert_eq!(got.links.len(), 1);
                    assert_eq!(&got.links[0].trace_id, t);
                    assert_eq!(&got.links[0].span_id, s);
                }
                None => assert!(got.links.is_empty()),
            }
            match &want.error {
                Some(message) => {
                    let status = got.status.as_ref().expect("a status");
                    assert_eq!(status.code, 2);
                    assert_eq!(status.message, message.as_ref());
                }
                None => assert_eq!(got.status, None),
            }
        }
    }
}
