//! What hookgate asks of other servers, written once: a provider's signing
//! keys and the SNS subscription confirmation (`crate::keyfetch`), spans
//! to an OTLP collector (`crate::traces`), and `hookgate rejections`'
//! question to the admin listener. (Deliveries to the app have their own
//! connection pool in `crate::forward`.)
//!
//! - TLS is rustls with the system's roots, read once per process, plus
//!   the roots a source adds ([`tls_config`]); HTTP/1.1 only.
//! - [`exchange`] is one request on a connection of its own, bounded as a
//!   whole by a time limit (connect, TLS, the answer's last byte) and its
//!   answer by a byte limit. The connection is driven inside the call,
//!   never spawned, so a server that hangs leaves nothing behind once the
//!   time limit drops the call.
//! - [`pooled`] is hyper-util's pooled client, for a caller that sends
//!   often to one place (the trace exporter), `http://` or `https://`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Why an exchange got no usable answer. Messages name the step, never a
/// header's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("connect failed: {0}")]
    Connect(String),
    #[error("TLS failed: {0}")]
    Tls(String),
    #[error("HTTP failed: {0}")]
    Http(String),
    #[error("answer over {0} bytes")]
    TooLarge(usize),
}

/// An answer, its body read whole (within the byte limit).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The system's CA certificates, read once (the app's `https://`
/// connections trust them too: `crate::tls::client_config`).
pub(crate) fn system_roots() -> &'static rustls::RootCertStore {
    static ROOTS: OnceLock<rustls::RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::warn!(error = %e, "could not load some system CA certificates");
        }
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            tracing::warn!(
                "no system CA certificates found: https servers fail verification unless a source adds roots for them"
            );
        }
        roots
    })
}

/// A client TLS config trusting the system's roots and `extra`, TLS 1.2
/// and 1.3, offering HTTP/1.1 only.
pub fn tls_config(extra: &[CertificateDer<'static>]) -> Arc<rustls::ClientConfig> {
    let mut roots = system_roots().clone();
    roots.add_parsable_certificates(extra.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = match rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
    {
        Ok(builder) => builder,
        Err(_) => rustls::ClientConfig::builder_with_protocol_versions(&[
            &rustls::version::TLS13,
            &rustls::version::TLS12,
        ]),
    };
    let mut config = builder.with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Sends `request` to its URI's host on a connection of its own (TLS with
/// `tls` for `https://`; `http://` only when `tls` is `None`) and reads the
/// answer, all within `within`, its body at most `limit` bytes (a larger
/// `Content-Length` is refused before the body is read).
pub async fn exchange(
    request: Request<Full<Bytes>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    limit: usize,
    within: Duration,
) -> Result<Answer, Error> {
    match tokio::time::timeout(within, exchange_unbounded(request, tls, limit)).await {
        Ok(answer) => answer,
        Err(_) => Err(Error::Timeout(within)),
    }
}

async fn exchange_unbounded(
    mut request: Request<Full<Bytes>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    limit: usize,
) -> Result<Answer, Error> {
    let uri = request.uri().clone();
    let https = match (uri.scheme_str(), &tls) {
        (Some("https"), Some(_)) => true,
        (Some("http"), None) => false,
        (scheme, _) => {
            return Err(Error::Connect(format!(
                "scheme {:?} is not the one this exchange speaks",
                scheme.unwrap_or("")
            )));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| Error::Connect("the URL names no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| Error::Connect(e.to_string()))?;
    // The request goes out in origin form, with the authority as `Host`.
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_else(|| host.clone());
    let target: Uri = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse()
        .map_err(|e: http::uri::InvalidUri| Error::Http(e.to_string()))?;
    *request.uri_mut() = target;
    if let Ok(value) = http::HeaderValue::from_str(&authority) {
        request.headers_mut().insert(http::header::HOST, value);
    }
    match tls {
        Some(config) if https => {
            let name = ServerName::try_from(host)
                .map_err(|e| Error::Tls(format!("host is not a TLS server name: {e}")))?;
            let stream = TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| Error::Tls(e.to_string()))?;
            over(TokioIo::new(stream), request, limit).await
        }
        _ => over(TokioIo::new(tcp), request, limit).await,
    }
}

/// One HTTP/1.1 exchange on `io`, the connection driven here.
async fn over<T>(io: T, request: Request<Full<Bytes>>, limit: usize) -> Result<Answer, Error>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| Error::Http(e.to_string()))?;
    let exchange = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| Error::Http(e.to_string()))?;
        let declared = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > limit as u64) {
            return Err(Error::TooLarge(limit));
        }
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    Error::TooLarge(limit)
                } else {
                    Error::Http(e.to_string())
                }
            })?
            .to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    let mut connection = std::pin::pin!(connection);
    let mut exchange = std::pin::pin!(exchange);
    let mut connection_done = false;
    loop {
        tokio::select! {
            result = &mut exchange => return result,
            _ = &mut connection, if !connection_done => connection_done = true,
        }
    }
}

