//! Listeners: the accept loop, HTTP/1.1 and h2 on one port, graceful drain.
//!
//! The loop stops accepting when `shutdown` fires, then lets every open
//! connection finish its in-flight requests (up to `grace`) before returning.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::outcome::Body;
use crate::tls::SharedAcceptor;

/// A sender has this long to send its request headers (slow clients cost a
/// timer, not a worker).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS handshake must finish within this, for the same reason.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `handler` on `listener` (over TLS when `tls` is set) until
/// `shutdown`, then drains for up to `grace`.
pub async fn serve<H, F>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<SharedAcceptor>,
    handler: H,
    shutdown: CancellationToken,
    grace: Duration,
) where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();

    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off, don't spin.
                    tracing::warn!(listener = name, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let service = service_fn(move |request: Request<Incoming>| {
            let response = handler(request, peer);
            async move { Ok::<_, Infallible>(response.await) }
        });
        match &tls {
            None => {
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!(listener = name, error = %e, "connection ended with an error");
                    }
                });
            }
            Some(acceptor) => {
                // The handshake runs in the connection's task so a slow client
                // never holds up the accept loop.
                let acceptor = acceptor.load_full();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let handshake =
                        tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    let stream = match handshake {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => {
                            tracing::debug!(listener = name, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(listener = name, "TLS handshake timed out");
                            return;
                        }
                    };
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    if let Err(e) = watcher.watch(connection.into_owned()).await {
                        tracing::debug!(listener = name, error = %e, "connection ended with an error");
                    }
                });
            }
        }
    }

    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {
            tracing::info!(listener = name, "drained");
        }
        _ = tokio::time::sleep(grace) => {
            tracing::warn!(listener = name, grace = ?grace, "grace period over, closing open connections");
        }
    }
}
