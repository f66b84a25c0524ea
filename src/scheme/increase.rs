//! Increase: two signature formats, accepted side by side while senders
//! migrate.
//!
//! - Current (npm `increase` 0.405.0 and later, PyPI `increase` 0.552.0 and
//!   later): Standard Webhooks headers `webhook-id`, `webhook-timestamp`
//!   (unix seconds) and `webhook-signature: v1,<base64> [v1,…]`, the
//!   HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. The key is the
//!   webhook secret's own bytes, not base64-decoded: both SDKs' `unwrap`
//!   hand the `standardwebhooks` library the secret's UTF-8 bytes (Node:
//!   `new Webhook('whsec_' + toBase64(secret))`; Python:
//!   `Webhook(webhook_secret.encode("utf-8"))`).
//! - Older: `Increase-Webhook-Signature: t=<RFC 3339>,v1=<hex>`, the
//!   HMAC-SHA256 of `{t}.{body}` under the same secret.
//!
//! A request carrying headers of both formats is refused as malformed: which
//! one the sender meant is not guessed. Either way the event id is the
//! body's `/id` (so a retry that arrives in the other format is still a
//! duplicate) and the type its `/category`.
//!
//! Sources: <https://increase.com/documentation/webhooks>; the older format's
//! vector is Increase's SDK test (Increase/increase-python
//! tests/api_resources/test_webhooks.py), the current format's values were
//! computed with `standardwebhooks` as the SDKs call it and checked with
//! `events.unwrap` of npm `increase` 0.583.0.

use std::sync::LazyLock;
use std::time::Duration;

use http::{HeaderMap, HeaderName};

use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing, names};
use super::{
    Encoding, Error, Generic, Labels, Locator, SecretEncoding, TimestampFormat, Verified, generic,
};
use crate::secret::Secret;

const LEGACY_SIGNATURE: &str = "increase-webhook-signature";
const SIGNATURE: &str = "webhook-signature";
const TIMESTAMP: &str = "webhook-timestamp";
const ID: &str = "webhook-id";

/// The current format, for the generic engine. Its `event_id` is the signed
/// `webhook-id` (the template needs it); the id reported is the body's.
static CURRENT: LazyLock<Generic> = LazyLock::new(|| Generic {
    signature_prefix: Some("v1,".to_owned()),
    signature_delimiter: Some(" ".to_owned()),
    signed_payload: "{id}.{timestamp}.{body}".to_owned(),
    timestamp_header: Some(HeaderName::from_static(TIMESTAMP)),
    timestamp_format: TimestampFormat::Seconds,
    secret_encoding: SecretEncoding::Raw,
    event_id: Some(Locator::Header(HeaderName::from_static(ID))),
    labels: Labels {
        signature: SIGNATURE,
        timestamp: TIMESTAMP,
        id: ID,
    },
    ..Generic::new(HeaderName::from_static(SIGNATURE), Encoding::Base64)
});

/// The older `t=…,v1=…` format.
static LEGACY: LazyLock<Generic> = LazyLock::new(|| Generic {
    signature_delimiter: Some(",".to_owned()),
    signature_key: Some("v1".to_owned()),
    timestamp_key: Some("t".to_owned()),
    timestamp_format: TimestampFormat::Rfc3339,
    signed_payload: "{timestamp}.{body}".to_owned(),
    labels: Labels {
        signature: LEGACY_SIGNATURE,
        timestamp: LEGACY_SIGNATURE,
        id: LEGACY_SIGNATURE,
    },
    ..Generic::new(HeaderName::from_static(LEGACY_SIGNATURE), Encoding::Hex)
});

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let current = [SIGNATURE, TIMESTAMP, ID]
        .iter()
        .any(|name| headers.contains_key(*name));
    let legacy = headers.contains_key(LEGACY_SIGNATURE);
    let format: &Generic = match (current, legacy) {
        (true, true) => return Err(Error::MalformedSignature(LEGACY_SIGNATURE)),
        (false, true) => &LEGACY,
        // Neither: reported missing under the current format's name.
        (true, false) | (false, false) => &CURRENT,
    };
    let verified = generic::verify(format, keys, tolerance, headers, body, now)?;
    let (event_id, event_type) = match json_fields(body, ["/id", "/category"]) {
        Some([id, kind]) => (id.id(), kind.str()),
        None => (None, None),
    };
    Ok(Verified {
        event_id: event_id.ok_or(Error::MalformedBody("no event id at /id"))?,
        event_type,
        ..verified
    })
}

