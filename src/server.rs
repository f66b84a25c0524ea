//! Listeners: the accept loop, HTTP/1.1 and h2 on one port, graceful drain.
//!
//! The loop stops accepting when `shutdown` fires, then lets every open
//! connection finish its in-flight requests (up to `grace`) before returning.
//!
//! # Limits
//!
//! A flood must degrade into refusals, not into memory: each listener holds at
//! most [`Limits::max_connections`] connections. One more is answered
//! `503 {"error":"overloaded"}` with `Retry-After` straight from the accept
//! loop (over TLS it is closed instead: answering would need a handshake) and
//! closed, before anything is read or parsed. A client must send its first
//! bytes, and then its request headers, within [`Limits::header_read_timeout`]
//! (an idle keep-alive connection is closed after the same time); the body's
//! own bound is in the pipeline. Request headers are capped at
//! [`MAX_HEADER_BYTES`] (larger: `431`).
//!
//! # Connection lifetimes
//!
//! No client holds a slot for ever, whatever it does ([`Lifetimes`]):
//!
//! - a write to the client that makes no progress for `write_timeout` ends the
//!   connection (a client that never reads its answers, pipelined or not);
//! - a connection with no request in flight for `idle_timeout` is closed
//!   gracefully (HTTP/2 clients that answer pings but send nothing: `GOAWAY`);
//! - a connection older than `max_connection_age` is closed gracefully after
//!   the requests in flight (`GOAWAY`, or `Connection: close` on the next answer);
//! - a connection told to close (idle, age, or the server's drain) is dropped
//!   `write_timeout` after it was told, or after its last request in flight
//!   ended if that is later, whether or not the client took the hint: an h2
//!   client that never acknowledges the `GOAWAY`'s ping, or an HTTP/1.1
//!   client that never reads its last answer, cannot keep its slot. Requests
//!   in flight are never cut by it; they have bounds of their own (the body
//!   read, `upstream_timeout`).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

pub use crate::config::Lifetimes;
use crate::outcome::{Body, Outcome};
use crate::tls::SharedAcceptor;

/// A TLS handshake must finish within this (a slow client costs a timer, not a worker).
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest request head (request line and headers) read over HTTP/1; hyper
/// answers `431` beyond it. hyper's default is about 400 KiB, which times
/// `max_connections` is more memory than a sidecar has; 64 KiB is twice
/// what common proxies allow. (HTTP/2 advertises hyper's 16 KiB header list.)
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Refused connections being answered at once; beyond this they are closed
/// without an answer, so refusing stays cheap under any flood.
const REJECTING_AT_ONCE: usize = 64;

/// How long a refused connection gets to take its `503` before it is closed.
const REJECT_LINGER: Duration = Duration::from_secs(1);

/// HTTP/2 pings an idle connection this often, and drops it when a ping goes
/// unanswered for [`H2_PING_TIMEOUT`], so dead peers give their slot back.
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// What one listener allows its clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Open connections beyond which a new one is refused.
    pub max_connections: usize,
    /// Time for a client's first bytes, and for each request's headers.
    pub header_read_timeout: Duration,
    /// Open connections now (a gauge the metrics expose).
    pub open: Gauge,
    /// Connections refused at the limit.
    pub rejected: Counter,
    /// How long a connection may stall, idle and live.
    pub lifetimes: Lifetimes,
}

/// Held by a connection's task for as long as the connection is open.
struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
}

impl Slot {
    fn new(permit: OwnedSemaphorePermit, open: &Gauge) -> Slot {
        open.inc();
        Slot {
            _permit: permit,
            open: open.clone(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// Serves `handler` on `listener` (over TLS when `tls` is set) until
/// `shutdown`, then drains for up to `grace`.
pub async fn serve<H, F>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<SharedAcceptor>,
    handler: H,
    shutdown: CancellationToken,
    grace: Duration,
    limits: Limits,
) where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING_INTERVAL)
        .keep_alive_timeout(H2_PING_TIMEOUT);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let rejecting = Arc::new(Semaphore::new(REJECTING_AT_ONCE));
    let first_bytes = limits.header_read_timeout;
    let lifetimes = limits.lifetimes;

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
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(permit) => Slot::new(permit, &limits.open),
            Err(_) => {
                limits.rejected.inc();
                refuse(stream, tls.is_some(), &rejecting);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let handler = handler.clone();
        let service = {
            let activity = Arc::clone(&activity);
            service_fn(move |request: Request<Incoming>| {
                let busy = Busy::new(&activity);
                // Boxed: hyper keeps room for one request future in every
                // connection, idle or not, and a delivery's is kilobytes.
                let response = Box::pin(handler(request, peer));
                async move {
                    let response = response.await;
                    drop(busy);
                    Ok::<_, Infallible>(response)
                }
            })
        };
        let stream = WriteDeadline::new(stream, lifetimes.write_timeout);
        let closing = shutdown.clone().cancelled_owned();
        match &tls {
            None => {
                let stream = FirstBytes::new(stream, first_bytes);
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(Served::new(
                    connection.into_owned(),
                    slot,
                    name,
                    activity,
                    lifetimes,
                    closing,
                ));
            }
            Some(acceptor) => {
                // The handshake runs in the connection's task so a slow client
                // never holds up the accept loop.
                let acceptor = acceptor.load_full();
                let builder = builder.clone();
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
                    let stream = FirstBytes::new(stream, first_bytes);
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    Served::new(
                        connection.into_owned(),
                        slot,
                        name,
                        activity,
                        lifetimes,
                        closing,
                    )
                    .await;
                });
            }
        }
    }

    drop(listener);
    // Every connection holds a slot until its task ends: all slots back means
    // every connection finished its requests and closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = slots.acquire_many(all) => {
            tracing::info!(listener = name, "drained");
        }
        _ = tokio::time::sleep(grace) => {
            tracing::warn!(listener = name, grace = ?grace, "grace period over, closing open connections");
        }
    }
}

