//! Micro-benchmarks (divan): each scheme's `verify` on 1 KiB and 64 KiB
//! bodies next to the raw HMAC-SHA256 of the same bytes with the same crates,
//! the event id handling the pipeline adds, and the memory store's verbs.
//!
//!     cargo bench --bench micro
//!
//! `verify` = header parsing + HMAC + constant-time compare + the event id and
//! type (from headers or the JSON body), so `verify_*` minus `hmac_sha256`
//! is everything a scheme adds to the unavoidable MAC.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use divan::{Bencher, black_box};
use hmac::{Hmac, KeyInit, Mac};
use hookgate::config::{Config, SecretSource};
use hookgate::scheme::Scheme;
use hookgate::secret::Secret;
use hookgate::store::memory::MemoryStore;
use http::{HeaderMap, HeaderName, HeaderValue};
use sha2::Sha256;

const SIZES: [usize; 2] = [1024, 64 * 1024];
const NOW: i64 = 1_700_000_000;
const TOLERANCE: Duration = Duration::from_secs(300);

fn main() {
    divan::main();
}

/// A JSON body of exactly `size` bytes carrying every field some scheme reads.
fn body(size: usize) -> Vec<u8> {
    let head = r#"{"id":"evt_1NG8Du2eZvKYlo2CRkSbt4FG","type":"invoice.paid","event_id":"Ev0PV52K25","event":{"type":"message"},"kind":"order.created","data":{"object":{"note":""#;
    let tail = r#""}}}"#;
    let mut out = head.as_bytes().to_vec();
    out.resize(size - tail.len(), b'x');
    out.extend_from_slice(tail.as_bytes());
    out
}

/// One source per scheme, built the way hookgate builds them: from a config.
const CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"
upstream = "http://127.0.0.1:1"
[admin]
listen = "127.0.0.1:0"
[store]
kind = "memory"
[[source]]
name = "stripe"
path = "/stripe"
scheme = "stripe"
secrets = ["whsec_bench_secret_0123456789"]
tolerance = "5m"
[[source]]
name = "github"
path = "/github"
scheme = "github"
secrets = ["whsec_bench_secret_0123456789"]
[[source]]
name = "shopify"
path = "/shopify"
scheme = "shopify"
secrets = ["whsec_bench_secret_0123456789"]
[[source]]
name = "slack"
path = "/slack"
scheme = "slack"
secrets = ["whsec_bench_secret_0123456789"]
tolerance = "5m"
[[source]]
name = "standard"
path = "/standard"
scheme = "standard"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
tolerance = "5m"
[[source]]
name = "generic"
path = "/generic"
scheme = "generic"
secrets = ["whsec_bench_secret_0123456789"]
tolerance = "5m"
[source.generic]
signature_header = "X-Acme-Signature"
signature_prefix = "sha256="
encoding = "hex"
signed_payload = "{id}.{timestamp}.{body}"
timestamp_header = "X-Acme-Timestamp"
event_id = { header = "X-Acme-Delivery" }
event_type = { pointer = "/kind" }
"#;

struct NoSecrets;

impl SecretSource for NoSecrets {
    fn env(&self, _: &str) -> Option<String> {
        None
    }
    fn file(&self, _: &std::path::Path) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(
            "the bench config names no secret file",
        ))
    }
}

/// The source's scheme, its key as the scheme uses it, the headers `sign`
/// makes, and the body.
fn signed_request(name: &str, size: usize) -> (Scheme, Vec<Secret>, HeaderMap, Vec<u8>) {
    let config =
        Config::from_toml_str(CONFIG, &NoSecrets).unwrap_or_else(|e| panic!("bench config: {e:?}"));
    let source = config
        .sources
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no bench source {name}"));
    let body = body(size);
    let mut headers = HeaderMap::new();
    let lines = source
        .scheme
        .sign(&source.keys[0], &body, Some("evt_bench_1"), NOW)
        .unwrap_or_else(|e| panic!("{name} signs: {e}"));
    for (n, v) in lines {
        let n = HeaderName::from_bytes(n.as_bytes()).expect("sign makes valid names");
        let v = HeaderValue::from_str(&v).expect("sign makes valid values");
        headers.insert(n, v);
    }
    (source.scheme, source.keys, headers, body)
}

