//! The version gate (DESIGN §5): never hand the app an event older than what
//! it already accepted.
//!
//! `[source.ordering]` names two JSON pointers: the resource the event is about
//! and its version (an integer, or an RFC 3339 time compared as unix
//! nanoseconds). The key `{prefix}:ver:{source}:{resource}` holds the highest
//! version the app answered 2xx for; it moves only forward, atomically, and
//! only after that 2xx, so a newer event the app refused never makes an older
//! one stale.
//!
//! # Two versions of one resource at once
//!
//! In forward mode an event also takes a short lease on its resource,
//! `{prefix}:verlock:{source}:{resource}` (the nonce lease: it outlives
//! `upstream_timeout`), from the version check until the stored version has
//! moved. A second event about the same resource that arrives meanwhile is
//! answered `429 in_flight` with `Retry-After`, like a second copy of one event,
//! and its sender retries it once the first has settled. So the check and the
//! move are one step as far as the app can tell: the app never receives a
//! version lower than one it already accepted, even when both were sent at
//! once. Queue workers take the same lease before each attempt and, when it
//! is held, try again a second later without counting an attempt.

use crate::config::Ordering;
use crate::store::keys::{self, key_safe_id};
use crate::store::{self, Store};
use crate::time;

/// Where an event sits in its resource's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The resource key as stored (bounded like event ids).
    pub resource: String,
    pub version: i128,
}

/// How an event's version compares with the one the app accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Nothing stored, or an older version: the event goes on.
    Newer,
    /// The app already has this very version: a duplicate.
    Equal,
    /// The app already has a newer version.
    Stale,
}

/// Why a verified body can't go through the gate. Never quotes the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the body is not JSON")]
    NotJson,
    #[error("no value at the resource pointer")]
    MissingResource,
    #[error("the resource is not a string or an integer")]
    BadResource,
    #[error("no value at the version pointer")]
    MissingVersion,
    #[error("the version is not an integer or an RFC 3339 time")]
    BadVersion,
}

impl Gate {
    /// Reads the resource and version the source's pointers name.
    pub fn read(ordering: &Ordering, body: &[u8]) -> Result<Gate, Error> {
        let json: serde_json::Value = serde_json::from_slice(body).map_err(|_| Error::NotJson)?;
        let resource = match json.pointer(&ordering.resource) {
            None | Some(serde_json::Value::Null) => return Err(Error::MissingResource),
            Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            Some(_) => return Err(Error::BadResource),
        };
        let version = match json.pointer(&ordering.version) {
            None | Some(serde_json::Value::Null) => return Err(Error::MissingVersion),
            Some(v) => parse_version(v).ok_or(Error::BadVersion)?,
        };
        Ok(Gate {
            resource: key_safe_id(&resource).into_owned(),
            version,
        })
    }

    /// Where the app's accepted version of this resource is kept.
    pub fn version_key(&self, prefix: &str, source: &str) -> String {
        keys::version_key(prefix, source, &self.resource)
    }

    /// The resource's lease while one version is on its way.
    pub fn lock_key(&self, prefix: &str, source: &str) -> String {
        keys::version_lock_key(prefix, source, &self.resource)
    }

    /// Compares with the stored version.
    pub async fn check(
        &self,
        store: &Store,
        prefix: &str,
        source: &str,
    ) -> Result<Check, store::Error> {
        let stored = store
            .version_check(&self.version_key(prefix, source))
            .await?;
        Ok(match stored {
            Some(v) if v > self.version => Check::Stale,
            Some(v) if v == self.version => Check::Equal,
            _ => Check::Newer,
        })
    }

    /// Records that the app accepted this version (never moves backward).
    pub async fn advance(
        &self,
        store: &Store,
        prefix: &str,
        source: &str,
    ) -> Result<bool, store::Error> {
        store
            .version_advance(&self.version_key(prefix, source), self.version)
            .await
    }
}

/// An integer (JSON number or decimal string), or an RFC 3339 time as unix
/// nanoseconds. Fractions and floats are refused: a rounded version could
/// make two different versions equal.
pub fn parse_version(value: &serde_json::Value) -> Option<i128> {
    match value {
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        serde_json::Value::String(s) => parse_integer(s).or_else(|| parse_rfc3339(s)),
        _ => None,
    }
}

