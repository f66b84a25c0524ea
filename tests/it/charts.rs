//! The overview's charts (DESIGN §7b) on the real binary: a known mix of
//! traffic drawn as inline SVG whose numbers match the metrics, in
//! headless chromium on a SQLite file; and on Redis, two replicas' counts
//! summed on one replica's page once each has added its own (every 10 s).

use std::collections::HashMap;
use std::time::Duration;

use fantoccini::Locator;
use hookgate::scheme::Scheme;
use hookgate::secret::Secret;

use crate::console::{screenshot, send, session, sign_in, wait_text};
use crate::delivery_kit::{ADMIN_TOKEN, App, Backend, SECRET, config, signed_headers, source};
use crate::support::browser::Browser;
use crate::support::{Hookgate, http};

/// A User-Agent a hostile sender chose: shown as text on the Rejections page.
const UA: &str = "<img src=x onerror=\"window.hacked=1\">";

fn sources() -> String {
    format!(
        "{}[[source]]\nname = \"s\"\npath = \"/hooks/s\"\nscheme = \"stripe\"\nsecrets = [\"{SECRET}\"]\n",
        source("q", "event_types = [\"thing.*\"]"),
    )
}

/// `hookgate_requests_total` and `hookgate_upstream_responses_total` of
/// `source`, by label.
fn counts(metrics: &str, name: &str, source: &str, label: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for line in metrics.lines().filter(|l| l.starts_with(name)) {
        if !line.contains(&format!("source=\"{source}\"")) {
            continue;
        }
        let Some(at) = line.find(&format!("{label}=\"")) else {
            continue;
        };
        let rest = &line[at + label.len() + 2..];
        let value = rest.split('"').next().unwrap_or_default().to_owned();
        let n = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        *out.entry(value).or_default() += n as u64;
    }
    out
}

/// What the charts must show for `source`, from the metrics: delivered
/// (the app's 2xx), duplicates, ignored, rejected, failed (the app's other
/// answers).
fn expected(metrics: &str, source: &str) -> [u64; 5] {
    let requests = counts(metrics, "hookgate_requests_total", source, "outcome");
    let answers = counts(
        metrics,
        "hookgate_upstream_responses_total",
        source,
        "class",
    );
    let get = |m: &HashMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let ok = get(&answers, "2xx");
    [
        ok + get(&requests, "queued"),
        get(&requests, "duplicate") + get(&requests, "in_flight"),
        get(&requests, "ignored") + get(&requests, "filtered"),
        get(&requests, "invalid_signature") + get(&requests, "missing_signature"),
        get(&requests, "forwarded") - ok,
    ]
}

