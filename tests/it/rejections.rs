//! Rejections (DESIGN §7d) on the real binary: every refusal row of §3
//! leaves a metadata-only entry with its word, nothing secret from the
//! request is in it, no store key is written, and a flood leaves the
//! entries and the address counts at their caps.

use std::time::Duration;

use bytes::Bytes;
use hookgate::scheme::Scheme;
use hookgate::secret::Secret;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::delivery_kit::{ADMIN_TOKEN, App, Backend, SECRET, config, hookgate_cli, source};
use crate::support::Hookgate;

const BODY_MARKER: &str = "BODY-MARKER-7d41";
const HEADER_MARKER: &str = "HEADER-MARKER-9c2e";

fn server_extra(toml: &str, extra: &str) -> String {
    toml.replacen("[server]\n", &format!("[server]\n{extra}\n"), 1)
}

/// `GET /rejections?{query}` on the admin listener with the token.
async fn rejections(gate: &Hookgate, query: &str) -> Value {
    let host = gate.admin_addr();
    let path = format!("/rejections?{query}");
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .expect("connect admin");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("answer in time")
        .expect("read");
    let text = String::from_utf8_lossy(&answer).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    // Chunked or not: the JSON object is between the first `{` and the last `}`.
    let (start, end) = (
        body.find('{').expect("json"),
        body.rfind('}').expect("json"),
    );
    serde_json::from_str(&body[start..=end]).expect("json")
}

/// Raw bytes to the public listener; the status line's code.
async fn raw(gate: &Hookgate, bytes: &[u8]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(gate.public_addr())
        .await
        .expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut answer = vec![0; 64];
    let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut answer))
        .await
        .expect("answer in time")
        .expect("read");
    let text = String::from_utf8_lossy(&answer[..n]).into_owned();
    text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn sources() -> String {
    format!(
        "{}{}[[source]]\nname = \"st\"\npath = \"/hooks/st\"\nscheme = \"stripe\"\nsecrets = [\"{SECRET}\"]\ntolerance = \"5m\"\n",
        source("q", ""),
        source("locked", "allow_ips = [\"10.0.0.0/8\"]"),
    )
}

#[tokio::test]
async fn every_refusal_leaves_its_word_and_nothing_secret() {
    let app = App::start().await;
    let backend = Backend::redis();
    let toml = server_extra(&config(&app, &backend, &sources()), "max_body_bytes = 2048");
    let gate = Hookgate::start(&toml).await;
    let keys_before = backend_keys(&backend);
    let ua = "Stripe/1.0 (+https://stripe.com/docs/webhooks)";
    let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        v.push(("user-agent".into(), ua.into()));
        v.push(("x-custom-secret".into(), HEADER_MARKER.into()));
        v
    };
    let body = format!(r#"{{"id":"evt_1","note":"{BODY_MARKER}"}}"#);

    // 400 bad_request: a dot segment, on a raw socket.
    assert_eq!(
        raw(
            &gate,
            b"POST /hooks/q/../q HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        )
        .await,
        400
    );
    // 404 unknown_source, 405 method_not_allowed, 403 forbidden_ip, 413 body_too_large.
    assert_eq!(
        gate.post("/nowhere", &h(&[]), body.clone()).await.status,
        404
    );
    assert_eq!(
        gate.request(http::Method::GET, "/hooks/q", &h(&[]), Bytes::new())
            .await
            .status,
        405
    );
    assert_eq!(
        gate.post("/hooks/locked", &h(&[]), body.clone())
            .await
            .status,
        403
    );
    assert_eq!(
        gate.post("/hooks/q", &h(&[]), "x".repeat(4096))
            .await
            .status,
        413
    );
    // The signature rows.
    let event = [("x-github-event", "push"), ("x-github-delivery", "d-1")];
    assert_eq!(
        gate.post("/hooks/q", &h(&event), body.clone()).await.status,
        400
    );
    let forged_signature =
        "sha256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut forged = event.to_vec();
    forged.push(("x-hub-signature-256", forged_signature));
    assert_eq!(
        gate.post("/hooks/q", &h(&forged), body.clone())
            .await
            .status,
        400
    );
    let mut malformed = event.to_vec();
    malformed.push(("x-hub-signature-256", "sha256=zz"));
    assert_eq!(
        gate.post("/hooks/q", &h(&malformed), body.clone())
            .await
            .status,
        400
    );
    let secret = Secret::new(SECRET.as_bytes());
    let stale_at = crate::support::now() - 3600;
    let stale = Scheme::Stripe
        .sign(&secret, body.as_bytes(), None, stale_at)
        .expect("stripe signs");
    let stale_signature = stale
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("stripe-signature"))
        .map(|(_, v)| v.clone())
        .expect("signature header");
    let stale: Vec<(&str, &str)> = stale
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        gate.post("/hooks/st", &h(&stale), body.clone())
            .await
            .status,
        400
    );
    let not_json = Scheme::Stripe
        .sign(&secret, b"not json", None, crate::support::now())
        .expect("stripe signs");
    let not_json: Vec<(&str, &str)> = not_json
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        gate.post("/hooks/st", &h(&not_json), "not json")
            .await
            .status,
        400
    );

    let listed = rejections(&gate, "limit=1000").await;
    let entries = listed["entries"].as_array().expect("entries").clone();
    let words: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e["outcome"].as_str())
        .collect();
    for word in [
        "bad_request",
        "unknown_source",
        "method_not_allowed",
        "forbidden_ip",
        "body_too_large",
        "missing_signature",
        "invalid_signature",
        "malformed_signature",
        "timestamp_outside_window",
        "malformed_body",
    ] {
        assert!(words.contains(word), "{word} missing from {listed}");
    }
    let find = |word: &str| {
        entries
            .iter()
            .find(|e| e["outcome"] == word)
            .cloned()
            .expect("an entry")
    };
    assert_eq!(find("unknown_source")["source"], Value::Null);
    assert_eq!(find("forbidden_ip")["status"], 403);
    assert_eq!(
        find("missing_signature")["signature_header"],
        "X-Hub-Signature-256"
    );
    let late = find("timestamp_outside_window");
    let beyond = late["outside_tolerance_secs"].as_i64().expect("how far");
    assert!((3300..=3310).contains(&beyond), "{late}");
    let invalid = find("invalid_signature");
    assert_eq!(invalid["client"], "127.0.0.1");
    assert_eq!(invalid["user_agent"], ua);
    assert_eq!(invalid["body_bytes"], body.len());
    assert_eq!(invalid["path"], "/hooks/q");
    // Nothing a sender sent but the listed metadata: no body, no signature,
    // no other header's value, no secret.
    let text = listed.to_string();
    for secret_thing in [
        BODY_MARKER,
        HEADER_MARKER,
        forged_signature,
        &stale_signature,
        SECRET,
        "evt_1",
    ] {
        assert!(
            !text.contains(secret_thing),
            "{secret_thing} leaked: {text}"
        );
    }
    // Counts over the last hour.
    let counts = &listed["counts"];
    assert!(
        counts["by_outcome"]
            .as_array()
            .expect("by outcome")
            .iter()
            .any(|c| c["source"] == "q" && c["key"] == "invalid_signature" && c["count"] == 1),
        "{counts}"
    );
    // Filters.
    let only = rejections(&gate, "source=st&outcome=malformed_body").await;
    assert_eq!(only["entries"].as_array().map(Vec::len), Some(1), "{only}");
    // A refusal writes nothing to the store.
    assert_eq!(backend_keys(&backend), keys_before);
    // The command line reads the same from the running server.
    let file = crate::delivery_kit::ConfigFile::write(&toml.replace(
        "listen = \"127.0.0.1:0\"\ntoken",
        &format!("listen = \"{}\"\ntoken", gate.admin_addr()),
    ));
    let path = file.path.to_str().expect("utf-8");
    let (code, out, err) = hookgate_cli(&[
        "rejections",
        "--config",
        path,
        "--outcome",
        "timestamp_outside_window",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("timestamp_outside_window") && out.contains("outside tolerance"),
        "{out}"
    );
    assert!(!out.contains("invalid_signature  400"), "{out}");
    let metrics = gate.admin_get("/metrics").await.text();
    assert!(metrics.contains("hookgate_rejections_kept 10"), "{metrics}");
}

