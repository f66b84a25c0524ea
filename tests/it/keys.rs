//! Schemes whose key comes from the provider (`sns`, `paypal`,
//! `google-oidc`), end to end: the real binary fetches certificates and key
//! sets from a local HTTPS key server (a test CA, allowed through
//! `[source.keys]`), and this test signs as the provider does with RSA keys
//! of its own. Valid deliveries are forwarded with their stamp; tampered ones
//! and forged key URLs are 400 (a forged URL is never fetched); a hanging key
//! server is a bounded `503 key_unavailable`; a rotated key is fetched again;
//! concurrent requests share one fetch.

use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Map, Value, json};

use crate::support::keyserver::{KeyServer, Route};
use crate::support::{ConfigBuilder, Hookgate, Upstream, eventually, headers, http, now};
use http::Method;

const KEY_A: &str = include_str!("../../src/scheme/fixtures/provider-key-a.pem");
const KEY_B: &str = include_str!("../../src/scheme/fixtures/provider-key-b.pem");

fn pair(pem: &str) -> RsaKeyPair {
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).expect("a PKCS#8 test key");
    RsaKeyPair::from_pkcs8(der.secret_der()).expect("an RSA key")
}

fn sign(pair: &RsaKeyPair, alg: &'static dyn ring::signature::RsaEncoding, msg: &[u8]) -> Vec<u8> {
    let mut sig = vec![0; pair.public().modulus_len()];
    pair.sign(alg, &ring::rand::SystemRandom::new(), msg, &mut sig)
        .expect("sign");
    sig
}

/// A certificate for the provider's RSA key, as SNS and PayPal serve theirs.
fn certificate(key_pem: &str) -> String {
    let key = rcgen::KeyPair::from_pem(key_pem).expect("the test key");
    let mut params =
        rcgen::CertificateParams::new(vec!["sns.amazonaws.com".to_owned()]).expect("params");
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    params.self_signed(&key).expect("certificate").pem()
}

fn rfc3339_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:hookgate-it";

fn sns_source(keys: &str, extra: &str) -> String {
    format!(
        "\n[[source]]\nname = \"sns\"\npath = \"/webhooks/sns\"\nscheme = \"sns\"\ntopic_arns = [\"{TOPIC}\"]\n{extra}{keys}"
    )
}

async fn gate(upstream: &Upstream, sources: &str) -> Hookgate {
    Hookgate::start(&(ConfigBuilder::new(&upstream.url()).toml() + sources)).await
}

/// An SNS message of `kind`, signed with `pair` over the canonical string of
/// AWS's field lists: SignatureVersion 2 (SHA256withRSA). Version 1
/// (SHA1withRSA, which ring verifies but does not sign) is checked against
/// AWS's own signed sample in `src/scheme/sns.rs`.
fn sns_message(
    kind: &str,
    id: &str,
    cert_url: &str,
    pair: &RsaKeyPair,
    extra: &[(&str, &str)],
) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in [
        ("Type", kind),
        ("MessageId", id),
        ("TopicArn", TOPIC),
        ("Message", "{\"order\":42}"),
        ("Timestamp", &rfc3339_now()),
        ("SignatureVersion", "2"),
        ("SigningCertURL", cert_url),
    ] {
        m.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    for (k, v) in extra {
        m.insert((*k).to_owned(), Value::String((*v).to_owned()));
    }
    let names: &[&str] = if kind == "Notification" {
        &[
            "Message",
            "MessageId",
            "Subject",
            "Timestamp",
            "TopicArn",
            "Type",
        ]
    } else {
        &[
            "Message",
            "MessageId",
            "SubscribeURL",
            "Timestamp",
            "Token",
            "TopicArn",
            "Type",
        ]
    };
    let mut canonical = String::new();
    for name in names {
        if let Some(Value::String(v)) = m.get(*name) {
            canonical += &format!("{name}\n{v}\n");
        }
    }
    let sig = STANDARD.encode(sign(pair, &RSA_PKCS1_SHA256, canonical.as_bytes()));
    m.insert("Signature".to_owned(), Value::String(sig));
    m
}

fn body(m: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(m).expect("JSON")
}

