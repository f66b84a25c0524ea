//! Pausing and resuming a queue source's delivery (DESIGN §6a) on the real
//! binary: `hookgate sources pause|resume|list` beside a running server and
//! `POST /sources/{name}/pause|resume` on the admin listener. While paused,
//! events are verified, answered `200 queued` and kept, and the app sees
//! nothing, across a restart; on resume each is delivered once, oldest
//! first. On SQLite, and on Redis with two replicas: one pauses, the other
//! obeys. A forward source cannot be paused. And `max_rate`: a backlog
//! drains at that rate, on one replica and on two sharing a Redis.

use std::time::Duration;

use serde_json::json;

use crate::support::hookgate::run_cli;
use crate::support::redis::RedisServer;
use crate::support::{
    ConfigBuilder, Event, Hookgate, SourceSpec, StoreSpec, Upstream, headers, http,
};
use http::Method;

const TOKEN: &str = "pause-test-admin-token";

fn queued_source() -> SourceSpec {
    let mut q = SourceSpec::github();
    q.name = "q".into();
    q.path = "/webhooks/q".into();
    q.extra_keys = "delivery = \"queue\"\nretry_schedule = [\"1s\"]\nmax_in_flight = 1\n".into();
    q
}

fn forward_source() -> SourceSpec {
    let mut f = SourceSpec::github();
    f.name = "fw".into();
    f.path = "/webhooks/fw".into();
    f
}

/// A config on `store` with the admin token; `store` = None is SQLite at `db`.
fn config(upstream: &Upstream, store: Option<StoreSpec>, db: &std::path::Path) -> String {
    let builder = ConfigBuilder::new(&upstream.url()).sources([queued_source(), forward_source()]);
    let toml = match store {
        Some(s) => builder.store(s).toml(),
        None => builder.toml().replacen(
            "kind = \"memory\"\n",
            &format!("kind = \"sqlite\"\npath = {:?}\n", db.display().to_string()),
            1,
        ),
    };
    toml.replacen(
        "[admin]\nlisten = \"127.0.0.1:0\"\n",
        &format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"),
        1,
    )
}

fn event(n: usize) -> Event {
    Event::json(&format!("p{n}"), Some("push"), json!({"n": n}))
}

async fn queue(gate: &Hookgate, range: std::ops::Range<usize>) {
    for n in range {
        let answer = gate.send(&queued_source(), &event(n)).await;
        answer.assert_json(200, json!({"queued": true, "event_id": format!("p{n}")}));
    }
}

async fn admin(gate: &Hookgate, path: &str, body: &str) -> crate::support::Resp {
    http(
        Method::POST,
        &format!("{}{path}", gate.admin_url()),
        &headers(&[
            ("Authorization", &format!("Bearer {TOKEN}")),
            ("Content-Type", "application/json"),
        ]),
        body.to_owned(),
    )
    .await
}

/// Waits until the trail shows `id`'s first attempt as having waited for
/// `reason`; the wait in ms.
async fn waited(gate: &Hookgate, id: &str, reason: &str) -> u64 {
    let url = format!("{}/events/q/{id}", gate.admin_url());
    crate::support::eventually(&format!("{id} waited for {reason}"), || async {
        let r = http(
            Method::GET,
            &url,
            &headers(&[("Authorization", &format!("Bearer {TOKEN}"))]),
            String::new(),
        )
        .await;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let w = &v["attempts"][0]["waited"];
        match (w["reason"].as_str(), w["ms"].as_u64()) {
            (Some(got), Some(ms)) if got == reason => Ok(ms),
            _ => Err(v.to_string()),
        }
    })
    .await
}

/// Waits until the gauge says `q` is paused (or not) on `gate`.
async fn gauge_reads(gate: &Hookgate, paused: bool) {
    let want = format!(
        "hookgate_source_paused{{source=\"q\"}} {}",
        i32::from(paused)
    );
    crate::support::eventually(&format!("q paused = {paused}"), || async {
        let m = crate::support::get(&format!("{}/metrics", gate.admin_url())).await;
        if m.text().contains(&want) {
            Ok(())
        } else {
            Err(m.text())
        }
    })
    .await;
}

/// The ids the app received, in order.
fn received(upstream: &Upstream) -> Vec<String> {
    upstream
        .requests()
        .iter()
        .map(|r| r.header("x-verified-event-id"))
        .collect()
}

