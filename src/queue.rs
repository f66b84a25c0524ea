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
use std::net::IpAddr;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use redis::Script;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{self, Delivery, Source};
use crate::dlq;
use crate::forward::{self, Forwarder, Mark, Stamp};
use crate::metrics::Metrics;
use crate::ordering::{Check, Gate};
use crate::state::State;
use crate::store::redis::RedisStore;
use crate::store::{self, Claim, keys};
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
/// The longest `Retry-After` honoured; a larger one is cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);
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

// ---------------------------------------------------------------------------
// The stored request.

/// A header value as stored: text when it is UTF-8, base64 otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeaderText {
    Text(String),
    Bytes { base64: String },
}

/// A verified request as hookgate keeps it for later delivery: the raw
/// request (method, path and query, end-to-end headers, body bytes) and what
/// hookgate knows about it. Stored as one value: the metadata as a JSON line,
/// a newline, then the body bytes untouched (JSON escapes every newline in
/// the metadata, so the first one ends it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique per envelope, so two copies of one event stay distinct members.
    pub token: String,
    pub source: String,
    /// As stamped (`key_safe_id`).
    pub event_id: String,
    #[serde(default)]
    pub event_type: Option<String>,
    /// What the event's nonce is keyed by, when not `event_id` (an unsigned
    /// id: the body's digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce_id: Option<String>,
    /// Whether the signature covers `event_type`, so it may be stamped.
    #[serde(default = "signed_by_default")]
    pub type_signed: bool,
    /// `"forward"` or `"queue"`: how the event came in.
    pub delivery: String,
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub headers: Vec<(String, HeaderText)>,
    #[serde(default)]
    pub peer: Option<IpAddr>,
    /// The sender's signed timestamp (unix seconds), when the scheme signs one.
    #[serde(default)]
    pub signed_at: Option<i64>,
    /// When hookgate received it (unix ms).
    pub received_ms: i64,
    /// Delivery attempts made so far.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_attempt_ms: Option<i64>,
    /// When it became a dead letter (unix ms).
    #[serde(default)]
    pub dead_ms: Option<i64>,
    /// The version gate's resource and version, when the source has one.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(skip)]
    pub body: Bytes,
}

fn signed_by_default() -> bool {
    true
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("no metadata line")]
    NoMetadata,
    #[error("metadata is not valid: {0}")]
    Metadata(String),
}

/// What hookgate vouches for about a request it keeps.
pub struct Received<'a> {
    pub source: &'a Source,
    pub event_id: &'a str,
    /// What its nonce is keyed by.
    pub nonce_id: &'a str,
    pub event_type: Option<&'a str>,
    pub signed_at: Option<i64>,
    pub peer: Option<IpAddr>,
    pub gate: Option<&'a Gate>,
}