fn sns_headers(kind: &str) -> Vec<(String, String)> {
    headers(&[
        ("Content-Type", "text/plain; charset=UTF-8"),
        ("x-amz-sns-message-type", kind),
    ])
}

#[tokio::test]
async fn sns_messages_verify_with_the_fetched_certificate_and_confirmations_are_confirmed() {
    let keys = KeyServer::start().await;
    keys.route(
        "/SimpleNotificationService-a.pem",
        Route::ok(certificate(KEY_A)),
    );
    keys.route("/confirm", Route::ok("<ConfirmSubscriptionResponse/>"));
    let upstream = Upstream::start().await;
    let gate = gate(
        &upstream,
        &sns_source(&keys.keys_table(), "confirm_subscription = true\n"),
    )
    .await;
    // The widened key policy is said loudly at startup.
    let warned = gate.stdout().iter().any(|l| {
        l.contains("\"level\":\"WARN\"") && l.contains("widens where provider keys may come from")
    });
    assert!(
        warned,
        "no startup warning about [source.keys]:\n{}",
        gate.output()
    );

    let a = pair(KEY_A);
    let cert_url = keys.url("/SimpleNotificationService-a.pem");
    for id in ["msg-1", "msg-2"] {
        let m = sns_message("Notification", id, &cert_url, &a, &[("Subject", "hi")]);
        let resp = gate
            .post("/webhooks/sns", &sns_headers("Notification"), body(&m))
            .await;
        resp.assert_app_ok();
    }
    let seen = upstream.wait_for(2).await;
    assert_eq!(seen[0].header("x-verified-event-id"), "msg-1");
    assert_eq!(seen[0].header("x-verified-event-type"), "Notification");
    assert_eq!(seen[0].header("x-verified-source"), "sns");
    assert_eq!(seen[1].header("x-verified-event-id"), "msg-2");

    // A signed field changed after signing; the same message again.
    let mut m = sns_message("Notification", "msg-t", &cert_url, &a, &[]);
    m.insert("Message".to_owned(), json!("{\"order\":43}"));
    gate.post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_error(400, "invalid_signature");
    let m = sns_message("Notification", "msg-1", &cert_url, &a, &[("Subject", "hi")]);
    gate.post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_duplicate("msg-1");
    // Signed by another key than the certificate's.
    let m = sns_message("Notification", "msg-b", &cert_url, &pair(KEY_B), &[]);
    gate.post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_error(400, "invalid_signature");

    // A subscription confirmation: verified, forwarded, and confirmed by hookgate.
    let subscribe = keys.url("/confirm?Action=ConfirmSubscription&Token=tok-1");
    let m = sns_message(
        "SubscriptionConfirmation",
        "confirm-1",
        &cert_url,
        &a,
        &[("Token", "tok-1"), ("SubscribeURL", &subscribe)],
    );
    gate.post(
        "/webhooks/sns",
        &sns_headers("SubscriptionConfirmation"),
        body(&m),
    )
    .await
    .assert_app_ok();
    eventually("hookgate confirms the subscription", || async {
        match keys.hits("/confirm") {
            1 => Ok(()),
            n => Err(format!("{n} confirmations")),
        }
    })
    .await;
    assert!(
        keys.requests()
            .contains(&"/confirm?Action=ConfirmSubscription&Token=tok-1".to_owned())
    );
    let seen = upstream.wait_for(3).await;
    assert_eq!(
        seen[2].header("x-verified-event-type"),
        "SubscriptionConfirmation"
    );

    // Another account's topic, however well AWS signed it, is not this
    // source's sender.
    let resigned = sns_message(
        "Notification",
        "msg-x",
        &cert_url,
        &a,
        &[("TopicArn", "arn:aws:sns:us-east-1:999999999999:hookgate-it")],
    );
    gate.post(
        "/webhooks/sns",
        &sns_headers("Notification"),
        body(&resigned),
    )
    .await
    .assert_error(400, "invalid_signature");

    // Raw message delivery carries no signature.
    gate.post("/webhooks/sns", &[], "{\"order\":42}")
        .await
        .assert_error(400, "missing_signature");
    // One certificate fetch served every message.
    assert_eq!(keys.hits("/SimpleNotificationService-a.pem"), 1);
}

