//! Hostile input on the public port: slow clients, oversized and ambiguous
//! framing, odd header bytes, pathological JSON, odd event ids and
//! timestamps, spoofed `X-Verified-*`, and connection floods. Each test states
//! the answer `docs/security.md` documents, and checks the app saw nothing it
//! should not have.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::support::redis::RedisServer;
use crate::support::{
    APP_OK, ConfigBuilder, Event, Hookgate, Metrics, Reply, SLACK_SECRET, STRIPE_SECRET,
    SourceSpec, Upstream, WAIT, eventually, headers, now, sha256_hex,
};

/// A POST with `Connection: close` and a `Content-Length`, as raw bytes.
fn raw_post(gate: &Hookgate, path: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut out = head(gate, path, headers);
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// Request line, `Host`, `Connection: close` and `headers`, without the blank line.
fn head(gate: &Hookgate, path: &str, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        gate.public_addr()
    )
    .into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out
}

/// Writes `request` (a write error is fine: the server may answer and close
/// before reading it all) and returns everything read until the server closes.
async fn exchange(gate: &Hookgate, request: &[u8]) -> Vec<u8> {
    let mut stream = connect(gate).await;
    let _ = stream.write_all(request).await;
    until_closed(&mut stream).await
}

/// A header of a raw response, by case-insensitive name.
fn raw_header(raw: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let head = text.split("\r\n\r\n").next().unwrap_or_default().to_owned();
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

async fn connect(gate: &Hookgate) -> TcpStream {
    tokio::time::timeout(WAIT, TcpStream::connect(gate.public_addr()))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// Everything the server sends until it closes the connection (a reset
/// counts as closed); panics if it is still open after [`WAIT`].
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(WAIT, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the server kept the connection open past {WAIT:?}"
    );
    out
}

/// The status of each HTTP/1.1 response in `raw`.
fn statuses(raw: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(raw);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12))
        .filter_map(|s| s.parse().ok())
        .collect()
}

fn body_json(raw: &[u8]) -> Value {
    let start = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .unwrap_or(raw.len());
    serde_json::from_slice(&raw[start..])
        .unwrap_or_else(|e| panic!("no JSON body ({e}) in {:?}", String::from_utf8_lossy(raw)))
}

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    for part in parts {
        mac.update(part);
    }
    hex::encode(mac.finalize().into_bytes())
}

// ---------------------------------------------------------------------------
// Slow clients

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_silent_clients_are_cut_off_and_block_nobody() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .server_key("request_read_timeout = \"1s\"")
        .source(stripe.clone())
        .start()
        .await;

    // Silent connections, one byte, half a request line, headers that never end.
    let partial: [&[u8]; 4] = [
        b"",
        b"P",
        b"POST /webhooks/stripe HT",
        b"POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nX-Slow: 1",
    ];
    let mut slow = Vec::new();
    for _ in 0..5 {
        for bytes in partial {
            let mut stream = connect(&gate).await;
            stream.write_all(bytes).await.expect("write");
            slow.push(stream);
        }
    }

    // Meanwhile other senders are served as usual.
    for i in 0..3 {
        let event = stripe.event(&format!("evt_beside_slowloris_{i}"), "invoice.paid");
        gate.send(&stripe, &event).await.assert_app_ok();
    }

    // Every slow connection is closed by the server, without an answer.
    for mut stream in slow {
        let answer = until_closed(&mut stream).await;
        assert!(
            answer.is_empty(),
            "a slow client got {:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    assert_eq!(upstream.count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_408_and_nothing_is_forwarded() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .server_key("request_read_timeout = \"1s\"")
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_slow_body", "invoice.paid");
    let headers = stripe.request_headers(&event);

    // Content-Length announced, a few bytes sent, then nothing.
    let mut request = head(&gate, &stripe.path, &headers);
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", event.body.len()).as_bytes());
    request.extend_from_slice(&event.body[..10]);
    let mut stream = connect(&gate).await;
    stream.write_all(&request).await.expect("write");
    let answer = until_closed(&mut stream).await;
    assert_eq!(statuses(&answer), vec![408], "{answer:?}");
    assert_eq!(body_json(&answer), json!({ "error": "request_timeout" }));

    // Chunked, one chunk, then nothing.
    let mut request = head(&gate, &stripe.path, &headers);
    request.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n5\r\n");
    request.extend_from_slice(&event.body[..5]);
    request.extend_from_slice(b"\r\n");
    let mut stream = connect(&gate).await;
    stream.write_all(&request).await.expect("write");
    let answer = until_closed(&mut stream).await;
    assert_eq!(statuses(&answer), vec![408], "{answer:?}");

    assert_eq!(upstream.count(), 0, "nothing reaches the app");
    // The event itself, sent whole, is fine.
    gate.send(&stripe, &event).await.assert_app_ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_trickle_within_the_read_timeout_is_accepted_byte_for_byte() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .server_key("request_read_timeout = \"20s\"")
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_trickle", "invoice.paid");
    let mut request = head(&gate, &stripe.path, &stripe.request_headers(&event));
    request.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
    let mut stream = connect(&gate).await;
    stream.write_all(&request).await.expect("write head");
    // One to three bytes per chunk, some with chunk extensions.
    for (i, piece) in event.body.chunks(3).enumerate() {
        let ext = if i % 7 == 0 { ";note=slow" } else { "" };
        let chunk = [
            format!("{:x}{ext}\r\n", piece.len()).as_bytes(),
            piece,
            b"\r\n",
        ]
        .concat();
        stream.write_all(&chunk).await.expect("write chunk");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stream.write_all(b"0\r\n\r\n").await.expect("write end");
    let answer = until_closed(&mut stream).await;
    assert_eq!(statuses(&answer), vec![200], "{answer:?}");
    assert!(answer.ends_with(APP_OK.as_bytes()));
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen[0].body.as_ref(), event.body.as_slice());
}

