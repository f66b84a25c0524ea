//! Senders that sign with Ed25519 (Standard Webhooks `v1a`), end to end on
//! the real binary: `whpk_` keys listed in `secrets` beside a `whsec_`
//! secret, keys published as a JWK Set by a local HTTPS key server (fetched
//! at start, a rotated set picked up, a flood of badly signed requests
//! causing at most one fetch every ten seconds, a key server that breaks
//! leaving the keys fetched last in use), and the `gemini` scheme. The test
//! signs as the sender does, with Ed25519 keys of its own made from fixed
//! seeds.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::json;

use crate::support::hookgate::run_cli;
use crate::support::keyserver::{KeyServer, Route};
use crate::support::{ConfigBuilder, Hookgate, Upstream, eventually, headers, now};

/// A sender's key pair from a fixed seed.
fn pair(seed: u8) -> Ed25519KeyPair {
    Ed25519KeyPair::from_seed_unchecked(&[seed; 32]).expect("a 32-byte seed")
}

fn whpk(pair: &Ed25519KeyPair) -> String {
    format!("whpk_{}", STANDARD.encode(pair.public_key().as_ref()))
}

fn jwk(pair: &Ed25519KeyPair) -> serde_json::Value {
    json!({
        "kty": "OKP",
        "crv": "Ed25519",
        "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()),
    })
}

fn key_set(pairs: &[&Ed25519KeyPair]) -> Route {
    let keys: Vec<serde_json::Value> = pairs.iter().map(|p| jwk(p)).collect();
    Route::ok(json!({ "keys": keys }).to_string()).header("Cache-Control", "public, max-age=3600")
}

fn body(id: &str) -> String {
    format!(r#"{{"type":"batch.succeeded","version":"v1","data":{{"id":"{id}"}}}}"#)
}

/// The headers a Standard Webhooks sender sends with a `v1a` signature of
/// `body` by `pair` (or, with `body_signed`, of other bytes).
fn v1a(pair: &Ed25519KeyPair, id: &str, signed_body: &str) -> Vec<(String, String)> {
    let ts = now().to_string();
    let sig = pair.sign(format!("{id}.{ts}.{signed_body}").as_bytes());
    headers(&[
        ("Content-Type", "application/json"),
        ("Webhook-Id", id),
        ("Webhook-Timestamp", &ts),
        (
            "Webhook-Signature",
            &format!("v1a,{}", STANDARD.encode(sig.as_ref())),
        ),
    ])
}

async fn gate(upstream: &Upstream, sources: &str) -> Hookgate {
    Hookgate::start(&(ConfigBuilder::new(&upstream.url()).toml() + sources)).await
}

#[tokio::test]
async fn v1a_verifies_by_a_whpk_key_beside_a_whsec_secret() {
    let sender = pair(1);
    let stranger = pair(2);
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"std\"\npath = \"/webhooks/std\"\nscheme = \"standard\"\n\
         secrets = [\"{}\", \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n",
        whpk(&sender)
    );
    let gate = gate(&upstream, &source).await;

    let b = body("b1");
    gate.post("/webhooks/std", &v1a(&sender, "msg_1", &b), b.clone())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen[0].header("x-verified-event-id"), "msg_1");
    assert_eq!(seen[0].header("x-verified-event-type"), "batch.succeeded");
    assert_eq!(
        seen[0].body,
        b.as_bytes(),
        "the body reaches the app as sent"
    );

    // A stranger's key, the sender's signature over other bytes.
    let b2 = body("b2");
    gate.post("/webhooks/std", &v1a(&stranger, "msg_2", &b2), b2.clone())
        .await
        .assert_error(400, "invalid_signature");
    gate.post("/webhooks/std", &v1a(&sender, "msg_3", &b2), body("b3"))
        .await
        .assert_error(400, "invalid_signature");

    // The same source still takes v1 by its whsec_ secret: what `hookgate
    // sign` prints (it signs with the whsec_ secret, not the public key).
    let file = gate.config_path().with_extension("body");
    std::fs::write(&file, body("b4")).expect("body file");
    let path = gate.config_path().display().to_string();
    let file_arg = file.display().to_string();
    let (status, out, err) = run_cli(&[
        "sign",
        "--config",
        &path,
        "--source",
        "std",
        "--body-file",
        &file_arg,
        "--id",
        "msg_4",
    ])
    .await;
    assert!(status.success(), "{err}");
    let mut signed: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    assert!(
        signed
            .iter()
            .any(|(n, v)| n == "webhook-signature" && v.starts_with("v1,")),
        "{out}"
    );
    signed.push(("Content-Type".into(), "application/json".into()));
    gate.post("/webhooks/std", &signed, body("b4"))
        .await
        .assert_app_ok();
    assert_eq!(upstream.wait_for(2).await.len(), 2);
}