#[tokio::test]
async fn a_key_url_off_the_provider_hosts_is_refused_and_never_fetched() {
    let keys = KeyServer::start().await;
    keys.route("/cert.pem", Route::ok(certificate(KEY_A)));
    keys.route(
        "/v1/notifications/certs/CERT-1",
        Route::ok(certificate(KEY_A)),
    );
    let upstream = Upstream::start().await;
    let a = pair(KEY_A);

    // With [source.keys] allowing 127.0.0.1: the same server named
    // `localhost` is another host, not allowed.
    let widened = gate(&upstream, &sns_source(&keys.keys_table(), "")).await;
    let forged = format!("https://localhost:{}/cert.pem", keys.port());
    let m = sns_message("Notification", "forged-1", &forged, &a, &[]);
    widened
        .post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_error(400, "invalid_signature");
    let line = widened
        .wait_for_log("the refused host logged", |l| {
            l["host"] == "localhost" && l["level"] == "WARN"
        })
        .await;
    assert!(line.to_string().contains("not fetched"), "{line}");

    // Without [source.keys], 127.0.0.1 itself is not a provider host.
    let plain = gate(&upstream, &sns_source("", "")).await;
    let m = sns_message("Notification", "forged-2", &keys.url("/cert.pem"), &a, &[]);
    plain
        .post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_error(400, "invalid_signature");
    let paypal = gate(
        &upstream,
        "\n[[source]]\nname = \"pp\"\npath = \"/webhooks/pp\"\nscheme = \"paypal\"\nwebhook_id = \"WH-1\"\n",
    )
    .await;
    let (h, b) = paypal_delivery(
        &a,
        &keys.url("/v1/notifications/certs/CERT-1"),
        "WH-1",
        "WH-EVT-1",
    );
    paypal
        .post("/webhooks/pp", &h, b)
        .await
        .assert_error(400, "invalid_signature");
    // An http:// URL on an allowed host is refused too.
    let m = sns_message(
        "Notification",
        "forged-3",
        &format!("http://127.0.0.1:{}/cert.pem", keys.port()),
        &a,
        &[],
    );
    widened
        .post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await
        .assert_error(400, "invalid_signature");

    assert_eq!(keys.connections(), 0, "a refused key URL is never fetched");
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_hanging_key_server_is_503_key_unavailable_within_the_bound() {
    let keys = KeyServer::start().await;
    keys.route("/hang.pem", Route::hang());
    let upstream = Upstream::start().await;
    let gate = gate(&upstream, &sns_source(&keys.keys_table(), "")).await;
    let m = sns_message(
        "Notification",
        "m-hang",
        &keys.url("/hang.pem"),
        &pair(KEY_A),
        &[],
    );
    let started = Instant::now();
    let resp = gate
        .post("/webhooks/sns", &sns_headers("Notification"), body(&m))
        .await;
    let took = started.elapsed();
    resp.assert_error(503, "key_unavailable");
    assert_eq!(resp.retry_after(), 5);
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(9),
        "answered after {took:?}; the fetch is bounded by 5 s"
    );
    assert_eq!(keys.hits("/hang.pem"), 1);
    assert_eq!(upstream.count(), 0, "nothing is forwarded without a key");
    let metrics = crate::support::Metrics::parse(&gate.admin_get("/metrics").await.text());
    assert_eq!(
        metrics.get(
            "hookgate_requests_total",
            &[("source", "sns"), ("outcome", "key_unavailable")]
        ),
        Some(1.0)
    );
}

