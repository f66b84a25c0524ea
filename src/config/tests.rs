use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::HeaderName;

use super::*;
use crate::scheme::{Algorithm, Encoding, Locator, Scheme, TimestampFormat};

/// Secrets from maps, so tests never touch the process environment.
#[derive(Default)]
struct MapSecrets {
    env: HashMap<String, String>,
    files: HashMap<PathBuf, Vec<u8>>,
}

impl MapSecrets {
    fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }
    fn file(mut self, path: &str, bytes: &[u8]) -> Self {
        self.files.insert(PathBuf::from(path), bytes.to_vec());
        self
    }
}

impl SecretSource for MapSecrets {
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
    fn file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file or directory"))
    }
}

/// A valid config with one github source; tests append keys to that source
/// or further tables.
const BASE: &str = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "gh"
path = "/webhooks/github"
scheme = "github"
secrets = ["gh-secret"]
"#;

fn with(extra: &str) -> String {
    format!("{BASE}{extra}")
}

fn parse_with(src: &str, secrets: &MapSecrets) -> Result<Config, Error> {
    Config::from_toml_str(src, secrets)
}

fn config(src: &str) -> Config {
    config_with(src, &MapSecrets::default())
}

fn config_with(src: &str, secrets: &MapSecrets) -> Config {
    match parse_with(src, secrets) {
        Ok(c) => c,
        Err(e) => panic!("config should be valid, got:\n{e}\n--- config ---\n{src}"),
    }
}

fn problems(src: &str) -> Vec<Problem> {
    problems_with(src, &MapSecrets::default())
}

fn problems_with(src: &str, secrets: &MapSecrets) -> Vec<Problem> {
    match parse_with(src, secrets) {
        Ok(_) => panic!("config should be refused:\n{src}"),
        Err(e) => e.0,
    }
}

/// The 1-based line of the only occurrence of `marker` in `src`.
fn line_of(src: &str, marker: &str) -> usize {
    let hits: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "marker {marker:?} must occur on exactly one line"
    );
    hits[0]
}

fn show(problems: &[Problem]) -> String {
    Error(problems.to_vec()).to_string()
}

/// Asserts a problem on `field`, at the line holding `marker` (or no line
/// when `marker` is empty), whose message contains `fragment`.
fn has(problems: &[Problem], src: &str, field: &str, marker: &str, fragment: &str) {
    let line = (!marker.is_empty()).then(|| line_of(src, marker));
    let found = problems
        .iter()
        .any(|p| p.field == field && p.line == line && p.message.contains(fragment));
    assert!(
        found,
        "expected a problem on {field} at line {line:?} containing {fragment:?}, got:\n{}",
        show(problems)
    );
}

/// Asserts that `src` is refused with exactly one problem, as described.
fn only(src: &str, field: &str, marker: &str, fragment: &str) {
    only_with(src, &MapSecrets::default(), field, marker, fragment);
}

fn only_with(src: &str, secrets: &MapSecrets, field: &str, marker: &str, fragment: &str) {
    let ps = problems_with(src, secrets);
    has(&ps, src, field, marker, fragment);
    assert_eq!(ps.len(), 1, "expected one problem, got:\n{}", show(&ps));
}

// ---------------------------------------------------------------------------
// Whole files

const OMNIBUS: &str = r#"
[server]
listen = "0.0.0.0:8443"
upstream = "https://app.internal:3443"
upstream_timeout = "2500ms"
max_body_bytes = 65536
unmatched = "forward"
trusted_proxies = ["10.0.0.0/8", "fd00::/8"]

[server.tls]
cert = "/tls/cert.pem"
key = "/tls/key.pem"

[admin]
listen = "[::1]:9191"

[store]
kind = "redis"
url = "redis://:hunter2@redis.internal:6380/2"
nonce_ttl = "48h"
key_prefix = "hg-test"
memory_max_entries = 5000

[[source]]
name = "stripe"
path = "/webhooks/stripe/"
scheme = "stripe"
secrets = ["whsec_current", { env = "STRIPE_PREVIOUS" }, { file = "/run/secrets/stripe" }]
tolerance = "10m"
event_types = ["invoice.paid", "customer.subscription.*"]
delivery = "queue"

[source.ordering]
resource = "/data/object/id"
version = "/data/object/updated"

[[source]]
name = "github"
path = "/webhooks/github"
scheme = "github"
secrets = ["gh"]
delivery = "forward"
allow_ips = ["192.30.252.0/22", "2a0a:a440::/29", "140.82.115.7"]

[[source]]
name = "shopify"
path = "/webhooks/shopify"
scheme = "shopify"
secrets = ["shp"]

[[source]]
name = "slack"
path = "/webhooks/slack"
scheme = "slack"
secrets = ["slk"]

[[source]]
name = "standard"
path = "/"
scheme = "standard"
secrets = ["whsec_c2VjcmV0LWtleQ=="]

[[source]]
name = "acme"
path = "/webhooks/acme"
scheme = "generic"
secrets = [{ file = "/run/secrets/acme" }]
tolerance = "30s"
event_types = ["order.*", "*"]

[source.generic]
signature_header = "X-Acme-Signature"
signature_prefix = "sha256="
encoding = "base64"
signed_payload = "{id}.{timestamp}.{body}"
timestamp_header = "X-Acme-Timestamp"
event_id = { header = "X-Acme-Delivery" }
event_type = { pointer = "/kind" }

[[source]]
name = "plain"
path = "/plain"
scheme = "generic"
secrets = ["p"]

[source.generic]
signature_header = "X-Plain-Sig"
encoding = "hex"
event_id = { pointer = "/id" }
event_type = { header = "X-Plain-Type" }
"#;

fn omnibus_secrets() -> MapSecrets {
    MapSecrets::default()
        .env("STRIPE_PREVIOUS", "whsec_previous")
        .file("/run/secrets/stripe", b"whsec_from_file\r\n")
        .file("/run/secrets/acme", b"acme-key\n")
        .file("/tls/cert.pem", b"cert")
        .file("/tls/key.pem", b"key")
}

#[test]
fn omnibus_parses_every_key() {
    let c = config_with(OMNIBUS, &omnibus_secrets());

    assert_eq!(c.server.listen, "0.0.0.0:8443".parse().expect("addr"));
    assert_eq!(c.server.upstream, "https://app.internal:3443");
    assert_eq!(c.server.upstream_timeout, Duration::from_millis(2500));
    assert_eq!(c.server.max_body_bytes, 65536);
    assert_eq!(c.server.unmatched, Unmatched::Forward);
    let ip = |text: &str| -> std::net::IpAddr { text.parse().expect("ip") };
    assert!(c.server.trusted_proxies.contains(ip("10.9.8.7")));
    assert!(c.server.trusted_proxies.contains(ip("fd12::1")));
    assert!(!c.server.trusted_proxies.contains(ip("192.168.0.1")));
    let tls = c.server.tls.as_ref().expect("tls");
    assert_eq!(tls.cert, PathBuf::from("/tls/cert.pem"));
    assert_eq!(tls.key, PathBuf::from("/tls/key.pem"));

    assert_eq!(c.admin.listen, "[::1]:9191".parse().expect("addr"));

    assert_eq!(
        c.store.kind,
        StoreKind::Redis {
            url: "redis://:hunter2@redis.internal:6380/2".to_owned()
        }
    );
    assert_eq!(c.store.nonce_ttl, Duration::from_secs(48 * 3600));
    assert_eq!(c.store.key_prefix, "hg-test");
    assert_eq!(c.store.memory_max_entries, 5000);

    let names: Vec<&str> = c.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "stripe", "github", "shopify", "slack", "standard", "acme", "plain"
        ]
    );

    let stripe = &c.sources[0];
    assert_eq!(stripe.path, "/webhooks/stripe");
    assert_eq!(stripe.scheme, Scheme::Stripe);
    let keys: Vec<&[u8]> = stripe.keys.iter().map(|k| k.expose()).collect();
    assert_eq!(
        keys,
        [&b"whsec_current"[..], b"whsec_previous", b"whsec_from_file"]
    );
    assert_eq!(stripe.secret_files, [PathBuf::from("/run/secrets/stripe")]);
    assert_eq!(stripe.tolerance, Duration::from_secs(600));
    assert_eq!(
        stripe.event_types,
        ["invoice.paid", "customer.subscription.*"]
    );
    assert_eq!(stripe.delivery, Delivery::Queue);
    assert_eq!(
        stripe.ordering,
        Some(Ordering {
            resource: "/data/object/id".to_owned(),
            version: "/data/object/updated".to_owned(),
        })
    );
    assert!(stripe.accepts_type(Some("customer.subscription.updated")));
    assert!(!stripe.accepts_type(Some("invoice.created")));

    let github = &c.sources[1];
    assert_eq!(github.scheme, Scheme::Github);
    assert_eq!(github.tolerance, Duration::ZERO);
    assert_eq!(github.delivery, Delivery::Forward);
    assert!(github.event_types.is_empty());
    assert_eq!(github.ordering, None);
    assert!(github.secret_files.is_empty());
    let allowed = github.allow_ips.as_ref().expect("allow_ips");
    for yes in [
        "192.30.255.254",
        "2a0a:a447::1",
        "140.82.115.7",
        "::ffff:140.82.115.7",
    ] {
        assert!(allowed.contains(ip(yes)), "{yes}");
    }
    for no in ["192.30.251.1", "140.82.115.8", "2a0a:a448::1"] {
        assert!(!allowed.contains(ip(no)), "{no}");
    }
    assert_eq!(c.sources[0].allow_ips, None);

    assert_eq!(c.sources[2].scheme, Scheme::Shopify);
    assert_eq!(c.sources[3].scheme, Scheme::Slack);
    assert_eq!(c.sources[3].tolerance, Duration::from_secs(300));

    let standard = &c.sources[4];
    assert_eq!(standard.path, "/");
    assert_eq!(standard.scheme, Scheme::Standard);
    // whsec_ stripped and base64 decoded.
    assert_eq!(standard.keys[0].expose(), b"secret-key");

    let acme = &c.sources[5];
    assert_eq!(acme.keys[0].expose(), b"acme-key");
    assert_eq!(acme.secret_files, [PathBuf::from("/run/secrets/acme")]);
    assert_eq!(acme.tolerance, Duration::from_secs(30));
    assert_eq!(acme.event_types, ["order.*", "*"]);
    let Scheme::Generic(g) = &acme.scheme else {
        panic!("acme should be generic: {:?}", acme.scheme)
    };
    assert_eq!(
        g.signature_header,
        HeaderName::from_static("x-acme-signature")
    );
    assert_eq!(g.signature_prefix.as_deref(), Some("sha256="));
    assert_eq!(g.encoding, Encoding::Base64);
    assert_eq!(g.signed_payload, "{id}.{timestamp}.{body}");
    assert_eq!(
        g.timestamp_header,
        Some(HeaderName::from_static("x-acme-timestamp"))
    );
    assert_eq!(
        g.event_id,
        Some(Locator::Header(HeaderName::from_static("x-acme-delivery")))
    );
    assert_eq!(g.event_type, Some(Locator::Pointer("/kind".to_owned())));
    assert!(acme.scheme.signs_timestamp());

    let plain = &c.sources[6];
    let Scheme::Generic(g) = &plain.scheme else {
        panic!("plain should be generic: {:?}", plain.scheme)
    };
    assert_eq!(g.signature_prefix, None);
    assert_eq!(g.encoding, Encoding::Hex);
    assert_eq!(g.signed_payload, "{body}");
    assert_eq!(g.timestamp_header, None);
    assert_eq!(g.event_id, Some(Locator::Pointer("/id".to_owned())));
    assert_eq!(
        g.event_type,
        Some(Locator::Header(HeaderName::from_static("x-plain-type")))
    );
    assert_eq!(plain.tolerance, Duration::ZERO);
    assert!(!plain.scheme.signs_timestamp());
}

