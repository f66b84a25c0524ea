//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=<hex>]`,
//! signed bytes `{t}.{body}`, key = the whole `whsec_…` string as Stripe
//! hands it out (Stripe's own libraries use it verbatim as the HMAC key).
//!
//! During a secret roll Stripe sends one `v1` per active endpoint secret, so
//! every `v1` is a candidate. Other schemes (`v0`, test-mode extras) are
//! ignored, as are `v1` values that are not hex, as long as at least one `v1`
//! is usable — the same leniency as Stripe's libraries.
//!
//! Source: <https://docs.stripe.com/webhooks#verify-manually>.

use std::time::Duration;

use http::HeaderMap;

use super::hmac;
use super::{Error, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "Stripe-Signature";

/// A parsed `Stripe-Signature` header.
struct Header<'a> {
    /// `t` as sent: the signed bytes use the text, not a re-rendering.
    timestamp_text: &'a [u8],
    timestamp: i64,
    signatures: Vec<Vec<u8>>,
}

fn parse(value: &[u8]) -> Result<Header<'_>, Error> {
    let malformed = Error::MalformedSignature(SIGNATURE);
    let mut timestamp_text = None;
    let mut signatures = Vec::new();
    let mut saw_v1 = false;
    for item in value.split(|&b| b == b',') {
        let item = item.trim_ascii();
        let Some(eq) = item.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (key, val) = (&item[..eq], &item[eq + 1..]);
        match key {
            // Two timestamps would make it ambiguous which one was signed.
            b"t" if timestamp_text.is_some() => return Err(malformed),
            b"t" => timestamp_text = Some(val),
            b"v1" => {
                saw_v1 = true;
                if let Some(sig) = hmac::decode_hex(val) {
                    signatures.push(sig);
                }
            }
            _ => {}
        }
    }
    let timestamp_text = timestamp_text.ok_or(malformed.clone())?;
    let timestamp = hmac::parse_timestamp(timestamp_text).ok_or(malformed.clone())?;
    if !saw_v1 || signatures.is_empty() {
        return Err(malformed);
    }
    Ok(Header {
        timestamp_text,
        timestamp,
        signatures,
    })
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let header = parse(value)?;
    let secret_index = hmac::match_key(
        keys,
        &[header.timestamp_text, b".", body],
        &header.signatures,
    )?;
    hmac::check_window(header.timestamp, now, tolerance)?;

    let json = hmac::parse_json(body).ok_or(Error::MalformedBody("body is not JSON"))?;
    let event_id = match json.pointer("/id") {
        Some(serde_json::Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err(Error::MalformedBody("body has no string /id")),
    };
    Ok(Verified {
        event_id,
        event_type: hmac::pointer_str(&json, "/type"),
        timestamp: Some(header.timestamp),
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
    let t = timestamp.to_string();
    let tag = hmac::tag(key.expose(), &[t.as_bytes(), b".", body]);
    vec![(
        SIGNATURE.to_owned(),
        format!("t={t},v1={}", hex::encode(tag)),
    )]
}
