//! An app on raw sockets that records the exact bytes of every request it
//! receives and answers with exactly the bytes a test scripts, including
//! bytes nobody asked for: a second response after the first, a body after a
//! `204`, a `Content-Length` beside chunked framing.
//!
//! hookgate always frames its requests with one `Content-Length`, so a request
//! here is its head up to the blank line plus that many body bytes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::WAIT;

/// The app's answer to one request.
pub struct Scripted {
    /// Written as soon as the request is read.
    pub wire: Vec<u8>,
    /// Written this long after `wire`, on the same connection: bytes that
    /// answer no request.
    pub then: Option<(Duration, Vec<u8>)>,
}

impl Scripted {
    pub fn wire(wire: impl Into<Vec<u8>>) -> Scripted {
        Scripted {
            wire: wire.into(),
            then: None,
        }
    }

    /// `status` with a short text body and a correct `Content-Length`.
    pub fn status(status: u16) -> Scripted {
        let body = format!("app said {status}");
        Scripted::wire(format!(
            "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ))
    }

    pub fn then(mut self, after: Duration, stray: impl Into<Vec<u8>>) -> Scripted {
        self.then = Some((after, stray.into()));
        self
    }
}

type Script = dyn Fn(usize) -> Scripted + Send + Sync;

/// One request as it arrived, byte for byte.
#[derive(Debug, Clone)]
pub struct RawRequest {
    pub bytes: Vec<u8>,
    /// Which accepted connection it came on (0-based).
    pub connection: usize,
}

impl RawRequest {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The request line.
    pub fn request_line(&self) -> String {
        self.text()
            .split("\r\n")
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// Every header line's name and value, as sent (name case kept).
    pub fn header_lines(&self) -> Vec<(String, String)> {
        let text = self.text();
        let head = text.split("\r\n\r\n").next().unwrap_or_default().to_owned();
        head.split("\r\n")
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.to_owned(), v.trim().to_owned()))
            .collect()
    }

    /// Values of header `name` (case-insensitive), in order.
    pub fn header(&self, name: &str) -> Vec<String> {
        self.header_lines()
            .into_iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .collect()
    }
}

pub struct RawApp {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<RawRequest>>>,
    accepts: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl RawApp {
    /// Starts on `127.0.0.1:0`; `script(n)` answers the n-th request (from 0).
    pub async fn start(script: impl Fn(usize) -> Scripted + Send + Sync + 'static) -> RawApp {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("app binds a loopback port");
        let addr = listener.local_addr().expect("app address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accepts = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let server = tokio::spawn(accept_loop(
            listener,
            script,
            Arc::clone(&requests),
            Arc::clone(&accepts),
        ));
        RawApp {
            addr,
            requests,
            accepts,
            server,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<RawRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for RawApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    script: Arc<Script>,
    requests: Arc<Mutex<Vec<RawRequest>>>,
    accepts: Arc<AtomicUsize>,
) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let connection = accepts.fetch_add(1, Ordering::SeqCst);
        connections.spawn(serve(
            stream,
            connection,
            Arc::clone(&script),
            Arc::clone(&requests),
        ));
    }
}

async fn serve(
    mut stream: TcpStream,
    connection: usize,
    script: Arc<Script>,
    requests: Arc<Mutex<Vec<RawRequest>>>,
) {
    let mut buf = Vec::new();
    loop {
        let Some(bytes) = read_request(&mut stream, &mut buf).await else {
            return;
        };
        let n = {
            let mut all = requests
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            all.push(RawRequest { bytes, connection });
            all.len() - 1
        };
        let answer = script(n);
        if stream.write_all(&answer.wire).await.is_err() {
            return;
        }
        if let Some((after, stray)) = answer.then {
            tokio::time::sleep(after).await;
            if stream.write_all(&stray).await.is_err() {
                return;
            }
        }
    }
}

/// One request (head and `Content-Length` body) off `stream`; `None` when
/// the peer closed or went quiet past [`WAIT`].
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let read = async {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize = head
                    .split("\r\n")
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let total = end + 4 + len;
                if buf.len() >= total {
                    let request: Vec<u8> = buf.drain(..total).collect();
                    return Some(request);
                }
            }
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(WAIT * 4, read).await.ok().flatten()
}