/// hyper-util's pooled client over `http://` and `https://` (the system's
/// roots), its idle connections closed after 30 s.
pub type Pooled = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A [`Pooled`] client.
pub fn pooled() -> Pooled {
    // The connector offers ALPN itself (HTTP/1.1 only, `enable_http1`).
    let mut config = (*tls_config(&[])).clone();
    config.alpn_protocols.clear();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server on loopback that answers one connection with `answer`
    /// (or never, when `None`), and hands back what it read.
    async fn serve_once(
        answer: Option<&'static [u8]>,
    ) -> (std::net::SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("test setup");
        let addr = listener.local_addr().expect("test setup");
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("test setup");
            let mut read = Vec::new();
            let mut buf = [0u8; 1024];
            while !read.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.expect("test setup");
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&buf[..n]);
            }
            match answer {
                Some(answer) => socket.write_all(answer).await.expect("test setup"),
                None => tokio::time::sleep(Duration::from_secs(5)).await,
            }
            read
        });
        (addr, task)
    }

    fn get(addr: std::net::SocketAddr) -> Request<Full<Bytes>> {
        Request::get(format!("http://{addr}/keys?x=1"))
            .body(Full::new(Bytes::new()))
            .expect("test setup")
    }

    #[tokio::test]
    async fn an_answer_is_read_and_the_request_goes_in_origin_form_with_its_host() {
        let (addr, seen) =
            serve_once(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")).await;
        let answer = exchange(get(addr), None, 64, Duration::from_secs(2))
            .await
            .expect("test setup");
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(&answer.body[..], b"hello");
        let seen = String::from_utf8(seen.await.expect("test setup")).expect("test setup");
        assert!(seen.starts_with("GET /keys?x=1 HTTP/1.1\r\n"), "{seen}");
        assert!(
            seen.to_ascii_lowercase()
                .contains(&format!("host: {addr}\r\n")),
            "{seen}"
        );
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_declared_or_not() {
        let (addr, _) = serve_once(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")).await;
        let e = exchange(get(addr), None, 64, Duration::from_secs(2))
            .await
            .expect_err("an error");
        assert_eq!(e, Error::TooLarge(64));
        let (addr, _) = serve_once(Some(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n50\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n0\r\n\r\n",
        ))
        .await;
        let e = exchange(get(addr), None, 64, Duration::from_secs(2))
            .await
            .expect_err("an error");
        assert_eq!(e, Error::TooLarge(64));
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_a_timeout() {
        let (addr, _) = serve_once(None).await;
        let e = exchange(get(addr), None, 64, Duration::from_millis(300))
            .await
            .expect_err("an error");
        assert_eq!(e, Error::Timeout(Duration::from_millis(300)));
    }

    #[tokio::test]
    async fn the_pooled_client_builds_on_the_shared_tls_config() {
        // hyper-rustls refuses a config that already names ALPN protocols.
        let client = pooled();
        let (addr, _) = serve_once(Some(b"HTTP/1.1 204 No Content\r\n\r\n")).await;
        let answer = client
            .request(get(addr))
            .await
            .expect("an answer from loopback");
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    }

    #[tokio::test]
    async fn the_scheme_must_match_the_tls_asked_for() {
        let request = Request::get("https://127.0.0.1:1/")
            .body(Full::new(Bytes::new()))
            .expect("test setup");
        let e = exchange(request, None, 64, Duration::from_secs(1))
            .await
            .expect_err("an error");
        assert!(matches!(e, Error::Connect(_)), "{e:?}");
        let request = Request::get("http://127.0.0.1:1/")
            .body(Full::new(Bytes::new()))
            .expect("test setup");
        let e = exchange(request, Some(tls_config(&[])), 64, Duration::from_secs(1))
            .await
            .expect_err("an error");
        assert!(matches!(e, Error::Connect(_)), "{e:?}");
    }
}
