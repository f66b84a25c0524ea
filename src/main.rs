//! The `hookgate` binary: parses the command line, sets up logging, and hands
//! over to the library. Exit codes: 0 success, 1 a refused config or failed
//! command, 2 a usage error (from clap).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use hookgate::cli::{Cli, Command, LogFormat};
use hookgate::config::Config;
use hookgate::state::State;
use hookgate::{Listeners, reload};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { config, log_format } => {
            init_tracing(log_format);
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime,
                Err(e) => {
                    eprintln!("hookgate: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            runtime.block_on(serve(config))
        }
        Command::Check { config } => check(&config),
        Command::Sign {
            config,
            source,
            body_file,
            id,
            timestamp,
        } => sign(
            &config,
            &source,
            body_file.as_deref(),
            id.as_deref(),
            timestamp,
        ),
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HOOKGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stdout);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
        LogFormat::Text => builder.init(),
    }
}

async fn serve(path: PathBuf) -> ExitCode {
    let config = match Config::load(&path) {
        Ok(config) => config,
        Err(e) => {
            tracing::error!(problems = %e, "config refused");
            eprintln!("{}", e.display_in(&path));
            return ExitCode::FAILURE;
        }
    };
    let store = match hookgate::open_store(&config.store) {
        Ok(store) => store,
        Err(e) => {
            tracing::error!(error = %e, "cannot open the store");
            return ExitCode::FAILURE;
        }
    };
    let public = match TcpListener::bind(config.server.listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(addr = %config.server.listen, error = %e, "cannot bind server.listen");
            return ExitCode::FAILURE;
        }
    };
    let admin = match TcpListener::bind(config.admin.listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(addr = %config.admin.listen, error = %e, "cannot bind admin.listen");
            return ExitCode::FAILURE;
        }
    };
    let state = match State::new(config, store) {
        Ok(state) => Arc::new(state),
        Err(e) => {
            tracing::error!(error = %e, "server.tls refused");
            eprintln!("hookgate: server.tls: {e}");
            return ExitCode::FAILURE;
        }
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(reload::watch(
        Arc::clone(&state),
        path.clone(),
        reload::WATCH_INTERVAL,
        shutdown.clone(),
    ));
    if let Err(e) = watch_signals(Arc::clone(&state), path, shutdown.clone()) {
        tracing::error!(error = %e, "cannot install signal handlers");
        return ExitCode::FAILURE;
    }
    hookgate::run(state, Listeners { public, admin }, shutdown).await;
    ExitCode::SUCCESS
}

/// SIGTERM / SIGINT start the drain; SIGHUP reloads the config.
fn watch_signals(
    state: Arc<State>,
    path: PathBuf,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => { tracing::info!(signal = "SIGTERM", "shutdown requested"); break }
                _ = int.recv() => { tracing::info!(signal = "SIGINT", "shutdown requested"); break }
                _ = hup.recv() => { reload::reload(&state, &path); }
            }
        }
        shutdown.cancel();
    });
    Ok(())
}

fn check(path: &Path) -> ExitCode {
    match Config::load(path) {
        Ok(config) => {
            if let Some(tls) = &config.server.tls
                && let Err(e) = hookgate::tls::acceptor(tls)
            {
                eprintln!("{}: server.tls: {e}", path.display());
                return ExitCode::FAILURE;
            }
            println!(
                "{}: OK ({} source{}, {} store)",
                path.display(),
                config.sources.len(),
                if config.sources.len() == 1 { "" } else { "s" },
                match config.store.kind {
                    hookgate::config::StoreKind::Memory => "memory",
                    hookgate::config::StoreKind::Redis { .. } => "redis",
                    hookgate::config::StoreKind::RedisCluster { .. } => "redis-cluster",
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", e.display_in(path));
            ExitCode::FAILURE
        }
    }
}

fn sign(
    path: &Path,
    source: &str,
    body_file: Option<&Path>,
    id: Option<&str>,
    timestamp: Option<i64>,
) -> ExitCode {
    let config = match Config::load(path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{}", e.display_in(path));
            return ExitCode::FAILURE;
        }
    };
    let Some(found) = config.sources.iter().find(|s| s.name == source) else {
        let names: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
        eprintln!(
            "hookgate sign: no source named {source:?} (configured: {})",
            names.join(", ")
        );
        return ExitCode::FAILURE;
    };
    let body = match read_body(body_file) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("hookgate sign: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(key) = found.keys.first() else {
        eprintln!("hookgate sign: source {source:?} has no secret");
        return ExitCode::FAILURE;
    };
    let timestamp = timestamp.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    });
    let lines = match found.scheme.sign(key, &body, id, timestamp) {
        Ok(lines) => lines,
        Err(why) => {
            eprintln!(
                "hookgate sign: source {source:?} uses scheme \"{}\": {why}",
                found.scheme.name()
            );
            return ExitCode::FAILURE;
        }
    };
    for (name, value) in lines {
        println!("{name}: {value}");
    }
    ExitCode::SUCCESS
}

fn read_body(body_file: Option<&Path>) -> Result<Vec<u8>, String> {
    match body_file {
        Some(path) => {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        None if std::io::stdin().is_terminal() => {
            Err("give the body with --body-file FILE (or pipe it on standard input)".to_owned())
        }
        None => {
            let mut body = Vec::new();
            std::io::stdin()
                .read_to_end(&mut body)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            Ok(body)
        }
    }
}
