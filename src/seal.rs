//! Payloads at rest (DESIGN §4b): the keyring of `[store.encryption]` and
//! the AEAD that seals a stored payload with it.
//!
//! XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`): a 24-byte nonce
//! drawn at random for every seal, so nonces never repeat in practice
//! however many payloads one key seals (a 96-bit random nonce, as AES-GCM
//! or ChaCha20-Poly1305 take, reaches a collision risk of 2^-32 after
//! about 2^32 seals under one key). A sealed payload is the nonce followed
//! by the ciphertext and its 16-byte tag; the key that sealed it is named
//! beside it, readable, by its id. The associated data binds it to its
//! record ([`Binding`]): opened under any other record it fails like a
//! tampered one.
//!
//! The first key of the ring seals; every key opens. A key's bytes never
//! leave this module: `Debug` shows ids only.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use chacha20poly1305::aead::inout::InOutBuf;
use chacha20poly1305::aead::{AeadInOut, KeyInit, Tag};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::metrics::SourceLabel;

/// Bytes of a key.
pub const KEY_BYTES: usize = 32;
/// Bytes of the random nonce that starts a sealed payload.
const NONCE_BYTES: usize = 24;
/// Bytes the tag adds.
const TAG_BYTES: usize = 16;
/// The longest key id (`A-Za-z0-9._-`).
pub const MAX_ID: usize = 16;

/// Whether `id` is a valid key id: 1 to [`MAX_ID`] of `A-Za-z0-9._-`.
pub fn valid_id(id: &str) -> bool {
    (1..=MAX_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

struct Key {
    id: String,
    cipher: XChaCha20Poly1305,
}

/// The keys of `[store.encryption]`, the sealing one first. Empty: payloads
/// are stored as they are.
#[derive(Clone, Default)]
pub struct Keyring {
    keys: Arc<[Key]>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.id))
            .finish()
    }
}

impl PartialEq for Keyring {
    /// Two rings are equal when they name the same ids in the same order
    /// (the bytes are not compared: they come from the same sources).
    fn eq(&self, other: &Keyring) -> bool {
        self.ids().eq(other.ids())
    }
}

/// What a sealed payload is bound to: the record it was written for. The
/// kind keeps a queue entry's payload from opening as a dead letter's, the
/// token (unique per envelope) keeps one event's two copies apart.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub kind: &'static str,
    pub source: &'a str,
    pub event_id: &'a str,
    pub token: &'a str,
}

impl Binding<'_> {
    fn associated_data(&self) -> Vec<u8> {
        let mut aad = Vec::with_capacity(
            24 + self.kind.len() + self.source.len() + self.event_id.len() + self.token.len(),
        );
        aad.extend_from_slice(b"hookgate payload 1\0");
        for part in [self.kind, self.source, self.event_id, self.token] {
            aad.extend_from_slice(part.as_bytes());
            aad.push(0);
        }
        aad
    }
}

/// Why a sealed payload did not open. Names the key id only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unopenable {
    /// No configured key has this id.
    #[error("cannot be opened with the configured keys (key {0})")]
    NoKey(String),
    /// The key is there and the payload does not open under it: tampered,
    /// copied from another record, or a different key under the same id.
    #[error("cannot be opened with the configured keys (key {0})")]
    Refused(String),
}

impl Unopenable {
    /// Why, in a few words, for the log.
    pub fn reason(&self) -> &'static str {
        match self {
            Unopenable::NoKey(_) => "no configured key has this id",
            Unopenable::Refused(_) => {
                "it does not open under that key: changed, or copied from another entry"
            }
        }
    }

    /// The id of the key the payload names.
    pub fn key(&self) -> &str {
        match self {
            Unopenable::NoKey(id) | Unopenable::Refused(id) => id,
        }
    }
}

impl Keyring {
    /// A ring of `(id, key bytes)`, the sealing key first.
    pub fn new(keys: Vec<(String, [u8; KEY_BYTES])>) -> Keyring {
        Keyring {
            keys: keys
                .into_iter()
                .map(|(id, bytes)| Key {
                    id,
                    cipher: XChaCha20Poly1305::new(&bytes.into()),
                })
                .collect(),
        }
    }

    /// The key ids, the sealing one first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.id.as_str())
    }

    /// The id of the key that seals, when there is one.
    pub fn sealing(&self) -> Option<&str> {
        self.keys.first().map(|k| k.id.as_str())
    }

    /// Appends to `out` a random nonce, then what `plain` appends, sealed
    /// in place under the first key for `to`, then the tag: one buffer, no
    /// copy of the plaintext. Returns the sealing key's id; `None` (and
    /// `out` unchanged) when the ring is empty.
    pub fn seal_into(
        &self,
        to: Binding<'_>,
        out: &mut Vec<u8>,
        plain: impl FnOnce(&mut Vec<u8>),
    ) -> Option<&str> {
        let key = self.keys.first()?;
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let from = out.len();
        out.extend_from_slice(&nonce);
        let start = out.len();
        plain(out);
        let aad = to.associated_data();
        // Encryption fails only past the cipher's length limit (256 GiB),
        // far beyond any body hookgate accepts.
        match key.cipher.encrypt_inout_detached(
            &XNonce::from(nonce),
            &aad,
            InOutBuf::from(&mut out[start..]),
        ) {
            Ok(tag) => {
                out.extend_from_slice(&tag);
                Some(key.id.as_str())
            }
            Err(_) => {
                out.truncate(from);
                None
            }
        }
    }

    /// Opens what key `id` sealed for `to` ([`Keyring::seal_into`]'s nonce,
    /// ciphertext and tag): the plaintext, in one copy.
    pub fn open(&self, id: &str, to: Binding<'_>, sealed: &[u8]) -> Result<Vec<u8>, Unopenable> {
        let key = self
            .keys
            .iter()
            .find(|k| k.id == id)
            .ok_or_else(|| Unopenable::NoKey(id.to_owned()))?;
        let refused = || Unopenable::Refused(id.to_owned());
        if sealed.len() < NONCE_BYTES + TAG_BYTES {
            return Err(refused());
        }
        let (nonce, rest) = sealed.split_at(NONCE_BYTES);
        let (text, tag) = rest.split_at(rest.len() - TAG_BYTES);
        let nonce = XNonce::try_from(nonce).map_err(|_| refused())?;
        let tag = Tag::<XChaCha20Poly1305>::try_from(tag).map_err(|_| refused())?;
        let mut plain = text.to_vec();
        let aad = to.associated_data();
        key.cipher
            .decrypt_inout_detached(&nonce, &aad, InOutBuf::from(&mut plain[..]), &tag)
            .map_err(|_| refused())?;
        Ok(plain)
    }
}