impl Envelope {
    /// Captures a verified request. Hop-by-hop headers are left out, and
    /// spoofable ones ([`forward::strip_spoofable`]) were removed when it arrived.
    pub fn new(parts: &http::request::Parts, body: Bytes, r: Received<'_>) -> Envelope {
        let mut headers = parts.headers.clone();
        forward::strip_hop_by_hop(&mut headers);
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let text = match value.to_str() {
                    Ok(s) => HeaderText::Text(s.to_owned()),
                    Err(_) => HeaderText::Bytes {
                        base64: base64::engine::general_purpose::STANDARD.encode(value.as_bytes()),
                    },
                };
                (name.as_str().to_owned(), text)
            })
            .collect();
        Envelope {
            token: crate::store::lease_token(),
            source: r.source.name.clone(),
            event_id: r.event_id.to_owned(),
            event_type: r.event_type.map(str::to_owned),
            nonce_id: (r.nonce_id != r.event_id).then(|| r.nonce_id.to_owned()),
            type_signed: r.source.scheme.signs_event_type(),
            delivery: match r.source.delivery {
                Delivery::Forward => "forward",
                Delivery::Queue => "queue",
            }
            .to_owned(),
            method: parts.method.as_str().to_owned(),
            uri: parts
                .uri
                .path_and_query()
                .map(|pq| pq.as_str().to_owned())
                .unwrap_or_else(|| "/".to_owned()),
            headers,
            peer: r.peer,
            signed_at: r.signed_at,
            received_ms: now_ms(),
            attempts: 0,
            last_error: None,
            last_attempt_ms: None,
            dead_ms: None,
            resource: r.gate.map(|g| g.resource.clone()),
            version: r.gate.map(|g| g.version.to_string()),
            body,
        }
    }

    /// What the event's nonce is keyed by.
    pub fn nonce_id(&self) -> &str {
        self.nonce_id.as_deref().unwrap_or(&self.event_id)
    }

    /// The stored form: JSON metadata, `\n`, body bytes.
    pub fn encode(&self) -> Vec<u8> {
        // Serializing plain strings and numbers cannot fail.
        let meta = serde_json::to_vec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(meta.len() + 1 + self.body.len());
        out.extend_from_slice(&meta);
        out.push(b'\n');
        out.extend_from_slice(&self.body);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Envelope, DecodeError> {
        let split = bytes
            .iter()
            .position(|b| *b == b'\n')
            .ok_or(DecodeError::NoMetadata)?;
        let mut envelope: Envelope = serde_json::from_slice(&bytes[..split])
            .map_err(|e| DecodeError::Metadata(e.to_string()))?;
        envelope.body = Bytes::copy_from_slice(&bytes[split + 1..]);
        Ok(envelope)
    }

    /// The version gate position, when the source had one.
    pub fn gate(&self) -> Option<Gate> {
        Some(Gate {
            resource: self.resource.clone()?,
            version: self.version.as_deref()?.parse().ok()?,
        })
    }

    /// The stored headers, decoded; a value that no longer decodes is skipped.
    pub fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
                continue;
            };
            let value = match value {
                HeaderText::Text(s) => HeaderValue::from_str(s).ok(),
                HeaderText::Bytes { base64 } => base64::engine::general_purpose::STANDARD
                    .decode(base64)
                    .ok()
                    .and_then(|b| HeaderValue::from_bytes(&b).ok()),
            };
            if let Some(value) = value {
                map.append(name, value);
            }
        }
        map
    }

    fn request_parts(&self) -> Result<http::request::Parts, String> {
        let request = http::Request::builder()
            .method(self.method.as_str())
            .uri(self.uri.as_str())
            .body(())
            .map_err(|e| format!("the stored request is invalid: {e}"))?;
        let (mut parts, ()) = request.into_parts();
        parts.headers = self.header_map();
        Ok(parts)
    }

    /// Seconds since the sender signed it, or since hookgate received it when
    /// the scheme signs no time.
    pub fn age_secs(&self) -> f64 {
        let now = now_ms() as f64 / 1000.0;
        match self.signed_at {
            Some(t) => now - t as f64,
            None => now - self.received_ms as f64 / 1000.0,
        }
    }
}

// ---------------------------------------------------------------------------
// One attempt.

/// How one attempt to hand an envelope to the app went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The app answered 2xx.
    Delivered,
    /// Never worth retrying: a 4xx other than 429 (or a request that can no
    /// longer be rebuilt).
    Refused(String),
    /// Worth retrying: 5xx, 429, a timeout or an unreachable app.
    Failed {
        error: String,
        retry_after: Option<Duration>,
    },
}

