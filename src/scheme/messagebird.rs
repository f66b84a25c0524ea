//! MessageBird (Bird): `MessageBird-Signature-JWT: <JWT>`, a JSON Web Token
//! signed with HMAC (HS256, HS384 or HS512) under the account's signing key.
//! Its claims bind the request:
//!
//! - `iss` is `MessageBird`, `jti` is set;
//! - `url_hash` is the hex SHA-256 of the full URL MessageBird requested,
//!   query string included — the source's `public_url`, since a proxy sees
//!   another scheme, host or path;
//! - `payload_hash` is the hex SHA-256 of the body, present exactly when the
//!   body is not empty;
//! - `nbf` is when the token was issued (`exp` a minute later). hookgate holds
//!   `nbf` to the source's replay window, both directions.
//!
//! Only the HMAC algorithms are accepted (`none` and public-key algorithms
//! are refused before any key is tried). Requests whose URL carries
//! per-request query parameters (SMS status reports sent as `GET`) cannot be
//! matched by a fixed `public_url` and are refused. The event id is the body
//! digest (the token's `jti` for an empty body); the type is the body's
//! `/type` when it has one.
//!
//! Source: <https://developers.messagebird.com/docs/verify-http-requests>;
//! the known-answer values are MessageBird's reference set
//! (messagebird/go-rest-api signature_jwt/testdata/reference.json).

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use serde_json::Value;
use sha2::{Digest, Sha256, Sha384, Sha512};
use subtle::{Choice, ConstantTimeEq};

use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing};
use super::{Error, Verified, hmac as shared};
use crate::secret::Secret;

const SIGNATURE: &str = "messagebird-signature-jwt";

/// Longest token considered; MessageBird's are a few hundred bytes.
const MAX_TOKEN: usize = 8 * 1024;

/// Seconds a token stays valid after `nbf` when hookgate signs one (tests).
const LIFETIME: i64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Hs256,
    Hs384,
    Hs512,
}

impl Alg {
    fn from_name(name: &str) -> Option<Alg> {
        match name {
            "HS256" => Some(Alg::Hs256),
            "HS384" => Some(Alg::Hs384),
            "HS512" => Some(Alg::Hs512),
            _ => None,
        }
    }

    fn tag_len(self) -> usize {
        match self {
            Alg::Hs256 => 32,
            Alg::Hs384 => 48,
            Alg::Hs512 => 64,
        }
    }

    fn mac(self, key: &[u8], signed: &[u8]) -> Vec<u8> {
        fn run<M: Mac + KeyInit>(key: &[u8], signed: &[u8]) -> Vec<u8> {
            // HMAC takes keys of any length; were that ever to fail, an empty
            // tag matches no candidate (candidates have the full length).
            match <M as KeyInit>::new_from_slice(key) {
                Ok(mut m) => {
                    m.update(signed);
                    m.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            }
        }
        match self {
            Alg::Hs256 => run::<Hmac<Sha256>>(key, signed),
            Alg::Hs384 => run::<Hmac<Sha384>>(key, signed),
            Alg::Hs512 => run::<Hmac<Sha512>>(key, signed),
        }
    }
}

/// A token split and decoded, before its signature is checked.
struct Token<'a> {
    alg: Alg,
    /// `header.payload`, the signed bytes.
    signed: &'a [u8],
    claims: Value,
    signature: Vec<u8>,
}

