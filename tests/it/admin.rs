//! The admin listener: liveness, readiness that follows the store, and the
//! DESIGN §7 metrics after real traffic.

use crate::support::redis::RedisServer;
use crate::support::{
    ConfigBuilder, Hookgate, Metrics, Reply, STRIPE_PREVIOUS_SECRET, STRIPE_SECRET, SourceSpec,
    Upstream, closed_addr, eventually, now,
};

#[tokio::test]
async fn healthz_and_readyz_answer_200_with_the_memory_store() {
    let upstream = Upstream::start().await;
    let gate = ConfigBuilder::new(&upstream.url())
        .source(SourceSpec::stripe())
        .start()
        .await;

    assert_eq!(gate.admin_get("/healthz").await.status, 200);
    assert_eq!(gate.admin_get("/readyz").await.status, 200);
    // The admin endpoints are not on the public listener.
    assert_ne!(gate.admin_addr(), gate.public_addr());
}

async fn readyz_status(gate: &Hookgate) -> u16 {
    gate.admin_get("/readyz").await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_redis_going_away_and_coming_back() {
    let mut redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .source(SourceSpec::stripe())
        .start()
        .await;
    assert_eq!(readyz_status(&gate).await, 200);

    redis.stop();
    eventually("/readyz is 503 while Redis is down", || async {
        match readyz_status(&gate).await {
            503 => Ok(()),
            other => Err(format!("status {other}")),
        }
    })
    .await;
    assert_eq!(
        gate.admin_get("/healthz").await.status,
        200,
        "the process itself is alive"
    );

    redis.restart();
    eventually("/readyz is 200 again once Redis is back", || async {
        match readyz_status(&gate).await {
            200 => Ok(()),
            other => Err(format!("status {other}")),
        }
    })
    .await;
}

/// A sample a test expects: name, labels it must carry, value.
type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], f64);

/// Polls `/metrics` until every expected sample is there with that value.
async fn wait_for_metrics(gate: &Hookgate, expected: &[Expected<'_>]) -> Metrics {
    eventually("the metrics count the traffic", || async {
        let resp = gate.admin_get("/metrics").await;
        if resp.status != 200 {
            return Err(format!("/metrics answered {resp:?}"));
        }
        let metrics = Metrics::parse(&resp.text());
        let missing: Vec<String> = expected
            .iter()
            .filter(|(name, labels, value)| metrics.get(name, labels) != Some(*value))
            .map(|(name, labels, value)| {
                format!(
                    "{name}{labels:?} = {value} (saw {:?})",
                    metrics.get(name, labels)
                )
            })
            .collect();
        if missing.is_empty() {
            Ok(metrics)
        } else {
            Err(format!("missing {missing:#?}\n{}", metrics.text))
        }
    })
    .await
}

#[tokio::test]
async fn metrics_count_requests_outcomes_secrets_and_upstream_answers() {
    let upstream = Upstream::start().await;
    // Secret 0 is the previous one, secret 1 the current one.
    let stripe = SourceSpec::stripe().literal_secrets(&[STRIPE_PREVIOUS_SECRET, STRIPE_SECRET]);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let paid = stripe.event("evt_metrics_paid", "invoice.paid");
    gate.send_with(&stripe, &paid, 1, now())
        .await
        .assert_app_ok();
    gate.send_with(&stripe, &paid, 1, now())
        .await
        .assert_duplicate("evt_metrics_paid");

    let forged_event = stripe.event("evt_metrics_forged", "invoice.paid");
    let forged = stripe.forged_headers(&forged_event);
    gate.post(&stripe.path, &forged, forged_event.body.clone())
        .await
        .assert_error(400, "invalid_signature");

    upstream.set_reply(Reply::status(503).body("app busy"));
    let failing = stripe.event("evt_metrics_app_error", "invoice.paid");
    assert_eq!(
        gate.send_with(&stripe, &failing, 0, now()).await.status,
        503
    );

    let stripe_only: &[(&str, &str)] = &[("source", "stripe")];
    let metrics = wait_for_metrics(
        &gate,
        &[
            (
                "hookgate_requests_total",
                &[("source", "stripe"), ("outcome", "duplicate")],
                1.0,
            ),
            (
                "hookgate_requests_total",
                &[("source", "stripe"), ("outcome", "invalid_signature")],
                1.0,
            ),
            (
                "hookgate_upstream_responses_total",
                &[("source", "stripe"), ("class", "2xx")],
                1.0,
            ),
            (
                "hookgate_upstream_responses_total",
                &[("source", "stripe"), ("class", "5xx")],
                1.0,
            ),
            ("hookgate_upstream_duration_seconds_count", stripe_only, 2.0),
            // Only the app's 2xx completes an event.
            (
                "hookgate_completion_latency_seconds_count",
                stripe_only,
                1.0,
            ),
        ],
    )
    .await;

    let forwarded = metrics
        .get(
            "hookgate_requests_total",
            &[("source", "stripe"), ("outcome", "forwarded")],
        )
        .unwrap_or(0.0);
    assert!(forwarded >= 1.0, "forwarded counted\n{}", metrics.text);
    let current = metrics
        .get(
            "hookgate_signature_matches_total",
            &[("source", "stripe"), ("secret", "1")],
        )
        .unwrap_or(0.0);
    let previous = metrics
        .get(
            "hookgate_signature_matches_total",
            &[("source", "stripe"), ("secret", "0")],
        )
        .unwrap_or(0.0);
    assert!(
        current >= 1.0 && previous >= 1.0,
        "matches by secret index: 1 -> {current}, 0 -> {previous}\n{}",
        metrics.text
    );
    assert!(
        metrics.text.contains("hookgate_store_errors_total"),
        "store errors counter is exported\n{}",
        metrics.text
    );
}

#[tokio::test]
async fn metrics_count_an_unreachable_app_as_an_upstream_error() {
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&format!("http://{}", closed_addr()))
        .source(stripe.clone())
        .start()
        .await;
    gate.send(&stripe, &stripe.event("evt_metrics_502", "invoice.paid"))
        .await
        .assert_error(502, "upstream_unavailable");

    wait_for_metrics(
        &gate,
        &[
            (
                "hookgate_requests_total",
                &[("source", "stripe"), ("outcome", "upstream_unavailable")],
                1.0,
            ),
            (
                "hookgate_upstream_responses_total",
                &[("source", "stripe"), ("class", "error")],
                1.0,
            ),
        ],
    )
    .await;
}