/// Sends `envelope` to the app with the `X-Verified-*` stamp, counting the
/// upstream metrics. Used by the workers and by `dlq replay`.
pub async fn attempt(
    forwarder: &Forwarder,
    server: &config::Server,
    metrics: &Metrics,
    envelope: &Envelope,
) -> Attempt {
    let parts = match envelope.request_parts() {
        Ok(parts) => parts,
        Err(e) => return Attempt::Refused(e),
    };
    let stamp = Stamp {
        event_id: &envelope.event_id,
        source: &envelope.source,
        event_type: envelope
            .event_type
            .as_deref()
            .filter(|_| envelope.type_signed),
    };
    let started = Instant::now();
    let sent = forwarder
        .send(
            server,
            &parts,
            envelope.body.clone(),
            envelope.peer,
            Mark::Verified(stamp),
        )
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    match sent {
        Ok(response) => {
            let status = response.status();
            let class = crate::metrics::status_class(status);
            metrics.upstream_response(&envelope.source, class, elapsed);
            classify(status, response.headers())
        }
        Err(e) => {
            metrics.upstream_response(&envelope.source, "error", elapsed);
            Attempt::Failed {
                error: e.to_string(),
                retry_after: None,
            }
        }
    }
}

fn classify(status: StatusCode, headers: &HeaderMap) -> Attempt {
    let described = format!("app answered {status}");
    if status.is_success() {
        Attempt::Delivered
    } else if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        Attempt::Failed {
            error: described,
            retry_after: retry_after(headers, SystemTime::now()),
        }
    } else {
        // 4xx, and the odd 1xx/3xx an app should not send: retrying the
        // same bytes would get the same answer.
        Attempt::Refused(described)
    }
}

