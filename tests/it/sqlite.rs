//! `kind = "sqlite"` (DESIGN §4a) on the real binary and a real file: what a
//! `kill -9` at a bad moment leaves, the fsync before the answer that relies
//! on it (seen in the process's own system calls), group commit under
//! concurrent requests, and the files it refuses.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use crate::delivery_kit::{
    ADMIN_TOKEN, App, ConfigFile, WAIT, eventually, hookgate_cli, request, send_signed, source,
};

/// A config on the SQLite file `db` with an admin token and these sources.
fn config(app: &App, db: &Path, sources: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\nupstream_timeout = \"2s\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{ADMIN_TOKEN}\"\n\n\
         [store]\nkind = \"sqlite\"\npath = \"{}\"\n\n{sources}",
        app.url(),
        db.display()
    )
}

/// An app, and a config file on `hookgate.db` beside it with `sources`.
async fn setup(sources: &str) -> (App, ConfigFile, PathBuf) {
    let app = App::start().await;
    let file = ConfigFile::write("");
    let db = file.dir.join("hookgate.db");
    std::fs::write(&file.path, config(&app, &db, sources)).expect("config");
    (app, file, db)
}

/// Sends each event to the queue source `name`; each must be answered `200 queued`.
async fn queue_all(public: SocketAddr, name: &str, ids: &[String]) {
    for id in ids {
        let answer = send_signed(public, name, id, &body(id)).await;
        assert_eq!(
            answer.json(),
            json!({"queued": true, "event_id": id}),
            "{id}"
        );
    }
}

/// A body of its own per event: the kit's GitHub sources key nonces by the
/// body's digest (the delivery id is not signed).
fn body(id: &str) -> String {
    format!(r#"{{"id":"{id}"}}"#)
}

/// Rows of `table` for `source` in the file, read with a connection of the
/// test's own (WAL: it reads beside the running process).
fn rows(db: &Path, table: &str, source: &str) -> i64 {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open db");
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE source = ?1"),
        [source],
        |r| r.get(0),
    )
    .expect("count")
}

