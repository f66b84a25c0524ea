//! Queue delivery (DESIGN §6): acknowledge the sender once the event is
//! durable, then deliver it to the app with hookgate's own retries.
//!
//! # Keys (one Redis Cluster slot per source, through the `{source}` hash tag)
//!
//! - `{prefix}:queue:{<source>}`: a stream of [`Envelope`]s ready to deliver,
//!   one field `e` each. Every replica reads it in the consumer group
//!   `hookgate`, under a consumer name unique to the process.
//! - `{prefix}:queue:{<source>}:delayed`: a sorted set of envelopes waiting
//!   for a retry, scored by the time (ms, Redis clock) they are due. A small
//!   Lua script moves due members back into the stream, so a waiting retry
//!   holds no consumer and no task.
//!
//! # The life of an entry
//!
//! Enqueued with `XADD` before the sender gets its 200. A worker reads it with
//! `XREADGROUP` (never blocking: the Redis connection is shared with every
//! request, so workers poll every [`POLL`] when idle) and sends it to the app:
//!
//! - 2xx: delivered; `XACK` + `XDEL` in one script.
//! - 4xx other than 429: refused by the app. Never retried; recorded in the
//!   dead-letter stream (so an operator who fixes the app can replay it) and
//!   removed from the queue.
//! - 5xx, 429, timeout, refused connection: the envelope, its attempt count
//!   raised, moves to the delayed set for the next delay of the source's
//!   `retry_schedule` (±20 % jitter, or the app's `Retry-After` on a 429/503);
//!   when the schedule has run out it becomes a dead letter.
//!
//! An entry whose worker died stays pending in the group; after
//! `upstream_timeout` + 5 s idle (longer than any attempt takes) another
//! worker takes it over with `XAUTOCLAIM` and delivers it. Delivery to the app
//! is therefore at least once: an app that must not act twice dedupes on
//! `X-Verified-Event-Id`, which every attempt carries.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use redis::Script;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{Delivery, Source};
use crate::delivery::{Attempt, Gated, Steps};
use crate::dlq;
use crate::envelope::Envelope;
use crate::state::State;
use crate::store::redis::{Operation, RedisStore};
use crate::store::{self, keys};
use crate::time::now_ms;

/// The consumer group every replica's workers join.
pub const GROUP: &str = "hookgate";
/// How often an idle worker looks for new entries.
pub const POLL: Duration = Duration::from_millis(100);
/// How often a worker looks for entries a dead replica left pending.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);
/// When another event of the same resource is being delivered, try again
/// after this (not counted as an attempt).
const ORDER_WAIT: Duration = Duration::from_secs(1);
/// Due retries moved back into the stream per round.
const PROMOTE_BATCH: usize = 100;
/// How long a worker waits after a failed round (Redis down) before the next.
const ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// How often the supervisor looks for queue sources added by a reload.
const SUPERVISE_EVERY: Duration = Duration::from_secs(2);

pub use crate::store::keys::{delayed_key, queue_key as stream_key};

/// Removes a delivered (or given up) entry. KEYS[1] = stream; ARGV[1] = group,
/// ARGV[2] = entry id.
static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XDEL', KEYS[1], ARGV[2])
",
    )
});

/// Parks an entry for a retry. KEYS[1] = stream, KEYS[2] = delayed set;
/// ARGV[1] = group, ARGV[2] = entry id, ARGV[3] = delay in ms, ARGV[4] = the
/// envelope with its new attempt count. The due time is taken from the Redis
/// clock, so replicas with skewed clocks agree on it.
static PARK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], due, ARGV[4])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XDEL', KEYS[1], ARGV[2])
",
    )
});

/// Moves due retries into the stream. KEYS[1] = stream, KEYS[2] = delayed
/// set; ARGV[1] = how many at most. Returns how many moved.
static PROMOTE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, m in ipairs(due) do
  redis.call('XADD', KEYS[1], '*', 'e', m)
  redis.call('ZREM', KEYS[2], m)
end
return #due
",
    )
});

/// The delay before retry number `attempts` (1-based), jittered ±20 %, or
/// `None` when the schedule has run out.
pub fn next_delay(
    schedule: &[Duration],
    attempts: u32,
    retry_after: Option<Duration>,
) -> Option<Duration> {
    let base = *schedule.get(usize::try_from(attempts).ok()?.checked_sub(1)?)?;
    if let Some(asked) = retry_after {
        return Some(asked.max(Duration::from_millis(1)));
    }
    let factor = 0.8 + 0.4 * rand::random::<f64>();
    Some(base.mul_f64(factor).max(Duration::from_millis(1)))
}

// ---------------------------------------------------------------------------
// Enqueue.

