//! The config file as written: serde structs mirroring DESIGN §2, every key
//! optional here (presence is checked during validation so that all missing
//! keys are reported together), every value wrapped in [`Spanned`] so that a
//! problem can name its line.
//!
//! Deserialization errors (unknown keys, wrong types) are collected rather
//! than returned one at a time: after each error the offending key is taken
//! out of the parsed document and deserialization runs again, so a file with
//! an unknown key in `[server]` and another in a `[[source]]` reports both.
//!
//! Secret values never reach an error message: `secrets` entries use
//! deserializers that cannot fail and never quote what they read.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::Problem;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub server: Option<Spanned<RawServer>>,
    pub admin: Option<Spanned<RawAdmin>>,
    pub store: Option<Spanned<RawStore>>,
    pub source: Option<Spanned<Vec<Spanned<RawSource>>>>,
    pub tracing: Option<Spanned<RawTracing>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTracing {
    pub otlp_endpoint: Option<Spanned<String>>,
    pub sample_ratio: Option<Spanned<RawNumber>>,
    pub service_name: Option<Spanned<String>>,
    pub trace_url: Option<Spanned<String>>,
}

/// A TOML number written either way (`1` or `1.0`).
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
pub(super) enum RawNumber {
    Integer(i64),
    Float(f64),
}