/// A PayPal delivery of event `event_id`, signed with `pair` for `webhook_id`.
fn paypal_delivery(
    pair: &RsaKeyPair,
    cert_url: &str,
    webhook_id: &str,
    event_id: &str,
) -> (Vec<(String, String)>, Vec<u8>) {
    let body = serde_json::to_vec(&json!({
        "id": event_id,
        "event_version": "1.0",
        "create_time": rfc3339_now(),
        "resource_type": "capture",
        "event_type": "PAYMENT.CAPTURE.COMPLETED",
        "resource": {"id": "5O190127TN364715T", "amount": {"value": "10.00"}}
    }))
    .expect("JSON");
    let transmission = format!("tx-{event_id}");
    let time = rfc3339_now();
    let signed = format!(
        "{transmission}|{time}|{webhook_id}|{}",
        crc32fast::hash(&body)
    );
    let sig = STANDARD.encode(sign(pair, &RSA_PKCS1_SHA256, signed.as_bytes()));
    let h = headers(&[
        ("Content-Type", "application/json"),
        ("PAYPAL-TRANSMISSION-ID", &transmission),
        ("PAYPAL-TRANSMISSION-TIME", &time),
        ("PAYPAL-TRANSMISSION-SIG", &sig),
        ("PAYPAL-CERT-URL", cert_url),
        ("PAYPAL-AUTH-ALGO", "SHA256withRSA"),
    ]);
    (h, body)
}

#[tokio::test]
async fn paypal_deliveries_verify_and_concurrent_ones_share_one_fetch() {
    let keys = KeyServer::start().await;
    let path = "/v1/notifications/certs/CERT-360caa42-fca2a594-a";
    // Slow enough that every request below arrives while it is in flight.
    keys.route(
        path,
        Route::ok(certificate(KEY_A)).delay(Duration::from_millis(800)),
    );
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"paypal\"\npath = \"/webhooks/paypal\"\nscheme = \"paypal\"\nwebhook_id = \"0FV983392A0531201\"\n{}",
        keys.keys_table()
    );
    let gate = gate(&upstream, &source).await;
    let a = pair(KEY_A);
    let cert_url = keys.url(path);

    let mut sends = tokio::task::JoinSet::new();
    for i in 0..12 {
        let (h, b) = paypal_delivery(&a, &cert_url, "0FV983392A0531201", &format!("WH-{i}"));
        let url = format!("{}/webhooks/paypal", gate.public_url());
        sends.spawn(async move { http(Method::POST, &url, &h, b).await });
    }
    while let Some(resp) = sends.join_next().await {
        resp.expect("the sender task").assert_app_ok();
    }
    assert_eq!(
        keys.hits(path),
        1,
        "concurrent requests fetch the certificate once"
    );
    let seen = upstream.wait_for(12).await;
    let mut ids: Vec<String> = seen
        .iter()
        .map(|r| r.header("x-verified-event-id"))
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 12);
    assert!(ids.contains(&"WH-7".to_owned()));
    assert_eq!(
        seen[0].header("x-verified-event-type"),
        "PAYMENT.CAPTURE.COMPLETED"
    );

    // Tampered body, another webhook id, another key: all refused.
    let (h, mut b) = paypal_delivery(&a, &cert_url, "0FV983392A0531201", "WH-t");
    b[10] ^= 1;
    gate.post("/webhooks/paypal", &h, b)
        .await
        .assert_error(400, "invalid_signature");
    let (h, b) = paypal_delivery(&a, &cert_url, "SOME-OTHER-WEBHOOK", "WH-w");
    gate.post("/webhooks/paypal", &h, b)
        .await
        .assert_error(400, "invalid_signature");
    let (h, b) = paypal_delivery(&pair(KEY_B), &cert_url, "0FV983392A0531201", "WH-k");
    gate.post("/webhooks/paypal", &h, b)
        .await
        .assert_error(400, "invalid_signature");
    assert_eq!(keys.hits(path), 1);
}

fn jwk(pair: &RsaKeyPair, kid: &str) -> Value {
    let components: ring::rsa::PublicKeyComponents<Vec<u8>> = pair.public().into();
    json!({
        "kty": "RSA",
        "alg": "RS256",
        "use": "sig",
        "kid": kid,
        "n": URL_SAFE_NO_PAD.encode(&components.n),
        "e": URL_SAFE_NO_PAD.encode(&components.e),
    })
}

const AUDIENCE: &str = "https://hooks.example.com/webhooks/pubsub";
const EMAIL: &str = "pusher@hookgate-it.iam.gserviceaccount.com";

/// An ID token as Google mints one for a push subscription.
fn id_token(pair: &RsaKeyPair, kid: &str, audience: &str) -> String {
    let header = json!({"alg": "RS256", "kid": kid, "typ": "JWT"});
    let t = now();
    let claims = json!({
        "aud": audience,
        "azp": "113774264463038321964",
        "email": EMAIL,
        "email_verified": true,
        "exp": t + 3600,
        "iat": t,
        "iss": "https://accounts.google.com",
        "sub": "113774264463038321964",
    });
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = sign(pair, &RSA_PKCS1_SHA256, signed.as_bytes());
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig))
}

