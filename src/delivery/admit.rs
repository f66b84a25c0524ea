//! An attempt's first and last phases (DESIGN §6a), decided here for
//! every mode: *admit* (a paused source, an open breaker, `max_rate`) and
//! *record* (the breaker's count of what the app answered). Forward mode
//! asks the breaker per request; a queue worker asks the pause and the
//! breaker once per round, before it takes entries; a replay asks all
//! three before each entry ([`Steps::admit`], [`Steps::pace`]).

use std::time::Duration;

use super::{Attempt, Steps};
use crate::breaker::Admit;
use crate::config::{Delivery, Source};
use crate::store;

/// Why an attempt may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// The source's delivery is paused.
    Paused,
    /// Its breaker is open for this long still.
    Breaker(Duration),
}

impl Held {
    /// The word the trail and the logs use: `paused` or `breaker`.
    pub fn word(self) -> &'static str {
        match self {
            Held::Paused => "paused",
            Held::Breaker(_) => "breaker",
        }
    }
}

/// Whether the breaker counts an attempt as the app answering: a 2xx, a
/// 4xx (the app refused it), or a request hookgate could not rebuild. A
/// 5xx, a timeout and a refused connection are failures.
pub fn app_answered(attempt: &Attempt, status: Option<u16>) -> bool {
    match attempt {
        Attempt::Refused(_) => true,
        Attempt::Delivered | Attempt::Failed { .. } => status.is_some_and(|s| s < 500),
    }
}

impl Steps<'_> {
    /// The breaker's word on one attempt of `source` now: closed when the
    /// source has none. Half-open, the caller's attempt is the probe.
    pub async fn breaker_admit(&self, source: &Source) -> Admit {
        if source.breaker.is_none() {
            return Admit::Closed;
        }
        self.breakers
            .admit(self.store, self.metrics, &source.name, self.lease())
            .await
    }

    /// Records one attempt's result in `source`'s breaker ([`app_answered`]).
    pub async fn breaker_record(&self, source: &Source, attempt: &Attempt, status: Option<u16>) {
        let Some(settings) = &source.breaker else {
            return;
        };
        let ok = app_answered(attempt, status);
        self.breakers
            .record(self.store, self.metrics, &source.name, settings, ok)
            .await;
    }

    /// Whether `source`'s delivery is paused now, as the store keeps it.
    pub async fn paused(&self, source: &str) -> Result<bool, store::Error> {
        Ok(self
            .store
            .paused()
            .await?
            .iter()
            .any(|(name, _)| name == source))
    }

    /// Whether one delivery of `source` may start now: held while a queue
    /// source is paused, or while its breaker is open.
    pub async fn admit(&self, source: &Source) -> Result<Option<Held>, store::Error> {
        if source.delivery == Delivery::Queue && self.paused(&source.name).await? {
            return Ok(Some(Held::Paused));
        }
        Ok(match self.breaker_admit(source).await {
            Admit::Open { retry_after } => Some(Held::Breaker(retry_after)),
            Admit::Probe | Admit::Closed => None,
        })
    }

    /// Waits for `source`'s `max_rate` before one delivery starts: the
    /// start is reserved where replicas share the limiter (Redis), else in
    /// `local`. Returns how long it waited.
    pub async fn pace(&self, source: &Source, local: &mut crate::pace::Local) -> Duration {
        let Some(rate) = source.max_rate else {
            return Duration::ZERO;
        };
        let interval = crate::pace::interval_ms(rate);
        let delays = match self.store.pace(&source.name, 1, interval).await {
            Ok(Some(delays)) => delays,
            Ok(None) => local.reserve(1, interval, crate::time::now_ms() as f64),
            Err(e) => {
                tracing::warn!(source = %source.name, error = %e, "the shared rate limiter is unavailable; pacing this process alone");
                local.reserve(1, interval, crate::time::now_ms() as f64)
            }
        };
        let delay = delays.first().copied().unwrap_or_default();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        delay
    }
}
