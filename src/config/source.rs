//! `[[source]]`: one sender each — name, path, scheme and secrets, replay
//! window, event-type filter, body filters, delivery, store-failure policy,
//! ordering gate, verify token and re-signing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use toml::Spanned;

use super::check::Check;
use super::filters::build_filters;
use super::generic::build_generic;
use super::raw::{self, RawSource};
use super::store::{KindWord, StoreInfo};
use super::{keys, secrets};
use crate::allow::Ranges;
use crate::scheme::Scheme;
use crate::secret::Secret;

/// Warns, once per source, where `[source.keys]` lets keys come from hosts
/// or roots that are not the provider's: meant for tests only.
pub fn warn_widened(sources: &[Source]) {
    for source in sources {
        if let Some(policy) = source.scheme.key_policy()
            && policy.is_widened()
        {
            tracing::warn!(
                source = source.name.as_str(),
                allow_hosts = ?policy.allow_hosts,
                ca_file = ?policy.ca_file,
                "[source.keys] widens where provider keys may come from: keys from these hosts \
                 and roots are trusted as the provider's; use this only against a test key server"
            );
        }
    }
}

/// What a source does with a request that fails verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Refused with its `400` (the default).
    Enforce,
    /// Forwarded anyway, without `X-Verified-*`, with `X-Hookgate-Unverified:
    /// <error word>`, and counted under that word; nothing stored.
    Observe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Forward,
    Queue,
}

/// What a source does with a verified event when the nonce store fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStoreError {
    /// `503 store_unavailable`: the sender retries later (the default: fail closed).
    Reject,
    /// Forward without the duplicate check (signature still required),
    /// counted as `forwarded_unchecked`.
    ForwardUnchecked,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ordering {
    /// JSON pointer to the resource key.
    pub resource: String,
    /// JSON pointer to an integer or RFC 3339 time.
    pub version: String,
}

/// One `[[source]]`.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// Path prefix, without a trailing slash (except "/").
    pub path: String,
    pub scheme: Scheme,
    /// HMAC keys in `secrets` order, already prepared for `scheme`.
    pub keys: Vec<Secret>,
    /// Files behind `{ file = … }` secrets, watched for changes.
    pub secret_files: Vec<PathBuf>,
    pub tolerance: Duration,
    /// Event-type patterns; empty = all. `*` at the end matches any suffix.
    pub event_types: Vec<String>,
    /// The client addresses this source takes requests from; `None`: any.
    /// Checked right after routing, before the body is read (DESIGN §3).
    pub allow_ips: Option<Ranges>,
    pub delivery: Delivery,
    pub on_store_error: OnStoreError,
    /// Whether a request that fails verification is refused or, while a
    /// deployment is being checked, forwarded unstamped (DESIGN §3).
    pub verification: Verification,
    /// Queue delivery: the delay before each retry; when they run out the
    /// event becomes a dead letter.
    pub retry_schedule: Vec<Duration>,
    /// Queue delivery: at most this many requests to the app at once, per
    /// replica, so a slow app is not flooded by a backlog.
    pub max_in_flight: usize,
    /// Queue delivery: deliveries started per second to the app, all
    /// replicas together (DESIGN §6a); `None` = no limit.
    pub max_rate: Option<f64>,
    /// `[source.breaker]` (DESIGN §6a), both modes.
    pub breaker: Option<crate::breaker::Settings>,
    pub ordering: Option<Ordering>,
    /// Meta's subscription check: the `hub.verify_token` a `GET` must carry
    /// to have its challenge answered. Separate from `keys`: it travels in
    /// URLs.
    pub verify_token: Option<Secret>,
    /// `[source.resign]`: the key (prepared for the scheme) every delivery's
    /// signature headers are made with afresh, replacing the sender's.
    pub resign: Option<Secret>,
    /// `[[source.filter]]` (DESIGN §3a), in order; shared, since a source
    /// is cloned per queued delivery and an `in` list can be large.
    pub filters: Arc<crate::filter::Filters>,
}

