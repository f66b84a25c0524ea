//! Every built-in scheme and a generic one, end to end through the real
//! binary, signed by the library's own signer, plus each provider's quirks.

use serde_json::json;

use crate::support::{
    ConfigBuilder, Event, STRIPE_PREVIOUS_SECRET, STRIPE_SECRET, SourceSpec, Upstream,
    header_value, now, replace_header, sha256_hex,
};

/// An event type each sender really uses.
fn event_type_for(source: &SourceSpec) -> &'static str {
    match source.scheme.name() {
        "stripe" => "invoice.paid",
        "github" => "push",
        "shopify" => "orders/create",
        "slack" => "message",
        "standard" => "user.created",
        _ => "thing.happened",
    }
}

#[tokio::test]
async fn every_scheme_forwards_an_event_once_then_answers_duplicate() {
    let upstream = Upstream::start().await;
    let sources = SourceSpec::every_scheme();
    let gate = ConfigBuilder::new(&upstream.url())
        .sources(sources.clone())
        .start()
        .await;

    for (i, source) in sources.iter().enumerate() {
        let id = format!("{}-event-{i}", source.name);
        let event = source.event(&id, event_type_for(source));
        gate.send(source, &event).await.assert_app_ok();
        gate.send(source, &event).await.assert_duplicate(&id);

        let seen = upstream.wait_for(i + 1).await;
        assert_eq!(seen.len(), i + 1, "{}: one forward per event", source.name);
        let forwarded = &seen[i];
        assert_eq!(forwarded.path_and_query(), source.path);
        assert_eq!(forwarded.body.as_ref(), event.body.as_slice());
        assert_eq!(forwarded.header("x-verified-source"), source.name);
        assert_eq!(forwarded.header("x-verified-event-id"), id);
        if source.scheme.signs_event_type() {
            assert_eq!(
                forwarded.header("x-verified-event-type"),
                event_type_for(source),
                "{}",
                source.name
            );
        } else {
            assert!(
                !forwarded.has_header("x-verified-event-type"),
                "{}: an unsigned type was stamped",
                source.name
            );
        }
    }
}

#[tokio::test]
async fn every_scheme_rejects_a_request_without_its_signature_header() {
    let upstream = Upstream::start().await;
    let sources = SourceSpec::every_scheme();
    let gate = ConfigBuilder::new(&upstream.url())
        .sources(sources.clone())
        .start()
        .await;

    for source in &sources {
        let event = source.event(&format!("{}-unsigned", source.name), event_type_for(source));
        let resp = gate
            .post(&source.path, &event.headers, event.body.clone())
            .await;
        assert_eq!(resp.status, 400, "{}: {resp:?}", source.name);
        resp.assert_error(400, "missing_signature");
    }
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn every_timestamped_scheme_refuses_a_stale_signature_and_stores_nothing() {
    let upstream = Upstream::start().await;
    let sources: Vec<SourceSpec> = SourceSpec::every_scheme()
        .into_iter()
        .filter(|s| s.scheme.signs_timestamp())
        .collect();
    assert_eq!(
        sources.len(),
        4,
        "stripe, slack, standard and the generic one"
    );
    let gate = ConfigBuilder::new(&upstream.url())
        .sources(sources.clone())
        .start()
        .await;

    for source in &sources {
        let event = source.event(&format!("{}-stale", source.name), event_type_for(source));
        let resp = gate.send_with(source, &event, 0, now() - 3600).await;
        assert_eq!(resp.status, 400, "{}: {resp:?}", source.name);
        resp.assert_error(400, "timestamp_outside_window");
        gate.send(source, &event).await.assert_app_ok();
    }
    assert_eq!(upstream.count(), sources.len());
}

#[tokio::test]
async fn stripe_accepts_any_of_several_v1_signatures_and_any_active_secret() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().literal_secrets(&[STRIPE_SECRET, STRIPE_PREVIOUS_SECRET]);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    // A bogus v1 first, the real one second (Stripe sends one per active secret).
    let event = stripe.event("evt_two_v1", "invoice.paid");
    let mut sent = stripe.request_headers(&event);
    let signature = header_value(&sent, "Stripe-Signature");
    let (t, rest) = signature.split_once(',').expect("t=…,v1=… from the signer");
    replace_header(
        &mut sent,
        "Stripe-Signature",
        format!("{t},v1={},{rest}", "0".repeat(64)),
    );
    gate.post(&stripe.path, &sent, event.body.clone())
        .await
        .assert_app_ok();

    // Signed with the second configured secret (rotation overlap).
    let rotated = stripe.event("evt_second_secret", "invoice.paid");
    gate.send_with(&stripe, &rotated, 1, now())
        .await
        .assert_app_ok();
    assert_eq!(upstream.count(), 2);
}

