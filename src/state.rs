//! What every request reads: the current runtime (swapped whole on reload) and
//! the parts that live as long as the process (store, upstream pool, metrics).

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::config::Config;
use crate::forward::Forwarder;
use crate::metrics::Metrics;
use crate::route::Router;
use crate::store::Store;

/// One loaded config and what is derived from it. A request takes a snapshot
/// at its start and finishes on it, whatever reloads happen meanwhile.
#[derive(Debug)]
pub struct Runtime {
    pub config: Config,
    pub router: Router,
}

impl Runtime {
    pub fn new(config: Config) -> Self {
        let router = Router::new(&config.sources);
        Runtime { config, router }
    }
}

pub struct State {
    runtime: ArcSwap<Runtime>,
    pub store: Store,
    pub forwarder: Forwarder,
    pub metrics: Metrics,
}

impl State {
    pub fn new(config: Config, store: Store) -> Self {
        State {
            runtime: ArcSwap::from_pointee(Runtime::new(config)),
            store,
            forwarder: Forwarder::new(),
            metrics: Metrics::new(),
        }
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
