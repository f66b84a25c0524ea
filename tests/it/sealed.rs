//! Payloads at rest (DESIGN §4b), on the real binary, on SQLite and on
//! Redis: with `[store.encryption]` a marker sent in a body and in a header
//! value is nowhere in the database file, its WAL, Redis's values, an RDB
//! dump or the AOF, while every event reaches the app byte for byte;
//! plaintext entries from before encryption are delivered, then rewritten
//! by `hookgate store rekey`; a rotation to a second key retires the first;
//! a flipped byte and a missing key each keep the entry and deliver
//! nothing from it, and adding the key back makes it whole.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::Method;

use crate::delivery_kit::hookgate_cli;
use crate::support::redis::RedisServer;
use crate::support::upstream::Reply;
use crate::support::{Event, Hookgate, Metrics, SourceSpec, Upstream, eventually, headers, http};

const TOKEN: &str = "sealed-test-admin-token";
const SECRET: &str = "sealed-test-secret";
/// 32 bytes of 0x11 and of 0x22, in base64.
const K1: &str = "ERERERERERERERERERERERERERERERERERERERERERE=";
const K2: &str = "IiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiI=";

/// Where the test keeps its store.
enum Kept {
    Sqlite(tempfile::TempDir),
    Redis(RedisServer),
}

impl Kept {
    fn sqlite() -> Kept {
        Kept::Sqlite(tempfile::tempdir().expect("temp dir"))
    }

    /// A Redis writing an AOF and an uncompressed RDB, so that a marker
    /// stored readable would be found in either.
    fn redis() -> Kept {
        Kept::Redis(RedisServer::start_with_args(
            None,
            &[
                "--appendonly".into(),
                "yes".into(),
                "--rdbcompression".into(),
                "no".into(),
            ],
        ))
    }

    fn db(&self) -> PathBuf {
        match self {
            Kept::Sqlite(dir) => dir.path().join("hookgate.db"),
            Kept::Redis(r) => r.dir().to_owned(),
        }
    }

    fn store_lines(&self) -> String {
        match self {
            Kept::Sqlite(_) => format!(
                "kind = \"sqlite\"\npath = {:?}\n",
                self.db().display().to_string()
            ),
            Kept::Redis(r) => format!("kind = \"redis\"\nurl = \"{}\"\n", r.url()),
        }
    }

    /// Every byte the store keeps at rest and in memory now: the SQLite
    /// file and its WAL; Redis's values, a fresh RDB dump and the AOF.
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Kept::Sqlite(_) => {
                let db = self.db();
                for path in [db.clone(), PathBuf::from(format!("{}-wal", db.display()))] {
                    if let Ok(b) = std::fs::read(&path) {
                        out.extend(b);
                    }
                }
            }
            Kept::Redis(r) => {
                let mut conn = r.client();
                let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).expect("KEYS");
                for key in keys {
                    let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).expect("TYPE");
                    let value: redis::Value = match kind.as_str() {
                        "string" => redis::cmd("GET").arg(&key).query(&mut conn),
                        "hash" => redis::cmd("HGETALL").arg(&key).query(&mut conn),
                        "zset" => redis::cmd("ZRANGE")
                            .arg(&key)
                            .arg(0)
                            .arg(-1)
                            .query(&mut conn),
                        "list" => redis::cmd("LRANGE")
                            .arg(&key)
                            .arg(0)
                            .arg(-1)
                            .query(&mut conn),
                        "stream" => redis::cmd("XRANGE")
                            .arg(&key)
                            .arg("-")
                            .arg("+")
                            .query(&mut conn),
                        _ => Ok(redis::Value::Nil),
                    }
                    .expect("read a key");
                    out.extend(format!("{value:?}").into_bytes());
                    collect(&value, &mut out);
                }
                let () = redis::cmd("SAVE").query(&mut conn).expect("SAVE");
                out.extend(files_under(r.dir()));
            }
        }
        out
    }

    /// Redis: the AOF rewritten from what is stored now (history dropped).
    fn rewrite_aof(&self) {
        let Kept::Redis(r) = self else { return };
        let mut conn = r.client();
        let _: String = redis::cmd("BGREWRITEAOF")
            .query(&mut conn)
            .expect("BGREWRITEAOF");
        for _ in 0..200 {
            let info: String = redis::cmd("INFO")
                .arg("persistence")
                .query(&mut conn)
                .expect("INFO");
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the AOF rewrite did not finish");
    }

    /// SQLite: the WAL copied into the file and truncated, as a checkpoint
    /// at rest leaves them.
    fn checkpoint(&self) {
        if let Kept::Sqlite(_) = self {
            let conn = rusqlite::Connection::open(self.db()).expect("open");
            conn.busy_timeout(Duration::from_secs(5)).expect("busy");
            let _: (i64, i64, i64) = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .expect("checkpoint");
        }
    }
}

