//! A store written by the previous release, opened by this one: a sqlite
//! file and a Redis dump made by that release's binary
//! (`tests/data/previous-release/make.sh` says how), each holding three
//! events the app took, three queued behind a pause and two dead letters.
//! This release lists, shows and replays them, honours the old nonces, and
//! delivers each queued event once.

use std::path::{Path, PathBuf};

use crate::delivery_kit::hookgate_cli;
use crate::support::redis::RedisServer;
use crate::support::{Event, Hookgate, SourceSpec, Upstream, eventually, headers, http};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/previous-release");
const SECRET: &str = "previous-release-secret";
const TOKEN: &str = "previous-release-admin-token";

fn source(name: &str) -> SourceSpec {
    SourceSpec::github()
        .named(name)
        .path(&format!("/hooks/{name}"))
        .literal_secrets(&[SECRET])
}

/// The event `make.sh` sent as `id` to `name`, byte for byte.
fn event(name: &str, id: &str) -> Event {
    Event::raw(
        id,
        Some("push"),
        format!(r#"{{"id":"{id}","source":"{name}"}}"#).into_bytes(),
    )
    .header("X-GitHub-Event", "push")
    .header("Content-Type", "application/json")
}

fn config(upstream: &Upstream, store: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n\
         [store]\n{store}\n{}{}{}",
        upstream.url(),
        source("f").toml(),
        source("q").key("delivery = \"queue\"").toml(),
        source("d").key("delivery = \"queue\"").toml(),
    )
}

async fn admin(gate: &Hookgate, method: http::Method, path: &str) -> crate::support::Resp {
    http(
        method,
        &format!("{}{path}", gate.admin_url()),
        &headers(&[("Authorization", &format!("Bearer {TOKEN}"))]),
        String::new(),
    )
    .await
}

/// Everything the previous release left is there and works.
async fn opened_by_this_release(gate: &Hookgate, upstream: &Upstream) {
    let config = gate.config_path().to_str().expect("path").to_owned();
    // The pause it recorded is obeyed: nothing queued was delivered.
    let sources = admin(gate, http::Method::GET, "/sources").await;
    assert!(
        sources.text().contains("held for the upgrade test"),
        "{}",
        sources.text()
    );
    // Its dead letters are listed.
    let (code, listed, stderr) = hookgate_cli(&["dlq", "--config", &config, "list"]).await;
    assert_eq!(code, 0, "{stderr}");
    for id in ["prev-d-1", "prev-d-2"] {
        assert!(listed.contains(id), "{listed}");
    }
    // Its trail is read: the events the app took are delivered.
    let (code, trail, stderr) =
        hookgate_cli(&["events", "--config", &config, "list", "--source", "f"]).await;
    assert_eq!(code, 0, "{stderr}");
    for n in 1..=3 {
        assert!(trail.contains(&format!("prev-f-{n}")), "{trail}");
    }
    assert!(trail.contains("delivered"), "{trail}");
    // Its nonces hold: a copy of an event the app took is a duplicate.
    let f = source("f");
    let resp = gate.send(&f, &event("f", "prev-f-1")).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.text().contains("duplicate"), "{}", resp.text());
    // Resumed, its queued events are delivered, each once; replayed, its
    // dead letters too.
    assert_eq!(
        admin(gate, http::Method::POST, "/sources/q/resume")
            .await
            .status,
        200
    );
    let (code, replayed, stderr) =
        hookgate_cli(&["dlq", "--config", &config, "replay", "--all"]).await;
    assert_eq!(code, 0, "{replayed}{stderr}");
    let want = ["prev-q-1", "prev-q-2", "prev-q-3", "prev-d-1", "prev-d-2"];
    eventually("every queued event and dead letter delivered", || async {
        let seen: Vec<String> = upstream
            .requests()
            .iter()
            .map(|r| r.header("x-github-delivery"))
            .collect();
        if want.iter().all(|id| seen.iter().any(|s| s == id)) {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let seen: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.header("x-github-delivery"))
        .collect();
    for id in want {
        assert_eq!(
            seen.iter().filter(|s| *s == id).count(),
            1,
            "{id} once: {seen:?}"
        );
    }
    assert!(
        !seen.iter().any(|s| s.starts_with("prev-f")),
        "nothing the app took was delivered again: {seen:?}"
    );
    let (_, left, _) = hookgate_cli(&["dlq", "--config", &config, "list"]).await;
    assert!(left.contains("no dead letters"), "{left}");
}

fn copied(name: &str, dir: &Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(Path::new(DATA).join(name), &to).expect("copy the previous release's store");
    to
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_of_the_previous_release_is_opened_and_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = copied("hookgate.db", dir.path());
    let upstream = Upstream::start().await;
    let store = format!("kind = \"sqlite\"\npath = {:?}", db.display().to_string());
    let gate = Hookgate::start(&config(&upstream, &store)).await;
    opened_by_this_release(&gate, &upstream).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_dump_of_the_previous_release_is_opened_and_kept() {
    let redis = tokio::task::block_in_place(|| {
        RedisServer::start_from_dump(&Path::new(DATA).join("dump.rdb"))
    });
    let upstream = Upstream::start().await;
    let store = format!("kind = \"redis\"\nurl = \"{}\"", redis.url());
    let gate = Hookgate::start(&config(&upstream, &store)).await;
    opened_by_this_release(&gate, &upstream).await;
}
