//! An attacker with one captured delivery (DESIGN §7a, "bounded per
//! event"). GitHub signs no timestamp, so the same signed bytes can be
//! replayed forever: every copy must be answered `200 duplicate`, reach the
//! app never, and leave the event's record and the store the size they
//! were. And an event the app keeps failing, retried by its sender again and
//! again, keeps its first ten and last forty attempts, no more.
//!
//! The copies are sent by eight workers in bounded rounds; each answer is
//! checked byte for byte.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use crate::delivery_kit::{App, Backend, Gate, request, signed_headers, source};
use crate::trail::{Store, attempts_of, event_in, event_where, show};

/// The one delivery the attacker captured.
const CAPTURED: &str = r#"{"action":"completed","payment":{"amount":1000}}"#;
const ID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

/// Sends `copies` copies of the captured request from eight workers and
/// asserts every answer is exactly `200 {"duplicate":true,...}`.
async fn replay(gate: &Gate, copies: usize) {
    let headers: Arc<Vec<(String, String)>> = Arc::new(signed_headers(ID, CAPTURED.as_bytes()));
    let want = json!({"duplicate": true, "event_id": ID}).to_string();
    let public = gate.public;
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let headers = Arc::clone(&headers);
            let want = want.clone();
            tokio::spawn(async move {
                let pairs: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                for n in (w..copies).step_by(8) {
                    let answer = request(
                        public,
                        "POST",
                        "/hooks/gh",
                        &pairs,
                        Bytes::from_static(CAPTURED.as_bytes()),
                    )
                    .await;
                    assert_eq!(
                        (answer.status, answer.body.as_str()),
                        (200, want.as_str()),
                        "copy {n}"
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("a replaying worker");
    }
}

/// What the store holds for the captured event, in bytes: the record as
/// `GET /events` shows it on memory, the stored facts on SQLite and Redis.
async fn held_bytes(store: &Store, gate: &Gate) -> usize {
    match store {
        Store::Kept(backend @ Backend::Sqlite(_)) => {
            let path = backend.db_path().expect("a sqlite path");
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("open read-only");
            let n: i64 = conn
                .query_row(
                    "SELECT length(facts) FROM events WHERE source = 'gh' AND event_id = ?1",
                    [ID],
                    |r| r.get(0),
                )
                .expect("the event's row");
            usize::try_from(n).expect("a length")
        }
        Store::Kept(Backend::Redis(redis)) => {
            let mut conn = redis.client();
            redis::cmd("HSTRLEN")
                .arg("hg:{trail}:facts.0")
                .arg(format!("gh:{ID}"))
                .query(&mut conn)
                .expect("HSTRLEN")
        }
        _ => show(gate.admin, "gh", ID).await.body.len(),
    }
}

/// Pages of the SQLite file, or keys and used memory of the Redis.
fn store_size(store: &Store) -> (i64, i64) {
    match store {
        Store::Kept(backend @ Backend::Sqlite(_)) => {
            let path = backend.db_path().expect("a sqlite path");
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("open read-only");
            let pages: i64 = conn
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .expect("page_count");
            let rows: i64 = conn
                .query_row("SELECT count(*) FROM nonces", [], |r| r.get(0))
                .expect("nonces");
            (pages, rows)
        }
        Store::Kept(Backend::Redis(redis)) => {
            let mut conn = redis.client();
            let keys: i64 = redis::cmd("DBSIZE").query(&mut conn).expect("DBSIZE");
            let fields: i64 = redis::cmd("HLEN")
                .arg("hg:{trail}:facts.0")
                .query(&mut conn)
                .expect("HLEN");
            (keys, fields)
        }
        _ => (0, 0),
    }
}

async fn duplicates_reach(gate: &Gate, n: u64) -> serde_json::Value {
    event_where(gate.admin, "gh", ID, &format!("{n} duplicates"), |e| {
        e["duplicates"] == n
    })
    .await
}

#[tokio::test]
async fn a_replay_flood_of_one_captured_delivery_leaves_memory_flat() {
    replay_flood(Store::memory()).await;
}

#[tokio::test]
async fn a_replay_flood_of_one_captured_delivery_leaves_sqlite_flat() {
    replay_flood(Store::sqlite()).await;
}

#[tokio::test]
async fn a_replay_flood_of_one_captured_delivery_leaves_redis_flat() {
    replay_flood(Store::redis()).await;
}

/// The captured delivery is forwarded once; 500 copies, then 2,500 more,
/// are each answered `200 duplicate`; the record counts them all, with the
/// times of the first and the last, and neither it nor the store grew with
/// the second round (a record stays a few KiB).
async fn replay_flood(store: Store) {
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "", &source("gh", ""))).await;
    let sent = crate::delivery_kit::send_signed(gate.public, "gh", ID, CAPTURED).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    event_in(gate.admin, "gh", ID, "delivered", 1).await;

    replay(&gate, 500).await;
    let first = duplicates_reach(&gate, 500).await;
    let (record_then, store_then) = (held_bytes(&store, &gate).await, store_size(&store));

    replay(&gate, 2_500).await;
    let last = duplicates_reach(&gate, 3_000).await;
    let (record_now, store_now) = (held_bytes(&store, &gate).await, store_size(&store));

    assert!(
        record_now < 4096,
        "the record holds {record_now} bytes after 3,000 copies"
    );
    // A flush of the tally adds one short line until the text is folded.
    assert!(
        record_now <= record_then + 1024,
        "the record grew from {record_then} to {record_now} bytes"
    );
    match &store {
        Store::Kept(Backend::Sqlite(_)) => assert!(
            store_now.0 <= store_then.0 + 2 && store_now.1 == store_then.1,
            "the file grew: pages and nonces {store_then:?} -> {store_now:?}"
        ),
        _ => assert_eq!(store_now, store_then, "the store grew"),
    }
    assert_eq!(attempts_of(&last).len(), 1, "{last}");
    assert_eq!(last["state"], "delivered");
    assert!(first["first_duplicate_at"].is_string(), "{first}");
    assert_eq!(last["first_duplicate_at"], first["first_duplicate_at"]);
    assert!(last["last_duplicate_at"].as_str() >= first["last_duplicate_at"].as_str());
    assert_eq!(app.seen_event(ID).len(), 1, "the app saw the event once");
    gate.stop().await;
}

#[tokio::test]
async fn an_event_failing_again_and_again_keeps_fifty_attempts_on_memory() {
    failing_again_and_again(Store::memory()).await;
}

#[tokio::test]
async fn an_event_failing_again_and_again_keeps_fifty_attempts_on_sqlite() {
    failing_again_and_again(Store::sqlite()).await;
}

#[tokio::test]
async fn an_event_failing_again_and_again_keeps_fifty_attempts_on_redis() {
    failing_again_and_again(Store::redis()).await;
}

/// The app fails every delivery; the sender (or an attacker with the
/// captured bytes) sends it 70 times, each forwarded afresh: the record keeps
/// the first 10 and the last 40 attempts and counts the 20 between.
async fn failing_again_and_again(store: Store) {
    let app = App::start().await;
    app.answer_with(500);
    let gate = Gate::start(&store.config(&app, "", &source("gh", ""))).await;
    for n in 0..70 {
        let answer = crate::delivery_kit::send_signed(gate.public, "gh", ID, CAPTURED).await;
        assert_eq!(answer.status, 500, "copy {n}: {}", answer.body);
    }
    let event = event_where(gate.admin, "gh", ID, "70 attempts kept as 50", |e| {
        attempts_of(e).len() == 50 && e["attempts_omitted"] == 20
    })
    .await;
    let shown = show(gate.admin, "gh", ID).await;
    assert!(shown.body.len() < 16 * 1024, "{} bytes", shown.body.len());
    let held = held_bytes(&store, &gate).await;
    assert!(held < 16 * 1024 + 1024, "{held} bytes held");
    for a in attempts_of(&event) {
        assert_eq!(a["status"], 500, "{event}");
    }
    assert_eq!(app.seen_event(ID).len(), 70);
    gate.stop().await;
}

/// Copies counted in the last second before a SIGTERM are written by the
/// drain, not lost with the process.
#[tokio::test]
async fn duplicates_counted_just_before_a_shutdown_are_written_on_sqlite() {
    let store = Store::sqlite();
    let app = App::start().await;
    let gate = Gate::start(&store.config(&app, "", &source("gh", ""))).await;
    let sent = crate::delivery_kit::send_signed(gate.public, "gh", ID, CAPTURED).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    event_in(gate.admin, "gh", ID, "delivered", 1).await;
    replay(&gate, 3).await;
    gate.stop().await;
    let Store::Kept(backend) = &store else {
        unreachable!("a sqlite store")
    };
    let path = backend.db_path().expect("a sqlite path");
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open read-only");
    let facts: String = conn
        .query_row(
            "SELECT facts FROM events WHERE source = 'gh' AND event_id = ?1",
            [ID],
            |r| r.get(0),
        )
        .expect("the event's row");
    let counted: u64 = facts
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|f| f["fact"] == "duplicates")
        .filter_map(|f| f["count"].as_u64())
        .sum();
    assert_eq!(counted, 3, "{facts}");
}
