//! Properties of every signature scheme, over many random inputs from a
//! seeded generator (so a failure repeats): what `sign` makes, `verify`
//! accepts, with the right id and key index; and any single-byte change to
//! the body, the signed timestamp, a signed id or the signature is refused.
//!
//! The only single-byte changes a scheme accepts are listed and asserted
//! too: the case of a hex digit (`A` and `a` are the same tag), and the event
//! id of senders that do not sign it (GitHub, Shopify, and a generic sender
//! whose template has no `{id}`). `docs/security.md` says what that means
//! for replays.

use http::{HeaderMap, HeaderName, HeaderValue};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use hookgate::scheme::{Encoding, Error, Generic, Locator, Scheme};
use hookgate::secret::Secret;

const SEED: u64 = 0x00c0_ffee_5eed;
/// Random requests per scheme; each is checked against several mutations.
const ROUNDS: usize = 500;
const TOLERANCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Where a scheme carries what it signs.
struct Case {
    name: &'static str,
    scheme: Scheme,
    signature: &'static str,
    /// Hex tags: the case of a digit does not change the tag.
    hex: bool,
    timestamp: Timestamp,
    /// A header carrying an id that is part of the signed bytes.
    signed_id: Option<&'static str>,
    /// A header carrying an id the signature does not cover.
    unsigned_id: Option<&'static str>,
    id: IdFrom,
}

enum Timestamp {
    None,
    /// `t=` inside the signature header (Stripe).
    InSignature,
    Header(&'static str),
}

/// Where `Verified::event_id` comes from.
enum IdFrom {
    Header,
    BodyId,
    BodyHash,
}

fn generic(prefix: Option<&str>, encoding: Encoding, template: &str, ts: bool, id: bool) -> Scheme {
    let mut generic = Generic::new(HeaderName::from_static("x-sig"), encoding);
    generic.signature_prefix = prefix.map(str::to_owned);
    generic.signed_payload = template.to_owned();
    generic.timestamp_header = ts.then(|| HeaderName::from_static("x-ts"));
    generic.event_id = id.then(|| Locator::Header(HeaderName::from_static("x-id")));
    Scheme::Generic(Box::new(generic))
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "stripe",
            scheme: Scheme::Stripe,
            signature: "stripe-signature",
            hex: true,
            timestamp: Timestamp::InSignature,
            signed_id: None,
            unsigned_id: None,
            id: IdFrom::BodyId,
        },
        Case {
            name: "github",
            scheme: Scheme::Github,
            signature: "x-hub-signature-256",
            hex: true,
            timestamp: Timestamp::None,
            signed_id: None,
            unsigned_id: Some("x-github-delivery"),
            id: IdFrom::Header,
        },
        Case {
            name: "shopify",
            scheme: Scheme::Shopify,
            signature: "x-shopify-hmac-sha256",
            hex: false,
            timestamp: Timestamp::None,
            signed_id: None,
            unsigned_id: Some("x-shopify-webhook-id"),
            id: IdFrom::Header,
        },
        Case {
            name: "slack",
            scheme: Scheme::Slack,
            signature: "x-slack-signature",
            hex: true,
            timestamp: Timestamp::Header("x-slack-request-timestamp"),
            signed_id: None,
            unsigned_id: None,
            id: IdFrom::BodyHash,
        },
        Case {
            name: "standard",
            scheme: Scheme::Standard,
            signature: "webhook-signature",
            hex: false,
            timestamp: Timestamp::Header("webhook-timestamp"),
            signed_id: Some("webhook-id"),
            unsigned_id: None,
            id: IdFrom::Header,
        },
        Case {
            name: "generic id.timestamp.body, hex, prefixed",
            scheme: generic(
                Some("sha256="),
                Encoding::Hex,
                "{id}.{timestamp}.{body}",
                true,
                true,
            ),
            signature: "x-sig",
            hex: true,
            timestamp: Timestamp::Header("x-ts"),
            signed_id: Some("x-id"),
            unsigned_id: None,
            id: IdFrom::Header,
        },
        Case {
            name: "generic body, base64, id unsigned",
            scheme: generic(None, Encoding::Base64, "{body}", false, true),
            signature: "x-sig",
            hex: false,
            timestamp: Timestamp::None,
            signed_id: None,
            unsigned_id: Some("x-id"),
            id: IdFrom::Header,
        },
        Case {
            name: "generic v1:timestamp:body, hex, no id",
            scheme: generic(
                Some("v1="),
                Encoding::Hex,
                "v1:{timestamp}:{body}",
                true,
                false,
            ),
            signature: "x-sig",
            hex: true,
            timestamp: Timestamp::Header("x-ts"),
            signed_id: None,
            unsigned_id: None,
            id: IdFrom::BodyHash,
        },
    ]
}

