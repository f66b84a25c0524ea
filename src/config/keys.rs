//! The options of schemes whose key comes from the provider (`sns`,
//! `paypal`, `google-oidc`): `confirm_subscription`, `webhook_id`,
//! `audience`, `email`, and the `[source.keys]` table that lets a test point
//! key fetches at a local key server. Each option is refused on every other
//! scheme.

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use toml::Spanned;

use super::Check;
use super::raw::{RawKeys, RawSource};
use crate::keyfetch::{KeyPolicy, KeyUrl};
use crate::scheme::{
    GEMINI_JWKS_HOST, GOOGLE_JWKS_HOST, GoogleSource, PayPalSource, PublicKeySource, Scheme,
    SnsSource,
};

/// Applies and checks the provider-key options of source `label` on
/// `scheme`; `None` when one is wrong (each problem reported).
pub(super) fn apply(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    table: Option<std::ops::Range<usize>>,
    scheme: Option<Scheme>,
) -> Option<Scheme> {
    let field = |k: &str| format!("{label}.{k}");
    let jwks_url = r.keys.as_ref().and_then(|k| k.get_ref().jwks_url.as_ref());
    let mut ok = true;
    // `standard` with a JWK Set verifies `v1a` against its keys too.
    let scheme = match (scheme, jwks_url) {
        (Some(Scheme::Standard), Some(raw)) => match KeyUrl::parse(raw.get_ref()) {
            Some(url) => Some(Scheme::with_key_set(url)),
            None => {
                c.at(
                    raw,
                    &field("keys.jwks_url"),
                    "must be an https URL with a host",
                );
                ok = false;
                Some(Scheme::Standard)
            }
        },
        (scheme, _) => scheme,
    };
    let name = scheme.as_ref().map(Scheme::name).unwrap_or_default();
    let mut refuse = |c: &mut Check<'_>, span: std::ops::Range<usize>, key: &str, wants: &str| {
        c.push(
            Some(span),
            &field(key),
            format!("does not apply: only scheme = \"{wants}\" takes {key}; remove it"),
        );
        ok = false;
    };
    // Options of one scheme on another (unknown schemes were reported already).
    if scheme.is_some() {
        if let Some(v) = &r.confirm_subscription
            && name != "sns"
        {
            refuse(c, v.span(), "confirm_subscription", "sns");
        }
        if let Some(v) = &r.topic_arns
            && name != "sns"
        {
            refuse(c, v.span(), "topic_arns", "sns");
        }
        if let Some(v) = &r.webhook_id
            && name != "paypal"
        {
            refuse(c, v.span(), "webhook_id", "paypal");
        }
        for (key, v) in [("audience", &r.audience), ("email", &r.email)] {
            if let Some(v) = v
                && name != "google-oidc"
            {
                refuse(c, v.span(), key, "google-oidc");
            }
        }
        if let Some(v) = &r.keys
            && !scheme.as_ref().is_some_and(Scheme::fetches_keys)
        {
            c.at(
                v,
                &field("keys"),
                format!(
                    "does not apply: scheme \"{name}\" fetches no key; [source.keys] is for \
                     sns, paypal, google-oidc, gemini and standard (with jwks_url)"
                ),
            );
            ok = false;
        }
    }
    let mut scheme = scheme?;
    let policy = match &r.keys {
        Some(keys) => policy(c, label, keys),
        None => Some(KeyPolicy::default()),
    };
    let keys = policy.clone().unwrap_or_default();
    if let Some(s) = scheme.provider_mut::<SnsSource>() {
        ok &= sns(c, label, r, table, s, keys);
    } else if let Some(p) = scheme.provider_mut::<PayPalSource>() {
        ok &= paypal(c, label, r, table, p, keys);
    } else if let Some(g) = scheme.provider_mut::<GoogleSource>() {
        ok &= google(c, label, r, table, g, keys);
    } else if let Some(p) = scheme.provider_mut::<PublicKeySource>() {
        ok &= public_keys(c, label, r, p, keys);
    }
    if let (Some(raw), false) = (
        jwks_url,
        scheme.provider_as::<GoogleSource>().is_some()
            || scheme.provider_as::<PublicKeySource>().is_some(),
    ) {
        c.at(
            raw,
            &field("keys.jwks_url"),
            "does not apply: only schemes google-oidc, gemini and standard fetch a JWK Set; \
             remove it",
        );
        ok = false;
    }
    (ok && policy.is_some()).then_some(scheme)
}

/// `topic_arns` and `confirm_subscription` of an `sns` source; whether both are right.
fn sns(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    table: Option<std::ops::Range<usize>>,
    s: &mut SnsSource,
    keys: KeyPolicy,
) -> bool {
    let field = |k: &str| format!("{label}.{k}");
    let mut ok = true;
    let f = field("topic_arns");
    match c.required(&r.topic_arns, table.clone(), &f) {
        Some(list) if list.get_ref().is_empty() => {
            c.at(
                list,
                &f,
                "is empty; name the topics (TopicArn) this source accepts",
            );
            ok = false;
        }
        Some(list) => {
            for (i, arn) in list.get_ref().iter().enumerate() {
                let a = arn.get_ref().trim();
                let stem = a.strip_suffix('*').unwrap_or(a);
                if !a.starts_with("arn:aws") || stem.contains('*') || a.len() > 256 {
                    c.at(
                        arn,
                        &format!("{label}.topic_arns[{i}]"),
                        "must be a topic ARN (arn:aws:sns:<region>:<account>:<topic>), \
                         optionally ending in `*`",
                    );
                    ok = false;
                } else {
                    s.topic_arns.push(a.to_owned());
                }
            }
        }
        None => ok = false,
    }
    s.confirm_subscription = r
        .confirm_subscription
        .as_ref()
        .is_some_and(|v| *v.get_ref());
    s.keys = keys;
    ok
}

