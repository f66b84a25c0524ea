//! The attacks `docs/security.md` lists, each as an attacker would try it on
//! the real binary: the exact bytes sent, and the exact bytes a raw-socket app
//! behind hookgate received (or that it received nothing).
//!
//! - path aliases of a source path, and a verified event steered out of its prefix;
//! - `X-Verified-*` and framing names spelled with `_`, over HTTP/1.1 and h2;
//! - connection slots held by idle h2 clients, by h2 clients that ignore
//!   `GOAWAY`, and by clients that never read;
//! - an app that writes bytes nobody asked for, or frames its answer twice;
//! - unsigned ids and types; oversized answers; `Expect`, `Host`, `CONNECT`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::hookgate::run_cli;
use crate::support::raw_app::{RawApp, RawRequest, Scripted};
use crate::support::raw_h2::DeafAfterGoaway;
use crate::support::{ConfigBuilder, Event, Hookgate, SourceSpec, WAIT};

// ---------------------------------------------------------------------------
// Helpers: raw requests and answers

/// Sends `request` on a new connection and returns every byte hookgate wrote
/// until it closed the connection (the request says `Connection: close`).
async fn raw(gate: &Hookgate, request: &[u8]) -> Vec<u8> {
    let exchange = async {
        let mut stream = TcpStream::connect(gate.public_addr()).await?;
        let _ = stream.write_all(request).await;
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return Ok::<_, std::io::Error>(out),
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(WAIT, exchange)
        .await
        .expect("hookgate closed the connection in time")
        .expect("connect to hookgate")
}

/// `POST {target}` with a Host, `Connection: close`, `headers` and `body`.
fn post(gate: &Hookgate, target: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        gate.public_addr()
    )
    .into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// The status code of each response in `answer`.
fn statuses(answer: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(answer);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12))
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The head's header lines (lowercased names) and the bytes after the head.
fn split(answer: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(answer)));
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let headers = head
        .split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (headers, answer[end + 4..].to_vec())
}

fn body_json(answer: &[u8]) -> Value {
    let (_, body) = split(answer);
    serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "no JSON body ({e}) in {:?}",
            String::from_utf8_lossy(answer)
        )
    })
}

/// Names of every header line the app received, as spelled on the wire.
fn names(request: &RawRequest) -> Vec<String> {
    request.header_lines().into_iter().map(|(n, _)| n).collect()
}