#[tokio::test]
async fn a_source_with_only_public_keys_cannot_be_signed_for_and_check_says_so() {
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"pk\"\npath = \"/webhooks/pk\"\nscheme = \"standard\"\n\
         secrets = [\"{}\"]\n\n[[source]]\nname = \"gem\"\npath = \"/webhooks/gem\"\nscheme = \"gemini\"\n",
        whpk(&pair(1))
    );
    let gate = gate(&upstream, &source).await;
    let path = gate.config_path().display().to_string();
    for name in ["pk", "gem"] {
        let (status, _, err) = run_cli(&["sign", "--config", &path, "--source", name]).await;
        assert!(!status.success());
        assert!(err.contains("only public keys"), "{name}: {err}");
    }
    let (status, out, err) = run_cli(&["check", "--config", &path]).await;
    assert!(status.success(), "{out}{err}");
    assert!(
        out.contains("pk") && out.contains("public keys only"),
        "check names the public-key sources: {out}"
    );
}

/// Fetches of the key set so far.
fn fetches(keys: &KeyServer) -> usize {
    keys.hits("/.well-known/jwks.json")
}

/// Waits until `REFETCH_EVERY` (10 s) has passed since `since`.
async fn after_the_cooldown(since: Instant) {
    let wait = Duration::from_millis(10_300).saturating_sub(since.elapsed());
    tokio::time::sleep(wait).await;
}

