//! Signature schemes: each sender's way of signing a webhook.
//!
//! A scheme reads its headers, recomputes the HMAC over the raw body bytes with
//! every active key, compares in constant time, checks the signed timestamp
//! against the replay window, and only then parses the body for the event id
//! and type. The one value it hands on is [`Verified`]; nothing downstream sees
//! an unverified request.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, Uri};
use http_body_util::Full;

use crate::keyfetch::{Fetcher, KeyPolicy, KeyUrl};
use crate::secret::Secret;

mod adyen;
pub mod catalog;
mod discord;
mod generic;
mod github;
mod google_oidc;
mod handshake;
pub(crate) mod hmac;
mod increase;
mod json;
mod mailgun;
mod messagebird;
mod metronome;
mod msgraph;
mod paypal;
mod plivo;
mod resign;
mod sendgrid;
mod shopify;
mod sinch_voice;
mod slack;
mod sns;
mod standard;
mod stripe;
mod twilio;

pub use catalog::{Handshake, Preset};
pub use google_oidc::{GOOGLE_JWKS, GOOGLE_JWKS_HOST};

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
    /// The provider's key or certificate could not be fetched (logged where
    /// it failed): the sender should retry, so never a 400.
    #[error("the provider's signing key could not be fetched")]
    KeyUnavailable,
}

/// Where a generic sender carries a value: a header or a JSON pointer into the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    Header(HeaderName),
    Pointer(String),
}

/// How a signature is written in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Base64,
    /// URL-safe alphabet; padding optional.
    Base64Url,
}

/// What the signature is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
    /// No MAC: the header carries the shared secret itself (GitLab, Okta).
    /// Compared in constant time; it proves the sender knows the secret,
    /// not that the body is unchanged.
    Token,
}

impl Algorithm {
    /// Bytes in a tag (`None` for a token, whose length is the secret's).
    pub fn tag_len(self) -> Option<usize> {
        match self {
            Algorithm::Sha1 => Some(20),
            Algorithm::Sha256 => Some(32),
            Algorithm::Sha512 => Some(64),
            Algorithm::Token => None,
        }
    }
}

/// How a configured secret turns into key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretEncoding {
    /// The secret's bytes as written.
    Raw,
    Base64,
    Hex,
}

/// How a signed timestamp is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampFormat {
    Seconds,
    Milliseconds,
    /// `2022-01-31T23:59:59Z`, fraction and offset allowed; no zone = UTC.
    Rfc3339,
}

/// A `[source.generic]` table (or a catalog preset), validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generic {
    pub signature_header: HeaderName,
    /// Further headers that may carry signatures (Box's secondary key,
    /// Shopify without `X-`); every value found is a candidate.
    pub alternate_signature_headers: Vec<HeaderName>,
    /// Stripped before decoding; with a delimiter, entries without it are skipped.
    pub signature_prefix: Option<String>,
    /// Splits the header into several entries (`" "`, `","`, `";"`).
    pub signature_delimiter: Option<String>,
    /// Entries are `key=value`; signatures are the values under this key.
    pub signature_key: Option<String>,
    pub encoding: Encoding,
    pub algorithm: Algorithm,
    /// The signed-bytes template, e.g. `{id}.{timestamp}.{body}`.
    pub signed_payload: String,
    pub timestamp_header: Option<HeaderName>,
    /// The signed timestamp is the entry with this key in the signature header.
    pub timestamp_key: Option<String>,
    pub timestamp_format: TimestampFormat,
    pub secret_encoding: SecretEncoding,
    /// Stripped from a secret that starts with it (`whsec_`).
    pub secret_prefix: Option<String>,
    /// The URL the sender posts to, as it sees it (`{url}` in the template).
    pub public_url: Option<String>,
    pub event_id: Option<Locator>,
    pub event_type: Option<Locator>,
    /// Names used in errors: the header itself for presets, the config key
    /// for `[source.generic]`.
    pub labels: Labels,
}

/// Static names for errors about a generic sender's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    pub signature: &'static str,
    pub timestamp: &'static str,
    pub id: &'static str,
}

