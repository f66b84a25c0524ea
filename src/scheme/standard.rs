//! Standard Webhooks (and Svix): `webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64> v1a,<base64> …`, signed bytes
//! `{id}.{ts}.{body}`.
//!
//! The signature header is a space-separated list so a sender can sign with
//! several keys during a rotation, and with both kinds while it moves from
//! one to the other: every `v1` entry (HMAC-SHA256) is checked against the
//! `whsec_` secrets and every `v1a` entry (Ed25519, RFC 8032) against the
//! `whpk_` public keys, all listed in one `secrets` in any order; entries of
//! other versions are skipped. A public key never takes part in an HMAC
//! comparison: anyone can read it. Svix sends the same three headers as
//! `svix-id`, `svix-timestamp`, `svix-signature`; a request uses one family
//! or the other, never a mix. Keys published as a JWK Set (`[source.keys]
//! jwks_url`, and the `gemini` scheme) are [`super::public_keys`]'.
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

/// How a prepared `whpk_` key starts: the prefix, then the 32 raw bytes.
/// A prepared HMAC key is the decoded bytes of its `whsec_` text.
const PUBLIC: &[u8] = b"whpk_";

/// Secrets are `whsec_` + base64 of the key bytes (the prefix is
/// optional), or `whpk_` + base64 of a raw 32-byte Ed25519 public key.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let raw = secret.expose();
    if let Some(b64) = raw.strip_prefix(PUBLIC) {
        return match decode_lenient(b64) {
            Some(key) if key.len() == 32 => {
                let mut prepared = PUBLIC.to_vec();
                prepared.extend_from_slice(&key);
                Ok(Secret::new(prepared))
            }
            Some(_) => Err("a whpk_ key must decode to a 32-byte Ed25519 public key".to_owned()),
            None => Err("secret is not whpk_ followed by base64".to_owned()),
        };
    }
    if raw.starts_with(b"whsk_") {
        return Err(
            "a whsk_ key is the sender's private key: give hookgate the whpk_ public key"
                .to_owned(),
        );
    }
    let b64 = raw.strip_prefix(b"whsec_").unwrap_or(raw);
    match B64.decode(b64) {
        Ok(key) if !key.is_empty() => Ok(Secret::new(key)),
        Ok(_) => Err("secret decodes to an empty key".to_owned()),
        Err(_) => Err("secret is not whsec_ followed by base64".to_owned()),
    }
}

/// Standard base64, padded or not.
fn decode_lenient(text: &[u8]) -> Option<Vec<u8>> {
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(text)
        .ok()
}

/// The raw Ed25519 key of a prepared `whpk_` entry, or `None` for an HMAC
/// key.
pub(super) fn public_key(key: &Secret) -> Option<&[u8]> {
    key.expose()
        .strip_prefix(PUBLIC)
        .filter(|raw| raw.len() == 32)
}

/// A request's Standard Webhooks headers, parsed.
pub(super) struct Signed<'a> {
    id: &'a [u8],
    timestamp_text: &'a [u8],
    timestamp: i64,
    /// `v1` tags (HMAC-SHA256).
    v1: Vec<hmac::Tag>,
    /// `v1a` signatures (Ed25519).
    v1a: Vec<[u8; 64]>,
}

impl Signed<'_> {
    /// Whether the request carries a `v1a` signature.
    pub(super) fn has_v1a(&self) -> bool {
        !self.v1a.is_empty()
    }

    fn message_parts<'b>(&'b self, body: &'b [u8]) -> [&'b [u8]; 5] {
        [self.id, b".", self.timestamp_text, b".", body]
    }

    /// Whether one of the `v1a` signatures verifies under `key`.
    pub(super) fn verifies_v1a(&self, key: &[u8], body: &[u8]) -> bool {
        if self.v1a.is_empty() {
            return false;
        }
        let message = self.message_parts(body).concat();
        let key = ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, key);
        self.v1a.iter().any(|sig| key.verify(&message, sig).is_ok())
    }
}

