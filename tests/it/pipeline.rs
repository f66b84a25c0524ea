//! Each row of the DESIGN §3 table in forward mode, seen from the sender and
//! from the app. A rejection stores nothing, so after each one the same event,
//! correctly signed, must still be forwarded (not answered as a duplicate).

use std::time::{Duration, Instant};

use http::Method;
use serde_json::json;

use crate::support::{
    ConfigBuilder, Event, Reply, SourceSpec, Upstream, closed_addr, headers, merge_headers, now,
    raw_request,
};

#[tokio::test]
async fn a_path_that_matches_no_source_is_404_unknown_source() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_unknown_source", "invoice.paid");
    let signed = stripe.request_headers(&event);

    for path in [
        "/webhooks/unknown",
        "/",
        "/webhooks",
        // A prefix that does not end on a segment boundary is another path.
        "/webhooks/stripe-test",
        "/webhooks/stripex",
    ] {
        gate.post(path, &signed, event.body.clone())
            .await
            .assert_error(404, "unknown_source");
    }
    assert_eq!(upstream.count(), 0, "nothing reaches the app");

    gate.send(&stripe, &event).await.assert_app_ok();
}

#[tokio::test]
async fn the_longest_prefix_on_a_segment_boundary_picks_the_source() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let catchall = SourceSpec::github().named("catchall").path("/webhooks");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(catchall.clone())
        .source(stripe.clone())
        .start()
        .await;

    let event = stripe.event("evt_route_1", "invoice.paid");
    gate.post(
        "/webhooks/stripe/nested/path",
        &stripe.request_headers(&event),
        event.body.clone(),
    )
    .await
    .assert_app_ok();

    let delivery = catchall.event("route-delivery-2", "push");
    gate.post(
        "/webhooks/stripe-test",
        &catchall.request_headers(&delivery),
        delivery.body.clone(),
    )
    .await
    .assert_app_ok();

    // /webhooks/stripe itself belongs to the stripe source, whose header is absent.
    let delivery = catchall.event("route-delivery-3", "push");
    gate.post(
        "/webhooks/stripe",
        &catchall.request_headers(&delivery),
        delivery.body.clone(),
    )
    .await
    .assert_error(400, "missing_signature");

    let seen = upstream.wait_for(2).await;
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path_and_query(), "/webhooks/stripe/nested/path");
    assert_eq!(seen[0].header("x-verified-source"), "stripe");
    assert_eq!(seen[1].path_and_query(), "/webhooks/stripe-test");
    assert_eq!(seen[1].header("x-verified-source"), "catchall");
}

#[tokio::test]
async fn unmatched_forward_proxies_unchanged_without_verification() {
    let upstream = Upstream::start().await;
    let gate = ConfigBuilder::new(&upstream.url())
        .unmatched("forward")
        .source(SourceSpec::stripe())
        .start()
        .await;
    let body = b"\x00\xffnot signed at all\r\n".to_vec();
    let sent = headers(&[
        ("Content-Type", "application/octet-stream"),
        ("X-Custom", "kept as is"),
        ("X-Verified-Source", "spoofed"),
        ("X-Verified-Event-Id", "spoofed"),
        ("X-Verified-Event-Type", "spoofed"),
        ("X-Verified-Anything", "spoofed"),
    ]);

    gate.post("/other/thing?a=1&b=two%20words", &sent, body.clone())
        .await
        .assert_app_ok();
    // No nonce on this path: the same request goes through again.
    upstream.set_reply(
        Reply::status(418)
            .header("X-App", "teapot")
            .body("short and stout"),
    );
    let resp = gate
        .post("/other/thing?a=1&b=two%20words", &sent, body.clone())
        .await;
    assert_eq!(resp.status, 418);
    assert_eq!(resp.header("x-app").as_deref(), Some("teapot"));
    assert_eq!(resp.text(), "short and stout");

    let seen = upstream.wait_for(2).await;
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.method, Method::POST);
        assert_eq!(request.path_and_query(), "/other/thing?a=1&b=two%20words");
        assert_eq!(request.body.as_ref(), body.as_slice());
        assert_eq!(request.header("x-custom"), "kept as is");
        assert_eq!(request.header("content-type"), "application/octet-stream");
        let verified: Vec<_> = request
            .headers
            .keys()
            .filter(|n| n.as_str().starts_with("x-verified-"))
            .collect();
        assert!(
            verified.is_empty(),
            "client X-Verified-* must be stripped: {verified:?}"
        );
    }
}

