//! Twilio: `X-Twilio-Signature: <base64>` = HMAC-SHA1 (key: the account's
//! auth token) over the URL Twilio requested followed by every POST
//! parameter, sorted by name, as `name` + `value` with no separators.
//!
//! The URL is the one configured at Twilio, so it comes from the source's
//! `public_url`: behind a proxy the request hookgate sees has another scheme,
//! host or path. It must match exactly what Twilio was given, query string
//! included. Parameters are decoded from the form body; duplicates are
//! signed once per distinct value, in order, as Twilio's libraries do. JSON
//! bodies (signed through a `bodySHA256` query parameter) are not supported:
//! their signature covers a per-request URL that a fixed `public_url` cannot
//! name. The event id is `I-Twilio-Idempotency-Token`, else the body digest.
//!
//! Source: <https://www.twilio.com/docs/usage/webhooks/webhooks-security>.

use http::HeaderMap;

use super::handshake::form_pairs;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Algorithm, Encoding, Error, Verified, hmac};
use crate::secret::Secret;

const SIGNATURE: &str = "x-twilio-signature";
const IDEMPOTENCY: &str = "i-twilio-idempotency-token";

/// The signed bytes after the URL: sorted, distinct `name` + `value` pairs.
fn sorted_params(body: &[u8]) -> Vec<u8> {
    let mut pairs = form_pairs(body);
    pairs.sort();
    pairs.dedup();
    pairs
        .into_iter()
        .flat_map(|(k, v)| k.into_iter().chain(v))
        .collect()
}

pub(super) fn verify(
    public_url: &str,
    keys: &[Secret],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = hmac::decode_tag(Encoding::Base64, value, 20)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    let params = sorted_params(body);
    let parts: [&[u8]; 2] = [public_url.as_bytes(), &params];
    let secret_index = hmac::match_with(
        keys,
        |key| hmac::mac(Algorithm::Sha1, key.expose(), &parts),
        &[signature],
    )?;
    Ok(Verified {
        event_id: hmac::header_text(headers, IDEMPOTENCY)
            .unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: None,
        timestamp: None,
        secret_index,
    })
}

pub(super) fn sign(
    public_url: &str,
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
) -> Vec<(String, String)> {
    let params = sorted_params(body);
    let tag = hmac::mac(
        Algorithm::Sha1,
        key.expose(),
        &[public_url.as_bytes(), &params],
    );
    vec![
        ("X-Twilio-Signature".to_owned(), hmac::encode_base64(&tag)),
        (
            "I-Twilio-Idempotency-Token".to_owned(),
            id.map_or_else(hmac::random_id, str::to_owned),
        ),
    ]
}

/// `scheme = "twilio"`: HMAC-SHA1 over the public URL and the sorted form
/// parameters; the idempotency token is not signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Twilio {
    public_url: String,
}

impl Twilio {
    pub(super) fn new(public_url: Option<&str>) -> Twilio {
        Twilio {
            public_url: public_url.unwrap_or_default().to_owned(),
        }
    }
}

impl Provider for Twilio {
    fn name(&self) -> &'static str {
        "twilio"
    }

    fn signs_timestamp(&self) -> bool {
        false
    }

    fn signs_event_id(&self) -> bool {
        false
    }

    fn needs_public_url(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(&self.public_url, d.keys, d.headers, d.body)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(&self.public_url, s.key, s.body, s.id))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["x-twilio-signature"])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // twilio/twilio-python tests/unit/test_request_validator.py: token
    // "12345", this URL, these parameters, expected "RSOYDt4T1cUTdK1PDd93/VVr8B8=".
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const BODY: &[u8] = b"CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309\
        &To=%2B18005551212&Caller=%2B14158675309";

    fn twilio(url: &str) -> Scheme {
        coded(Twilio::new(Some(url)))
    }

    #[test]
    fn sdk_vector_verifies() {
        let h = headers(&[("X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8=")]);
        let got = twilio(URL).verify(&[key(b"12345")], TOLERANCE, &h, BODY, 0);
        assert_eq!(got.map(|v| v.secret_index), Ok(0));
        // The same parameters in another order sign the same.
        let shuffled = b"To=%2B18005551212&Caller=%2B14158675309&From=%2B14158675309\
            &Digits=1234&CallSid=CA1234567890ABCDE";
        assert!(
            twilio(URL)
                .verify(&[key(b"12345")], TOLERANCE, &h, shuffled, 0)
                .is_ok()
        );
        // Another URL (a proxy's own view of the request) does not.
        let other = twilio("http://127.0.0.1:8080/myapp.php?foo=1&bar=2");
        assert_eq!(
            other.verify(&[key(b"12345")], TOLERANCE, &h, BODY, 0),
            Err(Error::InvalidSignature)
        );
        // A changed parameter value, or a wrong token.
        let tampered = b"CallSid=CA1234567890ABCDE&Digits=1235&From=%2B14158675309\
            &To=%2B18005551212&Caller=%2B14158675309";
        assert_eq!(
            twilio(URL).verify(&[key(b"12345")], TOLERANCE, &h, tampered, 0),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            twilio(URL).verify(&[key(b"54321")], TOLERANCE, &h, BODY, 0),
            Err(Error::InvalidSignature)
        );
    }

    // Same file, test_compute_signature_duplicate_*: duplicates signed once
    // per distinct value, sorted: "IK+Dwps556ElfBT0I3Rgjkr1wJU=".
    #[test]
    fn sdk_vector_with_duplicate_parameters() {
        let h = headers(&[("X-Twilio-Signature", "IK+Dwps556ElfBT0I3Rgjkr1wJU=")]);
        let body = b"Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234";
        assert!(
            twilio(URL)
                .verify(&[key(b"12345")], TOLERANCE, &h, body, 0)
                .is_ok()
        );
    }

    #[test]
    fn common() {
        common_checks(
            &twilio(URL),
            &key(b"auth-token"),
            BODY,
            &["x-twilio-signature"],
        );
    }

    #[test]
    fn idempotency_token_is_the_event_id() {
        let h = headers(&[
            ("X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8="),
            ("I-Twilio-Idempotency-Token", "abc-123"),
        ]);
        let got = twilio(URL).verify(&[key(b"12345")], TOLERANCE, &h, BODY, 0);
        assert_eq!(got.map(|v| v.event_id), Ok("abc-123".to_owned()));
    }

    #[test]
    fn garbage_never_panics() {
        let s = twilio(URL);
        let h = headers(&[("X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8=")]);
        garbage_is_refused(&s, &[key(b"12345")], &h, BODY, 0, &["x-twilio-signature"]);
        // Hostile bodies are only signed bytes.
        for body in [&b"%%%%&&&==="[..], b"\xff\xfe", b"a=%zz&b"] {
            assert_eq!(
                s.verify(&[key(b"12345")], TOLERANCE, &h, body, 0),
                Err(Error::InvalidSignature)
            );
        }
    }
}