impl Labels {
    /// The config keys of `[source.generic]`.
    pub const CONFIG: Labels = Labels {
        signature: "signature_header",
        timestamp: "timestamp_header",
        id: "event_id",
    };
}

impl Generic {
    /// A sender signing `{body}` with HMAC-SHA256 in `signature_header`;
    /// every other field at its default.
    pub fn new(signature_header: HeaderName, encoding: Encoding) -> Generic {
        Generic {
            signature_header,
            alternate_signature_headers: Vec::new(),
            signature_prefix: None,
            signature_delimiter: None,
            signature_key: None,
            encoding,
            algorithm: Algorithm::Sha256,
            signed_payload: "{body}".to_owned(),
            timestamp_header: None,
            timestamp_key: None,
            timestamp_format: TimestampFormat::Seconds,
            secret_encoding: SecretEncoding::Raw,
            secret_prefix: None,
            public_url: None,
            event_id: None,
            event_type: None,
            labels: Labels::CONFIG,
        }
    }

    /// Whether a timestamp is signed (and so `tolerance` applies).
    pub fn signs_timestamp(&self) -> bool {
        self.timestamp_header.is_some() || self.timestamp_key.is_some()
    }

    /// Whether the value at `locator` is covered by the signature: a pointer
    /// when the body is signed, a header when the template names it
    /// (`{header:Name}`, or `{id}` for the id's own header). No locator means
    /// the id is the body's digest, signed with the body.
    fn signs(&self, locator: Option<&Locator>, is_id: bool) -> bool {
        let pieces = generic::pieces(&self.signed_payload);
        match locator {
            None => true,
            Some(Locator::Pointer(_)) => pieces.contains(&generic::Piece::Body),
            Some(Locator::Header(name)) => pieces.iter().any(|piece| match piece {
                generic::Piece::Id => is_id,
                generic::Piece::Header(h) => h.eq_ignore_ascii_case(name.as_str()),
                _ => false,
            }),
        }
    }
}

/// An `sns` source: AWS SNS messages, keyed by the certificate each names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnsSource {
    /// The topics whose messages this source accepts (`TopicArn`, exact or
    /// with a trailing `*`): AWS signs every topic's messages, so the
    /// signature alone does not say whose topic sent one.
    pub topic_arns: Vec<String>,
    /// `GET` the `SubscribeURL` of a verified `SubscriptionConfirmation`.
    pub confirm_subscription: bool,
    pub keys: KeyPolicy,
}

/// A `paypal` source: the listener's webhook id is part of what PayPal signs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayPalSource {
    pub webhook_id: String,
    pub keys: KeyPolicy,
}

/// A `google-oidc` source: who the token must be for and from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleSource {
    /// The `aud` claim: the audience set on the push subscription.
    pub audience: String,
    /// The service account the push runs as (`email` claim).
    pub email: String,
    /// Google's JWK Set unless a test overrides it.
    pub jwks_url: KeyUrl,
    pub keys: KeyPolicy,
}

impl Default for GoogleSource {
    fn default() -> Self {
        GoogleSource {
            audience: String::new(),
            email: String::new(),
            jwks_url: KeyUrl::parse(GOOGLE_JWKS).expect("Google's JWKS URL is a valid https URL"),
            keys: KeyPolicy::default(),
        }
    }
}

/// An answer hookgate gives itself to a sender's endpoint check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// A header the sender expects back (Asana's `X-Hook-Secret`).
    pub echo: Option<(HeaderName, HeaderValue)>,
}

impl Reply {
    pub(crate) fn json(value: &serde_json::Value) -> Reply {
        Reply {
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            echo: None,
        }
    }