async fn wait_requests(app: &RawApp, n: usize) -> Vec<RawRequest> {
    let deadline = Instant::now() + WAIT;
    loop {
        let seen = app.requests();
        if seen.len() >= n || Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Lets any request still on its way reach the app before "nothing arrived" is asserted.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

// ---------------------------------------------------------------------------
// 1. Path aliases

#[tokio::test]
async fn aliases_of_a_source_path_are_refused_before_routing() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .source(SourceSpec::stripe())
        .start()
        .await;

    for target in [
        "/webhooks/%73tripe",
        "/x/../webhooks/stripe",
        "/./webhooks/stripe",
        "//webhooks/stripe",
        "/webhooks\\stripe",
        "/webhooks/stripe;x=1",
        "/webhooks%2fstripe",
        "/webhooks/stripe%00",
        "/webhooks/%2e%2e/webhooks/stripe",
        "http://evil//webhooks/stripe",
        "http://evil/x/../webhooks/stripe",
    ] {
        let answer = raw(&gate, &post(&gate, target, &[], b"{}")).await;
        assert_eq!(statuses(&answer), [400], "{target}: {answer:?}");
        assert_eq!(
            body_json(&answer),
            json!({"error": "bad_request"}),
            "{target}"
        );
    }
    // The spellings that mean the source itself are that source: verified.
    for target in [
        "/Webhooks/Stripe",
        "/WEBHOOKS/stripe/x",
        "/webhooks/stripe.json",
    ] {
        let answer = raw(&gate, &post(&gate, target, &[], b"{}")).await;
        assert_eq!(statuses(&answer), [400], "{target}");
        assert_eq!(
            body_json(&answer),
            json!({"error": "missing_signature"}),
            "{target}"
        );
    }
    settle().await;
    assert!(app.requests().is_empty(), "{:?}", app.requests());

    // Unmatched traffic still goes through, unverified and unstamped.
    let answer = raw(&gate, &post(&gate, "/health/deep", &[], b"")).await;
    assert_eq!(statuses(&answer), [200]);
    let seen = wait_requests(&app, 1).await;
    assert_eq!(seen[0].request_line(), "POST /health/deep HTTP/1.1");
}

#[tokio::test]
async fn a_verified_event_is_forwarded_only_inside_its_sources_prefix() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .source(github.clone())
        .start()
        .await;
    let event = github.event("0d1f7a60-2f5c-11ef-9e1c-prefix000001", "push");
    let signed = github.request_headers(&event);
    let answer = raw(
        &gate,
        &post(
            &gate,
            "/webhooks/github/../../admin/refund",
            &signed,
            &event.body,
        ),
    )
    .await;
    assert_eq!(statuses(&answer), [400]);
    assert_eq!(body_json(&answer), json!({"error": "bad_request"}));
    settle().await;
    assert!(app.requests().is_empty(), "{:?}", app.requests());

    let answer = raw(
        &gate,
        &post(&gate, "/webhooks/github/deliveries", &signed, &event.body),
    )
    .await;
    assert_eq!(statuses(&answer), [200]);
    let seen = wait_requests(&app, 1).await;
    assert_eq!(
        seen[0].request_line(),
        "POST /webhooks/github/deliveries HTTP/1.1"
    );
    assert_eq!(seen[0].header("x-verified-source"), ["github"]);
}

#[tokio::test]
async fn host_must_be_there_once_and_connect_has_no_path() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .source(SourceSpec::stripe())
        .start()
        .await;
    let no_host = b"POST /other HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let two_hosts = b"POST /other HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\
                      Content-Length: 0\r\n\r\n";
    let connect = b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\
                    Connection: close\r\n\r\n";
    for request in [&no_host[..], &two_hosts[..], &connect[..]] {
        let answer = raw(&gate, request).await;
        assert_eq!(
            statuses(&answer),
            [400],
            "{:?}",
            String::from_utf8_lossy(request)
        );
    }
    settle().await;
    assert!(app.requests().is_empty(), "{:?}", app.requests());
}

// ---------------------------------------------------------------------------
// 2. Spoofed stamps

/// Headers no client may set, in the spellings servers behind hookgate
/// read as the real ones, plus framing look-alikes.
fn spoofs() -> Vec<(String, String)> {
    [
        ("X_Verified_Source", "admin"),
        ("X-Verified_Event-Id", "forged"),
        ("x_verified_event_type", "refund.created"),
        ("X-Verified-Source", "admin"),
        ("X-Hookgate-Unverified", "none"),
        ("X_Hookgate_Unverified", "none"),
        ("Transfer_Encoding", "chunked"),
        ("Content_Length", "9"),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
    .collect()
}

#[tokio::test]
async fn stamp_spellings_with_underscores_never_reach_the_app() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_underscore_1", "invoice.paid");
    let mut headers = stripe.request_headers(&event);
    headers.extend(spoofs());
    headers.push(("X_Custom".to_owned(), "1".to_owned()));
    let answer = raw(
        &gate,
        &post(&gate, "/webhooks/stripe", &headers, &event.body),
    )
    .await;
    assert_eq!(statuses(&answer), [200]);
    // And on a path no source serves.
    let answer = raw(&gate, &post(&gate, "/other", &spoofs(), b"")).await;
    assert_eq!(statuses(&answer), [200]);

    let seen = wait_requests(&app, 2).await;
    let verified = &seen[0];
    assert_eq!(verified.header("x-verified-source"), ["stripe"]);
    assert_eq!(verified.header("x-verified-event-id"), ["evt_underscore_1"]);
    assert_eq!(verified.header("x-verified-event-type"), ["invoice.paid"]);
    assert!(
        verified
            .text()
            .ends_with(std::str::from_utf8(&event.body).expect("JSON"))
    );
    for request in &seen {
        for name in names(request) {
            assert!(
                !name.contains('_'),
                "{name} reached the app: {}",
                request.text()
            );
            assert!(
                !name.to_ascii_lowercase().starts_with("x-hookgate-"),
                "{name} reached the app"
            );
        }
        assert_eq!(request.header("content-length").len(), 1);
        assert!(request.header("transfer-encoding").is_empty());
    }
    assert!(seen[1].header("x-verified-source").is_empty());
}

