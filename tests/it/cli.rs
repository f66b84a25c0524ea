//! The command line: `check` on good and bad configs, `sign` output accepted
//! by a running hookgate, `run` reading its config from `$HOOKGATE_CONFIG`.

use crate::support::hookgate::run_cli;
use crate::support::{
    ALL_SECRETS, ConfigBuilder, Hookgate, SourceSpec, Upstream, merge_headers, now,
};

const EXAMPLE_CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml");

fn assert_no_secret(output: &str) {
    for secret in ALL_SECRETS {
        assert!(
            !output.contains(secret),
            "a secret value was printed:\n{output}"
        );
    }
}

#[tokio::test]
async fn check_accepts_the_example_config() {
    let (status, stdout, stderr) = run_cli(&["check", "--config", EXAMPLE_CONFIG]).await;
    assert_eq!(
        status.code(),
        Some(0),
        "check {EXAMPLE_CONFIG}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[tokio::test]
async fn check_accepts_a_config_with_every_scheme_without_printing_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    let config = ConfigBuilder::new("http://127.0.0.1:3000")
        .sources(SourceSpec::every_scheme())
        .toml();
    std::fs::write(&path, config).expect("write config");

    let (status, stdout, stderr) = run_cli(&["check", "--config", path_str(&path)]).await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_no_secret(&format!("{stdout}\n{stderr}"));
}

/// A config with four problems in different places, each on a known line.
const BROKEN_CONFIG: &str = r#"[server]
listen = "127.0.0.1:0"
upstream = "http://127.0.0.1:3000"
upstream_timeout = "soon"

[admin]
listen = "127.0.0.1:0"

[store]
kind = "memory"

[[source]]
name = "stripe"
path = "/webhooks/stripe"
scheme = "stripe"
secrets = ["whsec_itCheckVisibleLiteral", { env = "HOOKGATE_IT_SURELY_UNSET_0D9E" }]
tolerance = "5m"

[[source]]
name = "std"
path = "/webhooks/std"
scheme = "standard"
secrets = ["whsec_!!not-base64!!itCheckBadStandard"]

[[source]]
name = "gh"
path = "/webhooks/gh"
scheme = "github"
secrets = [{ file = "/nonexistent/hookgate-it/github-secret" }]
"#;

/// Whether `text` contains `number` as a whole number (not inside a longer one).
fn contains_number(text: &str, number: usize) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|token| token == number.to_string())
}

#[tokio::test]
async fn check_reports_every_problem_with_its_field_and_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, BROKEN_CONFIG).expect("write config");

    let (status, stdout, stderr) = run_cli(&["check", "--config", path_str(&path)]).await;
    assert_eq!(
        status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    for (field, line) in [
        ("server.upstream_timeout", 4),
        ("source[stripe].secrets[1]", 16),
        ("source[std].secrets[0]", 23),
        ("source[gh].secrets[0]", 29),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(field) && contains_number(l, line)),
            "no problem line naming {field} and line {line} in stderr:\n{stderr}"
        );
    }
    let output = format!("{stdout}\n{stderr}");
    for secret in ["itCheckVisibleLiteral", "itCheckBadStandard"] {
        assert!(
            !output.contains(secret),
            "a secret value was printed:\n{output}"
        );
    }
}

#[tokio::test]
async fn check_refuses_unknown_keys_and_names_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("typo.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:0\"\nupstreem = \"http://127.0.0.1:3000\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n",
    )
    .expect("write config");

    let (status, stdout, stderr) = run_cli(&["check", "--config", path_str(&path)]).await;
    assert_eq!(
        status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("upstreem") && contains_number(l, 3)),
        "the unknown key and its line are named:\n{stderr}"
    );
}

#[tokio::test]
async fn check_fails_on_a_missing_config_file() {
    let (status, stdout, stderr) = run_cli(&[
        "check",
        "--config",
        "/nonexistent/hookgate-it/hookgate.toml",
    ])
    .await;
    assert_eq!(
        status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("/nonexistent/hookgate-it/hookgate.toml"),
        "names the file:\n{stderr}"
    );
}

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// Parses `sign` output: one `Name: value` per line.
fn parse_sign_output(stdout: &str) -> Vec<(String, String)> {
    let headers: Vec<(String, String)> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, value) = l
                .split_once(':')
                .unwrap_or_else(|| panic!("not a `Name: value` line: {l:?}"));
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    assert!(!headers.is_empty(), "sign printed no header");
    headers
}

#[tokio::test]
async fn sign_prints_headers_that_a_running_hookgate_accepts() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let github = SourceSpec::github();
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .source(github.clone())
        .start()
        .await;
    let config = path_str(gate.config_path()).to_owned();
    let dir = tempfile::tempdir().expect("temp dir");

    // Stripe: the id is in the body, the timestamp is now.
    let event = stripe.event("evt_from_cli", "invoice.paid");
    let body_file = dir.path().join("stripe.json");
    std::fs::write(&body_file, &event.body).expect("write body");
    let (status, stdout, stderr) = run_cli(&[
        "sign",
        "--config",
        &config,
        "--source",
        "stripe",
        "--body-file",
        path_str(&body_file),
    ])
    .await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_no_secret(&format!("{stdout}\n{stderr}"));
    let signed = merge_headers(parse_sign_output(&stdout), &event.headers);
    gate.post(&stripe.path, &signed, event.body.clone())
        .await
        .assert_app_ok();

    // --timestamp is what gets signed: an hour ago is outside the window.
    let old = stripe.event("evt_from_cli_old", "invoice.paid");
    let old_file = dir.path().join("old.json");
    std::fs::write(&old_file, &old.body).expect("write body");
    let an_hour_ago = (now() - 3600).to_string();
    let (status, stdout, stderr) = run_cli(&[
        "sign",
        "--config",
        &config,
        "--source",
        "stripe",
        "--body-file",
        path_str(&old_file),
        "--timestamp",
        &an_hour_ago,
    ])
    .await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let signed = merge_headers(parse_sign_output(&stdout), &old.headers);
    gate.post(&stripe.path, &signed, old.body.clone())
        .await
        .assert_error(400, "timestamp_outside_window");

    // GitHub: --id sets the delivery header.
    let delivery = github.event("cli-delivery-7", "push");
    let body_file = dir.path().join("github.json");
    std::fs::write(&body_file, &delivery.body).expect("write body");
    let (status, stdout, stderr) = run_cli(&[
        "sign",
        "--config",
        &config,
        "--source",
        "github",
        "--body-file",
        path_str(&body_file),
        "--id",
        "cli-delivery-7",
    ])
    .await;
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let signed = merge_headers(parse_sign_output(&stdout), &delivery.headers);
    gate.post(&github.path, &signed, delivery.body.clone())
        .await
        .assert_app_ok();

    let seen = upstream.wait_for(2).await;
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].header("x-verified-event-id"), "evt_from_cli");
    assert_eq!(seen[1].header("x-verified-event-id"), "cli-delivery-7");
}

#[tokio::test]
async fn run_reads_the_config_path_from_the_environment() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let config = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .toml();
    let gate = Hookgate::launch(&config).config_from_env().start().await;

    gate.send(&stripe, &stripe.event("evt_env_config", "invoice.paid"))
        .await
        .assert_app_ok();
}
