//! Queue delivery (DESIGN §6): the sender is answered once the event is
//! durable, and hookgate owns the retries from there. The contract runs on
//! both stores that keep a queue (a real Redis and a SQLite file); Redis
//! going away and a Redis Cluster are Redis's own.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use crate::delivery_kit::{
    App, Backend, ConfigFile, Gate, WAIT, config, config_with_store, eventually, request,
    signed_headers, source,
};
use crate::support::redis::RedisServer;

const FAST: &str = "delivery = \"queue\"\nretry_schedule = [\"100ms\", \"200ms\", \"300ms\"]\n";

#[tokio::test]
async fn a_queued_event_is_acknowledged_then_delivered_byte_for_byte_on_redis() {
    a_queued_event_is_acknowledged_then_delivered_byte_for_byte(Backend::redis()).await;
}

#[tokio::test]
async fn a_queued_event_is_acknowledged_then_delivered_byte_for_byte_on_sqlite() {
    a_queued_event_is_acknowledged_then_delivered_byte_for_byte(Backend::sqlite()).await;
}

async fn a_queued_event_is_acknowledged_then_delivered_byte_for_byte(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("q", FAST))).await;

    // A body that is not UTF-8, and a client's attempt to stamp itself.
    let body: &[u8] = b"\x00\xffbinary\nbody\r\n";
    let mut headers = signed_headers("b1", body);
    headers.push(("x-verified-event-id".into(), "spoofed".into()));
    headers.push(("x-custom".into(), "kept".into()));
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let answer = request(
        gate.public,
        "POST",
        "/hooks/q/sub?x=1&y",
        &headers,
        Bytes::from_static(body),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json(), json!({"queued": true, "event_id": "b1"}));

    let seen = app.wait_for("b1", 1).await;
    let got = &seen[0];
    assert_eq!(got.method, "POST");
    assert_eq!(got.uri, "/hooks/q/sub?x=1&y");
    assert_eq!(&got.body[..], body);
    assert_eq!(got.header("x-verified-source").as_deref(), Some("q"));
    // The kit's sources are GitHub ones, whose event type is not signed.
    assert_eq!(got.header("x-verified-event-type"), None);
    assert_eq!(got.headers.get_all("x-verified-event-id").iter().count(), 1);
    assert_eq!(got.header("x-custom").as_deref(), Some("kept"));
    assert!(got.header("x-forwarded-for").is_some());

    // The sender's retry is a duplicate; the queue empties.
    let again = request(
        gate.public,
        "POST",
        "/hooks/q/sub?x=1&y",
        &headers,
        Bytes::from_static(body),
    )
    .await;
    assert_eq!(again.json(), json!({"duplicate": true, "event_id": "b1"}));
    eventually("the queue to empty", || {
        (backend.queue_len("q") == 0).then_some(())
    })
    .await;
    let metrics = gate.metrics().await;
    for needle in [
        r#"hookgate_requests_total{source="q",outcome="queued"} 1"#,
        r#"hookgate_delivery_attempts_total{source="q",result="delivered"} 1"#,
        r#"hookgate_completion_latency_seconds_count{source="q"} 1"#,
    ] {
        assert!(metrics.contains(needle), "missing {needle} in\n{metrics}");
    }
    gate.stop().await;
    assert_eq!(app.seen_event("b1").len(), 1);
}

#[tokio::test]
async fn an_app_that_fails_then_recovers_gets_the_event_exactly_once_on_redis() {
    an_app_that_fails_then_recovers_gets_the_event_exactly_once(Backend::redis()).await;
}

#[tokio::test]
async fn an_app_that_fails_then_recovers_gets_the_event_exactly_once_on_sqlite() {
    an_app_that_fails_then_recovers_gets_the_event_exactly_once(Backend::sqlite()).await;
}

async fn an_app_that_fails_then_recovers_gets_the_event_exactly_once(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("q", FAST))).await;

    app.then_answer(&[500, 503, 502]);
    // Held at the app, the event is still in the store's queue.
    app.hold();
    assert_eq!(gate.send("q", "r1", r#"{"n":1}"#).await.status, 200);
    app.arrived(1).await;
    assert_eq!(backend.queue_len("q"), 1);
    app.release();
    let seen = app.wait_for("r1", 4).await;
    let statuses: Vec<u16> = seen.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [500, 503, 502, 200]);
    eventually("the queue to empty", || {
        (backend.queue_len("q") == 0).then_some(())
    })
    .await;
    // Settled: nothing is left that could be delivered again.
    gate.stop().await;
    assert_eq!(app.seen_event("r1").len(), 4);
    assert_eq!(backend.dead_letters(), 0);
}

