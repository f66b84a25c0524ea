//! Signature schemes: each sender's way of signing a webhook.
//!
//! A scheme reads its headers, recomputes the HMAC over the raw body bytes with
//! every active key, compares in constant time, checks the signed timestamp
//! against the replay window, and only then parses the body for the event id
//! and type. The one value it hands on is [`Verified`]; nothing downstream sees
//! an unverified request.

use std::ops::Deref;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, Uri};
use http_body_util::Full;

use crate::keyfetch::{Fetcher, KeyPolicy};
use crate::secret::Secret;

mod adyen;
pub mod catalog;
mod discord;
mod generic;
mod github;
mod google_oidc;
pub(crate) mod handshake;
pub(crate) mod hmac;
mod increase;
mod json;
mod mailgun;
mod messagebird;
mod metronome;
mod msgraph;
mod paypal;
mod plivo;
mod provider;
mod public_keys;
mod resign;
mod sendgrid;
mod shopify;
mod sinch_voice;
mod slack;
mod sns;
mod standard;
mod stripe;
mod twilio;

pub use catalog::Preset;
use catalog::PresetScheme;
pub use google_oidc::{GOOGLE_JWKS, GOOGLE_JWKS_HOST, GoogleSource};
pub use handshake::Handshake;
pub use paypal::PayPalSource;
pub use provider::{Coded, Delivery, DynEq, Fetching, Provider, Signing};
pub use public_keys::{GEMINI_JWKS, GEMINI_JWKS_HOST, PublicKeySource, REFETCH_EVERY};
pub use sns::SnsSource;

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

/// A source's signature scheme. The core five and the generic sender are
/// variants of their own; a catalog preset is a generic description under
/// the preset's name; every other provider with code of its own is one
/// type implementing [`Provider`], held in [`Scheme::Coded`].
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
    /// A provider of the `CODED` list, with its options.
    Coded(Coded),
}

/// The core five, which have variants of their own.
const CORE: [Scheme; 5] = [
    Scheme::Stripe,
    Scheme::Github,
    Scheme::Shopify,
    Scheme::Slack,
    Scheme::Standard,
];

/// Builds a coded provider from the source's `public_url`.
type Build = fn(Option<&str>) -> Box<dyn DynEq>;

/// Every provider with code of its own besides the core five, under its
/// `scheme = "…"` word (the word its [`Provider::name`] returns). A new
/// provider is its module's type and one line here.
#[rustfmt::skip]
const CODED: &[(&str, Build)] = &[
    ("twilio", |url| Box::new(twilio::Twilio::new(url))),
    ("sendgrid", |_| Box::new(sendgrid::SendGrid)),
    ("discord", |_| Box::new(discord::Discord)),
    ("metronome", |_| Box::new(metronome::Metronome)),
    ("increase", |_| Box::new(increase::Increase)),
    ("mailgun", |_| Box::new(mailgun::Mailgun)),
    ("messagebird", |url| Box::new(messagebird::MessageBird::new(url))),
    ("adyen", |_| Box::new(adyen::Adyen)),
    ("plivo", |url| Box::new(plivo::Plivo::new(url))),
    ("sinch-voice", |url| Box::new(sinch_voice::SinchVoice::new(url))),
    ("microsoft-graph", |_| Box::new(msgraph::MicrosoftGraph)),
    ("sns", |_| Box::new(SnsSource::default())),
    ("paypal", |_| Box::new(PayPalSource::default())),
    ("google-oidc", |_| Box::new(GoogleSource::default())),
    ("gemini", |_| Box::new(PublicKeySource::gemini())),
];