fn printable(rng: &mut StdRng, min: usize, max: usize) -> String {
    let len = rng.random_range(min..=max);
    (0..len)
        .map(|_| char::from(rng.random_range(0x21u8..=0x7e)))
        .collect()
}

fn secret(rng: &mut StdRng, scheme: &Scheme) -> Secret {
    let raw = match scheme {
        Scheme::Standard => {
            use base64::Engine;
            let len = rng.random_range(1..=64);
            let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            format!(
                "whsec_{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            )
        }
        _ => printable(rng, 1, 100),
    };
    scheme
        .prepare_key(&Secret::new(raw.into_bytes()))
        .unwrap_or_else(|e| panic!("a generated {} secret is unusable: {e}", scheme.name()))
}

fn body(rng: &mut StdRng, case: &Case, id: &str) -> Vec<u8> {
    match case.id {
        IdFrom::BodyId => {
            let pad = printable(rng, 0, 300);
            serde_json::to_vec(&serde_json::json!({ "id": id, "type": "t", "pad": pad }))
                .expect("JSON")
        }
        _ => {
            let len = rng.random_range(1..=1024);
            (0..len).map(|_| rng.random()).collect()
        }
    }
}

fn header_map(pairs: Vec<(String, String)>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("signed header name"),
            HeaderValue::from_str(&value).expect("signed header value"),
        );
    }
    map
}

