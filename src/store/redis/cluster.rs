//! The connection to a Redis Cluster, remade when it stops recovering.
//!
//! The cluster connection of the `redis` crate follows slot moves and node
//! restarts by itself, except in one case: when a slot refresh during a
//! restart of the whole cluster leaves it with no node connection at all, it
//! retries the refresh forever and every command fails. So a connection that
//! has failed without a single success for [`REMAKE_AFTER`] is replaced by a
//! new one built from the configured URLs; the old one's background task
//! ends when its last clone (a command in flight) is dropped.
//!
//! Invariants: only connection-class failures (see [`is_connection_failure`])
//! start the clock, and any success stops it; at most one replacement per
//! [`REMAKE_AFTER`].

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, RedisError};

/// How long a connection may fail without a success before it is replaced.
pub const REMAKE_AFTER: Duration = Duration::from_secs(2);

/// The shared cluster connection and its failure clock.
pub struct Cluster {
    client: ClusterClient,
    config: ClusterConfig,
    state: Mutex<State>,
}

struct State {
    conn: ClusterConnection,
    /// When the current run of failures began; `None` after a success.
    failing_since: Option<Instant>,
    /// When `conn` was made.
    made: Instant,
}

impl Cluster {
    /// A pending connection (no I/O yet) on `client`.
    pub fn new(client: ClusterClient, config: ClusterConfig) -> Self {
        let conn = client.get_pending_async_connection_with_config(config.clone());
        Cluster {
            client,
            config,
            state: Mutex::new(State {
                conn,
                failing_since: None,
                made: Instant::now(),
            }),
        }
    }

    /// The connection to send a command on.
    pub fn conn(&self) -> ClusterConnection {
        self.state().conn.clone()
    }

    /// After a command answered (an error reply from a node counts).
    pub fn note_success(&self) {
        let mut state = self.state();
        state.failing_since = None;
    }

    /// After a command failed with `e` (`None`: no answer in time). Replaces
    /// the connection when it has failed for [`REMAKE_AFTER`] and is at least
    /// that old; returns whether it did.
    pub fn note_failure(&self, e: Option<&RedisError>) -> bool {
        if e.is_some_and(|e| !is_connection_failure(e)) {
            self.note_success();
            return false;
        }
        let now = Instant::now();
        let mut state = self.state();
        let since = *state.failing_since.get_or_insert(now);
        if now.duration_since(since) < REMAKE_AFTER || now.duration_since(state.made) < REMAKE_AFTER
        {
            return false;
        }
        state.conn = self
            .client
            .get_pending_async_connection_with_config(self.config.clone());
        state.made = now;
        true
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays whole whatever panicked while holding the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `e` says the cluster could not be reached, rather than that a
/// node answered with an error.
pub fn is_connection_failure(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_timeout()
        || e.is_unrecoverable_error()
        || e.kind() == ErrorKind::ClusterConnectionNotFound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        let client = ClusterClient::new(vec!["redis://127.0.0.1:1"]).expect("client");
        Cluster::new(client, ClusterConfig::new())
    }

    #[tokio::test]
    async fn a_connection_failing_for_the_bound_is_replaced_once_per_bound() {
        let cluster = cluster();
        let lost: RedisError =
            (ErrorKind::ClusterConnectionNotFound, "No connections found").into();
        assert!(
            !cluster.note_failure(Some(&lost)),
            "the first failure starts the clock"
        );
        {
            let mut state = cluster.state();
            state.failing_since = Some(Instant::now() - REMAKE_AFTER);
            state.made = Instant::now() - REMAKE_AFTER;
        }
        assert!(cluster.note_failure(Some(&lost)));
        assert!(
            !cluster.note_failure(None),
            "a new connection gets its own time to connect"
        );
    }

    #[tokio::test]
    async fn a_success_or_a_node_error_stops_the_clock() {
        let cluster = cluster();
        let lost: RedisError = (ErrorKind::Io, "reset").into();
        cluster.note_failure(Some(&lost));
        cluster.note_success();
        assert!(cluster.state().failing_since.is_none());
        cluster.note_failure(None);
        let reply: RedisError = (ErrorKind::Client, "bad reply").into();
        assert!(!is_connection_failure(&reply));
        cluster.note_failure(Some(&reply));
        assert!(cluster.state().failing_since.is_none());
    }
}