    /// 200 with the body; `nosniff` because some challenges echo text the
    /// caller chose.
    pub fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(Bytes::from(self.body)));
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        headers.insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        if let Some((name, value)) = self.echo {
            headers.insert(name, value);
        }
        response
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    Stripe,
    Github,
    Shopify,
    Slack,
    Standard,
    Generic(Box<Generic>),
    /// A provider from the catalog: a generic description under its own name.
    Preset {
        preset: &'static Preset,
        generic: Box<Generic>,
    },
    /// HMAC-SHA1 over the public URL and the sorted form parameters.
    Twilio {
        public_url: String,
    },
    /// ECDSA P-256 over the timestamp and body; the key is SendGrid's public key.
    SendGrid,
    /// Ed25519 over the timestamp and body; the key is the application's public key.
    Discord,
    /// HMAC-SHA256 over the `X-Metronome-Date` (or `Date`) header, a
    /// newline and the body.
    Metronome,
    /// Standard Webhooks headers keyed with the raw secret, or the older
    /// `Increase-Webhook-Signature: t=…,v1=…`.
    Increase,
    /// HMAC-SHA256 over a timestamp and token carried in the JSON body.
    Mailgun,
    /// HMAC-SHA256 over fields of each notification item, in the JSON body.
    Adyen,
    /// HMAC-SHA256 over the public URL, the sorted form parameters and a nonce.
    Plivo {
        public_url: String,
    },
    /// An HMAC-signed JWT binding the public URL and the body's digest.
    MessageBird {
        public_url: String,
    },
    /// HMAC-SHA256 over the body's MD5, content type, timestamp and URL path.
    SinchVoice {
        public_url: String,
    },
    /// Microsoft Graph change notifications: every item's `clientState` is
    /// a configured secret; `?validationToken=` answered.
    MicrosoftGraph,
    /// AWS SNS: RSA over the message's canonical string; the certificate is
    /// fetched from the message's `SigningCertURL`.
    Sns(Box<SnsSource>),
    /// PayPal: RSA over transmission id, time, webhook id and the body's
    /// CRC-32; the certificate is fetched from `PAYPAL-CERT-URL`.
    PayPal(Box<PayPalSource>),
    /// A Google-signed OIDC token (Pub/Sub push); Google's keys are fetched.
    GoogleOidc(Box<GoogleSource>),
}

/// The scheme words that are code, not catalog presets, besides the core five.
const CODED: [&str; 14] = [
    "twilio",
    "sendgrid",
    "discord",
    "metronome",
    "increase",
    "mailgun",
    "messagebird",
    "adyen",
    "plivo",
    "sinch-voice",
    "microsoft-graph",
    "sns",
    "paypal",
    "google-oidc",
];

impl Scheme {
    /// Whether the event id this scheme reads is covered by the signature.
    /// Where it is not (GitHub's and Shopify's delivery headers), anyone
    /// holding one signed request can send it again under a fresh id, so the
    /// nonce is keyed by the signed bytes instead (DESIGN §2).
    pub fn signs_event_id(&self) -> bool {
        match self {
            Scheme::Github | Scheme::Shopify | Scheme::Twilio { .. } => false,
            // The token signs the sender, not the body.
            Scheme::GoogleOidc(_) => false,
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => {
                g.signs(g.event_id.as_ref(), true)
            }
            _ => true,
        }
    }

    /// Whether the event type this scheme reads is covered by the signature;
    /// only a signed type is stamped as `X-Verified-Event-Type`.
    pub fn signs_event_type(&self) -> bool {
        match self {
            Scheme::Github | Scheme::Shopify | Scheme::MicrosoftGraph | Scheme::GoogleOidc(_) => {
                false
            }
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => {
                g.signs(g.event_type.as_ref(), false)
            }
            _ => true,
        }
    }