/// The signatures of a `webhook-signature` list: `v1` values that are a
/// base64 tag and `v1a` values that are a base64 64-byte signature; other
/// entries are skipped. Bounded: a list longer than a few keys' worth is
/// read no further, and at most [`MAX_V1A`] `v1a` signatures are kept (each
/// costs an Ed25519 verification per public key).
fn signatures(value: &[u8]) -> (Vec<hmac::Tag>, Vec<[u8; 64]>) {
    let (mut v1, mut v1a) = (Vec::new(), Vec::new());
    for entry in value.split(|&b| b == b' ').take(MAX_ENTRIES) {
        if let Some(text) = entry.strip_prefix(b"v1,") {
            v1.extend(hmac::tag_from_base64(text));
        } else if let Some(text) = entry.strip_prefix(b"v1a,")
            && text.len() <= 100
            && v1a.len() < MAX_V1A
            && let Some(sig) = decode_lenient(text).and_then(|b| <[u8; 64]>::try_from(b).ok())
        {
            v1a.push(sig);
        }
    }
    (v1, v1a)
}

/// Signature entries read from one header at most.
const MAX_ENTRIES: usize = 16;
/// `v1a` signatures checked per request at most: a sender signs with one
/// key, two during a rotation.
const MAX_V1A: usize = 4;

/// Reads the headers; `MissingSignature` / `MalformedSignature` as the
/// status table says.
pub(super) fn parse(headers: &HeaderMap) -> Result<Signed<'_>, Error> {
    let (names, value) = match hmac::header(headers, STANDARD.signature) {
        Some(value) => (&STANDARD, value),
        None => match hmac::header(headers, SVIX.signature) {
            Some(value) => (&SVIX, value),
            None => return Err(Error::MissingSignature(STANDARD.signature)),
        },
    };
    let (v1, v1a) = signatures(value);
    if v1.is_empty() && v1a.is_empty() {
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
    Ok(Signed {
        id,
        timestamp_text,
        timestamp,
        v1,
        v1a,
    })
}

/// The index in `keys` of the first entry a signature of `signed` matches:
/// a `v1` tag under a `whsec_` secret (compared in constant time; a public
/// key is never an HMAC key) or a `v1a` signature under a `whpk_` key.
pub(super) fn match_keys(
    signed: &Signed<'_>,
    keys: &[Secret],
    body: &[u8],
) -> Result<usize, Error> {
    let parts = signed.message_parts(body);
    let hmac = if signed.v1.is_empty() {
        Err(Error::InvalidSignature)
    } else {
        hmac::match_with(
            keys,
            |key| match public_key(key) {
                // An empty expectation equals no 32-byte tag.
                Some(_) => Vec::new(),
                None => hmac::tag(key.expose(), &parts).to_vec(),
            },
            &signed.v1,
        )
    };
    hmac.or_else(|_| {
        keys.iter()
            .position(|key| public_key(key).is_some_and(|pk| signed.verifies_v1a(pk, body)))
            .ok_or(Error::InvalidSignature)
    })
}

/// What a request that matched key `secret_index` is, once its timestamp is
/// inside the window.
pub(super) fn verified(
    signed: &Signed<'_>,
    secret_index: usize,
    tolerance: Duration,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    hmac::check_window(signed.timestamp, now, tolerance)?;
    Ok(Verified {
        event_id: String::from_utf8_lossy(signed.id).into_owned(),
        event_type: json_fields(body, ["/type"]).and_then(|[kind]| kind.str()),
        timestamp: Some(signed.timestamp),
        secret_index,
    })
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let signed = parse(headers)?;
    let index = match_keys(&signed, keys, body)?;
    verified(&signed, index, tolerance, body, now)
}

/// [`sign`] with a `whsec_` secret; a `whpk_` key verifies only.
pub(super) fn signer(s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
    if public_key(s.key).is_some() || s.key.expose().is_empty() {
        return Err(PUBLIC_ONLY);
    }
    Ok(sign(s.key, s.body, s.id, s.timestamp))
}

