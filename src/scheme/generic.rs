//! Generic: a sender described by a table — in `[source.generic]`, or as a
//! catalog preset. One engine covers what real senders do:
//!
//! - the signature in one header (or several: Box's primary and secondary),
//!   optionally prefixed (`sha256=`), in hex, base64 or base64url; several
//!   entries in one header split by a delimiter (`v1,… v1,…`), or a
//!   `key=value` list that also carries the timestamp (`t=…,v1=…`);
//! - HMAC-SHA1/256/512, or a shared token compared as is;
//! - signed bytes from a template over `{id}`, `{timestamp}`, `{body}`,
//!   `{url}` (the configured public URL) and `{header:Name}`;
//! - a timestamp in seconds, milliseconds or RFC 3339, from a header or the
//!   signature list, bringing the replay window;
//! - secrets used raw, or base64/hex-decoded after an optional prefix;
//! - the event id and type from a header or a JSON pointer.
//!
//! Choices where the description leaves room, so operators can predict them:
//!
//! - The template is read literally except for the placeholders; any other
//!   `{…}` is signed as written. The body is fed to the MAC in place, byte for
//!   byte, whatever its encoding.
//! - `{id}` is rendered from the `event_id` header (the id must be known
//!   before the signature is checked, and the body is not read until then);
//!   `{timestamp}` and `{header:…}` are the header text exactly as sent. A
//!   request lacking one the template needs is `MalformedSignature`.
//! - With a delimiter or a key list, entries that are not signatures (other
//!   versions, other keys, undecodable values) are skipped as long as one
//!   usable signature remains — the leniency of the senders' own libraries.
//!   A single-valued header with the wrong prefix or encoding is malformed.
//! - `event_id` absent: the id is the SHA-256 of the body. `event_id`
//!   configured but the request carries no usable value there:
//!   `MalformedBody` — the operator said where the id lives; quietly keying
//!   the nonce on something else could let a retry through as a new event.
//! - `event_type` is optional: wherever it is missing (or not a string) the
//!   type is none.

use std::time::Duration;

use http::{HeaderMap, HeaderName};

use sha2::{Digest as _, Sha256};

use super::hmac;
use super::json::{self, Field, json_fields};
use super::provider::{Delivery, Provider, Signing};
use super::{Algorithm, Encoding, Error, Generic, Locator, SecretEncoding, Verified};
use crate::secret::Secret;

/// Longest signature header value considered; longer ones are malformed
/// (a sender rotating a few keys stays far below it).
const MAX_SIGNATURE_VALUE: usize = 8 * 1024;

/// One piece of the `signed_payload` template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'t> {
    Text(&'t [u8]),
    Id,
    Timestamp,
    Body,
    Url,
    /// `{header:Name}`: the named header's value as sent.
    Header(&'t str),
}

const PLACEHOLDERS: [(&[u8], Piece<'static>); 4] = [
    (b"{id}", Piece::Id),
    (b"{timestamp}", Piece::Timestamp),
    (b"{body}", Piece::Body),
    (b"{url}", Piece::Url),
];

/// `{header:Name}` at the start of `bytes`: the name and the length taken.
fn header_placeholder(bytes: &[u8]) -> Option<(&str, usize)> {
    let rest = bytes.strip_prefix(b"{header:")?;
    let end = rest.iter().position(|&b| b == b'}')?;
    let name = std::str::from_utf8(&rest[..end]).ok()?;
    HeaderName::from_bytes(name.as_bytes()).ok()?;
    Some((name, b"{header:".len() + end + 1))
}

/// Splits the template into literal text and placeholders. Works on bytes so
/// a template with non-ASCII text can't be sliced inside a character.
pub(crate) fn pieces(template: &str) -> Vec<Piece<'_>> {
    let bytes = template.as_bytes();
    let mut out = Vec::new();
    let (mut literal_start, mut i) = (0, 0);
    while i < bytes.len() {
        let found = PLACEHOLDERS
            .iter()
            .find(|(name, _)| bytes[i..].starts_with(name))
            .map(|(name, piece)| (*piece, name.len()))
            .or_else(|| header_placeholder(&bytes[i..]).map(|(n, len)| (Piece::Header(n), len)));
        match found {
            Some((piece, len)) => {
                if literal_start < i {
                    out.push(Piece::Text(&bytes[literal_start..i]));
                }
                out.push(piece);
                i += len;
                literal_start = i;
            }
            None => i += 1,
        }
    }
    if literal_start < bytes.len() {
        out.push(Piece::Text(&bytes[literal_start..]));
    }
    out
}

fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a [u8]> {
    headers.get(name).map(|v| v.as_bytes())
}

/// Which placeholders a valid signed-payload template uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placeholders {
    pub id: bool,
    pub timestamp: bool,
    pub url: bool,
}

