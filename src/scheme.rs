//! Signature schemes: each sender's way of signing a webhook.
//!
//! A scheme reads its headers, recomputes the HMAC over the raw body bytes with
//! every active key, compares in constant time, checks the signed timestamp
//! against the replay window, and only then parses the body for the event id
//! and type. The one value it hands on is [`Verified`]; nothing downstream sees
//! an unverified request.

use std::time::Duration;

use http::{HeaderMap, HeaderName};

use crate::config::secret::Secret;

mod generic;
mod github;
pub(crate) mod hmac;
mod shopify;
mod slack;
mod standard;
mod stripe;

/// What a successful verification proves about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The sender's event id (or the hex SHA-256 of the body when the scheme has none).
    pub event_id: String,
    pub event_type: Option<String>,
    /// The signed timestamp (unix seconds), for schemes that sign one.
    pub timestamp: Option<i64>,
    /// 0-based index of the key in `secrets` that matched.
    pub secret_index: usize,
}

/// Why a request was refused. Variants name headers, never secret material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("signature header {0} is missing")]
    MissingSignature(&'static str),
    #[error("signature header {0} is malformed")]
    MalformedSignature(&'static str),
    #[error("no active secret matches the signature")]
    InvalidSignature,
    #[error("signed timestamp {timestamp} is outside the {tolerance_secs}s window")]
    TimestampOutsideWindow { timestamp: i64, tolerance_secs: u64 },
    #[error("body is not the JSON the scheme needs: {0}")]
    MalformedBody(&'static str),
}

/// Where a generic sender carries a value: a header or a JSON pointer into the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    Header(HeaderName),
    Pointer(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Base64,
}

/// A `[source.generic]` table, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generic {
    pub signature_header: HeaderName,
    pub signature_prefix: Option<String>,
    pub encoding: Encoding,
    /// The signed-bytes template, e.g. `{id}.{timestamp}.{body}`.
    pub signed_payload: String,
    pub timestamp_header: Option<HeaderName>,
    pub event_id: Option<Locator>,
    pub event_type: Option<Locator>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    Stripe,
    Github,
    Shopify,
    Slack,
    Standard,
    Generic(Box<Generic>),
}

impl Scheme {
    /// The `scheme = "…"` word.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::Slack => "slack",
            Scheme::Standard => "standard",
            Scheme::Generic(_) => "generic",
        }
    }

    /// Whether the scheme signs a timestamp (and so whether `tolerance` applies).
    pub fn signs_timestamp(&self) -> bool {
        match self {
            Scheme::Stripe | Scheme::Slack | Scheme::Standard => true,
            Scheme::Github | Scheme::Shopify => false,
            Scheme::Generic(g) => g.timestamp_header.is_some(),
        }
    }

    /// Turns a configured secret into the HMAC key this scheme uses
    /// (e.g. `standard` strips `whsec_` and decodes base64). The error names
    /// what is wrong with the value's shape, never the value.
    pub fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        match self {
            Scheme::Standard => standard::prepare_key(secret),
            _ if secret.expose().is_empty() => Err("secret is empty".to_owned()),
            _ => Ok(secret.clone()),
        }
    }

    /// Verifies a request: signature (any key, any signature value), then the
    /// timestamp window (both directions, `now` in unix seconds), then the
    /// body parse for id and type.
    pub fn verify(
        &self,
        keys: &[Secret],
        tolerance: Duration,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Verified, Error> {
        match self {
            Scheme::Stripe => stripe::verify(keys, tolerance, headers, body, now),
            Scheme::Github => github::verify(keys, headers, body),
            Scheme::Shopify => shopify::verify(keys, headers, body),
            Scheme::Slack => slack::verify(keys, tolerance, headers, body, now),
            Scheme::Standard => standard::verify(keys, tolerance, headers, body, now),
            Scheme::Generic(g) => generic::verify(g, keys, tolerance, headers, body, now),
        }
    }

    /// The headers (name, value) that make `body` a valid request signed with
    /// `key` at `timestamp`; `id` sets the event id where the scheme carries it
    /// in a header (a fresh random id is used when `None`).
    pub fn sign(
        &self,
        key: &Secret,
        body: &[u8],
        id: Option<&str>,
        timestamp: i64,
    ) -> Vec<(String, String)> {
        match self {
            Scheme::Stripe => stripe::sign(key, body, timestamp),
            Scheme::Github => github::sign(key, body, id),
            Scheme::Shopify => shopify::sign(key, body, id),
            Scheme::Slack => slack::sign(key, body, timestamp),
            Scheme::Standard => standard::sign(key, body, id, timestamp),
            Scheme::Generic(g) => generic::sign(g, key, body, id, timestamp),
        }
    }
}

