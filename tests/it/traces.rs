//! Traces (DESIGN §7c) from the real binary to a real OTLP/HTTP receiver
//! that decodes what hookgate sends with the official protobuf types
//! (`support::collector`): a forwarded event, a rejected request, a queued
//! event retried and then one replayed, each as one connected trace; the
//! `traceparent` the app receives; a sender's `traceparent` as a link and
//! never a parent; the trace id in log lines and in the trail; a collector
//! that is down; `sample_ratio = 0`; and no `[tracing]` at all.

use std::time::Duration;

use http::Method;
use serde_json::json;

use crate::support::collector::{self, CLIENT, Collector, INTERNAL, PRODUCER, SERVER, Span};
use crate::support::{ConfigBuilder, Event, Hookgate, Reply, SourceSpec, Upstream, headers, http};

const TOKEN: &str = "traces-test-admin-token";
/// What an attacker (or any sender) puts in `traceparent`.
const SENDER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SENDER_SPAN: &str = "00f067aa0ba902b7";

fn sender_traceparent() -> String {
    format!("00-{SENDER_TRACE}-{SENDER_SPAN}-01")
}

fn tracing_table(collector: &Collector, extra: &str) -> String {
    format!(
        "\n[tracing]\notlp_endpoint = \"{}\"\nservice_name = \"hookgate-test\"\n{extra}",
        collector.url()
    )
}

fn with_token(toml: String) -> String {
    toml.replacen(
        "[admin]\nlisten = \"127.0.0.1:0\"\n",
        &format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"),
        1,
    )
}

/// A W3C `traceparent` split into (trace id, span id, flags).
fn split(traceparent: &str) -> (String, String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[0], "00", "{traceparent}");
    assert_eq!(parts[1].len(), 32, "{traceparent}");
    assert_eq!(parts[2].len(), 16, "{traceparent}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

fn child<'a>(spans: &'a [Span], parent: &Span, name: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.parent_span_id == parent.span_id && s.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no {name} span under {}:\n{}",
                parent.name,
                collector::describe(spans)
            )
        })
}

/// No attribute of any span holds a secret, a signature or the body.
fn assert_clean(spans: &[Span], forbidden: &[&str]) {
    for span in spans {
        for (key, value) in &span.attributes {
            for bad in forbidden {
                assert!(
                    !value.contains(bad),
                    "span {} attribute {key} carries {bad:?}: {value}",
                    span.name
                );
            }
        }
    }
}

/// `GET {path}` on the admin listener with the token, as JSON.
async fn admin_json(gate: &Hookgate, path: &str) -> serde_json::Value {
    let r = http(
        Method::GET,
        &format!("{}{path}", gate.admin_url()),
        &headers(&[("Authorization", &format!("Bearer {TOKEN}"))]),
        String::new(),
    )
    .await;
    serde_json::from_slice(&r.body).unwrap_or_default()
}

