//! Stores that forget or fill: a Redis whose `maxmemory-policy` may evict
//! hookgate's keys is warned about (log and `check`) and shown in
//! `hookgate_store_evicting` and `hookgate_store_evicted_keys`, at start, after
//! a `CONFIG SET`, after a restart, on every master of a cluster and on the
//! primary Sentinel names; the memory store shows its fill in
//! `hookgate_store_entries` against `hookgate_store_capacity`.
//!
//! hookgate reads the policy every 5 s (`DEPTH_REFRESH`), well inside the
//! 20 s every wait here allows.

use std::time::Duration;

use serde_json::Value;

use crate::support::hookgate::run_cli;
use crate::support::redis::{RedisCluster, RedisServer};
use crate::support::sentinel::{MASTER, Sentinels};
use crate::support::{
    ConfigBuilder, Hookgate, Metrics, SourceSpec, StoreSpec, Upstream, closed_addr, eventually,
};

/// How often hookgate reads the policy (`hookgate::DEPTH_REFRESH`).
const REFRESH: Duration = Duration::from_secs(5);

fn policy_args(policy: &str) -> Vec<String> {
    vec!["--maxmemory-policy".to_owned(), policy.to_owned()]
}

async fn gate_on(store: StoreSpec, upstream: &Upstream) -> Hookgate {
    ConfigBuilder::new(&upstream.url())
        .store(store)
        .source(SourceSpec::stripe())
        .start()
        .await
}

async fn metrics(gate: &Hookgate) -> Metrics {
    Metrics::parse(&gate.admin_get("/metrics").await.text())
}

