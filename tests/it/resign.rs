//! `[source.resign]` on the real binary, in front of an app that checks
//! Stripe signatures itself, as the `stripe` SDK does: its own secret, its own
//! tolerance (here 1 s, standing in for Stripe's 300 s and for "the next day").
//!
//! - a queued event whose first attempts fail is delivered after the app's
//!   tolerance: accepted with `resign`, refused (and dead-lettered) without;
//! - a dead letter replayed after the app's tolerance is accepted;
//! - while the sender rotates to a new secret, the app keeps its one secret.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use sha2::Sha256;
use tokio::net::TcpListener;

use crate::support::hookgate::run_cli;
use crate::support::redis::RedisServer;
use crate::support::{ConfigBuilder, Hookgate, SecretSpec, SourceSpec, WAIT, now};

/// The secret the app verifies with; the sender's are the source's `secrets`.
const APP_SECRET: &str = "whsec_theAppsOwnSecretKeptAcrossRotations";
/// The app's tolerance, in seconds.
const APP_TOLERANCE: i64 = 1;

/// What the app did with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// The signature verified; the app answered this status.
    Verified(u16),
    /// The app's own check refused it (400), as Stripe's SDK would.
    Refused(&'static str),
}

/// An app that verifies `Stripe-Signature` with [`APP_SECRET`] and
/// [`APP_TOLERANCE`], then answers the next scripted status (200 when the
/// script has run out).
struct VerifyingApp {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<Vec<u16>>>,
    server: tokio::task::JoinHandle<()>,
}

impl VerifyingApp {
    async fn start(script: &[u16]) -> VerifyingApp {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.to_vec()));
        let (s, sc) = (Arc::clone(&seen), Arc::clone(&script));
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (seen, script) = (Arc::clone(&s), Arc::clone(&sc));
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let header = parts
                                .headers
                                .get("stripe-signature")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            let outcome = match check(&header, &body) {
                                Err(why) => Seen::Refused(why),
                                Ok(()) => {
                                    let mut script = script.lock().expect("script");
                                    let status = if script.is_empty() {
                                        200
                                    } else {
                                        script.remove(0)
                                    };
                                    Seen::Verified(status)
                                }
                            };
                            let status = match &outcome {
                                Seen::Verified(s) => *s,
                                Seen::Refused(_) => 400,
                            };
                            seen.lock().expect("seen").push(outcome);
                            let mut response = Response::new(Full::new(Bytes::from_static(b"{}")));
                            *response.status_mut() = StatusCode::from_u16(status).expect("status");
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        VerifyingApp {
            addr,
            seen,
            script,
            server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    fn answer(&self, statuses: &[u16]) {
        *self.script.lock().expect("script") = statuses.to_vec();
    }

    /// Waits (bounded) until the app has seen `n` requests.
    async fn wait_for(&self, n: usize) -> Vec<Seen> {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let seen = self.seen();
            if seen.len() >= n || std::time::Instant::now() > deadline {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for VerifyingApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Stripe's verification, as its SDKs do it: `t=` within the tolerance and
/// a `v1=` that is the HMAC-SHA256 of `{t}.{body}` under the app's secret.
fn check(header: &str, body: &[u8]) -> Result<(), &'static str> {
    let mut t = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        match item.split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => signatures.push(v.to_owned()),
            _ => {}
        }
    }
    let t = t.ok_or("no timestamp")?;
    let mut mac = Hmac::<Sha256>::new_from_slice(APP_SECRET.as_bytes()).expect("any key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    if !signatures.contains(&expected) {
        return Err("no signature matches the app's secret");
    }
    if (now() - t).abs() > APP_TOLERANCE {
        return Err("timestamp outside the app's tolerance");
    }
    Ok(())
}

/// A queued Stripe source on `redis`, signed by the sender with `sender`'s
/// secrets; `resign` adds `[source.resign]` with the app's secret.
fn config(app: &VerifyingApp, redis: &RedisServer, source: &SourceSpec) -> String {
    ConfigBuilder::new(&app.url())
        .redis(&redis.url())
        .source(source.clone())
        .toml()
}