impl Encoding {
    /// Whether a signature in this encoding may contain `ch`.
    fn alphabet_has(self, ch: char) -> bool {
        match self {
            Encoding::Hex => ch.is_ascii_hexdigit(),
            Encoding::Base64 => ch.is_ascii_alphanumeric() || matches!(ch, '+' | '/' | '='),
            Encoding::Base64Url => ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '='),
        }
    }
}

/// What the signature header(s) of a request hold.
struct Parsed<'a> {
    candidates: Vec<Vec<u8>>,
    /// The timestamp entry of a key list, as sent.
    list_timestamp: Option<&'a [u8]>,
}

impl Generic {
    /// Whether the template signs the public URL.
    pub(crate) fn uses_url(&self) -> bool {
        pieces(&self.signed_payload).contains(&Piece::Url)
    }

    /// Problems that would make every request to this sender fail, or make
    /// its signature meaningless: the template's syntax, then the shape rules
    /// of [`Generic::flaws`], then `{url}` without a public URL (which config
    /// checks on the source, where `public_url` is). Presets are checked with
    /// it by the catalog's tests.
    pub fn validate(&self) -> Result<(), String> {
        if self.algorithm != Algorithm::Token {
            let placeholders = Generic::parse_template(&self.signed_payload)?;
            if placeholders.url && self.public_url.is_none() {
                return Err("signed_payload uses {url}, which needs public_url".into());
            }
        }
        match self.flaws(&[]).first() {
            Some((key, message)) => Err(format!("{key}: {message}")),
            None => Ok(()),
        }
    }

