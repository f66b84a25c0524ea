//! Discord interactions (and webhook events): Ed25519 over
//! `{timestamp}{body}`; `X-Signature-Ed25519` carries the signature in hex,
//! `X-Signature-Timestamp` the unix seconds. The "secret" is the
//! application's public key from the developer portal (64 hex characters).
//!
//! The id is the interaction's `/id` (else the body digest), the type its
//! numeric `/type`. A PING (`type` 1) is answered `{"type":1}` by hookgate.
//! Discord also sends deliberately bad signatures to check the endpoint
//! refuses them; hookgate does (400).
//!
//! Source: <https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers>.

use std::time::Duration;

use http::HeaderMap;
use ring::signature::ED25519;

use super::Handshake;
use super::json::json_fields;
use super::provider::{Delivery, Provider, SENDER_PRIVATE_KEY, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

const SIGNATURE: &str = "x-signature-ed25519";
const TIMESTAMP: &str = "x-signature-timestamp";

pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let raw = secret.expose().trim_ascii();
    match hex::decode(raw) {
        Ok(key) if key.len() == 32 => Ok(Secret::new(key)),
        _ => Err("public key is not 64 hex characters (an Ed25519 public key)".to_owned()),
    }
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let signature = match value.len() {
        128 => hex::decode(value).map_err(|_| Error::MalformedSignature(SIGNATURE))?,
        _ => return Err(Error::MalformedSignature(SIGNATURE)),
    };
    let ts_text = hmac::header(headers, TIMESTAMP).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let ts = hmac::parse_timestamp(ts_text).ok_or(Error::MalformedSignature(TIMESTAMP))?;
    let message = [ts_text, body].concat();
    let secret_index = hmac::match_public_key(keys, &ED25519, &message, &signature)?;
    hmac::check_window(ts, now, tolerance)?;
    // Discord's interaction type is a number: read as an id, it is its text.
    let (event_id, event_type) = match json_fields(body, ["/id", "/type"]) {
        Some([id, kind]) => (id.id(), kind.id()),
        None => (None, None),
    };
    Ok(Verified {
        event_id: event_id.unwrap_or_else(|| hmac::body_sha256_hex(body)),
        event_type,
        timestamp: Some(ts),
        secret_index,
    })
}

/// `scheme = "discord"`: Ed25519 over the timestamp and body; the key is
/// the application's public key. Its signed PING is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Discord;

impl Provider for Discord {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        prepare_key(secret)
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, _: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Err(SENDER_PRIVATE_KEY.sign)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        Err(SENDER_PRIVATE_KEY.resign)
    }

    fn handshake_after(&self) -> Option<Handshake> {
        Some(Handshake::DiscordPing)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{TOLERANCE, coded, garbage_is_refused, headers, key};
    use super::*;

    // No published Discord vector (discord-interactions-js signs with a key
    // generated per test run). These signatures were made with Python's
    // `cryptography` Ed25519 and the RFC 8032 §7.1 TEST 1 key
    // (secret 9d61b1…7f60, public d75a98…511a) over "1700000000" + body:
    //   Ed25519PrivateKey.from_private_bytes(bytes.fromhex(SK)).sign((ts + body).encode()).hex()
    const PUBLIC_KEY: &[u8] = b"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    const TS: i64 = 1_700_000_000;
    const PING: &[u8] = br#"{"application_id":"1","id":"787053080478613555","token":"ThisIsATokenFromDiscordThatIsVeryLong","type":1,"version":1}"#;
    const PING_SIG: &str = "32fb6296f0804354615c365456a71064b8e54e64d371b60606e54d315bddebd8e59c186ffe335f2da8a942a0efe2186b5fabc17999dc2fd3242b7afc22a5fd0e";
    const COMMAND: &[u8] = br#"{"application_id":"1","id":"787053080478613556","token":"ThisIsATokenFromDiscordThatIsVeryLong","type":2,"version":1,"data":{"id":"787053080478613554","name":"test"}}"#;
    const COMMAND_SIG: &str = "6a1fcf26dca22787a6e8cd4c841575d7e0eedabfd0fe5bb451393c85d9e65384b9e963dd0e70e58df9f3782967777db6ec07c689237aee585089518d5a872307";
    // RFC 8032 §7.1 TEST 2's public key: a real key that did not sign these.
    const OTHER_KEY: &[u8] = b"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";

    fn prepared(k: &[u8]) -> Secret {
        coded(Discord)
            .prepare_key(&key(k))
            .expect("a valid public key")
    }

    fn signed(sig: &str) -> HeaderMap {
        headers(&[
            ("X-Signature-Ed25519", sig),
            ("X-Signature-Timestamp", "1700000000"),
        ])
    }

    #[test]
    fn cross_checked_signatures_verify() {
        let keys = [prepared(OTHER_KEY), prepared(PUBLIC_KEY)];
        let got = coded(Discord).verify(&keys, TOLERANCE, &signed(COMMAND_SIG), COMMAND, TS);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "787053080478613556".into(),
                event_type: Some("2".into()),
                timestamp: Some(TS),
                secret_index: 1,
            })
        );
        let ping = coded(Discord).verify(&keys, TOLERANCE, &signed(PING_SIG), PING, TS);
        let ping = ping.expect("the PING verifies");
        let reply = coded(Discord).handshake_after(&keys, &ping, &signed(PING_SIG), PING);
        assert_eq!(reply.map(|r| r.body), Some(br#"{"type":1}"#.to_vec()));
        let not_ping = coded(Discord).verify(&keys, TOLERANCE, &signed(COMMAND_SIG), COMMAND, TS);
        let not_ping = not_ping.expect("the command verifies");
        assert_eq!(
            coded(Discord).handshake_after(&keys, &not_ping, &signed(COMMAND_SIG), COMMAND),
            None
        );
    }

    #[test]
    fn tampering_is_refused() {
        let keys = [prepared(PUBLIC_KEY)];
        let s = coded(Discord);
        assert_eq!(
            s.verify(
                &[prepared(OTHER_KEY)],
                TOLERANCE,
                &signed(PING_SIG),
                PING,
                TS
            ),
            Err(Error::InvalidSignature)
        );
        assert_eq!(
            s.verify(&keys, TOLERANCE, &signed(PING_SIG), COMMAND, TS),
            Err(Error::InvalidSignature)
        );
        let later = headers(&[
            ("X-Signature-Ed25519", PING_SIG),
            ("X-Signature-Timestamp", "1700000001"),
        ]);
        assert_eq!(
            s.verify(&keys, TOLERANCE, &later, PING, TS),
            Err(Error::InvalidSignature)
        );
        assert!(matches!(
            s.verify(&keys, TOLERANCE, &signed(PING_SIG), PING, TS - 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        assert!(s.sign(&keys[0], PING, None, TS).is_err());
        for bad in [&b"zz"[..], b"d75a98", &[b'0'; 66]] {
            assert!(s.prepare_key(&key(bad)).is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let keys = [prepared(PUBLIC_KEY)];
        garbage_is_refused(
            &coded(Discord),
            &keys,
            &signed(PING_SIG),
            PING,
            TS,
            &[SIGNATURE, TIMESTAMP],
        );
    }
}