fn parse_integer(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A resource version written as RFC 3339, in unix nanoseconds (a zone is required).
pub fn parse_rfc3339(s: &str) -> Option<i128> {
    time::rfc3339_nanos(s.as_bytes(), time::Zone::Required)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ordering() -> Ordering {
        Ordering {
            resource: "/data/object/id".into(),
            version: "/data/object/version".into(),
        }
    }

    fn body(resource: serde_json::Value, version: serde_json::Value) -> Vec<u8> {
        json!({"data": {"object": {"id": resource, "version": version}}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn reads_integers_and_times() {
        let g = Gate::read(&ordering(), &body(json!("cus_1"), json!(7))).expect("gate");
        assert_eq!(
            g,
            Gate {
                resource: "cus_1".into(),
                version: 7
            }
        );
        let g = Gate::read(&ordering(), &body(json!(42), json!("12"))).expect("gate");
        assert_eq!(
            g,
            Gate {
                resource: "42".into(),
                version: 12
            }
        );
        let g = Gate::read(
            &ordering(),
            &body(json!("r"), json!("1970-01-01T00:00:01.5Z")),
        )
        .expect("gate");
        assert_eq!(g.version, 1_500_000_000);
    }

    #[test]
    fn refuses_what_it_cannot_order() {
        let o = ordering();
        assert_eq!(Gate::read(&o, b"not json"), Err(Error::NotJson));
        assert_eq!(Gate::read(&o, b"{}"), Err(Error::MissingResource));
        assert_eq!(
            Gate::read(&o, &body(json!({"a": 1}), json!(1))),
            Err(Error::BadResource)
        );
        assert_eq!(
            Gate::read(&o, &body(json!(""), json!(1))),
            Err(Error::BadResource)
        );
        assert_eq!(
            Gate::read(&o, &body(json!("r"), json!(null))),
            Err(Error::MissingVersion)
        );
        assert_eq!(
            Gate::read(&o, &body(json!("r"), json!(1.5))),
            Err(Error::BadVersion)
        );
        assert_eq!(
            Gate::read(&o, &body(json!("r"), json!("yesterday"))),
            Err(Error::BadVersion)
        );
        assert_eq!(
            Gate::read(&o, &body(json!("r"), json!(true))),
            Err(Error::BadVersion)
        );
    }

    #[test]
    fn hostile_resources_are_bounded() {
        let long = "x".repeat(5000);
        let g = Gate::read(&ordering(), &body(json!(long), json!(1))).expect("gate");
        assert!(g.resource.starts_with("sha256:") && g.resource.len() == 71);
        assert_eq!(g.version_key("hg", "s"), format!("hg:ver:s:{}", g.resource));
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2024-05-01T10:00:00Z"),
            Some(1_714_557_600_000_000_000)
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00+02:00"),
            parse_rfc3339("2024-05-01T10:00:00Z")
        );
        assert_eq!(
            parse_rfc3339("2024-05-01t09:30:00-00:30"),
            parse_rfc3339("2024-05-01T10:00:00Z")
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59.999999999Z"), Some(-1));
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00.123456789123Z").map(|n| n % 1_000_000_000),
            Some(123_456_789)
        );
        assert!(
            parse_rfc3339("2024-05-01T10:00:00.000000001Z") > parse_rfc3339("2024-05-01T10:00:00Z")
        );
        for bad in [
            "2024-05-01",
            "2024-05-01T10:00:00",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T10:00:00.Z",
            "2024-05-01T10:00:00+0200",
            "2024-05-01T10:00:00Zjunk",
            "2024-05-01T10:00:00+02:00x",
            "２０２４-05-01T10:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version(&json!(-3)), Some(-3));
        assert_eq!(parse_version(&json!(u64::MAX)), Some(i128::from(u64::MAX)));
        assert_eq!(parse_version(&json!("-3")), Some(-3));
        assert_eq!(parse_version(&json!("1e3")), None);
        assert_eq!(parse_version(&json!("")), None);
    }
}
