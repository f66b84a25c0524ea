//! Standard Webhooks (and Svix): `webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64> …`, signed bytes `{id}.{ts}.{body}`.
//!
//! The signature header is a space-separated list so a sender can sign with
//! several keys during a rotation; every `v1` entry is a candidate and
//! entries of other versions (`v1a` is the asymmetric Ed25519 one) are
//! skipped. Svix sends the same three headers as `svix-id`,
//! `svix-timestamp`, `svix-signature`; a request uses one family or the
//! other, never a mix.
//!
//! Source: <https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md>.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::HeaderMap;

use super::hmac;
use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified};
use crate::secret::Secret;

/// One header family: (id, timestamp, signature).
struct Names {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const STANDARD: Names = Names {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};

const SVIX: Names = Names {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

/// Secrets are `whsec_` + base64 of the key bytes; the prefix is optional.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let raw = secret.expose();
    let b64 = raw.strip_prefix(b"whsec_").unwrap_or(raw);
    match B64.decode(b64) {
        Ok(key) if !key.is_empty() => Ok(Secret::new(key)),
        Ok(_) => Err("secret decodes to an empty key".to_owned()),
        Err(_) => Err("secret is not whsec_ followed by base64".to_owned()),
    }
}

/// The `v1` signatures in a `webhook-signature` list; entries of other
/// versions, and `v1` values that are not a base64 tag, are skipped.
fn signatures(value: &[u8]) -> Vec<hmac::Tag> {
    value
        .split(|&b| b == b' ')
        .filter_map(|entry| entry.strip_prefix(b"v1,"))
        .filter_map(hmac::tag_from_base64)
        .collect()
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let (names, value) = match hmac::header(headers, STANDARD.signature) {
        Some(value) => (&STANDARD, value),
        None => match hmac::header(headers, SVIX.signature) {
            Some(value) => (&SVIX, value),
            None => return Err(Error::MissingSignature(STANDARD.signature)),
        },
    };
    let candidates = signatures(value);
    if candidates.is_empty() {
        return Err(Error::MalformedSignature(names.signature));
    }
    let id = match hmac::header(headers, names.id) {
        Some(id) if !id.is_empty() => id,
        _ => return Err(Error::MalformedSignature(names.id)),
    };
    let timestamp_text =
        hmac::header(headers, names.timestamp).ok_or(Error::MalformedSignature(names.timestamp))?;
    let timestamp =
        hmac::parse_timestamp(timestamp_text).ok_or(Error::MalformedSignature(names.timestamp))?;

    let secret_index = hmac::match_key(keys, &[id, b".", timestamp_text, b".", body], &candidates)?;
    hmac::check_window(timestamp, now, tolerance)?;

    Ok(Verified {
        event_id: String::from_utf8_lossy(id).into_owned(),
        event_type: json_fields(body, ["/type"]).and_then(|[kind]| kind.str()),
        timestamp: Some(timestamp),
        secret_index,
    })
}

pub(super) fn sign(
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let id = id.map_or_else(|| format!("msg_{}", hmac::random_id()), str::to_owned);
    let ts = timestamp.to_string();
    let tag = hmac::tag(
        key.expose(),
        &[id.as_bytes(), b".", ts.as_bytes(), b".", body],
    );
    vec![
        (STANDARD.id.to_owned(), id),
        (STANDARD.timestamp.to_owned(), ts),
        (
            STANDARD.signature.to_owned(),
            format!("v1,{}", hmac::encode_base64(&tag)),
        ),
    ]
}

/// `scheme = "standard"`: Standard Webhooks, `webhook-*` or `svix-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Standard;

impl Provider for Standard {
    fn name(&self) -> &'static str {
        "standard"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        prepare_key(secret)
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(s.key, s.body, s.id, s.timestamp))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&[
            "webhook-signature",
            "webhook-timestamp",
            "svix-signature",
            "svix-timestamp",
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, set, signed,
    };
    use super::*;

