//! Mailgun: the signature travels in the JSON body, not a header —
//! `{"signature": {"timestamp": "…", "token": "…", "signature": "<hex>"},
//! "event-data": {…}}`, the signature being the HMAC-SHA256 of
//! `timestamp` + `token` under the domain's HTTP webhook signing key.
//!
//! Mailgun signs only those two fields, not the event: the check proves the
//! request came from Mailgun at that time (the timestamp is held to the
//! replay window), and hookgate dedupes on the event's `/event-data/id`
//! (else on the token, which Mailgun tells receivers to cache), but an
//! altered `event-data` under a genuine signature block is not detected. This
//! is Mailgun's design; the docs table says so.
//!
//! The type is `/event-data/event`. Legacy form-encoded webhooks are not
//! handled.
//!
//! Source: <https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks/>;
//! the known-answer values are those of Mailgun's PHP SDK test
//! (mailgun/mailgun-php tests/Api/WebhookTest.php, testVerifyWebhookGood).

use std::borrow::Cow;
use std::time::Duration;

use super::json::{Field, json_fields};
use super::provider::{Delivery, IN_BODY, Provider, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

/// How the body's signature block is named in errors.
const LABEL: &str = "body signature";

/// The signature block's three fields, as sent.
struct Block<'a> {
    timestamp: Cow<'a, str>,
    token: Cow<'a, str>,
    signature: hmac::Tag,
}

/// The signature block, its three fields, and the event's id and type.
const POINTERS: [&str; 6] = [
    "/signature",
    "/signature/timestamp",
    "/signature/token",
    "/signature/signature",
    "/event-data/id",
    "/event-data/event",
];

