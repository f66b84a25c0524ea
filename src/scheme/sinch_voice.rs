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

use super::{Error, Verified, hmac};
use crate::config::secret::Secret;

const AUTHORIZATION: &str = "authorization";
const TIMESTAMP: &str = "x-timestamp";
const CONTENT_TYPE: &str = "content-type";

/// Longest `Authorization` value considered.
const MAX_AUTHORIZATION: usize = 1024;

/// MD5 (RFC 1321) of `data`.
fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    // K[i] = floor(abs(sin(i + 1)) * 2^32), as tabulated in RFC 1321.
    const K: [u32; 64] = [
        0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
        0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
        0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
        0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
        0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
        0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
        0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
        0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
        0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
        0xeb86d391,
    ];
    let mut state: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
    let bit_len = (data.len() as u64).wrapping_mul(8);
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_le_bytes());
    for block in message.chunks_exact(64) {
        let mut m = [0u32; 16];
        for (word, bytes) in m.iter_mut().zip(block.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(K[i])
                .wrapping_add(m[g])
                .rotate_left(S[i]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(rotated);
        }
        for (s, v) in state.iter_mut().zip([a, b, c, d]) {
            *s = s.wrapping_add(v);
        }
    }
    let mut out = [0u8; 16];
    for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    out
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
        event_type: hmac::parse_json(body)
            .as_ref()
            .and_then(|j| hmac::pointer_str(j, "/event")),
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

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{TOLERANCE, common_checks, garbage_is_refused, headers, key};
    use super::*;

    // The worked example of Sinch's Voice "Callback Request Signing" page.
    const SECRET: &[u8] = b"BeIukql3pTKJ8RGL5zo0DA==";
    const URL: &str = "https://callbacks.yourdomain.com/sinch/callback/ace";
    const BODY: &str = r#"{"event":"ace","callid":"822aa4b7-05b4-4d83-87c7-1f835ee0b6f6_257","timestamp":"2014-09-24T10:59:41Z","version":1}"#;
    const AUTH: &str = "application 669E367E-6BBA-48AB-AF15-266871C28135:Tg6fMyo8mj9pYfWQ9ssbx3Tc1BNC87IEygAfLbJqZb4=";
    const TS: &str = "2014-09-24T10:59:41Z";
    const NOW: i64 = 1_411_556_381;

    fn scheme(url: &str) -> Scheme {
        Scheme::SinchVoice {
            public_url: url.to_owned(),
        }
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
