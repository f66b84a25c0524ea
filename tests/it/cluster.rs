//! The store-related end-to-end tests again, on a real three-master Redis
//! Cluster: concurrency through one process and across two, the whole cluster
//! going away and coming back, one master dying (its slots answer 503, never
//! a forward without a claim), a cluster rebuilt empty on the same
//! addresses, and the key layout (one key, so one slot, per operation). The store-level suite on a cluster is in `store`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::concurrency::{hundred_copies_reach_the_app_once, two_replicas_forward_an_event_once};
use crate::support::redis::RedisCluster;
use crate::support::{
    ConfigBuilder, Event, Hookgate, Resp, SourceSpec, StoreSpec, Upstream, eventually,
};

fn nonce_key(source: &str, id: &str) -> String {
    format!("hookgate:nonce:{source}:{id}")
}

/// `event` sent to `gate` again and again (bounded) until it is answered
/// with anything but 503; that answer.
async fn answered(what: &str, gate: &Hookgate, source: &SourceSpec, event: &Event) -> Resp {
    eventually(what, || async {
        let resp = gate.send(source, event).await;
        if resp.status == 503 {
            Err(format!("{resp:?}"))
        } else {
            Ok(resp)
        }
    })
    .await
}

/// How many times the app received each event id.
fn deliveries(upstream: &Upstream) -> BTreeMap<String, usize> {
    let mut per_id = BTreeMap::new();
    for request in upstream.requests() {
        *per_id
            .entry(request.header("x-verified-event-id"))
            .or_default() += 1;
    }
    per_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_copies_reach_the_app_once_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    hundred_copies_reach_the_app_once(StoreSpec::Cluster(cluster.urls())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_a_cluster_forward_an_event_once() {
    let cluster = RedisCluster::start(3);
    two_replicas_forward_an_event_once(StoreSpec::Cluster(cluster.urls())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nonce_keys_spread_over_the_masters_and_each_lives_on_its_own_slot() {
    let mut cluster = RedisCluster::start(3);
    let upstream = Upstream::start().await;
    // Standard Webhooks signs its id, so the nonce is keyed by it.
    let standard = SourceSpec::standard();
    let gate = gate_on(&cluster, &upstream, &standard).await;

    // Plain ids, and ids carrying hash tags of their own (a sender's choice:
    // they only pick which slot the one key lives on).
    let mut ids: Vec<String> = (0..24).map(|i| format!("layout-{i}")).collect();
    ids.extend(["{tag}-a", "{tag}-b", "x{}y", "}{", "{"].map(str::to_owned));
    for id in &ids {
        let event = standard.event(id, "push");
        gate.send(&standard, &event).await.assert_app_ok();
        gate.send(&standard, &event).await.assert_duplicate(id);
    }

    // Every key is `done` on the master that owns its slot.
    let owners: Vec<Vec<(u16, u16)>> = (0..3).map(|i| cluster.slots_of_node(i)).collect();
    let mut per_node = [0usize; 3];
    for id in &ids {
        let key = nonce_key("standard", id);
        let slot = cluster.slot_of(&key);
        let node = owners
            .iter()
            .position(|ranges| ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .unwrap_or_else(|| panic!("no master serves slot {slot}"));
        per_node[node] += 1;
        let mut conn = cluster.nodes()[node].client();
        let value: Option<String> = redis::cmd("GET").arg(&key).query(&mut conn).expect("GET");
        assert_eq!(value.as_deref(), Some("done"), "{key} on node {node}");
    }
    assert!(
        per_node.iter().all(|n| *n > 0),
        "keys land on every master: {per_node:?}"
    );
    assert_eq!(
        cluster.slot_of(&nonce_key("standard", "{tag}-a")),
        cluster.slot_of(&nonce_key("standard", "{tag}-b")),
        "a hash tag in the id picks the slot"
    );
    assert!(deliveries(&upstream).values().all(|n| *n == 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_cluster_down_is_503_and_both_replicas_recover() {
    let mut cluster = RedisCluster::start(3);
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Cluster(cluster.urls()))
        .source(stripe.clone())
        .toml();
    let a = Hookgate::start(&config).await;
    let b = Hookgate::start(&config).await;

    let before = stripe.event("evt_cluster_before", "invoice.paid");
    a.send(&stripe, &before).await.assert_app_ok();
    b.send(&stripe, &before)
        .await
        .assert_duplicate("evt_cluster_before");

    cluster.stop();
    let during = stripe.event("evt_cluster_during", "invoice.paid");
    for gate in [&a, &b] {
        for event in [&before, &during] {
            let resp = gate.send(&stripe, event).await;
            resp.assert_error(503, "store_unavailable");
            resp.retry_after();
        }
        let forged = stripe.forged_headers(&during);
        gate.post(&stripe.path, &forged, during.body.clone())
            .await
            .assert_error(400, "invalid_signature");
        assert_eq!(gate.admin_get("/readyz").await.status, 503);
    }
    assert_eq!(upstream.count(), 1, "nothing forwarded without the store");

    cluster.restart();
    answered(
        "replica A takes the event once the cluster is back",
        &a,
        &stripe,
        &during,
    )
    .await
    .assert_app_ok();
    answered("replica B sees it as done", &b, &stripe, &during)
        .await
        .assert_duplicate("evt_cluster_during");
    assert_eq!(upstream.count(), 2);
    eventually("both replicas are ready again", || async {
        let ready = (
            a.admin_get("/readyz").await.status,
            b.admin_get("/readyz").await.status,
        );
        if ready == (200, 200) {
            Ok(())
        } else {
            Err(format!("{ready:?}"))
        }
    })
    .await;
}

/// hookgate with `source` in front of `upstream`, on `cluster`.
async fn gate_on(cluster: &RedisCluster, upstream: &Upstream, source: &SourceSpec) -> Hookgate {
    ConfigBuilder::new(&upstream.url())
        .store(StoreSpec::Cluster(cluster.urls()))
        .source(source.clone())
        .start()
        .await
}

/// A three-master cluster, an app, and hookgate on both with one Stripe
/// source, shareable with a task that sends while the cluster changes.
async fn shared_gate_on_a_cluster() -> (RedisCluster, Upstream, SourceSpec, Arc<Hookgate>) {
    let cluster = RedisCluster::start(3);
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = Arc::new(gate_on(&cluster, &upstream, &stripe).await);
    (cluster, upstream, stripe, gate)
}

/// Restarting the whole cluster while requests arrive can leave the
/// cluster connection of the `redis` crate with no node at all, retrying
/// a slot refresh forever (about one restart in six here); hookgate then
/// makes a new connection. Each of several restarts under load must end
/// with events taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_of_the_whole_cluster_under_load_are_recovered_from_each_time() {
    const RESTARTS: usize = 8;
    let (mut cluster, upstream, stripe, gate) = shared_gate_on_a_cluster().await;
    for round in 0..RESTARTS {
        let restarting = Arc::new(AtomicBool::new(true));
        let sender = tokio::spawn({
            let (gate, stripe, restarting) = (gate.clone(), stripe.clone(), restarting.clone());
            async move {
                for i in 0..400 {
                    if !restarting.load(Ordering::SeqCst) {
                        break;
                    }
                    let event =
                        stripe.event(&format!("evt_restart_{round}_load_{i}"), "invoice.paid");
                    gate.send(&stripe, &event).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        });
        tokio::task::block_in_place(|| cluster.restart());
        restarting.store(false, Ordering::SeqCst);
        sender.await.expect("sender task");
        let probe = stripe.event(&format!("evt_restart_{round}_after"), "invoice.paid");
        answered(
            &format!("events taken after restart {round}"),
            &gate,
            &stripe,
            &probe,
        )
        .await
        .assert_app_ok();
    }
    let delivered = deliveries(&upstream);
    assert!(delivered.values().all(|n| *n == 1), "{delivered:?}");
}

/// Nodes that come back empty hold no slots until the cluster is created
/// again on them: requests meanwhile are refused, and the first one after
/// is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_rebuilt_empty_on_the_same_addresses_is_found_again() {
    let (mut cluster, upstream, stripe, gate) = shared_gate_on_a_cluster().await;
    let before = stripe.event("evt_rebuild_before", "invoice.paid");
    gate.send(&stripe, &before).await.assert_app_ok();

    // Requests keep arriving while the nodes hold no slots: each is refused,
    // and each makes the connection look for the slots again.
    let rebuilding = Arc::new(AtomicBool::new(true));
    let sender = tokio::spawn({
        let (gate, stripe, rebuilding) = (gate.clone(), stripe.clone(), rebuilding.clone());
        async move {
            let mut refused = 0;
            for i in 0..600 {
                if !rebuilding.load(Ordering::SeqCst) {
                    break;
                }
                let event = stripe.event(&format!("evt_rebuild_during_{i}"), "invoice.paid");
                if gate.send(&stripe, &event).await.status == 503 {
                    refused += 1;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            refused
        }
    });
    tokio::task::block_in_place(|| cluster.rebuild(Duration::from_secs(2)));
    rebuilding.store(false, Ordering::SeqCst);
    let refused = sender.await.expect("sender task");
    assert!(refused > 0, "no request was refused during the rebuild");

    let after = stripe.event("evt_rebuild_after", "invoice.paid");
    answered("the rebuilt cluster takes events", &gate, &stripe, &after)
        .await
        .assert_app_ok();
    eventually("ready again", || async {
        match gate.admin_get("/readyz").await.status {
            200 => Ok(()),
            status => Err(status.to_string()),
        }
    })
    .await;
    let delivered = deliveries(&upstream);
    assert!(delivered.values().all(|n| *n == 1), "{delivered:?}");
    assert_eq!(delivered.get("evt_rebuild_after"), Some(&1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_master_down_its_slots_answer_503_and_nothing_is_forwarded_unclaimed() {
    let mut cluster = RedisCluster::start(3);
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = gate_on(&cluster, &upstream, &stripe).await;
    // Warm the slot map and the connections to every master.
    for i in 0..10 {
        let event = stripe.event(&format!("evt_warm_{i}"), "invoice.paid");
        gate.send(&stripe, &event).await.assert_app_ok();
    }

    // Ids whose key lives on master 0, and ids whose key lives elsewhere.
    let down = cluster.slots_of_node(0);
    let on_down_master = |slot: u16| down.iter().any(|(a, b)| (*a..=*b).contains(&slot));
    let (mut affected, mut others) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let id = format!("evt_master_{i}");
        let slot = cluster.slot_of(&nonce_key("stripe", &id));
        match on_down_master(slot) {
            true if affected.len() < 6 => affected.push(id),
            false if others.len() < 6 => others.push(id),
            _ => {}
        }
    }
    assert_eq!((affected.len(), others.len()), (6, 6));

    cluster.stop_node(0);
    for id in &affected {
        let resp = gate.send(&stripe, &stripe.event(id, "invoice.paid")).await;
        resp.assert_error(503, "store_unavailable");
        resp.retry_after();
    }
    // The other masters' keys may still be served, or refused once the
    // cluster declares itself down; either way, never forwarded unclaimed.
    let mut served_while_down = Vec::new();
    for id in &others {
        let resp = gate.send(&stripe, &stripe.event(id, "invoice.paid")).await;
        match resp.status {
            200 => {
                resp.assert_app_ok();
                served_while_down.push(id.clone());
            }
            _ => resp.assert_error(503, "store_unavailable"),
        }
    }
    let seen = deliveries(&upstream);
    assert!(
        affected.iter().all(|id| !seen.contains_key(id)),
        "no event of the dead master's slots reached the app: {seen:?}"
    );

    // The master comes back: every event goes through, each exactly once.
    cluster.restart_node(0);
    for id in affected.iter().chain(&others) {
        let event = stripe.event(id, "invoice.paid");
        let resp = answered(
            "the event is answered once the master is back",
            &gate,
            &stripe,
            &event,
        )
        .await;
        if served_while_down.contains(id) {
            resp.assert_duplicate(id);
        } else {
            resp.assert_app_ok();
        }
        gate.send(&stripe, &event).await.assert_duplicate(id);
    }
    let seen = deliveries(&upstream);
    for id in affected.iter().chain(&others) {
        assert_eq!(
            seen.get(id),
            Some(&1),
            "{id} reached the app once: {seen:?}"
        );
    }
}
