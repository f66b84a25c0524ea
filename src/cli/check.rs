//! `hookgate check`: the config and its secrets, the TLS material, the
//! sentinels' master name, an existing sqlite file's schema, and whether a
//! Redis store may evict; exit 0, or 1 with every problem.

use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;

pub fn check(path: &Path) -> ExitCode {
    match Config::load(path) {
        Ok(config) => {
            if let Some(tls) = &config.server.tls
                && let Err(e) = crate::tls::acceptor(tls)
            {
                eprintln!("{}: server.tls: {e}", path.display());
                return ExitCode::FAILURE;
            }
            if let crate::config::StoreKind::RedisSentinel(sentinel) = &config.store.kind
                && !check_sentinels(path, sentinel, config.store.master_line)
            {
                return ExitCode::FAILURE;
            }
            if let crate::config::StoreKind::Sqlite { path: db, .. } = &config.store.kind {
                // A file written by a newer release is refused here as `run`
                // would refuse it, before anything opens it for writing.
                use crate::store::sqlite::schema;
                let newer = schema::file_version(db).and_then(|v| v.map_or(Ok(()), schema::known));
                if let Err(e) = newer {
                    eprintln!("{}: store.path: {}: {e}", path.display(), db.display());
                    return ExitCode::FAILURE;
                }
            }
            warn_eviction(path, &config);
            println!(
                "{}: OK ({} source{}, {} store)",
                path.display(),
                config.sources.len(),
                if config.sources.len() == 1 { "" } else { "s" },
                match config.store.kind {
                    crate::config::StoreKind::Memory => "memory",
                    crate::config::StoreKind::Sqlite { .. } => "sqlite",
                    crate::config::StoreKind::Redis { .. } => "redis",
                    crate::config::StoreKind::RedisCluster { .. } => "redis-cluster",
                    crate::config::StoreKind::RedisSentinel(_) => "redis-sentinel",
                }
            );
            // Standard Webhooks sources that verify with public keys only:
            // `hookgate sign` has no whsec_ secret to sign with.
            let public: Vec<&str> = config
                .sources
                .iter()
                .filter(|s| matches!(s.scheme.name(), "standard" | "gemini"))
                .filter(|s| s.scheme.signing_key(&s.keys).is_none())
                .map(|s| s.name.as_str())
                .collect();
            if !public.is_empty() {
                println!(
                    "note: public keys only (hookgate sign cannot sign for them): {}",
                    public.join(", ")
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", e.display_in(path));
            ExitCode::FAILURE
        }
    }
}

/// How long `check` waits for the Redis store to answer `INFO`.
const CHECK_STORE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Warns on stderr when the Redis store may evict keys, or when it cannot be
/// asked; never refuses the config (the store may be down while a config is
/// checked, and an evicting store is the operator's call).
fn warn_eviction(path: &Path, config: &Config) {
    use crate::config::StoreKind;
    // Only Redis evicts; opening any other store here would create its file.
    if !matches!(
        config.store.kind,
        StoreKind::Redis { .. } | StoreKind::RedisCluster { .. } | StoreKind::RedisSentinel(_)
    ) {
        return;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hookgate: cannot start the async runtime: {e}");
            return;
        }
    };
    let read = runtime.block_on(async {
        let store = crate::open_store(config)?;
        match tokio::time::timeout(CHECK_STORE_TIMEOUT, store.eviction()).await {
            Ok(read) => read,
            Err(_) => Err(crate::store::Error::Unavailable(format!(
                "no answer within {}s",
                CHECK_STORE_TIMEOUT.as_secs()
            ))),
        }
    });
    match read {
        Ok(Some(seen)) if seen.evicting() => {
            eprintln!("{}: store: warning: {}", path.display(), seen.warning());
        }
        Ok(_) => {}
        Err(e) => eprintln!(
            "{}: store: warning: could not reach the store to read its eviction policy ({e})",
            path.display()
        ),
    }
}

/// Asks the sentinels whether they monitor `master`: refused when some
/// answer and none does; a warning when none answers (they may be starting,
/// and `/readyz` reports it then).
fn check_sentinels(
    path: &Path,
    sentinel: &crate::config::Sentinel,
    master_line: Option<usize>,
) -> bool {
    use crate::store::redis::sentinel::{Probe, probe};
    let probed = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(probe(&sentinel.sentinels, &sentinel.master)),
        Err(e) => {
            eprintln!("hookgate: cannot start the async runtime: {e}");
            return false;
        }
    };
    let at = match master_line {
        Some(line) => format!("{}:{line}", path.display()),
        None => path.display().to_string(),
    };
    match probed {
        Probe::Known => true,
        Probe::Unknown => {
            eprintln!(
                "{at}: store.master: the sentinels answer, but none monitors a master named {:?}",
                sentinel.master
            );
            false
        }
        Probe::Unreachable => {
            eprintln!(
                "{at}: store.sentinels: warning: no sentinel answered, so the master name {:?} is unchecked; /readyz stays 503 until they name a primary",
                sentinel.master
            );
            true
        }
    }
}
