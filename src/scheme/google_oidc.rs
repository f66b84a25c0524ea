//! Google-signed pushes (Pub/Sub push subscriptions with authentication,
//! Cloud Tasks, Cloud Scheduler, Eventarc): `Authorization: Bearer <JWT>`,
//! an OIDC ID token RS256-signed by Google. The token's key id (`kid`) names
//! a key of Google's JWK Set (<https://www.googleapis.com/oauth2/v3/certs>,
//! cached for its `max-age`, fetched again when a token names a key the
//! cached set lacks). Checked: `iss` is `accounts.google.com` or
//! `https://accounts.google.com`, `aud` the source's `audience`, `email` the
//! source's service account with `email_verified` true, and the time:
//! `iat - tolerance <= now <= exp + tolerance` (`tolerance` is the clock skew
//! allowed; the token's own lifetime, at most an hour, bounds its use).
//!
//! The token signs who sent the request, not the body: anyone who sees one
//! request may send other bodies with its token until it expires. So the
//! event id (`/message/messageId` of a Pub/Sub push, else the body's
//! SHA-256) is not a signed id: duplicates are told by the body's digest,
//! and no event type is stamped.
//!
//! Source: <https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions>.

use std::time::Duration;

use http::HeaderMap;
use ring::signature::RSA_PKCS1_2048_8192_SHA256;
use serde_json::Value;

use super::json::json_fields;
use super::provider::{Delivery, Provider, fetched_key};
use super::{Error, Verified, hmac};
use crate::keyfetch::{FetchError, Fetcher, KeyKind, KeyPolicy, KeyUrl, Keys};

const AUTHORIZATION: &str = "authorization";
/// Where Google publishes the keys its ID tokens are signed with.
pub const GOOGLE_JWKS: &str = "https://www.googleapis.com/oauth2/v3/certs";
/// The host of [`GOOGLE_JWKS`]: the only one `jwks_url` may name without
/// `[source.keys] allow_hosts`.
pub const GOOGLE_JWKS_HOST: &str = "www.googleapis.com";
const ISSUERS: [&str; 2] = ["accounts.google.com", "https://accounts.google.com"];
/// An ID token is about 1 KiB; a larger header is not one.
const MAX_TOKEN: usize = 8 * 1024;

/// A token read far enough to know its key and its claims (not yet trusted).
pub(super) struct Token<'a> {
    kid: String,
    signed: &'a [u8],
    claims: Value,
    signature: Vec<u8>,
}

pub(super) fn parse(headers: &HeaderMap) -> Result<Token<'_>, Error> {
    let malformed = || Error::MalformedSignature(AUTHORIZATION);
    let value =
        hmac::header(headers, AUTHORIZATION).ok_or(Error::MissingSignature(AUTHORIZATION))?;
    let token = match value.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
        _ => return Err(malformed()),
    };
    if token.is_empty() || token.len() > MAX_TOKEN {
        return Err(malformed());
    }
    let mut parts = token.split(|&b| b == b'.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let json = |part: &[u8]| -> Option<Value> {
        let bytes = hmac::decode_base64_any(part)?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
    };
    let header = json(header).ok_or_else(malformed)?;
    if header.get("alg").and_then(Value::as_str) != Some("RS256") {
        return Err(malformed());
    }
    let kid = header
        .get("kid")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && k.len() <= 256)
        .ok_or_else(malformed)?
        .to_owned();
    let claims = json(payload).ok_or_else(malformed)?;
    let signature = hmac::decode_base64_any(signature).ok_or_else(malformed)?;
    let signed = &token[..header_len(token)];
    Ok(Token {
        kid,
        signed,
        claims,
        signature,
    })
}

/// The length of `header.payload`: everything before the last `.`.
fn header_len(token: &[u8]) -> usize {
    token.iter().rposition(|&b| b == b'.').unwrap_or(0)
}

/// Checks the signature with the key set, then the claims and the time.
pub(super) fn verify_with(
    token: &Token<'_>,
    keys: &Keys,
    settings: &GoogleSource,
    tolerance: Duration,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let key = keys.by_kid(&token.kid).ok_or(Error::InvalidSignature)?;
    if !key.verifies(&RSA_PKCS1_2048_8192_SHA256, token.signed, &token.signature) {
        return Err(Error::InvalidSignature);
    }
    let claims = &token.claims;
    let claim = |name: &str| claims.get(name).and_then(Value::as_str);
    let issuer_ok = claim("iss").is_some_and(|iss| ISSUERS.contains(&iss));
    let audience_ok = match claims.get("aud") {
        Some(Value::String(aud)) => *aud == settings.audience,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(&settings.audience)),
        _ => false,
    };
    let email_ok = claim("email") == Some(settings.email.as_str())
        && claims.get("email_verified") == Some(&Value::Bool(true));
    if !(issuer_ok && audience_ok && email_ok) {
        return Err(Error::InvalidSignature);
    }
    let time = |name: &str| claims.get(name).and_then(Value::as_i64);
    let (Some(iat), Some(exp)) = (time("iat"), time("exp")) else {
        return Err(Error::MalformedSignature(AUTHORIZATION));
    };
    let skew = i64::try_from(tolerance.as_secs()).unwrap_or(i64::MAX);
    if now < iat.saturating_sub(skew) || now > exp.saturating_add(skew) {
        return Err(Error::TimestampOutsideWindow {
            timestamp: if now > exp { exp } else { iat },
            tolerance_secs: tolerance.as_secs(),
        });
    }
    let event_id = match json_fields(body, ["/message/messageId", "/message/message_id"]) {
        Some([id, alt]) => id.id().or_else(|| alt.id()),
        None => None,
    };
    Ok(Verified {
        event_id: event_id.unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type: None,
        timestamp: Some(iat),
        secret_index: 0,
    })
}

