//! The store's key layout (DESIGN §4, §5, §6), in one place. Every key starts
//! with the configured `key_prefix`; the `{source}` hash tags of the queue
//! keys keep one source's stream and delayed set on one Cluster slot.
//!
//! | key | holds |
//! |---|---|
//! | `{prefix}:nonce:{source}:{id}` | an event's lease token, then `done` |
//! | `{prefix}:ver:{source}:{resource}` | the highest version the app accepted |
//! | `{prefix}:verlock:{source}:{resource}` | a resource's lease while one version is delivered |
//! | `{prefix}:fail:{source}:{id}` | consecutive forward failures of an event |
//! | `{prefix}:queue:{<source>}` | the stream of queued envelopes |
//! | `{prefix}:queue:{<source>}:delayed` | envelopes waiting for a retry |
//! | `{prefix}:queue:{<source>}:settled` | the id of the entry removed last |
//! | `{prefix}:dlq` | the dead-letter stream |
//! | `{prefix}:dlq:jobs` | the dead-letter jobs (DESIGN §6b): id → JSON |
//! | `{prefix}:stats:60:{hour}`, `{prefix}:stats:900:{day}` | the console charts' counts (DESIGN §7b), `{bucket}\|{source}\|{series}` → count, kept 25 h |

use std::borrow::Cow;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// `[store] key_prefix` when the config does not set it.
pub const DEFAULT_PREFIX: &str = "hookgate";

/// How much longer than `upstream_timeout` a lease (a nonce's, a resource's,
/// a pending queue entry's) lives: it outlasts the attempt holding it, yet a
/// crashed replica blocks an event only briefly.
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Event ids longer than this (or holding control characters) are stored and
/// stamped as their SHA-256, so a hostile id can't make huge or odd keys.
const MAX_EVENT_ID_LEN: usize = 256;

/// The lease an attempt at the app takes: `upstream_timeout` plus [`LEASE_MARGIN`].
pub fn lease(upstream_timeout: Duration) -> Duration {
    upstream_timeout.saturating_add(LEASE_MARGIN)
}

/// `{prefix}:nonce:{source}:{event_id}` (DESIGN §4).
pub fn nonce_key(prefix: &str, source: &str, event_id: &str) -> String {
    // Built by hand: `format!` costs more than the three copies.
    let mut key = String::with_capacity(prefix.len() + source.len() + event_id.len() + 8);
    key.push_str(prefix);
    key.push_str(":nonce:");
    key.push_str(source);
    key.push(':');
    key.push_str(event_id);
    key
}

/// `{prefix}:ver:{source}:{resource}` (DESIGN §5).
pub fn version_key(prefix: &str, source: &str, resource: &str) -> String {
    format!("{prefix}:ver:{source}:{resource}")
}

/// `{prefix}:verlock:{source}:{resource}`: held while one event of the
/// resource is between its check and its move.
pub fn version_lock_key(prefix: &str, source: &str, resource: &str) -> String {
    format!("{prefix}:verlock:{source}:{resource}")
}

/// `{prefix}:fail:{source}:{event_id}`: consecutive forward failures.
pub fn fail_key(prefix: &str, source: &str, event_id: &str) -> String {
    format!("{prefix}:fail:{source}:{event_id}")
}

/// `{prefix}:queue:{<source>}`.
pub fn queue_key(prefix: &str, source: &str) -> String {
    format!("{prefix}:queue:{{{source}}}")
}

/// `{prefix}:queue:{<source>}:delayed`.
pub fn delayed_key(prefix: &str, source: &str) -> String {
    format!("{prefix}:queue:{{{source}}}:delayed")
}

/// `{prefix}:queue:{<source>}:settled`: written by every removal of an
/// entry, so the removal always reaches the replicas as a write of its own
/// (a `WAIT` after a removal that found nothing left to remove then still
/// waits for the write that did remove it).
pub fn settled_key(prefix: &str, source: &str) -> String {
    format!("{prefix}:queue:{{{source}}}:settled")
}

/// `{prefix}:dlq`.
pub fn dlq_key(prefix: &str) -> String {
    format!("{prefix}:dlq")
}

/// `{prefix}:dlq:jobs`: the dead-letter jobs (DESIGN §6b), a hash of id
/// to JSON.
pub fn jobs_key(prefix: &str) -> String {
    format!("{prefix}:dlq:jobs")
}

