//! Payloads at rest (DESIGN §4b): the keyring of `[store.encryption]` and
//! the AEAD that seals a stored payload with it.
//!
//! XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha): a 24-byte nonce drawn at
//! random for every seal, so nonces never repeat in practice however many
//! payloads one key seals (a 96-bit random nonce, as AES-GCM or
//! ChaCha20-Poly1305 take, reaches a collision risk of 2^-32 after about
//! 2^32 seals under one key). As the draft defines it: HChaCha20 of the key
//! and the nonce's first 16 bytes (RustCrypto's `chacha20::hchacha`) is the
//! subkey of an IETF ChaCha20-Poly1305 (ring's, in assembly) whose nonce is
//! four zero bytes and the nonce's last 8. The output is byte for byte that
//! of RustCrypto's `XChaCha20Poly1305` (tested both ways); ring's AEAD makes
//! it three times as fast. A sealed payload is the nonce followed by the
//! ciphertext and its 16-byte tag; the key that sealed it is named beside
//! it, readable, by its id. The associated data binds it to its record
//! ([`Binding`]): opened under any other record it fails like a tampered
//! one.
//!
//! The first key of the ring seals; every key opens. A key's bytes never
//! leave this module: `Debug` shows ids only.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

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
    bytes: [u8; KEY_BYTES],
}

impl Key {
    /// The IETF ChaCha20-Poly1305 key and nonce XChaCha20-Poly1305 uses for
    /// the 24-byte `nonce`.
    fn derive(&self, nonce: &[u8; NONCE_BYTES]) -> Option<(LessSafeKey, Nonce)> {
        let (first, last) = nonce.split_at(16);
        let first: [u8; 16] = first.try_into().ok()?;
        let subkey = chacha20::hchacha::<chacha20::R20>(&self.bytes.into(), &first.into());
        let key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &subkey).ok()?);
        let mut ietf = [0u8; 12];
        ietf[4..].copy_from_slice(last);
        Some((key, Nonce::assume_unique_for_key(ietf)))
    }
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
                .map(|(id, bytes)| Key { id, bytes })
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
        // Sealing fails only past the cipher's length limit (256 GiB), far
        // beyond any body hookgate accepts.
        let sealed = key.derive(&nonce).and_then(|(k, n)| {
            k.seal_in_place_separate_tag(n, Aad::from(&aad), &mut out[start..])
                .ok()
        });
        match sealed {
            Some(tag) => {
                out.extend_from_slice(tag.as_ref());
                Some(key.id.as_str())
            }
            None => {
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
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| refused())?;
        let (k, n) = key.derive(&nonce).ok_or_else(refused)?;
        let mut plain = rest.to_vec();
        let aad = to.associated_data();
        let len = k
            .open_in_place(n, Aad::from(&aad), &mut plain)
            .map_err(|_| refused())?
            .len();
        plain.truncate(len);
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

    /// What is sealed here opens with RustCrypto's `XChaCha20Poly1305`, and
    /// the other way round: the same construction, byte for byte.
    #[test]
    fn the_seal_is_xchacha20_poly1305_as_rustcrypto_computes_it() {
        use chacha20poly1305::aead::{Aead, KeyInit, Payload};
        use chacha20poly1305::{XChaCha20Poly1305, XNonce};
        let bytes = [0x42u8; KEY_BYTES];
        let r = Keyring::new(vec![("k".to_owned(), bytes)]);
        let theirs = XChaCha20Poly1305::new(&bytes.into());
        let aad = TO.associated_data();
        for len in [0usize, 1, 63, 64, 65, 1000, 4096 + 7] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let (_, sealed) = seal(&r, TO, &plain).expect("sealed");
            let nonce: [u8; NONCE_BYTES] = sealed[..NONCE_BYTES].try_into().expect("nonce");
            let opened = theirs
                .decrypt(
                    &XNonce::from(nonce),
                    Payload {
                        msg: &sealed[NONCE_BYTES..],
                        aad: &aad,
                    },
                )
                .expect("RustCrypto opens ours");
            assert_eq!(opened, plain, "{len}");
            let mut by_them = nonce.to_vec();
            by_them.extend(
                theirs
                    .encrypt(
                        &XNonce::from(nonce),
                        Payload {
                            msg: &plain,
                            aad: &aad,
                        },
                    )
                    .expect("sealed"),
            );
            assert_eq!(by_them, sealed, "{len}: the same bytes");
            assert_eq!(r.open("k", TO, &by_them).as_deref(), Ok(&plain[..]));
        }
    }

    /// draft-irtf-cfrg-xchacha-03, A.3.1: the AEAD test vector.
    #[test]
    fn the_drafts_test_vector() {
        let hex = |s: &str| hex::decode(s.replace([' ', '\n'], "")).expect("hex");
        let key: [u8; KEY_BYTES] =
            hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
                .try_into()
                .expect("32 bytes");
        let nonce: [u8; NONCE_BYTES] = hex("404142434445464748494a4b4c4d4e4f5051525354555657")
            .try_into()
            .expect("24 bytes");
        let aad = hex("50515253c0c1c2c3c4c5c6c7");
        let plain = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let want_ct = hex(
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb
             731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452
             2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9
             21f9664c97637da9768812f615c68b13b52e",
        );
        let want_tag = hex("c0875924c1c7987947deafd8780acf49");
        let k = Key {
            id: "k".into(),
            bytes: key,
        };
        let (sealing, n) = k.derive(&nonce).expect("derived");
        let mut buf = plain.to_vec();
        let tag = sealing
            .seal_in_place_separate_tag(n, Aad::from(&aad), &mut buf)
            .expect("sealed");
        assert_eq!(buf, want_ct);
        assert_eq!(tag.as_ref(), &want_tag[..]);
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