pub(super) async fn verify(
    fetcher: &Fetcher,
    settings: &GoogleSource,
    source: &str,
    d: Delivery<'_>,
) -> Result<Verified, Error> {
    let token = parse(d.headers)?;
    let unavailable = |_: FetchError| Error::KeyUnavailable;
    let mut keys = fetcher
        .keys(&settings.jwks_url, KeyKind::Jwks, &settings.keys)
        .await
        .map_err(unavailable)?;
    if keys.by_kid(&token.kid).is_none() {
        // Google rotated its keys since the set was cached, or the token is
        // forged: ask again (at most once per cooldown).
        tracing::debug!(source, kid = %token.kid, "token names a key the cached set lacks");
        keys = fetcher
            .refresh(&settings.jwks_url, KeyKind::Jwks, &settings.keys)
            .await
            .map_err(unavailable)?;
    }
    verify_with(&token, &keys, settings, d.tolerance, d.body, d.now)
}

/// `scheme = "google-oidc"`: a Google-signed OIDC token (Pub/Sub push),
/// checked against Google's fetched keys and who the token must be for and
/// from. The token signs the sender, not the body: neither the event id
/// nor the type is signed.
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

impl Provider for GoogleSource {
    fn name(&self) -> &'static str {
        "google-oidc"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn signs_event_id(&self) -> bool {
        false
    }

    fn signs_event_type(&self) -> bool {
        false
    }

    fetched_key!(verify, keys);
}

