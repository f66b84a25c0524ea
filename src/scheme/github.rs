//! GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body; the
//! delivery id is `X-GitHub-Delivery` and the event type `X-GitHub-Event`.
//! GitHub signs no timestamp, so replays are caught by the nonce alone.
//!
//! Source: <https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries>.

use http::HeaderMap;
use http::header::HeaderName;

use super::hmac;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified};
use crate::secret::Secret;

const SIGNATURE: &str = "X-Hub-Signature-256";
const DELIVERY: &str = "X-GitHub-Delivery";
const PREFIX: &[u8] = b"sha256=";
// The same names as `HeaderName`s: a lookup by text parses the name every time.
static SIGNATURE_NAME: HeaderName = HeaderName::from_static("x-hub-signature-256");
static DELIVERY_NAME: HeaderName = HeaderName::from_static("x-github-delivery");
static EVENT_NAME: HeaderName = HeaderName::from_static("x-github-event");

pub(super) fn verify(keys: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<Verified, Error> {
    let value = hmac::header(headers, &SIGNATURE_NAME).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = value
        .strip_prefix(PREFIX)
        .and_then(hmac::tag_from_hex)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    let secret_index = hmac::match_key(keys, &[body], &[signature])?;

    Ok(Verified {
        event_id: hmac::header_text(headers, &DELIVERY_NAME)
            .unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: hmac::header_text(headers, &EVENT_NAME),
        timestamp: None,
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], id: Option<&str>) -> Vec<(String, String)> {
    let tag = hmac::tag(key.expose(), &[body]);
    vec![
        (SIGNATURE.to_owned(), format!("sha256={}", hex::encode(tag))),
        (
            DELIVERY.to_owned(),
            id.map_or_else(hmac::random_id, str::to_owned),
        ),
    ]
}

/// `scheme = "github"`: the delivery id and event headers are not signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Github;

impl Provider for Github {
    fn name(&self) -> &'static str {
        "github"
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
        Ok(sign(s.key, s.body, s.id))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["x-hub-signature-256"])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, signed,
    };
    use super::*;

    // GitHub's published test values, "Testing the webhook payload validation":
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const DOC_SECRET: &[u8] = b"It's a Secret to Everybody";
    const DOC_BODY: &[u8] = b"Hello, World!";
    const DOC_SIGNATURE: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    const NOW: i64 = 1_700_000_000;

    #[test]
    fn github_docs_vector_verifies() {
        let h = headers(&[
            ("X-Hub-Signature-256", DOC_SIGNATURE),
            ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            ("X-GitHub-Event", "ping"),
        ]);
        let got = Scheme::Github.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, NOW);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
                event_type: Some("ping".into()),
                timestamp: None,
                secret_index: 0,
            })
        );
    }

    #[test]
    fn github_docs_vector_is_what_sign_produces() {
        let lines = Scheme::Github
            .sign(&key(DOC_SECRET), DOC_BODY, Some("d-1"), NOW)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("X-Hub-Signature-256".to_owned(), DOC_SIGNATURE.to_owned()),
                ("X-GitHub-Delivery".to_owned(), "d-1".to_owned()),
            ]
        );
    }

    #[test]
    fn common() {
        common_checks(
            &Scheme::Github,
            &key(DOC_SECRET),
            br#"{"zen":"Design for failure."}"#,
            &["x-hub-signature-256"],
        );
    }

    #[test]
    fn without_a_delivery_id_the_body_digest_is_the_id() {
        let h = headers(&[("X-Hub-Signature-256", DOC_SIGNATURE)]);
        let got = Scheme::Github.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, NOW);
        let v = got.expect("the docs vector verifies");
        assert_eq!(v.event_id, hmac::body_sha256_hex(DOC_BODY));
        assert_eq!(v.event_type, None);
    }

    #[test]
    fn sign_makes_up_a_delivery_id() {
        let h = signed(&Scheme::Github, &key(DOC_SECRET), DOC_BODY, None, NOW);
        let v = Scheme::Github
            .verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, NOW)
            .expect("sign makes a valid request");
        assert_eq!(v.event_id.len(), 36);
    }

    #[test]
    fn garbled_headers_are_malformed() {
        let hex = DOC_SIGNATURE.trim_start_matches("sha256=");
        for value in [
            hex.to_owned(),
            format!("sha1={hex}"),
            format!("SHA256={hex}"),
            format!("sha256= {hex}"),
            format!("sha256={}", &hex[1..]),
            format!("sha256={hex}zz"),
            "sha256=".to_owned(),
        ] {
            assert_eq!(
                Scheme::Github.verify(
                    &[key(DOC_SECRET)],
                    TOLERANCE,
                    &headers(&[("X-Hub-Signature-256", &value)]),
                    DOC_BODY,
                    NOW
                ),
                Err(Error::MalformedSignature("X-Hub-Signature-256")),
                "{value}"
            );
        }
        // Well-formed but for other bytes: invalid, not malformed.
        let h = headers(&[(
            "X-Hub-Signature-256",
            &format!("sha256={}", "00".repeat(32)),
        )]);
        assert_eq!(
            Scheme::Github.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, NOW),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn garbage_never_panics() {
        let valid = signed(&Scheme::Github, &key(DOC_SECRET), DOC_BODY, None, NOW);
        garbage_is_refused(
            &Scheme::Github,
            &[key(DOC_SECRET)],
            &valid,
            DOC_BODY,
            NOW,
            &["x-hub-signature-256"],
        );
    }

    #[test]
    fn non_utf8_body_round_trips() {
        let body = b"\xff\x00\xfe binary \x80";
        let h = signed(&Scheme::Github, &key(DOC_SECRET), body, Some("d-2"), NOW);
        let v = Scheme::Github
            .verify(&[key(DOC_SECRET)], TOLERANCE, &h, body, NOW)
            .expect("any bytes can be signed");
        assert_eq!(v.event_id, "d-2");
        assert_eq!(
            Scheme::Github.verify(&[key(DOC_SECRET)], TOLERANCE, &h, &body[1..], NOW),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn unsigned_headers_do_not_affect_the_signature() {
        // The delivery id and event are not signed by GitHub: changing them
        // changes what is reported, not whether the request verifies.
        let mut h = signed(&Scheme::Github, &key(DOC_SECRET), DOC_BODY, Some("a"), NOW);
        h.insert("x-github-delivery", http::HeaderValue::from_static("b"));
        let v = Scheme::Github.verify(&[key(DOC_SECRET)], TOLERANCE, &h, DOC_BODY, NOW);
        assert_eq!(v.map(|v| v.event_id), Ok("b".to_owned()));
    }
}
