//! Keys that come from the provider: signing certificates (AWS SNS, PayPal)
//! and JSON Web Key Sets (Google), fetched over HTTPS (`crate::outbound`)
//! and cached by URL.
//!
//! - A key is fetched once however many requests need it at the same time:
//!   each URL has one slot, and the first request to find it empty fetches
//!   while the others wait on the slot's lock (bounded by the fetch's own
//!   time limit), then read what it stored.
//! - A certificate is kept until its `notAfter`, a key set for its
//!   `Cache-Control: max-age`; both at most [`MAX_CACHE`], at least
//!   [`MIN_CACHE`].
//! - A fetch is bounded by [`FETCH_TIMEOUT`] from connect to the last body
//!   byte and by [`MAX_KEY_BYTES`]; anything but a `200` holding one usable
//!   key is a failure. A failure is remembered for [`FAILURE_HOLD`] so that
//!   requests queued behind a hanging key server do not each wait again.
//! - Which hosts may be asked is the caller's rule (each scheme knows its
//!   provider's hosts) plus the source's [`KeyPolicy::allow_hosts`]; this
//!   module only fetches what it is handed, and only over `https`.
//!
//! A fetch failure is the provider's or the network's, not the sender's:
//! the request is answered `503 key_unavailable` with `Retry-After`, never
//! a 400 that would tell the sender to give up.

use crate::time::unix_now;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Uri, header};
use http_body_util::Full;
use ring::signature::{RsaParameters, RsaPublicKeyComponents};
use rustls::pki_types::CertificateDer;

use crate::outbound;

/// From connect to the last byte of the answer.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A certificate chain or a key set is a few KiB; anything larger is refused.
pub const MAX_KEY_BYTES: usize = 64 * 1024;
/// The longest a fetched key is trusted without asking again, whatever its
/// own validity says (a replaced certificate is picked up within a day).
pub const MAX_CACHE: Duration = Duration::from_secs(24 * 3600);
/// The shortest: a key set served with `max-age=0` is not fetched per request.
pub const MIN_CACHE: Duration = Duration::from_secs(60);
/// How long a key set is kept when its answer names no `max-age`.
pub const DEFAULT_JWKS_CACHE: Duration = Duration::from_secs(3600);
/// How long a failed fetch is answered from memory.
pub const FAILURE_HOLD: Duration = Duration::from_secs(2);
/// A token naming a key id the cached set lacks makes hookgate fetch the set
/// again (the provider rotated), but not more often than this: forged key
/// ids cannot turn every request into a fetch.
pub const REFRESH_COOLDOWN: Duration = Duration::from_secs(5);
/// URLs remembered at once; past this, entries that are not fresh keys are
/// dropped first, then everything.
const MAX_ENTRIES: usize = 1024;

/// What a source allows beyond its provider's own key hosts: set only to
/// test against a local key server (`[source.keys]`), logged at warn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPolicy {
    /// Hosts (names or IP addresses, no port) key URLs may name besides the
    /// provider's.
    pub allow_hosts: Vec<String>,
    /// Extra roots trusted for key fetches (besides the system's), from
    /// `ca_file`.
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub ca_file: Option<PathBuf>,
}

impl KeyPolicy {
    /// Whether the policy widens what the provider's rules allow.
    pub fn is_widened(&self) -> bool {
        !self.allow_hosts.is_empty() || !self.extra_roots.is_empty()
    }

    /// Whether `host` is one of `allow_hosts` (ASCII case ignored).
    pub fn allows_host(&self, host: &str) -> bool {
        self.allow_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// A key URL checked to be `https` with a host: the only kind fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUrl {
    uri: Uri,
}

impl KeyUrl {
    /// `https://host[:port]/path`, or `None` (another scheme, no host,
    /// userinfo, a fragment, or longer than 2 KiB).
    pub fn parse(text: &str) -> Option<KeyUrl> {
        if text.len() > 2048 || text.contains('#') || text.contains('@') {
            return None;
        }
        let uri: Uri = text.parse().ok()?;
        if uri.scheme_str() != Some("https") || uri.host().is_none_or(str::is_empty) {
            return None;
        }
        Some(KeyUrl { uri })
    }

