//! Plivo Voice (signature V3): `X-Plivo-Signature-V3: <base64>[,<base64>…]` (one
//! signature per active auth token) and `X-Plivo-Signature-V3-Nonce`. The
//! signature is the HMAC-SHA256 (key: the account's auth token) of
//!
//! ```text
//! <url without query> [ "?" <query, sorted, "k=v" joined by "&"> ] [ "." ]
//!     <POST parameters sorted, "k" + "v" concatenated> "." <nonce>
//! ```
//!
//! where `?` is written when the query or the parameters are not empty and
//! `.` when both are not — the construction of Plivo's own libraries. The URL
//! is the one configured at Plivo, so it comes from the source's
//! `public_url` (a proxy sees another scheme, host or path); its query is
//! read from there. Parameters come from the form body, duplicates kept and
//! sorted by name then value. No time is signed, so there is no replay
//! window (dedupe still applies): the event id is the body digest, the type
//! the `Event` parameter when there is one. Only POST callbacks are
//! handled; the older V2 signature (URL and nonce only, not the parameters)
//! is not accepted — Plivo's messaging callbacks, which carry only V2, are not
//! supported.
//!
//! Source: <https://docs.plivo.com/docs/voice/xml/request/validation>;
//! the known-answer values are those of Plivo's Go SDK tests
//! (plivo/plivo-go utils_test.go, TestValidateSignatureV3Pass1 and Pass3).

use http::HeaderMap;

use super::handshake::form_pairs;
use super::provider::{Delivery, Provider, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

const SIGNATURE: &str = "x-plivo-signature-v3";
const NONCE: &str = "x-plivo-signature-v3-nonce";

/// Longest signature header considered (a few tokens' signatures).
const MAX_SIGNATURE: usize = 8 * 1024;

/// The signed bytes before `.` + nonce.
fn signed_url(public_url: &str, body: &[u8]) -> Vec<u8> {
    let without_fragment = public_url.split('#').next().unwrap_or_default();
    let (base, query) = match without_fragment.split_once('?') {
        Some((base, query)) => (base, query),
        None => (without_fragment, ""),
    };
    let mut query = form_pairs(query.as_bytes());
    query.sort();
    let mut params = form_pairs(body);
    params.sort();

    let mut out = base.as_bytes().to_vec();
    if !query.is_empty() || !params.is_empty() {
        out.push(b'?');
    }
    for (i, (k, v)) in query.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(k);
        out.push(b'=');
        out.extend_from_slice(v);
    }
    if !query.is_empty() && !params.is_empty() {
        out.push(b'.');
    }
    for (k, v) in &params {
        out.extend_from_slice(k);
        out.extend_from_slice(v);
    }
    out
}

/// The usable signatures of the header, or why there are none.
fn candidates(headers: &HeaderMap) -> Result<Vec<hmac::Tag>, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    if value.len() > MAX_SIGNATURE {
        return Err(Error::MalformedSignature(SIGNATURE));
    }
    let tags: Vec<hmac::Tag> = value
        .split(|&b| b == b',')
        .filter_map(|entry| hmac::tag_from_base64(entry.trim_ascii()))
        .collect();
    if tags.is_empty() {
        return Err(Error::MalformedSignature(SIGNATURE));
    }
    Ok(tags)
}

pub(super) fn verify(
    public_url: &str,
    keys: &[Secret],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Verified, Error> {
    let tags = candidates(headers)?;
    let nonce = hmac::header(headers, NONCE)
        .filter(|n| !n.is_empty())
        .ok_or(Error::MalformedSignature(NONCE))?;
    let url = signed_url(public_url, body);
    let secret_index = hmac::match_key(keys, &[&url, b".", nonce], &tags)?;
    let event_type = form_pairs(body)
        .into_iter()
        .find(|(k, _)| k == b"Event")
        .and_then(|(_, v)| String::from_utf8(v).ok());
    Ok(Verified {
        event_id: hmac::body_sha256_hex(body),
        event_type,
        timestamp: None,
        secret_index,
    })
}

pub(super) fn sign(public_url: &str, key: &Secret, body: &[u8]) -> Vec<(String, String)> {
    let nonce = hmac::random_id();
    let url = signed_url(public_url, body);
    let tag = hmac::tag(key.expose(), &[&url, b".", nonce.as_bytes()]);
    vec![
        ("X-Plivo-Signature-V3".to_owned(), hmac::encode_base64(&tag)),
        ("X-Plivo-Signature-V3-Nonce".to_owned(), nonce),
    ]
}

/// `scheme = "plivo"`: HMAC-SHA256 over the public URL, the sorted form
/// parameters and a nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plivo {
    public_url: String,
}

impl Plivo {
    pub(super) fn new(public_url: Option<&str>) -> Plivo {
        Plivo {
            public_url: public_url.unwrap_or_default().to_owned(),
        }
    }
}