// ---------------------------------------------------------------------------
// Sizes and framing

#[tokio::test]
async fn oversized_request_heads_are_431_and_not_forwarded() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_big_head", "invoice.paid");
    let signed = stripe.request_headers(&event);

    // One huge header.
    let mut huge = signed.clone();
    huge.push(("X-Padding".into(), "a".repeat(100 * 1024)));
    let raw = exchange(&gate, &raw_post(&gate, &stripe.path, &huge, &event.body)).await;
    assert_eq!(statuses(&raw), vec![431]);

    // Too many headers.
    let mut many = signed.clone();
    for i in 0..150 {
        many.push((format!("X-Many-{i}"), "1".into()));
    }
    let raw = exchange(&gate, &raw_post(&gate, &stripe.path, &many, &event.body)).await;
    assert_eq!(statuses(&raw), vec![431]);
    assert_eq!(upstream.count(), 0);

    // Large but under the cap: served as usual.
    let mut large = signed;
    large.push(("X-Padding".into(), "a".repeat(32 * 1024)));
    let raw = exchange(&gate, &raw_post(&gate, &stripe.path, &large, &event.body)).await;
    assert_eq!(statuses(&raw), vec![200]);
    assert_eq!(upstream.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_413_before_the_sender_finishes() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .max_body_bytes(4096)
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_too_big", "invoice.paid");
    let headers = stripe.request_headers(&event);

    // A declared length over the limit: answered without sending any body.
    let mut request = head(&gate, &stripe.path, &headers);
    request.extend_from_slice(b"Content-Length: 104857600\r\n\r\n");
    let mut stream = connect(&gate).await;
    stream.write_all(&request).await.expect("write");
    let answer = until_closed(&mut stream).await;
    assert_eq!(statuses(&answer), vec![413]);
    assert_eq!(body_json(&answer), json!({ "error": "body_too_large" }));

    // No length, a chunked body that would go on for 256 MiB: the answer
    // comes while it is still being sent.
    let mut request = head(&gate, &stripe.path, &headers);
    request.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
    let stream = connect(&gate).await;
    let (mut reader, mut writer) = stream.into_split();
    writer.write_all(&request).await.expect("write head");
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let sender = tokio::spawn(async move {
        let chunk = [b"4000\r\n".as_slice(), &[b'x'; 0x4000], b"\r\n"].concat();
        let mut sent = 0usize;
        while sent < 256 * 1024 * 1024 {
            tokio::select! {
                _ = &mut stop_rx => break,
                written = writer.write_all(&chunk) => {
                    if written.is_err() { break; }
                    sent += 0x4000;
                }
            }
        }
        sent
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(WAIT, async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to an endless body within {WAIT:?}");
    let _ = stop_tx.send(());
    let sent = sender.await.expect("sender task");
    assert_eq!(
        statuses(&answer),
        vec![413],
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    assert!(
        sent < 256 * 1024 * 1024,
        "hookgate answered only after the whole body"
    );
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn ambiguous_framing_is_refused_by_the_parser_and_nothing_is_smuggled() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .unmatched("forward")
        .source(stripe.clone())
        .start()
        .await;
    // A second request hidden where one reading of the framing puts a body.
    let smuggled = "POST /smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    let chunked_end = format!("0\r\n\r\n{smuggled}");
    let cases: Vec<(&str, String)> = vec![
        (
            "two different Content-Length values",
            format!("Content-Length: 5\r\nContent-Length: 60\r\n\r\nhello{smuggled}"),
        ),
        (
            "one Content-Length header with two values",
            format!("Content-Length: 5, 60\r\n\r\nhello{smuggled}"),
        ),
        (
            "Transfer-Encoding not ending in chunked",
            format!("Transfer-Encoding: chunked, identity\r\n\r\n{chunked_end}"),
        ),
        (
            "an unknown transfer coding",
            format!("Transfer-Encoding: xchunked\r\n\r\n{chunked_end}"),
        ),
        (
            "a signed Content-Length",
            format!("Content-Length: +5\r\n\r\nhello{smuggled}"),
        ),
    ];
    for (what, rest) in &cases {
        for path in ["/webhooks/stripe", "/unmatched/path"] {
            let request = format!("POST {path} HTTP/1.1\r\nHost: x\r\n{rest}");
            let answer = exchange(&gate, request.as_bytes()).await;
            assert_eq!(
                statuses(&answer),
                vec![400],
                "{what} on {path}: {:?}",
                String::from_utf8_lossy(&answer)
            );
            // hyper's own refusal, before the pipeline: no JSON body.
            assert_eq!(
                raw_header(&answer, "content-length").as_deref(),
                Some("0"),
                "{what} on {path}: {:?}",
                String::from_utf8_lossy(&answer)
            );
        }
    }
    // A broken chunk size is a body error: 400 bad_request from the pipeline.
    let request = format!(
        "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n{chunked_end}"
    );
    let answer = exchange(&gate, request.as_bytes()).await;
    assert_eq!(statuses(&answer), vec![400]);
    assert_eq!(body_json(&answer), json!({ "error": "bad_request" }));
    assert_eq!(upstream.count(), 0, "{:#?}", upstream.requests());

    // Content-Length and Transfer-Encoding together: Transfer-Encoding wins
    // (RFC 9112 §6.3), Content-Length is dropped, and the connection is
    // closed after the answer, so what follows the chunked body is never
    // read as a request.
    let event = stripe.event("evt_cl_te", "invoice.paid");
    let mut request = head(&gate, &stripe.path, &stripe.request_headers(&event));
    request.extend_from_slice(b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
    request.extend_from_slice(format!("{:x}\r\n", event.body.len()).as_bytes());
    request.extend_from_slice(&event.body);
    request.extend_from_slice(format!("\r\n{chunked_end}").as_bytes());
    let answer = exchange(&gate, &request).await;
    assert_eq!(
        statuses(&answer),
        vec![200],
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    let request = format!(
        "POST /unmatched/path HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{chunked_end}",
        chunked_end.len()
    );
    let answer = exchange(&gate, request.as_bytes()).await;
    assert_eq!(
        statuses(&answer),
        vec![200],
        "{:?}",
        String::from_utf8_lossy(&answer)
    );

    let seen = upstream.wait_for(2).await;
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert_eq!(seen[0].path_and_query(), "/webhooks/stripe");
    assert_eq!(seen[0].body.as_ref(), event.body.as_slice());
    assert_eq!(seen[1].path_and_query(), "/unmatched/path");
    assert!(seen[1].body.is_empty());
    for request in &seen {
        assert!(request.header_all("transfer-encoding").is_empty());
        let lengths = request.header_all("content-length");
        assert!(
            lengths == vec![request.body.len().to_string()]
                || (request.body.is_empty() && lengths.is_empty()),
            "{lengths:?} for a body of {} bytes",
            request.body.len()
        );
    }
}

// ---------------------------------------------------------------------------
// Header bytes

#[tokio::test]
async fn a_repeated_signature_header_is_judged_by_its_first_value() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .start()
        .await;
    let event = github.event("dup-sig-1", "push");
    let signed = github.request_headers(&event);
    let good = signed
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("x-hub-signature-256"))
        .cloned()
        .expect("a signature header");
    let bad = (good.0.clone(), format!("sha256={}", "0".repeat(64)));
    let rest: Vec<_> = signed.iter().filter(|h| *h != &good).cloned().collect();

    // Good first: verified, and the app gets both values as sent.
    let mut headers = rest.clone();
    headers.push(good.clone());
    headers.push(bad.clone());
    gate.post(&github.path, &headers, event.body.clone())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(
        seen[0].header_all("x-hub-signature-256"),
        vec![good.1.clone(), bad.1.clone()]
    );

    // Forged first: refused, whatever follows.
    let event = github.event("dup-sig-2", "push");
    let signed = github.request_headers(&event);
    let good = signed
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("x-hub-signature-256"))
        .cloned()
        .expect("a signature header");
    let rest: Vec<_> = signed.iter().filter(|h| *h != &good).cloned().collect();
    let mut headers = rest;
    headers.push(bad);
    headers.push(good);
    gate.post(&github.path, &headers, event.body.clone())
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(upstream.count(), 1);
}

#[tokio::test]
async fn non_utf8_header_bytes_are_refused_or_carried_but_never_crash() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .sources([github.clone(), stripe.clone()])
        .start()
        .await;

    // In the signature header itself: malformed.
    let event = stripe.event("evt_non_utf8", "invoice.paid");
    let mut request = head(&gate, &stripe.path, &[]);
    request.extend_from_slice(b"Stripe-Signature: t=1,v1=\xff\xfe\x80\r\n");
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", event.body.len()).as_bytes());
    request.extend_from_slice(&event.body);
    let raw = exchange(&gate, &request).await;
    assert_eq!(statuses(&raw), vec![400]);
    assert_eq!(body_json(&raw), json!({ "error": "malformed_signature" }));

    // In an unsigned id header (GitHub's delivery id): carried as text with
    // replacement characters, and the duplicate check still works.
    let event = github.event("placeholder", "push");
    let signed: Vec<_> = github
        .request_headers(&event)
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("x-github-delivery"))
        .collect();
    let mut request = head(&gate, &github.path, &signed);
    request.extend_from_slice(b"X-GitHub-Delivery: id-\xff\xfe-\xe9t\xe9\r\n");
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", event.body.len()).as_bytes());
    request.extend_from_slice(&event.body);
    let raw = exchange(&gate, &request).await;
    assert_eq!(statuses(&raw), vec![200]);
    let seen = upstream.wait_for(1).await;
    let stamped =
        String::from_utf8_lossy(seen[0].headers["x-verified-event-id"].as_bytes()).into_owned();
    assert_eq!(stamped, "id-\u{fffd}\u{fffd}-\u{fffd}t\u{fffd}");
    let raw = exchange(&gate, &request).await;
    assert_eq!(statuses(&raw), vec![200]);
    assert_eq!(
        body_json(&raw),
        json!({ "duplicate": true, "event_id": stamped })
    );
    assert_eq!(upstream.count(), 1);
}

#[tokio::test]
async fn spoofed_verified_headers_are_replaced_on_every_path() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_spoof", "invoice.paid");
    let mut sent = stripe.request_headers(&event);
    for (name, value) in [
        ("X-Verified-Event-Id", "evt_someone_else"),
        ("x-verified-event-id", "evt_again"),
        ("X-VERIFIED-SOURCE", "admin"),
        ("X-Verified-Event-Type", "payout.paid"),
        ("X-Verified-Role", "root"),
    ] {
        sent.push((name.to_owned(), value.to_owned()));
    }
    gate.post(&stripe.path, &sent, event.body.clone())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    let request = &seen[0];
    assert_eq!(request.header("x-verified-event-id"), "evt_spoof");
    assert_eq!(request.header("x-verified-source"), "stripe");
    assert_eq!(request.header("x-verified-event-type"), "invoice.paid");
    assert!(!request.has_header("x-verified-role"));
}