fn bench_verify(b: Bencher, name: &str, size: usize) {
    let (scheme, keys, headers, body) = signed_request(name, size);
    assert!(
        scheme
            .verify(&keys, TOLERANCE, &headers, &body, NOW)
            .is_ok()
    );
    b.counter(divan::counter::BytesCount::new(size))
        .bench_local(|| {
            scheme.verify(
                black_box(&keys),
                TOLERANCE,
                black_box(&headers),
                black_box(&body),
                NOW,
            )
        });
}

/// The floor: HMAC-SHA256 of the same bytes with the same `hmac` and `sha2`
/// crates, key setup included (as every verify does it).
#[divan::bench(args = SIZES)]
fn hmac_sha256(b: Bencher, size: usize) {
    let key = b"whsec_bench_secret_0123456789";
    let body = body(size);
    b.counter(divan::counter::BytesCount::new(size))
        .bench_local(|| {
            let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(black_box(key))
                .expect("HMAC takes any key length");
            mac.update(black_box(&body));
            mac.finalize().into_bytes()
        });
}

#[divan::bench(args = SIZES)]
fn verify_stripe(b: Bencher, size: usize) {
    bench_verify(b, "stripe", size);
}

#[divan::bench(args = SIZES)]
fn verify_github(b: Bencher, size: usize) {
    bench_verify(b, "github", size);
}

#[divan::bench(args = SIZES)]
fn verify_shopify(b: Bencher, size: usize) {
    bench_verify(b, "shopify", size);
}

#[divan::bench(args = SIZES)]
fn verify_slack(b: Bencher, size: usize) {
    bench_verify(b, "slack", size);
}

#[divan::bench(args = SIZES)]
fn verify_standard(b: Bencher, size: usize) {
    bench_verify(b, "standard", size);
}

#[divan::bench(args = SIZES)]
fn verify_generic(b: Bencher, size: usize) {
    bench_verify(b, "generic", size);
}

/// What the pipeline does with an id once verified: bound it, then key it.
#[divan::bench]
fn event_id_to_nonce_key() -> String {
    let id = hookgate::store::keys::key_safe_id(black_box("evt_1NG8Du2eZvKYlo2CRkSbt4FG"));
    hookgate::store::keys::nonce_key("hookgate", "stripe", &id)
}

/// Polls a future that never waits (the memory store's verbs) to completion.
fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the memory store never waits"),
    }
}

mod memory_store {
    use super::*;

    const LEASE: Duration = Duration::from_secs(15);
    const TTL: Duration = Duration::from_secs(24 * 3600);

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    }

    /// A fresh id: claim (the lease), then commit (done), as a forwarded event does.
    #[divan::bench]
    fn claim_then_commit(b: Bencher) {
        let rt = runtime();
        let _enter = rt.enter();
        let store = MemoryStore::new(usize::MAX);
        let mut n = 0u64;
        b.with_inputs(|| {
            n += 1;
            format!("hookgate:nonce:stripe:evt_{n:020}")
        })
        .bench_local_values(|key| {
            let token = "0123456789abcdef0123456789abcdef";
            let claim = now(store.claim(&key, token, LEASE));
            let commit = now(store.commit(&key, TTL));
            (claim.is_ok(), commit.is_ok())
        });
    }

    /// A duplicate: claim on an id already done.
    #[divan::bench]
    fn claim_duplicate(b: Bencher) {
        let rt = runtime();
        let _enter = rt.enter();
        let store = MemoryStore::new(usize::MAX);
        let key = "hookgate:nonce:stripe:evt_dup";
        let token = "0123456789abcdef0123456789abcdef";
        assert!(now(store.claim(key, token, LEASE)).is_ok());
        assert!(now(store.commit(key, TTL)).is_ok());
        b.bench_local(|| now(store.claim(black_box(key), token, LEASE)).is_ok());
    }
}