/// `webhook_id` of a `paypal` source; whether it is right.
fn paypal(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    table: Option<std::ops::Range<usize>>,
    p: &mut PayPalSource,
    keys: KeyPolicy,
) -> bool {
    let field = |k: &str| format!("{label}.{k}");
    let mut ok = true;
    let f = field("webhook_id");
    match c.required(&r.webhook_id, table.clone(), &f) {
        Some(v) => match text(v) {
            Ok(id) if !id.contains('|') => p.webhook_id = id,
            Ok(_) => {
                c.at(v, &f, "may not contain `|`: it separates the signed fields");
                ok = false;
            }
            Err(m) => {
                c.at(v, &f, m);
                ok = false;
            }
        },
        None => ok = false,
    }
    p.keys = keys;
    ok
}

/// `audience`, `email` and `keys.jwks_url` of a `google-oidc` source;
/// whether they are right.
fn google(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    table: Option<std::ops::Range<usize>>,
    g: &mut GoogleSource,
    keys: KeyPolicy,
) -> bool {
    let field = |k: &str| format!("{label}.{k}");
    let mut ok = true;
    for (key, value, slot) in [
        ("audience", &r.audience, &mut g.audience),
        ("email", &r.email, &mut g.email),
    ] {
        let f = field(key);
        match c.required(value, table.clone(), &f) {
            Some(v) => match text(v) {
                Ok(t) => *slot = t,
                Err(m) => {
                    c.at(v, &f, m);
                    ok = false;
                }
            },
            None => ok = false,
        }
    }
    if let Some(raw) = r.keys.as_ref().and_then(|k| k.get_ref().jwks_url.as_ref()) {
        let f = field("keys.jwks_url");
        match KeyUrl::parse(raw.get_ref()) {
            Some(url) if url.host() == GOOGLE_JWKS_HOST || keys.allows_host(url.host()) => {
                g.jwks_url = url;
            }
            Some(url) => {
                c.at(
                    raw,
                    &f,
                    format!(
                        "host \"{}\" is not Google's ({GOOGLE_JWKS_HOST}); add it to \
                         keys.allow_hosts to fetch keys from a test server",
                        url.host()
                    ),
                );
                ok = false;
            }
            None => {
                c.at(raw, &f, "must be an https URL with a host");
                ok = false;
            }
        }
    }
    g.keys = keys;
    ok
}

/// `keys.jwks_url` of a `standard` or `gemini` source (any https host for
/// `standard`; Google's for `gemini` unless `allow_hosts` lists another);
/// whether it is right.
fn public_keys(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    p: &mut PublicKeySource,
    keys: KeyPolicy,
) -> bool {
    p.keys = keys;
    let Some(raw) = r.keys.as_ref().and_then(|k| k.get_ref().jwks_url.as_ref()) else {
        return true;
    };
    let f = format!("{label}.keys.jwks_url");
    match KeyUrl::parse(raw.get_ref()) {
        Some(url) if p.allows_host(url.host()) => {
            p.jwks_url = url;
            true
        }
        Some(url) => {
            c.at(
                raw,
                &f,
                format!(
                    "host \"{}\" is not Google's ({GEMINI_JWKS_HOST}); add it to \
                     keys.allow_hosts to fetch keys from a test server",
                    url.host()
                ),
            );
            false
        }
        None => {
            c.at(raw, &f, "must be an https URL with a host");
            false
        }
    }
}

fn text(v: &Spanned<String>) -> Result<String, &'static str> {
    let t = v.get_ref().trim();
    if t.is_empty() {
        return Err("is empty");
    }
    if t.len() > 1024 || t.chars().any(char::is_control) {
        return Err("must be at most 1024 printable characters");
    }
    Ok(t.to_owned())
}

/// `[source.keys]`: extra hosts and roots, both for tests against a local
/// key server.
fn policy(c: &mut Check<'_>, label: &str, keys: &Spanned<RawKeys>) -> Option<KeyPolicy> {
    let raw = keys.get_ref();
    let mut policy = KeyPolicy::default();
    let mut ok = true;
    if let Some(list) = &raw.allow_hosts {
        for (i, host) in list.get_ref().iter().enumerate() {
            let h = host.get_ref().trim().to_ascii_lowercase();
            let plain = !h.is_empty()
                && h.len() <= 253
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            if plain {
                policy.allow_hosts.push(h);
            } else {
                c.at(
                    host,
                    &format!("{label}.keys.allow_hosts[{i}]"),
                    "must be a host name or IPv4 address alone (no scheme, port, path or wildcard)",
                );
                ok = false;
            }
        }
    }
    if let Some(v) = &raw.ca_file {
        let f = format!("{label}.keys.ca_file");
        let path = std::path::PathBuf::from(v.get_ref());
        match c.secrets.file(&path) {
            Ok(bytes) => {
                let roots: Result<Vec<CertificateDer<'static>>, _> =
                    CertificateDer::pem_slice_iter(&bytes).collect();
                match roots {
                    Ok(roots) if !roots.is_empty() => {
                        policy.extra_roots = roots;
                        policy.ca_file = Some(path);
                    }
                    _ => {
                        c.at(v, &f, "holds no PEM certificate");
                        ok = false;
                    }
                }
            }
            Err(e) => {
                c.at(v, &f, format!("cannot read {}: {e}", v.get_ref()));
                ok = false;
            }
        }
    }
    ok.then_some(policy)
}
