//! PayPal webhooks: `PAYPAL-TRANSMISSION-SIG` is base64 RSA PKCS#1 v1.5
//! SHA-256 (`PAYPAL-AUTH-ALGO: SHA256withRSA`) over
//! `{PAYPAL-TRANSMISSION-ID}|{PAYPAL-TRANSMISSION-TIME}|{webhook_id}|{crc32}`,
//! where `webhook_id` is the id PayPal gave the listener (a source option)
//! and `crc32` the CRC-32 of the raw body in decimal. The certificate comes
//! from `PAYPAL-CERT-URL`, fetched only over `https` from PayPal's API hosts
//! (`api.paypal.com`, `api-m.paypal.com`, `api.sandbox.paypal.com`,
//! `api-m.sandbox.paypal.com`) under `/v1/notifications/certs/`; any other
//! URL is `invalid_signature`, logged with its host and never fetched.
//!
//! The transmission time is signed (RFC 3339), so `tolerance` applies; each
//! of PayPal's retries is a new transmission with its own id, time and
//! signature. The id is the body's `/id` (stable across retries), the type
//! its `/event_type`.
//!
//! The body is bound to the signature only by its CRC-32, which is not a
//! cryptographic hash: whoever sees one delivery can forge another body
//! with the same CRC-32 and replay the signed headers until they leave the
//! window. hookgate narrows this with the window, but cannot close it.
//!
//! Source: <https://developer.paypal.com/api/rest/webhooks/rest/#link-eventheadervalidation>.

use std::time::Duration;

use http::HeaderMap;
use ring::signature::RSA_PKCS1_2048_8192_SHA256;

use super::json::json_fields;
use super::provider::{Delivery, Provider, fetched_key};
use super::{Error, Verified, hmac};
use crate::keyfetch::{Fetcher, KeyKind, KeyPolicy, KeyUrl, Keys};

const TRANSMISSION_ID: &str = "paypal-transmission-id";
const TRANSMISSION_TIME: &str = "paypal-transmission-time";
const TRANSMISSION_SIG: &str = "paypal-transmission-sig";
const CERT_URL: &str = "paypal-cert-url";
const AUTH_ALGO: &str = "paypal-auth-algo";

/// PayPal's API hosts, live and sandbox, old and `api-m` names.
pub(super) const HOSTS: [&str; 4] = [
    "api.paypal.com",
    "api-m.paypal.com",
    "api.sandbox.paypal.com",
    "api-m.sandbox.paypal.com",
];
/// Where PayPal serves its webhook signing certificates.
const CERT_PATH: &str = "/v1/notifications/certs/";

/// The signed headers, read and checked before any key is fetched.
pub(super) struct Transmission<'a> {
    id: &'a str,
    time: &'a str,
    timestamp: i64,
    signature: Vec<u8>,
    cert_url: KeyUrl,
}

fn text<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, Error> {
    let value = hmac::header(headers, name).ok_or(Error::MissingSignature(name))?;
    match std::str::from_utf8(value) {
        Ok(v) if !v.is_empty() && v.len() <= 2048 && !v.contains('|') => Ok(v),
        _ => Err(Error::MalformedSignature(name)),
    }
}

pub(super) fn parse<'a>(
    headers: &'a HeaderMap,
    policy: &KeyPolicy,
    source: &str,
) -> Result<Transmission<'a>, Error> {
    let signature = text(headers, TRANSMISSION_SIG)?;
    let id = text(headers, TRANSMISSION_ID)?;
    let time = text(headers, TRANSMISSION_TIME)?;
    let url = text(headers, CERT_URL)?;
    if let Some(algo) = hmac::header(headers, AUTH_ALGO)
        && !algo.eq_ignore_ascii_case(b"SHA256withRSA")
    {
        return Err(Error::MalformedSignature(AUTH_ALGO));
    }
    let timestamp =
        hmac::parse_rfc3339(time.as_bytes()).ok_or(Error::MalformedSignature(TRANSMISSION_TIME))?;
    let signature = hmac::decode_base64_any(signature.as_bytes())
        .ok_or(Error::MalformedSignature(TRANSMISSION_SIG))?;
    let cert_url = match KeyUrl::parse(url) {
        Some(u)
            if (HOSTS.iter().any(|h| u.host().eq_ignore_ascii_case(h))
                || policy.allows_host(u.host()))
                && u.path().starts_with(CERT_PATH) =>
        {
            u
        }
        Some(u) => {
            tracing::warn!(
                source,
                host = u.host(),
                path = u.path(),
                "PAYPAL-CERT-URL is not a PayPal certificate URL; not fetched"
            );
            return Err(Error::InvalidSignature);
        }
        None => {
            tracing::warn!(
                source,
                "PAYPAL-CERT-URL is not an https URL with a host; not fetched"
            );
            return Err(Error::InvalidSignature);
        }
    };
    Ok(Transmission {
        id,
        time,
        timestamp,
        signature,
        cert_url,
    })
}