#[tokio::test]
async fn with_underscores_forwarded_only_the_dangerous_ones_go() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .server_key("underscores_in_headers = \"forward\"")
        .source(SourceSpec::stripe())
        .start()
        .await;
    let mut headers = spoofs();
    headers.push(("X_Custom".to_owned(), "kept".to_owned()));
    let answer = raw(&gate, &post(&gate, "/other", &headers, b"")).await;
    assert_eq!(statuses(&answer), [200]);
    let seen = wait_requests(&app, 1).await;
    assert_eq!(
        names(&seen[0])
            .into_iter()
            .filter(|n| n.contains('_'))
            .collect::<Vec<_>>(),
        ["x_custom"]
    );
}

/// An h2 connection to hookgate over plain TCP (prior knowledge), driven in
/// a task of its own; dropping the sender ends it.
async fn h2_client(
    gate: &Hookgate,
) -> (
    hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let stream = TcpStream::connect(gate.public_addr())
        .await
        .expect("connect to hookgate");
    let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .keep_alive_interval(Duration::from_millis(200))
        .keep_alive_while_idle(true)
        .timer(hyper_util::rt::TokioTimer::new())
        .handshake(TokioIo::new(stream))
        .await
        .expect("h2 handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    (sender, driver)
}

async fn h2_post(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    gate: &Hookgate,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> (u16, Bytes) {
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("http://{}{path}", gate.public_addr()));
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .expect("a request");
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .expect("h2 answer in time")
        .expect("h2 answer");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("h2 body")
        .to_bytes();
    (status, body)
}

#[tokio::test]
async fn stamp_spellings_with_underscores_are_stripped_over_h2_too() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    let event = stripe.event("evt_underscore_h2", "invoice.paid");
    let mut headers = stripe.request_headers(&event);
    headers.extend(spoofs().into_iter().filter(|(n, _)| {
        // h2 forbids connection-specific fields; the others are what an h2
        // client can send.
        !n.eq_ignore_ascii_case("transfer_encoding") && !n.eq_ignore_ascii_case("content_length")
    }));
    let (mut sender, _driver) = h2_client(&gate).await;
    let (status, _) = h2_post(
        &mut sender,
        &gate,
        "/webhooks/stripe",
        &headers,
        &event.body,
    )
    .await;
    assert_eq!(status, 200);
    let seen = wait_requests(&app, 1).await;
    assert_eq!(seen[0].header("x-verified-source"), ["stripe"]);
    assert_eq!(seen[0].header("x-verified-event-id"), ["evt_underscore_h2"]);
    assert!(
        names(&seen[0]).iter().all(|n| !n.contains('_')),
        "{}",
        seen[0].text()
    );
    // The h2 authority is the Host the app sees.
    assert_eq!(seen[0].header("host"), [gate.public_addr().to_string()]);
}

// ---------------------------------------------------------------------------
// 3. Connection slots

/// Posts a signed Stripe event on a new HTTP/1.1 connection; the status, or
/// `None` when hookgate refused the connection with 503 `overloaded`.
async fn try_event(gate: &Hookgate, stripe: &SourceSpec, id: &str) -> Option<u16> {
    let event = stripe.event(id, "invoice.paid");
    let answer = raw(
        gate,
        &post(
            gate,
            "/webhooks/stripe",
            &stripe.request_headers(&event),
            &event.body,
        ),
    )
    .await;
    let status = statuses(&answer).first().copied();
    match status {
        Some(503) if String::from_utf8_lossy(&answer).contains("overloaded") => None,
        other => other,
    }
}