    /// The host, lowercase as `http` keeps it, without brackets or port.
    pub fn host(&self) -> &str {
        let host = self.uri.host().unwrap_or_default();
        host.trim_start_matches('[').trim_end_matches(']')
    }

    pub fn path(&self) -> &str {
        self.uri.path()
    }

    pub fn as_str(&self) -> String {
        self.uri.to_string()
    }
}

/// An RSA public key: modulus and exponent, big-endian, no leading zeros.
#[derive(Clone, PartialEq, Eq)]
pub struct RsaKey {
    n: Vec<u8>,
    e: Vec<u8>,
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaKey({} bits)", self.n.len() * 8)
    }
}

impl RsaKey {
    pub fn new(n: &[u8], e: &[u8]) -> RsaKey {
        let strip = |b: &[u8]| {
            let first = b.iter().position(|x| *x != 0).unwrap_or(b.len());
            b[first..].to_vec()
        };
        RsaKey {
            n: strip(n),
            e: strip(e),
        }
    }

    /// Whether `signature` is this key's PKCS#1 v1.5 signature of `message`
    /// under `params` (which fix the hash and the 2048-bit floor).
    pub fn verifies(
        &self,
        params: &'static RsaParameters,
        message: &[u8],
        signature: &[u8],
    ) -> bool {
        RsaPublicKeyComponents {
            n: &self.n,
            e: &self.e,
        }
        .verify(params, message, signature)
        .is_ok()
    }
}

/// What a key URL serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A PEM certificate (chain); the first one's RSA key signs.
    Certificate,
    /// `{"keys":[{"kid","kty":"RSA","n","e"},…]}`.
    Jwks,
    /// `{"keys":[{"kty":"OKP","crv":"Ed25519","x"},…]}` (RFC 8037); a key
    /// id is not needed: a signature names none, so every key is tried.
    Ed25519Jwks,
}

/// A fetched key, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    Certificate(RsaKey),
    /// RSA keys by key id.
    Set(Vec<(String, RsaKey)>),
    /// Raw Ed25519 public keys, in the set's order.
    Ed25519(Vec<[u8; 32]>),
}

impl Keys {
    /// The key with id `kid` in a set.
    pub fn by_kid(&self, kid: &str) -> Option<&RsaKey> {
        match self {
            Keys::Set(keys) => keys.iter().find(|(id, _)| id == kid).map(|(_, k)| k),
            Keys::Certificate(_) | Keys::Ed25519(_) => None,
        }
    }

    /// The Ed25519 keys of a set (none for other kinds).
    pub fn ed25519(&self) -> &[[u8; 32]] {
        match self {
            Keys::Ed25519(keys) => keys,
            _ => &[],
        }
    }
}