#[tokio::test]
async fn methods_other_than_post_are_405() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_method", "invoice.paid");
    let signed = stripe.request_headers(&event);

    for method in [Method::GET, Method::PUT, Method::PATCH, Method::DELETE] {
        gate.request(method, &stripe.path, &signed, event.body.clone())
            .await
            .assert_error(405, "method_not_allowed");
    }
    assert_eq!(upstream.count(), 0);

    gate.send(&stripe, &event).await.assert_app_ok();
}

/// A Stripe event whose JSON body is exactly `size` bytes.
fn stripe_event_of_size(id: &str, size: usize) -> Event {
    let base = serde_json::to_vec(&json!({ "id": id, "type": "invoice.paid", "pad": "" }))
        .expect("JSON")
        .len();
    assert!(size >= base, "size {size} below the smallest body {base}");
    let pad = "x".repeat(size - base);
    let event = Event::json(
        id,
        Some("invoice.paid"),
        json!({ "id": id, "type": "invoice.paid", "pad": pad }),
    );
    assert_eq!(event.body.len(), size);
    event
}

#[tokio::test]
async fn a_body_over_max_body_bytes_is_413() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .max_body_bytes(4096)
        .source(stripe.clone())
        .start()
        .await;

    // Declared with Content-Length.
    let big = stripe_event_of_size("evt_big", 64 * 1024);
    gate.send(&stripe, &big)
        .await
        .assert_error(413, "body_too_large");

    // Streamed in chunks, so only counting the bytes can catch it.
    let chunked = stripe_event_of_size("evt_big_chunked", 64 * 1024);
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n",
        stripe.path,
        gate.public_addr()
    )
    .into_bytes();
    for (name, value) in stripe.request_headers(&chunked) {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(b"\r\n");
    for chunk in chunked.body.chunks(8192) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let raw = raw_request(gate.public_addr(), &request).await;
    assert_eq!(raw.status, 413, "chunked body over the limit: {raw:?}");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&raw.body).expect("JSON body"),
        json!({ "error": "body_too_large" })
    );
    assert_eq!(upstream.count(), 0);

    // Exactly at the limit is fine.
    let at_limit = stripe_event_of_size("evt_at_limit", 4096);
    gate.send(&stripe, &at_limit).await.assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen[0].body.as_ref(), at_limit.body.as_slice());
}

#[tokio::test]
async fn a_missing_signature_header_is_400_and_stores_nothing() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_missing_sig", "invoice.paid");

    gate.post(&stripe.path, &event.headers, event.body.clone())
        .await
        .assert_error(400, "missing_signature");
    assert_eq!(upstream.count(), 0);

    gate.send(&stripe, &event).await.assert_app_ok();
}

#[tokio::test]
async fn an_unparseable_signature_header_is_400_malformed_signature() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_malformed_sig", "invoice.paid");

    for garbage in ["garbage", "t=not-a-number,v1=abc"] {
        let sent = merge_headers(
            vec![("Stripe-Signature".to_owned(), garbage.to_owned())],
            &event.headers,
        );
        gate.post(&stripe.path, &sent, event.body.clone())
            .await
            .assert_error(400, "malformed_signature");
    }
    assert_eq!(upstream.count(), 0);

    gate.send(&stripe, &event).await.assert_app_ok();
}

#[tokio::test]
async fn a_signature_no_secret_matches_is_400_invalid_signature() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_invalid_sig", "invoice.paid");

    // Signed with a secret hookgate does not have.
    let wrong = stripe.forged_headers(&event);
    gate.post(&stripe.path, &wrong, event.body.clone())
        .await
        .assert_error(400, "invalid_signature");

    // Signed correctly, then one byte of the body changed.
    let mut tampered = event.body.clone();
    let last = tampered.len() - 2;
    tampered[last] ^= 0x01;
    gate.post(&stripe.path, &stripe.request_headers(&event), tampered)
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(upstream.count(), 0);

    gate.send(&stripe, &event).await.assert_app_ok();
}

