//! Config reload: validate the new file first, swap it in only if it is valid.
//!
//! An invalid config is refused, logged and counted; the old one keeps
//! serving. Requests already running finish on the runtime they started with.
//! The listeners, the store and the trace exporter are fixed at start: a
//! change to them is logged as needing a restart and the rest of the new
//! config still applies.

use std::path::Path;

use crate::config::Config;
use crate::state::State;

/// Reloads `path` into `state`. Returns whether the new config is in force.
pub fn reload(state: &State, path: &Path) -> bool {
    match Config::load(path) {
        Ok(config) => {
            if let Err(e) = reload_tls(state, &config) {
                state.metrics.reload(false);
                tracing::error!(path = %path.display(), error = %e, "config reload refused; the previous config keeps serving");
                return false;
            }
            let current = state.runtime();
            let old = &current.config;
            if old.server.listen != config.server.listen || old.admin.listen != config.admin.listen
            {
                tracing::warn!("listen addresses changed: they take effect on restart");
            }
            if old.store.kind != config.store.kind
                || old.store.min_replicas != config.store.min_replicas
                || old.store.replica_timeout != config.store.replica_timeout
                || old.store.key_prefix != config.store.key_prefix
            {
                tracing::warn!("store settings changed: they take effect on restart");
            }
            let exporter = |c: &Config| {
                c.tracing
                    .as_ref()
                    .map(|t| (t.traces_url.clone(), t.sample_ratio, t.service_name.clone()))
            };
            if exporter(old) != exporter(&config) {
                tracing::warn!(
                    "tracing settings changed: otlp_endpoint, sample_ratio and service_name \
                     take effect on restart (trace_url at once)"
                );
            }
            crate::config::warn_widened(&config.sources);
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

/// Loads the new certificate and key (when TLS was on at start) and puts them
/// in force for new connections.
fn reload_tls(state: &State, config: &Config) -> Result<(), crate::tls::Error> {
    match (&state.tls, &config.server.tls) {
        (Some(acceptor), Some(settings)) => {
            acceptor.store(std::sync::Arc::new(crate::tls::acceptor(settings)?));
        }
        (None, Some(_)) | (Some(_), None) => {
            tracing::warn!("turning TLS on or off takes effect on restart");
        }
        (None, None) => {}
    }
    Ok(())
}

/// How often the config file and secret files are compared with what is loaded.
pub const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Reloads whenever the config file or a `{ file = … }` secret changes.
///
/// It compares contents (a SHA-256 over every watched file) on an interval
/// rather than listening for filesystem events: Kubernetes updates mounted
/// ConfigMaps and Secrets by swapping a `..data` symlink, which event watchers
/// on the file itself miss, and reading a few small files every two seconds
/// costs nothing. A change that fails validation is refused once and not
/// retried until the files change again.
pub async fn watch(
    state: std::sync::Arc<State>,
    path: std::path::PathBuf,
    interval: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut seen = fingerprint(&state, &path);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let now = fingerprint(&state, &path);
        if now != seen {
            tracing::info!(path = %path.display(), "config or secret file changed");
            reload(&state, &path);
            // After a successful reload the set of secret files may differ.
            seen = fingerprint(&state, &path);
        }
    }
}

/// A digest of the config file and every secret file the running config reads.
fn fingerprint(state: &State, path: &Path) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let runtime = state.runtime();
    let tls = runtime.config.server.tls.iter();
    let files = std::iter::once(path)
        .chain(tls.flat_map(|t| [t.cert.as_path(), t.key.as_path()]))
        .chain(runtime.config.admin.token_file.as_deref())
        .chain(
            runtime
                .config
                .sources
                .iter()
                .flat_map(|s| s.secret_files.iter().map(|p| p.as_path())),
        );
    for file in files {
        hasher.update(file.as_os_str().as_encoded_bytes());
        match std::fs::read(file) {
            Ok(bytes) => {
                hasher.update([1]);
                hasher.update(Sha256::digest(&bytes));
            }
            Err(e) => {
                hasher.update([0]);
                hasher.update(e.kind().to_string().as_bytes());
            }
        }
    }
    hasher.finalize().into()
}
