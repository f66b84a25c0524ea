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

/// Which placeholders a signed-payload template uses.
struct Placeholders {
    id: bool,
    timestamp: bool,
    url: bool,
}

fn parse_template(t: &str) -> Result<Placeholders, String> {
    let mut found = Placeholders {
        id: false,
        timestamp: false,
        url: false,
    };
    let mut bodies = 0;
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        if rest[i..].starts_with('}') {
            return Err(format!("\"{t}\" has a }} without a matching {{"));
        }
        let after = &rest[i + 1..];
        let Some(end) = after.find('}') else {
            return Err(format!("\"{t}\" has a {{ without a matching }}"));
        };
        match &after[..end] {
            "id" => found.id = true,
            "timestamp" => found.timestamp = true,
            "body" => bodies += 1,
            "url" => found.url = true,
            other => match other.strip_prefix("header:") {
                Some(name) if HeaderName::from_bytes(name.as_bytes()).is_ok() => {}
                Some(name) => {
                    return Err(format!(
                        "\"{t}\" uses {{header:{name}}}, but \"{name}\" is not a valid header name"
                    ));
                }
                None => {
                    return Err(format!(
                        "\"{t}\" uses {{{other}}}; only {{id}}, {{timestamp}}, {{body}}, {{url}} \
                         and {{header:Name}} are allowed"
                    ));
                }
            },
        }
        rest = &after[end + 1..];
    }
    match bodies {
        0 => Err(format!("\"{t}\" must contain {{body}}")),
        1 => Ok(found),
        _ => Err(format!("\"{t}\" contains {{body}} more than once")),
    }
}

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
        c.required(&g.encoding, table, &enc)
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
    let (signed_payload, placeholders) = match &g.signed_payload {
        None if c.poisoned.contains(&sp) => (None, None),
        Some(v) if is_token => {
            c.at(
                v,
                &sp,
                "does not apply: with algorithm = \"token\" the header carries the secret and nothing is signed",
            );
            (None, None)
        }
        None if is_token => (Some(String::new()), None),
        None => (
            Some(DEFAULT_SIGNED_PAYLOAD.to_owned()),
            Some(Placeholders {
                id: false,
                timestamp: false,
                url: false,
            }),
        ),
        Some(v) => match parse_template(v.get_ref()) {
            Ok(p) => (Some(v.get_ref().clone()), Some(p)),
            Err(m) => {
                c.at(v, &sp, m);
                (None, None)
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

    // A delimiter made of signature characters would cut every signature
    // apart: refuse it here rather than fail every request.
    if let (Some(v), Some(enc)) = (&g.signature_delimiter, encoding) {
        let in_alphabet = |ch: char| match enc {
            Encoding::Hex => ch.is_ascii_hexdigit(),
            Encoding::Base64 => ch.is_ascii_alphanumeric() || matches!(ch, '+' | '/' | '='),
            Encoding::Base64Url => ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '='),
        };
        if v.get_ref().chars().all(in_alphabet) && !v.get_ref().is_empty() {
            c.at(
                v,
                &field("signature_delimiter"),
                "is made of characters a signature itself uses; pick a separator such as \",\" or \" \"",
            );
        }
    }
    // Cross-checks between the list keys.
    if let (Some(v), None) = (&g.signature_key, &g.signature_delimiter) {
        c.at(
            v,
            &field("signature_key"),
            "needs signature_delimiter: a key=value list has several entries",
        );
    }
    if let Some(v) = &g.timestamp_key {
        if g.signature_key.is_none() {
            c.at(
                v,
                &field("timestamp_key"),
                "needs signature_key: the timestamp is an entry of a key=value list",
            );
        }
        if g.timestamp_header.is_some() {
            c.at(
                v,
                &field("timestamp_key"),
                "and timestamp_header both name the timestamp; keep one",
            );
        }
    }
    if is_token {
        for (v, k) in [
            (&g.timestamp_header, "timestamp_header"),
            (&g.timestamp_key, "timestamp_key"),
        ] {
            if let Some(v) = v {
                c.at(
                    v,
                    &field(k),
                    "does not apply: a token signs nothing, so no timestamp is signed",
                );
            }
        }
    }
    // Cross-checks between the template and where values come from.
    let has_ts_source = g.timestamp_header.is_some() || g.timestamp_key.is_some();
    let ts_poisoned = c.poisoned.contains(&th) || c.poisoned.contains(&field("timestamp_key"));
    if let Some(p) = &placeholders {
        let payload_span = g.signed_payload.as_ref().map(|v| v.span());
        if p.timestamp && !has_ts_source && !ts_poisoned {
            c.push(
                payload_span.clone(),
                &sp,
                "uses {timestamp} but neither generic.timestamp_header nor generic.timestamp_key is set",
            );
        }
        if !p.timestamp {
            for (v, k) in [
                (&g.timestamp_header, "timestamp_header"),
                (&g.timestamp_key, "timestamp_key"),
            ] {
                if let Some(v) = v {
                    c.at(
                        v,
                        &field(k),
                        "is set but signed_payload has no {timestamp}: an unsigned timestamp \
                         proves nothing, so it cannot bound replays",
                    );
                }
            }
        }
        if p.id {
            match &g.event_id {
                Some(v) if matches!(v.get_ref(), RawLocator::Pointer(_)) => c.at(
                    v,
                    &field("event_id"),
                    "{id} in signed_payload needs the id from a header: \
                     { header = \"…\" } (the body is only read after the signature is verified)",
                ),
                Some(_) => {}
                None if c.poisoned.contains(&field("event_id")) => {}
                None => c.push(
                    payload_span,
                    &sp,
                    "uses {id} but generic.event_id is not set; {id} needs \
                     event_id = { header = \"…\" }",
                ),
            }
        }
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
