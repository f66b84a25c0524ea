//! `kind = "redis-sentinel"` and `min_replicas` on real processes: a
//! primary, replicas and three `redis-sentinel`s started by the test on free
//! loopback ports. A failover (SIGKILL, or a demotion by `SENTINEL
//! FAILOVER`) is followed without a restart; a write that no replica
//! acknowledges in time is a failed write, counted and logged.

use std::time::Duration;

use crate::support::hookgate::run_cli;
use crate::support::redis::RedisServer;
use crate::support::sentinel::{MASTER, Sentinels};
use crate::support::{
    ConfigBuilder, Hookgate, Metrics, Reply, Resp, SourceSpec, StoreSpec, Upstream, closed_addr,
    eventually,
};

/// The data nodes' password: it must never show up in hookgate's output.
const DATA_PASSWORD: &str = "data-node-pw-5e2c";

fn sentinel_config(upstream: &Upstream, sentinels: &Sentinels, source: &SourceSpec) -> String {
    ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Sentinel(sentinels.urls(), MASTER.to_owned()))
        .store_key(r#"password = { env = "HG_DATA_PASSWORD" }"#)
        .store_key("min_replicas = 1")
        .store_key(r#"replica_timeout = "500ms""#)
        .upstream_timeout("2s")
        .source(source.clone())
        .toml()
}

async fn start(config: &str) -> Hookgate {
    Hookgate::launch(config)
        .env("HG_DATA_PASSWORD", DATA_PASSWORD)
        .start()
        .await
}

async fn readyz(gate: &Hookgate) -> Resp {
    gate.admin_get("/readyz").await
}

/// Sends `event` until the app's own 2xx comes back (bounded), as a
/// retrying sender would through a failover.
async fn send_until_forwarded(gate: &Hookgate, source: &SourceSpec, id: &str) {
    let event = source.event(id, "invoice.paid");
    eventually(&format!("{id} forwarded"), || async {
        let resp = gate.send(source, &event).await;
        if resp.status == 200 && resp.text() == "ok" {
            Ok(())
        } else {
            Err(format!("{} {}", resp.status, resp.text()))
        }
    })
    .await;
}

fn replication_timeouts(metrics: &Metrics, operation: &str) -> f64 {
    metrics
        .get(
            "hookgate_replication_timeouts_total",
            &[("operation", operation)],
        )
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_is_followed_to_the_promoted_replica_without_a_restart() {
    let mut deployment = Sentinels::start(2, Some(DATA_PASSWORD));
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = start(&sentinel_config(&upstream, &deployment, &stripe)).await;
    eventually("ready", || async {
        let r = readyz(&gate).await;
        (r.status == 200).then_some(()).ok_or(r.text())
    })
    .await;
    let before = stripe.event("evt_before_kill", "invoice.paid");
    gate.send(&stripe, &before).await.assert_app_ok();

    let old = deployment.primary();
    deployment.node(old).stop();
    // No sentinel can have promoted a replica before down-after-milliseconds.
    let resp = readyz(&gate).await;
    assert_eq!(
        resp.status,
        503,
        "readyz right after the kill: {}",
        resp.text()
    );
    let during = gate
        .send(&stripe, &stripe.event("evt_during", "invoice.paid"))
        .await;
    during.assert_error(503, "store_unavailable");

    let promoted = tokio::task::block_in_place(|| deployment.wait_failover_from(old));
    assert_ne!(promoted, old);
    send_until_forwarded(&gate, &stripe, "evt_after_failover").await;
    assert_eq!(readyz(&gate).await.status, 200);

    // The commit before the kill waited for a replica, so the promoted
    // one has it: the sender's retry is a duplicate, not a second delivery.
    gate.send(&stripe, &before)
        .await
        .assert_duplicate("evt_before_kill");
    let forwarded: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.header("x-verified-event-id"))
        .collect();
    assert_eq!(
        forwarded,
        vec!["evt_before_kill", "evt_after_failover"],
        "each event reached the app once"
    );
    let promoted_port = deployment.node(promoted).port().to_string();
    gate.wait_for_log("the new primary named in the log", |l| {
        l["primary"]
            .as_str()
            .is_some_and(|p| p.ends_with(&format!(":{promoted_port}")))
    })
    .await;
    assert!(
        !gate.output().contains(DATA_PASSWORD),
        "the data-node password was printed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_primary_answering_readonly_is_left_for_the_new_one() {
    let deployment = Sentinels::start(1, Some(DATA_PASSWORD));
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = start(&sentinel_config(&upstream, &deployment, &stripe)).await;
    send_until_forwarded(&gate, &stripe, "evt_first").await;

    // A planned failover: the old primary stays up, as a replica that
    // answers writes with -READONLY on the connection hookgate holds.
    let old = deployment.primary();
    let mut sentinel = redis::Client::open(deployment.urls()[0].as_str())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
        .expect("a sentinel answers");
    let _: redis::Value = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(MASTER)
        .query(&mut sentinel)
        .expect("SENTINEL FAILOVER");
    let promoted = tokio::task::block_in_place(|| deployment.wait_failover_from(old));
    assert_ne!(promoted, old);

    send_until_forwarded(&gate, &stripe, "evt_after_demotion").await;
    gate.send(&stripe, &stripe.event("evt_first", "invoice.paid"))
        .await
        .assert_duplicate("evt_first");
    gate.wait_for_log("the demotion noticed", |l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped answering as one"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_no_replica_acknowledges_is_answered_503_and_the_retry_is_queued() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let queued = SourceSpec::stripe().key("delivery = \"queue\"");
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .store_key("min_replicas = 1")
        // Long enough for a replica that has just come online to answer on
        // a busy machine; the first send waits it out with no replica.
        .store_key(r#"replica_timeout = "2s""#)
        .source(queued.clone())
        .start()
        .await;
    let event = queued.event("evt_unreplicated", "invoice.paid");

    // No replica: the XADD reached the primary only, so it is not promised.
    let resp = gate.send(&queued, &event).await;
    resp.assert_error(503, "store_unavailable");
    resp.retry_after();
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    assert!(replication_timeouts(&metrics, "enqueue") >= 1.0, "counted");
    gate.wait_for_log("the WAIT timeout logged with the event id", |l| {
        l["event_id"] == "evt_unreplicated"
            && l["error"]
                .as_str()
                .is_some_and(|e| e.contains("enqueue not replicated: 0 of 1"))
    })
    .await;

    // A replica joins; the sender's retry is enqueued again (the nonce was
    // released) and acknowledged.
    let _replica = RedisServer::start_replica_of(redis.port(), None);
    tokio::task::block_in_place(|| redis.wait_replicas(1));
    let resp = gate.send(&queued, &event).await;
    resp.assert_json(
        200,
        serde_json::json!({"queued": true, "event_id": "evt_unreplicated"}),
    );

    // Nothing lost: the app gets the event, possibly twice (the first XADD
    // was written although its WAIT timed out), always under the same id.
    let seen = upstream.wait_for(2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen_after = upstream.requests();
    assert_eq!(seen_after.len(), seen.len(), "no third delivery");
    assert_eq!(seen.len(), 2, "the unacknowledged copy and the retry");
    for request in &seen {
        assert_eq!(request.header("x-verified-event-id"), "evt_unreplicated");
    }
    gate.send(&queued, &event)
        .await
        .assert_duplicate("evt_unreplicated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_no_replica_acknowledges_keeps_the_apps_2xx_and_is_counted() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .store_key("min_replicas = 1")
        .store_key(r#"replica_timeout = "500ms""#)
        .source(stripe.clone())
        .start()
        .await;
    // The claim needs no replica; the app answers 2xx; the commit's WAIT
    // times out: the 2xx still goes back to the sender.
    gate.send(&stripe, &stripe.event("evt_commit", "invoice.paid"))
        .await
        .assert_app_ok();
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    assert!(replication_timeouts(&metrics, "commit") >= 1.0, "counted");
    assert_eq!(replication_timeouts(&metrics, "enqueue"), 0.0);
    gate.wait_for_log("the commit's WAIT timeout logged with the event id", |l| {
        l["event_id"] == "evt_commit"
            && l["error"]
                .as_str()
                .is_some_and(|e| e.contains("commit not replicated"))
    })
    .await;
    // With a replica, writes are acknowledged and nothing more is counted.
    let _replica = RedisServer::start_replica_of(redis.port(), None);
    tokio::task::block_in_place(|| redis.wait_replicas(1));
    send_until_forwarded(&gate, &stripe, "evt_replicated").await;
    // A commit that failed is retried in the background, and each retry
    // that times out is counted: every one of them lands first.
    eventually("every failed commit committed on retry", || async {
        let lines = gate.log_lines();
        let failed = |l: &serde_json::Value| l["message"] == "nonce commit failed";
        let landed = |l: &serde_json::Value| l["message"] == "nonce committed on retry";
        let pending: Vec<String> = lines
            .iter()
            .filter(|l| failed(l))
            .filter(|f| {
                !lines
                    .iter()
                    .any(|l| landed(l) && l["event_id"] == f["event_id"])
            })
            .map(|f| f["event_id"].to_string())
            .collect();
        pending.is_empty().then_some(()).ok_or(pending.join(", "))
    })
    .await;
    let before = replication_timeouts(
        &Metrics::parse(&gate.admin_get("/metrics").await.text()),
        "commit",
    );
    gate.send(&stripe, &stripe.event("evt_replicated_2", "invoice.paid"))
        .await
        .assert_app_ok();
    let after = replication_timeouts(
        &Metrics::parse(&gate.admin_get("/metrics").await.text()),
        "commit",
    );
    assert_eq!(before, after, "an acknowledged commit is not counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_name_the_sentinels_do_not_monitor_is_refused_by_check_and_shown_on_readyz() {
    let deployment = Sentinels::start(0, None);
    let upstream = Upstream::start().await;
    let config = ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Sentinel(
            deployment.urls(),
            "no-such-master".into(),
        ))
        .source(SourceSpec::stripe())
        .toml();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    std::fs::write(&path, &config).expect("write config");
    let line = config
        .lines()
        .position(|l| l.starts_with("master = "))
        .expect("a master line")
        + 1;

    let path_text = path.to_str().expect("a UTF-8 path");
    let (status, stdout, stderr) = run_cli(&["check", "--config", path_text]).await;
    assert_eq!(
        status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("{path_text}:{line}: store.master:"))
            && stderr.contains(r#"none monitors a master named "no-such-master""#),
        "{stderr}"
    );

    // Running anyway: not ready, and /readyz and the log say why.
    let gate = Hookgate::start(&config).await;
    let resp = eventually("readyz names the problem", || async {
        let r = readyz(&gate).await;
        (r.status == 503 && r.text().contains("no-such-master"))
            .then_some(r.clone())
            .ok_or(format!("{} {}", r.status, r.text()))
    })
    .await;
    assert!(resp.text().contains("no sentinel monitors a master named"));
    gate.wait_for_log("an error naming store.master", |l| {
        l["level"] == "ERROR"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("store.master"))
    })
    .await;

    // The right name passes check.
    let good = config.replace("no-such-master", MASTER);
    std::fs::write(&path, &good).expect("write config");
    let (status, stdout, stderr) = run_cli(&["check", "--config", path_text]).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[tokio::test]
async fn check_passes_with_a_warning_when_no_sentinel_answers() {
    let unreachable = format!("redis://{}/", closed_addr());
    let config = ConfigBuilder::new("http://127.0.0.1:3000")
        .store(StoreSpec::Sentinel(vec![unreachable], MASTER.to_owned()))
        .source(SourceSpec::stripe())
        .toml();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    std::fs::write(&path, &config).expect("write config");
    let (status, stdout, stderr) =
        run_cli(&["check", "--config", path.to_str().expect("a UTF-8 path")]).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stderr.contains("no sentinel answered"), "{stderr}");
}

/// A queue source on `deployment` (no password), `min_replicas = 1`; the
/// lease on an entry is `upstream_timeout` + 5 s = 15 s, longer than any
/// failover these tests make (a failover that outlasts it may deliver an
/// entry the app took just before again: docs/recovery.md).
fn queue_config(upstream: &Upstream, deployment: &Sentinels, source: &SourceSpec) -> String {
    ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Sentinel(deployment.urls(), MASTER.to_owned()))
        .store_key("min_replicas = 1")
        // Long enough for a replica to answer on a busy machine.
        .store_key(r#"replica_timeout = "2s""#)
        .upstream_timeout("10s")
        .source(source.clone())
        .toml()
}

/// The lease a queue entry is read under with [`queue_config`].
const QUEUE_LEASE: Duration = Duration::from_secs(15);

/// Two replicas of hookgate on `config`, both ready.
async fn two_replicas(config: &str) -> (Hookgate, Hookgate) {
    let a = Hookgate::start(config).await;
    let b = Hookgate::start(config).await;
    for gate in [&a, &b] {
        eventually("ready", || async {
            let r = readyz(gate).await;
            (r.status == 200).then_some(()).ok_or(r.text())
        })
        .await;
    }
    (a, b)
}

/// How many requests for `event_id` the app has seen.
fn deliveries_of(upstream: &Upstream, event_id: &str) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.header("x-verified-event-id") == event_id)
        .count()
}

/// `XLEN` and the group's pending count of `source`'s stream on `node`.
fn stream_state(node: &RedisServer, source: &str) -> (i64, i64) {
    let mut conn = node.client();
    let stream = format!("hookgate:queue:{{{source}}}");
    let len: i64 = redis::cmd("XLEN")
        .arg(&stream)
        .query(&mut conn)
        .expect("XLEN");
    let pending: (i64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(&stream)
        .arg("hookgate")
        .query(&mut conn)
        .expect("XPENDING");
    (len, pending.0)
}

/// The primary is lost after the app took a queued event and the worker
/// removed its entry there, but before any replica had the removal. The
/// promoted replica still holds the entry, leased to that worker: the
/// worker repeats the removal there, and no worker delivers it again once
/// the lease has run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_event_the_app_took_is_not_delivered_again_after_the_primary_is_lost() {
    let mut deployment = Sentinels::start(1, None);
    let upstream = Upstream::start().await;
    let queued = SourceSpec::stripe().key("delivery = \"queue\"");
    let (a, b) = two_replicas(&queue_config(&upstream, &deployment, &queued)).await;
    let old = deployment.primary();
    let replica = 1 - old;

    upstream.hold();
    let event = queued.event("evt_removal_lost", "invoice.paid");
    a.send(&queued, &event).await.assert_json(
        200,
        serde_json::json!({"queued": true, "event_id": "evt_removal_lost"}),
    );
    // The entry is leased and at the app; its lease is on the replica.
    upstream.wait_for(1).await;
    eventually("the lease on the replica", || async {
        let (len, pending) = stream_state(deployment.server(replica), "stripe");
        (len == 1 && pending == 1)
            .then_some(())
            .ok_or(format!("{len} entries, {pending} pending"))
    })
    .await;

    // The replica stops taking writes; the app answers 2xx; the entry is
    // removed on the primary alone.
    deployment.server(replica).freeze();
    upstream.release();
    eventually("the entry removed on the primary", || async {
        let (len, pending) = stream_state(deployment.server(old), "stripe");
        (len == 0 && pending == 0)
            .then_some(())
            .ok_or(format!("{len} entries, {pending} pending"))
    })
    .await;
    let delivered_at = tokio::time::Instant::now();

    // The primary is lost; the replica, which still holds the entry,
    // becomes the primary; the old one comes back empty as its replica.
    deployment.node(old).stop();
    deployment.server(replica).thaw();
    // A new replica of the promoted primary, on a port of its own (the old
    // one stays down), acknowledges writes from now on. It is never a
    // candidate (`replica-priority 0`), and is started once the sentinels
    // agree on the promoted node.
    let (promoted, _fresh) = tokio::task::block_in_place(|| {
        let promoted = deployment.wait_failover_from(old);
        let fresh = deployment.start_standby(promoted);
        (deployment.settle_with_replica(old, &fresh), fresh)
    });
    assert_eq!(promoted, replica);

    // A fresh event goes through the new primary to the app.
    let after = queued.event("evt_after_promotion", "invoice.paid");
    eventually("an event queued after the failover", || async {
        let resp = b.send(&queued, &after).await;
        (resp.status == 200)
            .then_some(())
            .ok_or(format!("{} {}", resp.status, resp.text()))
    })
    .await;
    eventually("the event after the failover delivered", || async {
        let n = deliveries_of(&upstream, "evt_after_promotion");
        (n >= 1).then_some(()).ok_or(format!("{n} deliveries"))
    })
    .await;
    // Past the first entry's lease, with both workers taking over what
    // stopped workers left: nothing is left to take.
    let past_lease = delivered_at + QUEUE_LEASE + Duration::from_secs(3);
    tokio::time::sleep_until(past_lease).await;
    let (len, pending) =
        tokio::task::block_in_place(|| stream_state(deployment.server(promoted), "stripe"));
    assert_eq!((len, pending), (0, 0), "the promoted primary's stream");
    assert_eq!(
        deliveries_of(&upstream, "evt_removal_lost"),
        1,
        "the app took the event once: {:#?}",
        upstream.requests()
    );
    // (Sent until queued: a first send answered 503 because the new
    // primary's replica had not acknowledged yet was still written, so that
    // event may reach the app twice: docs/reliability.md.)
    let repeated = |gate: &Hookgate| {
        gate.log_lines().iter().any(|l| {
            l["message"] == "delivered queue entry removed on a later try"
                || l["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("could not remove a delivered queue entry"))
        })
    };
    assert!(
        repeated(&a) || repeated(&b),
        "the worker that delivered it repeated the removal:\n{}\n{}",
        a.output(),
        b.output()
    );
}

/// A retry comes due while no replica acknowledges: the worker leases it on
/// the primary alone, so it does not deliver it. The primary is then lost;
/// the promoted replica has the retry still waiting, and it is delivered
/// from there, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_leased_on_the_primary_alone_is_not_delivered_before_the_failover() {
    let mut deployment = Sentinels::start(1, None);
    let upstream = Upstream::start().await;
    let queued =
        SourceSpec::stripe().key("delivery = \"queue\"\nretry_schedule = [\"2s\", \"2s\"]");
    let (a, _b) = two_replicas(&queue_config(&upstream, &deployment, &queued)).await;
    let old = deployment.primary();
    let replica = 1 - old;

    upstream.set_reply(Reply::status(503));
    let event = queued.event("evt_retry_unconfirmed", "invoice.paid");
    a.send(&queued, &event).await.assert_json(
        200,
        serde_json::json!({"queued": true, "event_id": "evt_retry_unconfirmed"}),
    );
    upstream.wait_for(1).await;
    // The first attempt failed; the entry waits for its retry, on the
    // replica too.
    eventually("the retry waiting on the replica", || async {
        let mut conn = deployment.server(replica).client();
        let waiting: i64 = redis::cmd("ZCARD")
            .arg("hookgate:queue:{stripe}:delayed")
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        (waiting == 1)
            .then_some(())
            .ok_or(format!("{waiting} waiting"))
    })
    .await;
    upstream.set_reply(Reply::default());
    deployment.server(replica).freeze();

    // The retry comes due (2 s ± 20 %) and is leased on the primary, whose
    // replica does not answer: the app sees nothing more.
    eventually("the retry leased on the primary", || async {
        let (len, pending) = stream_state(deployment.server(old), "stripe");
        (len == 1 && pending == 1)
            .then_some(())
            .ok_or(format!("{len} entries, {pending} pending"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        deliveries_of(&upstream, "evt_retry_unconfirmed"),
        1,
        "nothing delivered on a lease no replica has: {:#?}",
        upstream.requests()
    );

    deployment.node(old).stop();
    deployment.server(replica).thaw();
    // A new replica of the promoted primary, on a port of its own (the old
    // one stays down), acknowledges writes from now on. It is never a
    // candidate (`replica-priority 0`), and is started once the sentinels
    // agree on the promoted node.
    let (promoted, _fresh) = tokio::task::block_in_place(|| {
        let promoted = deployment.wait_failover_from(old);
        let fresh = deployment.start_standby(promoted);
        (deployment.settle_with_replica(old, &fresh), fresh)
    });
    upstream.wait_for(2).await;
    let delivered_at = tokio::time::Instant::now();
    tokio::time::sleep_until(delivered_at + QUEUE_LEASE + Duration::from_secs(2)).await;
    assert_eq!(
        deliveries_of(&upstream, "evt_retry_unconfirmed"),
        2,
        "the failed attempt and one delivery: {:#?}",
        upstream.requests()
    );
    let (len, pending) =
        tokio::task::block_in_place(|| stream_state(deployment.server(promoted), "stripe"));
    assert_eq!((len, pending), (0, 0), "the promoted primary's stream");
}
