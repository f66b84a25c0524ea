//! Config reload: validate the new file first, swap it in only if it is valid.
//!
//! An invalid config is refused, logged and counted; the old one keeps
//! serving. Requests already running finish on the runtime they started with.
//! The listeners and the store are fixed at start: a change to them is logged
//! as needing a restart and the rest of the new config still applies.

use std::path::Path;

use crate::config::Config;
use crate::state::State;

/// Reloads `path` into `state`. Returns whether the new config is in force.
pub fn reload(state: &State, path: &Path) -> bool {
    match Config::load(path) {
        Ok(config) => {
            let current = state.runtime();
            let old = &current.config;
            if old.server.listen != config.server.listen || old.admin.listen != config.admin.listen {
                tracing::warn!("listen addresses changed: they take effect on restart");
            }
            if old.store.kind != config.store.kind {
                tracing::warn!("store settings changed: they take effect on restart");
            }
            state.swap(config);
            state.metrics.reload(true);
            tracing::info!(path = %path.display(), "config reloaded");
            true
        }
        Err(e) => {
            state.metrics.reload(false);
            tracing::error!(path = %path.display(), problems = %e, "config reload refused; the previous config keeps serving");
            false
        }
    }
}