/// Payloads already reported as not opening, by record: each is logged and
/// counted once per process. Bounded: past [`REPORTED_MAX`] records the set
/// starts again (a record may then be reported twice).
static REPORTED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);
const REPORTED_MAX: usize = 100_000;
/// `hookgate_store_unopenable_total{source}`, once the metrics exist.
static UNOPENABLE: OnceLock<Family<SourceLabel, Counter>> = OnceLock::new();

/// Where payloads that do not open are counted.
pub fn count_unopenable(family: Family<SourceLabel, Counter>) {
    let _ = UNOPENABLE.set(family);
}

/// Reports a payload that did not open: `what` names the record (a queue
/// entry or dead letter id). Logged and counted the first time this
/// process sees that record.
pub fn report(source: &str, what: &str, why: &Unopenable) {
    let first = REPORTED.lock().is_ok_and(|mut seen| {
        if seen.len() >= REPORTED_MAX {
            seen.clear();
        }
        seen.insert(format!("{source}\0{what}"))
    });
    if !first {
        return;
    }
    if let Some(family) = UNOPENABLE.get() {
        family
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .inc();
    }
    tracing::warn!(
        source,
        id = what,
        key = why.key(),
        "a stored payload cannot be opened with the configured keys; kept, not delivered (add its key back to deliver it)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(keys: &[(&str, u8)]) -> Keyring {
        Keyring::new(
            keys.iter()
                .map(|(id, b)| ((*id).to_owned(), [*b; KEY_BYTES]))
                .collect(),
        )
    }

    /// `plain` sealed for `to`: the key id and the sealed bytes.
    fn seal(r: &Keyring, to: Binding<'_>, plain: &[u8]) -> Option<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let id = r.seal_into(to, &mut out, |o| o.extend_from_slice(plain))?;
        Some((id.to_owned(), out))
    }

    const TO: Binding<'static> = Binding {
        kind: "queue",
        source: "stripe",
        event_id: "evt_1",
        token: "t1",
    };

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let old = ring(&[("old", 1)]);
        let (id, sealed) = seal(&old, TO, b"card 4242").expect("sealed");
        assert_eq!(id, "old");
        assert!(!sealed.windows(4).any(|w| w == b"4242"));
        let both = ring(&[("new", 2), ("old", 1)]);
        assert_eq!(
            both.open("old", TO, &sealed).as_deref(),
            Ok(&b"card 4242"[..])
        );
        let (id, resealed) = seal(&both, TO, b"card 4242").expect("sealed");
        assert_eq!(id, "new");
        assert_eq!(
            old.open("new", TO, &resealed),
            Err(Unopenable::NoKey("new".into()))
        );
    }

    #[test]
    fn two_seals_of_one_payload_differ() {
        let r = ring(&[("k", 7)]);
        let a = seal(&r, TO, b"same").expect("sealed").1;
        let b = seal(&r, TO, b"same").expect("sealed").1;
        assert_ne!(a, b, "a fresh nonce each time");
    }

    #[test]
    fn a_payload_opens_only_on_its_own_record_and_unchanged() {
        let r = ring(&[("k", 7)]);
        let (_, sealed) = seal(&r, TO, b"payload").expect("sealed");
        for other in [
            Binding {
                kind: "dead_letter",
                ..TO
            },
            Binding {
                source: "github",
                ..TO
            },
            Binding {
                event_id: "evt_2",
                ..TO
            },
            Binding { token: "t2", ..TO },
        ] {
            assert_eq!(
                r.open("k", other, &sealed),
                Err(Unopenable::Refused("k".into())),
                "{other:?}"
            );
        }
        for i in 0..sealed.len() {
            let mut flipped = sealed.clone();
            flipped[i] ^= 1;
            assert!(r.open("k", TO, &flipped).is_err(), "byte {i}");
        }
        assert!(r.open("k", TO, &sealed[..20]).is_err());
        // Another key under the same id does not open it either.
        assert!(ring(&[("k", 8)]).open("k", TO, &sealed).is_err());
    }

    #[test]
    fn key_ids_are_short_and_plain() {
        for ok in ["2026-12", "a", "k.1_x-Y", "0123456789abcdef"] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", "0123456789abcdefg", "a b", "ключ", "a/b"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn debug_shows_ids_only() {
        let r = ring(&[("new", 0x41), ("old", 0x42)]);
        assert_eq!(format!("{r:?}"), r#"["new", "old"]"#);
    }
}
