//! Metronome: `Metronome-Webhook-Signature: <hex>`, the HMAC-SHA256 of the
//! signed date, a newline, then the raw body, keyed with the webhook secret
//! as text. The date is an HTTP date (`Mon, 02 Jan 2006 22:04:05 GMT`) and is
//! the signed time, so the replay window applies to it (Metronome's own SDKs
//! allow five minutes either way).
//!
//! Where the date travels changed: `@metronome/sdk` 3.5.0 and later sign and
//! read `X-Metronome-Date` (its changelog: "switching 'date' header to
//! 'x-metronome-date' header"); older senders and SDKs use `Date`. Both are
//! accepted while senders migrate:
//!
//! - `X-Metronome-Date` present: it is the signed date. A `Date` header with
//!   another value beside it makes the request ambiguous (which one did the
//!   sender sign?) and it is refused as malformed rather than guessed; a
//!   `Date` with the same value is the same claim twice.
//! - only `Date`: the older format.
//!
//! The id is the body's `/id`, the type its `/type`.
//!
//! Source: <https://docs.metronome.com/connecting-metronome/webhooks/>; the
//! known-answer tests are Metronome's SDK test
//! (Metronome-Industries/metronome-node tests/api-resources/webhooks.test.ts,
//! `Date` era) and values computed by the signer of `@metronome/sdk` 3.10.0
//! (`X-Metronome-Date`).

use std::time::Duration;

use http::HeaderMap;

use super::json::json_fields;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

const SIGNATURE: &str = "metronome-webhook-signature";
/// The signed date of `@metronome/sdk` 3.5.0 and later.
const METRONOME_DATE: &str = "x-metronome-date";
/// The signed date of older senders.
const DATE: &str = "date";

use crate::time::{format_http_date, parse_http_date};

/// The signed date and the header it came from: `X-Metronome-Date` when
/// present (refused when a different `Date` stands beside it), else `Date`.
/// A header sent twice is ambiguous too.
fn signed_date(headers: &HeaderMap) -> Result<(&'static str, &[u8]), Error> {
    let single = |name: &'static str| -> Result<Option<&[u8]>, Error> {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (None, _) => Ok(None),
            (Some(v), None) => Ok(Some(v.as_bytes())),
            (Some(_), Some(_)) => Err(Error::MalformedSignature(name)),
        }
    };
    match (single(METRONOME_DATE)?, single(DATE)?) {
        (Some(new), Some(old)) if new != old => Err(Error::MalformedSignature(METRONOME_DATE)),
        (Some(new), _) => Ok((METRONOME_DATE, new)),
        (None, Some(old)) => Ok((DATE, old)),
        (None, None) => Err(Error::MalformedSignature(METRONOME_DATE)),
    }
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature =
        hmac::tag_from_hex(value.trim_ascii()).ok_or(Error::MalformedSignature(SIGNATURE))?;
    let (label, date) = signed_date(headers)?;
    let timestamp = parse_http_date(date).ok_or(Error::MalformedSignature(label))?;
    let secret_index = hmac::match_key(keys, &[date, b"\n", body], &[signature])?;
    hmac::check_window(timestamp, now, tolerance)?;
    let (event_id, event_type) = match json_fields(body, ["/id", "/type"]) {
        Some([id, kind]) => (id.id(), kind.str()),
        None => (None, None),
    };
    Ok(Verified {
        event_id: event_id.unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type,
        timestamp: Some(timestamp),
        secret_index,
    })
}

/// The signature and the signed date for `body` at `timestamp`, under both
/// names (the same value), so verifiers of either era accept the delivery.
pub(super) fn sign(key: &Secret, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
    let date = format_http_date(timestamp);
    let tag = hmac::tag(key.expose(), &[date.as_bytes(), b"\n", body]);
    vec![
        ("Metronome-Webhook-Signature".to_owned(), hex::encode(tag)),
        ("X-Metronome-Date".to_owned(), date.clone()),
        ("Date".to_owned(), date),
    ]
}

/// `scheme = "metronome"`: HMAC-SHA256 over the `X-Metronome-Date` (or
/// `Date`) header, a newline and the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Metronome;

