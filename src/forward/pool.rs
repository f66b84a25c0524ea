//! Idle keep-alive connections to the app, per upstream origin.
//!
//! hookgate talks to one app, maybe a few after a reload, so this is a short
//! list behind an uncontended mutex, never held across an await or a socket
//! call. Connections are reused newest first (the warmest, and it lets a
//! burst's extra connections age out); at most [`MAX_IDLE_PER_ORIGIN`] wait
//! per origin, none longer than [`IDLE_TIMEOUT`]. Before a connection is
//! handed out it is checked once, without waiting (a plain socket is peeked,
//! a TLS stream read), so one the app closed while it sat idle (Node closes
//! them after 5 s) is dropped instead of failing the next request.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::connect::{Origin, Stream};

/// Idle connections kept per origin; more are closed.
pub(super) const MAX_IDLE_PER_ORIGIN: usize = 256;
/// An idle connection older than this is closed rather than reused.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

struct Idle {
    stream: Stream,
    since: Instant,
}

struct OriginIdle {
    tls: bool,
    authority: Box<str>,
    /// Oldest at the front, newest at the back.
    idle: VecDeque<Idle>,
}

impl OriginIdle {
    fn is(&self, origin: &Origin<'_>) -> bool {
        self.tls == origin.tls && *self.authority == *origin.authority
    }
}

#[derive(Default)]
pub(super) struct Pool {
    origins: Mutex<Vec<OriginIdle>>,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Vec<OriginIdle>> {
        // Nothing in the list can be left half-updated by a panic.
        self.origins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest idle connection to `origin` that is still open, if any;
    /// stale and closed ones met on the way are dropped.
    pub fn checkout(&self, origin: &Origin<'_>) -> Option<Stream> {
        loop {
            let mut idle = {
                let mut origins = self.lock();
                let entry = origins.iter_mut().find(|e| e.is(origin))?;
                let newest = entry.idle.pop_back()?;
                if newest.since.elapsed() >= IDLE_TIMEOUT {
                    // The newest is too old, so every other one is too.
                    let stale = std::mem::take(&mut entry.idle);
                    drop(origins);
                    drop(stale);
                    return None;
                }
                newest
            };
            if idle.stream.is_open_and_quiet() {
                return Some(idle.stream);
            }
        }
    }

    /// Keeps `stream` for the next request to `origin`, unless the pool for
    /// that origin is full; closes connections that sat idle too long.
    pub fn checkin(&self, origin: &Origin<'_>, stream: Stream) {
        let now = Instant::now();
        let mut closed = Vec::new();
        {
            let mut origins = self.lock();
            let index = match origins.iter().position(|e| e.is(origin)) {
                Some(index) => index,
                None => {
                    origins.push(OriginIdle {
                        tls: origin.tls,
                        authority: origin.authority.into(),
                        idle: VecDeque::new(),
                    });
                    origins.len() - 1
                }
            };
            let idle = &mut origins[index].idle;
            while idle
                .front()
                .is_some_and(|oldest| now.duration_since(oldest.since) >= IDLE_TIMEOUT)
            {
                closed.extend(idle.pop_front());
            }
            if idle.len() < MAX_IDLE_PER_ORIGIN {
                idle.push_back(Idle { stream, since: now });
            } else {
                closed.push(Idle { stream, since: now });
            }
        }
        // Closing sockets happens here, outside the lock.
        drop(closed);
    }

    #[cfg(test)]
    fn idle_count(&self, origin: &Origin<'_>) -> usize {
        self.lock()
            .iter()
            .find(|e| e.is(origin))
            .map_or(0, |e| e.idle.len())
    }

    #[cfg(test)]
    fn age_all(&self, by: Duration) {
        for entry in self.lock().iter_mut() {
            for idle in &mut entry.idle {
                idle.since = idle.since.checked_sub(by).unwrap_or(idle.since);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Uri;
    use tokio::net::{TcpListener, TcpStream};

    async fn pair(listener: &TcpListener) -> (Stream, TcpStream) {
        let addr = listener.local_addr().expect("addr");
        let client = TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        (Stream::Plain(client), server)
    }

    fn local_port(stream: &Stream) -> u16 {
        match stream {
            Stream::Plain(s) => s.local_addr().expect("addr").port(),
            Stream::Tls(_) => unreachable!("plain only here"),
        }
    }

    /// A loopback listener standing for the app, and its URI.
    async fn listening() -> (TcpListener, Uri) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let uri = format!("http://{}", listener.local_addr().expect("addr"))
            .parse()
            .expect("uri");
        (listener, uri)
    }

    #[tokio::test]
    async fn newest_first_per_origin() {
        let (listener, uri) = listening().await;
        let origin = Origin::of(&uri).expect("origin");
        let other_uri: Uri = "https://elsewhere:8443".parse().expect("uri");
        let other = Origin::of(&other_uri).expect("origin");
        let pool = Pool::default();
        assert!(pool.checkout(&origin).is_none());

        let (a, _a_peer) = pair(&listener).await;
        let (b, _b_peer) = pair(&listener).await;
        let (a_port, b_port) = (local_port(&a), local_port(&b));
        pool.checkin(&origin, a);
        pool.checkin(&origin, b);
        assert_eq!(pool.idle_count(&origin), 2);
        assert!(pool.checkout(&other).is_none());

        let first = pool.checkout(&origin).expect("idle connection");
        assert_eq!(local_port(&first), b_port);
        let second = pool.checkout(&origin).expect("idle connection");
        assert_eq!(local_port(&second), a_port);
        assert!(pool.checkout(&origin).is_none());
    }

    #[tokio::test]
    async fn closed_and_stale_connections_are_dropped_at_checkout() {
        let (listener, uri) = listening().await;
        let origin = Origin::of(&uri).expect("origin");
        let pool = Pool::default();

        let (alive, _alive_peer) = pair(&listener).await;
        let alive_port = local_port(&alive);
        let (closed, closed_peer) = pair(&listener).await;
        pool.checkin(&origin, alive);
        pool.checkin(&origin, closed);
        drop(closed_peer);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The newest was closed by the app: skipped, the older one is handed out.
        let got = pool.checkout(&origin).expect("the open connection");
        assert_eq!(local_port(&got), alive_port);

        pool.checkin(&origin, got);
        pool.age_all(IDLE_TIMEOUT);
        assert!(pool.checkout(&origin).is_none(), "idle past the timeout");
        assert_eq!(pool.idle_count(&origin), 0);
    }

    #[tokio::test]
    async fn checkin_prunes_stale_and_caps_the_idle_list() {
        let (listener, uri) = listening().await;
        let origin = Origin::of(&uri).expect("origin");
        let pool = Pool::default();

        let (old, _old_peer) = pair(&listener).await;
        pool.checkin(&origin, old);
        pool.age_all(IDLE_TIMEOUT);
        let (fresh, _fresh_peer) = pair(&listener).await;
        pool.checkin(&origin, fresh);
        assert_eq!(pool.idle_count(&origin), 1, "the stale one was pruned");

        let mut peers = Vec::new();
        for _ in 0..MAX_IDLE_PER_ORIGIN {
            let (stream, peer) = pair(&listener).await;
            peers.push(peer);
            pool.checkin(&origin, stream);
        }
        assert_eq!(pool.idle_count(&origin), MAX_IDLE_PER_ORIGIN);
    }
}