#[tokio::test]
async fn shopify_headers_work_without_the_x_prefix() {
    let upstream = Upstream::start().await;
    let shopify = SourceSpec::shopify();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(shopify.clone())
        .start()
        .await;
    let event = shopify.event("shopify-no-prefix-1", "orders/paid");
    let sent: Vec<(String, String)> = shopify
        .request_headers(&event)
        .into_iter()
        .map(|(name, value)| {
            let name = match name.get(..2) {
                Some(x) if x.eq_ignore_ascii_case("x-") => name[2..].to_owned(),
                _ => name,
            };
            (name, value)
        })
        .collect();
    assert!(
        sent.iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("Shopify-Hmac-Sha256")),
        "{sent:?}"
    );

    gate.post(&shopify.path, &sent, event.body.clone())
        .await
        .assert_app_ok();
    let forwarded = &upstream.wait_for(1).await[0];
    assert_eq!(
        forwarded.header("x-verified-event-id"),
        "shopify-no-prefix-1"
    );
    // The topic header is not signed: it filters, but is not vouched for.
    assert!(!forwarded.has_header("x-verified-event-type"));
}

#[tokio::test]
async fn standard_accepts_svix_headers_and_several_signatures() {
    let upstream = Upstream::start().await;
    let standard = SourceSpec::standard();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(standard.clone())
        .start()
        .await;

    let event = standard.event("msg_svix_names", "user.created");
    let sent: Vec<(String, String)> = standard
        .request_headers(&event)
        .into_iter()
        .map(
            |(name, value)| match name.to_ascii_lowercase().strip_prefix("webhook-") {
                Some(rest) => (format!("svix-{rest}"), value),
                None => (name, value),
            },
        )
        .collect();
    gate.post(&standard.path, &sent, event.body.clone())
        .await
        .assert_app_ok();

    let event = standard.event("msg_two_signatures", "user.created");
    let mut sent = standard.request_headers(&event);
    let signature = header_value(&sent, "webhook-signature");
    replace_header(
        &mut sent,
        "webhook-signature",
        format!("v1,{} {signature}", "A".repeat(44)),
    );
    gate.post(&standard.path, &sent, event.body.clone())
        .await
        .assert_app_ok();

    let seen = upstream.wait_for(2).await;
    assert_eq!(seen[0].header("x-verified-event-id"), "msg_svix_names");
    assert_eq!(seen[1].header("x-verified-event-id"), "msg_two_signatures");
}

#[tokio::test]
async fn slack_bodies_without_an_event_id_use_the_body_hash() {
    let upstream = Upstream::start().await;
    let slack = SourceSpec::slack();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(slack.clone())
        .start()
        .await;

    let command = Event::raw(
        "",
        None,
        b"token=x&team_id=T1&command=%2Fdeploy&text=prod&trigger_id=1.2.3".to_vec(),
    )
    .header("Content-Type", "application/x-www-form-urlencoded");
    let command_id = sha256_hex(&command.body);
    gate.send(&slack, &command).await.assert_app_ok();
    gate.send(&slack, &command)
        .await
        .assert_duplicate(&command_id);

    // The signed url_verification handshake is answered by hookgate itself.
    let challenge = Event::json(
        "",
        Some("url_verification"),
        json!({ "type": "url_verification", "token": "x", "challenge": "c-123" }),
    );
    gate.send(&slack, &challenge)
        .await
        .assert_json(200, json!({ "challenge": "c-123" }));

    let seen = upstream.wait_for(1).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("x-verified-event-id"), command_id);
    assert_eq!(seen[0].body.as_ref(), command.body.as_slice());
}

#[tokio::test]
async fn a_github_signature_made_with_another_secret_is_never_a_5xx() {
    let upstream = Upstream::start().await;
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(github.clone())
        .start()
        .await;
    let event = github.event("gh-wrong-secret", "push");
    let mut sent = github.request_headers(&event);
    replace_header(
        &mut sent,
        "X-Hub-Signature-256",
        format!("sha256={}", "ab".repeat(32)),
    );

    gate.post(&github.path, &sent, event.body.clone())
        .await
        .assert_error(400, "invalid_signature");
    gate.send(&github, &event).await.assert_app_ok();
}
