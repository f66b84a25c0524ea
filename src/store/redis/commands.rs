//! How a command reaches Redis: the connection for each deployment (one
//! node, a cluster, the primary sentinels name), the timeout every command
//! runs under, what a failure says about the node, and writes that wait for
//! replicas (`min_replicas`). The verbs of the store are built on
//! [`RedisStore::query`], [`RedisStore::query_pipeline`], [`RedisStore::write`]
//! and the script runners here.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, RedisError, RedisFuture, Script, ServerErrorKind, Value};

use super::cluster::{self, Cluster};
use super::lanes::{Lanes, load, send_with_wait};
use super::scrub::scrub;
use super::sentinel::{Node, Primary};
use super::{COMMAND_TIMEOUT, CONNECT_TIMEOUT, Operation, RESPONSE_TIMEOUT, RedisStore, millis};
use crate::metrics::OperationLabel;
use crate::store::{Error, Replication};

/// Where commands go.
#[derive(Clone)]
pub(super) enum Target {
    /// One node: the connection manager reconnects by itself.
    Fixed(Conn),
    /// A cluster: the connection follows slot moves by itself and is
    /// remade when it stops recovering (see [`cluster`]).
    Cluster(Arc<Cluster>),
    /// Whichever node the sentinels name as the primary.
    Sentinel(Arc<Primary>),
}

/// One connection type for every deployment, so the same scripts run on all.
#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The settings of every single-node [`ConnectionManager`].
pub(super) fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        // One attempt per reconnect: the next command starts another, and a
        // retry loop inside would only outlast COMMAND_TIMEOUT.
        .set_number_of_retries(0)
}

/// Whether a failed command was surely not executed (so sending it again,
/// after a reconnect or a new lookup, cannot apply it twice).
fn not_executed(e: &RedisError) -> bool {
    e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::ReadOnly | ServerErrorKind::MasterDown)
        )
}

/// Whether a failure says the node is gone or no longer the primary.
fn primary_gone(e: &RedisError) -> bool {
    not_executed(e)
        || e.is_io_error()
        || e.is_connection_dropped()
        || e.is_timeout()
        || e.is_unrecoverable_error()
        // WAIT sent to a node that was demoted under the connection.
        || e.to_string().contains("replica instances")
}

