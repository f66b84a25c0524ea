//! What an operator looks at (DESIGN §8), asked of a real Prometheus: the
//! chart's Grafana dashboard and alerting rules, read from
//! `charts/hookgate/files/`, against a real `prometheus` scraping the real
//! hookgate binary while it serves a little of everything (forwards,
//! duplicates, bad signatures, a secret rotation, a failing app with queued
//! events and dead letters, a Redis outage, a refused reload). A second
//! hookgate with the same sources on the SQLite store (a temporary file),
//! scraped by the same Prometheus, serves concurrent requests last: the
//! SQLite group-commit panels and alert need its commits. A third, on the
//! memory store, has the gauges only that store has.
//!
//! Every panel's queries and every variable's `label_values`, and every
//! alert's `series` and guard `series`, must return at least one series with
//! a number, and so must every `hookgate_*` selector inside them on its own:
//! a renamed metric or label value fails here, not on an operator's screen.
//!
//! The alerts' rule: an alert's expression is `series compare threshold`
//! (plus an optional `and`/`unless` guard); the chart keeps `series` apart
//! from the threshold, and that is what is asked, so "returns data" means
//! the numbers the threshold is compared with exist, whether or not this
//! little load crosses it. The thresholds and the firing itself are
//! promtool's unit tests (`.ci/promtool-check`).
//!
//! Dashboard variables are given their "All" value (`.*`) and
//! `$__rate_interval` is [`RATE`].
//!
//! With `HOOKGATE_MONITORING_DUMP=FILE` the load phases last 30 s instead of
//! 2 s and the dashboard's panels are written to `FILE` as `query_range`
//! results, for `docs/dashboard.py` to plot (the README's picture).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::prometheus::{Prometheus, sample_value};
use crate::support::redis::RedisServer;
use crate::support::{
    ConfigBuilder, Event, Hookgate, Metrics, Reply, STRIPE_PREVIOUS_SECRET, STRIPE_SECRET,
    SourceSpec, Upstream, eventually, http, now,
};

/// What `$__rate_interval` stands for: several scrapes (one a second).
const RATE: &str = "15s";
/// Pause between two rounds of requests.
const ROUND_PAUSE: Duration = Duration::from_millis(150);
/// Requests sent at once to the SQLite hookgate in each of its rounds, so
/// that its group commits hold more than one write.
const SQLITE_CONCURRENCY: usize = 16;

fn chart_file(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("charts/hookgate/files")
        .join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

/// One expression to ask Prometheus, and where it comes from.
struct Query {
    what: String,
    expr: String,
}

/// A dashboard expression as Grafana would send it with every variable on
/// "All".
fn grafana_to_promql(expr: &str, variables: &[String]) -> String {
    let mut out = expr
        .replace("${__rate_interval}", RATE)
        .replace("$__rate_interval", RATE);
    let mut names = variables.to_vec();
    // Longest first, so `$name` never eats the start of `$namespace`.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        out = out
            .replace(&format!("${{{name}}}"), ".*")
            .replace(&format!("${name}"), ".*");
    }
    assert!(
        !out.contains('$'),
        "dashboard expression {expr:?} uses a variable the dashboard does not define"
    );
    out
}

/// `label_values(METRIC, LABEL)` (Grafana's variable query) as PromQL that
/// returns one series per value.
fn label_values_to_promql(query: &str) -> String {
    let inner = query
        .trim()
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
        .unwrap_or_else(|| panic!("variable query {query:?} is not label_values(metric, label)"));
    let (metric, label) = inner
        .rsplit_once(',')
        .unwrap_or_else(|| panic!("variable query {query:?} names no label"));
    format!("count by ({}) ({})", label.trim(), metric.trim())
}