#[tokio::test]
async fn a_forwarded_event_is_one_trace_that_the_app_joins_and_a_senders_traceparent_is_only_a_link()
 {
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let stripe = SourceSpec::stripe();
    let toml = ConfigBuilder::new(&upstream.url())
        .sources([github.clone(), stripe.clone()])
        .toml()
        + &tracing_table(&collector, "sample_ratio = 1.0\n");
    let gate = Hookgate::start(&toml).await;

    let body = json!({"zen": "traced", "secret_note": "body-marker-7731"});
    // GitHub's event type is a header its signature does not cover.
    let event = Event::json("gh-traced-1", Some("push"), body)
        .header("X-GitHub-Event", "push")
        .header("traceparent", &sender_traceparent())
        .header("tracestate", "sender=attacker");
    let signature = github.request_headers(&event);
    let answer = gate.send(&github, &event).await;
    answer.assert_app_ok();

    // The app's request names hookgate's span, not the sender's.
    let seen = upstream.wait_for(1).await;
    let traceparent = seen[0].header("traceparent");
    let (trace_id, app_parent, flags) = split(&traceparent);
    assert_ne!(
        trace_id, SENDER_TRACE,
        "the sender's trace is not continued"
    );
    assert_eq!(flags, "01", "sampled");
    assert!(
        !seen[0].has_header("tracestate"),
        "the sender's tracestate is not passed on"
    );
    assert_eq!(seen[0].header_all("traceparent").len(), 1);

    let server = collector
        .wait_for("server span of gh-traced-1", |s| {
            s.kind == SERVER && s.attr("hookgate.event_id") == Some("gh-traced-1")
        })
        .await;
    assert_eq!(server.trace_id, trace_id);
    assert_eq!(server.name, "POST /webhooks/github");
    assert_eq!(
        server.parent_span_id, "",
        "a root span: the sender is no parent"
    );
    assert_eq!(
        server.links,
        vec![(SENDER_TRACE.to_owned(), SENDER_SPAN.to_owned())],
        "the sender's traceparent is a link"
    );
    assert_eq!(server.service_name, "hookgate-test");
    assert_eq!(server.scope, "hookgate");
    assert_eq!(server.attr("hookgate.source"), Some("github"));
    assert_eq!(server.attr("hookgate.outcome"), Some("forwarded"));
    assert_eq!(
        server.attr("hookgate.event_type"),
        None,
        "an unsigned type is not vouched for"
    );
    assert_eq!(server.attr("http.request.method"), Some("POST"));
    assert_eq!(server.attr("http.route"), Some("/webhooks/github"));
    assert_eq!(server.attr("url.path"), Some("/webhooks/github"));
    assert_eq!(server.attr("http.response.status_code"), Some("200"));

    // The children end before the server span, so all are in by now or soon.
    collector
        .wait_for("the forward span", |s| {
            s.trace_id == trace_id && s.kind == CLIENT
        })
        .await;
    let spans = collector.trace(&trace_id);
    let verify = child(&spans, &server, "verify");
    assert_eq!(verify.kind, INTERNAL);
    assert_eq!(verify.status, 0);
    let claim = child(&spans, &server, "claim");
    assert_eq!(claim.attr("hookgate.claim"), Some("fresh"));
    let forward = child(&spans, &server, "POST");
    assert_eq!(forward.kind, CLIENT);
    assert_eq!(
        forward.span_id, app_parent,
        "the app's traceparent names the forward span"
    );
    assert_eq!(forward.attr("hookgate.delivery.attempt"), Some("1"));
    assert_eq!(forward.attr("hookgate.delivery.mode"), Some("forward"));
    assert_eq!(forward.attr("http.response.status_code"), Some("200"));
    assert_eq!(forward.attr("server.address"), Some("127.0.0.1"));
    assert!(forward.start_ns >= server.start_ns && forward.end_ns <= server.end_ns);

    // The app's own span joins: the trace is one, connected, root to app.
    let app_span = collector.post_app_span(&traceparent).await;
    let joined = collector.assert_joined(&trace_id, &app_span);
    let app = joined
        .iter()
        .find(|s| s.span_id == app_span)
        .expect("the app's span");
    assert_eq!(app.service_name, "app");
    assert_eq!(app.parent_span_id, forward.span_id);

    // The request's log line carries the trace id.
    let line = gate.wait_for_request_log("gh-traced-1", "forwarded").await;
    assert_eq!(line["trace_id"], trace_id.as_str(), "{line}");

    // Stripe signs the body that names the type: it is recorded.
    let invoice = Event::json(
        "evt_traced_1",
        Some("invoice.paid"),
        json!({"id": "evt_traced_1", "type": "invoice.paid"}),
    );
    gate.send(&stripe, &invoice).await.assert_app_ok();
    let paid = collector
        .wait_for("the Stripe event's span", |s| {
            s.kind == SERVER && s.attr("hookgate.event_id") == Some("evt_traced_1")
        })
        .await;
    assert_eq!(paid.attr("hookgate.event_type"), Some("invoice.paid"));
    assert_eq!(paid.name, "POST /webhooks/stripe");

    // A copy: a trace of its own, answered by hookgate, no forward span.
    gate.send(&github, &event)
        .await
        .assert_duplicate("gh-traced-1");
    let copy = collector
        .wait_for("the duplicate's server span", |s| {
            s.kind == SERVER && s.attr("hookgate.outcome") == Some("duplicate")
        })
        .await;
    assert_ne!(copy.trace_id, trace_id);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let copy_spans = collector.trace(&copy.trace_id);
    assert_eq!(
        child(&copy_spans, &copy, "claim").attr("hookgate.claim"),
        Some("done")
    );
    assert!(
        copy_spans.iter().all(|s| s.kind != CLIENT),
        "{}",
        collector::describe(&copy_spans)
    );

    let mut forbidden: Vec<&str> = github.secret_values.iter().map(String::as_str).collect();
    let signature_value = signature
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("x-hub-signature-256"))
        .map(|(_, v)| v.clone())
        .expect("a GitHub signature header");
    forbidden.push(&signature_value);
    forbidden.push("body-marker-7731");
    forbidden.push("attacker");
    assert_clean(&collector.spans(), &forbidden);
}