/// Why a source that holds only public keys cannot sign.
pub(super) const PUBLIC_ONLY: &str = "the sender signs with an Ed25519 private key (v1a) and hookgate holds only public keys; \
     list a whsec_ secret to sign v1 (or, for [source.resign], give resign.secret)";

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
        signer(s)
    }

    fn can_sign_with(&self, key: &Secret) -> bool {
        public_key(key).is_none()
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(RESIGNED)
    }
}

/// The headers a re-signed delivery replaces: the signature and its time,
/// in both header families.
pub(super) const RESIGNED: &[&str] = &[
    "webhook-signature",
    "webhook-timestamp",
    "svix-signature",
    "svix-timestamp",
];

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

/// `v1a` (Ed25519) against published vectors and as an attacker would try it.
#[cfg(test)]
mod v1a {
    use super::super::Scheme;
    use super::super::test_support::{TOLERANCE, headers, key};
    use super::*;

    /// Mobiscroll Connect's Standard Webhooks v1a vectors, "generated by the
    /// Connect server signer": `sdks/ruby/spec/fixtures/webhook-vectors.json`
    /// in github.com/acidb/mobiscroll-connect-sdks at commit 3da3f497. The
    /// specification's repository has no v1a vectors; its open pull request
    /// for Python (#304) signs the same way.
    const ACTIVE: &[u8] = b"whpk_0r0+Z02Sv1SRb1QjsKUnil6t2oqtAyhn5HHfKgbTXFs=";
    const PREVIOUS: &[u8] = b"whpk_4bVYVyWUPGQLCcnQQoGU4qTyIeucOFTnkZXlNFAlv6g=";
    const UNRELATED: &[u8] = b"whpk_ayphRQPtMA3vgSzLAuQ80QvyDQbO3ha9Xgc6xCwBWXI=";
    const ID: &str = "msg_2a161f33-a287-419f-85f9-fc95dbecccdd";
    const TS: i64 = 1_790_000_000;
    const SIG_ACTIVE: &str = "v1a,ClNzh8jskfPsDqArmUq6vxG6/PAQmLXf7sMsXnReG1DAI3lMxKcQEyEqqWe/weLoTo8g72qIJ+H0nA1WhNWEDA==";
    const SIG_PREVIOUS: &str = "v1a,MYPOv3exr1vMvu95bLYcu1k3hDAQeC66XmOy91Y34m2q/mBd3j1dhT+ubQYkMZF7FxvItnlwU9yXKqd2A1SWDQ==";
    const BODY: &str = "{\"eventType\":\"event.updated\",\"userId\":\"user_42\",\"provider\":\"google\",\"calendarId\":\"primary\",\"events\":[{\"id\":\"evt_1\",\"title\":\"Caf\u{e9} meeting \u{2615} \u{2014} Zo\u{eb}\",\"lastModified\":\"2026-09-21T10:00:00.000Z\"}]}";

    fn keys(list: &[&[u8]]) -> Vec<Secret> {
        list.iter()
            .map(|k| Scheme::Standard.prepare_key(&key(k)).expect("a valid key"))
            .collect()
    }

    fn check(
        keys: &[Secret],
        id: &str,
        ts: &str,
        sig: &str,
        body: &str,
    ) -> Result<Verified, Error> {
        let h = headers(&[
            ("webhook-id", id),
            ("webhook-timestamp", ts),
            ("webhook-signature", sig),
        ]);
        Scheme::Standard.verify(keys, TOLERANCE, &h, body.as_bytes(), TS)
    }

    #[test]
    fn the_published_vectors_verify_by_the_key_that_signed_them() {
        let ts = TS.to_string();
        let both = keys(&[ACTIVE, PREVIOUS]);
        let got = check(&both, ID, &ts, SIG_ACTIVE, BODY).expect("active");
        assert_eq!((got.secret_index, got.event_id.as_str()), (0, ID));
        assert_eq!(
            check(&both, ID, &ts, SIG_PREVIOUS, BODY).map(|v| v.secret_index),
            Ok(1)
        );
        let dual = format!("{SIG_ACTIVE} {SIG_PREVIOUS}");
        assert_eq!(
            check(&keys(&[PREVIOUS]), ID, &ts, &dual, BODY).map(|v| v.secret_index),
            Ok(0)
        );
        // A v1 entry beside it is skipped when no whsec_ secret matches it.
        let mixed = format!("v1,BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc= {SIG_ACTIVE}");
        assert_eq!(
            check(&keys(&[ACTIVE]), ID, &ts, &mixed, BODY).map(|v| v.secret_index),
            Ok(0)
        );
    }