/// The panels' and variables' queries of the dashboard.
fn dashboard_queries(dashboard: &Value) -> Vec<Query> {
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("templating.list")
        .iter()
        .map(|v| v["name"].as_str().expect("variable name").to_owned())
        .collect::<Vec<_>>();
    let mut queries = Vec::new();
    for v in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if v["type"] == "query" {
            let q = v["query"]["query"].as_str().expect("variable query");
            queries.push(Query {
                what: format!("variable ${}", v["name"].as_str().unwrap_or("?")),
                expr: label_values_to_promql(&grafana_to_promql(q, &variables)),
            });
        }
    }
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            queries.push(Query {
                what: format!(
                    "panel {:?} target {}",
                    panel["title"].as_str().unwrap_or("?"),
                    target["refId"].as_str().unwrap_or("?")
                ),
                expr: grafana_to_promql(target["expr"].as_str().expect("expr"), &variables),
            });
        }
    }
    queries
}

/// Each alert's `series` and guard `series`.
fn alert_queries(alerts: &Value) -> Vec<Query> {
    let mut queries = Vec::new();
    for rule in alerts["rules"].as_array().expect("rules") {
        let name = rule["alert"].as_str().expect("alert name");
        queries.push(Query {
            what: format!("alert {name}"),
            expr: rule["series"].as_str().expect("series").to_owned(),
        });
        if let Some(guard) = rule.get("guard") {
            queries.push(Query {
                what: format!("alert {name} guard"),
                expr: guard["series"].as_str().expect("guard series").to_owned(),
            });
        }
    }
    queries
}

/// The `hookgate_*` selectors inside `expr` (name plus `{…}` matchers),
/// each on its own.
fn selectors(expr: &str) -> Vec<String> {
    let bytes = expr.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(found) = expr[i..].find("hookgate_") {
        let start = i + found;
        let mut end = start;
        while end < bytes.len() && word(bytes[end]) {
            end += 1;
        }
        if start > 0 && word(bytes[start - 1]) {
            i = end;
            continue;
        }
        if bytes.get(end) == Some(&b'{') {
            let close = expr[end..].find('}').expect("matchers close") + end;
            end = close + 1;
        }
        out.push(expr[start..end].to_owned());
        i = end;
    }
    out
}

/// The request mix: a stripe source with two secrets (a rotation), github,
/// a queued source whose events get delivered and one whose events wait an
/// hour for their retry.
struct Load {
    stripe: SourceSpec,
    github: SourceSpec,
    queued: SourceSpec,
    stuck: SourceSpec,
    next_id: usize,
}

impl Load {
    fn new() -> Load {
        Load {
            stripe: SourceSpec::stripe().literal_secrets(&[STRIPE_SECRET, STRIPE_PREVIOUS_SECRET]),
            github: SourceSpec::github(),
            queued: SourceSpec::stripe()
                .named("queued")
                .key("delivery = \"queue\"")
                .key("retry_schedule = [\"1s\"]"),
            stuck: {
                let mut stuck = SourceSpec::stripe()
                    .named("stuck")
                    .key("delivery = \"queue\"")
                    .key("retry_schedule = [\"1h\"]");
                // A breaker that never opens in this run: its gauge is exported.
                stuck.extra_toml += "\n[source.breaker]\nfailures = 100000\n";
                stuck
            },
            next_id: 0,
        }
    }

    fn config(&self, upstream: &Upstream, redis: &RedisServer) -> ConfigBuilder {
        ConfigBuilder::new(&upstream.url())
            .redis(&redis.url())
            .sources([
                self.stripe.clone(),
                self.github.clone(),
                self.queued.clone(),
                self.stuck.clone(),
            ])
    }

    /// The same sources on the SQLite file `db`. The builder writes a
    /// `memory` store by default; its `kind` line becomes the sqlite one.
    fn sqlite_config(&self, upstream: &Upstream, db: &Path) -> String {
        let toml = ConfigBuilder::new(&upstream.url())
            .sources([
                self.stripe.clone(),
                self.github.clone(),
                self.queued.clone(),
                self.stuck.clone(),
            ])
            .toml();
        let memory = "[store]\nkind = \"memory\"\n";
        assert!(
            toml.contains(memory),
            "no memory store to replace in:\n{toml}"
        );
        let path = serde_json::to_string(&db.display().to_string()).expect("path as a string");
        toml.replacen(
            memory,
            &format!("[store]\nkind = \"sqlite\"\npath = {path}\nsync = \"full\"\n"),
            1,
        )
    }

