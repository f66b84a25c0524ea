//! The console's charts' numbers (DESIGN §7b): per source, outcomes and the
//! completion latency histogram, by minute and by 15 minutes, for the whole
//! deployment.
//!
//! Each process counts in memory ([`Tally`]: one lock and two additions per
//! request, never a store write) and adds what it counted to the store at
//! most every [`FLUSH_EVERY`] ([`run`]): one write per flush, whatever the
//! traffic. The store keeps [`KEEP`] of it (a hash per hour and per day on
//! Redis, the `stats` table on sqlite, the process on memory) and the page
//! sums every replica's additions with what this process has not flushed
//! yet. A flush that fails is kept and added to the next one; counts older
//! than [`KEEP`] are let go.
//!
//! Series: the five outcome groups of [`GROUPS`], and the latency histogram
//! as `lat_0` … `lat_15`: the count of completions in each bucket of
//! [`LATENCY_BOUNDS`] (`lat_15` above the last bound).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// How often a process adds its counts to the store, at most.
pub const FLUSH_EVERY: Duration = Duration::from_secs(10);
/// How long the store keeps them.
pub const KEEP: Duration = Duration::from_secs(25 * 3600);
/// The two resolutions: a minute (the last hour) and 15 minutes (the last day).
pub const MINUTE: u32 = 60;
pub const QUARTER: u32 = 900;

/// The outcome groups a chart stacks, in order.
pub const GROUPS: [&str; 5] = ["delivered", "duplicates", "ignored", "rejected", "failed"];

/// The completion latency buckets' upper bounds, in seconds (those of
/// `hookgate_completion_latency_seconds`).
pub const LATENCY_BOUNDS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
];
const LATENCY_SERIES: [&str; 16] = [
    "lat_0", "lat_1", "lat_2", "lat_3", "lat_4", "lat_5", "lat_6", "lat_7", "lat_8", "lat_9",
    "lat_10", "lat_11", "lat_12", "lat_13", "lat_14", "lat_15",
];

/// Which group an answered request falls in: `delivered` (the app's 2xx, or
/// queued), `duplicates`, `ignored` (an event type or a filter, a stale
/// version, an endpoint check), `rejected` (a 4xx of hookgate's own),
/// `failed` (the app failed or could not be reached, the store, an open
/// breaker). `None` for an outcome no chart shows.
pub fn group(outcome: &str, status: http::StatusCode) -> Option<usize> {
    let g = match outcome {
        "forwarded" | "forwarded_unchecked" if status.is_success() => 0,
        "forwarded" | "forwarded_unchecked" => 4,
        "queued" => 0,
        "duplicate" | "in_flight" => 1,
        "ignored" | "filtered" | "stale_version" | "handshake" => 2,
        "unmatched" => return None,
        _ if status.is_client_error() => 3,
        _ => 4,
    };
    Some(g)
}

/// One count as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// [`MINUTE`] or [`QUARTER`].
    pub width: u32,
    /// Unix seconds where the bucket starts.
    pub bucket: i64,
    pub source: String,
    pub series: String,
    pub count: u64,
}

/// What one source did in one minute.
#[derive(Debug, Clone, Default)]
struct Minute {
    groups: [u64; 5],
    latency: [u64; 16],
}

/// This process's counts not yet added to the store.
#[derive(Default)]
pub struct Tally {
    /// Per source (the config's), per minute.
    pending: Mutex<HashMap<String, BTreeMap<i64, Minute>>>,
}

/// Minutes a source's pending counts hold at most (the store unreachable
/// for [`KEEP`]): the oldest go first.
const MAX_PENDING_MINUTES: usize = (KEEP.as_secs() / 60) as usize;

fn minute_now() -> i64 {
    crate::time::unix_now().div_euclid(i64::from(MINUTE)) * i64::from(MINUTE)
}