// ---------------------------------------------------------------------------
// Bodies and values a valid signature can carry

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_nested_a_hundred_thousand_deep_is_refused_or_passed_through_without_a_crash() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let github = SourceSpec::github();
    let slack = SourceSpec::slack();
    let gate = ConfigBuilder::new(&upstream.url())
        .sources([stripe.clone(), github.clone(), slack.clone()])
        .start()
        .await;
    let depth = 100_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
    let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth)).into_bytes();

    for body in [&arrays, &objects] {
        // Stripe needs the body's /id: the parser gives up at its depth limit.
        let event = Event::raw("deep", None, body.clone());
        gate.send(&stripe, &event)
            .await
            .assert_error(400, "malformed_body");
        // Slack falls back to the body's SHA-256 as the id.
        let event = Event::raw(&sha256_hex(body), None, body.clone());
        gate.send(&slack, &event).await.assert_app_ok();
    }
    // GitHub never parses the body: it reaches the app as sent.
    let event =
        Event::raw("deep-github", Some("push"), arrays.clone()).header("X-GitHub-Event", "push");
    gate.send(&github, &event).await.assert_app_ok();

    let seen = upstream.wait_for(3).await;
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[2].body.as_ref(), arrays.as_slice());
    // Still serving.
    assert_eq!(gate.admin_get("/healthz").await.status, 200);
    gate.send(&stripe, &stripe.event("evt_after_deep", "invoice.paid"))
        .await
        .assert_app_ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_event_ids_become_bounded_keys_end_to_end() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .source(stripe.clone())
        .start()
        .await;
    let hashed = |id: &str| format!("sha256:{}", sha256_hex(id.as_bytes()));
    let cases: Vec<(String, String)> = vec![
        ("a:b*c?[x]".into(), "a:b*c?[x]".into()),
        ("{hash-tag}".into(), "{hash-tag}".into()),
        ("*".into(), "*".into()),
        ("x".repeat(256), "x".repeat(256)),
        ("x".repeat(257), hashed(&"x".repeat(257))),
        ("y".repeat(100_000), hashed(&"y".repeat(100_000))),
        ("line\nbreak".into(), hashed("line\nbreak")),
        ("nul\0byte".into(), hashed("nul\0byte")),
        ("tab\tand\rcr".into(), hashed("tab\tand\rcr")),
        ("évènement".into(), "évènement".into()),
    ];
    for (id, stored) in &cases {
        let event = stripe.event(id, "invoice.paid");
        gate.send(&stripe, &event).await.assert_app_ok();
        gate.send(&stripe, &event).await.assert_duplicate(stored);
    }
    let seen = upstream.wait_for(cases.len()).await;
    assert_eq!(seen.len(), cases.len(), "each id forwarded once");
    for (request, (_, stored)) in seen.iter().zip(&cases) {
        assert_eq!(
            String::from_utf8_lossy(request.headers["x-verified-event-id"].as_bytes()),
            stored.as_str()
        );
    }
    let mut conn = redis.client();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).expect("KEYS");
    keys.sort();
    // The nonces, keyed by the bounded id, and the trail's first
    // generation: its index and its facts, whose members are the bounded
    // ids too.
    let mut expected: Vec<String> = cases
        .iter()
        .map(|(_, stored)| format!("hookgate:nonce:stripe:{stored}"))
        .chain([
            "hookgate:{trail}:index.0".to_owned(),
            "hookgate:{trail}:facts.0".to_owned(),
        ])
        .collect();
    expected.sort();
    // The trail's writes trail the answers by a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while keys != expected && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        keys = redis::cmd("KEYS").arg("*").query(&mut conn).expect("KEYS");
        keys.sort();
    }
    assert_eq!(keys, expected);
    assert!(keys.iter().all(|k| k.len() <= 300), "every key is bounded");
    let mut members: Vec<String> = redis::cmd("HKEYS")
        .arg("hookgate:{trail}:facts.0")
        .query(&mut conn)
        .expect("HKEYS");
    members.sort();
    let mut bounded: Vec<String> = cases
        .iter()
        .map(|(_, stored)| format!("stripe:{stored}"))
        .collect();
    bounded.sort();
    assert_eq!(
        members, bounded,
        "the trail holds each event under its bounded id"
    );
    // The log lines carry the bounded id too.
    assert!(
        gate.stdout().iter().all(|l| l.len() < 4096),
        "no log line carries a huge id"
    );
}

