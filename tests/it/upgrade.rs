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

/// A replica of the last release before the trail's generations, writing
/// its trail as that release did: its own script, kept verbatim in
/// `tests/data/before-generations/write.lua`, on the same Redis.
struct Earlier {
    conn: redis::Connection,
    script: redis::Script,
}

const EARLIER_PREFIX: &str = "hg";

impl Earlier {
    fn new(redis: &RedisServer) -> Earlier {
        let lua = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/before-generations/write.lua"),
        )
        .expect("the earlier release's write script");
        Earlier {
            conn: redis.client(),
            script: redis::Script::new(&lua),
        }
    }

    /// Writes one event's facts, `received` when they start its record.
    fn write(&mut self, id: &str, received: Option<i64>, facts: &[hookgate::trail::Fact]) {
        let _: Vec<String> = self
            .script
            .key(format!("{EARLIER_PREFIX}:{{trail}}"))
            .key(format!("{EARLIER_PREFIX}:{{trail}}:facts"))
            .arg(100_000)
            .arg(format!("{EARLIER_PREFIX}:{{trail}}:"))
            .arg(16_384)
            .arg(received.map_or(String::new(), |at| at.to_string()))
            .arg(format!("f:{id}"))
            .arg(hookgate::trail::lines_of(facts))
            .invoke(&mut self.conn)
            .expect("the earlier release's script");
    }

    /// The event's facts, read as that release reads them: `None` when it
    /// finds no record.
    fn read(&mut self, id: &str) -> Option<Vec<hookgate::trail::Fact>> {
        let text: Option<String> = redis::cmd("HGET")
            .arg(format!("{EARLIER_PREFIX}:{{trail}}:facts"))
            .arg(format!("f:{id}"))
            .query(&mut self.conn)
            .expect("HGET");
        text.map(|t| hookgate::trail::facts_of(&t))
    }
}

fn received(at: i64) -> hookgate::trail::Fact {
    hookgate::trail::Fact::Received {
        at,
        replica: "old-pod".into(),
        event_type: Some("push".into()),
        signed_at: None,
        state: hookgate::trail::State::InFlight,
        nonce_id: None,
    }
}

fn attempted(at: i64, mode: hookgate::trail::Mode, status: u16) -> hookgate::trail::Fact {
    use hookgate::trail::State;
    hookgate::trail::Fact::Attempted {
        attempt: hookgate::trail::Attempt {
            at,
            replica: "old-pod".into(),
            mode,
            outcome: "forwarded".into(),
            status: Some(status),
            duration_ms: 3,
            waited: None,
            trace_id: None,
        },
        state: if status < 300 {
            State::Delivered
        } else {
            State::Released
        },
        next_attempt_at: None,
        dead_letter_id: None,
    }
}

