//! Generic: a sender described in `[source.generic]` — one signature header
//! (optional prefix, hex or base64), a signed-bytes template over `{id}`,
//! `{timestamp}` and `{body}`, an optional timestamp header that brings the
//! replay window, and where to find the event id and type.
//!
//! Choices where the config leaves room, so operators can predict them:
//!
//! - The template is read literally except for the three placeholders; any
//!   other `{…}` is signed as written. The body is fed to the MAC in place,
//!   byte for byte, whatever its encoding.
//! - `{id}` is rendered from the `event_id` header (the id must be known
//!   before the signature is checked, and the body is not read until then);
//!   `{timestamp}` is the timestamp header's text exactly as sent. A request
//!   lacking either, when the template needs it, is `MalformedSignature`.
//!   [`Generic::validate`] refuses templates that could never be rendered.
//! - `event_id` absent from the config: the id is the SHA-256 of the body.
//!   `event_id` configured but the request carries no usable value there
//!   (header missing or empty; body not JSON, pointer missing, or neither a
//!   string nor a number): `MalformedBody`. The operator said where the id
//!   lives; quietly keying the nonce on something else could let a retry
//!   through as a new event.
//! - `event_type` is optional: wherever it is missing the type is none.
//!
//! Errors name configuration keys (`signature_header`, `timestamp_header`,
//! `event_id`) rather than the configured header names, because the error
//! type only carries static text.

use std::time::Duration;

use http::HeaderMap;

use super::hmac;
use super::{Encoding, Error, Generic, Locator, Verified};
use crate::config::secret::Secret;

const SIGNATURE: &str = "signature_header";
const TIMESTAMP: &str = "timestamp_header";
const EVENT_ID: &str = "event_id";

/// One piece of the `signed_payload` template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'t> {
    Text(&'t [u8]),
    Id,
    Timestamp,
    Body,
}

const PLACEHOLDERS: [(&[u8], Piece<'static>); 3] = [
    (b"{id}", Piece::Id),
    (b"{timestamp}", Piece::Timestamp),
    (b"{body}", Piece::Body),
];

/// Splits the template into literal text and placeholders. Works on bytes so
/// a template with non-ASCII text can't be sliced inside a character.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let bytes = template.as_bytes();
    let mut out = Vec::new();
    let (mut literal_start, mut i) = (0, 0);
    while i < bytes.len() {
        let found = PLACEHOLDERS
            .iter()
            .find(|(name, _)| bytes[i..].starts_with(name));
        match found {
            Some((name, piece)) => {
                if literal_start < i {
                    out.push(Piece::Text(&bytes[literal_start..i]));
                }
                out.push(*piece);
                i += name.len();
                literal_start = i;
            }
            None => i += 1,
        }
    }
    if literal_start < bytes.len() {
        out.push(Piece::Text(&bytes[literal_start..]));
    }
    out
}

/// The signed bytes as slices, in order: the template's text, the id and
/// timestamp as given, the body in place.
fn render<'a>(
    pieces: &[Piece<'a>],
    id: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    body: &'a [u8],
) -> Result<Vec<&'a [u8]>, Error> {
    pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => Ok(text),
            Piece::Id => id.ok_or(Error::MalformedSignature(EVENT_ID)),
            Piece::Timestamp => timestamp.ok_or(Error::MalformedSignature(TIMESTAMP)),
            Piece::Body => Ok(body),
        })
        .collect()
}

fn header<'a>(headers: &'a HeaderMap, name: &http::HeaderName) -> Option<&'a [u8]> {
    headers.get(name).map(|v| v.as_bytes())
}

impl Generic {
    /// Problems that would make every request to this source fail, or make
    /// its signature meaningless. Config validation calls it so a broken
    /// `[source.generic]` table is reported at load time, not per request.
    pub fn validate(&self) -> Result<(), String> {
        let pieces = pieces(&self.signed_payload);
        if !pieces.contains(&Piece::Body) {
            return Err(
                "signed_payload must contain {body}: otherwise the body is not signed".into(),
            );
        }
        let has_timestamp = pieces.contains(&Piece::Timestamp);
        if has_timestamp && self.timestamp_header.is_none() {
            return Err("signed_payload uses {timestamp} but timestamp_header is not set".into());
        }
        if !has_timestamp && self.timestamp_header.is_some() {
            return Err(
                "timestamp_header is set but signed_payload has no {timestamp}: \
                 the replay window would rest on an unsigned value"
                    .into(),
            );
        }
        if pieces.contains(&Piece::Id) && !matches!(self.event_id, Some(Locator::Header(_))) {
            return Err(
                "signed_payload uses {id}, which needs event_id = { header = \"…\" }".into(),
            );
        }
        Ok(())
    }
}

