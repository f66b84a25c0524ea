//! Sinch Voice (and Verification) callbacks: `Authorization: Application
//! <application key>:<signature>`, the signature being the base64
//! HMAC-SHA256 (key: the base64-decoded application secret) of
//!
//! ```text
//! POST \n <Content-MD5> \n <Content-Type> \n x-timestamp:<x-timestamp> \n <path>
//! ```
//!
//! where Content-MD5 is the base64 MD5 of the body (empty for an empty body),
//! Content-Type and `x-timestamp` are the request's headers as sent, and the
//! path is that of the callback URL configured at Sinch — the source's
//! `public_url`. The signed `x-timestamp` (ISO 8601, UTC) is held to the
//! replay window. The application key in the header is not compared: the
//! signature proves the secret. The event id is the body digest, the type
//! the body's `/event` (`ice`, `ace`, `dice`, …).
//!
//! MD5 only fingerprints the body inside the signed string; the
//! authentication is the HMAC-SHA256 over it.
//!
//! Source and known-answer values:
//! <https://developers.sinch.com/docs/voice/api-reference/authentication/callback-signed-request>
//! (its worked example).

use std::time::Duration;

use http::HeaderMap;

use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

const AUTHORIZATION: &str = "authorization";
const TIMESTAMP: &str = "x-timestamp";
const CONTENT_TYPE: &str = "content-type";

/// Longest `Authorization` value considered.
const MAX_AUTHORIZATION: usize = 1024;

/// MD5 (RFC 1321) of `data`.
fn md5(data: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(data).into()
}

/// The path of the callback URL: what follows the authority, up to the
/// query or fragment; `/` when there is none.
fn path(public_url: &str) -> &str {
    let after_scheme = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest);
    let path_and_more = after_scheme
        .find('/')
        .map_or("", |start| &after_scheme[start..]);
    let end = path_and_more
        .find(['?', '#'])
        .unwrap_or(path_and_more.len());
    match &path_and_more[..end] {
        "" => "/",
        p => p,
    }
}

fn content_md5(body: &[u8]) -> String {
    if body.is_empty() {
        String::new()
    } else {
        hmac::encode_base64(&md5(body))
    }
}

/// The configured secret is the application secret, base64 as the
/// dashboard shows it.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let text = secret.expose().trim_ascii();
    if text.is_empty() {
        return Err("secret is empty".to_owned());
    }
    hmac::decode_base64_any(text)
        .filter(|k| !k.is_empty())
        .map(Secret::new)
        .ok_or_else(|| "the application secret is not base64".to_owned())
}

/// The signature of an `Application <key>:<signature>` value.
fn signature(headers: &HeaderMap) -> Result<hmac::Tag, Error> {
    let value =
        hmac::header(headers, AUTHORIZATION).ok_or(Error::MissingSignature(AUTHORIZATION))?;
    let malformed = Error::MalformedSignature(AUTHORIZATION);
    if value.len() > MAX_AUTHORIZATION {
        return Err(malformed);
    }
    let (scheme, credentials) = value
        .iter()
        .position(|&b| b == b' ')
        .map(|space| (&value[..space], &value[space + 1..]))
        .ok_or(malformed.clone())?;
    if !scheme.eq_ignore_ascii_case(b"application") {
        return Err(malformed);
    }
    let colon = credentials
        .iter()
        .rposition(|&b| b == b':')
        .ok_or(malformed.clone())?;
    hmac::tag_from_base64(&credentials[colon + 1..]).ok_or(malformed)
}

pub(super) fn verify(
    public_url: &str,
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let tag = signature(headers)?;
    let timestamp_text =
        hmac::header(headers, TIMESTAMP).ok_or(Error::MissingSignature(TIMESTAMP))?;
    let content_type = hmac::header(headers, CONTENT_TYPE).unwrap_or_default();
    let md5 = content_md5(body);
    let parts: [&[u8]; 9] = [
        b"POST\n",
        md5.as_bytes(),
        b"\n",
        content_type,
        b"\nx-timestamp:",
        timestamp_text,
        b"\n",
        path(public_url).as_bytes(),
        b"",
    ];
    let secret_index = hmac::match_key(keys, &parts, &[tag])?;
    let timestamp =
        hmac::parse_rfc3339(timestamp_text).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    hmac::check_window(timestamp, now, tolerance)?;
    Ok(Verified {
        event_id: hmac::body_sha256_hex(body),
        event_type: json_fields(body, ["/event"]).and_then(|[event]| event.str()),
        timestamp: Some(timestamp),
        secret_index,
    })
}

pub(super) fn sign(
    public_url: &str,
    key: &Secret,
    body: &[u8],
    timestamp: i64,
) -> Vec<(String, String)> {
    let ts = hmac::format_time(super::TimestampFormat::Rfc3339, timestamp);
    let content_type = "application/json";
    let signed = format!(
        "POST\n{}\n{content_type}\nx-timestamp:{ts}\n{}",
        content_md5(body),
        path(public_url)
    );
    let tag = hmac::tag(key.expose(), &[signed.as_bytes()]);
    vec![
        (
            "Authorization".to_owned(),
            format!("Application hookgate:{}", hmac::encode_base64(&tag)),
        ),
        ("x-timestamp".to_owned(), ts),
        ("Content-Type".to_owned(), content_type.to_owned()),
    ]
}

