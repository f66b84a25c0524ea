//! hookgate's connections to the app, seen from a raw socket app that counts
//! its connections and answers with exactly the bytes each test scripts:
//! keep-alive reuse, apps that close idle connections, every body framing,
//! answers that never come or come broken, answers that come before the
//! request's body was read, and an `https://` app.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::support::{ConfigBuilder, Event, Hookgate, Resp, SourceSpec};

/// What the app does once an answer is written.
#[derive(Debug, Clone, Copy)]
enum After {
    /// Waits for the next request on the same connection.
    KeepOpen,
    /// Closes the connection.
    Close,
    /// Closes the connection if no new request starts within this time, as
    /// Node and most servers do with idle keep-alive connections.
    CloseWhenIdleFor(Duration),
}

/// What an app that answers early does with the body it has not read.
#[derive(Debug, Clone, Copy)]
enum Unread {
    /// Shuts its side down and closes, the body unread.
    Close,
    /// Keeps the connection open and never reads from it again.
    Hold,
}

/// The app's answer to one request.
struct Answer {
    wire: Vec<u8>,
    delay: Duration,
    after: After,
    /// Answers as soon as the request head is read, before the body.
    early: Option<Unread>,
}

impl Answer {
    fn new(wire: impl Into<Vec<u8>>, after: After) -> Answer {
        Answer {
            wire: wire.into(),
            delay: Duration::ZERO,
            after,
            early: None,
        }
    }

    /// `wire`, written once the head is read, the body left unread.
    fn early(wire: impl Into<Vec<u8>>, unread: Unread) -> Answer {
        Answer {
            early: Some(unread),
            ..Answer::new(wire, After::Close)
        }
    }

    fn ok(after: After) -> Answer {
        Answer::new(
            &b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"[..],
            after,
        )
    }

    fn delayed(mut self, delay: Duration) -> Answer {
        self.delay = delay;
        self
    }
}

/// Picks the answer for the n-th request the app receives (counting from 0).
type Script = dyn Fn(usize) -> Answer + Send + Sync;

struct Counts {
    accepts: AtomicUsize,
    requests: AtomicUsize,
    /// The ALPN protocol each TLS connection negotiated.
    alpn: Mutex<Vec<Option<Vec<u8>>>>,
}

/// A loopback app on raw sockets, answering per its script.
struct RawApp {
    addr: SocketAddr,
    counts: Arc<Counts>,
    /// The accept loop; it owns every connection task, so aborting it closes them all.
    server: tokio::task::JoinHandle<()>,
}

impl RawApp {
    async fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> RawApp {
        RawApp::start_with(None, Arc::new(script)).await
    }

    async fn start_tls(
        acceptor: TlsAcceptor,
        script: impl Fn(usize) -> Answer + Send + Sync + 'static,
    ) -> RawApp {
        RawApp::start_with(Some(acceptor), Arc::new(script)).await
    }

