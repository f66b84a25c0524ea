//! Standard Webhooks (and Svix): `webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64> …`, signed bytes `{id}.{ts}.{body}`.
//!
//! The signature header is a space-separated list so a sender can sign with
//! several keys during a rotation; every `v1` entry is a candidate and
//! entries of other versions (`v1a` is the asymmetric Ed25519 one) are
//! skipped. Svix sends the same three headers as `svix-id`,
//! `svix-timestamp`, `svix-signature`; a request uses one family or the
//! other, never a mix.
//!
//! Source: <https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md>.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::HeaderMap;

use super::hmac;
use super::{Error, Verified};
use crate::config::secret::Secret;

/// One header family: (id, timestamp, signature).
struct Names {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const STANDARD: Names = Names {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};

const SVIX: Names = Names {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

/// Secrets are `whsec_` + base64 of the key bytes; the prefix is optional.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let raw = secret.expose();
    let b64 = raw.strip_prefix(b"whsec_").unwrap_or(raw);
    match B64.decode(b64) {
        Ok(key) if !key.is_empty() => Ok(Secret::new(key)),
        Ok(_) => Err("secret decodes to an empty key".to_owned()),
        Err(_) => Err("secret is not whsec_ followed by base64".to_owned()),
    }
}

/// The `v1` signatures in a `webhook-signature` list; entries of other
/// versions, and `v1` values that are not a base64 tag, are skipped.
fn signatures(value: &[u8]) -> Vec<hmac::Tag> {
    value
        .split(|&b| b == b' ')
        .filter_map(|entry| entry.strip_prefix(b"v1,"))
        .filter_map(hmac::tag_from_base64)
        .collect()
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let (names, value) = match hmac::header(headers, STANDARD.signature) {
        Some(value) => (&STANDARD, value),
        None => match hmac::header(headers, SVIX.signature) {
            Some(value) => (&SVIX, value),
            None => return Err(Error::MissingSignature(STANDARD.signature)),
        },
    };
    let candidates = signatures(value);
    if candidates.is_empty() {
        return Err(Error::MalformedSignature(names.signature));
    }
    let id = match hmac::header(headers, names.id) {
        Some(id) if !id.is_empty() => id,
        _ => return Err(Error::MalformedSignature(names.id)),
    };
    let timestamp_text =
        hmac::header(headers, names.timestamp).ok_or(Error::MalformedSignature(names.timestamp))?;
    let timestamp =
        hmac::parse_timestamp(timestamp_text).ok_or(Error::MalformedSignature(names.timestamp))?;

    let secret_index = hmac::match_key(keys, &[id, b".", timestamp_text, b".", body], &candidates)?;
    hmac::check_window(timestamp, now, tolerance)?;

    Ok(Verified {
        event_id: String::from_utf8_lossy(id).into_owned(),
        event_type: hmac::parse_json(body).and_then(|j| hmac::pointer_str(&j, "/type")),
        timestamp: Some(timestamp),
        secret_index,
    })
}

pub(super) fn sign(
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let id = id.map_or_else(|| format!("msg_{}", hmac::random_id()), str::to_owned);
    let ts = timestamp.to_string();
    let tag = hmac::tag(
        key.expose(),
        &[id.as_bytes(), b".", ts.as_bytes(), b".", body],
    );
    vec![
        (STANDARD.id.to_owned(), id),
        (STANDARD.timestamp.to_owned(), ts),
        (
            STANDARD.signature.to_owned(),
            format!("v1,{}", hmac::encode_base64(&tag)),
        ),
    ]
}
