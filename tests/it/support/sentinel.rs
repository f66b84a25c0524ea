//! A Redis Sentinel deployment for tests: one primary, its replicas, and
//! three `redis-sentinel` processes, every one on a free loopback port in a
//! temporary directory, killed on drop.
//!
//! Nothing is mocked and nothing is skipped: without `redis-sentinel` on
//! PATH the tests fail with the command that installs it.
#![allow(dead_code)]

use std::fs;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::redis::{RedisServer, TempDir, free_port, replica_args};

/// The name the sentinels monitor the primary under.
pub const MASTER: &str = "hookgate-primary";
/// How long a silent primary takes to be flagged down (`down-after-milliseconds`).
pub const DOWN_AFTER: Duration = Duration::from_millis(1000);

const INSTALL_HINT: &str = "redis-sentinel is not on PATH; install it with \
     `apt-get update && apt-get install -y redis-sentinel`";
/// Bound on every wait for the deployment to settle.
const SETTLE: Duration = Duration::from_secs(30);

/// One `redis-sentinel` process.
struct SentinelProcess {
    port: u16,
    child: Option<Child>,
    dir: TempDir,
}

impl SentinelProcess {
    fn start(primary_port: u16, password: Option<&str>) -> SentinelProcess {
        let mut last = String::new();
        for _ in 0..5 {
            let mut sentinel = SentinelProcess {
                port: free_port(),
                child: None,
                dir: TempDir::new("sentinel"),
            };
            let conf = sentinel.dir.path().join("sentinel.conf");
            let mut text = format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel resolve-hostnames no\n\
                 sentinel monitor {MASTER} 127.0.0.1 {primary_port} 2\n\
                 sentinel down-after-milliseconds {MASTER} {down}\n\
                 sentinel failover-timeout {MASTER} 4000\n\
                 sentinel parallel-syncs {MASTER} 2\n",
                port = sentinel.port,
                dir = sentinel.dir.path().display(),
                down = DOWN_AFTER.as_millis(),
            );
            if let Some(password) = password {
                text += &format!("sentinel auth-pass {MASTER} {password}\n");
            }
            fs::write(&conf, text).expect("write sentinel.conf");
            let spawned = Command::new("redis-sentinel")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            match spawned {
                Ok(child) => sentinel.child = Some(child),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
                Err(e) => panic!("cannot run redis-sentinel: {e}"),
            }
            match sentinel.wait_ready() {
                Ok(()) => return sentinel,
                Err(e) => last = e,
            }
        }
        panic!("redis-sentinel did not start: {last}");
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn client(&self) -> Option<redis::Connection> {
        let client = redis::Client::open(self.url()).ok()?;
        let conn = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        Some(conn)
    }

    /// Waits until our own process answers on the port.
    fn wait_ready(&mut self) -> Result<(), String> {
        let pid = self.child.as_ref().map(Child::id).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("exited with {status}: {}", self.log_tail()));
            }
            if let Some(mut conn) = self.client()
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
        Err(format!("no answer: {}", self.log_tail()))
    }

    /// `SENTINEL GET-MASTER-ADDR-BY-NAME`: the port of the primary it names.
    fn primary_port(&self) -> Option<u16> {
        let mut conn = self.client()?;
        let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER)
            .query(&mut conn)
            .ok()?;
        addr.map(|(_, port)| port)
    }

    /// How many replicas and other sentinels it has found.
    fn peers(&self) -> Option<(usize, usize)> {
        let mut conn = self.client()?;
        let replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg("REPLICAS")
            .arg(MASTER)
            .query(&mut conn)
            .ok()?;
        let sentinels: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg("SENTINELS")
            .arg(MASTER)
            .query(&mut conn)
            .ok()?;
        Some((replicas.len(), sentinels.len()))
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log_tail(&self) -> String {
        super::redis::log_tail(&self.dir.path().join("sentinel.log"), 8)
    }
}

impl Drop for SentinelProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One primary, `replicas` replicas, three sentinels (quorum 2).
pub struct Sentinels {
    /// Index 0 is the first primary; a failover changes which one is.
    nodes: Vec<RedisServer>,
    sentinels: Vec<SentinelProcess>,
    password: Option<String>,
}

impl Sentinels {
    /// Starts everything and waits until every sentinel sees every replica
    /// and the two other sentinels (a failover needs both).
    pub fn start(replicas: usize, password: Option<&str>) -> Sentinels {
        let primary = RedisServer::start_with_args(password, &[]);
        let mut nodes = vec![primary];
        for _ in 0..replicas {
            nodes.push(RedisServer::start_replica_of(nodes[0].port(), password));
        }
        let sentinels = (0..3)
            .map(|_| SentinelProcess::start(nodes[0].port(), password))
            .collect();
        let deployment = Sentinels {
            nodes,
            sentinels,
            password: password.map(str::to_owned),
        };
        deployment.wait_linked(replicas);
        deployment
    }

    /// `redis://127.0.0.1:PORT/` of each sentinel.
    pub fn urls(&self) -> Vec<String> {
        self.sentinels.iter().map(SentinelProcess::url).collect()
    }

    pub fn node(&mut self, index: usize) -> &mut RedisServer {
        &mut self.nodes[index]
    }

