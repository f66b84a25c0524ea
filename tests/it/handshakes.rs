//! Provider endpoint checks answered by hookgate itself, through the real
//! binary: a GET challenge before the POST-only rule, a signed POST
//! validation after verification, unsigned opening POSTs (Asana, Microsoft
//! Graph), Meta's verify-token check, and ordinary events still forwarded.

use bytes::Bytes;
use http::Method;
use serde_json::json;

use crate::support::{ConfigBuilder, Event, Metrics, SourceSpec, Upstream, headers, now, sign_raw};

#[tokio::test]
async fn get_challenges_are_echoed_and_other_gets_refused() {
    let upstream = Upstream::start().await;
    let dropbox = SourceSpec::provider("dropbox", "dropbox-secret");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(dropbox.clone())
        .start()
        .await;

    let path = format!("{}?challenge=Zm9vYmFy", dropbox.path);
    let resp = gate.request(Method::GET, &path, &[], Bytes::new()).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body.as_ref(), b"Zm9vYmFy");
    assert_eq!(
        resp.headers
            .get("x-content-type-options")
            .map(|v| v.as_bytes()),
        Some(&b"nosniff"[..])
    );

    let resp = gate
        .request(Method::GET, &dropbox.path, &[], Bytes::new())
        .await;
    resp.assert_json(405, json!({ "error": "method_not_allowed" }));

    // A signed notification is forwarded as usual.
    let event = Event::json(
        "",
        None,
        json!({ "list_folder": { "accounts": ["dbid:1"] } }),
    );
    gate.send(&dropbox, &event).await.assert_app_ok();
    assert_eq!(upstream.wait_for(1).await.len(), 1);
}

#[tokio::test]
async fn zoom_url_validation_is_answered_not_forwarded() {
    let upstream = Upstream::start().await;
    let zoom = SourceSpec::provider("zoom", "zoom-secret");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(zoom.clone())
        .start()
        .await;

    let body = br#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let signed = sign_raw(&zoom.scheme, "zoom-secret", body, None, now());
    let resp = gate.post(&zoom.path, &signed, body.to_vec()).await;
    // python3 -c "import hmac,hashlib;print(hmac.new(b'zoom-secret',b'qgg8vlvZRS6UYooatFL8Aw',hashlib.sha256).hexdigest())"
    resp.assert_json(
        200,
        json!({
            "plainToken": "qgg8vlvZRS6UYooatFL8Aw",
            "encryptedToken": "b17f0320a1322a509340a1a835b3d9edbc491f0b0790ed2d20d0604d39dfe922",
        }),
    );

    // Unsigned, it is refused like any request.
    let resp = gate
        .post(
            &zoom.path,
            &headers(&[("x-zm-request-timestamp", "1")]),
            body.to_vec(),
        )
        .await;
    resp.assert_json(400, json!({ "error": "missing_signature" }));

    let event = Event::json(
        "",
        Some("meeting.started"),
        json!({ "event": "meeting.started" }),
    );
    gate.send(&zoom, &event).await.assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("x-verified-event-type"), "meeting.started");
}

#[tokio::test]
async fn meta_subscription_check_needs_the_verify_token() {
    let upstream = Upstream::start().await;
    let meta = SourceSpec::provider("meta", "meta-app-secret")
        .key(r#"verify_token = "meta-verify-token""#)
        .key(r#"verification = "observe""#);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(meta.clone())
        .start()
        .await;

    let check = |token: &str| {
        format!(
            "{}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token={token}",
            meta.path
        )
    };
    let resp = gate
        .request(Method::GET, &check("meta-verify-token"), &[], Bytes::new())
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.text(), "1158201444");
    assert_eq!(
        resp.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );

    // A wrong token is refused like a bad signature, even in observe mode,
    // and a missing one like a missing signature; none reaches the app.
    let resp = gate
        .request(Method::GET, &check("guess"), &[], Bytes::new())
        .await;
    resp.assert_error(400, "invalid_signature");
    let bare = format!("{}?hub.mode=subscribe&hub.challenge=1", meta.path);
    let resp = gate.request(Method::GET, &bare, &[], Bytes::new()).await;
    resp.assert_error(400, "missing_signature");
    // The app secret is not a verify token.
    let resp = gate
        .request(Method::GET, &check("meta-app-secret"), &[], Bytes::new())
        .await;
    resp.assert_error(400, "invalid_signature");

    // Signed deliveries are verified with the app secret as before.
    let body = br#"{"object":"page","entry":[{"id":"1","time":1700000000,"changes":[]}]}"#;
    let signed = sign_raw(&meta.scheme, "meta-app-secret", body, None, now());
    gate.post(&meta.path, &signed, body.to_vec())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("x-verified-source"), "meta");

    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    let count = |outcome: &str| {
        metrics.get(
            "hookgate_requests_total",
            &[("source", "meta"), ("outcome", outcome)],
        )
    };
    assert_eq!(count("handshake"), Some(1.0));
    assert_eq!(count("invalid_signature"), Some(2.0));
    assert_eq!(count("missing_signature"), Some(1.0));
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn meta_check_without_a_verify_token_is_not_answered() {
    let upstream = Upstream::start().await;
    let meta = SourceSpec::provider("meta", "meta-app-secret");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(meta.clone())
        .start()
        .await;
    let path = format!(
        "{}?hub.mode=subscribe&hub.challenge=1&hub.verify_token=anything",
        meta.path
    );
    let resp = gate.request(Method::GET, &path, &[], Bytes::new()).await;
    resp.assert_error(405, "method_not_allowed");
}

#[tokio::test]
async fn asana_hook_secret_is_echoed_and_later_events_verified() {
    let upstream = Upstream::start().await;
    // Asana's own example value: the secret it hands over.
    let secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
    let asana = SourceSpec::provider("asana", secret);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(asana.clone())
        .start()
        .await;

    let resp = gate
        .post(
            &asana.path,
            &headers(&[("x-hook-secret", secret)]),
            Bytes::new(),
        )
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-hook-secret").as_deref(), Some(secret));
    // Any caller's value is echoed (it is the caller's own), nothing is
    // forwarded, and the value is never logged.
    let resp = gate
        .post(
            &asana.path,
            &headers(&[("x-hook-secret", "someone-else")]),
            Bytes::new(),
        )
        .await;
    assert_eq!(
        resp.header("x-hook-secret").as_deref(),
        Some("someone-else")
    );
    assert_eq!(upstream.requests().len(), 0);
    gate.wait_for_log("the Asana handshake", |l| {
        l["handshake"] == "asana"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("X-Hook-Secret handshake answered"))
    })
    .await;
    let output = gate.output();
    assert!(!output.contains(secret) && !output.contains("someone-else"));

    // Events carry X-Hook-Signature under that secret; an unsigned POST
    // without X-Hook-Secret is an ordinary, refused delivery.
    let body =
        br#"{"events":[{"action":"changed","resource":{"gid":"1","resource_type":"task"}}]}"#;
    let signed = sign_raw(&asana.scheme, secret, body, None, now());
    gate.post(&asana.path, &signed, body.to_vec())
        .await
        .assert_app_ok();
    assert_eq!(upstream.wait_for(1).await.len(), 1);
    gate.post(&asana.path, &[], body.to_vec())
        .await
        .assert_error(400, "missing_signature");
}

