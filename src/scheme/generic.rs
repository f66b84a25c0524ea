//! Generic: a sender described in `[source.generic]` — one signature header
//! (optional prefix, hex or base64), a signed-bytes template over `{id}`,
//! `{timestamp}` and `{body}`, an optional timestamp header that brings the
//! replay window, and where to find the event id and type.
//!
//! Choices where the config leaves room, so operators can predict them:
//!
//! - The template is read literally except for the three placeholders; any
//!   other `{…}` is signed as written. The body is fed to the MAC in place,
//!   byte for byte, whatever its encoding.
//! - `{id}` is rendered from the `event_id` header (the id must be known
//!   before the signature is checked, and the body is not read until then);
//!   `{timestamp}` is the timestamp header's text exactly as sent. A request
//!   lacking either, when the template needs it, is `MalformedSignature`.
//!   [`Generic::validate`] refuses templates that could never be rendered.
//! - `event_id` absent from the config: the id is the SHA-256 of the body.
//!   `event_id` configured but the request carries no usable value there
//!   (header missing or empty; body not JSON, pointer missing, or neither a
//!   string nor a number): `MalformedBody`. The operator said where the id
//!   lives; quietly keying the nonce on something else could let a retry
//!   through as a new event.
//! - `event_type` is optional: wherever it is missing the type is none.
//!
//! Errors name configuration keys (`signature_header`, `timestamp_header`,
//! `event_id`) rather than the configured header names, because the error
//! type only carries static text.

use std::time::Duration;

use http::HeaderMap;

use super::hmac;
use super::{Encoding, Error, Generic, Locator, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "signature_header";
const TIMESTAMP: &str = "timestamp_header";
const EVENT_ID: &str = "event_id";

/// One piece of the `signed_payload` template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'t> {
    Text(&'t [u8]),
    Id,
    Timestamp,
    Body,
}

const PLACEHOLDERS: [(&[u8], Piece<'static>); 3] = [
    (b"{id}", Piece::Id),
    (b"{timestamp}", Piece::Timestamp),
    (b"{body}", Piece::Body),
];

/// Splits the template into literal text and placeholders. Works on bytes so
/// a template with non-ASCII text can't be sliced inside a character.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let bytes = template.as_bytes();
    let mut out = Vec::new();
    let (mut literal_start, mut i) = (0, 0);
    while i < bytes.len() {
        let found = PLACEHOLDERS
            .iter()
            .find(|(name, _)| bytes[i..].starts_with(name));
        match found {
            Some((name, piece)) => {
                if literal_start < i {
                    out.push(Piece::Text(&bytes[literal_start..i]));
                }
                out.push(*piece);
                i += name.len();
                literal_start = i;
            }
            None => i += 1,
        }
    }
    if literal_start < bytes.len() {
        out.push(Piece::Text(&bytes[literal_start..]));
    }
    out
}

/// The signed bytes as slices, in order: the template's text, the id and
/// timestamp as given, the body in place.
fn render<'a>(
    pieces: &[Piece<'a>],
    id: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    body: &'a [u8],
) -> Result<Vec<&'a [u8]>, Error> {
    pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => Ok(text),
            Piece::Id => id.ok_or(Error::MalformedSignature(EVENT_ID)),
            Piece::Timestamp => timestamp.ok_or(Error::MalformedSignature(TIMESTAMP)),
            Piece::Body => Ok(body),
        })
        .collect()
}

fn header<'a>(headers: &'a HeaderMap, name: &http::HeaderName) -> Option<&'a [u8]> {
    headers.get(name).map(|v| v.as_bytes())
}

impl Generic {
    /// Problems that would make every request to this source fail, or make
    /// its signature meaningless. Meant for config validation, so a broken
    /// `[source.generic]` table is reported at load time, not per request.
    pub fn validate(&self) -> Result<(), String> {
        let pieces = pieces(&self.signed_payload);
        if !pieces.contains(&Piece::Body) {
            return Err(
                "signed_payload must contain {body}: otherwise the body is not signed".into(),
            );
        }
        let has_timestamp = pieces.contains(&Piece::Timestamp);
        if has_timestamp && self.timestamp_header.is_none() {
            return Err("signed_payload uses {timestamp} but timestamp_header is not set".into());
        }
        if !has_timestamp && self.timestamp_header.is_some() {
            return Err(
                "timestamp_header is set but signed_payload has no {timestamp}: \
                 the replay window would rest on an unsigned value"
                    .into(),
            );
        }
        if pieces.contains(&Piece::Id) && !matches!(self.event_id, Some(Locator::Header(_))) {
            return Err(
                "signed_payload uses {id}, which needs event_id = { header = \"…\" }".into(),
            );
        }
        Ok(())
    }
}