/// Why a key could not be had. Logged where it happens; the request gets
/// `key_unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No answer, or no whole one (`crate::outbound`).
    #[error(transparent)]
    Exchange(#[from] outbound::Error),
    #[error("answered {0}")]
    Status(u16),
    #[error("answer is not a usable key: {0}")]
    NotAKey(&'static str),
    #[error("certificate is outside its validity period")]
    Expired,
    #[error("a fetch of this URL failed just now: {0}")]
    RecentlyFailed(String),
}

/// One URL's cache entry. The async lock is what makes concurrent requests
/// share one fetch.
#[derive(Default)]
struct Slot {
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The keys last fetched and until when they are fresh; kept past that
    /// for [`Fetcher::held`].
    keys: Option<(Arc<Keys>, Instant)>,
    fetched_at: Option<Instant>,
    /// The last fetch started, whatever came of it: a refresh's cooldown
    /// runs from it, so a key server that is down is not asked more often.
    tried_at: Option<Instant>,
    failed: Option<(Instant, String)>,
}

impl SlotState {
    fn fresh(&self, now: Instant) -> Option<Arc<Keys>> {
        match &self.keys {
            Some((keys, until)) if *until > now => Some(Arc::clone(keys)),
            _ => None,
        }
    }
}

/// The key cache and the HTTPS client that fills it; lives as long as the
/// process (reloads keep it).
pub struct Fetcher {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    timeout: Duration,
    /// `hookgate_key_fetch_failures_total`, once the metrics exist.
    failures: OnceLock<prometheus_client::metrics::counter::Counter>,
}

impl Default for Fetcher {
    fn default() -> Self {
        Fetcher::new(FETCH_TIMEOUT)
    }
}

impl Fetcher {
    pub fn new(timeout: Duration) -> Fetcher {
        Fetcher {
            slots: Mutex::new(HashMap::new()),
            timeout,
            failures: OnceLock::new(),
        }
    }

    /// Counts each failed fetch in `counter` from now on.
    pub fn count_failures(&self, counter: prometheus_client::metrics::counter::Counter) {
        let _ = self.failures.set(counter);
    }

    /// The keys `url` served last, fresh or not: what a source whose key
    /// server is down goes on verifying with.
    pub async fn held(&self, url: &KeyUrl) -> Option<Arc<Keys>> {
        let slot = self.slot(url);
        let state = slot.state.lock().await;
        state.keys.as_ref().map(|(keys, _)| Arc::clone(keys))
    }

    /// As [`Fetcher::refresh`], with `cooldown` instead of
    /// [`REFRESH_COOLDOWN`]: a set fetched less than `cooldown` ago is
    /// answered from the cache, whoever asks and however often.
    pub async fn refresh_within(
        &self,
        url: &KeyUrl,
        kind: KeyKind,
        policy: &KeyPolicy,
        cooldown: Duration,
    ) -> Result<Arc<Keys>, FetchError> {
        self.keys_inner(url, kind, policy, Some(cooldown)).await
    }

    /// The key at `url`: from the cache while it is valid, else fetched
    /// (once for all concurrent callers).
    pub async fn keys(
        &self,
        url: &KeyUrl,
        kind: KeyKind,
        policy: &KeyPolicy,
    ) -> Result<Arc<Keys>, FetchError> {
        self.keys_inner(url, kind, policy, None).await
    }

    /// As [`Fetcher::keys`], but a cached copy older than
    /// [`REFRESH_COOLDOWN`] is fetched again: for a key id the cached set
    /// does not hold.
    pub async fn refresh(
        &self,
        url: &KeyUrl,
        kind: KeyKind,
        policy: &KeyPolicy,
    ) -> Result<Arc<Keys>, FetchError> {
        self.keys_inner(url, kind, policy, Some(REFRESH_COOLDOWN))
            .await
    }

    async fn keys_inner(
        &self,
        url: &KeyUrl,
        kind: KeyKind,
        policy: &KeyPolicy,
        refresh: Option<Duration>,
    ) -> Result<Arc<Keys>, FetchError> {
        let slot = self.slot(url);
        let mut state = slot.state.lock().await;
        let now = Instant::now();
        let recent = |cooldown: Duration| {
            state
                .tried_at
                .is_some_and(|at| now.saturating_duration_since(at) < cooldown)
        };
        if let Some(keys) = state.fresh(now)
            && refresh.is_none_or(recent)
        {
            return Ok(keys);
        }
        // Asked again for a set fetched within the cooldown (it may have
        // expired since): the cooldown holds, whatever drives the asking.
        if let Some(cooldown) = refresh
            && recent(cooldown)
        {
            return match &state.keys {
                Some((keys, _)) => Ok(Arc::clone(keys)),
                None => Err(FetchError::RecentlyFailed(
                    state
                        .failed
                        .as_ref()
                        .map(|(_, why)| why.clone())
                        .unwrap_or_default(),
                )),
            };
        }
        if let Some((at, why)) = &state.failed
            && now.saturating_duration_since(*at) < FAILURE_HOLD
        {
            return Err(FetchError::RecentlyFailed(why.clone()));
        }
        state.tried_at = Some(now);
        let fetched = match self.get(url, policy).await {
            Ok((headers, body)) => parse(kind, &headers, &body),
            Err(e) => Err(e),
        };
        let done = Instant::now();
        match fetched {
            Ok((keys, ttl)) => {
                tracing::info!(url = %url.as_str(), valid_for = ?ttl, "provider key fetched");
                let keys = Arc::new(keys);
                state.keys = Some((Arc::clone(&keys), done + ttl));
                state.fetched_at = Some(done);
                state.failed = None;
                Ok(keys)
            }
            Err(e) => {
                if let Some(failures) = self.failures.get() {
                    failures.inc();
                }
                tracing::warn!(url = %url.as_str(), host = url.host(), error = %e, "provider key fetch failed");
                state.failed = Some((done, e.to_string()));
                Err(e)
            }
        }
    }

    fn slot(&self, url: &KeyUrl) -> Arc<Slot> {
        let key = url.as_str();
        let mut slots = match self.slots.lock() {
            Ok(slots) => slots,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(slot) = slots.get(&key) {
            return Arc::clone(slot);
        }
        if slots.len() >= MAX_ENTRIES {
            // Keep the slots in use and those holding fresh keys.
            let now = Instant::now();
            slots.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot
                        .state
                        .try_lock()
                        .is_ok_and(|state| state.fresh(now).is_some())
            });
            if slots.len() >= MAX_ENTRIES {
                slots.retain(|_, slot| Arc::strong_count(slot) > 1);
            }
        }
        Arc::clone(slots.entry(key).or_default())
    }

    /// One bounded `GET` of `url` over HTTPS: the answer's headers and body
    /// when it is a `200`. Not cached (the SNS subscription confirmation
    /// uses it directly).
    pub async fn get(
        &self,
        url: &KeyUrl,
        policy: &KeyPolicy,
    ) -> Result<(HeaderMap, Bytes), FetchError> {
        let request = Request::get(url.uri.clone())
            .header(
                header::USER_AGENT,
                concat!("hookgate/", env!("CARGO_PKG_VERSION")),
            )
            .header(header::ACCEPT, "*/*")
            .body(Full::new(Bytes::new()))
            .map_err(|e| outbound::Error::Http(e.to_string()))?;
        let tls = outbound::tls_config(&policy.extra_roots);
        let answer = outbound::exchange(request, Some(tls), MAX_KEY_BYTES, self.timeout).await?;
        if answer.status != StatusCode::OK {
            return Err(FetchError::Status(answer.status.as_u16()));
        }
        Ok((answer.headers, answer.body))
    }
}