    // The Standard Webhooks reference libraries' signing vector, e.g.
    // `TestWebhookSign` in
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
    const DOC_SECRET: &[u8] = b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const DOC_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const DOC_TS: i64 = 1_614_265_330;
    const DOC_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const DOC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    // A well-formed v1 signature that matches nothing, from the same tests.
    const OTHER: &str = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

    const BODY: &[u8] = br#"{"type":"invoice.paid","data":{"id":"in_1"}}"#;

    fn doc_key() -> Secret {
        Scheme::Standard
            .prepare_key(&key(DOC_SECRET))
            .expect("the spec's secret is valid")
    }

    fn doc_headers(prefix: &str, signature: &str) -> http::HeaderMap {
        headers(&[
            (&format!("{prefix}-id"), DOC_ID),
            (&format!("{prefix}-timestamp"), "1614265330"),
            (&format!("{prefix}-signature"), signature),
        ])
    }

    #[test]
    fn spec_vector_verifies_under_both_header_families() {
        for prefix in ["webhook", "svix"] {
            let got = Scheme::Standard.verify(
                &[doc_key()],
                TOLERANCE,
                &doc_headers(prefix, DOC_SIGNATURE),
                DOC_BODY,
                DOC_TS + 10,
            );
            assert_eq!(
                got,
                Ok(Verified {
                    event_id: DOC_ID.into(),
                    event_type: None,
                    timestamp: Some(DOC_TS),
                    secret_index: 0,
                }),
                "{prefix}"
            );
        }
    }

