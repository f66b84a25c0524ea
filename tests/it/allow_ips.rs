//! Sender address allowlists (`allow_ips`, `[server] trusted_proxies`) on the
//! real binary: clients bound to other loopback addresses (127.0.0.2,
//! 127.0.0.3, ::1) send exact bytes; refused requests get `403
//! forbidden_ip` and reach nothing, forged `X-Forwarded-For` headers help no
//! one, and nothing is stored for a refusal.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::support::hookgate::run_cli;
use crate::support::raw_app::{RawApp, RawRequest, Scripted};
use crate::support::{
    ConfigBuilder, GITHUB_SECRET, Hookgate, Metrics, SourceSpec, WAIT, eventually, now, sign_raw,
};

const FORBIDDEN: &[u8] = br#"{"error":"forbidden_ip"}"#;

/// What a refused request is, where it comes from, and its extra headers.
type Refusal = (&'static str, IpAddr, Vec<(&'static str, &'static str)>);

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an address")
}

/// Sends `request` from a socket bound to `from` to `to`, and reads the
/// answer until hookgate closes (every request here says `Connection: close`).
async fn send_from(from: IpAddr, to: SocketAddr, request: &[u8]) -> Vec<u8> {
    let exchange = async {
        let socket = match from {
            IpAddr::V4(_) => TcpSocket::new_v4()?,
            IpAddr::V6(_) => TcpSocket::new_v6()?,
        };
        socket.bind(SocketAddr::new(from, 0))?;
        let mut stream = socket.connect(to).await?;
        stream.write_all(request).await?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    };
    tokio::time::timeout(WAIT, exchange)
        .await
        .expect("hookgate answered and closed in time")
        .unwrap_or_else(|e| panic!("exchange from {from} to {to}: {e}"))
}

/// A signed GitHub delivery `id` with `body`, plus `extra` header lines, as
/// the exact bytes of one HTTP/1.1 request.
fn delivery(id: &str, body: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    let github = SourceSpec::github();
    let mut out = format!(
        "POST {} HTTP/1.1\r\nHost: hooks.example.com\r\nConnection: close\r\n",
        github.path
    )
    .into_bytes();
    let signed = sign_raw(&github.scheme, GITHUB_SECRET, body, Some(id), now());
    let lines = signed
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .chain(extra.iter().copied());
    for (name, value) in lines {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// The status code and body of an answer.
fn answer(bytes: &[u8]) -> (u16, Vec<u8>) {
    let text = String::from_utf8_lossy(bytes);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {text:?}"));
    (status, bytes[end + 4..].to_vec())
}

fn assert_forbidden(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert_eq!(answer(bytes), (403, FORBIDDEN.to_vec()), "{what}: {text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("\r\ncontent-type: application/json\r\n"),
        "{what}: {text}"
    );
}

async fn wait_requests(app: &RawApp, n: usize) -> Vec<RawRequest> {
    eventually(&format!("{n} requests at the app"), || async {
        let seen = app.requests();
        if seen.len() >= n {
            Ok(seen)
        } else {
            Err(format!("{} so far", seen.len()))
        }
    })
    .await
}

/// Lets any request still on its way reach the app before "nothing arrived"
/// is asserted.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

async fn count(gate: &Hookgate, outcome: &str) -> Option<f64> {
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    metrics.get(
        "hookgate_requests_total",
        &[("source", "github"), ("outcome", outcome)],
    )
}

/// The body of a request as the app received it.
fn body_of(request: &RawRequest) -> &[u8] {
    let end = request
        .bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a request head");
    &request.bytes[end + 4..]
}

#[tokio::test]
async fn only_listed_addresses_reach_the_app_and_nothing_is_stored_for_the_rest() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github().key(r#"allow_ips = ["127.0.0.2", "192.0.2.0/24"]"#);
    let gate = ConfigBuilder::new(&app.url())
        .source(github.clone())
        .start()
        .await;
    let to = gate.public_addr();
    let body = br#"{"action":"opened","number":7}"#;

    // Correctly signed, from an address outside the list: refused.
    let refused = send_from(ip("127.0.0.3"), to, &delivery("d-1", body, &[])).await;
    assert_forbidden(&refused, "from 127.0.0.3");
    // A forged X-Forwarded-For naming an allowed address, from a peer that is
    // no trusted proxy (none is configured), is not read.
    let forged = delivery("d-1", body, &[("X-Forwarded-For", "127.0.0.2, 192.0.2.1")]);
    assert_forbidden(
        &send_from(ip("127.0.0.3"), to, &forged).await,
        "forged X-Forwarded-For",
    );
    // Refused before the body is read: the head of a request announcing more
    // than max_body_bytes, whose body never comes, is answered 403.
    let huge = vec![b'x'; 2 * 1024 * 1024];
    let whole = delivery("d-2", &huge, &[]);
    let head = &whole[..whole.len() - huge.len()];
    assert_forbidden(
        &send_from(ip("127.0.0.3"), to, head).await,
        "the head of a large request from 127.0.0.3",
    );
    // A method the source never takes is refused as such first.
    let get = b"GET /webhooks/github HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, _) = answer(&send_from(ip("127.0.0.3"), to, get).await);
    assert_eq!(status, 405);
    settle().await;
    assert!(app.requests().is_empty(), "{:?}", app.requests());

    // The same delivery from the listed address is fresh, not a duplicate:
    // nothing was stored for the refusals.
    let sent = send_from(ip("127.0.0.2"), to, &delivery("d-1", body, &[])).await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    let seen = wait_requests(&app, 1).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].request_line(), "POST /webhooks/github HTTP/1.1");
    assert_eq!(body_of(&seen[0]), body);
    assert_eq!(seen[0].header("x-forwarded-for"), ["127.0.0.2"]);
    assert_eq!(seen[0].header("x-verified-event-id"), ["d-1"]);
    assert_eq!(seen[0].header("x-verified-source"), ["github"]);

    assert_eq!(count(&gate, "forbidden_ip").await, Some(3.0));
    assert_eq!(count(&gate, "forwarded").await, Some(1.0));
    assert_eq!(count(&gate, "duplicate").await.unwrap_or(0.0), 0.0);
    let line = gate
        .wait_for_log("the refused request's log line", |l| {
            l["outcome"] == "forbidden_ip" && l["source"] == "github"
        })
        .await;
    assert_eq!(line["status"], 403);
}