    /// The `signed_payload` rules: `{body}` exactly once, no other
    /// placeholder than `{id}`, `{timestamp}`, `{url}` and `{header:Name}`,
    /// and no stray brace. Stricter than `pieces`, which signs whatever it
    /// does not recognise as written.
    pub fn parse_template(t: &str) -> Result<Placeholders, String> {
        let mut found = Placeholders::default();
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

    /// The shape rules: every way the parts of this description contradict
    /// each other, as `(key, message)` with the `[source.generic]` key at
    /// fault, in a fixed order. One rule set for `[source.generic]` and for
    /// presets ([`Generic::validate`]).
    ///
    /// `unknown` names keys whose value could not be read (reported where it
    /// was read): no rule speaks about them. An invalid `signed_payload` is
    /// unknown too; its syntax is [`Generic::parse_template`]'s to report.
    pub fn flaws(&self, unknown: &[&str]) -> Vec<(&'static str, &'static str)> {
        let known = |key: &str| !unknown.contains(&key);
        let mut out = Vec::new();
        // A delimiter made of signature characters would cut every signature
        // apart: refuse it rather than fail every request.
        if let Some(d) = &self.signature_delimiter
            && known("encoding")
            && !d.is_empty()
            && d.chars().all(|ch| self.encoding.alphabet_has(ch))
        {
            out.push((
                "signature_delimiter",
                "is made of characters a signature itself uses; pick a separator such as \",\" or \" \"",
            ));
        }
        // Between the list keys.
        if self.signature_key.is_some() && self.signature_delimiter.is_none() {
            out.push((
                "signature_key",
                "needs signature_delimiter: a key=value list has several entries",
            ));
        }
        if self.timestamp_key.is_some() {
            if self.signature_key.is_none() {
                out.push((
                    "timestamp_key",
                    "needs signature_key: the timestamp is an entry of a key=value list",
                ));
            }
            if self.timestamp_header.is_some() {
                out.push((
                    "timestamp_key",
                    "and timestamp_header both name the timestamp; keep one",
                ));
            }
        }
        let timestamps = [
            ("timestamp_header", self.timestamp_header.is_some()),
            ("timestamp_key", self.timestamp_key.is_some()),
        ];
        if self.algorithm == Algorithm::Token {
            for (key, _) in timestamps.into_iter().filter(|(_, set)| *set) {
                out.push((
                    key,
                    "does not apply: a token signs nothing, so no timestamp is signed",
                ));
            }
            return out;
        }
        // Between the template and where its values come from.
        if !known("signed_payload") {
            return out;
        }
        let Ok(p) = Generic::parse_template(&self.signed_payload) else {
            return out;
        };
        let has_timestamp = timestamps.iter().any(|(_, set)| *set);
        if p.timestamp && !has_timestamp && known("timestamp_header") && known("timestamp_key") {
            out.push((
                "signed_payload",
                "uses {timestamp} but neither generic.timestamp_header nor generic.timestamp_key is set",
            ));
        }
        if !p.timestamp {
            for (key, _) in timestamps.into_iter().filter(|(_, set)| *set) {
                out.push((
                    key,
                    "is set but signed_payload has no {timestamp}: an unsigned timestamp \
                     proves nothing, so it cannot bound replays",
                ));
            }
        }
        if p.id && known("event_id") {
            match &self.event_id {
                Some(Locator::Pointer(_)) => out.push((
                    "event_id",
                    "{id} in signed_payload needs the id from a header: \
                     { header = \"…\" } (the body is only read after the signature is verified)",
                )),
                Some(Locator::Header(_)) => {}
                None => out.push((
                    "signed_payload",
                    "uses {id} but generic.event_id is not set; {id} needs \
                     event_id = { header = \"…\" }",
                )),
            }
        }
        out
    }

    /// The key bytes for a configured secret: the prefix stripped when
    /// present, then decoded. Errors describe the shape, never the value.
    pub(crate) fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        let raw = secret.expose();
        let raw = match &self.secret_prefix {
            Some(prefix) => raw.strip_prefix(prefix.as_bytes()).unwrap_or(raw),
            None => raw,
        };
        let key = match self.secret_encoding {
            SecretEncoding::Raw => raw.to_vec(),
            SecretEncoding::Base64 => {
                hmac::decode_base64_any(raw).ok_or_else(|| self.shape("is not base64"))?
            }
            SecretEncoding::Hex => hex::decode(raw).map_err(|_| self.shape("is not hex"))?,
        };
        if key.is_empty() {
            return Err("secret is empty".to_owned());
        }
        Ok(Secret::new(key))
    }

    fn shape(&self, what: &str) -> String {
        match &self.secret_prefix {
            Some(p) => format!("secret {what} (after an optional {p} prefix)"),
            None => format!("secret {what}"),
        }
    }