    #[test]
    fn spec_vector_is_what_sign_produces() {
        let lines = Scheme::Standard
            .sign(&doc_key(), DOC_BODY, Some(DOC_ID), DOC_TS)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("webhook-id".to_owned(), DOC_ID.to_owned()),
                ("webhook-timestamp".to_owned(), "1614265330".to_owned()),
                ("webhook-signature".to_owned(), DOC_SIGNATURE.to_owned()),
            ]
        );
    }

    #[test]
    fn keys_with_or_without_prefix() {
        let bare = Scheme::Standard.prepare_key(&key(b"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
        assert_eq!(bare, Ok(doc_key()));
        assert!(
            Scheme::Standard
                .prepare_key(&key(b"whsec_not base64!"))
                .is_err()
        );
        assert!(Scheme::Standard.prepare_key(&key(b"whsec_")).is_err());
    }

    #[test]
    fn common() {
        common_checks(
            &Scheme::Standard,
            &doc_key(),
            BODY,
            &["webhook-signature", "svix-signature"],
        );
    }

    #[test]
    fn type_comes_from_the_body_and_id_from_the_header() {
        let h = signed(&Scheme::Standard, &doc_key(), BODY, Some("msg_1"), DOC_TS);
        let v = Scheme::Standard.verify(&[doc_key()], TOLERANCE, &h, BODY, DOC_TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok(("msg_1".to_owned(), Some("invoice.paid".to_owned())))
        );
    }

    #[test]
    fn any_v1_in_the_list_may_match() {
        // The multi-signature case of the reference tests, plus a v1a
        // (asymmetric) entry and extra spaces.
        for list in [
            format!("{OTHER} v2,{} {DOC_SIGNATURE} {OTHER}", &OTHER[3..]),
            format!("v1a,{} {DOC_SIGNATURE}", &OTHER[3..]),
            format!("{DOC_SIGNATURE}  {OTHER}"),
            format!("v1,notbase64 {DOC_SIGNATURE}"),
        ] {
            let got = Scheme::Standard.verify(
                &[doc_key()],
                TOLERANCE,
                &doc_headers("webhook", &list),
                DOC_BODY,
                DOC_TS,
            );
            assert!(got.is_ok(), "{list}: {got:?}");
        }
        let got = Scheme::Standard.verify(
            &[doc_key()],
            TOLERANCE,
            &doc_headers("webhook", &format!("{OTHER} {OTHER}")),
            DOC_BODY,
            DOC_TS,
        );
        assert_eq!(got, Err(Error::InvalidSignature));
    }

    #[test]
    fn lists_without_a_usable_v1_are_malformed() {
        let b64 = &DOC_SIGNATURE[3..];
        for list in [
            format!("v1a,{b64}"),
            format!("v2,{b64}"),
            b64.to_owned(),
            format!("v1={b64}"),
            "v1,".to_owned(),
            "v1,!!!".to_owned(),
            format!("v1,{}", &b64[4..]),
        ] {
            assert_eq!(
                Scheme::Standard.verify(
                    &[doc_key()],
                    TOLERANCE,
                    &doc_headers("webhook", &list),
                    DOC_BODY,
                    DOC_TS
                ),
                Err(Error::MalformedSignature("webhook-signature")),
                "{list}"
            );
        }
    }

    #[test]
    fn missing_id_or_timestamp_is_malformed() {
        for (name, value) in [
            ("webhook-id", None),
            ("webhook-id", Some("")),
            ("webhook-timestamp", None),
            ("webhook-timestamp", Some("")),
            ("webhook-timestamp", Some("1614265330.0")),
            ("webhook-timestamp", Some("2021-02-25T15:02:10Z")),
        ] {
            let mut h = doc_headers("webhook", DOC_SIGNATURE);
            match value {
                Some(v) => set(&mut h, name, v.as_bytes()),
                None => {
                    h.remove(name);
                }
            }
            assert_eq!(
                Scheme::Standard.verify(&[doc_key()], TOLERANCE, &h, DOC_BODY, DOC_TS),
                Err(Error::MalformedSignature(name)),
                "{name} = {value:?}"
            );
        }
    }

    #[test]
    fn header_families_are_not_mixed() {
        let h = headers(&[
            ("svix-id", DOC_ID),
            ("svix-timestamp", "1614265330"),
            ("webhook-signature", DOC_SIGNATURE),
        ]);
        assert_eq!(
            Scheme::Standard.verify(&[doc_key()], TOLERANCE, &h, DOC_BODY, DOC_TS),
            Err(Error::MalformedSignature("webhook-id"))
        );
    }

    #[test]
    fn tampered_id_or_timestamp_is_refused() {
        for (name, value) in [
            ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK"),
            ("webhook-timestamp", "1614265331"),
            ("webhook-timestamp", "01614265330"),
        ] {
            let mut h = doc_headers("webhook", DOC_SIGNATURE);
            set(&mut h, name, value.as_bytes());
            assert_eq!(
                Scheme::Standard.verify(&[doc_key()], TOLERANCE, &h, DOC_BODY, DOC_TS),
                Err(Error::InvalidSignature),
                "{name} = {value}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        garbage_is_refused(
            &Scheme::Standard,
            &[doc_key()],
            &doc_headers("webhook", DOC_SIGNATURE),
            DOC_BODY,
            DOC_TS,
            &["webhook-signature", "webhook-timestamp", "webhook-id"],
        );
    }

    #[test]
    fn non_utf8_body_round_trips() {
        let body = b"\x00\xff\xfe not json";
        let h = signed(&Scheme::Standard, &doc_key(), body, Some("msg_bin"), DOC_TS);
        let v = Scheme::Standard.verify(&[doc_key()], TOLERANCE, &h, body, DOC_TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok(("msg_bin".to_owned(), None))
        );
    }

    #[test]
    fn sign_makes_up_an_id() {
        let h = signed(&Scheme::Standard, &doc_key(), BODY, None, DOC_TS);
        let v = Scheme::Standard
            .verify(&[doc_key()], TOLERANCE, &h, BODY, DOC_TS)
            .expect("sign makes a valid request");
        assert!(v.event_id.starts_with("msg_"));
    }
}