/// The memory store's trail with 100,000 events held (the default bound):
/// one forwarded event's note (its arrival and its attempt) appended, the
/// oldest event going out. `claim_then_commit` above is the event's own
/// cost in the same store.
mod memory_trail {
    use super::*;
    use hookgate::store::memory::trail::Trail;
    use hookgate::trail::{Attempt, Fact, Mode, State};

    const HELD: usize = 100_000;

    fn note(n: u64) -> Vec<Fact> {
        let at = 1_700_000_000_000 + i64::try_from(n).unwrap_or(0);
        vec![
            Fact::Received {
                at,
                replica: "hookgate-7d4f9c-x2x9q".into(),
                event_type: Some("invoice.paid".into()),
                signed_at: Some(at / 1000),
                state: State::InFlight,
                nonce_id: None,
            },
            Fact::Attempted {
                attempt: Attempt {
                    at: at + 3,
                    replica: "hookgate-7d4f9c-x2x9q".into(),
                    mode: Mode::Forward,
                    outcome: "forwarded".into(),
                    status: Some(200),
                    duration_ms: 3,
                    waited: None,
                    trace_id: None,
                },
                state: State::Delivered,
                next_attempt_at: None,
                dead_letter_id: None,
            },
        ]
    }

    #[divan::bench]
    fn append_to_a_full_trail(b: Bencher) {
        let trail = Trail::default();
        let mut n = 0u64;
        while n < HELD as u64 {
            trail.append("stripe", &format!("evt_{n:020}"), note(n), HELD);
            n += 1;
        }
        b.with_inputs(|| {
            n += 1;
            (format!("evt_{n:020}"), note(n))
        })
        .bench_local_values(|(id, facts)| trail.append("stripe", &id, facts, HELD));
    }
}

/// A queue entry's stored form: written (on enqueue, on each retry) and read
/// (on each attempt), as it is and sealed with `[store.encryption]`
/// (XChaCha20-Poly1305), for a 1 KiB body and a GitHub delivery's headers.
mod envelope {
    use super::*;
    use hookgate::envelope::{Envelope, Place};
    use hookgate::seal::Keyring;

    fn envelope() -> Envelope {
        let mut e: Envelope = serde_json::from_value(serde_json::json!({
            "token": "0123456789abcdef0123456789abcdef",
            "source": "github",
            "event_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
            "event_type": "push",
            "delivery": "queue",
            "method": "POST",
            "uri": "/webhooks/github",
            "headers": [
                ["host", "hooks.example.com"],
                ["user-agent", "GitHub-Hookshot/044aadd"],
                ["content-type", "application/json"],
                ["content-length", "1024"],
                ["x-github-event", "push"],
                ["x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"],
                ["x-github-hook-id", "292430182"],
                ["x-hub-signature-256", "sha256=d57c68ca6f92289e6987922ff26938930f6e66a2d161ef06abdf1859230aa23c"],
            ],
            "received_ms": 1_700_000_000_000i64,
        }))
        .expect("an envelope");
        e.body = body(1024).into();
        e
    }

    fn keys(kind: &str) -> Keyring {
        match kind {
            "sealed" => Keyring::new(vec![("bench".to_owned(), [7u8; 32])]),
            _ => Keyring::default(),
        }
    }

    #[divan::bench(args = ["plain", "sealed"])]
    fn encode(b: Bencher, kind: &str) {
        let (e, keys) = (envelope(), keys(kind));
        b.bench_local(|| black_box(&e).encode(&keys, Place::Queue));
    }

    #[divan::bench(args = ["plain", "sealed"])]
    fn decode(b: Bencher, kind: &str) {
        let keys = keys(kind);
        let stored = envelope().encode(&keys, Place::Queue);
        b.bench_local(|| {
            Envelope::decode(black_box(&stored), &keys, Place::Queue).map(|e| e.body.len())
        });
    }
}