/// Parses a fetched answer; returns the keys and how long to trust them.
pub fn parse(
    kind: KeyKind,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Keys, Duration), FetchError> {
    match kind {
        KeyKind::Certificate => {
            let (key, not_before, not_after) = certificate_key(body)?;
            let now = unix_now();
            if now < not_before || now >= not_after {
                return Err(FetchError::Expired);
            }
            let left = Duration::from_secs(u64::try_from(not_after - now).unwrap_or(0));
            Ok((Keys::Certificate(key), left.clamp(MIN_CACHE, MAX_CACHE)))
        }
        KeyKind::Ed25519Jwks => {
            let keys = ed25519_jwks(body)?;
            let ttl = max_age(headers).unwrap_or(DEFAULT_JWKS_CACHE);
            Ok((Keys::Ed25519(keys), ttl.clamp(MIN_CACHE, MAX_CACHE)))
        }
        KeyKind::Jwks => {
            let keys = jwks(body)?;
            let ttl = max_age(headers).unwrap_or(DEFAULT_JWKS_CACHE);
            Ok((Keys::Set(keys), ttl.clamp(MIN_CACHE, MAX_CACHE)))
        }
    }
}

/// The RSA key of the first certificate of a PEM chain, with its validity
/// (unix seconds).
pub fn certificate_key(pem: &[u8]) -> Result<(RsaKey, i64, i64), FetchError> {
    use x509_parser::public_key::PublicKey;
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem)
        .map_err(|_| FetchError::NotAKey("not a PEM certificate"))?;
    let cert = pem
        .parse_x509()
        .map_err(|_| FetchError::NotAKey("not an X.509 certificate"))?;
    let key = match cert.public_key().parsed() {
        Ok(PublicKey::RSA(rsa)) => RsaKey::new(rsa.modulus, rsa.exponent),
        _ => return Err(FetchError::NotAKey("the certificate's key is not RSA")),
    };
    let validity = cert.validity();
    Ok((
        key,
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    ))
}

