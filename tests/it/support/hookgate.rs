//! The real `hookgate` binary, run as a child process.
//!
//! The config is written to a temporary file; both listeners bind
//! `127.0.0.1:0` and the real ports are read from the `"listening"` log lines.
//! Stdout and stderr are collected line by line by two threads, so a test can
//! wait for a log line and a failure can show everything the process said.
//! The process is killed when the value is dropped.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde_json::Value;
use tempfile::TempDir;

use super::{Event, Resp, SourceSpec, WAIT, http, try_http};

pub const BIN: &str = env!("CARGO_BIN_EXE_hookgate");

/// Lines a child process wrote, shared with the thread reading them.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn collect(&self, stream: impl Read + Send + 'static) {
        let lines = self.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                lines.0.lock().expect("lines lock").push(text);
                line.clear();
            }
        });
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.0.lock().expect("lines lock").clone()
    }
}

/// How to start hookgate: config text, extra environment, config via `$HOOKGATE_CONFIG`.
pub struct Launch {
    config: String,
    env: Vec<(String, String)>,
    config_from_env: bool,
    one_cpu: bool,
}

impl Launch {
    pub fn env(mut self, name: &str, value: &str) -> Launch {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Passes the config path in `$HOOKGATE_CONFIG` instead of `--config`.
    pub fn config_from_env(mut self) -> Launch {
        self.config_from_env = true;
        self
    }

    /// Runs the process on one CPU (`taskset`), as a sidecar limited to one CPU.
    pub fn one_cpu(mut self) -> Launch {
        self.one_cpu = true;
        self
    }

    /// Spawns `hookgate run` and waits (bounded) until both listeners are bound.
    pub async fn start(self) -> Hookgate {
        let dir = tempfile::tempdir().expect("temp dir");
        let config_path = dir.path().join("hookgate.toml");
        std::fs::write(&config_path, &self.config).expect("write config");

        let mut command = if self.one_cpu {
            let mut taskset = Command::new("taskset");
            taskset.arg("-c").arg(first_allowed_cpu()).arg(BIN);
            taskset
        } else {
            Command::new(BIN)
        };
        command.arg("run");
        if !self.config_from_env {
            command.arg("--config").arg(&config_path);
        }
        command
            .env_remove("HOOKGATE_CONFIG")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.config_from_env {
            command.env("HOOKGATE_CONFIG", &config_path);
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) if self.one_cpu => {
                panic!(
                    "spawn hookgate under taskset: {e} (taskset is in util-linux: apt-get install -y util-linux)"
                )
            }
            Err(e) => panic!("spawn hookgate: {e}"),
        };
        let stdout = Lines::default();
        let stderr = Lines::default();
        stdout.collect(child.stdout.take().expect("piped stdout"));
        stderr.collect(child.stderr.take().expect("piped stderr"));

        let mut hookgate = Hookgate {
            child,
            public: None,
            admin: None,
            stdout,
            stderr,
            config: self.config,
            config_path,
            _dir: dir,
        };
        hookgate.wait_listening().await;
        hookgate
    }
}

pub struct Hookgate {
    child: Child,
    public: Option<SocketAddr>,
    admin: Option<SocketAddr>,
    stdout: Lines,
    stderr: Lines,
    config: String,
    config_path: PathBuf,
    /// Holds the config file for as long as the process runs.
    _dir: TempDir,
}

impl Hookgate {
    /// Starts `hookgate run` with this config.
    pub async fn start(config: &str) -> Hookgate {
        Hookgate::launch(config).start().await
    }

    pub fn launch(config: &str) -> Launch {
        Launch {
            config: config.to_owned(),
            env: Vec::new(),
            config_from_env: false,
            one_cpu: false,
        }
    }

