//! Secrets never reach an output: `Debug` and `Display` of the types that
//! hold them, config problems, and the process's own output at the most
//! verbose log level, with a password-protected Redis going away and back.

use hookgate::config::{Config, SystemSecrets};
use hookgate::secret::Secret;

use crate::support::redis::RedisServer;
use crate::support::{ALL_SECRETS, ConfigBuilder, Hookgate, SourceSpec, Upstream, eventually};

const REDIS_PASSWORD: &str = "it-redis-pa55-7d1c";

#[test]
fn secret_holding_types_print_redacted() {
    let secret = Secret::new(b"hunter2-literal".to_vec());
    assert_eq!(format!("{secret:?}"), "[redacted]");
    assert_eq!(format!("{secret}"), "[redacted]");
    assert_eq!(format!("{:?}", vec![secret.clone()]), "[[redacted]]");

    let text = format!(
        r#"
[server]
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:3000"
[store]
kind = "redis"
url = "redis://:{REDIS_PASSWORD}@127.0.0.1:6379/"
[[source]]
name = "gh"
path = "/gh"
scheme = "github"
secrets = ["hunter2-literal"]
"#
    );
    let config = Config::from_toml_str(&text, &SystemSecrets).expect("a valid config");
    let shown = format!("{config:?} {:?}", config.sources[0].keys);
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(!shown.contains(REDIS_PASSWORD), "{shown}");

    // Problems name the field, never the value.
    let bad = text.replace(
        "scheme = \"github\"",
        "scheme = \"standard\"\ntolerance = \"5m\"",
    );
    let problems = Config::from_toml_str(&bad, &SystemSecrets)
        .expect_err("a standard secret must be whsec_ + base64")
        .to_string();
    assert!(problems.contains("source[gh].secrets[0]"), "{problems}");
    assert!(!problems.contains("hunter2"), "{problems}");
    assert!(!problems.contains(REDIS_PASSWORD), "{problems}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_secret_is_printed_even_at_trace_level() {
    let mut redis = RedisServer::start_with_password(REDIS_PASSWORD);
    let upstream = Upstream::start().await;
    let sources = SourceSpec::every_scheme();
    let config = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .sources(sources.clone())
        .toml();
    let mut gate = Hookgate::launch(&config)
        .env("HOOKGATE_LOG", "trace")
        .start()
        .await;

    for source in &sources {
        let event = source.event(&format!("{}-trace", source.name), "leak.check");
        gate.send(source, &event).await.assert_app_ok();
        gate.send(source, &event).await.assert_duplicate(&event.id);
        let forged = source.forged_headers(&event);
        let resp = gate.post(&source.path, &forged, event.body.clone()).await;
        assert_eq!(resp.status, 400, "{}: {resp:?}", source.name);
    }
    // Store errors and reconnects, with the password in the URL.
    redis.stop();
    let stripe = &sources[0];
    let event = stripe.event("evt_trace_outage", "invoice.paid");
    gate.send(stripe, &event)
        .await
        .assert_error(503, "store_unavailable");
    assert_eq!(gate.admin_get("/readyz").await.status, 503);
    redis.restart();
    eventually("the store is back", || async {
        let resp = gate.send(stripe, &event).await;
        if resp.status == 200 {
            Ok(())
        } else {
            Err(format!("{resp:?}"))
        }
    })
    .await;

    gate.sigterm();
    gate.wait_exit().await;
    let output = gate.output();
    assert!(
        output.contains(r#""level":"DEBUG""#) && output.contains("verification failed"),
        "verbose logging is on"
    );
    let standard_key = crate::support::STANDARD_SECRET.trim_start_matches("whsec_");
    for secret in ALL_SECRETS
        .iter()
        .copied()
        .chain([standard_key, REDIS_PASSWORD])
    {
        assert!(
            !output.contains(secret),
            "{}… printed in the output",
            &secret[..8]
        );
    }
}