/// The RSA keys of a JWK Set that have a key id.
pub fn jwks(body: &[u8]) -> Result<Vec<(String, RsaKey)>, FetchError> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set =
        serde_json::from_slice(body).map_err(|_| FetchError::NotAKey("not a JWK Set"))?;
    let decode = |v: &serde_json::Value| {
        v.as_str().and_then(|s| {
            base64::Engine::decode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                s.trim_end_matches('='),
            )
            .ok()
        })
    };
    let keys: Vec<(String, RsaKey)> = set
        .keys
        .iter()
        .filter(|k| k["kty"] == "RSA")
        .filter_map(|k| {
            let kid = k["kid"].as_str()?.to_owned();
            Some((kid, RsaKey::new(&decode(&k["n"])?, &decode(&k["e"])?)))
        })
        .collect();
    if keys.is_empty() {
        return Err(FetchError::NotAKey(
            "the JWK Set holds no RSA key with a kid",
        ));
    }
    Ok(keys)
}

/// The OKP/Ed25519 keys of a JWK Set (RFC 8037: `x` is the raw 32-byte
/// public key, base64url); other keys are skipped.
pub fn ed25519_jwks(body: &[u8]) -> Result<Vec<[u8; 32]>, FetchError> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set =
        serde_json::from_slice(body).map_err(|_| FetchError::NotAKey("not a JWK Set"))?;
    let keys: Vec<[u8; 32]> = set
        .keys
        .iter()
        .filter(|k| k["kty"] == "OKP" && k["crv"] == "Ed25519")
        .filter_map(|k| {
            let x = k["x"].as_str()?;
            let raw = base64::Engine::decode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                x.trim_end_matches('='),
            )
            .ok()?;
            raw.try_into().ok()
        })
        .collect();
    if keys.is_empty() {
        return Err(FetchError::NotAKey("the JWK Set holds no OKP/Ed25519 key"));
    }
    Ok(keys)
}

