//! The event trail (DESIGN §7a) on every store: the memory store, a SQLite
//! file, a Redis of its own and a three-master Redis Cluster. Each scenario
//! is one function run from a test per store: an event's states and
//! transitions in forward and queue mode (delivered, released, a duplicate
//! counted and a `429 in_flight` not, dead letters and their replay, waiting,
//! dropped), nothing recorded for a rejected request or a filtered type,
//! `GET /events` filters and paging, the bound, a trail turned off, and
//! `hookgate events` on a SQLite file a running `hookgate run` serves.
//!
//! Trail writes are not awaited on the answer's path: every state is waited
//! for, never read once.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::delivery_kit::{
    ADMIN_TOKEN, Answer, App, Backend, ConfigFile, Gate, WAIT, config_with_store, hookgate_cli,
    request, send_signed, signed_headers, source,
};
use crate::support::Hookgate;
use crate::support::redis::RedisCluster;

/// The store a trail test runs on.
pub(crate) enum Store {
    Memory,
    Kept(Backend),
    Cluster(RedisCluster),
}

impl Store {
    pub(crate) fn memory() -> Store {
        Store::Memory
    }

    pub(crate) fn sqlite() -> Store {
        Store::Kept(Backend::sqlite())
    }

    pub(crate) fn redis() -> Store {
        Store::Kept(Backend::redis())
    }

    fn cluster() -> Store {
        Store::Cluster(RedisCluster::start(3))
    }

    /// Whether it keeps a queue and dead letters (all but memory).
    fn keeps_dead_letters(&self) -> bool {
        !matches!(self, Store::Memory)
    }

    fn toml(&self) -> String {
        match self {
            Store::Memory => "kind = \"memory\"\n".to_owned(),
            Store::Kept(backend) => backend.store_toml(),
            Store::Cluster(cluster) => {
                let urls: Vec<String> = cluster.urls().iter().map(|u| format!("\"{u}\"")).collect();
                format!(
                    "kind = \"redis-cluster\"\nurls = [{}]\nkey_prefix = \"hg\"\n",
                    urls.join(", ")
                )
            }
        }
    }

    /// A config for `app` on this store; `admin` adds lines to `[admin]`.
    pub(crate) fn config(&self, app: &App, admin: &str, sources: &str) -> String {
        config_with_store(app, &self.toml(), sources).replacen(
            "[admin]\n",
            &format!("[admin]\n{admin}"),
            1,
        )
    }
}

fn bearer() -> String {
    format!("Bearer {ADMIN_TOKEN}")
}

/// `GET path` on the admin listener with the admin token.
async fn admin_get(admin: SocketAddr, path: &str) -> Answer {
    let bearer = bearer();
    request(
        admin,
        "GET",
        path,
        &[("authorization", bearer.as_str())],
        Bytes::new(),
    )
    .await
}

/// `GET /events/{source}/{id}`.
pub(crate) async fn show(admin: SocketAddr, source: &str, id: &str) -> Answer {
    admin_get(admin, &format!("/events/{source}/{id}")).await
}

/// Polls `check` every 20 ms until it gives a value, failing after `limit`
/// with the last thing it saw.
pub(crate) async fn until<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `GET /events/{source}/{id}` shows an event for which `pred`
/// holds, and returns it.
pub(crate) async fn event_where(
    admin: SocketAddr,
    source: &str,
    id: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    until(&format!("{source}/{id}: {what}"), WAIT, || async {
        let answer = show(admin, source, id).await;
        if answer.status != 200 {
            return Err(format!("{} {}", answer.status, answer.body));
        }
        let event = answer.json();
        if pred(&event) {
            Ok(event)
        } else {
            Err(event.to_string())
        }
    })
    .await
}

/// Waits until the event is in `state` with `attempts` attempts.
pub(crate) async fn event_in(
    admin: SocketAddr,
    source: &str,
    id: &str,
    state: &str,
    attempts: usize,
) -> Value {
    event_where(
        admin,
        source,
        id,
        &format!("{state} with {attempts} attempts"),
        |e| e["state"] == state && attempts_of(e).len() == attempts,
    )
    .await
}

pub(crate) fn attempts_of(event: &Value) -> Vec<Value> {
    event["attempts"].as_array().cloned().unwrap_or_default()
}

/// A `GET /events` page, asserted 200.
async fn page(admin: SocketAddr, query: &str) -> Value {
    let answer = admin_get(admin, &format!("/events{query}")).await;
    assert_eq!(answer.status, 200, "/events{query}: {}", answer.body);
    answer.json()
}

