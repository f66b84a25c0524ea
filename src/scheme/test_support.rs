//! Helpers shared by the per-scheme tests, and the checks every scheme must
//! pass whatever its format.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::{Coded, DynEq, Error, Scheme};
use crate::secret::Secret;

pub(crate) const TOLERANCE: Duration = Duration::from_secs(300);

/// The scheme of a coded provider, as a source naming it holds it.
pub(crate) fn coded(provider: impl DynEq) -> Scheme {
    Scheme::Coded(Coded::new(Box::new(provider)))
}

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
    let lines = scheme
        .sign(key, body, id, timestamp)
        .expect("the scheme can sign");
    for (name, value) in lines {
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
