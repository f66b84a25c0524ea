//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:{ts}:{body}`, with `ts`
//! from `X-Slack-Request-Timestamp`.
//!
//! Events API bodies are JSON with `/event_id` and `/event/type`; the
//! one-off `url_verification` handshake is JSON with only `/type`; slash
//! commands and interactivity payloads are form-encoded. So the body is never
//! required to be JSON: the id falls back to the body's SHA-256 and the type
//! to `/type`, then to none.
//!
//! Source: <https://api.slack.com/authentication/verifying-requests-from-slack>.

use std::time::Duration;

use http::HeaderMap;

use super::Handshake;
use super::hmac;
use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified};
use crate::secret::Secret;

const SIGNATURE: &str = "X-Slack-Signature";
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";
const VERSION: &[u8] = b"v0";

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = value
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix(b"="))
        .and_then(hmac::tag_from_hex)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    let timestamp_text =
        hmac::header(headers, TIMESTAMP).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let timestamp =
        hmac::parse_timestamp(timestamp_text).ok_or(Error::MalformedSignature(TIMESTAMP))?;

    let secret_index = hmac::match_key(
        keys,
        &[VERSION, b":", timestamp_text, b":", body],
        &[signature],
    )?;
    hmac::check_window(timestamp, now, tolerance)?;

    let (event_id, event_type) = match json_fields(body, ["/event_id", "/event/type", "/type"]) {
        Some([id, inner, outer]) => (id.id(), inner.str().or_else(|| outer.str())),
        None => (None, None),
    };
    let event_id = event_id.unwrap_or_else(|| hmac::body_sha256_hex(body));
    Ok(Verified {
        event_id,
        event_type,
        timestamp: Some(timestamp),
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
    let ts = timestamp.to_string();
    let tag = hmac::tag(key.expose(), &[VERSION, b":", ts.as_bytes(), b":", body]);
    vec![
        (SIGNATURE.to_owned(), format!("v0={}", hex::encode(tag))),
        (TIMESTAMP.to_owned(), ts),
    ]
}

/// `scheme = "slack"`; its signed `url_verification` is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slack;

impl Provider for Slack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(s.key, s.body, s.timestamp))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["x-slack-signature", "x-slack-request-timestamp"])
    }

    fn handshake_after(&self) -> Option<Handshake> {
        Some(Handshake::SlackUrlVerification)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, set, signed,
    };
    use super::*;

    // The worked example in Slack's "Verifying requests from Slack":
    // https://api.slack.com/authentication/verifying-requests-from-slack
    // (a slash-command body, form-encoded, so not JSON).
    const DOC_SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";
    const DOC_TS: i64 = 1_531_420_618;
    const DOC_BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J\
        &team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar\
        &user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=\
        &response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J\
        %2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN\
        &trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const DOC_SIGNATURE: &str =
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    const EVENT: &[u8] = br#"{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention","text":"hi"}}"#;

    fn doc_headers() -> http::HeaderMap {
        headers(&[
            ("X-Slack-Signature", DOC_SIGNATURE),
            ("X-Slack-Request-Timestamp", "1531420618"),
        ])
    }

    #[test]
    fn slack_docs_vector_verifies() {
        let got = Scheme::Slack.verify(
            &[key(DOC_SECRET)],
            TOLERANCE,
            &doc_headers(),
            DOC_BODY,
            DOC_TS + 60,
        );
        assert_eq!(
            got,
            Ok(Verified {
                // A form-encoded command carries no event id.
                event_id: hmac::body_sha256_hex(DOC_BODY),
                event_type: None,
                timestamp: Some(DOC_TS),
                secret_index: 0,
            })
        );
    }

    #[test]
    fn slack_docs_vector_is_what_sign_produces() {
        let lines = Scheme::Slack
            .sign(&key(DOC_SECRET), DOC_BODY, None, DOC_TS)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("X-Slack-Signature".to_owned(), DOC_SIGNATURE.to_owned()),
                (
                    "X-Slack-Request-Timestamp".to_owned(),
                    "1531420618".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn common() {
        common_checks(
            &Scheme::Slack,
            &key(DOC_SECRET),
            EVENT,
            &["x-slack-signature"],
        );
    }

    #[test]
    fn events_api_body_gives_id_and_type() {
        let h = signed(&Scheme::Slack, &key(DOC_SECRET), EVENT, None, DOC_TS);
        let v = Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, EVENT, DOC_TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok(("Ev08MFMKH6".to_owned(), Some("app_mention".to_owned())))
        );
    }

    #[test]
    fn url_verification_falls_back_to_top_level_type_and_body_digest() {
        let body = br#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        let h = signed(&Scheme::Slack, &key(DOC_SECRET), body, None, DOC_TS);
        let v = Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, body, DOC_TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok((
                hmac::body_sha256_hex(body),
                Some("url_verification".to_owned())
            ))
        );
    }

    #[test]
    fn tampered_timestamp_is_refused() {
        for ts in ["1531420619", "1531420617", "01531420618"] {
            let mut h = doc_headers();
            set(&mut h, "X-Slack-Request-Timestamp", ts.as_bytes());
            assert_eq!(
                Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, DOC_TS),
                Err(Error::InvalidSignature),
                "{ts}"
            );
        }
    }

    #[test]
    fn missing_or_unparseable_timestamp_is_malformed() {
        let mut h = doc_headers();
        h.remove("X-Slack-Request-Timestamp");
        assert_eq!(
            Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, DOC_TS),
            Err(Error::MalformedSignature("X-Slack-Request-Timestamp"))
        );
        for ts in ["", "abc", "1531420618.5", "-1531420618", "1e9"] {
            let mut h = doc_headers();
            set(&mut h, "X-Slack-Request-Timestamp", ts.as_bytes());
            assert_eq!(
                Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, DOC_TS),
                Err(Error::MalformedSignature("X-Slack-Request-Timestamp")),
                "{ts}"
            );
        }
    }

    #[test]
    fn garbled_signatures_are_malformed() {
        let hex = DOC_SIGNATURE.trim_start_matches("v0=");
        for value in [
            hex.to_owned(),
            format!("v1={hex}"),
            format!("v0:{hex}"),
            format!("V0={hex}"),
            format!("v0={}", &hex[2..]),
            "v0=".to_owned(),
        ] {
            let mut h = doc_headers();
            set(&mut h, "X-Slack-Signature", value.as_bytes());
            assert_eq!(
                Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, DOC_TS),
                Err(Error::MalformedSignature("X-Slack-Signature")),
                "{value}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        garbage_is_refused(
            &Scheme::Slack,
            &[key(DOC_SECRET)],
            &doc_headers(),
            DOC_BODY,
            DOC_TS,
            &["x-slack-signature", "x-slack-request-timestamp"],
        );
    }

    #[test]
    fn non_utf8_body_round_trips() {
        let body = b"payload=\xff\xfe\x00";
        let h = signed(&Scheme::Slack, &key(DOC_SECRET), body, None, DOC_TS);
        let v = Scheme::Slack.verify(&[key(DOC_SECRET)], TOLERANCE, &h, body, DOC_TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok((hmac::body_sha256_hex(body), None))
        );
    }
}