#[cfg(test)]
pub(crate) mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use ring::signature::RsaKeyPair;

    use super::super::test_support::{garbage, headers, set};
    use super::*;
    use crate::keyfetch::{KeyPolicy, KeyUrl, RsaKey};

    // No published token verifies offline (Google's keys rotate and its
    // samples are not signed tokens), so these are signed here with a test
    // key, the way Google signs: RS256, its header and claims.
    const KEY_A: &str = include_str!("fixtures/provider-key-a.pem");
    const KEY_B: &str = include_str!("fixtures/provider-key-b.pem");
    const NOW: i64 = 1_700_000_000;
    const TOLERANCE: Duration = Duration::from_secs(300);

    pub(crate) fn pair(pem: &str) -> RsaKeyPair {
        use rustls::pki_types::pem::PemObject;
        let der = rustls::pki_types::PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .expect("a PKCS#8 test key");
        RsaKeyPair::from_pkcs8(der.secret_der()).expect("an RSA key")
    }

    fn public(pair: &RsaKeyPair) -> RsaKey {
        let components: ring::rsa::PublicKeyComponents<Vec<u8>> = pair.public().into();
        RsaKey::new(&components.n, &components.e)
    }

    pub(crate) fn token(pair: &RsaKeyPair, kid: &str, claims: &Value) -> String {
        let header = serde_json::json!({"alg": "RS256", "kid": kid, "typ": "JWT"});
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut sig = vec![0; pair.public().modulus_len()];
        pair.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signed.as_bytes(),
            &mut sig,
        )
        .expect("sign");
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig))
    }

    fn claims() -> Value {
        serde_json::json!({
            "aud": "https://hooks.example.com/push",
            "azp": "113774264463038321964",
            "email": "pusher@project.iam.gserviceaccount.com",
            "email_verified": true,
            "exp": NOW + 3600,
            "iat": NOW,
            "iss": "https://accounts.google.com",
            "sub": "113774264463038321964"
        })
    }

    fn settings() -> GoogleSource {
        GoogleSource {
            audience: "https://hooks.example.com/push".to_owned(),
            email: "pusher@project.iam.gserviceaccount.com".to_owned(),
            jwks_url: KeyUrl::parse(GOOGLE_JWKS).expect("valid"),
            keys: KeyPolicy::default(),
        }
    }

    const PUSH: &[u8] = br#"{"message":{"attributes":{"k":"v"},"data":"aGk=","messageId":"2070443601311540","message_id":"2070443601311540","publishTime":"2021-02-26T19:13:55.749Z","publish_time":"2021-02-26T19:13:55.749Z"},"subscription":"projects/p/subscriptions/s"}"#;

    fn check(auth: &str, keys: &Keys, body: &[u8], now: i64) -> Result<Verified, Error> {
        let h = headers(&[("Authorization", auth)]);
        let t = parse(&h)?;
        verify_with(&t, keys, &settings(), TOLERANCE, body, now)
    }

    fn set_of(pairs: &[(&str, &RsaKeyPair)]) -> Keys {
        Keys::Set(
            pairs
                .iter()
                .map(|(kid, p)| ((*kid).to_owned(), public(p)))
                .collect(),
        )
    }

    #[test]
    fn a_google_style_token_verifies() {
        let a = pair(KEY_A);
        let b = pair(KEY_B);
        let keys = set_of(&[("kb", &b), ("ka", &a)]);
        let auth = format!("Bearer {}", token(&a, "ka", &claims()));
        assert_eq!(
            check(&auth, &keys, PUSH, NOW + 10),
            Ok(Verified {
                event_id: "2070443601311540".into(),
                event_type: None,
                timestamp: Some(NOW),
                secret_index: 0,
            })
        );
        // Not a Pub/Sub body: the id is the body's digest.
        let got = check(&auth, &keys, b"plain", NOW).expect("verifies");
        assert_eq!(got.event_id, hmac::body_sha256_hex(b"plain"));
        // Either issuer spelling; aud as a list.
        let mut c = claims();
        c["iss"] = "accounts.google.com".into();
        c["aud"] = serde_json::json!(["other", "https://hooks.example.com/push"]);
        assert!(check(&format!("Bearer {}", token(&a, "ka", &c)), &keys, PUSH, NOW).is_ok());
    }

    #[test]
    fn wrong_keys_claims_and_times_are_refused() {
        let a = pair(KEY_A);
        let b = pair(KEY_B);
        let keys = set_of(&[("ka", &a), ("kb", &b)]);
        // Signed by b but naming a's key; a key id the set lacks.
        for (signer, kid) in [(&b, "ka"), (&a, "kc")] {
            let auth = format!("Bearer {}", token(signer, kid, &claims()));
            assert_eq!(check(&auth, &keys, PUSH, NOW), Err(Error::InvalidSignature));
        }
        let bad_claims: [(&str, Value); 7] = [
            ("iss", "https://evil.example".into()),
            ("aud", "https://other.example/push".into()),
            ("email", "someone@else.iam.gserviceaccount.com".into()),
            ("email_verified", false.into()),
            ("email_verified", "true".into()),
            ("aud", Value::Null),
            ("iss", Value::Null),
        ];
        for (name, value) in bad_claims {
            let mut c = claims();
            c[name] = value.clone();
            let auth = format!("Bearer {}", token(&a, "ka", &c));
            assert_eq!(
                check(&auth, &keys, PUSH, NOW),
                Err(Error::InvalidSignature),
                "{name}={value}"
            );
        }
        let auth = format!("Bearer {}", token(&a, "ka", &claims()));
        // Expired (beyond the skew), and not yet issued (beyond it).
        assert!(check(&auth, &keys, PUSH, NOW + 3600 + 300).is_ok());
        assert!(matches!(
            check(&auth, &keys, PUSH, NOW + 3600 + 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        assert!(matches!(
            check(&auth, &keys, PUSH, NOW - 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        // A changed payload breaks the signature.
        let t = token(&a, "ka", &claims());
        let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
        let mut c = claims();
        c["email"] = "attacker@x.iam.gserviceaccount.com".into();
        parts[1] = URL_SAFE_NO_PAD.encode(c.to_string());
        assert_eq!(
            check(&format!("Bearer {}", parts.join(".")), &keys, PUSH, NOW),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn malformed_authorization_is_a_signature_error() {
        let a = pair(KEY_A);
        let keys = set_of(&[("ka", &a)]);
        let good = token(&a, "ka", &claims());
        assert!(matches!(
            check_missing(&keys),
            Err(Error::MissingSignature(_))
        ));
        let hs256 = {
            let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","kid":"ka"}"#);
            let rest = good.split_once('.').map(|(_, r)| r).unwrap_or_default();
            format!("{header}.{rest}")
        };
        let no_kid = {
            let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256"}"#);
            let rest = good.split_once('.').map(|(_, r)| r).unwrap_or_default();
            format!("{header}.{rest}")
        };
        for auth in [
            good.clone(),
            format!("Basic {good}"),
            format!("Bearer {hs256}"),
            format!("Bearer {no_kid}"),
            "Bearer a.b".to_owned(),
            "Bearer a.b.c.d".to_owned(),
            "Bearer ".to_owned(),
        ] {
            assert!(
                matches!(
                    check(&auth, &keys, PUSH, NOW),
                    Err(Error::MalformedSignature(_))
                ),
                "{auth}"
            );
        }
        for value in garbage() {
            let mut h = HeaderMap::new();
            set(&mut h, AUTHORIZATION, &value);
            assert!(parse(&h).is_err());
            let mut bearer = b"Bearer ".to_vec();
            bearer.extend_from_slice(&value);
            set(&mut h, AUTHORIZATION, &bearer);
            assert!(parse(&h).is_err());
        }
    }

    fn check_missing(keys: &Keys) -> Result<Verified, Error> {
        let empty = HeaderMap::new();
        let t = parse(&empty)?;
        verify_with(&t, keys, &settings(), TOLERANCE, PUSH, NOW)
    }
}