    /// The `scheme = "…"` word.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::Slack => "slack",
            Scheme::Standard => "standard",
            Scheme::Generic(_) => "generic",
            Scheme::Preset { preset, .. } => preset.name,
            Scheme::Twilio { .. } => "twilio",
            Scheme::SendGrid => "sendgrid",
            Scheme::Discord => "discord",
            Scheme::Metronome => "metronome",
            Scheme::Increase => "increase",
            Scheme::Mailgun => "mailgun",
            Scheme::MessageBird { .. } => "messagebird",
            Scheme::Adyen => "adyen",
            Scheme::Plivo { .. } => "plivo",
            Scheme::SinchVoice { .. } => "sinch-voice",
            Scheme::MicrosoftGraph => "microsoft-graph",
            Scheme::Sns(_) => "sns",
            Scheme::PayPal(_) => "paypal",
            Scheme::GoogleOidc(_) => "google-oidc",
        }
    }

    /// The scheme called `name` (any word but `generic`), with the source's
    /// `public_url` for schemes that sign it. `None` for an unknown word.
    pub fn by_name(name: &str, public_url: Option<&str>) -> Option<Scheme> {
        let url = || public_url.unwrap_or_default().to_owned();
        Some(match name {
            "stripe" => Scheme::Stripe,
            "github" => Scheme::Github,
            "shopify" => Scheme::Shopify,
            "slack" => Scheme::Slack,
            "standard" => Scheme::Standard,
            "twilio" => Scheme::Twilio { public_url: url() },
            "sendgrid" => Scheme::SendGrid,
            "discord" => Scheme::Discord,
            "metronome" => Scheme::Metronome,
            "increase" => Scheme::Increase,
            "mailgun" => Scheme::Mailgun,
            "messagebird" => Scheme::MessageBird { public_url: url() },
            "adyen" => Scheme::Adyen,
            "plivo" => Scheme::Plivo { public_url: url() },
            "sinch-voice" => Scheme::SinchVoice { public_url: url() },
            "microsoft-graph" => Scheme::MicrosoftGraph,
            "sns" => Scheme::Sns(Box::default()),
            "paypal" => Scheme::PayPal(Box::default()),
            "google-oidc" => Scheme::GoogleOidc(Box::default()),
            _ => {
                let preset = catalog::find(name)?;
                Scheme::Preset {
                    preset,
                    generic: Box::new(preset.generic(public_url)),
                }
            }
        })
    }

    /// Every word `by_name` knows: the core five, the coded providers, then
    /// the catalog presets.
    pub fn names() -> impl Iterator<Item = &'static str> {
        ["stripe", "github", "shopify", "slack", "standard"]
            .into_iter()
            .chain(CODED)
            .chain(catalog::PRESETS.iter().map(|p| p.name))
    }

    /// Whether the scheme signs the URL the sender posts to, so the source
    /// needs `public_url` (a proxy sees another scheme, host or path).
    pub fn needs_public_url(&self) -> bool {
        match self {
            Scheme::Twilio { .. } | Scheme::MessageBird { .. } | Scheme::Plivo { .. } => true,
            Scheme::SinchVoice { .. } => true,
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => g.uses_url(),
            _ => false,
        }
    }

    /// Whether the scheme signs a timestamp (and so whether `tolerance` applies).
    pub fn signs_timestamp(&self) -> bool {
        match self {
            Scheme::Stripe | Scheme::Slack | Scheme::Standard => true,
            Scheme::SendGrid | Scheme::Discord => true,
            Scheme::Metronome | Scheme::Mailgun | Scheme::MessageBird { .. } => true,
            Scheme::Increase => true,
            Scheme::SinchVoice { .. } => true,
            Scheme::Sns(_) | Scheme::PayPal(_) | Scheme::GoogleOidc(_) => true,
            Scheme::Github | Scheme::Shopify | Scheme::Twilio { .. } => false,
            Scheme::Adyen | Scheme::Plivo { .. } | Scheme::MicrosoftGraph => false,
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => g.signs_timestamp(),
        }
    }

    /// The replay window the provider documents, when it documents one;
    /// `None` leaves hookgate's default.
    pub fn default_tolerance(&self) -> Option<Duration> {
        match self {
            Scheme::Preset { preset, .. } => preset.tolerance_secs.map(Duration::from_secs),
            Scheme::Sns(_) => Some(sns::DEFAULT_TOLERANCE),
            _ => None,
        }
    }

    /// Turns a configured secret into the key this scheme uses (e.g.
    /// `standard` strips `whsec_` and decodes base64; public-key schemes
    /// parse the key). The error names what is wrong with the value's
    /// shape, never the value.
    pub fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        match self {
            Scheme::Standard => standard::prepare_key(secret),
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => g.prepare_key(secret),
            Scheme::SendGrid => sendgrid::prepare_key(secret),
            Scheme::Discord => discord::prepare_key(secret),
            Scheme::Adyen => adyen::prepare_key(secret),
            Scheme::SinchVoice { .. } => sinch_voice::prepare_key(secret),
            Scheme::MicrosoftGraph => msgraph::prepare_key(secret),
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
            Scheme::Generic(g) | Scheme::Preset { generic: g, .. } => {
                generic::verify(g, keys, tolerance, headers, body, now)
            }
            Scheme::Twilio { public_url } => twilio::verify(public_url, keys, headers, body),
            Scheme::SendGrid => sendgrid::verify(keys, tolerance, headers, body, now),
            Scheme::Discord => discord::verify(keys, tolerance, headers, body, now),
            Scheme::Metronome => metronome::verify(keys, tolerance, headers, body, now),
            Scheme::Increase => increase::verify(keys, tolerance, headers, body, now),
            Scheme::Mailgun => mailgun::verify(keys, tolerance, body, now),
            Scheme::MessageBird { public_url } => {
                messagebird::verify(public_url, keys, tolerance, headers, body, now)
            }
            Scheme::Adyen => adyen::verify(keys, body),
            Scheme::Plivo { public_url } => plivo::verify(public_url, keys, headers, body),
            Scheme::SinchVoice { public_url } => {
                sinch_voice::verify(public_url, keys, tolerance, headers, body, now)
            }
            Scheme::MicrosoftGraph => msgraph::verify(keys, body),
            // Their key must be fetched first: see `verify_fetching`.
            Scheme::Sns(_) | Scheme::PayPal(_) | Scheme::GoogleOidc(_) => {
                Err(Error::KeyUnavailable)
            }
        }
    }

    /// Whether the key comes from the provider at request time (and so
    /// `secrets` is not used).
    pub fn fetches_keys(&self) -> bool {
        self.key_policy().is_some()
    }

    /// The `[source.keys]` policy of a scheme whose key is fetched.
    pub fn key_policy(&self) -> Option<&KeyPolicy> {
        match self {
            Scheme::Sns(s) => Some(&s.keys),
            Scheme::PayPal(p) => Some(&p.keys),
            Scheme::GoogleOidc(g) => Some(&g.keys),
            _ => None,
        }
    }

    /// Verifies a request as [`Scheme::verify`] does, fetching the
    /// provider's key first (from `fetcher`'s cache when it holds it) for
    /// the schemes whose key comes from the provider. A key that cannot be
    /// had is [`Error::KeyUnavailable`]; a key URL outside the provider's
    /// hosts is [`Error::InvalidSignature`], logged under `source` with the
    /// host and never fetched.
    #[allow(clippy::too_many_arguments)]
    pub async fn verify_fetching(
        &self,
        fetcher: &Fetcher,
        source: &str,
        keys: &[Secret],
        tolerance: Duration,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Verified, Error> {
        // Boxed: a fetch's future is large, and would otherwise size every
        // request's future.
        match self {
            Scheme::Sns(s) => Box::pin(sns::verify(fetcher, s, source, tolerance, body, now)).await,
            Scheme::PayPal(p) => {
                Box::pin(paypal::verify(
                    fetcher, p, source, tolerance, headers, body, now,
                ))
                .await
            }
            Scheme::GoogleOidc(g) => {
                Box::pin(google_oidc::verify(
                    fetcher, g, source, tolerance, headers, body, now,
                ))
                .await
            }
            other => other.verify(keys, tolerance, headers, body, now),
        }
    }

    /// The signer: every header (name, value) of a delivery of `body` signed
    /// with `key` at `timestamp`, as the provider sends it — the signature
    /// and everything the provider's own verifiers read beside it (signed
    /// time, id, nonce, version and algorithm markers, key ids) — so that
    /// the provider's SDK accepts it, not only hookgate. `id` sets the event
    /// id where the scheme carries it in a header (a fresh random id is used
    /// when `None`). One function per scheme behind this, for `hookgate sign`
    /// and for anything that signs a delivery again. Refused for public-key
    /// schemes (hookgate holds no private key), for token schemes (the
    /// header would be the secret itself) and where the signature travels in
    /// the body.
    pub fn sign(
        &self,
        key: &Secret,
        body: &[u8],
        id: Option<&str>,
        timestamp: i64,
    ) -> Result<Vec<(String, String)>, &'static str> {
        match self {
            Scheme::Stripe => Ok(stripe::sign(key, body, timestamp)),
            Scheme::Github => Ok(github::sign(key, body, id)),
            Scheme::Shopify => Ok(shopify::sign(key, body, id, timestamp)),
            Scheme::Slack => Ok(slack::sign(key, body, timestamp)),
            Scheme::Standard => Ok(standard::sign(key, body, id, timestamp)),
            Scheme::Generic(g) => generic::sign(g, key, body, id, timestamp),
            Scheme::Preset { preset, generic: g } => {
                let mut lines = generic::sign(g, key, body, id, timestamp)?;
                lines.extend(
                    preset
                        .sends
                        .iter()
                        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
                );
                Ok(lines)
            }
            Scheme::Twilio { public_url } => Ok(twilio::sign(public_url, key, body, id)),
            Scheme::SendGrid | Scheme::Discord => {
                Err("the sender signs with its private key; hookgate only holds the public key")
            }
            Scheme::Sns(_) | Scheme::PayPal(_) | Scheme::GoogleOidc(_) => {
                Err("the provider signs with its private key; hookgate fetches only its public key")
            }
            Scheme::Metronome => Ok(metronome::sign(key, body, timestamp)),
            Scheme::Increase => increase::sign(key, body, id, timestamp),
            Scheme::Mailgun | Scheme::Adyen | Scheme::MicrosoftGraph => {
                Err("the signature travels in the body, not in headers")
            }
            Scheme::MessageBird { public_url } => {
                Ok(messagebird::sign(public_url, key, body, id, timestamp))
            }
            Scheme::Plivo { public_url } => Ok(plivo::sign(public_url, key, body)),
            Scheme::SinchVoice { public_url } => {
                Ok(sinch_voice::sign(public_url, key, body, timestamp))
            }
        }
    }

    /// An endpoint check the sender makes with a request other than a signed
    /// POST (a GET or HEAD: Dropbox, Nylas, Okta, Meta, X, Trello; an
    /// unsigned POST: Asana's `X-Hook-Secret`, Microsoft Graph's
    /// `?validationToken=`), answered by hookgate before the method check and
    /// before the body is read. `None`: not a handshake, carry on;
    /// `Some(Err)`: a check that fails (Meta's with a wrong `verify_token`).
    pub fn handshake_before(
        &self,
        keys: &[Secret],
        verify_token: Option<&Secret>,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Option<Result<Reply, Error>> {
        let kind = match self {
            Scheme::Preset { preset, .. } => preset.handshake?,
            Scheme::MicrosoftGraph => Handshake::GraphValidationToken,
            _ => return None,
        };
        handshake::before(kind, keys, verify_token, method, uri, headers)
    }

    /// Whether the source takes a `verify_token` (Meta's subscription check).
    pub fn takes_verify_token(&self) -> bool {
        matches!(self, Scheme::Preset { preset, .. }
            if preset.handshake == Some(Handshake::MetaVerifyToken))
    }

    /// An endpoint check that arrives as a verified POST (Slack
    /// `url_verification`, Zoom `endpoint.url_validation`, Twitch
    /// `webhook_callback_verification`, Discord PING), answered by hookgate
    /// instead of being forwarded. `None`: an ordinary event.
    pub fn handshake_after(
        &self,
        keys: &[Secret],
        verified: &Verified,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<Reply> {
        let kind = match self {
            Scheme::Slack => Handshake::SlackUrlVerification,
            Scheme::Discord => Handshake::DiscordPing,
            Scheme::Preset { preset, .. } => preset.handshake?,
            _ => return None,
        };
        handshake::after(kind, keys, verified, headers, body)
    }
}

/// Helpers shared by the per-scheme tests, and the checks every scheme must
/// pass whatever its format.
#[cfg(test)]
pub(crate) mod test_support {
    use std::time::Duration;

    use http::{HeaderMap, HeaderName, HeaderValue};

    use super::{Error, Scheme};
    use crate::secret::Secret;

    pub(crate) const TOLERANCE: Duration = Duration::from_secs(300);

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
}