/// Appends `envelope` to its source's stream; returns the entry id. The event
/// is durable (as durable as the Redis deployment, and on `min_replicas`
/// replicas besides the primary) once this returns.
pub async fn enqueue(
    redis: &RedisStore,
    prefix: &str,
    envelope: &Envelope,
) -> Result<String, store::Error> {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(stream_key(prefix, &envelope.source))
        .arg("*")
        .arg("e")
        .arg(envelope.encode());
    redis.write(Operation::Enqueue, &cmd).await
}

// ---------------------------------------------------------------------------
// Workers.

/// Runs one delivery worker per queue source until `shutdown`, then lets
/// every delivery in hand finish. A source added by a reload gets its worker
/// within [`SUPERVISE_EVERY`]; a worker whose source was removed or switched
/// to forward keeps draining what is already queued.
pub async fn run_workers(state: Arc<State>, shutdown: CancellationToken) {
    if state.store.as_redis().is_none() {
        return;
    }
    let consumer = consumer_name();
    let mut workers = JoinSet::new();
    let mut started: HashMap<String, ()> = HashMap::new();
    loop {
        let runtime = state.runtime();
        for source in &runtime.config.sources {
            if source.delivery == Delivery::Queue && !started.contains_key(&source.name) {
                started.insert(source.name.clone(), ());
                tracing::info!(source = %source.name, consumer = %consumer, "queue worker started");
                workers.spawn(worker(
                    Arc::clone(&state),
                    source.clone(),
                    consumer.clone(),
                    shutdown.clone(),
                ));
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(SUPERVISE_EVERY) => {}
        }
    }
    while workers.join_next().await.is_some() {}
}

/// `host-pid-random`: unique per process, readable in `XINFO CONSUMERS`.
fn consumer_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "hookgate".to_owned());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// Reads one source's stream and delivers its entries, at most
/// `max_in_flight` at a time.
async fn worker(
    state: Arc<State>,
    mut source: Source,
    consumer: String,
    shutdown: CancellationToken,
) {
    let Some(redis) = state.store.as_redis().cloned() else {
        return;
    };
    let mut in_flight = JoinSet::new();
    let mut group_ready = false;
    let mut cursor = "0-0".to_owned();
    let mut last_reclaim: Option<Instant> = None;
    loop {
        if shutdown.is_cancelled() {
            break;
        }
        while in_flight.try_join_next().is_some() {}
        let runtime = state.runtime();
        if let Some(current) = runtime
            .config
            .sources
            .iter()
            .find(|s| s.name == source.name)
        {
            source = current.clone();
        }
        let prefix = runtime.config.store.key_prefix.clone();
        let stream = stream_key(&prefix, &source.name);
        let delayed = delayed_key(&prefix, &source.name);

        let mut took = 0;
        let round: Result<(), store::Error> = async {
            if !group_ready {
                create_group(&redis, &stream).await?;
                group_ready = true;
            }
            let _: i64 = redis
                .eval(&PROMOTE, &[&stream, &delayed], &[PROMOTE_BATCH.to_string().as_bytes()])
                .await?;
            let free = source.max_in_flight.saturating_sub(in_flight.len());
            if free == 0 {
                return Ok(());
            }
            let mut entries = Vec::new();
            if last_reclaim.is_none_or(|t| t.elapsed() >= RECLAIM_EVERY) {
                last_reclaim = Some(Instant::now());
                let lease = keys::lease(runtime.config.server.upstream_timeout);
                let (next, claimed) = reclaim(&redis, &stream, &consumer, lease, &cursor, free).await?;
                if !claimed.is_empty() {
                    tracing::info!(source = %source.name, entries = claimed.len(), "took over entries a stopped replica left pending");
                }
                cursor = next;
                entries = claimed;
            }
            if entries.is_empty() {
                entries = read(&redis, &stream, &consumer, free).await?;
            }
            took = entries.len();
            for entry in entries {
                let job = Job {
                    state: Arc::clone(&state),
                    redis: redis.clone(),
                    source: source.clone(),
                    prefix: prefix.clone(),
                    stream: stream.clone(),
                    delayed: delayed.clone(),
                    entry,
                };
                in_flight.spawn(job.run());
            }
            Ok(())
        }
        .await;
        let pause = if round.is_err() { ERROR_BACKOFF } else { POLL };
        if let Err(e) = round {
            state.metrics.store_errors.inc();
            if e.to_string().contains("NOGROUP") {
                // The stream was removed (Redis restarted empty): make it again.
                group_ready = false;
            }
            tracing::warn!(source = %source.name, error = %e, "queue worker: store unavailable");
        }
        if took > 0 && in_flight.len() < source.max_in_flight {
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
        }
    }
    // Finish the deliveries in hand; what was not read stays queued.
    while in_flight.join_next().await.is_some() {}
    tracing::info!(source = %source.name, "queue worker stopped");
}

