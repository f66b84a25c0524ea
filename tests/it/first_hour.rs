//! What the command line and the logs tell a newcomer, on the real binary:
//! each answer true, each problem named once and where it is, each
//! argument described.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::hookgate::run_cli;
use crate::support::process::Guard;
use crate::support::{ConfigBuilder, Hookgate, SourceSpec, Upstream, WAIT, closed_addr};

const BIN: &str = env!("CARGO_BIN_EXE_hookgate");

fn write(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("hookgate.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

fn base(store: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"http://127.0.0.1:9\"\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n[store]\n{store}\n\
         [[source]]\nname = \"q\"\npath = \"/q\"\nscheme = \"stripe\"\nsecrets = [\"whsec_x\"]\n\
         delivery = \"queue\"\n"
    )
}

#[tokio::test]
async fn check_names_the_closest_key_and_every_problem_of_a_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = "[server]\nlisten = \"127.0.0.1:0\"\nupstrem = \"http://127.0.0.1:9\"\n\
                [[source]]\nname = \"s\"\npath = \"/s\"\nscheme = \"stripe\"\nsecrets = [\"whsec_x\"]\n\
                [source.breaker]\nfailures = 0\ncooldown = \"1m\"\nmax_cooldown = \"10s\"\n";
    let path = write(&dir, text);
    let (status, _, stderr) = run_cli(&["check", "--config", path.to_str().expect("path")]).await;
    assert_eq!(status.code(), Some(1), "{stderr}");
    let file = path.display().to_string();
    assert!(
        stderr.contains(&format!(
            "{file}:3: server.upstrem: unknown key `upstrem`; did you mean `upstream`?"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("expected one of"), "{stderr}");
    assert!(
        stderr.contains(&format!("{file}:10: source[s].breaker.failures:")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{file}:12: source[s].breaker.max_cooldown: must be at least breaker.cooldown"
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn run_with_a_bad_config_prints_the_problems_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        &dir,
        &base("kind = \"sqlite\"").replace("delivery", "delivry"),
    );
    let (status, stdout, stderr) =
        run_cli(&["run", "--config", path.to_str().expect("path")]).await;
    assert_eq!(status.code(), Some(1));
    assert_eq!(
        stderr.matches("unknown key `delivry`").count(),
        1,
        "on standard error once:\n{stderr}"
    );
    assert!(
        !stdout.contains("delivry"),
        "not again inside a log line:\n{stdout}"
    );
    let line: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("a log line");
    assert_eq!(
        line["message"],
        "config refused; the problems are on standard error"
    );
    assert!(line["problems"].as_u64().is_some_and(|n| n >= 1), "{line}");
}

#[tokio::test]
async fn text_logs_into_a_pipe_have_no_colour_codes() {
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        &dir,
        &ConfigBuilder::new(&upstream.url())
            .source(SourceSpec::stripe())
            .toml(),
    );
    let mut child = Guard::new(
        Command::new(BIN)
            .args(["run", "--log-format", "text", "--config"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .expect("start hookgate"),
    );
    let stdout = child.get_mut().stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("listening")) {
        let line = rx.recv_timeout(WAIT).expect("a log line within the wait");
        seen.push(line);
    }
    drop(child);
    let text = seen.join("\n");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a pipe:\n{text:?}"
    );
    assert!(text.contains("INFO"), "{text}");
}

#[tokio::test]
async fn the_start_says_what_is_on_and_an_unreachable_upstream_is_warned_about_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("hookgate.db");
    let toml = ConfigBuilder::new(&format!("http://{}", closed_addr()))
        .source(SourceSpec::stripe())
        .source(SourceSpec::github().key("delivery = \"queue\""))
        .toml()
        .replacen(
            "kind = \"memory\"\n",
            &format!("kind = \"sqlite\"\npath = {:?}\n", db.display().to_string()),
            1,
        );
    let gate = Hookgate::start(&toml).await;
    let started = gate
        .wait_for_log("the start line", |l| l["message"] == "hookgate started")
        .await;
    assert_eq!(started["store"], "sqlite", "{started}");
    assert_eq!(started["sources"], 2, "{started}");
    assert_eq!(started["queue_sources"], 1, "{started}");
    assert_eq!(started["names"], "stripe,github", "{started}");
    assert_eq!(started["tracing"], "off", "{started}");
    assert_eq!(started["console"], "off", "{started}");
    assert_eq!(started["admin"], gate.admin_addr().to_string(), "{started}");
    // hookgate opens no connection to the app of its own: the first event
    // that finds it unreachable says so, once, and the next does not.
    let stripe = SourceSpec::stripe();
    for n in 0..2 {
        gate.send(
            &stripe,
            &stripe.event(&format!("evt_down_{n}"), "invoice.paid"),
        )
        .await
        .assert_error(502, "upstream_unavailable");
    }
    let warned = gate
        .wait_for_log("the unreachable upstream", |l| {
            l["level"] == "WARN"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("the upstream cannot be reached"))
        })
        .await;
    assert!(warned["upstream"].as_str().is_some(), "{warned}");
    let warnings = gate
        .log_lines()
        .iter()
        .filter(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("the upstream cannot be reached"))
        })
        .count();
    assert_eq!(warnings, 1);
    assert_eq!(gate.admin_get("/readyz").await.status, 200);
}