/// Waits until `/metrics` shows `name` at `value`.
async fn wait_gauge(gate: &Hookgate, name: &str, value: f64) {
    eventually(&format!("{name} is {value}"), || async {
        match metrics(gate).await.get(name, &[]) {
            Some(v) if v == value => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// The warning lines about an evicting store.
fn eviction_warnings(gate: &Hookgate) -> Vec<Value> {
    gate.log_lines()
        .into_iter()
        .filter(|l| {
            l["level"] == "WARN"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("maxmemory-policy"))
        })
        .collect()
}

/// Waits for the warning naming `policy`, and checks it says what to do.
async fn wait_warning(gate: &Hookgate, policy: &str) -> Value {
    let line = gate
        .wait_for_log(&format!("a warning naming {policy}"), |l| {
            l["level"] == "WARN" && l["policy"] == policy
        })
        .await;
    let message = line["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("maxmemory-policy {policy}"))
            && message.contains("set maxmemory-policy noeviction"),
        "{line}"
    );
    line
}

#[tokio::test]
async fn a_redis_that_may_evict_volatile_keys_is_warned_about_and_shown_evicting() {
    // Every hookgate key has a TTL, so volatile-* is as bad as allkeys-*.
    let redis = RedisServer::start_with_args(None, &policy_args("volatile-lru"));
    let upstream = Upstream::start().await;
    let gate = gate_on(StoreSpec::Redis(redis.url()), &upstream).await;

    wait_warning(&gate, "volatile-lru").await;
    wait_gauge(&gate, "hookgate_store_evicting", 1.0).await;
    let shown = metrics(&gate).await;
    assert_eq!(
        shown.get("hookgate_store_evicted_keys", &[]),
        Some(0.0),
        "{}",
        shown.text
    );
    // The memory store's gauges are not shown for Redis.
    assert_eq!(shown.get("hookgate_store_entries", &[]), None);
    assert_eq!(shown.get("hookgate_store_capacity", &[]), None);

    // Said once, not at every reading.
    tokio::time::sleep(REFRESH * 2 + Duration::from_secs(1)).await;
    assert_eq!(eviction_warnings(&gate).len(), 1, "{}", gate.describe());
}

#[tokio::test]
async fn a_noeviction_redis_shows_zero_and_no_warning() {
    let redis = RedisServer::start_with_args(None, &policy_args("noeviction"));
    let upstream = Upstream::start().await;
    let gate = gate_on(StoreSpec::Redis(redis.url()), &upstream).await;

    wait_gauge(&gate, "hookgate_store_evicting", 0.0).await;
    wait_gauge(&gate, "hookgate_store_evicted_keys", 0.0).await;
    assert!(eviction_warnings(&gate).is_empty(), "{}", gate.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_changed_at_runtime_or_by_a_restart_is_picked_up_within_the_refresh() {
    let mut redis = RedisServer::start_with_args(None, &policy_args("noeviction"));
    let upstream = Upstream::start().await;
    let gate = gate_on(StoreSpec::Redis(redis.url()), &upstream).await;
    wait_gauge(&gate, "hookgate_store_evicting", 0.0).await;

    // CONFIG SET while hookgate runs.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("allkeys-lru")
        .query(&mut redis.client())
        .expect("CONFIG SET");
    wait_warning(&gate, "allkeys-lru").await;
    wait_gauge(&gate, "hookgate_store_evicting", 1.0).await;

    // Back to noeviction: the gauge follows and the log says so.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query(&mut redis.client())
        .expect("CONFIG SET");
    wait_gauge(&gate, "hookgate_store_evicting", 0.0).await;
    gate.wait_for_log("a note that the store no longer evicts", |l| {
        l["level"] == "INFO" && l["policy"] == "noeviction"
    })
    .await;

    // A restart with another policy (hookgate reconnects on its own).
    redis.restart_with_args(&policy_args("volatile-ttl"));
    wait_warning(&gate, "volatile-ttl").await;
    wait_gauge(&gate, "hookgate_store_evicting", 1.0).await;
    assert_eq!(
        eviction_warnings(&gate).len(),
        2,
        "one warning per change:\n{}",
        gate.describe()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_the_server_evicted_are_counted() {
    let redis = RedisServer::start_with_args(None, &policy_args("allkeys-random"));
    let upstream = Upstream::start().await;
    let gate = gate_on(StoreSpec::Redis(redis.url()), &upstream).await;
    wait_gauge(&gate, "hookgate_store_evicted_keys", 0.0).await;

    // A limit just above what the server uses now, then 4 MB of keys.
    let mut conn = redis.client();
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut conn)
        .expect("INFO");
    let used: u64 = info_field(&info, "used_memory")
        .parse()
        .expect("used_memory");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(used + 1024 * 1024)
        .query(&mut conn)
        .expect("CONFIG SET maxmemory");
    let value = "x".repeat(1024);
    for i in 0..4096 {
        let _: () = redis::cmd("SET")
            .arg(format!("filler:{i}"))
            .arg(&value)
            .query(&mut conn)
            .expect("SET under allkeys-random");
    }
    let stats: String = redis::cmd("INFO")
        .arg("stats")
        .query(&mut conn)
        .expect("INFO");
    let evicted: f64 = info_field(&stats, "evicted_keys")
        .parse()
        .expect("evicted_keys");
    assert!(evicted > 0.0, "the server evicted nothing:\n{stats}");

    eventually(
        "hookgate_store_evicted_keys shows the server's count",
        || async {
            match metrics(&gate).await.get("hookgate_store_evicted_keys", &[]) {
                // hookgate's own refresh writes nothing, so the count stays.
                Some(v) if v >= evicted => Ok(()),
                other => Err(format!("{other:?}, the server says {evicted}")),
            }
        },
    )
    .await;
    assert_eq!(
        metrics(&gate).await.get("hookgate_store_evicting", &[]),
        Some(1.0)
    );
}

fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.trim_end().strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO:\n{info}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_master_of_a_cluster_is_asked() {
    let mut cluster = RedisCluster::start(3);
    for (node, policy) in cluster
        .nodes()
        .iter()
        .zip(["noeviction", "allkeys-lru", "volatile-ttl"])
    {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory-policy")
            .arg(policy)
            .query(&mut node.client())
            .expect("CONFIG SET");
    }
    let upstream = Upstream::start().await;
    let gate = gate_on(StoreSpec::Cluster(cluster.urls()), &upstream).await;

    wait_warning(&gate, "allkeys-lru, noeviction, volatile-ttl").await;
    wait_gauge(&gate, "hookgate_store_evicting", 1.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_sentinel_the_primary_is_asked() {
    let mut deployment = Sentinels::start(0, None);
    let primary = deployment.primary();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("volatile-random")
        .query(&mut deployment.node(primary).client())
        .expect("CONFIG SET");
    let upstream = Upstream::start().await;
    let gate = gate_on(
        StoreSpec::Sentinel(deployment.urls(), MASTER.to_owned()),
        &upstream,
    )
    .await;

    wait_warning(&gate, "volatile-random").await;
    wait_gauge(&gate, "hookgate_store_evicting", 1.0).await;
}

#[tokio::test]
async fn the_memory_store_shows_how_full_it_is() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .store_key("memory_max_entries = 50")
        .source(stripe.clone())
        .start()
        .await;
    wait_gauge(&gate, "hookgate_store_capacity", 50.0).await;
    wait_gauge(&gate, "hookgate_store_entries", 0.0).await;

    for i in 0..7 {
        let event = stripe.event(&format!("evt_fill_{i}"), "invoice.paid");
        gate.send(&stripe, &event).await.assert_app_ok();
    }
    wait_gauge(&gate, "hookgate_store_entries", 7.0).await;
    // A duplicate holds no entry of its own.
    let again = stripe.event("evt_fill_0", "invoice.paid");
    gate.send(&stripe, &again)
        .await
        .assert_duplicate("evt_fill_0");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let shown = metrics(&gate).await;
    assert_eq!(shown.get("hookgate_store_entries", &[]), Some(7.0));
    assert_eq!(shown.get("hookgate_store_capacity", &[]), Some(50.0));
    // Redis's gauges are not shown for the memory store.
    assert_eq!(shown.get("hookgate_store_evicting", &[]), None);
    assert_eq!(shown.get("hookgate_store_evicted_keys", &[]), None);
}

#[tokio::test]
async fn check_warns_about_an_evicting_or_unreachable_redis_and_still_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    let path_text = path.to_str().expect("a UTF-8 path");
    let check = |store: StoreSpec| {
        let config = ConfigBuilder::new("http://127.0.0.1:3000")
            .store(store)
            .source(SourceSpec::stripe())
            .toml();
        std::fs::write(&path, config).expect("write config");
        async { run_cli(&["check", "--config", path_text]).await }
    };

    let evicting = RedisServer::start_with_args(None, &policy_args("volatile-lfu"));
    let (status, stdout, stderr) = check(StoreSpec::Redis(evicting.url())).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("{path_text}: store: warning:"))
            && stderr.contains("maxmemory-policy volatile-lfu")
            && stderr.contains("set maxmemory-policy noeviction"),
        "{stderr}"
    );

    let fine = RedisServer::start_with_args(None, &policy_args("noeviction"));
    let (status, stdout, stderr) = check(StoreSpec::Redis(fine.url())).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");

    let closed = format!("redis://{}/", closed_addr());
    let (status, stdout, stderr) = check(StoreSpec::Redis(closed)).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("could not reach the store to read its eviction policy"),
        "{stderr}"
    );

    // A refused login is reported without the password it tried.
    let guarded = RedisServer::start_with_password("the-right-one");
    let wrong = format!("redis://:w0ng-pa55word@127.0.0.1:{}/", guarded.port());
    let (status, stdout, stderr) = check(StoreSpec::Redis(wrong)).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("could not reach the store to read its eviction policy"),
        "{stderr}"
    );
    assert!(
        !format!("{stdout}{stderr}").contains("w0ng-pa55word"),
        "{stderr}"
    );
}
