//! Connections for writes followed by `WAIT` (`[store] min_replicas`).
//!
//! `WAIT` blocks the connection it is sent on until enough replicas
//! acknowledge or its timeout passes. The multiplexed connection every request
//! shares cannot carry it: one write waiting for an absent replica would hold
//! up every command queued behind it, `/readyz`'s `PING` included. So each such
//! write takes a connection of its own from this small pool, sends the write
//! and the `WAIT` in one pipeline on it (the `WAIT` then covers exactly that
//! write, on the node that took it: for a cluster, the master of the key's
//! slot, since the pipeline is routed by its one key), and gives it back.

use std::sync::Mutex;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, RedisError, RedisResult, Script, Value};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::{CONNECT_TIMEOUT, RESPONSE_TIMEOUT};

/// Writes with `WAIT` in progress at once, per process; more wait for a lane.
pub const LANES: usize = 32;

/// Where new lanes connect.
pub enum Opener {
    /// One node (`kind = "redis"`).
    Node(redis::Client),
    /// A cluster: each lane is a cluster connection of its own.
    Cluster(Box<ClusterClient>),
    /// The sentinels' current primary, given at checkout.
    Primary,
}

/// One exclusive connection.
pub enum LaneConn {
    Node(MultiplexedConnection),
    Cluster(ClusterConnection),
}

pub struct Lane {
    /// For a sentinel primary: the lookup it was opened after; a lane of an
    /// older primary is dropped rather than reused.
    pub generation: u64,
    pub conn: LaneConn,
}

pub struct Lanes {
    opener: Opener,
    /// The per-command answer bound: the `WAIT` timeout plus the usual.
    response_timeout: Duration,
    idle: Mutex<Vec<Lane>>,
    permits: Semaphore,
}

impl Lanes {
    pub fn new(opener: Opener, wait: Duration) -> Lanes {
        Lanes {
            opener,
            response_timeout: RESPONSE_TIMEOUT.saturating_add(wait),
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(LANES),
        }
    }

    /// A free lane (an idle one of this `generation`, or a new one) and the
    /// permit that makes it exclusive. `primary` is the client of the
    /// sentinels' current primary, for [`Opener::Primary`].
    pub async fn take(
        &self,
        generation: u64,
        primary: Option<&redis::Client>,
    ) -> RedisResult<(SemaphorePermit<'_>, Lane)> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| closed("the write lanes are closed"))?;
        let reused = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.retain(|lane| lane.generation == generation);
            idle.pop()
        };
        if let Some(lane) = reused {
            return Ok((permit, lane));
        }
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(self.response_timeout));
        let conn = match (&self.opener, primary) {
            (Opener::Node(client), _) | (Opener::Primary, Some(client)) => LaneConn::Node(
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?,
            ),
            (Opener::Cluster(client), _) => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(CONNECT_TIMEOUT)
                    .set_response_timeout(self.response_timeout);
                LaneConn::Cluster(client.get_async_connection_with_config(config).await?)
            }
            (Opener::Primary, None) => return Err(closed("no primary to connect to")),
        };
        Ok((permit, Lane { generation, conn }))
    }

    /// Returns a lane that answered; one that failed is dropped instead.
    pub fn give_back(&self, lane: Lane) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lane);
    }
}

fn closed(what: &'static str) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Client, what))
}

/// Sends the write-and-`WAIT` pipeline; returns the write's answer and the
/// number of replicas that acknowledged.
pub(super) async fn send_with_wait<T>(
    conn: &mut LaneConn,
    pipe: &redis::Pipeline,
) -> redis::RedisResult<(T, i64)>
where
    T: redis::FromRedisValue,
{
    let answers: Vec<Value> = match conn {
        LaneConn::Node(c) => pipe.query_async(c).await?,
        LaneConn::Cluster(c) => pipe.query_async(c).await?,
    };
    let mut answers = answers.into_iter();
    let (Some(written), Some(acked)) = (answers.next(), answers.next()) else {
        return Err(RedisError::from((
            ErrorKind::UnexpectedReturnType,
            "a write and WAIT answered with fewer than two replies",
        )));
    };
    let written = into_result(written)?;
    let acked = into_result(acked)?;
    Ok((
        redis::from_redis_value(written)?,
        redis::from_redis_value(acked)?,
    ))
}

fn into_result(value: Value) -> redis::RedisResult<Value> {
    match value {
        Value::ServerError(e) => Err(e.into()),
        other => Ok(other),
    }
}

/// `SCRIPT LOAD` on a lane (a cluster lane loads it on every master).
pub(super) async fn load(conn: &mut LaneConn, script: &Script) -> redis::RedisResult<()> {
    match conn {
        LaneConn::Node(c) => script.load_async(c).await.map(drop),
        LaneConn::Cluster(c) => script.load_async(c).await.map(drop),
    }
}
