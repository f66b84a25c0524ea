//! Real `redis-server` processes for tests: one per test, on free loopback
//! ports, in a temporary directory, killed on drop.
//!
//! Nothing here is mocked and nothing is skipped: without `redis-server` on
//! PATH the tests fail with the command that installs it.
#![allow(dead_code)]

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

const INSTALL_HINT: &str = "redis-server is not on PATH; install it with \
     `apt-get update && apt-get install -y redis-server`";
/// How long a server may take to answer its first PING.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How often a start is retried when another process took the port first.
const START_ATTEMPTS: usize = 5;

/// One `redis-server` on 127.0.0.1, persistence off.
pub struct RedisServer {
    port: u16,
    /// Cluster bus port, for nodes of a [`RedisCluster`].
    bus_port: Option<u16>,
    password: Option<String>,
    /// Append-only file with `appendfsync always`: a restart keeps every
    /// write the server acknowledged, as a production store would.
    persistent: bool,
    /// Extra command-line settings (`--replicaof`, `--masterauth`, …).
    args: Vec<String>,
    child: Option<Child>,
    dir: TempDir,
}

impl RedisServer {
    /// Starts a standalone server on a free port and waits until it answers.
    pub fn start() -> RedisServer {
        RedisServer::start_inner(None, false, false)
    }

    /// Starts a standalone server that requires `password` (`requirepass`).
    pub fn start_with_password(password: &str) -> RedisServer {
        RedisServer::start_inner(Some(password.to_string()), false, false)
    }

    /// Starts a standalone server with an fsync-always append-only file, so
    /// [`RedisServer::restart`] brings back everything it acknowledged.
    pub fn start_persistent() -> RedisServer {
        RedisServer::start_inner(None, false, true)
    }

    /// Starts a standalone server holding what the RDB file `rdb` holds.
    pub fn start_from_dump(rdb: &Path) -> RedisServer {
        let mut server = RedisServer::start();
        server.stop();
        fs::copy(rdb, server.dir.path().join("dump.rdb"))
            .unwrap_or_else(|e| panic!("copy {}: {e}", rdb.display()));
        server.restart();
        server
    }

    /// Starts a standalone server with extra settings, e.g. `--replicaof`.
    pub fn start_with_args(password: Option<&str>, args: &[String]) -> RedisServer {
        RedisServer::start_args(password.map(str::to_owned), false, false, args)
    }

    /// Starts a replica of the server on `primary_port` (with `password`
    /// both required and used towards the primary when given).
    pub fn start_replica_of(primary_port: u16, password: Option<&str>) -> RedisServer {
        RedisServer::start_with_args(password, &replica_args(primary_port, password))
    }

    fn start_inner(password: Option<String>, cluster: bool, persistent: bool) -> RedisServer {
        RedisServer::start_args(password, cluster, persistent, &[])
    }

    fn start_args(
        password: Option<String>,
        cluster: bool,
        persistent: bool,
        args: &[String],
    ) -> RedisServer {
        let mut last_failure = String::new();
        for _ in 0..START_ATTEMPTS {
            let mut server = RedisServer {
                port: free_port(),
                bus_port: cluster.then(free_port),
                password: password.clone(),
                persistent,
                args: args.to_vec(),
                child: None,
                dir: TempDir::new("redis"),
            };
            server.spawn();
            match server.wait_ready() {
                Ok(()) => return server,
                // Most likely another process bound the port between our probe
                // and redis-server's bind: try another one.
                Err(failure) => last_failure = failure,
            }
        }
        panic!("redis-server did not start after {START_ATTEMPTS} attempts: {last_failure}");
    }