#[tokio::test]
async fn v1a_by_a_jwks_key_a_rotation_a_flood_and_a_key_server_that_breaks() {
    let (a, b, forger) = (pair(1), pair(2), pair(3));
    let keys = KeyServer::start().await;
    keys.route("/.well-known/jwks.json", key_set(&[&a]));
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"std\"\npath = \"/webhooks/std\"\nscheme = \"standard\"\n{}jwks_url = \"{}\"\n",
        keys.keys_table(),
        keys.url("/.well-known/jwks.json")
    );
    let gate = gate(&upstream, &source).await;
    // Fetched at start, before any request.
    eventually("the key set fetched at start", || async {
        match fetches(&keys) {
            1 => Ok(()),
            n => Err(format!("{n} fetches")),
        }
    })
    .await;
    let fetched_at = Instant::now();

    let b1 = body("j1");
    gate.post("/webhooks/std", &v1a(&a, "msg_j1", &b1), b1.clone())
        .await
        .assert_app_ok();
    assert_eq!(
        upstream.wait_for(1).await[0].header("x-verified-event-id"),
        "msg_j1"
    );

    // A flood of forged requests (a key not in the set) within the cooldown:
    // every one 400, and no fetch at all.
    for n in 0..200 {
        let b = body(&format!("f{n}"));
        gate.post(
            "/webhooks/std",
            &v1a(&forger, &format!("msg_f{n}"), &b),
            b.clone(),
        )
        .await
        .assert_error(400, "invalid_signature");
    }
    assert_eq!(
        fetches(&keys),
        1,
        "forged requests drive no fetch within 10 s"
    );

    // The sender rotates to b. Once the cooldown has passed, its first
    // request makes hookgate fetch the set again, and it goes through.
    keys.route("/.well-known/jwks.json", key_set(&[&b]));
    after_the_cooldown(fetched_at).await;
    let b2 = body("j2");
    gate.post("/webhooks/std", &v1a(&b, "msg_j2", &b2), b2.clone())
        .await
        .assert_app_ok();
    assert_eq!(fetches(&keys), 2);
    let refetched_at = Instant::now();
    // The retired key no longer verifies; a changed body neither.
    let b3 = body("j3");
    gate.post("/webhooks/std", &v1a(&a, "msg_j3", &b3), b3.clone())
        .await
        .assert_error(400, "invalid_signature");
    gate.post("/webhooks/std", &v1a(&b, "msg_j4", &b3), body("j4"))
        .await
        .assert_error(400, "invalid_signature");
    // Forged requests right after: still no fetch within the cooldown.
    for n in 0..50 {
        let b = body(&format!("g{n}"));
        gate.post(
            "/webhooks/std",
            &v1a(&forger, &format!("msg_g{n}"), &b),
            b.clone(),
        )
        .await
        .assert_error(400, "invalid_signature");
    }
    assert_eq!(fetches(&keys), 2);

    // The key server breaks. A forged request after the cooldown makes one
    // fetch, which fails and is counted; b's requests still verify with the
    // keys fetched last.
    keys.route(
        "/.well-known/jwks.json",
        Route::ok("<html>maintenance</html>"),
    );
    after_the_cooldown(refetched_at).await;
    let b5 = body("f5");
    gate.post("/webhooks/std", &v1a(&forger, "msg_f5", &b5), b5.clone())
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(fetches(&keys), 3);
    let metrics = crate::support::get(&format!("{}/metrics", gate.admin_url())).await;
    assert!(
        metrics
            .text()
            .contains("hookgate_key_fetch_failures_total 1"),
        "the failed fetch is counted"
    );
    let b6 = body("j6");
    gate.post("/webhooks/std", &v1a(&b, "msg_j6", &b6), b6.clone())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(3).await;
    assert_eq!(seen[2].header("x-verified-event-id"), "msg_j6");
    assert_eq!(fetches(&keys), 3);
    let line = gate
        .wait_for_log("about the failed fetch", |l| {
            l["message"] == "provider key fetch failed"
        })
        .await;
    assert_eq!(line["level"], "WARN", "{line}");
}

#[tokio::test]
async fn gemini_verifies_v1a_with_the_keys_of_its_set_and_without_one_is_503() {
    let (google, other) = (pair(7), pair(8));
    let keys = KeyServer::start().await;
    keys.route("/.well-known/jwks.json", key_set(&[&other, &google]));
    keys.route("/broken/jwks.json", Route::ok("not a key set"));
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"gemini\"\npath = \"/webhooks/gemini\"\nscheme = \"gemini\"\n{}jwks_url = \"{}\"\n\
         \n[[source]]\nname = \"nokeys\"\npath = \"/webhooks/nokeys\"\nscheme = \"gemini\"\n{}jwks_url = \"{}\"\n",
        keys.keys_table(),
        keys.url("/.well-known/jwks.json"),
        keys.keys_table(),
        keys.url("/broken/jwks.json"),
    );
    let gate = gate(&upstream, &source).await;
    // Google's headers as live deliveries spell them.
    let b = body("batch_1");
    gate.post("/webhooks/gemini", &v1a(&google, "msg_6f1c", &b), b.clone())
        .await
        .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen[0].header("x-verified-source"), "gemini");
    assert_eq!(seen[0].header("x-verified-event-type"), "batch.succeeded");
    // A copy is a duplicate; a v1 signature with no secret to match is 400.
    gate.post("/webhooks/gemini", &v1a(&google, "msg_6f1c", &b), b.clone())
        .await
        .assert_duplicate("msg_6f1c");
    let v1 = headers(&[
        ("Webhook-Id", "msg_v1"),
        ("Webhook-Timestamp", &now().to_string()),
        (
            "Webhook-Signature",
            "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
        ),
    ]);
    gate.post("/webhooks/gemini", &v1, b.clone())
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(upstream.wait_for(1).await.len(), 1);
    // A source whose set was never fetched cannot tell: 503, the sender retries.
    let b2 = body("batch_2");
    gate.post("/webhooks/nokeys", &v1a(&google, "msg_2", &b2), b2.clone())
        .await
        .assert_error(503, "key_unavailable");
}