impl Source {
    /// Whether `event_types` lets an event of this type through.
    /// An event with no type passes only when no filter is set.
    pub fn accepts_type(&self, event_type: Option<&str>) -> bool {
        if self.event_types.is_empty() {
            return true;
        }
        let Some(t) = event_type else { return false };
        self.event_types.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => t.starts_with(prefix),
            None => p == t,
        })
    }
}

pub(super) const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// DESIGN §6: `10s, 1m, 10m, 1h, 6h`.
pub const DEFAULT_RETRY_SCHEDULE: [Duration; 5] = [
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(600),
    Duration::from_secs(3600),
    Duration::from_secs(6 * 3600),
];
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

pub(super) fn build_sources(
    c: &mut Check<'_>,
    raw: Option<&Spanned<Vec<Spanned<RawSource>>>>,
    store: &StoreInfo,
) -> Option<Vec<Source>> {
    let list = match raw {
        Some(list) if !list.get_ref().is_empty() => list.get_ref(),
        Some(list) => {
            c.at(
                list,
                "source",
                "no sources; add at least one [[source]] table",
            );
            return None;
        }
        None => {
            if !c.poisoned.contains("source") {
                c.push(
                    None,
                    "source",
                    "no [[source]] table; add at least one source to verify",
                );
            }
            return None;
        }
    };
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut paths: HashMap<String, (String, usize)> = HashMap::new();
    let mut out = Some(Vec::new());
    for (i, rs) in list.iter().enumerate() {
        let r = rs.get_ref();
        let label = raw::source_label(i, r.name.as_ref().map(|n| n.get_ref().as_str()));
        let table = Some(rs.span());

        let name_field = format!("{label}.name");
        let name = c
            .required(&r.name, table.clone(), &name_field)
            .and_then(|v| source_name(c, v, &name_field));
        if let (Some(n), Some(v)) = (&name, &r.name) {
            let line = c.lines.line(v.span().start);
            match names.get(n) {
                Some(first) => {
                    c.at(
                        v,
                        &name_field,
                        format!("duplicate source name \"{n}\" (first used on line {first})"),
                    );
                }
                None => {
                    names.insert(n.clone(), line);
                }
            }
        }

        let path_field = format!("{label}.path");
        let path = c.required(&r.path, table, &path_field).and_then(|v| {
            match normalise_path(v.get_ref()) {
                Ok(p) => Some((v, p)),
                Err(m) => {
                    c.at(v, &path_field, m);
                    None
                }
            }
        });
        // Routing ignores ASCII case, so two paths that differ only in case collide.
        let path = match path {
            Some((v, p)) => match paths.get(&p.to_ascii_lowercase()) {
                Some((other, line)) => {
                    let shown = if *v.get_ref() == p {
                        format!("\"{p}\"")
                    } else {
                        format!("\"{}\" (that is, \"{p}\")", v.get_ref())
                    };
                    c.at(
                        v,
                        &path_field,
                        format!("path {shown} is already used by {other} on line {line}"),
                    );
                    None
                }
                None => {
                    let line = c.lines.line(v.span().start);
                    paths.insert(p.to_ascii_lowercase(), (label.clone(), line));
                    Some(p)
                }
            },
            None => None,
        };

        let body = source_body(c, &label, rs, store);
        match (name, path, body, &mut out) {
            (Some(name), Some(path), Some(b), Some(out)) => out.push(Source {
                name,
                path,
                scheme: b.scheme,
                keys: b.keys,
                secret_files: b.secret_files,
                tolerance: b.tolerance,
                event_types: b.event_types,
                allow_ips: b.allow_ips,
                delivery: b.delivery,
                on_store_error: b.on_store_error,
                verification: b.verification,
                retry_schedule: b.retry_schedule,
                max_in_flight: b.max_in_flight,
                max_rate: b.max_rate,
                breaker: b.breaker,
                ordering: b.ordering,
                verify_token: b.verify_token,
                resign: b.resign,
                filters: b.filters,
            }),
            _ => out = None,
        }
    }
    out
}