#[tokio::test]
async fn a_rejected_request_gets_a_span_with_its_outcome_and_no_event_id() {
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let toml = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .toml()
        + &tracing_table(&collector, "");
    let gate = Hookgate::start(&toml).await;

    let event = Event::json("gh-forged-1", Some("push"), json!({"forged": true}));
    let mut forged = github.request_headers(&event);
    for (name, value) in &mut forged {
        if name.eq_ignore_ascii_case("x-hub-signature-256") {
            *value = format!("sha256={}", "0".repeat(64));
        }
    }
    let answer = gate.post(&github.path, &forged, event.body.clone()).await;
    assert_eq!(answer.status, 400, "{}", answer.text());
    let code = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let server = collector
        .wait_for("the rejected request's span", |s| s.kind == SERVER)
        .await;
    assert_eq!(server.attr("hookgate.outcome"), Some(code.as_str()));
    assert_eq!(server.attr("http.response.status_code"), Some("400"));
    assert_eq!(server.attr("error.type"), Some(code.as_str()));
    assert_eq!(
        server.attr("hookgate.event_id"),
        None,
        "an id it did not prove"
    );
    assert_eq!(server.attr("hookgate.event_type"), None);
    assert_eq!(server.status, 0, "a sender's 4xx is not hookgate's error");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let spans = collector.trace(&server.trace_id);
    let verify = child(&spans, &server, "verify");
    assert_eq!(verify.status, 2, "the verification failed");
    assert!(spans.iter().all(|s| s.name != "claim" && s.kind != CLIENT));
    assert!(
        collector
            .spans()
            .iter()
            .all(|s| s.attributes.iter().all(|(_, v)| !v.contains("gh-forged-1")))
    );
    assert_eq!(upstream.count(), 0);

    // A path no source serves: a span too, with its outcome.
    let stray = gate.post("/nowhere", &[], "x").await;
    assert_eq!(stray.status, 404);
    let unmatched = collector
        .wait_for("the unmatched request's span", |s| {
            s.kind == SERVER && s.attr("url.path") == Some("/nowhere")
        })
        .await;
    assert_eq!(unmatched.name, "POST");
    assert_eq!(unmatched.attr("hookgate.outcome"), Some("unknown_source"));
}