/// Sends fresh signed events (ids `{prefix}_1`, `_2`, …) until one is not
/// refused as `overloaded`; its status. Fails once `within` has passed.
async fn first_event_through(
    gate: &Hookgate,
    stripe: &SourceSpec,
    prefix: &str,
    within: Duration,
) -> u16 {
    let started = Instant::now();
    for n in 1.. {
        if let Some(status) = try_event(gate, stripe, &format!("{prefix}_{n}")).await {
            return status;
        }
        assert!(
            started.elapsed() < within,
            "slots still held after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!("the loop returns or fails")
}

#[tokio::test]
async fn idle_h2_connections_give_their_slots_back() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let (gate, stripe) = stripe_gate(&app, &["max_connections = 3", "idle_timeout = \"1s\""]).await;
    // Three h2 clients that answer every ping and then send nothing.
    let mut held = Vec::new();
    for n in 0..3 {
        let (mut sender, driver) = h2_client(&gate).await;
        let event = stripe.event(&format!("evt_h2_idle_{n}"), "invoice.paid");
        let headers = stripe.request_headers(&event);
        let (status, _) = h2_post(
            &mut sender,
            &gate,
            "/webhooks/stripe",
            &headers,
            &event.body,
        )
        .await;
        assert_eq!(status, 200);
        held.push((sender, driver));
    }
    assert_eq!(
        try_event(&gate, &stripe, "evt_h2_refused").await,
        None,
        "every slot is taken"
    );
    // The idle connections are closed by hookgate (GOAWAY), and a signed
    // event gets through again.
    let status = first_event_through(&gate, &stripe, "evt_h2_after", Duration::from_secs(10)).await;
    assert_eq!(status, 200);
    for (_, driver) in held {
        tokio::time::timeout(WAIT, driver)
            .await
            .expect("hookgate closed the idle h2 connection")
            .expect("driver task");
    }
}

#[tokio::test]
async fn h2_clients_that_ignore_goaway_give_their_slots_back() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let (gate, stripe) = stripe_gate(
        &app,
        &[
            "max_connections = 3",
            "idle_timeout = \"2s\"",
            "write_timeout = \"1s\"",
        ],
    )
    .await;
    // Three h2 clients that complete the handshake, read hookgate's GOAWAY
    // when it comes, and from then on answer nothing (not its PING) and read
    // nothing, their sockets left open.
    let started = Instant::now();
    let mut deaf = Vec::new();
    for _ in 0..3 {
        deaf.push(DeafAfterGoaway::connect(gate.public_addr()).await);
    }
    assert_eq!(
        try_event(&gate, &stripe, "evt_deaf_refused").await,
        None,
        "every slot is taken"
    );
    for client in &mut deaf {
        client.until_goaway().await;
    }
    // Told to close after idle_timeout, each is dropped within write_timeout
    // (1 s) whether or not it acknowledges: a signed event gets through
    // again well within that bound plus a generous margin.
    let status =
        first_event_through(&gate, &stripe, "evt_after_deaf", Duration::from_secs(6)).await;
    assert_eq!(status, 200);
    // idle_timeout + write_timeout, plus the same margin.
    assert!(started.elapsed() < Duration::from_secs(2 + 1 + 6));
    for client in deaf {
        assert!(
            client.closed_by_server(WAIT).await,
            "hookgate closed the socket of a client that ignored its GOAWAY"
        );
    }
}