#[tokio::test]
async fn a_signed_timestamp_outside_the_window_is_400_both_ways() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().tolerance("5m");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_window", "invoice.paid");

    gate.send_with(&stripe, &event, 0, now() - 600)
        .await
        .assert_error(400, "timestamp_outside_window");
    gate.send_with(&stripe, &event, 0, now() + 600)
        .await
        .assert_error(400, "timestamp_outside_window");
    assert_eq!(upstream.count(), 0);

    // Inside the window, in the past: a slow sender's normal case.
    gate.send_with(&stripe, &event, 0, now() - 60)
        .await
        .assert_app_ok();
}

#[tokio::test]
async fn a_verified_stripe_body_without_an_id_is_400_malformed_body() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let no_id = Event::json(
        "unused",
        Some("invoice.paid"),
        json!({ "type": "invoice.paid" }),
    );
    gate.send(&stripe, &no_id)
        .await
        .assert_error(400, "malformed_body");
    let not_json = Event::raw("unused", None, b"this is not json".to_vec());
    gate.send(&stripe, &not_json)
        .await
        .assert_error(400, "malformed_body");
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_filtered_out_event_type_is_200_ignored() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().event_types(&["invoice.paid", "customer.subscription.*"]);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let refund = stripe.event("evt_filtered", "charge.refunded");
    gate.send(&stripe, &refund)
        .await
        .assert_json(200, json!({ "ignored": true }));
    assert_eq!(upstream.count(), 0);

    gate.send(
        &stripe,
        &stripe.event("evt_sub", "customer.subscription.updated"),
    )
    .await
    .assert_app_ok();
    gate.send(&stripe, &stripe.event("evt_paid", "invoice.paid"))
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(2).await;
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].header("x-verified-event-type"),
        "customer.subscription.updated"
    );
    assert_eq!(seen[1].header("x-verified-event-type"), "invoice.paid");
}

#[tokio::test]
async fn an_event_the_app_accepted_is_answered_as_a_duplicate() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let github = SourceSpec::github();
    let github_too = SourceSpec::github().named("github-too");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .source(github.clone())
        .source(github_too.clone())
        .start()
        .await;

    let event = stripe.event("evt_dup_1", "invoice.paid");
    let first_headers = stripe.request_headers(&event);
    gate.post(&stripe.path, &first_headers, event.body.clone())
        .await
        .assert_app_ok();
    // The sender's retry with a fresh signature, then the very same bytes again.
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_dup_1");
    gate.post(&stripe.path, &first_headers, event.body.clone())
        .await
        .assert_duplicate("evt_dup_1");
    assert_eq!(upstream.count(), 1);

    // Event ids are per source.
    let delivery = github.event("shared-delivery-id", "push");
    gate.send(&github, &delivery).await.assert_app_ok();
    gate.send(&github_too, &delivery).await.assert_app_ok();
    gate.send(&github, &delivery)
        .await
        .assert_duplicate("shared-delivery-id");
    assert_eq!(upstream.count(), 3);
}

#[tokio::test]
async fn a_copy_arriving_while_the_first_is_in_flight_is_429() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_in_flight", "invoice.paid");

    upstream.hold();
    let (first, second) = tokio::join!(gate.send(&stripe, &event), async {
        upstream.wait_for(1).await;
        let second = gate.send(&stripe, &event).await;
        upstream.release();
        second
    });

    second.assert_error(429, "in_flight");
    second.retry_after();
    first.assert_app_ok();
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_in_flight");
    assert_eq!(upstream.count(), 1);
}

#[tokio::test]
async fn the_apps_own_status_headers_and_body_go_back_to_the_sender() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let app_body: &[u8] = b"created \xe2\x9c\x93 \xff\x00 raw";
    upstream.set_reply(
        Reply::status(201)
            .header("Content-Type", "text/plain; charset=utf-8")
            .header("X-App-Request", "req-77")
            .header("Set-Cookie", "a=1")
            .body(app_body.to_vec()),
    );
    let resp = gate
        .send(&stripe, &stripe.event("evt_passthrough", "invoice.paid"))
        .await;
    assert_eq!(resp.status, 201);
    assert_eq!(
        resp.header("content-type").as_deref(),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(resp.header("x-app-request").as_deref(), Some("req-77"));
    assert_eq!(resp.header("set-cookie").as_deref(), Some("a=1"));
    assert_eq!(resp.body.as_ref(), app_body);
}

