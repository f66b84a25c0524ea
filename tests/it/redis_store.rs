//! hookgate on a real Redis: the store going away and coming back to the same
//! process, the DESIGN §4 key layout, and Redis Cluster.

use std::time::Duration;

use crate::support::redis::{RedisCluster, RedisServer};
use crate::support::{ConfigBuilder, Reply, SourceSpec, StoreSpec, Upstream, eventually, now};

async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).expect("redis url");
    tokio::time::timeout(
        Duration::from_secs(10),
        client.get_multiplexed_async_connection(),
    )
    .await
    .expect("redis connects in time")
    .expect("redis connects")
}

async fn keys(con: &mut redis::aio::MultiplexedConnection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(con)
        .await
        .expect("KEYS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_is_503_and_the_same_process_recovers_when_it_returns() {
    let mut redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .source(stripe.clone())
        .start()
        .await;

    let before = stripe.event("evt_before_outage", "invoice.paid");
    gate.send(&stripe, &before).await.assert_app_ok();

    redis.stop();

    let during = stripe.event("evt_during_outage", "invoice.paid");
    let resp = gate.send(&stripe, &during).await;
    resp.assert_error(503, "store_unavailable");
    resp.retry_after();
    // Without the store a duplicate can't be told from a fresh event either.
    let resp = gate.send(&stripe, &before).await;
    resp.assert_error(503, "store_unavailable");
    resp.retry_after();
    // Verification comes first and needs no store: a bad signature stays a 400.
    let forged = stripe.forged_headers(&during);
    gate.post(&stripe.path, &forged, during.body.clone())
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(
        upstream.count(),
        1,
        "nothing forwarded while the store is down"
    );

    redis.restart();

    // The sender keeps retrying; once the store answers, the event goes through.
    let resp = eventually("the event is accepted after Redis is back", || async {
        let resp = gate.send(&stripe, &during).await;
        if resp.status == 503 {
            Err(format!("{resp:?}"))
        } else {
            Ok(resp)
        }
    })
    .await;
    resp.assert_app_ok();
    gate.send(&stripe, &during)
        .await
        .assert_duplicate("evt_during_outage");
    assert_eq!(upstream.count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nonce_keys_follow_the_documented_layout_and_rejections_store_nothing() {
    let redis = RedisServer::start();
    let mut con = redis_connection(&redis.url()).await;
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().event_types(&["invoice.*"]);
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .key_prefix("itgate")
        .nonce_ttl("1h")
        .upstream_timeout("2s")
        .source(stripe.clone())
        .start()
        .await;

    // Rejections and ignored events leave no key behind.
    let event = stripe.event("evt_layout_rejected", "invoice.paid");
    gate.post(&stripe.path, &event.headers, event.body.clone())
        .await
        .assert_error(400, "missing_signature");
    let forged = stripe.forged_headers(&event);
    gate.post(&stripe.path, &forged, event.body.clone())
        .await
        .assert_error(400, "invalid_signature");
    gate.send_with(&stripe, &event, 0, now() - 3600)
        .await
        .assert_error(400, "timestamp_outside_window");
    gate.send(
        &stripe,
        &stripe.event("evt_layout_ignored", "charge.refunded"),
    )
    .await
    .assert_json(200, serde_json::json!({ "ignored": true }));
    assert_eq!(keys(&mut con, "itgate:nonce:*").await, Vec::<String>::new());

    // In flight: the key holds a lease that outlives upstream_timeout.
    let key = "itgate:nonce:stripe:evt_layout_1";
    let event = stripe.event("evt_layout_1", "invoice.paid");
    upstream.hold();
    let (resp, (lease_ms, token)) = tokio::join!(gate.send(&stripe, &event), async {
        upstream.wait_for(1).await;
        let lease_ms: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut con)
            .await
            .expect("PTTL");
        let token: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut con)
            .await
            .expect("GET");
        upstream.release();
        (lease_ms, token)
    });
    resp.assert_app_ok();
    assert!(
        lease_ms > 1000,
        "in-flight lease {lease_ms}ms should outlive upstream_timeout (2s)"
    );
    let token = token.expect("the in-flight key exists while the app works");

    // Done: kept for nonce_ttl, no longer the in-flight token.
    let ttl_ms: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut con)
        .await
        .expect("PTTL");
    assert!(
        (3_000_000..=3_600_000).contains(&ttl_ms),
        "a completed event is kept for nonce_ttl (1h), PTTL {ttl_ms}ms"
    );
    let done: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(&mut con)
        .await
        .expect("GET");
    assert_ne!(done.as_deref(), Some(token.as_str()));

    // A non-2xx from the app deletes the key: the retry is fresh.
    upstream.set_reply(Reply::status(500));
    let resp = gate
        .send(&stripe, &stripe.event("evt_layout_500", "invoice.paid"))
        .await;
    assert_eq!(resp.status, 500);
    let exists: i64 = redis::cmd("EXISTS")
        .arg("itgate:nonce:stripe:evt_layout_500")
        .query_async(&mut con)
        .await
        .expect("EXISTS");
    assert_eq!(exists, 0, "a failed delivery leaves no key");
    assert_eq!(
        keys(&mut con, "itgate:nonce:*").await,
        vec![key.to_owned()],
        "only the completed event has a key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_store_forwards_each_event_once() {
    let cluster = RedisCluster::start(3);
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Cluster(cluster.urls()))
        .source(github.clone())
        .start()
        .await;

    // Enough ids that their keys land on every master.
    for i in 0..20 {
        let id = format!("cluster-delivery-{i}");
        let event = github.event(&id, "push");
        gate.send(&github, &event).await.assert_app_ok();
        gate.send(&github, &event).await.assert_duplicate(&id);
    }
    assert_eq!(upstream.count(), 20);
}

/// Without `min_replicas` the sender's answer does not wait for the commit's
/// reply: with Redis refusing writes for a while (`CLIENT PAUSE … WRITE`,
/// shorter than a command's timeout, so a waited-for commit would land
/// before the answer), the 2xx comes back while the key still holds the
/// in-flight token, and the commit lands once the pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_does_not_wait_for_the_commit_and_the_commit_lands() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .key_prefix("itgate")
        .source(stripe.clone())
        .start()
        .await;
    let mut con = redis_connection(&redis.url()).await;
    let key = "itgate:nonce:stripe:evt_behind";
    let event = stripe.event("evt_behind", "invoice.paid");

    upstream.hold();
    let (resp, token) = tokio::join!(gate.send(&stripe, &event), async {
        upstream.wait_for(1).await;
        let token: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut con)
            .await
            .expect("GET");
        // Reads go on; writes wait 0.7 s (a command times out after 1 s).
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(700)
            .arg("WRITE")
            .query_async(&mut con)
            .await
            .expect("CLIENT PAUSE");
        upstream.release();
        token
    });
    resp.assert_app_ok();
    let token = token.expect("the claim holds the key while the app works");
    let right_after: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(&mut con)
        .await
        .expect("GET");
    assert_eq!(
        right_after.as_deref(),
        Some(token.as_str()),
        "the 2xx came back before the commit was applied"
    );
    eventually("the commit lands once writes resume", || async {
        let mut con = redis_connection(&redis.url()).await;
        let value: Option<String> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut con)
            .await
            .map_err(|e| e.to_string())?;
        match value.as_deref() {
            Some("done") => Ok(()),
            other => Err(format!("{key} holds {other:?}")),
        }
    })
    .await;
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_behind");
    assert_eq!(upstream.count(), 1);
}