async fn stripe(hookgate: &Hookgate, id: &str) -> u16 {
    let body = format!(r#"{{"id":"{id}","type":"invoice.paid"}}"#);
    let headers = Scheme::Stripe
        .sign(
            &Secret::new(SECRET.as_bytes()),
            body.as_bytes(),
            None,
            crate::support::now(),
        )
        .expect("stripe signs");
    hookgate.post("/hooks/s", &headers, body).await.status
}

/// 5 delivered, 3 duplicates, 2 ignored, 4 rejected, 1 failed to `q`; 2
/// delivered to `s` (which signs a timestamp, so its latency is known).
async fn known_mix(app: &App, hookgate: &Hookgate) {
    for i in 0..5 {
        let id = format!("ok_{i}");
        let body = format!(r#"{{"n":{i}}}"#);
        assert_eq!(send(hookgate, "q", &id, &body, &[]).await, 200);
        if i < 3 {
            assert_eq!(
                send(hookgate, "q", &id, &body, &[]).await,
                200,
                "a duplicate"
            );
        }
    }
    for i in 0..2 {
        let status = send(
            hookgate,
            "q",
            &format!("ig_{i}"),
            "{}",
            &[("x-github-event", "other.kind")],
        )
        .await;
        assert_eq!(status, 200, "ignored");
    }
    for i in 0..4 {
        let mut headers = signed_headers(&format!("bad_{i}"), b"{}");
        headers.push(("user-agent".into(), UA.into()));
        for (n, v) in headers.iter_mut() {
            if n.eq_ignore_ascii_case("x-hub-signature-256") {
                *v = format!("sha256={}", "0".repeat(64));
            }
        }
        assert_eq!(hookgate.post("/hooks/q", &headers, "{}").await.status, 400);
    }
    app.then_answer(&[500]);
    assert_eq!(send(hookgate, "q", "fail_1", "{}", &[]).await, 500);
    for i in 0..2 {
        assert_eq!(stripe(hookgate, &format!("evt_s{i}")).await, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_show_what_the_metrics_count() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = Hookgate::start(&config(&app, &backend, &sources())).await;
    known_mix(&app, &hookgate).await;
    let metrics = hookgate.admin_get("/metrics").await.text();
    let want = expected(&metrics, "q");
    assert_eq!(want, [5, 3, 2, 4, 1], "the mix as the metrics count it");

    let admin = hookgate.admin_url();
    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "table.sources", "q").await;
    for (range, path) in [
        ("Last hour", "/console"),
        ("Last 24 hours", "/console?range=24h"),
    ] {
        client
            .goto(&format!("{admin}{path}"))
            .await
            .expect("overview");
        wait_text(client, "#chart-q h3", range).await;
        for (series, n) in ["delivered", "duplicates", "ignored", "rejected", "failed"]
            .iter()
            .zip(want)
        {
            let shown = client
                .find(Locator::Css(&format!(
                    "#chart-q p.chart-totals span[data-series={series}] b"
                )))
                .await
                .expect("a total")
                .text()
                .await
                .expect("text");
            assert_eq!(shown, n.to_string(), "{range}: {series}");
        }
        // The bars add up to the same: one title per drawn segment.
        let titles = client
            .find_all(Locator::Css("#chart-q svg.outcomes rect title"))
            .await
            .expect("segments");
        let mut drawn = 0u64;
        for t in titles {
            let text = t.html(true).await.unwrap_or_default();
            drawn += text
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
        assert_eq!(drawn, want.iter().sum::<u64>(), "{range}: the bars");
        // Axes, units and a legend, in the SVG itself.
        let svg = client
            .find(Locator::Css("#chart-q svg.outcomes"))
            .await
            .expect("svg")
            .html(false)
            .await
            .expect("svg markup");
        for needle in [
            "UTC",
            "requests /",
            "delivered",
            "duplicates",
            "ignored",
            "rejected",
            "failed",
        ] {
            assert!(svg.contains(needle), "{needle} in {svg}");
        }
        // `s` signs its timestamp: its latency is drawn, p50 at most p99.
        let p50 = wait_text(client, "#chart-s span[data-series=p50] b", " ").await;
        let p99 = wait_text(client, "#chart-s span[data-series=p99] b", " ").await;
        assert!(p50 != "–" && p99 != "–", "{p50} {p99}");
        let latency = client
            .find(Locator::Css("#chart-s svg.latency"))
            .await
            .expect("latency svg")
            .html(false)
            .await
            .expect("markup");
        assert!(
            latency.contains("p99") && latency.contains("<path d=\"M"),
            "{latency}"
        );
        if path == "/console" {
            screenshot(client, "charts").await;
        }
    }
    // The four forged requests on the Rejections page, with their count.
    client
        .goto(&format!("{admin}/console/rejections?source=q"))
        .await
        .expect("rejections page");
    let entries = wait_text(client, "table.rejections", "invalid_signature").await;
    assert_eq!(entries.matches("invalid_signature").count(), 4, "{entries}");
    assert!(
        entries.contains("127.0.0.1") && entries.contains("/hooks/q"),
        "{entries}"
    );
    let counts = wait_text(client, "table.by-outcome", "invalid_signature").await;
    assert!(counts.contains("invalid_signature 4"), "{counts}");
    assert!(entries.contains(UA), "{entries}");
    let ran = client
        .execute(
            "return window.hacked === undefined && document.images.length === 0;",
            vec![],
        )
        .await
        .expect("script");
    assert_eq!(
        ran,
        serde_json::Value::Bool(true),
        "the hostile User-Agent became markup"
    );
    browser.close().await;
}

/// Two replicas on one Redis: each adds its counts to the store every
/// 10 s, and either one's page shows the sum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_counts_are_summed_on_redis() {
    let app = App::start().await;
    let backend = Backend::redis();
    let toml = config(&app, &backend, &source("q", ""));
    let a = Hookgate::start(&toml).await;
    let b = Hookgate::start(&toml).await;
    // GitHub signs no id: the nonce is the body's digest, so each body differs.
    for i in 0..3 {
        let body = format!(r#"{{"a":{i}}}"#);
        assert_eq!(send(&a, "q", &format!("a_{i}"), &body, &[]).await, 200);
    }
    for i in 0..2 {
        let body = format!(r#"{{"b":{i}}}"#);
        assert_eq!(send(&b, "q", &format!("b_{i}"), &body, &[]).await, 200);
    }
    let admin = a.admin_url();
    let (cookie, _) = session(&admin).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let page = http(
            http::Method::GET,
            &format!("{admin}/console"),
            &[("cookie".into(), cookie.clone())],
            "",
        )
        .await
        .text();
        let needle = "data-series=\"delivered\">delivered <b>";
        let shown = page
            .find(needle)
            .map(|at| &page[at + needle.len()..])
            .and_then(|rest| rest.split('<').next())
            .and_then(|n| n.parse::<u64>().ok());
        if shown == Some(5) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "replica a's page never showed both replicas' 5 deliveries (last: {shown:?})\n{}",
            page.find("section class=\"charts\"")
                .map(|at| &page[at..(at + 1500).min(page.len())])
                .unwrap_or(&page)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // What the store holds is one hash per hour and per day, never a key per event.
    let Backend::Redis(redis) = &backend else {
        unreachable!()
    };
    let out = std::process::Command::new("redis-cli")
        .args([
            "-p",
            &redis.port().to_string(),
            "--scan",
            "--pattern",
            "hg:stats:*",
        ])
        .output()
        .expect("redis-cli");
    let keys = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!((2..=4).contains(&keys), "{keys} stats keys");
}