/// `hookgate run` as a child process, optionally under `strace`; killed
/// with SIGKILL on drop.
struct Proc {
    child: Child,
    public: SocketAddr,
    admin: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn start(file: &ConfigFile) -> Proc {
        Proc::spawn(file, None).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Under `strace -f -y`, tracing `syscalls` into `trace`.
    fn traced(file: &ConfigFile, trace: &Path, syscalls: &str) -> Proc {
        Proc::spawn(file, Some((trace, syscalls))).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts it and waits (bounded) for both listeners; `Err` with what it
    /// printed when it exits first.
    fn spawn(file: &ConfigFile, strace: Option<(&Path, &str)>) -> Result<Proc, String> {
        let mut command = match strace {
            None => Command::new(env!("CARGO_BIN_EXE_hookgate")),
            Some((trace, syscalls)) => {
                assert!(
                    Command::new("strace").arg("-V").output().is_ok(),
                    "strace is needed to see hookgate's fsyncs: apt-get install -y strace"
                );
                let mut c = Command::new("strace");
                c.args(["-f", "-y", "-qq", "-s", "256", "-e"])
                    .arg(format!("trace={syscalls}"))
                    .arg("-o")
                    .arg(trace)
                    .arg(env!("CARGO_BIN_EXE_hookgate"));
                c
            }
        };
        let spawned = command
            .args(["run", "--config"])
            .arg(&file.path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("start hookgate: {e}"))?;
        // Killed if this fails before the Proc (whose drop kills it) exists.
        let mut guard = crate::support::process::Guard::new(spawned);
        let child = guard.get_mut();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let (tx, lines) = (tx.clone(), Arc::clone(&lines));
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                        && v["message"] == "listening"
                    {
                        let _ = tx.send((
                            v["listener"].as_str().unwrap_or_default().to_owned(),
                            v["addr"].as_str().unwrap_or_default().to_owned(),
                        ));
                    }
                    lines.lock().expect("lines").push(line);
                }
            });
        }
        let deadline = Instant::now() + WAIT;
        let (mut public, mut admin) = (None, None);
        while public.is_none() || admin.is_none() {
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(200));
                let said = lines.lock().expect("lines").join("\n");
                return Err(format!(
                    "hookgate exited ({status}) before listening:\n{said}"
                ));
            }
            assert!(
                Instant::now() < deadline,
                "hookgate did not start listening"
            );
            if let Ok((listener, addr)) = rx.recv_timeout(Duration::from_millis(50)) {
                let addr: SocketAddr = addr.parse().expect("an address");
                if listener == "public" {
                    public = Some(addr);
                } else {
                    admin = Some(addr);
                }
            }
        }
        Ok(Proc {
            child: guard.take(),
            public: public.expect("public"),
            admin: admin.expect("admin"),
            lines,
        })
    }

    fn kill9(&mut self) {
        // Under strace, hookgate is strace's child: a SIGKILL to strace
        // alone detaches it and leaves it running.
        let pid = self.child.id();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children.split_whitespace() {
            let _ = Command::new("kill").args(["-KILL", child]).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    async fn admin_get(&self, path: &str) -> (u16, String) {
        let answer = request(self.admin, "GET", path, &[], Bytes::new()).await;
        (answer.status, answer.body)
    }

    fn output(&self) -> String {
        self.lines.lock().expect("lines").join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Runs `hookgate run` expecting it to refuse to start; returns what it said.
async fn refused_at_start(file: &ConfigFile) -> String {
    let path = file.path.to_string_lossy().into_owned();
    let (code, out, err) = hookgate_cli(&["run", "--config", &path]).await;
    assert_ne!(
        code, 0,
        "hookgate started on a file it should refuse:\n{out}\n{err}"
    );
    format!("{out}\n{err}")
}

const RETRYING: &str = "delivery = \"queue\"\nretry_schedule = [\"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\"]\n";

/// The app takes the first ten attempts, then fails; hookgate is killed
/// with SIGKILL while it retries the rest and started again on the same
/// file: every event answered `200 queued` reaches the app with a 2xx, the
/// ten it had taken are not sent again, and every resend is a duplicate.
#[tokio::test]
async fn kill_9_in_a_queue_backlog_loses_nothing_and_repeats_nothing() {
    let (app, file, db) = setup(&source("q", RETRYING)).await;
    app.then_answer(&[200; 10]);
    app.answer_with(503);

    let mut first = Proc::start(&file);
    let ids: Vec<String> = (1..=30).map(|i| format!("k{i}")).collect();
    queue_all(first.public, "q", &ids).await;
    // Ten delivered and settled on disk; the rest failing and retried.
    eventually("ten entries settled in the file", || {
        (rows(&db, "queue", "q") == 20).then_some(())
    })
    .await;
    app.arrived(25).await;
    first.kill9();
    // An attempt cut off by the kill is answered by the app to nobody: with
    // the failure scripted then, so the only 2xx of each event is a
    // delivery hookgate saw.
    app.quiet().await;
    let taken_before: Vec<String> = ids
        .iter()
        .filter(|id| app.seen_event(id).iter().any(|s| s.status == 200))
        .cloned()
        .collect();
    assert_eq!(taken_before.len(), 10, "{taken_before:?}");

    app.answer_with(200);
    let second = Proc::start(&file);
    for id in &ids {
        eventually(&format!("{id} delivered with a 2xx"), || {
            app.seen_event(id)
                .iter()
                .any(|s| s.status == 200)
                .then_some(())
        })
        .await;
    }
    eventually("the queue to empty", || {
        (rows(&db, "queue", "q") == 0).then_some(())
    })
    .await;
    for id in &ids {
        let twos = app
            .seen_event(id)
            .iter()
            .filter(|s| s.status == 200)
            .count();
        assert_eq!(twos, 1, "{id} reached the app with a 2xx {twos} times");
        let again = send_signed(second.public, "q", id, &body(id)).await;
        assert_eq!(
            again.json(),
            json!({"duplicate": true, "event_id": id}),
            "{id}"
        );
    }
    assert_eq!(rows(&db, "dead_letters", "q"), 0);
}

/// Forward mode: the answer goes out after the nonce commit is on disk, so
/// a SIGKILL right after the last answer loses none of them.
#[tokio::test]
async fn kill_9_after_forwarding_every_resend_is_a_duplicate() {
    let (app, file, _) = setup(&source("f", "")).await;
    let mut first = Proc::start(&file);
    let ids: Vec<String> = (1..=20).map(|i| format!("f{i}")).collect();
    for id in &ids {
        let answer = send_signed(first.public, "f", id, &body(id)).await;
        assert_eq!(answer.status, 200, "{id}: {}", answer.body);
    }
    first.kill9();
    let second = Proc::start(&file);
    for id in &ids {
        let again = send_signed(second.public, "f", id, &body(id)).await;
        assert_eq!(
            again.json(),
            json!({"duplicate": true, "event_id": id}),
            "{id}"
        );
        assert_eq!(app.seen_event(id).len(), 1, "{id}");
    }
}

/// The file opens in the `sqlite3` shell of a current distribution (3.40,
/// older than the bundled library) while hookgate serves it, and the queries
/// of docs/recovery.md answer.
#[tokio::test]
async fn the_sqlite3_shell_reads_the_file_while_it_is_served() {
    let (app, file, db) = setup(&(source("f", "") + &source("q", "delivery = \"queue\"\n"))).await;
    let gate = Proc::start(&file);
    assert_eq!(
        send_signed(gate.public, "f", "sh-1", &body("sh-1"))
            .await
            .status,
        200
    );
    let queued = send_signed(gate.public, "q", "sh-2", &body("sh-2")).await;
    assert_eq!(queued.json(), json!({"queued": true, "event_id": "sh-2"}));
    app.wait_for("sh-2", 1).await;
    let shell = |sql: &str| {
        let out = Command::new("sqlite3")
            .arg("-readonly")
            .arg(&db)
            .arg(sql)
            .output()
            .unwrap_or_else(|e| panic!("sqlite3 is needed (apt-get install -y sqlite3): {e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let version = shell("SELECT sqlite_version()");
    assert!(version.starts_with('3'), "{version}");
    assert_eq!(
        shell("PRAGMA user_version"),
        hookgate::store::sqlite::schema::VERSION.to_string()
    );
    // Nonces of GitHub events are keyed by the body's digest; both are done.
    assert_eq!(
        shell("SELECT count(*) FROM nonces WHERE state = 'done'"),
        "2"
    );
    eventually("both events delivered in the trail", || {
        (shell("SELECT source, event_id, state FROM events ORDER BY received_ms")
            == "f|sh-1|delivered\nq|sh-2|delivered")
            .then_some(())
    })
    .await;
    eventually("the queue to empty", || {
        (shell("SELECT count(*) FROM queue") == "0").then_some(())
    })
    .await;
    assert_eq!(shell("SELECT count(*) FROM dead_letters"), "0");
    // Each commit ended its event's claim.
    assert_eq!(shell("SELECT count(*) FROM claims"), "0");
    drop(gate);
}

/// Dead letters outlive the process; `hookgate dlq replay --all`, run beside
/// the serving process on the same file, delivers each once.
#[tokio::test]
async fn dead_letters_survive_a_restart_and_replay_once_each() {
    let fast = "delivery = \"queue\"\nretry_schedule = [\"100ms\"]\n";
    let (app, file, db) = setup(&source("q", fast)).await;
    app.answer_with(503);
    let mut first = Proc::start(&file);
    let ids: Vec<String> = (1..=5).map(|i| format!("d{i}")).collect();
    queue_all(first.public, "q", &ids).await;
    eventually("five dead letters in the file", || {
        (rows(&db, "dead_letters", "q") == 5).then_some(())
    })
    .await;
    first.kill9();

    app.answer_with(200);
    let second = Proc::start(&file);
    let (status, body) = second.admin_get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    let config_path = file.path.to_string_lossy().into_owned();
    let (code, out, err) = hookgate_cli(&["dlq", "--config", &config_path, "list"]).await;
    assert_eq!(code, 0, "{err}");
    for id in &ids {
        assert!(out.contains(id.as_str()), "{id} missing from\n{out}");
    }
    let (code, out, err) =
        hookgate_cli(&["dlq", "--config", &config_path, "replay", "--all"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        out.lines().filter(|l| l.ends_with(": delivered")).count(),
        5,
        "{out}"
    );
    for id in &ids {
        let twos = app
            .seen_event(id)
            .iter()
            .filter(|s| s.status == 200)
            .count();
        assert_eq!(twos, 1, "{id}");
    }
    assert_eq!(rows(&db, "dead_letters", "q"), 0);
    let (code, out, _) = hookgate_cli(&["dlq", "--config", &config_path, "list"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("no dead letters"), "{out}");
    drop(second);
}

/// Index of the first line at or after `from` that satisfies `pred`.
fn find(lines: &[String], from: usize, pred: impl Fn(&str) -> bool) -> Option<usize> {
    lines
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, l)| pred(l))
        .map(|(i, _)| i)
}

/// The `200` answers an strace text shows written to a socket.
fn answers_traced(text: &str) -> usize {
    text.lines()
        .filter(|l| (l.contains("write") || l.contains("send")) && l.contains("HTTP/1.1 200"))
        .count()
}

/// The trace file once `ready` holds for its text (bounded).
async fn traced_until(trace: &Path, ready: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    for _ in 0..200 {
        text = std::fs::read_to_string(trace).unwrap_or_default();
        if ready(&text) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    text
}

/// A completed fsync of the WAL file: `fdatasync(7</…/hookgate.db-wal>) = 0`
/// or its `resumed` half when another thread's call came in between.
fn wal_sync_done(line: &str) -> bool {
    (line.contains("fdatasync") || line.contains("fsync"))
        && (line.contains(".db-wal>)") || line.contains("resumed>"))
        && line.trim_end().ends_with("= 0")
}

/// The syscalls of the serving process, traced: between reading a queued
/// event's request and writing its `200 queued`, the WAL file is fsynced;
/// the same for a forwarded event's answer (the nonce commit). Then 200
/// events sent 20 at a time share fsyncs: fewer WAL fsyncs than events.
#[tokio::test]
async fn the_fsync_comes_before_the_answer_and_concurrent_writes_share_it() {
    let sources = source("q", "delivery = \"queue\"\n") + &source("f", "");
    let (app, file, _) = setup(&sources).await;
    let trace = file.dir.join("trace.txt");
    let gate = Proc::traced(
        &file,
        &trace,
        "fdatasync,fsync,read,recvfrom,write,writev,sendto,sendmsg",
    );
    let answer = send_signed(gate.public, "q", "sync-q-1", &body("sync-q-1")).await;
    assert_eq!(answer.status, 200);
    app.wait_for("sync-q-1", 1).await;
    let answer = send_signed(gate.public, "f", "sync-f-1", &body("sync-f-1")).await;
    assert_eq!(answer.status, 200);

    // strace writes its file a little after the calls: wait until it shows
    // the second answer.
    let before_load = traced_until(&trace, |text| answers_traced(text) >= 2).await;
    let lines: Vec<String> = before_load.lines().map(str::to_owned).collect();
    for (id, answer_text) in [
        ("sync-q-1", r#"{\"queued\":true,\"event_id\":\"sync-q-1\"}"#),
        ("sync-f-1", r#"{\"app\":true}"#),
    ] {
        // A read another thread's call interrupted is traced in two
        // halves; its data is on the `<... read resumed>` one.
        let read = find(&lines, 0, |l| {
            ["read(", "recvfrom(", "read resumed>", "recvfrom resumed>"]
                .iter()
                .any(|call| l.contains(call))
                && l.contains(id)
        })
        .unwrap_or_else(|| panic!("no read of {id}'s request in the trace:\n{before_load}"));
        let answered = find(&lines, read, |l| {
            (l.contains("write") || l.contains("send")) && l.contains("HTTP/1.1 200")
        })
        .unwrap_or_else(|| panic!("no answer to {id} in the trace:\n{before_load}"));
        assert!(
            lines[answered].contains(answer_text)
                || lines[answered..]
                    .iter()
                    .take(3)
                    .any(|l| l.contains(answer_text)),
            "the answer after {id}'s request is not its own:\n{}",
            lines[answered]
        );
        let synced = find(&lines, read, wal_sync_done);
        assert!(
            synced.is_some_and(|s| s < answered),
            "no fsync of the WAL between reading {id} (line {read}) and answering it (line {answered}):\n{}",
            lines[read..=answered].join("\n")
        );
    }

    // Load: 200 queued events, 20 senders at once.
    let syncs_before = lines.iter().filter(|l| wal_sync_done(l)).count();
    let public = gate.public;
    let mut senders = tokio::task::JoinSet::new();
    for s in 0..20 {
        senders.spawn(async move {
            for i in 0..10 {
                let id = format!("load-{s}-{i}");
                let answer = send_signed(public, "q", &id, &body(&id)).await;
                assert_eq!(answer.json(), json!({"queued": true, "event_id": id}));
            }
        });
    }
    while let Some(done) = senders.join_next().await {
        done.expect("sender");
    }
    let after = traced_until(&trace, |text| answers_traced(text) >= 202).await;
    let syncs = after.lines().filter(|l| wal_sync_done(l)).count() - syncs_before;
    assert!(syncs > 0, "no fsync under load");
    // Each event is one enqueue (plus its claim, which needs no fsync), and
    // the queue worker's settles add writes of their own.
    assert!(
        syncs < 200,
        "{syncs} WAL fsyncs for 200 events: writes of concurrent requests did not share them"
    );
    let (_, metrics) = gate.admin_get("/metrics").await;
    let batch_sum = metric(&metrics, "hookgate_store_batch_size_sum");
    let batch_count = metric(&metrics, "hookgate_store_batch_size_count");
    assert!(
        batch_sum > batch_count,
        "batches of one write only: sum {batch_sum}, count {batch_count}"
    );
    assert!(metric(&metrics, "hookgate_store_sync_seconds_count") > 0.0);
    eprintln!("200 events: {syncs} WAL fsyncs; {batch_sum} writes in {batch_count} batches");
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test]
async fn a_file_with_a_newer_schema_is_refused_naming_both_versions() {
    let (_app, file, db) = setup(&source("f", "")).await;
    {
        let conn = Connection::open(&db).expect("create");
        conn.pragma_update(None, "user_version", 99)
            .expect("version");
    }
    let said = refused_at_start(&file).await;
    let known = hookgate::store::sqlite::schema::VERSION;
    assert!(
        said.contains("version 99") && said.contains(&format!("version {known}")),
        "{said}"
    );
    // `check` says so too, naming the field, the file and both versions.
    let config = file.path.to_str().expect("path").to_owned();
    let (code, _, stderr) =
        crate::delivery_kit::hookgate_cli(&["check", "--config", &config]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{config}: store.path: {}", db.display()))
            && stderr.contains("version 99")
            && stderr.contains(&format!("version {known}")),
        "{stderr}"
    );
    // Untouched.
    let conn = Connection::open(&db).expect("open");
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, 99);
    drop(conn);
    // A file this build knows passes.
    std::fs::remove_file(&db).expect("remove");
    let (code, stdout, stderr) =
        crate::delivery_kit::hookgate_cli(&["check", "--config", &config]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[tokio::test]
async fn a_corrupt_file_is_refused_at_start() {
    let (_app, file, db) = setup(&source("f", "")).await;
    std::fs::write(&db, vec![0x5a_u8; 8192]).expect("garbage");
    let said = refused_at_start(&file).await;
    assert!(said.contains("not a database"), "{said}");
    assert!(said.contains(&db.display().to_string()), "{said}");
}

/// Another process holds the write lock (a file that cannot be written):
/// `503 store_unavailable`, `/readyz` 503, counted; once it lets go, the
/// sender's retry is forwarded.
#[tokio::test]
async fn a_file_that_cannot_be_written_is_503_and_not_ready() {
    let (app, file, db) = setup(&source("f", "")).await;
    let gate = Proc::start(&file);
    assert_eq!(
        send_signed(gate.public, "f", "w1", &body("w1"))
            .await
            .status,
        200
    );

    let mut lock = Connection::open(&db).expect("open");
    lock.busy_timeout(Duration::from_secs(5)).expect("busy");
    let held = lock
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .expect("lock");
    let refused = send_signed(gate.public, "f", "w2", &body("w2")).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.json(), json!({"error": "store_unavailable"}));
    let (status, _) = gate.admin_get("/readyz").await;
    assert_eq!(status, 503);
    let (_, metrics) = gate.admin_get("/metrics").await;
    assert!(
        metric(&metrics, "hookgate_store_errors_total") >= 1.0,
        "{metrics}"
    );
    held.rollback().expect("let go");

    let retried = send_signed(gate.public, "f", "w2", &body("w2")).await;
    assert_eq!(retried.status, 200, "{}", retried.body);
    assert_eq!(app.seen_event("w2").len(), 1);
    let (status, _) = gate.admin_get("/readyz").await;
    assert_eq!(status, 200);
    assert!(!gate.output().contains("panicked"));
}

/// `check` refuses a path whose directory is missing, with file:line and
/// field; a relative path is taken from the config file's directory.
#[tokio::test]
async fn check_refuses_a_missing_directory_and_paths_are_relative_to_the_config() {
    let app = App::start().await;
    let file = ConfigFile::write("");
    let missing: PathBuf = file.dir.join("no-such-dir").join("hookgate.db");
    let text = config(&app, &missing, &source("f", ""));
    std::fs::write(&file.path, &text).expect("config");
    let line = text
        .lines()
        .position(|l| l.starts_with("path = "))
        .expect("path line")
        + 1;
    let config_path = file.path.to_string_lossy().into_owned();
    let (code, out, err) = hookgate_cli(&["check", "--config", &config_path]).await;
    assert_eq!(code, 1, "{out}{err}");
    let expected = format!("{config_path}:{line}: store.path: the directory");
    assert!(err.contains(&expected), "want {expected:?} in\n{err}");
    assert!(err.contains("does not exist"), "{err}");

    let relative = text.replace(&missing.display().to_string(), "rel.db");
    std::fs::write(&file.path, relative).expect("config");
    let (code, out, err) = hookgate_cli(&["check", "--config", &config_path]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("sqlite store"), "{out}");
    let gate = Proc::start(&file);
    assert!(file.dir.join("rel.db").exists());
    drop(gate);
}
