//! Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the raw body; id
//! `X-Shopify-Webhook-Id`, type `X-Shopify-Topic`. The same names without
//! the `X-` prefix (`Shopify-Hmac-Sha256`, …) are accepted too, as the
//! contract promises; the `X-` spelling wins when both are present. No
//! timestamp is signed, so replays are caught by the nonce alone.
//!
//! Source: <https://shopify.dev/docs/apps/build/webhooks/subscribe/https>.

use http::HeaderMap;
use http::header::HeaderName;

use super::hmac;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified};
use crate::secret::Secret;

const SIGNATURE: &str = "X-Shopify-Hmac-Sha256";
const WEBHOOK_ID: &str = "X-Shopify-Webhook-Id";
// The same names as `HeaderName`s: a lookup by text parses the name every time.
static SIGNATURE_NAME: HeaderName = HeaderName::from_static("x-shopify-hmac-sha256");
static SIGNATURE_BARE_NAME: HeaderName = HeaderName::from_static("shopify-hmac-sha256");
static WEBHOOK_ID_NAME: HeaderName = HeaderName::from_static("x-shopify-webhook-id");
static WEBHOOK_ID_BARE_NAME: HeaderName = HeaderName::from_static("shopify-webhook-id");
static TOPIC_NAME: HeaderName = HeaderName::from_static("x-shopify-topic");
static TOPIC_BARE_NAME: HeaderName = HeaderName::from_static("shopify-topic");

/// The value under the `X-` name, else under the bare one.
fn text(headers: &HeaderMap, prefixed: &HeaderName, bare: &HeaderName) -> Option<String> {
    hmac::header_text(headers, prefixed).or_else(|| hmac::header_text(headers, bare))
}

