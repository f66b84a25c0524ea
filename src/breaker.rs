//! A circuit breaker per source in front of the app (DESIGN §6a,
//! `[source.breaker]`), both modes.
//!
//! Closed, deliveries go through and consecutive failures (5xx, timeout,
//! refused) are counted; a 2xx or another answer below 500 resets the count.
//! At `failures` in a row it opens for `cooldown`: a forward source answers
//! fresh events `503 app_unavailable` with `Retry-After` (the cooldown left)
//! without touching the app, and a queue source takes nothing from its
//! queue, so no attempt is spent. Once the cooldown is over it is half-open:
//! one delivery, the probe, goes through; a success closes it, a failure
//! reopens it with the cooldown doubled, up to `max_cooldown`.
//!
//! The state ([`Shared`]) is one value per source, kept by the store where
//! every process on it shares it (the sqlite file's `breakers` table, or
//! `{prefix}:breaker:{source}` on Redis, a map in the process on the
//! memory store; changed by compare-and-set). A process reads it at most
//! [`READ_EVERY`] old while it is closed with no failure counted, so the
//! happy path costs no store call; every other change goes to the store.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::metrics::{Metrics, SourceLabel};
use crate::store::Store;
use crate::time::now_ms;

/// How old a replica's copy of a closed, failure-free breaker may be.
pub const READ_EVERY: Duration = Duration::from_secs(1);
/// Compare-and-set attempts before a change is given up (logged).
const TRIES: usize = 8;

/// `[source.breaker]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub failures: u32,
    pub cooldown: Duration,
    pub max_cooldown: Duration,
}

/// One source's breaker as the store keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shared {
    /// Consecutive failures while closed.
    pub failures: u32,
    /// Unix ms until which it is open; 0 = closed.
    pub open_until_ms: i64,
    /// The cooldown it last opened for (ms), doubled on a failed probe.
    pub cooldown_ms: i64,
    /// Half-open: unix ms until which the probe in flight holds the slot.
    pub probe_until_ms: i64,
}

/// What a delivery may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Closed,
    /// Half-open: this delivery is the one probe.
    Probe,
    /// Open: try again after this.
    Open {
        retry_after: Duration,
    },
}

/// What a recorded result did to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    None,
    Opened,
    Reopened,
    Closed,
}

impl Shared {
    /// `hookgate_breaker_state`: 0 closed, 1 open, 2 half-open.
    pub fn gauge(&self, now: i64) -> i64 {
        match self.open_until_ms {
            0 => 0,
            until if now < until => 1,
            _ => 2,
        }
    }

    /// Whether a delivery may start now; a probe takes the half-open slot
    /// for `probe_for`.
    pub fn admit(&mut self, now: i64, probe_for: Duration) -> Admit {
        if self.open_until_ms == 0 {
            return Admit::Closed;
        }
        if now < self.open_until_ms {
            return Admit::Open {
                retry_after: ms(self.open_until_ms - now),
            };
        }
        if now < self.probe_until_ms {
            return Admit::Open {
                retry_after: ms(self.probe_until_ms - now).min(Duration::from_secs(1)),
            };
        }
        self.probe_until_ms = now.saturating_add(millis(probe_for));
        Admit::Probe
    }

    /// Records a delivery's result (`ok`: the app answered below 500).
    pub fn record(&mut self, ok: bool, s: &Settings, now: i64) -> Change {
        let was_open = self.open_until_ms != 0;
        if ok {
            *self = Shared::default();
            return if was_open {
                Change::Closed
            } else {
                Change::None
            };
        }
        if was_open {
            if now < self.open_until_ms {
                // A delivery that started before it opened.
                return Change::None;
            }
            let doubled = self.cooldown_ms.saturating_mul(2).max(millis(s.cooldown));
            self.cooldown_ms = doubled.min(millis(s.max_cooldown));
            self.open_until_ms = now.saturating_add(self.cooldown_ms);
            self.probe_until_ms = 0;
            return Change::Reopened;
        }
        self.failures = self.failures.saturating_add(1);
        if self.failures < s.failures {
            return Change::None;
        }
        self.failures = 0;
        self.cooldown_ms = millis(s.cooldown);
        self.open_until_ms = now.saturating_add(self.cooldown_ms);
        self.probe_until_ms = 0;
        Change::Opened
    }
}

