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
//! Every length is computed before it is written (`*_len` beside each
//! writer), so the request is written once into one buffer and no length is
//! ever guessed. Text comes from `&str` (valid UTF-8) and is already cut to
//! [`super::MAX_TEXT`].

use bytes::BufMut;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

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
#[cfg(test)]
pub fn request(origin: &Origin, spans: &[Box<Record>]) -> Vec<u8> {
    let mut out = Vec::new();
    request_into(origin, spans, &mut out);
    out
}

/// One export request holding `spans`, written into `out` (cleared first;
/// its allocation is reused when large enough).
pub fn request_into(origin: &Origin, spans: &[Box<Record>], out: &mut Vec<u8>) {
    // Resource: attributes = 1 (KeyValue).
    let service = [
        ("service.name", origin.service_name.as_str()),
        ("service.version", origin.service_version),
    ];
    let resource_len: usize = service
        .iter()
        .map(|(k, v)| field_len(1, text_kv_len(k, v)))
        .sum();
    // InstrumentationScope: name = 1, version = 2.
    let scope_len = text_len(1, origin.scope) + text_len(2, origin.service_version);
    // ScopeSpans: scope = 1, spans = 2.
    let span_lens: Vec<usize> = spans.iter().map(|r| span_len(r)).collect();
    let scope_spans_len =
        field_len(1, scope_len) + span_lens.iter().map(|l| field_len(2, *l)).sum::<usize>();
    // ResourceSpans: resource = 1, scope_spans = 2.
    let resource_spans_len = field_len(1, resource_len) + field_len(2, scope_spans_len);

    // ExportTraceServiceRequest: resource_spans = 1.
    out.clear();
    out.reserve_exact(field_len(1, resource_spans_len));
    header(1, resource_spans_len, out);
    header(1, resource_len, out);
    for (k, v) in service {
        header(1, text_kv_len(k, v), out);
        text_kv(k, v, out);
    }
    header(2, scope_spans_len, out);
    header(1, scope_len, out);
    text(1, origin.scope, out);
    text(2, origin.service_version, out);
    for (record, len) in spans.iter().zip(span_lens) {
        header(2, len, out);
        span(record, out);
    }
}

/// The span's name: `{name} {http.route}` for a server span that has a route.
fn name_parts(r: &Record) -> (&str, Option<&str>) {
    let route = r.route.then(|| {
        r.attributes.iter().find_map(|(k, v)| match v {
            Value::Text(t) if *k == "http.route" => Some(t.as_ref()),
            _ => None,
        })
    });
    (&r.name, route.flatten())
}

fn name_len(r: &Record) -> usize {
    match name_parts(r) {
        (name, Some(route)) => name.len() + 1 + route.len(),
        (name, None) => name.len(),
    }
}

/// A `Span` message's length.
fn span_len(r: &Record) -> usize {
    let mut len = field_len(1, 16) + field_len(2, 8);
    if r.parent_span_id != [0; 8] {
        len += field_len(4, 8);
    }
    len += field_len(5, name_len(r));
    len += key_len(6) + encoded_len_varint(r.kind as u64);
    len += 2 * (key_len(7) + 8);
    len += r
        .attributes
        .iter()
        .map(|(k, v)| field_len(9, kv_len(k, v)))
        .sum::<usize>();
    if r.dropped_attributes > 0 {
        len += key_len(10) + encoded_len_varint(u64::from(r.dropped_attributes));
    }
    if r.link.is_some() {
        len += field_len(13, link_len());
    }
    if let Some(message) = &r.error {
        len += field_len(15, status_len(message));
    }
    len + key_len(16) + 4
}

/// A `Span` message's fields.
fn span(r: &Record, out: &mut Vec<u8>) {
    bytes(1, &r.trace_id, out);
    bytes(2, &r.span_id, out);
    if r.parent_span_id != [0; 8] {
        bytes(4, &r.parent_span_id, out);
    }
    header(5, name_len(r), out);
    match name_parts(r) {
        (name, Some(route)) => {
            out.put_slice(name.as_bytes());
            out.put_u8(b' ');
            out.put_slice(route.as_bytes());
        }
        (name, None) => out.put_slice(name.as_bytes()),
    }
    varint(6, r.kind as u64, out);
    fixed64(7, r.start, out);
    fixed64(8, r.end, out);
    for (key, value) in &r.attributes {
        header(9, kv_len(key, value), out);
        key_value(key, value, out);
    }
    if r.dropped_attributes > 0 {
        varint(10, u64::from(r.dropped_attributes), out);
    }
    if let Some((trace_id, span_id, sampled)) = &r.link {
        // Link: trace_id = 1, span_id = 2, flags = 6 (the linked context's
        // trace flags, and that it is remote).
        header(13, link_len(), out);
        bytes(1, trace_id, out);
        bytes(2, span_id, out);
        let flags = if *sampled { SAMPLED } else { 0 };
        fixed32(6, flags | HAS_IS_REMOTE | IS_REMOTE, out);
    }
    if let Some(message) = &r.error {
        // Status: message = 2, code = 3.
        header(15, status_len(message), out);
        text(2, message, out);
        varint(3, STATUS_ERROR, out);
    }
    let remote = if r.parent_remote { IS_REMOTE } else { 0 };
    fixed32(16, SAMPLED | HAS_IS_REMOTE | remote, out);
}