    fn event(&mut self, source: &SourceSpec) -> Event {
        self.next_id += 1;
        match source.name.as_str() {
            "github" => source.event(&format!("delivery-mon-{}", self.next_id), "push"),
            _ => source.event(&format!("evt_mon_{}", self.next_id), "invoice.paid"),
        }
    }

    /// The app answers 2xx: a fresh stripe event signed with `secret`, its
    /// duplicate, a forged one, a github event and a queued one.
    async fn healthy_round(&mut self, gate: &Hookgate, secret: usize) {
        let stripe = self.stripe.clone();
        let fresh = self.event(&stripe);
        gate.send_with(&stripe, &fresh, secret, now())
            .await
            .assert_app_ok();
        gate.send_with(&stripe, &fresh, secret, now())
            .await
            .assert_duplicate(&fresh.id);
        let forged = self.event(&stripe);
        gate.post(
            &stripe.path,
            &stripe.forged_headers(&forged),
            forged.body.clone(),
        )
        .await
        .assert_error(400, "invalid_signature");
        let github = self.github.clone();
        let push = self.event(&github);
        gate.send(&github, &push).await.assert_app_ok();
        let queued = self.queued.clone();
        let event = self.event(&queued);
        let resp = gate.send(&queued, &event).await;
        assert_eq!(
            (resp.status, resp.json()["queued"].clone()),
            (200, json!(true)),
            "{resp:?}"
        );
    }