#[test]
fn defaults() {
    let c = config(BASE);
    assert_eq!(c.server.upstream_timeout, Duration::from_secs(10));
    assert_eq!(c.server.max_body_bytes, 1_048_576);
    assert_eq!(c.server.unmatched, Unmatched::Reject);
    assert!(c.server.trusted_proxies.is_empty());
    assert!(c.server.tls.is_none());
    assert_eq!(c.admin.listen, "127.0.0.1:9090".parse().expect("addr"));
    assert_eq!(c.store.kind, StoreKind::Memory);
    assert_eq!(c.store.nonce_ttl, Duration::from_secs(24 * 3600));
    assert_eq!(c.store.key_prefix, "hookgate");
    assert_eq!(c.store.memory_max_entries, 1_000_000);
    let s = &c.sources[0];
    assert_eq!(s.delivery, Delivery::Forward);
    assert!(s.event_types.is_empty());
    assert_eq!(s.allow_ips, None);
    assert_eq!(s.ordering, None);

    let c = config(&BASE.replace("github", "stripe"));
    assert_eq!(c.sources[0].tolerance, Duration::from_secs(300));

    let generic = with(
        "[source.generic]\nsignature_header = \"X-Sig\"\nencoding = \"hex\"\n\
         timestamp_header = \"X-Ts\"\nsigned_payload = \"{timestamp}.{body}\"\n",
    )
    .replace("scheme = \"github\"", "scheme = \"generic\"");
    assert_eq!(
        config(&generic).sources[0].tolerance,
        Duration::from_secs(300)
    );
}

#[test]
fn example_config_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml");
    let text = std::fs::read_to_string(path).expect("config.example.toml is readable");
    let c = match Config::from_toml_str(&text, &SystemSecrets) {
        Ok(c) => c,
        Err(e) => panic!("{}", e.display_in(Path::new(path))),
    };
    assert_eq!(c.server.listen, "127.0.0.1:8080".parse().expect("addr"));
    assert_eq!(c.server.upstream, "http://127.0.0.1:3000");
    assert_eq!(c.admin.listen, "127.0.0.1:9090".parse().expect("addr"));
    assert_eq!(
        c.store.kind,
        StoreKind::Sqlite {
            path: "hookgate.db".into(),
            sync: crate::store::sqlite::Sync::Full
        }
    );
    let schemes: Vec<&str> = c.sources.iter().map(|s| s.scheme.name()).collect();
    assert_eq!(
        schemes,
        [
            "stripe", "github", "github", "shopify", "slack", "standard", "generic"
        ]
    );
    assert!(c.sources.iter().all(|s| s.secret_files.is_empty()));

    // And through `load`, which reads the file itself.
    let loaded = Config::load(Path::new(path)).expect("load");
    assert_eq!(loaded.sources.len(), 7);
    // `load` takes the file's relative store path from the file's directory.
    assert_eq!(
        loaded.store.kind,
        StoreKind::Sqlite {
            path: Path::new(env!("CARGO_MANIFEST_DIR")).join("hookgate.db"),
            sync: crate::store::sqlite::Sync::Full
        }
    );
}

// ---------------------------------------------------------------------------
// Rendering and loading

#[test]
fn display_is_one_line_per_problem() {
    let e = Error(vec![
        Problem {
            line: Some(12),
            field: "source[stripe].secrets[1]".to_owned(),
            message: "environment variable STRIPE_PREVIOUS_SECRET is not set".to_owned(),
        },
        Problem {
            line: None,
            field: "server".to_owned(),
            message: "missing".to_owned(),
        },
        Problem {
            line: Some(3),
            field: String::new(),
            message: "invalid TOML".to_owned(),
        },
    ]);
    assert_eq!(
        e.to_string(),
        "line 12: source[stripe].secrets[1]: environment variable STRIPE_PREVIOUS_SECRET is not set\n\
         server: missing\n\
         line 3: invalid TOML"
    );
    assert_eq!(
        e.display_in(Path::new("config.toml")).to_string(),
        "config.toml:12: source[stripe].secrets[1]: environment variable STRIPE_PREVIOUS_SECRET is not set\n\
         config.toml: server: missing\n\
         config.toml:3: invalid TOML"
    );
}

#[test]
fn env_secret_problem_renders_like_the_design() {
    let src = BASE.replace(
        "secrets = [\"gh-secret\"]",
        "secrets = [\"whsec_current\",\n  { env = \"STRIPE_PREVIOUS_SECRET\" }]",
    );
    let e = parse_with(&src, &MapSecrets::default()).expect_err("unset variable");
    let line = line_of(&src, "STRIPE_PREVIOUS_SECRET");
    assert_eq!(
        e.display_in(Path::new("config.toml")).to_string(),
        format!(
            "config.toml:{line}: source[gh].secrets[1]: environment variable \
             STRIPE_PREVIOUS_SECRET is not set"
        )
    );
}

#[test]
fn load_reports_an_unreadable_file() {
    let path = Path::new("/nonexistent/hookgate/config.toml");
    let e = Config::load(path).expect_err("missing file");
    assert_eq!(e.0.len(), 1);
    assert_eq!(e.0[0].line, None);
    assert_eq!(e.0[0].field, "/nonexistent/hookgate/config.toml");
    assert!(e.0[0].message.contains("cannot read"), "{e}");
    // The path is shown once whichever way it is rendered.
    for text in [e.to_string(), e.display_in(path).to_string()] {
        assert_eq!(
            text.matches("/nonexistent/hookgate/config.toml").count(),
            1,
            "{text}"
        );
    }
}

