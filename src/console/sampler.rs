//! The last hour's counts for the overview, from the process's own metrics.
//!
//! Counters only ever grow, so "the last hour" is today's value minus the
//! value an hour ago. The sampler keeps a snapshot of the counters it needs
//! (`hookgate_requests_total` by source and outcome,
//! `hookgate_signature_matches_total` by source and secret,
//! `hookgate_filtered_total` by source and rule) at most once a
//! [`STEP`], for an hour. The baseline of a window is the oldest snapshot
//! within the hour, or zero at process start when the process is younger
//! than an hour. Snapshots are taken when the overview is shown, so a
//! console opened for the first time on an old process covers less than an
//! hour; the page says how many minutes it covers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often at most a snapshot is kept.
pub const STEP: Duration = Duration::from_secs(60);
/// The window.
pub const HOUR: Duration = Duration::from_secs(60 * 60);

/// (metric, source, outcome, secret index or rule name) → value.
pub type Counts = HashMap<(String, String, String), f64>;

pub struct Sampler {
    started: Instant,
    snapshots: Mutex<VecDeque<(Instant, Counts)>>,
}

impl Sampler {
    pub fn new() -> Self {
        Sampler {
            started: Instant::now(),
            snapshots: Mutex::default(),
        }
    }

    /// The counts over the window ending now (`current` being the counters
    /// now), and the window's length.
    pub fn window(&self, current: Counts) -> (Counts, Duration) {
        let now = Instant::now();
        let mut snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while snapshots
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > HOUR)
        {
            snapshots.pop_front();
        }
        let (since, baseline) = if now.duration_since(self.started) <= HOUR {
            (self.started, None)
        } else {
            match snapshots.front() {
                Some((at, counts)) => (*at, Some(counts.clone())),
                None => (now, Some(current.clone())),
            }
        };
        if snapshots
            .back()
            .is_none_or(|(at, _)| now.duration_since(*at) >= STEP)
        {
            snapshots.push_back((now, current.clone()));
        }
        let delta = current
            .into_iter()
            .map(|(key, value)| {
                let before = baseline.as_ref().and_then(|b| b.get(&key)).copied();
                (key, (value - before.unwrap_or(0.0)).max(0.0))
            })
            .collect();
        (delta, now.duration_since(since))
    }
}

impl Default for Sampler {
    fn default() -> Self {
        Self::new()
    }
}

/// The counters the overview needs, read from the Prometheus text of
/// `/metrics`: `hookgate_requests_total` (keyed by `outcome`),
/// `hookgate_signature_matches_total` (keyed by `secret`) and
/// `hookgate_filtered_total` (keyed by `rule`).
pub fn counts(text: &str) -> Counts {
    let mut out = Counts::new();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some((name, labels)) = series.split_once('{') else {
            continue;
        };
        let key_label = match name {
            "hookgate_requests_total" => "outcome",
            "hookgate_signature_matches_total" => "secret",
            "hookgate_filtered_total" => "rule",
            _ => continue,
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let labels = labels.trim_end_matches('}');
        let label = |wanted: &str| {
            labels.split(',').find_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                (k == wanted).then(|| v.trim_matches('"').to_owned())
            })
        };
        if let (Some(source), Some(key)) = (label("source"), label(key_label)) {
            out.insert((name.to_owned(), source, key), value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_two_counters() {
        let text = "# HELP x\nhookgate_requests_total{source=\"a\",outcome=\"forwarded\"} 3\n\
                    hookgate_signature_matches_total{source=\"a\",secret=\"1\"} 2\n\
                    hookgate_dlq_depth 4\n";
        let c = counts(text);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[&(
                "hookgate_requests_total".into(),
                "a".into(),
                "forwarded".into()
            )],
            3.0
        );
        assert_eq!(
            c[&(
                "hookgate_signature_matches_total".into(),
                "a".into(),
                "1".into()
            )],
            2.0
        );
    }

    #[test]
    fn a_young_process_counts_from_zero() {
        let sampler = Sampler::new();
        let mut now = Counts::new();
        now.insert(("m".into(), "a".into(), "x".into()), 5.0);
        let (delta, _) = sampler.window(now.clone());
        assert_eq!(delta[&("m".into(), "a".into(), "x".into())], 5.0);
    }
}
