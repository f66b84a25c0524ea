//! The circuit breaker (DESIGN §6a, `[source.breaker]`) on the real binary
//! in front of a real app that fails, slows and recovers on command. Forward mode
//! on SQLite: `failures` 5xx in a row open it; open, fresh events are `503
//! app_unavailable` with `Retry-After` and never reach the app, duplicates
//! are still `200 duplicate`; after the cooldown one probe goes through and
//! closes it, or reopens it with the cooldown doubled. Queue mode on Redis
//! with two replicas: the breaker is shared, an open one spends no attempt,
//! and every queued event is delivered once when the app is back.

use std::time::Duration;

use crate::delivery_kit::{App, Backend, config, send_signed, source};
use crate::support::{Hookgate, get};

fn breaker(extra: &str) -> String {
    format!("{extra}\n[source.breaker]\nfailures = 3\ncooldown = \"1s\"\nmax_cooldown = \"4s\"\n")
}

async fn metric(gate: &Hookgate, line_start: &str) -> Option<f64> {
    let m = get(&format!("{}/metrics", gate.admin_url())).await.text();
    m.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn forward_mode_opens_answers_503_probes_and_closes() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let gate = Hookgate::start(&config(&app, &backend, &source("fw", &breaker("")))).await;
    let public = gate.public_addr();

    // One event delivered, for a duplicate later.
    assert_eq!(
        send_signed(public, "fw", "d0", r#"{"d":0}"#).await.status,
        200
    );
    // Three failures in a row open it.
    app.answer_with(500);
    for n in 1..=3 {
        let id = format!("e{n}");
        assert_eq!(
            send_signed(public, "fw", &id, &format!("{{\"e\":{n}}}"))
                .await
                .status,
            500
        );
    }
    assert_eq!(app.seen().len(), 4);
    let refused = send_signed(public, "fw", "e4", r#"{"e":4}"#).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.body, r#"{"error":"app_unavailable"}"#);
    assert_eq!(
        refused
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let retry = send_signed(public, "fw", "e1", r#"{"e":1}"#).await;
    assert_eq!(retry.status, 503, "a released event's retry is refused too");
    let copy = send_signed(public, "fw", "d0", r#"{"d":0}"#).await;
    assert_eq!(
        copy.status, 200,
        "a duplicate is still answered: {}",
        copy.body
    );
    assert!(copy.body.contains("duplicate"), "{}", copy.body);
    assert_eq!(app.seen().len(), 4, "the app was not asked while open");
    assert_eq!(
        metric(&gate, "hookgate_breaker_state{source=\"fw\"}").await,
        Some(1.0)
    );

    // After the cooldown the app is back: the probe closes it.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    app.answer_with(200);
    assert_eq!(
        send_signed(public, "fw", "e4", r#"{"e":4}"#).await.status,
        200
    );
    assert_eq!(
        send_signed(public, "fw", "e5", r#"{"e":5}"#).await.status,
        200
    );
    assert_eq!(
        metric(&gate, "hookgate_breaker_state{source=\"fw\"}").await,
        Some(0.0)
    );

    // An app that slows past upstream_timeout fails too: three 504s open it.
    app.hold();
    for n in 20..23 {
        let id = format!("s{n}");
        let slow = send_signed(public, "fw", &id, &format!("{{\"s\":{n}}}")).await;
        assert_eq!(slow.status, 504, "{}", slow.body);
    }
    let refused = send_signed(public, "fw", "s23", r#"{"s":23}"#).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    app.release();
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        send_signed(public, "fw", "s23", r#"{"s":23}"#).await.status,
        200
    );

    // It opens again; a failed probe reopens it for twice the cooldown.
    app.answer_with(502);
    for n in 6..=8 {
        let id = format!("e{n}");
        assert_eq!(
            send_signed(public, "fw", &id, &format!("{{\"e\":{n}}}"))
                .await
                .status,
            502
        );
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        send_signed(public, "fw", "e9", r#"{"e":9}"#).await.status,
        502,
        "the probe"
    );
    let refused = send_signed(public, "fw", "e10", r#"{"e":10}"#).await;
    assert_eq!(refused.status, 503);
    assert_eq!(
        refused
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("2"),
        "doubled"
    );
    // Three openings from closed; the failed probe's reopening is not one.
    assert_eq!(
        metric(&gate, "hookgate_breaker_opened_total{source=\"fw\"}").await,
        Some(3.0)
    );
    let line = gate
        .wait_for_log("about the failed probe", |l| {
            l["message"] == "breaker reopened: the probe failed"
        })
        .await;
    assert_eq!(line["source"], "fw");
}

#[tokio::test]
async fn queue_mode_shares_the_breaker_between_replicas_and_spends_no_attempt_while_open() {
    let app = App::start().await;
    let backend = Backend::redis();
    let sources = source(
        "q",
        &breaker("delivery = \"queue\"\nretry_schedule = [\"200ms\", \"200ms\", \"200ms\", \"200ms\", \"200ms\", \"200ms\"]"),
    )
    .replace("cooldown = \"1s\"", "cooldown = \"3s\"")
    .replace("max_cooldown = \"4s\"", "max_cooldown = \"6s\"");
    let toml = config(&app, &backend, &sources);
    let (a, b) = (Hookgate::start(&toml).await, Hookgate::start(&toml).await);
    app.answer_with(503);
    for n in 0..3 {
        let id = format!("q{n}");
        assert_eq!(
            send_signed(a.public_addr(), "q", &id, &format!("{{\"q\":{n}}}"))
                .await
                .status,
            200
        );
    }
    // Three failed attempts open it; within a second both replicas know.
    for gate in [&a, &b] {
        crate::support::eventually("the breaker open on both replicas", || async {
            match metric(gate, "hookgate_breaker_state{source=\"q\"}").await {
                Some(1.0) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    let before = app.seen().len();
    for n in 3..6 {
        let id = format!("q{n}");
        assert_eq!(
            send_signed(b.public_addr(), "q", &id, &format!("{{\"q\":{n}}}"))
                .await
                .status,
            200
        );
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        app.seen().len(),
        before,
        "no attempt while open, on either replica"
    );

    // The app is back: after the cooldown a probe closes it and every
    // queued event is delivered, each once.
    app.answer_with(200);
    for n in 0..6 {
        app.wait_for(&format!("q{n}"), 1).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for n in 0..6 {
        let id = format!("q{n}");
        let delivered = app
            .seen_event(&id)
            .iter()
            .filter(|s| s.status == 200)
            .count();
        assert_eq!(delivered, 1, "{id} delivered {delivered} times");
    }
    // The events queued while it was open say they waited for the breaker,
    // for as long as their own times show (received, then attempted).
    for n in 3..6 {
        let id = format!("q{n}");
        let v = crate::support::trail_event(
            &a.admin_url(),
            crate::delivery_kit::ADMIN_TOKEN,
            "q",
            &id,
            |v| v["state"] == "delivered",
        )
        .await;
        let first = &v["attempts"][0];
        let ms = crate::support::rfc3339_ms;
        let clock = ms(&first["at"]) - ms(&v["received_at"]);
        let said = first["waited"]["ms"].as_i64().unwrap_or(0);
        assert_eq!(first["waited"]["reason"], "breaker", "{v}");
        assert!(clock >= 1_400, "{id} was held by the breaker: {v}");
        assert!(
            (clock - said).abs() <= 200,
            "{id}: waited {said} ms by the trail, {clock} ms by its own times: {v}"
        );
    }
}

/// A replay goes through the attempt's phases like a queued delivery
/// (DESIGN §6b): `hookgate dlq replay --all`, beside the running server on
/// SQLite, waits while the source is paused and while its breaker is open,
/// sends nothing meanwhile, and delivers each dead letter once after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_waits_for_a_paused_source_and_an_open_breaker() {
    use crate::delivery_kit::hookgate_cli;
    let app = App::start().await;
    let backend = Backend::sqlite();
    let queued = "delivery = \"queue\"\nretry_schedule = [\"1s\", \"1s\", \"1s\", \"1s\"]\n\
         [source.breaker]\nfailures = 2\ncooldown = \"3s\"\nmax_cooldown = \"3s\"\n";
    let gate = Hookgate::start(&config(&app, &backend, &source("q", queued))).await;
    let public = gate.public_addr();
    let path = gate.config_path().to_str().expect("utf-8").to_owned();

    // Dead letters: the app refuses them (a 4xx is the app answering: the
    // breaker stays closed).
    app.answer_with(400);
    for id in ["d1", "d2", "d3"] {
        assert_eq!(
            send_signed(public, "q", id, &format!("{{\"{id}\":1}}"))
                .await
                .status,
            200
        );
    }
    crate::delivery_kit::eventually("three dead letters", || {
        (backend.dead_letters() == 3).then_some(())
    })
    .await;
    app.answer_with(200);

    // Paused: the replay waits and sends nothing until the resume.
    let (code, out, err) = hookgate_cli(&["sources", "--config", &path, "pause", "q"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let seen_before = app.seen().len();
    let replay = {
        let path = path.clone();
        tokio::spawn(
            async move { hookgate_cli(&["dlq", "--config", &path, "replay", "--all"]).await },
        )
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.seen().len(), seen_before, "nothing sent while paused");
    assert!(!replay.is_finished(), "the replay waits");
    let (code, out, err) = hookgate_cli(&["sources", "--config", &path, "resume", "q"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = replay.await.expect("the replay");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("waiting for q: its delivery is paused"),
        "{err}"
    );
    for id in ["d1", "d2", "d3"] {
        assert_eq!(
            app.seen_event(id).len(),
            2,
            "{id}: refused once, replayed once"
        );
    }

    // Dead letters again, then the breaker opened by two failures in a row.
    app.answer_with(400);
    for id in ["r1", "r2"] {
        assert_eq!(
            send_signed(public, "q", id, &format!("{{\"{id}\":1}}"))
                .await
                .status,
            200
        );
    }
    crate::delivery_kit::eventually("two dead letters", || {
        (backend.dead_letters() == 2).then_some(())
    })
    .await;
    app.answer_with(503);
    for id in ["f1", "f2"] {
        assert_eq!(
            send_signed(public, "q", id, &format!("{{\"{id}\":1}}"))
                .await
                .status,
            200
        );
    }
    let opened = crate::delivery_kit::eventually("the breaker open", || {
        let failed = app.seen().iter().filter(|s| s.status == 503).count();
        (failed >= 2).then(std::time::Instant::now)
    })
    .await;
    let replay = {
        let path = path.clone();
        tokio::spawn(
            async move { hookgate_cli(&["dlq", "--config", &path, "replay", "--all"]).await },
        )
    };
    // The app is back before the cooldown ends; nothing is sent before it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    app.answer_with(200);
    let (code, out, err) = replay.await.expect("the replay");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("waiting for q: the app's breaker is open"),
        "{err}"
    );
    for id in ["r1", "r2"] {
        let seen = app.seen_event(id);
        assert_eq!(seen.len(), 2, "{id}: refused once, replayed once");
        assert!(
            seen[1].at >= opened + Duration::from_millis(2500),
            "{id} replayed {:?} after the breaker opened, inside its 3s cooldown",
            seen[1].at - opened
        );
    }
    drop(gate);
}