/// The current format's three headers (`id` is the `webhook-id`; a fresh
/// one when `None`).
pub(super) fn sign(
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Result<Vec<(String, String)>, &'static str> {
    generic::sign(&CURRENT, key, body, id, timestamp)
}

/// `scheme = "increase"`: Standard Webhooks headers keyed with the raw
/// secret, or the older `Increase-Webhook-Signature: t=…,v1=…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Increase;

impl Provider for Increase {
    fn name(&self) -> &'static str {
        "increase"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        sign(s.key, s.body, s.id, s.timestamp)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&[
            "webhook-signature",
            "webhook-timestamp",
            "increase-webhook-signature",
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // Values of the current format: the secret, id, time and body below,
    // signed by `standardwebhooks` 1.1.x (npm and PyPI give the same value)
    // keyed as npm `increase` 0.583.0 and PyPI `increase` 0.552.0 key it, and
    // accepted by npm `increase` 0.583.0 `client.events.unwrap(body,
    // { headers })` with the clock pinned to the timestamp.
    const SECRET: &[u8] = b"increase-webhook-secret-2026";
    const BODY: &[u8] = br#"{"id":"event_001dzz0r20rzr4zrhrr1364hy80","category":"account.created","associated_object_id":"account_in71c4amph0vgo2qllky","associated_object_type":"account","created_at":"2023-11-14T22:13:20Z","type":"event"}"#;
    const MSG_ID: &str = "msg_2Yh4SWoRAaPPDGzAhe1HX8fk0ns";
    const TS: i64 = 1_700_000_000;
    const SIG: &str = "v1,iuK8fmRMlxN2S18dDPL8quzws/N9CJlGWkCu1BoF0Rw=";

    // Increase/increase-python tests/api_resources/test_webhooks.py (the
    // older format).
    const LEGACY_SECRET: &[u8] = b"whsec_zlFsbBZ8Xcodlpcu6NDTdSzZRLSdhkst";
    const LEGACY_BODY: &[u8] = br#"{"id":"event_123abc","created_at":"2020-01-31T23:59:59Z"}"#;
    const LEGACY_SIG: &str = "t=2022-01-31T23:59:59Z,v1=3f9c3dcc820ca3adfae8e196d05b09dfef63b91db5ce5ac1407090f2aa424a6f";
    const LEGACY_TS: i64 = 1_643_673_599;

    fn current_headers() -> HeaderMap {
        headers(&[
            ("webhook-id", MSG_ID),
            ("webhook-timestamp", "1700000000"),
            ("webhook-signature", SIG),
        ])
    }

    #[test]
    fn current_sdk_delivery_verifies() {
        let got = coded(Increase).verify(&[key(SECRET)], TOLERANCE, &current_headers(), BODY, TS);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "event_001dzz0r20rzr4zrhrr1364hy80".into(),
                event_type: Some("account.created".into()),
                timestamp: Some(TS),
                secret_index: 0,
            })
        );
    }

    #[test]
    fn the_key_is_the_raw_secret_not_base64() {
        // The same secret read as Standard Webhooks reads a `whsec_` secret
        // (base64-decoded) gives another key; the SDK vector must not verify
        // under it, or hookgate would be keying it wrong.
        let decoded =
            super::super::hmac::decode_base64_any(b"aW5jcmVhc2Utd2ViaG9vay1zZWNyZXQtMjAyNg")
                .expect("base64");
        assert_eq!(decoded, SECRET);
        let h = current_headers();
        assert_eq!(
            coded(Increase).verify(
                &[key(b"aW5jcmVhc2Utd2ViaG9vay1zZWNyZXQtMjAyNg")],
                TOLERANCE,
                &h,
                BODY,
                TS
            ),
            Err(Error::InvalidSignature)
        );
        let prepared = coded(Increase)
            .prepare_key(&key(SECRET))
            .expect("a raw secret is valid");
        assert_eq!(prepared.expose(), SECRET);
    }

    #[test]
    fn current_format_refusals() {
        let s = coded(Increase);
        let k = [key(SECRET)];
        let mut tampered = BODY.to_vec();
        tampered[20] ^= 1;
        assert_eq!(
            s.verify(&k, TOLERANCE, &current_headers(), &tampered, TS),
            Err(Error::InvalidSignature)
        );
        // The webhook-id is signed.
        let mut other_id = current_headers();
        other_id.insert(ID, http::HeaderValue::from_static("msg_other"));
        assert_eq!(
            s.verify(&k, TOLERANCE, &other_id, BODY, TS),
            Err(Error::InvalidSignature)
        );
        for now in [TS - 301, TS + 301] {
            assert!(matches!(
                s.verify(&k, TOLERANCE, &current_headers(), BODY, now),
                Err(Error::TimestampOutsideWindow { .. })
            ));
        }
        let mut no_id = current_headers();
        no_id.remove(ID);
        assert_eq!(
            s.verify(&k, TOLERANCE, &no_id, BODY, TS),
            Err(Error::MalformedSignature(ID))
        );
        assert_eq!(
            s.verify(&k, TOLERANCE, &HeaderMap::new(), BODY, TS),
            Err(Error::MissingSignature(SIGNATURE))
        );
    }

    #[test]
    fn legacy_sdk_vector_still_verifies() {
        let h = headers(&[("increase-webhook-signature", LEGACY_SIG)]);
        let got =
            coded(Increase).verify(&[key(LEGACY_SECRET)], TOLERANCE, &h, LEGACY_BODY, LEGACY_TS);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "event_123abc".into(),
                event_type: None,
                timestamp: Some(1_643_673_599),
                secret_index: 0,
            })
        );
    }

    #[test]
    fn both_formats_at_once_are_refused() {
        let s = coded(Increase);
        // Each format valid on its own; together, refused whichever key is
        // configured, and also when only part of the new family is there.
        let mut both = current_headers();
        both.insert(LEGACY_SIGNATURE, http::HeaderValue::from_static(LEGACY_SIG));
        for keys in [
            &[key(SECRET)][..],
            &[key(LEGACY_SECRET)],
            &[key(SECRET), key(LEGACY_SECRET)],
        ] {
            assert_eq!(
                s.verify(keys, TOLERANCE, &both, BODY, TS),
                Err(Error::MalformedSignature(LEGACY_SIGNATURE))
            );
        }
        for extra in [ID, TIMESTAMP, SIGNATURE] {
            let mut h = headers(&[("increase-webhook-signature", LEGACY_SIG)]);
            h.insert(extra, http::HeaderValue::from_static("x"));
            assert_eq!(
                s.verify(&[key(LEGACY_SECRET)], TOLERANCE, &h, LEGACY_BODY, LEGACY_TS),
                Err(Error::MalformedSignature(LEGACY_SIGNATURE)),
                "{extra}"
            );
        }
    }

    #[test]
    fn sign_prints_the_current_format() {
        let lines = coded(Increase)
            .sign(&key(SECRET), BODY, Some(MSG_ID), TS)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("webhook-signature".to_owned(), SIG.to_owned()),
                ("webhook-timestamp".to_owned(), "1700000000".to_owned()),
                ("webhook-id".to_owned(), MSG_ID.to_owned()),
            ]
        );
    }

    #[test]
    fn a_body_without_an_id_is_malformed_once_verified() {
        let body = br#"{"category":"account.created"}"#;
        let h = super::super::test_support::signed(&coded(Increase), &key(SECRET), body, None, TS);
        assert_eq!(
            coded(Increase).verify(&[key(SECRET)], TOLERANCE, &h, body, TS),
            Err(Error::MalformedBody("no event id at /id"))
        );
    }

    #[test]
    fn common() {
        common_checks(&coded(Increase), &key(SECRET), BODY, &[SIGNATURE]);
    }

    #[test]
    fn garbage_never_panics() {
        garbage_is_refused(
            &coded(Increase),
            &[key(SECRET)],
            &current_headers(),
            BODY,
            TS,
            &[SIGNATURE, TIMESTAMP],
        );
        garbage_is_refused(
            &coded(Increase),
            &[key(LEGACY_SECRET)],
            &headers(&[("increase-webhook-signature", LEGACY_SIG)]),
            LEGACY_BODY,
            LEGACY_TS,
            &[LEGACY_SIGNATURE],
        );
    }
}
