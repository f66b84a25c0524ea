//! The `hookgate` binary: parses the command line, sets up logging, and hands
//! over to the library. Exit codes: 0 success, 1 a refused config or failed
//! command (for `dlq replay`: any entry not delivered), 2 a usage error.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use hookgate::cli::{Cli, Command, DlqAction, LogFormat};
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
        Command::Events { config, action } => {
            let Some(config) = config else {
                eprintln!(
                    "hookgate events: give the config with --config PATH (or HOOKGATE_CONFIG)"
                );
                return ExitCode::from(2);
            };
            match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime.block_on(events(&config, action)),
                Err(e) => {
                    eprintln!("hookgate: cannot start the async runtime: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Filter { config, action } => {
            let Some(config) = config else {
                eprintln!(
                    "hookgate filter: give the config with --config PATH (or HOOKGATE_CONFIG)"
                );
                return ExitCode::from(2);
            };
            filter_test(&config, action)
        }
        Command::Sources { config, action } => {
            let Some(config) = config else {
                eprintln!(
                    "hookgate sources: give the config with --config PATH (or HOOKGATE_CONFIG)"
                );
                return ExitCode::from(2);
            };
            match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime.block_on(sources(&config, action)),
                Err(e) => {
                    eprintln!("hookgate: cannot start the async runtime: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Dlq { config, action } => {
            let Some(config) = config else {
                eprintln!("hookgate dlq: give the config with --config PATH (or HOOKGATE_CONFIG)");
                return ExitCode::from(2);
            };
            match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime.block_on(dlq(&config, action)),
                Err(e) => {
                    eprintln!("hookgate: cannot start the async runtime: {e}");
                    ExitCode::FAILURE
                }
            }
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
        store = state.store.engine(),
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

fn check(path: &Path) -> ExitCode {
    match Config::load(path) {
        Ok(config) => {
            if let Some(tls) = &config.server.tls
                && let Err(e) = hookgate::tls::acceptor(tls)
            {
                eprintln!("{}: server.tls: {e}", path.display());
                return ExitCode::FAILURE;
            }
            if let hookgate::config::StoreKind::RedisSentinel(sentinel) = &config.store.kind
                && !check_sentinels(path, sentinel, config.store.master_line)
            {
                return ExitCode::FAILURE;
            }
            if let hookgate::config::StoreKind::Sqlite { path: db, .. } = &config.store.kind {
                // A file written by a newer release is refused here as `run`
                // would refuse it, before anything opens it for writing.
                use hookgate::store::sqlite::schema;
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
                    hookgate::config::StoreKind::Memory => "memory",
                    hookgate::config::StoreKind::Sqlite { .. } => "sqlite",
                    hookgate::config::StoreKind::Redis { .. } => "redis",
                    hookgate::config::StoreKind::RedisCluster { .. } => "redis-cluster",
                    hookgate::config::StoreKind::RedisSentinel(_) => "redis-sentinel",
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
    use hookgate::config::StoreKind;
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
        let store = hookgate::open_store(config)?;
        let Some(redis) = store.as_redis() else {
            return Ok(None);
        };
        match tokio::time::timeout(
            CHECK_STORE_TIMEOUT,
            hookgate::store::redis::eviction::read(redis),
        )
        .await
        {
            Ok(read) => read.map(Some),
            Err(_) => Err(hookgate::store::Error::Unavailable(format!(
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
    sentinel: &hookgate::config::Sentinel,
    master_line: Option<usize>,
) -> bool {
    use hookgate::store::redis::sentinel::{Probe, probe};
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

fn sign(
    path: &Path,
    source: &str,
    body_file: Option<&Path>,
    id: Option<&str>,
    timestamp: Option<i64>,
) -> ExitCode {
    let (config, index) = match load_source(path, "sign", source) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let found = &config.sources[index];
    let body = match read_body(body_file) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("hookgate sign: {e}");
            return ExitCode::FAILURE;
        }
    };
    let no_key = hookgate::secret::Secret::new(Vec::new());
    // Schemes whose key comes from the provider hold no secret; `sign`
    // refuses them with its own reason.
    let key = match found.scheme.signing_key(&found.keys).or(found.keys.first()) {
        Some(key) => Some(key),
        None if found.scheme.fetches_keys() => Some(&no_key),
        None => None,
    };
    let Some(key) = key else {
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

/// `hookgate filter test`: exit 0 with the report, 1 on a problem.
fn filter_test(path: &Path, action: hookgate::cli::FilterAction) -> ExitCode {
    let hookgate::cli::FilterAction::Test {
        source,
        body_file,
        headers,
    } = action;
    let (config, index) = match load_source(path, "filter", &source) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let found = &config.sources[index];
    let body = match read_body(Some(&body_file)) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("hookgate filter: {e}");
            return ExitCode::FAILURE;
        }
    };
    match hookgate::cli::filter::test(found, &body, &headers) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookgate filter: {e}");
            ExitCode::from(2)
        }
    }
}

/// The config at `path` and the index of its source `name`, for `hookgate
/// COMMAND`; what went wrong is printed.
fn load_source(path: &Path, command: &str, name: &str) -> Result<(Config, usize), ExitCode> {
    let config = Config::load(path).map_err(|e| {
        eprintln!("{}", e.display_in(path));
        ExitCode::FAILURE
    })?;
    match config.sources.iter().position(|s| s.name == name) {
        Some(index) => Ok((config, index)),
        None => {
            let names: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "hookgate {command}: no source named {name:?} (configured: {})",
                names.join(", ")
            );
            Err(ExitCode::FAILURE)
        }
    }
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

/// The config at `path` and its store, for `hookgate COMMAND`; what went
/// wrong is printed.
fn open(path: &Path, command: &str) -> Result<(Config, hookgate::store::Store), ExitCode> {
    let config = Config::load(path).map_err(|e| {
        eprintln!("{}", e.display_in(path));
        ExitCode::FAILURE
    })?;
    let store = hookgate::open_store(&config).map_err(|e| {
        eprintln!("hookgate {command}: {e}");
        ExitCode::FAILURE
    })?;
    Ok((config, store))
}

/// `hookgate sources list | pause NAME [--reason TEXT] | resume NAME`.
async fn sources(path: &Path, action: hookgate::cli::SourcesAction) -> ExitCode {
    use hookgate::cli::SourcesAction;
    use hookgate::pause;

    let (config, store) = match open(path, "sources") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let by = format!(
        "cli:{}@{}",
        hookgate::cli::effective_user(),
        hookgate::trail::replica_name()
    );
    match action {
        SourcesAction::List => match pause::list(&store, &config).await {
            Ok(states) => {
                print!("{}", pause::list_text(&states));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate sources list: {e}");
                ExitCode::FAILURE
            }
        },
        SourcesAction::Pause { name, reason } => {
            match pause::pause(&store, &config, &name, &by, reason.as_deref()).await {
                Ok(_) => {
                    println!(
                        "{name}: delivery paused; events are still verified, answered 200 queued and kept (every replica stops within {}s)",
                        pause::READ_EVERY.as_secs()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate sources pause: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        SourcesAction::Resume { name } => match pause::resume(&store, &config, &name, &by).await {
            Ok(true) => {
                println!("{name}: delivery resumed; the backlog drains oldest first");
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("{name}: was not paused");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate sources resume: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// `hookgate events list [--source S] [--state W] [--limit N] | show SOURCE EVENT_ID`.
async fn events(path: &Path, action: hookgate::cli::EventsAction) -> ExitCode {
    use hookgate::cli::EventsAction;
    use hookgate::{events, trail};

    let (config, store) = match open(path, "events") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        // The memory store's trail lives in the running process: a command
        // opening the store afresh would see an empty one and say so.
        eprintln!(
            "hookgate events: the memory store's trail lives in the running server's process, \
             not where this command can read it; ask the server: GET /events on the admin \
             listener ({}), with the admin token",
            config.admin.listen
        );
        return ExitCode::FAILURE;
    }
    match action {
        EventsAction::List {
            source,
            state,
            limit,
        } => {
            let state = match state.as_deref().map(trail::State::parse) {
                None => None,
                Some(Some(s)) => Some(s),
                Some(None) => {
                    eprintln!(
                        "hookgate events list: --state is one of in_flight, delivered, released, waiting, dropped, dead_letter"
                    );
                    return ExitCode::from(2);
                }
            };
            if !(1..=trail::MAX_LIMIT).contains(&limit) {
                eprintln!("hookgate events list: --limit is a number from 1 to 1000");
                return ExitCode::from(2);
            }
            let filter = trail::Filter {
                source,
                state,
                event_type: None,
                limit,
                before: None,
            };
            match events::list(&store, &config, &filter).await {
                Ok(page) if page.events.is_empty() => {
                    println!("no events in the trail");
                    ExitCode::SUCCESS
                }
                Ok(page) => {
                    print!("{}", events::list_text(&page));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate events list: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        EventsAction::Show { source, event_id } => {
            match events::show(&store, &config, &source, &event_id).await {
                Ok(Some(shown)) => {
                    print!("{}", events::show_text(&shown));
                    ExitCode::SUCCESS
                }
                Ok(None) => {
                    eprintln!(
                        "hookgate events show: the trail has no event {event_id:?} of source {source:?}"
                    );
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("hookgate events show: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// `hookgate dlq list | show ID | replay (ID | --all) [--source NAME]`.
async fn dlq(path: &Path, action: DlqAction) -> ExitCode {
    use hookgate::dlq::{self, Replayed, Replayer};

    let (config, store) = match open(path, "dlq") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        eprintln!("hookgate dlq: {}", hookgate::store::Error::NotKept);
        return ExitCode::FAILURE;
    }
    let prefix = &config.store.key_prefix;
    match action {
        DlqAction::List { source } => match dlq::list(&store, prefix, source.as_deref()).await {
            Ok(entries) if entries.is_empty() => {
                println!("no dead letters");
                ExitCode::SUCCESS
            }
            Ok(entries) => {
                print_list(&entries);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate dlq list: {e}");
                ExitCode::FAILURE
            }
        },
        DlqAction::Show { id } => match dlq::get(&store, prefix, &id).await {
            Ok(dead) => {
                print_entry(&dead);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate dlq show: {e}");
                ExitCode::FAILURE
            }
        },
        DlqAction::Replay { id, all, source } => {
            let forwarder = hookgate::forward::Forwarder::new();
            let metrics = hookgate::metrics::Metrics::new();
            // Replays from the command line join their events' traces too.
            let traces = match &config.tracing {
                Some(settings) => {
                    match hookgate::traces::Traces::start(
                        settings,
                        metrics.trace_spans_dropped.clone(),
                    ) {
                        Ok(traces) => Some(traces),
                        Err(e) => {
                            eprintln!("hookgate dlq replay: tracing: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
                None => None,
            };
            let replayer = Replayer {
                config: &config,
                store: &store,
                forwarder: &forwarder,
                metrics: &metrics,
                traces: traces.as_ref(),
            };
            let results = match (id, all) {
                (Some(id), _) => replayer.replay_id(&id).await.map(|r| vec![(id, r)]),
                (None, _) => {
                    let bar = ReplayBar::new();
                    let results = replayer
                        .replay_all_with(source.as_deref(), |progress| bar.step(progress))
                        .await;
                    bar.finish();
                    results.map(|all| all.into_iter().map(|(d, r)| (d.id, r)).collect())
                }
            };
            if let Some(traces) = &traces {
                traces.flush(std::time::Duration::from_secs(5)).await;
            }
            let results = match results {
                Ok(results) => results,
                Err(e) => {
                    eprintln!("hookgate dlq replay: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if results.is_empty() {
                println!("no dead letters to replay");
                return ExitCode::SUCCESS;
            }
            let mut failed = 0;
            for (id, result) in &results {
                match result {
                    Replayed::Delivered => println!("{id}: delivered"),
                    Replayed::AlreadyDelivered => {
                        println!("{id}: already delivered by a sender retry; removed")
                    }
                    Replayed::StaleVersion => {
                        println!("{id}: the app has this version or a newer one; removed")
                    }
                    Replayed::InFlight => {
                        failed += 1;
                        println!("{id}: a copy of this event is in flight right now; kept")
                    }
                    Replayed::Failed { error, new_id } => {
                        failed += 1;
                        match new_id {
                            Some(new_id) => println!("{id}: failed ({error}); kept as {new_id}"),
                            None => println!("{id}: failed ({error}); settled by another replay"),
                        }
                    }
                }
            }
            println!(
                "{} replayed, {failed} not delivered",
                results.len() - failed
            );
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The progress of `dlq replay --all` on a terminal: done / total,
/// delivered, failed. It draws on stderr and only when stderr is a terminal,
/// so piped output holds exactly the lines printed after the run.
struct ReplayBar {
    bar: indicatif::ProgressBar,
    delivered: std::cell::Cell<usize>,
    failed: std::cell::Cell<usize>,
}

impl ReplayBar {
    fn new() -> ReplayBar {
        use std::io::IsTerminal as _;
        let bar = if std::io::stderr().is_terminal() {
            indicatif::ProgressBar::with_draw_target(
                Some(0),
                indicatif::ProgressDrawTarget::stderr(),
            )
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("replaying {bar:30} {pos}/{len} · {msg}")
        {
            bar.set_style(style);
        }
        ReplayBar {
            bar,
            delivered: std::cell::Cell::new(0),
            failed: std::cell::Cell::new(0),
        }
    }

    fn step(&self, progress: hookgate::dlq::Progress<'_>) {
        match progress {
            hookgate::dlq::Progress::Listed { total } => {
                self.bar.set_length(total as u64);
            }
            hookgate::dlq::Progress::Replayed { done, result, .. } => {
                if result.is_success() {
                    self.delivered.set(self.delivered.get() + 1);
                } else {
                    self.failed.set(self.failed.get() + 1);
                }
                self.bar.set_position(done as u64);
            }
        }
        self.bar.set_message(format!(
            "{} delivered, {} failed",
            self.delivered.get(),
            self.failed.get()
        ));
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn print_list(entries: &[hookgate::dlq::Dead]) {
    let rows: Vec<[String; 7]> = entries
        .iter()
        .map(|d| {
            let s = d.summary();
            [
                s.id,
                s.source,
                s.event_id,
                s.event_type.unwrap_or_else(|| "-".into()),
                s.attempts.to_string(),
                humantime::format_duration(std::time::Duration::from_secs(
                    u64::try_from(s.age_secs).unwrap_or(0),
                ))
                .to_string()
                .replace(' ', ""),
                s.last_error.unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = [
        "ID",
        "SOURCE",
        "EVENT ID",
        "TYPE",
        "ATTEMPTS",
        "AGE",
        "LAST ERROR",
    ];
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    print!("{}", hookgate::cli::table(&header, &rows));
}

fn print_entry(dead: &hookgate::dlq::Dead) {
    use base64::Engine as _;
    let e = &dead.envelope;
    let time = |ms: i64| {
        let t = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
        humantime::format_rfc3339_millis(t).to_string()
    };
    println!("id: {}", dead.id);
    println!("source: {}", e.source);
    println!("event id: {}", e.event_id);
    println!("event type: {}", e.event_type.as_deref().unwrap_or("-"));
    println!("delivery: {}", e.delivery);
    println!("attempts: {}", e.attempts);
    println!("last error: {}", e.last_error.as_deref().unwrap_or("-"));
    println!("received: {}", time(e.received_ms));
    if let Some(ms) = e.last_attempt_ms {
        println!("last attempt: {}", time(ms));
    }
    if let Some(ms) = e.dead_ms {
        println!("dead letter since: {}", time(ms));
    }
    println!("request: {} {}", e.method, e.uri);
    println!("headers:");
    for (name, value) in e.header_map().iter() {
        match value.to_str() {
            Ok(v) => println!("  {name}: {v}"),
            Err(_) => println!(
                "  {name}: (base64) {}",
                base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
            ),
        }
    }
    match std::str::from_utf8(&e.body) {
        Ok(text) => {
            println!("body ({} bytes, text):", e.body.len());
            println!("{text}");
        }
        Err(_) => {
            println!("body ({} bytes, base64):", e.body.len());
            println!(
                "{}",
                base64::engine::general_purpose::STANDARD.encode(&e.body)
            );
        }
    }
}