pub(super) fn verify(keys: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<Verified, Error> {
    let value = hmac::header(headers, &SIGNATURE_NAME)
        .or_else(|| hmac::header(headers, &SIGNATURE_BARE_NAME))
        .ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = hmac::tag_from_base64(value).ok_or(Error::MalformedSignature(SIGNATURE))?;
    let secret_index = hmac::match_key(keys, &[body], &[signature])?;

    Ok(Verified {
        event_id: text(headers, &WEBHOOK_ID_NAME, &WEBHOOK_ID_BARE_NAME)
            .unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: text(headers, &TOPIC_NAME, &TOPIC_BARE_NAME),
        timestamp: None,
        secret_index,
    })
}

/// The headers Shopify's own verifier requires beside the signature
/// (`@shopify/shopify-api` `webhooks.validate` answers `missing_headers`
/// without them). hookgate reads only the topic, as the unsigned event type;
/// the values here stand in for the shop and topic of a real delivery.
const DELIVERY_HEADERS: [(&str, &str); 3] = [
    ("X-Shopify-Topic", "hookgate/sign"),
    ("X-Shopify-Shop-Domain", "hookgate-sign.myshopify.com"),
    ("X-Shopify-API-Version", "2025-07"),
];

pub(super) fn sign(
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let tag = hmac::tag(key.expose(), &[body]);
    let mut lines = vec![
        (SIGNATURE.to_owned(), hmac::encode_base64(&tag)),
        (
            WEBHOOK_ID.to_owned(),
            id.map_or_else(hmac::random_id, str::to_owned),
        ),
        (
            "X-Shopify-Triggered-At".to_owned(),
            hmac::format_time(super::TimestampFormat::Rfc3339, timestamp),
        ),
    ];
    lines.extend(
        DELIVERY_HEADERS
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    lines
}

/// `scheme = "shopify"`: the webhook id and topic headers are not signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shopify;

impl Provider for Shopify {
    fn name(&self) -> &'static str {
        "shopify"
    }

    fn signs_timestamp(&self) -> bool {
        false
    }

    fn signs_event_id(&self) -> bool {
        false
    }

    fn signs_event_type(&self) -> bool {
        false
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.headers, d.body)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(s.key, s.body, s.id, s.timestamp))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["x-shopify-hmac-sha256", "shopify-hmac-sha256"])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, signed,
    };
    use super::*;

    // Shopify's documentation gives the algorithm (base64 HMAC-SHA256 of the
    // raw body keyed with the app's client secret) but no vector:
    // https://shopify.dev/docs/apps/build/webhooks/subscribe/https
    // The published vector is `sdk_vector_verifies` below; this second one was
    // computed independently with Python's standard library:
    //   python3 -c 'import hmac,hashlib,base64; print(base64.b64encode(hmac.new(
    //     b"my_client_secret", b"{\"id\":820982911946154508,\"email\":\"jon@example.com\"}",
    //     hashlib.sha256).digest()).decode())'
    const SECRET: &[u8] = b"my_client_secret";
    const BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com"}"#;
    const SIGNATURE: &str = "C/Y8NEvOrvo0BOmOkykuhLsX6NfhUdB0T6W8SsFrOEQ=";

    const NOW: i64 = 1_700_000_000;

    #[test]
    fn independent_vector_verifies() {
        let h = headers(&[
            ("X-Shopify-Hmac-Sha256", SIGNATURE),
            (
                "X-Shopify-Webhook-Id",
                "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
            ),
            ("X-Shopify-Topic", "orders/create"),
        ]);
        let got = Scheme::Shopify.verify(&[key(SECRET)], TOLERANCE, &h, BODY, NOW);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043".into(),
                event_type: Some("orders/create".into()),
                timestamp: None,
                secret_index: 0,
            })
        );
    }

    // Shopify/shopify-api-js packages/shopify-api/lib/webhooks/__tests__/validate.test.ts
    // ("returns true for valid request"): the body `{"foo": "bar"}` under the test config's
    // `apiSecretKey` "test_secret_key" (lib/__tests__/test-config.ts), with the headers of
    // webhooks/__tests__/utils.ts; the expected HMAC is written out in the test.
    #[test]
    fn sdk_vector_verifies() {
        let h = headers(&[
            ("X-Shopify-API-Version", "2023-01"),
            ("X-Shopify-Shop-Domain", "shop1.myshopify.io"),
            (
                "X-Shopify-Hmac-Sha256",
                "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=",
            ),
            ("X-Shopify-Topic", "products/create"),
            ("X-Shopify-Webhook-Id", "123456789"),
        ]);
        let body = br#"{"foo": "bar"}"#;
        let got = Scheme::Shopify.verify(&[key(b"test_secret_key")], TOLERANCE, &h, body, NOW);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "123456789".into(),
                event_type: Some("products/create".into()),
                timestamp: None,
                secret_index: 0,
            })
        );
        let wrong = Scheme::Shopify.verify(&[key(b"test_secret_kez")], TOLERANCE, &h, body, NOW);
        assert_eq!(wrong, Err(Error::InvalidSignature));
        let tampered = Scheme::Shopify.verify(
            &[key(b"test_secret_key")],
            TOLERANCE,
            &h,
            br#"{"foo": "baz"}"#,
            NOW,
        );
        assert_eq!(tampered, Err(Error::InvalidSignature));
    }

    #[test]
    fn independent_vector_is_what_sign_produces() {
        let lines = Scheme::Shopify
            .sign(&key(SECRET), BODY, Some("w-1"), NOW)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("X-Shopify-Hmac-Sha256".to_owned(), SIGNATURE.to_owned()),
                ("X-Shopify-Webhook-Id".to_owned(), "w-1".to_owned()),
                (
                    "X-Shopify-Triggered-At".to_owned(),
                    super::super::hmac::format_time(super::super::TimestampFormat::Rfc3339, NOW)
                ),
                ("X-Shopify-Topic".to_owned(), "hookgate/sign".to_owned()),
                (
                    "X-Shopify-Shop-Domain".to_owned(),
                    "hookgate-sign.myshopify.com".to_owned()
                ),
                ("X-Shopify-API-Version".to_owned(), "2025-07".to_owned()),
            ]
        );
    }

    #[test]
    fn common() {
        common_checks(
            &Scheme::Shopify,
            &key(SECRET),
            BODY,
            &["x-shopify-hmac-sha256", "shopify-hmac-sha256"],
        );
    }

    #[test]
    fn headers_without_the_x_prefix_are_read() {
        let h = headers(&[
            ("Shopify-Hmac-Sha256", SIGNATURE),
            ("Shopify-Webhook-Id", "w-bare"),
            ("Shopify-Topic", "orders/paid"),
        ]);
        let v = Scheme::Shopify
            .verify(&[key(SECRET)], TOLERANCE, &h, BODY, NOW)
            .expect("bare names verify");
        assert_eq!(v.event_id, "w-bare");
        assert_eq!(v.event_type.as_deref(), Some("orders/paid"));
        // With both, the X- spelling wins.
        let h = headers(&[
            ("X-Shopify-Hmac-Sha256", SIGNATURE),
            ("Shopify-Hmac-Sha256", "garbage"),
            ("X-Shopify-Webhook-Id", "w-x"),
            ("Shopify-Webhook-Id", "w-bare"),
        ]);
        let v = Scheme::Shopify.verify(&[key(SECRET)], TOLERANCE, &h, BODY, NOW);
        assert_eq!(v.map(|v| v.event_id), Ok("w-x".to_owned()));
    }

    #[test]
    fn header_names_are_case_insensitive() {
        let h = headers(&[("x-shopify-hmac-sha256", SIGNATURE)]);
        assert!(
            Scheme::Shopify
                .verify(&[key(SECRET)], TOLERANCE, &h, BODY, NOW)
                .is_ok()
        );
    }

    #[test]
    fn without_a_webhook_id_the_body_digest_is_the_id() {
        let h = headers(&[("X-Shopify-Hmac-Sha256", SIGNATURE)]);
        let v = Scheme::Shopify.verify(&[key(SECRET)], TOLERANCE, &h, BODY, NOW);
        assert_eq!(v.map(|v| v.event_id), Ok(hmac::body_sha256_hex(BODY)));
    }

    #[test]
    fn garbled_headers_are_malformed() {
        let hex = hex::encode(hmac::tag(SECRET, &[BODY]));
        let prefixed = format!("sha256={SIGNATURE}");
        for value in [hex.as_str(), "!!!!", &prefixed, &SIGNATURE[1..]] {
            assert_eq!(
                Scheme::Shopify.verify(
                    &[key(SECRET)],
                    TOLERANCE,
                    &headers(&[("X-Shopify-Hmac-Sha256", value)]),
                    BODY,
                    NOW
                ),
                Err(Error::MalformedSignature("X-Shopify-Hmac-Sha256")),
                "{value}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        let valid = signed(&Scheme::Shopify, &key(SECRET), BODY, None, NOW);
        garbage_is_refused(
            &Scheme::Shopify,
            &[key(SECRET)],
            &valid,
            BODY,
            NOW,
            &["x-shopify-hmac-sha256"],
        );
    }

    #[test]
    fn non_utf8_body_round_trips() {
        let body = b"\xc3\x28 not utf-8 \xff";
        let h = signed(&Scheme::Shopify, &key(SECRET), body, Some("w-3"), NOW);
        let v = Scheme::Shopify.verify(&[key(SECRET)], TOLERANCE, &h, body, NOW);
        assert_eq!(v.map(|v| v.event_id), Ok("w-3".to_owned()));
    }
}
