//! Standard Webhooks senders whose Ed25519 keys are published as a JWK Set
//! (RFC 8037 OKP keys): `scheme = "standard"` with `[source.keys]
//! jwks_url`, and `scheme = "gemini"` (Google's Gemini API, whose deliveries
//! carry `webhook-signature: v1a,<base64>` and whose keys are at
//! [`GEMINI_JWKS`]).
//!
//! A request is checked first against what `secrets` lists (`whsec_`
//! secrets for `v1`, `whpk_` keys for `v1a`: [`super::standard`]); a `v1a`
//! signature none of them verifies is checked against the key set:
//!
//! - the set is fetched at start and kept for its `Cache-Control: max-age`
//!   (the fetcher's bounds), then fetched again when a request needs it;
//! - a signature no key of the cached set verifies makes hookgate ask for
//!   the set again, at most once every [`REFETCH_EVERY`] whoever sends what,
//!   so a rotated set is picked up at the first request signed with a new
//!   key and forged requests cannot drive fetches;
//! - a key server that is down leaves the keys fetched last in use, however
//!   old (the failure is counted in `hookgate_key_fetch_failures_total` and
//!   logged); only a source that never had its set answers
//!   `503 key_unavailable`.
//!
//! A match in the set is reported as secret index `secrets.len()`: the
//! one-past-the-last label of `hookgate_signature_matches_total`.

use std::sync::Arc;
use std::time::Duration;

use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified, standard};
use crate::keyfetch::{Fetcher, KeyKind, KeyPolicy, KeyUrl, Keys};
use crate::secret::Secret;

/// Where Google publishes the Gemini API's webhook keys.
pub const GEMINI_JWKS: &str = "https://generativelanguage.googleapis.com/.well-known/jwks.json";
/// Its host: a `gemini` source's `jwks_url` names it unless
/// `[source.keys] allow_hosts` adds a test server.
pub const GEMINI_JWKS_HOST: &str = "generativelanguage.googleapis.com";
/// The least time between two fetches of a set that a signature with no
/// matching key asks for.
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);

/// A Standard Webhooks source with a JWK Set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeySource {
    /// `standard` or `gemini`.
    name: &'static str,
    pub jwks_url: KeyUrl,
    pub keys: KeyPolicy,
}

impl PublicKeySource {
    /// `scheme = "standard"` with its `[source.keys] jwks_url`.
    pub fn standard(jwks_url: KeyUrl) -> PublicKeySource {
        PublicKeySource {
            name: "standard",
            jwks_url,
            keys: KeyPolicy::default(),
        }
    }

    /// `scheme = "gemini"`: Google's set unless a test overrides it.
    pub fn gemini() -> PublicKeySource {
        PublicKeySource {
            name: "gemini",
            jwks_url: KeyUrl::parse(GEMINI_JWKS).expect("Gemini's JWKS URL is a valid https URL"),
            keys: KeyPolicy::default(),
        }
    }

    /// Whether `jwks_url` may name `host`: any host for `standard` (the
    /// operator names the sender's set), Google's for `gemini` unless
    /// `allow_hosts` lists it.
    pub fn allows_host(&self, host: &str) -> bool {
        self.name == "standard" || host == GEMINI_JWKS_HOST || self.keys.allows_host(host)
    }

    /// Fetches the set into `fetcher`'s cache (at start, so the first
    /// request does not wait for it); a failure is logged by the fetcher.
    pub async fn prefetch(&self, fetcher: &Fetcher) {
        let _ = fetcher
            .keys(&self.jwks_url, KeyKind::Ed25519Jwks, &self.keys)
            .await;
    }
}

/// Whether a key of `keys` verifies one of `signed`'s `v1a` signatures.
fn any_verifies(keys: &Keys, signed: &standard::Signed<'_>, body: &[u8]) -> bool {
    keys.ed25519()
        .iter()
        .any(|key| signed.verifies_v1a(key, body))
}

async fn verify(
    fetcher: &Fetcher,
    s: &PublicKeySource,
    source: &str,
    d: Delivery<'_>,
) -> Result<Verified, Error> {
    let signed = standard::parse(d.headers)?;
    match standard::match_keys(&signed, d.keys, d.body) {
        Ok(index) => return standard::verified(&signed, index, d.tolerance, d.body, d.now),
        Err(_) if !signed.has_v1a() => return Err(Error::InvalidSignature),
        Err(_) => {}
    }
    let set_index = d.keys.len();
    let cached = match fetcher
        .keys(&s.jwks_url, KeyKind::Ed25519Jwks, &s.keys)
        .await
    {
        Ok(keys) => keys,
        Err(e) => match fetcher.held(&s.jwks_url).await {
            Some(keys) => {
                tracing::warn!(source, error = %e, "key set unavailable: verifying with the keys fetched last");
                keys
            }
            None => return Err(Error::KeyUnavailable),
        },
    };
    if any_verifies(&cached, &signed, d.body) {
        return standard::verified(&signed, set_index, d.tolerance, d.body, d.now);
    }
    // The sender rotated its keys since the set was cached, or the request
    // is forged: ask again, at most once per REFETCH_EVERY.
    tracing::debug!(
        source,
        "no key of the cached set verifies: asking for the set again"
    );
    match fetcher
        .refresh_within(&s.jwks_url, KeyKind::Ed25519Jwks, &s.keys, REFETCH_EVERY)
        .await
    {
        Ok(fresh) if !Arc::ptr_eq(&fresh, &cached) && any_verifies(&fresh, &signed, d.body) => {
            standard::verified(&signed, set_index, d.tolerance, d.body, d.now)
        }
        _ => Err(Error::InvalidSignature),
    }
}

impl Provider for PublicKeySource {
    fn name(&self) -> &'static str {
        self.name
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        standard::prepare_key(secret)
    }

    /// Without the fetcher: the configured keys only.
    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        standard::verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn key_policy(&self) -> Option<&KeyPolicy> {
        Some(&self.keys)
    }

    fn takes_secrets(&self) -> bool {
        true
    }

    fn verify_fetching<'a>(
        &'a self,
        fetcher: &'a Fetcher,
        source: &'a str,
        d: &Delivery<'a>,
    ) -> Option<super::provider::Fetching<'a>> {
        Some(Box::pin(verify(fetcher, self, source, *d)))
    }

    fn can_sign_with(&self, key: &Secret) -> bool {
        standard::public_key(key).is_none()
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        standard::signer(s)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(standard::RESIGNED)
    }
}
