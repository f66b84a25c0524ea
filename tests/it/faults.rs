//! Fault scenarios: real hookgate processes, real Redis, an app that misbehaves
//! on purpose, and senders that retry like real ones (on a compressed
//! schedule), under a bounded load. Each scenario prints one `FAULT-RESULT`
//! JSON line and asserts the two numbers that matter: **0 lost** and **0
//! delivered again after the sender was told 2xx**.
//!
//! The failovers of a replicated store (Sentinel, Cluster with replicas),
//! with and without `min_replicas`, are in [`failover`].
//!
//! The load is small by default so the suite stays fast;
//! `HOOKGATE_FAULT_EVENTS=N` raises it (`bench/reliability.sh` runs every
//! scenario with a bigger N in release mode and writes the table in
//! `docs/reliability.md` from the printed lines).
//!
//! # What is counted
//!
//! - **accepted**: events for which the sender got a 2xx (the app's, or
//!   hookgate's `duplicate`).
//! - **refused**: events answered with a non-retryable 4xx that the status
//!   table documents (e.g. `timestamp_outside_window` for a sender whose
//!   clock is off by more than the tolerance). Expected only where stated.
//! - **lost**: an event the sender was told was accepted but the app never
//!   accepted, plus every event the sender gave up on after its last retry
//!   (every scenario ends with all parts healthy again, so giving up is a loss).
//! - **redelivered after 2xx**: deliveries to the app of an event that
//!   arrived after its sender had already been told 2xx. Every scenario ends
//!   with a second copy of each accepted event, sent later (as at-least-once
//!   senders do), to catch a nonce that was forgotten.
//! - **app accepted twice**: events the app answered 2xx more than once. This
//!   is 0 everywhere except where the app answers 2xx to a replica that is
//!   killed before relaying it (`replica_killed_after_the_app_accepted`):
//!   nobody recorded that 2xx, so the retry is forwarded once the lease runs
//!   out. That row shows the at-least-once boundary; the app's own
//!   idempotency on `X-Verified-Event-Id` covers it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

mod failover;

use crate::support::redis::{RedisCluster, RedisServer};
use crate::support::{ConfigBuilder, Event, Hookgate, SourceSpec, StoreSpec, WAIT, now};

/// Scales every scenario; unset means a small, fast load.
const EVENTS_VAR: &str = "HOOKGATE_FAULT_EVENTS";
const DEFAULT_EVENTS: usize = 40;
/// Seeds the app's faults and the storm's shuffle, so a run can be repeated.
const SEED: u64 = 0x5eed_f417;
/// Requests a sender has in flight at once.
const CONCURRENCY: usize = 16;

fn event_count() -> usize {
    match std::env::var(EVENTS_VAR) {
        Err(_) => DEFAULT_EVENTS,
        Ok(v) => match v.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => panic!("{EVENTS_VAR} must be a positive integer, got {v:?}"),
        },
    }
}

// ---------------------------------------------------------------------------
// The sender

/// A retry schedule, compressed from a real sender's minutes and hours:
/// wait `first`, doubling up to `cap`, for at most `tries` attempts.
#[derive(Debug, Clone, Copy)]
struct Retry {
    tries: u32,
    first: Duration,
    cap: Duration,
}

/// About 16 s of retrying: longer than a lease (upstream_timeout + 5 s) plus
/// a Redis or cluster restart.
const RETRY: Retry = Retry {
    tries: 20,
    first: Duration::from_millis(50),
    cap: Duration::from_secs(1),
};

impl Retry {
    fn delay(&self, attempt: u32) -> Duration {
        self.first
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.cap)
    }
}

/// What one attempt got back.
#[derive(Debug, Clone)]
enum Answer {
    /// The app's own 2xx, relayed.
    App,
    /// hookgate's `200 duplicate` (or another 2xx of its own).
    Duplicate,
    /// A documented, non-retryable refusal: status and error word.
    Refused(String),
    /// Worth retrying: 408, 429, 5xx, or no answer at all.
    Retry(String),
}

#[derive(Debug, Clone)]
enum Fate {
    Accepted,
    Refused(String),
    GaveUp(String),
}

