//! End-to-end tests: the real `hookgate` binary between a real sender (this
//! test) and a real recording upstream, with a real `redis-server` where the
//! store matters. Every port is ephemeral and on loopback; every wait is bounded.
//!
//! - `pipeline`: each row of the DESIGN §3 status table, in forward mode.
//! - `forwarding`: what the app receives, byte for byte.
//! - `schemes`: every built-in scheme (and a generic one) end to end.
//! - `handshakes`: provider endpoint checks answered by hookgate.
//! - `concurrency`: many copies of one event, several replicas.
//! - `redis_store`: Redis going away and coming back, the key layout, cluster.
//! - `store`: the store backends against a real Redis.
//! - `admin`: `/healthz`, `/readyz`, `/metrics`.
//! - `cli`: `check`, `sign`, `run` with `$HOOKGATE_CONFIG`.
//! - `reload`: SIGHUP, refused configs, rotated secret files.
//! - `logs`: request log lines, secrets never printed.
//! - `shutdown`: SIGTERM / SIGINT drain.
//! - `ordering`: the version gate, forward and queue, two versions at once.
//! - `queue`: queue delivery: ack after enqueue, retries, 4xx, SIGKILL, replicas.
//! - `dlq`: dead letters in both modes, `hookgate dlq`, the admin endpoints.
//! - `delivery_kit`: what those three share (scripted app, in-process hookgate).

mod support;

mod admin;
mod cli;
mod concurrency;
mod delivery_kit;
mod dlq;
mod forwarding;
mod handshakes;
mod logs;
mod ordering;
mod pipeline;
mod queue;
mod redis_store;
mod reload;
mod rotation;
mod schemes;
mod shutdown;
mod store;
mod tls;
