//! hookgate: a webhook-verifying reverse proxy.
//!
//! # Layout
//!
//! The modules follow a request's path:
//!
//! - [`config`]: the TOML file, validated into runtime types (secrets resolved).
//! - [`scheme`]: each sender's signature scheme; produces [`scheme::Verified`].
//! - [`store`]: the nonce store (memory or Redis) that turns retries into duplicates.
#![forbid(unsafe_code)]

pub mod config;
pub mod scheme;
pub mod store;