/// A collector that takes the connection and never answers: at shutdown
/// the spans left are counted in the log, and the exit does not wait for
/// the collector.
#[tokio::test]
async fn a_shutdown_with_a_silent_collector_counts_the_spans_left() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let collector = silent.local_addr().expect("addr");
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((conn, _)) = silent.accept().await {
            open.push(conn);
        }
    });
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    // [tracing] goes before the sources' tables.
    let toml = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .toml()
        .replacen(
            "\n[[source]]",
            &format!("\n[tracing]\notlp_endpoint = \"http://{collector}\"\nsample_ratio = 1.0\n\n[[source]]"),
            1,
        );
    let mut gate = Hookgate::start(&toml).await;
    for n in 0..20 {
        gate.send(
            &stripe,
            &stripe.event(&format!("evt_span_{n}"), "invoice.paid"),
        )
        .await
        .assert_app_ok();
    }
    gate.sigterm();
    let status = gate.wait_exit().await;
    assert!(status.success(), "{status}");
    let line = gate
        .log_lines()
        .into_iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("spans still unexported at exit"))
        })
        .unwrap_or_else(|| panic!("no line about the spans left:\n{}", gate.output()));
    assert!(line["spans_left"].as_u64().is_some(), "{line}");
    assert!(
        line["waited_ms"].as_u64().is_some_and(|ms| ms <= 3_000),
        "{line}"
    );
    held.abort();
}