#[tokio::test]
async fn a_4xx_is_dropped_without_retry_and_kept_as_a_dead_letter_on_redis() {
    a_4xx_is_dropped_without_retry_and_kept_as_a_dead_letter(Backend::redis()).await;
}

#[tokio::test]
async fn a_4xx_is_dropped_without_retry_and_kept_as_a_dead_letter_on_sqlite() {
    a_4xx_is_dropped_without_retry_and_kept_as_a_dead_letter(Backend::sqlite()).await;
}

async fn a_4xx_is_dropped_without_retry_and_kept_as_a_dead_letter(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("q", FAST))).await;

    app.then_answer(&[422]);
    assert_eq!(gate.send("q", "x1", r#"{"bad":true}"#).await.status, 200);
    app.wait_for("x1", 1).await;
    eventually("the dead letter", || {
        (backend.dead_letters() == 1).then_some(())
    })
    .await;
    // Nothing left to retry: neither in the stream nor waiting (the dead
    // letter is written first, then the entry removed).
    eventually("the queue to empty", || {
        (backend.queue_len("q") == 0).then_some(())
    })
    .await;
    let metrics = gate.metrics().await;
    assert!(
        metrics.contains(r#"hookgate_delivery_attempts_total{source="q",result="dropped"} 1"#),
        "{metrics}"
    );
    assert!(!metrics.contains(r#"result="retry""#), "{metrics}");
    gate.stop().await;
    assert_eq!(app.seen_event("x1").len(), 1);
}

#[tokio::test]
async fn a_429_waits_for_its_retry_after_on_redis() {
    a_429_waits_for_its_retry_after(Backend::redis()).await;
}

#[tokio::test]
async fn a_429_waits_for_its_retry_after_on_sqlite() {
    a_429_waits_for_its_retry_after(Backend::sqlite()).await;
}

async fn a_429_waits_for_its_retry_after(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("q", FAST))).await;

    app.answer_once_retry_after(429, "2");
    assert_eq!(gate.send("q", "s1", "{}").await.status, 200);
    let seen = app.wait_for("s1", 2).await;
    assert_eq!(seen[0].status, 429);
    assert_eq!(seen[1].status, 200);
    // The schedule says 100ms; the app asked for 2s.
    let gap = seen[1].at.duration_since(seen[0].at);
    assert!(gap >= Duration::from_millis(1900), "retried after {gap:?}");
    gate.stop().await;
}

#[tokio::test]
async fn two_replicas_share_the_queue_and_deliver_each_event_once_on_redis() {
    two_replicas_share_the_queue_and_deliver_each_event_once(Backend::redis()).await;
}

#[tokio::test]
async fn two_replicas_share_the_queue_and_deliver_each_event_once_on_sqlite() {
    two_replicas_share_the_queue_and_deliver_each_event_once(Backend::sqlite()).await;
}

/// Two replicas on one store: on Redis, two hookgates sharing it; on SQLite,
/// two hookgates on one file (several processes on one machine).
async fn two_replicas_share_the_queue_and_deliver_each_event_once(backend: Backend) {
    let app = App::start().await;
    let toml = config(&app, &backend, &source("q", FAST));
    let a = Gate::start(&toml).await;
    let b = Gate::start(&toml).await;

    for i in 0..30 {
        let gate = if i % 2 == 0 { &a } else { &b };
        let id = format!("m{i}");
        assert_eq!(
            gate.send("q", &id, &format!("{{\"i\":{i}}}")).await.status,
            200
        );
    }
    eventually("30 deliveries", || (app.seen().len() >= 30).then_some(())).await;
    eventually("the queue to empty", || {
        (backend.queue_len("q") == 0).then_some(())
    })
    .await;
    a.stop().await;
    b.stop().await;
    for i in 0..30 {
        assert_eq!(app.seen_event(&format!("m{i}")).len(), 1, "m{i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_events_survive_a_sigkill_on_redis() {
    queued_events_survive_a_sigkill(Backend::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_events_survive_a_sigkill_on_sqlite() {
    queued_events_survive_a_sigkill(Backend::sqlite()).await;
}

/// An event acknowledged with 200 survives hookgate being killed (SIGKILL)
/// while its delivery is in flight: the next process takes it over once its
/// lease runs out and delivers it.
async fn queued_events_survive_a_sigkill(backend: Backend) {
    let app = App::start().await;
    let file = ConfigFile::write(&config(&app, &backend, &source("q", FAST)));

    // The attempt cut off by the kill may still run to its end inside the
    // app (answered to nobody); make that one a failure, so the only 2xx is
    // the delivery after the restart.
    app.then_answer(&[503]);
    app.hold();
    let mut first = Binary::start(&file);
    let answer = crate::delivery_kit::send_signed(first.public, "q", "k1", r#"{"k":1}"#).await;
    assert_eq!(answer.json(), json!({"queued": true, "event_id": "k1"}));
    app.arrived(1).await;
    first.kill();
    app.release();

    // The held request died with its connection; a new process delivers it.
    let second = Binary::start(&file);
    eventually("the delivery after the restart", || {
        app.seen_event("k1")
            .iter()
            .any(|s| s.status == 200)
            .then_some(())
    })
    .await;
    eventually("the queue to empty", || {
        (backend.queue_len("q") == 0).then_some(())
    })
    .await;
    drop(second);
    assert_eq!(
        app.seen_event("k1")
            .iter()
            .filter(|s| s.status == 200)
            .count(),
        1
    );
}

/// The real binary, killed on drop.
struct Binary {
    child: Child,
    public: std::net::SocketAddr,
}

impl Binary {
    fn start(file: &ConfigFile) -> Binary {
        let mut child = crate::support::process::Guard::new(
            Command::new(env!("CARGO_BIN_EXE_hookgate"))
                .args(["run", "--config"])
                .arg(&file.path)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .stdin(Stdio::null())
                .spawn()
                .expect("start hookgate"),
        );
        let stdout = child.get_mut().stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if v["message"] == "listening" && v["listener"] == "public" {
                    let _ = tx.send(v["addr"].as_str().unwrap_or_default().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(WAIT)
            .expect("hookgate logs its public address");
        let public = addr.parse().expect("an address");
        Binary {
            child: child.take(),
            public,
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Redis down: the event is not acknowledged (503, so the sender retries) and
/// its nonce is not left behind. Redis back (empty): the retry is queued, the
/// workers make their group again, and the event is delivered.
#[tokio::test]
async fn no_acknowledgement_without_a_durable_enqueue() {
    let mut redis = RedisServer::start();
    let app = App::start().await;
    let store = format!("kind = \"redis\"\nurl = \"{}\"\n", redis.url());
    let gate = Gate::start(&config_with_store(&app, &store, &source("q", FAST))).await;
    assert_eq!(gate.send("q", "before", "{}").await.status, 200);
    app.wait_for("before", 1).await;

    redis.stop();
    let answer = gate.send("q", "o1", r#"{"o":1}"#).await;
    assert_eq!(answer.status, 503);
    assert_eq!(answer.json(), json!({"error": "store_unavailable"}));
    assert!(answer.headers.contains_key("retry-after"));

    redis.restart();
    let answer = eventually_async_send(&gate).await;
    assert_eq!(answer.json(), json!({"queued": true, "event_id": "o1"}));
    let seen = app.wait_for("o1", 1).await;
    assert_eq!(seen[0].status, 200);
    gate.stop().await;
}

/// The sender's retry after Redis came back (the store reconnects in the
/// background, so the first tries may still fail).
async fn eventually_async_send(gate: &Gate) -> crate::delivery_kit::Answer {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let answer = gate.send("q", "o1", r#"{"o":1}"#).await;
        if answer.status == 200 || std::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The same on a three-master Redis Cluster: each source's stream and
/// delayed set share a slot (hash tag), so the scripts run there too.
#[tokio::test]
async fn queue_delivery_on_a_redis_cluster() {
    let cluster = crate::support::redis::RedisCluster::start(3);
    let app = App::start().await;
    let urls: Vec<String> = cluster.urls().iter().map(|u| format!("\"{u}\"")).collect();
    let sources = format!(
        "{}{}",
        source("q", FAST),
        source("p", "delivery = \"queue\"\nretry_schedule = [\"100ms\"]\n")
    );
    let store = format!(
        "kind = \"redis-cluster\"\nurls = [{}]\nkey_prefix = \"hg\"\n",
        urls.join(", ")
    );
    let toml = config_with_store(&app, &store, &sources);
    let gate = Gate::start(&toml).await;

    app.then_answer(&[500]);
    assert_eq!(gate.send("q", "c1", r#"{"c":1}"#).await.status, 200);
    app.wait_for("c1", 1).await;
    assert_eq!(gate.send("p", "c2", r#"{"c":2}"#).await.status, 200);
    let seen = app.wait_for("c1", 2).await;
    assert_eq!(seen.last().map(|s| s.status), Some(200));
    app.wait_for("c2", 1).await;
    gate.stop().await;
}