    /// Candidates from every signature header present.
    fn parse<'a>(&self, headers: &'a HeaderMap) -> Result<Parsed<'a>, Error> {
        let malformed = Error::MalformedSignature(self.labels.signature);
        let values: Vec<&[u8]> = std::iter::once(&self.signature_header)
            .chain(&self.alternate_signature_headers)
            .filter_map(|name| header(headers, name))
            .collect();
        if values.is_empty() {
            return Err(Error::MissingSignature(self.labels.signature));
        }
        let mut parsed = Parsed {
            candidates: Vec::new(),
            list_timestamp: None,
        };
        for value in values {
            if value.len() > MAX_SIGNATURE_VALUE {
                return Err(malformed);
            }
            match &self.signature_delimiter {
                None => {
                    let sig = self.strip(value).ok_or(malformed.clone())?;
                    parsed
                        .candidates
                        .push(self.decode(sig).ok_or(malformed.clone())?);
                }
                Some(delimiter) => self.parse_list(value, delimiter, &mut parsed)?,
            }
        }
        if parsed.candidates.is_empty() {
            return Err(malformed);
        }
        Ok(parsed)
    }

    fn parse_list<'a>(
        &self,
        value: &'a [u8],
        delimiter: &str,
        parsed: &mut Parsed<'a>,
    ) -> Result<(), Error> {
        let entries = split(value, delimiter.as_bytes())
            .into_iter()
            .map(<[u8]>::trim_ascii)
            .filter(|e| !e.is_empty());
        for entry in entries {
            let sig = match &self.signature_key {
                None => self.strip(entry),
                Some(sig_key) => {
                    let Some(eq) = entry.iter().position(|&b| b == b'=') else {
                        continue;
                    };
                    let (k, v) = (entry[..eq].trim_ascii(), entry[eq + 1..].trim_ascii());
                    if self.timestamp_key.as_deref().map(str::as_bytes) == Some(k) {
                        // Two timestamps would make it ambiguous which was signed.
                        if parsed.list_timestamp.replace(v).is_some() {
                            return Err(Error::MalformedSignature(self.labels.signature));
                        }
                        continue;
                    }
                    (k == sig_key.as_bytes())
                        .then_some(v)
                        .and_then(|v| self.strip(v))
                }
            };
            if let Some(candidate) = sig.and_then(|s| self.decode(s)) {
                parsed.candidates.push(candidate);
            }
        }
        Ok(())
    }

    /// `value` without the signature prefix. A token's prefix is an auth
    /// scheme (`Bearer `, `Basic `), matched in any case as RFC 9110 §11.1
    /// says; a signature's prefix (`sha256=`, `v1,`) is matched exactly.
    fn strip<'a>(&self, value: &'a [u8]) -> Option<&'a [u8]> {
        match &self.signature_prefix {
            Some(prefix) if self.algorithm == Algorithm::Token => {
                let prefix = prefix.as_bytes();
                let head = value.get(..prefix.len())?;
                head.eq_ignore_ascii_case(prefix)
                    .then(|| &value[prefix.len()..])
            }
            Some(prefix) => value.strip_prefix(prefix.as_bytes()),
            None => Some(value),
        }
    }

    fn decode(&self, text: &[u8]) -> Option<Vec<u8>> {
        match self.algorithm.tag_len() {
            Some(len) => hmac::decode_tag(self.encoding, text, len),
            None if text.is_empty() => None,
            // A token is compared as its digest, so the comparison takes the
            // same time whatever length was sent (`ct_eq` on slices of
            // different lengths returns at once, telling the secret's length).
            None => Some(Sha256::digest(text).to_vec()),
        }
    }

    /// The expected signature for `key` over `parts` (a token: its digest).
    fn expected(&self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        match self.algorithm {
            Algorithm::Token => Sha256::digest(key).to_vec(),
            alg => hmac::mac(alg, key, parts),
        }
    }
}

/// `value` split on every occurrence of `delimiter` (non-empty).
fn split<'a>(value: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = value;
    if delimiter.is_empty() {
        return vec![value];
    }
    while let Some(at) = rest.windows(delimiter.len()).position(|w| w == delimiter) {
        out.push(&rest[..at]);
        rest = &rest[at + delimiter.len()..];
    }
    out.push(rest);
    out
}