#[derive(Debug, Clone)]
struct Sent {
    id: String,
    fate: Fate,
    /// When the sender first got a 2xx.
    accepted_at: Option<Instant>,
    /// Accepted on the first attempt: the sender got that one answer only.
    first_try: bool,
}

/// Senders of one source, spreading attempts over the replicas like a load
/// balancer would: attempt `n` of a delivery that started on replica `r` goes
/// to replica `(r + n) % replicas`.
struct Sender {
    client: Client<HttpConnector, Full<Bytes>>,
    replicas: Vec<String>,
    source: SourceSpec,
    /// Seconds the sender's clock is ahead (negative: behind).
    skew: i64,
    retry: Retry,
    requests: AtomicUsize,
    answers: Mutex<BTreeMap<String, usize>>,
    /// When each `503 store_unavailable` came back (the failover figures).
    unavailable: Mutex<Vec<Instant>>,
}

impl Sender {
    fn new(replicas: &[&Hookgate], source: &SourceSpec, skew: i64) -> Arc<Sender> {
        Arc::new(Sender {
            client: Client::builder(TokioExecutor::new()).build_http(),
            replicas: replicas.iter().map(|g| g.public_url()).collect(),
            source: source.clone(),
            skew,
            retry: RETRY,
            requests: AtomicUsize::new(0),
            answers: Mutex::new(BTreeMap::new()),
            unavailable: Mutex::new(Vec::new()),
        })
    }

    fn tally(&self, label: &str) {
        *self
            .answers
            .lock()
            .expect("answers lock")
            .entry(label.to_owned())
            .or_default() += 1;
    }

    async fn attempt(&self, replica: usize, event: &Event) -> Answer {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let url = format!("{}{}", self.replicas[replica], self.source.path);
        let headers = self
            .source
            .request_headers_with(event, 0, now() + self.skew);
        let mut request = Request::new(Full::new(Bytes::from(event.body.clone())));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = url.parse().expect("replica URL");
        for (name, value) in &headers {
            request.headers_mut().append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                value.parse().expect("header value"),
            );
        }
        let exchange = async {
            let response = self.client.request(request).await.map_err(|_| ())?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|_| ())?
                .to_bytes();
            Ok::<_, ()>((status, body))
        };
        let answer = match tokio::time::timeout(WAIT, exchange).await {
            Err(_) => Answer::Retry("no answer".into()),
            Ok(Err(())) => Answer::Retry("connection error".into()),
            Ok(Ok((status, body))) => classify(status, &body),
        };
        if matches!(&answer, Answer::Retry(label) if label == "503 store_unavailable") {
            self.unavailable
                .lock()
                .expect("unavailable lock")
                .push(Instant::now());
        }
        self.tally(&match &answer {
            Answer::App => "2xx app".to_owned(),
            Answer::Duplicate => "200 duplicate".to_owned(),
            Answer::Refused(label) | Answer::Retry(label) => label.clone(),
        });
        answer
    }

    /// Sends `event` until it is accepted, refused, or the schedule runs out.
    async fn deliver(&self, event: &Event, first_replica: usize) -> Sent {
        let mut last = String::new();
        for attempt in 0..self.retry.tries {
            let replica = (first_replica + attempt as usize) % self.replicas.len();
            match self.attempt(replica, event).await {
                Answer::App | Answer::Duplicate => {
                    return Sent {
                        id: event.id.clone(),
                        fate: Fate::Accepted,
                        accepted_at: Some(Instant::now()),
                        first_try: attempt == 0,
                    };
                }
                Answer::Refused(label) => {
                    return Sent {
                        id: event.id.clone(),
                        fate: Fate::Refused(label),
                        accepted_at: None,
                        first_try: false,
                    };
                }
                Answer::Retry(label) => last = label,
            }
            tokio::time::sleep(self.retry.delay(attempt)).await;
        }
        Sent {
            id: event.id.clone(),
            fate: Fate::GaveUp(last),
            accepted_at: None,
            first_try: false,
        }
    }
}

