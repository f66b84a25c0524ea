//! A local HTTPS key server: what AWS SNS, PayPal and Google serve their
//! signing certificates and key sets from, on `127.0.0.1:0`.
//!
//! Its certificate (for `127.0.0.1`) is issued by a test CA made with rcgen
//! for each server; the CA is written to a file for `[source.keys] ca_file`.
//! Every accepted connection and every request path is counted, so a test
//! can tell that hookgate fetched once, fetched again, or never connected.
//! A route can answer after a delay, or hang (never answer).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::toml_str;

/// How a path is answered.
#[derive(Debug, Clone)]
pub struct Route {
    pub body: Bytes,
    pub headers: Vec<(String, String)>,
    pub status: u16,
    pub delay: Duration,
    /// Never answer (the connection stays open until the client gives up).
    pub hang: bool,
}

impl Route {
    pub fn ok(body: impl Into<Bytes>) -> Route {
        Route {
            body: body.into(),
            headers: Vec::new(),
            status: 200,
            delay: Duration::ZERO,
            hang: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Route {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Route {
        self.delay = delay;
        self
    }

    pub fn hang() -> Route {
        Route {
            hang: true,
            ..Route::ok(Bytes::new())
        }
    }
}

#[derive(Default)]
struct State {
    routes: Mutex<HashMap<String, Route>>,
    /// Paths (with query) in arrival order.
    requests: Mutex<Vec<String>>,
    connections: AtomicUsize,
}

pub struct KeyServer {
    addr: SocketAddr,
    state: Arc<State>,
    ca_file: PathBuf,
    _dir: TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl KeyServer {
    pub async fn start() -> KeyServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "hookgate test key CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let server_key = rcgen::KeyPair::generate().expect("server key");
        let server_params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("server params");
        let server_cert = server_params
            .signed_by(&server_key, &issuer)
            .expect("server certificate");
        let ca_file = dir.path().join("key-ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write CA file");

        let chain = vec![CertificateDer::from(server_cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server identity");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));

        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind key server");
        let addr = listener.local_addr().expect("key server address");
        let state = Arc::new(State::default());
        let task = tokio::spawn(serve(listener, acceptor, Arc::clone(&state)));
        KeyServer {
            addr,
            state,
            ca_file,
            _dir: dir,
            task,
        }
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The `[source.keys]` table that lets hookgate fetch from this server.
    pub fn keys_table(&self) -> String {
        format!(
            "\n[source.keys]\nallow_hosts = [\"127.0.0.1\"]\nca_file = {}\n",
            toml_str(&self.ca_file.display().to_string())
        )
    }

    pub fn route(&self, path: &str, route: Route) {
        self.state
            .routes
            .lock()
            .expect("routes lock")
            .insert(path.to_owned(), route);
    }

    /// Requests for `path` (query ignored) so far.
    pub fn hits(&self, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|p| p.split('?').next() == Some(path))
            .count()
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().expect("requests lock").clone()
    }

    /// TCP connections accepted so far (a refused URL opens none).
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

impl Drop for KeyServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, acceptor: TlsAcceptor, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        let acceptor = acceptor.clone();
        let state = Arc::clone(&state);
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let service = service_fn(move |request: Request<Incoming>| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(answer(&state, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn answer(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let target = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    state
        .requests
        .lock()
        .expect("requests lock")
        .push(target.clone());
    let path = request.uri().path().to_owned();
    let route = state
        .routes
        .lock()
        .expect("routes lock")
        .get(&path)
        .cloned();
    let Some(route) = route else {
        let mut response = Response::new(Full::new(Bytes::from_static(b"not found")));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
    if route.hang {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(route.delay).await;
    let mut response = Response::new(Full::new(route.body.clone()));
    *response.status_mut() = StatusCode::from_u16(route.status).unwrap_or(StatusCode::OK);
    for (name, value) in &route.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