/// `{id}|{time}|{webhook_id}|{crc32 of body}`.
pub(super) fn signed_string(id: &str, time: &str, webhook_id: &str, body: &[u8]) -> String {
    format!("{id}|{time}|{webhook_id}|{}", crc32fast::hash(body))
}

pub(super) fn verify_with(
    transmission: &Transmission<'_>,
    keys: &Keys,
    webhook_id: &str,
    tolerance: Duration,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let Keys::Certificate(key) = keys else {
        return Err(Error::InvalidSignature);
    };
    let signed = signed_string(transmission.id, transmission.time, webhook_id, body);
    if !key.verifies(
        &RSA_PKCS1_2048_8192_SHA256,
        signed.as_bytes(),
        &transmission.signature,
    ) {
        return Err(Error::InvalidSignature);
    }
    hmac::check_window(transmission.timestamp, now, tolerance)?;
    let (id, kind) = match json_fields(body, ["/id", "/event_type"]) {
        Some([id, kind]) => (id.id(), kind.id()),
        None => (None, None),
    };
    Ok(Verified {
        event_id: id.ok_or(Error::MalformedBody("a PayPal event needs an /id"))?,
        event_type: kind,
        timestamp: Some(transmission.timestamp),
        secret_index: 0,
    })
}

pub(super) async fn verify(
    fetcher: &Fetcher,
    settings: &PayPalSource,
    source: &str,
    d: Delivery<'_>,
) -> Result<Verified, Error> {
    let transmission = parse(d.headers, &settings.keys, source)?;
    let keys = fetcher
        .keys(&transmission.cert_url, KeyKind::Certificate, &settings.keys)
        .await
        .map_err(|_| Error::KeyUnavailable)?;
    verify_with(
        &transmission,
        &keys,
        &settings.webhook_id,
        d.tolerance,
        d.body,
        d.now,
    )
}

/// `scheme = "paypal"`: RSA over transmission id, time, webhook id and the
/// body's CRC-32; the certificate is fetched from `PAYPAL-CERT-URL`. The
/// listener's webhook id is part of what PayPal signs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayPalSource {
    pub webhook_id: String,
    pub keys: KeyPolicy,
}

impl Provider for PayPalSource {
    fn name(&self) -> &'static str {
        "paypal"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fetched_key!(verify, keys);
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{garbage, headers, set};
    use super::*;
    use crate::keyfetch::certificate_key;

    // paypal/PayPal-Java-SDK rest-api-sdk/src/test/java/com/paypal/base/
    // ValidateCertTest.java (testValidEndpoint): its headers, webhook id and
    // body (unescaped from the Java string), and resources/clientCertTest.crt,
    // PayPal's sandbox signing certificate it verifies with.
    const BODY: &[u8] = include_bytes!("fixtures/paypal-java-sdk-body.json");
    const CERT: &str = include_str!("fixtures/paypal-java-sdk-cert.pem");
    const WEBHOOK_ID: &str = "0FV983392A0531201";
    const SIG: &str = "K7DF5+hOyGS6v0xTZ9PkEO+BFNQmpryxw2hFlXbHgmxpu+883ldEC9HcL6ccEmB8sfy80y/Q3qcZZL1MR8Qi0e1ysylVj/yROgKK6zBsQPoNmgXC8yTiNoAjULuhk5Aoau0Itk3nrkgAfji1zvADlErMFM9VZe2nDvhM3nDMLjCi/K5fRjWp3eGo6Nx17GX/WIEibeKDyS+YdJMex3i+KO4aWmm9zznC/FJ5Y/ntd0MxOJNrM0r0f3y7c3e3sO5pB3oPgN6KzKVS5P6AWHqtS8acD3DjgCKZ1uqKz7q954G1aBz2/m0wRGOFFsv0/D3FE2uIheRRmoQtVSOAX7Aupg==";
    // 2019-08-29T10:49:33Z.
    const TS: i64 = 1_567_075_773;
    const TOLERANCE: Duration = Duration::from_secs(300);

    fn sdk_headers() -> HeaderMap {
        headers(&[
            (
                "PAYPAL-CERT-URL",
                "https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270",
            ),
            (
                "PAYPAL-TRANSMISSION-ID",
                "afa30d40-ca4a-11e9-ab68-7d4e2605c70c",
            ),
            ("PAYPAL-TRANSMISSION-TIME", "2019-08-29T10:49:33Z"),
            ("PAYPAL-AUTH-ALGO", "SHA256withRSA"),
            ("PAYPAL-TRANSMISSION-SIG", SIG),
        ])
    }

    fn cert() -> Keys {
        Keys::Certificate(
            certificate_key(CERT.as_bytes())
                .expect("PayPal's certificate")
                .0,
        )
    }