fn backend_keys(backend: &Backend) -> Vec<String> {
    let Backend::Redis(redis) = backend else {
        panic!("a redis backend")
    };
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port().to_string(), "--scan"])
        .output()
        .expect("redis-cli (apt-get install -y redis-tools)");
    let mut keys: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

/// A flood of forged requests from many addresses: 1,000 entries kept,
/// every refusal counted, at most 1,000 addresses named (the rest `other`),
/// and the process's memory flat from the first thousands to the last.
#[tokio::test]
async fn a_flood_of_forged_requests_stays_within_the_caps() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let toml = server_extra(
        &config(&app, &backend, &source("q", "")),
        "trusted_proxies = [\"127.0.0.0/8\"]",
    );
    let gate = std::sync::Arc::new(Hookgate::start(&toml).await);
    let flood = |from: u32, to: u32| {
        let gate = std::sync::Arc::clone(&gate);
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for lane in 0..8u32 {
                let gate = std::sync::Arc::clone(&gate);
                tasks.spawn(async move {
                    for i in (from + lane..to).step_by(8) {
                        let addr = std::net::Ipv4Addr::from(0x0a00_0000 + i);
                        let headers = vec![
                            ("x-forwarded-for".to_owned(), addr.to_string()),
                            ("x-github-event".to_owned(), "push".to_owned()),
                            (
                                "x-hub-signature-256".to_owned(),
                                format!("sha256={:064x}", i),
                            ),
                        ];
                        let status = gate.post("/hooks/q", &headers, "{}").await.status;
                        assert_eq!(status, 400);
                    }
                });
            }
            while let Some(done) = tasks.join_next().await {
                done.expect("a flood lane");
            }
        }
    };
    flood(0, 3_000).await;
    let rss_early = rss_kib(gate.pid());
    flood(3_000, 12_000).await;
    let rss_late = rss_kib(gate.pid());
    let listed = rejections(&gate, "limit=5000").await;
    assert_eq!(listed["entries"].as_array().map(Vec::len), Some(1000));
    let by_outcome = listed["counts"]["by_outcome"]
        .as_array()
        .expect("counts")
        .clone();
    assert_eq!(by_outcome.len(), 1, "{by_outcome:?}");
    assert_eq!(by_outcome[0]["count"], 12_000);
    let by_client = listed["counts"]["by_client"]
        .as_array()
        .expect("counts")
        .clone();
    assert_eq!(by_client.len(), 1001);
    let other = by_client
        .iter()
        .find(|c| c["key"] == "other")
        .expect("other");
    assert_eq!(other["count"], 11_000);
    let metrics = gate.admin_get("/metrics").await.text();
    assert!(
        metrics.contains("hookgate_rejections_kept 1000"),
        "{metrics}"
    );
    // 9,000 more refusals after the caps were reached: the memory did not
    // grow with them (allowance for the allocator's own slack).
    assert!(
        rss_late <= rss_early + 8 * 1024,
        "resident memory grew from {rss_early} KiB to {rss_late} KiB"
    );
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}