#[tokio::test]
async fn a_trusted_proxy_is_believed_from_the_right_and_a_forged_left_helps_nobody() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github().key(r#"allow_ips = ["192.0.2.10"]"#);
    let gate = ConfigBuilder::new(&app.url())
        .server_key(r#"trusted_proxies = ["127.0.0.2", "10.0.0.0/8"]"#)
        .source(github.clone())
        .start()
        .await;
    let to = gate.public_addr();
    let proxy = ip("127.0.0.2");
    let body = br#"{"zen":"Keep it logically awesome."}"#;

    // Through the trusted proxy, the client it names is the allowed sender.
    let sent = send_from(
        proxy,
        to,
        &delivery("p-1", body, &[("X-Forwarded-For", "192.0.2.10")]),
    )
    .await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    // Through two trusted hops (an inner proxy in 10/8), in two headers.
    let sent = send_from(
        proxy,
        to,
        &delivery(
            "p-2",
            br#"{"zen":"Two hops."}"#,
            &[
                ("X-Forwarded-For", "192.0.2.10"),
                ("X-Forwarded-For", "10.1.2.3"),
            ],
        ),
    )
    .await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    let seen = wait_requests(&app, 2).await;
    // The list goes on to the app as it came, with the peer appended.
    assert_eq!(seen[0].header("x-forwarded-for"), ["192.0.2.10, 127.0.0.2"]);

    let refusals: [Refusal; 5] = [
        // The attacker writes the allowed address first; the proxy appends
        // the attacker's own: the right-most untrusted entry is the attacker.
        (
            "forged left-most entry",
            proxy,
            vec![("X-Forwarded-For", "192.0.2.10, 198.51.100.9")],
        ),
        (
            "forged entry in its own header",
            proxy,
            vec![
                ("X-Forwarded-For", "192.0.2.10"),
                ("X-Forwarded-For", "198.51.100.9"),
            ],
        ),
        // An untrusted peer's header is not read at all.
        (
            "untrusted peer",
            ip("127.0.0.3"),
            vec![("X-Forwarded-For", "192.0.2.10")],
        ),
        // An entry that is no address ends the walk: no client, refused.
        (
            "unparseable entry",
            proxy,
            vec![("X-Forwarded-For", "192.0.2.10, unknown")],
        ),
        // No header: the proxy itself is the client, and it is not listed.
        ("the proxy itself", proxy, vec![]),
    ];
    let fresh = br#"{"zen":"Design for failure."}"#;
    for (what, from, headers) in refusals {
        let sent = send_from(from, to, &delivery("p-3", fresh, &headers)).await;
        assert_forbidden(&sent, what);
    }
    settle().await;
    assert_eq!(app.requests().len(), 2);
    assert_eq!(count(&gate, "forbidden_ip").await, Some(5.0));

    // Nothing was stored for the refusals: the same delivery through the
    // proxy with an honest chain is fresh, not a duplicate.
    let sent = send_from(
        proxy,
        to,
        &delivery("p-3", fresh, &[("X-Forwarded-For", "192.0.2.10")]),
    )
    .await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    let seen = wait_requests(&app, 3).await;
    assert_eq!(body_of(&seen[2]), fresh);
}

#[tokio::test]
async fn a_dual_stack_listener_compares_mapped_ipv4_as_ipv4_and_takes_ipv6() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github().key(r#"allow_ips = ["127.0.0.2", "::1"]"#);
    let config = ConfigBuilder::new(&app.url())
        .source(github.clone())
        .toml()
        .replacen("listen = \"127.0.0.1:0\"", "listen = \"[::]:0\"", 1);
    let gate = Hookgate::start(&config).await;
    let port = gate.public_addr().port();
    let v4 = SocketAddr::new(ip("127.0.0.1"), port);
    let v6 = SocketAddr::new(ip("::1"), port);

    // An IPv4 client on a dual-stack socket is the peer ::ffff:127.0.0.x.
    let sent = send_from(ip("127.0.0.2"), v4, &delivery("v-1", b"{\"n\":1}", &[])).await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    let sent = send_from(ip("127.0.0.3"), v4, &delivery("v-2", b"{\"n\":2}", &[])).await;
    assert_forbidden(&sent, "127.0.0.3 over a dual-stack socket");
    let sent = send_from(ip("::1"), v6, &delivery("v-3", b"{\"n\":3}", &[])).await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));

    let seen = wait_requests(&app, 2).await;
    let bodies: Vec<&[u8]> = seen.iter().map(body_of).collect();
    assert_eq!(bodies, [&b"{\"n\":1}"[..], b"{\"n\":3}"]);
    assert_eq!(seen[1].header("x-forwarded-for"), ["::1"]);
}

