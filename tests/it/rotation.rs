//! The key-rotation runbook, end to end and without a restart: add the new
//! secret next to the old one, watch `hookgate_signature_matches_total` move
//! to the new index, remove the old secret. The config file is only rewritten:
//! hookgate notices the change by itself.

use crate::support::{ConfigBuilder, Hookgate, Metrics, SourceSpec, Upstream, eventually, now};

const OLD: &str = "whsec_rotationOldSecret0001";
const NEW: &str = "whsec_rotationNewSecret0002";

async fn matches(gate: &Hookgate, secret: &str) -> f64 {
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    metrics
        .get(
            "hookgate_signature_matches_total",
            &[("source", "stripe"), ("secret", secret)],
        )
        .unwrap_or(0.0)
}

#[tokio::test]
async fn rotating_a_secret_needs_no_restart_and_no_refused_event() {
    let upstream = Upstream::start().await;
    let old_only = SourceSpec::stripe().literal_secrets(&[OLD]);
    let overlap = SourceSpec::stripe().literal_secrets(&[OLD, NEW]);
    let new_only = SourceSpec::stripe().literal_secrets(&[NEW]);
    let config = |source: &SourceSpec| {
        ConfigBuilder::new(&upstream.url())
            .source(source.clone())
            .toml()
    };

    let mut gate = Hookgate::start(&config(&old_only)).await;
    gate.send_with(
        &old_only,
        &old_only.event("evt_rot_1", "invoice.paid"),
        0,
        now(),
    )
    .await
    .assert_app_ok();
    // Signed with the new secret before it is configured: refused.
    gate.send_with(
        &overlap,
        &overlap.event("evt_rot_early", "invoice.paid"),
        1,
        now(),
    )
    .await
    .assert_error(400, "invalid_signature");

    // Step 1: both secrets live.
    gate.rewrite_config(&config(&overlap));
    let mut n = 0;
    eventually("the new secret is accepted", || {
        n += 1;
        let event = overlap.event(&format!("evt_rot_new_{n}"), "invoice.paid");
        let gate = &gate;
        let overlap = &overlap;
        async move {
            let resp = gate.send_with(overlap, &event, 1, now()).await;
            if resp.status == 200 {
                Ok(resp)
            } else {
                Err(format!("{resp:?}"))
            }
        }
    })
    .await
    .assert_app_ok();
    // The sender has not switched yet: the old secret still works.
    gate.send_with(
        &overlap,
        &overlap.event("evt_rot_2", "invoice.paid"),
        0,
        now(),
    )
    .await
    .assert_app_ok();
    assert!(
        matches(&gate, "1").await >= 1.0,
        "index 1 (the new secret) is counted"
    );
    let old_uses = matches(&gate, "0").await;
    assert!(old_uses >= 2.0);

    // The sender switched: only the new secret is used, the old count stays put.
    gate.send_with(
        &overlap,
        &overlap.event("evt_rot_3", "invoice.paid"),
        1,
        now(),
    )
    .await
    .assert_app_ok();
    assert_eq!(matches(&gate, "0").await, old_uses);

    // Step 2: remove the old secret.
    gate.rewrite_config(&config(&new_only));
    eventually("the old secret is refused", || {
        let gate = &gate;
        let old_only = &old_only;
        async move {
            let resp = gate
                .send_with(
                    old_only,
                    &old_only.event("evt_rot_late", "invoice.paid"),
                    0,
                    now(),
                )
                .await;
            if resp.status == 400 {
                Ok(resp)
            } else {
                Err(format!("{resp:?}"))
            }
        }
    })
    .await
    .assert_error(400, "invalid_signature");
    gate.send_with(
        &new_only,
        &new_only.event("evt_rot_4", "invoice.paid"),
        0,
        now(),
    )
    .await
    .assert_app_ok();
    assert!(!gate.has_exited(), "rotation is not a restart");
}