/// The AEADs on the sealed part of a queue entry (1.5 KiB): RustCrypto's
/// XChaCha20-Poly1305, which hookgate uses, beside ring's assembly
/// ChaCha20-Poly1305 and AES-256-GCM (96-bit nonces), for reference.
mod aead {
    use super::*;
    use chacha20poly1305::aead::AeadInOut;
    use chacha20poly1305::aead::inout::InOutBuf;
    use chacha20poly1305::{XChaCha20Poly1305, XNonce};

    const LEN: usize = 1536;

    #[divan::bench]
    fn xchacha20_poly1305_rustcrypto(b: Bencher) {
        let cipher = XChaCha20Poly1305::new(&[7u8; 32].into());
        let mut buf = vec![1u8; LEN];
        b.bench_local(|| {
            cipher
                .encrypt_inout_detached(
                    &XNonce::from([3u8; 24]),
                    b"aad",
                    InOutBuf::from(&mut buf[..]),
                )
                .map(|t| t[0])
        });
    }

    fn ring_seal(b: Bencher, alg: &'static ring::aead::Algorithm) {
        let key = ring::aead::LessSafeKey::new(
            ring::aead::UnboundKey::new(alg, &[7u8; 32]).expect("key"),
        );
        let mut buf = vec![1u8; LEN];
        b.bench_local(|| {
            key.seal_in_place_separate_tag(
                ring::aead::Nonce::assume_unique_for_key([3u8; 12]),
                ring::aead::Aad::from(b"aad"),
                &mut buf,
            )
            .map(|t| t.as_ref()[0])
        });
    }

    #[divan::bench]
    fn chacha20_poly1305_ring(b: Bencher) {
        ring_seal(b, &ring::aead::CHACHA20_POLY1305);
    }

    #[divan::bench]
    fn aes_256_gcm_ring(b: Bencher) {
        ring_seal(b, &ring::aead::AES_256_GCM);
    }
}

/// Keeping one refusal (DESIGN §7d) after 100 refusals (below the caps),
/// after 10,000 and after a million from 20,000 addresses (both at the
/// caps): the cost stays flat once the caps are reached.
mod rejections {
    use divan::Bencher;
    use hookgate::rejections::{Refused, Rejections};

    fn refused(i: u32) -> Refused<'static> {
        Refused {
            source: Some("stripe"),
            path: "/hooks/stripe",
            outcome: "invalid_signature",
            status: 400,
            client: Some(std::net::IpAddr::from(
                (0x0a00_0000 + i % 20_000).to_be_bytes(),
            )),
            user_agent: Some(b"Stripe/1.0 (+https://stripe.com/docs/webhooks)"),
            body_bytes: Some(1500),
            signature_header: None,
            outside_tolerance_secs: None,
        }
    }

    fn after(b: Bencher, before: u32) {
        let r = Rejections::default();
        for i in 0..before {
            r.record(&refused(i));
        }
        let mut i = before;
        b.bench_local(|| {
            i = i.wrapping_add(1);
            r.record(&refused(i))
        });
    }

    #[divan::bench]
    fn record_after_100(b: Bencher) {
        after(b, 100);
    }

    #[divan::bench]
    fn record_after_10k(b: Bencher) {
        after(b, 10_000);
    }

    #[divan::bench]
    fn record_after_1m(b: Bencher) {
        after(b, 1_000_000);
    }
}

/// Counting one answered request and one completion for the console's
/// charts (DESIGN §7b): the work every request adds to its path (a lock and
/// two additions); the store sees one write per 10 s whatever the traffic.
mod chart_counts {
    use divan::Bencher;
    use hookgate::stats::Tally;

    #[divan::bench]
    fn request_and_completion(b: Bencher) {
        let tally = Tally::default();
        for s in ["stripe", "github", "shopify", "slack"] {
            tally.request(s, "forwarded", http::StatusCode::OK);
        }
        b.bench_local(|| {
            tally.request("shopify", "forwarded", http::StatusCode::OK);
            tally.latency("shopify", 0.2);
        });
    }
}