impl Tally {
    fn with(&self, source: &str, f: impl FnOnce(&mut Minute)) {
        let minute = minute_now();
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        // A known source is found without allocating.
        if !pending.contains_key(source) {
            pending.insert(source.to_owned(), BTreeMap::new());
        }
        if let Some(minutes) = pending.get_mut(source) {
            f(minutes.entry(minute).or_default());
            while minutes.len() > MAX_PENDING_MINUTES {
                minutes.pop_first();
            }
        }
    }

    /// Counts one answered request of `source`.
    pub fn request(&self, source: &str, outcome: &str, status: http::StatusCode) {
        if let Some(g) = group(outcome, status) {
            self.with(source, |m| m.groups[g] += 1);
        }
    }

    /// Counts one completion of `source`, `seconds` after its signed time.
    pub fn latency(&self, source: &str, seconds: f64) {
        let i = LATENCY_BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(LATENCY_BOUNDS.len());
        self.with(source, |m| m.latency[i] += 1);
    }

    /// Everything counted so far as rows of both widths, and forgotten
    /// here; [`Tally::put_back`] returns them after a failed flush.
    pub fn take(&self) -> Vec<Row> {
        let taken = match self.pending.lock() {
            Ok(mut pending) => std::mem::take(&mut *pending),
            Err(_) => return Vec::new(),
        };
        rows(&taken)
    }

    /// What this process has not flushed yet, as rows (nothing taken).
    pub fn peek(&self) -> Vec<Row> {
        match self.pending.lock() {
            Ok(pending) => rows(&pending),
            Err(_) => Vec::new(),
        }
    }

    /// Puts rows of a failed flush back (the minute ones; the quarter ones
    /// are made from them again), dropping those older than [`KEEP`].
    pub fn put_back(&self, rows: Vec<Row>) {
        let oldest = crate::time::unix_now() - KEEP.as_secs() as i64;
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        for row in rows {
            if row.width != MINUTE || row.bucket < oldest {
                continue;
            }
            let m = pending
                .entry(row.source)
                .or_default()
                .entry(row.bucket)
                .or_default();
            if let Some(g) = GROUPS.iter().position(|g| *g == row.series) {
                m.groups[g] += row.count;
            } else if let Some(i) = LATENCY_SERIES.iter().position(|l| *l == row.series) {
                m.latency[i] += row.count;
            }
        }
    }
}

fn rows(pending: &HashMap<String, BTreeMap<i64, Minute>>) -> Vec<Row> {
    let mut out = Vec::new();
    let minutes = pending
        .iter()
        .flat_map(|(source, minutes)| minutes.iter().map(move |(at, m)| (source, at, m)));
    for (source, minute, m) in minutes {
        let quarter = minute.div_euclid(i64::from(QUARTER)) * i64::from(QUARTER);
        let series = GROUPS
            .iter()
            .zip(m.groups)
            .chain(LATENCY_SERIES.iter().zip(m.latency));
        for (name, count) in series.filter(|(_, c)| *c > 0) {
            for (width, bucket) in [(MINUTE, *minute), (QUARTER, quarter)] {
                out.push(Row {
                    width,
                    bucket,
                    source: source.clone(),
                    series: (*name).to_owned(),
                    count,
                });
            }
        }
    }
    out
}

/// One bucket of one source as a chart draws it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub groups: [u64; 5],
    pub latency: [u64; 16],
}

impl Point {
    /// The `q` quantile (0–1) of the completion latency, interpolated
    /// within its bucket as Prometheus' `histogram_quantile` does; `None`
    /// without completions.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.latency.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = q * total as f64;
        let mut seen = 0u64;
        for (i, count) in self.latency.iter().enumerate() {
            let before = seen as f64;
            seen += count;
            if (seen as f64) >= rank && *count > 0 {
                let Some(upper) = LATENCY_BOUNDS.get(i) else {
                    return LATENCY_BOUNDS.last().copied();
                };
                let lower = if i == 0 { 0.0 } else { LATENCY_BOUNDS[i - 1] };
                return Some(lower + (upper - lower) * ((rank - before) / *count as f64));
            }
        }
        LATENCY_BOUNDS.last().copied()
    }

    fn add(&mut self, series: &str, count: u64) {
        if let Some(g) = GROUPS.iter().position(|g| *g == series) {
            self.groups[g] += count;
        } else if let Some(i) = LATENCY_SERIES.iter().position(|l| *l == series) {
            self.latency[i] += count;
        }
    }

    /// This point and `other` together.
    pub fn merge(&mut self, other: &Point) {
        for (a, b) in self.groups.iter_mut().zip(other.groups) {
            *a += b;
        }
        for (a, b) in self.latency.iter_mut().zip(other.latency) {
            *a += b;
        }
    }
}

