//! GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body; the
//! delivery id is `X-GitHub-Delivery` and the event type `X-GitHub-Event`.
//! GitHub signs no timestamp, so replays are caught by the nonce alone.
//!
//! Source: <https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries>.

use http::HeaderMap;

use super::hmac;
use super::{Error, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "X-Hub-Signature-256";
const DELIVERY: &str = "X-GitHub-Delivery";
const EVENT: &str = "X-GitHub-Event";
const PREFIX: &[u8] = b"sha256=";

pub(super) fn verify(keys: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = value
        .strip_prefix(PREFIX)
        .and_then(hmac::decode_hex)
        .ok_or(Error::MalformedSignature(SIGNATURE))?;
    let secret_index = hmac::match_key(keys, &[body], &[signature])?;

    Ok(Verified {
        event_id: hmac::header_text(headers, DELIVERY)
            .unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: hmac::header_text(headers, EVENT),
        timestamp: None,
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], id: Option<&str>) -> Vec<(String, String)> {
    let tag = hmac::tag(key.expose(), &[body]);
    vec![
        (SIGNATURE.to_owned(), format!("sha256={}", hex::encode(tag))),
        (
            DELIVERY.to_owned(),
            id.map_or_else(hmac::random_id, str::to_owned),
        ),
    ]
}