    async fn start_with(tls: Option<TlsAcceptor>, script: Arc<Script>) -> RawApp {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("app binds a loopback port");
        let addr = listener.local_addr().expect("app address");
        let counts = Arc::new(Counts {
            accepts: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            alpn: Mutex::new(Vec::new()),
        });
        let server = tokio::spawn(accept_loop(listener, tls, script, counts.clone()));
        RawApp {
            addr,
            counts,
            server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn accepts(&self) -> usize {
        self.counts.accepts.load(Ordering::SeqCst)
    }

    fn requests(&self) -> usize {
        self.counts.requests.load(Ordering::SeqCst)
    }
}

impl Drop for RawApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    script: Arc<Script>,
    counts: Arc<Counts>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                counts.accepts.fetch_add(1, Ordering::SeqCst);
                let (script, counts, tls) = (script.clone(), counts.clone(), tls.clone());
                connections.spawn(async move {
                    match tls {
                        None => serve(stream, script.as_ref(), &counts).await,
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                            counts.alpn.lock().expect("alpn lock").push(alpn);
                            serve(stream, script.as_ref(), &counts).await;
                        }
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves requests on one connection until the script or the peer ends it.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, script: &Script, counts: &Counts) {
    let mut idle_limit = None;
    loop {
        let Some((mut request, whole)) = read_head(&mut stream, idle_limit).await else {
            return;
        };
        let n = counts.requests.fetch_add(1, Ordering::SeqCst);
        let answer = script(n);
        if answer.early.is_none() && read_body(&mut stream, &mut request, whole).await.is_none() {
            return;
        }
        tokio::time::sleep(answer.delay).await;
        if stream.write_all(&answer.wire).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        match answer.early {
            Some(Unread::Close) => {
                let _ = stream.shutdown().await;
                return;
            }
            Some(Unread::Hold) => {
                // Never reads again; the test's end (or this bound) closes it.
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
            None => {}
        }
        match answer.after {
            After::KeepOpen => idle_limit = None,
            After::Close => {
                let _ = stream.shutdown().await;
                return;
            }
            After::CloseWhenIdleFor(idle) => idle_limit = Some(idle),
        }
    }
}

/// Reads one request head, and whatever of its body came with it; the bytes
/// and the length of the whole request (head and `content-length` body).
/// `None` at end of stream, on an error, or when no byte arrives within
/// `idle_limit`.
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    idle_limit: Option<Duration>,
) -> Option<(Vec<u8>, usize)> {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    let first = match idle_limit {
        Some(limit) => tokio::time::timeout(limit, stream.read(&mut chunk))
            .await
            .ok()?,
        None => stream.read(&mut chunk).await,
    };
    match first {
        Ok(0) | Err(_) => return None,
        Ok(n) => request.extend_from_slice(&chunk[..n]),
    }
    loop {
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .filter_map(|line| line.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().expect("a numeric content-length"))
                .next()
                .unwrap_or(0);
            return Some((request, end + 4 + length));
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads on until `request` holds `whole` bytes; `None` if the peer stops first.
async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    request: &mut Vec<u8>,
    whole: usize,
) -> Option<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    while request.len() < whole {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
    Some(())
}

async fn gate_for(url: &str, timeout: &str) -> (Hookgate, SourceSpec) {
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(url)
        .upstream_timeout(timeout)
        .source(stripe.clone())
        .start()
        .await;
    (gate, stripe)
}

async fn send(gate: &Hookgate, stripe: &SourceSpec, id: &str) -> Resp {
    gate.send(stripe, &stripe.event(id, "invoice.paid")).await
}

/// Every byte value, twice, so no framing can hide in the body.
fn binary_body() -> Vec<u8> {
    let mut body: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    body.extend_from_slice(b"\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    body
}

#[tokio::test]
async fn sequential_forwards_share_one_connection_to_the_app() {
    let app = RawApp::start(|_| Answer::ok(After::KeepOpen)).await;
    let (gate, stripe) = gate_for(&app.url(), "10s").await;
    for i in 0..5 {
        send(&gate, &stripe, &format!("evt_conn_reuse_{i}"))
            .await
            .assert_app_ok();
    }
    assert_eq!(app.requests(), 5);
    assert_eq!(
        app.accepts(),
        1,
        "every forward after the first reuses the connection"
    );
}

#[tokio::test]
async fn an_app_that_says_close_gets_a_new_connection_each_time() {
    let app = RawApp::start(|_| {
        Answer::new(
            &b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"[..],
            After::Close,
        )
    })
    .await;
    let (gate, stripe) = gate_for(&app.url(), "10s").await;
    for i in 0..4 {
        send(&gate, &stripe, &format!("evt_conn_close_{i}"))
            .await
            .assert_app_ok();
    }
    assert_eq!(app.requests(), 4);
    assert_eq!(app.accepts(), 4);
}

#[tokio::test]
async fn an_app_that_closes_idle_connections_never_causes_a_502() {
    // Keep-alive answers, but the app drops a connection 20 ms after it goes
    // quiet, without a word; the next forward comes later than that.
    let app =
        RawApp::start(|_| Answer::ok(After::CloseWhenIdleFor(Duration::from_millis(20)))).await;
    let (gate, stripe) = gate_for(&app.url(), "10s").await;
    for i in 0..4 {
        send(&gate, &stripe, &format!("evt_conn_idle_{i}"))
            .await
            .assert_app_ok();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(app.requests(), 4);
    assert_eq!(
        app.accepts(),
        4,
        "each closed connection was left for a new one"
    );
}

#[tokio::test]
async fn chunked_and_close_delimited_answers_reach_the_sender_byte_for_byte() {
    let body = binary_body();
    let script_body = body.clone();
    let app = RawApp::start(move |n| match n {
        0 => {
            let mut wire =
                b"HTTP/1.1 201 Created\r\nx-app: chunked\r\ntransfer-encoding: chunked\r\n\r\n"
                    .to_vec();
            for (i, chunk) in script_body.chunks(100).enumerate() {
                let extension = if i % 2 == 0 { ";name=\"v\"" } else { "" };
                wire.extend_from_slice(format!("{:X}{extension}\r\n", chunk.len()).as_bytes());
                wire.extend_from_slice(chunk);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\nx-trailer: dropped\r\n\r\n");
            Answer::new(wire, After::KeepOpen)
        }
        1 => {
            let mut wire = b"HTTP/1.1 202 Accepted\r\nx-app: close-delimited\r\n\r\n".to_vec();
            wire.extend_from_slice(&script_body);
            Answer::new(wire, After::Close)
        }
        _ => Answer::ok(After::KeepOpen),
    })
    .await;
    let (gate, stripe) = gate_for(&app.url(), "10s").await;

    for (id, status, framing) in [
        ("evt_conn_chunked", 201, "chunked"),
        ("evt_conn_close_delimited", 202, "close-delimited"),
    ] {
        let resp = send(&gate, &stripe, id).await;
        assert_eq!(resp.status, status, "{resp:?}");
        assert_eq!(resp.header("x-app").as_deref(), Some(framing));
        assert_eq!(resp.body.as_ref(), body.as_slice(), "{framing} body");
        assert!(resp.header("x-trailer").is_none());
        assert!(resp.header("transfer-encoding").is_none());
    }
    send(&gate, &stripe, "evt_conn_after_close")
        .await
        .assert_app_ok();
    assert_eq!(app.requests(), 3);
    // The chunked answer left its connection reusable; reading to the close did not.
    assert_eq!(app.accepts(), 2);
}

#[tokio::test]
async fn an_app_that_never_answers_is_504_and_its_late_answer_is_never_read() {
    let app = RawApp::start(|n| {
        if n == 0 {
            Answer::new(
                &b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nlate"[..],
                After::KeepOpen,
            )
            .delayed(Duration::from_secs(2))
        } else {
            Answer::ok(After::KeepOpen)
        }
    })
    .await;
    let (gate, stripe) = gate_for(&app.url(), "400ms").await;

    let started = Instant::now();
    let resp = send(&gate, &stripe, "evt_conn_silent").await;
    resp.assert_error(504, "upstream_timeout");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(350) && waited < Duration::from_secs(2),
        "answered after {waited:?} with a 400ms upstream_timeout"
    );

    // Past the moment the late answer was written: a reused connection would
    // hand it to the next request.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    send(&gate, &stripe, "evt_conn_after_silence")
        .await
        .assert_app_ok();
    assert_eq!(app.accepts(), 2, "the timed-out connection was not reused");
}

#[tokio::test]
async fn a_cut_short_or_garbled_answer_is_502_and_the_next_forward_works() {
    let app = RawApp::start(|n| match n {
        0 => Answer::new(
            &b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"[..],
            After::Close,
        ),
        1 => Answer::new(
            &b"220 smtp.example ESMTP ready\r\n\r\n"[..],
            After::KeepOpen,
        ),
        2 => Answer::new(
            &b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n"[..],
            After::KeepOpen,
        ),
        _ => Answer::ok(After::KeepOpen),
    })
    .await;
    let (gate, stripe) = gate_for(&app.url(), "10s").await;
    for id in ["evt_conn_cut", "evt_conn_garbled", "evt_conn_upgrade"] {
        send(&gate, &stripe, id)
            .await
            .assert_error(502, "upstream_unavailable");
    }
    // The sender's retry of the first one is forwarded, on a fresh connection.
    send(&gate, &stripe, "evt_conn_cut").await.assert_app_ok();
    assert_eq!(app.requests(), 4);
    assert_eq!(app.accepts(), 4, "no connection that failed was reused");
}

/// A Stripe event whose body (8 MiB) is far above what the loopback socket
/// buffers hold, so hookgate is still writing it when an early answer comes.
fn large_event(stripe: &SourceSpec, id: &str) -> Event {
    let event = stripe.event(id, "invoice.paid");
    let mut body: serde_json::Value =
        serde_json::from_slice(&event.body).expect("the event is JSON");
    body["data"]["object"]["memo"] = "m".repeat(LARGE_BODY).into();
    Event::json(id, Some("invoice.paid"), body)
}

const LARGE_BODY: usize = 8 * 1024 * 1024;

const EARLY_413: &[u8] = b"HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\n\
content-length: 28\r\n\r\n{\"error\":\"entity too large\"}";
const EARLY_401: &[u8] = b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\
www-authenticate: Bearer\r\ncontent-length: 24\r\n\r\n{\"error\":\"unauthorized\"}";

/// The app answers `early` to the first request before reading its body,
/// then does what `unread` says; every later request is read whole and
/// answered `200 ok`. The sender gets the app's own answer, the nonce is
/// released so the retry is forwarded (whole, on a new connection), and
/// that retry's 2xx commits it.
async fn early_answer_reaches_the_sender(unread: Unread, early: &'static [u8], id: &str) {
    let app = RawApp::start(move |n| {
        if n == 0 {
            Answer::early(early, unread)
        } else {
            Answer::ok(After::KeepOpen)
        }
    })
    .await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&app.url())
        .upstream_timeout("5s")
        .max_body_bytes(2 * LARGE_BODY)
        .source(stripe.clone())
        .start()
        .await;
    let event = large_event(&stripe, id);
    assert!(event.body.len() > LARGE_BODY);

    let resp = gate.send(&stripe, &event).await;
    let (head, body) = split_wire(early);
    assert_eq!(
        (resp.status, resp.text()),
        (
            head_status(&head),
            String::from_utf8_lossy(body).into_owned()
        ),
        "the app's own answer, byte for byte: {resp:?}"
    );
    assert_eq!(
        resp.header("content-type").as_deref(),
        Some("application/json")
    );
    if head.contains("www-authenticate") {
        assert_eq!(resp.header("www-authenticate").as_deref(), Some("Bearer"));
    }

    // Not a delivery: the sender's retry is forwarded again, on a new
    // connection, and the app reads it whole this time.
    gate.send(&stripe, &event).await.assert_app_ok();
    assert_eq!(app.requests(), 2);
    assert_eq!(app.accepts(), 2, "the early answer's connection was reused");
    gate.send(&stripe, &event).await.assert_duplicate(id);
    assert_eq!(app.requests(), 2);
}

/// The head (as text, lowercased) and the body of a scripted answer.
fn split_wire(wire: &[u8]) -> (String, &[u8]) {
    let end = wire
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    (
        String::from_utf8_lossy(&wire[..end]).to_ascii_lowercase(),
        &wire[end + 4..],
    )
}

fn head_status(head: &str) -> u16 {
    head[9..12].parse().expect("a status code")
}

#[tokio::test]
async fn an_early_413_from_an_app_that_then_closes_reaches_the_sender() {
    early_answer_reaches_the_sender(Unread::Close, EARLY_413, "evt_early_413").await;
}

#[tokio::test]
async fn an_early_401_from_an_app_that_stops_reading_reaches_the_sender() {
    early_answer_reaches_the_sender(Unread::Hold, EARLY_401, "evt_early_401").await;
}

/// A self-signed certificate for `localhost`, its key, and the PEM a client
/// trusts it by.
fn localhost_identity() -> (CertificateDer<'static>, PrivateKeyDer<'static>, String) {
    let identity = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("generate a certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        identity.signing_key.serialize_der(),
    ));
    (identity.cert.der().clone(), key, identity.cert.pem())
}

#[tokio::test]
async fn an_https_app_is_reached_over_tls_speaking_http_1_1_on_one_connection() {
    let (cert, key, pem) = localhost_identity();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server identity");
    // The app would rather speak h2; hookgate must ask for HTTP/1.1 only.
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let app = RawApp::start_tls(TlsAcceptor::from(Arc::new(server)), |_| {
        Answer::ok(After::KeepOpen)
    })
    .await;

    let dir = tempfile::tempdir().expect("temp dir");
    let roots = dir.path().join("roots.pem");
    std::fs::write(&roots, pem).expect("write the trusted root");
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&format!("https://localhost:{}", app.addr.port()))
        .source(stripe.clone())
        .toml();
    let gate = Hookgate::launch(&config)
        .env("SSL_CERT_FILE", &roots.display().to_string())
        .start()
        .await;

    for i in 0..3 {
        send(&gate, &stripe, &format!("evt_conn_tls_{i}"))
            .await
            .assert_app_ok();
    }
    assert_eq!(app.requests(), 3);
    assert_eq!(
        app.accepts(),
        1,
        "the TLS connection is kept alive and reused"
    );
    let alpn = app.counts.alpn.lock().expect("alpn lock").clone();
    assert_eq!(alpn, vec![Some(b"http/1.1".to_vec())]);
}
