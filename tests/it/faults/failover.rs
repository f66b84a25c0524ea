//! Failovers of a replicated store under load, with and without
//! `min_replicas`, for a forward source and a queue source:
//!
//! - a Sentinel primary SIGKILLed; once a replica is promoted, the old
//!   primary is restarted as a replica of the new one;
//! - a Sentinel primary SIGSTOPped past `down-after-milliseconds`, resumed
//!   after the failover (split brain: the old primary comes back believing
//!   it is the primary until the sentinels demote it);
//! - a Redis Cluster master SIGKILLed; its replica takes its slots, and the
//!   old master rejoins as a replica.
//!
//! Each prints one `FAILOVER-RESULT` JSON line (`bench/reliability.sh
//! failover` turns them into the table in `docs/reliability.md`). Counted
//! beyond the other scenarios' figures:
//!
//! - **lost**: events a sender was told were accepted (the app's 2xx, or
//!   `200 queued`) that the app never accepted once everything settled, plus
//!   events given up on.
//! - **delivered twice**: events the app answered 2xx more than once; and of
//!   those, the events a sender sent once and was answered `200 queued`
//!   (asserted 0 for queue sources with `min_replicas = 1`).
//! - **seconds of 503**: from the first to the last `503 store_unavailable`
//!   any sender got.
//!
//! With `min_replicas = 1` the scenario asserts 0 lost. Without, it asserts
//! only the accounting: those figures show what the setting buys.

use super::*;
use crate::support::sentinel::{MASTER, Sentinels};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Kill,
    Pause,
}

#[derive(Debug, Clone, Copy)]
struct Setup {
    scenario: &'static str,
    queue: bool,
    min_replicas: u32,
}