    #[test]
    fn the_published_refusals_are_refused() {
        let ts = TS.to_string();
        let active = keys(&[ACTIVE]);
        let bad = Err(Error::InvalidSignature);
        assert_eq!(
            check(&keys(&[PREVIOUS]), ID, &ts, SIG_ACTIVE, BODY),
            bad,
            "wrong key"
        );
        let dual = format!("{SIG_ACTIVE} {SIG_PREVIOUS}");
        assert_eq!(
            check(&keys(&[UNRELATED]), ID, &ts, &dual, BODY),
            bad,
            "unrelated key"
        );
        assert_eq!(
            check(&active, "msg_other", &ts, SIG_ACTIVE, BODY),
            bad,
            "other id"
        );
        assert_eq!(
            check(&active, ID, "1790000001", SIG_ACTIVE, BODY),
            bad,
            "other time"
        );
        let tampered = BODY.replace("Caf\u{e9}", "Cafe");
        assert_eq!(
            check(&active, ID, &ts, SIG_ACTIVE, &tampered),
            bad,
            "changed body"
        );
        for malformed in ["v1a,@@not-base64@@", "v1a,AAAAAAAAAAAAAA=="] {
            assert_eq!(
                check(&active, ID, &ts, malformed, BODY),
                Err(Error::MalformedSignature("webhook-signature")),
                "{malformed}"
            );
        }
        assert_eq!(
            check(&active, ID, "abc", SIG_ACTIVE, BODY),
            Err(Error::MalformedSignature("webhook-timestamp"))
        );
        // Outside the window, both ways (tolerance 300 s).
        let h = headers(&[
            ("webhook-id", ID),
            ("webhook-timestamp", &ts),
            ("webhook-signature", SIG_ACTIVE),
        ]);
        for now in [TS + 301, TS - 301] {
            let got = Scheme::Standard.verify(&active, TOLERANCE, &h, BODY.as_bytes(), now);
            assert!(
                matches!(got, Err(Error::TimestampOutsideWindow { .. })),
                "now {now}: {got:?}"
            );
        }
    }

    /// RFC 8032 §7.1 TEST 1's key over the specification's example message:
    /// the whpk_ form of the RFC's public key, and a signature made with its
    /// seed (Ed25519 signatures are deterministic).
    #[test]
    fn the_rfc_key_over_the_spec_message() {
        use ring::signature::{Ed25519KeyPair, KeyPair};
        let seed = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .expect("hex");
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("a seed");
        let whpk = format!("whpk_{}", B64.encode(pair.public_key().as_ref()));
        assert_eq!(whpk, "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=");
        let id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
        let body = r#"{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}"#;
        let sig = pair.sign(format!("{id}.1674087231.{body}").as_bytes());
        let header = format!("v1a,{}", B64.encode(sig.as_ref()));
        assert_eq!(
            header,
            "v1a,pbpYBMlty2hExn4zt0UTGb6BaP2Vq5AfyzjB9GGV3x/wCJKd8UjOCf8Qhaji6TKY9C5eNMnlF0GG4udaO6B7Ag=="
        );
        let k = keys(&[whpk.as_bytes()]);
        let h = headers(&[
            ("webhook-id", id),
            ("webhook-timestamp", "1674087231"),
            ("webhook-signature", &header),
        ]);
        let got = Scheme::Standard.verify(&k, TOLERANCE, &h, body.as_bytes(), 1_674_087_231);
        assert_eq!(
            got.map(|v| v.event_type),
            Ok(Some("contact.created".into()))
        );
    }