/// `{<prefix>:dlq}:moved`: the new id of each dead letter `hookgate store
/// rekey` wrote again (a hash, kept a day). Its hash tag is the dead-letter
/// stream's whole name, so both share a Redis Cluster slot.
pub fn dlq_moved_key(prefix: &str) -> String {
    format!("{{{prefix}:dlq}}:moved")
}

/// What a key names, read back from its text (the SQLite store keeps each
/// kind in a table of its own, keyed by source and id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named<'a> {
    Nonce { source: &'a str, id: &'a str },
    Version { source: &'a str, resource: &'a str },
    VersionLock { source: &'a str, resource: &'a str },
    Failures { source: &'a str, id: &'a str },
}

/// Reads a key built by the functions above with `prefix`. Source names
/// hold no `:` (config validation), so the source ends at the first `:`
/// after the kind and the rest, colons and all, is the id or resource.
pub fn parse<'a>(prefix: &str, key: &'a str) -> Option<Named<'a>> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(':')?;
    let (kind, rest) = rest.split_once(':')?;
    let (source, id) = rest.split_once(':')?;
    Some(match kind {
        "nonce" => Named::Nonce { source, id },
        "ver" => Named::Version {
            source,
            resource: id,
        },
        "verlock" => Named::VersionLock {
            source,
            resource: id,
        },
        "fail" => Named::Failures { source, id },
        _ => return None,
    })
}

/// `bytes` as lowercase hex, written from a table: digests and tokens on
/// every request's path are encoded with it (`hex::encode` goes through a
/// `char` iterator, several times slower).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0x0f)]);
    }
    // Only ASCII digits were written.
    String::from_utf8(out).unwrap_or_default()
}

/// The event id as stored and stamped: itself when short and printable, its
/// SHA-256 (`sha256:<hex>`) otherwise.
pub fn key_safe_id(id: &str) -> Cow<'_, str> {
    if id.len() <= MAX_EVENT_ID_LEN && !id.chars().any(char::is_control) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(format!("sha256:{}", hex(&Sha256::digest(id.as_bytes()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_and_agrees_with_the_hex_crate() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&bytes), ::hex::encode(&bytes));
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn hostile_ids_become_bounded_keys() {
        assert_eq!(key_safe_id("evt_123"), "evt_123");
        assert_eq!(key_safe_id("a:b*c"), "a:b*c");
        let long = "x".repeat(10_000);
        let safe = key_safe_id(&long);
        assert!(safe.starts_with("sha256:") && safe.len() == 7 + 64);
        assert!(key_safe_id("a\nb").starts_with("sha256:"));
        assert!(key_safe_id("a\0b").starts_with("sha256:"));
        assert_ne!(key_safe_id("a\nb"), key_safe_id("a\nc"));
    }

    #[test]
    fn nonce_key_layout() {
        assert_eq!(
            nonce_key("hookgate", "stripe", "evt_1"),
            "hookgate:nonce:stripe:evt_1"
        );
    }

    #[test]
    fn keys_read_back_with_colons_in_ids() {
        let p = "hg:x";
        assert_eq!(
            parse(p, &nonce_key(p, "stripe", "evt:1:2")),
            Some(Named::Nonce {
                source: "stripe",
                id: "evt:1:2"
            })
        );
        assert_eq!(
            parse(p, &version_key(p, "s", "in:1")),
            Some(Named::Version {
                source: "s",
                resource: "in:1"
            })
        );
        assert_eq!(
            parse(p, &version_lock_key(p, "s", "r")),
            Some(Named::VersionLock {
                source: "s",
                resource: "r"
            })
        );
        assert_eq!(
            parse(p, &fail_key(p, "s", "e")),
            Some(Named::Failures {
                source: "s",
                id: "e"
            })
        );
        assert_eq!(parse("other", &nonce_key(p, "s", "e")), None);
        assert_eq!(parse(p, &dlq_key(p)), None);
    }

    #[test]
    fn key_layout() {
        assert_eq!(dlq_key("hg"), "hg:dlq");
        assert_eq!(fail_key("hg", "stripe", "evt_1"), "hg:fail:stripe:evt_1");
        assert_eq!(queue_key("hg", "q"), "hg:queue:{q}");
        assert_eq!(delayed_key("hg", "q"), "hg:queue:{q}:delayed");
        assert_eq!(version_key("hg", "s", "in_1"), "hg:ver:s:in_1");
        assert_eq!(version_lock_key("hg", "s", "in_1"), "hg:verlock:s:in_1");
    }
}
