//! hookgate: a webhook-verifying reverse proxy.
//!
//! # Layout
//!
//! The modules follow a request's path:
//!
//! - [`config`]: the TOML file, validated into runtime types (secrets resolved);
//!   one room per table under `config/`: `server` (`[server]`, `[admin]`),
//!   `store`, `source` (`[[source]]`), `generic` (`[source.generic]`), `keys`
//!   (provider-key options, `[source.keys]`), `secrets` (`secrets`, `verify_token`,
//!   `[source.resign]`), `tracing` (`[tracing]`), with `raw` (the serde
//!   structs) and `check` (the collector that records every problem with its
//!   line and field) below them.
//! - `route`: only canonical targets are routed; the longest source path
//!   the path belongs to (case-insensitive, `.suffix` allowed) picks the `[[source]]`.
//! - `allow`: a source's `allow_ips`, and the client address (after
//!   `trusted_proxies`) checked against them right after routing.
//! - [`scheme`]: each sender's signature scheme; produces [`scheme::Verified`].
//!   A provider that needs code is one type implementing [`scheme::Provider`]
//!   in its own file under `scheme/`, plus one line in the `CODED` list of
//!   `scheme.rs` (and its `mod`); [`scheme::Scheme`] asks that trait object
//!   for everything. Providers that are only a configuration of the generic
//!   engine are rows of `scheme/catalog.rs`.
//! - `filter`: `[[source.filter]]` rules, read on a verified event's signed
//!   body before it is claimed: the first rule that holds ignores or delivers it.
//! - `keyfetch`: keys that come from the provider (SNS and PayPal
//!   certificates, Google's JWKS), fetched over HTTPS and cached.
//! - [`store`]: the nonce store (SQLite, memory, Redis, Sentinel or Cluster)
//!   that turns retries into duplicates, and for the durable engines the
//!   queue and dead letters, one backend per engine (`store/redis/queue.rs`,
//!   `store/sqlite/`: the writer thread with group commit, the ops it runs,
//!   the WAL syncer, the schema, the trail);
//!   `store::keys` holds the whole key layout.
//! - `ordering`: the version gate: never older than what the app accepted.
//! - `delivery`: the life of a claimed event, written once: admit (a
//!   paused source, the breaker, `max_rate`), claim, gate, attempt
//!   (re-signed when the source asks), record, commit or release; forward
//!   mode, the queue workers and replays all call it.
//! - `forward`: the keep-alive HTTP/1.1 client to the app, header hygiene, timeouts.
//! - [`envelope`]: a verified request as kept for later (queue, dead letters),
//!   its payload sealed with [`seal`]'s keyring when `[store.encryption]` is set.
//! - `queue`: queue delivery: the workers over the store's queue.
//! - `dlq`: dead letters: what the app could not take, and replay.
//! - `pipeline`: the DESIGN §3 order, top to bottom, ending in one `outcome::Outcome`.
//! - `outcome`: one variant per status-table row; the only place statuses are chosen.
//! - `traces`: OpenTelemetry spans for each request and delivery
//!   attempt, and their export over OTLP/HTTP (`traces/export.rs`).
//! - [`trail`]: the event trail's words: facts per event, folded into the
//!   record an operator reads; `events` reads it for `/events` and the CLI.
//! - `admin`: `/healthz`, `/readyz`, `/metrics`, and `/dlq`, `/events`
//!   behind a token.
//! - `console`: the console's pages under `/console` on the admin listener:
//!   one function per page from a small view struct (`console/pages.rs`),
//!   sessions and CSRF (`console/session.rs`), "Replay all" runs, static
//!   assets compiled in.
//!
//! Around them: [`cli`] (the command line: its arguments in `cli.rs`, one
//! file a command under `cli/`), [`log`] (buffered log output),
//! `server` (accept loop, connection lifetimes and drain),
//! [`state`] (what requests share, swapped on reload), [`reload`], `metrics`;
//! below every module, the shared words: [`secret`] (values that never
//! print) and [`time`] (the one RFC 3339 and HTTP-date parser, the clock).
#![forbid(unsafe_code)]

pub(crate) mod admin;
pub(crate) mod allow;
pub(crate) mod breaker;
pub mod cli;
pub mod config;
pub(crate) mod console;
pub(crate) mod delivery;
pub(crate) mod dlq;
pub mod envelope;
pub(crate) mod events;
pub(crate) mod filter;
pub(crate) mod forward;
pub(crate) mod keyfetch;
pub mod log;
pub(crate) mod metrics;
pub(crate) mod ordering;
pub(crate) mod outbound;
pub(crate) mod outcome;
pub(crate) mod pace;
pub(crate) mod pause;
pub(crate) mod pipeline;
pub(crate) mod queue;
pub mod rejections;
pub(crate) mod rekey;
pub mod reload;
pub(crate) mod route;
pub mod scheme;
pub mod seal;
pub mod secret;
pub(crate) mod server;
pub mod state;
pub mod stats;
pub mod store;
pub mod time;
pub(crate) mod tls;
pub(crate) mod traces;
pub mod trail;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::admin::Readiness;
use crate::state::State;

