//! Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the raw body; id
//! `X-Shopify-Webhook-Id`, type `X-Shopify-Topic`. The same names without
//! the `X-` prefix (`Shopify-Hmac-Sha256`, …) are accepted too, as the
//! contract promises; the `X-` spelling wins when both are present. No
//! timestamp is signed, so replays are caught by the nonce alone.
//!
//! Source: <https://shopify.dev/docs/apps/build/webhooks/subscribe/https>.

use http::HeaderMap;

use super::hmac;
use super::{Error, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "X-Shopify-Hmac-Sha256";
const SIGNATURE_BARE: &str = "Shopify-Hmac-Sha256";
const WEBHOOK_ID: &str = "X-Shopify-Webhook-Id";
const WEBHOOK_ID_BARE: &str = "Shopify-Webhook-Id";
const TOPIC: &str = "X-Shopify-Topic";
const TOPIC_BARE: &str = "Shopify-Topic";

/// The value under the `X-` name, else under the bare one.
fn text(headers: &HeaderMap, prefixed: &str, bare: &str) -> Option<String> {
    hmac::header_text(headers, prefixed).or_else(|| hmac::header_text(headers, bare))
}

pub(super) fn verify(keys: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE)
        .or_else(|| hmac::header(headers, SIGNATURE_BARE))
        .ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = hmac::decode_base64(value).ok_or(Error::MalformedSignature(SIGNATURE))?;
    let secret_index = hmac::match_key(keys, &[body], &[signature])?;

    Ok(Verified {
        event_id: text(headers, WEBHOOK_ID, WEBHOOK_ID_BARE)
            .unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: text(headers, TOPIC, TOPIC_BARE),
        timestamp: None,
        secret_index,
    })
}

pub(super) fn sign(key: &Secret, body: &[u8], id: Option<&str>) -> Vec<(String, String)> {
    let tag = hmac::tag(key.expose(), &[body]);
    vec![
        (SIGNATURE.to_owned(), hmac::encode_base64(&tag)),
        (
            WEBHOOK_ID.to_owned(),
            id.map_or_else(hmac::random_id, str::to_owned),
        ),
    ]
}