fn link_len() -> usize {
    field_len(1, 16) + field_len(2, 8) + key_len(6) + 4
}

fn status_len(message: &str) -> usize {
    text_len(2, message) + key_len(3) + encoded_len_varint(STATUS_ERROR)
}

/// A `KeyValue`: key = 1, value = 2 (an `AnyValue`: string_value = 1,
/// int_value = 3).
fn kv_len(key: &str, value: &Value) -> usize {
    text_len(1, key) + field_len(2, any_len(value))
}

fn any_len(value: &Value) -> usize {
    match value {
        Value::Text(t) => text_len(1, t),
        Value::Int(i) => key_len(3) + encoded_len_varint(*i as u64),
    }
}

fn key_value(key: &str, value: &Value, out: &mut Vec<u8>) {
    text(1, key, out);
    header(2, any_len(value), out);
    match value {
        Value::Text(t) => text(1, t, out),
        Value::Int(i) => varint(3, *i as u64, out),
    }
}

fn text_kv_len(key: &str, value: &str) -> usize {
    text_len(1, key) + field_len(2, text_len(1, value))
}

fn text_kv(key: &str, value: &str, out: &mut Vec<u8>) {
    text(1, key, out);
    header(2, text_len(1, value), out);
    text(1, value, out);
}

/// A length-delimited field's size with its key and length.
fn field_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

fn text_len(tag: u32, value: &str) -> usize {
    field_len(tag, value.len())
}

/// A length-delimited field's key and length; its bytes follow.
fn header(tag: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

fn bytes(tag: u32, value: &[u8], out: &mut Vec<u8>) {
    header(tag, value.len(), out);
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
            name: Cow::Borrowed("POST"),
            route: n == 1,
            kind: if n == 1 { Kind::Server } else { Kind::Client },
            start: 1_700_000_000_000_000_000 + u64::from(n),
            end: 1_700_000_000_000_500_000 + u64::from(n),
            attributes: vec![
                ("hookgate.source", Value::Text(Cow::Borrowed("github"))),
                ("http.route", Value::Text(Cow::Borrowed("/webhooks/github"))),
                (
                    "url.path",
                    Value::Text(Cow::Owned("/webhooks/é\u{0}\"<x>".into())),
                ),
                ("http.response.status_code", Value::Int(200)),
                ("hookgate.delivery.attempt", Value::Int(-1)),
            ],
            dropped_attributes: u32::from(n == 2),
            link: (n == 1).then_some(([0xab; 16], [0xcd; 8], true)),
            error: (n == 3).then_some(Cow::Borrowed("upstream_timeout")),
            sampled: true,
            traces: None,
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
        // The same request written into a buffer that is already large
        // enough reuses it.
        let mut reused = Vec::with_capacity(1 << 20);
        request_into(&origin, &spans, &mut reused);
        assert_eq!(reused, bytes);
        assert_eq!(
            reused.capacity(),
            1 << 20,
            "a large enough buffer is reused"
        );
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
            let name = if want.route {
                "POST /webhooks/github"
            } else {
                "POST"
            };
            assert_eq!(got.name, name);
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
                    ("http.route".into(), "/webhooks/github".into()),
                    ("url.path".into(), "/webhooks/é\u{0}\"<x>".into()),
                    ("http.response.status_code".into(), "200".into()),
                    ("hookgate.delivery.attempt".into(), "-1".into()),
                ]
            );
            let remote = if want.parent_remote { IS_REMOTE } else { 0 };
            assert_eq!(got.flags, SAMPLED | HAS_IS_REMOTE | remote);
            match &want.link {
                Some((t, s, _)) => {
                    assert_eq!(got.links.len(), 1);
                    assert_eq!(&got.links[0].trace_id, t);
                    assert_eq!(&got.links[0].span_id, s);
                    assert_eq!(got.links[0].flags, SAMPLED | HAS_IS_REMOTE | IS_REMOTE);
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