    fn check(h: &HeaderMap, webhook_id: &str, body: &[u8], now: i64) -> Result<Verified, Error> {
        let t = parse(h, &KeyPolicy::default(), "paypal")?;
        verify_with(&t, &cert(), webhook_id, TOLERANCE, body, now)
    }

    #[test]
    fn the_java_sdk_vector_verifies() {
        assert_eq!(crc32fast::hash(BODY), 3_674_300_368);
        assert_eq!(
            check(&sdk_headers(), WEBHOOK_ID, BODY, TS + 10),
            Ok(Verified {
                event_id: "WH-7MU294299R542214K-4N1831857K851783H".into(),
                event_type: Some("PAYMENTS.PAYMENT.CREATED".into()),
                timestamp: Some(TS),
                secret_index: 0,
            })
        );
        // The SDK's testInvalidWebhookId.
        assert_eq!(
            check(&sdk_headers(), "NotToBeFound", BODY, TS),
            Err(Error::InvalidSignature)
        );
        let mut changed = BODY.to_vec();
        changed[10] ^= 1;
        assert_eq!(
            check(&sdk_headers(), WEBHOOK_ID, &changed, TS),
            Err(Error::InvalidSignature)
        );
        let mut later = sdk_headers();
        set(
            &mut later,
            "paypal-transmission-time",
            b"2019-08-29T10:49:34Z",
        );
        assert_eq!(
            check(&later, WEBHOOK_ID, BODY, TS),
            Err(Error::InvalidSignature)
        );
        let mut other_id = sdk_headers();
        set(
            &mut other_id,
            "paypal-transmission-id",
            b"afa30d40-ca4a-11e9-ab68-7d4e2605c70d",
        );
        assert_eq!(
            check(&other_id, WEBHOOK_ID, BODY, TS),
            Err(Error::InvalidSignature)
        );
        assert!(matches!(
            check(&sdk_headers(), WEBHOOK_ID, BODY, TS + 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        // The SDK's testInvalidAuthAlgo.
        let mut algo = sdk_headers();
        set(&mut algo, "paypal-auth-algo", b"NotToBeFound");
        assert_eq!(
            check(&algo, WEBHOOK_ID, BODY, TS),
            Err(Error::MalformedSignature(AUTH_ALGO))
        );
    }

    #[test]
    fn certificates_come_only_from_paypal() {
        for url in [
            "https://api.paypal.com/v1/notifications/certs/CERT-1",
            "https://api-m.paypal.com/v1/notifications/certs/CERT-1",
            "https://api-m.sandbox.paypal.com/v1/notifications/certs/CERT-1",
        ] {
            let mut h = sdk_headers();
            set(&mut h, CERT_URL, url.as_bytes());
            assert!(parse(&h, &KeyPolicy::default(), "paypal").is_ok(), "{url}");
        }
        for url in [
            "http://api.paypal.com/v1/notifications/certs/CERT-1",
            "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1",
            "https://evil.example/v1/notifications/certs/CERT-1",
            "https://api.paypal.com/v1/other/CERT-1",
            "https://api.paypal.com@evil.example/v1/notifications/certs/CERT-1",
            "https://www.paypal.com/v1/notifications/certs/CERT-1",
            "https://127.0.0.1/v1/notifications/certs/CERT-1",
        ] {
            let mut h = sdk_headers();
            set(&mut h, CERT_URL, url.as_bytes());
            assert!(
                matches!(
                    parse(&h, &KeyPolicy::default(), "paypal"),
                    Err(Error::InvalidSignature)
                ),
                "{url}"
            );
        }
        let policy = KeyPolicy {
            allow_hosts: vec!["127.0.0.1".to_owned()],
            ..KeyPolicy::default()
        };
        let mut h = sdk_headers();
        set(
            &mut h,
            CERT_URL,
            b"https://127.0.0.1:8443/v1/notifications/certs/CERT-1",
        );
        assert!(parse(&h, &policy, "paypal").is_ok());
    }

    #[test]
    fn missing_and_garbage_headers_are_signature_errors() {
        for name in [
            TRANSMISSION_SIG,
            TRANSMISSION_ID,
            TRANSMISSION_TIME,
            CERT_URL,
        ] {
            let mut h = sdk_headers();
            h.remove(name);
            assert!(
                matches!(
                    check(&h, WEBHOOK_ID, BODY, TS),
                    Err(Error::MissingSignature(_))
                ),
                "{name}"
            );
            for value in garbage() {
                let mut h = sdk_headers();
                set(&mut h, name, &value);
                assert!(
                    matches!(
                        check(&h, WEBHOOK_ID, BODY, TS),
                        Err(Error::MissingSignature(_)
                            | Error::MalformedSignature(_)
                            | Error::InvalidSignature)
                    ),
                    "{name}"
                );
            }
        }
    }
}