/// Requests in flight on one connection, and when the last one ended.
struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds from `born` to the end of the latest request.
    last_done_ms: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            born: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_done_ms: AtomicU64::new(0),
        }
    }
}

/// Held by a request's future: the connection is not idle while it lives.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: &Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let since = self.0.born.elapsed();
        let ms = u64::try_from(since.as_millis()).unwrap_or(u64::MAX);
        self.0.last_done_ms.store(ms, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection's task polls: the connection, the timer that enforces
/// its idle and age bounds, and the server's shutdown, any of which starts a
/// graceful close; then the same timer bounds the close, and the connection
/// is dropped when it runs out. The slot goes back when the task ends. A struct, not
/// an `async` block: a block keeps the connection future both as a captured
/// value and as the value it awaits, doubling every idle connection's task.
struct Served<C> {
    connection: Pin<Box<C>>,
    _slot: Slot,
    listener: &'static str,
    activity: Arc<Activity>,
    lifetimes: Lifetimes,
    /// Before the close: fires at the next moment the idle or age bound may
    /// be reached. After: at the next moment the close deadline may be reached.
    check: Pin<Box<Sleep>>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    /// When a graceful close was asked for; from then on the connection has
    /// until [`Served::close_deadline`] to finish on its own.
    told: Option<Instant>,
}

/// A connection hyper can be asked to close gracefully.
trait GracefulConnection: Future {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S, E, B> GracefulConnection for auto::Connection<'static, I, S, E>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: auto::HttpServerConnExec<S::Future, B>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        auto::Connection::graceful_shutdown(self);
    }
}

impl<C> Served<C> {
    fn new(
        connection: C,
        slot: Slot,
        listener: &'static str,
        activity: Arc<Activity>,
        lifetimes: Lifetimes,
        shutdown: WaitForCancellationFutureOwned,
    ) -> Served<C> {
        let born = activity.born;
        let first = lifetimes.idle_timeout.min(lifetimes.max_connection_age);
        Served {
            connection: Box::pin(connection),
            _slot: slot,
            listener,
            activity,
            lifetimes,
            check: Box::pin(tokio::time::sleep_until(born + first)),
            shutdown: Box::pin(shutdown),
            told: None,
        }
    }

    /// When the connection is due to close, or `None` if that is now.
    fn due(&self) -> Option<Instant> {
        let born = self.activity.born;
        let now = Instant::now();
        let too_old = born + self.lifetimes.max_connection_age;
        if now >= too_old {
            return None;
        }
        let idle_from = if self.activity.in_flight.load(Ordering::Relaxed) > 0 {
            now
        } else {
            born + Duration::from_millis(self.activity.last_done_ms.load(Ordering::Relaxed))
        };
        let idle_until = idle_from + self.lifetimes.idle_timeout;
        if now >= idle_until {
            return None;
        }
        Some(idle_until.min(too_old))
    }

    /// When a connection told to close at `told` is dropped, or `None` if
    /// that is now: `write_timeout` after `told` or after the end of its last
    /// request, whichever is later. While a request is in flight the
    /// deadline is at least `write_timeout` away, and is looked at again then.
    fn close_deadline(&self, told: Instant) -> Option<Instant> {
        let now = Instant::now();
        let grace = self.lifetimes.write_timeout;
        if self.activity.in_flight.load(Ordering::Relaxed) > 0 {
            return Some(now + grace);
        }
        let last_done = self.activity.born
            + Duration::from_millis(self.activity.last_done_ms.load(Ordering::Relaxed));
        let at = told.max(last_done) + grace;
        (now < at).then_some(at)
    }
}