impl RawNumber {
    pub fn as_f64(self) -> f64 {
        match self {
            RawNumber::Integer(i) => i as f64,
            RawNumber::Float(f) => f,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub listen: Option<Spanned<String>>,
    pub upstream: Option<Spanned<String>>,
    pub upstream_timeout: Option<Spanned<String>>,
    pub max_body_bytes: Option<Spanned<i64>>,
    pub unmatched: Option<Spanned<String>>,
    pub max_connections: Option<Spanned<i64>>,
    pub request_read_timeout: Option<Spanned<String>>,
    pub write_timeout: Option<Spanned<String>>,
    pub idle_timeout: Option<Spanned<String>>,
    pub max_connection_age: Option<Spanned<String>>,
    pub max_response_bytes: Option<Spanned<i64>>,
    pub upstream_keepalive: Option<Spanned<bool>>,
    pub underscores_in_headers: Option<Spanned<String>>,
    pub trusted_proxies: Option<Spanned<Vec<Spanned<String>>>>,
    pub tls: Option<Spanned<RawTls>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTls {
    pub cert: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdmin {
    pub listen: Option<Spanned<String>>,
    pub token: Option<Spanned<RawSecret>>,
    pub trail_max_events: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStore {
    pub kind: Option<Spanned<String>>,
    pub url: Option<Spanned<String>>,
    pub urls: Option<Spanned<Vec<Spanned<String>>>>,
    pub nonce_ttl: Option<Spanned<String>>,
    pub key_prefix: Option<Spanned<String>>,
    pub memory_max_entries: Option<Spanned<i64>>,
    pub sentinels: Option<Spanned<Vec<Spanned<String>>>>,
    pub master: Option<Spanned<String>>,
    pub username: Option<Spanned<RawSecret>>,
    pub password: Option<Spanned<RawSecret>>,
    pub min_replicas: Option<Spanned<i64>>,
    pub replica_timeout: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub sync: Option<Spanned<String>>,
    pub encryption: Option<Spanned<RawEncryption>>,
    pub dead_letter_max_age: Option<Spanned<String>>,
}

/// `[store.encryption]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEncryption {
    pub keys: Option<Spanned<Vec<Spanned<RawStoreKey>>>>,
}

/// One entry of `[store.encryption] keys`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStoreKey {
    pub id: Option<Spanned<String>>,
    pub key: Option<Spanned<RawSecret>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    pub name: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub scheme: Option<Spanned<String>>,
    pub secrets: Option<Spanned<RawSecrets>>,
    pub tolerance: Option<Spanned<String>>,
    pub event_types: Option<Spanned<Vec<Spanned<String>>>>,
    pub allow_ips: Option<Spanned<Vec<Spanned<String>>>>,
    pub delivery: Option<Spanned<String>>,
    pub on_store_error: Option<Spanned<String>>,
    pub verification: Option<Spanned<String>>,
    pub retry_schedule: Option<Spanned<Vec<Spanned<String>>>>,
    pub max_in_flight: Option<Spanned<i64>>,
    pub max_rate: Option<Spanned<String>>,
    pub breaker: Option<Spanned<RawBreaker>>,
    pub ordering: Option<Spanned<RawOrdering>>,
    pub generic: Option<Spanned<RawGeneric>>,
    pub public_url: Option<Spanned<String>>,
    pub verify_token: Option<Spanned<RawSecret>>,
    pub resign: Option<Spanned<RawResign>>,
    /// `sns`: the topics accepted, and whether to confirm subscriptions.
    pub topic_arns: Option<Spanned<Vec<Spanned<String>>>>,
    pub confirm_subscription: Option<Spanned<bool>>,
    /// `paypal`: the listener's webhook id.
    pub webhook_id: Option<Spanned<String>>,
    /// `google-oidc`: the token's audience and service account.
    pub audience: Option<Spanned<String>>,
    pub email: Option<Spanned<String>>,
    pub keys: Option<Spanned<RawKeys>>,
    /// `[[source.filter]]` (DESIGN §3a), tried in order.
    pub filter: Option<Spanned<Vec<Spanned<RawFilter>>>>,
}

/// One `[[source.filter]]` rule: a field, exactly one condition, an action.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFilter {
    pub name: Option<Spanned<String>>,
    pub field: Option<Spanned<String>>,
    pub equals: Option<Spanned<toml::Value>>,
    #[serde(rename = "in")]
    pub in_list: Option<Spanned<Vec<toml::Value>>>,
    pub not_in: Option<Spanned<Vec<toml::Value>>>,
    pub prefix: Option<Spanned<String>>,
    pub exists: Option<Spanned<bool>>,
    pub action: Option<Spanned<String>>,
}

/// `[source.resign]`: deliveries carry fresh signature headers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResign {
    pub secret: Option<Spanned<RawSecret>>,
}

/// `[source.keys]`: where provider keys may come from besides the provider.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKeys {
    pub allow_hosts: Option<Spanned<Vec<Spanned<String>>>>,
    pub ca_file: Option<Spanned<String>>,
    pub jwks_url: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBreaker {
    pub failures: Option<Spanned<i64>>,
    pub cooldown: Option<Spanned<String>>,
    pub max_cooldown: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOrdering {
    pub resource: Option<Spanned<String>>,
    pub version: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGeneric {
    pub signature_header: Option<Spanned<String>>,
    pub alternate_signature_headers: Option<Spanned<Vec<Spanned<String>>>>,
    pub signature_prefix: Option<Spanned<String>>,
    pub signature_delimiter: Option<Spanned<String>>,
    pub signature_key: Option<Spanned<String>>,
    pub encoding: Option<Spanned<String>>,
    pub algorithm: Option<Spanned<String>>,
    pub signed_payload: Option<Spanned<String>>,
    pub timestamp_header: Option<Spanned<String>>,
    pub timestamp_key: Option<Spanned<String>>,
    pub timestamp_format: Option<Spanned<String>>,
    pub secret_encoding: Option<Spanned<String>>,
    pub secret_prefix: Option<Spanned<String>>,
    pub event_id: Option<Spanned<RawLocator>>,
    pub event_type: Option<Spanned<RawLocator>>,
}

/// `secrets = [...]`. Anything but an array becomes `NotAnArray`; the value
/// is never quoted.
pub(super) enum RawSecrets {
    List(Vec<Spanned<RawSecret>>),
    NotAnArray,
}

/// One `secrets` entry. Deserializing it never fails; a malformed entry
/// becomes `Invalid` with a message that does not include the value.
pub(super) enum RawSecret {
    Literal(String),
    Env(String),
    File(String),
    Invalid(&'static str),
}

impl fmt::Debug for RawSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawSecret::Literal(_) => f.write_str("Literal([redacted])"),
            RawSecret::Env(name) => f.debug_tuple("Env").field(name).finish(),
            RawSecret::File(path) => f.debug_tuple("File").field(path).finish(),
            RawSecret::Invalid(why) => f.debug_tuple("Invalid").field(why).finish(),
        }
    }
}

/// `{ header = "…" }` or `{ pointer = "…" }`.
pub(super) enum RawLocator {
    Header(String),
    Pointer(String),
    Invalid(&'static str),
}

pub(super) const SECRET_SHAPE: &str = r#"must be a string, { env = "NAME" } or { file = "PATH" }"#;
const LOCATOR_SHAPE: &str =
    r#"must be { header = "Header-Name" } or { pointer = "/json/pointer" }"#;

/// A visitor that accepts any value and keeps it only if it is a string.
struct Loose(Option<String>);

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Loose, E> {
        Ok(Loose(Some(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Loose, E> {
        Ok(Loose(Some(v)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Loose, E> {
        Ok(Loose(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Loose(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Loose(None))
    }
}

/// Reads a table that must hold exactly one of `keys`, with a string value.
/// `Ok(Err(()))` when the shape is wrong; nothing read is quoted.
fn one_key_table<'de, A: MapAccess<'de>>(
    mut map: A,
    keys: &[&'static str],
) -> Result<Result<(&'static str, String), ()>, A::Error> {
    let mut found = None;
    let mut ok = true;
    while let Some(key) = map.next_key::<String>()? {
        let value = map.next_value::<Loose>()?;
        match (keys.iter().find(|k| **k == key), value.0, &found) {
            (Some(k), Some(v), None) => found = Some((*k, v)),
            _ => ok = false,
        }
    }
    Ok(match (ok, found) {
        (true, Some(f)) => Ok(f),
        _ => Err(()),
    })
}

/// Implements the scalar `visit_*` methods of an infallible visitor by
/// returning `$invalid`.
macro_rules! scalars_are {
    ($value:ty, $invalid:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($invalid)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($invalid)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($invalid)
        }
        fn visit_i128<E: de::Error>(self, _: i128) -> Result<$value, E> {
            Ok($invalid)
        }
        fn visit_u128<E: de::Error>(self, _: u128) -> Result<$value, E> {
            Ok($invalid)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($invalid)
        }
    };
}

impl<'de> Deserialize<'de> for RawSecrets {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSecrets;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of secrets")
            }
            scalars_are!(RawSecrets, RawSecrets::NotAnArray);
            fn visit_str<E: de::Error>(self, _: &str) -> Result<RawSecrets, E> {
                Ok(RawSecrets::NotAnArray)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSecrets, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawSecrets::NotAnArray)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawSecrets, A::Error> {
                let mut list = Vec::new();
                while let Some(s) = seq.next_element::<Spanned<RawSecret>>()? {
                    list.push(s);
                }
                Ok(RawSecrets::List(list))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawSecret {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSecret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SECRET_SHAPE)
            }
            scalars_are!(RawSecret, RawSecret::Invalid(SECRET_SHAPE));
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSecret, E> {
                Ok(RawSecret::Literal(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RawSecret, E> {
                Ok(RawSecret::Literal(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawSecret, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawSecret::Invalid(SECRET_SHAPE))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSecret, A::Error> {
                Ok(match one_key_table(map, &["env", "file"])? {
                    Ok(("env", name)) => RawSecret::Env(name),
                    Ok((_, path)) => RawSecret::File(path),
                    Err(()) => RawSecret::Invalid(SECRET_SHAPE),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawLocator {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawLocator;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(LOCATOR_SHAPE)
            }
            scalars_are!(RawLocator, RawLocator::Invalid(LOCATOR_SHAPE));
            fn visit_str<E: de::Error>(self, _: &str) -> Result<RawLocator, E> {
                Ok(RawLocator::Invalid(LOCATOR_SHAPE))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawLocator, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawLocator::Invalid(LOCATOR_SHAPE))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLocator, A::Error> {
                Ok(match one_key_table(map, &["header", "pointer"])? {
                    Ok(("header", name)) => RawLocator::Header(name),
                    Ok((_, pointer)) => RawLocator::Pointer(pointer),
                    Err(()) => RawLocator::Invalid(LOCATOR_SHAPE),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// 1-based line of a byte offset in `src`.
pub(super) fn line_of(src: &str, offset: usize) -> usize {
    Lines::of(src).line(offset)
}

/// Where each line of a config file starts, found once, so the line of
/// any offset is a binary search: a config of n sources is checked in
/// O(n log n), not by counting newlines from the top for each problem.
pub(super) struct Lines {
    /// Byte offsets just past each `\n`, ascending.
    starts: Vec<usize>,
}

impl Lines {
    pub(super) fn of(src: &str) -> Lines {
        let starts = src
            .bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        Lines { starts }
    }

    /// 1-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset) + 1
    }
}

/// How a `[[source]]` is named in problems: by its name when it has one,
/// else by its 0-based position.
pub(super) fn source_label(index: usize, name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() => format!("source[{n}]"),
        _ => format!("source[{index}]"),
    }
}

/// The parsed file, or `None` when it is not valid TOML.
/// `poisoned` names the fields whose values were refused while
/// deserializing (and so are absent from `RawFile`): validation does not
/// report them again as missing.
pub(super) struct Parsed {
    pub file: RawFile,
    pub poisoned: HashSet<String>,
}

enum Seg {
    Key(String),
    Index(usize),
}

/// Parses `src`, pushing every syntax and shape problem found.
pub(super) fn parse(src: &str, problems: &mut Vec<Problem>) -> Option<Parsed> {
    let (root, errors) = DeTable::parse_recoverable(src);
    if !errors.is_empty() {
        for e in errors {
            problems.push(Problem {
                line: e.span().map(|s| line_of(src, s.start)),
                field: String::new(),
                message: format!("invalid TOML: {}", e.message()),
            });
        }
        return None;
    }
    let span = root.span();
    let mut doc = Spanned::new(span, DeValue::Table(root.into_inner()));
    let mut poisoned = HashSet::new();
    // Each round either succeeds or takes one key out of the document.
    let rounds = count_entries(doc.get_ref()) + 1;
    for _ in 0..rounds {
        let e = match RawFile::deserialize(ValueDeserializer::from(doc.clone())) {
            Ok(file) => return Some(Parsed { file, poisoned }),
            Err(e) => e,
        };
        let path = e
            .span()
            .and_then(|s| locate(doc.get_ref(), s.start, &mut Vec::new()));
        let line = e.span().map(|s| line_of(src, s.start));
        let Some(path) = path else {
            problems.push(Problem {
                line,
                field: String::new(),
                message: e.message().to_owned(),
            });
            return None;
        };
        let field = render_path(doc.get_ref(), &path);
        let message = friendly(&path, e.message());
        problems.push(Problem {
            line,
            field: field.clone(),
            message,
        });
        // Take the offending key out; an array element takes its whole array.
        let mut cut = path;
        while matches!(cut.last(), Some(Seg::Index(_))) {
            cut.pop();
        }
        poisoned.insert(render_path(doc.get_ref(), &cut));
        if !remove(doc.get_mut(), &cut) {
            return None;
        }
    }
    None
}

/// Rewords the serde messages users see most.
fn friendly(path: &[Seg], message: &str) -> String {
    if let [Seg::Key(k)] = path
        && k == "source"
        && message.starts_with("invalid type: map")
    {
        return "sources are an array of tables: write [[source]], not [source]".to_owned();
    }
    if let Some(rest) = message.strip_prefix("unknown field") {
        return unknown_key(rest);
    }
    // Name TOML shapes, not Rust types.
    if let Some(i) = message.find("expected struct ") {
        return format!("{}expected a table", &message[..i]);
    }
    match message.strip_suffix("expected i64") {
        Some(head) => format!("{head}expected an integer"),
        None => message.to_owned(),
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (after "unknown
/// field") as "unknown key `x`; did you mean `a`?" when one known key is
/// close (a typo, a `-` for a `_`), else with the known keys listed.
fn unknown_key(rest: &str) -> String {
    let quoted: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let Some((given, known)) = quoted.split_first() else {
        return format!("unknown key{rest}");
    };
    let closest = known
        .iter()
        .map(|k| {
            (
                distance(&given.to_ascii_lowercase().replace('-', "_"), k),
                *k,
            )
        })
        .min();
    match closest {
        Some((d, k)) if d <= (given.len() / 3).max(2) => {
            format!("unknown key `{given}`; did you mean `{k}`?")
        }
        _ => format!("unknown key{rest}"),
    }
}

/// Levenshtein distance between `a` and `b`, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(here).min(row[j])
            };
            prev = here;
        }
    }
    row[b.len()]
}

fn count_entries(v: &DeValue<'_>) -> usize {
    match v {
        DeValue::Table(t) => t.iter().map(|(_, v)| 1 + count_entries(v.get_ref())).sum(),
        DeValue::Array(a) => a.iter().map(|v| 1 + count_entries(v.get_ref())).sum(),
        _ => 0,
    }
}

fn contains(span: &Range<usize>, at: usize) -> bool {
    span.contains(&at) || (span.is_empty() && span.start == at)
}

/// The path to the deepest key or element whose key or value holds `at`.
fn locate(v: &DeValue<'_>, at: usize, path: &mut Vec<Seg>) -> Option<Vec<Seg>> {
    match v {
        DeValue::Table(t) => {
            for (k, child) in t.iter() {
                path.push(Seg::Key(k.get_ref().to_string()));
                if let Some(found) = locate(child.get_ref(), at, path) {
                    return Some(found);
                }
                if contains(&k.span(), at) || contains(&child.span(), at) {
                    return Some(std::mem::take(path));
                }
                path.pop();
            }
            None
        }
        DeValue::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                if let Some(found) = locate(child.get_ref(), at, path) {
                    return Some(found);
                }
                if contains(&child.span(), at) {
                    return Some(std::mem::take(path));
                }
                path.pop();
            }
            None
        }
        _ => None,
    }
}

/// `server.listen`, `source[stripe].generic.encoding`, `store.urls[1]`.
fn render_path(root: &DeValue<'_>, path: &[Seg]) -> String {
    let mut out = String::new();
    let mut at = Some(root);
    for (depth, seg) in path.iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
                at = at
                    .and_then(|v| v.as_table())
                    .and_then(|t| t.get(k.as_str()))
                    .map(|v| v.get_ref());
            }
            Seg::Index(i) => {
                let elem = at
                    .and_then(|v| v.as_array())
                    .and_then(|a| a.get(*i))
                    .map(|v| v.get_ref());
                let is_source = depth == 1 && matches!(&path[0], Seg::Key(k) if k == "source");
                if is_source {
                    let name = elem
                        .and_then(|e| e.as_table())
                        .and_then(|t| t.get("name"))
                        .and_then(|n| n.get_ref().as_str());
                    out = source_label(*i, name);
                } else {
                    out.push_str(&format!("[{i}]"));
                }
                at = elem;
            }
        }
    }
    out
}

/// Removes the key at the end of `path` (which ends with a key). Returns
/// whether something was removed.
fn remove(root: &mut DeValue<'_>, path: &[Seg]) -> bool {
    let Some((Seg::Key(last), parents)) = path.split_last() else {
        return false;
    };
    let mut at = root;
    for seg in parents {
        let next = match (seg, at) {
            (Seg::Key(k), DeValue::Table(t)) => t.get_mut(k.as_str()),
            (Seg::Index(i), DeValue::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        match next {
            Some(v) => at = v.get_mut(),
            None => return false,
        }
    }
    match at {
        DeValue::Table(t) => t.remove(last.as_str()).is_some(),
        _ => false,
    }
}
