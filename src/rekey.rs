//! Stored payloads by key, and `hookgate store rekey` (DESIGN §4b): every
//! payload not sealed under the first key of `[store.encryption]`
//! (plaintext ones included) opened and written again under it, in pages,
//! beside a running server.
//!
//! Safe to interrupt and to run again: what it has rewritten is under the
//! first key and is skipped next time, so a second run goes on where the
//! first stopped. Each rewrite is a compare and swap
//! ([`Store::payload_rewrite`]): a replica that delivers, retries or moves
//! the entry meanwhile wins, and writes it under the first key itself. A
//! payload that does not open is left as it is and counted.

use std::collections::BTreeMap;

use crate::config::Config;
use crate::envelope::{Envelope, Place};
use crate::store::payloads::{Payload, Shelf, Walk};
use crate::store::{Error, Store};

/// Payloads per page.
pub const PAGE: usize = 200;
/// Walks over the whole store at most: a payload passed over because it
/// moved while the walk went by (a retry promoted, a rank shifted) is
/// found by the next one.
const PASSES: usize = 3;

/// The label of a payload stored as it is.
pub const PLAINTEXT: &str = "plaintext";

/// How many payloads each key sealed (`plaintext`: none), and how many
/// stored values could not be read at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    pub by_key: BTreeMap<String, u64>,
    pub unreadable: u64,
}

impl Census {
    fn add(&mut self, bytes: &[u8]) {
        match Envelope::sealed_with(bytes) {
            Ok(key) => {
                *self
                    .by_key
                    .entry(key.unwrap_or_else(|| PLAINTEXT.to_owned()))
                    .or_default() += 1;
            }
            Err(_) => self.unreadable += 1,
        }
    }

    /// Payloads not under `key`.
    pub fn not_under(&self, key: Option<&str>) -> u64 {
        let key = key.unwrap_or(PLAINTEXT);
        self.by_key
            .iter()
            .filter(|(k, _)| k.as_str() != key)
            .map(|(_, n)| n)
            .sum()
    }

    /// One line per key: `2026-12: 310`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (key, n) in &self.by_key {
            out.push_str(&format!("  {key}: {n}\n"));
        }
        if self.by_key.is_empty() {
            out.push_str("  (no stored payloads)\n");
        }
        if self.unreadable > 0 {
            out.push_str(&format!("  unreadable: {}\n", self.unreadable));
        }
        out
    }
}

fn sources(config: &Config) -> Vec<String> {
    config.sources.iter().map(|s| s.name.clone()).collect()
}

/// Counts every stored payload by the key that sealed it, reading only
/// each one's metadata line.
pub async fn census(store: &Store, config: &Config) -> Result<Census, Error> {
    let store = store.durable()?;
    let mut walk = Walk::new(store, &sources(config));
    let mut census = Census::default();
    while !walk.done() {
        for p in store.payload_page(&mut walk, PAGE).await? {
            census.add(&p.bytes);
        }
    }
    Ok(census)
}

/// What a rekey did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Payloads looked at (over every pass).
    pub checked: u64,
    /// Written again under the first key.
    pub rewritten: u64,
    /// Changed by a replica between the read and the rewrite (delivered,
    /// retried, moved): left to it.
    pub raced: u64,
    /// Sealed with a key that is not configured, or not opening under it.
    pub unopenable: u64,
    /// Redis streams whose removed entries' bytes were dropped, and those
    /// left as they were (entries leased to a worker, or too long).
    pub compacted: usize,
    pub not_compacted: usize,
}

/// Where a payload on `shelf` is bound to.
fn place(shelf: Shelf) -> Place {
    match shelf {
        Shelf::Dead => Place::DeadLetter,
        Shelf::Queue | Shelf::Delayed => Place::Queue,
    }
}

/// The payload written again under the first key, or why not.
enum Next {
    Keep,
    Unopenable,
    Rewrite(Vec<u8>),
}

fn next_form(config: &Config, p: &Payload) -> Next {
    let keys = &config.store.encryption;
    let Ok(key) = Envelope::sealed_with(&p.bytes) else {
        return Next::Keep;
    };
    if key.as_deref() == keys.sealing() {
        return Next::Keep;
    }
    match Envelope::decode(&p.bytes, keys, place(p.shelf)) {
        Ok(e) if e.unopenable().is_none() => Next::Rewrite(e.encode(keys, place(p.shelf))),
        Ok(_) => Next::Unopenable,
        Err(_) => Next::Keep,
    }
}

/// Rewrites every payload not under the first key (nothing when
/// `dry_run`), calling `progress` after each page with the report so far.
pub async fn rekey(
    store: &Store,
    config: &Config,
    dry_run: bool,
    mut progress: impl FnMut(&Report),
) -> Result<Report, Error> {
    let store = store.durable()?;
    let mut report = Report::default();
    for _ in 0..PASSES {
        let before = report.rewritten;
        let mut pass_unopenable = 0;
        let mut walk = Walk::new(store, &sources(config));
        while !walk.done() {
            for p in store.payload_page(&mut walk, PAGE).await? {
                report.checked += 1;
                match next_form(config, &p) {
                    Next::Keep => {}
                    Next::Unopenable => pass_unopenable += 1,
                    Next::Rewrite(_) if dry_run => report.rewritten += 1,
                    Next::Rewrite(new) => {
                        if store.payload_rewrite(&p, new).await? {
                            report.rewritten += 1;
                        } else {
                            report.raced += 1;
                        }
                    }
                }
            }
            progress(&report);
        }
        report.unopenable = pass_unopenable;
        if dry_run || report.rewritten == before {
            break;
        }
    }
    if !dry_run && report.rewritten > 0 {
        let (done, left) = store.payload_compact(&sources(config)).await?;
        report.compacted = done;
        report.not_compacted = left;
    }
    Ok(report)
}

/// How often the server counts its stored payloads by key.
pub const CENSUS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Keeps `hookgate_store_payloads{key}` current until `shutdown`: a census
/// every [`CENSUS_EVERY`] while `[store.encryption]` lists a key (each one
/// reads every payload's metadata line; nothing is opened). A key no
/// payload names any more reads 0.
pub async fn refresh_gauge(
    state: std::sync::Arc<crate::state::State>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    if !state.store.keeps_queue() {
        return;
    }
    let mut shown: Vec<String> = Vec::new();
    loop {
        let runtime = state.runtime();
        if runtime.config.store.encryption.sealing().is_some() {
            match census(&state.store, &runtime.config).await {
                Ok(c) => {
                    for key in &shown {
                        if !c.by_key.contains_key(key) {
                            state.metrics.store_payloads(key, 0);
                        }
                    }
                    for (key, n) in &c.by_key {
                        state.metrics.store_payloads(key, *n);
                    }
                    shown = c.by_key.into_keys().collect();
                }
                Err(e) => tracing::debug!(error = %e, "payload census failed"),
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(CENSUS_EVERY) => {}
        }
    }
}