    /// `redis://[:password@]127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}/", self.port),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (its RDB and AOF files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the server (SIGKILL, like a crash) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (and directory): empty, or
    /// with its data for a persistent server.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
        if let Err(failure) = self.wait_ready() {
            panic!(
                "redis-server did not restart on port {}: {failure}",
                self.port
            );
        }
    }

    /// Starts the server again on the same port with other extra settings
    /// (an old primary coming back as a replica: [`replica_args`]).
    pub fn restart_with_args(&mut self, args: &[String]) {
        self.args = args.to_vec();
        self.restart();
    }

    /// Waits (bounded) until `n` replicas are online (`INFO replication`).
    pub fn wait_replicas(&self, n: usize) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let mut conn = self.client();
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut conn)
                .unwrap_or_default();
            let online = info
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                .count();
            if online >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{online} of {n} replicas online within {READY_TIMEOUT:?}: {info}"
            );
            sleep(Duration::from_millis(20));
        }
    }

    /// `ROLE`'s first element: `master` or `slave`. A server that changes
    /// role closes its clients' connections; such a drop is asked again, for
    /// two seconds at most.
    pub fn role(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        let role: Vec<redis::Value> = loop {
            let mut conn = self.client();
            match redis::cmd("ROLE").query(&mut conn) {
                Ok(role) => break role,
                Err(e) if Instant::now() < deadline && e.is_connection_dropped() => {
                    sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("ROLE: {e}"),
            }
        };
        match role.first() {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            Some(redis::Value::SimpleString(s)) => s.clone(),
            other => panic!("unexpected ROLE reply {other:?}"),
        }
    }

    /// Stops the process (SIGSTOP): connections stay open, nothing answers.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Resumes a frozen process (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let Some(child) = &self.child else {
            panic!("redis-server is not running");
        };
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "kill {signal} failed: {status:?}"
        );
    }

    /// A blocking client, for checks and setup in tests. A connection the
    /// server resets while it is busy (a failover scenario under load) is
    /// tried again, for two seconds at most.
    pub fn client(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).expect("a valid URL");
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let conn = loop {
            match client.get_connection_with_timeout(Duration::from_secs(2)) {
                Ok(conn) => break conn,
                Err(e) if std::time::Instant::now() < deadline && e.is_connection_dropped() => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("redis-server answers: {e}"),
            }
        };
        conn.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout set");
        conn
    }

    fn spawn(&mut self) {
        let port = self.port.to_string();
        let dir = self.dir.path().to_string_lossy().into_owned();
        let logfile = self.dir.path().join("redis.log");
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &port])
            .args(["--save", ""])
            .args(["--dir", &dir])
            .arg("--logfile")
            .arg(&logfile)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if self.persistent {
            command.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            command.args(["--appendonly", "no"]);
        }
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        command.args(&self.args);
        if let Some(bus_port) = self.bus_port {
            command
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--cluster-node-timeout", "2000"])
                .args(["--cluster-port", &bus_port.to_string()]);
        }
        match command.spawn() {
            Ok(child) => self.child = Some(child),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
            Err(e) => panic!("cannot run redis-server: {e}"),
        }
    }

    /// Waits until our own process answers on the port (`INFO server` names
    /// its pid, so another server that took the port does not count).
    fn wait_ready(&mut self) -> Result<(), String> {
        let pid = match &self.child {
            Some(child) => child.id(),
            None => return Err("not started".into()),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        let client = redis::Client::open(self.url()).map_err(|e| e.to_string())?;
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("exited with {status}: {}", self.log_tail()));
            }
            if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200))
                && let Ok(info) = redis::cmd("INFO").arg("server").query::<String>(&mut conn)
            {
                if info.contains(&format!("process_id:{pid}\r")) {
                    return Ok(());
                }
                self.stop();
                return Err(format!("port {} is served by another process", self.port));
            }
            sleep(Duration::from_millis(20));
        }
        self.stop();
        Err(format!(
            "no answer within {READY_TIMEOUT:?}: {}",
            self.log_tail()
        ))
    }

    fn log_tail(&self) -> String {
        log_tail(&self.dir.path().join("redis.log"), 5)
    }
}

/// The last `n` lines of the log file at `path`, on one line.
pub fn log_tail(path: &std::path::Path, n: usize) -> String {
    let log = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A frozen process ignores nothing but SIGKILL, which is what stop sends.
        self.stop();
    }
}