/// How long in-flight requests may take to finish after a shutdown signal
/// (under Kubernetes' default 30 s termination grace).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(25);

/// How long the drain waits for store writes that finish after their
/// answer (each is bounded by the store's command timeout anyway).
const BEHIND_GRACE: Duration = Duration::from_secs(3);

/// Connections the admin listener holds at once (probes and a scraper need few).
const ADMIN_MAX_CONNECTIONS: usize = 128;
/// How often `hookgate_queue_depth` and `hookgate_dlq_depth` are read from Redis.
pub const DEPTH_REFRESH: Duration = Duration::from_secs(5);
/// How often the memory store's fill is read into `hookgate_store_entries`:
/// a length under its lock, nothing next to the requests that take it.
const FILL_REFRESH: Duration = Duration::from_secs(1);

/// The two already-bound listeners `run` serves.
pub struct Listeners {
    /// Where webhook senders connect.
    pub public: TcpListener,
    /// `/healthz`, `/readyz`, `/metrics`.
    pub admin: TcpListener,
}

/// Serves until `shutdown` is cancelled, then drains in-flight requests and
/// returns. Tests bind `127.0.0.1:0` and call this exactly as the binary does.
pub async fn run(state: Arc<State>, listeners: Listeners, shutdown: CancellationToken) {
    for (name, listener) in [("public", &listeners.public), ("admin", &listeners.admin)] {
        match listener.local_addr() {
            Ok(addr) => tracing::info!(listener = name, addr = %addr, "listening"),
            Err(e) => tracing::warn!(listener = name, error = %e, "listener has no local address"),
        }
    }
    // Key sets of the sources that verify with one, fetched now so the
    // first request does not wait for them.
    for source in &state.runtime().config.sources {
        if let Some(set) = source
            .scheme
            .provider_as::<crate::scheme::PublicKeySource>()
        {
            let (state, set) = (Arc::clone(&state), set.clone());
            tokio::spawn(async move { set.prefetch(&state.keys).await });
        }
    }
    let readiness = Arc::new(Readiness::default());
    // The console's sessions, "Replay all" runs and overview counters.
    let console = Arc::new(crate::console::Console::default());
    let limits = |listener: &'static str, max_connections, header_read_timeout, lifetimes| {
        let label = metrics::ListenerLabel { listener };
        server::Limits {
            max_connections,
            header_read_timeout,
            lifetimes,
            open: state.metrics.connections_open.get_or_create(&label).clone(),
            rejected: state
                .metrics
                .connections_rejected
                .get_or_create(&label)
                .clone(),
        }
    };
    // Listener settings are read once: a reload does not rebind.
    let server_config = &state.runtime().config.server;
    let public_limits = limits(
        "public",
        server_config.max_connections,
        server_config.request_read_timeout,
        server_config.lifetimes,
    );
    let admin_limits = limits(
        "admin",
        ADMIN_MAX_CONNECTIONS,
        server_config.request_read_timeout,
        server::Lifetimes::default(),
    );
    config::warn_widened(&state.runtime().config.sources);
    if !state.store.keeps_queue() {
        tracing::warn!(
            "the memory store keeps nothing across a restart and no dead letters: events \
             the app fails are not kept (the sender's own retries are all there is); \
             use kind = \"sqlite\" on one host"
        );
    }
    // Queue workers and the depth gauges run beside the listeners; the
    // workers stop reading at shutdown and finish the deliveries in hand.
    let workers = tokio::spawn(queue::run_workers(Arc::clone(&state), shutdown.clone()));
    let depths = tokio::spawn(queue::refresh_depths(
        Arc::clone(&state),
        DEPTH_REFRESH,
        shutdown.clone(),
    ));
    let store_gauges = tokio::spawn(watch_store(Arc::clone(&state), shutdown.clone()));
    let payloads = tokio::spawn(rekey::refresh_gauge(Arc::clone(&state), shutdown.clone()));
    let jobs = tokio::spawn(dlq::jobs::run_scanner(Arc::clone(&state), shutdown.clone()));
    let stats = tokio::spawn(stats::run(Arc::clone(&state), shutdown.clone()));
    let expiry = state
        .store
        .keeps_queue()
        .then(|| tokio::spawn(dlq::retention::run(Arc::clone(&state))));

    let public = {
        let state = Arc::clone(&state);
        server::serve(
            "public",
            listeners.public,
            state.tls.clone(),
            move |request, peer| {
                let state = Arc::clone(&state);
                async move { pipeline::handle(&state, request, Some(peer.ip())).await }
            },
            shutdown.clone(),
            SHUTDOWN_GRACE,
            public_limits,
        )
    };

    // The admin port outlives the public one so probes see the drain.
    let admin_shutdown = CancellationToken::new();
    let admin = {
        let state = Arc::clone(&state);
        let readiness = Arc::clone(&readiness);
        server::serve(
            "admin",
            listeners.admin,
            None,
            move |request, _peer| {
                let state = Arc::clone(&state);
                let readiness = Arc::clone(&readiness);
                let console = Arc::clone(&console);
                async move { admin::handle(&state, &readiness, &console, request).await }
            },
            admin_shutdown.clone(),
            Duration::from_secs(1),
            admin_limits,
        )
    };
    let admin = tokio::spawn(admin);

    let draining = {
        let shutdown = shutdown.clone();
        let readiness = Arc::clone(&readiness);
        async move {
            shutdown.cancelled().await;
            readiness.start_draining();
            tracing::info!("shutting down: draining in-flight requests");
        }
    };
    tokio::join!(public, draining);
    // What finishes after the drain shares one budget, BEHIND_GRACE.
    let deadline = tokio::time::Instant::now() + BEHIND_GRACE;
    // Commits of events answered during the drain land before the exit.
    state.behind.close();
    if tokio::time::timeout_at(deadline, state.behind.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            pending = state.behind.len(),
            "nonce commits still pending at exit: a copy of those events may be forwarded again"
        );
    }
    let _ = workers.await;
    // A job in hand stops at its next entry; one still sending when the
    // budget runs out is left with that entry marked, for a takeover.
    if tokio::time::timeout_at(deadline, jobs).await.is_err() {
        tracing::warn!(
            "a dead-letter job was still sending at exit; another process takes it over"
        );
    }
    if let Some(expiry) = expiry {
        expiry.abort();
    }
    // The chart counts of the last seconds.
    if tokio::time::timeout_at(deadline, stats).await.is_err() {
        tracing::debug!("chart counts of the last seconds not added to the store at exit");
    }
    // Duplicates counted since the last flush of the trail's tally.
    if tokio::time::timeout_at(deadline, state.store.trail_flush())
        .await
        .is_err()
    {
        tracing::warn!("duplicate counts still unwritten at exit");
    }
    let _ = depths.await;
    let _ = store_gauges.await;
    let _ = payloads.await;
    admin_shutdown.cancel();
    let _ = admin.await;
    // Spans of the drain's last requests, deliveries and replays.
    if let Some(traces) = &state.traces {
        // At least a moment to send the last batch, within the budget.
        let left = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_millis(200));
        traces.flush(left).await;
    }
    tracing::info!("stopped");
}