/// `source`'s `count` buckets of `width` ending with the current one,
/// oldest first, from `rows`.
pub fn series(rows: &[Row], source: &str, width: u32, count: usize) -> (i64, Vec<Point>) {
    let w = i64::from(width);
    let last = crate::time::unix_now().div_euclid(w) * w;
    let first = last - w * (count as i64 - 1);
    let mut points = vec![Point::default(); count];
    for row in rows
        .iter()
        .filter(|r| r.width == width && r.source == source && r.bucket >= first && r.bucket <= last)
    {
        let i = usize::try_from((row.bucket - first) / w).unwrap_or(0);
        if let Some(p) = points.get_mut(i) {
            p.add(&row.series, row.count);
        }
    }
    (first, points)
}

/// Adds this process's counts to the store every [`FLUSH_EVERY`] until
/// `shutdown`, and once more then.
pub async fn run(
    state: std::sync::Arc<crate::state::State>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut every = tokio::time::interval(FLUSH_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        let last = tokio::select! {
            _ = shutdown.cancelled() => true,
            _ = every.tick() => false,
        };
        let rows = state.metrics.stats.take();
        if !rows.is_empty()
            && let Err(e) = state.store.stats_add(&rows).await
        {
            tracing::debug!(error = %e, "chart counts not added to the store; kept for the next flush");
            state.metrics.stats.put_back(rows);
        }
        if last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_outcomes() {
        let ok = http::StatusCode::OK;
        assert_eq!(group("forwarded", ok), Some(0));
        assert_eq!(
            group("forwarded", http::StatusCode::INTERNAL_SERVER_ERROR),
            Some(4)
        );
        assert_eq!(group("queued", ok), Some(0));
        assert_eq!(group("duplicate", ok), Some(1));
        assert_eq!(group("filtered", ok), Some(2));
        assert_eq!(
            group("invalid_signature", http::StatusCode::BAD_REQUEST),
            Some(3)
        );
        assert_eq!(
            group("app_unavailable", http::StatusCode::SERVICE_UNAVAILABLE),
            Some(4)
        );
        assert_eq!(
            group("upstream_timeout", http::StatusCode::GATEWAY_TIMEOUT),
            Some(4)
        );
    }

    #[test]
    fn a_tally_becomes_rows_of_both_widths_and_comes_back() {
        let t = Tally::default();
        for _ in 0..3 {
            t.request("q", "forwarded", http::StatusCode::OK);
        }
        t.latency("q", 0.2);
        let rows = t.take();
        assert!(t.take().is_empty());
        let point = |width| {
            series(&rows, "q", width, 4)
                .1
                .last()
                .cloned()
                .unwrap_or_default()
        };
        for width in [MINUTE, QUARTER] {
            let p = point(width);
            assert_eq!(p.groups, [3, 0, 0, 0, 0]);
            assert_eq!(p.latency[5], 1, "0.2 s is in the 0.25 bucket");
        }
        t.put_back(rows);
        assert_eq!(t.peek().len(), 4, "both series, both widths");
    }

    #[test]
    fn quantiles_interpolate_within_a_bucket() {
        let mut p = Point::default();
        p.latency[5] = 10; // (0.1, 0.25]
        assert_eq!(p.quantile(0.5), Some(0.1 + 0.15 * 0.5));
        p.latency[15] = 10;
        assert_eq!(p.quantile(0.99), Some(600.0));
        assert_eq!(Point::default().quantile(0.5), None);
    }
}
