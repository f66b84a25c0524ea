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

mod support;

mod admin;
mod cli;
mod concurrency;
mod forwarding;
mod handshakes;
mod logs;
mod pipeline;
mod redis_store;
mod reload;
mod rotation;
mod schemes;
mod shutdown;
mod store;
mod tls;