pub(super) fn verify(
    generic: &Generic,
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let labels = generic.labels;
    let parsed = generic.parse(headers)?;

    let timestamp_text = match (&generic.timestamp_header, &generic.timestamp_key) {
        (Some(name), _) => {
            Some(header(headers, name).ok_or(Error::MalformedSignature(labels.timestamp))?)
        }
        (None, Some(_)) => Some(
            parsed
                .list_timestamp
                .ok_or(Error::MalformedSignature(labels.signature))?,
        ),
        (None, None) => None,
    };
    let timestamp = match timestamp_text {
        Some(text) => Some(hmac::parse_time(generic.timestamp_format, text).ok_or(
            Error::MalformedSignature(if generic.timestamp_header.is_some() {
                labels.timestamp
            } else {
                labels.signature
            }),
        )?),
        None => None,
    };
    let id_header = match &generic.event_id {
        Some(Locator::Header(name)) => header(headers, name).filter(|id| !id.is_empty()),
        _ => None,
    };

    let pieces = pieces(&generic.signed_payload);
    let url = generic.public_url.as_deref().unwrap_or_default().as_bytes();
    let parts = pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => Ok(text),
            Piece::Id => id_header.ok_or(Error::MalformedSignature(labels.id)),
            Piece::Timestamp => timestamp_text.ok_or(Error::MalformedSignature(labels.timestamp)),
            Piece::Body => Ok(body),
            Piece::Url => Ok(url),
            Piece::Header(name) => headers
                .get(name)
                .map(|v| v.as_bytes())
                .ok_or(Error::MalformedSignature(labels.signature)),
        })
        .collect::<Result<Vec<&[u8]>, Error>>()?;
    let secret_index = hmac::match_with(
        keys,
        |key| generic.expected(key.expose(), &parts),
        &parsed.candidates,
    )?;
    if let Some(ts) = timestamp {
        hmac::check_window(ts, now, tolerance)?;
    }

    fn pointer(locator: &Option<Locator>) -> Option<&str> {
        match locator {
            Some(Locator::Pointer(pointer)) => Some(pointer),
            _ => None,
        }
    }
    let (id_pointer, type_pointer) = (pointer(&generic.event_id), pointer(&generic.event_type));
    // The body is read only when an id or type lives in it, and then once for both.
    let [id_field, type_field] = if id_pointer.is_some() || type_pointer.is_some() {
        json_fields(
            body,
            [id_pointer, type_pointer].map(|p| p.unwrap_or(json::NOWHERE)),
        )
    } else {
        None
    }
    .unwrap_or([Field::Missing, Field::Missing]);
    let event_id = match &generic.event_id {
        None => hmac::body_sha256_hex(body),
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str())
            .ok_or(Error::MalformedBody("event id header is missing"))?,
        Some(Locator::Pointer(_)) => id_field.id().ok_or(Error::MalformedBody(
            "no event id at the configured pointer",
        ))?,
    };
    let event_type = match &generic.event_type {
        None => None,
        Some(Locator::Header(name)) => hmac::header_text(headers, name.as_str()),
        Some(Locator::Pointer(_)) => type_field.str(),
    };
    Ok(Verified {
        event_id,
        event_type,
        timestamp,
        secret_index,
    })
}