pub(super) fn verify(
    generic: &Generic,
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value =
        header(headers, &generic.signature_header).ok_or(Error::MissingSignature(SIGNATURE))?;
    let value = match &generic.signature_prefix {
        Some(prefix) => value
            .strip_prefix(prefix.as_bytes())
            .ok_or(Error::MalformedSignature(SIGNATURE))?,
        None => value,
    };
    let signature = match generic.encoding {
        Encoding::Hex => hmac::tag_from_hex(value),
        Encoding::Base64 => hmac::tag_from_base64(value),
    }
    .ok_or(Error::MalformedSignature(SIGNATURE))?;

    let timestamp = match &generic.timestamp_header {
        Some(name) => {
            let text = header(headers, name).ok_or(Error::MalformedSignature(TIMESTAMP))?;
            let ts = hmac::parse_timestamp(text).ok_or(Error::MalformedSignature(TIMESTAMP))?;
            Some((text, ts))
        }
        None => None,
    };
    let id_header = match &generic.event_id {
        Some(Locator::Header(name)) => header(headers, name).filter(|id| !id.is_empty()),
        _ => None,
    };

    let pieces = pieces(&generic.signed_payload);
    let parts = render(&pieces, id_header, timestamp.map(|(text, _)| text), body)?;
    let secret_index = hmac::match_key(keys, &parts, &[signature])?;
    if let Some((_, ts)) = timestamp {
        hmac::check_window(ts, now, tolerance)?;
    }

    let wants_json = matches!(generic.event_id, Some(Locator::Pointer(_)))
        || matches!(generic.event_type, Some(Locator::Pointer(_)));
    let json = if wants_json {
        hmac::parse_json(body)
    } else {
        None
    };
    let event_id = match &generic.event_id {
        None => hmac::body_sha256_hex(body),
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str())
            .ok_or(Error::MalformedBody("event id header is missing"))?,
        Some(Locator::Pointer(pointer)) => json
            .as_ref()
            .and_then(|j| hmac::pointer_id(j, pointer))
            .ok_or(Error::MalformedBody(
                "no event id at the configured pointer",
            ))?,
    };
    let event_type = match &generic.event_type {
        None => None,
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str()),
        Some(Locator::Pointer(pointer)) => {
            json.as_ref().and_then(|j| hmac::pointer_str(j, pointer))
        }
    };
    Ok(Verified {
        event_id,
        event_type,
        timestamp: timestamp.map(|(_, ts)| ts),
        secret_index,
    })
}

/// The configured signature header; the timestamp header when one is
/// configured; the id header when the id lives in a header (`id`, or a fresh
/// random one).
pub(super) fn sign(
    generic: &Generic,
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let id = id.map_or_else(hmac::random_id, str::to_owned);
    let ts = timestamp.to_string();
    let pieces = pieces(&generic.signed_payload);
    let parts: Vec<&[u8]> = pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => text,
            Piece::Id => id.as_bytes(),
            Piece::Timestamp => ts.as_bytes(),
            Piece::Body => body,
        })
        .collect();
    let tag = hmac::tag(key.expose(), &parts);
    let encoded = match generic.encoding {
        Encoding::Hex => hex::encode(tag),
        Encoding::Base64 => hmac::encode_base64(&tag),
    };
    let prefix = generic.signature_prefix.as_deref().unwrap_or("");

    let mut out = vec![(
        generic.signature_header.as_str().to_owned(),
        format!("{prefix}{encoded}"),
    )];
    if let Some(name) = &generic.timestamp_header {
        out.push((name.as_str().to_owned(), ts));
    }
    if let Some(Locator::Header(name)) = &generic.event_id {
        out.push((name.as_str().to_owned(), id));
    }
    out
}

