//! Config reload (DESIGN §8): SIGHUP applies a new config, an invalid one is
//! refused while the old one keeps serving, and a mounted secret swapped the
//! way Kubernetes does it (a `..data` symlink) is picked up.

use std::os::unix::fs::symlink;
use std::path::Path;

use crate::support::{
    ConfigBuilder, Hookgate, Metrics, SecretSpec, SourceSpec, Upstream, eventually, now,
};

/// Waits until `/metrics` shows at least one reload with `result`.
async fn wait_for_reload(gate: &Hookgate, result: &str) {
    eventually(&format!("a config reload counted as {result}"), || async {
        let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
        match metrics.get("hookgate_config_reloads_total", &[("result", result)]) {
            Some(n) if n >= 1.0 => Ok(()),
            other => Err(format!("{other:?}\n{}", metrics.text)),
        }
    })
    .await;
}

#[tokio::test]
async fn sighup_applies_a_new_config_without_a_restart() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let github = SourceSpec::github();
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let delivery = github.event("reload-delivery-1", "push");
    gate.send(&github, &delivery)
        .await
        .assert_error(404, "unknown_source");

    gate.rewrite_config(
        &ConfigBuilder::new(&upstream.url())
            .source(stripe.clone())
            .source(github.clone())
            .toml(),
    );
    gate.signal("HUP");

    eventually("the new source is served", || async {
        let resp = gate.send(&github, &delivery).await;
        match resp.status {
            404 => Err(format!("{resp:?}")),
            _ => Ok(resp),
        }
    })
    .await
    .assert_app_ok();
    wait_for_reload(&gate, "success").await;
    gate.send(&stripe, &stripe.event("evt_after_reload", "invoice.paid"))
        .await
        .assert_app_ok();
    assert!(!gate.has_exited(), "a reload is not a restart");
}

#[tokio::test]
async fn an_invalid_config_is_refused_and_the_old_one_keeps_serving() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;

    let broken = ConfigBuilder::new(&upstream.url())
        .upstream_timeout("whenever")
        .source(stripe.clone())
        .toml();
    gate.rewrite_config(&broken);
    gate.signal("HUP");
    wait_for_reload(&gate, "failure").await;

    gate.send(&stripe, &stripe.event("evt_old_config", "invoice.paid"))
        .await
        .assert_app_ok();
    assert_eq!(gate.admin_get("/readyz").await.status, 200);
    assert!(
        !gate.has_exited(),
        "a refused reload does not stop hookgate"
    );
}

/// Points `dir/..data` at `dir/..data_{n}` holding `value` as `name`, the way
/// the kubelet updates a mounted Secret (one atomic rename of a symlink).
fn mount_secret(dir: &Path, name: &str, value: &str, n: u32) {
    let data = dir.join(format!("..data_{n}"));
    std::fs::create_dir(&data).expect("create data dir");
    std::fs::write(data.join(name), format!("{value}\n")).expect("write secret");
    let next = dir.join("..data_tmp");
    symlink(format!("..data_{n}"), &next).expect("symlink ..data_tmp");
    std::fs::rename(&next, dir.join("..data")).expect("swap ..data");
    let visible = dir.join(name);
    if std::fs::symlink_metadata(&visible).is_err() {
        symlink(format!("..data/{name}"), &visible).expect("symlink secret");
    }
}

#[tokio::test]
async fn a_secret_swapped_like_a_kubernetes_mount_is_picked_up() {
    const OLD: &str = "whsec_itMountedBeforeRotation51";
    const NEW: &str = "whsec_itMountedAfterRotation62";
    let mount = tempfile::tempdir().expect("temp dir");
    mount_secret(mount.path(), "stripe-secret", OLD, 1);

    let upstream = Upstream::start().await;
    let path = mount.path().join("stripe-secret");
    let before = SourceSpec::stripe().secrets(vec![SecretSpec::File(path.clone())], &[OLD]);
    let after = SourceSpec::stripe().secrets(vec![SecretSpec::File(path)], &[NEW]);
    let gate = ConfigBuilder::new(&upstream.url())
        .source(before.clone())
        .start()
        .await;
    gate.send(&before, &before.event("evt_old_secret", "invoice.paid"))
        .await
        .assert_app_ok();

    mount_secret(mount.path(), "stripe-secret", NEW, 2);

    let event = after.event("evt_new_secret", "invoice.paid");
    eventually("the rotated secret is accepted", || async {
        let resp = gate.send(&after, &event).await;
        match resp.status {
            400 => Err(format!("{resp:?}")),
            _ => Ok(resp),
        }
    })
    .await
    .assert_app_ok();
    wait_for_reload(&gate, "success").await;
    gate.send_with(
        &before,
        &before.event("evt_old_secret_again", "invoice.paid"),
        0,
        now(),
    )
    .await
    .assert_error(400, "invalid_signature");
    let output = gate.output();
    assert!(
        !output.contains(OLD) && !output.contains(NEW),
        "a secret value was printed:\n{output}"
    );
}