/// The timestamp Mailgun writes as a string (older payloads: a number).
fn text(field: Field<'_>) -> Option<Cow<'_, str>> {
    match field {
        Field::Str(s) => Some(s),
        Field::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

fn block<'a>(
    sig: &Field<'a>,
    timestamp: Field<'a>,
    token: Field<'a>,
    signature: Field<'a>,
) -> Result<Block<'a>, Error> {
    if *sig != Field::Object {
        return Err(Error::MissingSignature(LABEL));
    }
    let malformed = Error::MalformedSignature(LABEL);
    let timestamp = text(timestamp).ok_or(malformed.clone())?;
    let token = text(token)
        .filter(|t| !t.is_empty())
        .ok_or(malformed.clone())?;
    let signature = text(signature)
        .and_then(|s| hmac::tag_from_hex(s.as_bytes()))
        .ok_or(malformed)?;
    Ok(Block {
        timestamp,
        token,
        signature,
    })
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    // A body that is not JSON has no signature block: every field is missing.
    let [sig, timestamp, token, signature, id, kind] =
        json_fields(body, POINTERS).unwrap_or_else(|| std::array::from_fn(|_| Field::Missing));
    let b = block(&sig, timestamp, token, signature)?;
    let timestamp =
        hmac::parse_timestamp(b.timestamp.as_bytes()).ok_or(Error::MalformedSignature(LABEL))?;
    let secret_index = hmac::match_key(
        keys,
        &[b.timestamp.as_bytes(), b.token.as_bytes()],
        &[b.signature],
    )?;
    hmac::check_window(timestamp, now, tolerance)?;
    Ok(Verified {
        event_id: id.id().unwrap_or_else(|| b.token.into_owned()),
        event_type: kind.str(),
        timestamp: Some(timestamp),
        secret_index,
    })
}

/// `scheme = "mailgun"`: HMAC-SHA256 over a timestamp and token carried in
/// the JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mailgun;

impl Provider for Mailgun {
    fn name(&self) -> &'static str {
        "mailgun"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.body, d.now)
    }

    fn sign(&self, _: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Err(IN_BODY.sign)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        Err(IN_BODY.resign)
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::super::test_support::{TOLERANCE, coded, key};
    use super::*;

    // mailgun/mailgun-php tests/Api/WebhookTest.php (testVerifyWebhookGood): signing key,
    // timestamp, token and signature exactly as there; the JSON around them is Mailgun's
    // documented webhook layout.
    const KEY: &[u8] = b"key-3ax6xnjp29jd6fds4gc373sgvjxteol0";
    const TS: i64 = 1_403_645_220;
    const GOOD: &str = r#"{"signature":{"timestamp":"1403645220","token":"5egbgr1vjgqxtrnp65xfznchgdccwh5d6i09vijqi3whgowmn6","signature":"9cfc5c41582e51246e73c88d34db3af0a3a2692a76fbab81492842f000256d33"},"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered","timestamp":1403645220.0}}"#;
    // testVerifyWebhookBad: the same signature over another token.
    const BAD: &str = r#"{"signature":{"timestamp":"1403645220","token":"owyldpe6nxhmrn78epljl6bj0orrki1u3d2v5e6cnlmmuox8jr","signature":"9cfc5c41582e51246e73c88d34db3af0a3a2692a76fbab81492842f000256d33"},"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered"}}"#;

    fn verify_body(keys: &[Secret], body: &str, now: i64) -> Result<Verified, Error> {
        coded(Mailgun).verify(keys, TOLERANCE, &HeaderMap::new(), body.as_bytes(), now)
    }

    #[test]
    fn sdk_vector_verifies() {
        assert_eq!(
            verify_body(&[key(KEY)], GOOD, TS),
            Ok(Verified {
                event_id: "CPgfbmQMTCKtHW6uIWtuVe".into(),
                event_type: Some("delivered".into()),
                timestamp: Some(TS),
                secret_index: 0,
            })
        );
        // Rotation: the right key in second place.
        let got = verify_body(&[key(b"another-key"), key(KEY)], GOOD, TS);
        assert_eq!(got.map(|v| v.secret_index), Ok(1));
    }

    #[test]
    fn sdk_bad_vector_and_wrong_key_are_refused() {
        assert_eq!(
            verify_body(&[key(KEY)], BAD, TS),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            verify_body(&[key(b"key-wrong")], GOOD, TS),
            Err(Error::InvalidSignature)
        );
        assert_eq!(verify_body(&[], GOOD, TS), Err(Error::InvalidSignature));
    }

    #[test]
    fn tampered_signed_fields_are_refused() {
        for (from, to) in [
            ("\"1403645220\",\"token\"", "\"1403645221\",\"token\""),
            ("wmn6", "wmn7"),
            ("256d33", "256d34"),
        ] {
            let tampered = GOOD.replacen(from, to, 1);
            assert_ne!(tampered, GOOD);
            assert_eq!(
                verify_body(&[key(KEY)], &tampered, TS),
                Err(Error::InvalidSignature),
                "{from}"
            );
        }
    }

    #[test]
    fn the_window_applies_to_the_signed_timestamp() {
        let tol = i64::try_from(TOLERANCE.as_secs()).expect("small");
        for now in [TS - tol, TS + tol] {
            assert!(verify_body(&[key(KEY)], GOOD, now).is_ok());
        }
        for now in [TS - tol - 1, TS + tol + 1, i64::MIN, i64::MAX] {
            assert!(matches!(
                verify_body(&[key(KEY)], GOOD, now),
                Err(Error::TimestampOutsideWindow { .. })
            ));
        }
    }

    #[test]
    fn without_an_event_id_the_token_is_the_id() {
        let body = GOOD.replace(r#""id":"CPgfbmQMTCKtHW6uIWtuVe","#, "");
        let got = verify_body(&[key(KEY)], &body, TS).expect("still signed");
        assert_eq!(
            got.event_id,
            "5egbgr1vjgqxtrnp65xfznchgdccwh5d6i09vijqi3whgowmn6"
        );
    }

    #[test]
    fn missing_and_malformed_blocks() {
        for body in [
            "",
            "not json",
            "{}",
            r#"{"signature":"x"}"#,
            r#"{"event-data":{}}"#,
        ] {
            assert_eq!(
                verify_body(&[key(KEY)], body, TS),
                Err(Error::MissingSignature(LABEL)),
                "{body}"
            );
        }
        for body in [
            r#"{"signature":{}}"#,
            r#"{"signature":{"timestamp":"1403645220","token":"t"}}"#,
            r#"{"signature":{"timestamp":"1403645220","token":"","signature":"9cfc5c41582e51246e73c88d34db3af0a3a2692a76fbab81492842f000256d33"}}"#,
            r#"{"signature":{"timestamp":"x","token":"t","signature":"9cfc5c41582e51246e73c88d34db3af0a3a2692a76fbab81492842f000256d33"}}"#,
            r#"{"signature":{"timestamp":"1403645220","token":"t","signature":"zz"}}"#,
            r#"{"signature":{"timestamp":true,"token":"t","signature":"00"}}"#,
        ] {
            assert_eq!(
                verify_body(&[key(KEY)], body, TS),
                Err(Error::MalformedSignature(LABEL)),
                "{body}"
            );
        }
    }

    #[test]
    fn a_numeric_timestamp_is_read_as_its_digits() {
        let body = GOOD.replace("\"1403645220\",\"token\"", "1403645220,\"token\"");
        assert!(verify_body(&[key(KEY)], &body, TS).is_ok());
    }

    #[test]
    fn sign_is_refused() {
        assert!(
            coded(Mailgun)
                .sign(&key(KEY), GOOD.as_bytes(), None, TS)
                .is_err()
        );
    }
}