fn source(queue: bool) -> SourceSpec {
    let stripe = SourceSpec::stripe();
    if queue {
        stripe
            .key("delivery = \"queue\"")
            .key(r#"retry_schedule = ["200ms", "500ms", "1s", "2s", "5s"]"#)
    } else {
        stripe
    }
}

fn replicated(config: ConfigBuilder, min_replicas: u32) -> ConfigBuilder {
    config
        .store_key(&format!("min_replicas = {min_replicas}"))
        .store_key(r#"replica_timeout = "300ms""#)
        .upstream_timeout("1s")
}

/// Queue delivery finishes after the senders do: waits (bounded) until every
/// accepted event reached the app and nothing more arrives for a second.
async fn settle(app: &ChaosApp, sent: &[Sent]) {
    let accepted: HashSet<&str> = sent
        .iter()
        .filter(|s| matches!(s.fate, Fate::Accepted))
        .map(|s| s.id.as_str())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = (usize::MAX, Instant::now());
    while Instant::now() < deadline {
        let deliveries = app.deliveries();
        let done: HashSet<&str> = deliveries
            .iter()
            .filter(|d| d.status == 200)
            .map(|d| d.id.as_str())
            .collect();
        let all = accepted.iter().all(|id| done.contains(id));
        if deliveries.len() != last.0 {
            last = (deliveries.len(), Instant::now());
        } else if all && last.1.elapsed() > Duration::from_secs(1) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Prints the `FAILOVER-RESULT` line; asserts 0 lost with `min_replicas`.
fn report(setup: Setup, store: &str, fault: &str, report: &Report, senders: &[&Arc<Sender>]) {
    let times: Vec<Instant> = senders
        .iter()
        .flat_map(|s| s.unavailable.lock().expect("unavailable lock").clone())
        .collect();
    let seconds_503 = match (times.iter().min(), times.iter().max()) {
        (Some(first), Some(last)) => last.duration_since(*first).as_secs_f64(),
        _ => 0.0,
    };
    let line = json!({
        "scenario": setup.scenario,
        "store": store,
        "fault": fault,
        "source": if setup.queue { "queue" } else { "forward" },
        "min_replicas": setup.min_replicas,
        "events": report.events,
        "requests": report.requests,
        "accepted": report.accepted,
        "lost": report.lost,
        "delivered_twice": report.app_accepted_twice,
        "delivered_twice_after_one_answer": report.twice_after_one_answer,
        "redelivered_after_2xx": if setup.queue { None } else { Some(report.redelivered_after_2xx) },
        "seconds_503": (seconds_503 * 10.0).round() / 10.0,
        "answers": report.answers,
        "endings": report.endings,
        "seconds": (report.seconds * 10.0).round() / 10.0,
    });
    println!("FAILOVER-RESULT {line}");
    assert_eq!(
        report.accepted + report.refused + report.gave_up,
        report.events,
        "{line}"
    );
    if setup.min_replicas > 0 {
        assert_eq!(report.lost, 0, "lost with min_replicas: {line}");
        // DESIGN §4: after a failover no event the app answered 2xx is
        // delivered again. A sender told `503` (an enqueue whose `WAIT`
        // timed out, yet written) may have queued its event twice; an event
        // answered `200 queued` and nothing else is delivered once.
        if setup.queue {
            assert_eq!(
                report.twice_after_one_answer, 0,
                "a queued event the sender sent once delivered twice: {line}"
            );
        }
    }
}

/// One failover scenario: two hookgate replicas on `store`, senders retrying
/// every event, `fault` injected once a third of the events is accepted (it
/// owns the deployment and hands it back, so the store outlives the report),
/// then the figures. `started` is when the deployment began to start.
async fn run_scenario<D, F>(
    setup: Setup,
    started: Instant,
    store: StoreSpec,
    labels: (&str, &str),
    fault: impl FnOnce() -> F,
) where
    F: std::future::Future<Output = D>,
{
    let n = event_count();
    let app = ChaosApp::start(Behaviour::default()).await;
    let stripe = source(setup.queue);
    let config = replicated(
        ConfigBuilder::new(&app.url()).store(store),
        setup.min_replicas,
    )
    .source(stripe.clone());
    let gates = replicas(&config, 2).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);
    let all = events(&stripe, setup.scenario, n);
    let accepted = Arc::new(AtomicUsize::new(0));

    let load = run_load(&sender, spread(&all, 2), &accepted);
    let inject = async {
        wait_count(&accepted, n / 3, "accepted before the fault").await;
        fault().await
    };
    let (sent, _deployment) = tokio::join!(load, inject);
    if setup.queue {
        settle(&app, &sent).await;
    }
    let resent = resend_accepted(&sender, &sent, &all).await;
    if setup.queue {
        settle(&app, &sent).await;
    }
    let result = Report::new(setup.scenario, n, &sent, &resent, &app, &[&sender], started);
    diagnose(&result, &gates);
    report(setup, labels.0, labels.1, &result, &[&sender]);
}

async fn sentinel_failover(setup: Setup, fault: Fault) {
    let started = Instant::now();
    let mut deployment = Sentinels::start(2, None);
    let store = StoreSpec::Sentinel(deployment.urls(), MASTER.to_owned());
    let label = match fault {
        Fault::Kill => "primary SIGKILLed, restarted as a replica",
        Fault::Pause => "primary SIGSTOPped past down-after-milliseconds, resumed",
    };
    run_scenario(setup, started, store, ("sentinel", label), || async move {
        let old = deployment.primary();
        tokio::task::block_in_place(|| match fault {
            Fault::Kill => {
                deployment.node(old).stop();
                let new = deployment.wait_failover_from(old);
                sleep_blocking(Duration::from_secs(1));
                deployment.restart_as_replica(old, new);
            }
            Fault::Pause => {
                deployment.node(old).freeze();
                deployment.wait_failover_from(old);
                deployment.node(old).thaw();
                wait_demoted(&mut deployment, old);
            }
        });
        deployment
    })
    .await;
}

/// When something was lost: hookgate's warnings, counted by message, to
/// read beside the figures.
fn diagnose(result: &Report, gates: &[Hookgate]) {
    if result.lost == 0 {
        return;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for gate in gates {
        for line in gate.log_lines() {
            if line["level"] == "WARN" || line["level"] == "ERROR" {
                let key = format!("{} | {}", line["message"], line["error"]);
                *seen.entry(key).or_default() += 1;
            }
        }
    }
    for (message, count) in seen {
        println!("FAILOVER-LOG {count} × {message}");
    }
}

fn sleep_blocking(d: Duration) {
    std::thread::sleep(d);
}

/// Waits (bounded) until the sentinels turned the resumed old primary into
/// a replica.
fn wait_demoted(deployment: &mut Sentinels, old: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while deployment.node(old).role() != "slave" {
        assert!(
            Instant::now() < deadline,
            "the resumed primary was not demoted within 30s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn cluster_failover(setup: Setup) {
    let started = Instant::now();
    let mut cluster = RedisCluster::start_with_replicas(3);
    let store = StoreSpec::Cluster(cluster.urls());
    let label = "master SIGKILLed, its replica takes the slots";
    run_scenario(setup, started, store, ("cluster", label), || async move {
        tokio::task::block_in_place(|| {
            // The master serving the source's queue keys when there is one.
            let victim = (0..3)
                .find(|i| cluster.is_master(*i))
                .expect("a master among the first three nodes");
            let replica = cluster
                .replica_of(victim)
                .expect("the victim master has a replica");
            cluster.stop_node(victim);
            // The replica takes over before the old master comes back: a
            // master restarted empty before its failover would hand its
            // replica an empty data set (Redis' own rule: no restart
            // without persistence until the failover is done).
            cluster.wait_promoted(replica);
            cluster.wait_ok_without_dead_nodes();
            sleep_blocking(Duration::from_secs(1));
            cluster.restart_node(victim);
        });
        cluster
    })
    .await;
}

/// `sentinel!(name, Kill | Pause, queue?, min_replicas)` and
/// `cluster!(name, queue?, min_replicas)`: one scenario each.
macro_rules! sentinel {
    ($name:ident, $fault:ident, $queue:expr, $min:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let (scenario, queue, min_replicas) = (stringify!($name), $queue, $min);
            let setup = Setup {
                scenario,
                queue,
                min_replicas,
            };
            sentinel_failover(setup, Fault::$fault).await;
        }
    };
}

macro_rules! cluster {
    ($name:ident, $queue:expr, $min:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let (scenario, queue, min_replicas) = (stringify!($name), $queue, $min);
            cluster_failover(Setup {
                scenario,
                queue,
                min_replicas,
            })
            .await;
        }
    };
}

const QUEUE: bool = true;
const FORWARD: bool = false;

sentinel!(sentinel_kill_forward_min0, Kill, FORWARD, 0);
sentinel!(sentinel_kill_forward_min1, Kill, FORWARD, 1);
sentinel!(sentinel_kill_queue_min0, Kill, QUEUE, 0);
sentinel!(sentinel_kill_queue_min1, Kill, QUEUE, 1);
sentinel!(sentinel_pause_forward_min1, Pause, FORWARD, 1);
sentinel!(sentinel_pause_queue_min0, Pause, QUEUE, 0);
sentinel!(sentinel_pause_queue_min1, Pause, QUEUE, 1);
cluster!(cluster_kill_forward_min0, FORWARD, 0);
cluster!(cluster_kill_forward_min1, FORWARD, 1);
cluster!(cluster_kill_queue_min1, QUEUE, 1);