#[tokio::test]
async fn an_app_error_releases_the_nonce_so_the_retry_is_forwarded() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_app_500", "invoice.paid");

    upstream.set_reply(Reply::status(500).body("app exploded"));
    let resp = gate.send(&stripe, &event).await;
    assert_eq!((resp.status, resp.text().as_str()), (500, "app exploded"));

    upstream.set_reply(Reply::status(422).body("app refused"));
    let resp = gate.send(&stripe, &event).await;
    assert_eq!((resp.status, resp.text().as_str()), (422, "app refused"));

    upstream.set_reply(Reply::default());
    gate.send(&stripe, &event).await.assert_app_ok();
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_app_500");
    assert_eq!(upstream.count(), 3);
}

#[tokio::test]
async fn an_unreachable_app_is_502_and_the_retry_is_forwarded() {
    let addr = closed_addr();
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&format!("http://{addr}"))
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_app_down", "invoice.paid");

    gate.send(&stripe, &event)
        .await
        .assert_error(502, "upstream_unavailable");

    let upstream = Upstream::start_on(addr).await;
    gate.send(&stripe, &event).await.assert_app_ok();
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_app_down");
    assert_eq!(upstream.count(), 1);
}

#[tokio::test]
async fn a_slow_app_is_504_and_the_retry_is_forwarded() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .upstream_timeout("300ms")
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_app_slow", "invoice.paid");

    upstream.set_reply(Reply::default().delay(Duration::from_secs(10)));
    let started = Instant::now();
    let resp = gate.send(&stripe, &event).await;
    resp.assert_error(504, "upstream_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "hookgate waited {:?} for an app that takes 10s, with a 300ms timeout",
        started.elapsed()
    );

    upstream.set_reply(Reply::default());
    gate.send(&stripe, &event).await.assert_app_ok();
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_app_slow");
    assert_eq!(upstream.count(), 2);
}

/// A Stripe event about `resource` at `version` (an integer or an RFC 3339 time).
fn versioned(id: &str, resource: &str, version: serde_json::Value) -> Event {
    Event::json(
        id,
        Some("customer.updated"),
        json!({
            "id": id,
            "type": "customer.updated",
            "data": { "object": { "id": resource, "version": version } },
        }),
    )
}

#[tokio::test]
async fn an_event_older_than_the_accepted_version_is_200_stale_version() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().ordering("/data/object/id", "/data/object/version");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let stale = json!({ "ignored": "stale_version" });

    gate.send(&stripe, &versioned("evt_v2", "cus_1", json!(2)))
        .await
        .assert_app_ok();
    gate.send(&stripe, &versioned("evt_v1", "cus_1", json!(1)))
        .await
        .assert_json(200, stale.clone());
    gate.send(&stripe, &versioned("evt_v3", "cus_1", json!(3)))
        .await
        .assert_app_ok();
    // Versions are per resource.
    gate.send(&stripe, &versioned("evt_other_v1", "cus_2", json!(1)))
        .await
        .assert_app_ok();
    assert_eq!(upstream.count(), 3);

    // Only a version the app accepted counts: a refused v5 does not make v4 stale.
    upstream.set_reply(Reply::status(500));
    let resp = gate
        .send(&stripe, &versioned("evt_v5", "cus_1", json!(5)))
        .await;
    assert_eq!(resp.status, 500);
    upstream.set_reply(Reply::default());
    gate.send(&stripe, &versioned("evt_v4", "cus_1", json!(4)))
        .await
        .assert_app_ok();

    // RFC 3339 times order the same way.
    gate.send(
        &stripe,
        &versioned("evt_t10", "cus_time", json!("2024-05-01T10:00:00Z")),
    )
    .await
    .assert_app_ok();
    gate.send(
        &stripe,
        &versioned("evt_t09", "cus_time", json!("2024-05-01T09:00:00Z")),
    )
    .await
    .assert_json(200, stale);
    assert_eq!(upstream.count(), 6);
}
