//! A real `prometheus` server for tests: one per test, on a free loopback
//! port, scraping the given targets every second, its data in a temporary
//! directory, killed on drop.
//!
//! Nothing is skipped: without `prometheus` on PATH the test fails with the
//! command that installs it (Debian's package brings the server and promtool).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use super::{WAIT, get};

const INSTALL_HINT: &str = "prometheus is not on PATH; install it with \
     `apt-get update && apt-get install -y prometheus` (bash .ci/test does)";
/// How often a start is retried when another process took the port first.
const START_ATTEMPTS: usize = 5;
/// The scrape interval: short, so a test of a few seconds has many samples.
pub const SCRAPE_INTERVAL: Duration = Duration::from_secs(1);

pub struct Prometheus {
    child: Child,
    addr: SocketAddr,
    /// Holds the config and the TSDB for as long as the process runs.
    dir: TempDir,
}

impl Prometheus {
    /// Starts a server scraping `/metrics` of `targets` (job `hookgate`) and
    /// waits (bounded) until it is ready.
    pub async fn start(targets: &[SocketAddr]) -> Prometheus {
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: {interval}s\n  scrape_timeout: {interval}s\n  \
             evaluation_interval: {interval}s\n\
             scrape_configs:\n  - job_name: hookgate\n    metrics_path: /metrics\n    \
             static_configs:\n      - targets: [{targets}]\n",
            interval = SCRAPE_INTERVAL.as_secs(),
            targets = targets.join(", "),
        );
        let mut last_failure = String::new();
        for _ in 0..START_ATTEMPTS {
            let dir = tempfile::tempdir().expect("temp dir");
            let config_path = dir.path().join("prometheus.yml");
            std::fs::write(&config_path, &config).expect("write prometheus.yml");
            let addr = free_addr();
            let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log file");
            let child = match Command::new("prometheus")
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
            {
                Ok(child) => child,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
                Err(e) => panic!("cannot run prometheus: {e}"),
            };
            let mut server = Prometheus { child, addr, dir };
            match server.wait_ready().await {
                Ok(()) => return server,
                // Most likely another process bound the port first: try another.
                Err(failure) => last_failure = failure,
            }
        }
        panic!("prometheus did not start after {START_ATTEMPTS} attempts: {last_failure}");
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}: {}", self.log_tail()));
            }
            let url = format!("{}/-/ready", self.url());
            if let Ok(resp) =
                super::try_http(http::Method::GET, &url, &[], bytes::Bytes::new()).await
                && resp.status == 200
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("not ready within {WAIT:?}: {}", self.log_tail()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The last lines Prometheus logged, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("prometheus.log")
    }

    /// An instant query at the server's now: the `data.result` array, or the
    /// error Prometheus gave (a PromQL syntax error, say).
    pub async fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        self.api(&format!("query?query={}", encode(expr))).await
    }

    /// A range query: `data.result` holds one `values` array per series.
    pub async fn query_range(
        &self,
        expr: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Value>, String> {
        self.api(&format!(
            "query_range?query={}&start={start:.3}&end={end:.3}&step={step}",
            encode(expr)
        ))
        .await
    }

    async fn api(&self, path_and_query: &str) -> Result<Vec<Value>, String> {
        let resp = get(&format!("{}/api/v1/{path_and_query}", self.url())).await;
        let body: Value = serde_json::from_slice(&resp.body)
            .map_err(|e| format!("HTTP {}: not JSON ({e}): {}", resp.status, resp.text()))?;
        if body["status"] != "success" {
            return Err(format!(
                "HTTP {}: {} {}",
                resp.status, body["errorType"], body["error"]
            ));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// Waits (bounded) until every target is scraped and up.
    pub async fn wait_targets_up(&self) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let up = self.query("up").await.unwrap_or_default();
            if !up.is_empty() && up.iter().all(|s| sample_value(s) == Some(1.0)) {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "prometheus did not scrape its targets within {WAIT:?}: up = {up:?}\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of one instant-vector sample of a query result (`None` for NaN).
pub fn sample_value(sample: &Value) -> Option<f64> {
    sample["value"][1]
        .as_str()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| !v.is_nan())
}

/// Percent-encodes a query parameter (everything but RFC 3986's unreserved).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a probe port");
    listener.local_addr().expect("probe address")
}
