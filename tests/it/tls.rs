//! TLS on the public listener: HTTP/1.1 and h2 negotiated by ALPN with a real
//! rustls client, a renewed certificate served without a restart, and a bad
//! certificate refused with its file named.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::support::hookgate::run_cli;
use crate::support::{ConfigBuilder, Event, Hookgate, SourceSpec, Upstream, eventually, toml_str};

/// Writes a fresh self-signed certificate for `localhost` and its key.
fn write_identity(dir: &Path) -> (PathBuf, PathBuf, CertificateDer<'static>) {
    let identity = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("generate a certificate");
    let cert = dir.join("tls.crt");
    let key = dir.join("tls.key");
    // Written aside and renamed, so a reload never reads half a file.
    std::fs::write(dir.join("tls.crt.new"), identity.cert.pem()).expect("write cert");
    std::fs::write(
        dir.join("tls.key.new"),
        identity.signing_key.serialize_pem(),
    )
    .expect("write key");
    std::fs::rename(dir.join("tls.key.new"), &key).expect("rename key");
    std::fs::rename(dir.join("tls.crt.new"), &cert).expect("rename cert");
    (cert, key, identity.cert.der().clone())
}

fn with_tls(config: String, cert: &Path, key: &Path) -> String {
    let tls = format!(
        "\n[server.tls]\ncert = {}\nkey = {}\n\n[admin]",
        toml_str(&cert.display().to_string()),
        toml_str(&key.display().to_string())
    );
    config.replacen("\n[admin]", &tls, 1)
}

/// A TLS connection to `addr` that trusts only `root` and offers `alpn`.
async fn connect(
    addr: SocketAddr,
    root: &CertificateDer<'static>,
    alpn: &[u8],
) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).expect("add the test root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let stream = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").expect("server name");
    TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
}

fn request(source: &SourceSpec, event: &Event, uri: &str) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::post(uri).header("host", "localhost");
    for (name, value) in source.request_headers(event) {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(event.body.clone())))
        .expect("request")
}

async fn read(response: http::Response<hyper::body::Incoming>) -> (u16, String) {
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn post_http1(
    stream: TlsStream<TcpStream>,
    request: http::Request<Full<Bytes>>,
) -> (u16, String) {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("http/1.1 handshake");
    tokio::spawn(connection);
    read(
        sender
            .send_request(request)
            .await
            .expect("http/1.1 response"),
    )
    .await
}

async fn post_h2(
    stream: TlsStream<TcpStream>,
    request: http::Request<Full<Bytes>>,
) -> (u16, String) {
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    tokio::spawn(connection);
    read(sender.send_request(request).await.expect("h2 response")).await
}

async fn tls_gate(
    upstream: &Upstream,
    source: &SourceSpec,
    dir: &Path,
) -> (Hookgate, CertificateDer<'static>) {
    let (cert, key, der) = write_identity(dir);
    let config = with_tls(
        ConfigBuilder::new(&upstream.url())
            .source(source.clone())
            .toml(),
        &cert,
        &key,
    );
    (Hookgate::start(&config).await, der)
}

#[tokio::test]
async fn serves_http1_and_h2_negotiated_by_alpn() {
    let upstream = Upstream::start().await;
    let source = SourceSpec::stripe();
    let dir = tempfile::tempdir().expect("temp dir");
    let (gate, root) = tls_gate(&upstream, &source, dir.path()).await;

    let stream = connect(gate.public_addr(), &root, b"http/1.1")
        .await
        .expect("TLS connect");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let event = source.event("evt_tls_h1", "invoice.paid");
    let (status, _) = post_http1(stream, request(&source, &event, &source.path)).await;
    assert_eq!(status, 200);

    let stream = connect(gate.public_addr(), &root, b"h2")
        .await
        .expect("TLS connect");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let event = source.event("evt_tls_h2", "invoice.paid");
    let uri = format!("https://localhost{}", source.path);
    let (status, _) = post_h2(stream, request(&source, &event, &uri)).await;
    assert_eq!(status, 200);

    // The same event again over h2 is a duplicate answered by hookgate.
    let stream = connect(gate.public_addr(), &root, b"h2")
        .await
        .expect("TLS connect");
    let (status, body) = post_h2(stream, request(&source, &event, &uri)).await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"duplicate":true,"event_id":"evt_tls_h2"}"#)
    );

    upstream.wait_for(2).await;
    let ids: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.header("x-verified-event-id"))
        .collect();
    assert_eq!(ids, vec!["evt_tls_h1", "evt_tls_h2"]);
}

#[tokio::test]
async fn a_renewed_certificate_is_served_without_a_restart() {
    let upstream = Upstream::start().await;
    let source = SourceSpec::github();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut gate, old_root) = tls_gate(&upstream, &source, dir.path()).await;
    connect(gate.public_addr(), &old_root, b"http/1.1")
        .await
        .expect("the first certificate is served");

    let (_, _, new_root) = write_identity(dir.path());
    let stream = eventually("the renewed certificate is served", || async {
        connect(gate.public_addr(), &new_root, b"http/1.1")
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let event = source.event("delivery-after-renewal", "push");
    let (status, _) = post_http1(stream, request(&source, &event, &source.path)).await;
    assert_eq!(status, 200);
    assert!(!gate.has_exited(), "a certificate renewal is not a restart");
    assert!(
        connect(gate.public_addr(), &old_root, b"http/1.1")
            .await
            .is_err(),
        "new connections get the renewed certificate only"
    );
}

#[tokio::test]
async fn a_bad_certificate_is_refused_with_its_file_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, key, _) = write_identity(dir.path());
    let bogus = dir.path().join("bogus.crt");
    std::fs::write(&bogus, "this is not a certificate\n").expect("write bogus cert");
    let config = with_tls(
        ConfigBuilder::new("http://127.0.0.1:3000")
            .source(SourceSpec::github())
            .toml(),
        &bogus,
        &key,
    );
    let path = dir.path().join("hookgate.toml");
    std::fs::write(&path, config).expect("write config");

    let (status, _, stderr) = run_cli(&["check", "--config", &path.display().to_string()]).await;
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bogus.crt"),
        "the file at fault is named: {stderr}"
    );
}