impl Provider for Metronome {
    fn name(&self) -> &'static str {
        "metronome"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(s.key, s.body, s.timestamp))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["metronome-webhook-signature", "x-metronome-date", "date"])
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        TOLERANCE, coded, common_checks, garbage_is_refused, headers, key,
    };
    use super::*;

    // Metronome-Industries/metronome-node tests/api-resources/webhooks.test.ts: this body
    // (the test's template literal, two-space indented), the `Date` header and secret of
    // "should pass for valid signature", and its expected signature.
    const BODY: &[u8] = b"{\n  \"id\": \"b2c9e307-624e-4e7d-a5a4-1b74107d78c4\",\n  \"type\": \"widget_created\",\n  \"properties\": {\n    \"customer_id\": \"5f794d50-085a-4db6-8d15-286e518b7225\",\n    \"widget_id\": \"0891458d-b6f0-4fdd-a41e-380aae1a1e38\"\n  }\n}";
    const SECRET: &[u8] = b"correct-horse-battery-staple";
    const DATE_TEXT: &str = "Mon, 02 Jan 2006 22:04:05 GMT";
    const SIG: &str = "b82652fa2246cf1d8a27e591f155c865f68b46c19b9213fd9c052f2419b4742b";
    /// `DATE_TEXT` in unix seconds.
    const DATE_TS: i64 = 1_136_239_445;

    fn sdk_headers() -> HeaderMap {
        headers(&[("Date", DATE_TEXT), ("Metronome-Webhook-Signature", SIG)])
    }

    #[test]
    fn sdk_vector_verifies() {
        let got = coded(Metronome).verify(&[key(SECRET)], TOLERANCE, &sdk_headers(), BODY, DATE_TS);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "b2c9e307-624e-4e7d-a5a4-1b74107d78c4".into(),
                event_type: Some("widget_created".into()),
                timestamp: Some(DATE_TS),
                secret_index: 0,
            })
        );
    }

    #[test]
    fn sdk_window_cases() {
        // The same test file: four minutes either way pass, six fail.
        let s = coded(Metronome);
        let h = sdk_headers();
        for now in [DATE_TS + 240, DATE_TS - 240] {
            assert!(s.verify(&[key(SECRET)], TOLERANCE, &h, BODY, now).is_ok());
        }
        for now in [DATE_TS + 360, DATE_TS - 360] {
            assert!(matches!(
                s.verify(&[key(SECRET)], TOLERANCE, &h, BODY, now),
                Err(Error::TimestampOutsideWindow { .. })
            ));
        }
    }

    #[test]
    fn sdk_vector_refuses_wrong_secret_and_tampering() {
        let s = coded(Metronome);
        let h = sdk_headers();
        // "should throw an error for invalid secret format" and "for invalid signature".
        for wrong in [&b"invalid secret"[..], b"Zm9v"] {
            assert_eq!(
                s.verify(&[key(wrong)], TOLERANCE, &h, BODY, DATE_TS),
                Err(Error::InvalidSignature)
            );
        }
        let mut tampered = BODY.to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            s.verify(&[key(SECRET)], TOLERANCE, &h, &tampered, DATE_TS),
            Err(Error::InvalidSignature)
        );
        // A different date is a different signed message.
        let moved = headers(&[
            ("Date", "Mon, 02 Jan 2006 22:04:06 GMT"),
            ("Metronome-Webhook-Signature", SIG),
        ]);
        assert_eq!(
            s.verify(&[key(SECRET)], TOLERANCE, &moved, BODY, DATE_TS),
            Err(Error::InvalidSignature)
        );
        // "should throw for invalid timestamp".
        let nan = headers(&[("Date", "nan"), ("Metronome-Webhook-Signature", SIG)]);
        assert_eq!(
            s.verify(&[key(SECRET)], TOLERANCE, &nan, BODY, DATE_TS),
            Err(Error::MalformedSignature(DATE))
        );
    }

    #[test]
    fn sign_reproduces_the_sdk_vector() {
        let lines = coded(Metronome)
            .sign(&key(SECRET), BODY, None, DATE_TS)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![
                ("Metronome-Webhook-Signature".to_owned(), SIG.to_owned()),
                ("X-Metronome-Date".to_owned(), DATE_TEXT.to_owned()),
                ("Date".to_owned(), DATE_TEXT.to_owned()),
            ]
        );
    }

    // Computed by `@metronome/sdk` 3.10.0 (npm), whose `verifySignature` reads
    // `X-Metronome-Date` only: `webhooks.signPayload(body, { date, secret })`
    // with these values, and checked by its `verifySignature` with
    // `Date.now` pinned to the date.
    const SDK3_BODY: &[u8] = br#"{"id":"5a8c1e3e-0d5e-4c52-9f43-3c1f2b9d6e11","type":"alerts.low_remaining_credit_balance_reached"}"#;
    const SDK3_SECRET: &[u8] = b"whsec-metronome-3x";
    const SDK3_DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
    const SDK3_TS: i64 = 1_700_000_000;
    const SDK3_SIG: &str = "d9092635875ce882e0f22c1de6adde1831aa2e39da657239f46894d33ce33e52";

    #[test]
    fn current_sdk_delivery_with_x_metronome_date_verifies() {
        let h = headers(&[
            ("X-Metronome-Date", SDK3_DATE),
            ("Metronome-Webhook-Signature", SDK3_SIG),
        ]);
        let got = coded(Metronome).verify(&[key(SDK3_SECRET)], TOLERANCE, &h, SDK3_BODY, SDK3_TS);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "5a8c1e3e-0d5e-4c52-9f43-3c1f2b9d6e11".into(),
                event_type: Some("alerts.low_remaining_credit_balance_reached".into()),
                timestamp: Some(SDK3_TS),
                secret_index: 0,
            })
        );
        // The older SDK vector, its date moved to the new header: the recipe
        // is unchanged, only the header name.
        let moved = headers(&[
            ("X-Metronome-Date", DATE_TEXT),
            ("Metronome-Webhook-Signature", SIG),
        ]);
        assert!(
            coded(Metronome)
                .verify(&[key(SECRET)], TOLERANCE, &moved, BODY, DATE_TS)
                .is_ok()
        );
        // The window applies to the new header.
        assert!(matches!(
            coded(Metronome).verify(&[key(SDK3_SECRET)], TOLERANCE, &h, SDK3_BODY, SDK3_TS + 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        // And a wrong secret is refused.
        assert_eq!(
            coded(Metronome).verify(&[key(SECRET)], TOLERANCE, &h, SDK3_BODY, SDK3_TS),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn both_dates_must_agree() {
        let s = coded(Metronome);
        let k = [key(SDK3_SECRET)];
        // The same value under both names (what `sign` prints) is one claim.
        let same = headers(&[
            ("X-Metronome-Date", SDK3_DATE),
            ("Date", SDK3_DATE),
            ("Metronome-Webhook-Signature", SDK3_SIG),
        ]);
        assert!(s.verify(&k, TOLERANCE, &same, SDK3_BODY, SDK3_TS).is_ok());
        // Different values: refused even though the signature matches the
        // new header, and even though it would match the old one.
        let later = "Tue, 14 Nov 2023 22:13:21 GMT";
        for (new, old) in [(SDK3_DATE, later), (later, SDK3_DATE)] {
            let h = headers(&[
                ("X-Metronome-Date", new),
                ("Date", old),
                ("Metronome-Webhook-Signature", SDK3_SIG),
            ]);
            assert_eq!(
                s.verify(&k, TOLERANCE, &h, SDK3_BODY, SDK3_TS),
                Err(Error::MalformedSignature(METRONOME_DATE))
            );
        }
        // A date header sent twice is ambiguous too.
        for name in ["x-metronome-date", "date"] {
            let mut h = headers(&[("Metronome-Webhook-Signature", SDK3_SIG)]);
            for value in [SDK3_DATE, later] {
                h.append(
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from_static(value),
                );
            }
            assert!(matches!(
                s.verify(&k, TOLERANCE, &h, SDK3_BODY, SDK3_TS),
                Err(Error::MalformedSignature(_))
            ));
        }
        // No date at all.
        let none = headers(&[("Metronome-Webhook-Signature", SDK3_SIG)]);
        assert_eq!(
            s.verify(&k, TOLERANCE, &none, SDK3_BODY, SDK3_TS),
            Err(Error::MalformedSignature(METRONOME_DATE))
        );
    }

    #[test]
    fn signed_headers_satisfy_each_era_alone() {
        // What `sign` prints verifies with only the new header (a current
        // SDK ignores `Date`) and with only the old one (an older verifier).
        let signed = coded(Metronome)
            .sign(&key(SDK3_SECRET), SDK3_BODY, None, SDK3_TS)
            .expect("HMAC schemes sign");
        for keep in ["X-Metronome-Date", "Date"] {
            let pairs: Vec<(&str, &str)> = signed
                .iter()
                .filter(|(n, _)| n == keep || n == "Metronome-Webhook-Signature")
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            assert_eq!(pairs.len(), 2);
            assert!(
                coded(Metronome)
                    .verify(
                        &[key(SDK3_SECRET)],
                        TOLERANCE,
                        &headers(&pairs),
                        SDK3_BODY,
                        SDK3_TS
                    )
                    .is_ok(),
                "{keep}"
            );
        }
    }

    #[test]
    fn http_dates() {
        assert_eq!(parse_http_date(DATE_TEXT.as_bytes()), Some(DATE_TS));
        assert_eq!(
            parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            format_http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(format_http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        for bad in [
            &b""[..],
            b"Mon, 02 Jan 2006 22:04:05",
            b"Mon, 2 Jan 2006 22:04:05 GMT",
            b"Xyz, 02 Jan 2006 22:04:05 GMT",
            b"Mon, 02 Foo 2006 22:04:05 GMT",
            b"Mon, 31 Feb 2006 22:04:05 GMT",
            b"Mon, 02 Jan 2006 25:04:05 GMT",
            b"Monday, 02-Jan-06 22:04:05 GMT",
            b"1136239445",
        ] {
            assert_eq!(
                parse_http_date(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn common() {
        common_checks(
            &coded(Metronome),
            &key(SECRET),
            BODY,
            &["metronome-webhook-signature"],
        );
    }

    #[test]
    fn garbage_never_panics() {
        garbage_is_refused(
            &coded(Metronome),
            &[key(SECRET)],
            &sdk_headers(),
            BODY,
            DATE_TS,
            &["metronome-webhook-signature", "date"],
        );
        let current = headers(&[
            ("X-Metronome-Date", SDK3_DATE),
            ("Metronome-Webhook-Signature", SDK3_SIG),
        ]);
        garbage_is_refused(
            &coded(Metronome),
            &[key(SDK3_SECRET)],
            &current,
            SDK3_BODY,
            SDK3_TS,
            &["metronome-webhook-signature", "x-metronome-date", "date"],
        );
    }
}