#[tokio::test]
async fn timestamps_of_zero_negative_and_beyond_i64_are_400() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let slack = SourceSpec::slack();
    let gate = ConfigBuilder::new(&upstream.url())
        .sources([stripe.clone(), slack.clone()])
        .start()
        .await;
    let body = br#"{"id":"evt_ts","type":"invoice.paid","event_id":"Ev_ts"}"#;
    let cases = [
        ("0", "timestamp_outside_window"),
        ("-5", "malformed_signature"),
        ("100000000000000000000", "malformed_signature"),
        ("9223372036854775807", "timestamp_outside_window"),
        ("1e9", "malformed_signature"),
    ];
    for (t, code) in cases {
        // Correctly signed with that exact timestamp text.
        let sig = hmac_hex(STRIPE_SECRET, &[t.as_bytes(), b".", body]);
        let h = headers(&[("Stripe-Signature", &format!("t={t},v1={sig}"))]);
        gate.post(&stripe.path, &h, body.to_vec())
            .await
            .assert_error(400, code);

        let sig = hmac_hex(SLACK_SECRET, &[b"v0:", t.as_bytes(), b":", body]);
        let raw = [
            format!(
                "POST {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n",
                slack.path
            )
            .as_bytes(),
            format!("X-Slack-Request-Timestamp: {t}\r\nX-Slack-Signature: v0={sig}\r\n").as_bytes(),
            format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
            body,
        ]
        .concat();
        let resp = exchange(&gate, &raw).await;
        assert_eq!(statuses(&resp), vec![400], "slack t={t}");
        assert_eq!(body_json(&resp), json!({ "error": code }), "slack t={t}");
    }
    assert_eq!(upstream.count(), 0);
    // The same body signed now goes through.
    let t = now().to_string();
    let sig = hmac_hex(STRIPE_SECRET, &[t.as_bytes(), b".", body]);
    let h = headers(&[("Stripe-Signature", &format!("t={t},v1={sig}"))]);
    gate.post(&stripe.path, &h, body.to_vec())
        .await
        .assert_app_ok();
}