impl RedisStore {
    /// Runs one command (the queue and dead-letter verbs build their own).
    /// Under [`COMMAND_TIMEOUT`]; never a blocking command: the connection is
    /// shared with every request.
    pub async fn query<T>(&self, cmd: &Cmd) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        self.run(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await
    }
    /// Runs a pipeline (its commands on keys of one slot) in one round trip.
    pub async fn query_pipeline<T>(&self, pipe: &redis::Pipeline) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        self.run(|mut conn| async move { pipe.query_async(&mut conn).await })
            .await
    }

    /// Runs one write that backs a promise (one key): with `min_replicas`,
    /// followed by `WAIT` on the same connection, and failed with
    /// [`Error::NotReplicated`] when too few replicas acknowledge in time.
    /// Without, the same as [`RedisStore::query`].
    pub async fn write<T>(&self, operation: Operation, cmd: &Cmd) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        let (value, acked) = self.write_answer(operation, cmd).await?;
        acked.map(|()| value)
    }

    /// [`RedisStore::write`] that keeps the primary's answer when too few
    /// replicas acknowledge (see `RedisStore::replicated_answer`).
    pub async fn write_answer<T>(
        &self,
        operation: Operation,
        cmd: &Cmd,
    ) -> Result<(T, Result<(), Error>), Error>
    where
        T: redis::FromRedisValue + Send,
    {
        match &self.replication {
            None => Ok((self.query(cmd).await?, Ok(()))),
            Some((replication, lanes)) => {
                self.replicated_answer(operation, *replication, lanes, cmd, None)
                    .await
            }
        }
    }

    /// [`RedisStore::write`] for a script on `keys` (one slot).
    pub async fn write_eval<T>(
        &self,
        operation: Operation,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        let (value, acked) = self
            .write_eval_answer(operation, script, keys, args)
            .await?;
        acked.map(|()| value)
    }

    /// [`RedisStore::write_eval`] that keeps the primary's answer when too
    /// few replicas acknowledge (see `RedisStore::replicated_answer`).
    pub async fn write_eval_answer<T>(
        &self,
        operation: Operation,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<(T, Result<(), Error>), Error>
    where
        T: redis::FromRedisValue + Send,
    {
        let Some((replication, lanes)) = &self.replication else {
            return Ok((self.eval(script, keys, args).await?, Ok(())));
        };
        let cmd = evalsha(script, keys, args);
        self.replicated_answer(operation, *replication, lanes, &cmd, Some(script))
            .await
    }

    /// Runs `script` on `keys` (all in one cluster slot) with binary-safe
    /// arguments (EVALSHA, loading it on `NOSCRIPT`).
    pub async fn eval<T>(&self, script: &Script, keys: &[&str], args: &[&[u8]]) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        self.run(|mut conn| async move {
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(*key);
            }
            for arg in args {
                invocation.arg(*arg);
            }
            invocation.invoke_async(&mut conn).await
        })
        .await
    }

    /// Runs `script` on one key (EVALSHA, loading it on `NOSCRIPT`).
    pub(super) async fn script<T>(
        &self,
        script: &'static Script,
        key: &str,
        args: &[&str],
    ) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        self.run(|mut conn| async move {
            let mut invocation = script.prepare_invoke();
            invocation.key(key);
            for arg in args {
                invocation.arg(*arg);
            }
            invocation.invoke_async(&mut conn).await
        })
        .await
    }

    /// The connection for the next command, and the sentinel primary it
    /// leads to (to forget it if it fails as a primary would not).
    pub(super) async fn conn(&self) -> Result<(Conn, Option<Arc<Node>>), Error> {
        match &self.target {
            Target::Fixed(conn) => Ok((conn.clone(), None)),
            Target::Cluster(cluster) => Ok((Conn::Cluster(cluster.conn()), None)),
            Target::Sentinel(primary) => {
                let node = primary.node().await?;
                Ok((Conn::Single(node.conn.clone()), Some(node)))
            }
        }
    }

    /// After a failed command on `node`: with sentinels, forget the node when
    /// the failure says it is no longer the primary; on a cluster, count the
    /// failure towards remaking the connection.
    pub(super) fn note_failure(&self, node: Option<&Node>, e: &RedisError) {
        match (&self.target, node) {
            (Target::Sentinel(primary), Some(node)) if primary_gone(e) => {
                primary.forget(node, &scrub(&e.to_string(), &self.secrets));
            }
            (Target::Cluster(cluster), _) => self.note_cluster_failure(cluster, Some(e)),
            _ => {}
        }
    }

    /// After no answer in time: a frozen primary (or a cluster connection
    /// that no longer recovers) looks like this.
    pub(super) fn note_silence(&self) {
        match &self.target {
            Target::Sentinel(primary) => primary.forget_current("no answer in time"),
            Target::Cluster(cluster) => self.note_cluster_failure(cluster, None),
            Target::Fixed(_) => {}
        }
    }

    /// After a command that answered.
    pub(super) fn note_success(&self) {
        if let Target::Cluster(cluster) = &self.target {
            cluster.note_success();
        }
    }

    pub(super) fn note_cluster_failure(&self, cluster: &Cluster, e: Option<&RedisError>) {
        if cluster.note_failure(e) {
            tracing::warn!(
                after_ms = cluster::REMAKE_AFTER.as_millis() as u64,
                "store: the Redis Cluster connection failed throughout; remade from the configured URLs"
            );
        }
    }

    /// Runs one operation under [`COMMAND_TIMEOUT`], mapping failures to
    /// [`Error::Unavailable`]. A command that surely did not run (refused
    /// connection; for sentinels also `-READONLY` / `-MASTERDOWN`) is tried
    /// once more: by then the connection has started a new attempt, or the
    /// sentinels were asked again, which is what makes the first request
    /// after Redis comes back (or after a failover) succeed.
    pub(super) async fn run<T, F, Fut>(&self, op: F) -> Result<T, Error>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let attempt = async {
            let (conn, node) = self.conn().await?;
            let first = op(conn).await;
            let result = match first {
                Err(e) if not_executed(&e) => {
                    self.note_failure(node.as_deref(), &e);
                    let (conn, node) = self.conn().await?;
                    let again = op(conn).await;
                    if let Err(e) = &again {
                        self.note_failure(node.as_deref(), e);
                    }
                    again
                }
                Err(e) => {
                    self.note_failure(node.as_deref(), &e);
                    Err(e)
                }
                ok => ok,
            };
            if result.is_ok() {
                self.note_success();
            }
            result.map_err(|e| self.unavailable(&e))
        };
        match tokio::time::timeout(COMMAND_TIMEOUT, attempt).await {
            Ok(result) => result,
            Err(_) => {
                self.note_silence();
                Err(Error::Unavailable(format!(
                    "no answer within {}ms",
                    COMMAND_TIMEOUT.as_millis()
                )))
            }
        }
    }

    /// `cmd` then `WAIT`, pipelined on a lane of its own; see [`lanes`].
    /// The primary's answer, and whether enough replicas acknowledged: the
    /// second part is the [`Error::NotReplicated`] (already counted) when too
    /// few did, for a caller that must know what the primary did (the
    /// entries a read leased).
    pub(super) async fn replicated_answer<T>(
        &self,
        operation: Operation,
        replication: Replication,
        lanes: &Lanes,
        cmd: &Cmd,
        script: Option<&Script>,
    ) -> Result<(T, Result<(), Error>), Error>
    where
        T: redis::FromRedisValue + Send,
    {
        let mut pipe = redis::pipe();
        // Answers are read one by one: an error in either keeps its kind.
        pipe.ignore_errors()
            .add_command(cmd.clone())
            .cmd("WAIT")
            .arg(replication.replicas)
            .arg(millis(replication.timeout));
        let attempt = async {
            let mut tries = 0;
            loop {
                tries += 1;
                let node = match &self.target {
                    Target::Sentinel(primary) => Some(primary.node().await?),
                    Target::Fixed(_) | Target::Cluster(_) => None,
                };
                let generation = node.as_ref().map_or(0, |n| n.generation);
                let (permit, mut lane) = match lanes
                    .take(generation, node.as_ref().map(|n| &n.client))
                    .await
                {
                    Ok(taken) => taken,
                    Err(e) => {
                        self.note_failure(node.as_deref(), &e);
                        if not_executed(&e) && tries < 2 {
                            continue;
                        }
                        return Err(self.unavailable(&e));
                    }
                };
                let mut sent = send_with_wait::<T>(&mut lane.conn, &pipe).await;
                if let (Err(e), Some(script)) = (&sent, script)
                    && e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
                {
                    sent = match load(&mut lane.conn, script).await {
                        Ok(()) => send_with_wait::<T>(&mut lane.conn, &pipe).await,
                        Err(e) => Err(e),
                    };
                }
                match sent {
                    Ok((value, acked)) => {
                        lanes.give_back(lane);
                        drop(permit);
                        if acked < i64::from(replication.replicas) {
                            if let Some(family) = self.timeouts.get() {
                                family
                                    .get_or_create(&OperationLabel {
                                        operation: operation.label(),
                                    })
                                    .inc();
                            }
                            let short = Error::NotReplicated {
                                operation: operation.label(),
                                acked: acked.max(0),
                                wanted: replication.replicas,
                                timeout_ms: millis(replication.timeout),
                            };
                            return Ok((value, Err(short)));
                        }
                        return Ok((value, Ok(())));
                    }
                    Err(e) => {
                        drop(permit);
                        self.note_failure(node.as_deref(), &e);
                        if not_executed(&e) && tries < 2 {
                            continue;
                        }
                        return Err(self.unavailable(&e));
                    }
                }
            }
        };
        let limit = COMMAND_TIMEOUT.saturating_add(replication.timeout);
        match tokio::time::timeout(limit, attempt).await {
            Ok(result) => result,
            Err(_) => {
                self.note_silence();
                Err(Error::Unavailable(format!(
                    "no answer within {}ms",
                    limit.as_millis()
                )))
            }
        }
    }

    /// The client of a single-node store, for its write lanes.
    pub(super) fn node_client(&self) -> Result<redis::Client, Error> {
        let Some(url) = self.urls.first() else {
            return Err(Error::Unavailable("no Redis URL".into()));
        };
        redis::Client::open(url.as_str())
            .map_err(|e| Error::Unavailable(scrub(&e.to_string(), &self.secrets)))
    }

    pub(super) fn unavailable(&self, e: &RedisError) -> Error {
        Error::Unavailable(scrub(&e.to_string(), &self.secrets))
    }
}

/// `EVALSHA` of `script` on `keys` with `args`, for a pipeline with `WAIT`.
fn evalsha(script: &Script, keys: &[&str], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// A cluster client whose answers may take `wait` longer than usual (the
/// `WAIT` timeout, for write lanes; zero otherwise).
pub(super) fn cluster_client(
    urls: &[String],
    wait: Duration,
    secrets: &[String],
) -> Result<ClusterClient, Error> {
    if urls.is_empty() {
        return Err(Error::Unavailable("no Redis Cluster URL given".into()));
    }
    ClusterClient::builder(urls.iter().map(String::as_str))
        .connection_timeout(CONNECT_TIMEOUT)
        .response_timeout(RESPONSE_TIMEOUT.saturating_add(wait))
        .overall_response_timeout(Some(COMMAND_TIMEOUT.saturating_add(wait)))
        .build()
        .map_err(|e| {
            Error::Unavailable(scrub(&format!("invalid Redis Cluster URLs: {e}"), secrets))
        })
}