/// The provider behind a [`Scheme`], borrowed from it: a
/// provider the scheme holds, or a catalog preset, which pairs a static
/// [`Preset`] with the source's own [`Generic`]
/// and so is put together on the stack (two references, no allocation).
enum ProviderRef<'a> {
    Held(&'a dyn Provider),
    Preset(PresetScheme<'a>),
}

impl<'a> ProviderRef<'a> {
    /// [`Provider::key_policy`], borrowed for as long as the scheme is.
    fn key_policy(self) -> Option<&'a KeyPolicy> {
        match self {
            ProviderRef::Held(provider) => provider.key_policy(),
            ProviderRef::Preset(preset) => preset.generic.key_policy(),
        }
    }
}

impl<'a> Deref for ProviderRef<'a> {
    type Target = dyn Provider + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            ProviderRef::Held(provider) => *provider,
            ProviderRef::Preset(preset) => preset,
        }
    }
}

impl Scheme {
    /// The provider behind this scheme: every method below asks it, and
    /// this is the one place the variants are told apart (besides the typed
    /// access to a coded provider's options, `provider_as`/`provider_mut`).
    fn provider(&self) -> ProviderRef<'_> {
        match self {
            Scheme::Stripe => ProviderRef::Held(&stripe::Stripe),
            Scheme::Github => ProviderRef::Held(&github::Github),
            Scheme::Shopify => ProviderRef::Held(&shopify::Shopify),
            Scheme::Slack => ProviderRef::Held(&slack::Slack),
            Scheme::Standard => ProviderRef::Held(&standard::Standard),
            Scheme::Generic(generic) => ProviderRef::Held(&**generic),
            Scheme::Preset { preset, generic } => {
                ProviderRef::Preset(PresetScheme { preset, generic })
            }
            Scheme::Coded(coded) => ProviderRef::Held(coded.provider()),
        }
    }

    /// The coded provider of type `T` (e.g. [`SnsSource`]) behind this
    /// scheme, if it is one: only a coded provider has options of its own.
    pub fn provider_as<T: Provider + 'static>(&self) -> Option<&T> {
        let Scheme::Coded(coded) = self else {
            return None;
        };
        coded.downcast_ref()
    }

    /// [`Scheme::provider_as`], to set the provider's options.
    pub fn provider_mut<T: Provider + 'static>(&mut self) -> Option<&mut T> {
        let Scheme::Coded(coded) = self else {
            return None;
        };
        coded.downcast_mut()
    }

    /// Whether the event id this scheme reads is covered by the signature.
    /// Where it is not (GitHub's and Shopify's delivery headers), anyone
    /// holding one signed request can send it again under a fresh id, so the
    /// nonce is keyed by the signed bytes instead (DESIGN §2).
    pub fn signs_event_id(&self) -> bool {
        self.provider().signs_event_id()
    }

    /// Whether the event type this scheme reads is covered by the signature;
    /// only a signed type is stamped as `X-Verified-Event-Type`.
    pub fn signs_event_type(&self) -> bool {
        self.provider().signs_event_type()
    }

    /// The `scheme = "…"` word.
    pub fn name(&self) -> &'static str {
        self.provider().name()
    }

    /// `scheme = "standard"` whose `v1a` keys are also published at `url`
    /// (`[source.keys] jwks_url`).
    pub fn with_key_set(url: crate::keyfetch::KeyUrl) -> Scheme {
        Scheme::Coded(Coded::new(Box::new(PublicKeySource::standard(url))))
    }

    /// The scheme called `name` (any word but `generic`), with the source's
    /// `public_url` for schemes that sign it. `None` for an unknown word.
    pub fn by_name(name: &str, public_url: Option<&str>) -> Option<Scheme> {
        if let Some(core) = CORE.into_iter().find(|s| s.name() == name) {
            return Some(core);
        }
        if let Some((_, build)) = CODED.iter().find(|(word, _)| *word == name) {
            return Some(Scheme::Coded(Coded::new(build(public_url))));
        }
        let preset = catalog::find(name)?;
        Some(Scheme::Preset {
            preset,
            generic: Box::new(preset.generic(public_url)),
        })
    }

    /// Every word `by_name` knows: the core five, the coded providers, then
    /// the catalog presets.
    pub fn names() -> impl Iterator<Item = &'static str> {
        CORE.into_iter()
            .map(|s| s.name())
            .chain(CODED.iter().map(|(name, _)| *name))
            .chain(catalog::PRESETS.iter().map(|p| p.name))
    }

    /// Whether the scheme signs the URL the sender posts to, so the source
    /// needs `public_url` (a proxy sees another scheme, host or path).
    pub fn needs_public_url(&self) -> bool {
        self.provider().needs_public_url()
    }

    /// Whether the scheme signs a timestamp (and so whether `tolerance` applies).
    pub fn signs_timestamp(&self) -> bool {
        self.provider().signs_timestamp()
    }

    /// The replay window the provider documents, when it documents one;
    /// `None` leaves hookgate's default.
    pub fn default_tolerance(&self) -> Option<Duration> {
        self.provider().default_tolerance()
    }

    /// Turns a configured secret into the key this scheme uses (e.g.
    /// `standard` strips `whsec_` and decodes base64; public-key schemes
    /// parse the key). The error names what is wrong with the value's
    /// shape, never the value.
    pub fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        self.provider().prepare_key(secret)
    }

    /// Verifies a request: signature (any key, any signature value), then the
    /// timestamp window (both directions, `now` in unix seconds), then the
    /// body parse for id and type. A scheme whose key is fetched refuses
    /// with [`Error::KeyUnavailable`]: it verifies in `verify_fetching`.
    pub fn verify(
        &self,
        keys: &[Secret],
        tolerance: Duration,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Verified, Error> {
        let d = Delivery {
            keys,
            tolerance,
            headers,
            body,
            now,
        };
        self.provider().verify(&d)
    }

    /// Whether `key` (prepared by [`Scheme::prepare_key`]) can sign: a
    /// `whpk_` public key only verifies.
    pub fn can_sign_with(&self, key: &Secret) -> bool {
        self.provider().can_sign_with(key)
    }

    /// The first of `keys` that can sign, for `hookgate sign` and the
    /// default of `[source.resign]`.
    pub fn signing_key<'a>(&self, keys: &'a [Secret]) -> Option<&'a Secret> {
        keys.iter().find(|k| self.can_sign_with(k))
    }

    /// Whether the source takes `secrets`: every scheme keyed by them, and
    /// those that fetch a JWK Set beside them (`standard` with
    /// `[source.keys] jwks_url`, `gemini`).
    pub fn takes_secrets(&self) -> bool {
        self.provider().takes_secrets()
    }

    /// Whether the key comes from the provider at request time (and so
    /// `secrets` is not used).
    pub fn fetches_keys(&self) -> bool {
        self.key_policy().is_some()
    }

    /// The `[source.keys]` policy of a scheme whose key is fetched.
    pub fn key_policy(&self) -> Option<&KeyPolicy> {
        self.provider().key_policy()
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
        let d = Delivery {
            keys,
            tolerance,
            headers,
            body,
            now,
        };
        let provider = self.provider();
        match provider.verify_fetching(fetcher, source, &d) {
            Some(fetching) => fetching.await,
            None => provider.verify(&d),
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
        let s = Signing {
            key,
            body,
            id,
            timestamp,
        };
        self.provider().sign(&s)
    }

    /// An endpoint check the sender makes with a request other than a signed
    /// POST (a GET or HEAD: Dropbox, Nylas, Okta, Meta, Worldline, X, Trello; an
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
        let kind = self.provider().handshake_before()?;
        handshake::before(kind, keys, verify_token, method, uri, headers)
    }

    /// Whether the source takes a `verify_token` (Meta's subscription check).
    pub fn takes_verify_token(&self) -> bool {
        self.provider().takes_verify_token()
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
        let kind = self.provider().handshake_after()?;
        handshake::after(kind, keys, verified, headers, body)
    }
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
