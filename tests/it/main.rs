//! End-to-end tests: the real `hookgate` binary between a real sender (this
//! test) and a real recording upstream, with a real `redis-server` where the
//! store matters. Every port is ephemeral and on loopback; every wait is bounded.
//!
//! - `attacks`: the attacks of `docs/security.md`, exact bytes in and out.
//! - `pipeline`: each row of the DESIGN §3 status table, in forward mode.
//! - `forwarding`: what the app receives, byte for byte.
//! - `schemes`: every built-in scheme (and a generic one) end to end.
//! - `handshakes`: provider endpoint checks answered by hookgate.
//! - `allow_ips`: sender address allowlists and `trusted_proxies`, from
//!   clients bound to other loopback addresses, with forged `X-Forwarded-For`.
//! - `concurrency`: many copies of one event, several replicas (on one Redis,
//!   or on one SQLite file).
//! - `eviction`: a Redis that may evict keys (log, `check`, gauges; single
//!   node, cluster, Sentinel) and the memory store's fill.
//! - `rejections`: every refusal row kept as metadata only, nothing secret,
//!   no store write, and a flood held at the caps.
//! - `redis_store`: Redis going away and coming back, the key layout, cluster.
//! - `store`: the store backends against a real Redis, and the memory and
//!   SQLite stores held to the same suite; a SQLite file opened again.
//! - `admin`: `/healthz`, `/readyz`, `/metrics`.
//! - `console`: the console in a real headless chromium: sign-in, events,
//!   dead letters and their replay, CSRF and origin checks, hostile values.
//! - `console_matching`: the console's dead letters by MATCH: preview,
//!   confirmation, replay and delete jobs, in chromium.
//! - `charts`: the overview's charts against the metrics for a known mix, in
//!   chromium; two replicas' counts summed on Redis.
//! - `cli`: `check`, `sign`, `run` with `$HOOKGATE_CONFIG`.
//! - `resign`: `[source.resign]` in front of an app that checks Stripe signatures itself.
//! - `reload`: SIGHUP, refused configs, rotated secret files.
//! - `observe`: `verification = "observe"`: failures forwarded unstamped and marked.
//! - `logs`: request log lines, secrets never printed.
//! - `shutdown`: SIGTERM / SIGINT drain.
//! - `hostile`: slow clients, sizes, ambiguous framing, odd bytes, ids and
//!   timestamps, spoofed headers, connection floods.
//! - `cluster`: the store-related tests again on a 3-master Redis Cluster.
//! - `faults`: fault scenarios under load with retrying senders (`FAULT-RESULT`).
//! - `properties`: sign/verify round trips and single-byte tampering, every scheme.
//! - `store_failure`: `on_store_error`, and a commit that fails after the app's 2xx.
//! - `secrets`: no secret in any output, even at trace level.
//! - `sqlite`: `kind = "sqlite"`: `kill -9` in a queue backlog and after
//!   forwarding, dead letters across a restart, the fsync before the answer
//!   (traced), group commit, refused files (newer schema, corrupt, locked).
//! - `sentinel`: `kind = "redis-sentinel"` through failovers, and `min_replicas`.
//! - `ordering`: the version gate, forward and queue, two versions at once;
//!   on Redis and on SQLite.
//! - `queue`: queue delivery: ack after enqueue, retries, 4xx, SIGKILL, replicas;
//!   on Redis and on SQLite.
//! - `breaker`: the circuit breaker in forward mode and, shared by two
//!   replicas, in queue mode.
//! - `pause`: pausing and resuming a queue source's delivery, on SQLite and
//!   on Redis with two replicas.
//! - `dlq`: dead letters in both modes, `hookgate dlq`, the admin endpoints;
//!   on Redis and on SQLite.
//! - `jobs`: dead letters by MATCH: dry runs, replay and delete jobs, a job
//!   taken over after its replica is killed, `dead_letter_max_age`.
//! - `delivery_kit`: what those three share (scripted app, in-process hookgate,
//!   the Redis or SQLite backend and its queue and dead-letter counts).
//! - `monitoring`: the chart's dashboard panels and alert expressions asked
//!   of a real Prometheus scraping hookgate under load.
//! - `keys`: `sns`, `paypal`, `google-oidc` against a local HTTPS key server.
//! - `public_keys`: Standard Webhooks `v1a` (Ed25519) by `whpk_` keys and by a
//!   JWK Set from a local HTTPS key server, and the `gemini` scheme.
//! - `upstream_conn`: connections to the app: keep-alive reuse, apps closing
//!   idle connections, chunked and close-delimited answers, silent or broken
//!   answers, an `https://` app.
//! - `trail`: the event trail's states, `GET /events`, `hookgate events`; on every store.
//! - `traces`: OpenTelemetry traces to a local OTLP/HTTP receiver built on
//!   the official protobuf types: forwarded, rejected, queued-and-retried and
//!   replayed events; the app's `traceparent`; a sender's as a link; a
//!   collector that is down.
//! - `flood`: one captured delivery replayed thousands of times, and one event
//!   failing at the app again and again: the record, the store and the answers
//!   stay flat; on every store.

mod support;

mod admin;
mod allow_ips;
mod attacks;
mod breaker;
mod charts;
mod cli;
mod cluster;
mod concurrency;
mod console;
mod console_matching;
mod delivery_kit;
mod dlq;
mod eviction;
mod faults;
mod filters;
mod first_hour;
mod flood;
mod forwarding;
mod handshakes;
mod hostile;
mod jobs;
mod keys;
mod logs;
mod monitoring;
mod observe;
mod ordering;
mod pause;
mod pipeline;
mod properties;
mod public_keys;
mod queue;
mod redis_store;
mod rejections;
mod reload;
mod resign;
mod rotation;
mod schemes;
mod sealed;
mod secrets;
mod sentinel;
mod shutdown;
mod sqlite;
mod store;
mod store_failure;
mod tls;
mod traces;
mod trail;
mod upgrade;
mod upstream_conn;