/// `Cache-Control: max-age=N` (`no-store` / `no-cache` read as 0).
fn max_age(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::CACHE_CONTROL)?.to_str().ok()?;
    let mut found = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(secs) = lower.strip_prefix("max-age=") {
            found = secs
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_urls_are_https_with_a_host() {
        let url = KeyUrl::parse("https://sns.us-east-1.amazonaws.com/Cert-1.pem").expect("valid");
        assert_eq!(url.host(), "sns.us-east-1.amazonaws.com");
        assert_eq!(url.path(), "/Cert-1.pem");
        let ip = KeyUrl::parse("https://127.0.0.1:8443/certs").expect("valid");
        assert_eq!(ip.host(), "127.0.0.1");
        for bad in [
            "http://sns.us-east-1.amazonaws.com/c.pem",
            "ftp://x/y",
            "https:///path",
            "//host/path",
            "https://user@sns.us-east-1.amazonaws.com/c.pem",
            "https://sns.us-east-1.amazonaws.com/c.pem#frag",
            "not a url",
            "",
        ] {
            assert!(KeyUrl::parse(bad).is_none(), "{bad}");
        }
        assert!(KeyUrl::parse(&format!("https://h/{}", "a".repeat(3000))).is_none());
    }

    #[test]
    fn max_age_is_read_from_cache_control() {
        let mut headers = HeaderMap::new();
        assert_eq!(max_age(&headers), None);
        headers.insert(
            header::CACHE_CONTROL,
            "public, max-age=19204, must-revalidate, no-transform"
                .parse()
                .expect("value"),
        );
        assert_eq!(max_age(&headers), Some(Duration::from_secs(19204)));
        headers.insert(header::CACHE_CONTROL, "no-store".parse().expect("value"));
        assert_eq!(max_age(&headers), Some(Duration::ZERO));
        // Clamped when parsed as a key set.
        let body = br#"{"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}"#;
        let (_, ttl) = parse(KeyKind::Jwks, &headers, body).expect("a key set");
        assert_eq!(ttl, MIN_CACHE);
        headers.insert(
            header::CACHE_CONTROL,
            "max-age=999999999".parse().expect("value"),
        );
        let (_, ttl) = parse(KeyKind::Jwks, &headers, body).expect("a key set");
        assert_eq!(ttl, MAX_CACHE);
    }

    #[test]
    fn key_sets_keep_rsa_keys_with_ids() {
        let body = br#"{"keys":[
            {"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"},
            {"kty":"RSA","n":"AQAB","e":"AQAB"},
            {"kty":"RSA","kid":"k1","n":"AAEAAQ","e":"AQAB","alg":"RS256"}
        ]}"#;
        let keys = jwks(body).expect("one usable key");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].0, "k1");
        // Leading zero bytes are dropped.
        assert_eq!(keys[0].1, RsaKey::new(&[1, 0, 1], &[1, 0, 1]));
        for bad in [
            &b"{}"[..],
            b"[]",
            b"not json",
            br#"{"keys":[]}"#,
            br#"{"keys":[{"kty":"EC","kid":"x"}]}"#,
        ] {
            assert!(jwks(bad).is_err());
        }
    }

    /// A test-only RSA key (tests/it/fixtures), the kind providers sign with.
    pub(crate) const TEST_KEY: &str = include_str!("scheme/fixtures/provider-key-a.pem");

    #[test]
    fn certificates_give_their_rsa_key_and_validity() {
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2040, 1, 1);
        let rsa = rcgen::KeyPair::from_pem(TEST_KEY).expect("the test key parses");
        let cert = params.self_signed(&rsa).expect("cert");
        let (key, nb, na) = certificate_key(cert.pem().as_bytes()).expect("RSA key");
        assert_eq!((nb, na), (1_577_836_800, 2_208_988_800));
        assert_eq!(key.n.len(), 256, "a 2048-bit modulus");
        // A signature by the private key verifies with what was read.
        let signer = ring::signature::RsaKeyPair::from_pkcs8(&rsa.serialize_der()).expect("pkcs8");
        let mut sig = vec![0; signer.public().modulus_len()];
        signer
            .sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                b"message",
                &mut sig,
            )
            .expect("sign");
        assert!(key.verifies(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            b"message",
            &sig
        ));
        assert!(!key.verifies(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            b"messagf",
            &sig
        ));
        // An expired certificate is refused when parsed as a fetched key.
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        let old = params.self_signed(&rsa).expect("cert");
        assert_eq!(
            parse(
                KeyKind::Certificate,
                &HeaderMap::new(),
                old.pem().as_bytes()
            ),
            Err(FetchError::Expired)
        );

        let ec = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&ec).expect("cert");
        assert_eq!(
            certificate_key(cert.pem().as_bytes()).map(|_| ()),
            Err(FetchError::NotAKey("the certificate's key is not RSA"))
        );
        assert!(
            certificate_key(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
                .is_err()
        );
        assert!(certificate_key(b"garbage").is_err());
    }

    #[test]
    fn widened_policies_are_told_apart() {
        assert!(!KeyPolicy::default().is_widened());
        let policy = KeyPolicy {
            allow_hosts: vec!["127.0.0.1".to_owned()],
            ..KeyPolicy::default()
        };
        assert!(policy.is_widened());
        assert!(policy.allows_host("127.0.0.1"));
        assert!(!policy.allows_host("127.0.0.2"));
    }
}

#[cfg(test)]
mod ed25519_sets {
    use super::*;

    /// RFC 8037 appendix A.2's public key as a JWK, beside keys that are not
    /// Ed25519 and one whose `x` is the wrong length.
    #[test]
    fn okp_ed25519_keys_are_read_and_others_skipped() {
        let body = br#"{"keys":[
            {"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"},
            {"kty":"OKP","crv":"X25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty":"OKP","crv":"Ed25519","x":"AAAA"},
            {"kty":"OKP","crv":"Ed25519","kid":"g1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
        ]}"#;
        let keys = ed25519_jwks(body).expect("one usable key");
        assert_eq!(keys.len(), 1);
        assert_eq!(
            hex::encode(keys[0]),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert!(
            ed25519_jwks(br#"{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}"#).is_err()
        );
        assert!(ed25519_jwks(b"<html>").is_err());
        let mut headers = HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, "max-age=600".parse().expect("value"));
        let (parsed, ttl) = parse(KeyKind::Ed25519Jwks, &headers, body).expect("a key set");
        assert_eq!(parsed.ed25519().len(), 1);
        assert_eq!(ttl, Duration::from_secs(600));
    }
}