    async fn wait_listening(&mut self) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            for line in self.log_lines() {
                if field(&line, "message").as_deref() != Some("listening") {
                    continue;
                }
                let addr = field(&line, "addr").and_then(|a| a.parse::<SocketAddr>().ok());
                match field(&line, "listener").as_deref() {
                    Some("public") => self.public = self.public.or(addr),
                    Some("admin") => self.admin = self.admin.or(addr),
                    _ => {}
                }
            }
            if self.public.is_some() && self.admin.is_some() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "hookgate exited ({status}) before listening\n{}",
                    self.describe()
                );
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "hookgate did not log both \"listening\" lines within {WAIT:?}\n{}",
                    self.describe()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn public_addr(&self) -> SocketAddr {
        self.public.expect("public listener seen at start")
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin.expect("admin listener seen at start")
    }

    pub fn public_url(&self) -> String {
        format!("http://{}", self.public_addr())
    }

    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin_addr())
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// Replaces the config file's contents in one step (write aside, rename
    /// over), so a reader never sees half a file.
    pub fn rewrite_config(&mut self, config: &str) {
        let aside = self.config_path.with_extension("toml.new");
        std::fs::write(&aside, config).expect("write new config");
        std::fs::rename(&aside, &self.config_path).expect("replace config");
        self.config = config.to_owned();
    }

    /// POSTs `body` with `headers` to `path` on the public listener.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(String, String)],
        body: impl Into<Bytes>,
    ) -> Resp {
        self.request(Method::POST, path, headers, body).await
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        headers: &[(String, String)],
        body: impl Into<Bytes>,
    ) -> Resp {
        http(
            method,
            &format!("{}{path}", self.public_url()),
            headers,
            body,
        )
        .await
    }

    /// Like [`Hookgate::post`], but a connection failure is returned, not a panic.
    pub async fn try_post(
        &self,
        path: &str,
        headers: &[(String, String)],
        body: impl Into<Bytes>,
    ) -> Result<Resp, String> {
        try_http(
            Method::POST,
            &format!("{}{path}", self.public_url()),
            headers,
            body,
        )
        .await
    }

    /// Sends `event` to `source`'s path, signed now with its first secret.
    pub async fn send(&self, source: &SourceSpec, event: &Event) -> Resp {
        self.post(
            &source.path,
            &source.request_headers(event),
            event.body.clone(),
        )
        .await
    }

    /// Sends `event` signed at `timestamp` with secret `index`.
    pub async fn send_with(
        &self,
        source: &SourceSpec,
        event: &Event,
        index: usize,
        timestamp: i64,
    ) -> Resp {
        self.post(
            &source.path,
            &source.request_headers_with(event, index, timestamp),
            event.body.clone(),
        )
        .await
    }

    /// GETs `path` on the admin listener.
    pub async fn admin_get(&self, path: &str) -> Resp {
        http(
            Method::GET,
            &format!("{}{path}", self.admin_url()),
            &[],
            Bytes::new(),
        )
        .await
    }

    /// Sends a signal by name (`TERM`, `INT`, `HUP`) with `kill(1)`.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} {} failed", self.pid());
    }

    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Waits (bounded) for the process to exit.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "hookgate still running {WAIT:?} after being asked to stop\n{}",
                    self.describe()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the process has exited (without waiting).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    pub fn stdout(&self) -> Vec<String> {
        self.stdout.snapshot()
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.snapshot()
    }

    /// Everything the process wrote so far, stdout then stderr.
    pub fn output(&self) -> String {
        let mut out = self.stdout().join("\n");
        out.push('\n');
        out += &self.stderr().join("\n");
        out
    }

    /// The stdout lines that are JSON objects.
    pub fn log_lines(&self) -> Vec<Value> {
        self.stdout()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(Value::is_object)
            .collect()
    }

    /// Waits (bounded) for a JSON log line matching `pred`; `what` describes it on failure.
    pub async fn wait_for_log(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(line) = self.log_lines().into_iter().find(|l| pred(l)) {
                return line;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("no log line {what} within {WAIT:?}\n{}", self.describe());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the `"request"` log line of `event_id` with `outcome`.
    pub async fn wait_for_request_log(&self, event_id: &str, outcome: &str) -> Value {
        self.wait_for_log(
            &format!("request event_id={event_id} outcome={outcome}"),
            |l| l["message"] == "request" && l["event_id"] == event_id && l["outcome"] == outcome,
        )
        .await
    }

    /// The config and all output, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "--- config ---\n{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.config,
            self.stdout().join("\n"),
            self.stderr().join("\n")
        )
    }
}

/// How many of its last output lines a hookgate shows when its test fails.
const LINES_ON_FAILURE: usize = 40;

impl Drop for Hookgate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let mut lines = self.stdout();
            lines.extend(self.stderr());
            let from = lines.len().saturating_sub(LINES_ON_FAILURE);
            eprintln!(
                "--- the last {} output lines of hookgate (public {:?}) ---\n{}",
                lines.len() - from,
                self.public,
                lines[from..].join("\n")
            );
        }
    }
}

/// A string field of a log line, top level or under `fields`.
fn field(line: &Value, name: &str) -> Option<String> {
    line.get(name)
        .or_else(|| line.get("fields").and_then(|f| f.get(name)))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Runs `hookgate` with `args` to completion (bounded); returns status, stdout, stderr.
pub async fn run_cli(args: &[&str]) -> (ExitStatus, String, String) {
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(args)
        .env_remove("HOOKGATE_CONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("hookgate {args:?} did not finish within {WAIT:?}"))
        .expect("run hookgate");
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The first CPU this process may run on (from `Cpus_allowed_list`).
fn first_allowed_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .and_then(|list| {
            let first = list.trim().split([',', '-']).next()?;
            Some(first.to_owned())
        })
        .expect("Cpus_allowed_list in /proc/self/status")
}