#[test]
fn problems_are_sorted_by_line() {
    let src = r#"
[server]
listen = "nope"
upstream = "ftp://x"

[[source]]
name = "a"
path = "b"
scheme = "nope"
secrets = []
"#;
    let ps = problems(src);
    let lines: Vec<Option<usize>> = ps.iter().map(|p| p.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

// ---------------------------------------------------------------------------
// Secrets never printed

#[test]
fn secret_values_never_appear_in_problems() {
    let src = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "std"
path = "/std"
scheme = "standard"
secrets = ["whsec_TOPSECRET!not-base64", "TOPSECRET-two%%", { env = "STD_SECRET" }]

[[source]]
name = "bad-shape"
path = "/bad"
scheme = "github"
secrets = "TOPSECRET-not-an-array"

[[source]]
name = "bad-entry"
path = "/bad-entry"
scheme = "github"
secrets = [{ env = "X", literal = "TOPSECRET-in-table" }, ["TOPSECRET-in-array"], { file = "TOPSECRET-missing-file-is-a-path" }]
tolerance = "TOPSECRET"
"#;
    let secrets = MapSecrets::default().env("STD_SECRET", "TOPSECRET-from-env");
    let e = parse_with(src, &secrets).expect_err("invalid secrets");
    has(
        &e.0,
        src,
        "source[std].secrets[0]",
        "whsec_TOPSECRET",
        "not whsec_ followed by base64",
    );
    has(
        &e.0,
        src,
        "source[std].secrets[1]",
        "whsec_TOPSECRET",
        "base64",
    );
    has(
        &e.0,
        src,
        "source[std].secrets[2]",
        "whsec_TOPSECRET",
        "environment variable STD_SECRET:",
    );
    has(
        &e.0,
        src,
        "source[bad-shape].secrets",
        "TOPSECRET-not-an-array",
        "must be an array",
    );
    has(
        &e.0,
        src,
        "source[bad-entry].secrets[0]",
        "TOPSECRET-in-table",
        "must be a string",
    );
    has(
        &e.0,
        src,
        "source[bad-entry].secrets[1]",
        "TOPSECRET-in-table",
        "must be a string",
    );
    // Everything rendered, every way: only the file path (not a secret) and
    // the tolerance text (not a secret either) may mention the marker.
    for text in [
        e.to_string(),
        e.display_in(Path::new("c.toml")).to_string(),
        format!("{e:#?}"),
    ] {
        for line in text.lines() {
            let allowed = line.contains("missing-file-is-a-path") || line.contains("tolerance");
            assert!(
                allowed || !line.contains("TOPSECRET"),
                "secret text leaked: {line}"
            );
        }
    }
}

#[test]
fn debug_of_a_config_hides_secrets_and_redis_passwords() {
    let c = config_with(OMNIBUS, &omnibus_secrets());
    let debug = format!("{c:?}");
    for secret in [
        "whsec_current",
        "whsec_previous",
        "whsec_from_file",
        "acme-key",
        "hunter2",
    ] {
        assert!(!debug.contains(secret), "{secret} leaked in Debug");
    }
    assert!(debug.contains("[redacted]"));
    assert!(debug.contains("redis.internal:6380"));
}

#[test]
fn redacting_urls() {
    assert_eq!(
        redact_url("redis://127.0.0.1:6379"),
        "redis://127.0.0.1:6379"
    );
    assert_eq!(
        redact_url("redis://:pw@host:6379/0"),
        "redis://:[redacted]@host:6379/0"
    );
    assert_eq!(
        redact_url("rediss://user:p@ss@host"),
        "rediss://user:[redacted]@host"
    );
    assert_eq!(redact_url("redis://token@host"), "redis://[redacted]@host");
    assert_eq!(redact_url("redis://host/a@b"), "redis://host/a@b");
    let kind = StoreKind::RedisCluster {
        urls: vec![
            "redis://:pw1@a:7000".to_owned(),
            "redis://b:7000".to_owned(),
        ],
    };
    let debug = format!("{kind:?}");
    assert!(!debug.contains("pw1"), "{debug}");
    assert!(debug.contains("b:7000"), "{debug}");
}

// ---------------------------------------------------------------------------
// TOML syntax and unknown keys

#[test]
fn toml_syntax_errors_carry_their_line() {
    let src = with("tolerance = \"5m\nnext = 1\n");
    let ps = problems(&src);
    has(&ps, &src, "", "tolerance = ", "invalid TOML");
    let src = "[server]\nlisten = = 1\n[server]\n";
    let ps = problems(src);
    has(&ps, src, "", "listen = =", "invalid TOML");
    assert!(
        ps.len() >= 2,
        "every syntax error is reported: {}",
        show(&ps)
    );
}

#[test]
fn unknown_keys_at_every_level() {
    let src = r#"
colour = "blue"

[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"
listn = "typo-server"

[server.tls]
cert = "/c"
key = "/k"
chain = "typo-tls"

[admin]
listen = "127.0.0.1:9090"
port = 9090

[store]
ttl = "typo-store"

[[source]]
name = "acme"
path = "/acme"
scheme = "generic"
secrets = ["x"]
secret = "typo-source"

[source.ordering]
resource = "/id"
version = "/v"
field = "typo-ordering"

[source.generic]
signature_header = "X-Sig"
encoding = "hex"
event_id = { header = "X-Id" }
hash = "typo-generic"
event_type = { headr = "typo-locator" }
"#;
    let secrets = MapSecrets::default().file("/c", b"c").file("/k", b"k");
    let ps = problems_with(src, &secrets);
    has(&ps, src, "colour", "colour", "unknown key `colour`");
    has(
        &ps,
        src,
        "server.listn",
        "listn",
        "unknown key `listn`; did you mean `listen`?",
    );
    // A close key is named instead of the whole list; a far one lists them.
    let named = ps
        .iter()
        .find(|p| p.field == "server.listn")
        .map(|p| p.message.clone())
        .unwrap_or_default();
    assert!(!named.contains("expected one of"), "{named}");
    let listed = ps
        .iter()
        .find(|p| p.field == "colour")
        .map(|p| p.message.clone())
        .unwrap_or_default();
    assert!(listed.contains("expected one of"), "{listed}");
    has(&ps, src, "server.tls.chain", "chain", "unknown key");
    has(&ps, src, "admin.port", "port = 9090", "unknown key");
    has(&ps, src, "store.ttl", "typo-store", "unknown key");
    has(
        &ps,
        src,
        "source[acme].secret",
        "typo-source",
        "unknown key",
    );
    has(
        &ps,
        src,
        "source[acme].ordering.field",
        "typo-ordering",
        "unknown key",
    );
    has(
        &ps,
        src,
        "source[acme].generic.hash",
        "typo-generic",
        "unknown key",
    );
    has(
        &ps,
        src,
        "source[acme].generic.event_type",
        "typo-locator",
        "must be { header",
    );
    assert_eq!(ps.len(), 9, "{}", show(&ps));
}

#[test]
fn unknown_key_in_an_unnamed_source_uses_its_index() {
    let src = with("\n[[source]]\npath = \"/x\"\nbogus = 1\n");
    let ps = problems(&src);
    has(&ps, &src, "source[1].bogus", "bogus", "unknown key");
    let header = src
        .rfind("[[source]]")
        .map(|i| super::raw::line_of(&src, i));
    assert!(
        ps.iter()
            .any(|p| p.field == "source[1].name" && p.line == header),
        "{}",
        show(&ps)
    );
}

#[test]
fn wrong_types_are_reported_with_the_rest() {
    let src = r#"
[server]
listen = 8080
upstream = "http://127.0.0.1:3000"
max_body_bytes = "big"

[[source]]
name = "gh"
path = "/gh"
scheme = "github"
secrets = ["x"]
event_types = ["push", 3]

[[source]]
name = "gh2"
path = "/gh/"
scheme = "github"
secrets = ["y"]
"#;
    let ps = problems(src);
    has(&ps, src, "server.listen", "listen = 8080", "invalid type");
    has(&ps, src, "server.max_body_bytes", "\"big\"", "invalid type");
    has(
        &ps,
        src,
        "source[gh].event_types[1]",
        "\"push\", 3",
        "invalid type",
    );
    has(&ps, src, "source[gh2].path", "/gh/", "already used");
    // A refused value is not also reported as missing.
    assert!(
        !ps.iter().any(|p| p.message.contains("required")),
        "{}",
        show(&ps)
    );
}

#[test]
fn type_errors_name_toml_shapes() {
    let src = "server = 5\n";
    let ps = problems(src);
    has(&ps, src, "server", "server = 5", "expected a table");
    assert!(!show(&ps).contains("Raw"), "{}", show(&ps));
    let src = BASE.replace("[server]\n", "[server]\nmax_body_bytes = 1.5\n");
    only(&src, "server.max_body_bytes", "1.5", "expected an integer");
    let src = with("ordering = \"/id\"\n");
    only(&src, "source[gh].ordering", "ordering", "expected a table");
}

#[test]
fn single_source_table_instead_of_array() {
    let src = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[source]
name = "gh"
"#;
    let ps = problems(src);
    has(&ps, src, "source", "[source]", "write [[source]]");
    assert_eq!(ps.len(), 1, "{}", show(&ps));
}

// ---------------------------------------------------------------------------
// [server] and [admin]

#[test]
fn server_table_and_required_keys() {
    only(
        "[[source]]\nname = \"gh\"\npath = \"/\"\nscheme = \"github\"\nsecrets = [\"x\"]\n",
        "server",
        "",
        "[server] table is missing",
    );
    let src = BASE.replace("listen = \"127.0.0.1:8080\"\n", "");
    only(&src, "server.listen", "[server]", "required");
    let src = BASE.replace("upstream = \"http://127.0.0.1:3000\"\n", "");
    only(&src, "server.upstream", "[server]", "required");
}

#[test]
fn listen_addresses() {
    let src = BASE.replace("127.0.0.1:8080", "localhost:8080");
    only(
        &src,
        "server.listen",
        "localhost:8080",
        "not an IP address and port",
    );
    let src = BASE.replace("127.0.0.1:8080", "0.0.0.0");
    only(
        &src,
        "server.listen",
        "0.0.0.0",
        "not an IP address and port",
    );
    let src = with("[admin]\nlisten = \"9090\"\n");
    only(
        &src,
        "admin.listen",
        "\"9090\"",
        "not an IP address and port",
    );
}

#[test]
fn admin_must_not_share_the_public_port() {
    let src = with("[admin]\nlisten = \"0.0.0.0:8080\"\n");
    only(
        &src,
        "admin.listen",
        "0.0.0.0:8080",
        "clashes with server.listen",
    );
    // Port 0 means "any free port": no clash.
    let src = BASE.replace("127.0.0.1:8080", "127.0.0.1:0") + "[admin]\nlisten = \"127.0.0.1:0\"\n";
    config(&src);
}

#[test]
fn upstream_uri() {
    for (bad, fragment) in [
        ("ftp://127.0.0.1:3000", "http:// or https://"),
        ("/local/path", "http:// or https://"),
        ("127.0.0.1:3000", "http:// or https://"),
        ("http://127.0.0.1:3000/api", "has a path or query"),
        ("http://127.0.0.1:3000/?a=b", "has a path or query"),
        ("http://exa mple", "is not a URI"),
        ("http://127.0.0.1:8080", "own listener"),
        ("http://localhost:8080", "own listener"),
    ] {
        let src = BASE.replace("http://127.0.0.1:3000", bad);
        only(&src, "server.upstream", "upstream =", fragment);
    }
    for good in [
        "https://app:443",
        "http://app.internal",
        "http://[::1]:3000/",
    ] {
        config(&BASE.replace("http://127.0.0.1:3000", good));
    }
}

#[test]
fn server_durations_and_sizes() {
    let cases = [
        (
            "upstream_timeout = \"10\"",
            "server.upstream_timeout",
            "not a duration",
        ),
        (
            "upstream_timeout = \"0s\"",
            "server.upstream_timeout",
            "zero",
        ),
        (
            "max_body_bytes = 0",
            "server.max_body_bytes",
            "greater than zero",
        ),
        (
            "max_body_bytes = -5",
            "server.max_body_bytes",
            "greater than zero",
        ),
        (
            "unmatched = \"drop\"",
            "server.unmatched",
            "expected \"reject\" or \"forward\"",
        ),
    ];
    for (line, field, fragment) in cases {
        let src = BASE.replace("[server]\n", &format!("[server]\n{line}\n"));
        only(&src, field, line, fragment);
    }
}

#[test]
fn tls_files_must_be_given_and_readable() {
    let secrets = MapSecrets::default().file("/tls/cert", b"c");
    let src = BASE.replace(
        "[[source]]",
        "[server.tls]\ncert = \"/tls/cert\"\n\n[[source]]",
    );
    only_with(&src, &secrets, "server.tls.key", "[server.tls]", "required");
    let src = BASE.replace(
        "[[source]]",
        "[server.tls]\ncert = \"/tls/cert\"\nkey = \"/tls/missing\"\n\n[[source]]",
    );
    only_with(
        &src,
        &secrets,
        "server.tls.key",
        "/tls/missing",
        "cannot read /tls/missing",
    );
}

// ---------------------------------------------------------------------------
// [store]

#[test]
fn store_kind_and_urls() {
    let cases = [
        (
            "kind = \"mongo\"",
            "store.kind",
            "kind =",
            "unknown value \"mongo\"",
        ),
        ("kind = \"redis\"", "store.url", "[store]", "needs url"),
        (
            "kind = \"redis\"\nurl = \"http://r:6379\"",
            "store.url",
            "url =",
            "redis:// or rediss://",
        ),
        (
            "kind = \"redis\"\nurl = \"redis://\"",
            "store.url",
            "url =",
            "not a usable Redis URL",
        ),
        (
            "kind = \"redis\"\nurl = \"redis://r:6379\"\nurls = [\"redis://r:6379\"]",
            "store.urls",
            "urls =",
            "not urls",
        ),
        (
            "kind = \"redis-cluster\"",
            "store.urls",
            "[store]",
            "needs urls",
        ),
        (
            "kind = \"redis-cluster\"\nurls = []",
            "store.urls",
            "urls =",
            "at least one cluster node",
        ),
        (
            "kind = \"redis-cluster\"\nurls = [\"redis://a:7000\",\n  \"valkey://b:7000\"]",
            "store.urls[1]",
            "valkey://",
            "redis:// or rediss://",
        ),
        (
            "kind = \"redis-cluster\"\nurls = [\"redis://a:7000\"]\nurl = \"redis://a:7000\"",
            "store.url",
            "url = \"redis",
            "not url",
        ),
        (
            "url = \"redis://r:6379\"",
            "store.url",
            "url =",
            "memory store takes no url",
        ),
        (
            "urls = [\"redis://r:6379\"]",
            "store.urls",
            "urls =",
            "memory store takes no urls",
        ),
        (
            "nonce_ttl = \"0ms\"",
            "store.nonce_ttl",
            "nonce_ttl",
            "zero",
        ),
        (
            "nonce_ttl = \"a day\"",
            "store.nonce_ttl",
            "nonce_ttl",
            "not a duration",
        ),
        (
            "key_prefix = \"\"",
            "store.key_prefix",
            "key_prefix",
            "is empty",
        ),
        (
            "key_prefix = \"hook gate\"",
            "store.key_prefix",
            "key_prefix",
            "spaces",
        ),
        (
            "key_prefix = \"{hg}\"",
            "store.key_prefix",
            "key_prefix",
            "hash tags",
        ),
        (
            "memory_max_entries = 0",
            "store.memory_max_entries",
            "memory_max",
            "greater than zero",
        ),
    ];
    for (body, field, marker, fragment) in cases {
        let src = with(&format!("\n[store]\n{body}\n"));
        only(&src, field, marker, fragment);
    }
}

#[test]
fn sentinel_store_with_credentials_and_replication() {
    let secrets = MapSecrets::default()
        .env("REDIS_USER", "hookgate")
        .file("/run/redis/password", b"s3cr3t-pw\n");
    let src = with(
        r#"
[store]
kind = "redis-sentinel"
sentinels = ["redis://10.0.0.5:26379", "redis://:sentinel-pw@10.0.0.6:26379"]
master = "mymaster"
username = { env = "REDIS_USER" }
password = { file = "/run/redis/password" }
min_replicas = 1
replica_timeout = "250ms"
"#,
    );
    let c = config_with(&src, &secrets);
    let StoreKind::RedisSentinel(sentinel) = &c.store.kind else {
        panic!("expected a sentinel store, got {:?}", c.store.kind);
    };
    assert_eq!(sentinel.sentinels.len(), 2);
    assert_eq!(sentinel.master, "mymaster");
    assert_eq!(
        sentinel.username.as_ref().map(|s| s.expose().to_vec()),
        Some(b"hookgate".to_vec())
    );
    assert_eq!(
        sentinel.password.as_ref().map(|s| s.expose().to_vec()),
        Some(b"s3cr3t-pw".to_vec())
    );
    assert_eq!(c.store.min_replicas, 1);
    assert_eq!(c.store.replica_timeout, Duration::from_millis(250));
    assert_eq!(c.store.master_line, Some(line_of(&src, "master =")));
    // Neither password reaches Debug output.
    let debug = format!("{:?}", c.store);
    assert!(
        !debug.contains("s3cr3t-pw") && !debug.contains("sentinel-pw"),
        "{debug}"
    );

    // The defaults: no WAIT, 500ms if it is turned on.
    let plain = config(&with(
        "\n[store]\nkind = \"redis\"\nurl = \"redis://r:6379\"\n",
    ));
    assert_eq!(plain.store.min_replicas, 0);
    assert_eq!(plain.store.replica_timeout, Duration::from_millis(500));
}

#[test]
fn sentinel_and_replication_problems() {
    let cases = [
        (
            "min_replicas = 1",
            "store.min_replicas",
            "min_replicas",
            "memory store has no replicas",
        ),
        (
            "replica_timeout = \"1s\"",
            "store.replica_timeout",
            "replica_timeout",
            "memory store has no replicas",
        ),
        (
            "kind = \"redis\"\nurl = \"redis://r:6379\"\nmin_replicas = -1",
            "store.min_replicas",
            "min_replicas",
            "whole number from 0 to 64",
        ),
        (
            "kind = \"redis\"\nurl = \"redis://r:6379\"\nmin_replicas = 1\nreplica_timeout = \"30s\"",
            "store.replica_timeout",
            "replica_timeout",
            "at most 10s",
        ),
        (
            "kind = \"redis-sentinel\"\nmaster = \"m\"",
            "store.sentinels",
            "[store]",
            "needs sentinels",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = [\"redis://s:26379\"]",
            "store.master",
            "[store]",
            "needs master",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = []\nmaster = \"m\"",
            "store.sentinels",
            "sentinels =",
            "at least one sentinel",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = [\"redis://s:26379\",\n \"tcp://t:26379\"]\nmaster = \"m\"",
            "store.sentinels[1]",
            "tcp://",
            "redis:// or rediss://",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = [\"redis://s:26379\"]\nmaster = \"my master\"",
            "store.master",
            "master =",
            "without spaces",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = [\"redis://s:26379\"]\nmaster = \"m\"\nurl = \"redis://r:6379\"",
            "store.url",
            "url =",
            "not url",
        ),
        (
            "kind = \"redis-sentinel\"\nsentinels = [\"redis://s:26379\"]\nmaster = \"m\"\npassword = { env = \"NOPE\" }",
            "store.password",
            "password =",
            "NOPE is not set",
        ),
        (
            "kind = \"redis\"\nurl = \"redis://r:6379\"\nmaster = \"m\"",
            "store.master",
            "master =",
            "only kind = \"redis-sentinel\"",
        ),
        (
            "kind = \"redis-cluster\"\nurls = [\"redis://r:6379\"]\npassword = \"pw\"",
            "store.password",
            "password =",
            "put the credentials in the URL",
        ),
    ];
    for (body, field, marker, fragment) in cases {
        let src = with(&format!("\n[store]\n{body}\n"));
        only(&src, field, marker, fragment);
    }
}

#[test]
fn redis_url_passwords_stay_out_of_problems() {
    let src = with("\n[store]\nkind = \"redis\"\nurl = \"redis://:hunter2@0.0.0.0:6379\"\n");
    let ps = problems(&src);
    has(&ps, &src, "store.url", "hunter2", "not a usable Redis URL");
    assert!(!show(&ps).contains("hunter2"), "{}", show(&ps));
}

#[test]
fn valid_stores() {
    let c = config(&with(
        "\n[store]\nkind = \"redis\"\nurl = \"redis://r:6379\"\n",
    ));
    assert_eq!(
        c.store.kind,
        StoreKind::Redis {
            url: "redis://r:6379".to_owned()
        }
    );
    let c = config(&with(
        "\n[store]\nkind = \"redis-cluster\"\nurls = [\"redis://a:7000\", \"redis://b:7000\"]\n",
    ));
    assert_eq!(
        c.store.kind,
        StoreKind::RedisCluster {
            urls: vec!["redis://a:7000".to_owned(), "redis://b:7000".to_owned()]
        }
    );
}

#[test]
fn queue_delivery_needs_a_durable_store() {
    let src = with("delivery = \"queue\"\n");
    only(&src, "source[gh].delivery", "delivery", "memory store");
    let src = with("delivery = \"queue\"\n[store]\nkind = \"redis\"\nurl = \"redis://r:6379\"\n");
    assert_eq!(config(&src).sources[0].delivery, Delivery::Queue);
    let src = with("delivery = \"later\"\n");
    only(
        &src,
        "source[gh].delivery",
        "delivery",
        "\"forward\" or \"queue\"",
    );
}

#[test]
fn connection_limits_and_read_timeout() {
    let c = config(BASE);
    assert_eq!(c.server.max_connections, 10_000);
    assert_eq!(c.server.request_read_timeout, Duration::from_secs(10));
    let src = BASE.replace(
        "[server]\n",
        "[server]\nmax_connections = 64\nrequest_read_timeout = \"2s\"\n",
    );
    let c = config(&src);
    assert_eq!(c.server.max_connections, 64);
    assert_eq!(c.server.request_read_timeout, Duration::from_secs(2));
    let cases = [
        (
            "max_connections = 0",
            "server.max_connections",
            "greater than zero",
        ),
        (
            "max_connections = -1",
            "server.max_connections",
            "greater than zero",
        ),
        (
            "request_read_timeout = \"0s\"",
            "server.request_read_timeout",
            "zero",
        ),
        (
            "request_read_timeout = \"soon\"",
            "server.request_read_timeout",
            "not a duration",
        ),
    ];
    for (line, field, fragment) in cases {
        let src = BASE.replace("[server]\n", &format!("[server]\n{line}\n"));
        only(&src, field, line, fragment);
    }
}

#[test]
fn connection_lifetimes_response_cap_and_header_policy() {
    let c = config(BASE);
    assert_eq!(c.server.lifetimes, crate::server::Lifetimes::default());
    assert_eq!(c.server.max_response_bytes, 1024 * 1024);
    assert!(c.server.upstream_keepalive);
    assert_eq!(c.server.underscores_in_headers, Underscores::Drop);
    let src = BASE.replace(
        "[server]\n",
        "[server]\nwrite_timeout = \"3s\"\nidle_timeout = \"4s\"\nmax_connection_age = \"1m\"\n\
         max_response_bytes = 4096\nupstream_keepalive = false\n\
         underscores_in_headers = \"forward\"\n",
    );
    let c = config(&src);
    assert_eq!(c.server.lifetimes.write_timeout, Duration::from_secs(3));
    assert_eq!(c.server.lifetimes.idle_timeout, Duration::from_secs(4));
    assert_eq!(
        c.server.lifetimes.max_connection_age,
        Duration::from_secs(60)
    );
    assert_eq!(c.server.max_response_bytes, 4096);
    assert!(!c.server.upstream_keepalive);
    assert_eq!(c.server.underscores_in_headers, Underscores::Forward);
    let cases = [
        (
            "write_timeout = \"500ms\"",
            "server.write_timeout",
            "out of range",
        ),
        (
            "write_timeout = \"1h\"",
            "server.write_timeout",
            "1s to 600s",
        ),
        (
            "idle_timeout = \"2h\"",
            "server.idle_timeout",
            "out of range",
        ),
        (
            "max_connection_age = \"10s\"",
            "server.max_connection_age",
            "30s to",
        ),
        (
            "max_response_bytes = 100",
            "server.max_response_bytes",
            "out of range",
        ),
        (
            "underscores_in_headers = \"keep\"",
            "server.underscores_in_headers",
            "\"drop\" or \"forward\"",
        ),
    ];
    for (line, field, fragment) in cases {
        let src = BASE.replace("[server]\n", &format!("[server]\n{line}\n"));
        only(&src, field, line, fragment);
    }
}

#[test]
fn source_paths_are_canonical_and_unique_whatever_their_case() {
    let src = format!(
        "{BASE}\n[[source]]\nname = \"gh2\"\npath = \"/Webhooks/GitHub\"\nscheme = \"github\"\n\
         secrets = [\"x\"]\n"
    );
    let found = problems(&src);
    assert!(
        found
            .iter()
            .any(|p| p.field == "source[gh2].path" && p.message.contains("already used")),
        "{found:?}"
    );
    for path in ["/webhooks/%73tripe", "/a;b", "/a\\\\b"] {
        let src = BASE.replace("/webhooks/github", path);
        let found = problems(&src);
        assert!(
            found
                .iter()
                .any(|p| p.field == "source[gh].path" && p.message.contains("canonical")),
            "{path}: {found:?}"
        );
    }
}

#[test]
fn a_generic_source_cannot_read_a_header_that_is_dropped() {
    let generic = r#"
[[source]]
name = "acme"
path = "/acme"
scheme = "generic"
secrets = ["s"]
[source.generic]
signature_header = "X_Acme_Signature"
encoding = "hex"
"#;
    let src = format!("{BASE}{generic}");
    let found = problems(&src);
    assert!(
        found
            .iter()
            .any(|p| p.field == "source[acme].generic.signature_header"
                && p.message.contains("underscores_in_headers")),
        "{found:?}"
    );
    let src = src.replace(
        "[server]\n",
        "[server]\nunderscores_in_headers = \"forward\"\n",
    );
    config(&src);
}

#[test]
fn upstream_credentials_are_refused_and_never_shown() {
    let src = BASE.replace(
        "http://127.0.0.1:3000",
        "http://deploy:hunter2@127.0.0.1:3000",
    );
    let found = problems(&src);
    let shown = format!("{found:?}");
    assert!(shown.contains("credentials"), "{shown}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("deploy"),
        "{shown}"
    );
    assert_eq!(
        without_userinfo("https://u:p@h:1/x?y"),
        "https://[redacted]@h:1/x?y"
    );
    assert_eq!(without_userinfo("http://h:1"), "http://h:1");
    assert_eq!(without_userinfo("not a url@x"), "[redacted]@x");
}

#[test]
fn on_store_error() {
    assert_eq!(config(BASE).sources[0].on_store_error, OnStoreError::Reject);
    let src = with("on_store_error = \"forward_unchecked\"\n");
    assert_eq!(
        config(&src).sources[0].on_store_error,
        OnStoreError::ForwardUnchecked
    );
    let src = with("on_store_error = \"reject\"\n");
    assert_eq!(config(&src).sources[0].on_store_error, OnStoreError::Reject);
    let src = with("on_store_error = \"ignore\"\n");
    only(
        &src,
        "source[gh].on_store_error",
        "on_store_error",
        "\"reject\" or \"forward_unchecked\"",
    );
    let src = with(
        "delivery = \"queue\"\non_store_error = \"forward_unchecked\"\n\
         [store]\nkind = \"redis\"\nurl = \"redis://r:6379\"\n",
    );
    only(
        &src,
        "source[gh].on_store_error",
        "on_store_error",
        "needs delivery = \"forward\"",
    );
}

const QUEUED: &str = "delivery = \"queue\"\n";
const REDIS: &str = "[store]\nkind = \"redis\"\nurl = \"redis://r:6379\"\n";

#[test]
fn queue_settings_default_to_the_documented_schedule() {
    let c = config(&with(&format!("{QUEUED}{REDIS}")));
    assert_eq!(c.sources[0].retry_schedule, DEFAULT_RETRY_SCHEDULE.to_vec());
    assert_eq!(
        c.sources[0].retry_schedule,
        [10, 60, 600, 3600, 6 * 3600]
            .map(Duration::from_secs)
            .to_vec()
    );
    assert_eq!(c.sources[0].max_in_flight, DEFAULT_MAX_IN_FLIGHT);
    let c = config(&with(&format!(
        "{QUEUED}retry_schedule = [\"100ms\", \"2s\"]\nmax_in_flight = 2\n{REDIS}"
    )));
    assert_eq!(
        c.sources[0].retry_schedule,
        vec![Duration::from_millis(100), Duration::from_secs(2)]
    );
    assert_eq!(c.sources[0].max_in_flight, 2);
}

#[test]
fn queue_settings_are_checked() {
    let src = with(&format!("{QUEUED}retry_schedule = []\n{REDIS}"));
    only(
        &src,
        "source[gh].retry_schedule",
        "retry_schedule",
        "is empty",
    );
    let src = with(&format!(
        "{QUEUED}retry_schedule = [\"1s\", \"soon\"]\n{REDIS}"
    ));
    only(
        &src,
        "source[gh].retry_schedule[1]",
        "retry_schedule",
        "not a duration",
    );
    let src = with(&format!("{QUEUED}retry_schedule = [\"0s\"]\n{REDIS}"));
    only(
        &src,
        "source[gh].retry_schedule[0]",
        "retry_schedule",
        "zero",
    );
    let src = with(&format!("{QUEUED}max_in_flight = 0\n{REDIS}"));
    only(
        &src,
        "source[gh].max_in_flight",
        "max_in_flight",
        "greater than zero",
    );
    let src = with(&format!("{QUEUED}retry_schedule = \"10s\"\n{REDIS}"));
    only(
        &src,
        "source[gh].retry_schedule",
        "retry_schedule",
        "expected a sequence",
    );
}

#[test]
fn queue_settings_do_not_apply_to_forward_delivery() {
    let src = with("retry_schedule = [\"1s\"]\n");
    only(
        &src,
        "source[gh].retry_schedule",
        "retry_schedule",
        "only to delivery = \"queue\"",
    );
    let src = with("delivery = \"forward\"\nmax_in_flight = 4\n");
    only(
        &src,
        "source[gh].max_in_flight",
        "max_in_flight",
        "only to delivery = \"queue\"",
    );
}

#[test]
fn admin_token_is_a_secret() {
    let c = config(&with("[admin]\ntoken = \"t0ken\"\n"));
    assert_eq!(
        c.admin.token.as_ref().map(|t| t.expose().to_vec()),
        Some(b"t0ken".to_vec())
    );
    assert!(!format!("{:?}", c.admin).contains("t0ken"));
    assert!(config(BASE).admin.token.is_none());
    let secrets = MapSecrets::default().env("ADMIN_TOKEN", "from-env");
    let c = config_with(
        &with("[admin]\ntoken = { env = \"ADMIN_TOKEN\" }\n"),
        &secrets,
    );
    assert_eq!(
        c.admin.token.as_ref().map(|t| t.expose().to_vec()),
        Some(b"from-env".to_vec())
    );
    let src = with("[admin]\ntoken = { env = \"MISSING_TOKEN\" }\n");
    only(&src, "admin.token", "token", "MISSING_TOKEN is not set");
    let src = with("[admin]\ntoken = \"\"\n");
    only(&src, "admin.token", "token", "empty");
}

// ---------------------------------------------------------------------------
// [[source]] name and path

#[test]
fn at_least_one_source() {
    let src = "[server]\nlisten = \"127.0.0.1:8080\"\nupstream = \"http://127.0.0.1:3000\"\n";
    only(src, "source", "", "no [[source]] table");
    let src = format!("source = []\n{src}");
    only(&src, "source", "source = []", "add at least one");
}

#[test]
fn names() {
    let src = with(
        "\n[[source]]\nname = \"gh\"\npath = \"/other\"\nscheme = \"github\"\nsecrets = [\"x\"]\n",
    );
    let second = src
        .rfind("name = \"gh\"")
        .map(|i| super::raw::line_of(&src, i));
    let ps = problems(&src);
    assert_eq!(ps.len(), 1, "{}", show(&ps));
    assert_eq!(ps[0].field, "source[gh].name");
    assert_eq!(ps[0].line, second);
    assert!(
        ps[0].message.contains(&format!(
            "duplicate source name \"gh\" (first used on line {})",
            line_of(BASE, "name = \"gh\"")
        )),
        "{}",
        show(&ps)
    );

    let src = BASE.replace("name = \"gh\"", "name = \"git hub\"");
    only(
        &src,
        "source[git hub].name",
        "git hub",
        "not a valid source name",
    );
    let src = BASE.replace("name = \"gh\"", "name = \"\"");
    only(
        &src,
        "source[0].name",
        "name = \"\"",
        "not a valid source name",
    );
    let src = BASE.replace("name = \"gh\"\n", "");
    only(&src, "source[0].name", "[[source]]", "required");
}

#[test]
fn paths() {
    for (path, fragment) in [
        ("webhooks/github", "must start with /"),
        ("", "must start with /"),
        ("/webhooks?x=1", "without ? or #"),
        ("/web hooks", "spaces"),
        ("/webhooks//github", "empty, . or .. segment"),
        ("/webhooks/../github", "empty, . or .. segment"),
        ("//", "empty, . or .. segment"),
    ] {
        let src = BASE.replace("/webhooks/github", path);
        only(&src, "source[gh].path", "path =", fragment);
    }
    assert_eq!(
        config(&BASE.replace("/webhooks/github", "/webhooks/github/")).sources[0].path,
        "/webhooks/github"
    );
    assert_eq!(
        config(&BASE.replace("/webhooks/github", "/")).sources[0].path,
        "/"
    );
}

#[test]
fn duplicate_paths_after_normalisation() {
    let src = with(
        "\n[[source]]\nname = \"gh2\"\npath = \"/webhooks/github/\"\nscheme = \"github\"\nsecrets = [\"x\"]\n",
    );
    only(
        &src,
        "source[gh2].path",
        "/webhooks/github/",
        "(that is, \"/webhooks/github\") is already used by source[gh] on line",
    );
    // Nested prefixes are fine: the longest match wins at runtime.
    config(&with(
        "\n[[source]]\nname = \"gh2\"\npath = \"/webhooks/github/enterprise\"\nscheme = \"github\"\nsecrets = [\"x\"]\n",
    ));
}

// ---------------------------------------------------------------------------
// scheme, secrets, tolerance

#[test]
fn schemes() {
    let src = BASE.replace("scheme = \"github\"", "scheme = \"payfriend\"");
    only(
        &src,
        "source[gh].scheme",
        "payfriend",
        "unknown value \"payfriend\"",
    );
    let src = BASE.replace("scheme = \"github\"\n", "");
    only(&src, "source[gh].scheme", "[[source]]", "required");
}

#[test]
fn secrets_list() {
    let src = BASE.replace("secrets = [\"gh-secret\"]\n", "");
    only(&src, "source[gh].secrets", "[[source]]", "required");
    let src = BASE.replace("[\"gh-secret\"]", "[]");
    only(&src, "source[gh].secrets", "secrets", "at least one secret");
    let src = BASE.replace("[\"gh-secret\"]", "\"gh-secret\"");
    only(&src, "source[gh].secrets", "secrets", "must be an array");
    let src = BASE.replace("[\"gh-secret\"]", "[\"\"]");
    only(&src, "source[gh].secrets[0]", "secrets", "empty string");
}

#[test]
fn secret_entry_shapes() {
    for entry in [
        "42",
        "{ env = 1 }",
        "{ env = \"A\", file = \"/b\" }",
        "{ path = \"/b\" }",
        "{}",
        "[\"a\"]",
    ] {
        let src = BASE.replace("\"gh-secret\"", entry);
        only(
            &src,
            "source[gh].secrets[0]",
            "secrets",
            "must be a string, { env",
        );
    }
    let src = BASE.replace("\"gh-secret\"", "{ env = \"\" }");
    only(
        &src,
        "source[gh].secrets[0]",
        "secrets",
        "needs a variable name",
    );
    let src = BASE.replace("\"gh-secret\"", "{ file = \"\" }");
    only(&src, "source[gh].secrets[0]", "secrets", "needs a path");
}

#[test]
fn env_secrets() {
    let src = BASE.replace(
        "[\"gh-secret\"]",
        "[\n  \"current\",\n  { env = \"GH_OLD\" },\n]",
    );
    only(
        &src,
        "source[gh].secrets[1]",
        "GH_OLD",
        "environment variable GH_OLD is not set",
    );
    let empty = MapSecrets::default().env("GH_OLD", "");
    only_with(
        &src,
        &empty,
        "source[gh].secrets[1]",
        "GH_OLD",
        "GH_OLD is empty",
    );
    let set = MapSecrets::default().env("GH_OLD", "old-secret");
    let c = config_with(&src, &set);
    assert_eq!(c.sources[0].keys.len(), 2);
    assert_eq!(c.sources[0].keys[1].expose(), b"old-secret");
}

#[test]
fn file_secrets() {
    let src = BASE.replace("[\"gh-secret\"]", "[{ file = \"/s/gh\" }]");
    only(
        &src,
        "source[gh].secrets[0]",
        "/s/gh",
        "cannot read secret file /s/gh",
    );
    let blank = MapSecrets::default().file("/s/gh", b"\r\n");
    only_with(
        &src,
        &blank,
        "source[gh].secrets[0]",
        "/s/gh",
        "secret file /s/gh is empty",
    );
    for (bytes, expected) in [
        (&b"abc\n"[..], &b"abc"[..]),
        (b"abc\r\n", b"abc"),
        (b"abc\n\n", b"abc"),
        (b"abc", b"abc"),
        (b" abc ", b" abc "),
    ] {
        let files = MapSecrets::default().file("/s/gh", bytes);
        let c = config_with(&src, &files);
        assert_eq!(c.sources[0].keys[0].expose(), expected);
        assert_eq!(c.sources[0].secret_files, [PathBuf::from("/s/gh")]);
    }
}

#[test]
fn secrets_are_prepared_for_their_scheme() {
    let src = BASE
        .replace("scheme = \"github\"", "scheme = \"standard\"")
        .replace(
            "[\"gh-secret\"]",
            "[\"whsec_c2VjcmV0\", { env = \"STD\" }, \"whsec_\"]",
        );
    let secrets = MapSecrets::default().env("STD", "not base64!");
    let ps = problems_with(&src, &secrets);
    has(
        &ps,
        &src,
        "source[gh].secrets[1]",
        "secrets",
        "environment variable STD: secret is not whsec_ followed by base64",
    );
    has(&ps, &src, "source[gh].secrets[2]", "secrets", "empty key");
    assert_eq!(ps.len(), 2, "{}", show(&ps));
}

#[test]
fn tolerance_only_where_a_timestamp_is_signed() {
    let src = with("tolerance = \"5m\"\n");
    only(
        &src,
        "source[gh].tolerance",
        "tolerance",
        "scheme \"github\" signs no timestamp",
    );
    let src = BASE.replace("github\"\n", "shopify\"\n") + "tolerance = \"5m\"\n";
    only(
        &src,
        "source[gh].tolerance",
        "tolerance",
        "scheme \"shopify\" signs no timestamp",
    );
    let stripe = BASE.replace("scheme = \"github\"", "scheme = \"stripe\"");
    only(
        &format!("{stripe}tolerance = \"0s\"\n"),
        "source[gh].tolerance",
        "tolerance",
        "zero",
    );
    only(
        &format!("{stripe}tolerance = \"5 minutes please\"\n"),
        "source[gh].tolerance",
        "tolerance",
        "not a duration",
    );
    let c = config(&format!("{stripe}tolerance = \"90s\"\n"));
    assert_eq!(c.sources[0].tolerance, Duration::from_secs(90));
}

#[test]
fn nonce_ttl_must_outlast_the_replay_window() {
    let stripe = BASE.replace("scheme = \"github\"", "scheme = \"stripe\"");
    let src = format!("{stripe}tolerance = \"1h\"\n[store]\nnonce_ttl = \"90m\"\n");
    only(
        &src,
        "source[gh].tolerance",
        "tolerance",
        "at least twice the tolerance",
    );
    // Without an explicit tolerance, the store's line is blamed.
    let src = format!("{stripe}[store]\nnonce_ttl = \"5m\"\n");
    only(
        &src,
        "store.nonce_ttl",
        "nonce_ttl",
        "at least twice the tolerance (5m)",
    );
    config(&format!(
        "{stripe}tolerance = \"1h\"\n[store]\nnonce_ttl = \"2h\"\n"
    ));
    // Schemes without a timestamp don't care.
    config(&with("[store]\nnonce_ttl = \"1s\"\n"));
}

// ---------------------------------------------------------------------------
// event_types and ordering

#[test]
fn event_type_patterns() {
    let src = with("event_types = []\n");
    only(
        &src,
        "source[gh].event_types",
        "event_types",
        "leave event_types out",
    );
    let src = with("event_types = [\"push\",\n  \"\"]\n");
    only(&src, "source[gh].event_types[1]", "\"\"]", "empty pattern");
    let src = with("event_types = [\"push\",\n  \"pull_*_review\"]\n");
    only(
        &src,
        "source[gh].event_types[1]",
        "pull_*",
        "only be the last character",
    );
    let src = with("event_types = [\"**\"]\n");
    only(
        &src,
        "source[gh].event_types[0]",
        "**",
        "only be the last character",
    );
    let c = config(&with(
        "event_types = [\"push\", \"pull_request*\", \"*\"]\n",
    ));
    assert_eq!(c.sources[0].event_types, ["push", "pull_request*", "*"]);
}

#[test]
fn ordering_pointers() {
    let src = with("[source.ordering]\nresource = \"/data/id\"\n");
    only(
        &src,
        "source[gh].ordering.version",
        "[source.ordering]",
        "required",
    );
    let src = with("[source.ordering]\nresource = \"data/id\"\nversion = \"/v\"\n");
    only(
        &src,
        "source[gh].ordering.resource",
        "data/id",
        "must start with /",
    );
    let src = with("[source.ordering]\nresource = \"/a~2b\"\nversion = \"/v\"\n");
    only(
        &src,
        "source[gh].ordering.resource",
        "a~2b",
        "~ must be followed by 0 or 1",
    );
    let c = config(&with(
        "[source.ordering]\nresource = \"/a~1b/c~0d\"\nversion = \"\"\n",
    ));
    assert_eq!(
        c.sources[0].ordering,
        Some(Ordering {
            resource: "/a~1b/c~0d".to_owned(),
            version: String::new()
        })
    );
}

// ---------------------------------------------------------------------------
// [source.generic]

const GENERIC: &str = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "acme"
path = "/acme"
scheme = "generic"
secrets = ["acme-secret"]

[source.generic]
signature_header = "X-Sig"
encoding = "hex"
"#;

fn generic(extra: &str) -> String {
    format!("{GENERIC}{extra}")
}

#[test]
fn generic_table_only_with_the_generic_scheme() {
    config(GENERIC);
    let src = GENERIC.replace("scheme = \"generic\"", "scheme = \"github\"");
    only(
        &src,
        "source[acme].generic",
        "[source.generic]",
        "only scheme = \"generic\"",
    );
    let src = BASE.replace("scheme = \"github\"", "scheme = \"generic\"");
    only(
        &src,
        "source[gh].generic",
        "scheme = \"generic\"",
        "needs a [source.generic] table",
    );
}

#[test]
fn generic_headers_and_encoding() {
    let src = GENERIC.replace("signature_header = \"X-Sig\"\n", "");
    only(
        &src,
        "source[acme].generic.signature_header",
        "[source.generic]",
        "required",
    );
    let src = GENERIC.replace("\"X-Sig\"", "\"X Sig\"");
    only(
        &src,
        "source[acme].generic.signature_header",
        "X Sig",
        "not a valid HTTP header name",
    );
    let src = GENERIC.replace("encoding = \"hex\"\n", "");
    only(
        &src,
        "source[acme].generic.encoding",
        "[source.generic]",
        "required",
    );
    let src = GENERIC.replace("\"hex\"", "\"base32\"");
    only(
        &src,
        "source[acme].generic.encoding",
        "base32",
        "\"hex\", \"base64\", \"base64url\"",
    );
    let src = generic("timestamp_header = \"X:Ts\"\nsigned_payload = \"{timestamp}{body}\"\n");
    only(
        &src,
        "source[acme].generic.timestamp_header",
        "X:Ts",
        "not a valid HTTP header name",
    );
    let src = generic("event_id = { header = \"\" }\n");
    only(
        &src,
        "source[acme].generic.event_id",
        "event_id",
        "not a valid HTTP header name",
    );
    let src = generic("event_type = { pointer = \"kind\" }\n");
    only(
        &src,
        "source[acme].generic.event_type",
        "event_type",
        "must start with /",
    );
    let src = generic("event_id = \"X-Id\"\n");
    only(
        &src,
        "source[acme].generic.event_id",
        "event_id",
        "must be { header",
    );
    let src = generic("event_id = { header = \"X-Id\", pointer = \"/id\" }\n");
    only(
        &src,
        "source[acme].generic.event_id",
        "event_id",
        "must be { header",
    );
    let c = config(&generic("signature_prefix = \"\"\n"));
    let Scheme::Generic(g) = &c.sources[0].scheme else {
        panic!("generic expected")
    };
    assert_eq!(g.signature_prefix, None);
}

#[test]
fn signed_payload_templates() {
    for (template, fragment) in [
        ("{id}.{timestamp}", "must contain {body}"),
        ("{body}.{body}", "more than once"),
        (
            "{ts}.{body}",
            "uses {ts}; only {id}, {timestamp}, {body}, {url} and {header:Name}",
        ),
        ("{body", "{ without a matching }"),
        ("body}", "} without a matching {"),
    ] {
        let src = generic(&format!("signed_payload = \"{template}\"\n"));
        only(
            &src,
            "source[acme].generic.signed_payload",
            "signed_payload",
            fragment,
        );
    }
}

#[test]
fn timestamp_must_be_signed_to_count() {
    let src = generic("signed_payload = \"{timestamp}.{body}\"\n");
    only(
        &src,
        "source[acme].generic.signed_payload",
        "signed_payload",
        "neither generic.timestamp_header nor generic.timestamp_key is set",
    );
    let src = generic("timestamp_header = \"X-Ts\"\n");
    only(
        &src,
        "source[acme].generic.timestamp_header",
        "X-Ts",
        "signed_payload has no {timestamp}",
    );
    let c = config(&generic(
        "timestamp_header = \"X-Ts\"\nsigned_payload = \"{timestamp}.{body}\"\n",
    ));
    assert!(c.sources[0].scheme.signs_timestamp());
}

#[test]
fn signed_id_must_come_from_a_header() {
    let src = generic("signed_payload = \"{id}.{body}\"\n");
    only(
        &src,
        "source[acme].generic.signed_payload",
        "signed_payload",
        "generic.event_id is not set",
    );
    let src = generic("signed_payload = \"{id}.{body}\"\nevent_id = { pointer = \"/id\" }\n");
    only(
        &src,
        "source[acme].generic.event_id",
        "event_id",
        "needs the id from a header",
    );
    config(&generic(
        "signed_payload = \"{id}.{body}\"\nevent_id = { header = \"X-Id\" }\n",
    ));
    // An id read from the body is fine when it is not signed.
    config(&generic("event_id = { pointer = \"/id\" }\n"));
}

#[test]
fn generic_tolerance_and_event_types() {
    let src = GENERIC.replace(
        "secrets = [\"acme-secret\"]",
        "secrets = [\"s\"]\ntolerance = \"5m\"",
    );
    only(
        &src,
        "source[acme].tolerance",
        "tolerance",
        "no generic.timestamp_header",
    );
    let src = GENERIC.replace(
        "secrets = [\"acme-secret\"]",
        "secrets = [\"s\"]\nevent_types = [\"a\"]",
    );
    only(
        &src,
        "source[acme].event_types",
        "event_types",
        "no generic.event_type",
    );
    let src = GENERIC.replace(
        "secrets = [\"acme-secret\"]",
        "secrets = [\"s\"]\nevent_types = [\"a\"]",
    ) + "event_type = { header = \"X-Type\" }\n";
    assert_eq!(config(&src).sources[0].event_types, ["a"]);
}

// ---------------------------------------------------------------------------
// Many mistakes at once

#[test]
fn every_mistake_is_reported() {
    let src = r#"
[server]
listen = "0.0.0.0:80800"
upstream = "127.0.0.1:3000"
upstream_timeout = "soon"

[admin]
listen = "0.0.0.0:9090"

[store]
kind = "memory"
url = "redis://r:6379"

[[source]]
name = "stripe"
path = "webhooks/stripe"
scheme = "stripe"
secrets = ["whsec_a", { env = "STRIPE_PREVIOUS_SECRET" }, { file = "/run/stripe" }]
tolerance = "5"
delivery = "queue"

[[source]]
name = "stripe"
path = "/webhooks/gh"
scheme = "github"
secrets = []
tolerance = "5m"
event_types = ["a*b"]

[[source]]
path = "/webhooks/gh/"
scheme = "strype"
secrets = ["x"]

[source.ordering]
resource = "id"
"#;
    let ps = problems(src);
    let expected = [
        ("server.listen", "80800", "not an IP address"),
        ("server.upstream", "upstream =", "http:// or https://"),
        ("server.upstream_timeout", "soon", "not a duration"),
        ("store.url", "url =", "memory store takes no url"),
        (
            "source[stripe].path",
            "webhooks/stripe",
            "must start with /",
        ),
        (
            "source[stripe].secrets[1]",
            "STRIPE_PREVIOUS_SECRET",
            "environment variable STRIPE_PREVIOUS_SECRET is not set",
        ),
        (
            "source[stripe].secrets[2]",
            "STRIPE_PREVIOUS_SECRET",
            "cannot read secret file /run/stripe",
        ),
        ("source[stripe].tolerance", "\"5\"", "not a duration"),
        ("source[stripe].delivery", "queue", "memory store"),
        (
            "source[stripe].name",
            "name = \"stripe\"\npath = \"/webhooks/gh\"",
            "",
        ),
        (
            "source[stripe].secrets",
            "secrets = []",
            "at least one secret",
        ),
        (
            "source[stripe].tolerance",
            "tolerance = \"5m\"",
            "signs no timestamp",
        ),
        ("source[stripe].event_types[0]", "a*b", "last character"),
        ("source[2].name", "", ""),
        (
            "source[2].path",
            "/webhooks/gh/",
            "already used by source[stripe]",
        ),
        ("source[2].scheme", "strype", "unknown value"),
        ("source[2].ordering.resource", "\"id\"", "must start with /"),
        (
            "source[2].ordering.version",
            "[source.ordering]",
            "required",
        ),
    ];
    for (field, marker, fragment) in expected {
        if marker.contains('\n') {
            // The second source's name: find the line by its neighbour.
            let at = src.find(marker).map(|i| super::raw::line_of(src, i));
            assert!(
                ps.iter()
                    .any(|p| p.field == field && p.line == at && p.message.contains("duplicate")),
                "{field}: {}",
                show(&ps)
            );
        } else if field == "source[2].name" {
            let line = src.rfind("[[source]]").map(|i| super::raw::line_of(src, i));
            assert!(
                ps.iter().any(|p| p.field == field && p.line == line),
                "{field}: {}",
                show(&ps)
            );
        } else {
            has(&ps, src, field, marker, fragment);
        }
    }
    assert_eq!(ps.len(), expected.len(), "{}", show(&ps));
}

// ---------------------------------------------------------------------------
// Catalog providers, public_url and the extended generic table

/// A source of `scheme` with `extra` lines inside the `[[source]]`.
fn provider(scheme: &str, extra: &str) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "p"
path = "/p"
scheme = "{scheme}"
secrets = ["s3cret"]
{extra}"#
    )
}

#[test]
fn catalog_providers_are_scheme_words() {
    for name in ["zoom", "paddle", "gitlab", "box", "lithic", "calendly"] {
        // A base64 text works for raw and base64 secrets alike.
        let c = config(&provider(name, "").replace("s3cret", "c2VjcmV0"));
        assert_eq!(c.sources[0].scheme.name(), name);
    }
    // A provider's documented window is its default tolerance.
    assert_eq!(
        config(&provider("paddle", "")).sources[0].tolerance,
        Duration::from_secs(5)
    );
    assert_eq!(
        config(&provider("twitch", "")).sources[0].tolerance,
        Duration::from_secs(600)
    );
    assert_eq!(
        config(&provider("zoom", "")).sources[0].tolerance,
        DEFAULT_TOLERANCE
    );
    assert_eq!(
        config(&provider("paddle", "tolerance = \"30s\"\n")).sources[0].tolerance,
        Duration::from_secs(30)
    );
    // Providers without a signed time take no tolerance.
    only(
        &provider("gitlab", "tolerance = \"5m\"\n"),
        "source[p].tolerance",
        "tolerance",
        "scheme \"gitlab\" signs no timestamp",
    );
    let src = provider("acme-corp", "");
    only(
        &src,
        "source[p].scheme",
        "acme-corp",
        "a provider of docs/providers.md",
    );
}

#[test]
fn public_key_secrets_are_parsed() {
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let src = provider("discord", "").replace("[\"s3cret\"]", &format!("[\"{key}\"]"));
    let c = config(&src);
    assert_eq!(c.sources[0].keys[0].expose().len(), 32);
    only(
        &provider("discord", ""),
        "source[p].secrets[0]",
        "s3cret",
        "not 64 hex characters",
    );
    only(
        &provider("sendgrid", "").replace("s3cret", "AAAA"),
        "source[p].secrets[0]",
        "AAAA",
        "not a P-256 public key",
    );
}

#[test]
fn public_url_where_the_url_is_signed() {
    let url = "public_url = \"https://hooks.example.com/twilio?x=1\"\n";
    let c = config(&provider("twilio", url));
    assert_eq!(
        c.sources[0].scheme,
        Scheme::by_name("twilio", Some("https://hooks.example.com/twilio?x=1"))
            .expect("twilio is a coded scheme")
    );
    assert!(
        config(&provider("square", url)).sources[0]
            .scheme
            .needs_public_url()
    );
    for scheme in ["twilio", "square", "hubspot", "trello"] {
        only(
            &provider(scheme, ""),
            "source[p].public_url",
            &format!("scheme = \"{scheme}\""),
            "signs the URL the sender posts to; set public_url",
        );
    }
    only(
        &provider("github", url),
        "source[p].public_url",
        "public_url",
        "does not apply: scheme \"github\" does not sign the URL",
    );
    for bad in [
        "/twilio",
        "ftp://x.example/t",
        "https://",
        "https://x.example/#frag",
    ] {
        let src = provider("twilio", &format!("public_url = \"{bad}\"\n"));
        only(
            &src,
            "source[p].public_url",
            "public_url",
            "not an absolute http(s) URL",
        );
    }
}

#[test]
fn extended_generic_tables() {
    // A Stripe-like list: t=…,v1=… over {timestamp}.{body}, SHA-512, base64url,
    // a whsec_ base64 secret.
    let src = GENERIC
        .replace("encoding = \"hex\"", "encoding = \"base64url\"")
        .replace("[\"acme-secret\"]", "[\"whsec_c2VjcmV0\"]")
        + "algorithm = \"sha512\"\nsignature_delimiter = \",\"\nsignature_key = \"v1\"\n\
           timestamp_key = \"t\"\ntimestamp_format = \"milliseconds\"\n\
           signed_payload = \"{timestamp}.{body}\"\nsecret_encoding = \"base64\"\n\
           secret_prefix = \"whsec_\"\nalternate_signature_headers = [\"X-Sig-2\"]\n";
    let c = config(&src);
    let Scheme::Generic(g) = &c.sources[0].scheme else {
        panic!("generic expected")
    };
    assert_eq!(g.algorithm, Algorithm::Sha512);
    assert_eq!(g.encoding, Encoding::Base64Url);
    assert_eq!(g.signature_key.as_deref(), Some("v1"));
    assert_eq!(g.timestamp_key.as_deref(), Some("t"));
    assert_eq!(g.timestamp_format, TimestampFormat::Milliseconds);
    assert_eq!(
        g.alternate_signature_headers,
        vec![HeaderName::from_static("x-sig-2")]
    );
    assert!(c.sources[0].scheme.signs_timestamp());
    assert_eq!(c.sources[0].keys[0].expose(), b"secret");

    // A token sender needs no encoding and signs nothing.
    let token = GENERIC.replace("encoding = \"hex\"\n", "algorithm = \"token\"\n");
    let c = config(&token);
    assert!(!c.sources[0].scheme.signs_timestamp());
    only(
        &(token.clone() + "signed_payload = \"{body}\"\n"),
        "source[acme].generic.signed_payload",
        "signed_payload",
        "with algorithm = \"token\"",
    );

    // {url} and {header:…} placeholders.
    let with_url = GENERIC.replace(
        "secrets = [\"acme-secret\"]",
        "secrets = [\"acme-secret\"]\npublic_url = \"https://hooks.example.com/acme\"",
    ) + "signed_payload = \"POST{url}{header:X-Nonce}{body}\"\n";
    assert!(config(&with_url).sources[0].scheme.needs_public_url());
    only(
        &generic("signed_payload = \"{url}{body}\"\n"),
        "source[acme].public_url",
        "scheme = \"generic\"",
        "generic.signed_payload uses {url}",
    );
    only(
        &generic("signed_payload = \"{header:Bad Name}{body}\"\n"),
        "source[acme].generic.signed_payload",
        "signed_payload",
        "not a valid header name",
    );
}

#[test]
fn extended_generic_mistakes() {
    let cases = [
        (
            "signature_key = \"v1\"\n",
            "signature_key",
            "v1",
            "needs signature_delimiter",
        ),
        (
            "signature_delimiter = \",\"\ntimestamp_key = \"t\"\nsigned_payload = \"{timestamp}.{body}\"\n",
            "timestamp_key",
            "timestamp_key",
            "needs signature_key",
        ),
        (
            "signature_delimiter = \"\"\n",
            "signature_delimiter",
            "signature_delimiter",
            "is empty",
        ),
        (
            "signature_delimiter = \"ab\"\n",
            "signature_delimiter",
            "\"ab\"",
            "characters a signature itself uses",
        ),
        (
            "algorithm = \"md5\"\n",
            "algorithm",
            "md5",
            "\"sha1\", \"sha256\", \"sha512\", \"token\"",
        ),
        (
            "timestamp_format = \"iso\"\n",
            "timestamp_format",
            "iso",
            "\"rfc3339\"",
        ),
        (
            "secret_encoding = \"b32\"\n",
            "secret_encoding",
            "b32",
            "\"raw\", \"base64\", \"hex\"",
        ),
        (
            "alternate_signature_headers = [\"bad name\"]\n",
            "alternate_signature_headers[0]",
            "bad name",
            "not a valid HTTP header name",
        ),
    ];
    for (extra, key, marker, fragment) in cases {
        let src = generic(extra);
        only(
            &src,
            &format!("source[acme].generic.{key}"),
            marker,
            fragment,
        );
    }
    // A base64 secret that is not base64 names the shape, not the value.
    let src = generic("secret_encoding = \"base64\"\n").replace("acme-secret", "not*base64");
    let ps = problems(&src);
    has(
        &ps,
        &src,
        "source[acme].secrets[0]",
        "not*base64",
        "secret is not base64",
    );
    assert!(!show(&ps).contains("not*base64\""));
}

// ---------------------------------------------------------------------------
// verify_token (Meta's subscription check)

const META: &str = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "meta"
path = "/webhooks/meta"
scheme = "meta"
secrets = ["app-secret"]
"#;

#[test]
fn verify_token_is_a_secret_of_its_own() {
    let secrets = MapSecrets::default().env("META_VERIFY_TOKEN", "from-env");
    let c = config_with(
        &format!("{META}verify_token = {{ env = \"META_VERIFY_TOKEN\" }}\n"),
        &secrets,
    );
    let source = &c.sources[0];
    assert_eq!(
        source.verify_token.as_ref().map(|t| t.expose().to_vec()),
        Some(b"from-env".to_vec())
    );
    assert_eq!(source.keys.len(), 1, "the token is not a signing secret");
    assert!(!format!("{source:?}").contains("from-env"));
    let secrets = MapSecrets::default().file("/run/meta-token", b"from-file\n");
    let c = config_with(
        &format!("{META}verify_token = {{ file = \"/run/meta-token\" }}\n"),
        &secrets,
    );
    assert_eq!(
        c.sources[0]
            .verify_token
            .as_ref()
            .map(|t| t.expose().to_vec()),
        Some(b"from-file".to_vec())
    );
    assert!(
        c.sources[0]
            .secret_files
            .contains(&std::path::PathBuf::from("/run/meta-token")),
        "a token file is watched like a secret file"
    );
    // Optional: without it Meta's GET is simply not answered.
    assert!(config(META).sources[0].verify_token.is_none());
}

#[test]
fn verify_token_problems_name_the_field_and_line() {
    let src = format!("{META}verify_token = {{ env = \"NOT_SET\" }}\n");
    only(
        &src,
        "source[meta].verify_token",
        "verify_token",
        "NOT_SET is not set",
    );
    let src = format!("{META}verify_token = \"\"\n");
    only(&src, "source[meta].verify_token", "verify_token", "empty");
    let src = format!("{META}verify_token = 7\n");
    has(
        &problems(&src),
        &src,
        "source[meta].verify_token",
        "verify_token",
        "",
    );
    // Never the signing secret, and the value is not quoted.
    let src = format!("{META}verify_token = \"app-secret\"\n");
    only(
        &src,
        "source[meta].verify_token",
        "verify_token",
        "is one of this source's secrets",
    );
    assert!(!show(&problems(&src)).contains("app-secret"));
    // Only where the scheme makes the check.
    let src = with("verify_token = \"tok\"\n");
    only(
        &src,
        "source[gh].verify_token",
        "verify_token",
        "does not apply: scheme \"github\"",
    );
}

/// A source whose key comes from the provider: `scheme` and its own lines,
/// no secrets.
fn remote(scheme: &str, lines: &str) -> String {
    format!(
        "{}\n[[source]] # r\nname = \"r\"\npath = \"/webhooks/r\"\nscheme = \"{scheme}\"\n{lines}",
        BASE
    )
}

#[test]
fn provider_key_schemes_take_their_options_and_no_secrets() {
    let c = config(&remote(
        "sns",
        "topic_arns = [\"arn:aws:sns:us-east-1:123456789012:orders\", \"arn:aws:sns:*\"]\nconfirm_subscription = true\n",
    ));
    match c.sources[1]
        .scheme
        .provider_as::<crate::scheme::SnsSource>()
    {
        Some(s) => {
            assert!(s.confirm_subscription && !s.keys.is_widened());
            assert_eq!(s.topic_arns.len(), 2);
        }
        None => panic!("{:?}", c.sources[1].scheme),
    }
    only(
        &remote("sns", ""),
        "source[r].topic_arns",
        "# r",
        "required",
    );
    only(
        &remote("sns", "topic_arns = []\n"),
        "source[r].topic_arns",
        "topic_arns",
        "is empty",
    );
    only(
        &remote("sns", "topic_arns = [\"orders\"]\n"),
        "source[r].topic_arns[0]",
        "topic_arns",
        "topic ARN",
    );
    assert!(c.sources[1].keys.is_empty());
    assert_eq!(
        c.sources[1].tolerance,
        Duration::from_secs(3600),
        "SNS retries for up to an hour"
    );
    let c = config(&remote("paypal", "webhook_id = \"0FV983392A0531201\"\n"));
    match c.sources[1]
        .scheme
        .provider_as::<crate::scheme::PayPalSource>()
    {
        Some(p) => assert_eq!(p.webhook_id, "0FV983392A0531201"),
        None => panic!("{:?}", c.sources[1].scheme),
    }
    let c = config(&remote(
        "google-oidc",
        "audience = \"https://hooks.example.com/push\"\nemail = \"p@x.iam.gserviceaccount.com\"\n",
    ));
    match c.sources[1]
        .scheme
        .provider_as::<crate::scheme::GoogleSource>()
    {
        Some(g) => {
            assert_eq!(g.audience, "https://hooks.example.com/push");
            assert_eq!(g.jwks_url.as_str(), crate::scheme::GOOGLE_JWKS);
        }
        None => panic!("{:?}", c.sources[1].scheme),
    }

    let src = remote("paypal", "webhook_id = \"W\"\nsecrets = [\"s\"]\n");
    only(
        &src,
        "source[r].secrets",
        "secrets = [\"s\"]",
        "fetches the provider's key",
    );
    let src = remote("paypal", "");
    only(&src, "source[r].webhook_id", "# r", "required");
    let src = remote("paypal", "webhook_id = \"a|b\"\n");
    only(&src, "source[r].webhook_id", "a|b", "`|`");
    let src = remote("google-oidc", "audience = \"a\"\n");
    only(&src, "source[r].email", "# r", "required");
    let src = remote(
        "sns",
        "topic_arns = [\"arn:aws:sns:*\"]\nwebhook_id = \"W\"\n",
    );
    only(
        &src,
        "source[r].webhook_id",
        "webhook_id",
        "only scheme = \"paypal\"",
    );
    let src = with("confirm_subscription = true\n");
    only(
        &src,
        "source[gh].confirm_subscription",
        "confirm_subscription",
        "only scheme = \"sns\"",
    );
    let src = with("[source.keys]\nallow_hosts = [\"127.0.0.1\"]\n");
    only(&src, "source[gh].keys", "[source.keys]", "fetches no key");
}

#[test]
fn source_keys_widen_hosts_only_explicitly() {
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    let secrets = MapSecrets::default().file("/ca.pem", ca.cert.pem().as_bytes());
    let src = remote(
        "google-oidc",
        "audience = \"a\"\nemail = \"e\"\n[source.keys]\nallow_hosts = [\"127.0.0.1\"]\nca_file = \"/ca.pem\"\njwks_url = \"https://127.0.0.1:8443/certs\"\n",
    );
    let c = config_with(&src, &secrets);
    match c.sources[1]
        .scheme
        .provider_as::<crate::scheme::GoogleSource>()
    {
        Some(g) => {
            assert_eq!(g.jwks_url.host(), "127.0.0.1");
            assert!(g.keys.is_widened());
            assert_eq!(g.keys.extra_roots.len(), 1);
        }
        None => panic!("{:?}", c.sources[1].scheme),
    }
    // A test JWKS host without allow_hosts is refused.
    let src = remote(
        "google-oidc",
        "audience = \"a\"\nemail = \"e\"\n[source.keys]\njwks_url = \"https://127.0.0.1:8443/certs\"\n",
    );
    only(
        &src,
        "source[r].keys.jwks_url",
        "jwks_url",
        "is not Google's",
    );
    let src = remote(
        "sns",
        "topic_arns = [\"arn:aws:sns:*\"]\n[source.keys]\njwks_url = \"https://www.googleapis.com/x\"\n",
    );
    only(
        &src,
        "source[r].keys.jwks_url",
        "jwks_url",
        "only schemes google-oidc, gemini and standard",
    );
    for bad in ["https://127.0.0.1", "127.0.0.1:8443", "*.example.com", ""] {
        let src = remote(
            "sns",
            &format!(
                "topic_arns = [\"arn:aws:sns:*\"]\n[source.keys]\nallow_hosts = [\"{bad}\"]\n"
            ),
        );
        only(
            &src,
            "source[r].keys.allow_hosts[0]",
            "allow_hosts",
            "host name",
        );
    }
    let src = remote(
        "sns",
        "topic_arns = [\"arn:aws:sns:*\"]\n[source.keys]\nca_file = \"/missing.pem\"\n",
    );
    only(&src, "source[r].keys.ca_file", "ca_file", "cannot read");
    let junk = MapSecrets::default().file("/junk.pem", b"not a certificate");
    let src = remote(
        "sns",
        "topic_arns = [\"arn:aws:sns:*\"]\n[source.keys]\nca_file = \"/junk.pem\"\n",
    );
    let p = problems_with(&src, &junk);
    has(
        &p,
        &src,
        "source[r].keys.ca_file",
        "ca_file",
        "no PEM certificate",
    );
}

// ---------------------------------------------------------------------------
// Sender addresses

#[test]
fn malformed_allow_ips_are_refused_each_at_its_line() {
    let src = with(
        "allow_ips = [\n  \"192.30.252.0/22\",\n  \"140.82.112.0/33\", # bad prefix\n  \
         \"2a0a:a440::/29\",\n  \"github.com\", # a name\n  \"3.18.12.63/23\", # host bits\n]\n",
    );
    let ps = problems(&src);
    has(
        &ps,
        &src,
        "source[gh].allow_ips[1]",
        "# bad prefix",
        "\"140.82.112.0/33\" is not an IP address or CIDR",
    );
    has(
        &ps,
        &src,
        "source[gh].allow_ips[3]",
        "# a name",
        "\"github.com\" is not an IP address or CIDR",
    );
    has(
        &ps,
        &src,
        "source[gh].allow_ips[4]",
        "# host bits",
        "write the network \"3.18.12.0/23\"",
    );
    assert_eq!(ps.len(), 3, "{}", show(&ps));

    let empty = with("allow_ips = [] # none\n");
    only(
        &empty,
        "source[gh].allow_ips",
        "# none",
        "would refuse every request",
    );
}

#[test]
fn malformed_trusted_proxies_are_refused() {
    let src = BASE.replace(
        "[server]\n",
        "[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/8/8\"] # here\n",
    );
    only(
        &src,
        "server.trusted_proxies[1]",
        "# here",
        "\"10.0.0.0/8/8\" is not an IP address",
    );
    // Empty is the same as absent: no proxy is trusted.
    let c = config(&BASE.replace("[server]\n", "[server]\ntrusted_proxies = []\n"));
    assert!(c.server.trusted_proxies.is_empty());
}

/// Fifty thousand sources are checked as one config (a lookup per name and
/// path, a binary search per line): a path used twice at the end is still
/// found, with both lines right, and the last source routes like the first.
#[test]
fn fifty_thousand_sources_are_checked_and_the_last_routes_like_the_first() {
    let n = 50_000;
    let mut src = String::from(BASE);
    for i in 0..n {
        src.push_str(&format!(
            "[[source]]\nname = \"s{i}\"\npath = \"/tenants/t{i}/stripe\"\nscheme = \"stripe\"\n\
             secrets = [\"whsec_{i}\"]\n"
        ));
    }
    let c = config(&src);
    assert_eq!(c.sources.len(), n + 1);
    let router = crate::route::Router::new(c.sources.iter().map(|s| s.path.as_str()));
    assert_eq!(router.route("/tenants/t0/stripe"), Some(1));
    assert_eq!(
        router.route(&format!("/Tenants/T{}/stripe.json", n - 1)),
        Some(n)
    );
    assert_eq!(router.route("/tenants/t0"), None);
    for path in ["/tenants/t0/stripe", "/tenants/t49999/stripe/x/y"] {
        assert!(router.probes(path) <= path.matches('/').count(), "{path}");
    }

    src.push_str(
        "[[source]]\nname = \"again\"\npath = \"/Tenants/T7/Stripe\" # AGAIN\nscheme = \"stripe\"\n\
         secrets = [\"whsec_x\"]\n",
    );
    let ps = problems(&src);
    let first = line_of(&src, "path = \"/tenants/t7/stripe\"");
    has(
        &ps,
        &src,
        "source[again].path",
        "# AGAIN",
        &format!("already used by source[s7] on line {first}"),
    );
}

/// `whpk_` keys sit in `secrets` beside `whsec_` ones; `[source.keys]
/// jwks_url` turns a `standard` source into one that also checks a key set
/// (any https host: the operator names the sender's); `gemini` needs no
/// secrets and fetches from Google's host unless `allow_hosts` widens it;
/// a re-signing source needs a key that can sign.
#[test]
fn public_key_sources_and_what_they_take() {
    let pk = "whpk_0r0+Z02Sv1SRb1QjsKUnil6t2oqtAyhn5HHfKgbTXFs=";
    let c = config(&with(&format!(
        "\n[[source]]\nname = \"std\"\npath = \"/std\"\nscheme = \"standard\"\n\
         secrets = [\"{pk}\", \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n\
         [source.keys]\njwks_url = \"https://keys.example.com/jwks.json\"\n\
         \n[[source]]\nname = \"gem\"\npath = \"/gem\"\nscheme = \"gemini\"\n"
    )));
    let std = &c.sources[1];
    assert_eq!(std.scheme.name(), "standard");
    assert!(std.scheme.fetches_keys());
    assert_eq!(std.keys.len(), 2);
    assert_eq!(std.scheme.signing_key(&std.keys), Some(&std.keys[1]));
    let gem = &c.sources[2];
    assert_eq!((gem.scheme.name(), gem.keys.len()), ("gemini", 0));

    let src = with(
        "\n[[source]]\nname = \"gem\"\npath = \"/gem\"\nscheme = \"gemini\"\n\
         [source.keys]\njwks_url = \"https://evil.example/jwks.json\" # HOST\n",
    );
    has(
        &problems(&src),
        &src,
        "source[gem].keys.jwks_url",
        "# HOST",
        "is not Google's",
    );

    let src = with(&format!(
        "\n[[source]]\nname = \"pk\"\npath = \"/pk\"\nscheme = \"standard\"\n\
         secrets = [\"{pk}\"]\n[source.resign] # RESIGN\n"
    ));
    has(
        &problems(&src),
        &src,
        "source[pk].resign",
        "# RESIGN",
        "no key hookgate can sign with",
    );
    let src = with(&format!(
        "\n[[source]]\nname = \"pk\"\npath = \"/pk\"\nscheme = \"standard\"\n\
         secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n[source.resign]\n\
         secret = \"{pk}\" # KEY\n"
    ));
    has(
        &problems(&src),
        &src,
        "source[pk].resign.secret",
        "# KEY",
        "cannot sign",
    );
    let src = with(
        "\n[[source]]\nname = \"pk\"\npath = \"/pk\"\nscheme = \"standard\"\n\
         secrets = [\"whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=\"] # PRIVATE\n",
    );
    let ps = problems(&src);
    has(
        &ps,
        &src,
        "source[pk].secrets[0]",
        "# PRIVATE",
        "private key",
    );
    assert!(!show(&ps).contains("nWGxne"), "{}", show(&ps));
}

/// `max_rate` is "N/s" or "N/m" on a queue source only.
#[test]
fn max_rate_is_a_rate_on_a_queue_source() {
    let queue = |rate: &str| {
        with(&format!(
            "\n[[source]]\nname = \"q\"\npath = \"/q\"\nscheme = \"github\"\nsecrets = [\"s\"]\n\
             delivery = \"queue\"\nmax_rate = \"{rate}\" # RATE\n\n[store]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n"
        ))
    };
    assert_eq!(config(&queue("50/s")).sources[1].max_rate, Some(50.0));
    assert_eq!(config(&queue("3000/m")).sources[1].max_rate, Some(50.0));
    assert_eq!(config(&queue("50/s")).sources[0].max_rate, None);
    for bad in ["50", "50/h", "0/s", "fast", "-3/s", "1000000/s"] {
        let src = queue(bad);
        has(&problems(&src), &src, "source[q].max_rate", "# RATE", bad);
    }
    let src = with(
        "\n[[source]]\nname = \"f\"\npath = \"/f\"\nscheme = \"github\"\nsecrets = [\"s\"]\nmax_rate = \"5/s\" # FW\n",
    );
    has(&problems(&src), &src, "source[f].max_rate", "# FW", "queue");
}

#[test]
fn tracing_is_off_without_its_table_and_defaults_its_keys() {
    assert_eq!(config(BASE).tracing, None);
    let c = config(&with(
        "\n[tracing]\notlp_endpoint = \"http://otel-collector:4318\"\n",
    ));
    let t = c.tracing.expect("a [tracing] table");
    assert_eq!(t.traces_url, "http://otel-collector:4318/v1/traces");
    assert_eq!(t.sample_ratio, 1.0);
    assert_eq!(t.service_name, DEFAULT_SERVICE_NAME);
    assert_eq!(t.trace_url, None);
    assert_eq!(t.link("abc"), None);

    let c = config(&with(
        "\n[tracing]\notlp_endpoint = \"https://collector.example/otlp/\"\nsample_ratio = 0\n\
         service_name = \"payments-hookgate\"\n\
         trace_url = \"https://grafana.example/explore?traceId={trace_id}&x={trace_id}\"\n",
    ));
    let t = c.tracing.expect("a [tracing] table");
    assert_eq!(t.traces_url, "https://collector.example/otlp/v1/traces");
    assert_eq!(t.sample_ratio, 0.0);
    assert_eq!(t.service_name, "payments-hookgate");
    assert_eq!(
        t.link("0af7651916cd43dd8448eb211c80319c").as_deref(),
        Some(
            "https://grafana.example/explore?traceId=0af7651916cd43dd8448eb211c80319c\
             &x=0af7651916cd43dd8448eb211c80319c"
        )
    );
}

#[test]
fn bad_tracing_keys_are_refused_at_their_line() {
    let src = with("\n[tracing]\nsample_ratio = 0.5 # the table\n");
    only(
        &src,
        "tracing.otlp_endpoint",
        "[tracing]",
        "required key is missing",
    );
    for (value, fragment) in [
        (
            "\"otel-collector:4318\"",
            "not an absolute http:// or https:// URL",
        ),
        (
            "\"grpc://otel-collector:4317\"",
            "not an absolute http:// or https:// URL",
        ),
        (
            "\"http://otel-collector:4318/?x=1\"",
            "may not have a query",
        ),
        (
            "\"http://user:hunter2@otel-collector:4318\"",
            "may not hold user info",
        ),
    ] {
        let src = with(&format!("\n[tracing]\notlp_endpoint = {value} # here\n"));
        only(&src, "tracing.otlp_endpoint", "# here", fragment);
        let p = problems(&src);
        assert!(!show(&p).contains("hunter2"), "{}", show(&p));
    }
    let endpoint = "\n[tracing]\notlp_endpoint = \"http://c:4318\"\n";
    for value in ["1.5", "-0.1", "2"] {
        let src = with(&format!("{endpoint}sample_ratio = {value} # here\n"));
        only(&src, "tracing.sample_ratio", "# here", "from 0.0");
    }
    for value in ["\"\"", "\"has space\""] {
        let src = with(&format!("{endpoint}service_name = {value} # here\n"));
        only(&src, "tracing.service_name", "# here", "printable ASCII");
    }
    for value in [
        "\"https://grafana.example/explore\"",
        "\"/explore?traceId={trace_id}\"",
    ] {
        let src = with(&format!("{endpoint}trace_url = {value} # here\n"));
        only(&src, "tracing.trace_url", "# here", "{trace_id}");
    }
    let src = with(&format!("{endpoint}headers = {{ a = \"b\" }} # here\n"));
    let p = problems(&src);
    assert!(
        p.iter().any(|p| p.field.starts_with("tracing")),
        "an unknown key is refused: {}",
        show(&p)
    );
}

#[test]
fn a_breaker_table_reports_every_problem_at_once() {
    let src = r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"

[[source]]
name = "s"
path = "/s"
scheme = "stripe"
secrets = ["whsec_x"]

[source.breaker]
failures = 0
cooldown = "1m"
max_cooldown = "10s"
"#;
    let ps = problems_with(src, &MapSecrets::default());
    has(&ps, src, "source[s].breaker.failures", "failures = 0", "");
    has(
        &ps,
        src,
        "source[s].breaker.max_cooldown",
        "max_cooldown = \"10s\"",
        "must be at least breaker.cooldown",
    );
}

mod encryption;
