//! Provider endpoint checks answered by hookgate itself, through the real
//! binary: a GET challenge before the POST-only rule, a signed POST
//! validation after verification, and ordinary events still forwarded.

use bytes::Bytes;
use http::Method;
use serde_json::json;

use crate::support::{ConfigBuilder, Event, SourceSpec, Upstream, headers, now, sign_raw};

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