/// The signature header (with the timestamp in it for key lists); the
/// timestamp header when one is configured; the id header when the id lives
/// in a header (`id`, or a fresh random one). Token senders are refused: the
/// header would be the secret itself.
pub(super) fn sign(
    generic: &Generic,
    key: &Secret,
    body: &[u8],
    id: Option<&str>,
    timestamp: i64,
) -> Result<Vec<(String, String)>, &'static str> {
    if generic.algorithm == Algorithm::Token {
        return Err("this sender sends the secret itself; printing it is refused");
    }
    let id = id.map_or_else(hmac::random_id, str::to_owned);
    let ts = hmac::format_time(generic.timestamp_format, timestamp);
    let url = generic.public_url.as_deref().unwrap_or_default();
    let pieces = pieces(&generic.signed_payload);
    // A `{header:…}` the sender signs travels with the request: the
    // timestamp or id when it names their header, else a fresh value (a
    // nonce), one per distinct header.
    let same =
        |a: &str, h: Option<&HeaderName>| h.is_some_and(|h| h.as_str().eq_ignore_ascii_case(a));
    let id_header = match &generic.event_id {
        Some(Locator::Header(h)) => Some(h),
        _ => None,
    };
    let mut extra: Vec<(String, String)> = Vec::new();
    for piece in &pieces {
        if let Piece::Header(name) = *piece {
            let known = same(name, generic.timestamp_header.as_ref())
                || same(name, id_header)
                || extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
            if !known {
                extra.push((name.to_ascii_lowercase(), hmac::random_id()));
            }
        }
    }
    let header_value = |name: &str| -> &[u8] {
        if same(name, generic.timestamp_header.as_ref()) {
            ts.as_bytes()
        } else if same(name, id_header) {
            id.as_bytes()
        } else {
            extra
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map_or(&b""[..], |(_, v)| v.as_bytes())
        }
    };
    let parts: Vec<&[u8]> = pieces
        .iter()
        .map(|piece| match *piece {
            Piece::Text(text) => text,
            Piece::Id => id.as_bytes(),
            Piece::Timestamp => ts.as_bytes(),
            Piece::Body => body,
            Piece::Url => url.as_bytes(),
            Piece::Header(name) => header_value(name),
        })
        .collect();
    let tag = generic.expected(key.expose(), &parts);
    let prefix = generic.signature_prefix.as_deref().unwrap_or("");
    let signature = format!("{prefix}{}", hmac::encode(generic.encoding, &tag));
    let value = match (&generic.signature_key, &generic.timestamp_key) {
        (Some(sig_key), Some(ts_key)) => {
            let delimiter = generic.signature_delimiter.as_deref().unwrap_or(",");
            format!("{ts_key}={ts}{delimiter}{sig_key}={signature}")
        }
        (Some(sig_key), None) => format!("{sig_key}={signature}"),
        _ => signature,
    };
    let mut out = vec![(generic.signature_header.as_str().to_owned(), value)];
    if let Some(name) = &generic.timestamp_header {
        out.push((name.as_str().to_owned(), ts));
    }
    if let Some(Locator::Header(name)) = &generic.event_id {
        out.push((name.as_str().to_owned(), id.clone()));
    }
    out.extend(extra.iter().cloned());
    Ok(out)
}

/// `scheme = "generic"`: the sender its `[source.generic]` table describes.
impl Provider for Generic {
    fn name(&self) -> &'static str {
        "generic"
    }

    fn signs_timestamp(&self) -> bool {
        Generic::signs_timestamp(self)
    }

    fn signs_event_id(&self) -> bool {
        self.signs(self.event_id.as_ref(), true)
    }

    fn signs_event_type(&self) -> bool {
        self.signs(self.event_type.as_ref(), false)
    }

    fn needs_public_url(&self) -> bool {
        self.uses_url()
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        Generic::prepare_key(self, secret)
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(self, d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        sign(self, s.key, s.body, s.id, s.timestamp)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        resign_names(self)
    }
}

/// The headers a generic sender's signature and signed time travel in, or
/// why they cannot be made afresh.
fn resign_names(g: &Generic) -> Result<Vec<String>, &'static str> {
    if g.algorithm == Algorithm::Token {
        return Err("a token scheme sends the secret itself, nothing to sign");
    }
    if pieces(&g.signed_payload)
        .iter()
        .any(|p| matches!(p, Piece::Header(_)))
    {
        return Err("its signed bytes name other headers of the request");
    }
    let mut names = vec![g.signature_header.as_str().to_owned()];
    names.extend(
        g.alternate_signature_headers
            .iter()
            .map(|h| h.as_str().to_owned()),
    );
    if let Some(ts) = &g.timestamp_header {
        names.push(ts.as_str().to_owned());
    }
    // An id in a header is kept: the fresh signature covers the same id; a
    // time inside the signature header goes with it.
    Ok(names)
}

#[cfg(test)]
mod tests;
