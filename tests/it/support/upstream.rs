//! A recording upstream: the application hookgate forwards to.
//!
//! A real hyper server on `127.0.0.1:0` that records every request it receives
//! (method, URI, headers, body bytes) before answering, and answers with a
//! reply tests can change while it runs: status, headers, body, a delay, or a
//! hold that keeps every request waiting until the test releases it (so "a
//! request is in flight" is a state the test controls, not a race).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::{APP_OK, WAIT};

/// One request as the upstream received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// When the request's head arrived.
    pub at: std::time::Instant,
}

impl Recorded {
    /// The single value of header `name`, as a string; panics when absent or repeated.
    pub fn header(&self, name: &str) -> String {
        let all: Vec<_> = self.headers.get_all(name).iter().collect();
        assert_eq!(
            all.len(),
            1,
            "upstream expected exactly one {name} header, got {all:?}"
        );
        all[0]
            .to_str()
            .unwrap_or_else(|_| panic!("header {name} is not visible ASCII"))
            .to_owned()
    }

    /// Every value of header `name`, in order.
    pub fn header_all(&self, name: &str) -> Vec<String> {
        self.headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    }

    pub fn has_header(&self, name: &str) -> bool {
        self.headers.contains_key(name)
    }

    /// The path and query as sent on the request line.
    pub fn path_and_query(&self) -> String {
        self.uri
            .path_and_query()
            .map(|pq| pq.as_str().to_owned())
            .unwrap_or_default()
    }
}

/// What the upstream answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    /// Waits this long (after recording the request) before answering.
    pub delay: Duration,
}

impl Default for Reply {
    fn default() -> Self {
        Reply::status(200).body(APP_OK)
    }
}

impl Reply {
    pub fn status(code: u16) -> Reply {
        Reply {
            status: StatusCode::from_u16(code).expect("a valid status code"),
            headers: Vec::new(),
            body: Bytes::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Reply {
        self.body = body.into();
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

struct State {
    requests: Mutex<Vec<Recorded>>,
    reply: Mutex<Reply>,
    /// Wakes `wait_for` when a request is recorded.
    arrived: Notify,
    /// While true, every request waits (after being recorded) until it is false.
    held: watch::Sender<bool>,
}

pub struct Upstream {
    addr: SocketAddr,
    state: Arc<State>,
    /// The accept loop; it owns every connection task, so aborting it closes them all.
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Upstream {
    /// Starts an upstream on a free loopback port, answering `200 ok`.
    pub async fn start() -> Upstream {
        Upstream::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts an upstream on `addr` (e.g. a port a test saw closed first).
    pub async fn start_on(addr: SocketAddr) -> Upstream {
        let listener = TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("upstream cannot bind {addr}: {e}"));
        let addr = listener
            .local_addr()
            .expect("bound listener has an address");
        let (held, _) = watch::channel(false);
        let state = Arc::new(State {
            requests: Mutex::new(Vec::new()),
            reply: Mutex::new(Reply::default()),
            arrived: Notify::new(),
            held,
        });
        let server = tokio::spawn(serve(listener, state.clone()));
        Upstream {
            addr,
            state,
            server: Some(server),
        }
    }

    /// `http://127.0.0.1:PORT`, the `upstream` of a hookgate config.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the reply for every request from now on.
    pub fn set_reply(&self, reply: Reply) {
        *self.state.reply.lock().expect("reply lock") = reply;
    }

    /// Makes every request wait (after being recorded) until [`Upstream::release`].
    pub fn hold(&self) {
        self.state.held.send_replace(true);
    }

    /// Lets held requests (and later ones) answer.
    pub fn release(&self) {
        self.state.held.send_replace(false);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().expect("requests lock").clone()
    }

    pub fn count(&self) -> usize {
        self.state.requests.lock().expect("requests lock").len()
    }

    /// Waits (bounded) until at least `n` requests arrived; returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Recorded> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.state.arrived.notified();
            let seen = self.requests();
            if seen.len() >= n {
                return seen;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "upstream saw {} request(s) within {WAIT:?}, expected {n}: {seen:#?}",
                    seen.len()
                );
            }
        }
    }

    /// Stops listening and closes every open connection; the port is free again.
    pub async fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

async fn serve(listener: TcpListener, state: Arc<State>) {
    // Connection tasks live in this set so that aborting the accept loop drops
    // (and so closes) every connection with it.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                connections.spawn(async move {
                    let service = service_fn(move |req| handle(req, state.clone()));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let reply = state.reply.lock().expect("reply lock").clone();
    state
        .requests
        .lock()
        .expect("requests lock")
        .push(Recorded {
            at: std::time::Instant::now(),
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body,
        });
    state.arrived.notify_waiters();

    let mut held = state.held.subscribe();
    let _ = held.wait_for(|held| !*held).await;
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }

    let mut response = Response::new(Full::new(reply.body.clone()));
    *response.status_mut() = reply.status;
    for (name, value) in &reply.headers {
        response.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).expect("valid header name"),
            http::HeaderValue::from_str(value).expect("valid header value"),
        );
    }
    Ok(response)
}
