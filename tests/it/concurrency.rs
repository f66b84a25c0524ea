//! Many copies of one event at once, and several replicas sharing one Redis
//! (or, on one machine, one SQLite file): the app sees each event exactly once.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use http::Method;
use tokio::task::JoinSet;

use crate::support::redis::RedisServer;
use crate::support::{
    APP_OK, ConfigBuilder, Hookgate, Reply, Resp, SourceSpec, StoreSpec, Upstream, http,
};

/// Sends `copies` identical requests at once; returns every response.
async fn burst(
    gate: &Hookgate,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    copies: usize,
) -> Vec<Resp> {
    let url = format!("{}{path}", gate.public_url());
    let mut tasks = JoinSet::new();
    for _ in 0..copies {
        let (url, headers, body) = (url.clone(), headers.to_vec(), body.to_vec());
        tasks.spawn(async move { http(Method::POST, &url, &headers, body).await });
    }
    let mut responses = Vec::with_capacity(copies);
    while let Some(resp) = tasks.join_next().await {
        responses.push(resp.expect("request task"));
    }
    responses
}

/// Checks a burst of copies of `event_id`: one app answer, the rest duplicate or in flight.
fn assert_one_forwarded(responses: &[Resp], event_id: &str) {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for resp in responses {
        let kind = match resp.status {
            200 if resp.body.as_ref() == APP_OK.as_bytes() => "forwarded",
            200 => {
                resp.assert_duplicate(event_id);
                "duplicate"
            }
            429 => {
                resp.assert_error(429, "in_flight");
                resp.retry_after();
                "in_flight"
            }
            _ => panic!("unexpected answer to a copy of {event_id}: {resp:?}"),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    assert_eq!(
        kinds.get("forwarded"),
        Some(&1),
        "exactly one copy forwarded: {kinds:?}"
    );
}

/// 100 identical requests at once through one process: the app sees one.
/// (`cluster` runs it on Redis Cluster.)
pub(crate) async fn hundred_copies_reach_the_app_once(store: StoreSpec) {
    hundred_copies_on(|builder| builder.store(store).toml()).await;
}

/// The config a test's builder makes, on a SQLite file at `path`.
fn on_sqlite(builder: ConfigBuilder, path: &Path) -> String {
    let toml = builder.store(StoreSpec::Memory).toml();
    let memory = "[store]\nkind = \"memory\"\n";
    assert_eq!(toml.matches(memory).count(), 1, "{toml}");
    let path = path.to_str().expect("a UTF-8 temp path");
    assert!(!path.contains('\''), "{path}");
    toml.replacen(
        memory,
        &format!("[store]\nkind = \"sqlite\"\npath = '{path}'\n"),
        1,
    )
}

fn sqlite_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hookgate-concurrency-")
        .tempdir()
        .expect("temp dir")
}

async fn hundred_copies_on(config: impl FnOnce(ConfigBuilder) -> String) {
    let upstream = Upstream::start().await;
    // Slow enough that the copies overlap the one being forwarded.
    upstream.set_reply(Reply::default().delay(Duration::from_millis(300)));
    let stripe = SourceSpec::stripe();
    let gate = Hookgate::start(&config(
        ConfigBuilder::new(&upstream.url()).source(stripe.clone()),
    ))
    .await;
    let event = stripe.event("evt_hundred_copies", "invoice.paid");

    let responses = burst(
        &gate,
        &stripe.path,
        &stripe.request_headers(&event),
        &event.body,
        100,
    )
    .await;

    assert_eq!(responses.len(), 100);
    assert_one_forwarded(&responses, "evt_hundred_copies");
    assert_eq!(upstream.count(), 1, "the app saw the event once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_copies_reach_the_app_once_with_the_memory_store() {
    hundred_copies_reach_the_app_once(StoreSpec::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_copies_reach_the_app_once_with_redis() {
    let redis = RedisServer::start();
    hundred_copies_reach_the_app_once(StoreSpec::Redis(redis.url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_copies_reach_the_app_once_with_sqlite() {
    let dir = sqlite_dir();
    let path = dir.path().join("hookgate.db");
    hundred_copies_on(|builder| on_sqlite(builder, &path)).await;
    assert_eq!(
        nonce_state(&path, "evt_hundred_copies").as_deref(),
        Some("done")
    );
}

/// The `state` of an event's row in the file's `nonces` table.
fn nonce_state(path: &Path, event_id: &str) -> Option<String> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    let mut stmt = conn
        .prepare("SELECT state FROM nonces WHERE event_id = ?1")
        .expect("prepare");
    let states: Vec<String> = stmt
        .query_map([event_id], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(states.len() <= 1, "{states:?}");
    states.into_iter().next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_events_each_sent_twice_at_once_are_each_forwarded_once() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .start()
        .await;

    let url = format!("{}{}", gate.public_url(), github.path);
    let mut tasks = JoinSet::new();
    for i in 0..50 {
        let event = github.event(&format!("delivery-{i:03}"), "push");
        let headers = github.request_headers(&event);
        for _ in 0..2 {
            let (url, headers, body) = (url.clone(), headers.clone(), event.body.clone());
            tasks.spawn(async move { http(Method::POST, &url, &headers, body).await });
        }
    }
    while let Some(resp) = tasks.join_next().await {
        let resp = resp.expect("request task");
        assert!(
            matches!(resp.status, 200 | 429),
            "unexpected answer: {resp:?}"
        );
    }

    let mut per_id: BTreeMap<String, usize> = BTreeMap::new();
    for request in upstream.requests() {
        *per_id
            .entry(request.header("x-verified-event-id"))
            .or_default() += 1;
    }
    assert_eq!(per_id.len(), 50, "every event reached the app: {per_id:?}");
    assert!(
        per_id.values().all(|n| *n == 1),
        "no event reached the app twice: {per_id:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_one_redis_forward_an_event_once() {
    let redis = RedisServer::start();
    two_replicas_forward_an_event_once(StoreSpec::Redis(redis.url())).await;
}

/// Two processes on one machine sharing one SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_sharing_one_sqlite_file_forward_an_event_once() {
    let dir = sqlite_dir();
    let path = dir.path().join("hookgate.db");
    two_replicas_on(|builder| on_sqlite(builder, &path)).await;
    for id in [
        "evt_replicas_sequential",
        "evt_replicas_held",
        "evt_replicas_burst",
    ] {
        assert_eq!(nonce_state(&path, id).as_deref(), Some("done"), "{id}");
    }
}

/// Two processes sharing `store`: one after the other, while one copy is at
/// the app, and in a burst on both. (`cluster` runs it on Redis Cluster.)
pub(crate) async fn two_replicas_forward_an_event_once(store: StoreSpec) {
    two_replicas_on(|builder| builder.store(store).toml()).await;
}

async fn two_replicas_on(config: impl FnOnce(ConfigBuilder) -> String) {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let config = config(ConfigBuilder::new(&upstream.url()).source(stripe.clone()));
    let a = Hookgate::start(&config).await;
    let b = Hookgate::start(&config).await;

    // One after the other: the second replica knows the first forwarded it.
    let event = stripe.event("evt_replicas_sequential", "invoice.paid");
    a.send(&stripe, &event).await.assert_app_ok();
    b.send(&stripe, &event)
        .await
        .assert_duplicate("evt_replicas_sequential");
    assert_eq!(upstream.count(), 1);

    // While replica A's copy is at the app, replica B's copy is in flight.
    let event = stripe.event("evt_replicas_held", "invoice.paid");
    upstream.hold();
    let (first, second) = tokio::join!(a.send(&stripe, &event), async {
        upstream.wait_for(2).await;
        let second = b.send(&stripe, &event).await;
        upstream.release();
        second
    });
    first.assert_app_ok();
    second.assert_error(429, "in_flight");
    b.send(&stripe, &event)
        .await
        .assert_duplicate("evt_replicas_held");
    assert_eq!(upstream.count(), 2);

    // Both at once, many copies on each replica.
    let event = stripe.event("evt_replicas_burst", "invoice.paid");
    let headers = stripe.request_headers(&event);
    let (from_a, from_b) = tokio::join!(
        burst(&a, &stripe.path, &headers, &event.body, 20),
        burst(&b, &stripe.path, &headers, &event.body, 20),
    );
    let all: Vec<Resp> = from_a.into_iter().chain(from_b).collect();
    assert_one_forwarded(&all, "evt_replicas_burst");
    assert_eq!(upstream.count(), 3);
}
