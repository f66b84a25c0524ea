//! The `hookgate` binary: parses the command line, sets up logging, and hands
//! over to the library. Exit codes: 0 success, 1 a refused config or failed
//! command (for `dlq replay`: any entry not delivered), 2 a usage error.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use hookgate::cli::{self, Cli, Command, LogFormat};
use hookgate::config::Config;
use hookgate::state::State;
use hookgate::{Listeners, reload};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// jemalloc rather than the system allocator: hyper, http and tokio allocate
/// and free small blocks on every request, and in the profile of a forwarded
/// event glibc's malloc and free took 11% of hookgate's CPU time.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { config, log_format } => {
            init_tracing(log_format);
            let runtime = match server_runtime() {
                Ok(runtime) => runtime,
                Err(e) => {
                    eprintln!("hookgate: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let code = runtime.block_on(serve(config));
            hookgate::log::flush();
            code
        }
        Command::Check { config } => cli::check::check(&config),
        Command::Sign {
            config,
            source,
            body_file,
            id,
            timestamp,
        } => cli::sign::sign(
            &config,
            &source,
            body_file.as_deref(),
            id.as_deref(),
            timestamp,
        ),
        Command::Filter { config, action } => match given(config, "filter") {
            Ok(config) => cli::filter::command(&config, action),
            Err(code) => code,
        },
        Command::Events { config, action } => match given(config, "events") {
            Ok(config) => block_on(cli::events::events(&config, action)),
            Err(code) => code,
        },
        Command::Sources { config, action } => match given(config, "sources") {
            Ok(config) => block_on(cli::sources::sources(&config, action)),
            Err(code) => code,
        },
        Command::Store { config, action } => match given(config, "store") {
            Ok(config) => block_on(cli::store::store(&config, action)),
            Err(code) => code,
        },
        Command::Dlq { config, action } => match given(config, "dlq") {
            Ok(config) => block_on(cli::dlq::dlq(&config, action)),
            Err(code) => code,
        },
        Command::Rejections {
            config,
            source,
            outcome,
            limit,
        } => match given(config, "rejections") {
            Ok(config) => block_on(cli::rejections::rejections(
                &config,
                source.as_deref(),
                outcome.as_deref(),
                limit,
            )),
            Err(code) => code,
        },
    }
}

/// The config path a store command needs (`--config`, or `$HOOKGATE_CONFIG`).
fn given(config: Option<PathBuf>, command: &str) -> Result<PathBuf, ExitCode> {
    config.ok_or_else(|| {
        eprintln!("hookgate {command}: give the config with --config PATH (or HOOKGATE_CONFIG)");
        ExitCode::from(2)
    })
}

/// Runs a command's future on a runtime of its own.
fn block_on(command: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(command),
        Err(e) => {
            eprintln!("hookgate: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HOOKGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(hookgate::log::stdout);
    match format {
        LogFormat::Json => builder.event_format(hookgate::log::JsonLines).init(),
        // Colour only for a terminal: a pipe or a file gets plain text.
        LogFormat::Text => builder.with_ansi(std::io::stdout().is_terminal()).init(),
    }
}

/// The runtime `run` serves on: one worker thread per CPU hookgate may use
/// (its affinity mask and cgroup CPU quota count), and with a single CPU the
/// current-thread scheduler, which runs every task on the main thread with
/// no cross-thread hand-offs: a sidecar limited to one CPU pays nothing for
/// work stealing it cannot use.
fn server_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut builder = if cpus == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()
}

async fn serve(path: PathBuf) -> ExitCode {
    let config = match Config::load(&path) {
        Ok(config) => config,
        Err(e) => {
            // The problems go to standard error once, as `check` prints them;
            // the log line only counts them.
            let shown = e.display_in(&path).to_string();
            let problems = shown.lines().count();
            tracing::error!(
                problems,
                config = %path.display(),
                "config refused; the problems are on standard error"
            );
            eprintln!("{shown}");
            return ExitCode::FAILURE;
        }
    };
    let store = match hookgate::open_store(&config) {
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
            let table = match e {
                hookgate::state::Error::Tls(_) => "server.tls",
                hookgate::state::Error::Traces(_) => "tracing",
            };
            tracing::error!(error = %e, "{table} refused");
            eprintln!("hookgate: {table}: {e}");
            return ExitCode::FAILURE;
        }
    };
    started(&state, public.local_addr().ok(), admin.local_addr().ok());
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

/// One line saying what is on. (An app that cannot be reached is warned
/// about once by the forwarder, at the first connection it refuses.)
fn started(
    state: &Arc<State>,
    public: Option<std::net::SocketAddr>,
    admin: Option<std::net::SocketAddr>,
) {
    let runtime = state.runtime();
    let config = &runtime.config;
    let queued = config
        .sources
        .iter()
        .filter(|s| s.delivery == hookgate::config::Delivery::Queue)
        .count();
    let names: Vec<&str> = config
        .sources
        .iter()
        .map(|s| s.name.as_str())
        .take(20)
        .collect();
    let tracing_to = config
        .tracing
        .as_ref()
        .map(|t| shown_url(&t.traces_url))
        .unwrap_or_else(|| "off".to_owned());
    tracing::info!(
        store = state.store.kind(),
        sources = config.sources.len(),
        queue_sources = queued,
        names = names.join(",").as_str(),
        upstream = shown_url(&config.server.upstream).as_str(),
        public = %public.unwrap_or(config.server.listen),
        admin = %admin.unwrap_or(config.admin.listen),
        console = if config.admin.token.is_some() { "on" } else { "off" },
        tracing = tracing_to.as_str(),
        "hookgate started"
    );
}

/// Scheme, host, port and path of `u`: no credentials a URL could carry.
fn shown_url(u: &http::Uri) -> String {
    let port = u.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{}{port}{}",
        u.scheme_str().unwrap_or("http"),
        u.host().unwrap_or(""),
        u.path()
    )
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