fn source_name(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<String> {
    let n = v.get_ref();
    let ok = !n.is_empty()
        && n.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'));
    if ok {
        Some(n.clone())
    } else {
        c.at(
            v,
            field,
            format!(
                "\"{n}\" is not a valid source name: use letters, digits, -, _ and . \
                 (it appears in metric labels and store keys)"
            ),
        );
        None
    }
}

/// Checks a source path and removes one trailing `/` (except from `/`).
fn normalise_path(text: &str) -> Result<String, String> {
    if !text.starts_with('/') {
        return Err(format!("\"{text}\" must start with /"));
    }
    if text.contains(['?', '#']) {
        return Err(format!("\"{text}\" must be a path only, without ? or #"));
    }
    if text.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
        return Err(format!(
            "\"{text}\" must not contain spaces or control characters"
        ));
    }
    // Every segment but a final empty one (the trailing slash) must be a name.
    let segments: Vec<&str> = text[1..].split('/').collect();
    let last = segments.len().saturating_sub(1);
    let bad = segments
        .iter()
        .enumerate()
        .any(|(i, s)| (s.is_empty() && i != last) || *s == "." || *s == "..");
    if bad {
        return Err(format!("\"{text}\" has an empty, . or .. segment"));
    }
    let p = match text.strip_suffix('/') {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => text,
    };
    if http::uri::PathAndQuery::try_from(p).is_err() {
        return Err(format!("\"{text}\" is not a valid URL path"));
    }
    if let Err(e) = crate::route::canonical(p) {
        return Err(format!("\"{text}\" is not a canonical path: {e}"));
    }
    Ok(p.to_owned())
}

/// A `scheme = "…"` word: `generic`, or any name [`Scheme::by_name`] knows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SchemeWord {
    Generic,
    Named(&'static str),
}

