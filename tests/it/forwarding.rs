//! What the app receives: the sender's request byte for byte (minus hop-by-hop
//! headers), plus the `X-Verified-*` headers hookgate vouches for, and never a
//! client's own `X-Verified-*`.

use http::Method;

use crate::support::{
    ConfigBuilder, Event, Hookgate, SourceSpec, Upstream, raw_request, sha256_hex,
};

#[tokio::test]
async fn method_path_query_headers_and_raw_body_reach_the_app_unchanged() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .start()
        .await;

    // Every byte value, not UTF-8, with what looks like a header end inside.
    let mut body: Vec<u8> = (0..=255u8).rev().collect();
    body.extend_from_slice(b"\r\n\r\nPOST / HTTP/1.1\r\n\x00\xff");
    let id = "6b0c9a3e-71f2-4d1b-9a0e-forwarding01";
    let event = Event::raw(id, Some("push"), body.clone())
        .header("X-GitHub-Event", "push")
        .header("Content-Type", "application/octet-stream");
    let path_and_query = "/webhooks/github/deliveries/7?x=1&y=a%20b&y=2&empty=";

    let mut request = format!(
        "POST {path_and_query} HTTP/1.1\r\n\
         Host: {host}\r\n\
         User-Agent: GitHub-Hookshot/it\r\n\
         X-Multi: one\r\n\
         X-Multi: two\r\n\
         X-Custom-Case: MiXeD Value, with comma\r\n\
         Keep-Alive: timeout=5\r\n\
         Proxy-Authorization: Basic aGk6dGhlcmU=\r\n\
         X-Hop-Only: for the next hop only\r\n\
         Connection: close, X-Hop-Only\r\n\
         X-Verified-Source: spoofed\r\n\
         X-Verified-Event-Id: spoofed\r\n\
         X-Verified-Event-Type: spoofed\r\n\
         X-Verified-Extra: spoofed\r\n",
        host = gate.public_addr()
    )
    .into_bytes();
    let sent_headers = github.request_headers(&event);
    for (name, value) in &sent_headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    request.extend_from_slice(&body);

    let resp = raw_request(gate.public_addr(), &request).await;
    assert_eq!(resp.status, 200, "{resp:?}");
    assert_eq!(resp.body, b"ok");

    let seen = upstream.wait_for(1).await;
    assert_eq!(seen.len(), 1);
    let forwarded = &seen[0];
    assert_eq!(forwarded.method, Method::POST);
    assert_eq!(forwarded.path_and_query(), path_and_query);
    assert_eq!(
        forwarded.body.as_ref(),
        body.as_slice(),
        "body byte for byte"
    );

    // End-to-end headers, as sent (including the signature and repeated fields).
    for (name, value) in &sent_headers {
        assert_eq!(&forwarded.header(name), value, "header {name}");
    }
    assert_eq!(forwarded.header("user-agent"), "GitHub-Hookshot/it");
    assert_eq!(forwarded.header_all("x-multi"), ["one", "two"]);
    assert_eq!(forwarded.header("x-custom-case"), "MiXeD Value, with comma");
    assert_eq!(forwarded.header("content-length"), body.len().to_string());

    // Hop-by-hop headers, including those the client named in Connection, stop here.
    for hop in ["keep-alive", "proxy-authorization", "x-hop-only"] {
        assert!(
            !forwarded.has_header(hop),
            "hop-by-hop {hop} was forwarded: {:?}",
            forwarded.headers
        );
    }

    // What hookgate vouches for, once each; the client's spoofed ones are gone.
    assert_eq!(forwarded.header("x-verified-event-id"), id);
    assert_eq!(forwarded.header("x-verified-source"), "github");
    // GitHub's event type rides in an unsigned header: it is not vouched for.
    assert!(!forwarded.has_header("x-verified-event-type"));
    assert!(!forwarded.has_header("x-verified-extra"));
    assert_eq!(forwarded.header("x-forwarded-for"), "127.0.0.1");
}

#[tokio::test]
async fn verified_headers_name_the_source_event_id_and_type() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe
        .event("evt_verified_headers", "customer.created")
        .header("X-Verified-Event-Id", "evt_someone_else")
        .header("X-Verified-Source", "github");

    gate.send(&stripe, &event).await.assert_app_ok();

    let forwarded = &upstream.wait_for(1).await[0];
    assert_eq!(
        forwarded.header("x-verified-event-id"),
        "evt_verified_headers"
    );
    assert_eq!(forwarded.header("x-verified-source"), "stripe");
    assert_eq!(
        forwarded.header("x-verified-event-type"),
        "customer.created"
    );
    assert_eq!(forwarded.header("x-forwarded-for"), "127.0.0.1");
    assert_eq!(forwarded.body.as_ref(), event.body.as_slice());
}

#[tokio::test]
async fn without_an_event_type_there_is_no_type_header_and_the_id_is_the_body_hash() {
    let upstream = Upstream::start().await;
    let bare = SourceSpec::bare();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(bare.clone())
        .start()
        .await;
    let event = Event::raw("", None, b"plain bytes, no id, no type".to_vec())
        .header("X-Verified-Event-Type", "spoofed");
    let expected_id = sha256_hex(&event.body);

    gate.send(&bare, &event).await.assert_app_ok();
    gate.send(&bare, &event)
        .await
        .assert_duplicate(&expected_id);

    let forwarded = &upstream.wait_for(1).await[0];
    assert_eq!(forwarded.header("x-verified-event-id"), expected_id);
    assert_eq!(forwarded.header("x-verified-source"), "bare");
    assert!(
        !forwarded.has_header("x-verified-event-type"),
        "no type is known, and the client's must not pass: {:?}",
        forwarded.headers
    );
    assert_eq!(upstream.count(), 1);
}

/// With one CPU to run on, hookgate serves on Tokio's current-thread
/// scheduler: forwarding, duplicates, the admin port and the SIGTERM drain
/// must all work there too.
#[tokio::test]
async fn a_hookgate_on_one_cpu_forwards_answers_duplicates_and_drains() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let config = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .toml();
    let mut gate = Hookgate::launch(&config).one_cpu().start().await;

    for i in 0..20 {
        let event = github.event(&format!("one-cpu-{i}"), "push");
        gate.send(&github, &event).await.assert_app_ok();
        gate.send(&github, &event)
            .await
            .assert_duplicate(&format!("one-cpu-{i}"));
    }
    assert_eq!(upstream.wait_for(20).await.len(), 20);
    let metrics = gate.admin_get("/metrics").await;
    assert_eq!(metrics.status, 200, "{}", gate.output());

    gate.sigterm();
    let status = gate.wait_exit().await;
    assert!(status.success(), "exit {status:?}\n{}", gate.output());
    assert_eq!(upstream.count(), 20);
}
