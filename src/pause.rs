//! Pausing delivery to the app per queue source (DESIGN §6a): the state
//! lives in the store, so it survives restarts and every replica reads the
//! same; each queue worker reads it at least once every [`READ_EVERY`] and
//! takes nothing from its queue while its source is paused. A paused
//! source still verifies, deduplicates and answers `200 queued`: its events
//! wait in the queue, not leased, so no attempt is spent and nothing moves
//! towards the dead letters. A forward source cannot be paused: its sender
//! holds its events, and hookgate has nothing to hold them in.
//!
//! Written once for every engine: the store keeps a [`Paused`] per source
//! (a Redis hash, the SQLite `paused` table); this module says who may be
//! paused and how each change is told.

use std::time::Duration;

use serde::Serialize;

use crate::config::{Config, Delivery};
pub use crate::store::Paused;
use crate::store::{self, Store};

/// How often a worker reads its source's state: a pause or a resume
/// reaches every replica within this.
pub const READ_EVERY: Duration = Duration::from_secs(1);
/// The longest `reason` kept.
pub const MAX_REASON: usize = 500;

/// Why a pause or a resume was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("no source named {0:?}")]
    NoSuchSource(String),
    #[error(
        "source {0:?} delivers in forward mode: its sender holds its events, so there is nothing to hold here; set delivery = \"queue\" on it to be able to pause it"
    )]
    Forward(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// A source's delivery state as `hookgate sources list`, `GET /sources` and
/// the console show it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceState {
    pub source: String,
    pub delivery: &'static str,
    pub paused: Option<Paused>,
    /// Queue sources: entries waiting (ready, leased or waiting for a retry).
    pub queue_depth: Option<i64>,
}

/// Pauses `source`, as `by` says, for `reason`.
pub async fn pause(
    store: &Store,
    config: &Config,
    source: &str,
    by: &str,
    reason: Option<&str>,
) -> Result<Paused, Refused> {
    check(config, source)?;
    let paused = Paused {
        by: by.chars().take(200).collect(),
        reason: reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| r.chars().take(MAX_REASON).collect()),
        since_ms: crate::time::now_ms(),
    };
    store.pause(source, &paused).await?;
    tracing::info!(source, by = %paused.by, reason = paused.reason.as_deref(), "delivery paused");
    Ok(paused)
}

/// Resumes `source`; `false` when it was not paused.
pub async fn resume(
    store: &Store,
    config: &Config,
    source: &str,
    by: &str,
) -> Result<bool, Refused> {
    check(config, source)?;
    let was = store.resume(source).await?;
    if was {
        tracing::info!(source, by, "delivery resumed");
    }
    Ok(was)
}

/// Every source with its delivery state.
pub async fn list(store: &Store, config: &Config) -> Result<Vec<SourceState>, store::Error> {
    let paused = store.paused().await?;
    let kept = store.durable().ok();
    let mut out = Vec::new();
    for s in &config.sources {
        let queue = s.delivery == Delivery::Queue;
        out.push(SourceState {
            source: s.name.clone(),
            delivery: if queue { "queue" } else { "forward" },
            paused: paused
                .iter()
                .find(|(name, _)| *name == s.name)
                .map(|(_, p)| p.clone()),
            queue_depth: match kept {
                Some(kept) if queue => Some(kept.queue_depth(&s.name).await?),
                _ => None,
            },
        });
    }
    Ok(out)
}

fn check(config: &Config, source: &str) -> Result<(), Refused> {
    match config.sources.iter().find(|s| s.name == source) {
        None => Err(Refused::NoSuchSource(source.to_owned())),
        Some(s) if s.delivery != Delivery::Queue => Err(Refused::Forward(source.to_owned())),
        Some(_) => Ok(()),
    }
}

/// `hookgate sources list` as a table.
pub fn list_text(states: &[SourceState]) -> String {
    let rows: Vec<Vec<String>> = states
        .iter()
        .map(|s| {
            let (state, by, reason, since) = match &s.paused {
                Some(p) => (
                    "paused".to_owned(),
                    p.by.clone(),
                    p.reason.clone().unwrap_or_else(|| "-".into()),
                    crate::trail::rfc3339(p.since_ms),
                ),
                None => ("delivering".to_owned(), "-".into(), "-".into(), "-".into()),
            };
            vec![
                s.source.clone(),
                s.delivery.to_owned(),
                if s.delivery == "forward" {
                    "-".into()
                } else {
                    state
                },
                s.queue_depth.map_or("-".into(), |d| d.to_string()),
                by,
                since,
                reason,
            ]
        })
        .collect();
    crate::cli::table(
        &[
            "SOURCE",
            "DELIVERY",
            "STATE",
            "QUEUED",
            "PAUSED BY",
            "SINCE",
            "REASON",
        ],
        &rows,
    )
}