impl<C, E> Future for Served<C>
where
    C: GracefulConnection<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.told.is_none() {
            let mut close = this.shutdown.as_mut().poll(cx).is_ready();
            while !close && this.check.as_mut().poll(cx).is_ready() {
                match this.due() {
                    Some(at) => this.check.as_mut().reset(at),
                    None => close = true,
                }
            }
            if close {
                let now = Instant::now();
                this.told = Some(now);
                this.check
                    .as_mut()
                    .reset(now + this.lifetimes.write_timeout);
                this.connection.as_mut().graceful_shutdown();
            }
        }
        if let Poll::Ready(ended) = this.connection.as_mut().poll(cx) {
            if let Err(e) = ended {
                tracing::debug!(listener = this.listener, error = %e, "connection ended with an error");
            }
            return Poll::Ready(());
        }
        if let Some(told) = this.told {
            while this.check.as_mut().poll(cx).is_ready() {
                match this.close_deadline(told) {
                    Some(at) => this.check.as_mut().reset(at),
                    None => {
                        // Dropping the connection closes the socket: the
                        // client did not finish within write_timeout.
                        tracing::debug!(
                            listener = this.listener,
                            "connection told to close did not finish in time; dropped"
                        );
                        return Poll::Ready(());
                    }
                }
            }
        }
        Poll::Pending
    }
}

/// A stream whose writes fail once one has made no progress for `timeout`:
/// a client that stops reading gives its connection back instead of holding
/// it (and the answer buffered for it) for ever.
struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Armed while a write is pending; `None` while writes go through.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Passes a write's result through, arming the deadline on `Pending` and
    /// disarming it on progress; a deadline passed is a `TimedOut` error.
    fn guard<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let deadline = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client read nothing within the write timeout",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.guard(cx, result)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.guard(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.guard(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.guard(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Answers a connection over the limit with `503 overloaded` and closes it,
/// in a task of its own so the accept loop never waits on a client. At most
/// [`REJECTING_AT_ONCE`] are answered at a time; beyond that, and over TLS
/// (answering would cost a handshake), the connection is just closed.
fn refuse(mut stream: TcpStream, tls: bool, rejecting: &Arc<Semaphore>) {
    if tls {
        return;
    }
    let Ok(permit) = Arc::clone(rejecting).try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let answer = async {
            stream.write_all(&Outcome::Overloaded.http1_close()).await?;
            stream.shutdown().await?;
            // Read what the client sent until it closes, so the close is a FIN
            // after our answer, not a reset that could discard it.
            let mut sink = [0u8; 4096];
            let mut budget: usize = 64 * 1024;
            while budget > 0 {
                let n = stream.read(&mut sink).await?;
                if n == 0 {
                    break;
                }
                budget = budget.saturating_sub(n);
            }
            Ok::<_, io::Error>(())
        };
        let _ = tokio::time::timeout(REJECT_LINGER, answer).await;
    });
}

/// The HTTP/2 connection preface. Until a client has sent it, or a byte that
/// departs from it, the auto builder cannot tell HTTP/1 from HTTP/2.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A stream whose reads fail once a deadline passes, until the client has
/// sent enough for its protocol to be known. hyper's header timeout starts
/// only after that, so without this a client that connects and sends nothing
/// (or a byte or two) would hold its connection slot forever.
struct FirstBytes<S> {
    inner: S,
    /// Bytes of the HTTP/2 preface matched so far and the deadline; `None`
    /// (the timer dropped) once the protocol is known.
    pending: Option<(usize, Pin<Box<tokio::time::Sleep>>)>,
}

impl<S> FirstBytes<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        FirstBytes {
            inner,
            pending: Some((0, Box::pin(tokio::time::sleep(timeout)))),
        }
    }
}