/// The byte strings inside a Redis reply.
fn collect(value: &redis::Value, out: &mut Vec<u8>) {
    match value {
        redis::Value::BulkString(b) => out.extend_from_slice(b),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().for_each(|v| collect(v, out))
        }
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            collect(k, out);
            collect(v, out);
        }),
        redis::Value::SimpleString(s) => out.extend_from_slice(s.as_bytes()),
        _ => {}
    }
}

/// Every file's bytes under `dir`, recursively (the RDB, the AOF's files).
fn files_under(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if path.extension().is_none_or(|e| e != "log") {
            out.extend(std::fs::read(&path).unwrap_or_default());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn source(name: &str) -> SourceSpec {
    SourceSpec::github()
        .named(name)
        .path(&format!("/hooks/{name}"))
        .literal_secrets(&[SECRET])
        .key("delivery = \"queue\"\nretry_schedule = [\"1s\"]")
}

/// The config with `keys` (id, base64) in `[store.encryption]`; none: no table.
fn config(upstream: &Upstream, kept: &Kept, keys: &[(&str, &str)]) -> String {
    let mut store = kept.store_lines();
    if !keys.is_empty() {
        let list: Vec<String> = keys
            .iter()
            .map(|(id, key)| format!("{{ id = \"{id}\", key = \"{key}\" }}"))
            .collect();
        store.push_str(&format!(
            "[store.encryption]\nkeys = [{}]\n",
            list.join(", ")
        ));
    }
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n\
         [store]\n{store}\n{}{}",
        upstream.url(),
        source("q").toml(),
        source("d").toml(),
    )
}

/// An event whose body and `X-Customer` header carry `marker`.
fn event(id: &str, marker: &str) -> Event {
    Event::raw(
        id,
        Some("push"),
        format!(r#"{{"id":"{id}","customer":{{"email":"{marker}@example.com","card":"4242424242424242"}}}}"#)
            .into_bytes(),
    )
    .header("X-GitHub-Event", "push")
    .header("Content-Type", "application/json")
    .header("X-Customer", &format!("{marker}-header"))
}

async fn admin(gate: &Hookgate, method: Method, path: &str) -> crate::support::Resp {
    http(
        method,
        &format!("{}{path}", gate.admin_url()),
        &headers(&[("Authorization", &format!("Bearer {TOKEN}"))]),
        String::new(),
    )
    .await
}

async fn queue(gate: &Hookgate, name: &str, id: &str, marker: &str) {
    let resp = gate.send(&source(name), &event(id, marker)).await;
    assert_eq!(resp.status, 200, "{id}: {}", resp.text());
    assert!(resp.text().contains("queued"), "{id}: {}", resp.text());
}

/// Waits until the app received `id` and checks it is what was sent, byte
/// for byte, its header included.
async fn delivered(upstream: &Upstream, id: &str, marker: &str) {
    let sent = event(id, marker);
    let got = eventually(&format!("{id} delivered"), || async {
        upstream
            .requests()
            .into_iter()
            .find(|r| r.headers.get("x-github-delivery").is_some_and(|v| v == id))
            .ok_or_else(|| format!("{} requests", upstream.count()))
    })
    .await;
    assert_eq!(
        &got.body[..],
        &sent.body[..],
        "{id}: the body byte for byte"
    );
    assert_eq!(got.header("x-customer"), format!("{marker}-header"));
}

fn times_delivered(upstream: &Upstream, id: &str) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.headers.get("x-github-delivery").is_some_and(|v| v == id))
        .count()
}

