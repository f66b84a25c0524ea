//! Dead letters on each store that keeps them (a real Redis and a SQLite
//! file): written when the app never recovers (queue) or fails one event
//! three times in a row (forward), shown by `hookgate dlq list/show`, and
//! delivered by `replay` once the app is back.

use bytes::Bytes;
use serde_json::json;

use crate::delivery_kit::{
    ADMIN_TOKEN, App, Backend, ConfigFile, Gate, config, eventually, hookgate_cli, request, source,
};

/// The first column of each `dlq list` row after the header.
fn ids(list: &str) -> Vec<String> {
    list.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn an_app_that_never_recovers_leaves_a_dead_letter_that_replay_delivers_on_redis() {
    an_app_that_never_recovers_leaves_a_dead_letter_that_replay_delivers(Backend::redis()).await;
}

#[tokio::test]
async fn an_app_that_never_recovers_leaves_a_dead_letter_that_replay_delivers_on_sqlite() {
    an_app_that_never_recovers_leaves_a_dead_letter_that_replay_delivers(Backend::sqlite()).await;
}

async fn an_app_that_never_recovers_leaves_a_dead_letter_that_replay_delivers(backend: Backend) {
    let app = App::start().await;
    let toml = config(
        &app,
        &backend,
        &source(
            "q",
            "delivery = \"queue\"\nretry_schedule = [\"100ms\", \"100ms\"]\n",
        ),
    );
    let file = ConfigFile::write(&toml);
    let path = file.path.to_str().expect("utf-8 path");
    let gate = Gate::start(&toml).await;

    app.answer_with(500);
    assert_eq!(gate.send("q", "d1", r#"{"hello":"dlq"}"#).await.status, 200);
    eventually("the dead letter", || {
        (backend.dead_letters() == 1).then_some(())
    })
    .await;
    assert_eq!(app.seen_event("d1").len(), 3, "one attempt and two retries");

    // `hookgate dlq` works on the store while hookgate serves it.

    let (code, out, err) = hookgate_cli(&["dlq", "--config", path, "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ID"), "{out}");
    let row = out.lines().nth(1).expect("one row");
    for needle in ["q", "d1", "thing.updated", "3", "app answered 500"] {
        assert!(row.contains(needle), "{needle} missing from {row}");
    }
    let id = ids(&out).remove(0);

    let (code, out, _) = hookgate_cli(&["dlq", "--config", path, "show", &id]).await;
    assert_eq!(code, 0);
    for needle in [
        "source: q",
        "event id: d1",
        "attempts: 3",
        "request: POST /hooks/q?q=1",
        "x-hub-signature-256: sha256=",
        r#"{"hello":"dlq"}"#,
    ] {
        assert!(out.contains(needle), "{needle} missing from\n{out}");
    }
    // Ids that name no dead letter: of the other store's shape, and (on
    // SQLite, whose ids are numbers) well-formed yet unused.
    let missing: &[&str] = match backend {
        Backend::Redis(_) => &["1-1"],
        Backend::Sqlite(_) => &["1-1", "999999"],
    };
    for missing in missing {
        let (code, _, err) = hookgate_cli(&["dlq", "--config", path, "show", missing]).await;
        assert_eq!(code, 1, "{missing}");
        assert!(err.contains("no dead letter"), "{missing}: {err}");
    }

    // Still down: the replay fails, exits 1, and keeps the entry with one
    // more attempt, under the id it prints: a new one on Redis (a stream
    // entry cannot change), the same one on SQLite (the row is rewritten).
    let (code, out, _) = hookgate_cli(&["dlq", "--config", path, "replay", "--all"]).await;
    assert_eq!(code, 1, "{out}");
    let (_, listed, _) = hookgate_cli(&["dlq", "--config", path, "list", "--source", "q"]).await;
    assert_eq!(ids(&listed).len(), 1, "{listed}");
    let new_id = ids(&listed).remove(0);
    assert!(out.contains(&format!("kept as {new_id}")), "{out}");
    match backend {
        Backend::Redis(_) => assert_ne!(new_id, id),
        Backend::Sqlite(_) => assert_eq!(new_id, id),
    }
    assert!(
        listed.lines().nth(1).is_some_and(|r| r.contains(" 4 ")),
        "{listed}"
    );

    // Back up: delivered once, and gone.
    app.answer_with(200);
    let (code, out, _) = hookgate_cli(&["dlq", "--config", path, "replay", &new_id]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("delivered"), "{out}");
    let delivered: Vec<_> = app
        .seen_event("d1")
        .into_iter()
        .filter(|s| s.status == 200)
        .collect();
    assert_eq!(delivered.len(), 1);
    assert_eq!(&delivered[0].body[..], br#"{"hello":"dlq"}"#);
    assert_eq!(
        delivered[0].header("x-verified-source").as_deref(),
        Some("q")
    );
    let (code, out, _) = hookgate_cli(&["dlq", "--config", path, "list"]).await;
    assert_eq!((code, out.trim()), (0, "no dead letters"));
    assert_eq!(backend.dead_letters(), 0);
    gate.stop().await;
}

#[tokio::test]
async fn forward_mode_copies_an_event_failed_three_times_in_a_row_on_redis() {
    forward_mode_copies_an_event_failed_three_times_in_a_row(Backend::redis()).await;
}

#[tokio::test]
async fn forward_mode_copies_an_event_failed_three_times_in_a_row_on_sqlite() {
    forward_mode_copies_an_event_failed_three_times_in_a_row(Backend::sqlite()).await;
}

async fn forward_mode_copies_an_event_failed_three_times_in_a_row(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("fw", ""))).await;
    let body = r#"{"forward":1}"#;

    app.answer_with(503);
    for attempt in 1..=4 {
        let answer = gate.send("fw", "f1", body).await;
        assert_eq!(answer.status, 503, "attempt {attempt}");
        if attempt == 2 {
            assert_eq!(backend.dead_letters(), 0);
        }
    }
    // Copied once, on the third failure.
    assert_eq!(backend.dead_letters(), 1);

    // The admin endpoints need the token.
    let list = request(gate.admin, "GET", "/dlq", &[], Bytes::new()).await;
    assert_eq!(list.status, 401);
    let wrong = request(
        gate.admin,
        "GET",
        "/dlq",
        &[("authorization", "Bearer nope")],
        Bytes::new(),
    )
    .await;
    assert_eq!(wrong.status, 401);
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let list = request(gate.admin, "GET", "/dlq?source=fw", &auth, Bytes::new()).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let entries = list.json()["entries"].clone();
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries}");
    assert_eq!(entries[0]["event_id"], "f1");
    assert_eq!(entries[0]["attempts"], 3);
    assert_eq!(entries[0]["delivery"], "forward");
    let id = entries[0]["id"].as_str().expect("id").to_owned();

    // The app is fixed; the sender's next retry gets through on its own.
    app.answer_with(200);
    assert_eq!(gate.send("fw", "f1", body).await.status, 200);
    // Replaying the dead letter now would deliver it twice: it is removed unsent.
    let replay = request(
        gate.admin,
        "POST",
        "/dlq/replay",
        &auth,
        Bytes::from(json!({"id": id}).to_string()),
    )
    .await;
    assert_eq!(replay.status, 200, "{}", replay.body);
    assert_eq!(replay.json()["results"][0]["result"], "already_delivered");
    assert_eq!(replay.json()["failed"], 0);
    assert_eq!(
        app.seen_event("f1")
            .iter()
            .filter(|s| s.status == 200)
            .count(),
        1
    );
    assert_eq!(backend.dead_letters(), 0);
    let metrics = gate.metrics().await;
    assert!(
        metrics.contains(r#"hookgate_dead_letters_total{source="fw"} 1"#),
        "{metrics}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn forward_dead_letters_replay_through_the_admin_listener_on_redis() {
    forward_dead_letters_replay_through_the_admin_listener(Backend::redis()).await;
}

#[tokio::test]
async fn forward_dead_letters_replay_through_the_admin_listener_on_sqlite() {
    forward_dead_letters_replay_through_the_admin_listener(Backend::sqlite()).await;
}

async fn forward_dead_letters_replay_through_the_admin_listener(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("fw", ""))).await;
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let auth = [("authorization", bearer.as_str())];

    app.answer_with(500);
    for _ in 0..3 {
        assert_eq!(gate.send("fw", "g1", r#"{"g":1}"#).await.status, 500);
    }
    app.answer_with(200);
    let replay = request(
        gate.admin,
        "POST",
        "/dlq/replay",
        &auth,
        Bytes::from(r#"{"all":true,"source":"fw"}"#),
    )
    .await;
    assert_eq!(
        replay.json()["results"][0]["result"],
        "delivered",
        "{}",
        replay.body
    );
    // Delivered through the replay, so the sender's retry is a duplicate.
    assert_eq!(
        gate.send("fw", "g1", r#"{"g":1}"#).await.json(),
        json!({"duplicate": true, "event_id": "g1"})
    );
    let list = request(gate.admin, "GET", "/dlq", &auth, Bytes::new()).await;
    assert_eq!(list.json(), json!({"entries": []}));
    gate.stop().await;
}

#[tokio::test]
async fn without_a_token_the_admin_dlq_is_off_and_the_memory_store_keeps_none() {
    let app = App::start().await;
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\n[admin]\nlisten = \"127.0.0.1:0\"\n{}",
        app.url(),
        source("fw", "")
    );
    let gate = Gate::start(&toml).await;
    let list = request(
        gate.admin,
        "GET",
        "/dlq",
        &[("authorization", "Bearer x")],
        Bytes::new(),
    )
    .await;
    assert_eq!(list.status, 404);
    gate.stop().await;

    let file = ConfigFile::write(&toml);
    let path = file.path.to_str().expect("utf-8 path");
    let (code, _, err) = hookgate_cli(&["dlq", "--config", path, "list"]).await;
    assert_eq!(code, 1);
    // The refusal names what to use instead.
    assert!(
        err.contains("the memory store keeps no queue and no dead letters"),
        "{err}"
    );
    assert!(err.contains("kind = \"sqlite\""), "{err}");
}

#[tokio::test]
async fn two_versions_of_one_resource_replayed_at_once_never_race_on_redis() {
    two_versions_of_one_resource_replayed_at_once_never_race(Backend::redis()).await;
}

#[tokio::test]
async fn two_versions_of_one_resource_replayed_at_once_never_race_on_sqlite() {
    two_versions_of_one_resource_replayed_at_once_never_race(Backend::sqlite()).await;
}

/// Two versions of one resource replayed at once: the replay path takes the
/// resource's lease like every other delivery, so while one version is at
/// the app the other is answered `in_flight`, and the app never gets the
/// lower version after the higher one.
async fn two_versions_of_one_resource_replayed_at_once_never_race(backend: Backend) {
    let app = App::start().await;
    let ordering = "[source.ordering]\nresource = \"/object/id\"\nversion = \"/object/version\"\n";
    let gate = Gate::start(&config(&app, &backend, &source("fw", ordering))).await;
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let auth = [("authorization", bearer.as_str())];
    let body = |id: &str, version: u32| {
        json!({"id": id, "object": {"id": "cus_race", "version": version}}).to_string()
    };

    app.answer_with(500);
    for (id, version) in [("r1", 1), ("r2", 2)] {
        for _ in 0..3 {
            assert_eq!(gate.send("fw", id, &body(id, version)).await.status, 500);
        }
    }
    let list = request(gate.admin, "GET", "/dlq?source=fw", &auth, Bytes::new()).await;
    let entries = list.json()["entries"].clone();
    let id_of = |event: &str| -> String {
        entries
            .as_array()
            .and_then(|all| all.iter().find(|e| e["event_id"] == event))
            .and_then(|e| e["id"].as_str())
            .unwrap_or_else(|| panic!("no dead letter for {event}: {entries}"))
            .to_owned()
    };
    let (dead1, dead2) = (id_of("r1"), id_of("r2"));
    let before = app.seen().len();

    app.answer_with(200);
    app.hold();
    let replay = |id: String| {
        let admin = gate.admin;
        let bearer = bearer.clone();
        tokio::spawn(async move {
            let auth = [("authorization", bearer.as_str())];
            let body = Bytes::from(json!({"id": id}).to_string());
            request(admin, "POST", "/dlq/replay", &auth, body)
                .await
                .json()["results"][0]["result"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
    };
    let mut second = replay(dead2);
    let mut first = replay(dead1);
    app.arrived(before + 1).await;
    // Whichever got there first holds the resource: the other is refused.
    let refused = tokio::select! {
        r = &mut second => (r.expect("replay task"), first),
        r = &mut first => (r.expect("replay task"), second),
    };
    assert_eq!(refused.0, "in_flight");
    app.release();
    assert_eq!(refused.1.await.expect("replay task"), "delivered");

    // One version reached the app during the replays; the order holds.
    let versions: Vec<String> = app
        .seen()
        .iter()
        .skip(before)
        .filter_map(|s| s.header("x-verified-event-id"))
        .collect();
    assert_eq!(versions.len(), 1, "{versions:?}");
    gate.stop().await;
}