#[tokio::test]
async fn observe_mode_still_refuses_a_forbidden_address() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let github = SourceSpec::github()
        .key(r#"allow_ips = ["127.0.0.2"]"#)
        .key(r#"verification = "observe""#);
    let gate = ConfigBuilder::new(&app.url())
        .source(github.clone())
        .start()
        .await;
    let to = gate.public_addr();
    let unsigned = b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
        X-GitHub-Event: push\r\nContent-Length: 2\r\n\r\n{}";

    assert_forbidden(
        &send_from(ip("127.0.0.3"), to, unsigned).await,
        "unsigned, from 127.0.0.3, in observe mode",
    );
    settle().await;
    assert!(app.requests().is_empty(), "{:?}", app.requests());

    // From the allowed address the same unsigned request is observed:
    // forwarded, marked, unstamped.
    let sent = send_from(ip("127.0.0.2"), to, unsigned).await;
    assert_eq!(answer(&sent), (200, b"app said 200".to_vec()));
    let seen = wait_requests(&app, 1).await;
    assert_eq!(
        seen[0].header("x-hookgate-unverified"),
        ["missing_signature"]
    );
    assert!(seen[0].header("x-verified-source").is_empty());
    assert_eq!(count(&gate, "forbidden_ip").await, Some(1.0));
}

#[tokio::test]
async fn a_reload_carries_new_allow_ips() {
    let app = RawApp::start(|_| Scripted::status(200)).await;
    let before = SourceSpec::github().key(r#"allow_ips = ["127.0.0.3"]"#);
    let mut gate = ConfigBuilder::new(&app.url()).source(before).start().await;
    let to = gate.public_addr();
    let body = br#"{"reload":1}"#;
    assert_forbidden(
        &send_from(ip("127.0.0.2"), to, &delivery("r-1", body, &[])).await,
        "before the reload",
    );

    let after = SourceSpec::github().key(r#"allow_ips = ["127.0.0.2/32"]"#);
    gate.rewrite_config(
        &ConfigBuilder::new(&app.url())
            .server_key(r#"trusted_proxies = ["10.0.0.0/8"]"#)
            .source(after)
            .toml(),
    );
    gate.signal("HUP");
    eventually("the new allow_ips are applied", || async {
        let sent = send_from(ip("127.0.0.2"), to, &delivery("r-1", body, &[])).await;
        match answer(&sent) {
            (200, b) => Ok(b),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_forbidden(
        &send_from(ip("127.0.0.3"), to, &delivery("r-2", b"{}", &[])).await,
        "after the reload",
    );
}

#[tokio::test]
async fn check_refuses_a_malformed_range_with_its_file_line_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookgate.toml");
    let config = ConfigBuilder::new("http://127.0.0.1:3000")
        .server_key(r#"trusted_proxies = ["10.0.0.0/8", "fd00::/7/7"]"#)
        .source(SourceSpec::github().key(
            "allow_ips = [\n  \"192.30.252.0/22\",\n  \"140.82.112.0/33\",\n  \"3.18.12.63/23\",\n]",
        ))
        .toml();
    std::fs::write(&path, &config).expect("write config");
    let line_of = |marker: &str| {
        config
            .lines()
            .position(|l| l.contains(marker))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("{marker} in the config"))
    };
    let shown = path.display().to_string();
    let (status, stdout, stderr) = run_cli(&["check", "--config", &shown]).await;
    assert_eq!(
        status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for (field, marker, says) in [
        (
            "server.trusted_proxies[1]",
            "fd00::/7/7",
            "is not an IP address or CIDR",
        ),
        (
            "source[github].allow_ips[1]",
            "140.82.112.0/33",
            "is not an IP address or CIDR",
        ),
        (
            "source[github].allow_ips[2]",
            "3.18.12.63/23",
            "\"3.18.12.0/23\"",
        ),
    ] {
        let want = format!("{shown}:{}: {field}: ", line_of(marker));
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&want) && l.contains(says)),
            "no line starting {want:?} and saying {says:?} in stderr:\n{stderr}"
        );
    }
}
