//! What every request reads: the current runtime (swapped whole on reload) and
//! the parts that live as long as the process (store, upstream pool, metrics).

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::forward::Forwarder;
use crate::keyfetch::Fetcher;
use crate::metrics::Metrics;
use crate::route::Router;
use crate::store::Store;
use crate::tls::{self, SharedAcceptor};

/// One loaded config and what is derived from it. A request takes a snapshot
/// at its start and finishes on it, whatever reloads happen meanwhile.
#[derive(Debug)]
pub struct Runtime {
    pub config: Config,
    pub router: Router,
}

impl Runtime {
    pub fn new(config: Config) -> Self {
        let router = Router::new(config.sources.iter().map(|s| s.path.as_str()));
        Runtime { config, router }
    }
}

/// Why the shared state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Tls(#[from] tls::Error),
    #[error(transparent)]
    Traces(#[from] crate::traces::Error),
}

pub struct State {
    runtime: ArcSwap<Runtime>,
    pub store: Store,
    pub forwarder: Forwarder,
    pub metrics: Metrics,
    /// Provider keys (SNS and PayPal certificates, Google's JWKS), cached
    /// across reloads.
    pub keys: Fetcher,
    /// Each source's circuit breaker as this process knows it.
    pub breakers: crate::breaker::Breakers,
    /// The public listener's TLS acceptor when `[server.tls]` is set at start.
    pub tls: Option<SharedAcceptor>,
    /// Store writes that finish after their request was answered (a nonce
    /// commit on Redis without `min_replicas`); the drain waits for them.
    pub behind: TaskTracker,
    /// The tracer, when `[tracing]` was set at start (a reload keeps it).
    pub traces: Option<Arc<crate::traces::Traces>>,
    /// What this process refused lately (DESIGN §7d).
    pub rejections: crate::rejections::Rejections,
}

impl State {
    /// The delivery steps of this process under `config` (the config in
    /// force when the delivery started).
    pub fn steps<'a>(&'a self, config: &'a Config) -> crate::delivery::Steps<'a> {
        crate::delivery::Steps {
            config,
            store: &self.store,
            forwarder: &self.forwarder,
            metrics: &self.metrics,
            breakers: &self.breakers,
            traces: self.traces.as_ref(),
        }
    }

    /// Builds the shared state; fails when `[server.tls]` names unusable files.
    pub fn new(config: Config, store: Store) -> Result<Self, Error> {
        let tls = match &config.server.tls {
            Some(settings) => Some(Arc::new(ArcSwap::from_pointee(tls::acceptor(settings)?))),
            None => None,
        };
        let metrics = Metrics::new();
        crate::seal::count_unopenable(metrics.store_unopenable.clone());
        store.instrument(crate::store::Instruments {
            replication_timeouts: metrics.replication_timeouts.clone(),
            trail_writes_dropped: metrics.trail_writes_dropped.clone(),
            sync_seconds: metrics.store_sync.clone(),
            batch_size: metrics.store_batch.clone(),
        });
        let traces = match &config.tracing {
            Some(settings) => Some(crate::traces::Traces::start(
                settings,
                metrics.trace_spans_dropped.clone(),
            )?),
            None => None,
        };
        let keys = Fetcher::default();
        keys.count_failures(metrics.key_fetch_failures.clone());
        Ok(State {
            runtime: ArcSwap::from_pointee(Runtime::new(config)),
            store,
            forwarder: Forwarder::new(),
            metrics,
            keys,
            breakers: crate::breaker::Breakers::default(),
            tls,
            behind: TaskTracker::new(),
            traces,
            rejections: crate::rejections::Rejections::default(),
        })
    }

    /// The runtime in force now.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.load_full()
    }

    /// Puts a new, already validated config in force for the next requests.
    pub fn swap(&self, config: Config) {
        self.runtime.store(Arc::new(Runtime::new(config)));
    }
}
