//! What the delivery tests (version gate, queue, dead letters) share: a
//! recording app whose answers a test scripts, hookgate started in-process
//! on a real store (a `redis-server`, or a SQLite file in a temporary
//! directory), the store's queue and dead-letter counts read behind
//! hookgate's back, signed GitHub-style requests, and polling with a deadline.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hookgate::config::{Config, SystemSecrets};
use hookgate::scheme::Scheme;
use hookgate::secret::Secret;
use hookgate::state::State;
use hookgate::{Listeners, run};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::redis::RedisServer;

pub const SECRET: &str = "delivery-test-secret";
pub const ADMIN_TOKEN: &str = "delivery-admin-token";
/// Upper bound for anything a test waits for.
pub const WAIT: Duration = Duration::from_secs(20);

/// One request the app received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The status the app answered with.
    pub status: u16,
    /// When it arrived.
    pub at: Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// What the app answers: scripted statuses first, then `then`.
#[derive(Debug, Clone)]
struct Script {
    next: VecDeque<(u16, Option<String>)>,
    then: u16,
}

/// A recording application on 127.0.0.1:0.
#[derive(Clone)]
pub struct App {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<Script>>,
    /// While true, requests wait before being answered.
    hold: watch::Sender<bool>,
    arrivals: Arc<std::sync::atomic::AtomicUsize>,
}

impl App {
    pub async fn start() -> App {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind app");
        let addr = listener.local_addr().expect("app addr");
        let (hold, _) = watch::channel(false);
        let app = App {
            addr,
            seen: Arc::default(),
            script: Arc::new(Mutex::new(Script {
                next: VecDeque::new(),
                then: 200,
            })),
            hold,
            arrivals: Arc::default(),
        };
        let served = app.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let app = served.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let app = app.clone();
                        async move { Ok::<_, Infallible>(app.answer(request).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        app
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let at = Instant::now();
        self.arrivals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut held = self.hold.subscribe();
        while *held.borrow_and_update() {
            if held.changed().await.is_err() {
                break;
            }
        }
        let (status, retry_after) = {
            let mut script = self.script.lock().expect("script lock");
            let then = script.then;
            script.next.pop_front().unwrap_or((then, None))
        };
        self.seen.lock().expect("seen lock").push(Seen {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            headers: parts.headers,
            body,
            status,
            at,
        });
        let mut response = Response::new(Full::new(Bytes::from_static(b"{\"app\":true}")));
        *response.status_mut() = StatusCode::from_u16(status).expect("status");
        if let Some(value) = retry_after {
            response
                .headers_mut()
                .insert("retry-after", value.parse().expect("retry-after"));
        }
        response
    }

    /// Answers `status` from now on (after any scripted answers).
    pub fn answer_with(&self, status: u16) {
        self.script.lock().expect("script lock").then = status;
    }

    /// Answers these statuses first, one per request.
    pub fn then_answer(&self, statuses: &[u16]) {
        let mut script = self.script.lock().expect("script lock");
        script.next.extend(statuses.iter().map(|s| (*s, None)));
    }

    /// Answers once with `status` and a `Retry-After`.
    pub fn answer_once_retry_after(&self, status: u16, retry_after: &str) {
        let mut script = self.script.lock().expect("script lock");
        script
            .next
            .push_back((status, Some(retry_after.to_owned())));
    }

    /// Holds every request (received, unanswered) until [`App::release`].
    pub fn hold(&self) {
        self.hold.send_replace(true);
    }

    pub fn release(&self) {
        self.hold.send_replace(false);
    }

    /// Every answered request, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen lock").clone()
    }

    /// Answered requests carrying this event id.
    pub fn seen_event(&self, event_id: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.header("x-verified-event-id").as_deref() == Some(event_id))
            .collect()
    }

    /// Waits until at least `n` answered requests carry `event_id`.
    pub async fn wait_for(&self, event_id: &str, n: usize) -> Vec<Seen> {
        eventually(&format!("{n} requests with event id {event_id}"), || {
            let seen = self.seen_event(event_id);
            (seen.len() >= n).then_some(seen)
        })
        .await
    }