#[cfg(test)]
mod tests {
    use http::HeaderName;

    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, set, signed,
    };
    use super::*;

    fn name(n: &'static str) -> HeaderName {
        HeaderName::from_static(n)
    }

    /// GitHub, described as a generic sender.
    fn github_like() -> Generic {
        Generic {
            signature_header: name("x-hub-signature-256"),
            signature_prefix: Some("sha256=".into()),
            encoding: Encoding::Hex,
            signed_payload: "{body}".into(),
            timestamp_header: None,
            event_id: Some(Locator::Header(name("x-github-delivery"))),
            event_type: Some(Locator::Header(name("x-github-event"))),
        }
    }

    /// Standard Webhooks, described as a generic sender.
    fn standard_like() -> Generic {
        Generic {
            signature_header: name("webhook-signature"),
            signature_prefix: Some("v1,".into()),
            encoding: Encoding::Base64,
            signed_payload: "{id}.{timestamp}.{body}".into(),
            timestamp_header: Some(name("webhook-timestamp")),
            event_id: Some(Locator::Header(name("webhook-id"))),
            event_type: Some(Locator::Pointer("/type".into())),
        }
    }

    /// A sender with everything in the body and no timestamp.
    fn pointer_ids() -> Generic {
        Generic {
            signature_header: name("x-acme-signature"),
            signature_prefix: None,
            encoding: Encoding::Hex,
            signed_payload: "{body}".into(),
            timestamp_header: None,
            event_id: Some(Locator::Pointer("/id".into())),
            event_type: Some(Locator::Pointer("/kind".into())),
        }
    }

    fn scheme(g: Generic) -> Scheme {
        Scheme::Generic(Box::new(g))
    }

    const NOW: i64 = 1_700_000_000;

    // GitHub's published test values, as in github.rs:
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    #[test]
    fn github_docs_vector_through_the_generic_config() {
        let h = headers(&[
            (
                "X-Hub-Signature-256",
                "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            ),
            ("X-GitHub-Delivery", "d-1"),
            ("X-GitHub-Event", "ping"),
        ]);
        let got = scheme(github_like()).verify(
            &[key(b"It's a Secret to Everybody")],
            TOLERANCE,
            &h,
            b"Hello, World!",
            NOW,
        );
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "d-1".into(),
                event_type: Some("ping".into()),
                timestamp: None,
                secret_index: 0,
            })
        );
    }

    // The Standard Webhooks signing vector, as in standard.rs:
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
    // Generic keys are raw bytes, so the key is the base64-decoded secret.
    fn standard_key() -> Secret {
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .expect("the spec's key is base64");
        key(&raw)
    }

    #[test]
    fn standard_webhooks_vector_through_the_generic_config() {
        let h = headers(&[
            ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"),
            ("webhook-timestamp", "1614265330"),
            (
                "webhook-signature",
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ),
        ]);
        let got = scheme(standard_like()).verify(
            &[standard_key()],
            TOLERANCE,
            &h,
            br#"{"test": 2432232314}"#,
            1_614_265_330,
        );
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "msg_p5jXN8AQM9LWM0D4loKWxJek".into(),
                event_type: None,
                timestamp: Some(1_614_265_330),
                secret_index: 0,
            })
        );
        let lines = scheme(standard_like()).sign(
            &standard_key(),
            br#"{"test": 2432232314}"#,
            Some("msg_p5jXN8AQM9LWM0D4loKWxJek"),
            1_614_265_330,
        );
        assert_eq!(
            lines,
            vec![
                (
                    "webhook-signature".to_owned(),
                    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_owned()
                ),
                ("webhook-timestamp".to_owned(), "1614265330".to_owned()),
                (
                    "webhook-id".to_owned(),
                    "msg_p5jXN8AQM9LWM0D4loKWxJek".to_owned()
                ),
            ]
        );
    }

    // Slack's worked example, as in slack.rs:
    // https://api.slack.com/authentication/verifying-requests-from-slack
    #[test]
    fn slack_docs_vector_through_the_generic_config() {
        let g = Generic {
            signature_header: name("x-slack-signature"),
            signature_prefix: Some("v0=".into()),
            encoding: Encoding::Hex,
            signed_payload: "v0:{timestamp}:{body}".into(),
            timestamp_header: Some(name("x-slack-request-timestamp")),
            event_id: None,
            event_type: None,
        };
        let body: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J\
            &team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar\
            &user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=\
            &response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J\
            %2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN\
            &trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let h = headers(&[
            (
                "X-Slack-Signature",
                "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
            ),
            ("X-Slack-Request-Timestamp", "1531420618"),
        ]);
        let got = scheme(g).verify(
            &[key(b"8f742231b10e8888abcd99yyyzzz85a5")],
            TOLERANCE,
            &h,
            body,
            1_531_420_618,
        );
        assert_eq!(got.map(|v| v.event_id), Ok(hmac::body_sha256_hex(body)));
    }

    #[test]
    fn common_for_each_shape() {
        let body = br#"{"id":"evt_9","kind":"thing.done","type":"thing.done"}"#;
        common_checks(
            &scheme(github_like()),
            &key(b"s3cret"),
            body,
            &["x-hub-signature-256"],
        );
        common_checks(
            &scheme(standard_like()),
            &standard_key(),
            body,
            &["webhook-signature"],
        );
        common_checks(
            &scheme(pointer_ids()),
            &key(b"s3cret"),
            body,
            &["x-acme-signature"],
        );
    }

    #[test]
    fn templates_split_into_text_and_placeholders() {
        use Piece::{Body, Id, Text, Timestamp};
        assert_eq!(pieces("{body}"), vec![Body]);
        assert_eq!(
            pieces("{id}.{timestamp}.{body}"),
            vec![Id, Text(b"."), Timestamp, Text(b"."), Body]
        );
        assert_eq!(
            pieces("v0:{timestamp}:{body}"),
            vec![Text(b"v0:"), Timestamp, Text(b":"), Body]
        );
        assert_eq!(pieces("{{body}}"), vec![Text(b"{"), Body, Text(b"}")]);
        assert_eq!(
            pieces("é{nope}{body}ü{"),
            vec![Text("é{nope}".as_bytes()), Body, Text("ü{".as_bytes())]
        );
        assert_eq!(pieces(""), vec![]);
    }

    #[test]
    fn unknown_braces_are_signed_as_written() {
        let g = Generic {
            signed_payload: "x{nope}{body}".into(),
            ..pointer_ids()
        };
        let body = br#"{"id":"e"}"#;
        let lines = scheme(g.clone()).sign(&key(b"k"), body, None, NOW);
        let expected = hex::encode(hmac::tag(b"k", &[b"x{nope}", body]));
        assert_eq!(lines, vec![("x-acme-signature".to_owned(), expected)]);
        let h = signed(&scheme(g.clone()), &key(b"k"), body, None, NOW);
        assert!(
            scheme(g)
                .verify(&[key(b"k")], TOLERANCE, &h, body, NOW)
                .is_ok()
        );
    }

    #[test]
    fn validate_refuses_tables_that_cannot_work() {
        assert_eq!(github_like().validate(), Ok(()));
        assert_eq!(standard_like().validate(), Ok(()));
        assert_eq!(pointer_ids().validate(), Ok(()));
        let no_body = Generic {
            signed_payload: "{id}".into(),
            ..github_like()
        };
        let ts_without_header = Generic {
            timestamp_header: None,
            ..standard_like()
        };
        let header_without_ts = Generic {
            signed_payload: "{id}.{body}".into(),
            ..standard_like()
        };
        let id_from_pointer = Generic {
            event_id: Some(Locator::Pointer("/id".into())),
            ..standard_like()
        };
        let id_absent = Generic {
            event_id: None,
            ..standard_like()
        };
        for g in [
            no_body,
            ts_without_header,
            header_without_ts,
            id_from_pointer,
            id_absent,
        ] {
            assert!(g.validate().is_err(), "{g:?}");
        }
    }

    #[test]
    fn ids_and_types_from_pointers() {
        let s = scheme(pointer_ids());
        let k = key(b"k");
        for (body, id, kind) in [
            (&br#"{"id":"evt_1","kind":"a.b"}"#[..], "evt_1", Some("a.b")),
            (br#"{"id":12345,"kind":7}"#, "12345", None),
            (br#"{"id":"evt_2"}"#, "evt_2", None),
        ] {
            let h = signed(&s, &k, body, None, NOW);
            let v = s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW);
            assert_eq!(
                v.map(|v| (v.event_id, v.event_type)),
                Ok((id.to_owned(), kind.map(str::to_owned)))
            );
        }
        for body in [
            &b"not json"[..],
            br#"{"kind":"a.b"}"#,
            br#"{"id":"","kind":"a.b"}"#,
            br#"{"id":null}"#,
            br#"{"id":{"nested":1}}"#,
        ] {
            let h = signed(&s, &k, body, None, NOW);
            assert!(
                matches!(
                    s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW),
                    Err(Error::MalformedBody(_))
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn ids_from_headers_and_the_body_digest() {
        // Id header configured but absent (and not signed): malformed body.
        let s = scheme(github_like());
        let k = key(b"k");
        let mut h = signed(&s, &k, b"{}", Some("d-1"), NOW);
        h.remove("x-github-delivery");
        assert_eq!(
            s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
            Err(Error::MalformedBody("event id header is missing"))
        );
        // No id configured: the body's digest, and no type.
        let g = Generic {
            event_id: None,
            event_type: None,
            ..github_like()
        };
        let h = signed(&scheme(g.clone()), &k, b"{}", None, NOW);
        assert_eq!(h.len(), 1, "no id header is sent when none is configured");
        let v = scheme(g).verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok((hmac::body_sha256_hex(b"{}"), None))
        );
    }

    #[test]
    fn a_signed_id_or_timestamp_must_be_present() {
        let s = scheme(standard_like());
        let k = standard_key();
        let full = signed(&s, &k, b"{}", Some("msg_1"), NOW);
        for (removed, label) in [
            ("webhook-id", "event_id"),
            ("webhook-timestamp", "timestamp_header"),
        ] {
            let mut h = full.clone();
            h.remove(removed);
            assert_eq!(
                s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
                Err(Error::MalformedSignature(label))
            );
        }
    }

    #[test]
    fn tampered_id_or_timestamp_is_refused() {
        let s = scheme(standard_like());
        let k = standard_key();
        let full = signed(&s, &k, b"{}", Some("msg_1"), NOW);
        let later = (NOW + 1).to_string();
        for (name, value) in [
            ("webhook-id", "msg_2"),
            ("webhook-timestamp", later.as_str()),
        ] {
            let mut h = full.clone();
            set(&mut h, name, value.as_bytes());
            assert_eq!(
                s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
                Err(Error::InvalidSignature),
                "{name}"
            );
        }
    }

    #[test]
    fn prefix_and_encoding_are_enforced() {
        let s = scheme(github_like());
        let k = key(b"k");
        let full = signed(&s, &k, b"{}", Some("d"), NOW);
        let value = full
            .get("x-hub-signature-256")
            .expect("sign sets the signature header")
            .to_str()
            .expect("hex is ASCII")
            .to_owned();
        let bare = value.trim_start_matches("sha256=");
        let b64 = hmac::encode_base64(&hmac::tag_from_hex(bare.as_bytes()).expect("valid hex"));
        for bad in [
            bare.to_owned(),
            format!("sha1={bare}"),
            format!("sha256={b64}"),
        ] {
            let mut h = full.clone();
            set(&mut h, "x-hub-signature-256", bad.as_bytes());
            assert_eq!(
                s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
                Err(Error::MalformedSignature("signature_header")),
                "{bad}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        let s = scheme(standard_like());
        let k = standard_key();
        let valid = signed(&s, &k, b"{}", Some("msg_1"), NOW);
        garbage_is_refused(
            &s,
            std::slice::from_ref(&k),
            &valid,
            b"{}",
            NOW,
            &["webhook-signature", "webhook-timestamp", "webhook-id"],
        );
        let s = scheme(github_like());
        let valid = signed(&s, &k, b"{}", Some("d"), NOW);
        garbage_is_refused(
            &s,
            std::slice::from_ref(&k),
            &valid,
            b"{}",
            NOW,
            &["x-hub-signature-256"],
        );
    }

    #[test]
    fn non_utf8_body_round_trips() {
        let body = b"\xff{\"type\":\x80}\xfe";
        for g in [github_like(), standard_like()] {
            let s = scheme(g);
            let k = key(b"k");
            let h = signed(&s, &k, body, Some("bin-1"), NOW);
            let v = s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW);
            assert_eq!(
                v.map(|v| (v.event_id, v.event_type)),
                Ok(("bin-1".to_owned(), None))
            );
        }
    }
}