fn parse(value: &[u8]) -> Result<Token<'_>, Error> {
    let malformed = Error::MalformedSignature(SIGNATURE);
    if value.is_empty() || value.len() > MAX_TOKEN {
        return Err(malformed);
    }
    let mut parts = value.split(|&b| b == b'.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed);
    };
    let json = |part: &[u8]| -> Option<Value> {
        let bytes = shared::decode_base64_any(part)?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
    };
    let header = json(header).ok_or(malformed.clone())?;
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::from_name)
        .ok_or(malformed.clone())?;
    let claims = json(payload).ok_or(malformed.clone())?;
    let signature = shared::decode_tag(super::Encoding::Base64Url, signature, alg.tag_len())
        .ok_or(malformed)?;
    // Three parts were found, so the value has a last `.`.
    let dot = value
        .iter()
        .rposition(|&b| b == b'.')
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    Ok(Token {
        alg,
        signed: &value[..dot],
        claims,
        signature,
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Constant-time equality of a claim with the value it must have; a missing
/// or non-string claim is unequal.
fn claim_is(claims: &Value, name: &str, want: &str) -> bool {
    claims
        .get(name)
        .and_then(Value::as_str)
        .is_some_and(|got| bool::from(got.as_bytes().ct_eq(want.as_bytes())))
}

pub(super) fn verify(
    public_url: &str,
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = shared::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let token = parse(value)?;
    let mut matched = None;
    for (index, key) in keys.iter().enumerate() {
        let want = token.alg.mac(key.expose(), token.signed);
        let hit: Choice = want.as_slice().ct_eq(token.signature.as_slice());
        if bool::from(hit) && matched.is_none() {
            matched = Some(index);
        }
    }
    let secret_index = matched.ok_or(Error::InvalidSignature)?;

    // The signature is MessageBird's; now the claims must describe this
    // request. A mismatch means the URL or body is not the one signed.
    let claims = &token.claims;
    let jti = claims
        .get("jti")
        .and_then(Value::as_str)
        .filter(|j| !j.is_empty());
    let payload_ok = match claims.get("payload_hash") {
        None => body.is_empty(),
        Some(_) => !body.is_empty() && claim_is(claims, "payload_hash", &sha256_hex(body)),
    };
    if !claim_is(claims, "iss", "MessageBird")
        || jti.is_none()
        || !claim_is(claims, "url_hash", &sha256_hex(public_url.as_bytes()))
        || !payload_ok
    {
        return Err(Error::InvalidSignature);
    }
    let nbf = claims
        .get("nbf")
        .and_then(Value::as_i64)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    shared::check_window(nbf, now, tolerance)?;

    let event_id = match jti {
        Some(j) if body.is_empty() => j.to_owned(),
        _ => shared::body_sha256_hex(body),
    };
    Ok(Verified {
        event_id,
        event_type: json_fields(body, ["/type"]).and_then(|[kind]| kind.str()),
        timestamp: Some(nbf),
        secret_index,
    })
}

/// An HS256 token as MessageBird would send it for `body` at `timestamp`.
pub(super) fn sign(
    public_url: &str,
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let b64 = |bytes: &[u8]| shared::encode(super::Encoding::Base64Url, bytes);
    let mut claims = serde_json::json!({
        "iss": "MessageBird",
        "nbf": timestamp,
        "exp": timestamp.saturating_add(LIFETIME),
        "jti": id.map_or_else(shared::random_id, str::to_owned),
        "url_hash": sha256_hex(public_url.as_bytes()),
    });
    if !body.is_empty() {
        claims["payload_hash"] = Value::String(sha256_hex(body));
    }
    let signed = format!(
        "{}.{}",
        b64(br#"{"alg":"HS256","typ":"JWT"}"#),
        b64(claims.to_string().as_bytes())
    );
    let tag = Alg::Hs256.mac(key.expose(), signed.as_bytes());
    vec![(SIGNATURE.to_owned(), format!("{signed}.{}", b64(&tag)))]
}

/// `scheme = "messagebird"`: an HMAC-signed JWT binding the public URL and
/// the body's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MessageBird {
    public_url: String,
}

impl MessageBird {
    pub(super) fn new(public_url: Option<&str>) -> MessageBird {
        MessageBird {
            public_url: public_url.unwrap_or_default().to_owned(),
        }
    }
}

impl Provider for MessageBird {
    fn name(&self) -> &'static str {
        "messagebird"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn needs_public_url(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        let url = &self.public_url;
        verify(url, d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(&self.public_url, s.key, s.body, s.id, s.timestamp))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // messagebird/go-rest-api signature_jwt/testdata/reference.json: the signing key (used as
    // the bytes of this text), and the reference time 2021-07-05T12:00:00+02:00.
    const SECRET: &[u8] = b"36efdd1aace2e26cd490f0d951138253bef2f7c6d34d18981da781555cc4cebb";
    const NOW: i64 = 1_625_479_200;
    const HELLO: &str = "Hello, World!";
    const URL_PARAMS: &str = "https://example.com/path?bar=1&foo=2";
    const URL_ROOT: &str = "https://example.com/";

    // "Valid JWT with URL parameters and payload - POST".
    const WITH_PAYLOAD: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiI5M2U1NTAwNi1hMGU4LTQ1MjYtYTE5MC1mYTVmZjAwZWExMTYiLCJ1cmxfaGFzaCI6IjQxZjA1ZjBkZGQwYTIyYWIyMDlhYzQ2ZjQ3YzQ1NzJkOWNlZmEyNTdlZDc0YjI0MDA0YmFlNzUzZWNlNmMyNjAiLCJwYXlsb2FkX2hhc2giOiJkZmZkNjAyMWJiMmJkNWIwYWY2NzYyOTA4MDllYzNhNTMxOTFkZDgxYzdmNzBhNGIyODY4OGEzNjIxODI5ODZmIn0._H--TOuYFLpeEH39-rg5E3IHVkjHozBcaKVWPRC5m9I";
    // "Valid JWT with no URL parameters or payload - POST".
    const NO_PAYLOAD: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiI1OWEyNDRkYy1lOWFkLTRlMjMtOTc3OC0zNzFmYWEyMzhmNzIiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.6Fp0rVOsRr1fj9S2GidXAfkmPVofKr8_RTffC6G6r2E";
    // "HS384 alg - GET" and "HS512 alg - GET".
    const HS384: &str = "eyJhbGciOiJIUzM4NCIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiI1OWEyNDRkYy1lOWFkLTRlMjMtOTc3OC0zNzFmYWEyMzhmNzIiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.KNMW-29X77lZeuPmThmHWc_RUAvTkaDkpxIZK6mqE08v8mWKiU9Edh4QXwAJO2nv";
    const HS512: &str = "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiI1OWEyNDRkYy1lOWFkLTRlMjMtOTc3OC0zNzFmYWEyMzhmNzIiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.rd6r0iMyNGnVPCwurETphE3Y8rpAyvvnUK0S8WvGUkt2E1QSRAZ7NZJZBHw1Y_Wb5W-sK9HJr_PRL2vz4jRT3Q";
    // "Token received before it was issued - GET" (nbf an hour later) and "Token received after
    // it was expired - GET" (an hour earlier).
    const NOT_YET: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ4MjgwMCwiZXhwIjoxNjI1NDgyODYwLCJqdGkiOiJmOWY4YzM4Mi0yNDQ5LTQzMTEtYjcyYi0xZGY3MTY4NzkzMWUiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.ZELgDFNGhjZH9CffQKcq3sytBe2I0KciLxpBhcfstHQ";
    const EXPIRED: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3NTYwMCwiZXhwIjoxNjI1NDc1NjYwLCJqdGkiOiI1ZjAyZjUyMi02MDMwLTQ2YzgtYjVhMy0wMTI0NjQ3OGQ4YmMiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.45MSST3B_2PsjNUeiuW54_vUQgVw4rBXrdWrOUEz3lM";
    // "Different secret - GET".
    const OTHER_SECRET: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiIyNDNjMjdhZS0yZjAyLTQ2YTAtODg1Mi1jNjZmMzdlYTlmNDYiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDcifQ.JgSeYyOtlEKAXk8bz30iJI4tXgf4lxknoiezawuVhb4";
    // "Payload does not match - POST": signed for another body.
    const OTHER_PAYLOAD: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiIxNDUwMTUzMi05NmYyLTQ2ODQtOTgzMi02OGYwOTUxYWUzNDIiLCJ1cmxfaGFzaCI6IjBmMTE1ZGIwNjJiN2MwZGQwMzBiMTY4NzhjOTlkZWE1YzM1NGI0OWRjMzdiMzhlYjg4NDYxNzljNzc4M2U5ZDciLCJwYXlsb2FkX2hhc2giOiJmYjYyZjAyYWNkYTdkNzQxNzdhNzAxYTFjZTAwNmU2YmFjZDkwYzdkNGQ3YWI0ODE2OTJjMWRhNDdjODEwNzZiIn0.m79RCwO6dGa9pvzsQypkVuXQ6eM0CkRl6_U7MfWg6TM";
    // "Token received on different URL (parameters were sorted out of order) - GET".
    const OTHER_URL: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCIsIm5iZiI6MTYyNTQ3OTIwMCwiZXhwIjoxNjI1NDc5MjYwLCJqdGkiOiJhNzVjOTA5Ni1lODIzLTQ0MmItODVmMi03ZDNjOWQ5YjcyNmIiLCJ1cmxfaGFzaCI6IjZhMDIyZDgzNGMxODMzMGJhYWQ4YTJiZDYxMzUxNzNlZDIxNjEwYTQ1NDUxNmJlMGRmM2YxY2MwMTUxNjEwZWEifQ.z6Sw1XQIM0wuEQGBhXBdawDIIrtMg2XnmA_bpDq53pE";

    fn check(url: &str, token: &str, body: &str, now: i64) -> Result<Verified, Error> {
        coded(MessageBird::new(Some(url))).verify(
            &[key(SECRET)],
            TOLERANCE,
            &headers(&[(SIGNATURE, token)]),
            body.as_bytes(),
            now,
        )
    }

    #[test]
    fn reference_vectors_verify() {
        let got = check(URL_PARAMS, WITH_PAYLOAD, HELLO, NOW).expect("reference POST");
        assert_eq!(got.event_id, shared::body_sha256_hex(HELLO.as_bytes()));
        assert_eq!(got.timestamp, Some(NOW));
        assert_eq!(got.event_type, None);
        let got = check(URL_ROOT, NO_PAYLOAD, "", NOW).expect("no payload");
        assert_eq!(got.event_id, "59a244dc-e9ad-4e23-9778-371faa238f72");
        for token in [HS384, HS512] {
            assert!(check(URL_ROOT, token, "", NOW).is_ok());
        }
    }

    #[test]
    fn reference_refusals() {
        for token in [NOT_YET, EXPIRED] {
            assert!(matches!(
                check(URL_ROOT, token, "", NOW),
                Err(Error::TimestampOutsideWindow { .. })
            ));
        }
        assert_eq!(
            check(URL_ROOT, OTHER_SECRET, "", NOW),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            check(URL_ROOT, OTHER_PAYLOAD, HELLO, NOW),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            check("https://example.com/path?foo=1&bar=2", OTHER_URL, "", NOW),
            Err(Error::InvalidSignature)
        );
        // "payload was removed in transit" / "payload was added in transit".
        assert_eq!(
            check(URL_PARAMS, WITH_PAYLOAD, "", NOW),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            check(URL_ROOT, NO_PAYLOAD, HELLO, NOW),
            Err(Error::InvalidSignature)
        );
        // A wrong public_url is a different URL.
        assert_eq!(
            check(URL_ROOT, WITH_PAYLOAD, HELLO, NOW),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn other_algorithms_are_malformed() {
        // "none alg": the header names no HMAC.
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJpc3MiOiJNZXNzYWdlQmlyZCJ9.";
        let rs = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJNZXNzYWdlQmlyZCJ9.AAAA";
        for token in [none, rs, "a.b", "a.b.c.d", "..", "e30.e30.", "!!!.e30.AAAA"] {
            assert_eq!(
                check(URL_ROOT, token, "", NOW),
                Err(Error::MalformedSignature(SIGNATURE)),
                "{token}"
            );
        }
    }

    #[test]
    fn common() {
        let scheme = coded(MessageBird::new(Some(
            "https://hooks.example.com/messagebird",
        )));
        common_checks(
            &scheme,
            &key(b"signing-key"),
            br#"{"type":"message.created","message":{"id":"m1"}}"#,
            &[SIGNATURE],
        );
    }

    #[test]
    fn garbage_is_refused_as_a_signature_error() {
        let scheme = coded(MessageBird::new(Some(URL_PARAMS)));
        let valid = headers(&[(SIGNATURE, WITH_PAYLOAD)]);
        garbage_is_refused(
            &scheme,
            &[key(SECRET)],
            &valid,
            HELLO.as_bytes(),
            NOW,
            &[SIGNATURE],
        );
    }
}