/// Keeps the store gauges of DESIGN §7 current until `shutdown`: for Redis,
/// the servers' eviction policy and count every [`DEPTH_REFRESH`], with a
/// warning in the log whenever they may evict (see
/// [`store::redis::eviction`]); for the memory store, its fill every
/// [`FILL_REFRESH`]; nothing for SQLite.
async fn watch_store(state: Arc<State>, shutdown: CancellationToken) {
    if state.store.fill().is_some() {
        loop {
            if let Some((len, capacity)) = state.store.fill() {
                state.metrics.store_fill(len, capacity);
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(FILL_REFRESH) => {}
            }
        }
    }
    let report = |seen: &store::redis::eviction::Eviction| {
        state
            .metrics
            .store_eviction(seen.evicting(), seen.evicted_keys);
    };
    state
        .store
        .watch_eviction(DEPTH_REFRESH, shutdown, report)
        .await;
}

/// Opens the store `[store]` asks for. Redis connects lazily: hookgate starts
/// (and answers 503) even while Redis is still coming up. SQLite opens its
/// file now (on its writer thread) and fails on a file it cannot use. Call
/// inside a Tokio runtime.
///
/// With several sources, one source's nonces may fill at most half the
/// memory store, so a flood on one leaves room for the others.
pub fn open_store(config: &config::Config) -> Result<store::Store, store::Error> {
    open_store_scrubbing(config, store::sqlite::SecureDelete::Fast)
}

/// [`open_store`], a sqlite file zeroing what it frees as `scrub` says
/// when `[store.encryption]` is set (nothing otherwise).
pub fn open_store_scrubbing(
    config: &config::Config,
    scrub: store::sqlite::SecureDelete,
) -> Result<store::Store, store::Error> {
    let sources = config.sources.len();
    let config = &config.store;
    let store = match &config.kind {
        config::StoreKind::Memory => {
            let max = config.memory_max_entries;
            let per_source = if sources > 1 { max / 2 } else { max };
            store::Store::memory(max, per_source)
        }
        config::StoreKind::Sqlite { path, sync } => {
            let scrub = if config.encryption.sealing().is_some() {
                scrub
            } else {
                store::sqlite::SecureDelete::Off
            };
            store::Store::sqlite(path, *sync, &config.key_prefix, scrub)?
        }
        config::StoreKind::Redis { url } => store::Store::redis(url)?,
        config::StoreKind::RedisCluster { urls } => store::Store::redis_cluster(urls)?,
        config::StoreKind::RedisSentinel(sentinel) => {
            let text = |s: &Option<secret::Secret>| {
                s.as_ref()
                    .map(|s| String::from_utf8_lossy(s.expose()).into_owned())
            };
            let (username, password) = (text(&sentinel.username), text(&sentinel.password));
            store::Store::redis_sentinel(
                &sentinel.sentinels,
                &sentinel.master,
                username.as_deref(),
                password.as_deref(),
            )?
        }
    };
    store
        .with_prefix(&config.key_prefix)
        .with_replication(store::Replication {
            replicas: config.min_replicas,
            timeout: config.replica_timeout,
        })
}