/// How far `new` bytes take a preface match of `matched` bytes: `None` once
/// the protocol is known (a byte departs from the preface, the preface is
/// complete, or the client closed).
fn advance_preface(matched: usize, new: &[u8]) -> Option<usize> {
    if new.is_empty() {
        return None;
    }
    let mut m = matched;
    for &b in new {
        if H2_PREFACE.get(m) != Some(&b) {
            return None;
        }
        m += 1;
    }
    (m < H2_PREFACE.len()).then_some(m)
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstBytes<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some((matched, deadline)) = &mut this.pending else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no request started within the header read timeout",
            )));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        match advance_preface(*matched, &buf.filled()[before..]) {
            Some(m) => *matched = m,
            None => this.pending = None,
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstBytes<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_is_known_as_soon_as_a_byte_departs_from_the_preface() {
        assert_eq!(advance_preface(0, b"P"), Some(1));
        assert_eq!(advance_preface(1, b"RI * "), Some(6));
        assert_eq!(advance_preface(0, b"PO"), None, "POST is HTTP/1");
        assert_eq!(advance_preface(0, b"GET / HTTP/1.1"), None);
        assert_eq!(
            advance_preface(0, H2_PREFACE),
            None,
            "a full preface is HTTP/2"
        );
        assert_eq!(advance_preface(3, b""), None, "the client closed");
    }

    /// A client that connects and sends nothing is cut off at the deadline;
    /// one that sent a request line is left to hyper's own timeouts.
    #[tokio::test(start_paused = true)]
    async fn silent_clients_time_out_talking_ones_do_not() {
        let (client, server) = tokio::io::duplex(64);
        let mut silent = FirstBytes::new(server, Duration::from_secs(10));
        let mut buf = [0u8; 8];
        let err = silent.read(&mut buf).await.err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::TimedOut));
        drop(client);

        let (mut client, server) = tokio::io::duplex(64);
        let mut talking = FirstBytes::new(server, Duration::from_secs(10));
        client
            .write_all(b"POST /")
            .await
            .expect("write to a duplex");
        let n = talking.read(&mut buf).await.expect("bytes are there");
        assert_eq!(&buf[..n], b"POST /");
        tokio::time::sleep(Duration::from_secs(60)).await;
        client.write_all(b"x").await.expect("write to a duplex");
        let n = talking.read(&mut buf).await.expect("no deadline any more");
        assert_eq!(&buf[..n], b"x");
    }

    /// A connection that never finishes once asked to close gracefully, as
    /// an h2 client that never acknowledges the `GOAWAY`'s ping.
    struct Stubborn {
        told: Arc<std::sync::Mutex<Option<Instant>>>,
    }

    impl Future for Stubborn {
        type Output = Result<(), &'static str>;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
            Poll::Pending
        }
    }

    impl GracefulConnection for Stubborn {
        fn graceful_shutdown(self: Pin<&mut Self>) {
            let mut told = self.told.lock().expect("told lock");
            told.get_or_insert_with(Instant::now);
        }
    }

    fn stubborn(
        activity: &Arc<Activity>,
        shutdown: &CancellationToken,
    ) -> (
        Served<Stubborn>,
        Arc<std::sync::Mutex<Option<Instant>>>,
        Arc<Semaphore>,
    ) {
        let told = Arc::new(std::sync::Mutex::new(None));
        let slots = Arc::new(Semaphore::new(1));
        let permit = Arc::clone(&slots)
            .try_acquire_owned()
            .expect("one slot free");
        let lifetimes = Lifetimes {
            write_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(5),
            max_connection_age: Duration::from_secs(300),
        };
        let served = Served::new(
            Stubborn {
                told: Arc::clone(&told),
            },
            Slot::new(permit, &Gauge::default()),
            "test",
            Arc::clone(activity),
            lifetimes,
            shutdown.clone().cancelled_owned(),
        );
        (served, told, slots)
    }

    /// Told to close at the idle bound, a connection that does not finish is
    /// dropped write_timeout later, and its slot is free again.
    #[tokio::test(start_paused = true)]
    async fn a_connection_that_ignores_the_close_is_dropped_after_write_timeout() {
        let activity = Arc::new(Activity::new());
        let shutdown = CancellationToken::new();
        let (served, told, slots) = stubborn(&activity, &shutdown);
        let start = Instant::now();
        served.await;
        let told = told.lock().expect("told lock").expect("asked to close");
        assert_eq!(told - start, Duration::from_secs(5), "the idle bound");
        let dropped = start.elapsed();
        assert!(
            dropped >= Duration::from_secs(6) && dropped < Duration::from_millis(6100),
            "{dropped:?}"
        );
        assert_eq!(slots.available_permits(), 1);
    }

    /// The drain's close is bounded the same way; a request in flight is not
    /// cut: the bound runs from its end.
    #[tokio::test(start_paused = true)]
    async fn the_bound_runs_from_the_end_of_the_last_request_in_flight() {
        let activity = Arc::new(Activity::new());
        let shutdown = CancellationToken::new();
        let (served, told, _slots) = stubborn(&activity, &shutdown);
        let busy = Busy::new(&activity);
        let start = Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(3500)).await;
            drop(busy);
        });
        shutdown.cancel();
        served.await;
        let told = told.lock().expect("told lock").expect("asked to close");
        assert_eq!(told, start, "told at once by the drain");
        let dropped = start.elapsed();
        assert!(
            dropped >= Duration::from_millis(4500) && dropped < Duration::from_millis(4600),
            "{dropped:?}"
        );
    }
}