#[tokio::test]
async fn a_client_that_never_reads_its_answers_is_cut_off() {
    // Each answer is close to 1 MiB, so a few fill the socket buffers.
    let big = "x".repeat(900 * 1024);
    let app = RawApp::start(move |_| {
        Scripted::wire(format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{big}",
            big.len()
        ))
    })
    .await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&app.url())
        .unmatched("forward")
        .server_key("max_connections = 1")
        .server_key("write_timeout = \"1s\"")
        .source(stripe.clone())
        .start()
        .await;
    // Pipelined requests whose answers are never read.
    let mut stuck = TcpStream::connect(gate.public_addr())
        .await
        .expect("connect");
    let mut pipelined = Vec::new();
    for _ in 0..40 {
        pipelined.extend_from_slice(
            format!(
                "POST /download HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
                gate.public_addr()
            )
            .as_bytes(),
        );
    }
    stuck.write_all(&pipelined).await.expect("write requests");
    let _ = wait_requests(&app, 2).await;
    let status =
        first_event_through(&gate, &stripe, "evt_after_stall", Duration::from_secs(15)).await;
    assert_eq!(status, 200);
    drop(stuck);
}

// ---------------------------------------------------------------------------
// 4. and 5. The app's framing

const STRAY_200: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstray";

/// hookgate with one Stripe source in front of `app`, with `server_keys`
/// added to `[server]`.
async fn stripe_gate(app: &RawApp, server_keys: &[&str]) -> (Hookgate, SourceSpec) {
    let stripe = SourceSpec::stripe();
    let mut config = ConfigBuilder::new(&app.url());
    for key in server_keys {
        config = config.server_key(key);
    }
    (config.source(stripe.clone()).start().await, stripe)
}

/// Sends a signed Stripe event `id` and returns hookgate's answer.
async fn send_stripe(gate: &Hookgate, stripe: &SourceSpec, id: &str) -> Vec<u8> {
    let event = stripe.event(id, "invoice.paid");
    raw(
        gate,
        &post(
            gate,
            "/webhooks/stripe",
            &stripe.request_headers(&event),
            &event.body,
        ),
    )
    .await
}