fn classify(status: StatusCode, body: &[u8]) -> Answer {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let word = json
        .as_ref()
        .and_then(|j| j.get("error"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let label = match &word {
        Some(w) => format!("{} {w}", status.as_u16()),
        None => format!("{} app", status.as_u16()),
    };
    if status.is_success() {
        return if body == APP_ACCEPTED.as_bytes() {
            Answer::App
        } else {
            Answer::Duplicate
        };
    }
    match status.as_u16() {
        408 | 429 | 500..=599 => Answer::Retry(label),
        _ => Answer::Refused(label),
    }
}

/// Runs every `(event, first replica)` job with [`CONCURRENCY`] in flight;
/// `accepted` counts acceptances as they happen (fault injectors watch it).
async fn run_load(
    sender: &Arc<Sender>,
    jobs: Vec<(Event, usize)>,
    accepted: &Arc<AtomicUsize>,
) -> Vec<Sent> {
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut tasks = JoinSet::new();
    for (event, replica) in jobs {
        let (sender, permits, accepted) = (sender.clone(), permits.clone(), accepted.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore open");
            let sent = sender.deliver(&event, replica).await;
            if matches!(sent.fate, Fate::Accepted) {
                accepted.fetch_add(1, Ordering::Relaxed);
            }
            sent
        });
    }
    let mut out = Vec::new();
    while let Some(sent) = tasks.join_next().await {
        out.push(sent.expect("sender task"));
    }
    out
}

/// Waits (bounded) until `counter` reaches `n`.
async fn wait_count(counter: &AtomicUsize, n: usize, what: &str) {
    let deadline = tokio::time::Instant::now() + WAIT * 3;
    while counter.load(Ordering::Relaxed) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} of {n} within {:?}",
            counter.load(Ordering::Relaxed),
            WAIT * 3
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------
// The app

const APP_ACCEPTED: &str = "ok";

/// How the app dealt with one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handling {
    /// Answered 2xx.
    Accepted,
    /// Answered 500 at once.
    Failed,
    /// Answered 503 only after hookgate's `upstream_timeout`.
    Hung,
    /// Held until the test released it, then answered `held_status`.
    Held,
}

#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    at: Instant,
    handling: Handling,
    /// The status the app answered (a held delivery's is known when held).
    status: u16,
}

/// The app's behaviour, fixed per scenario.
#[derive(Debug, Clone)]
struct Behaviour {
    /// Share of deliveries that fail: half answer 500, half hang.
    fault_rate: f64,
    hang: Duration,
    /// Time the app takes to accept.
    work: Duration,
    /// Ids whose first delivery is held until [`ChaosApp::release_held`].
    hold_first: HashSet<String>,
    /// What a held delivery is answered once released.
    held_status: u16,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            fault_rate: 0.0,
            hang: Duration::ZERO,
            work: Duration::from_millis(2),
            hold_first: HashSet::new(),
            held_status: 503,
        }
    }
}

struct AppState {
    behaviour: Mutex<Behaviour>,
    rng: Mutex<StdRng>,
    deliveries: Mutex<Vec<Delivery>>,
    held: AtomicUsize,
    release: watch::Sender<bool>,
    arrived: Notify,
}

/// The application behind hookgate: records every delivery (by
/// `X-Verified-Event-Id`) and fails, hangs or holds on purpose.
struct ChaosApp {
    addr: SocketAddr,
    state: Arc<AppState>,
    server: tokio::task::JoinHandle<()>,
}

