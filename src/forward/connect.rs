//! Opening a connection to the app: name resolution, TCP, and TLS for
//! `https://` upstreams; plus the cheap "is this idle connection still open?"
//! check the pool makes before reusing one.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::uri::Uri;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// How long one TCP connection attempt may take, per resolved address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    // The URI itself is left out: its user info could hold a password.
    #[error("the upstream is not an http:// or https:// URI with a host")]
    NotAnOrigin,
    #[error("resolving {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("resolving {host}: no address")]
    NoAddress { host: String },
    #[error("connecting to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("connecting to {addr}: no answer within {CONNECT_TIMEOUT:?}")]
    ConnectTimeout { addr: SocketAddr },
    #[error("{host:?} is not a valid TLS server name")]
    ServerName { host: String },
    #[error("TLS handshake with {host}: {source}")]
    Handshake { host: String, source: io::Error },
}

/// Where connections go: scheme, host and port of the upstream URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Origin<'a> {
    pub tls: bool,
    /// The host without IPv6 brackets, as resolved and as the TLS server name.
    pub host: &'a str,
    pub port: u16,
    /// `host[:port]` as the URI wrote it (user info left out): the pool's key
    /// and the `Host` header when the sender sent none.
    pub authority: &'a str,
}

impl<'a> Origin<'a> {
    pub fn of(uri: &'a Uri) -> Result<Origin<'a>, Error> {
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(Error::NotAnOrigin),
        };
        let authority = uri.authority().ok_or(Error::NotAnOrigin)?.as_str();
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let host = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .filter(|h| !h.is_empty())
            .ok_or(Error::NotAnOrigin)?;
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Origin {
            tls,
            host,
            port,
            authority,
        })
    }
}

