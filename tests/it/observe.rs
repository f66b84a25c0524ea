//! `verification = "observe"` (DESIGN §3): every request is checked and
//! counted; one that fails verification reaches the app anyway, unstamped,
//! marked `X-Hookgate-Unverified: <word>`, and nothing is stored for it;
//! verified events are deduplicated and stamped as in enforce mode.

use serde_json::json;

use crate::support::raw_app::{RawApp, RawRequest, Scripted};
use crate::support::{ConfigBuilder, Hookgate, Metrics, SourceSpec, now, replace_header};

fn observed_stripe() -> SourceSpec {
    SourceSpec::stripe().key("verification = \"observe\"")
}

async fn post(gate: &Hookgate, headers: &[(String, String)], body: &[u8]) -> (u16, String) {
    let resp = gate.post("/webhooks/stripe", headers, body.to_vec()).await;
    (resp.status, resp.text())
}

async fn seen(app: &RawApp, n: usize) -> Vec<RawRequest> {
    for _ in 0..200 {
        if app.requests().len() >= n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    app.requests()
}

#[tokio::test]
async fn each_verification_failure_is_forwarded_unstamped_with_its_word() {
    let app = RawApp::start(|_| Scripted::status(202)).await;
    let stripe = observed_stripe();
    let gate = ConfigBuilder::new(&app.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_observed", "invoice.paid");
    let good = stripe.request_headers(&event);

    let mut malformed = good.clone();
    replace_header(&mut malformed, "Stripe-Signature", "t=abc,v1=zz".to_owned());
    let forged = stripe.forged_headers(&event);
    let stale = stripe.request_headers_with(&event, 0, now() - 3600);
    let content_type = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let cases = [
        ("missing_signature", content_type),
        ("malformed_signature", malformed),
        ("invalid_signature", forged),
        ("timestamp_outside_window", stale),
    ];
    for (n, (word, headers)) in cases.iter().enumerate() {
        let (status, body) = post(&gate, headers, &event.body).await;
        assert_eq!((status, body.as_str()), (202, "app said 202"), "{word}");
        let requests = seen(&app, n + 1).await;
        let got = &requests[n];
        assert_eq!(got.header("x-hookgate-unverified"), [*word]);
        assert!(
            got.header_lines()
                .iter()
                .all(|(name, _)| !name.to_ascii_lowercase().starts_with("x-verified-")),
            "{word}: {}",
            got.text()
        );
    }
    // Nothing was stored for them: the genuine event is fresh, stamped and
    // then a duplicate.
    let (status, _) = post(&gate, &good, &event.body).await;
    assert_eq!(status, 202);
    let requests = seen(&app, 5).await;
    assert_eq!(requests[4].header("x-verified-event-id"), ["evt_observed"]);
    assert!(requests[4].header("x-hookgate-unverified").is_empty());
    let resp = gate
        .post("/webhooks/stripe", &good, event.body.clone())
        .await;
    resp.assert_json(200, json!({"duplicate": true, "event_id": "evt_observed"}));
    assert_eq!(app.requests().len(), 5);

    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    for (word, _) in &cases {
        assert_eq!(
            metrics.get(
                "hookgate_requests_total",
                &[("source", "stripe"), ("outcome", word)]
            ),
            Some(1.0),
            "{word}"
        );
    }
    assert_eq!(
        metrics.get(
            "hookgate_requests_total",
            &[("source", "stripe"), ("outcome", "forwarded")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_client_cannot_mark_or_stamp_a_request_itself_in_observe_mode() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let stripe = observed_stripe();
    let gate = ConfigBuilder::new(&app.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_observe_spoof", "invoice.paid");
    let spoofs = [
        ("X-Hookgate-Unverified", "none"),
        ("x-hookgate-unverified", "invalid_signature"),
        ("X-Verified-Source", "admin"),
        ("X-Verified-Event-Id", "forged"),
    ];
    // A forged request carrying a stamp of its own: forwarded, with
    // hookgate's mark only.
    let mut forged = stripe.forged_headers(&event);
    let mut good = stripe.request_headers(&event);
    for (name, value) in spoofs {
        forged.push((name.to_owned(), value.to_owned()));
        good.push((name.to_owned(), value.to_owned()));
    }
    assert_eq!(post(&gate, &forged, &event.body).await.0, 200);
    assert_eq!(post(&gate, &good, &event.body).await.0, 200);
    let requests = seen(&app, 2).await;
    assert_eq!(
        requests[0].header("x-hookgate-unverified"),
        ["invalid_signature"]
    );
    assert!(requests[0].header("x-verified-source").is_empty());
    assert!(requests[0].header("x-verified-event-id").is_empty());
    // A verified one: the stamp, and no mark at all.
    assert!(requests[1].header("x-hookgate-unverified").is_empty());
    assert_eq!(requests[1].header("x-verified-source"), ["stripe"]);
    assert_eq!(
        requests[1].header("x-verified-event-id"),
        ["evt_observe_spoof"]
    );
}

#[tokio::test]
async fn enforce_stays_the_default() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&app.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_enforced", "invoice.paid");
    let resp = gate
        .post(
            "/webhooks/stripe",
            &stripe.forged_headers(&event),
            event.body.clone(),
        )
        .await;
    resp.assert_error(400, "invalid_signature");
    assert!(app.requests().is_empty());
}