impl ChaosApp {
    async fn start(behaviour: Behaviour) -> ChaosApp {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind app");
        let addr = listener.local_addr().expect("app address");
        let (release, _) = watch::channel(false);
        let state = Arc::new(AppState {
            behaviour: Mutex::new(behaviour),
            rng: Mutex::new(StdRng::seed_from_u64(SEED)),
            deliveries: Mutex::new(Vec::new()),
            held: AtomicUsize::new(0),
            release,
            arrived: Notify::new(),
        });
        let server = tokio::spawn(serve_app(listener, state.clone()));
        ChaosApp {
            addr,
            state,
            server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn deliveries(&self) -> Vec<Delivery> {
        self.state.deliveries.lock().expect("deliveries").clone()
    }

    fn held(&self) -> &AtomicUsize {
        &self.state.held
    }

    fn release_held(&self) {
        self.state.release.send_replace(true);
    }
}

impl Drop for ChaosApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve_app(listener: TcpListener, state: Arc<AppState>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                connections.spawn(async move {
                    let service = service_fn(move |req| app_handle(req, state.clone()));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn app_handle(
    req: Request<Incoming>,
    state: Arc<AppState>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let id = req
        .headers()
        .get("x-verified-event-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let _ = req.into_body().collect().await;
    let (handling, status, wait) = {
        let mut behaviour = state.behaviour.lock().expect("behaviour");
        if behaviour.hold_first.remove(&id) {
            (Handling::Held, behaviour.held_status, Duration::ZERO)
        } else {
            let roll: f64 = state.rng.lock().expect("rng").random();
            if roll < behaviour.fault_rate / 2.0 {
                (Handling::Failed, 500, Duration::ZERO)
            } else if roll < behaviour.fault_rate {
                (Handling::Hung, 503, behaviour.hang)
            } else {
                (Handling::Accepted, 200, behaviour.work)
            }
        }
    };
    state.deliveries.lock().expect("deliveries").push(Delivery {
        id,
        at: Instant::now(),
        handling,
        status,
    });
    state.arrived.notify_waiters();
    if handling == Handling::Held {
        state.held.fetch_add(1, Ordering::Relaxed);
        let mut release = state.release.subscribe();
        let _ = release.wait_for(|released| *released).await;
    }
    tokio::time::sleep(wait).await;
    let body = if status == 200 {
        APP_ACCEPTED
    } else {
        "app error"
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = StatusCode::from_u16(status).expect("status");
    Ok(response)
}

// ---------------------------------------------------------------------------
// The report

#[derive(Debug)]
struct Report {
    scenario: &'static str,
    events: usize,
    requests: usize,
    accepted: usize,
    refused: usize,
    gave_up: usize,
    lost: usize,
    app_received: usize,
    app_accepted: usize,
    app_accepted_twice: usize,
    /// Of those, events whose every copy a sender sent was accepted on its
    /// first attempt: no `503` made a sender send it again, so the app
    /// seeing it twice is hookgate's doing.
    twice_after_one_answer: usize,
    redelivered_after_2xx: usize,
    answers: BTreeMap<String, usize>,
    /// The last answer of each event refused or given up on, counted.
    endings: BTreeMap<String, usize>,
    seconds: f64,
}

impl Report {
    fn new(
        scenario: &'static str,
        events: usize,
        sent: &[Sent],
        resent: &[Sent],
        app: &ChaosApp,
        senders: &[&Arc<Sender>],
        started: Instant,
    ) -> Report {
        let mut accepted_at: HashMap<&str, Instant> = HashMap::new();
        let mut distinct: HashSet<&str> = HashSet::new();
        let (mut refused, mut gave_up) = (HashSet::new(), HashSet::new());
        let mut endings: BTreeMap<String, usize> = BTreeMap::new();
        for s in sent {
            distinct.insert(&s.id);
            match (&s.fate, s.accepted_at) {
                (Fate::Accepted, Some(at)) => {
                    let first = accepted_at.entry(&s.id).or_insert(at);
                    *first = (*first).min(at);
                }
                (Fate::Refused(last), _) => {
                    refused.insert(s.id.as_str());
                    *endings.entry(format!("refused: {last}")).or_default() += 1;
                }
                (Fate::GaveUp(last), _) => {
                    gave_up.insert(s.id.as_str());
                    *endings.entry(format!("gave up: {last}")).or_default() += 1;
                }
                _ => {}
            }
        }
        assert_eq!(distinct.len(), events, "every event was sent");
        // A copy refused or given up on while another copy got through is
        // not a lost event; only events never accepted count.
        refused.retain(|id| !accepted_at.contains_key(id));
        gave_up.retain(|id| !accepted_at.contains_key(id));

        let mut retried: HashSet<&str> = HashSet::new();
        for s in sent {
            if !s.first_try {
                retried.insert(&s.id);
            }
        }
        let deliveries = app.deliveries();
        let mut app_accepted: HashMap<&str, usize> = HashMap::new();
        let mut received = HashSet::new();
        let mut redelivered = 0;
        for d in &deliveries {
            received.insert(d.id.as_str());
            if d.status == 200 {
                *app_accepted.entry(&d.id).or_default() += 1;
            }
            if accepted_at.get(d.id.as_str()).is_some_and(|t| d.at > *t) {
                redelivered += 1;
            }
        }
        let never_reached = accepted_at
            .keys()
            .filter(|id| !app_accepted.contains_key(*id))
            .count();
        for r in resent {
            assert!(
                matches!(r.fate, Fate::Accepted),
                "a late copy of an accepted event was not accepted: {r:?}"
            );
        }
        let mut answers = BTreeMap::new();
        let mut requests = 0;
        for s in senders {
            requests += s.requests.load(Ordering::Relaxed);
            for (k, v) in s.answers.lock().expect("answers").iter() {
                *answers.entry(k.clone()).or_default() += v;
            }
        }
        Report {
            scenario,
            events,
            requests,
            accepted: accepted_at.len(),
            refused: refused.len(),
            gave_up: gave_up.len(),
            lost: never_reached + gave_up.len(),
            app_received: received.len(),
            app_accepted: app_accepted.len(),
            app_accepted_twice: app_accepted.values().filter(|n| **n > 1).count(),
            twice_after_one_answer: app_accepted
                .iter()
                .filter(|(id, n)| **n > 1 && !retried.contains(*id))
                .count(),
            redelivered_after_2xx: redelivered,
            answers,
            endings,
            seconds: started.elapsed().as_secs_f64(),
        }
    }

    /// Prints the `FAULT-RESULT` line, then checks the guarantees: nothing
    /// lost, nothing delivered again after a 2xx, exactly `refused` events
    /// refused (documented, non-retryable), and the app accepting
    /// `app_accepted_twice` events twice (0 but where a replica dies with
    /// the app's 2xx in hand).
    fn check(&self, refused: usize, app_accepted_twice: usize) {
        let line = json!({
            "scenario": self.scenario,
            "events": self.events,
            "requests": self.requests,
            "accepted": self.accepted,
            "refused": self.refused,
            "gave_up": self.gave_up,
            "lost": self.lost,
            "app_received": self.app_received,
            "app_accepted": self.app_accepted,
            "app_accepted_twice": self.app_accepted_twice,
            "redelivered_after_2xx": self.redelivered_after_2xx,
            "answers": self.answers,
            "endings": self.endings,
            "seconds": (self.seconds * 10.0).round() / 10.0,
        });
        println!("FAULT-RESULT {line}");
        assert_eq!(self.lost, 0, "lost events: {line}");
        assert_eq!(
            self.redelivered_after_2xx, 0,
            "redelivered after 2xx: {line}"
        );
        assert_eq!(self.refused, refused, "refused events: {line}");
        assert_eq!(self.app_accepted_twice, app_accepted_twice, "{line}");
        assert_eq!(self.accepted + self.refused, self.events, "{line}");
        assert_eq!(self.app_accepted, self.accepted, "{line}");
    }
}

// ---------------------------------------------------------------------------
// Scenarios

fn events(source: &SourceSpec, scenario: &str, n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| source.event(&format!("evt_{scenario}_{i:05}"), "invoice.paid"))
        .collect()
}

/// Each event once, its first attempt spread over the replicas.
fn spread(events: &[Event], replicas: usize) -> Vec<(Event, usize)> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.clone(), i % replicas))
        .collect()
}

/// A later copy of every accepted event, as at-least-once senders send.
async fn resend_accepted(sender: &Arc<Sender>, sent: &[Sent], all: &[Event]) -> Vec<Sent> {
    let accepted: HashSet<&str> = sent
        .iter()
        .filter(|s| matches!(s.fate, Fate::Accepted))
        .map(|s| s.id.as_str())
        .collect();
    let jobs: Vec<(Event, usize)> = all
        .iter()
        .filter(|e| accepted.contains(e.id.as_str()))
        .enumerate()
        .map(|(i, e)| (e.clone(), i % sender.replicas.len()))
        .collect();
    run_load(sender, jobs, &Arc::new(AtomicUsize::new(0))).await
}

async fn replicas(config: &ConfigBuilder, n: usize) -> Vec<Hookgate> {
    let toml = config.toml();
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(Hookgate::start(&toml).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_mid_load_and_restarted() {
    let started = Instant::now();
    let n = event_count();
    let redis = RedisServer::start_persistent();
    let app = ChaosApp::start(Behaviour::default()).await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .upstream_timeout("1s")
        .source(stripe.clone());
    let gates = replicas(&config, 2).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);
    let all = events(&stripe, "redis", n);
    let accepted = Arc::new(AtomicUsize::new(0));

    let load = run_load(&sender, spread(&all, 2), &accepted);
    let fault = async {
        wait_count(&accepted, n / 3, "accepted before the kill").await;
        let mut redis = redis;
        redis.stop();
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::task::spawn_blocking(move || {
            redis.restart();
            redis
        })
        .await
        .expect("restart task")
    };
    let (sent, _redis) = tokio::join!(load, fault);
    let resent = resend_accepted(&sender, &sent, &all).await;
    Report::new("redis_killed", n, &sent, &resent, &app, &[&sender], started).check(0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_master_killed_mid_load_and_restarted() {
    let started = Instant::now();
    let n = event_count();
    let cluster = RedisCluster::start_persistent(3);
    let app = ChaosApp::start(Behaviour::default()).await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&app.url())
        .store(StoreSpec::Cluster(cluster.urls()))
        .upstream_timeout("1s")
        .source(stripe.clone());
    let gates = replicas(&config, 2).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);
    let all = events(&stripe, "cluster", n);
    let accepted = Arc::new(AtomicUsize::new(0));

    let load = run_load(&sender, spread(&all, 2), &accepted);
    let fault = async {
        wait_count(&accepted, n / 3, "accepted before the kill").await;
        let mut cluster = cluster;
        cluster.stop_node(0);
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::task::spawn_blocking(move || {
            cluster.restart_node(0);
            cluster
        })
        .await
        .expect("restart task")
    };
    let (sent, _cluster) = tokio::join!(load, fault);
    let resent = resend_accepted(&sender, &sent, &all).await;
    Report::new(
        "cluster_master_killed",
        n,
        &sent,
        &resent,
        &app,
        &[&sender],
        started,
    )
    .check(0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_fails_or_hangs_for_30_percent_of_requests() {
    let started = Instant::now();
    let n = event_count();
    let redis = RedisServer::start();
    let app = ChaosApp::start(Behaviour {
        fault_rate: 0.3,
        hang: Duration::from_millis(800),
        ..Behaviour::default()
    })
    .await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .upstream_timeout("300ms")
        .source(stripe.clone());
    let gates = replicas(&config, 2).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);
    let all = events(&stripe, "app_faults", n);

    let sent = run_load(&sender, spread(&all, 2), &Arc::new(AtomicUsize::new(0))).await;
    let resent = resend_accepted(&sender, &sent, &all).await;
    let report = Report::new(
        "app_5xx_or_hang_30pct",
        n,
        &sent,
        &resent,
        &app,
        &[&sender],
        started,
    );
    let faults = app
        .deliveries()
        .iter()
        .filter(|d| matches!(d.handling, Handling::Failed | Handling::Hung))
        .count();
    assert!(faults > 0, "the app did fail some deliveries");
    report.check(0, 0);
}

/// Replica 0 is killed while the app holds the first delivery of a few
/// events it forwarded; the senders retry on the other replicas, get
/// `in_flight` until the dead replica's lease runs out, then get through.
async fn replica_killed_mid_request(scenario: &'static str, held_status: u16) -> Report {
    let started = Instant::now();
    let n = event_count().max(6);
    let redis = RedisServer::start();
    let stripe = SourceSpec::stripe();
    let all = events(&stripe, scenario, n);
    let victims: Vec<Event> = all[..3].to_vec();
    let app = ChaosApp::start(Behaviour {
        hold_first: victims.iter().map(|e| e.id.clone()).collect(),
        held_status,
        ..Behaviour::default()
    })
    .await;
    let config = ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .upstream_timeout("1s")
        .source(stripe.clone());
    let gates = replicas(&config, 3).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);

    // The victims go to replica 0 first; the rest of the load to 1 and 2,
    // so what replica 0 has in flight when it dies is exactly the victims.
    let mut jobs: Vec<(Event, usize)> = victims.iter().map(|e| (e.clone(), 0)).collect();
    jobs.extend(
        all[3..]
            .iter()
            .enumerate()
            .map(|(i, e)| (e.clone(), 1 + i % 2)),
    );
    let accepted = Arc::new(AtomicUsize::new(0));
    let load = run_load(&sender, jobs, &accepted);
    let fault = async {
        wait_count(app.held(), victims.len(), "victims held at the app").await;
        gates[0].signal("KILL");
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::net::TcpStream::connect(gates[0].public_addr())
            .await
            .is_ok()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "replica 0 survived SIGKILL"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        app.release_held();
    };
    let (sent, ()) = tokio::join!(load, fault);
    let resent = resend_accepted(&sender, &sent, &all).await;
    Report::new(scenario, n, &sent, &resent, &app, &[&sender], started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_killed_while_the_app_works() {
    // The app's work is cut short with the connection (it answers 503).
    replica_killed_mid_request("replica_killed", 503)
        .await
        .check(0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_killed_after_the_app_accepted() {
    // The app finishes and answers 2xx to a replica that is already gone:
    // nobody recorded it, so each victim is forwarded again after the lease.
    replica_killed_mid_request("replica_killed_app_completed", 200)
        .await
        .check(0, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_storm_on_three_replicas() {
    let started = Instant::now();
    let n = event_count();
    let copies = 20;
    let redis = RedisServer::start();
    let app = ChaosApp::start(Behaviour {
        work: Duration::from_millis(20),
        ..Behaviour::default()
    })
    .await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .upstream_timeout("1s")
        .source(stripe.clone());
    let gates = replicas(&config, 3).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, 0);
    let all = events(&stripe, "storm", n);
    let mut jobs: Vec<(Event, usize)> = Vec::with_capacity(n * copies);
    for event in &all {
        for _ in 0..copies {
            jobs.push((event.clone(), 0));
        }
    }
    jobs.shuffle(&mut StdRng::seed_from_u64(SEED));
    for (i, job) in jobs.iter_mut().enumerate() {
        job.1 = i % 3;
    }

    let sent = run_load(&sender, jobs, &Arc::new(AtomicUsize::new(0))).await;
    assert!(
        sent.iter().all(|s| matches!(s.fate, Fate::Accepted)),
        "every copy is answered 2xx in the end"
    );
    let resent = resend_accepted(&sender, &sent, &all).await;
    let report = Report::new(
        "duplicate_storm_x20",
        n,
        &sent,
        &resent,
        &app,
        &[&sender],
        started,
    );
    assert_eq!(app.deliveries().len(), n, "each event reached the app once");
    report.check(0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sender_clock_4_minutes_ahead_is_accepted() {
    clock_skew("clock_4m_ahead", 4 * 60, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sender_clock_6_minutes_behind_is_refused_as_documented() {
    let report = clock_skew("clock_6m_behind", -6 * 60, event_count()).await;
    assert_eq!(
        report.answers.keys().collect::<Vec<_>>(),
        vec!["400 timestamp_outside_window"],
        "refused, never retried"
    );
    assert_eq!(
        report.requests, report.events,
        "one attempt each: not retryable"
    );
}

async fn clock_skew(scenario: &'static str, skew: i64, refused: usize) -> Report {
    let started = Instant::now();
    let n = event_count();
    let redis = RedisServer::start();
    let app = ChaosApp::start(Behaviour::default()).await;
    let stripe = SourceSpec::stripe().tolerance("5m");
    let config = ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .source(stripe.clone());
    let gates = replicas(&config, 1).await;
    let sender = Sender::new(&gates.iter().collect::<Vec<_>>(), &stripe, skew);
    let all = events(&stripe, scenario, n);
    let sent = run_load(&sender, spread(&all, 1), &Arc::new(AtomicUsize::new(0))).await;
    let resent = resend_accepted(&sender, &sent, &all).await;
    let report = Report::new(scenario, n, &sent, &resent, &app, &[&sender], started);
    report.check(refused, 0);
    report
}
