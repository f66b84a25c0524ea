//! Metrics, with the names and labels fixed by DESIGN §7.
//!
//! `prometheus-client` appends `_total` to counters, so counters are registered
//! without it; the exposed names are the ones in the contract.

use std::sync::{PoisonError, RwLock};

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceOutcome {
    pub source: String,
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabel {
    pub source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceClass {
    pub source: String,
    pub class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceSecret {
    pub source: String,
    pub secret: String,
}

/// `hookgate_filtered_total`: the source and the name of the rule that
/// ignored the event.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceRule {
    pub source: String,
    pub rule: String,
}

/// `hookgate_store_payloads`: a key id, or `plaintext`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeyLabel {
    pub key: String,
}

/// `hookgate_dlq_jobs`: a job state word.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: &'static str,
}

/// Why a trail write did not land: `queue_full`, `failed`, `no_record`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabel {
    pub listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceResult {
    pub source: String,
    pub result: &'static str,
}

/// The write a `WAIT` followed: `enqueue`, `commit`, `version_advance`,
/// `dead_letter`, `take`, `settle`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabel {
    pub operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadResult {
    pub result: &'static str,
}

/// No labels at all: a family over it is one series that shows no sample
/// until it is first set. The store gauges use it, since each belongs to one
/// engine and a `0` from the other would be a false reading.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Unlabelled;

impl EncodeLabelSet for Unlabelled {
    fn encode(&self, _: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        Ok(())
    }
}

/// A gauge that is absent until set (see [`Unlabelled`]).
pub type LateGauge = Family<Unlabelled, Gauge>;

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets (seconds) wide enough for both an app's answer and a
/// sender's clock skew: 5 ms up to 10 minutes.
fn latency_histogram() -> Histogram {
    Histogram::new(crate::stats::LATENCY_BOUNDS)
}

/// The `class` label of `hookgate_upstream_responses_total` for an answer
/// from the app (`error` is for no answer at all).
pub fn status_class(status: http::StatusCode) -> &'static str {
    if status.is_success() {
        "2xx"
    } else if status.is_client_error() {
        "4xx"
    } else {
        "5xx"
    }
}