/// `(source, event_id)` of each event of a page, in order.
fn keys(page: &Value) -> Vec<(String, String)> {
    page["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events array: {page}"))
        .iter()
        .map(|e| {
            (
                e["source"].as_str().unwrap_or_default().to_owned(),
                e["event_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(s, i)| ((*s).to_owned(), (*i).to_owned()))
        .collect()
}

/// A signed event of type `event_type` (GitHub does not sign the type).
async fn send_typed(
    addr: SocketAddr,
    name: &str,
    id: &str,
    body: &str,
    event_type: &str,
) -> Answer {
    let mut headers = signed_headers(id, body.as_bytes());
    for (n, v) in &mut headers {
        if n == "x-github-event" {
            *v = event_type.to_owned();
        }
    }
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    request(
        addr,
        "POST",
        &format!("/hooks/{name}"),
        &headers,
        Bytes::copy_from_slice(body.as_bytes()),
    )
    .await
}

/// Rows of the SQLite file's `events` table, read on a connection of its own.
fn trail_rows(backend: &Backend) -> i64 {
    let path = backend.db_path().expect("a sqlite path");
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open read-only");
    conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .expect("count")
}

/// An RFC 3339 time as the trail writes it (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
fn is_time(v: &Value) -> bool {
    v.as_str().is_some_and(|t| {
        t.len() == 24 && t.ends_with('Z') && t.as_bytes()[10] == b'T' && t.starts_with("20")
    })
}

// ---------------------------------------------------------------------------
// Forward mode

#[tokio::test]
async fn forward_mode_states_on_memory() {
    forward_mode_states(Store::memory()).await;
}

#[tokio::test]
async fn forward_mode_states_on_sqlite() {
    forward_mode_states(Store::sqlite()).await;
}

#[tokio::test]
async fn forward_mode_states_on_redis() {
    forward_mode_states(Store::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_mode_states_on_a_cluster() {
    forward_mode_states(Store::cluster()).await;
}

/// Delivered; a duplicate counted and a `429 in_flight` not; released then
/// delivered by the sender's retry; three failures to a dead letter (not on
/// memory) that a replay delivers.
async fn forward_mode_states(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "", &source("fw", ""))).await;
    let admin = gate.admin;

    // Delivered at once.
    assert_eq!(gate.send("fw", "e1", r#"{"e":1}"#).await.status, 200);
    let e1 = event_in(admin, "fw", "e1", "delivered", 1).await;
    assert_eq!(e1["source"], "fw");
    assert_eq!(e1["event_id"], "e1");
    assert_eq!(e1["event_type"], "thing.updated");
    assert_eq!(e1["duplicates"], 0);
    assert!(is_time(&e1["received_at"]), "{e1}");
    assert_eq!(e1["next_attempt_at"], Value::Null, "{e1}");
    assert_eq!(e1["dead_letter_id"], Value::Null, "{e1}");
    let attempt = &e1["attempts"][0];
    assert_eq!(attempt["mode"], "forward", "{e1}");
    assert_eq!(attempt["outcome"], "forwarded", "{e1}");
    assert_eq!(attempt["status"], 200, "{e1}");
    assert!(is_time(&attempt["at"]), "{e1}");
    assert!(
        attempt["replica"].as_str().is_some_and(|r| !r.is_empty()),
        "{e1}"
    );
    assert!(attempt["duration_ms"].is_u64(), "{e1}");
    // `show` adds what the store holds now: the nonce is done.
    assert_eq!(e1["store"]["nonce"], "done", "{e1}");
    assert!(is_time(&e1["store"]["nonce_expires_at"]), "{e1}");
    assert!(
        e1["store"]["nonce_expires_at"].as_str() > e1["received_at"].as_str(),
        "{e1}"
    );

    // The sender's copy is a `200 duplicate`, counted.
    let copy = gate.send("fw", "e1", r#"{"e":1}"#).await;
    assert_eq!(
        copy.json(),
        json!({"duplicate": true, "event_id": "e1"}),
        "{}",
        copy.body
    );
    let e1 = event_where(admin, "fw", "e1", "one duplicate", |e| e["duplicates"] == 1).await;
    assert_eq!(e1["state"], "delivered");
    assert_eq!(attempts_of(&e1).len(), 1, "{e1}");

    // A copy that arrives while the first is at the app is `429 in_flight`:
    // not a duplicate answered, so not counted.
    app.hold();
    let public = gate.public;
    let first = tokio::spawn(async move { send_signed(public, "fw", "e2", r#"{"e":2}"#).await });
    app.arrived(2).await;
    let busy = gate.send("fw", "e2", r#"{"e":2}"#).await;
    assert_eq!(busy.status, 429, "{}", busy.body);
    assert!(busy.body.contains("in_flight"), "{}", busy.body);
    app.release();
    assert_eq!(first.await.expect("first copy").status, 200);
    event_in(admin, "fw", "e2", "delivered", 1).await;
    // A real duplicate afterwards is the only one counted.
    assert_eq!(gate.send("fw", "e2", r#"{"e":2}"#).await.status, 200);
    event_where(admin, "fw", "e2", "one duplicate", |e| e["duplicates"] == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e2 = show(admin, "fw", "e2").await.json();
    assert_eq!(e2["duplicates"], 1, "the 429 is not counted: {e2}");

    // The app fails: released, the attempt's status 500; the sender's retry
    // gets through: delivered, two attempts, received when first received.
    app.then_answer(&[500]);
    assert_eq!(gate.send("fw", "e3", r#"{"e":3}"#).await.status, 500);
    let e3 = event_in(admin, "fw", "e3", "released", 1).await;
    assert_eq!(e3["attempts"][0]["status"], 500, "{e3}");
    assert_eq!(e3["attempts"][0]["outcome"], "forwarded", "{e3}");
    assert_eq!(e3["store"]["nonce"], "absent", "released: {e3}");
    assert_eq!(gate.send("fw", "e3", r#"{"e":3}"#).await.status, 200);
    let again = event_in(admin, "fw", "e3", "delivered", 2).await;
    assert_eq!(again["attempts"][1]["status"], 200, "{again}");
    assert_eq!(again["attempts"][1]["mode"], "forward", "{again}");
    assert_eq!(again["received_at"], e3["received_at"], "{again}");
    assert_eq!(again["duplicates"], 0, "{again}");

    // Three failures in a row.
    app.answer_with(503);
    for n in 1..=3 {
        assert_eq!(
            gate.send("fw", "e4", r#"{"e":4}"#).await.status,
            503,
            "attempt {n}"
        );
    }
    app.answer_with(200);
    if !store.keeps_dead_letters() {
        // Memory keeps no dead letters: released until the sender's retry.
        let e4 = event_in(admin, "fw", "e4", "released", 3).await;
        assert_eq!(e4["dead_letter_id"], Value::Null, "{e4}");
        assert_eq!(gate.send("fw", "e4", r#"{"e":4}"#).await.status, 200);
        event_in(admin, "fw", "e4", "delivered", 4).await;
        gate.stop().await;
        return;
    }
    let e4 = event_where(admin, "fw", "e4", "a dead letter after 3 attempts", |e| {
        e["state"] == "dead_letter" && attempts_of(e).len() == 3 && e["dead_letter_id"].is_string()
    })
    .await;
    for a in attempts_of(&e4) {
        assert_eq!(a["status"], 503, "{e4}");
    }
    let dead = e4["dead_letter_id"]
        .as_str()
        .expect("dead letter id")
        .to_owned();
    let now = &e4["store"]["dead_letters"];
    assert_eq!(now.as_array().map(Vec::len), Some(1), "{e4}");
    assert_eq!(now[0]["id"], dead.as_str(), "{e4}");

    let bearer = bearer();
    let replay = request(
        admin,
        "POST",
        "/dlq/replay",
        &[("authorization", bearer.as_str())],
        Bytes::from(json!({"id": dead}).to_string()),
    )
    .await;
    assert_eq!(
        replay.json()["results"][0]["result"],
        "delivered",
        "{}",
        replay.body
    );
    let e4 = event_in(admin, "fw", "e4", "delivered", 4).await;
    let last = &e4["attempts"][3];
    assert_eq!(last["mode"], "replay", "{e4}");
    assert_eq!(last["status"], 200, "{e4}");
    assert_eq!(e4["dead_letter_id"], Value::Null, "{e4}");
    assert_eq!(e4["store"]["nonce"], "done", "{e4}");
    assert_eq!(e4["store"]["dead_letters"], json!([]), "{e4}");
    gate.stop().await;
}

// ---------------------------------------------------------------------------
// Queue mode (not on memory, which refuses it)

#[tokio::test]
async fn queue_mode_states_on_sqlite() {
    queue_mode_states(Store::sqlite()).await;
}

#[tokio::test]
async fn queue_mode_states_on_redis() {
    queue_mode_states(Store::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_mode_states_on_a_cluster() {
    queue_mode_states(Store::cluster()).await;
}

/// Waiting, then delivered; a 4xx dropped with a dead letter that
/// `hookgate dlq replay` delivers; the schedule exhausted to a dead letter
/// that `POST /dlq/replay` delivers.
async fn queue_mode_states(store: Store) {
    let app = App::start().await;
    let toml = store.config(
        &app,
        "",
        &source(
            "q",
            "delivery = \"queue\"\nretry_schedule = [\"1s\", \"1s\"]\n",
        ),
    );
    let file = ConfigFile::write(&toml);
    let path = file.path.to_str().expect("utf-8 path");
    let gate = Gate::start(&toml).await;
    let admin = gate.admin;

    // Waiting right after the 200, then after a failed attempt with its
    // next attempt ahead; delivered once the app is back.
    app.answer_with(500);
    assert_eq!(gate.send("q", "q1", r#"{"q":1}"#).await.status, 200);
    let q1 = event_where(admin, "q", "q1", "waiting", |e| e["state"] == "waiting").await;
    assert!(is_time(&q1["received_at"]), "{q1}");
    assert!(is_time(&q1["next_attempt_at"]), "{q1}");
    let q1 = event_in(admin, "q", "q1", "waiting", 1).await;
    let tried = &q1["attempts"][0];
    assert_eq!(tried["mode"], "queue", "{q1}");
    assert_eq!(tried["status"], 500, "{q1}");
    assert!(is_time(&q1["next_attempt_at"]), "{q1}");
    assert!(
        q1["next_attempt_at"].as_str() > tried["at"].as_str(),
        "the next attempt is after the failed one: {q1}"
    );
    assert_eq!(q1["dead_letter_id"], Value::Null, "{q1}");
    app.answer_with(200);
    let q1 = event_in(admin, "q", "q1", "delivered", 2).await;
    assert_eq!(q1["attempts"][1]["mode"], "queue", "{q1}");
    assert_eq!(q1["attempts"][1]["status"], 200, "{q1}");
    assert_eq!(q1["next_attempt_at"], Value::Null, "{q1}");
    assert_eq!(q1["store"]["nonce"], "done", "{q1}");

    // A 4xx: dropped, kept as a dead letter.
    app.then_answer(&[422]);
    assert_eq!(gate.send("q", "q2", r#"{"q":2}"#).await.status, 200);
    let q2 = event_where(admin, "q", "q2", "dropped with a dead letter", |e| {
        e["state"] == "dropped" && e["dead_letter_id"].is_string()
    })
    .await;
    assert_eq!(attempts_of(&q2).len(), 1, "{q2}");
    assert_eq!(q2["attempts"][0]["status"], 422, "{q2}");
    assert_eq!(q2["attempts"][0]["mode"], "queue", "{q2}");
    let dropped = q2["dead_letter_id"].as_str().expect("id").to_owned();
    // Replayed from the command line while hookgate serves the store.
    let (code, out, err) = hookgate_cli(&["dlq", "--config", path, "replay", &dropped]).await;
    assert_eq!(code, 0, "{out}{err}");
    let q2 = event_in(admin, "q", "q2", "delivered", 2).await;
    assert_eq!(q2["attempts"][1]["mode"], "replay", "{q2}");
    assert_eq!(q2["attempts"][1]["status"], 200, "{q2}");
    assert_eq!(q2["dead_letter_id"], Value::Null, "{q2}");

    // The schedule exhausted: one attempt and two retries, then a dead letter.
    app.answer_with(503);
    assert_eq!(gate.send("q", "q3", r#"{"q":3}"#).await.status, 200);
    let q3 = event_where(admin, "q", "q3", "a dead letter", |e| {
        e["state"] == "dead_letter" && e["dead_letter_id"].is_string()
    })
    .await;
    assert_eq!(attempts_of(&q3).len(), 3, "{q3}");
    assert!(
        attempts_of(&q3)
            .iter()
            .all(|a| a["mode"] == "queue" && a["status"] == 503),
        "{q3}"
    );
    assert_eq!(q3["next_attempt_at"], Value::Null, "{q3}");
    let dead = q3["dead_letter_id"].as_str().expect("id").to_owned();
    app.answer_with(200);
    let bearer = bearer();
    let replay = request(
        admin,
        "POST",
        "/dlq/replay",
        &[("authorization", bearer.as_str())],
        Bytes::from(json!({"id": dead}).to_string()),
    )
    .await;
    assert_eq!(
        replay.json()["results"][0]["result"],
        "delivered",
        "{}",
        replay.body
    );
    let q3 = event_in(admin, "q", "q3", "delivered", 4).await;
    assert_eq!(q3["attempts"][3]["mode"], "replay", "{q3}");
    assert_eq!(q3["dead_letter_id"], Value::Null, "{q3}");
    gate.stop().await;
}

// ---------------------------------------------------------------------------
// Nothing recorded for what was not taken

#[tokio::test]
async fn rejected_and_filtered_events_leave_no_record_on_memory() {
    rejected_and_filtered_events_leave_no_record(Store::memory()).await;
}

#[tokio::test]
async fn rejected_and_filtered_events_leave_no_record_on_sqlite() {
    rejected_and_filtered_events_leave_no_record(Store::sqlite()).await;
}

#[tokio::test]
async fn rejected_and_filtered_events_leave_no_record_on_redis() {
    rejected_and_filtered_events_leave_no_record(Store::redis()).await;
}

async fn rejected_and_filtered_events_leave_no_record(store: Store) {
    let app = App::start().await;
    let sources = format!(
        "{}{}",
        source("fw", ""),
        source("only", "event_types = [\"push\"]\n")
    );
    let gate = Gate::start(&store.config(&app, "", &sources)).await;
    let admin = gate.admin;

    // A bad signature: the headers of one body, another body sent.
    let headers = signed_headers("bad1", br#"{"signed":true}"#);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let bad = request(
        gate.public,
        "POST",
        "/hooks/fw",
        &headers,
        Bytes::from_static(br#"{"signed":false}"#),
    )
    .await;
    assert_eq!(bad.json(), json!({"error": "invalid_signature"}));
    // A type the source does not take.
    let ignored = gate.send("only", "skip1", r#"{"skip":1}"#).await;
    assert_eq!(ignored.status, 200, "{}", ignored.body);
    assert_eq!(ignored.json(), json!({"ignored": true}));
    // One that is taken, on each source: its record is there once every
    // earlier write would be.
    assert_eq!(
        send_typed(gate.public, "only", "ok1", r#"{"ok":1}"#, "push")
            .await
            .status,
        200
    );
    assert_eq!(gate.send("fw", "ok2", r#"{"ok":2}"#).await.status, 200);
    event_in(admin, "only", "ok1", "delivered", 1).await;
    event_in(admin, "fw", "ok2", "delivered", 1).await;

    for (s, id) in [("fw", "bad1"), ("only", "skip1")] {
        let answer = show(admin, s, id).await;
        assert_eq!(answer.status, 404, "{s}/{id}: {}", answer.body);
        assert_eq!(answer.json(), json!({"error": "unknown_event"}));
    }
    let all = page(admin, "").await;
    assert_eq!(
        keys(&all),
        pairs(&[("fw", "ok2"), ("only", "ok1")]),
        "{all}"
    );
    gate.stop().await;
}

// ---------------------------------------------------------------------------
// Listing

#[tokio::test]
async fn listing_filters_and_pages_on_memory() {
    listing_filters_and_pages(Store::memory()).await;
}

#[tokio::test]
async fn listing_filters_and_pages_on_sqlite() {
    listing_filters_and_pages(Store::sqlite()).await;
}

#[tokio::test]
async fn listing_filters_and_pages_on_redis() {
    listing_filters_and_pages(Store::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_filters_and_pages_on_a_cluster() {
    listing_filters_and_pages(Store::cluster()).await;
}

/// Seven events on two sources, of two types, one released: filters,
/// newest first, pages that give each event once, refused queries.
async fn listing_filters_and_pages(store: Store) {
    let app = App::start().await;
    let sources = format!("{}{}", source("a", ""), source("b", ""));
    let gate = Gate::start(&store.config(&app, "", &sources)).await;
    let admin = gate.admin;

    // Sent one after another: a later one is never received earlier, and
    // ties in one millisecond are listed by source and id, newest first too.
    let sent = [
        ("a", "e0", "push"),
        ("a", "e1", "push"),
        ("a", "e2", "push"),
        ("a", "e3", "push"),
        ("b", "e4", "issues"),
        ("b", "e5", "issues"),
        ("b", "e6", "issues"),
    ];
    for (s, id, t) in sent {
        if id == "e5" {
            app.then_answer(&[500]);
        }
        let answer = send_typed(gate.public, s, id, &format!("{{\"id\":\"{id}\"}}"), t).await;
        let want = if id == "e5" { 500 } else { 200 };
        assert_eq!(answer.status, want, "{id}: {}", answer.body);
    }
    for (s, id, _) in sent {
        let state = if id == "e5" { "released" } else { "delivered" };
        event_in(admin, s, id, state, 1).await;
    }

    let newest_first: Vec<(String, String)> = sent
        .iter()
        .rev()
        .map(|(s, id, _)| ((*s).to_owned(), (*id).to_owned()))
        .collect();
    let all = page(admin, "").await;
    assert_eq!(keys(&all), newest_first, "{all}");
    assert_eq!(all["next"], Value::Null, "{all}");
    let times: Vec<&str> = all["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["received_at"].as_str().expect("received_at"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    // A listed event has the fields of a shown one, without `store`.
    let first = &all["events"][0];
    for field in [
        "source",
        "event_id",
        "event_type",
        "state",
        "received_at",
        "duplicates",
        "attempts",
        "next_attempt_at",
        "dead_letter_id",
    ] {
        assert!(first.get(field).is_some(), "{field} missing: {first}");
    }

    // Filters, alone and together.
    let a = page(admin, "?source=a").await;
    assert_eq!(
        keys(&a),
        pairs(&[("a", "e3"), ("a", "e2"), ("a", "e1"), ("a", "e0")]),
        "{a}"
    );
    let released = page(admin, "?state=released").await;
    assert_eq!(keys(&released), pairs(&[("b", "e5")]), "{released}");
    assert_eq!(released["events"][0]["state"], "released");
    let issues = page(admin, "?type=issues").await;
    assert_eq!(
        keys(&issues),
        pairs(&[("b", "e6"), ("b", "e5"), ("b", "e4")]),
        "{issues}"
    );
    let both = page(admin, "?source=b&state=delivered").await;
    assert_eq!(keys(&both), pairs(&[("b", "e6"), ("b", "e4")]), "{both}");
    let none = page(admin, "?source=a&type=issues").await;
    assert_eq!(none, json!({"events": [], "next": null}));
    let unknown = page(admin, "?source=nosuch").await;
    assert_eq!(unknown, json!({"events": [], "next": null}));

    // Pages of two: every event exactly once, in order, then no `next`.
    for (query, want) in [
        ("", newest_first.clone()),
        ("&type=push", keys(&a)),
        ("&state=delivered", {
            let mut d = newest_first.clone();
            d.retain(|(_, id)| id != "e5");
            d
        }),
    ] {
        let mut seen = Vec::new();
        let mut before: Option<String> = None;
        for round in 0.. {
            assert!(round < 10, "paging does not end: {seen:?}");
            let cursor = before
                .as_ref()
                .map(|c| format!("&before={c}"))
                .unwrap_or_default();
            let p = page(admin, &format!("?limit=2{query}{cursor}")).await;
            let got = keys(&p);
            assert!(got.len() <= 2, "{p}");
            seen.extend(got);
            match p["next"].as_str() {
                Some(next) => before = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen, want, "pages of {query:?}");
    }
    let one = page(admin, "?limit=1").await;
    assert_eq!(keys(&one), newest_first[..1].to_vec(), "{one}");
    assert!(one["next"].is_string(), "{one}");
    let max = page(admin, "?limit=1000").await;
    assert_eq!(keys(&max), newest_first, "{max}");

    // Refused queries.
    for query in [
        "?limit=0",
        "?limit=1001",
        "?limit=x",
        "?state=nope",
        "?before=garbage",
    ] {
        let answer = admin_get(admin, &format!("/events{query}")).await;
        assert_eq!(answer.status, 400, "{query}: {}", answer.body);
    }
    // The token is required.
    for path in ["/events", "/events/a/e0"] {
        let none = request(admin, "GET", path, &[], Bytes::new()).await;
        assert_eq!(none.status, 401, "{path}: {}", none.body);
        let wrong = request(
            admin,
            "GET",
            path,
            &[("authorization", "Bearer wrong")],
            Bytes::new(),
        )
        .await;
        assert_eq!(wrong.status, 401, "{path}: {}", wrong.body);
    }
    // Unknown events.
    for path in ["/events/a/nope", "/events/nosuch/e0", "/events/b/e0"] {
        let answer = admin_get(admin, path).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        assert_eq!(answer.json(), json!({"error": "unknown_event"}), "{path}");
    }
    // Shown: the record and the store's word on it.
    let e0 = show(admin, "a", "e0").await.json();
    assert_eq!(e0["event_type"], "push");
    assert_eq!(e0["store"]["nonce"], "done", "{e0}");
    assert!(is_time(&e0["store"]["nonce_expires_at"]), "{e0}");
    let e5 = show(admin, "b", "e5").await.json();
    assert_eq!(e5["store"]["nonce"], "absent", "{e5}");
    assert_eq!(e5["store"]["nonce_expires_at"], Value::Null, "{e5}");
    gate.stop().await;
}

// ---------------------------------------------------------------------------
// Bounded, and off

#[tokio::test]
async fn the_trail_keeps_the_newest_events_on_memory() {
    the_trail_keeps_the_newest_events(Store::memory()).await;
}

#[tokio::test]
async fn the_trail_keeps_the_newest_events_on_sqlite() {
    the_trail_keeps_the_newest_events(Store::sqlite()).await;
}

#[tokio::test]
async fn the_trail_keeps_the_newest_events_on_redis() {
    the_trail_keeps_the_newest_events(Store::redis()).await;
}

/// `trail_max_events = 5` and eight events: the newest five are kept. At
/// once on memory and Redis (the write trims); on SQLite the purge trims,
/// every 10 s, so the test waits for it, at most 30 s.
async fn the_trail_keeps_the_newest_events(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "trail_max_events = 5\n", &source("fw", ""))).await;
    let admin = gate.admin;
    for n in 0..8 {
        let id = format!("b{n}");
        assert_eq!(
            gate.send("fw", &id, &format!("{{\"b\":{n}}}")).await.status,
            200
        );
    }
    let newest: Vec<(String, String)> = (3..8)
        .rev()
        .map(|n| ("fw".to_owned(), format!("b{n}")))
        .collect();
    // Every store trims as it writes (sqlite between two batches), well
    // within the ten seconds between two purge passes.
    let kept = until("the newest five events", Duration::from_secs(5), || async {
        let p = page(admin, "").await;
        if keys(&p) == newest {
            Ok(p)
        } else {
            Err(p.to_string())
        }
    })
    .await;
    for event in kept["events"].as_array().expect("events") {
        assert_eq!(event["state"], "delivered", "{event}");
    }
    for n in 0..3 {
        let answer = show(admin, "fw", &format!("b{n}")).await;
        assert_eq!(answer.status, 404, "b{n}: {}", answer.body);
    }
    if let Store::Kept(backend @ Backend::Sqlite(_)) = &store {
        assert_eq!(trail_rows(backend), 5);
    }
    gate.stop().await;
}

#[tokio::test]
async fn the_trail_keeps_its_bound_over_many_events_on_memory() {
    the_trail_keeps_its_bound_over_many_events(Store::memory()).await;
}

#[tokio::test]
async fn the_trail_keeps_its_bound_over_many_events_on_sqlite() {
    the_trail_keeps_its_bound_over_many_events(Store::sqlite()).await;
}

#[tokio::test]
async fn the_trail_keeps_its_bound_over_many_events_on_redis() {
    the_trail_keeps_its_bound_over_many_events(Store::redis()).await;
}

/// `trail_max_events = 40` and 100 events: the newest 40 always listed
/// first, newest first; memory holds exactly 40. SQLite and Redis keep
/// them in generations (14 of 3 events beside the one written now, 2 at
/// most; a commit answered behind its response can land in a generation
/// just filled, one more): 48 at most, whole generations gone, Redis's
/// keys bounded.
async fn the_trail_keeps_its_bound_over_many_events(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "trail_max_events = 40\n", &source("fw", ""))).await;
    let admin = gate.admin;
    for n in 0..100 {
        let id = format!("k{n:03}");
        let body = format!("{{\"k\":{n}}}");
        assert_eq!(gate.send("fw", &id, &body).await.status, 200, "{id}");
    }
    let newest: Vec<(String, String)> = (60..100)
        .rev()
        .map(|n| ("fw".to_owned(), format!("k{n:03}")))
        .collect();
    let generations = matches!(&store, Store::Kept(_));
    let listed = until("the newest 40 events first", WAIT, || async {
        let p = page(admin, "?limit=1000").await;
        let listed = keys(&p);
        let bounded = if generations {
            listed.len() <= 14 * 3 + 2 + 4
        } else {
            listed.len() == 40
        };
        if listed.get(..40) == Some(&newest[..]) && bounded {
            Ok(listed)
        } else {
            Err(p.to_string())
        }
    })
    .await;
    for (_, id) in &listed[40..] {
        assert!(
            id.as_str() >= "k052",
            "only the last generation over: {listed:?}"
        );
    }
    assert_eq!(show(admin, "fw", "k000").await.status, 404);
    if let Store::Kept(Backend::Redis(redis)) = &store {
        let mut conn = redis.client();
        let mut trail: Vec<String> = redis::cmd("KEYS")
            .arg("hg:{trail}*")
            .query(&mut conn)
            .expect("KEYS");
        trail.sort();
        // 14 full generations and the one written now, their index and
        // facts each, and the two counters.
        assert!(trail.len() <= 2 * 15 + 2, "{trail:?}");
        assert!(
            !trail.contains(&"hg:{trail}:facts.0".to_owned()),
            "{trail:?}"
        );
        let current: i64 = redis::cmd("GET")
            .arg("hg:{trail}:generation")
            .query(&mut conn)
            .expect("GET");
        assert!(
            (100 / 4..=100 / 3).contains(&current),
            "generations of 3 events, one more now and then: {current}"
        );
    }
    gate.stop().await;
}

#[tokio::test]
async fn an_event_retried_after_newer_ones_is_listed_once_on_memory() {
    an_event_retried_after_newer_ones_is_listed_once(Store::memory()).await;
}

#[tokio::test]
async fn an_event_retried_after_newer_ones_is_listed_once_on_sqlite() {
    an_event_retried_after_newer_ones_is_listed_once(Store::sqlite()).await;
}

#[tokio::test]
async fn an_event_retried_after_newer_ones_is_listed_once_on_redis() {
    an_event_retried_after_newer_ones_is_listed_once(Store::redis()).await;
}

/// An event the app failed (`r1`), twelve newer ones, then the sender's
/// retry that gets through; and one event (`a1`) copied after twelve
/// newer ones. On Redis (generations of 3 events) `r1`'s second record
/// starts in a newer generation than its first, and `a1`'s duplicate moves
/// its record to the generation written now. Each is listed once, with its
/// whole story.
async fn an_event_retried_after_newer_ones_is_listed_once(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "trail_max_events = 40\n", &source("fw", ""))).await;
    let admin = gate.admin;
    assert_eq!(gate.send("fw", "a1", r#"{"a":1}"#).await.status, 200);
    app.then_answer(&[500]);
    assert_eq!(gate.send("fw", "r1", r#"{"r":1}"#).await.status, 500);
    event_in(admin, "fw", "r1", "released", 1).await;
    for n in 0..12 {
        let id = format!("m{n:02}");
        let body = format!("{{\"m\":{n}}}");
        assert_eq!(gate.send("fw", &id, &body).await.status, 200, "{id}");
    }
    assert_eq!(gate.send("fw", "r1", r#"{"r":1}"#).await.status, 200);
    let copy = gate.send("fw", "a1", r#"{"a":1}"#).await;
    assert_eq!(copy.status, 200, "{}", copy.body);
    assert!(copy.body.contains("duplicate"), "{}", copy.body);

    let r1 = event_in(admin, "fw", "r1", "delivered", 2).await;
    let outcomes: Vec<Value> = attempts_of(&r1)
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(outcomes, [json!(500), json!(200)], "{r1}");
    event_where(admin, "fw", "a1", "one duplicate", |e| {
        e["duplicates"] == 1 && e["state"] == "delivered" && attempts_of(e).len() == 1
    })
    .await;
    let listed = until("each event listed once", WAIT, || async {
        let p = page(admin, "?limit=1000").await;
        let listed = keys(&p);
        let once = |id: &str| listed.iter().filter(|(_, i)| i == id).count() == 1;
        if listed.len() == 14 && once("r1") && once("a1") {
            Ok(p)
        } else {
            Err(p.to_string())
        }
    })
    .await;
    for event in listed["events"].as_array().expect("events") {
        if event["event_id"] == "a1" {
            assert_eq!(event["duplicates"], 1, "{event}");
        }
        if event["event_id"] == "r1" {
            assert_eq!(event["state"], "delivered", "{event}");
            assert_eq!(attempts_of(event).len(), 2, "{event}");
        }
    }
    // Pages of two walk the same fourteen events, each once.
    let mut walked = Vec::new();
    let mut query = "?limit=2".to_owned();
    for _ in 0..20 {
        let p = page(admin, &query).await;
        walked.extend(keys(&p));
        match p["next"].as_str() {
            Some(next) => query = format!("?limit=2&before={next}"),
            None => break,
        }
    }
    assert_eq!(walked, keys(&listed), "paged as listed");
    if let Store::Kept(Backend::Redis(redis)) = &store {
        let mut conn = redis.client();
        let hashes: Vec<String> = redis::cmd("KEYS")
            .arg("hg:{trail}:facts.*")
            .query(&mut conn)
            .expect("KEYS");
        let mut holding = Vec::new();
        for hash in &hashes {
            let held: bool = redis::cmd("HEXISTS")
                .arg(hash)
                .arg("fw:a1")
                .query(&mut conn)
                .expect("HEXISTS");
            if held {
                holding.push(hash.clone());
            }
        }
        assert_eq!(
            holding.len(),
            1,
            "a1's record in one generation: {holding:?}"
        );
        assert_ne!(holding[0], "hg:{trail}:facts.0", "moved to a newer one");
    }
    if let Store::Kept(backend @ Backend::Sqlite(_)) = &store {
        let path = backend.db_path().expect("a sqlite path");
        let conn = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open read-only");
        let generations = |id: &str| -> Vec<i64> {
            conn.prepare("SELECT generation FROM events WHERE event_id = ?1 ORDER BY generation")
                .expect("prepare")
                .query_map([id], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        };
        let a1 = generations("a1");
        assert!(
            a1.len() == 1 && a1[0] > 0,
            "a1 moved to a newer generation: {a1:?}"
        );
        let r1 = generations("r1");
        assert!(
            r1.len() == 2 && r1[0] < r1[1],
            "r1 has a row in two generations: {r1:?}"
        );
    }
    gate.stop().await;
}

#[tokio::test]
async fn trail_max_events_zero_keeps_no_trail_on_memory() {
    trail_max_events_zero_keeps_no_trail(Store::memory()).await;
}

#[tokio::test]
async fn trail_max_events_zero_keeps_no_trail_on_sqlite() {
    trail_max_events_zero_keeps_no_trail(Store::sqlite()).await;
}

#[tokio::test]
async fn trail_max_events_zero_keeps_no_trail_on_redis() {
    trail_max_events_zero_keeps_no_trail(Store::redis()).await;
}

async fn trail_max_events_zero_keeps_no_trail(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "trail_max_events = 0\n", &source("fw", ""))).await;
    let admin = gate.admin;
    assert_eq!(gate.send("fw", "z1", r#"{"z":1}"#).await.status, 200);
    app.then_answer(&[500]);
    assert_eq!(gate.send("fw", "z2", r#"{"z":2}"#).await.status, 500);
    assert_eq!(gate.send("fw", "z1", r#"{"z":1}"#).await.status, 200);
    // Any write would have landed by now (they go out beside the answer).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(page(admin, "").await, json!({"events": [], "next": null}));
    for id in ["z1", "z2"] {
        let answer = show(admin, "fw", id).await;
        assert_eq!(answer.status, 404, "{id}: {}", answer.body);
        assert_eq!(answer.json(), json!({"error": "unknown_event"}));
    }
    match &store {
        Store::Kept(Backend::Redis(redis)) => {
            let mut conn = redis.client();
            let found: Vec<String> = redis::cmd("KEYS")
                .arg("hg:{trail}*")
                .query(&mut conn)
                .expect("KEYS");
            assert!(found.is_empty(), "{found:?}");
        }
        Store::Kept(backend @ Backend::Sqlite(_)) => assert_eq!(trail_rows(backend), 0),
        _ => {}
    }
    gate.stop().await;
}

/// Events earlier versions wrote on Redis (one index and one facts hash;
/// before that, a list per event) are still found by id and listed, until
/// the newest generations hold the bound: then they go, lists and all.
#[tokio::test]
async fn events_earlier_versions_wrote_on_redis_are_shown_then_removed() {
    use hookgate::trail::{Attempt, Fact, Mode, State};
    let backend = Backend::redis();
    let Backend::Redis(redis) = &backend else {
        unreachable!("a Redis backend")
    };
    let at = hookgate::time::now_ms() - 60_000;
    let facts = [
        Fact::Received {
            at,
            replica: "old-pod".into(),
            event_type: Some("invoice.paid".into()),
            signed_at: None,
            state: State::InFlight,
            nonce_id: None,
        },
        Fact::Attempted {
            attempt: Attempt {
                at: at + 5,
                replica: "old-pod".into(),
                mode: Mode::Forward,
                outcome: "forwarded".into(),
                status: Some(200),
                duration_ms: 5,
                waited: None,
                trace_id: None,
            },
            state: State::Delivered,
            next_attempt_at: None,
            dead_letter_id: None,
        },
    ];
    let mut conn = redis.client();
    let mut push = redis::cmd("RPUSH");
    push.arg("hg:{trail}:fw:old1");
    for fact in &facts {
        push.arg(serde_json::to_string(fact).expect("json"));
    }
    let _: i64 = push.query(&mut conn).expect("RPUSH");
    let _: i64 = redis::cmd("ZADD")
        .arg("hg:{trail}")
        .arg(at)
        .arg("fw:old1")
        .arg(at + 1)
        .arg("fw:old2")
        .query(&mut conn)
        .expect("ZADD");
    let lines: String = facts
        .iter()
        .map(|f| serde_json::to_string(f).expect("json") + "\n")
        .collect();
    let _: i64 = redis::cmd("HSET")
        .arg("hg:{trail}:facts")
        .arg("fw:old2")
        .arg(lines)
        .query(&mut conn)
        .expect("HSET");

    // Written an hour and more after the upgrade: the mixed period, when
    // this release writes beside an earlier one in its layout, is over.
    let _: () = redis::cmd("SET")
        .arg("hg:{trail}:upgraded_at")
        .arg(hookgate::time::now_ms() - hookgate::store::redis::trail::GRACE_MS - 1)
        .query(&mut conn)
        .expect("SET");
    let store = Store::Kept(backend);
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "trail_max_events = 2\n", &source("fw", ""))).await;
    let admin = gate.admin;
    for id in ["old1", "old2"] {
        let old = show(admin, "fw", id).await;
        assert_eq!(old.status, 200, "{id}: {}", old.body);
        let old = old.json();
        assert_eq!(old["state"], "delivered", "{old}");
        assert_eq!(old["event_type"], "invoice.paid", "{old}");
        assert_eq!(attempts_of(&old)[0]["replica"], "old-pod", "{old}");
    }

    // A bound of two: generations of one event, two of them kept. The
    // first new event leaves the earlier keys read beside it; the second
    // fills the second generation, and the earlier keys go.
    for (id, listed) in [
        ("new1", vec![("fw", "new1"), ("fw", "old2"), ("fw", "old1")]),
        ("new2", vec![("fw", "new2"), ("fw", "new1")]),
    ] {
        let body = format!("{{\"n\":\"{id}\"}}");
        assert_eq!(gate.send("fw", id, &body).await.status, 200);
        until(&format!("the trail after {id}"), WAIT, || async {
            let p = page(admin, "").await;
            if keys(&p) == pairs(&listed) {
                Ok(p)
            } else {
                Err(p.to_string())
            }
        })
        .await;
    }
    for id in ["old1", "old2"] {
        assert_eq!(show(admin, "fw", id).await.status, 404, "{id}");
    }
    let Store::Kept(Backend::Redis(redis)) = &store else {
        unreachable!("a Redis backend")
    };
    let mut conn = redis.client();
    until("the earlier keys removed", WAIT, || {
        let found: Vec<String> = redis::cmd("KEYS")
            .arg("hg:{trail}*")
            .query(&mut conn)
            .expect("KEYS");
        let earlier: Vec<String> = found
            .into_iter()
            .filter(|k| {
                ["hg:{trail}", "hg:{trail}:facts", "hg:{trail}:fw:old1"].contains(&k.as_str())
            })
            .collect();
        async move {
            if earlier.is_empty() {
                Ok(())
            } else {
                Err(format!("{earlier:?}"))
            }
        }
    })
    .await;
    gate.stop().await;
}

// ---------------------------------------------------------------------------
// `hookgate events` beside `hookgate run`

/// `hookgate events list|show` on the SQLite file a running `hookgate run`
/// (the real binary) serves.
#[tokio::test]
async fn events_list_and_show_read_the_sqlite_file_hookgate_run_serves() {
    let store = Store::sqlite();
    let app = App::start().await;
    let gate = Hookgate::start(&store.config(&app, "", &source("fw", ""))).await;
    let path = gate.config_path().to_str().expect("utf-8 path").to_owned();
    let public = gate.public_addr();

    assert_eq!(
        send_signed(public, "fw", "c1", r#"{"c":1}"#).await.status,
        200
    );
    app.then_answer(&[500]);
    assert_eq!(
        send_signed(public, "fw", "c2", r#"{"c":2}"#).await.status,
        500
    );
    assert_eq!(
        send_signed(public, "fw", "c2", r#"{"c":2}"#).await.status,
        200
    );
    assert_eq!(
        send_signed(public, "fw", "c1", r#"{"c":1}"#).await.status,
        200
    );

    let list = until("both events listed", WAIT, || async {
        let (code, out, err) = hookgate_cli(&["events", "--config", &path, "list"]).await;
        let rows: Vec<&str> = out.lines().skip(1).collect();
        let c2_done = rows
            .first()
            .is_some_and(|r| r.contains(" c2 ") && r.contains("delivered"));
        if code == 0 && rows.len() == 2 && c2_done && rows[1].contains(" c1 ") {
            Ok(out)
        } else {
            Err(format!("{code}\n{out}{err}"))
        }
    })
    .await;
    let mut lines = list.lines();
    let header = lines.next().expect("header");
    for column in [
        "RECEIVED",
        "SOURCE",
        "EVENT ID",
        "TYPE",
        "STATE",
        "ATTEMPTS",
        "DUPLICATES",
    ] {
        assert!(header.contains(column), "{column} missing: {list}");
    }
    let c2: Vec<&str> = lines.next().expect("c2").split_whitespace().collect();
    assert_eq!(
        c2[1..],
        ["fw", "c2", "thing.updated", "delivered", "2", "0"],
        "{list}"
    );
    let c1: Vec<&str> = lines.next().expect("c1").split_whitespace().collect();
    assert_eq!(
        c1[1..5],
        ["fw", "c1", "thing.updated", "delivered"],
        "{list}"
    );

    let (code, out, err) =
        hookgate_cli(&["events", "--config", &path, "list", "--state", "released"]).await;
    assert_eq!((code, out.trim()), (0, "no events in the trail"), "{err}");
    let (code, _, err) =
        hookgate_cli(&["events", "--config", &path, "list", "--state", "nope"]).await;
    assert_eq!(code, 2, "{err}");

    // c1's duplicate may land a moment after its row.
    let shown = until("c1 shown with its duplicate", WAIT, || async {
        let (code, out, err) =
            hookgate_cli(&["events", "--config", &path, "show", "fw", "c1"]).await;
        if code == 0 && out.contains("duplicates:   1") {
            Ok(out)
        } else {
            Err(format!("{code}\n{out}{err}"))
        }
    })
    .await;
    assert!(shown.contains("nonce now:    done until 20"), "{shown}");

    let (code, out, err) = hookgate_cli(&["events", "--config", &path, "show", "fw", "c2"]).await;
    assert_eq!(code, 0, "{err}");
    for needle in [
        "source:       fw\n",
        "event id:     c2\n",
        "type:         thing.updated\n",
        "state:        delivered\n",
        "duplicates:   0\n",
        "nonce now:    done until ",
        "AT",
        "REPLICA",
        "MODE",
        "OUTCOME",
        "STATUS",
        "DURATION",
    ] {
        assert!(out.contains(needle), "{needle:?} missing from\n{out}");
    }
    let attempts: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("AT"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(attempts.len(), 2, "{out}");
    assert_eq!(attempts[0][2..5], ["forward", "forwarded", "500"], "{out}");
    assert_eq!(attempts[1][2..5], ["forward", "forwarded", "200"], "{out}");

    let (code, _, err) = hookgate_cli(&["events", "--config", &path, "show", "fw", "nope"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no event"), "{err}");
    drop(gate);
}
