//! `[source.generic]`: a sender described by a table, read into a
//! [`Generic`] with every problem located.

use http::HeaderName;
use toml::Spanned;

use super::check::{Check, pointer_problem};
use super::raw::{RawGeneric, RawLocator};
use crate::scheme::{
    Algorithm, Encoding, Generic, Labels, Locator, SecretEncoding, TimestampFormat,
};

const DEFAULT_SIGNED_PAYLOAD: &str = "{body}";

/// A string key that may be absent but, when given, must not be empty.
fn non_empty(
    c: &mut Check<'_>,
    v: Option<&Spanned<String>>,
    field: &str,
) -> Option<Option<String>> {
    match v {
        None => Some(None),
        Some(v) if v.get_ref().is_empty() => {
            c.at(v, field, "is empty; leave it out instead");
            None
        }
        Some(v) => Some(Some(v.get_ref().clone())),
    }
}

pub(super) fn build_generic(
    c: &mut Check<'_>,
    label: &str,
    raw: &Spanned<RawGeneric>,
) -> Option<Generic> {
    let g = raw.get_ref();
    let table = Some(raw.span());
    let field = |k: &str| format!("{label}.generic.{k}");

    let sh = field("signature_header");
    let signature_header = c
        .required(&g.signature_header, table.clone(), &sh)
        .and_then(|v| c.header_name(v, &sh));
    let ah = field("alternate_signature_headers");
    let alternates = match &g.alternate_signature_headers {
        None => Some(Vec::new()),
        Some(list) => {
            let names: Vec<Option<HeaderName>> = list
                .get_ref()
                .iter()
                .enumerate()
                .map(|(j, v)| c.header_name(v, &format!("{ah}[{j}]")))
                .collect();
            names.into_iter().collect::<Option<Vec<_>>>()
        }
    };
    let signature_prefix = g
        .signature_prefix
        .as_ref()
        .map(|p| p.get_ref().clone())
        .filter(|p| !p.is_empty());
    let delimiter = non_empty(
        c,
        g.signature_delimiter.as_ref(),
        &field("signature_delimiter"),
    );
    let signature_key = non_empty(c, g.signature_key.as_ref(), &field("signature_key"));
    let timestamp_key = non_empty(c, g.timestamp_key.as_ref(), &field("timestamp_key"));
    let secret_prefix = g
        .secret_prefix
        .as_ref()
        .map(|p| p.get_ref().clone())
        .filter(|p| !p.is_empty());

    let alg = field("algorithm");
    let algorithm = c.word(
        g.algorithm.as_ref(),
        &alg,
        &[
            ("sha1", Algorithm::Sha1),
            ("sha256", Algorithm::Sha256),
            ("sha512", Algorithm::Sha512),
            ("token", Algorithm::Token),
        ],
        Some(Algorithm::Sha256),
    );
    let is_token = algorithm == Some(Algorithm::Token);
    let enc = field("encoding");
    let encodings = [
        ("hex", Encoding::Hex),
        ("base64", Encoding::Base64),
        ("base64url", Encoding::Base64Url),
    ];
    let encoding = if is_token {
        c.word(g.encoding.as_ref(), &enc, &encodings, Some(Encoding::Hex))
    } else {
        c.required(&g.encoding, table.clone(), &enc)
            .and_then(|v| c.word(Some(v), &enc, &encodings, None))
    };
    let timestamp_format = c.word(
        g.timestamp_format.as_ref(),
        &field("timestamp_format"),
        &[
            ("seconds", TimestampFormat::Seconds),
            ("milliseconds", TimestampFormat::Milliseconds),
            ("rfc3339", TimestampFormat::Rfc3339),
        ],
        Some(TimestampFormat::Seconds),
    );
    let secret_encoding = c.word(
        g.secret_encoding.as_ref(),
        &field("secret_encoding"),
        &[
            ("raw", SecretEncoding::Raw),
            ("base64", SecretEncoding::Base64),
            ("hex", SecretEncoding::Hex),
        ],
        Some(SecretEncoding::Raw),
    );
    let sp = field("signed_payload");
    let signed_payload = match &g.signed_payload {
        None if c.poisoned.contains(&sp) => None,
        Some(v) if is_token => {
            c.at(
                v,
                &sp,
                "does not apply: with algorithm = \"token\" the header carries the secret and nothing is signed",
            );
            None
        }
        None if is_token => Some(String::new()),
        None => Some(DEFAULT_SIGNED_PAYLOAD.to_owned()),
        Some(v) => match Generic::parse_template(v.get_ref()) {
            Ok(_) => Some(v.get_ref().clone()),
            Err(m) => {
                c.at(v, &sp, m);
                None
            }
        },
    };
    let th = field("timestamp_header");
    let timestamp_header = match &g.timestamp_header {
        None => Some(None),
        Some(v) => c.header_name(v, &th).map(Some),
    };
    let event_id = locator(c, g.event_id.as_ref(), &field("event_id"));
    let event_type = locator(c, g.event_type.as_ref(), &field("event_type"));

    // The shape rules are the scheme's own (`Generic::flaws`, which presets
    // pass too). They read the table as far as it could be read; each
    // problem is put on the key at fault.
    let mut unknown = Vec::new();
    if encoding.is_none() {
        unknown.push("encoding");
    }
    for key in ["timestamp_header", "timestamp_key"] {
        if c.poisoned.contains(&field(key)) {
            unknown.push(key);
        }
    }
    if g.signed_payload.is_none() && c.poisoned.contains(&sp) {
        unknown.push("signed_payload");
    }
    let seen_event_id = match g.event_id.as_ref().map(Spanned::get_ref) {
        None => {
            if c.poisoned.contains(&field("event_id")) {
                unknown.push("event_id");
            }
            None
        }
        Some(RawLocator::Pointer(p)) => Some(Locator::Pointer(p.clone())),
        Some(_) => match &event_id {
            Some(Some(l)) => Some(l.clone()),
            _ => {
                unknown.push("event_id");
                None
            }
        },
    };
    let seen = Generic {
        signature_delimiter: g.signature_delimiter.as_ref().map(|v| v.get_ref().clone()),
        signature_key: g.signature_key.as_ref().map(|v| v.get_ref().clone()),
        timestamp_key: g.timestamp_key.as_ref().map(|v| v.get_ref().clone()),
        // The rules ask only whether a timestamp header is named; one whose
        // name was refused above still is.
        timestamp_header: g
            .timestamp_header
            .as_ref()
            .map(|_| match &timestamp_header {
                Some(Some(h)) => h.clone(),
                _ => HeaderName::from_static("timestamp"),
            }),
        // An unknown algorithm is read as HMAC, as `encoding` is above.
        algorithm: algorithm.unwrap_or(Algorithm::Sha256),
        encoding: encoding.unwrap_or(Encoding::Hex),
        signed_payload: g
            .signed_payload
            .as_ref()
            .map_or(DEFAULT_SIGNED_PAYLOAD, |v| v.get_ref())
            .to_owned(),
        event_id: seen_event_id,
        ..Generic::new(HeaderName::from_static("signature"), Encoding::Hex)
    };
    for (key, message) in seen.flaws(&unknown) {
        let span = match key {
            "signature_delimiter" => g.signature_delimiter.as_ref().map(Spanned::span),
            "signature_key" => g.signature_key.as_ref().map(Spanned::span),
            "timestamp_key" => g.timestamp_key.as_ref().map(Spanned::span),
            "timestamp_header" => g.timestamp_header.as_ref().map(Spanned::span),
            "signed_payload" => g.signed_payload.as_ref().map(Spanned::span),
            "event_id" => g.event_id.as_ref().map(Spanned::span),
            _ => table.clone(),
        };
        c.push(span, &field(key), message);
    }

    Some(Generic {
        signature_header: signature_header?,
        alternate_signature_headers: alternates?,
        signature_prefix,
        signature_delimiter: delimiter?,
        signature_key: signature_key?,
        encoding: encoding?,
        algorithm: algorithm?,
        signed_payload: signed_payload?,
        timestamp_header: timestamp_header?,
        timestamp_key: timestamp_key?,
        timestamp_format: timestamp_format?,
        secret_encoding: secret_encoding?,
        secret_prefix,
        public_url: None,
        event_id: event_id?,
        event_type: event_type?,
        labels: Labels::CONFIG,
    })
}

/// An optional `{ header = … }` / `{ pointer = … }`; outer `None` = invalid.
fn locator(
    c: &mut Check<'_>,
    value: Option<&Spanned<RawLocator>>,
    field: &str,
) -> Option<Option<Locator>> {
    let Some(v) = value else {
        return Some(None);
    };
    match v.get_ref() {
        RawLocator::Header(h) => match HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) => Some(Some(Locator::Header(name))),
            Err(_) => {
                c.at(v, field, format!("\"{h}\" is not a valid HTTP header name"));
                None
            }
        },
        RawLocator::Pointer(p) => match pointer_problem(p) {
            None => Some(Some(Locator::Pointer(p.clone()))),
            Some(m) => {
                c.at(v, field, m);
                None
            }
        },
        RawLocator::Invalid(m) => {
            c.at(v, field, *m);
            None
        }
    }
}