#[tokio::test]
async fn a_paused_source_keeps_its_events_across_a_restart_and_delivers_each_once_on_resume() {
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("hookgate.db");
    let toml = config(&upstream, None, &db);
    let gate = Hookgate::start(&toml).await;
    let path = gate.config_path().display().to_string();

    let (status, out, err) = run_cli(&[
        "sources",
        "--config",
        &path,
        "pause",
        "q",
        "--reason",
        "app deploy",
    ])
    .await;
    assert!(status.success(), "{out}{err}");
    gauge_reads(&gate, true).await;
    queue(&gate, 0..5).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(upstream.count(), 0, "nothing is delivered while paused");
    let (_, out, _) = run_cli(&["sources", "--config", &path, "list"]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("q "))
        .unwrap_or_default();
    assert!(
        line.contains("paused") && line.contains("app deploy") && line.contains("cli:"),
        "{out}"
    );
    assert!(line.contains(" 5 "), "five queued: {out}");

    // A forward source is refused, saying what to do instead.
    let (status, _, err) = run_cli(&["sources", "--config", &path, "pause", "fw"]).await;
    assert!(!status.success());
    assert!(err.contains("delivery = \"queue\""), "{err}");
    let refused = admin(&gate, "/sources/fw/pause", "").await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.json()["error"], "forward_source");
    assert!(refused.text().contains("delivery = "), "{}", refused.text());

    // Restarted on the same file: still paused, still nothing delivered.
    gate.sigterm();
    drop(gate);
    let gate = Hookgate::start(&toml).await;
    gauge_reads(&gate, true).await;
    queue(&gate, 5..7).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(upstream.count(), 0, "a restart keeps the pause");

    // Resumed through the admin listener: each event once, oldest first.
    let resumed = admin(&gate, "/sources/q/resume", "").await;
    resumed.assert_json(
        200,
        json!({"source": "q", "paused": null, "was_paused": true}),
    );
    upstream.wait_for(7).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let want: Vec<String> = (0..7).map(|n| format!("p{n}")).collect();
    assert_eq!(received(&upstream), want);
    // The trail says they waited for the pause.
    let ms = waited(&gate, "p0", "paused").await;
    assert!(ms >= 2_000, "p0 waited {ms} ms");
    let line = gate
        .wait_for_log("about the resume", |l| l["message"] == "delivery resumed")
        .await;
    assert_eq!(line["by"], "admin-api", "{line}");
}

#[tokio::test]
async fn replicas_sharing_a_redis_obey_one_pause() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = config(
        &upstream,
        Some(StoreSpec::Redis(redis.url())),
        &dir.path().join("x"),
    );
    let (a, b) = (Hookgate::start(&toml).await, Hookgate::start(&toml).await);

    let paused = admin(&a, "/sources/q/pause", r#"{"reason":"database migration"}"#).await;
    assert_eq!(paused.status, 200, "{}", paused.text());
    assert_eq!(paused.json()["paused"]["by"], "admin-api");
    gauge_reads(&b, true).await;
    queue(&b, 0..4).await;
    queue(&a, 4..6).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(upstream.count(), 0, "neither replica delivers");
    let listed = crate::support::get(&format!("{}/sources", b.admin_url())).await;
    assert_eq!(listed.status, 401, "behind the token");

    let path = b.config_path().display().to_string();
    let (status, out, err) = run_cli(&["sources", "--config", &path, "resume", "q"]).await;
    assert!(status.success(), "{out}{err}");
    upstream.wait_for(6).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let mut got = received(&upstream);
    got.sort();
    let want: Vec<String> = (0..6).map(|n| format!("p{n}")).collect();
    assert_eq!(got, want, "each event once, whichever replica took it");
}

