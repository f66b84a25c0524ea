//! What the fuzz targets share: the schemes under test, keys for them, every
//! header name a scheme reads, and secrets that need no environment or files.

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::arbitrary::Unstructured;

use hookgate::config::SecretSource;
use hookgate::config::secret::Secret;
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
];

fn generic(
    prefix: Option<&str>,
    encoding: Encoding,
    template: &str,
    timestamp: bool,
    id: Option<Locator>,
    event_type: Option<Locator>,
) -> Scheme {
    Scheme::Generic(Box::new(Generic {
        signature_header: HeaderName::from_static("x-sig"),
        signature_prefix: prefix.map(str::to_owned),
        encoding,
        signed_payload: template.to_owned(),
        timestamp_header: timestamp.then(|| HeaderName::from_static("x-ts")),
        event_id: id,
        event_type,
    }))
}

/// The built-in schemes and generic senders of each shape.
pub fn schemes() -> Vec<Scheme> {
    let header = |name: &'static str| Some(Locator::Header(HeaderName::from_static(name)));
    let pointer = |p: &str| Some(Locator::Pointer(p.to_owned()));
    vec![
        Scheme::Stripe,
        Scheme::Github,
        Scheme::Shopify,
        Scheme::Slack,
        Scheme::Standard,
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
            Encoding::Base64,
            "{body}",
            false,
            header("x-id"),
            pointer("/a/0/~1b"),
        ),
    ]
}

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

/// Up to 8 headers, names from [`HEADER_NAMES`], values arbitrary bytes
/// (values no HTTP parser would pass are dropped).
pub fn headers(u: &mut Unstructured<'_>) -> HeaderMap {
    let mut map = HeaderMap::new();
    let count = u.int_in_range(0..=8u8).unwrap_or(0);
    for _ in 0..count {
        let Ok(index) = u.choose_index(HEADER_NAMES.len()) else {
            break;
        };
        let Ok(value) = u.arbitrary::<&[u8]>() else {
            break;
        };
        if let Ok(value) = HeaderValue::from_bytes(value) {
            map.append(HeaderName::from_static(HEADER_NAMES[index]), value);
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