// ---------------------------------------------------------------------------
// Connection floods

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_max_connections_new_ones_get_503_and_service_resumes() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .server_key("max_connections = 8")
        .source(stripe.clone())
        .start()
        .await;

    // Eight requests held at the app fill every slot.
    upstream.hold();
    let mut held = JoinSet::new();
    for i in 0..8 {
        let event = stripe.event(&format!("evt_slot_{i}"), "invoice.paid");
        let headers = stripe.request_headers(&event);
        let url = format!("{}{}", gate.public_url(), stripe.path);
        held.spawn(async move {
            crate::support::http(http::Method::POST, &url, &headers, event.body).await
        });
    }
    upstream.wait_for(8).await;

    // The ninth connection is answered 503 with Retry-After, then closed.
    let event = stripe.event("evt_ninth", "invoice.paid");
    let raw = exchange(
        &gate,
        &raw_post(
            &gate,
            &stripe.path,
            &stripe.request_headers(&event),
            &event.body,
        ),
    )
    .await;
    assert_eq!(statuses(&raw), vec![503]);
    assert_eq!(raw_header(&raw, "retry-after").as_deref(), Some("5"));
    assert_eq!(body_json(&raw), json!({ "error": "overloaded" }));

    // A flood of connections: each is refused or closed, none hangs.
    let mut flood = JoinSet::new();
    for _ in 0..200 {
        let addr = gate.public_addr();
        flood.spawn(async move {
            let Ok(mut stream) = TcpStream::connect(addr).await else {
                return None;
            };
            let _ = stream
                .write_all(b"POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n\r\n")
                .await;
            Some(until_closed(&mut stream).await)
        });
    }
    let (mut answered, mut connected) = (0, 0);
    while let Some(result) = flood.join_next().await {
        if let Some(answer) = result.expect("flood task") {
            connected += 1;
            let seen = statuses(&answer);
            assert!(seen.is_empty() || seen == vec![503], "{seen:?}");
            answered += usize::from(!seen.is_empty());
        }
    }
    assert!(answered > 0, "at least the first refusals are answered");

    // The admin port still answers, and counts what happened.
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    assert_eq!(
        metrics.get("hookgate_connections_open", &[("listener", "public")]),
        Some(8.0)
    );
    let rejected = metrics
        .get(
            "hookgate_connections_rejected_total",
            &[("listener", "public")],
        )
        .unwrap_or(0.0);
    assert!(
        rejected > f64::from(connected),
        "rejected {rejected}, connected {connected}"
    );

    // Once the held requests finish, new senders are served again.
    upstream.release();
    while let Some(resp) = held.join_next().await {
        resp.expect("held request").assert_app_ok();
    }
    upstream.set_reply(Reply::default());
    eventually("a new request is served after the flood", || async {
        let event = stripe.event("evt_after_flood", "invoice.paid");
        match gate
            .try_post(
                &stripe.path,
                &stripe.request_headers(&event),
                event.body.clone(),
            )
            .await
        {
            Ok(resp) if resp.status == 200 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(upstream.count(), 9);
}
