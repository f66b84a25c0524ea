//! What the fuzz targets share: the schemes under test, keys for them, every
//! header name a scheme reads, and secrets that need no environment or files.

use std::sync::LazyLock;

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::arbitrary::Unstructured;

use hookgate::config::SecretSource;
use hookgate::secret::Secret;
use hookgate::scheme::{Encoding, Generic, Locator, Scheme};

/// Every header a built-in scheme or the generic ones below read.
pub const HEADER_NAMES: &[&str] = &[
    "stripe-signature",
    "x-hub-signature-256",
    "x-github-delivery",
    "x-github-event",
    "x-shopify-hmac-sha256",
    "shopify-hmac-sha256",
    "x-shopify-webhook-id",
    "shopify-webhook-id",
    "x-shopify-topic",
    "shopify-topic",
    "x-slack-signature",
    "x-slack-request-timestamp",
    "webhook-signature",
    "webhook-timestamp",
    "webhook-id",
    "svix-signature",
    "svix-timestamp",
    "svix-id",
    "x-sig",
    "x-ts",
    "x-id",
    "x-type",
    "x-twilio-signature",
    "i-twilio-idempotency-token",
    "x-twilio-email-event-webhook-signature",
    "x-twilio-email-event-webhook-timestamp",
    "x-signature-ed25519",
    "x-signature-timestamp",
];

fn generic(
    prefix: Option<&str>,
    encoding: Encoding,
    template: &str,
    timestamp: bool,
    id: Option<Locator>,
    event_type: Option<Locator>,
) -> Scheme {
    let mut generic = Generic::new(HeaderName::from_static("x-sig"), encoding);
    generic.signature_prefix = prefix.map(str::to_owned);
    generic.signed_payload = template.to_owned();
    generic.timestamp_header = timestamp.then(|| HeaderName::from_static("x-ts"));
    generic.event_id = id;
    generic.event_type = event_type;
    Scheme::Generic(Box::new(generic))
}

/// The last second every timestamp format can write (9999-12-31T23:59:59Z).
pub const MAX_TIME: i64 = 253_402_300_799;

/// The URL given to schemes that sign it.
pub const PUBLIC_URL: &str = "https://hooks.example.com/in?src=1";

/// Every scheme word hookgate knows (built-in, coded providers, the catalog),
/// then generic senders of several shapes.
pub fn schemes() -> Vec<Scheme> {
    let header = |name: &'static str| Some(Locator::Header(HeaderName::from_static(name)));
    let pointer = |p: &str| Some(Locator::Pointer(p.to_owned()));
    let mut out: Vec<Scheme> = Scheme::names()
        .filter_map(|name| Scheme::by_name(name, Some(PUBLIC_URL)))
        .collect();
    out.extend([
        generic(
            Some("sha256="),
            Encoding::Hex,
            "{id}.{timestamp}.{body}",
            true,
            header("x-id"),
            header("x-type"),
        ),
        generic(None, Encoding::Base64, "{body}", false, None, None),
        generic(
            Some("v1="),
            Encoding::Hex,
            "v1:{timestamp}:{body}",
            true,
            pointer("/id"),
            pointer("/type"),
        ),
        generic(
            None,
            Encoding::Base64Url,
            "{body}",
            false,
            header("x-id"),
            pointer("/a/0/~1b"),
        ),
    ]);
    out
}

/// [`schemes`], built once per process.
pub static SCHEMES: LazyLock<Vec<Scheme>> = LazyLock::new(schemes);

/// [`header_names`] of [`SCHEMES`], built once per process.
pub static NAMES: LazyLock<Vec<HeaderName>> = LazyLock::new(|| header_names(&SCHEMES));

/// [`keys`] of each of [`SCHEMES`], built once per process.
pub static KEYS: LazyLock<Vec<Vec<Secret>>> = LazyLock::new(|| SCHEMES.iter().map(keys).collect());

/// Two active keys for `scheme` (the second is the one tests sign with).
pub fn keys(scheme: &Scheme) -> Vec<Secret> {
    let raw: [&[u8]; 2] = match scheme {
        Scheme::Standard => [
            b"whsec_b2xkLWZ1enota2V5".as_slice(),
            b"whsec_ZnV6ei1rZXktMzItYnl0ZXMtbG9uZy0hISE=".as_slice(),
        ],
        _ => [b"old-fuzz-key".as_slice(), b"fuzz-key".as_slice()],
    };
    raw.iter()
        .filter_map(|r| scheme.prepare_key(&Secret::new(r.to_vec())).ok())
        .collect()
}

/// Every header name the schemes read: [`HEADER_NAMES`] plus each generic
/// sender's and catalog preset's own.
pub fn header_names(schemes: &[Scheme]) -> Vec<HeaderName> {
    let mut names: Vec<HeaderName> = HEADER_NAMES
        .iter()
        .map(|n| HeaderName::from_static(n))
        .collect();
    for scheme in schemes {
        if let Scheme::Generic(g) | Scheme::Preset { generic: g, .. } = scheme {
            names.push(g.signature_header.clone());
            names.extend(g.alternate_signature_headers.iter().cloned());
            names.extend(g.timestamp_header.iter().cloned());
            for locator in [&g.event_id, &g.event_type].into_iter().flatten() {
                if let Locator::Header(h) = locator {
                    names.push(h.clone());
                }
            }
        }
    }
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    names.dedup();
    names
}

/// Up to 8 headers, names from `names`, values arbitrary bytes (values no
/// HTTP parser would pass are dropped).
pub fn headers(u: &mut Unstructured<'_>, names: &[HeaderName]) -> HeaderMap {
    let mut map = HeaderMap::new();
    let count = u.int_in_range(0..=8u8).unwrap_or(0);
    for _ in 0..count {
        let Ok(index) = u.choose_index(names.len()) else {
            break;
        };
        let Ok(value) = u.arbitrary::<&[u8]>() else {
            break;
        };
        if let Ok(value) = HeaderValue::from_bytes(value) {
            map.append(names[index].clone(), value);
        }
    }
    map
}

/// `{ env }` and `{ file }` secrets resolve to a fixed value; nothing is read.
pub struct FixedSecrets;

impl SecretSource for FixedSecrets {
    fn env(&self, _name: &str) -> Option<String> {
        Some("fuzz-secret".to_owned())
    }
    fn file(&self, _path: &std::path::Path) -> std::io::Result<Vec<u8>> {
        Ok(b"fuzz-secret\n".to_vec())
    }
}

/// A TOML basic string holding `s`.
pub fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