/// A connection to the app, plain or TLS.
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Whether an idle connection can carry another request: the app has
    /// neither closed it nor sent anything unasked. Never waits: the stream is
    /// polled once, and "nothing to read yet" is the healthy answer.
    ///
    /// A plain socket is peeked. Over TLS the stream is read instead: the
    /// app's `close_notify` may have come in the same read as its last
    /// response and already sit in rustls's buffers, where a peek at the
    /// socket cannot see it, but a read returns it as the end of the stream.
    /// Whatever a read finds ends the connection anyway, so consuming it costs
    /// nothing.
    pub fn is_open_and_quiet(&mut self) -> bool {
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        let mut cx = Context::from_waker(Waker::noop());
        // Ready(Ok) with nothing read is the app's FIN (or close_notify),
        // Ready(Ok) with bytes is data nobody asked for, Ready(Err) a reset:
        // the connection is done in every case.
        match self {
            Stream::Plain(tcp) => matches!(tcp.poll_peek(&mut cx, &mut buf), Poll::Pending),
            Stream::Tls(tls) => matches!(
                Pin::new(tls.as_mut()).poll_read(&mut cx, &mut buf),
                Poll::Pending
            ),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Opens a new connection to `origin`: every resolved address in turn, each
/// with [`CONNECT_TIMEOUT`], then the TLS handshake for `https://`.
pub(super) async fn connect(origin: &Origin<'_>, tls: &TlsConnector) -> Result<Stream, Error> {
    let addrs = tokio::net::lookup_host((origin.host, origin.port))
        .await
        .map_err(|source| Error::Resolve {
            host: origin.host.to_owned(),
            source,
        })?;
    let mut last = None;
    let mut tcp = None;
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                tcp = Some(stream);
                break;
            }
            Ok(Err(source)) => last = Some(Error::Connect { addr, source }),
            Err(_) => last = Some(Error::ConnectTimeout { addr }),
        }
    }
    let Some(tcp) = tcp else {
        return Err(last.unwrap_or_else(|| Error::NoAddress {
            host: origin.host.to_owned(),
        }));
    };
    // Requests are written whole; there is nothing to gain from Nagle's delay.
    let _ = tcp.set_nodelay(true);
    if !origin.tls {
        return Ok(Stream::Plain(tcp));
    }
    let name = ServerName::try_from(origin.host.to_owned()).map_err(|_| Error::ServerName {
        host: origin.host.to_owned(),
    })?;
    let stream = tls
        .connect(name, tcp)
        .await
        .map_err(|source| Error::Handshake {
            host: origin.host.to_owned(),
            source,
        })?;
    Ok(Stream::Tls(Box::new(stream)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_from_upstream_uris() {
        let cases = [
            (
                "http://127.0.0.1:3000",
                false,
                "127.0.0.1",
                3000,
                "127.0.0.1:3000",
            ),
            ("http://app", false, "app", 80, "app"),
            (
                "https://app.internal/",
                true,
                "app.internal",
                443,
                "app.internal",
            ),
            ("http://[::1]:8080", false, "::1", 8080, "[::1]:8080"),
            ("http://user:pw@app:3000", false, "app", 3000, "app:3000"),
        ];
        for (uri, tls, host, port, authority) in cases {
            let uri: Uri = uri.parse().expect("uri");
            let origin = Origin::of(&uri).expect("origin");
            assert_eq!(
                origin,
                Origin {
                    tls,
                    host,
                    port,
                    authority
                },
                "{uri}"
            );
        }
        let relative: Uri = "/just/a/path".parse().expect("uri");
        assert!(Origin::of(&relative).is_err());
        let ftp: Uri = "ftp://app/".parse().expect("uri");
        assert!(Origin::of(&ftp).is_err());
    }

    #[tokio::test]
    async fn a_refused_port_names_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let uri: Uri = format!("http://{addr}").parse().expect("uri");
        let origin = Origin::of(&uri).expect("origin");
        let tls = TlsConnector::from(std::sync::Arc::new(crate::tls::client_config()));
        let Err(e) = connect(&origin, &tls).await else {
            panic!("connected to a closed port");
        };
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("connecting to {addr}: ")),
            "{text}"
        );
    }

    #[tokio::test]
    async fn localhost_resolves() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let uri: Uri = format!("http://localhost:{port}").parse().expect("uri");
        let origin = Origin::of(&uri).expect("origin");
        let tls = TlsConnector::from(std::sync::Arc::new(crate::tls::client_config()));
        // localhost may resolve to ::1 first, where nothing listens: the next
        // address is tried.
        let mut stream = connect(&origin, &tls).await.expect("connects");
        let (_accepted, _) = listener.accept().await.expect("accept");
        assert!(stream.is_open_and_quiet());
    }

    #[tokio::test]
    async fn a_closed_or_chatty_idle_connection_is_not_reused() {
        use tokio::io::AsyncWriteExt;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let uri: Uri = format!("http://{addr}").parse().expect("uri");
        let origin = Origin::of(&uri).expect("origin");
        let tls = TlsConnector::from(std::sync::Arc::new(crate::tls::client_config()));

        let mut quiet = connect(&origin, &tls).await.expect("connects");
        let (_quiet_peer, _) = listener.accept().await.expect("accept");

        let mut closed = connect(&origin, &tls).await.expect("connects");
        let (closed_peer, _) = listener.accept().await.expect("accept");
        drop(closed_peer);

        let mut chatty = connect(&origin, &tls).await.expect("connects");
        let (mut chatty_peer, _) = listener.accept().await.expect("accept");
        chatty_peer
            .write_all(b"HTTP/1.1 408 ")
            .await
            .expect("write");

        // The FIN and the bytes take a moment to land; bounded wait.
        for _ in 0..200 {
            if !closed.is_open_and_quiet() && !chatty.is_open_and_quiet() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(quiet.is_open_and_quiet());
        assert!(!closed.is_open_and_quiet());
        assert!(!chatty.is_open_and_quiet());
    }

    /// Over TLS, an app's `close_notify` that came in the same read as its
    /// response is already inside rustls when the connection goes idle: the
    /// socket holds nothing to peek, so only a read of the stream sees it.
    #[tokio::test]
    async fn a_tls_close_notify_read_with_the_response_ends_the_connection() {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let identity = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("generate a certificate");
        let cert: CertificateDer<'static> = identity.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            identity.signing_key.serialize_der(),
        ));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .expect("server identity");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).expect("trust the certificate");
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        let app = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.expect("accept");
            let mut tls = acceptor.accept(tcp).await.expect("handshake");
            let mut request = [0u8; 5];
            tls.read_exact(&mut request).await.expect("request");
            // The answer and the close_notify in one write; the TCP connection
            // itself stays open (no FIN) until the test is done.
            tls.write_all(b"hello").await.expect("answer");
            tls.get_mut().1.send_close_notify();
            tls.flush().await.expect("flush");
            let _ = held_rx.await;
        });

        let uri: Uri = format!("https://localhost:{port}").parse().expect("uri");
        let origin = Origin::of(&uri).expect("origin");
        let connector = TlsConnector::from(Arc::new(client));
        let mut stream = connect(&origin, &connector).await.expect("connects");
        stream.write_all(b"hello").await.expect("request");
        let mut answer = [0u8; 5];
        stream.read_exact(&mut answer).await.expect("answer");
        assert_eq!(&answer, b"hello");
        // Give the close_notify time to have arrived with the answer.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !stream.is_open_and_quiet(),
            "a connection the app closed with close_notify must not be reused"
        );
        let _ = held_tx.send(());
        app.await.expect("the app task");
    }
}