pub(super) fn verify(
    generic: &Generic,
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value =
        header(headers, &generic.signature_header).ok_or(Error::MissingSignature(SIGNATURE))?;
    let value = match &generic.signature_prefix {
        Some(prefix) => value
            .strip_prefix(prefix.as_bytes())
            .ok_or(Error::MalformedSignature(SIGNATURE))?,
        None => value,
    };
    let signature = match generic.encoding {
        Encoding::Hex => hmac::tag_from_hex(value),
        Encoding::Base64 => hmac::tag_from_base64(value),
    }
    .ok_or(Error::MalformedSignature(SIGNATURE))?;

    let timestamp = match &generic.timestamp_header {
        Some(name) => {
            let text = header(headers, name).ok_or(Error::MalformedSignature(TIMESTAMP))?;
            let ts = hmac::parse_timestamp(text).ok_or(Error::MalformedSignature(TIMESTAMP))?;
            Some((text, ts))
        }
        None => None,
    };
    let id_header = match &generic.event_id {
        Some(Locator::Header(name)) => header(headers, name).filter(|id| !id.is_empty()),
        _ => None,
    };

    let pieces = pieces(&generic.signed_payload);
    let parts = render(&pieces, id_header, timestamp.map(|(text, _)| text), body)?;
    let secret_index = hmac::match_key(keys, &parts, &[signature])?;
    if let Some((_, ts)) = timestamp {
        hmac::check_window(ts, now, tolerance)?;
    }

    let wants_json = matches!(generic.event_id, Some(Locator::Pointer(_)))
        || matches!(generic.event_type, Some(Locator::Pointer(_)));
    let json = if wants_json {
        hmac::parse_json(body)
    } else {
        None
    };
    let event_id = match &generic.event_id {
        None => hmac::body_sha256_hex(body),
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str())
            .ok_or(Error::MalformedBody("event id header is missing"))?,
        Some(Locator::Pointer(pointer)) => json
            .as_ref()
            .and_then(|j| hmac::pointer_id(j, pointer))
            .ok_or(Error::MalformedBody(
                "no event id at the configured pointer",
            ))?,
    };
    let event_type = match &generic.event_type {
        None => None,
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str()),
        Some(Locator::Pointer(pointer)) => {
            json.as_ref().and_then(|j| hmac::pointer_str(j, pointer))
        }
    };
    Ok(Verified {
        event_id,
        event_type,
        timestamp: timestamp.map(|(_, ts)| ts),
        secret_index,
    })
}

/// The configured signature header; the timestamp header when one is
/// configured; the id header when the id lives in a header (`id`, or a fresh
/// random one).
pub(super) fn sign(
    generic: &Generic,
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Vec<(String, String)> {
    let id = id.map_or_else(hmac::random_id, str::to_owned);
    let ts = timestamp.to_string();
    let pieces = pieces(&generic.signed_payload);
    let parts: Vec<&[u8]> = pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => text,
            Piece::Id => id.as_bytes(),
            Piece::Timestamp => ts.as_bytes(),
            Piece::Body => body,
        })
        .collect();
    let tag = hmac::tag(key.expose(), &parts);
    let encoded = match generic.encoding {
        Encoding::Hex => hex::encode(tag),
        Encoding::Base64 => hmac::encode_base64(&tag),
    };
    let prefix = generic.signature_prefix.as_deref().unwrap_or("");

    let mut out = vec![(
        generic.signature_header.as_str().to_owned(),
        format!("{prefix}{encoded}"),
    )];
    if let Some(name) = &generic.timestamp_header {
        out.push((name.as_str().to_owned(), ts));
    }
    if let Some(Locator::Header(name)) = &generic.event_id {
        out.push((name.as_str().to_owned(), id));
    }
    out
}
