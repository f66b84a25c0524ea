//! The envelope: a verified request as hookgate keeps it for later delivery
//! (the queue) or for an operator (the dead-letter stream), and what
//! hookgate knows about it.

use std::net::IpAddr;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use crate::config::{Delivery, Source};
use crate::forward;
use crate::ordering::Gate;
use crate::seal::{Binding, Keyring, Unopenable};
use crate::time::now_ms;
use crate::traces::Parent;

/// A header value as stored: text when it is UTF-8, base64 otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeaderText {
    Text(String),
    Bytes { base64: String },
}

/// A verified request as hookgate keeps it for later delivery: the raw
/// request (method, path and query, end-to-end headers, body bytes) and what
/// hookgate knows about it. Stored as one value: the metadata as a JSON line,
/// a newline, then the body bytes untouched (JSON escapes every newline in
/// the metadata, so the first one ends it).
///
/// With `[store.encryption]` the payload (path and query, headers, body) is
/// sealed ([`crate::seal`]): the metadata line names the key (`sealed`) and
/// carries no path or header, and the bytes after it are the payload
/// sealed for this record ([`Place`], source, event id, token), whose plain
/// form is `{"uri":…,"headers":[…]}`, a newline, the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique per envelope, so two copies of one event stay distinct members.
    pub token: String,
    pub source: String,
    /// As stamped (`key_safe_id`).
    pub event_id: String,
    #[serde(default)]
    pub event_type: Option<String>,
    /// What the event's nonce is keyed by, when not `event_id` (an unsigned
    /// id: the body's digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce_id: Option<String>,
    /// Whether the signature covers `event_type`, so it may be stamped.
    #[serde(default = "signed_by_default")]
    pub type_signed: bool,
    /// `"forward"` or `"queue"`: how the event came in.
    pub delivery: String,
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub headers: Vec<(String, HeaderText)>,
    #[serde(default)]
    pub peer: Option<IpAddr>,
    /// The sender's signed timestamp (unix seconds), when the scheme signs one.
    #[serde(default)]
    pub signed_at: Option<i64>,
    /// When hookgate received it (unix ms).
    pub received_ms: i64,
    /// Delivery attempts made so far.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_attempt_ms: Option<i64>,
    /// When it became a dead letter (unix ms).
    #[serde(default)]
    pub dead_ms: Option<i64>,
    /// When its next attempt is due (unix ms), once a retry was scheduled:
    /// how long the attempt then waited is counted from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ms: Option<i64>,
    /// The version gate's resource and version, when the source has one.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// The `traceparent` of the request that brought it, when traces were
    /// exported then: its attempts and replays join that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The id of the key that sealed the stored payload; `None`: stored as
    /// it is. Set by [`Envelope::decode`]; [`Envelope::encode`] seals with
    /// the ring it is given, whatever this says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    #[serde(skip)]
    pub body: Bytes,
    /// The sealed payload as stored and why it did not open: written back
    /// as it is, so nothing of it is lost.
    #[serde(skip)]
    closed: Option<(Bytes, Unopenable)>,
}

/// Where a stored envelope lives: what its sealed payload is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The queue, its retries included.
    Queue,
    /// The dead letters.
    DeadLetter,
}

impl Place {
    fn word(self) -> &'static str {
        match self {
            Place::Queue => "queue",
            Place::DeadLetter => "dead_letter",
        }
    }
}

/// The sealed part's plain form, before the body.
#[derive(Serialize)]
struct Head<'a> {
    uri: &'a str,
    headers: &'a [(String, HeaderText)],
}

/// An envelope's metadata line when its payload is sealed: the fields of
/// [`Envelope`] (same names, same rules) but no path or header, and the
/// sealing key's id.
#[derive(Serialize)]
struct Shell<'a> {
    token: &'a str,
    source: &'a str,
    event_id: &'a str,
    event_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce_id: Option<&'a str>,
    type_signed: bool,
    delivery: &'a str,
    method: &'a str,
    uri: &'a str,
    headers: &'a [(String, HeaderText)],
    peer: Option<IpAddr>,
    signed_at: Option<i64>,
    received_ms: i64,
    attempts: u32,
    last_error: Option<&'a str>,
    last_attempt_ms: Option<i64>,
    dead_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    due_ms: Option<i64>,
    resource: Option<&'a str>,
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<&'a str>,
    sealed: &'a str,
}