/// A Redis Cluster of `masters` nodes, no replicas, built with `redis-cli --cluster create`.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start(masters: usize) -> RedisCluster {
        RedisCluster::start_inner(masters, false)
    }

    /// A cluster whose nodes keep an fsync-always append-only file, so a
    /// restarted node comes back with its keys.
    pub fn start_persistent(masters: usize) -> RedisCluster {
        RedisCluster::start_inner(masters, true)
    }

    /// A cluster of `masters` masters with one replica each (nodes
    /// `masters..2*masters`); a replica takes over its master's slots when
    /// the master fails.
    pub fn start_with_replicas(masters: usize) -> RedisCluster {
        RedisCluster::start_nodes(masters, 1, false)
    }

    fn start_inner(masters: usize, persistent: bool) -> RedisCluster {
        RedisCluster::start_nodes(masters, 0, persistent)
    }

    fn start_nodes(masters: usize, replicas: usize, persistent: bool) -> RedisCluster {
        assert!(masters >= 3, "Redis Cluster needs at least 3 masters");
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|_| RedisServer::start_inner(None, true, persistent))
            .collect();
        let cluster = RedisCluster { nodes };
        cluster.create(replicas);
        cluster.wait_ok();
        if replicas > 0 {
            cluster.wait_replicas_synced();
        }
        cluster
    }

    /// Waits (bounded) until every replica has finished its first sync with
    /// its master: a replica that never synced is too far behind to be
    /// promoted, so a failover test must not start before.
    fn wait_replicas_synced(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let synced = self.nodes.iter().all(|node| {
                let mut conn = node.client();
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut conn)
                    .unwrap_or_default();
                info.contains("role:master") || info.contains("master_link_status:up")
            });
            if synced {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster replicas did not sync within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One `redis://127.0.0.1:PORT/` per node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    pub fn nodes(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
    }

    /// Kills every node.
    pub fn stop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
    }

    /// `redis-cli --cluster create` on every node, `replicas` per master.
    fn create(&self, replicas: usize) {
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &self.nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        create
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null());
        run_bounded(&mut create, Duration::from_secs(60));
    }

    /// Kills every node, lets `between` run on each stopped node, and starts
    /// them all again on their ports.
    fn respawn(&mut self, between: impl Fn(&RedisServer)) {
        for node in &mut self.nodes {
            node.stop();
            between(node);
        }
        for node in &mut self.nodes {
            node.spawn();
        }
        for node in &mut self.nodes {
            if let Err(failure) = node.wait_ready() {
                panic!(
                    "cluster node did not restart on port {}: {failure}",
                    node.port
                );
            }
        }
    }

    /// Starts every node again on its ports; each finds the cluster layout in
    /// its `nodes.conf`. Waits until the cluster is healthy.
    pub fn restart(&mut self) {
        self.respawn(|_| {});
        self.wait_ok();
    }

    /// Builds the cluster anew on the same ports: every node killed, its
    /// `nodes.conf` deleted, started empty and answering with no slots until
    /// `redis-cli --cluster create` runs again after `empty_for`. Waits until
    /// the cluster is healthy.
    pub fn rebuild(&mut self, empty_for: Duration) {
        self.respawn(|node| {
            let conf = node.dir.path().join("nodes.conf");
            if let Err(e) = std::fs::remove_file(&conf) {
                panic!("remove {}: {e}", conf.display());
            }
        });
        sleep(empty_for);
        self.create(0);
        self.wait_ok();
    }

    /// Kills node `index` (SIGKILL); the others keep running.
    pub fn stop_node(&mut self, index: usize) {
        self.nodes[index].stop();
    }

    /// Starts node `index` again on its ports; it rejoins from its
    /// `nodes.conf`. Waits until the whole cluster is healthy.
    pub fn restart_node(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.spawn();
        if let Err(failure) = node.wait_ready() {
            panic!(
                "cluster node did not restart on port {}: {failure}",
                node.port
            );
        }
        self.wait_ok();
    }

    /// The hash slot of `key` (`CLUSTER KEYSLOT`, asked of a running node).
    pub fn slot_of(&self, key: &str) -> u16 {
        let node = self
            .nodes
            .iter()
            .find(|n| n.child.is_some())
            .expect("a running node");
        let mut conn = node.client();
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut conn)
            .expect("CLUSTER KEYSLOT")
    }

    /// The slot ranges node `index` serves, from its own `CLUSTER SHARDS`
    /// view as `CLUSTER SLOTS` (start, end, port of the master).
    pub fn slots_of_node(&self, index: usize) -> Vec<(u16, u16)> {
        let port = self.nodes[index].port;
        let mut conn = self.nodes[index].client();
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut conn)
            .expect("CLUSTER SLOTS");
        let mut out = Vec::new();
        for range in slots {
            let redis::Value::Array(items) = range else {
                continue;
            };
            let (Some(redis::Value::Int(start)), Some(redis::Value::Int(end))) =
                (items.first(), items.get(1))
            else {
                continue;
            };
            let master_port = match items.get(2) {
                Some(redis::Value::Array(master)) => match master.get(1) {
                    Some(redis::Value::Int(p)) => *p,
                    _ => continue,
                },
                _ => continue,
            };
            if master_port == i64::from(port) {
                out.push((*start as u16, *end as u16));
            }
        }
        out
    }

    /// The node replicating node `index` now, if any (`ROLE` of each running node).
    pub fn replica_of(&self, index: usize) -> Option<usize> {
        let port = self.nodes[index].port;
        (0..self.nodes.len()).find(|&i| {
            i != index && self.nodes[i].child.is_some() && {
                let mut conn = self.nodes[i].client();
                let role: Vec<redis::Value> =
                    redis::cmd("ROLE").query(&mut conn).unwrap_or_default();
                matches!(role.get(2), Some(redis::Value::Int(p)) if *p == i64::from(port))
            }
        })
    }

    /// Waits (bounded) until node `index` reports itself a master: the
    /// failover that promotes it is done.
    pub fn wait_promoted(&self, index: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.is_master(index) {
            if Instant::now() >= deadline {
                let mut conn = self.nodes[index].client();
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(&mut conn)
                    .unwrap_or_default();
                panic!("node {index} was not promoted within 30 s:\n{nodes}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether node `index` is a master now (`ROLE`).
    pub fn is_master(&self, index: usize) -> bool {
        self.nodes[index].child.is_some() && self.nodes[index].role() == "master"
    }

    /// Waits until every running node reports `cluster_state:ok` with all
    /// slots served (after a master died: once its replica took over).
    pub fn wait_ok_without_dead_nodes(&self) {
        self.wait_healthy(true);
    }

    /// Waits until every node reports `cluster_state:ok` with all slots served.
    fn wait_ok(&self) {
        self.wait_healthy(false);
    }

    fn wait_healthy(&self, skip_dead: bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let healthy = self.nodes.iter().all(|node| {
                if skip_dead && node.child.is_none() {
                    return true;
                }
                let mut conn = node.client();
                redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query::<String>(&mut conn)
                    .is_ok_and(|info| {
                        info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                    })
            });
            if healthy {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not reach cluster_state:ok within 30s"
            );
            sleep(Duration::from_millis(100));
        }
    }
}

/// The settings that make a server a replica of the one on `primary_port`.
pub fn replica_args(primary_port: u16, password: Option<&str>) -> Vec<String> {
    let mut args = vec![
        "--replicaof".to_owned(),
        "127.0.0.1".to_owned(),
        primary_port.to_string(),
    ];
    if let Some(password) = password {
        args.extend(["--masterauth".to_owned(), password.to_owned()]);
    }
    args
}

/// Runs `command` to completion within `limit`, panicking on failure or timeout.
fn run_bounded(command: &mut Command, limit: Duration) {
    let dir = TempDir::new("cmd");
    let out_path = dir.path().join("out");
    let out = fs::File::create(&out_path).expect("temp file");
    let err = out.try_clone().expect("temp file");
    let mut child = match command.stdout(out).stderr(err).spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
        Err(e) => panic!("cannot run {command:?}: {e}"),
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not finish within {limit:?}");
        }
        sleep(Duration::from_millis(50));
    };
    let output = fs::read_to_string(&out_path).unwrap_or_default();
    assert!(status.success(), "{command:?} failed ({status}): {output}");
}

/// A port that was free a moment ago: bind port 0, read it, release it.
/// Callers retry when something else takes it first.
pub(crate) fn free_port() -> u16 {
    // Below Linux's ephemeral range (32768-60999): a port the OS hands to a
    // `127.0.0.1:0` listener of another test is never one of these, so a
    // server restarted on its port finds it free. One counter per test
    // process, from a random start, so two servers never pick the same one.
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: std::sync::OnceLock<AtomicU32> = std::sync::OnceLock::new();
    let next = NEXT.get_or_init(|| AtomicU32::new(std::process::id().wrapping_mul(7919) % SPAN));
    for _ in 0..SPAN {
        let port =
            u16::try_from(LOW + next.fetch_add(1, Ordering::Relaxed) % SPAN).unwrap_or(20_000);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {LOW} and {}", LOW + SPAN);
}

/// A directory removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(what: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "hookgate-{what}-{}-{n}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
