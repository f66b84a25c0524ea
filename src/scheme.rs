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
