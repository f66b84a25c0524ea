//! Pacing deliveries to the app (DESIGN §6a, `max_rate`): a queue source's
//! deliveries start at most `max_rate` a second, evenly spaced, counted for
//! all replicas together on Redis and in the process on SQLite (one host).
//!
//! The rule is GCRA with no burst: the store keeps the time the next
//! delivery may start (the "theoretical arrival time"); reserving `n` starts
//! gives each a delay from now, `interval` apart, and moves that time on by
//! `n` intervals. A worker takes at most one second's worth of entries a
//! round and waits each one's delay before sending it: the wait spends no
//! attempt of the retry schedule, and the entry keeps its lease meanwhile.

use std::time::Duration;

/// How far ahead a worker reserves starts: it takes no more entries while
/// its latest reserved start is further away than this.
pub const AHEAD: Duration = Duration::from_secs(1);

/// Milliseconds between two starts at `rate` a second.
pub fn interval_ms(rate: f64) -> f64 {
    1000.0 / rate.max(f64::MIN_POSITIVE)
}

/// Entries to take in one round at `rate`: one second's worth, at least one.
pub fn per_round(rate: f64) -> usize {
    (rate.ceil() as usize).max(1)
}

/// The in-process limiter of a store that one host holds (SQLite).
#[derive(Debug, Default)]
pub struct Local {
    /// Unix ms (fractional) at which the next start may happen.
    next_ms: f64,
}

impl Local {
    /// Reserves `count` starts `interval_ms` apart from `now_ms`; each start's
    /// delay from now.
    pub fn reserve(&mut self, count: usize, interval_ms: f64, now_ms: f64) -> Vec<Duration> {
        let start = self.next_ms.max(now_ms);
        let delays = (0..count)
            .map(|i| {
                let at = start + i as f64 * interval_ms - now_ms;
                Duration::from_micros((at.max(0.0) * 1000.0) as u64)
            })
            .collect();
        self.next_ms = start + count as f64 * interval_ms;
        delays
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_are_evenly_spaced_and_never_early() {
        let mut pace = Local::default();
        let first = pace.reserve(3, 100.0, 1_000.0);
        assert_eq!(first, [0, 100, 200].map(Duration::from_millis).to_vec());
        // 50 ms later the next start is still 250 ms away.
        let next = pace.reserve(2, 100.0, 1_050.0);
        assert_eq!(next, [250, 350].map(Duration::from_millis).to_vec());
        // After a quiet spell nothing is owed: no burst.
        let later = pace.reserve(2, 100.0, 10_000.0);
        assert_eq!(later, [0, 100].map(Duration::from_millis).to_vec());
        assert_eq!(per_round(0.5), 1);
        assert_eq!(per_round(50.0), 50);
        assert!((interval_ms(3000.0 / 60.0) - 20.0).abs() < 1e-9);
    }
}