fn queued(resign: bool) -> SourceSpec {
    let mut source = SourceSpec::stripe()
        .key("delivery = \"queue\"")
        .key(r#"retry_schedule = ["1500ms", "1500ms"]"#);
    if resign {
        source.extra_toml += &format!("[source.resign]\nsecret = \"{APP_SECRET}\"\n");
    }
    source
}

#[tokio::test]
async fn a_late_queued_delivery_is_accepted_with_resign_and_refused_without() {
    for resign in [true, false] {
        let redis = RedisServer::start();
        // Two failures first: the third attempt comes 3 s after the signature.
        let app = VerifyingApp::start(&[500, 500]).await;
        let source = queued(resign);
        let gate = Hookgate::start(&config(&app, &redis, &source)).await;
        let event = source.event(&format!("evt_late_{resign}"), "invoice.paid");
        gate.send(&source, &event).await.assert_json(
            200,
            serde_json::json!({"queued": true, "event_id": event.id}),
        );
        if resign {
            let seen = app.wait_for(3).await;
            assert_eq!(
                seen,
                [
                    Seen::Verified(500),
                    Seen::Verified(500),
                    Seen::Verified(200)
                ],
                "with resign every attempt verifies with the app's secret and a fresh time"
            );
        } else {
            // The sender's own signature: the app's secret does not match it
            // at all, and it grows stale; the app's 400 makes a dead letter.
            let seen = app.wait_for(1).await;
            assert!(
                matches!(seen[0], Seen::Refused(_)),
                "without resign the app refuses: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert!(
                !app.seen().contains(&Seen::Verified(200)),
                "{:?}",
                app.seen()
            );
        }
    }
}

#[tokio::test]
async fn a_dead_letter_replayed_after_the_apps_tolerance_is_accepted() {
    let redis = RedisServer::start();
    let app = VerifyingApp::start(&[500, 500, 500]).await;
    let mut source = SourceSpec::stripe();
    source.extra_toml += &format!("[source.resign]\nsecret = \"{APP_SECRET}\"\n");
    let config = config(&app, &redis, &source);
    let gate = Hookgate::start(&config).await;
    let event = source.event("evt_replayed_next_day", "invoice.paid");
    for _ in 0..3 {
        assert_eq!(gate.send(&source, &event).await.status, 500);
    }
    // "The next day": well past the app's tolerance and the sender's signed time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    app.answer(&[]);
    let path = gate.config_path().to_string_lossy().into_owned();
    let (status, stdout, stderr) = run_cli(&["dlq", "--config", &path, "replay", "--all"]).await;
    assert!(status.success(), "{stdout}{stderr}");
    let seen = app.wait_for(4).await;
    assert_eq!(seen.last(), Some(&Seen::Verified(200)), "{seen:?}");
    assert!(
        seen.iter().all(|s| matches!(s, Seen::Verified(_))),
        "{seen:?}"
    );
}

#[tokio::test]
async fn during_a_rotation_the_app_keeps_its_one_secret() {
    let redis = RedisServer::start();
    let app = VerifyingApp::start(&[]).await;
    // The sender moved to a new secret; hookgate accepts both, the app knows
    // neither and keeps its own.
    let mut source = SourceSpec::stripe().secrets(
        vec![
            SecretSpec::Literal("whsec_senderNew".to_owned()),
            SecretSpec::Literal("whsec_senderOld".to_owned()),
        ],
        &["whsec_senderNew", "whsec_senderOld"],
    );
    source.extra_toml += &format!("[source.resign]\nsecret = \"{APP_SECRET}\"\n");
    let gate = Hookgate::start(&config(&app, &redis, &source)).await;
    for (index, id) in [(1, "evt_old_secret"), (0, "evt_new_secret")] {
        let event = source.event(id, "invoice.paid");
        let headers = source.request_headers_with(&event, index, now());
        let resp = gate.post(&source.path, &headers, event.body.clone()).await;
        assert_eq!(resp.status, 200, "{resp:?}");
    }
    assert_eq!(app.seen(), [Seen::Verified(200), Seen::Verified(200)]);
}

#[tokio::test]
async fn check_refuses_resign_where_hookgate_cannot_sign() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    let discord = "0000000000000000000000000000000000000000000000000000000000000000";
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"http://127.0.0.1:3000\"\n\n\
         [[source]]\nname = \"discord\"\npath = \"/discord\"\nscheme = \"discord\"\n\
         secrets = [\"{discord}\"]\n\n[source.resign]\n"
    );
    std::fs::write(&path, config).expect("write config");
    let path = path.to_string_lossy().into_owned();
    let (status, stdout, stderr) = run_cli(&["check", "--config", &path]).await;
    assert!(!status.success());
    let output = format!("{stdout}{stderr}");
    assert!(
        output.contains(":11:"),
        "names the [source.resign] line: {output}"
    );
    assert!(output.contains("source[discord].resign"), "{output}");
    assert!(output.contains("private key"), "{output}");
}