    /// Waits until every request that arrived has been answered and none
    /// arrived for 300 ms: a sender that died mid-request has had its
    /// request answered (to nobody) with the status scripted then.
    pub async fn quiet(&self) {
        let mut last = (usize::MAX, Instant::now());
        eventually("the app to go quiet", || {
            let arrived = self.arrivals.load(std::sync::atomic::Ordering::SeqCst);
            let answered = self.seen().len();
            if arrived != last.0 {
                last = (arrived, Instant::now());
                return None;
            }
            (answered == arrived && last.1.elapsed() >= Duration::from_millis(300)).then_some(())
        })
        .await
    }

    /// Waits until `n` requests have arrived in all (held ones included).
    pub async fn arrived(&self, n: usize) {
        eventually(&format!("{n} requests at the app"), || {
            (self.arrivals.load(std::sync::atomic::Ordering::SeqCst) >= n).then_some(())
        })
        .await
    }
}

/// Polls `check` every 20 ms until it gives a value, failing after [`WAIT`].
pub async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One `[[source]]` of a test config, GitHub scheme.
pub fn source(name: &str, extra: &str) -> String {
    format!(
        "[[source]]\nname = \"{name}\"\npath = \"/hooks/{name}\"\nscheme = \"github\"\n\
         secrets = [\"{SECRET}\"]\n{extra}\n"
    )
}

/// The store a delivery test runs on: both keep the same promises (DESIGN
/// §4a, §6), so the contract tests run on each.
pub enum Backend {
    /// A `redis-server` of its own, keys under `hg:`.
    Redis(RedisServer),
    /// A SQLite file, `hookgate.db` in this directory.
    Sqlite(tempfile::TempDir),
}

impl Backend {
    pub fn redis() -> Backend {
        Backend::Redis(RedisServer::start())
    }

    pub fn sqlite() -> Backend {
        let dir = tempfile::Builder::new()
            .prefix("hookgate-sqlite-")
            .tempdir()
            .expect("temp dir for the SQLite file");
        Backend::Sqlite(dir)
    }

    /// The SQLite file (an absolute path), for a sqlite backend.
    pub fn db_path(&self) -> Option<PathBuf> {
        match self {
            Backend::Redis(_) => None,
            Backend::Sqlite(dir) => Some(dir.path().join("hookgate.db")),
        }
    }

    /// The lines of `[store]` that point hookgate at this backend.
    pub fn store_toml(&self) -> String {
        match self {
            Backend::Redis(redis) => format!(
                "kind = \"redis\"\nurl = \"{}\"\nkey_prefix = \"hg\"\n",
                redis.url()
            ),
            Backend::Sqlite(_) => {
                let path = self.db_path().expect("a sqlite path");
                let path = path.to_str().expect("a UTF-8 temp path");
                // A literal string: no escapes to get wrong.
                assert!(!path.contains('\''), "{path}");
                format!("kind = \"sqlite\"\npath = '{path}'\nsync = \"full\"\n")
            }
        }
    }

    /// Entries of `source` still in the store's queue: ready to deliver,
    /// being delivered, or waiting for a retry.
    pub fn queue_len(&self, source: &str) -> i64 {
        match self {
            Backend::Redis(redis) => {
                let mut conn = redis.client();
                let ready: i64 = redis::cmd("XLEN")
                    .arg(format!("hg:queue:{{{source}}}"))
                    .query(&mut conn)
                    .expect("XLEN");
                let waiting: i64 = redis::cmd("ZCARD")
                    .arg(format!("hg:queue:{{{source}}}:delayed"))
                    .query(&mut conn)
                    .expect("ZCARD");
                ready + waiting
            }
            Backend::Sqlite(_) => {
                self.sqlite_count("SELECT count(*) FROM queue WHERE source = ?1", &[source])
            }
        }
    }

    /// Dead letters in the store, of every source.
    pub fn dead_letters(&self) -> i64 {
        match self {
            Backend::Redis(redis) => {
                let mut conn = redis.client();
                redis::cmd("XLEN")
                    .arg("hg:dlq")
                    .query(&mut conn)
                    .expect("XLEN")
            }
            Backend::Sqlite(_) => self.sqlite_count("SELECT count(*) FROM dead_letters", &[]),
        }
    }