async fn create_group(redis: &RedisStore, stream: &str) -> Result<(), store::Error> {
    let mut cmd = redis::cmd("XGROUP");
    cmd.arg("CREATE")
        .arg(stream)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM");
    match redis.query::<redis::Value>(&cmd).await {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
        Err(e) => Err(e),
    }
}

async fn read(
    redis: &RedisStore,
    stream: &str,
    consumer: &str,
    count: usize,
) -> Result<Vec<StreamId>, store::Error> {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP")
        .arg(GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(count)
        .arg("STREAMS")
        .arg(stream)
        .arg(">");
    let reply: Option<StreamReadReply> = redis.query(&cmd).await?;
    Ok(reply
        .map(|r| r.keys.into_iter().flat_map(|k| k.ids).collect())
        .unwrap_or_default())
}

/// Takes over entries idle for longer than `lease`; returns the next cursor.
async fn reclaim(
    redis: &RedisStore,
    stream: &str,
    consumer: &str,
    lease: Duration,
    cursor: &str,
    count: usize,
) -> Result<(String, Vec<StreamId>), store::Error> {
    let mut cmd = redis::cmd("XAUTOCLAIM");
    cmd.arg(stream)
        .arg(GROUP)
        .arg(consumer)
        .arg(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
        .arg(cursor)
        .arg("COUNT")
        .arg(count);
    let reply: StreamAutoClaimReply = redis.query(&cmd).await?;
    Ok((reply.next_stream_id, reply.claimed))
}

/// One entry on its way to the app.
struct Job {
    state: Arc<State>,
    redis: RedisStore,
    source: Source,
    prefix: String,
    stream: String,
    delayed: String,
    entry: StreamId,
}

impl Job {
    async fn run(self) {
        let id = self.entry.id.clone();
        let Some(bytes) = self.entry.get::<Vec<u8>>("e") else {
            tracing::error!(source = %self.source.name, entry = %id, "queue entry without an envelope; removed");
            self.settle(&id).await;
            return;
        };
        let mut envelope = match Envelope::decode(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(source = %self.source.name, entry = %id, error = %e, "queue entry unreadable; removed");
                self.settle(&id).await;
                return;
            }
        };
        let runtime = self.state.runtime();
        let steps = Steps {
            config: &runtime.config,
            store: &self.state.store,
            forwarder: &self.state.forwarder,
            metrics: &self.state.metrics,
        };
        let metrics = &self.state.metrics;
        let name = self.source.name.as_str();
        let gate = envelope.gate();
        let event = envelope.event(gate.as_ref());

        // The version gate, with the resource's lease held for the whole attempt.
        let lock = match &gate {
            None => None,
            Some(g) => match steps.gate(&event, g, &store::lease_token(), true).await {
                Ok(Gated::Newer(lock)) => lock,
                Ok(Gated::Busy) | Err(_) => {
                    // Another event of this resource is being delivered (or
                    // the store is away): try again shortly, not counted.
                    self.park(&id, &envelope, ORDER_WAIT).await;
                    return;
                }
                Ok(settled) => {
                    let result = if matches!(settled, Gated::Stale) {
                        "stale_version"
                    } else {
                        "duplicate"
                    };
                    metrics.delivery(name, result);
                    tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), result, "queued event not delivered: the app has this version or a newer one");
                    self.settle(&id).await;
                    return;
                }
            },
        };

        let attempt = envelope.attempt(&steps, &event).await;
        let attempts = envelope.attempts.saturating_add(1);
        match attempt {
            Attempt::Delivered => {
                steps.delivered(&event, lock).await;
                self.settle(&id).await;
                metrics.delivery(name, "delivered");
                metrics.completion(name, envelope.age_secs());
                tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, result = "delivered", "queued event delivered");
            }
            Attempt::Refused(error) => {
                steps.release(&event, lock).await;
                tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, error = %error, result = "dropped", "the app refused a queued event; not retried, kept as a dead letter");
                envelope.attempts = attempts;
                envelope.last_attempt_ms = Some(now_ms());
                envelope.last_error = Some(error);
                metrics.delivery(name, "dropped");
                self.bury(&id, &mut envelope).await;
            }
            Attempt::Failed { error, retry_after } => {
                steps.release(&event, lock).await;
                envelope.attempts = attempts;
                envelope.last_attempt_ms = Some(now_ms());
                match next_delay(&self.source.retry_schedule, attempts, retry_after) {
                    Some(delay) => {
                        tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, error = %error, retry_in_ms = delay.as_millis() as u64, result = "retry", "queued event not delivered; will retry");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "retry");
                        self.park(&id, &envelope, delay).await;
                    }
                    None => {
                        tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, error = %error, result = "dead_lettered", "retry schedule exhausted; moved to the dead-letter stream");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "dead_lettered");
                        self.bury(&id, &mut envelope).await;
                    }
                }
            }
        }
    }

    /// Removes the entry from the stream (and the group's pending list).
    async fn settle(&self, id: &str) {
        let r: Result<i64, _> = self
            .redis
            .eval(&SETTLE, &[&self.stream], &[GROUP.as_bytes(), id.as_bytes()])
            .await;
        if let Err(e) = r {
            // Left pending: it is delivered again after the lease, at least once.
            self.state.metrics.store_errors.inc();
            tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not remove a settled queue entry");
        }
    }

    /// Moves the entry to the delayed set, due after `delay`.
    async fn park(&self, id: &str, envelope: &Envelope, delay: Duration) {
        let delay_ms = u64::try_from(delay.as_millis())
            .unwrap_or(u64::MAX)
            .to_string();
        let r: Result<i64, _> = self
            .redis
            .eval(
                &PARK,
                &[&self.stream, &self.delayed],
                &[
                    GROUP.as_bytes(),
                    id.as_bytes(),
                    delay_ms.as_bytes(),
                    &envelope.encode(),
                ],
            )
            .await;
        if let Err(e) = r {
            self.state.metrics.store_errors.inc();
            tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not schedule a retry; the entry is taken over after its lease");
        }
    }

    /// Copies the envelope to the dead-letter stream, then removes the entry.
    /// If the copy fails the entry stays pending and is tried again after
    /// its lease: a dead letter is never lost, at worst written twice.
    async fn bury(&self, id: &str, envelope: &mut Envelope) {
        envelope.dead_ms = Some(now_ms());
        match dlq::add(&self.redis, &self.prefix, envelope).await {
            Ok(dead_id) => {
                self.state.metrics.dead_letter(&self.source.name);
                tracing::info!(source = %self.source.name, event_id = %envelope.event_id, dlq_id = %dead_id, "dead letter written");
                self.settle(id).await;
            }
            Err(e) => {
                self.state.metrics.store_errors.inc();
                tracing::warn!(source = %self.source.name, event_id = %envelope.event_id, entry = %id, error = %e, "could not write a dead letter; the entry is retried after its lease");
            }
        }
    }
}

