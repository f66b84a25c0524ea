//! The pieces every scheme shares: HMAC-SHA256 over the signed bytes fed in
//! parts, constant-time matching against every active key and every
//! signature value a header carries, hex/base64 decoding, the replay window,
//! and the body-digest event id of last resort (ids and types read from a
//! JSON body are in [`super::json`]).
//!
//! Everything here takes untrusted bytes and answers with `Option` or
//! `Result`: no input can make it panic.

use base64::Engine;
use base64::alphabet;
use base64::engine::general_purpose::{STANDARD, STANDARD_PAD_INDIFFERENT};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use http::header::AsHeaderName;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConstantTimeEq};

use super::{Algorithm, Encoding, Error, TimestampFormat};
use crate::secret::Secret;

/// URL-safe base64, padding optional when decoding, none when encoding.
const URL_SAFE_INDIFFERENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Bytes in an HMAC-SHA256 tag.
pub(crate) const TAG_LEN: usize = 32;

/// An HMAC-SHA256 tag, computed or decoded from a header.
pub(crate) type Tag = [u8; TAG_LEN];

/// SHA-256 block size; HMAC keys are normalised to exactly this length.
const BLOCK_LEN: usize = 64;

/// HMAC-SHA256 of the concatenation of `parts`, fed one slice at a time so
/// the body is never copied next to its prefix.
pub(crate) fn tag(key: &[u8], parts: &[&[u8]]) -> Tag {
    let mut mac = Hmac::<Sha256>::new(&block_key(key).into());
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The key as HMAC itself normalises it (RFC 2104 §2): a key longer than a
/// block is replaced by its SHA-256, then the key is zero-padded to the block
/// size. HMAC over the padded key is HMAC over the original one; doing it here
/// lets the fixed-size constructor, which cannot fail, take any key.
fn block_key(key: &[u8]) -> [u8; BLOCK_LEN] {
    let mut block = [0u8; BLOCK_LEN];
    if key.len() > BLOCK_LEN {
        block[..TAG_LEN].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    block
}

/// The index of the first key whose tag over `parts` equals any of
/// `candidates`, or [`Error::InvalidSignature`]; compared as [`match_with`]
/// compares.
pub(crate) fn match_key(
    keys: &[Secret],
    parts: &[&[u8]],
    candidates: &[Tag],
) -> Result<usize, Error> {
    match_with(keys, |key| tag(key.expose(), parts), candidates)
}

/// The index of the first public key in `keys` under which `signature`
/// verifies `message`, or [`Error::InvalidSignature`].
pub(crate) fn match_public_key(
    keys: &[Secret],
    algorithm: &'static dyn ring::signature::VerificationAlgorithm,
    message: &[u8],
    signature: &[u8],
) -> Result<usize, Error> {
    keys.iter()
        .position(|key| {
            ring::signature::UnparsedPublicKey::new(algorithm, key.expose())
                .verify(message, signature)
                .is_ok()
        })
        .ok_or(Error::InvalidSignature)
}

/// A tag written in hex (either case), or `None`. Anything that does not
/// decode to exactly [`TAG_LEN`] bytes cannot be an HMAC-SHA256 tag, so it
/// is refused as malformed rather than compared.
pub(crate) fn tag_from_hex(text: &[u8]) -> Option<Tag> {
    let mut tag = [0u8; TAG_LEN];
    // Decoded in place: no Vec per request. The length must match exactly.
    hex::decode_to_slice(text, &mut tag).ok()?;
    Some(tag)
}

/// A tag written in standard-alphabet base64 (padding optional), or `None`;
/// as for hex, only exactly [`TAG_LEN`] bytes qualify.
pub(crate) fn tag_from_base64(text: &[u8]) -> Option<Tag> {
    // 32 bytes are 43 base64 characters, 44 with padding.
    if !(43..=44).contains(&text.len()) {
        return None;
    }
    // Decoded in place: 44 characters may hold up to 33 bytes before the
    // padding rules are applied, and only exactly 32 qualify.
    let mut out = [0u8; TAG_LEN + 1];
    let len = STANDARD_PAD_INDIFFERENT.decode_slice(text, &mut out).ok()?;
    out[..len].try_into().ok()
}

/// Standard-alphabet base64 with padding, as the senders emit it.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A unix-seconds timestamp as senders write it: ASCII digits only (no sign,
/// no spaces, no fraction), and small enough for an `i64`.
pub(crate) fn parse_timestamp(text: &[u8]) -> Option<i64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Refuses a signed timestamp more than `tolerance` away from `now`, in
/// either direction (a timestamp from the future is as suspect as a stale
/// one). `abs_diff` is exact over the whole `i64` range, so an extreme value
/// cannot wrap around into the window.
pub(crate) fn check_window(
    timestamp: i64,
    now: i64,
    tolerance: std::time::Duration,
) -> Result<(), Error> {
    let tolerance_secs = tolerance.as_secs();
    if now.abs_diff(timestamp) > tolerance_secs {
        return Err(Error::TimestampOutsideWindow {
            timestamp,
            tolerance_secs,
        });
    }
    Ok(())
}

/// The event id of last resort: lowercase hex SHA-256 of the raw body.
pub(crate) fn body_sha256_hex(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The raw bytes of the first value of header `name`, if present.
///
/// `name` may be text (parsed on each call) or a `HeaderName` constant
/// (compared as it is): the schemes on the hottest paths use constants.
pub(crate) fn header<K: AsHeaderName>(headers: &HeaderMap, name: K) -> Option<&[u8]> {
    headers.get(name).map(|v| v.as_bytes())
}

/// A header value as text for an event id or type: `None` when absent or
/// empty; bytes that are not UTF-8 are replaced rather than refused, since
/// the value is informational once the signature has been checked.
pub(crate) fn header_text<K: AsHeaderName>(headers: &HeaderMap, name: K) -> Option<String> {
    match header(headers, name) {
        Some(bytes) if !bytes.is_empty() => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// A fresh random event id: 16 random bytes laid out as a version-4 UUID.
pub(crate) fn random_id() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// HMAC with `algorithm` over the concatenation of `parts`.
pub(crate) fn mac(algorithm: Algorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        // HMAC takes keys of any length; should that ever fail, an empty
        // tag matches no candidate (candidates always have the full length).
        match <M as KeyInit>::new_from_slice(key) {
            Ok(mut m) => {
                for part in parts {
                    m.update(part);
                }
                m.finalize().into_bytes().to_vec()
            }
            Err(_) => Vec::new(),
        }
    }
    match algorithm {
        Algorithm::Sha1 => run::<Hmac<Sha1>>(key, parts),
        Algorithm::Sha256 => tag(key, parts).to_vec(),
        Algorithm::Sha512 => run::<Hmac<Sha512>>(key, parts),
        // A token scheme's "signature" is the secret itself.
        Algorithm::Token => key.to_vec(),
    }
}

/// The index of the first key for which `expected(key)` equals any of
/// `candidates`, or [`Error::InvalidSignature`].
///
/// The expected value is computed once per key; every key is compared
/// against every candidate with [`ConstantTimeEq`], so the time taken
/// depends only on how many keys and candidates there are, not on how many
/// bytes of a forged signature happen to be right.
pub(crate) fn match_with<E: AsRef<[u8]>, C: AsRef<[u8]>>(
    keys: &[Secret],
    expected: impl Fn(&Secret) -> E,
    candidates: &[C],
) -> Result<usize, Error> {
    let mut matched = None;
    for (index, key) in keys.iter().enumerate() {
        let want = expected(key);
        let mut hit = Choice::from(0);
        for candidate in candidates {
            hit |= want.as_ref().ct_eq(candidate.as_ref());
        }
        if bool::from(hit) && matched.is_none() {
            matched = Some(index);
        }
    }
    matched.ok_or(Error::InvalidSignature)
}

/// A tag of exactly `len` bytes written in `encoding`, or `None`.
pub(crate) fn decode_tag(encoding: Encoding, text: &[u8], len: usize) -> Option<Vec<u8>> {
    // Bounded before decoding: hex is the longest form (2 chars a byte).
    if text.is_empty() || text.len() > 2 * len + 4 {
        return None;
    }
    let bytes = match encoding {
        Encoding::Hex if text.len() == 2 * len => hex::decode(text).ok()?,
        Encoding::Hex => return None,
        Encoding::Base64 => STANDARD_PAD_INDIFFERENT.decode(text).ok()?,
        Encoding::Base64Url => URL_SAFE_INDIFFERENT.decode(text).ok()?,
    };
    (bytes.len() == len).then_some(bytes)
}

/// `bytes` in `encoding`, as senders emit it (base64 padded, base64url not).
pub(crate) fn encode(encoding: Encoding, bytes: &[u8]) -> String {
    match encoding {
        Encoding::Hex => hex::encode(bytes),
        Encoding::Base64 => STANDARD.encode(bytes),
        Encoding::Base64Url => URL_SAFE_INDIFFERENT.encode(bytes),
    }
}

/// Bytes decoded from standard or URL-safe base64, padding optional.
pub(crate) fn decode_base64_any(text: &[u8]) -> Option<Vec<u8>> {
    STANDARD_PAD_INDIFFERENT
        .decode(text)
        .ok()
        .or_else(|| URL_SAFE_INDIFFERENT.decode(text).ok())
}

/// A signed timestamp as unix seconds, read in `format`.
pub(crate) fn parse_time(format: TimestampFormat, text: &[u8]) -> Option<i64> {
    match format {
        TimestampFormat::Seconds => parse_timestamp(text),
        TimestampFormat::Milliseconds => parse_timestamp(text).map(|ms| ms.div_euclid(1000)),
        TimestampFormat::Rfc3339 => parse_rfc3339(text),
    }
}

/// `timestamp` written in `format` (RFC 3339 in UTC, whole seconds).
pub(crate) fn format_time(format: TimestampFormat, timestamp: i64) -> String {
    match format {
        TimestampFormat::Seconds => timestamp.to_string(),
        TimestampFormat::Milliseconds => timestamp.saturating_mul(1000).to_string(),
        TimestampFormat::Rfc3339 => crate::time::format_rfc3339(timestamp),
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]` as unix seconds (fraction
/// dropped). A time without a zone is taken as UTC, as some senders write
/// it that way; a value longer than 64 bytes is no time. Anything else is `None`.
pub(crate) fn parse_rfc3339(text: &[u8]) -> Option<i64> {
    if text.len() > 64 {
        return None;
    }
    crate::time::rfc3339_secs(text, crate::time::Zone::Optional)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // RFC 4231 §4.2, test case 1: key 0x0b * 20, data "Hi There".
    // https://www.rfc-editor.org/rfc/rfc4231#section-4.2
    #[test]
    fn rfc4231_case_1() {
        let got = tag(&[0x0b; 20], &[b"Hi ", b"There"]);
        assert_eq!(
            hex::encode(got),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    // RFC 4231 §4.7, test case 6: a 131-byte key (longer than a block, so
    // it is hashed first).
    #[test]
    fn rfc4231_case_6_long_key() {
        let got = tag(
            &[0xaa; 131],
            &[b"Test Using Larger Than Block-Size Key - Hash Key First"],
        );
        assert_eq!(
            hex::encode(got),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn padded_key_equals_variable_key_hmac() {
        for len in [1usize, 20, 63, 64, 65, 200] {
            let key = vec![0x5a; len];
            let mut mac =
                Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes keys of any length");
            mac.update(b"body");
            let want: Tag = mac.finalize().into_bytes().into();
            assert_eq!(tag(&key, &[b"bo", b"", b"dy"]), want, "key length {len}");
        }
    }

    #[test]
    fn match_key_reports_the_matching_index() {
        let keys = [Secret::new(b"old".to_vec()), Secret::new(b"new".to_vec())];
        let good = tag(b"new", &[b"x"]);
        let other = tag(b"nope", &[b"x"]);
        assert_eq!(match_key(&keys, &[b"x"], &[other, good]), Ok(1));
        assert_eq!(
            match_key(&keys, &[b"x"], &[other]),
            Err(Error::InvalidSignature)
        );
        assert_eq!(match_key(&keys, &[b"x"], &[]), Err(Error::InvalidSignature));
        assert_eq!(
            match_key(&[], &[b"x"], &[good]),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn tags_decode_only_at_full_length() {
        let t = tag(b"k", &[b"m"]);
        let hex = hex::encode(t);
        let b64 = encode_base64(&t);
        assert_eq!(tag_from_hex(hex.as_bytes()), Some(t));
        assert_eq!(tag_from_hex(hex.to_uppercase().as_bytes()), Some(t));
        assert_eq!(tag_from_base64(b64.as_bytes()), Some(t));
        assert_eq!(
            tag_from_base64(b64.trim_end_matches('=').as_bytes()),
            Some(t)
        );
        for bad in [&hex[2..], &hex[..62], "", "deadbeef", "zz", &"0".repeat(66)] {
            assert_eq!(tag_from_hex(bad.as_bytes()), None, "{bad}");
        }
        // Hex text is valid base64, but of the wrong length.
        for bad in [hex.as_str(), &b64[4..], "", "!!!!", &b64.replace('+', "-")] {
            if bad != b64 {
                assert_eq!(tag_from_base64(bad.as_bytes()), None, "{bad}");
            }
        }
    }

    #[test]
    fn timestamps_are_plain_digits() {
        assert_eq!(parse_timestamp(b"1614265330"), Some(1_614_265_330));
        assert_eq!(parse_timestamp(b"0"), Some(0));
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b" 1",
            b"1.5",
            b"abc",
            b"\xff",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn window_is_symmetric_and_inclusive() {
        let tol = Duration::from_secs(300);
        assert!(check_window(1000, 1300, tol).is_ok());
        assert!(check_window(1300, 1000, tol).is_ok());
        assert_eq!(
            check_window(1000, 1301, tol),
            Err(Error::TimestampOutsideWindow {
                timestamp: 1000,
                tolerance_secs: 300
            })
        );
        assert!(check_window(1301, 1000, tol).is_err());
        assert!(check_window(i64::MIN, i64::MAX, tol).is_err());
        assert!(check_window(i64::MAX, i64::MIN, tol).is_err());
        assert!(check_window(i64::MAX, 0, Duration::MAX).is_ok());
    }

    #[test]
    fn body_digest_is_sha256_hex() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            body_sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn random_ids_look_like_uuids() {
        let id = random_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, random_id());
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339(b"2022-01-31T23:59:59Z"), Some(1_643_673_599));
        assert_eq!(
            parse_rfc3339(b"2020-01-01T00:00:00-07:00"),
            Some(1_577_862_000)
        );
        assert_eq!(
            parse_rfc3339(b"2019-11-16T10:11:12.634234626Z"),
            Some(1_573_899_072)
        );
        assert_eq!(
            parse_rfc3339(b"2024-03-27T15:42:29.551"),
            Some(1_711_554_149)
        );
        assert_eq!(
            parse_rfc3339(b"2024-02-29T00:00:00+01:30"),
            Some(1_709_159_400)
        );
        for bad in [
            &b""[..],
            b"2024-02-30T00:00:00Z",
            b"2023-02-29T00:00:00Z",
            b"2024-13-01T00:00:00Z",
            b"2024-01-01T24:00:00Z",
            b"2024-01-01T00:00:00.Z",
            b"2024-01-01T00:00:00+0100",
            b"2024-01-01T00:00:00Zjunk",
            b"+024-01-01T00:00:00Z",
            b"\xff\xff\xff\xff-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        for t in [0, 1_643_673_599, 951_782_400, -86_400, 4_102_444_800] {
            let text = format_time(TimestampFormat::Rfc3339, t);
            assert_eq!(parse_rfc3339(text.as_bytes()), Some(t), "{text}");
        }
        assert_eq!(
            format_time(TimestampFormat::Rfc3339, 1_643_673_599),
            "2022-01-31T23:59:59Z"
        );
    }

    #[test]
    fn macs_of_each_algorithm() {
        // RFC 2202 §3 test case 2 (HMAC-SHA1) and RFC 4231 §4.3 test case 2 (HMAC-SHA512).
        assert_eq!(
            hex::encode(mac(
                Algorithm::Sha1,
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            hex::encode(mac(
                Algorithm::Sha512,
                b"Jefe",
                &[b"what do ya want for nothing?"]
            )),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
    }

    #[test]
    fn tags_in_every_encoding() {
        let t = mac(Algorithm::Sha1, b"k", &[b"m"]);
        for enc in [Encoding::Hex, Encoding::Base64, Encoding::Base64Url] {
            let text = encode(enc, &t);
            assert_eq!(
                decode_tag(enc, text.as_bytes(), 20),
                Some(t.clone()),
                "{text}"
            );
            assert_eq!(decode_tag(enc, text.as_bytes(), 32), None);
            assert_eq!(decode_tag(enc, &[b'a'; 300], 20), None);
        }
    }
}