#[tokio::test]
async fn queue_attempts_and_a_replay_are_client_spans_in_the_trace_of_the_request_that_queued_them()
{
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("hookgate.db");
    let mut q = SourceSpec::github();
    q.name = "q".into();
    q.path = "/webhooks/q".into();
    q.extra_keys = "delivery = \"queue\"\nretry_schedule = [\"1s\"]\nmax_in_flight = 1\n".into();
    let toml = with_token(
        ConfigBuilder::new(&upstream.url())
            .source(q.clone())
            .toml()
            .replacen(
                "kind = \"memory\"\n",
                &format!("kind = \"sqlite\"\npath = {:?}\n", db.display().to_string()),
                1,
            ),
    ) + &tracing_table(
        &collector,
        "trace_url = \"https://grafana.example/explore?traceId={trace_id}\"\n",
    );
    let gate = Hookgate::start(&toml).await;

    // Retried: the app fails the first attempt, takes the second.
    upstream.set_reply(Reply::status(500));
    let event = Event::json("q-retried", Some("push"), json!({"n": 1}));
    gate.send(&q, &event)
        .await
        .assert_json(200, json!({"queued": true, "event_id": "q-retried"}));
    upstream.wait_for(1).await;
    upstream.set_reply(Reply::status(200));
    let seen = upstream.wait_for(2).await;

    let server = collector
        .wait_for("the queuing request's span", |s| {
            s.kind == SERVER && s.attr("hookgate.event_id") == Some("q-retried")
        })
        .await;
    assert_eq!(server.attr("hookgate.outcome"), Some("queued"));
    collector
        .wait_for("the second attempt", |s| {
            s.trace_id == server.trace_id && s.attr("hookgate.delivery.attempt") == Some("2")
        })
        .await;
    let spans = collector.trace(&server.trace_id);
    assert_eq!(child(&spans, &server, "enqueue").kind, PRODUCER);
    let attempts: Vec<&Span> = spans
        .iter()
        .filter(|s| s.kind == CLIENT && s.parent_span_id == server.span_id)
        .collect();
    assert_eq!(attempts.len(), 2, "{}", collector::describe(&spans));
    for (n, (attempt, app)) in attempts.iter().zip(&seen).enumerate() {
        let (trace_id, parent, _) = split(&app.header("traceparent"));
        assert_eq!(
            trace_id, server.trace_id,
            "attempt {n} is in the queuing request's trace"
        );
        let named = spans
            .iter()
            .find(|s| s.span_id == parent)
            .unwrap_or_else(|| panic!("the app's traceparent names no span: {parent}"));
        assert_eq!(named.kind, CLIENT);
        assert_eq!(attempt.attr("hookgate.delivery.mode"), Some("queue"));
        assert_eq!(attempt.attr("hookgate.event_id"), Some("q-retried"));
    }
    let app_span = collector
        .post_app_span(&seen[1].header("traceparent"))
        .await;
    collector.assert_joined(&server.trace_id, &app_span);
    let first = attempts
        .iter()
        .find(|s| s.attr("hookgate.delivery.attempt") == Some("1"))
        .expect("attempt 1");
    assert_eq!(first.attr("http.response.status_code"), Some("500"));
    assert_eq!(first.status, 2);
    assert!(
        first.start_ns >= server.end_ns,
        "attempts come after the answer"
    );

    // The trail's attempts carry the trace id.
    let record = crate::support::eventually("the trail's two attempts", || async {
        let r = admin_json(&gate, "/events/q/q-retried").await;
        match r["attempts"].as_array() {
            Some(a) if a.len() == 2 => Ok(r),
            _ => Err(r.to_string()),
        }
    })
    .await;
    for a in record["attempts"].as_array().into_iter().flatten() {
        assert_eq!(a["trace_id"], server.trace_id.as_str(), "{record}");
    }

    // Replayed: the app refuses (4xx: a dead letter at once), then takes
    // the replay, which joins the same trace.
    upstream.set_reply(Reply::status(422));
    let refused = Event::json("q-replayed", Some("push"), json!({"n": 2}));
    gate.send(&q, &refused).await;
    upstream.wait_for(3).await;
    let dead = crate::support::eventually("a dead letter", || async {
        let v = admin_json(&gate, "/dlq").await;
        match v["entries"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|e| e["id"].as_str())
        {
            Some(id) => Ok(id.to_owned()),
            None => Err(v.to_string()),
        }
    })
    .await;
    upstream.set_reply(Reply::status(200));
    let replay = http(
        Method::POST,
        &format!("{}/dlq/replay", gate.admin_url()),
        &headers(&[
            ("Authorization", &format!("Bearer {TOKEN}")),
            ("Content-Type", "application/json"),
        ]),
        json!({"id": dead}).to_string(),
    )
    .await;
    assert_eq!(replay.status, 200, "{}", replay.text());
    let seen = upstream.wait_for(4).await;
    let (replay_trace, replay_parent, _) = split(&seen[3].header("traceparent"));
    let queued = collector
        .wait_for("q-replayed's server span", |s| {
            s.kind == SERVER && s.attr("hookgate.event_id") == Some("q-replayed")
        })
        .await;
    assert_eq!(
        replay_trace, queued.trace_id,
        "the replay joins the queuing request's trace"
    );
    let replayed = collector
        .wait_for("the replay span", |s| s.span_id == replay_parent)
        .await;
    assert_eq!(replayed.kind, CLIENT);
    assert_eq!(replayed.parent_span_id, queued.span_id);
    assert_eq!(replayed.attr("hookgate.delivery.mode"), Some("replay"));
    assert_eq!(replayed.attr("http.response.status_code"), Some("200"));
    let app_span = collector
        .post_app_span(&seen[3].header("traceparent"))
        .await;
    // The refused attempt, the replay and the app's span: one trace.
    collector
        .wait_for("the refused attempt", |s| {
            s.trace_id == queued.trace_id && s.attr("hookgate.delivery.mode") == Some("queue")
        })
        .await;
    collector.assert_joined(&queued.trace_id, &app_span);
}