/// Every metric hookgate exposes.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<SourceOutcome, Counter>,
    pub completion_latency: HistogramFamily<SourceLabel>,
    pub upstream_duration: HistogramFamily<SourceLabel>,
    pub upstream_responses: Family<SourceClass, Counter>,
    pub signature_matches: Family<SourceSecret, Counter>,
    /// Events a `[[source.filter]]` rule ignored (DESIGN §3a).
    pub filtered: Family<SourceRule, Counter>,
    pub dlq_depth: Gauge,
    pub queue_depth: Family<SourceLabel, Gauge>,
    /// Queue sources: 1 while delivery is paused (DESIGN §6a), else 0.
    pub source_paused: Family<SourceLabel, Gauge>,
    /// Deliveries that waited for `max_rate` before they started.
    pub deliveries_throttled: Family<SourceLabel, Counter>,
    /// `[source.breaker]`: 0 closed, 1 open, 2 half-open.
    pub breaker_state: Family<SourceLabel, Gauge>,
    /// Times a source's breaker opened (a failed probe reopening it included).
    pub breaker_opened: Family<SourceLabel, Counter>,
    /// Queue delivery attempts by result: `delivered`, `retry`, `dropped`
    /// (a 4xx, never retried), `dead_lettered` (schedule exhausted),
    /// `stale_version` / `duplicate` (the app already had that version).
    pub delivery_attempts: Family<SourceResult, Counter>,
    /// Dead letters written, both delivery modes.
    pub dead_letters: Family<SourceLabel, Counter>,
    pub store_errors: Counter,
    /// Writes that fewer than `min_replicas` replicas acknowledged within
    /// `replica_timeout` (beyond DESIGN §7: each one is also a store error
    /// the caller handled as a failed write).
    pub replication_timeouts: Family<OperationLabel, Counter>,
    /// Trail writes that did not land, by reason (beyond DESIGN §7; the
    /// trail's facts on Redis are written off the request's path).
    pub trail_writes_dropped: Family<ReasonLabel, Counter>,
    /// Stored payloads that do not open with the configured keys, each
    /// counted once per process (DESIGN §4b).
    pub store_unopenable: Family<SourceLabel, Counter>,
    /// Stored payloads by the key that sealed them (`plaintext`: none),
    /// refreshed every minute while `[store.encryption]` is set.
    pub store_payloads: Family<KeyLabel, Gauge>,
    /// Dead letters removed past `dead_letter_max_age` (DESIGN §6).
    pub dead_letters_expired: Family<SourceLabel, Counter>,
    /// Dead-letter jobs in the store by state (DESIGN §6b).
    pub dlq_jobs: Family<StateLabel, Gauge>,
    /// Rejections this process keeps (DESIGN §7d).
    pub rejections_kept: Gauge,
    /// The console's chart counts not yet added to the store (DESIGN §7b).
    pub stats: crate::stats::Tally,
    pub config_reloads: Family<ReloadResult, Counter>,
    /// Console sign-ins refused for a wrong admin token.
    pub console_signin_failures: Counter,
    /// Fetches of a provider's keys (certificates, key sets) that failed.
    pub key_fetch_failures: Counter,
    /// Spans that were not exported: the queue was full, or the collector
    /// refused or did not answer a batch.
    pub trace_spans_dropped: Counter,
    /// Seconds each fdatasync of the SQLite WAL took.
    pub store_sync: Histogram,
    /// Writes per SQLite group commit.
    pub store_batch: Histogram,
    /// Connections open now, per listener (beyond DESIGN §7: the cap's headroom).
    pub connections_open: Family<ListenerLabel, Gauge>,
    /// Connections answered `503` and closed at `max_connections`.
    pub connections_rejected: Family<ListenerLabel, Counter>,
    /// Redis: 1 when the server's `maxmemory-policy` may evict keys (all
    /// but `noeviction`), else 0; absent until read, and on the memory store.
    pub store_evicting: LateGauge,
    /// Redis: the server's `evicted_keys` (summed over a cluster's masters).
    pub store_evicted_keys: LateGauge,
    /// Memory store: ids held now, expired ones not yet purged included.
    pub store_entries: LateGauge,
    /// Memory store: `memory_max_entries`.
    pub store_capacity: LateGauge,
    /// Handles of the per-request metrics already looked up, so a request
    /// neither builds a label set (a `String` each) nor hashes one.
    handles: RwLock<Vec<SourceHandles>>,
}