    /// RFC 8032 §7.1 TESTs 1-3, as `ring` verifies them for `v1a`.
    #[test]
    fn rfc_8032_vectors() {
        for (pk, msg, sig) in [
            (
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
                "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
            ),
            (
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
                "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
            ),
            (
                "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
                "af82",
                "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
            ),
        ] {
            let (pk, msg, mut sig) = (
                hex::decode(pk).expect("hex"),
                hex::decode(msg).expect("hex"),
                hex::decode(sig).expect("hex"),
            );
            let key = ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &pk);
            assert!(key.verify(&msg, &sig).is_ok());
            sig[0] ^= 1;
            assert!(key.verify(&msg, &sig).is_err());
        }
    }

    /// A whpk_ key is public: an HMAC made with its bytes (or with the
    /// prepared form hookgate keeps) must never pass as a `v1` signature.
    #[test]
    fn a_v1_tag_made_with_the_public_key_is_refused() {
        let active = keys(&[ACTIVE]);
        let raw = B64
            .decode(&ACTIVE[5..])
            .expect("the vector's key is base64");
        let ts = TS.to_string();
        let body = BODY.as_bytes();
        for forged_key in [raw.clone(), active[0].expose().to_vec(), ACTIVE.to_vec()] {
            let tag = hmac::tag(
                &forged_key,
                &[ID.as_bytes(), b".", ts.as_bytes(), b".", body],
            );
            let sig = format!("v1,{}", hmac::encode_base64(&tag));
            assert_eq!(
                check(&active, ID, &ts, &sig, BODY),
                Err(Error::InvalidSignature)
            );
        }
        // An all-zero tag meets no public key either.
        let zeros = format!("v1,{}", hmac::encode_base64(&[0u8; 32]));
        assert_eq!(
            check(&active, ID, &ts, &zeros, BODY),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn whsec_and_whpk_sit_in_one_list_and_only_whsec_signs() {
        let secret = b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let list = keys(&[ACTIVE, secret]);
        // v1 by the secret at index 1, v1a by the key at index 0.
        let ts = TS.to_string();
        let v1 = sign(&list[1], BODY.as_bytes(), Some(ID), TS);
        let v1 = &v1[2].1;
        assert_eq!(
            check(&list, ID, &ts, v1, BODY).map(|v| v.secret_index),
            Ok(1)
        );
        let both = format!("{v1} {SIG_ACTIVE}");
        assert_eq!(
            check(&list, ID, &ts, &both, BODY).map(|v| v.secret_index),
            Ok(1)
        );
        assert_eq!(
            check(&list, ID, &ts, SIG_ACTIVE, BODY).map(|v| v.secret_index),
            Ok(0)
        );
        assert_eq!(Scheme::Standard.signing_key(&list), Some(&list[1]));
        assert!(!Scheme::Standard.can_sign_with(&list[0]));
        let refused = Scheme::Standard.sign(&list[0], BODY.as_bytes(), Some(ID), TS);
        assert_eq!(refused, Err(PUBLIC_ONLY));
    }

    /// A header stuffed with `v1a` entries costs at most four Ed25519
    /// checks per key: a valid signature after the fourth is not looked at.
    #[test]
    fn at_most_four_v1a_signatures_are_checked() {
        let ts = TS.to_string();
        let junk = "v1a,".to_owned() + &B64.encode([7u8; 64]);
        let after_four = format!("{junk} {junk} {junk} {junk} {SIG_ACTIVE}");
        let after_three = format!("{junk} {junk} {junk} {SIG_ACTIVE}");
        let active = keys(&[ACTIVE]);
        assert_eq!(
            check(&active, ID, &ts, &after_four, BODY),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            check(&active, ID, &ts, &after_three, BODY).map(|v| v.secret_index),
            Ok(0)
        );
    }

    #[test]
    fn keys_of_the_wrong_shape_are_refused_without_their_value() {
        for (bad, why) in [
            (&b"whpk_AAAA"[..], "32-byte"),
            (b"whpk_not-a-key", "whpk_ followed by base64"),
            (
                b"whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=",
                "private key",
            ),
        ] {
            let err = Scheme::Standard
                .prepare_key(&key(bad))
                .expect_err("refused");
            assert!(err.contains(why), "{err}");
            assert!(!err.contains("nWGxne"), "{err}");
        }
    }
}