/// Each attempt in the event's trail as this release shows it: the replica
/// and the app's status.
async fn attempts(gate: &Hookgate, id: &str) -> Vec<(String, u64)> {
    let shown = admin(gate, http::Method::GET, &format!("/events/f/{id}")).await;
    if shown.status != 200 {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_str(&shown.text()).expect("JSON");
    v["attempts"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|a| {
                    let replica = a["replica"].as_str().unwrap_or("").to_owned();
                    (replica, a["status"].as_u64().unwrap_or(0))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The attempts `facts` hold: who made them and the status.
fn attempts_in(facts: &[hookgate::trail::Fact]) -> Vec<(String, u64)> {
    facts
        .iter()
        .filter_map(|f| match f {
            hookgate::trail::Fact::Attempted { attempt, .. } => Some((
                attempt.replica.to_string(),
                attempt.status.map_or(0, u64::from),
            )),
            _ => None,
        })
        .collect()
}

async fn until_attempts(gate: &Hookgate, id: &str, want: &[(&str, u64)]) {
    let want: Vec<(String, u64)> = want.iter().map(|(r, s)| ((*r).to_owned(), *s)).collect();
    eventually(&format!("the trail of {id}"), || async {
        let got = attempts(gate, id).await;
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:?}, want {want:?}"))
        }
    })
    .await;
}

/// The last release before the trail's generations and this one side by
/// side on one Redis, as a rolling upgrade runs them: each writes facts
/// about events the other received, and each reads the other's. Every
/// attempt either made is in the trail this release shows, in order, and
/// in the one the earlier release reads; once the mixed period is over,
/// this release moves the records into its own layout and loses none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_versions_side_by_side_on_one_redis_keep_the_trail_true() {
    use hookgate::trail::Mode;
    let redis = tokio::task::block_in_place(RedisServer::start);
    let mut earlier = Earlier::new(&redis);
    let t0 = hookgate::time::now_ms() - 10_000;
    // The earlier replica took evt-a; the app failed it.
    earlier.write("evt-a", Some(t0), &[received(t0)]);
    earlier.write("evt-a", None, &[attempted(t0 + 5, Mode::Forward, 503)]);

    let upstream = Upstream::start().await;
    let store = format!(
        "kind = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{EARLIER_PREFIX}\"",
        redis.url()
    );
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n\
         [store]\n{store}\n{}",
        upstream.url(),
        source("f").toml(),
    );
    let gate = Hookgate::start(&config).await;
    let replica = {
        // The sender's retry of evt-a and a new event, both at this release.
        let f = source("f");
        for id in ["evt-a", "evt-b"] {
            let resp = gate.send(&f, &event("f", id)).await;
            assert_eq!(resp.status, 200, "{id}: {}", resp.text());
        }
        eventually("evt-b delivered by this release", || async {
            match attempts(&gate, "evt-b").await.as_slice() {
                [(replica, 200)] => Ok(replica.clone()),
                other => Err(format!("{other:?}")),
            }
        })
        .await
    };
    until_attempts(&gate, "evt-a", &[("old-pod", 503), (&replica, 200)]).await;

    // The earlier replica appends to both (a replay of each, say): both
    // land, and it reads what this release wrote.
    let t1 = hookgate::time::now_ms();
    for id in ["evt-a", "evt-b"] {
        earlier.write(id, None, &[attempted(t1, Mode::Replay, 200)]);
    }
    let want_a = [("old-pod", 503), (replica.as_str(), 200), ("old-pod", 200)];
    let want_b = [(replica.as_str(), 200), ("old-pod", 200)];
    until_attempts(&gate, "evt-a", &want_a).await;
    until_attempts(&gate, "evt-b", &want_b).await;
    for (id, want) in [("evt-a", &want_a[..]), ("evt-b", &want_b[..])] {
        let read = earlier
            .read(id)
            .unwrap_or_else(|| panic!("{id}: no record"));
        let want: Vec<(String, u64)> = want.iter().map(|(r, s)| ((*r).to_owned(), *s)).collect();
        assert_eq!(
            attempts_in(&read),
            want,
            "{id} as the earlier release reads it"
        );
    }

    // The mixed period over (its start an hour and more ago), the earlier
    // replica gone: this release's next writes move the records into its
    // own layout, and keep every attempt.
    let mut conn = redis.client();
    let _: () = redis::cmd("SET")
        .arg(format!("{EARLIER_PREFIX}:{{trail}}:upgraded_at"))
        .arg(hookgate::time::now_ms() - hookgate::store::redis::trail::GRACE_MS - 1)
        .query(&mut conn)
        .expect("SET");
    let f = source("f");
    for id in ["evt-a", "evt-b"] {
        let resp = gate.send(&f, &event("f", id)).await;
        assert!(resp.text().contains("duplicate"), "{id}: {}", resp.text());
    }
    eventually("the records moved out of the earlier layout", || async {
        let mut conn = redis.client();
        let left: i64 = redis::cmd("HLEN")
            .arg(format!("{EARLIER_PREFIX}:{{trail}}:facts"))
            .query(&mut conn)
            .expect("HLEN");
        if left == 0 {
            Ok(())
        } else {
            Err(format!("{left} left"))
        }
    })
    .await;
    until_attempts(&gate, "evt-a", &want_a).await;
    until_attempts(&gate, "evt-b", &want_b).await;
    let metrics = http(
        http::Method::GET,
        &format!("{}/metrics", gate.admin_url()),
        &headers(&[("Authorization", &format!("Bearer {TOKEN}"))]),
        String::new(),
    )
    .await
    .text();
    assert!(
        !metrics.contains("hookgate_trail_writes_dropped_total{"),
        "no trail write dropped: {metrics}"
    );
}