    /// One count from the SQLite file, read on a read-only connection of
    /// its own (the way an operator's `sqlite3` shell would).
    fn sqlite_count(&self, sql: &str, params: &[&str]) -> i64 {
        let path = self.db_path().expect("a sqlite path");
        let conn = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap_or_else(|e| panic!("open {} read-only: {e}", path.display()));
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn.query_row(sql, rusqlite::params_from_iter(params), |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// A config for `app` on `backend` with the given sources.
pub fn config(app: &App, backend: &Backend, sources: &str) -> String {
    config_with_store(app, &backend.store_toml(), sources)
}

/// A config for `app` whose `[store]` holds `store` (raw lines).
pub fn config_with_store(app: &App, store: &str, sources: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"{}\"\nupstream_timeout = \"1s\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{ADMIN_TOKEN}\"\n\n\
         [store]\n{store}\n{sources}",
        app.url()
    )
}

/// hookgate running in this process.
pub struct Gate {
    pub public: SocketAddr,
    pub admin: SocketAddr,
    pub state: Arc<State>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Gate {
    pub async fn start(toml: &str) -> Gate {
        let config = match Config::from_toml_str(toml, &SystemSecrets) {
            Ok(c) => c,
            Err(e) => panic!("test config refused:\n{e}\n{toml}"),
        };
        let store = hookgate::open_store(&config).expect("store");
        let state = Arc::new(State::new(config, store).expect("state"));
        let public = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let admin = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let (public_addr, admin_addr) = (
            public.local_addr().expect("addr"),
            admin.local_addr().expect("addr"),
        );
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(run(
            Arc::clone(&state),
            Listeners { public, admin },
            shutdown.clone(),
        ));
        Gate {
            public: public_addr,
            admin: admin_addr,
            state,
            shutdown,
            task,
        }
    }

    /// Sends a signed event to source `name`.
    pub async fn send(&self, name: &str, id: &str, body: &str) -> Answer {
        send_signed(self.public, name, id, body).await
    }

    /// Stops it the way SIGTERM does, waiting for the drain.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }

    pub async fn metrics(&self) -> String {
        let answer = request(self.admin, "GET", "/metrics", &[], Bytes::new()).await;
        answer.body
    }
}

/// A response, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// The headers of a valid GitHub-style request for `body`.
pub fn signed_headers(id: &str, body: &[u8]) -> Vec<(String, String)> {
    let mut headers = Scheme::Github
        .sign(&Secret::new(SECRET.as_bytes()), body, Some(id), 0)
        .unwrap_or_else(|e| panic!("github signs: {e}"));
    headers.push(("x-github-event".into(), "thing.updated".into()));
    headers.push(("content-type".into(), "application/json".into()));
    headers
}

pub async fn send_signed(addr: SocketAddr, name: &str, id: &str, body: &str) -> Answer {
    let headers = signed_headers(id, body.as_bytes());
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    request(
        addr,
        "POST",
        &format!("/hooks/{name}?q=1"),
        &headers,
        Bytes::copy_from_slice(body.as_bytes()),
    )
    .await
}

pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Answer {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(body)).expect("request");
    let response = tokio::time::timeout(WAIT, client.request(request))
        .await
        .expect("answer in time")
        .expect("answer");
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// The `hookgate` binary with a config file written to a temporary directory.
pub struct ConfigFile {
    pub dir: PathBuf,
    pub path: PathBuf,
}

impl ConfigFile {
    pub fn write(toml: &str) -> ConfigFile {
        let dir = std::env::temp_dir().join(format!(
            "hookgate-delivery-{}-{:x}",
            std::process::id(),
            rand_u64()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("hookgate.toml");
        std::fs::write(&path, toml).expect("write config");
        ConfigFile { dir, path }
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    h.finish()
}

/// Runs `hookgate ARGS` to completion (bounded) off the async threads, so
/// an in-process app can answer it; returns exit code, stdout and stderr.
pub async fn hookgate_cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        hookgate_cli_blocking(&args)
    })
    .await
    .expect("cli thread")
}

fn hookgate_cli_blocking(args: &[&str]) -> (i32, String, String) {
    let mut child = crate::support::process::Guard::new(
        std::process::Command::new(env!("CARGO_BIN_EXE_hookgate"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("run hookgate"),
    );
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(Some(_)) = child.get_mut().try_wait() {
            break;
        }
        // The guard kills it.
        assert!(
            Instant::now() <= deadline,
            "hookgate {args:?} did not finish in time"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.take().wait_with_output().expect("output");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