/// `headers` with one byte of `name`'s value at `range` replaced, or `None`
/// when the new value could not travel in an HTTP header, or when it is the
/// same tag written in another case.
fn with_byte_changed(
    rng: &mut StdRng,
    headers: &HeaderMap,
    name: &str,
    range: std::ops::Range<usize>,
    hex: bool,
) -> Option<(HeaderMap, Vec<u8>)> {
    let mut value = headers.get(name)?.as_bytes().to_vec();
    if range.is_empty() {
        return None;
    }
    let at = rng.random_range(range);
    let old = value[at];
    let new: u8 = rng.random();
    if new == old || (hex && old.is_ascii_alphanumeric() && new.eq_ignore_ascii_case(&old)) {
        return None;
    }
    value[at] = new;
    let value_header = HeaderValue::from_bytes(&value).ok()?;
    let mut changed = headers.clone();
    changed.insert(
        HeaderName::from_bytes(name.as_bytes()).expect("header name"),
        value_header,
    );
    Some((changed, value))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn sign_then_verify_round_trips_and_every_single_byte_change_is_refused() {
    let mut rng = StdRng::seed_from_u64(SEED);
    for case in cases() {
        let mut refused = [0usize; 4];
        for round in 0..ROUNDS {
            let what = format!("{} round {round}", case.name);
            let key = secret(&mut rng, &case.scheme);
            let other = secret(&mut rng, &case.scheme);
            let id = printable(&mut rng, 1, 40);
            let body = body(&mut rng, &case, &id);
            let ts: i64 = rng.random_range(1_000_000_000..4_000_000_000);
            let now = ts + rng.random_range(-300..=300);
            let signed = case.scheme.sign(&key, &body, Some(&id), ts);
            let headers = header_map(signed.expect("an HMAC scheme signs"));
            // The matching key may be first or second.
            let (keys, index) = if rng.random_bool(0.5) {
                (vec![key.clone(), other], 0)
            } else {
                (vec![other, key.clone()], 1)
            };

            let verified = case
                .scheme
                .verify(&keys, TOLERANCE, &headers, &body, now)
                .unwrap_or_else(|e| panic!("{what}: a signed request is refused: {e:?}"));
            assert_eq!(verified.secret_index, index, "{what}");
            let expected_id = match case.id {
                IdFrom::Header | IdFrom::BodyId => id.clone(),
                IdFrom::BodyHash => sha256_hex(&body),
            };
            assert_eq!(verified.event_id, expected_id, "{what}");
            let signs_ts = !matches!(case.timestamp, Timestamp::None);
            assert_eq!(verified.timestamp, signs_ts.then_some(ts), "{what}");

            // Body: one byte changed, or one removed.
            let mut changed = body.clone();
            let at = rng.random_range(0..changed.len());
            changed[at] ^= rng.random_range(1..=255u8);
            let mut shorter = body.clone();
            shorter.remove(rng.random_range(0..body.len()));
            for tampered in [&changed, &shorter] {
                assert_eq!(
                    case.scheme
                        .verify(&keys, TOLERANCE, &headers, tampered, now),
                    Err(Error::InvalidSignature),
                    "{what}: tampered body"
                );
            }
            refused[0] += 2;

            // The signature header: any byte of it.
            let len = headers[case.signature].len();
            if let Some((tampered, value)) =
                with_byte_changed(&mut rng, &headers, case.signature, 0..len, case.hex)
            {
                let got = case.scheme.verify(&keys, TOLERANCE, &tampered, &body, now);
                assert!(
                    got.is_err(),
                    "{what}: signature header {:?} accepted",
                    String::from_utf8_lossy(&value)
                );
                refused[1] += 1;
            }

            // The signed timestamp's digits.
            let ts_at = match case.timestamp {
                Timestamp::None => None,
                Timestamp::InSignature => Some((case.signature, 2..2 + ts.to_string().len())),
                Timestamp::Header(name) => Some((name, 0..headers[name].len())),
            };
            if let Some((name, range)) = ts_at
                && let Some((tampered, value)) =
                    with_byte_changed(&mut rng, &headers, name, range, false)
            {
                let got = case.scheme.verify(&keys, TOLERANCE, &tampered, &body, now);
                assert!(
                    got.is_err(),
                    "{what}: timestamp in {name} {:?} accepted",
                    String::from_utf8_lossy(&value)
                );
                refused[2] += 1;
            }

            // A signed id.
            if let Some(name) = case.signed_id {
                let len = headers[name].len();
                if let Some((tampered, value)) =
                    with_byte_changed(&mut rng, &headers, name, 0..len, false)
                {
                    assert_eq!(
                        case.scheme.verify(&keys, TOLERANCE, &tampered, &body, now),
                        Err(Error::InvalidSignature),
                        "{what}: signed id {:?} accepted",
                        String::from_utf8_lossy(&value)
                    );
                    refused[3] += 1;
                }
            }

            // An unsigned id: accepted as the new id (documented).
            if let Some(name) = case.unsigned_id {
                let new_id = format!("{id}-x");
                let mut changed = headers.clone();
                changed.insert(
                    HeaderName::from_bytes(name.as_bytes()).expect("name"),
                    HeaderValue::from_str(&new_id).expect("value"),
                );
                let got = case
                    .scheme
                    .verify(&keys, TOLERANCE, &changed, &body, now)
                    .unwrap_or_else(|e| panic!("{what}: unsigned id change refused: {e:?}"));
                assert_eq!(got.event_id, new_id, "{what}");
            }
        }
        // Enough of each kind of change was actually tried.
        assert!(refused[0] == 2 * ROUNDS, "{}: {refused:?}", case.name);
        assert!(refused[1] > ROUNDS / 2, "{}: {refused:?}", case.name);
        if !matches!(case.timestamp, Timestamp::None) {
            assert!(refused[2] > ROUNDS / 2, "{}: {refused:?}", case.name);
        }
        if case.signed_id.is_some() {
            assert!(refused[3] > ROUNDS / 2, "{}: {refused:?}", case.name);
        }
    }
}

#[test]
fn the_case_of_a_hex_digit_does_not_change_a_tag() {
    let key = Secret::new(b"k".to_vec());
    let body = b"{}";
    let headers = header_map(
        Scheme::Github
            .sign(&key, body, Some("d"), 0)
            .expect("signs"),
    );
    let upper = headers["x-hub-signature-256"]
        .to_str()
        .expect("ASCII")
        .replace("sha256=", "")
        .to_ascii_uppercase();
    let mut changed = headers.clone();
    changed.insert(
        "x-hub-signature-256",
        HeaderValue::from_str(&format!("sha256={upper}")).expect("value"),
    );
    assert!(
        Scheme::Github
            .verify(&[key], TOLERANCE, &changed, body, 0)
            .is_ok()
    );
}

/// A JSON body carrying `value` at each RFC 6901 `pointer` (objects all the
/// way down, arrays where a segment is a number), plus random padding.
fn body_with(pointers: &[(&str, &str)], pad: String) -> Vec<u8> {
    use serde_json::{Map, Value};
    let mut root = Value::Object(Map::new());
    for (pointer, value) in pointers {
        let mut at = &mut root;
        let segments: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        for (i, segment) in segments.iter().enumerate() {
            let leaf = i + 1 == segments.len();
            let next = if leaf {
                Value::String((*value).to_owned())
            } else {
                Value::Object(Map::new())
            };
            at = match at {
                Value::Object(map) => map.entry(segment.clone()).or_insert(next),
                Value::Array(items) => {
                    let index: usize = segment.parse().unwrap_or(0).min(8);
                    while items.len() <= index {
                        items.push(Value::Null);
                    }
                    if items[index].is_null() {
                        items[index] = next;
                    }
                    &mut items[index]
                }
                _ => break,
            };
        }
    }
    if let Value::Object(map) = &mut root {
        map.insert("pad".to_owned(), Value::String(pad));
    }
    serde_json::to_vec(&root).expect("JSON")
}

/// Every provider of the catalog that signs with a shared secret: what `sign`
/// makes, `verify` accepts, and a byte changed in the body, the signature
/// header, the signed timestamp header or a signed id header is refused.
#[test]
fn every_catalog_provider_round_trips_and_refuses_tampering() {
    use base64::Engine;
    use hookgate::scheme::SecretEncoding;

    let mut rng = StdRng::seed_from_u64(SEED ^ 0x0ca7);
    let url = "https://hooks.example.com/in?src=1";
    let mut covered = Vec::new();
    for name in Scheme::names() {
        let Some(scheme) = Scheme::by_name(name, Some(url)) else {
            panic!("{name} is listed but not known");
        };
        let Scheme::Preset { generic, .. } = &scheme else {
            // The core five and the coded providers have their own cases above
            // or their own tests (public-key schemes cannot be signed here).
            continue;
        };
        if scheme
            .sign(&Secret::new(b"k".to_vec()), b"{}", None, 0)
            .is_err()
        {
            continue; // a token scheme: the header is the secret itself
        }
        covered.push(name);
        let pointer = |l: &Option<Locator>| match l {
            Some(Locator::Pointer(p)) => Some(p.clone()),
            _ => None,
        };
        let id_pointer = pointer(&generic.event_id);
        let type_pointer = pointer(&generic.event_type);
        let signed_id = match &generic.event_id {
            Some(Locator::Header(h)) if generic.signed_payload.contains("{id}") => {
                Some(h.as_str().to_owned())
            }
            _ => None,
        };
        let timestamp_header = generic
            .timestamp_header
            .as_ref()
            .map(|h| h.as_str().to_owned());
        let hex = generic.encoding == Encoding::Hex;
        let signature = generic.signature_header.as_str().to_owned();

        for round in 0..100 {
            let what = format!("{name} round {round}");
            let len = rng.random_range(8..=48);
            let raw: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let encoded = match generic.secret_encoding {
                SecretEncoding::Raw => printable(&mut rng, 8, 48),
                SecretEncoding::Base64 => base64::engine::general_purpose::STANDARD.encode(&raw),
                SecretEncoding::Hex => hex::encode(&raw),
            };
            let secret_text = format!(
                "{}{encoded}",
                generic.secret_prefix.as_deref().unwrap_or("")
            );
            let key = scheme
                .prepare_key(&Secret::new(secret_text.into_bytes()))
                .unwrap_or_else(|e| panic!("{what}: generated secret refused: {e}"));
            let id = printable(&mut rng, 1, 30);
            let mut fields: Vec<(&str, &str)> = Vec::new();
            if let Some(p) = &id_pointer {
                fields.push((p, &id));
            }
            if let Some(p) = &type_pointer {
                fields.push((p, "thing.happened"));
            }
            let body = body_with(&fields, printable(&mut rng, 0, 200));
            let ts: i64 = 1_700_000_000 + rng.random_range(0..100_000_000);
            let headers = header_map(
                scheme
                    .sign(&key, &body, Some(&id), ts)
                    .unwrap_or_else(|e| panic!("{what}: {e}")),
            );
            let keys = [key];
            let tolerance = std::time::Duration::from_secs(300);
            let verified = scheme
                .verify(&keys, tolerance, &headers, &body, ts)
                .unwrap_or_else(|e| panic!("{what}: a signed request is refused: {e:?}"));
            if id_pointer.is_some() || signed_id.is_some() {
                assert_eq!(verified.event_id, id, "{what}");
            }

            let mut changed = body.clone();
            let at = rng.random_range(0..changed.len());
            changed[at] ^= rng.random_range(1..=255u8);
            assert!(
                scheme
                    .verify(&keys, tolerance, &headers, &changed, ts)
                    .is_err(),
                "{what}: a changed body is accepted"
            );
            let mut names = vec![(signature.clone(), hex)];
            names.extend(timestamp_header.iter().map(|h| (h.clone(), false)));
            names.extend(signed_id.iter().map(|h| (h.clone(), false)));
            for (header, hex) in names {
                let len = headers.get(&header).map_or(0, |v| v.len());
                if let Some((tampered, value)) =
                    with_byte_changed(&mut rng, &headers, &header, 0..len, hex)
                {
                    assert!(
                        scheme
                            .verify(&keys, tolerance, &tampered, &body, ts)
                            .is_err(),
                        "{what}: {header}: {:?} accepted",
                        String::from_utf8_lossy(&value)
                    );
                }
            }
        }
    }
    println!("catalog providers covered: {} {covered:?}", covered.len());
    assert!(
        covered.len() >= 40,
        "catalog providers covered: {covered:?}"
    );
}