#[tokio::test]
async fn a_body_after_a_204_never_answers_the_next_event() {
    // The app answers 204, then writes a 200 that no request asked for; the
    // next event, sent at once, is one the app fails with 500.
    let app = RawApp::start(|n| match n {
        0 => Scripted::wire(&b"HTTP/1.1 204 No Content\r\n\r\n"[..])
            .then(Duration::from_millis(300), STRAY_200),
        1 => Scripted::status(500),
        _ => Scripted::status(200),
    })
    .await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    assert_eq!(
        statuses(&send_stripe(&gate, &stripe, "evt_204_a").await),
        [204]
    );
    let answer = send_stripe(&gate, &stripe, "evt_204_b").await;
    assert_eq!(
        statuses(&answer),
        [500],
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert!(!String::from_utf8_lossy(&answer).contains("stray"));
    // Its nonce was released: the sender's retry reaches the app again.
    assert_eq!(
        statuses(&send_stripe(&gate, &stripe, "evt_204_b").await),
        [200]
    );
    let seen = wait_requests(&app, 3).await;
    let ids: Vec<_> = seen
        .iter()
        .map(|r| r.header("x-verified-event-id").concat())
        .collect();
    assert_eq!(ids, ["evt_204_a", "evt_204_b", "evt_204_b"]);
    assert_ne!(
        seen[0].connection, seen[1].connection,
        "the connection after a 204 was reused"
    );
}

#[tokio::test]
async fn stray_bytes_on_an_idle_connection_retire_it() {
    let app = RawApp::start(|n| match n {
        0 => Scripted::status(200).then(Duration::from_millis(20), STRAY_200),
        1 => Scripted::status(500),
        _ => Scripted::status(200),
    })
    .await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    assert_eq!(
        statuses(&send_stripe(&gate, &stripe, "evt_stray_a").await),
        [200]
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = send_stripe(&gate, &stripe, "evt_stray_b").await;
    assert_eq!(
        statuses(&answer),
        [500],
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let seen = wait_requests(&app, 2).await;
    assert_ne!(seen[0].connection, seen[1].connection);
}

#[tokio::test]
async fn with_keepalive_off_a_misframing_app_cannot_answer_for_another_event() {
    // A stray answer written just as the next event is sent: the window that
    // keep-alive over HTTP/1.1 cannot close, closed by not keeping connections.
    let app = RawApp::start(|n| match n {
        0 => Scripted::status(200).then(Duration::from_millis(200), STRAY_200),
        1 => Scripted::status(500),
        _ => Scripted::status(200),
    })
    .await;
    let (gate, stripe) = stripe_gate(&app, &["upstream_keepalive = false"]).await;
    assert_eq!(
        statuses(&send_stripe(&gate, &stripe, "evt_ka_a").await),
        [200]
    );
    let answer = send_stripe(&gate, &stripe, "evt_ka_b").await;
    assert_eq!(
        statuses(&answer),
        [500],
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let seen = wait_requests(&app, 2).await;
    assert_eq!(app.accepts(), 2);
    for request in &seen {
        assert_eq!(request.header("connection"), ["close"]);
    }
}

#[tokio::test]
async fn an_answer_framed_twice_is_reframed_by_hookgate() {
    let app = RawApp::start(|_| {
        Scripted::wire(
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 100\r\n\r\n\
               5\r\nhello\r\n0\r\n\r\n"[..],
        )
    })
    .await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    let answer = send_stripe(&gate, &stripe, "evt_te_cl").await;
    assert_eq!(statuses(&answer), [200]);
    let (headers, body) = split(&answer);
    let lengths: Vec<_> = headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(lengths, ["5"], "{headers:?}");
    assert!(!headers.iter().any(|(n, _)| n == "transfer-encoding"));
    assert_eq!(body, b"hello");
}

#[tokio::test]
async fn an_oversized_answer_keeps_its_status_and_commits_the_event() {
    let big = "y".repeat(2 * 1024 * 1024);
    let app = RawApp::start(move |_| {
        Scripted::wire(format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{big}",
            big.len()
        ))
    })
    .await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    let answer = send_stripe(&gate, &stripe, "evt_big").await;
    assert_eq!(statuses(&answer), [200]);
    let (headers, body) = split(&answer);
    assert!(body.is_empty());
    assert!(headers.contains(&("content-length".to_owned(), "0".to_owned())));
    let again = send_stripe(&gate, &stripe, "evt_big").await;
    assert_eq!(
        body_json(&again),
        json!({"duplicate": true, "event_id": "evt_big"})
    );
}

// ---------------------------------------------------------------------------
// 6. and 8. Unsigned ids and types

#[tokio::test]
async fn a_captured_delivery_under_a_fresh_unsigned_id_is_a_duplicate() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github();
    let shopify = SourceSpec::shopify();
    let gate = ConfigBuilder::new(&app.url())
        .source(github.clone())
        .source(shopify.clone())
        .start()
        .await;
    for (source, id_header) in [
        (&github, "X-GitHub-Delivery"),
        (&shopify, "X-Shopify-Webhook-Id"),
    ] {
        let event = source.event(&format!("{}-original-0001", source.name), "orders/create");
        let headers = source.request_headers(&event);
        let path = source.url_path("");
        let answer = raw(&gate, &post(&gate, &path, &headers, &event.body)).await;
        assert_eq!(statuses(&answer), [200], "{}", source.name);
        // The same signed bytes, relabelled.
        let mut replay = headers.clone();
        for (name, value) in &mut replay {
            if name.eq_ignore_ascii_case(id_header) {
                *value = format!("{}-forged-0002", source.name);
            }
        }
        let answer = raw(&gate, &post(&gate, &path, &replay, &event.body)).await;
        assert_eq!(statuses(&answer), [200]);
        assert_eq!(
            body_json(&answer)["duplicate"],
            json!(true),
            "{}",
            source.name
        );
    }
    settle().await;
    let seen = app.requests();
    assert_eq!(seen.len(), 2, "each delivery reached the app once");
    for request in &seen {
        assert!(
            request.header("x-verified-event-type").is_empty(),
            "an unsigned type was stamped: {}",
            request.text()
        );
        assert_eq!(request.header("x-verified-source").len(), 1);
    }
}

#[tokio::test]
async fn expect_is_not_forwarded_since_the_body_is_already_read() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let (gate, stripe) = stripe_gate(&app, &[]).await;
    let event: Event = stripe.event("evt_expect", "invoice.paid");
    let mut headers = stripe.request_headers(&event);
    headers.push(("Expect".to_owned(), "100-continue".to_owned()));
    let answer = raw(
        &gate,
        &post(&gate, "/webhooks/stripe", &headers, &event.body),
    )
    .await;
    assert_eq!(statuses(&answer).last(), Some(&200));
    let seen = wait_requests(&app, 1).await;
    assert!(seen[0].header("expect").is_empty(), "{}", seen[0].text());
}

#[tokio::test]
async fn check_never_prints_upstream_credentials() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    let config = ConfigBuilder::new("http://deploy:s3cr3t-pw@127.0.0.1:3000")
        .source(SourceSpec::stripe())
        .toml();
    std::fs::write(&path, config).expect("write config");
    let path = path.to_string_lossy().into_owned();
    let (status, stdout, stderr) = run_cli(&["check", "--config", &path]).await;
    assert!(!status.success());
    let output = format!("{stdout}{stderr}");
    assert!(output.contains("server.upstream"), "{output}");
    assert!(output.contains("credentials"), "{output}");
    assert!(!output.contains("s3cr3t-pw"), "{output}");
    assert!(!output.contains("deploy:"), "{output}");
}