/// One source's handles into the families above. A family hands out the
/// same counter or histogram for the same labels, so holding a clone is
/// counting into the family.
struct SourceHandles {
    source: Box<str>,
    outcomes: Vec<(&'static str, Counter)>,
    classes: Vec<(&'static str, Counter)>,
    secrets: Vec<(usize, Counter)>,
    upstream_duration: Option<Histogram>,
    completion: Option<Histogram>,
}

impl SourceHandles {
    fn new(source: &str) -> Self {
        SourceHandles {
            source: source.into(),
            outcomes: Vec::new(),
            classes: Vec::new(),
            secrets: Vec::new(),
            upstream_duration: None,
            completion: None,
        }
    }
}

fn find<'a, K: PartialEq, M>(list: &'a [(K, M)], key: &K) -> Option<&'a M> {
    list.iter().find(|(k, _)| k == key).map(|(_, m)| m)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Sets `hookgate_store_payloads{key}`.
    pub fn store_payloads(&self, key: &str, count: u64) {
        self.store_payloads
            .get_or_create(&KeyLabel {
                key: key.to_owned(),
            })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Sets `hookgate_dlq_jobs{state}`.
    pub fn dlq_jobs(&self, state: &'static str, count: i64) {
        self.dlq_jobs
            .get_or_create(&StateLabel { state })
            .set(count);
    }

    /// Counts one dead letter of `source` removed past its age.
    pub fn dead_letter_expired(&self, source: &str) {
        self.dead_letters_expired
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .inc();
    }

    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<SourceOutcome, Counter>::default();
        registry.register(
            "hookgate_requests",
            "Webhook requests by source and outcome",
            requests.clone(),
        );
        let completion_latency: HistogramFamily<SourceLabel> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "hookgate_completion_latency_seconds",
            "Seconds from the signed timestamp to the app's 2xx or the durable enqueue",
            completion_latency.clone(),
        );
        let upstream_duration: HistogramFamily<SourceLabel> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "hookgate_upstream_duration_seconds",
            "Seconds the app took to answer a forwarded request",
            upstream_duration.clone(),
        );
        let upstream_responses = Family::<SourceClass, Counter>::default();
        registry.register(
            "hookgate_upstream_responses",
            "App answers by class (2xx, 4xx, 5xx, error)",
            upstream_responses.clone(),
        );
        let signature_matches = Family::<SourceSecret, Counter>::default();
        registry.register(
            "hookgate_signature_matches",
            "Verified requests by the 0-based index of the secret that matched",
            signature_matches.clone(),
        );
        let filtered = Family::<SourceRule, Counter>::default();
        registry.register(
            "hookgate_filtered",
            "Verified events a [[source.filter]] rule ignored, by source and rule name",
            filtered.clone(),
        );
        let dlq_depth = Gauge::default();
        registry.register(
            "hookgate_dlq_depth",
            "Entries in the dead-letter stream",
            dlq_depth.clone(),
        );
        let queue_depth = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "hookgate_queue_depth",
            "Queued events not yet delivered",
            queue_depth.clone(),
        );
        let source_paused = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "hookgate_source_paused",
            "1 while delivery of the source's queue is paused, else 0",
            source_paused.clone(),
        );
        let deliveries_throttled = Family::<SourceLabel, Counter>::default();
        registry.register(
            "hookgate_deliveries_throttled",
            "Queued deliveries that waited for the source's max_rate before they started",
            deliveries_throttled.clone(),
        );
        let breaker_state = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "hookgate_breaker_state",
            "The source's circuit breaker: 0 closed, 1 open, 2 half-open",
            breaker_state.clone(),
        );
        let breaker_opened = Family::<SourceLabel, Counter>::default();
        registry.register(
            "hookgate_breaker_opened",
            "Times the source's circuit breaker opened from closed (a failed probe's reopening is not counted)",
            breaker_opened.clone(),
        );
        let delivery_attempts = Family::<SourceResult, Counter>::default();
        registry.register(
            "hookgate_delivery_attempts",
            "Queue delivery attempts by result (delivered, retry, dropped, dead_lettered, stale_version, duplicate)",
            delivery_attempts.clone(),
        );
        let dead_letters = Family::<SourceLabel, Counter>::default();
        registry.register(
            "hookgate_dead_letters",
            "Events written to the dead-letter stream",
            dead_letters.clone(),
        );
        let store_errors = Counter::default();
        registry.register(
            "hookgate_store_errors",
            "Store operations that failed",
            store_errors.clone(),
        );
        let replication_timeouts = Family::<OperationLabel, Counter>::default();
        registry.register(
            "hookgate_replication_timeouts",
            "Writes backing a promise that fewer than min_replicas replicas acknowledged within replica_timeout (WAIT), by operation",
            replication_timeouts.clone(),
        );
        let trail_writes_dropped = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "hookgate_trail_writes_dropped",
            "Trail facts not written, by reason: queue_full, failed (the store refused the write), no_record (no record of the event to append to)",
            trail_writes_dropped.clone(),
        );
        let store_unopenable = Family::<SourceLabel, Counter>::default();
        registry.register(
            "hookgate_store_unopenable",
            "Stored payloads (queue entries, dead letters) that do not open with the configured keys: kept, not delivered",
            store_unopenable.clone(),
        );
        let store_payloads = Family::<KeyLabel, Gauge>::default();
        registry.register(
            "hookgate_store_payloads",
            "Stored payloads (queue entries, dead letters) by the key that sealed them; plaintext for unsealed ones",
            store_payloads.clone(),
        );
        let dead_letters_expired = Family::<SourceLabel, Counter>::default();
        registry.register(
            "hookgate_dead_letters_expired",
            "Dead letters removed unsent because they were older than dead_letter_max_age",
            dead_letters_expired.clone(),
        );
        let dlq_jobs = Family::<StateLabel, Gauge>::default();
        registry.register(
            "hookgate_dlq_jobs",
            "Dead-letter replay and delete jobs kept in the store, by state (running, done, cancelled, failed)",
            dlq_jobs.clone(),
        );
        let rejections_kept = Gauge::default();
        registry.register(
            "hookgate_rejections_kept",
            "Refused requests this process keeps for GET /rejections (at most 1,000 per source and 1,000 unmatched)",
            rejections_kept.clone(),
        );
        let console_signin_failures = Counter::default();
        registry.register(
            "hookgate_console_signin_failures",
            "Console sign-ins refused for a wrong admin token",
            console_signin_failures.clone(),
        );
        let key_fetch_failures = Counter::default();
        registry.register(
            "hookgate_key_fetch_failures",
            "Fetches of a provider's keys (certificates, JWK Sets) that failed; a source with keys fetched before goes on with them",
            key_fetch_failures.clone(),
        );
        let trace_spans_dropped = Counter::default();
        registry.register(
            "hookgate_trace_spans_dropped",
            "Trace spans not exported: the export queue was full, or the collector refused or did not answer their batch",
            trace_spans_dropped.clone(),
        );
        let config_reloads = Family::<ReloadResult, Counter>::default();
        registry.register(
            "hookgate_config_reloads",
            "Config reloads by result",
            config_reloads.clone(),
        );
        let store_sync = Histogram::new([
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
        ]);
        registry.register(
            "hookgate_store_sync_seconds",
            "Seconds each fdatasync of the SQLite WAL took (sync = \"full\"); the writes that back a promise wait for one",
            store_sync.clone(),
        );
        let store_batch =
            Histogram::new([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]);
        registry.register(
            "hookgate_store_batch_size",
            "Writes per SQLite group commit",
            store_batch.clone(),
        );
        let connections_open = Family::<ListenerLabel, Gauge>::default();
        registry.register(
            "hookgate_connections_open",
            "Open connections by listener",
            connections_open.clone(),
        );
        let connections_rejected = Family::<ListenerLabel, Counter>::default();
        registry.register(
            "hookgate_connections_rejected",
            "Connections refused with 503 because the listener was at its connection limit",
            connections_rejected.clone(),
        );
        let store_evicting = LateGauge::default();
        registry.register(
            "hookgate_store_evicting",
            "1 when the Redis store's maxmemory-policy may evict keys (anything but noeviction), else 0",
            store_evicting.clone(),
        );
        let store_evicted_keys = LateGauge::default();
        registry.register(
            "hookgate_store_evicted_keys",
            "Keys the Redis store's servers evicted (INFO stats evicted_keys, summed over a cluster's masters)",
            store_evicted_keys.clone(),
        );
        let store_entries = LateGauge::default();
        registry.register(
            "hookgate_store_entries",
            "Entries the memory store holds (nonces and versions)",
            store_entries.clone(),
        );
        let store_capacity = LateGauge::default();
        registry.register(
            "hookgate_store_capacity",
            "Entries the memory store can hold (memory_max_entries); claims fail beyond it",
            store_capacity.clone(),
        );
        Metrics {
            registry,
            requests,
            completion_latency,
            upstream_duration,
            upstream_responses,
            signature_matches,
            filtered,
            dlq_depth,
            queue_depth,
            source_paused,
            deliveries_throttled,
            breaker_state,
            breaker_opened,
            delivery_attempts,
            dead_letters,
            store_errors,
            replication_timeouts,
            trail_writes_dropped,
            store_unopenable,
            store_payloads,
            dead_letters_expired,
            dlq_jobs,
            rejections_kept,
            stats: crate::stats::Tally::default(),
            config_reloads,
            console_signin_failures,
            key_fetch_failures,
            trace_spans_dropped,
            store_sync,
            store_batch,
            connections_open,
            connections_rejected,
            store_evicting,
            store_evicted_keys,
            store_entries,
            store_capacity,
            handles: RwLock::new(Vec::new()),
        }
    }

    /// Runs `use_handle` on `source`'s handle if it was looked up before;
    /// otherwise creates it with `create`, keeps it with `keep`, and runs
    /// `use_handle` on it. Sources come from the config, so the list stays short.
    fn with_handle<M: Clone>(
        &self,
        source: &str,
        lookup: impl Fn(&SourceHandles) -> Option<&M>,
        create: impl FnOnce() -> M,
        keep: impl FnOnce(&mut SourceHandles, M),
        use_handle: impl Fn(&M),
    ) {
        {
            let handles = self.handles.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(found) = handles
                .iter()
                .find(|h| &*h.source == source)
                .and_then(&lookup)
            {
                use_handle(found);
                return;
            }
        }
        let created = create();
        use_handle(&created);
        let mut handles = self.handles.write().unwrap_or_else(PoisonError::into_inner);
        let index = match handles.iter().position(|h| &*h.source == source) {
            Some(index) => index,
            None => {
                handles.push(SourceHandles::new(source));
                handles.len() - 1
            }
        };
        if lookup(&handles[index]).is_none() {
            keep(&mut handles[index], created);
        }
    }

    /// One event ignored by the source's rule `rule` (DESIGN §3a).
    pub fn filtered(&self, source: &str, rule: &str) {
        self.filtered
            .get_or_create(&SourceRule {
                source: source.to_owned(),
                rule: rule.to_owned(),
            })
            .inc();
    }

    pub fn request(&self, source: &str, outcome: &'static str) {
        self.with_handle(
            source,
            |h| find(&h.outcomes, &outcome),
            || {
                self.requests
                    .get_or_create(&SourceOutcome {
                        source: source.to_owned(),
                        outcome,
                    })
                    .clone()
            },
            |h, c| h.outcomes.push((outcome, c)),
            |c| {
                c.inc();
            },
        );
    }

    pub fn upstream_response(&self, source: &str, class: &'static str, seconds: f64) {
        self.with_handle(
            source,
            |h| h.upstream_duration.as_ref(),
            || {
                self.upstream_duration
                    .get_or_create(&SourceLabel {
                        source: source.to_owned(),
                    })
                    .clone()
            },
            |h, d| h.upstream_duration = Some(d),
            |d| d.observe(seconds),
        );
        self.with_handle(
            source,
            |h| find(&h.classes, &class),
            || {
                self.upstream_responses
                    .get_or_create(&SourceClass {
                        source: source.to_owned(),
                        class,
                    })
                    .clone()
            },
            |h, c| h.classes.push((class, c)),
            |c| {
                c.inc();
            },
        );
    }

    pub fn signature_match(&self, source: &str, secret_index: usize) {
        self.with_handle(
            source,
            |h| find(&h.secrets, &secret_index),
            || {
                self.signature_matches
                    .get_or_create(&SourceSecret {
                        source: source.to_owned(),
                        secret: secret_index.to_string(),
                    })
                    .clone()
            },
            |h, c| h.secrets.push((secret_index, c)),
            |c| {
                c.inc();
            },
        );
    }

    pub fn completion(&self, source: &str, seconds: f64) {
        self.stats.latency(source, seconds);
        self.with_handle(
            source,
            |h| h.completion.as_ref(),
            || {
                self.completion_latency
                    .get_or_create(&SourceLabel {
                        source: source.to_owned(),
                    })
                    .clone()
            },
            |h, d| h.completion = Some(d),
            |d| d.observe(seconds.max(0.0)),
        );
    }

    pub fn delivery(&self, source: &str, result: &'static str) {
        self.delivery_attempts
            .get_or_create(&SourceResult {
                source: source.to_owned(),
                result,
            })
            .inc();
    }

    pub fn dead_letter(&self, source: &str) {
        self.dead_letters
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .inc();
    }

    pub fn set_queue_depth(&self, source: &str, depth: i64) {
        self.queue_depth
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .set(depth);
    }

    pub fn reload(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.config_reloads
            .get_or_create(&ReloadResult { result })
            .inc();
    }

    /// What the Redis store's servers said about eviction.
    pub fn store_eviction(&self, evicting: bool, evicted_keys: i64) {
        self.store_evicting
            .get_or_create(&Unlabelled)
            .set(i64::from(evicting));
        self.store_evicted_keys
            .get_or_create(&Unlabelled)
            .set(evicted_keys);
    }

    /// How full the memory store is.
    pub fn store_fill(&self, entries: usize, capacity: usize) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.store_entries
            .get_or_create(&Unlabelled)
            .set(count(entries));
        self.store_capacity
            .get_or_create(&Unlabelled)
            .set(count(capacity));
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_the_contract_names() {
        let m = Metrics::new();
        m.request("stripe", "forwarded");
        m.upstream_response("stripe", "2xx", 0.01);
        m.signature_match("stripe", 1);
        m.completion("stripe", 1.5);
        m.store_errors.inc();
        m.reload(false);
        m.connections_rejected
            .get_or_create(&ListenerLabel { listener: "public" })
            .inc();
        m.delivery("stripe", "retry");
        m.dead_letter("stripe");
        m.set_queue_depth("stripe", 3);
        let text = m.encode();
        for needle in [
            r#"hookgate_requests_total{source="stripe",outcome="forwarded"} 1"#,
            r#"hookgate_upstream_responses_total{source="stripe",class="2xx"} 1"#,
            r#"hookgate_signature_matches_total{source="stripe",secret="1"} 1"#,
            r#"hookgate_completion_latency_seconds_count{source="stripe"} 1"#,
            r#"hookgate_upstream_duration_seconds_count{source="stripe"} 1"#,
            "hookgate_store_errors_total 1",
            r#"hookgate_config_reloads_total{result="failure"} 1"#,
            "hookgate_dlq_depth 0",
            r#"hookgate_connections_rejected_total{listener="public"} 1"#,
            r#"hookgate_delivery_attempts_total{source="stripe",result="retry"} 1"#,
            r#"hookgate_dead_letters_total{source="stripe"} 1"#,
            r#"hookgate_queue_depth{source="stripe"} 3"#,
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }

    #[test]
    fn store_gauges_appear_once_set_without_labels() {
        let m = Metrics::new();
        let before = m.encode();
        for name in [
            "hookgate_store_evicting",
            "hookgate_store_evicted_keys",
            "hookgate_store_entries",
            "hookgate_store_capacity",
        ] {
            assert!(
                !before.lines().any(|l| l.starts_with(name)),
                "{name} has a sample before it was set:\n{before}"
            );
        }
        m.store_eviction(true, 42);
        m.store_fill(7, 100);
        let text = m.encode();
        for needle in [
            "\nhookgate_store_evicting 1\n",
            "\nhookgate_store_evicted_keys 42\n",
            "\nhookgate_store_entries 7\n",
            "\nhookgate_store_capacity 100\n",
            "# TYPE hookgate_store_evicting gauge",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        m.store_eviction(false, 43);
        let text = m.encode();
        assert!(text.contains("\nhookgate_store_evicting 0\n"), "{text}");
    }

    #[test]
    fn kept_handles_count_into_the_families() {
        let m = Metrics::new();
        for _ in 0..3 {
            m.request("stripe", "forwarded");
            m.signature_match("stripe", 0);
            m.upstream_response("stripe", "2xx", 0.01);
        }
        m.request("stripe", "duplicate");
        m.request("github", "forwarded");
        m.signature_match("stripe", 1);
        m.upstream_response("stripe", "5xx", 0.01);
        let text = m.encode();
        for needle in [
            r#"hookgate_requests_total{source="stripe",outcome="forwarded"} 3"#,
            r#"hookgate_requests_total{source="stripe",outcome="duplicate"} 1"#,
            r#"hookgate_requests_total{source="github",outcome="forwarded"} 1"#,
            r#"hookgate_signature_matches_total{source="stripe",secret="0"} 3"#,
            r#"hookgate_signature_matches_total{source="stripe",secret="1"} 1"#,
            r#"hookgate_upstream_responses_total{source="stripe",class="2xx"} 3"#,
            r#"hookgate_upstream_responses_total{source="stripe",class="5xx"} 1"#,
            r#"hookgate_upstream_duration_seconds_count{source="stripe"} 4"#,
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }
}
