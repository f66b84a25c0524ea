//! Dead letters by MATCH (DESIGN §6b) and their removal (§6): a dry run
//! that changes nothing, a replay by type and error that delivers exactly
//! the matching entries once, deletes and `dead_letter_max_age` with their
//! trail states, and a job killed with its replica that another finishes
//! with no entry twice and the rate kept; on SQLite and on Redis.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::delivery_kit::{
    ADMIN_TOKEN, App, Backend, ConfigFile, Gate, SECRET, config, eventually, hookgate_cli, request,
    source,
};
use crate::support::hookgate::Hookgate;

/// A GitHub-signed event of type `event_type` to `/hooks/{name}`.
async fn send_typed(
    addr: std::net::SocketAddr,
    name: &str,
    id: &str,
    event_type: &str,
) -> crate::delivery_kit::Answer {
    let body = format!(r#"{{"id":"{id}"}}"#);
    let mut headers = hookgate::scheme::Scheme::Github
        .sign(
            &hookgate::secret::Secret::new(SECRET.as_bytes()),
            body.as_bytes(),
            Some(id),
            0,
        )
        .expect("github signs");
    headers.push(("x-github-event".into(), event_type.into()));
    headers.push(("content-type".into(), "application/json".into()));
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    request(
        addr,
        "POST",
        &format!("/hooks/{name}"),
        &headers,
        Bytes::from(body),
    )
    .await
}

fn auth() -> [(&'static str, String); 1] {
    [("authorization", format!("Bearer {ADMIN_TOKEN}"))]
}

async fn admin(addr: std::net::SocketAddr, method: &str, path: &str, body: Value) -> (u16, Value) {
    let auth = auth();
    let headers: Vec<(&str, &str)> = auth.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let answer = request(addr, method, path, &headers, body).await;
    let status = answer.status;
    let v = serde_json::from_str(&answer.body).unwrap_or(Value::String(answer.body));
    (status, v)
}

/// The app's 2xx answers per event id.
fn delivered(app: &App, id: &str) -> usize {
    app.seen_event(id)
        .iter()
        .filter(|s| s.status == 200)
        .count()
}

/// Six dead letters of source `q`: three `invoice.paid` the app failed
/// with 503, one `invoice.paid` and one `charge.failed` failed with 500,
/// one `charge.failed` with 503.
async fn six_dead_letters(app: &App, gate: &Gate, backend: &Backend) {
    for (status, events) in [
        (
            503,
            &[
                ("inv_1", "invoice.paid"),
                ("inv_2", "invoice.paid"),
                ("inv_3", "invoice.paid"),
                ("ch_2", "charge.failed"),
            ][..],
        ),
        (
            500,
            &[("inv_4", "invoice.paid"), ("ch_1", "charge.failed")][..],
        ),
    ] {
        app.answer_with(status);
        let before = backend.dead_letters();
        for (id, event_type) in events {
            let answer = send_typed(gate.public, "q", id, event_type).await;
            assert_eq!(answer.status, 200, "{id}");
        }
        let want = before + events.len() as i64;
        eventually("the dead letters", || {
            (backend.dead_letters() == want).then_some(())
        })
        .await;
    }
}

async fn trail_of(gate: &Gate, id: &str) -> Value {
    let (status, record) = admin(gate.admin, "GET", &format!("/events/q/{id}"), Value::Null).await;
    assert_eq!(status, 200, "{record}");
    record
}

#[tokio::test]
async fn replay_and_delete_by_match_on_sqlite() {
    replay_and_delete_by_match(Backend::sqlite()).await;
}

#[tokio::test]
async fn replay_and_delete_by_match_on_redis() {
    replay_and_delete_by_match(Backend::redis()).await;
}

async fn replay_and_delete_by_match(backend: Backend) {
    let app = App::start().await;
    let toml = config(
        &app,
        &backend,
        &source("q", "delivery = \"queue\"\nretry_schedule = [\"50ms\"]\n"),
    );
    let file = ConfigFile::write(&toml);
    let path = file.path.to_str().expect("utf-8 path");
    let gate = Gate::start(&toml).await;
    six_dead_letters(&app, &gate, &backend).await;
    let attempts_before = app.seen().len();

    // A dry run counts and shows, and changes nothing: over HTTP…
    let (status, dry) = admin(
        gate.admin,
        "POST",
        "/dlq/replay",
        json!({"type": "invoice.*", "error": "503", "dry_run": true}),
    )
    .await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], 3, "{dry}");
    assert_eq!(dry["job"], Value::Null);
    let mut sample: Vec<&str> = dry["sample"]
        .as_array()
        .expect("sample")
        .iter()
        .filter_map(|e| e["event_id"].as_str())
        .collect();
    sample.sort_unstable();
    assert_eq!(sample, ["inv_1", "inv_2", "inv_3"], "{dry}");
    // …and from the command line, for a delete too.
    let (code, out, err) = hookgate_cli(&[
        "dlq",
        "--config",
        path,
        "replay",
        "--type",
        "invoice.*",
        "--error",
        "503",
        "--dry-run",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("3 dead letters match"), "{out}");
    let (code, out, err) = hookgate_cli(&[
        "dlq",
        "--config",
        path,
        "delete",
        "--error",
        "5xx",
        "--dry-run",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("6 dead letters match"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains(" q ")).count(),
        6,
        "{out}"
    );
    let (status, dry) = admin(
        gate.admin,
        "POST",
        "/dlq/delete",
        json!({"source": "q", "dry_run": true}),
    )
    .await;
    assert_eq!((status, dry["matched"].clone()), (200, json!(6)), "{dry}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.seen().len(), attempts_before, "a dry run sent nothing");
    assert_eq!(backend.dead_letters(), 6, "a dry run removed nothing");

    // A MATCH the operator got wrong is refused with the field named.
    let (status, bad) = admin(gate.admin, "POST", "/dlq/replay", json!({"error": "6xx"})).await;
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("error:")),
        "{bad}"
    );
    let (code, _, err) =
        hookgate_cli(&["dlq", "--config", path, "replay", "--since", "yesterday"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("--since"), "{err}");

    // The replay by type and error: exactly the three, each once, as a job.
    app.answer_with(200);
    let (code, out, err) = hookgate_cli(&[
        "dlq",
        "--config",
        path,
        "replay",
        "--type",
        "invoice.*",
        "--error",
        "503",
    ])
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("3 of 3 done: 3 delivered"), "{out}");
    for id in ["inv_1", "inv_2", "inv_3"] {
        assert_eq!(delivered(&app, id), 1, "{id}");
        let record = trail_of(&gate, id).await;
        assert_eq!(record["state"], "delivered", "{record}");
        let modes: Vec<&str> = record["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .filter_map(|a| a["mode"].as_str())
            .collect();
        assert_eq!(modes.last(), Some(&"replay"), "{record}");
    }
    for id in ["inv_4", "ch_1", "ch_2"] {
        assert_eq!(delivered(&app, id), 0, "{id} was not asked for");
    }
    assert_eq!(backend.dead_letters(), 3);
    let (code, out, _) = hookgate_cli(&["dlq", "--config", path, "jobs"]).await;
    assert_eq!(code, 0);
    let row = out.lines().nth(1).expect("one job");
    for needle in [
        "replay",
        "done",
        "3/3",
        "cli:",
        "type=invoice.*",
        "error=503",
    ] {
        assert!(row.contains(needle), "{needle} in {out}");
    }

    // A delete by match over HTTP: a job; the trail says discarded, by whom.
    let (status, answer) = admin(
        gate.admin,
        "POST",
        "/dlq/delete",
        json!({"type": "charge.*"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["matched"], 2);
    let job = answer["job"].as_str().expect("a job").to_owned();
    let done = eventually_job(&gate, &job).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(
        (done["succeeded"].clone(), done["total"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(backend.dead_letters(), 1);
    for id in ["ch_1", "ch_2"] {
        let record = trail_of(&gate, id).await;
        assert_eq!(record["state"], "discarded", "{record}");
        assert_eq!(
            record["removed_by"],
            format!("admin (job {job})"),
            "{record}"
        );
        assert_eq!(delivered(&app, id), 0);
    }

    // One by id from the command line.
    let (_, listed, _) = hookgate_cli(&["dlq", "--config", path, "list"]).await;
    let id = listed
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .expect("the last entry")
        .to_owned();
    let (code, out, err) = hookgate_cli(&["dlq", "--config", path, "delete", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), format!("{id}: deleted"));
    assert_eq!(backend.dead_letters(), 0);
    let record = trail_of(&gate, "inv_4").await;
    assert_eq!(record["state"], "discarded", "{record}");
    assert!(
        record["removed_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("cli:")),
        "{record}"
    );
    // Without dead_letter_max_age nothing went unasked; gone is gone.
    let (code, _, err) = hookgate_cli(&["dlq", "--config", path, "delete", &id]).await;
    assert_ne!(code, 0);
    assert!(err.contains("no dead letter"), "{err}");
    gate.stop().await;
}

async fn eventually_job(gate: &Gate, job: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, list) = admin(gate.admin, "GET", "/dlq/jobs", Value::Null).await;
        assert_eq!(status, 200, "{list}");
        if let Some(found) = list["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == job))
            && found["state"] != "running"
        {
            return found.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {job} still running: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_dead_letter_past_dead_letter_max_age_expires_on_sqlite() {
    let backend = Backend::sqlite();
    let app = App::start().await;
    let store = format!("{}dead_letter_max_age = \"2s\"\n", backend.store_toml());
    let toml = crate::delivery_kit::config_with_store(
        &app,
        &store,
        &source("q", "delivery = \"queue\"\nretry_schedule = [\"50ms\"]\n"),
    );
    let gate = Hookgate::start(&toml).await;
    app.answer_with(500);
    let answer = send_typed(gate.public_addr(), "q", "old_1", "invoice.paid").await;
    assert_eq!(answer.status, 200);
    eventually("the dead letter", || {
        (backend.dead_letters() == 1).then_some(())
    })
    .await;
    let line = gate
        .wait_for_log("the expiry", |l| {
            l["fields"]["message"]
                == "dead letter expired: older than dead_letter_max_age; removed unsent"
                || l["message"]
                    == "dead letter expired: older than dead_letter_max_age; removed unsent"
        })
        .await;
    assert_eq!(backend.dead_letters(), 0);
    let text = line.to_string();
    for needle in ["\"source\":\"q\"", "\"event_id\":\"old_1\"", "age"] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    let metrics = gate.admin_get("/metrics").await.text();
    assert!(
        metrics.contains("hookgate_dead_letters_expired_total{source=\"q\"} 1"),
        "{metrics}"
    );
    let auth = auth();
    let headers: Vec<(&str, &str)> = auth.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let record = request(
        gate.admin_addr(),
        "GET",
        "/events/q/old_1",
        &headers,
        Bytes::new(),
    )
    .await;
    let record: Value = serde_json::from_str(&record.body).expect("json");
    assert_eq!(record["state"], "expired", "{record}");
    assert_eq!(record["removed_by"], "dead_letter_max_age", "{record}");
    assert_eq!(delivered(&app, "old_1"), 0);
}

/// Twelve dead letters replayed at 4/s by a job on one of two replicas
/// sharing a Redis; that replica is killed (SIGKILL) mid-job, and the other
/// takes the job over. No event reaches the app twice; an entry whose
/// attempt the kill cut off is left as a dead letter and listed; the starts
/// keep the rate across the takeover.
#[tokio::test]
async fn a_job_killed_with_its_replica_is_finished_by_another_on_redis() {
    let backend = Backend::redis();
    let app = App::start().await;
    let toml = config(
        &app,
        &backend,
        &source(
            "q",
            "delivery = \"queue\"\nretry_schedule = [\"50ms\"]\nmax_rate = \"4/s\"\n",
        ),
    );
    let a = Hookgate::launch(&toml)
        .env("HOOKGATE_REPLICA", "replica-a")
        .start()
        .await;
    let b = Hookgate::launch(&toml)
        .env("HOOKGATE_REPLICA", "replica-b")
        .start()
        .await;
    let mut replicas = [Some(a), Some(b)];
    app.answer_with(500);
    let ids: Vec<String> = (1..=12).map(|i| format!("evt_{i:02}")).collect();
    for id in &ids {
        let gate = replicas[0].as_ref().expect("a");
        let answer = send_typed(gate.public_addr(), "q", id, "invoice.paid").await;
        assert_eq!(answer.status, 200);
    }
    eventually("twelve dead letters", || {
        (backend.dead_letters() == 12).then_some(())
    })
    .await;
    let replays_from = app.seen().len();
    app.answer_with(200);

    let admin_a = replicas[0].as_ref().expect("a").admin_addr();
    let (status, answer) = admin(admin_a, "POST", "/dlq/replay", json!({"source": "q"})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["matched"], 12);
    let job = answer["job"].as_str().expect("a job").to_owned();

    // Some of it done, by whichever replica took it.
    let owner = {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (_, list) = admin(admin_a, "GET", "/dlq/jobs", Value::Null).await;
            let found = list["jobs"][0].clone();
            if found["done"].as_u64().unwrap_or(0) >= 3
                && let Some(owner) = found["owner"].as_str()
            {
                break owner.to_owned();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the job did not start: {list}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (killed, survivor) = if owner.starts_with("replica-a/") {
        (0, 1)
    } else {
        (1, 0)
    };
    let mut victim = replicas[killed].take().expect("the owner");
    victim.signal("KILL");
    victim.wait_exit().await;
    let survivor = replicas[survivor].take().expect("the other replica");

    let done = {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let (_, list) = admin(survivor.admin_addr(), "GET", "/dlq/jobs", Value::Null).await;
            let found = list["jobs"][0].clone();
            if found["state"] != "running" {
                break found;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the job was not finished: {list}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_eq!(done["id"], job.as_str());
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["done"], 12, "{done}");
    let interrupted: Vec<String> = done["interrupted"]
        .as_array()
        .expect("interrupted")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert!(interrupted.len() <= 1, "{done}");
    assert_eq!(
        done["succeeded"].as_u64(),
        Some(12 - interrupted.len() as u64),
        "{done}"
    );
    // No event twice; every one but an interrupted entry delivered.
    let twice: Vec<&String> = ids.iter().filter(|id| delivered(&app, id) > 1).collect();
    assert!(twice.is_empty(), "delivered twice: {twice:?}");
    let delivered_count = ids.iter().filter(|id| delivered(&app, id) == 1).count();
    assert!(
        delivered_count >= 12 - interrupted.len(),
        "{delivered_count} delivered, {done}"
    );
    assert_eq!(backend.dead_letters(), interrupted.len() as i64, "{done}");
    // The rate held across the takeover: starts at least 250 ms apart
    // (the shared limiter reserves them so), less the network's jitter.
    let replays: Vec<std::time::Instant> = app.seen()[replays_from..]
        .iter()
        .filter(|s| s.status == 200)
        .map(|s| s.at)
        .collect();
    let closest = replays
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .min()
        .expect("two replays");
    assert!(
        closest >= Duration::from_millis(150),
        "two replays {closest:?} apart"
    );
    drop(survivor);
}

/// A replay job waits while its source is paused (its record says so and
/// nothing is sent), goes at `max_rate` once resumed, and a cancel stops it
/// before its next entry: what was done stays done, the rest stay dead
/// letters, and nothing more reaches the app.
#[tokio::test]
async fn a_job_waits_for_a_pause_and_stops_when_cancelled_on_sqlite() {
    let backend = Backend::sqlite();
    let app = App::start().await;
    let toml = config(
        &app,
        &backend,
        &source(
            "q",
            "delivery = \"queue\"\nretry_schedule = [\"50ms\"]\nmax_rate = \"2/s\"\n",
        ),
    );
    let gate = Gate::start(&toml).await;
    app.answer_with(500);
    for i in 0..6 {
        let answer = send_typed(gate.public, "q", &format!("p_{i}"), "invoice.paid").await;
        assert_eq!(answer.status, 200);
    }
    eventually("six dead letters", || {
        (backend.dead_letters() == 6).then_some(())
    })
    .await;
    let sent_before = app.seen().len();
    app.answer_with(200);
    let (status, paused) = admin(gate.admin, "POST", "/sources/q/pause", Value::Null).await;
    assert_eq!(status, 200, "{paused}");

    let (status, answer) = admin(gate.admin, "POST", "/dlq/replay", json!({"source": "q"})).await;
    assert_eq!(status, 200, "{answer}");
    let job = answer["job"].as_str().expect("a job").to_owned();
    let find = |list: &Value| {
        list["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == job.as_str()))
            .cloned()
            .unwrap_or(Value::Null)
    };
    // Held: the record says what it waits for, and nothing is sent.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, list) = admin(gate.admin, "GET", "/dlq/jobs", Value::Null).await;
        let found = find(&list);
        if found["waiting"] == "paused" {
            assert_eq!(found["done"], 0, "{found}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never waiting: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.seen().len(), sent_before, "nothing sent while paused");
    // A second job on the same source is refused while this one runs.
    let (status, busy) = admin(gate.admin, "POST", "/dlq/delete", json!({"source": "q"})).await;
    assert_eq!(
        (status, busy["error"].clone()),
        (409, json!("job_running")),
        "{busy}"
    );
    assert_eq!(busy["job"], job.as_str());

    // Resumed, it goes at 2/s; cancelled after two, it stops.
    let (status, _) = admin(gate.admin, "POST", "/sources/q/resume", Value::Null).await;
    assert_eq!(status, 200);
    eventually("two replays", || {
        (app.seen().len() >= sent_before + 2).then_some(())
    })
    .await;
    let (status, cancelled) = admin(
        gate.admin,
        "POST",
        &format!("/dlq/jobs/{job}/cancel"),
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    let ended = eventually_job(&gate, &job).await;
    assert_eq!(ended["state"], "cancelled", "{ended}");
    assert_eq!(ended["cancel"], "admin", "{ended}");
    let done = ended["succeeded"].as_u64().expect("succeeded");
    assert!((2..6).contains(&done), "{ended}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        app.seen().len() as u64,
        sent_before as u64 + done,
        "nothing after the cancel"
    );
    assert_eq!(backend.dead_letters() as u64, 6 - done);
    gate.stop().await;
}

/// With `min_replicas`, a job's record is a write that backs a promise:
/// while no replica acknowledges, a job cannot start (503, counted under
/// `operation="job"`) and nothing is sent; once a replica is back, the
/// record the primary kept is taken over and each entry reaches the app
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_no_replica_acknowledges_sends_nothing_until_one_does_on_redis() {
    let backend = Backend::redis();
    let Backend::Redis(primary) = &backend else {
        unreachable!("a redis backend");
    };
    let replica = crate::support::redis::RedisServer::start_replica_of(primary.port(), None);
    tokio::task::block_in_place(|| primary.wait_replicas(1));
    let app = App::start().await;
    let store = format!(
        "{}min_replicas = 1\nreplica_timeout = \"300ms\"\n",
        backend.store_toml()
    );
    let toml = crate::delivery_kit::config_with_store(
        &app,
        &store,
        &source("q", "delivery = \"queue\"\nretry_schedule = [\"50ms\"]\n"),
    );
    let gate = Hookgate::launch(&toml).start().await;
    app.answer_with(500);
    let ids = ["evt_w1", "evt_w2", "evt_w3"];
    for id in ids {
        let answer = send_typed(gate.public_addr(), "q", id, "invoice.paid").await;
        assert_eq!(answer.status, 200, "{id}");
    }
    eventually("three dead letters", || {
        (backend.dead_letters() == 3).then_some(())
    })
    .await;
    app.answer_with(200);

    // The replica stops acknowledging: the job's first write is not promised.
    replica.freeze();
    let (status, answer) = admin(
        gate.admin_addr(),
        "POST",
        "/dlq/replay",
        json!({"source": "q"}),
    )
    .await;
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer["error"], "store_unavailable", "{answer}");
    let metrics = request(gate.admin_addr(), "GET", "/metrics", &[], Bytes::new()).await;
    let metrics = crate::support::Metrics::parse(&metrics.body);
    let counted = metrics
        .get(
            "hookgate_replication_timeouts_total",
            &[("operation", "job")],
        )
        .unwrap_or(0.0);
    assert!(counted >= 1.0, "counted under operation=\"job\"");
    // Scans meanwhile try to take the record the primary kept; none of
    // their writes is acknowledged, so nothing is sent.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for id in ids {
        assert_eq!(
            delivered(&app, id),
            0,
            "{id} sent while no replica acknowledged"
        );
    }
    assert_eq!(backend.dead_letters(), 3);

    // The replica is back: the job runs, once, each entry once.
    replica.thaw();
    let done = {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (_, list) = admin(gate.admin_addr(), "GET", "/dlq/jobs", Value::Null).await;
            let finished = list["jobs"]
                .as_array()
                .and_then(|jobs| jobs.iter().find(|j| j["state"] == "done").cloned());
            if let Some(job) = finished {
                break (job, list);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the job did not run once a replica acknowledged: {list}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let (job, list) = done;
    assert_eq!(job["done"], 3, "{list}");
    assert_eq!(job["succeeded"], 3, "{list}");
    assert_eq!(
        list["jobs"].as_array().map(Vec::len),
        Some(1),
        "one job: {list}"
    );
    for id in ids {
        assert_eq!(delivered(&app, id), 1, "{id}");
    }
    assert_eq!(backend.dead_letters(), 0);
    drop(replica);
}