fn scheme_word(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<SchemeWord> {
    let word = v.get_ref().as_str();
    if word == "generic" {
        return Some(SchemeWord::Generic);
    }
    if let Some(name) = Scheme::names().find(|n| *n == word) {
        return Some(SchemeWord::Named(name));
    }
    c.at(
        v,
        field,
        format!(
            "unknown value \"{word}\"; expected \"stripe\", \"github\", \"shopify\", \"slack\", \
             \"standard\", \"generic\" or a provider of docs/providers.md (\"twilio\", \"zoom\", …)"
        ),
    );
    None
}

/// An absolute http(s) URL as the sender sees it.
fn public_url(c: &mut Check<'_>, v: &Spanned<String>, field: &str) -> Option<String> {
    let text = v.get_ref();
    let ok =
        text.parse::<Uri>().ok().is_some_and(|u| {
            matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some()
        }) && !text.contains(['#', ' ']);
    if ok {
        Some(text.clone())
    } else {
        c.at(
            v,
            field,
            format!(
                "\"{text}\" is not an absolute http(s) URL; give the URL exactly as configured \
                 at the sender, e.g. \"https://hooks.example.com/webhooks/twilio\""
            ),
        );
        None
    }
}

/// Everything in a source but its name and path.
struct SourceBody {
    scheme: Scheme,
    keys: Vec<Secret>,
    secret_files: Vec<PathBuf>,
    tolerance: Duration,
    event_types: Vec<String>,
    allow_ips: Option<Ranges>,
    delivery: Delivery,
    on_store_error: OnStoreError,
    verification: Verification,
    retry_schedule: Vec<Duration>,
    max_in_flight: usize,
    max_rate: Option<f64>,
    breaker: Option<crate::breaker::Settings>,
    ordering: Option<Ordering>,
    verify_token: Option<Secret>,
    resign: Option<Secret>,
    filters: Arc<crate::filter::Filters>,
}

fn source_body(
    c: &mut Check<'_>,
    label: &str,
    rs: &Spanned<RawSource>,
    store: &StoreInfo,
) -> Option<SourceBody> {
    let r = rs.get_ref();
    let table = Some(rs.span());
    let field = |k: &str| format!("{label}.{k}");

    // Scheme, with its [source.generic] table and public URL.
    let scheme_field = field("scheme");
    let word = c
        .required(&r.scheme, table.clone(), &scheme_field)
        .and_then(|v| scheme_word(c, v, &scheme_field));
    let url_field = field("public_url");
    let url = match &r.public_url {
        None => Some(None),
        Some(v) => public_url(c, v, &url_field).map(Some),
    };
    let generic = match (&r.generic, word) {
        (Some(g), Some(SchemeWord::Generic) | None) => build_generic(c, label, g),
        (Some(g), Some(_)) => {
            c.at(
                g,
                &field("generic"),
                r#"only scheme = "generic" takes a [source.generic] table"#,
            );
            None
        }
        (None, Some(SchemeWord::Generic)) => {
            if !c.poisoned.contains(&field("generic")) {
                let span = r.scheme.as_ref().map(|s| s.span()).or(table.clone());
                c.push(
                    span,
                    &field("generic"),
                    r#"scheme = "generic" needs a [source.generic] table describing the sender"#,
                );
            }
            None
        }
        (None, _) => None,
    };
    let given_url = url.clone().flatten();
    let scheme = match word {
        Some(SchemeWord::Named(name)) => Scheme::by_name(name, given_url.as_deref()),
        Some(SchemeWord::Generic) => generic.map(|mut g| {
            g.public_url = given_url.clone();
            Scheme::Generic(Box::new(g))
        }),
        None => None,
    };
    let scheme = match (scheme, url) {
        (Some(s), Some(url)) => match (s.needs_public_url(), url, &r.public_url) {
            (true, None, _) if !c.poisoned.contains(&url_field) => {
                let span = r.scheme.as_ref().map(|v| v.span()).or(table.clone());
                let what = match &s {
                    Scheme::Generic(_) => "generic.signed_payload uses {url}".to_owned(),
                    _ => format!("scheme \"{}\" signs the URL the sender posts to", s.name()),
                };
                c.push(
                    span,
                    &url_field,
                    format!(
                        "{what}; set public_url to that URL exactly as configured at the sender \
                         (behind a proxy the request arrives with another scheme, host or path)"
                    ),
                );
                None
            }
            (false, Some(_), Some(v)) => {
                c.at(
                    v,
                    &url_field,
                    format!(
                        "does not apply: scheme \"{}\" does not sign the URL; remove it",
                        s.name()
                    ),
                );
                None
            }
            _ => Some(s),
        },
        _ => None,
    };

    let remote = scheme
        .as_ref()
        .filter(|s| s.fetches_keys() && !s.takes_secrets())
        .map(Scheme::name);
    let scheme = keys::apply(c, label, r, table.clone(), scheme);
    // Secrets: `secrets` prepared for the scheme, `verify_token`, `[source.resign]`.
    let secrets = secrets::build(c, label, r, table.clone(), scheme.as_ref(), remote);

    // Tolerance: only for schemes that sign a timestamp.
    let tolerance_field = field("tolerance");
    let tolerance = match &scheme {
        Some(s) if s.signs_timestamp() => {
            let default = s.default_tolerance().unwrap_or(DEFAULT_TOLERANCE);
            let t = c.duration(r.tolerance.as_ref(), &tolerance_field, default);
            if let (Some(t), Some(ttl)) = (t, store.nonce_ttl)
                && ttl < t.saturating_mul(2)
            {
                let message = format!(
                    "store.nonce_ttl ({}) must be at least twice the tolerance ({}): \
                     a signed request is accepted for up to twice the tolerance, and \
                     a replay after its nonce expired would be forwarded again",
                    humantime::format_duration(ttl),
                    humantime::format_duration(t)
                );
                match &r.tolerance {
                    Some(v) => c.at(v, &tolerance_field, message),
                    None => c.push(store.nonce_ttl_span.clone(), "store.nonce_ttl", message),
                }
            }
            t
        }
        Some(s) => match &r.tolerance {
            None => Some(Duration::ZERO),
            Some(v) => {
                let message = match s {
                    Scheme::Generic(_) => "does not apply: this sender has no \
                        generic.timestamp_header or generic.timestamp_key, so no signed time \
                        to check"
                        .to_owned(),
                    _ => format!(
                        "does not apply: scheme \"{}\" signs no timestamp; remove it",
                        s.name()
                    ),
                };
                c.at(v, &tolerance_field, message);
                None
            }
        },
        None => {
            if let Some(v) = &r.tolerance {
                c.duration(Some(v), &tolerance_field, DEFAULT_TOLERANCE);
            }
            None
        }
    };

    // Event-type filter.
    let types_field = field("event_types");
    let event_types = match &r.event_types {
        None => Some(Vec::new()),
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &types_field,
                "is empty; leave event_types out to accept every event type",
            );
            None
        }
        Some(list) => {
            let mut ok = true;
            for (j, p) in list.get_ref().iter().enumerate() {
                if let Some(m) = pattern_problem(p.get_ref()) {
                    c.at(p, &format!("{types_field}[{j}]"), m);
                    ok = false;
                }
            }
            if let Some(Scheme::Generic(g)) = &scheme
                && g.event_type.is_none()
            {
                c.at(
                    list,
                    &types_field,
                    "this sender has no generic.event_type, so no event could match; \
                     set generic.event_type or remove event_types",
                );
                ok = false;
            }
            ok.then(|| list.get_ref().iter().map(|p| p.get_ref().clone()).collect())
        }
    };

    // Sender addresses.
    let allow_field = field("allow_ips");
    let allow_ips = match &r.allow_ips {
        None => Some(None),
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &allow_field,
                "is empty, which would refuse every request; leave allow_ips out to take \
                 requests from any address",
            );
            None
        }
        Some(list) => c.ip_ranges(list, &allow_field).map(Some),
    };

    // Delivery.
    let delivery_field = field("delivery");
    let delivery = c.word(
        r.delivery.as_ref(),
        &delivery_field,
        &[("forward", Delivery::Forward), ("queue", Delivery::Queue)],
        Some(Delivery::Forward),
    );
    if let (Some(Delivery::Queue), Some(KindWord::Memory), Some(v)) =
        (delivery, store.kind, &r.delivery)
    {
        c.at(
            v,
            &delivery_field,
            r#"delivery = "queue" needs a durable store (kind = "sqlite" on one host, or a redis store): the memory store loses its queue on restart, so a queued event would not be durable"#,
        );
    }

    // What to do when the store fails.
    let on_store_error_field = field("on_store_error");
    let on_store_error = c.word(
        r.on_store_error.as_ref(),
        &on_store_error_field,
        &[
            ("reject", OnStoreError::Reject),
            ("forward_unchecked", OnStoreError::ForwardUnchecked),
        ],
        Some(OnStoreError::Reject),
    );
    if let (Some(OnStoreError::ForwardUnchecked), Some(Delivery::Queue), Some(v)) =
        (on_store_error, delivery, &r.on_store_error)
    {
        c.at(
            v,
            &on_store_error_field,
            r#""forward_unchecked" needs delivery = "forward": a queued event is stored before the 200, so without the store there is nothing to answer with"#,
        );
    }
    let verification = c.word(
        r.verification.as_ref(),
        &field("verification"),
        &[
            ("enforce", Verification::Enforce),
            ("observe", Verification::Observe),
        ],
        Some(Verification::Enforce),
    );
    // Queue settings: only where hookgate owns the retries.
    let schedule_field = field("retry_schedule");
    let retry_schedule = match &r.retry_schedule {
        None => Some(DEFAULT_RETRY_SCHEDULE.to_vec()),
        Some(list) if delivery == Some(Delivery::Forward) => {
            c.at(list, &schedule_field, NOT_QUEUED);
            None
        }
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &schedule_field,
                "is empty; leave retry_schedule out for the default \
                 [\"10s\", \"1m\", \"10m\", \"1h\", \"6h\"] or list at least one delay",
            );
            None
        }
        Some(list) => {
            let mut delays = Some(Vec::new());
            for (j, d) in list.get_ref().iter().enumerate() {
                let parsed = c.duration(Some(d), &format!("{schedule_field}[{j}]"), Duration::ZERO);
                match (parsed, &mut delays) {
                    (Some(d), Some(delays)) => delays.push(d),
                    _ => delays = None,
                }
            }
            delays
        }
    };
    let in_flight_field = field("max_in_flight");
    let max_in_flight = match &r.max_in_flight {
        Some(v) if delivery == Some(Delivery::Forward) => {
            c.at(v, &in_flight_field, NOT_QUEUED);
            None
        }
        other => c.positive(other.as_ref(), &in_flight_field, DEFAULT_MAX_IN_FLIGHT),
    };
    let rate_field = field("max_rate");
    let max_rate = match &r.max_rate {
        None => Some(None),
        Some(v) if delivery == Some(Delivery::Forward) => {
            c.at(v, &rate_field, NOT_QUEUED);
            None
        }
        Some(v) => match parse_rate(v.get_ref()) {
            Ok(rate) => Some(Some(rate)),
            Err(m) => {
                c.at(v, &rate_field, m);
                None
            }
        },
    };

    // Circuit breaker.
    let breaker = match &r.breaker {
        None => Some(None),
        Some(b) => {
            let b = b.get_ref();
            let failures = c.positive(b.failures.as_ref(), &field("breaker.failures"), 5);
            let cooldown = c.duration(
                b.cooldown.as_ref(),
                &field("breaker.cooldown"),
                Duration::from_secs(30),
            );
            let max_cooldown = c.duration(
                b.max_cooldown.as_ref(),
                &field("breaker.max_cooldown"),
                Duration::from_secs(600),
            );
            // Each problem of the table is reported, whichever others it has.
            let inverted = matches!((cooldown, max_cooldown), (Some(cd), Some(max)) if max < cd);
            if inverted && let Some(v) = &b.max_cooldown {
                c.at(
                    v,
                    &field("breaker.max_cooldown"),
                    "must be at least breaker.cooldown",
                );
            }
            match (failures, cooldown, max_cooldown) {
                _ if inverted => None,
                (Some(f), Some(cooldown), Some(max_cooldown)) => {
                    Some(Some(crate::breaker::Settings {
                        failures: u32::try_from(f).unwrap_or(u32::MAX),
                        cooldown,
                        max_cooldown,
                    }))
                }
                _ => None,
            }
        }
    };

    let filters = build_filters(c, label, r.filter.as_ref());

    // Ordering gate.
    let ordering = match &r.ordering {
        None => Some(None),
        Some(o) => {
            let span = Some(o.span());
            let rf = field("ordering.resource");
            let vf = field("ordering.version");
            let resource = c
                .required(&o.get_ref().resource, span.clone(), &rf)
                .and_then(|v| c.json_pointer(v, &rf));
            let version = c
                .required(&o.get_ref().version, span, &vf)
                .and_then(|v| c.json_pointer(v, &vf));
            match (resource, version) {
                (Some(resource), Some(version)) => Some(Some(Ordering { resource, version })),
                _ => None,
            }
        }
    };

    Some(SourceBody {
        scheme: scheme?,
        keys: secrets.keys?,
        secret_files: secrets.files,
        tolerance: tolerance?,
        event_types: event_types?,
        allow_ips: allow_ips?,
        delivery: delivery?,
        on_store_error: on_store_error?,
        verification: verification?,
        retry_schedule: retry_schedule?,
        max_in_flight: max_in_flight?,
        max_rate: max_rate?,
        breaker: breaker?,
        ordering: ordering?,
        verify_token: secrets.verify_token?,
        resign: secrets.resign?,
        filters: filters?,
    })
}

/// Why an `event_types` pattern is invalid, if it is.
/// `"50/s"` or `"3000/m"` as deliveries per second: a whole number from 1,
/// at most 100,000 a second.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let shape = || format!("\"{text}\" is not a rate: write it as \"50/s\" or \"3000/m\"");
    let (count, unit) = text.trim().split_once('/').ok_or_else(shape)?;
    let count: u64 = count.trim().parse().map_err(|_| shape())?;
    let per_second = match unit.trim() {
        "s" => count as f64,
        "m" => count as f64 / 60.0,
        _ => return Err(shape()),
    };
    if count == 0 || per_second > 100_000.0 {
        return Err(format!(
            "\"{text}\" must be at least 1 and at most 100000/s; leave max_rate out for no limit"
        ));
    }
    Ok(per_second)
}

fn pattern_problem(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("is an empty pattern".to_owned());
    }
    let head = p.strip_suffix('*').unwrap_or(p);
    if head.contains('*') {
        return Some(format!(
            "\"{p}\": * may only be the last character (\"customer.*\")"
        ));
    }
    None
}

const NOT_QUEUED: &str = "applies only to delivery = \"queue\"; with forward delivery \
     the sender retries on its own schedule";
