//! SendGrid (Twilio SendGrid) Event Webhook: ECDSA P-256 with SHA-256 over
//! `{timestamp}{body}`; `X-Twilio-Email-Event-Webhook-Signature` carries the
//! signature (base64 of its DER encoding), `…-Timestamp` the unix seconds.
//!
//! The "secret" is SendGrid's verification key as the console shows it:
//! base64 of a DER SubjectPublicKeyInfo (PEM armour allowed), or the raw
//! 65-byte uncompressed point in base64. A body is a batch of events, so
//! the id is the body digest.
//!
//! Source: <https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features>.

use std::time::Duration;

use http::HeaderMap;
use ring::signature::ECDSA_P256_SHA256_ASN1;

use super::provider::{Delivery, Provider, SENDER_PRIVATE_KEY, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

const SIGNATURE: &str = "x-twilio-email-event-webhook-signature";
const TIMESTAMP: &str = "x-twilio-email-event-webhook-timestamp";

/// The DER prefix of a P-256 SubjectPublicKeyInfo, up to the point.
const SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Base64 text with PEM armour and whitespace removed.
pub(super) fn unarmour(raw: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("-----"))
        .flat_map(|l| l.bytes())
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let der = hmac::decode_base64_any(&unarmour(secret.expose()))
        .ok_or("verification key is not base64 (PEM armour allowed)")?;
    let point = match der.strip_prefix(&SPKI_PREFIX[..]) {
        Some(point) => point.to_vec(),
        None => der,
    };
    if point.len() != 65 || point[0] != 0x04 {
        return Err(
            "verification key is not a P-256 public key (SubjectPublicKeyInfo, base64)".to_owned(),
        );
    }
    Ok(Secret::new(point))
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    if value.len() > 256 {
        return Err(Error::MalformedSignature(SIGNATURE));
    }
    let signature = hmac::decode_base64_any(value).ok_or(Error::MalformedSignature(SIGNATURE))?;
    let ts_text = hmac::header(headers, TIMESTAMP).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let ts = hmac::parse_timestamp(ts_text).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let message = [ts_text, body].concat();
    let secret_index = hmac::match_public_key(keys, &ECDSA_P256_SHA256_ASN1, &message, &signature)?;
    hmac::check_window(ts, now, tolerance)?;
    Ok(Verified {
        event_id: hmac::body_sha256_hex(body),
        event_type: None,
        timestamp: Some(ts),
        secret_index,
    })
}

/// `scheme = "sendgrid"`: ECDSA P-256 over the timestamp and body; the key
/// is SendGrid's public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SendGrid;

impl Provider for SendGrid {
    fn name(&self) -> &'static str {
        "sendgrid"
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

    fn sign(&self, _: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Err(SENDER_PRIVATE_KEY.sign)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        Err(SENDER_PRIVATE_KEY.resign)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{TOLERANCE, coded, garbage_is_refused, headers, key};
    use super::*;

    // sendgrid/sendgrid-python test/unit/test_eventwebhook.py: the public
    // key, signature and timestamp below over this payload (json.dumps with
    // sort_keys and compact separators, then "\r\n").
    const PUBLIC_KEY: &[u8] = b"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==";
    const SIGNATURE_B64: &str = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=";
    const TS: i64 = 1_600_112_502;
    const PAYLOAD: &[u8] = b"[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n";
    // A different key from the same test file ("test_verify_bad_key").
    const OTHER_KEY: &[u8] = b"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==";
    // And its other signature ("test_verify_bad_signature").
    const OTHER_SIGNATURE: &str = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=";

    fn prepared(k: &[u8]) -> Secret {
        coded(SendGrid)
            .prepare_key(&key(k))
            .expect("the SDK's key parses")
    }

    fn sdk_headers() -> HeaderMap {
        headers(&[
            ("X-Twilio-Email-Event-Webhook-Signature", SIGNATURE_B64),
            ("X-Twilio-Email-Event-Webhook-Timestamp", "1600112502"),
        ])
    }

    #[test]
    fn sdk_vector_verifies() {
        let keys = [prepared(OTHER_KEY), prepared(PUBLIC_KEY)];
        let got = coded(SendGrid).verify(&keys, TOLERANCE, &sdk_headers(), PAYLOAD, TS);
        assert_eq!(
            got.map(|v| (v.secret_index, v.timestamp)),
            Ok((1, Some(TS)))
        );
        // PEM armour is accepted.
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            String::from_utf8_lossy(PUBLIC_KEY)
        );
        let k = coded(SendGrid)
            .prepare_key(&key(pem.as_bytes()))
            .expect("PEM parses");
        assert_eq!(k, prepared(PUBLIC_KEY));
    }

    #[test]
    fn tampering_is_refused() {
        let keys = [prepared(PUBLIC_KEY)];
        let s = coded(SendGrid);
        assert_eq!(
            s.verify(
                &[prepared(OTHER_KEY)],
                TOLERANCE,
                &sdk_headers(),
                PAYLOAD,
                TS
            ),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            s.verify(&keys, TOLERANCE, &sdk_headers(), b"payload", TS),
            Err(Error::InvalidSignature)
        );
        let mut changed = PAYLOAD.to_vec();
        changed[10] ^= 1;
        assert_eq!(
            s.verify(&keys, TOLERANCE, &sdk_headers(), &changed, TS),
            Err(Error::InvalidSignature)
        );
        let other = headers(&[
            ("X-Twilio-Email-Event-Webhook-Signature", OTHER_SIGNATURE),
            ("X-Twilio-Email-Event-Webhook-Timestamp", "1600112502"),
        ]);
        assert_eq!(
            s.verify(&keys, TOLERANCE, &other, PAYLOAD, TS),
            Err(Error::InvalidSignature)
        );
        let later = headers(&[
            ("X-Twilio-Email-Event-Webhook-Signature", SIGNATURE_B64),
            ("X-Twilio-Email-Event-Webhook-Timestamp", "1600112503"),
        ]);
        assert_eq!(
            s.verify(&keys, TOLERANCE, &later, PAYLOAD, TS),
            Err(Error::InvalidSignature)
        );
        // Right signature, stale time.
        assert!(matches!(
            s.verify(&keys, TOLERANCE, &sdk_headers(), PAYLOAD, TS + 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        assert!(matches!(
            s.verify(&keys, TOLERANCE, &HeaderMap::new(), PAYLOAD, TS),
            Err(Error::MissingSignature(_))
        ));
        assert!(s.sign(&keys[0], PAYLOAD, None, TS).is_err());
    }

    #[test]
    fn keys_that_are_not_p256_are_refused() {
        for bad in [
            &b"not base64!"[..],
            b"AAAA",
            b"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
        ] {
            assert!(coded(SendGrid).prepare_key(&key(bad)).is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let keys = [prepared(PUBLIC_KEY)];
        garbage_is_refused(
            &coded(SendGrid),
            &keys,
            &sdk_headers(),
            PAYLOAD,
            TS,
            &[SIGNATURE, TIMESTAMP],
        );
    }
}
