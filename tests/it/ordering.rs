//! The version gate (DESIGN §5) on each durable store (a real Redis and a
//! SQLite file): an event older than what the app accepted never reaches it,
//! in forward and queue delivery, and two versions of one resource never race
//! each other to the app.

use serde_json::json;

use crate::delivery_kit::{App, Backend, Gate, config, eventually, source};

const ORDERING: &str =
    "[source.ordering]\nresource = \"/object/id\"\nversion = \"/object/version\"\n";

fn event(id: &str, resource: &str, version: serde_json::Value) -> String {
    json!({"id": id, "object": {"id": resource, "version": version}}).to_string()
}

#[tokio::test]
async fn a_stale_event_never_reaches_the_app_on_redis() {
    a_stale_event_never_reaches_the_app(Backend::redis()).await;
}

#[tokio::test]
async fn a_stale_event_never_reaches_the_app_on_sqlite() {
    a_stale_event_never_reaches_the_app(Backend::sqlite()).await;
}

async fn a_stale_event_never_reaches_the_app(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("fw", ORDERING))).await;

    let answer = gate.send("fw", "e2", &event("e2", "cus_1", json!(2))).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(app.seen_event("e2").len(), 1);

    // Older: answered 200 stale_version, never forwarded.
    let answer = gate.send("fw", "e1", &event("e1", "cus_1", json!(1))).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json(), json!({"ignored": "stale_version"}));
    // Its nonce is settled: the sender's retry is a plain duplicate.
    let answer = gate.send("fw", "e1", &event("e1", "cus_1", json!(1))).await;
    assert_eq!(answer.json(), json!({"duplicate": true, "event_id": "e1"}));
    // Equal version under another event id: a duplicate too.
    let answer = gate
        .send("fw", "e2b", &event("e2b", "cus_1", json!(2)))
        .await;
    assert_eq!(answer.json(), json!({"duplicate": true, "event_id": "e2b"}));
    // RFC 3339 versions order by time, offsets included.
    let t10 = event("t10", "cus_t", json!("2024-05-01T12:00:00+02:00"));
    assert_eq!(gate.send("fw", "t10", &t10).await.status, 200);
    let t09 = event("t09", "cus_t", json!("2024-05-01T09:59:59.999Z"));
    assert_eq!(
        gate.send("fw", "t09", &t09).await.json(),
        json!({"ignored": "stale_version"})
    );

    // A refused newer version does not make an older one stale.
    app.then_answer(&[500]);
    assert_eq!(
        gate.send("fw", "e5", &event("e5", "cus_1", json!(5)))
            .await
            .status,
        500
    );
    assert_eq!(
        gate.send("fw", "e4", &event("e4", "cus_1", json!(4)))
            .await
            .status,
        200
    );

    // A verified body without a version is malformed, and its nonce is
    // released: the corrected event with the same id goes through.
    let answer = gate
        .send("fw", "e9", &json!({"object": {"id": "cus_1"}}).to_string())
        .await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.json(), json!({"error": "malformed_body"}));
    assert_eq!(
        gate.send("fw", "e9", &event("e9", "cus_1", json!(9)))
            .await
            .status,
        200
    );

    let forwarded: Vec<String> = app
        .seen()
        .iter()
        .filter_map(|s| s.header("x-verified-event-id"))
        .collect();
    assert_eq!(forwarded, ["e2", "t10", "e5", "e4", "e9"]);
    let metrics = gate.metrics().await;
    assert!(
        metrics.contains(r#"hookgate_requests_total{source="fw",outcome="stale_version"} 2"#),
        "{metrics}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn two_versions_of_one_resource_in_flight_on_redis() {
    two_versions_of_one_resource_in_flight(Backend::redis()).await;
}

#[tokio::test]
async fn two_versions_of_one_resource_in_flight_on_sqlite() {
    two_versions_of_one_resource_in_flight(Backend::sqlite()).await;
}

/// While v5 of a resource is at the app, v6 is answered 429 in_flight: the
/// two can't overtake each other. Once v5 settles, the sender's retry of v6
/// goes through, and a late copy of v5 under a new id is stale.
async fn two_versions_of_one_resource_in_flight(backend: Backend) {
    let app = App::start().await;
    let gate = Gate::start(&config(&app, &backend, &source("fw", ORDERING))).await;
    let public = gate.public;

    app.hold();
    let v5 = tokio::spawn(async move {
        crate::delivery_kit::send_signed(public, "fw", "v5", &event("v5", "r", json!(5))).await
    });
    app.arrived(1).await;
    let v6 = gate.send("fw", "v6", &event("v6", "r", json!(6))).await;
    assert_eq!(v6.status, 429);
    assert_eq!(v6.json(), json!({"error": "in_flight"}));
    assert!(v6.headers.contains_key("retry-after"));
    // Another resource is not held up.
    let other = tokio::spawn(async move {
        crate::delivery_kit::send_signed(public, "fw", "o1", &event("o1", "other", json!(1))).await
    });
    app.arrived(2).await;
    app.release();
    assert_eq!(v5.await.expect("v5").status, 200);
    assert_eq!(other.await.expect("other").status, 200);

    // The sender retries v6: it goes through now.
    assert_eq!(
        gate.send("fw", "v6", &event("v6", "r", json!(6)))
            .await
            .status,
        200
    );
    // A late v5 under another id is stale.
    assert_eq!(
        gate.send("fw", "v5b", &event("v5b", "r", json!(5)))
            .await
            .json(),
        json!({"ignored": "stale_version"})
    );
    let order: Vec<String> = app
        .seen()
        .iter()
        .filter(|s| s.body.windows(3).any(|w| w == b"\"r\""))
        .filter_map(|s| s.header("x-verified-event-id"))
        .collect();
    assert_eq!(order, ["v5", "v6"]);
    gate.stop().await;
}

#[tokio::test]
async fn queued_retries_never_overwrite_a_newer_version_on_redis() {
    queued_retries_never_overwrite_a_newer_version(Backend::redis()).await;
}

#[tokio::test]
async fn queued_retries_never_overwrite_a_newer_version_on_sqlite() {
    queued_retries_never_overwrite_a_newer_version(Backend::sqlite()).await;
}

/// Queue delivery checks the version at the door and again before each
/// attempt: a retried older event is dropped once a newer one was delivered.
async fn queued_retries_never_overwrite_a_newer_version(backend: Backend) {
    let app = App::start().await;
    let extra = format!("delivery = \"queue\"\nretry_schedule = [\"1s\", \"1s\"]\n{ORDERING}");
    let gate = Gate::start(&config(&app, &backend, &source("q", &extra))).await;

    // v1 fails once and waits for its retry...
    app.then_answer(&[503]);
    let answer = gate.send("q", "q1", &event("q1", "r", json!(1))).await;
    assert_eq!(answer.json(), json!({"queued": true, "event_id": "q1"}));
    app.wait_for("q1", 1).await;
    // ...while v2 is delivered.
    assert_eq!(
        gate.send("q", "q2", &event("q2", "r", json!(2)))
            .await
            .status,
        200
    );
    app.wait_for("q2", 1).await;
    // The retry of v1 finds v2 stored and is dropped without a request.
    eventually("the stale retry to be dropped", || {
        stale_drop_counted(&gate)
    })
    .await;
    let metrics = gate.metrics().await;
    assert!(
        metrics
            .contains(r#"hookgate_delivery_attempts_total{source="q",result="stale_version"} 1"#),
        "{metrics}"
    );
    assert_eq!(app.seen_event("q1").len(), 1);

    // At the door: an event older than the delivered one is not even queued.
    assert_eq!(
        gate.send("q", "q0", &event("q0", "r", json!(0)))
            .await
            .json(),
        json!({"ignored": "stale_version"})
    );
    gate.stop().await;
    assert!(app.seen_event("q0").is_empty());
}

/// Whether the delivery-attempts counter shows the stale drop yet.
fn stale_drop_counted(gate: &Gate) -> Option<()> {
    let text = gate.state.metrics.encode();
    text.contains(r#"result="stale_version"} 1"#).then_some(())
}