#[tokio::test]
async fn graph_validation_is_echoed_and_client_state_checked() {
    let upstream = Upstream::start().await;
    let graph = SourceSpec::provider("microsoft-graph", "secretClientValue");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(graph.clone())
        .start()
        .await;

    let path = format!(
        "{}?validationToken=Validation%3A%20Testing%20client%20application%20reachability",
        graph.path
    );
    let resp = gate
        .post(
            &path,
            &headers(&[("content-type", "text/plain; charset=utf-8")]),
            Bytes::new(),
        )
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.text(),
        "Validation: Testing client application reachability"
    );
    assert!(
        resp.header("content-type")
            .unwrap_or_default()
            .starts_with("text/plain")
    );
    assert_eq!(
        resp.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );

    let notification = |state: &str| {
        json!({ "value": [{
            "subscriptionId": "c8d3a6b4-0000-4000-8000-000000000001",
            "clientState": state,
            "changeType": "created",
            "resource": "users/u1/messages/m1",
            "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95"
        }]})
        .to_string()
    };
    let json_type = headers(&[("content-type", "application/json")]);
    gate.post(&graph.path, &json_type, notification("secretClientValue"))
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen.len(), 1);
    assert!(
        !seen[0].has_header("x-verified-event-type"),
        "the type is not signed"
    );
    gate.post(&graph.path, &json_type, notification("guessed"))
        .await
        .assert_error(400, "invalid_signature");
    gate.post(&graph.path, &json_type, notification("secretClientValue"))
        .await
        .assert_duplicate(&seen[0].header("x-verified-event-id"));
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn worldline_endpoint_verification_is_echoed_not_forwarded() {
    let upstream = Upstream::start().await;
    let worldline = SourceSpec::provider("worldline", "worldline-secret");
    let gate = ConfigBuilder::new(&upstream.url())
        .source(worldline.clone())
        .start()
        .await;

    let value = "5c2f7d1e-0b9a-4c4b-8e35-1f6a2d9c0e77";
    let resp = gate
        .request(
            Method::GET,
            &worldline.path,
            &headers(&[("X-GCS-Webhooks-Endpoint-Verification", value)]),
            Bytes::new(),
        )
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body.as_ref(), value.as_bytes());
    assert_eq!(
        resp.header("content-type").as_deref(),
        Some("text/plain; charset=utf-8")
    );

    // A GET without the header is no check; a POST with it is an ordinary,
    // unsigned delivery. Neither reaches the app.
    gate.request(Method::GET, &worldline.path, &[], Bytes::new())
        .await
        .assert_error(405, "method_not_allowed");
    gate.post(
        &worldline.path,
        &headers(&[("X-GCS-Webhooks-Endpoint-Verification", value)]),
        br#"{"id":"e1","type":"payment.paid"}"#.to_vec(),
    )
    .await
    .assert_error(400, "missing_signature");
    assert_eq!(upstream.count(), 0);

    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    assert_eq!(
        metrics.get(
            "hookgate_requests_total",
            &[("source", "worldline"), ("outcome", "handshake")]
        ),
        Some(1.0)
    );

    // Signed events are verified and forwarded as before.
    let body = br#"{"apiVersion":"v1","id":"8ee793f6","type":"payment.paid"}"#;
    let signed = sign_raw(&worldline.scheme, "worldline-secret", body, None, now());
    gate.post(&worldline.path, &signed, body.to_vec())
        .await
        .assert_app_ok();
    assert_eq!(upstream.wait_for(1).await.len(), 1);
}