#[tokio::test]
async fn a_flood_on_one_source_leaves_the_memory_store_to_the_others() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github();
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&app.url())
        .source(github.clone())
        .source(stripe.clone())
        .toml()
        .replace(
            "kind = \"memory\"\n",
            "kind = \"memory\"\nmemory_max_entries = 20\n",
        );
    let gate = Hookgate::start(&config).await;
    // A sender (or its leaked secret) signing ever new bodies: half the
    // store is all it gets.
    let mut refused = 0;
    for n in 0..30 {
        let event = github.event(&format!("flood-{n:04}"), "push");
        let answer = raw(
            &gate,
            &post(
                &gate,
                "/webhooks/github",
                &github.request_headers(&event),
                &event.body,
            ),
        )
        .await;
        match statuses(&answer).as_slice() {
            [200] => {}
            [503] => {
                assert_eq!(body_json(&answer), json!({"error": "store_unavailable"}));
                refused += 1;
            }
            other => panic!("flood answer {other:?}"),
        }
    }
    assert_eq!(refused, 20, "10 of 30 fit in half of 20 entries");
    for n in 0..5 {
        let answer = send_stripe(&gate, &stripe, &format!("evt_after_flood_{n}")).await;
        assert_eq!(
            statuses(&answer),
            [200],
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
}

#[tokio::test]
async fn a_bearer_token_matches_in_any_case_and_only_whole() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let mut toml = ConfigBuilder::new(&app.url()).toml();
    toml += "\n[[source]]\nname = \"tokens\"\npath = \"/webhooks/tokens\"\nscheme = \"generic\"\n\
             secrets = [\"tok-3f9a1c\"]\n[source.generic]\nsignature_header = \"Authorization\"\n\
             signature_prefix = \"Bearer \"\nalgorithm = \"token\"\nencoding = \"hex\"\n";
    let gate = Hookgate::start(&toml).await;
    // Each body is distinct: with no id configured, the body's digest is the id.
    let send = |value: &'static str| {
        let gate = &gate;
        async move {
            let headers = vec![("Authorization".to_owned(), value.to_owned())];
            let body = format!("{{\"sent\":\"{value}\"}}");
            statuses(
                &raw(
                    gate,
                    &post(gate, "/webhooks/tokens", &headers, body.as_bytes()),
                )
                .await,
            )
        }
    };
    for value in [
        "Bearer tok-3f9a1c",
        "bearer tok-3f9a1c",
        "BEARER tok-3f9a1c",
    ] {
        assert_eq!(send(value).await, [200], "{value}");
    }
    for value in ["Bearer tok-3f9a1", "Bearer tok-3f9a1cX", "tok-3f9a1c"] {
        assert_eq!(send(value).await, [400], "{value}");
    }
    settle().await;
    assert_eq!(app.requests().len(), 3);
}
