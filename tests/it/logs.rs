//! Request log lines carry what an operator searches by, and no secret value
//! ever reaches stdout or stderr, whichever way it was configured.

use serde_json::Value;

use crate::support::{
    ALL_SECRETS, ConfigBuilder, Hookgate, STANDARD_SECRET, SecretSpec, SourceSpec, Upstream, now,
};

#[tokio::test]
async fn each_request_logs_its_source_event_id_type_and_outcome() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let event = stripe.event("evt_logged", "invoice.paid");
    gate.send(&stripe, &event).await.assert_app_ok();
    gate.send(&stripe, &event)
        .await
        .assert_duplicate("evt_logged");

    for outcome in ["forwarded", "duplicate"] {
        let line = gate.wait_for_request_log("evt_logged", outcome).await;
        assert_eq!(line["source"], "stripe", "{line}");
        assert_eq!(line["event_type"], "invoice.paid", "{line}");
    }

    // A rejection is logged too, with what is known before the body is trusted.
    let forged_event = stripe.event("evt_logged_forged", "invoice.paid");
    let forged = stripe.forged_headers(&forged_event);
    gate.post(&stripe.path, &forged, forged_event.body.clone())
        .await
        .assert_error(400, "invalid_signature");
    gate.wait_for_log("request outcome=invalid_signature", |l: &Value| {
        l["message"] == "request" && l["source"] == "stripe" && l["outcome"] == "invalid_signature"
    })
    .await;
}

const ENV_SECRET: &str = "whsec_itFromTheEnvironment3c1a";
const FILE_SECRET: &str = "whsec_itFromAMountedFile8e2b";

#[tokio::test]
async fn no_secret_value_is_ever_printed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let secret_file = dir.path().join("stripe-previous");
    // Mounted secrets usually end with a newline; it is not part of the secret.
    std::fs::write(&secret_file, format!("{FILE_SECRET}\n")).expect("write secret file");

    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe().secrets(
        vec![
            SecretSpec::Literal(crate::support::STRIPE_SECRET.to_owned()),
            SecretSpec::Env("HOOKGATE_IT_STRIPE_ENV_SECRET".to_owned()),
            SecretSpec::File(secret_file.clone()),
        ],
        &[crate::support::STRIPE_SECRET, ENV_SECRET, FILE_SECRET],
    );
    let mut sources = SourceSpec::every_scheme();
    sources[0] = stripe.clone();
    let config = ConfigBuilder::new(&upstream.url())
        .sources(sources.clone())
        .toml();
    let mut gate = Hookgate::launch(&config)
        .env("HOOKGATE_IT_STRIPE_ENV_SECRET", ENV_SECRET)
        .env("RUST_LOG", "debug")
        .start()
        .await;

    // Each way of configuring a secret works.
    for index in 0..3 {
        let event = stripe.event(&format!("evt_secret_{index}"), "invoice.paid");
        gate.send_with(&stripe, &event, index, now())
            .await
            .assert_app_ok();
    }
    // Traffic through every scheme, accepted and refused.
    for source in &sources {
        let event = source.event(&format!("{}-leak-check", source.name), "leak.check");
        gate.send(source, &event).await.assert_app_ok();
        let forged = source.forged_headers(&event);
        let resp = gate.post(&source.path, &forged, event.body.clone()).await;
        assert_eq!(resp.status, 400, "{}: {resp:?}", source.name);
    }

    gate.sigterm();
    gate.wait_exit().await;
    let output = gate.output();
    let standard_key = STANDARD_SECRET.trim_start_matches("whsec_");
    for secret in ALL_SECRETS
        .iter()
        .copied()
        .chain([ENV_SECRET, FILE_SECRET, standard_key])
    {
        assert!(
            !output.contains(secret),
            "secret {} printed in the output:\n{output}",
            &secret[..8]
        );
    }
}