fn ms(n: i64) -> Duration {
    Duration::from_millis(u64::try_from(n).unwrap_or(0))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Every source's breaker as this process knows it.
#[derive(Debug, Default)]
pub struct Breakers {
    /// By source: the state, and when it was read from the store.
    held: Mutex<HashMap<String, (Shared, i64)>>,
}

impl Breakers {
    fn cached(&self, source: &str) -> Option<(Shared, i64)> {
        self.held.lock().ok()?.get(source).copied()
    }

    fn keep(&self, source: &str, shared: Shared, now: i64) {
        if let Ok(mut held) = self.held.lock() {
            held.insert(source.to_owned(), (shared, now));
        }
    }

    /// Applies `change` to `source`'s state, in the store where replicas
    /// share it; the state after it and what `change` returned.
    async fn update<R>(
        &self,
        store: &Store,
        source: &str,
        mut change: impl FnMut(&mut Shared) -> R,
    ) -> Option<(Shared, R)> {
        let now = now_ms();
        for _ in 0..TRIES {
            let raw = match store.breaker_get(source).await {
                Ok(raw) => raw,
                Err(e) => {
                    tracing::warn!(source, error = %e, "breaker: cannot read its shared state");
                    return None;
                }
            };
            let mut shared: Shared = raw
                .as_deref()
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or_default();
            let r = change(&mut shared);
            let new = serde_json::to_string(&shared).ok()?;
            match store.breaker_swap(source, raw.as_deref(), &new).await {
                Ok(true) => {
                    self.keep(source, shared, now);
                    return Some((shared, r));
                }
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(source, error = %e, "breaker: cannot write its shared state");
                    return None;
                }
            }
        }
        tracing::warn!(
            source,
            "breaker: its shared state kept changing under this replica"
        );
        None
    }

    /// Whether a delivery of `source` may start now. A store that cannot
    /// be read lets it through (the breaker protects the app; it must not
    /// become an outage of its own).
    pub async fn admit(
        &self,
        store: &Store,
        metrics: &Metrics,
        source: &str,
        probe_for: Duration,
    ) -> Admit {
        let now = now_ms();
        if let Some((shared, read)) = self.cached(source)
            && shared == Shared::default()
            && now - read < millis(READ_EVERY)
        {
            return Admit::Closed;
        }
        match self
            .update(store, source, |s| s.admit(now, probe_for))
            .await
        {
            Some((shared, admit)) => {
                gauge(metrics, source, &shared, now);
                if admit == Admit::Probe {
                    tracing::info!(source, "breaker half-open: one probe delivery goes through");
                }
                admit
            }
            None => Admit::Closed,
        }
    }

    /// Records a delivery's result (`ok`: the app answered below 500).
    pub async fn record(
        &self,
        store: &Store,
        metrics: &Metrics,
        source: &str,
        settings: &Settings,
        ok: bool,
    ) {
        let now = now_ms();
        if ok
            && let Some((shared, read)) = self.cached(source)
            && shared == Shared::default()
            && now - read < millis(READ_EVERY)
        {
            return;
        }
        let Some((shared, change)) = self
            .update(store, source, |s| s.record(ok, settings, now))
            .await
        else {
            return;
        };
        gauge(metrics, source, &shared, now);
        let label = SourceLabel {
            source: source.to_owned(),
        };
        match change {
            Change::Opened => {
                metrics.breaker_opened.get_or_create(&label).inc();
                tracing::warn!(
                    source,
                    failures = settings.failures,
                    cooldown_ms = shared.cooldown_ms,
                    "breaker opened: the app failed that many deliveries in a row"
                );
            }
            // `hookgate_breaker_opened_total` counts openings from closed
            // (DESIGN §6a: after `failures` failed deliveries in a row); a
            // failed probe's reopening is not one.
            Change::Reopened => {
                tracing::warn!(
                    source,
                    cooldown_ms = shared.cooldown_ms,
                    "breaker reopened: the probe failed"
                );
            }
            Change::Closed => tracing::info!(source, "breaker closed: the probe got through"),
            Change::None => {}
        }
    }
}

fn gauge(metrics: &Metrics, source: &str, shared: &Shared, now: i64) {
    metrics
        .breaker_state
        .get_or_create(&SourceLabel {
            source: source.to_owned(),
        })
        .set(shared.gauge(now));
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Settings = Settings {
        failures: 3,
        cooldown: Duration::from_secs(30),
        max_cooldown: Duration::from_secs(100),
    };

    #[test]
    fn opens_after_failures_in_a_row_probes_once_and_doubles_its_cooldown() {
        let probe = Duration::from_secs(15);
        let mut b = Shared::default();
        assert_eq!(b.record(false, &S, 0), Change::None);
        assert_eq!(
            b.record(true, &S, 0),
            Change::None,
            "a success resets the count"
        );
        assert_eq!(b.record(false, &S, 0), Change::None);
        assert_eq!(b.record(false, &S, 0), Change::None);
        assert_eq!(b.admit(0, probe), Admit::Closed);
        assert_eq!(b.record(false, &S, 1_000), Change::Opened);
        assert_eq!(b.gauge(1_000), 1);
        assert_eq!(
            b.admit(11_000, probe),
            Admit::Open {
                retry_after: Duration::from_secs(20)
            }
        );
        // A failure of a delivery that started before it opened changes nothing.
        assert_eq!(b.record(false, &S, 12_000), Change::None);
        // Cooldown over: one probe, the others wait.
        assert_eq!(b.gauge(31_000), 2);
        assert_eq!(b.admit(31_000, probe), Admit::Probe);
        assert!(matches!(b.admit(31_500, probe), Admit::Open { .. }));
        assert_eq!(b.record(false, &S, 32_000), Change::Reopened);
        assert_eq!(b.open_until_ms, 92_000, "60 s: doubled");
        assert_eq!(b.admit(92_000, probe), Admit::Probe);
        assert_eq!(b.record(false, &S, 93_000), Change::Reopened);
        assert_eq!(b.cooldown_ms, 100_000, "capped at max_cooldown");
        assert_eq!(b.admit(193_000, probe), Admit::Probe);
        assert_eq!(b.record(true, &S, 193_500), Change::Closed);
        assert_eq!(b, Shared::default());
        // A probe that never answers frees its slot after `probe`.
        let mut c = Shared::default();
        for _ in 0..3 {
            c.record(false, &S, 0);
        }
        assert_eq!(c.admit(30_000, probe), Admit::Probe);
        assert_eq!(c.admit(45_000, probe), Admit::Probe);
    }
}