fn push_body(message_id: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "message": {
            "attributes": {"kind": "order"},
            "data": STANDARD.encode("{\"order\":42}"),
            "messageId": message_id,
            "message_id": message_id,
            "publishTime": rfc3339_now(),
        },
        "subscription": "projects/hookgate-it/subscriptions/push"
    }))
    .expect("JSON")
}

fn bearer(token: &str) -> Vec<(String, String)> {
    headers(&[
        ("Authorization", &format!("Bearer {token}")),
        ("Content-Type", "application/json"),
    ])
}

#[tokio::test]
async fn google_pushes_verify_and_a_rotated_key_is_fetched_again() {
    let keys = KeyServer::start().await;
    let a = pair(KEY_A);
    let b = pair(KEY_B);
    let set = |jwks: Vec<Value>| {
        Route::ok(json!({ "keys": jwks }).to_string())
            .header("Cache-Control", "public, max-age=3600, must-revalidate")
    };
    keys.route("/oauth2/v3/certs", set(vec![jwk(&a, "kid-a")]));
    let upstream = Upstream::start().await;
    let source = format!(
        "\n[[source]]\nname = \"pubsub\"\npath = \"/webhooks/pubsub\"\nscheme = \"google-oidc\"\naudience = \"{AUDIENCE}\"\nemail = \"{EMAIL}\"\n{}jwks_url = \"{}\"\n",
        keys.keys_table(),
        keys.url("/oauth2/v3/certs")
    );
    let gate = gate(&upstream, &source).await;

    gate.post(
        "/webhooks/pubsub",
        &bearer(&id_token(&a, "kid-a", AUDIENCE)),
        push_body("1001"),
    )
    .await
    .assert_app_ok();
    let seen = upstream.wait_for(1).await;
    assert_eq!(seen[0].header("x-verified-event-id"), "1001");
    assert_eq!(seen[0].header("x-verified-source"), "pubsub");
    assert!(
        !seen[0].has_header("x-verified-event-type"),
        "the token does not sign the body, so no type is stamped"
    );
    // Another audience, a token signed by a key not in the set under its id,
    // no token at all.
    gate.post(
        "/webhooks/pubsub",
        &bearer(&id_token(&a, "kid-a", "https://other.example")),
        push_body("1002"),
    )
    .await
    .assert_error(400, "invalid_signature");
    gate.post(
        "/webhooks/pubsub",
        &bearer(&id_token(&b, "kid-a", AUDIENCE)),
        push_body("1003"),
    )
    .await
    .assert_error(400, "invalid_signature");
    gate.post(
        "/webhooks/pubsub",
        &headers(&[("Content-Type", "application/json")]),
        push_body("1004"),
    )
    .await
    .assert_error(400, "missing_signature");
    assert_eq!(
        keys.hits("/oauth2/v3/certs"),
        1,
        "the set is cached for its max-age"
    );

    // Google rotates: the set now holds only kid-b. A token naming it makes
    // hookgate fetch the set again (once the refresh cooldown has passed).
    keys.route("/oauth2/v3/certs", set(vec![jwk(&b, "kid-b")]));
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    gate.post(
        "/webhooks/pubsub",
        &bearer(&id_token(&b, "kid-b", AUDIENCE)),
        push_body("1005"),
    )
    .await
    .assert_app_ok();
    assert_eq!(keys.hits("/oauth2/v3/certs"), 2);
    let seen = upstream.wait_for(2).await;
    assert_eq!(seen[1].header("x-verified-event-id"), "1005");
    // The retired key no longer verifies.
    gate.post(
        "/webhooks/pubsub",
        &bearer(&id_token(&a, "kid-a", AUDIENCE)),
        push_body("1006"),
    )
    .await
    .assert_error(400, "invalid_signature");
    assert_eq!(
        keys.hits("/oauth2/v3/certs"),
        2,
        "a refresh waits out its cooldown"
    );
}
