//! When the store fails under a live hookgate: the per-source
//! `on_store_error` choice, and a commit that fails after the app's 2xx.

use crate::support::redis::RedisServer;
use crate::support::{ConfigBuilder, Metrics, SourceSpec, Upstream, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_unchecked_skips_only_the_duplicate_check_while_the_store_is_down() {
    let mut redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let open = SourceSpec::stripe()
        .named("open")
        .key("on_store_error = \"forward_unchecked\"");
    let strict = SourceSpec::stripe().named("strict");
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .sources([open.clone(), strict.clone()])
        .start()
        .await;

    // With the store up, forward_unchecked changes nothing.
    let before = open.event("evt_open_before", "invoice.paid");
    gate.send(&open, &before).await.assert_app_ok();
    gate.send(&open, &before)
        .await
        .assert_duplicate("evt_open_before");

    redis.stop();

    // Store down: the opted-in source forwards, every copy; the default one refuses.
    let during = open.event("evt_open_during", "invoice.paid");
    gate.send(&open, &during).await.assert_app_ok();
    gate.send(&open, &during).await.assert_app_ok();
    let strict_event = strict.event("evt_strict_during", "invoice.paid");
    let resp = gate.send(&strict, &strict_event).await;
    resp.assert_error(503, "store_unavailable");
    resp.retry_after();
    // The signature is still required.
    let forged = open.forged_headers(&during);
    gate.post(&open.path, &forged, during.body.clone())
        .await
        .assert_error(400, "invalid_signature");

    let seen = upstream.wait_for(3).await;
    assert_eq!(seen.len(), 3);
    for request in &seen[1..] {
        assert_eq!(request.header("x-verified-event-id"), "evt_open_during");
        assert_eq!(request.header("x-verified-source"), "open");
    }

    // Counted under its own outcome, and logged as a warning.
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    let count = |source: &str, outcome: &str| {
        metrics
            .get(
                "hookgate_requests_total",
                &[("source", source), ("outcome", outcome)],
            )
            .unwrap_or(0.0)
    };
    assert_eq!(count("open", "forwarded_unchecked"), 2.0);
    assert_eq!(count("open", "forwarded"), 1.0);
    assert_eq!(count("strict", "store_unavailable"), 1.0);
    assert!(
        metrics
            .get("hookgate_store_errors_total", &[])
            .is_some_and(|n| n >= 3.0)
    );
    gate.wait_for_log("a warning about the unchecked forward", |l| {
        l["level"] == "WARN"
            && l["event_id"] == "evt_open_during"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("without the duplicate check"))
    })
    .await;
    gate.wait_for_request_log("evt_open_during", "forwarded_unchecked")
        .await;

    // Store back: the duplicate check is back too.
    redis.restart();
    let after = open.event("evt_open_after", "invoice.paid");
    eventually("the store answers again", || async {
        let resp = gate.send(&strict, &strict_event).await;
        if resp.status == 200 {
            Ok(())
        } else {
            Err(format!("{resp:?}"))
        }
    })
    .await;
    gate.send(&open, &after).await.assert_app_ok();
    gate.send(&open, &after)
        .await
        .assert_duplicate("evt_open_after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_after_the_apps_2xx_lands_once_redis_is_back() {
    let mut redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_commit_retry", "invoice.paid");

    // Redis dies while the app holds the event; the app then says 2xx.
    upstream.hold();
    let (resp, ()) = tokio::join!(gate.send(&stripe, &event), async {
        upstream.wait_for(1).await;
        redis.stop();
        upstream.release();
    });
    // The app took it: the sender hears the app's 2xx, not the store's trouble.
    resp.assert_app_ok();
    gate.wait_for_log("the failed commit", |l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("nonce commit failed"))
    })
    .await;

    // Redis comes back empty; the background retry records the event.
    redis.restart();
    let mut conn = redis.client();
    eventually("the retried commit lands", || {
        let value: Option<String> = redis::cmd("GET")
            .arg("hookgate:nonce:stripe:evt_commit_retry")
            .query(&mut conn)
            .unwrap_or(None);
        async move {
            match value.as_deref() {
                Some("done") => Ok(()),
                other => Err(format!("key holds {other:?}")),
            }
        }
    })
    .await;
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_commit_retry");
    assert_eq!(upstream.count(), 1, "the sender's resend is not forwarded");
}