#[tokio::test]
async fn a_collector_that_is_down_delays_no_answer_and_what_it_misses_is_counted() {
    let collector = Collector::start().await;
    collector.hang();
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let toml = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .toml()
        + &tracing_table(&collector, "");
    let gate = Hookgate::launch(&toml)
        .env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-collector-key=k-123")
        .start()
        .await;

    // Every request is answered while the collector holds its connection.
    for n in 0..40 {
        let event = Event::json(&format!("gh-down-{n}"), Some("push"), json!({"n": n}));
        gate.send(&github, &event).await.assert_app_ok();
    }
    assert_eq!(upstream.count(), 40);
    let export = crate::support::eventually("an export attempt", || async {
        collector
            .requests()
            .first()
            .cloned()
            .ok_or_else(|| "none yet".to_owned())
    })
    .await;
    assert!(
        export.contains(&("x-collector-key".to_owned(), "k-123".to_owned())),
        "the exporter sends the headers from the environment: {export:?}"
    );
    // The stuck batch is given up after the export timeout and counted.
    let dropped = crate::support::eventually("dropped spans counted", || async {
        let m = gate.admin_get("/metrics").await.text();
        let n = m
            .lines()
            .find(|l| l.starts_with("hookgate_trace_spans_dropped_total "))
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if n > 0.0 { Ok(n) } else { Err(m) }
    })
    .await;
    assert!(dropped >= 1.0);
    let warning = gate
        .wait_for_log("the export failure", |l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("trace export failed"))
        })
        .await;
    assert!(
        warning["spans"].as_u64().is_some_and(|n| n >= 1),
        "{warning}"
    );
}

#[tokio::test]
async fn sample_ratio_zero_exports_nothing_and_without_tracing_the_senders_headers_pass_unchanged()
{
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let base = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .toml();
    let gate =
        Hookgate::start(&(base.clone() + &tracing_table(&collector, "sample_ratio = 0\n"))).await;
    let event = Event::json("gh-unsampled", Some("push"), json!({"n": 0}))
        .header("traceparent", &sender_traceparent());
    gate.send(&github, &event).await.assert_app_ok();
    let seen = upstream.wait_for(1).await;
    let (trace_id, _, flags) = split(&seen[0].header("traceparent"));
    assert_ne!(trace_id, SENDER_TRACE);
    assert_eq!(flags, "00", "not sampled: the app is told so");
    let line = gate.wait_for_request_log("gh-unsampled", "forwarded").await;
    assert!(
        line.get("trace_id").is_none(),
        "no trace id of a trace not kept: {line}"
    );
    drop(gate);

    // Without [tracing] hookgate is no hop in anyone's trace.
    let gate = Hookgate::start(&base).await;
    let event = Event::json("gh-untraced", Some("push"), json!({"n": 1}))
        .header("traceparent", &sender_traceparent())
        .header("tracestate", "sender=s");
    gate.send(&github, &event).await.assert_app_ok();
    let seen = upstream.wait_for(2).await;
    assert_eq!(seen[1].header("traceparent"), sender_traceparent());
    assert_eq!(seen[1].header("tracestate"), "sender=s");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(
        collector.spans().is_empty(),
        "{}",
        collector::describe(&collector.spans())
    );
    assert!(collector.requests().is_empty());
}
