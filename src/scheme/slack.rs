//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:{ts}:{body}`, with `ts`
//! from `X-Slack-Request-Timestamp`.
//!
//! Events API bodies are JSON with `/event_id` and `/event/type`; the
//! one-off `url_verification` handshake is JSON with only `/type`; slash
//! commands and interactivity payloads are form-encoded. So the body is never
//! required to be JSON: the id falls back to the body's SHA-256 and the type
//! to `/type`, then to none.
//!
//! Source: <https://api.slack.com/authentication/verifying-requests-from-slack>.

use std::time::Duration;

use http::HeaderMap;

use super::hmac;
use super::{Error, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "X-Slack-Signature";
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";
const VERSION: &[u8] = b"v0";

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = value
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix(b"="))
        .and_then(hmac::tag_from_hex)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    let timestamp_text =
        hmac::header(headers, TIMESTAMP).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let timestamp =
        hmac::parse_timestamp(timestamp_text).ok_or(Error::MalformedSignature(TIMESTAMP))?;

    let secret_index = hmac::match_key(
        keys,
        &[VERSION, b":", timestamp_text, b":", body],
        &[signature],
    )?;
    hmac::check_window(timestamp, now, tolerance)?;

    let json = hmac::parse_json(body);
    let event_id = json
        .as_ref()
        .and_then(|j| hmac::pointer_id(j, "/event_id"))
        .unwrap_or_else(|| hmac::body_sha256_hex(body));
    let event_type = json.as_ref().and_then(|j| {
        hmac::pointer_str(j, "/event/type").or_else(|| hmac::pointer_str(j, "/type"))
    });
    Ok(Verified {
        event_id,
        event_type,
        timestamp: Some(timestamp),
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
    let ts = timestamp.to_string();
    let tag = hmac::tag(key.expose(), &[VERSION, b":", ts.as_bytes(), b":", body]);
    vec![
        (SIGNATURE.to_owned(), format!("v0={}", hex::encode(tag))),
        (TIMESTAMP.to_owned(), ts),
    ]
}