/// The most deliveries that started within any one second.
fn busiest_second(upstream: &Upstream) -> usize {
    let at: Vec<std::time::Instant> = upstream.requests().iter().map(|r| r.at).collect();
    at.iter()
        .map(|start| {
            at.iter()
                .filter(|t| **t >= *start && t.duration_since(*start) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// A queue source paced at `rate`, paused while a backlog builds.
fn paced(rate: &str) -> SourceSpec {
    let mut q = queued_source();
    q.extra_keys = format!(
        "delivery = \"queue\"\nretry_schedule = [\"1s\"]\nmax_in_flight = 16\nmax_rate = \"{rate}\"\n"
    );
    q
}

fn paced_config(upstream: &Upstream, store: Option<StoreSpec>, db: &std::path::Path) -> String {
    config(upstream, store, db).replacen(
        "delivery = \"queue\"\nretry_schedule = [\"1s\"]\nmax_in_flight = 1\n",
        &paced("8/s").extra_keys,
        1,
    )
}

/// 24 events queued while paused drain at 8 a second once resumed: never
/// more than 8 (and the one on the second's edge) start within a second,
/// each is delivered once, and the waits are counted.
#[tokio::test]
async fn a_backlog_drains_at_max_rate_on_sqlite() {
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = paced_config(&upstream, None, &dir.path().join("hookgate.db"));
    assert!(toml.contains("max_rate = \"8/s\""), "{toml}");
    let gate = Hookgate::start(&toml).await;
    assert_eq!(admin(&gate, "/sources/q/pause", "").await.status, 200);
    queue(&gate, 0..24).await;
    admin(&gate, "/sources/q/resume", "").await;
    upstream.wait_for(24).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut got = received(&upstream);
    got.sort();
    let mut want: Vec<String> = (0..24).map(|n| format!("p{n}")).collect();
    want.sort();
    assert_eq!(got, want, "each once");
    let busiest = busiest_second(&upstream);
    assert!(
        busiest <= 9,
        "{busiest} deliveries started within one second at 8/s"
    );
    // The last of them waited for its turn, and its trail says so.
    assert!(waited(&gate, "p23", "max_rate").await > 0);
    let m = crate::support::get(&format!("{}/metrics", gate.admin_url())).await;
    assert!(
        m.text()
            .contains("hookgate_deliveries_throttled_total{source=\"q\"}"),
        "waits are counted"
    );
}

/// Two replicas sharing a Redis share the rate: together never more than
/// 8 starts within a second.
#[tokio::test]
async fn two_replicas_share_max_rate_through_redis() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = paced_config(
        &upstream,
        Some(StoreSpec::Redis(redis.url())),
        &dir.path().join("x"),
    );
    let (a, b) = (Hookgate::start(&toml).await, Hookgate::start(&toml).await);
    let paused = admin(&a, "/sources/q/pause", "").await;
    assert_eq!(paused.status, 200);
    gauge_reads(&b, true).await;
    queue(&a, 0..12).await;
    queue(&b, 12..24).await;
    admin(&b, "/sources/q/resume", "").await;
    upstream.wait_for(24).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(upstream.count(), 24, "each once");
    let busiest = busiest_second(&upstream);
    assert!(
        busiest <= 9,
        "{busiest} deliveries started within one second at 8/s, two replicas"
    );
}

/// The trail's `waited` is the whole time from when an attempt was due to
/// when it started, measured against the clock of the trail's own times
/// (`received_at` and the attempt's `at`): a backlog held by a pause for
/// 2.5 s, then drained at 2 a second, says so event by event, each with the
/// reason that held it longest.
#[tokio::test]
async fn waited_is_the_whole_wait_through_a_pause_then_pacing() {
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = config(&upstream, None, &dir.path().join("hookgate.db")).replacen(
        "delivery = \"queue\"\nretry_schedule = [\"1s\"]\nmax_in_flight = 1\n",
        &paced("2/s").extra_keys,
        1,
    );
    let gate = Hookgate::start(&toml).await;
    assert_eq!(admin(&gate, "/sources/q/pause", "").await.status, 200);
    gauge_reads(&gate, true).await;
    queue(&gate, 0..6).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    admin(&gate, "/sources/q/resume", "").await;
    upstream.wait_for(6).await;
    let mut reasons = Vec::new();
    for n in 0..6 {
        let id = format!("p{n}");
        let v = crate::support::trail_event(&gate.admin_url(), TOKEN, "q", &id, |v| {
            v["attempts"][0]["waited"]["ms"].is_u64()
        })
        .await;
        let ms = crate::support::rfc3339_ms;
        let clock = ms(&v["attempts"][0]["at"]) - ms(&v["received_at"]);
        let said = v["attempts"][0]["waited"]["ms"].as_u64().expect("ms") as i64;
        assert!(
            (clock - said).abs() <= 150,
            "{id}: waited {said} ms by the trail, {clock} ms by its own times: {v}"
        );
        assert!(said >= 2_300, "{id} waited through the pause: {v}");
        reasons.push(
            v["attempts"][0]["waited"]["reason"]
                .as_str()
                .expect("a reason")
                .to_owned(),
        );
    }
    // The first was held by the pause alone; the later ones by the pause
    // and then by pacing behind those before them, whichever was longer.
    assert_eq!(reasons[0], "paused", "{reasons:?}");
    assert!(
        reasons.iter().all(|r| r == "paused" || r == "max_rate"),
        "{reasons:?}"
    );
}