/// `scheme = "sinch-voice"`: HMAC-SHA256 over the body's MD5, content type,
/// timestamp and URL path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SinchVoice {
    public_url: String,
}

impl SinchVoice {
    pub(super) fn new(public_url: Option<&str>) -> SinchVoice {
        SinchVoice {
            public_url: public_url.unwrap_or_default().to_owned(),
        }
    }
}

impl Provider for SinchVoice {
    fn name(&self) -> &'static str {
        "sinch-voice"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn needs_public_url(&self) -> bool {
        true
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        prepare_key(secret)
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        let url = &self.public_url;
        verify(url, d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(&self.public_url, s.key, s.body, s.timestamp))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // The worked example of Sinch's Voice "Callback Request Signing" page.
    const SECRET: &[u8] = b"BeIukql3pTKJ8RGL5zo0DA==";
    const URL: &str = "https://callbacks.yourdomain.com/sinch/callback/ace";
    const BODY: &str = r#"{"event":"ace","callid":"822aa4b7-05b4-4d83-87c7-1f835ee0b6f6_257","timestamp":"2014-09-24T10:59:41Z","version":1}"#;
    const AUTH: &str = "application 669E367E-6BBA-48AB-AF15-266871C28135:Tg6fMyo8mj9pYfWQ9ssbx3Tc1BNC87IEygAfLbJqZb4=";
    const TS: &str = "2014-09-24T10:59:41Z";
    const NOW: i64 = 1_411_556_381;

    fn scheme(url: &str) -> Scheme {
        coded(SinchVoice::new(Some(url)))
    }

    fn secret() -> Secret {
        scheme(URL)
            .prepare_key(&key(SECRET))
            .expect("base64 secret")
    }

    fn request(auth: &str, content_type: &str) -> HeaderMap {
        headers(&[
            (AUTHORIZATION, auth),
            (TIMESTAMP, TS),
            (CONTENT_TYPE, content_type),
        ])
    }

    #[test]
    fn md5_matches_rfc_1321() {
        for (input, want) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            assert_eq!(hex::encode(md5(input.as_bytes())), want, "{input}");
        }
        // The example body's Content-MD5 as the page gives it.
        assert_eq!(content_md5(BODY.as_bytes()), "REWF+X220L4/Gw1spXOU7g==");
    }

    #[test]
    fn docs_example_verifies() {
        let got = scheme(URL)
            .verify(
                &[secret()],
                TOLERANCE,
                &request(AUTH, "application/json"),
                BODY.as_bytes(),
                NOW,
            )
            .expect("the documented example");
        assert_eq!(got.timestamp, Some(NOW));
        assert_eq!(got.event_type.as_deref(), Some("ace"));
        // The scheme word is case-insensitive.
        let upper = AUTH.replacen("application", "Application", 1);
        assert!(
            scheme(URL)
                .verify(
                    &[secret()],
                    TOLERANCE,
                    &request(&upper, "application/json"),
                    BODY.as_bytes(),
                    NOW
                )
                .is_ok()
        );
    }

    #[test]
    fn another_path_content_type_or_body_is_refused() {
        for (url, content_type, body) in [
            (
                "https://callbacks.yourdomain.com/sinch/callback/result",
                "application/json",
                BODY,
            ),
            (URL, "application/json; charset=utf-8", BODY),
            (URL, "application/json", &BODY.replacen("ace", "dice", 1)),
        ] {
            let h = request(AUTH, content_type);
            assert_eq!(
                scheme(url).verify(&[secret()], TOLERANCE, &h, body.as_bytes(), NOW),
                Err(Error::InvalidSignature),
                "{url} {content_type}"
            );
        }
        let wrong = scheme(URL)
            .prepare_key(&key(b"c29tZSBvdGhlciBzZWNyZXQ="))
            .expect("base64");
        let h = request(AUTH, "application/json");
        assert_eq!(
            scheme(URL).verify(&[wrong], TOLERANCE, &h, BODY.as_bytes(), NOW),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn paths() {
        assert_eq!(path("https://a.example/x/y?z=1#f"), "/x/y");
        assert_eq!(path("https://a.example"), "/");
        assert_eq!(path("https://a.example?x=1"), "/");
        assert_eq!(path("a.example/p"), "/p");
    }

    #[test]
    fn secrets_are_base64() {
        assert!(scheme(URL).prepare_key(&key(b"")).is_err());
        assert!(scheme(URL).prepare_key(&key(b"not base64!")).is_err());
    }

    #[test]
    fn common() {
        let s = scheme("https://hooks.example.com/sinch/voice");
        let k = s
            .prepare_key(&key(b"c2lnbmluZy1zZWNyZXQ="))
            .expect("base64");
        common_checks(
            &s,
            &k,
            br#"{"event":"dice","callid":"c1"}"#,
            &[AUTHORIZATION],
        );
    }

    #[test]
    fn garbage_never_panics() {
        garbage_is_refused(
            &scheme(URL),
            &[secret()],
            &request(AUTH, "application/json"),
            BODY.as_bytes(),
            NOW,
            &[AUTHORIZATION, TIMESTAMP],
        );
    }
}