#[tokio::test]
async fn events_on_the_memory_store_point_to_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        &dir,
        &base("kind = \"memory\"").replace("delivery = \"queue\"\n", ""),
    );
    let (status, stdout, stderr) =
        run_cli(&["events", "--config", path.to_str().expect("path"), "list"]).await;
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(!stdout.contains("no events in the trail"), "{stdout}");
    assert!(
        stderr.contains("lives in the running server's process") && stderr.contains("GET /events"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_pause_without_user_names_the_effective_user_and_show_has_waited() {
    let upstream = Upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("hookgate.db");
    let queued = SourceSpec::stripe().key("delivery = \"queue\"");
    let toml = ConfigBuilder::new(&upstream.url())
        .source(queued.clone())
        .toml()
        .replacen(
            "kind = \"memory\"\n",
            &format!("kind = \"sqlite\"\npath = {:?}\n", db.display().to_string()),
            1,
        );
    let gate = Hookgate::start(&toml).await;
    let config = gate.config_path().to_str().expect("path").to_owned();
    let cli = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env_remove("USER")
            .env_remove("HOOKGATE_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run hookgate");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = cli(&["sources", "--config", &config, "pause", "stripe"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (_, listed, _) = cli(&["sources", "--config", &config, "list"]);
    let euid = std::fs::read_to_string("/proc/self/status")
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("Uid:").map(str::to_owned))
        .and_then(|ids| ids.split_whitespace().nth(1).map(str::to_owned))
        .expect("euid");
    let name = std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.get(2) == Some(&euid.as_str())).then(|| f[0].to_owned())
        })
        .unwrap_or(format!("uid:{euid}"));
    assert!(listed.contains(&format!("cli:{name}@")), "{listed}");
    assert!(!listed.contains("unknown"), "{listed}");
    crate::support::eventually("the server sees the pause", || async {
        let m = gate.admin_get("/metrics").await.text();
        m.contains("hookgate_source_paused{source=\"stripe\"} 1")
            .then_some(())
            .ok_or(m)
    })
    .await;

    gate.send(&queued, &queued.event("evt_waits", "invoice.paid"))
        .await
        .assert_json(200, json!({"queued": true, "event_id": "evt_waits"}));
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (code, _, stderr) = cli(&["sources", "--config", &config, "resume", "stripe"]);
    assert_eq!(code, Some(0), "{stderr}");
    upstream.wait_for(1).await;
    let shown = crate::support::eventually("the attempt in events show", || async {
        let (_, out, err) = cli(&["events", "--config", &config, "show", "stripe", "evt_waits"]);
        if out.contains("paused") {
            Ok(out)
        } else {
            Err(format!("{out}{err}"))
        }
    })
    .await;
    assert!(
        shown.contains("WAITED") && shown.contains("TRACE ID"),
        "{shown}"
    );
}

#[tokio::test]
async fn every_argument_is_described_and_sign_takes_rfc3339() {
    for (args, wants) in [
        (vec!["run", "--help"], vec!["The config file", "e.g."]),
        (vec!["check", "--help"], vec!["The config file to check"]),
        (
            vec!["events", "show", "--help"],
            vec!["The `[[source]]` name", "The event id as `list` prints it"],
        ),
        (vec!["sign", "--help"], vec!["RFC 3339", "unix seconds"]),
        (vec!["dlq", "list", "--help"], vec!["--source"]),
        (
            vec!["filter", "test", "--help"],
            vec!["--body-file", "e.g."],
        ),
    ] {
        let (status, stdout, stderr) = run_cli(&args).await;
        assert!(status.success(), "{args:?}: {stderr}");
        for want in wants {
            assert!(stdout.contains(want), "{args:?} lacks {want:?}:\n{stdout}");
        }
        // Every option line has words after it.
        for line in stdout.lines().filter(|l| l.trim_start().starts_with("--")) {
            let described = line
                .trim_start()
                .split("  ")
                .filter(|p| !p.trim().is_empty())
                .count()
                >= 2;
            assert!(described, "{args:?}: {line:?} has no description");
        }
    }
    let (_, shown, _) = run_cli(&["dlq", "show", "--help"]).await;
    assert!(
        !shown.contains("--source"),
        "dlq show takes no --source:\n{shown}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        &dir,
        &base("kind = \"memory\"").replace("delivery = \"queue\"\n", ""),
    );
    let body = dir.path().join("evt.json");
    std::fs::write(&body, br#"{"id":"evt_1","type":"invoice.paid"}"#).expect("body");
    let sign = |t: &'static str| {
        let path = path.clone();
        let body = body.clone();
        async move {
            run_cli(&[
                "sign",
                "--config",
                path.to_str().expect("path"),
                "--source",
                "q",
                "--body-file",
                body.to_str().expect("path"),
                "--timestamp",
                t,
            ])
            .await
        }
    };
    let (_, by_seconds, _) = sign("1796547600").await;
    let (status, by_time, stderr) = sign("2026-12-06T09:00:00Z").await;
    assert!(status.success(), "{stderr}");
    assert_eq!(by_time, by_seconds);
    assert!(by_time.contains("t=1796547600,"), "{by_time}");
    let (status, _, stderr) = sign("yesterday").await;
    assert!(!status.success());
    assert!(stderr.contains("neither unix seconds"), "{stderr}");
}