    /// [`SQLITE_CONCURRENCY`] events at once, half forwarded (a nonce
    /// commit each after the app's 2xx), half queued (an enqueue each before
    /// the 200).
    async fn concurrent_round(&mut self, gate: &Hookgate) {
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..SQLITE_CONCURRENCY {
            let source = if n % 2 == 0 {
                self.stripe.clone()
            } else {
                self.queued.clone()
            };
            let event = self.event(&source);
            let url = format!("{}{}", gate.public_url(), source.path);
            let headers = source.request_headers(&event);
            tasks.spawn(async move {
                let resp = http(http::Method::POST, &url, &headers, event.body.clone()).await;
                (source.name, resp)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (source, resp) = done.expect("request task");
            if source == "queued" {
                assert_eq!(
                    (resp.status, resp.json()["queued"].clone()),
                    (200, json!(true)),
                    "{resp:?}"
                );
            } else {
                resp.assert_app_ok();
            }
        }
    }

    /// The app answers 500: a stripe event the sender tries three times
    /// (then it is copied to the dead letters), a github event, and two
    /// queued events that will wait an hour for their retry.
    async fn failing_round(&mut self, gate: &Hookgate) {
        let stripe = self.stripe.clone();
        let event = self.event(&stripe);
        for _ in 0..3 {
            assert_eq!(gate.send(&stripe, &event).await.status, 500);
        }
        let github = self.github.clone();
        let push = self.event(&github);
        assert_eq!(gate.send(&github, &push).await.status, 500);
        let stuck = self.stuck.clone();
        for _ in 0..2 {
            let event = self.event(&stuck);
            let resp = gate.send(&stuck, &event).await;
            assert_eq!(
                (resp.status, resp.json()["queued"].clone()),
                (200, json!(true)),
                "{resp:?}"
            );
        }
    }
}

/// Runs `round` every [`ROUND_PAUSE`] for `length`, and records the phase's
/// name and span in `phases`.
macro_rules! phase {
    ($phases:expr, $name:expr, $length:expr, $round:expr) => {{
        let start = unix_now();
        let until = Instant::now() + $length;
        while Instant::now() < until {
            $round;
            tokio::time::sleep(ROUND_PAUSE).await;
        }
        $phases.push(($name, start, unix_now()));
    }};
}

/// Waits until `/metrics` counts a reload with `result`.
async fn wait_for_reload(gate: &Hookgate, result: &str) {
    eventually(&format!("a config reload counted as {result}"), || async {
        let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
        match metrics.get("hookgate_config_reloads_total", &[("result", result)]) {
            Some(n) if n >= 1.0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// The label values of `label` among `result`'s series.
fn label_set(result: &[Value], label: &str) -> BTreeSet<String> {
    result
        .iter()
        .filter_map(|s| s["metric"][label].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn every_dashboard_panel_and_alert_expression_returns_data_from_a_real_prometheus() {
    let dashboard = chart_file("dashboard.json");
    let alerts = chart_file("alerts.json");
    let dump: Option<PathBuf> = std::env::var_os("HOOKGATE_MONITORING_DUMP").map(PathBuf::from);
    let length = if dump.is_some() {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(2)
    };

    let mut redis = RedisServer::start_persistent();
    let upstream = Upstream::start().await;
    let mut load = Load::new();
    let config = load.config(&upstream, &redis);
    let mut gate = config.start().await;
    let store_dir = tempfile::tempdir().expect("a directory for the SQLite file");
    let mut sqlite_gate =
        Hookgate::start(&load.sqlite_config(&upstream, &store_dir.path().join("hookgate.db")))
            .await;
    // A third on the memory store, for the gauges only that store has
    // (hookgate_store_entries, hookgate_store_capacity).
    let memory_gate = ConfigBuilder::new(&upstream.url())
        .source(load.stripe.clone())
        .start()
        .await;
    let prometheus = Prometheus::start(&[
        gate.admin_addr(),
        sqlite_gate.admin_addr(),
        memory_gate.admin_addr(),
    ])
    .await;
    prometheus.wait_targets_up().await;
    let held = load.event(&load.stripe.clone());
    memory_gate
        .send_with(&load.stripe, &held, 0, now())
        .await
        .assert_app_ok();
    let started = unix_now();
    let mut phases: Vec<(&str, f64, f64)> = Vec::new();

    // A rotation: the sender still signs with the previous secret (index
    // 1), then switches to the current one (index 0).
    phase!(
        phases,
        "signed with secret 1",
        length,
        load.healthy_round(&gate, 1).await
    );
    phase!(
        phases,
        "signed with secret 0",
        length,
        load.healthy_round(&gate, 0).await
    );

    // The app fails: 5xx, dead letters, a queue that does not drain.
    upstream.set_reply(Reply::status(500).body("app down"));
    phase!(
        phases,
        "app answers 500",
        length,
        load.failing_round(&gate).await
    );
    upstream.set_reply(Reply::default());
    phase!(
        phases,
        "app back",
        length,
        load.healthy_round(&gate, 0).await
    );

    // Redis goes away: 503 store_unavailable and store errors.
    redis.stop();
    let stripe = load.stripe.clone();
    phase!(phases, "Redis down", length, {
        let event = load.event(&stripe);
        gate.send(&stripe, &event)
            .await
            .assert_error(503, "store_unavailable");
    });
    redis.restart();
    eventually("hookgate answers again once Redis is back", || async {
        let resp = gate.admin_get("/readyz").await;
        if resp.status == 200 {
            Ok(())
        } else {
            Err(format!("{resp:?}"))
        }
    })
    .await;

    // A refused reload (the old config keeps serving), then a good one.
    gate.rewrite_config(&config.clone().upstream_timeout("whenever").toml());
    gate.signal("HUP");
    wait_for_reload(&gate, "failure").await;
    phase!(
        phases,
        "reload refused",
        length / 2,
        load.healthy_round(&gate, 0).await
    );
    gate.rewrite_config(&config.toml());
    gate.signal("HUP");
    wait_for_reload(&gate, "success").await;
    phase!(
        phases,
        "reload applied",
        length,
        load.healthy_round(&gate, 0).await
    );

    // The second hookgate, on the SQLite store, under concurrent requests:
    // group commits with fsyncs and several writes each.
    phase!(
        phases,
        "SQLite store",
        length,
        load.concurrent_round(&sqlite_gate).await
    );

    // Prometheus has what hookgate now shows: the gauges refreshed from
    // Redis (every 5 s) and the last reload.
    for (what, expr) in [
        (
            "the stuck queue's depth",
            r#"max(hookgate_queue_depth{source="stuck"}) > 0"#,
        ),
        ("the dead letters", "max(hookgate_dlq_depth) > 0"),
        (
            "the good reload",
            r#"hookgate_config_reloads_total{result="success"}"#,
        ),
    ] {
        eventually(&format!("Prometheus scraped {what}"), || async {
            match prometheus.query(expr).await {
                Ok(r) if !r.is_empty() => Ok(()),
                other => Err(format!("{expr}: {other:?}")),
            }
        })
        .await;
    }

    // Every expression, and every selector inside it, returns a number.
    let mut queries = dashboard_queries(&dashboard);
    queries.extend(alert_queries(&alerts));
    let mut asked = BTreeSet::new();
    let mut checks: Vec<Query> = Vec::new();
    for q in &queries {
        for selector in selectors(&q.expr) {
            if asked.insert(selector.clone()) {
                checks.push(Query {
                    what: format!("selector in {}", q.what),
                    expr: selector,
                });
            }
        }
    }
    let panel_count = queries.len();
    checks.splice(0..0, queries);
    let mut failures = Vec::new();
    for q in &checks {
        match prometheus.query(&q.expr).await {
            Err(e) => failures.push(format!("{}: {}\n    error: {e}", q.what, q.expr)),
            Ok(result) if !result.iter().any(|s| sample_value(s).is_some()) => {
                failures.push(format!(
                    "{}: {}\n    no series with a number: {result:?}",
                    q.what, q.expr
                ))
            }
            Ok(_) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} queries returned no data:\n{}\n--- prometheus log ---\n{}",
        failures.len(),
        checks.len(),
        failures.join("\n"),
        prometheus.log_tail()
    );
    assert!(
        panel_count >= 25 && checks.len() > panel_count,
        "asked {panel_count} expressions and {} selectors",
        checks.len() - panel_count
    );

    // And the panels show what happened.
    let panel = |title: &str| -> Vec<String> {
        let panel = dashboard["panels"]
            .as_array()
            .expect("panels")
            .iter()
            .find(|p| p["title"] == title)
            .unwrap_or_else(|| panic!("no panel {title:?}"));
        let variables = ["namespace".to_owned(), "source".to_owned()];
        panel["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .map(|t| grafana_to_promql(t["expr"].as_str().expect("expr"), &variables))
            .collect()
    };
    let first = |exprs: Vec<String>| exprs.into_iter().next().expect("a target");
    let outcomes = label_set(
        &prometheus
            .query(&first(panel("Requests by outcome")))
            .await
            .expect("query"),
        "outcome",
    );
    for outcome in [
        "forwarded",
        "duplicate",
        "invalid_signature",
        "queued",
        "store_unavailable",
    ] {
        assert!(
            outcomes.contains(outcome),
            "Requests by outcome lacks {outcome}: {outcomes:?}"
        );
    }
    let matches = prometheus
        .query(&first(panel("Signature matches by secret index")))
        .await
        .expect("query");
    let stripe_secrets: BTreeSet<String> = matches
        .iter()
        .filter(|s| s["metric"]["source"] == "stripe")
        .filter_map(|s| s["metric"]["secret"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        stripe_secrets,
        BTreeSet::from(["0".to_owned(), "1".to_owned()]),
        "both stripe secrets matched"
    );
    let classes = label_set(
        &prometheus
            .query(&first(panel("Upstream responses by class")))
            .await
            .expect("query"),
        "class",
    );
    assert!(
        classes.contains("2xx") && classes.contains("5xx"),
        "classes: {classes:?}"
    );
    let results = label_set(
        &prometheus
            .query(&first(panel("Queue delivery attempts by result")))
            .await
            .expect("query"),
        "result",
    );
    assert!(
        results.contains("delivered") && results.contains("retry"),
        "delivery results: {results:?}"
    );
    let reloads = label_set(
        &prometheus
            .query(&first(panel("Config reloads")))
            .await
            .expect("query"),
        "result",
    );
    assert!(
        reloads.contains("success") && reloads.contains("failure"),
        "reload results: {reloads:?}"
    );
    let depths = panel("Queue and dead-letter depth");
    let stuck = prometheus.query(&depths[0]).await.expect("query");
    assert!(
        stuck
            .iter()
            .any(|s| s["metric"]["source"] == "stuck" && sample_value(s).unwrap_or(0.0) > 0.0),
        "the stuck queue shows its waiting events: {stuck:?}"
    );
    let dlq = prometheus.query(&depths[1]).await.expect("query");
    assert!(
        dlq.iter().any(|s| sample_value(s).unwrap_or(0.0) >= 1.0),
        "the dead letters show: {dlq:?}"
    );

    // The SQLite panels: commit times of the SQLite hookgate, and writes
    // of concurrent requests sharing commits.
    let sqlite_instance = sqlite_gate.admin_addr().to_string();
    let on_sqlite = |result: &[Value]| -> Vec<f64> {
        result
            .iter()
            .filter(|s| s["metric"]["instance"] == sqlite_instance.as_str())
            .filter_map(sample_value)
            .collect()
    };
    for expr in panel("SQLite group commit: time per commit") {
        let times = on_sqlite(&prometheus.query(&expr).await.expect("query"));
        assert!(
            times.len() == 1 && times[0] > 0.0,
            "{expr}: the SQLite hookgate's commit time: {times:?}"
        );
    }
    let per_commit = first(panel("SQLite group commit: writes per commit"));
    let writes = on_sqlite(&prometheus.query(&per_commit).await.expect("query"));
    assert!(
        writes.len() == 1 && writes[0] > 1.0,
        "{per_commit}: concurrent writes share commits on the SQLite hookgate: {writes:?}"
    );
    let fill = prometheus
        .query(&first(panel("Memory store fill")))
        .await
        .expect("query");
    assert!(
        fill.iter().any(|s| sample_value(s).unwrap_or(0.0) > 0.0),
        "the memory store's held id shows: {fill:?}"
    );
    let evicting = prometheus
        .query(&first(panel("Redis eviction")))
        .await
        .expect("query");
    assert!(
        evicting.iter().any(|s| sample_value(s) == Some(0.0)),
        "a noeviction Redis shows 0: {evicting:?}"
    );

    if let Some(path) = dump {
        write_dump(&path, &prometheus, &dashboard, started, &phases).await;
    }
    assert!(!gate.has_exited(), "hookgate ran through all of it");
    assert!(
        !sqlite_gate.has_exited(),
        "the SQLite hookgate ran through all of it"
    );
}

/// Writes every dashboard panel as `query_range` results over the run, with
/// the phases, for `docs/dashboard.py`.
async fn write_dump(
    path: &Path,
    prometheus: &Prometheus,
    dashboard: &Value,
    started: f64,
    phases: &[(&str, f64, f64)],
) {
    let ended = unix_now();
    let variables = ["namespace".to_owned(), "source".to_owned()];
    let mut panels = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let mut targets = Vec::new();
        for target in panel["targets"].as_array().expect("targets") {
            let expr = grafana_to_promql(target["expr"].as_str().expect("expr"), &variables);
            let series = prometheus
                .query_range(&expr, started, ended, 2.0)
                .await
                .unwrap_or_else(|e| panic!("query_range {expr}: {e}"));
            targets.push(json!({
                "legendFormat": target["legendFormat"],
                "expr": expr,
                "series": series,
            }));
        }
        panels.push(json!({
            "title": panel["title"],
            "type": panel["type"],
            "unit": panel["fieldConfig"]["defaults"]["unit"],
            "targets": targets,
        }));
    }
    let phases: Vec<Value> = phases
        .iter()
        .map(|(name, start, end)| json!({ "name": name, "start": start, "end": end }))
        .collect();
    let dump = json!({
        "about": "query_range results of the dashboard's panels over one run of \
                  `HOOKGATE_MONITORING_DUMP=… cargo test --test it monitoring`",
        "rate_interval": RATE,
        "started": started,
        "ended": ended,
        "phases": phases,
        "panels": panels,
    });
    let text = serde_json::to_string(&dump).expect("dump serializes");
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