impl Provider for Plivo {
    fn name(&self) -> &'static str {
        "plivo"
    }

    fn signs_timestamp(&self) -> bool {
        false
    }

    fn needs_public_url(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(&self.public_url, d.keys, d.headers, d.body)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(&self.public_url, s.key, s.body))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // plivo/plivo-go utils_test.go: auth token, nonce and these call parameters (here as the
    // form body Plivo posts); TestValidateSignatureV3Pass1 with a query in the URL, Pass3
    // without.
    const TOKEN: &[u8] = b"Y2Q2ZDgxZmY5YWRiOTI5YmQ1Njg0MTAxZWIyOTc4";
    const NONCE_VALUE: &str = "31627761595286130198";
    const URL_QUERY: &str =
        "https://plivobin.non-prod.plivops.com/api/v1/validate_signature03.xml/?a=b&c=d";
    const URL_PLAIN: &str = "https://plivobin.non-prod.plivops.com/api/v1/validate_signature03.xml";
    const SIG_QUERY: &str = "k7Pusd4OxCIjR5IfA9iedDNu/h/gbdYqdzG/MiYtd1c=";
    const SIG_PLAIN: &str = "iAjE5QqI37mbkYe4w3jTMudqEzbDufdqi7sYwTu64e0=";
    const BODY: &str = "Direction=outbound&From=19792014278\
        &ALegUUID=3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36&CallStatus=in-progress&BillRate=0.002\
        &ParentAuthID=MANWVLYTK4ZWU1YTY4QA\
        &To=sip%3APlivoSignature382029104058171078704104%40phone-qa.voice.plivodev.com\
        &ALegRequestUUID=3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36\
        &CallUUID=3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36\
        &RequestUUID=3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36\
        &SIP-H-To=%3Csip%3APlivoSignature382029104058171078704104%4052.9.11.55%3Btransport%3Dudp%3E%3Btag%3D1\
        &SessionStart=2020-04-08+11%3A34%3A33.238707&Event=StartApp";

    fn plivo(url: &str) -> Scheme {
        coded(Plivo::new(Some(url)))
    }

    fn check(url: &str, signature: &str, body: &str, token: &[u8]) -> Result<Verified, Error> {
        let h = headers(&[(SIGNATURE, signature), (NONCE, NONCE_VALUE)]);
        plivo(url).verify(&[key(token)], TOLERANCE, &h, body.as_bytes(), 0)
    }

    #[test]
    fn sdk_vectors_verify() {
        for (url, sig) in [(URL_QUERY, SIG_QUERY), (URL_PLAIN, SIG_PLAIN)] {
            let got = check(url, sig, BODY, TOKEN).expect("the SDK's vector");
            assert_eq!(got.event_type.as_deref(), Some("StartApp"));
            assert_eq!(got.event_id, hmac::body_sha256_hex(BODY.as_bytes()));
        }
        // One of several tokens' signatures is enough; parameter order does not matter.
        let several = format!("c2lnbmF0dXJlLW9mLWFub3RoZXItdG9rZW4tLS0tLS0=,{SIG_PLAIN}");
        assert!(check(URL_PLAIN, &several, BODY, TOKEN).is_ok());
        let reordered = BODY.replacen("Direction=outbound&", "", 1) + "&Direction=outbound";
        assert!(check(URL_PLAIN, SIG_PLAIN, &reordered, TOKEN).is_ok());
    }

    #[test]
    fn the_signed_url_is_built_as_plivos_libraries_build_it() {
        assert_eq!(
            signed_url("https://a.example/p?z=1&a=2", b"B=x&A=y"),
            b"https://a.example/p?a=2&z=1.AyBx".to_vec()
        );
        assert_eq!(
            signed_url("https://a.example/p", b"B=x"),
            b"https://a.example/p?Bx".to_vec()
        );
        assert_eq!(
            signed_url("https://a.example/p?z=1", b""),
            b"https://a.example/p?z=1".to_vec()
        );
        assert_eq!(
            signed_url("https://a.example/p", b""),
            b"https://a.example/p".to_vec()
        );
    }

    #[test]
    fn wrong_token_url_parameters_or_nonce_are_refused() {
        assert_eq!(
            check(URL_PLAIN, SIG_PLAIN, BODY, b"another-token"),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            check(URL_QUERY, SIG_PLAIN, BODY, TOKEN),
            Err(Error::InvalidSignature)
        );
        let tampered = BODY.replacen("in-progress", "completed", 1);
        assert_eq!(
            check(URL_PLAIN, SIG_PLAIN, &tampered, TOKEN),
            Err(Error::InvalidSignature)
        );
        let h = headers(&[(SIGNATURE, SIG_PLAIN), (NONCE, "31627761595286130199")]);
        assert_eq!(
            plivo(URL_PLAIN).verify(&[key(TOKEN)], TOLERANCE, &h, BODY.as_bytes(), 0),
            Err(Error::InvalidSignature)
        );
        let h = headers(&[(SIGNATURE, SIG_PLAIN)]);
        assert_eq!(
            plivo(URL_PLAIN).verify(&[key(TOKEN)], TOLERANCE, &h, BODY.as_bytes(), 0),
            Err(Error::MalformedSignature(NONCE))
        );
    }

    #[test]
    fn common() {
        common_checks(
            &plivo("https://hooks.example.com/plivo?x=1"),
            &key(b"auth-token"),
            b"CallUUID=abc&Event=Hangup&From=%2B15550001",
            &[SIGNATURE],
        );
    }

    #[test]
    fn garbage_never_panics() {
        let h = headers(&[(SIGNATURE, SIG_PLAIN), (NONCE, NONCE_VALUE)]);
        garbage_is_refused(
            &plivo(URL_PLAIN),
            &[key(TOKEN)],
            &h,
            BODY.as_bytes(),
            0,
            &[SIGNATURE, NONCE],
        );
    }
}