/// Helpers shared by the per-scheme tests, and the checks every scheme must
/// pass whatever its format.
#[cfg(test)]
pub(crate) mod test_support {
    use std::time::Duration;

    use http::{HeaderMap, HeaderName, HeaderValue};

    use super::{Error, Scheme};
    use crate::config::secret::Secret;

    pub(crate) const TOLERANCE: Duration = Duration::from_secs(300);

    pub(crate) fn key(bytes: &[u8]) -> Secret {
        Secret::new(bytes.to_vec())
    }

    /// Sets `name` to raw `value` bytes (which may be non-UTF-8), replacing
    /// any previous value.
    pub(crate) fn set(headers: &mut HeaderMap, name: &str, value: &[u8]) {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("test header name is valid");
        let value = HeaderValue::from_bytes(value).expect("test header value is valid");
        headers.insert(name, value);
    }

    pub(crate) fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            set(&mut map, name, value.as_bytes());
        }
        map
    }

    /// The headers `sign` produces, as a request would carry them.
    pub(crate) fn signed(
        scheme: &Scheme,
        key: &Secret,
        body: &[u8],
        id: Option<&str>,
        timestamp: i64,
    ) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in scheme.sign(key, body, id, timestamp) {
            set(&mut map, &name, value.as_bytes());
        }
        map
    }

    /// Header values that no scheme accepts as a signature or timestamp:
    /// empty, junk, non-UTF-8, far too long, and near-misses of every format.
    pub(crate) fn garbage() -> Vec<Vec<u8>> {
        let mut values: Vec<Vec<u8>> = [
            &b""[..],
            b" ",
            b"x",
            b"\xff\xfe\x80",
            b"=",
            b",",
            b",,,",
            b"t=",
            b"t=,v1=",
            b"t=1,v1=",
            b"t=\xff,v1=00",
            b"v1=",
            b"v0=",
            b"v0=zz",
            b"sha256=",
            b"sha256=zz",
            b"sha256=0",
            b"v1,",
            b"v1,!!!",
            b"v1a,AAAA",
            b"-1",
            b"99999999999999999999999999",
            b"====",
            b"\t",
        ]
        .iter()
        .map(|v| v.to_vec())
        .collect();
        values.push(vec![b'a'; 64 * 1024]);
        values.push(vec![0x80; 64 * 1024]);
        values.push(b"v1,AAAA ".repeat(4096));
        values.push(b"v1=00,".repeat(4096));
        values
    }

    /// Whether an error is one of the signature refusals (400, never 5xx,
    /// never a parsed body).
    pub(crate) fn is_signature_error(err: &Error) -> bool {
        matches!(
            err,
            Error::MissingSignature(_) | Error::MalformedSignature(_) | Error::InvalidSignature
        )
    }

    /// Every garbage value in every named header of an otherwise valid
    /// request is refused as a signature error, without panicking.
    pub(crate) fn garbage_is_refused(
        scheme: &Scheme,
        keys: &[Secret],
        valid: &HeaderMap,
        body: &[u8],
        now: i64,
        names: &[&str],
    ) {
        for name in names {
            for value in garbage() {
                let mut headers = valid.clone();
                set(&mut headers, name, &value);
                match scheme.verify(keys, TOLERANCE, &headers, body, now) {
                    Err(err) => assert!(
                        is_signature_error(&err),
                        "{name}: {:?} gave {err:?}",
                        String::from_utf8_lossy(&value[..value.len().min(40)])
                    ),
                    Ok(v) => panic!(
                        "{name}: {:?} was accepted: {v:?}",
                        String::from_utf8_lossy(&value[..value.len().min(40)])
                    ),
                }
            }
        }
    }

    /// The checks every scheme must pass, through `sign` and `verify` only:
    /// round trip, rotation, wrong key, tampered body, missing headers, and the
    /// window in both directions for schemes that sign a timestamp.
    /// `body` must be a body the scheme accepts; `signature_headers` are all
    /// the names the signature may travel under.
    pub(crate) fn common_checks(
        scheme: &Scheme,
        right: &Secret,
        body: &[u8],
        signature_headers: &[&str],
    ) {
        let wrong = key(b"a key that nobody configured");
        let ts = 1_700_000_000;
        let headers = signed(scheme, right, body, Some("evt_common"), ts);

        // Round trip.
        let ok = scheme
            .verify(std::slice::from_ref(right), TOLERANCE, &headers, body, ts)
            .expect("a request made by sign verifies");
        assert_eq!(ok.secret_index, 0);
        let expected_ts = scheme.signs_timestamp().then_some(ts);
        assert_eq!(ok.timestamp, expected_ts);

        // Rotation: the second key matches and is reported.
        let rotated = [wrong.clone(), right.clone()];
        let ok = scheme
            .verify(&rotated, TOLERANCE, &headers, body, ts)
            .expect("the second key matches");
        assert_eq!(ok.secret_index, 1);

        // Wrong key, and no key at all.
        for keys in [&[wrong.clone()][..], &[]] {
            assert_eq!(
                scheme.verify(keys, TOLERANCE, &headers, body, ts),
                Err(Error::InvalidSignature)
            );
        }

        // Tampered body: one byte changed, one appended, truncated.
        let mut changed = body.to_vec();
        changed[0] ^= 0x01;
        let mut longer = body.to_vec();
        longer.push(b' ');
        for tampered in [&changed[..], &longer[..], &body[..body.len() - 1]] {
            assert_eq!(
                scheme.verify(&rotated, TOLERANCE, &headers, tampered, ts),
                Err(Error::InvalidSignature)
            );
        }

        // Missing signature header.
        let mut missing = headers.clone();
        for name in signature_headers {
            missing.remove(*name);
        }
        assert!(matches!(
            scheme.verify(&rotated, TOLERANCE, &missing, body, ts),
            Err(Error::MissingSignature(_))
        ));
        assert!(matches!(
            scheme.verify(&rotated, TOLERANCE, &HeaderMap::new(), body, ts),
            Err(Error::MissingSignature(_))
        ));

        // The window, both directions; the edge itself is inside.
        let tol = i64::try_from(TOLERANCE.as_secs()).expect("small tolerance");
        for now in [ts - tol, ts + tol] {
            assert!(
                scheme
                    .verify(&rotated, TOLERANCE, &headers, body, now)
                    .is_ok()
            );
        }
        for now in [ts - tol - 1, ts + tol + 1, i64::MIN, i64::MAX] {
            let got = scheme.verify(&rotated, TOLERANCE, &headers, body, now);
            if scheme.signs_timestamp() {
                assert_eq!(
                    got,
                    Err(Error::TimestampOutsideWindow {
                        timestamp: ts,
                        tolerance_secs: TOLERANCE.as_secs()
                    }),
                    "now = {now}"
                );
            } else {
                assert!(got.is_ok(), "no timestamp is signed, so no window");
            }
        }
        // A wrong key is refused as such even when the timestamp is stale too:
        // the signature is checked first.
        assert_eq!(
            scheme.verify(&[wrong], TOLERANCE, &headers, body, ts + tol + 1),
            Err(Error::InvalidSignature)
        );
    }
}