/// Refreshes `hookgate_queue_depth{source}` (stream length plus waiting
/// retries) and `hookgate_dlq_depth` every `every` until `shutdown`.
pub async fn refresh_depths(state: Arc<State>, every: Duration, shutdown: CancellationToken) {
    let Some(redis) = state.store.as_redis().cloned() else {
        return;
    };
    loop {
        let runtime = state.runtime();
        let prefix = &runtime.config.store.key_prefix;
        for source in runtime
            .config
            .sources
            .iter()
            .filter(|s| s.delivery == Delivery::Queue)
        {
            let ready: Result<i64, _> = redis
                .query(redis::cmd("XLEN").arg(stream_key(prefix, &source.name)))
                .await;
            let waiting: Result<i64, _> = redis
                .query(redis::cmd("ZCARD").arg(delayed_key(prefix, &source.name)))
                .await;
            if let (Ok(ready), Ok(waiting)) = (ready, waiting) {
                state.metrics.set_queue_depth(&source.name, ready + waiting);
            }
        }
        if let Ok(depth) = dlq::depth(&redis, prefix).await {
            state.metrics.dlq_depth.set(depth);
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_runs_out() {
        let s = [Duration::from_secs(10), Duration::from_secs(60)];
        let d = next_delay(&s, 1, None).expect("first retry");
        assert!(
            d >= Duration::from_secs(8) && d <= Duration::from_secs(12),
            "{d:?}"
        );
        let d = next_delay(&s, 2, None).expect("second retry");
        assert!(
            d >= Duration::from_secs(48) && d <= Duration::from_secs(72),
            "{d:?}"
        );
        assert_eq!(next_delay(&s, 3, None), None);
        assert_eq!(next_delay(&s, 0, None), None);
        assert_eq!(
            next_delay(&s, 1, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(next_delay(&s, 3, Some(Duration::from_secs(3))), None);
    }

    #[test]
    fn keys_share_a_slot_per_source() {
        assert_eq!(stream_key("hg", "stripe"), "hg:queue:{stripe}");
        assert_eq!(delayed_key("hg", "stripe"), "hg:queue:{stripe}:delayed");
    }
}