/// `Retry-After` as a delay: delta-seconds or an IMF-fixdate, at most
/// [`MAX_RETRY_AFTER`].
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let delay = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = crate::time::parse_http_date(value.as_bytes())?;
        let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
        Duration::from_secs(u64::try_from(at - now).unwrap_or(0))
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

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
/// is durable (as durable as the Redis deployment) once this returns.
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
    redis.query(&cmd).await
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
        let store = &self.state.store;
        let metrics = &self.state.metrics;
        let name = self.source.name.as_str();

        // The version gate, held for the whole attempt.
        let gate = envelope.gate();
        let lock = match &gate {
            None => None,
            Some(gate) => {
                let key = gate.lock_key(&self.prefix, name);
                let token = crate::store::lease_token();
                let lease = keys::lease(runtime.config.server.upstream_timeout);
                match store.claim(&key, &token, lease).await {
                    Ok(Claim::Fresh) => Some((key, token)),
                    Ok(_) => {
                        // Another event of this resource is being delivered.
                        self.park(&id, &envelope, ORDER_WAIT).await;
                        return;
                    }
                    Err(e) => {
                        metrics.store_errors.inc();
                        tracing::warn!(source = %name, event_id = %envelope.event_id, error = %e, "version lock failed; retrying shortly");
                        self.park(&id, &envelope, ORDER_WAIT).await;
                        return;
                    }
                }
            }
        };
        if let Some(gate) = &gate {
            match gate.check(store, &self.prefix, name).await {
                Ok(Check::Newer) => {}
                Ok(check) => {
                    let result = if check == Check::Stale {
                        "stale_version"
                    } else {
                        "duplicate"
                    };
                    metrics.delivery(name, result);
                    tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), result, "queued event not delivered: the app has this version or a newer one");
                    self.settle(&id).await;
                    self.unlock(lock).await;
                    return;
                }
                Err(e) => {
                    metrics.store_errors.inc();
                    tracing::warn!(source = %name, event_id = %envelope.event_id, error = %e, "version check failed; retrying shortly");
                    self.park(&id, &envelope, ORDER_WAIT).await;
                    self.unlock(lock).await;
                    return;
                }
            }
        }

        let outcome = attempt(
            &self.state.forwarder,
            &runtime.config.server,
            metrics,
            &envelope,
        )
        .await;
        envelope.attempts = envelope.attempts.saturating_add(1);
        envelope.last_attempt_ms = Some(now_ms());
        match outcome {
            Attempt::Delivered => {
                if let Some(gate) = &gate
                    && let Err(e) = gate.advance(store, &self.prefix, name).await
                {
                    metrics.store_errors.inc();
                    tracing::warn!(source = %name, event_id = %envelope.event_id, error = %e, "version advance failed");
                }
                self.settle(&id).await;
                metrics.delivery(name, "delivered");
                metrics.completion(name, envelope.age_secs());
                tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts = envelope.attempts, result = "delivered", "queued event delivered");
            }
            Attempt::Refused(error) => {
                tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts = envelope.attempts, error = %error, result = "dropped", "the app refused a queued event; not retried, kept as a dead letter");
                envelope.last_error = Some(error);
                metrics.delivery(name, "dropped");
                self.bury(&id, &mut envelope).await;
            }
            Attempt::Failed { error, retry_after } => {
                match next_delay(&self.source.retry_schedule, envelope.attempts, retry_after) {
                    Some(delay) => {
                        tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts = envelope.attempts, error = %error, retry_in_ms = delay.as_millis() as u64, result = "retry", "queued event not delivered; will retry");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "retry");
                        self.park(&id, &envelope, delay).await;
                    }
                    None => {
                        tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts = envelope.attempts, error = %error, result = "dead_lettered", "retry schedule exhausted; moved to the dead-letter stream");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "dead_lettered");
                        self.bury(&id, &mut envelope).await;
                    }
                }
            }
        }
        self.unlock(lock).await;
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
                tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not write a dead letter; the entry is retried after its lease");
            }
        }
    }

    async fn unlock(&self, lock: Option<(String, String)>) {
        if let Some((key, token)) = lock
            && let Err(e) = self.state.store.release(&key, &token).await
        {
            self.state.metrics.store_errors.inc();
            tracing::warn!(source = %self.source.name, error = %e, "version lock release failed; it expires with its lease");
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

    fn envelope(body: &[u8]) -> Envelope {
        let mut e: Envelope = serde_json::from_value(serde_json::json!({
            "token": "t",
            "source": "s",
            "event_id": "evt_1",
            "delivery": "queue",
            "method": "POST",
            "uri": "/hooks/s?x=1",
            "headers": [["content-type", "application/json"], ["x-odd", {"base64": "/w=="}]],
            "received_ms": 1,
        }))
        .expect("envelope");
        e.body = Bytes::copy_from_slice(body);
        e
    }

    #[test]
    fn envelopes_keep_binary_bodies_and_odd_headers() {
        let body = b"\x00\xff\n{\"a\":1}\n\r\n";
        let e = envelope(body);
        let back = Envelope::decode(&e.encode()).expect("decode");
        assert_eq!(back, e);
        assert_eq!(&back.body[..], body);
        let headers = back.header_map();
        assert_eq!(
            headers.get("x-odd").map(|v| v.as_bytes()),
            Some(&b"\xff"[..])
        );
        assert!(Envelope::decode(b"no newline").is_err());
    }

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
    fn statuses_are_classified() {
        let h = HeaderMap::new();
        assert_eq!(classify(StatusCode::OK, &h), Attempt::Delivered);
        assert_eq!(classify(StatusCode::NO_CONTENT, &h), Attempt::Delivered);
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, &h),
            Attempt::Refused(_)
        ));
        assert!(matches!(
            classify(StatusCode::GONE, &h),
            Attempt::Refused(_)
        ));
        assert!(matches!(
            classify(StatusCode::TOO_MANY_REQUESTS, &h),
            Attempt::Failed { .. }
        ));
        assert!(matches!(
            classify(StatusCode::BAD_GATEWAY, &h),
            Attempt::Failed { .. }
        ));
    }

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("120"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(120)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:50:37 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(60)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:00:00 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("99999999"));
        assert_eq!(retry_after(&h, now), Some(MAX_RETRY_AFTER));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn keys_share_a_slot_per_source() {
        assert_eq!(stream_key("hg", "stripe"), "hg:queue:{stripe}");
        assert_eq!(delayed_key("hg", "stripe"), "hg:queue:{stripe}:delayed");
    }
}