    /// Node `index`, to read from or signal.
    pub fn server(&self, index: usize) -> &RedisServer {
        &self.nodes[index]
    }

    /// The index of the node the sentinels name as the primary now.
    pub fn primary(&self) -> usize {
        // The node most sentinels name. A sentinel that has not yet heard
        // of a failover, or of a node put in place of a lost one, may name
        // a port none of the nodes has now: asked again until SETTLE.
        let deadline = Instant::now() + SETTLE;
        loop {
            let named: Vec<u16> = self
                .sentinels
                .iter()
                .filter_map(SentinelProcess::primary_port)
                .collect();
            let known = named
                .iter()
                .filter_map(|p| self.nodes.iter().position(|n| n.port() == *p))
                .max_by_key(|i| {
                    let port = self.nodes[*i].port();
                    named.iter().filter(|p| **p == port).count()
                });
            if let Some(index) = known {
                return index;
            }
            assert!(
                Instant::now() < deadline,
                "no sentinel names a primary among the nodes within {SETTLE:?}: {named:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a replica of node `primary` that the sentinels never promote
    /// (`replica-priority 0`): a server put in place of a lost one, which
    /// must not become a candidate when the sentinels settle.
    pub fn start_standby(&self, primary: usize) -> RedisServer {
        let mut args = replica_args(self.nodes[primary].port(), self.password.as_deref());
        args.extend(["--replica-priority".to_owned(), "0".to_owned()]);
        RedisServer::start_with_args(self.password.as_deref(), &args)
    }

    /// Waits (bounded) until a quorum of sentinels names a primary other
    /// than node `old`, and that node answers as one. Returns its index.
    pub fn wait_failover_from(&self, old: usize) -> usize {
        let old_port = self.nodes[old].port();
        let deadline = Instant::now() + SETTLE;
        loop {
            let named: Vec<u16> = self
                .sentinels
                .iter()
                .filter_map(SentinelProcess::primary_port)
                .filter(|p| *p != old_port)
                .collect();
            // A port none of the nodes has is a view not yet settled:
            // asked again until SETTLE.
            if named.len() >= 2
                && named.iter().all(|p| *p == named[0])
                && let Some(index) = self.nodes.iter().position(|n| n.port() == named[0])
                && self.nodes[index].role() == "master"
            {
                return index;
            }
            if Instant::now() >= deadline {
                panic!(
                    "no failover from port {old_port} to a node within {SETTLE:?} \
                     (the sentinels name {named:?}); sentinel log: {}",
                    self.sentinels[0].log_tail()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }

    /// After a failover from node `old`: waits (bounded) until the
    /// sentinels agree on a primary that answers as one and `replica` (a
    /// server started for it) is online beside it, pointing `replica` at
    /// whichever node that is. A sentinel that had not yet heard of the
    /// failover may demote the promoted node once (its view of the old
    /// primary wins for a moment); the sentinels then fail over again, and
    /// this follows. Returns the primary's index.
    pub fn settle_with_replica(&self, old: usize, replica: &RedisServer) -> usize {
        let deadline = Instant::now() + SETTLE * 2;
        loop {
            let primary = self.wait_failover_from(old);
            let port = self.nodes[primary].port();
            let mut conn = replica.client();
            let _: Result<(), _> = redis::cmd("REPLICAOF")
                .arg("127.0.0.1")
                .arg(port)
                .query(&mut conn);
            let mut settled = false;
            for _ in 0..100 {
                let all_name = self
                    .sentinels
                    .iter()
                    .all(|s| s.primary_port() == Some(port));
                let mut primary_conn = self.nodes[primary].client();
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut primary_conn)
                    .unwrap_or_default();
                let master = info.contains("role:master");
                let online = info
                    .lines()
                    .any(|l| l.starts_with("slave") && l.contains("state=online"));
                if all_name && master && online {
                    settled = true;
                    break;
                }
                if !master {
                    break;
                }
                sleep(Duration::from_millis(100));
            }
            if settled {
                return primary;
            }
            assert!(
                Instant::now() < deadline,
                "no primary with a replica online within {:?}: {}",
                SETTLE * 2,
                self.sentinels[0].log_tail()
            );
        }
    }

    /// Starts node `index` again (after a SIGKILL) as a replica of `primary`.
    pub fn restart_as_replica(&mut self, index: usize, primary: usize) {
        let args = replica_args(self.nodes[primary].port(), self.password.as_deref());
        self.nodes[index].restart_with_args(&args);
    }

    /// Waits (bounded) until node `primary` has `replicas` replicas online.
    pub fn wait_replicas(&self, primary: usize, replicas: usize) {
        self.nodes[primary].wait_replicas(replicas);
    }

    fn wait_linked(&self, replicas: usize) {
        self.wait_replicas(0, replicas);
        let deadline = Instant::now() + SETTLE;
        loop {
            let linked = self
                .sentinels
                .iter()
                .all(|s| s.peers().is_some_and(|(r, s)| r >= replicas && s >= 2));
            if linked {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the sentinels did not find each other and the replicas within {SETTLE:?}: {}",
                self.sentinels[0].log_tail()
            );
            sleep(Duration::from_millis(100));
        }
    }
}