#[derive(Deserialize)]
struct OwnedHead {
    uri: String,
    headers: Vec<(String, HeaderText)>,
}

fn signed_by_default() -> bool {
    true
}

/// `meta`'s JSON line, a newline, then `rest`.
fn joined(meta: &impl Serialize, rest: &[u8]) -> Vec<u8> {
    // Serializing plain strings and numbers cannot fail.
    let line = serde_json::to_vec(meta).unwrap_or_default();
    let mut out = Vec::with_capacity(line.len() + 1 + rest.len());
    out.extend_from_slice(&line);
    out.push(b'\n');
    out.extend_from_slice(rest);
    out
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("no metadata line")]
    NoMetadata,
    #[error("metadata is not valid: {0}")]
    Metadata(String),
    #[error("the opened payload is not valid: {0}")]
    Payload(String),
}

/// What hookgate vouches for about a request it keeps.
#[derive(Clone, Copy)]
pub struct Received<'a> {
    pub source: &'a Source,
    pub event_id: &'a str,
    /// What its nonce is keyed by.
    pub nonce_id: &'a str,
    pub event_type: Option<&'a str>,
    pub signed_at: Option<i64>,
    pub peer: Option<IpAddr>,
    pub gate: Option<&'a Gate>,
}

impl Envelope {
    /// Captures a verified request. Hop-by-hop headers are left out, and
    /// spoofable ones (`forward::strip_spoofable`) were removed when it arrived.
    pub fn new(parts: &http::request::Parts, body: Bytes, r: Received<'_>) -> Envelope {
        let mut headers = parts.headers.clone();
        forward::strip_hop_by_hop(&mut headers);
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let text = match value.to_str() {
                    Ok(s) => HeaderText::Text(s.to_owned()),
                    Err(_) => HeaderText::Bytes {
                        base64: base64::engine::general_purpose::STANDARD.encode(value.as_bytes()),
                    },
                };
                (name.as_str().to_owned(), text)
            })
            .collect();
        Envelope {
            token: crate::store::lease_token(),
            source: r.source.name.clone(),
            event_id: r.event_id.to_owned(),
            event_type: r.event_type.map(str::to_owned),
            nonce_id: (r.nonce_id != r.event_id).then(|| r.nonce_id.to_owned()),
            type_signed: r.source.scheme.signs_event_type(),
            delivery: match r.source.delivery {
                Delivery::Forward => "forward",
                Delivery::Queue => "queue",
            }
            .to_owned(),
            method: parts.method.as_str().to_owned(),
            uri: parts
                .uri
                .path_and_query()
                .map(|pq| pq.as_str().to_owned())
                .unwrap_or_else(|| "/".to_owned()),
            headers,
            peer: r.peer,
            signed_at: r.signed_at,
            received_ms: now_ms(),
            attempts: 0,
            last_error: None,
            last_attempt_ms: None,
            dead_ms: None,
            due_ms: None,
            resource: r.gate.map(|g| g.resource.clone()),
            version: r.gate.map(|g| g.version.to_string()),
            trace: None,
            sealed: None,
            body,
            closed: None,
        }
    }

    /// Keeps the request's server span, so later attempts join its trace.
    pub fn traced(mut self, span: Option<Parent>) -> Envelope {
        self.trace = span.map(|p| p.traceparent());
        self
    }

    /// What the event's nonce is keyed by.
    pub fn nonce_id(&self) -> &str {
        self.nonce_id.as_deref().unwrap_or(&self.event_id)
    }

    /// What a sealed payload of this envelope in `kind` is bound to.
    fn binding(&self, kind: Place) -> Binding<'_> {
        Binding {
            kind: kind.word(),
            source: &self.source,
            event_id: &self.event_id,
            token: &self.token,
        }
    }

    /// Why the stored payload did not open, when it did not: the envelope
    /// then has no path, headers or body, and is never delivered.
    pub fn unopenable(&self) -> Option<&Unopenable> {
        self.closed.as_ref().map(|(_, why)| why)
    }

    /// The metadata alone, naming key `id`: what a sealed envelope's first
    /// line holds (no path, no header).
    fn shell<'a>(&'a self, id: &'a str) -> Shell<'a> {
        Shell {
            token: &self.token,
            source: &self.source,
            event_id: &self.event_id,
            event_type: self.event_type.as_deref(),
            nonce_id: self.nonce_id.as_deref(),
            type_signed: self.type_signed,
            delivery: &self.delivery,
            method: &self.method,
            uri: "",
            headers: &[],
            peer: self.peer,
            signed_at: self.signed_at,
            received_ms: self.received_ms,
            attempts: self.attempts,
            last_error: self.last_error.as_deref(),
            last_attempt_ms: self.last_attempt_ms,
            dead_ms: self.dead_ms,
            due_ms: self.due_ms,
            resource: self.resource.as_deref(),
            version: self.version.as_deref(),
            trace: self.trace.as_deref(),
            sealed: id,
        }
    }

    /// The stored form for `kind`: JSON metadata, `\n`, then the body, or
    /// the payload sealed under the first key of `keys` when there is one.
    /// A payload that did not open is written back as it was stored.
    pub fn encode(&self, keys: &Keyring, kind: Place) -> Vec<u8> {
        if let (Some((blob, _)), Some(id)) = (&self.closed, &self.sealed) {
            return joined(&self.shell(id), blob);
        }
        let Some(id) = keys.sealing() else {
            if self.sealed.is_some() {
                let mut plain = self.clone();
                plain.sealed = None;
                return joined(&plain, &plain.body);
            }
            return joined(self, &self.body);
        };
        let head = Head {
            uri: &self.uri,
            headers: &self.headers,
        };
        // One buffer: the metadata, the nonce, the payload sealed in place,
        // the tag. Serializing plain strings cannot fail.
        let mut out =
            Vec::with_capacity(512 + self.uri.len() + 64 * self.headers.len() + self.body.len());
        let _ = serde_json::to_writer(&mut out, &self.shell(id));
        out.push(b'\n');
        let sealed = keys.seal_into(self.binding(kind), &mut out, |out| {
            let _ = serde_json::to_writer(&mut *out, &head);
            out.push(b'\n');
            out.extend_from_slice(&self.body);
        });
        match sealed {
            Some(_) => out,
            None => joined(self, &self.body),
        }
    }

    /// Reads a stored envelope of `kind`, opening a sealed payload with
    /// `keys`. A payload that does not open is not an error: the envelope
    /// comes back with its metadata and [`Envelope::unopenable`] says why.
    pub fn decode(bytes: &[u8], keys: &Keyring, kind: Place) -> Result<Envelope, DecodeError> {
        let split = bytes
            .iter()
            .position(|b| *b == b'\n')
            .ok_or(DecodeError::NoMetadata)?;
        let mut envelope: Envelope = serde_json::from_slice(&bytes[..split])
            .map_err(|e| DecodeError::Metadata(e.to_string()))?;
        let rest = &bytes[split + 1..];
        let Some(id) = envelope.sealed.clone() else {
            envelope.body = Bytes::copy_from_slice(rest);
            return Ok(envelope);
        };
        let plain = match keys.open(&id, envelope.binding(kind), rest) {
            Ok(plain) => plain,
            Err(why) => {
                envelope.closed = Some((Bytes::copy_from_slice(rest), why));
                return Ok(envelope);
            }
        };
        let split = plain
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| DecodeError::Payload("no newline".to_owned()))?;
        let head: OwnedHead = serde_json::from_slice(&plain[..split])
            .map_err(|e| DecodeError::Payload(e.to_string()))?;
        envelope.uri = head.uri;
        envelope.headers = head.headers;
        envelope.body = Bytes::from(plain).slice(split + 1..);
        Ok(envelope)
    }

    /// The key id a stored value names (`None`: stored as it is), read from
    /// its metadata line alone.
    pub fn sealed_with(bytes: &[u8]) -> Result<Option<String>, DecodeError> {
        #[derive(Deserialize)]
        struct Sealed {
            #[serde(default)]
            sealed: Option<String>,
        }
        let split = bytes
            .iter()
            .position(|b| *b == b'\n')
            .ok_or(DecodeError::NoMetadata)?;
        let meta: Sealed = serde_json::from_slice(&bytes[..split])
            .map_err(|e| DecodeError::Metadata(e.to_string()))?;
        Ok(meta.sealed)
    }

    /// The version gate position, when the source had one.
    pub fn gate(&self) -> Option<Gate> {
        Some(Gate {
            resource: self.resource.clone()?,
            version: self.version.as_deref()?.parse().ok()?,
        })
    }

    /// The stored headers, decoded; a value that no longer decodes is skipped.
    pub fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
                continue;
            };
            let value = match value {
                HeaderText::Text(s) => HeaderValue::from_str(s).ok(),
                HeaderText::Bytes { base64 } => base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .ok()
                    .and_then(|b| HeaderValue::from_bytes(&b).ok()),
            };
            if let Some(value) = value {
                map.append(name, value);
            }
        }
        map
    }

    /// The stored request's method, target and headers, ready to send again.
    pub fn request_parts(&self) -> Result<http::request::Parts, String> {
        let request = http::Request::builder()
            .method(self.method.as_str())
            .uri(self.uri.as_str())
            .body(())
            .map_err(|e| format!("the stored request is invalid: {e}"))?;
        let (mut parts, ()) = request.into_parts();
        parts.headers = self.header_map();
        Ok(parts)
    }

    /// What the store keeps readable beside the encoded envelope.
    pub fn meta(&self) -> crate::store::Meta {
        crate::store::Meta {
            source: self.source.clone(),
            event_id: self.event_id.clone(),
            event_type: self.event_type.clone(),
            delivery: self.delivery.clone(),
            attempts: i64::from(self.attempts),
            last_error: self.last_error.clone(),
            received_ms: self.received_ms,
            dead_ms: self.dead_ms,
        }
    }

    /// Seconds since the sender signed it, or since hookgate received it when
    /// the scheme signs no time.
    pub fn age_secs(&self) -> f64 {
        let now = now_ms() as f64 / 1000.0;
        match self.signed_at {
            Some(t) => now - t as f64,
            None => now - self.received_ms as f64 / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(body: &[u8]) -> Envelope {
        let mut e: Envelope = serde_json::from_value(serde_json::json!({
            "token": "t",
            "source": "s",
            "event_id": "evt_1",
            "delivery": "queue",
            "method": "POST",
            "uri": "/hooks/s?x=1",
            "headers": [["content-type", "application/json"], ["x-odd", {"base64": "/w=="}]],
            "received_ms": 1,
        }))
        .expect("envelope");
        e.body = Bytes::copy_from_slice(body);
        e
    }

    fn ring(keys: &[(&str, u8)]) -> Keyring {
        Keyring::new(
            keys.iter()
                .map(|(id, b)| ((*id).to_owned(), [*b; crate::seal::KEY_BYTES]))
                .collect(),
        )
    }

    #[test]
    fn envelopes_keep_binary_bodies_and_odd_headers() {
        let body = b"\x00\xff\n{\"a\":1}\n\r\n";
        let e = envelope(body);
        for keys in [Keyring::default(), ring(&[("k1", 1)])] {
            let back = Envelope::decode(&e.encode(&keys, Place::Queue), &keys, Place::Queue)
                .expect("decode");
            assert_eq!(back.sealed.as_deref(), keys.sealing());
            assert_eq!(
                Envelope {
                    sealed: None,
                    ..back.clone()
                },
                e
            );
            assert_eq!(&back.body[..], body);
            let headers = back.header_map();
            assert_eq!(
                headers.get("x-odd").map(|v| v.as_bytes()),
                Some(&b"\xff"[..])
            );
        }
        let none = Keyring::default();
        assert!(Envelope::decode(b"no newline", &none, Place::Queue).is_err());
    }

    #[test]
    fn a_sealed_envelope_shows_its_metadata_and_nothing_of_its_payload() {
        let mut e = envelope(b"{\"card\":\"4242-MARKER\"}");
        e.headers.push((
            "x-customer".into(),
            HeaderText::Text("MARKER@example.com".into()),
        ));
        e.uri = "/hooks/s?email=MARKER".into();
        let keys = ring(&[("2026-12", 1)]);
        let stored = e.encode(&keys, Place::Queue);
        assert!(
            !stored.windows(6).any(|w| w == b"MARKER"),
            "{}",
            String::from_utf8_lossy(&stored)
        );
        let text = String::from_utf8_lossy(&stored);
        assert!(text.contains(r#""event_id":"evt_1""#), "{text}");
        assert!(text.contains(r#""sealed":"2026-12""#), "{text}");
        assert_eq!(
            Envelope::sealed_with(&stored).expect("meta").as_deref(),
            Some("2026-12")
        );
        // Opens only as what it was written for.
        let dead = Envelope::decode(&stored, &keys, Place::DeadLetter).expect("meta");
        assert_eq!(
            dead.unopenable(),
            Some(&Unopenable::Refused("2026-12".into()))
        );
        // A retired key's payload opens with the key listed second, and is
        // written back under the first.
        let rotated = ring(&[("2027-06", 2), ("2026-12", 1)]);
        let back = Envelope::decode(&stored, &rotated, Place::Queue).expect("decode");
        assert!(back.unopenable().is_none());
        assert_eq!(back.uri, e.uri);
        let again = back.encode(&rotated, Place::Queue);
        assert_eq!(
            Envelope::sealed_with(&again).expect("meta").as_deref(),
            Some("2027-06")
        );
    }

    #[test]
    fn a_sealed_metadata_line_is_the_plain_one_without_path_or_headers() {
        let mut e = envelope(b"body");
        e.nonce_id = Some("sha".into());
        e.due_ms = Some(5);
        e.trace = Some("00-aa-bb-01".into());
        e.last_error = Some("app answered 503".into());
        let keys = ring(&[("k", 1)]);
        let stored = e.encode(&keys, Place::Queue);
        let line = &stored[..stored.iter().position(|b| *b == b'\n').expect("nl")];
        let sealed: serde_json::Value = serde_json::from_slice(line).expect("json");
        let mut plain = serde_json::to_value(&e).expect("json");
        plain["uri"] = "".into();
        plain["headers"] = serde_json::json!([]);
        plain["sealed"] = "k".into();
        assert_eq!(sealed, plain);
    }

    #[test]
    fn a_payload_that_does_not_open_is_written_back_as_it_was() {
        let keys = ring(&[("old", 1)]);
        let stored = envelope(b"body").encode(&keys, Place::Queue);
        let mut flipped = stored.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x80;
        let other = ring(&[("new", 2)]);
        for (bytes, ring, why) in [
            (&stored, &other, Unopenable::NoKey("old".into())),
            (&flipped, &keys, Unopenable::Refused("old".into())),
        ] {
            let mut e = Envelope::decode(bytes, ring, Place::Queue).expect("meta");
            assert_eq!(e.unopenable(), Some(&why));
            assert!(e.body.is_empty() && e.headers.is_empty());
            e.attempts = 3;
            let back = e.encode(ring, Place::Queue);
            let rest = |b: &[u8]| b[b.iter().position(|c| *c == b'\n').expect("nl")..].to_vec();
            assert_eq!(rest(&back), rest(bytes), "the sealed part unchanged");
            // Adding the key back makes it whole.
            let whole = Envelope::decode(&back, &keys, Place::Queue).expect("decode");
            if why == Unopenable::NoKey("old".into()) {
                assert_eq!(&whole.body[..], b"body");
                assert_eq!(whole.attempts, 3);
            }
        }
    }
}