async fn config_path_of(gate: &Hookgate) -> String {
    gate.config_path().to_str().expect("utf-8").to_owned()
}

/// Pauses source q and waits until its worker obeys (within a second).
async fn pause_q(gate: &Hookgate) {
    assert_eq!(
        admin(gate, Method::POST, "/sources/q/pause").await.status,
        200
    );
    eventually("q's worker paused", || async {
        let metrics = Metrics::parse(&admin(gate, Method::GET, "/metrics").await.text());
        match metrics.get("hookgate_source_paused", &[("source", "q")]) {
            Some(n) if n as i64 == 1 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// Source q paused; d1 a dead letter (the app refuses it); `ids` queued
/// on q; the app answering 200 again.
async fn dead_letter_and_paused_queue(
    gate: &Hookgate,
    upstream: &Upstream,
    marker: &str,
    ids: &[&str],
) {
    pause_q(gate).await;
    upstream.set_reply(Reply::status(400));
    queue(gate, "d", "d1", marker).await;
    eventually("d1 a dead letter", || async {
        let listed = admin(gate, Method::GET, "/dlq").await.text();
        if listed.contains("\"d1\"") {
            Ok(())
        } else {
            Err(listed)
        }
    })
    .await;
    upstream.set_reply(Reply::status(200));
    for id in ids {
        queue(gate, "q", id, marker).await;
    }
}

// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_sqlite_store_holds_no_marker_and_delivers_byte_for_byte() {
    sealed_at_rest(Kept::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_redis_store_holds_no_marker_and_delivers_byte_for_byte() {
    sealed_at_rest(Kept::redis()).await;
}

async fn sealed_at_rest(kept: Kept) {
    let marker = "MARKER7731";
    let upstream = Upstream::start().await;
    let gate = Hookgate::start(&config(&upstream, &kept, &[("k1", K1)])).await;
    dead_letter_and_paused_queue(&gate, &upstream, marker, &["q1", "q2", "q3"]).await;
    let stored = tokio::task::block_in_place(|| kept.bytes());
    assert!(contains(&stored, "q3"), "the scan reads the stored entries");
    assert!(contains(&stored, "\"sealed\":\"k1\""), "sealed under k1");
    // The card number whole: a short run of digits such as "4242" turns up
    // by chance in the metadata's millisecond times and lease tokens.
    for text in [marker, "4242424242424242", "example.com"] {
        assert!(!contains(&stored, text), "{text} found at rest");
    }
    // Delivered, and replayed, byte for byte.
    assert_eq!(
        admin(&gate, Method::POST, "/sources/q/resume").await.status,
        200
    );
    for id in ["q1", "q2", "q3"] {
        delivered(&upstream, id, marker).await;
    }
    let config = config_path_of(&gate).await;
    let (code, out, err) = hookgate_cli(&["dlq", "--config", &config, "replay", "--all"]).await;
    assert_eq!(code, 0, "{out}{err}");
    delivered(&upstream, "d1", marker).await;
    let metrics = Metrics::parse(&admin(&gate, Method::GET, "/metrics").await.text());
    assert_eq!(metrics.get("hookgate_store_unopenable_total", &[]), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_entries_are_delivered_then_rekeyed_and_a_retired_key_leaves_on_sqlite() {
    rotation(Kept::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_entries_are_delivered_then_rekeyed_and_a_retired_key_leaves_on_redis() {
    rotation(Kept::redis()).await;
}

async fn rotation(kept: Kept) {
    let marker = "PLAINMARK5150";
    let upstream = Upstream::start().await;
    // Before encryption: stored as they are (the scan finds them).
    let mut gate = Hookgate::start(&config(&upstream, &kept, &[])).await;
    pause_q(&gate).await;
    for id in ["p1", "p2"] {
        queue(&gate, "q", id, marker).await;
    }
    assert!(
        contains(&tokio::task::block_in_place(|| kept.bytes()), marker),
        "stored readable before encryption"
    );
    gate.sigterm();
    gate.wait_exit().await;

    // Encryption on: new entries sealed, older ones read as they are.
    let gate = Hookgate::start(&config(&upstream, &kept, &[("k1", K1)])).await;
    queue(&gate, "q", "p3", marker).await;
    let path = config_path_of(&gate).await;
    let (code, out, err) = hookgate_cli(&["store", "--config", &path, "rekey", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("plaintext: 2") && out.contains("k1: 1"),
        "{out}"
    );
    assert!(out.contains("would be rewritten"), "{out}");
    let (code, out, err) = hookgate_cli(&["store", "--config", &path, "rekey"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rewritten 2"), "{out}");
    assert!(
        out.contains("stored payloads by key now:\n  k1: 3"),
        "{out}"
    );
    tokio::task::block_in_place(|| {
        kept.checkpoint();
        kept.rewrite_aof();
    });
    let stored = tokio::task::block_in_place(|| kept.bytes());
    assert!(contains(&stored, "p1"));
    assert!(
        !contains(&stored, marker),
        "a plaintext payload left after rekey"
    );
    drop(gate);

    // Rotation: k2 first, k1 still opens; rekey; then k1 leaves.
    let gate = Hookgate::start(&config(&upstream, &kept, &[("k2", K2), ("k1", K1)])).await;
    let path = config_path_of(&gate).await;
    let (code, out, err) = hookgate_cli(&["store", "--config", &path, "rekey"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("stored payloads by key now:\n  k2: 3"),
        "{out}"
    );
    assert!(out.contains("key k1 seals no stored payload"), "{out}");
    drop(gate);
    let gate = Hookgate::start(&config(&upstream, &kept, &[("k2", K2)])).await;
    eventually("the payloads counted by key", || async {
        let metrics = Metrics::parse(&admin(&gate, Method::GET, "/metrics").await.text());
        match metrics.get("hookgate_store_payloads", &[("key", "k2")]) {
            Some(n) if n as i64 == 3 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(
        admin(&gate, Method::POST, "/sources/q/resume").await.status,
        200
    );
    for id in ["p1", "p2", "p3"] {
        delivered(&upstream, id, marker).await;
    }
    for id in ["p1", "p2", "p3"] {
        assert_eq!(times_delivered(&upstream, id), 1, "{id} once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_and_a_missing_key_keep_the_entry_and_deliver_nothing_on_sqlite() {
    unopenable(Kept::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_and_a_missing_key_keep_the_entry_and_deliver_nothing_on_redis() {
    unopenable(Kept::redis()).await;
}

/// A stream entry: its id and fields.
type Entry = (String, Vec<(String, Vec<u8>)>);

/// Flips the last byte of the stored payload of event `id` (a queue entry).
fn flip(kept: &Kept, id: &str) {
    let flipped = |mut bytes: Vec<u8>| {
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        bytes
    };
    match kept {
        Kept::Sqlite(_) => {
            let conn = rusqlite::Connection::open(kept.db()).expect("open");
            conn.busy_timeout(Duration::from_secs(5)).expect("busy");
            let (row, bytes): (i64, Vec<u8>) = conn
                .query_row(
                    "SELECT id, envelope FROM queue WHERE event_id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .expect("the entry");
            conn.execute(
                "UPDATE queue SET envelope = ?2 WHERE id = ?1",
                rusqlite::params![row, flipped(bytes)],
            )
            .expect("UPDATE");
        }
        Kept::Redis(r) => {
            let mut conn = r.client();
            let key = "hookgate:queue:{q}";
            let entries: Vec<Entry> = redis::cmd("XRANGE")
                .arg(key)
                .arg("-")
                .arg("+")
                .query(&mut conn)
                .expect("XRANGE");
            let (entry, fields) = entries
                .into_iter()
                .find(|(_, f)| {
                    f.iter()
                        .any(|(_, v)| contains(v, &format!("\"event_id\":\"{id}\"")))
                })
                .expect("the entry");
            let bytes = fields
                .into_iter()
                .find(|(k, _)| k == "e")
                .expect("field e")
                .1;
            let _: String = redis::cmd("XADD")
                .arg(key)
                .arg("*")
                .arg("e")
                .arg(flipped(bytes))
                .query(&mut conn)
                .expect("XADD");
            let _: i64 = redis::cmd("XDEL")
                .arg(key)
                .arg(&entry)
                .query(&mut conn)
                .expect("XDEL");
        }
    }
}

/// Queue entries of source q still stored.
fn stored_entries(kept: &Kept) -> i64 {
    match kept {
        Kept::Sqlite(_) => {
            let conn = rusqlite::Connection::open(kept.db()).expect("open");
            conn.query_row("SELECT count(*) FROM queue WHERE source = 'q'", [], |r| {
                r.get(0)
            })
            .expect("count")
        }
        Kept::Redis(r) => {
            let mut conn = r.client();
            let ready: i64 = redis::cmd("XLEN")
                .arg("hookgate:queue:{q}")
                .query(&mut conn)
                .expect("XLEN");
            let waiting: i64 = redis::cmd("ZCARD")
                .arg("hookgate:queue:{q}:delayed")
                .query(&mut conn)
                .expect("ZCARD");
            ready + waiting
        }
    }
}

async fn unopenable(kept: Kept) {
    let marker = "TAMPER9090";
    let upstream = Upstream::start().await;
    let gate = Hookgate::start(&config(&upstream, &kept, &[("k1", K1)])).await;
    dead_letter_and_paused_queue(&gate, &upstream, marker, &["t1", "t2"]).await;
    tokio::task::block_in_place(|| flip(&kept, "t1"));
    drop(gate);

    // k1 removed from the config: nothing opens, nothing is delivered or lost.
    let mut gate = Hookgate::start(&config(&upstream, &kept, &[("k2", K2)])).await;
    let path = config_path_of(&gate).await;
    let (code, listed, err) = hookgate_cli(&["dlq", "--config", &path, "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        listed.contains("cannot be opened with the configured keys (key k1)"),
        "{listed}"
    );
    let (code, out, _) = hookgate_cli(&["dlq", "--config", &path, "replay", "--all"]).await;
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("cannot be opened"), "{out}");
    assert_eq!(
        admin(&gate, Method::POST, "/sources/q/resume").await.status,
        200
    );
    eventually("both entries reported", || async {
        let metrics = Metrics::parse(&admin(&gate, Method::GET, "/metrics").await.text());
        match metrics.get("hookgate_store_unopenable_total", &[("source", "q")]) {
            Some(n) if n >= 2.0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        upstream.count(),
        1,
        "only d1's refused attempt reached the app"
    );
    assert_eq!(
        tokio::task::block_in_place(|| stored_entries(&kept)),
        2,
        "both kept"
    );

    // The key back (a reload): t2 delivered; t1, tampered, kept and never sent.
    gate.rewrite_config(&config(&upstream, &kept, &[("k2", K2), ("k1", K1)]));
    gate.signal("HUP");
    delivered(&upstream, "t2", marker).await;
    let (code, out, err) = hookgate_cli(&["dlq", "--config", &path, "replay", "--all"]).await;
    assert_eq!(code, 0, "{out}{err}");
    delivered(&upstream, "d1", marker).await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(
        times_delivered(&upstream, "t1"),
        0,
        "a tampered payload is never sent"
    );
    assert_eq!(
        tokio::task::block_in_place(|| stored_entries(&kept)),
        1,
        "t1 kept"
    );
    let logs = gate.output();
    assert!(!logs.contains(K1) && !logs.contains(K2), "a key in the log");
}
