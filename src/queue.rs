//! Queue delivery (DESIGN §6): acknowledge the sender once the event is
//! durable, then deliver it to the app with hookgate's own retries.
//!
//! The queue itself is the store's ([`crate::store::Store::enqueue`] and the
//! verbs after it: a Redis stream per source, or the SQLite `queue` table);
//! this module is its workers, written once for every engine.
//!
//! # The life of an entry
//!
//! Enqueued before the sender gets its 200. A worker takes it (leased to this
//! process for `upstream_timeout` + 5 s; polling every [`POLL`] when idle)
//! and sends it to the app:
//!
//! - 2xx: delivered; the entry is removed.
//! - 4xx other than 429: refused by the app. Never retried; recorded as a
//!   dead letter (so an operator who fixes the app can replay it) and
//!   removed from the queue.
//! - 5xx, 429, timeout, refused connection: the envelope, its attempt count
//!   raised, waits for the next delay of the source's `retry_schedule`
//!   (±20 % jitter, or the app's `Retry-After` on a 429/503); when the
//!   schedule has run out it becomes a dead letter.
//!
//! An entry whose worker died keeps its lease until it runs out; then
//! another worker (another replica, or this process after a restart) takes
//! it and delivers it. Delivery to the app is therefore at least once: an
//! app that must not act twice dedupes on `X-Verified-Event-Id`, which every
//! attempt carries.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{Delivery, Source};
use crate::delivery::{Attempt, Gated};
use crate::envelope::{Envelope, Place};
use crate::state::State;
use crate::store::{self, Stored, keys};
use crate::time::now_ms;
use crate::trail::{self, Fact, Mode};

/// How often an idle worker looks for new entries.
pub const POLL: Duration = Duration::from_millis(100);
/// When another event of the same resource is being delivered, try again
/// after this (not counted as an attempt).
const ORDER_WAIT: Duration = Duration::from_secs(1);
/// An entry whose payload does not open with the configured keys is looked
/// at again after this (not counted as an attempt).
const UNOPENABLE_WAIT: Duration = Duration::from_secs(10);
/// How long a worker waits after a failed round (store down) before the next.
const ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// How often the supervisor looks for queue sources added by a reload.
const SUPERVISE_EVERY: Duration = Duration::from_secs(2);
/// How often a delivered entry's removal is tried again while it fails.
const SETTLE_RETRY_EVERY: Duration = Duration::from_millis(250);
/// How long a delivered entry's removal is tried again at most.
const SETTLE_RETRY_FOR: Duration = Duration::from_secs(60);

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
// Workers.

/// Runs one delivery worker per queue source until `shutdown`, then lets
/// every delivery in hand finish. A source added by a reload gets its worker
/// within `SUPERVISE_EVERY`; a worker whose source was removed or switched
/// to forward keeps draining what is already queued.
pub async fn run_workers(state: Arc<State>, shutdown: CancellationToken) {
    if !state.store.keeps_queue() {
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

/// Takes one source's entries and delivers them, at most `max_in_flight`
/// at a time.
async fn worker(
    state: Arc<State>,
    mut source: Source,
    consumer: String,
    shutdown: CancellationToken,
) {
    let Ok(queue) = state.store.durable() else {
        return;
    };
    let mut in_flight = JoinSet::new();
    let mut cursor = store::Cursor::default();
    let removing = Removing::default();
    // `max_rate`: the process's own limiter (SQLite), and the latest start
    // reserved so far.
    let mut pace = crate::pace::Local::default();
    let mut reserved_until = tokio::time::Instant::now();
    // The times delivery was held (a pause, an open breaker, starts
    // reserved ahead by `max_rate`): why, since when and until when, so
    // that each attempt says how long it waited and why.
    let mut holds = Holds::default();
    // Whether the source is paused, as last read, and when to read it again.
    let mut paused = false;
    let mut paused_since = 0i64;
    let mut read_at = tokio::time::Instant::now();
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
        if tokio::time::Instant::now() >= read_at {
            read_at = tokio::time::Instant::now() + crate::pause::READ_EVERY;
            match state.store.paused().await {
                Ok(all) => {
                    let now = all.iter().find(|(name, _)| *name == source.name);
                    if let Some((_, p)) = now {
                        paused_since = p.since_ms;
                    }
                    if now.is_some() != paused {
                        paused = now.is_some();
                        match now {
                            Some((_, p)) => {
                                tracing::info!(source = %source.name, by = %p.by, reason = p.reason.as_deref(), "queue worker: delivery paused; events wait in the queue")
                            }
                            None => {
                                tracing::info!(source = %source.name, "queue worker: delivery resumed")
                            }
                        }
                    }
                    let label = crate::metrics::SourceLabel {
                        source: source.name.clone(),
                    };
                    state
                        .metrics
                        .source_paused
                        .get_or_create(&label)
                        .set(i64::from(paused));
                }
                Err(e) => {
                    tracing::warn!(source = %source.name, error = %e, "queue worker: cannot read whether delivery is paused");
                }
            }
        }
        if paused {
            // The pause began when it was made, maybe before this process.
            holds.held("paused", Some(paused_since));
            // Nothing is taken: the entries keep their place and their
            // attempts; deliveries already in hand finish.
            while in_flight.try_join_next().is_some() {}
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(read_at) => {}
            }
            continue;
        }
        // Starts reserved more than AHEAD from now: take nothing more yet.
        let ahead = reserved_until.saturating_duration_since(tokio::time::Instant::now());
        if ahead > crate::pace::AHEAD {
            holds.held("max_rate", None);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(ahead - crate::pace::AHEAD) => {}
            }
            continue;
        }
        let lease = keys::lease(runtime.config.server.upstream_timeout);
        let mut free = source.max_in_flight.saturating_sub(in_flight.len());
        // The breaker: open, nothing is taken (no attempt is spent);
        // half-open, one entry is, as the probe.
        if free > 0 {
            match state.steps(&runtime.config).breaker_admit(&source).await {
                crate::breaker::Admit::Open { retry_after } => {
                    holds.held("breaker", None);
                    while in_flight.try_join_next().is_some() {}
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tokio::time::sleep(retry_after.min(crate::breaker::READ_EVERY)) => {}
                    }
                    continue;
                }
                crate::breaker::Admit::Probe => free = 1,
                crate::breaker::Admit::Closed => {}
            }
        }
        if let Some(rate) = source.max_rate {
            free = free.min(crate::pace::per_round(rate));
        }
        holds.release();
        let round = queue
            .take(&source.name, &consumer, &mut cursor, lease, free)
            .await;
        let took = round.as_ref().map_or(0, Vec::len);
        let pause = match round {
            Ok(entries) => {
                let seen: Arc<[Hold]> = if entries.is_empty() {
                    Arc::from(Vec::new())
                } else {
                    holds.snapshot()
                };
                let delays = match source.max_rate {
                    None => Vec::new(),
                    Some(rate) => {
                        let delays =
                            starts(&state, &source.name, rate, entries.len(), &mut pace).await;
                        if let Some(last) = delays.last() {
                            reserved_until = tokio::time::Instant::now() + *last;
                        }
                        delays
                    }
                };
                for (n, entry) in entries.into_iter().enumerate() {
                    if removing.holds(&entry.id) {
                        // Delivered by this process; its removal is being
                        // repeated (the lease ran out meanwhile).
                        continue;
                    }
                    let delay = delays.get(n).copied().unwrap_or_default();
                    let job = Job {
                        state: Arc::clone(&state),
                        source: source.clone(),
                        entry,
                        holds: Arc::clone(&seen),
                        paced: delay,
                        removing: removing.clone(),
                        stop: shutdown.clone(),
                    };
                    if delay.is_zero() {
                        in_flight.spawn(job.run());
                        continue;
                    }
                    state
                        .metrics
                        .deliveries_throttled
                        .get_or_create(&crate::metrics::SourceLabel {
                            source: source.name.clone(),
                        })
                        .inc();
                    let stop = shutdown.clone();
                    in_flight.spawn(async move {
                        // Stopping while it waits leaves the entry leased:
                        // the lease runs out and it is taken again.
                        tokio::select! {
                            _ = tokio::time::sleep(delay) => job.run().await,
                            _ = stop.cancelled() => {}
                        }
                    });
                }
                POLL
            }
            Err(e) => {
                state.metrics.store_errors.inc();
                tracing::warn!(source = %source.name, error = %e, "queue worker: store unavailable");
                ERROR_BACKOFF
            }
        };
        if took > 0 && in_flight.len() < source.max_in_flight {
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
        }
    }
    // Finish the deliveries in hand; what was not taken stays queued.
    while in_flight.join_next().await.is_some() {}
    tracing::info!(source = %source.name, "queue worker stopped");
}

/// Each of `count` deliveries' delay before it starts at `rate` a second:
/// reserved in the store where replicas share it (Redis), else in the
/// process. A store that cannot answer leaves the pacing to the process.
async fn starts(
    state: &State,
    source: &str,
    rate: f64,
    count: usize,
    local: &mut crate::pace::Local,
) -> Vec<Duration> {
    let interval = crate::pace::interval_ms(rate);
    match state.store.pace(source, count, interval).await {
        Ok(Some(delays)) => delays,
        Ok(None) => local.reserve(count, interval, now_ms() as f64),
        Err(e) => {
            tracing::warn!(source, error = %e, "queue worker: the shared rate limiter is unavailable; pacing this replica alone");
            local.reserve(count, interval, now_ms() as f64)
        }
    }
}

/// A time delivery was held, for the trail of the events it held.
#[derive(Debug, Clone)]
struct Hold {
    reason: &'static str,
    since_ms: i64,
    /// `i64::MAX` while it lasts.
    until_ms: i64,
}

/// The worker's recent holds, oldest first, at most [`HOLDS_KEPT`]: enough
/// to cover any wait an entry in hand went through.
#[derive(Debug, Default)]
struct Holds(std::collections::VecDeque<Hold>);

/// Holds a worker remembers.
const HOLDS_KEPT: usize = 64;
/// A wait behind other entries (no hold, no pacing) shorter than this is
/// not recorded: taking an entry takes a poll.
const QUEUE_WAIT_MS: i64 = 250;

impl Holds {
    /// Delivery is held for `reason` now (since `since_ms` when known
    /// earlier): the hold that lasts goes on, one for another reason ends.
    fn held(&mut self, reason: &'static str, since_ms: Option<i64>) {
        let now = now_ms();
        if let Some(last) = self.0.back_mut()
            && last.until_ms == i64::MAX
        {
            if last.reason == reason {
                if let Some(since) = since_ms {
                    last.since_ms = last.since_ms.min(since.max(1));
                }
                return;
            }
            last.until_ms = now;
        }
        if self.0.len() == HOLDS_KEPT {
            self.0.pop_front();
        }
        self.0.push_back(Hold {
            reason,
            since_ms: since_ms.map_or(now, |s| s.clamp(1, now)),
            until_ms: i64::MAX,
        });
    }

    /// Delivery goes on: the hold that lasts ends now.
    fn release(&mut self) {
        if let Some(last) = self.0.back_mut()
            && last.until_ms == i64::MAX
        {
            last.until_ms = now_ms();
        }
    }

    fn snapshot(&self) -> Arc<[Hold]> {
        self.0.iter().cloned().collect()
    }
}

/// How long an attempt started at `start` waited since it was due at
/// `due` (unix ms), and the reason that held it longest: the holds that
/// overlap the wait, `max_rate` for the pacing delay, `queue` for the rest
/// (behind other entries). `None` for a wait with neither a hold nor pacing
/// shorter than [`QUEUE_WAIT_MS`].
fn waited(holds: &[Hold], paced_ms: i64, due: i64, start: i64) -> Option<trail::Waited> {
    let total = start.saturating_sub(due);
    if total <= 0 {
        return None;
    }
    fn add(by: &mut Vec<(&'static str, i64)>, reason: &'static str, ms: i64) {
        if ms <= 0 {
            return;
        }
        match by.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, sum)) => *sum += ms,
            None => by.push((reason, ms)),
        }
    }
    let mut by: Vec<(&'static str, i64)> = Vec::new();
    // The holds count while the entry was in the store, until it was taken
    // (its pacing delay came after).
    let taken = start.saturating_sub(paced_ms).max(due);
    for h in holds {
        let from = h.since_ms.max(due);
        let to = h.until_ms.min(taken);
        add(&mut by, h.reason, to.saturating_sub(from));
    }
    add(&mut by, "max_rate", paced_ms.min(total));
    let held: i64 = by.iter().map(|(_, ms)| *ms).sum();
    if held == 0 && total < QUEUE_WAIT_MS {
        return None;
    }
    add(&mut by, "queue", total.saturating_sub(held));
    let reason = by
        .iter()
        .max_by_key(|(_, ms)| *ms)
        .map_or("queue", |(r, _)| *r);
    Some(trail::Waited {
        reason: reason.into(),
        ms: u64::try_from(total).unwrap_or(0),
    })
}

/// One entry on its way to the app.
struct Job {
    state: Arc<State>,
    source: Source,
    entry: Stored,
    /// The worker's recent holds when the entry was taken.
    holds: Arc<[Hold]>,
    /// How long it waits for `max_rate` before it starts.
    paced: Duration,
    /// The worker's entries delivered and not yet removed.
    removing: Removing,
    /// The worker's shutdown: a removal is not repeated past it.
    stop: CancellationToken,
}

/// The entries of one worker that the app took and whose removal is being
/// repeated: the worker delivers none of them again if it takes one back
/// (its lease ran out while the store was away).
#[derive(Debug, Clone, Default)]
struct Removing(Arc<std::sync::Mutex<std::collections::HashSet<String>>>);

impl Removing {
    fn holds(&self, id: &str) -> bool {
        self.0.lock().is_ok_and(|set| set.contains(id))
    }

    fn insert(&self, id: &str) {
        if let Ok(mut set) = self.0.lock() {
            set.insert(id.to_owned());
        }
    }

    fn remove(&self, id: &str) {
        if let Ok(mut set) = self.0.lock() {
            set.remove(id);
        }
    }
}

impl Job {
    async fn run(self) {
        let id = self.entry.id.clone();
        let runtime = self.state.runtime();
        let keys = &runtime.config.store.encryption;
        let mut envelope = match Envelope::decode(&self.entry.envelope, keys, Place::Queue) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(source = %self.source.name, entry = %id, error = %e, "queue entry unreadable; removed");
                self.settle(&id, None).await;
                return;
            }
        };
        if let Some(why) = envelope.unopenable() {
            // Kept where it is, no attempt spent: adding its key back (a
            // reload) delivers it on a later round.
            crate::seal::report(&self.source.name, &id, why);
            self.park(&id, &envelope, UNOPENABLE_WAIT, None).await;
            return;
        }
        let steps = self.state.steps(&runtime.config);
        let metrics = &self.state.metrics;
        let name = self.source.name.as_str();
        let gate = envelope.gate();
        let event = crate::delivery::Event::of(&envelope, gate.as_ref());

        // The version gate, with the resource's lease held for the whole attempt.
        let lock = match &gate {
            None => None,
            Some(g) => match steps.gate(&event, g, &store::lease_token(), true).await {
                Ok(Gated::Newer(lock)) => lock,
                Ok(Gated::Busy) | Err(_) => {
                    // Another event of this resource is being delivered (or
                    // the store is away): try again shortly, not counted.
                    self.park(&id, &envelope, ORDER_WAIT, None).await;
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
                    self.settle(&id, None).await;
                    return;
                }
            },
        };

        // Due when received, or when its retry was scheduled for.
        let due = envelope.due_ms.unwrap_or(envelope.received_ms);
        let paced_ms = i64::try_from(self.paced.as_millis()).unwrap_or(i64::MAX);
        let waited = waited(&self.holds, paced_ms, due, now_ms());
        let tried = steps.attempt_stored(&envelope, &event, Mode::Queue).await;
        steps
            .breaker_record(&self.source, &tried.attempt, tried.status)
            .await;
        let attempts = envelope.attempts.saturating_add(1);
        let fact =
            |state: trail::State, next: Option<Duration>, dead: Option<String>| Fact::Attempted {
                attempt: trail::Attempt {
                    waited: waited.clone(),
                    ..tried.trail(Mode::Queue)
                },
                state,
                next_attempt_at: next.map(|d| {
                    now_ms().saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                }),
                dead_letter_id: dead,
            };
        match tried.attempt.clone() {
            Attempt::Delivered => {
                steps.delivered(&event, lock).await;
                let note = self.note_of(&envelope, vec![fact(trail::State::Delivered, None, None)]);
                self.settle_delivered(&id, note).await;
                metrics.delivery(name, "delivered");
                metrics.completion(name, envelope.age_secs());
                tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, trace_id = tried.trace_id.as_deref(), result = "delivered", "queued event delivered");
            }
            Attempt::Refused(error) => {
                steps.release(&event, lock).await;
                tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, trace_id = tried.trace_id.as_deref(), error = %error, result = "dropped", "the app refused a queued event; not retried, kept as a dead letter");
                envelope.attempts = attempts;
                envelope.last_attempt_ms = Some(now_ms());
                envelope.last_error = Some(error);
                metrics.delivery(name, "dropped");
                let dead = self.bury(&id, &mut envelope).await;
                self.note(&envelope, vec![fact(trail::State::Dropped, None, dead)]);
            }
            Attempt::Failed { error, retry_after } => {
                steps.release(&event, lock).await;
                envelope.attempts = attempts;
                envelope.last_attempt_ms = Some(now_ms());
                match next_delay(&self.source.retry_schedule, attempts, retry_after) {
                    Some(delay) => {
                        envelope.due_ms =
                            Some(now_ms().saturating_add(
                                i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                            ));
                        tracing::info!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, trace_id = tried.trace_id.as_deref(), error = %error, retry_in_ms = delay.as_millis() as u64, result = "retry", "queued event not delivered; will retry");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "retry");
                        let facts = vec![fact(trail::State::Waiting, Some(delay), None)];
                        let note = self.note_of(&envelope, facts);
                        self.park(&id, &envelope, delay, note).await;
                    }
                    None => {
                        tracing::warn!(source = %name, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), attempts, trace_id = tried.trace_id.as_deref(), error = %error, result = "dead_lettered", "retry schedule exhausted; moved to the dead-letter stream");
                        envelope.last_error = Some(error);
                        metrics.delivery(name, "dead_lettered");
                        let dead = self.bury(&id, &mut envelope).await;
                        self.note(&envelope, vec![fact(trail::State::DeadLetter, None, dead)]);
                    }
                }
            }
        }
    }

    /// Appends facts to the envelope's event trail, without waiting.
    fn note(&self, envelope: &Envelope, facts: Vec<Fact>) {
        let max = self.state.runtime().config.admin.trail_max_events;
        self.state
            .store
            .trail_note(&envelope.source, &envelope.event_id, facts, max);
    }

    /// `facts` as a note for the envelope's trail to ride on a write of
    /// the entry; `None` when the trail is off.
    fn note_of(&self, envelope: &Envelope, facts: Vec<Fact>) -> Option<store::Note> {
        let max = self.state.runtime().config.admin.trail_max_events;
        (max > 0).then(|| {
            self.state
                .store
                .note(&envelope.source, &envelope.event_id, facts, max)
        })
    }

    /// Removes the entry from the queue; `note` rides on that write.
    async fn settle(&self, id: &str, note: Option<store::Note>) {
        let r = match self.state.store.durable() {
            Ok(queue) => queue.settle(&self.source.name, id, note).await,
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            // Left leased: it is delivered again after the lease, at least once.
            self.state.metrics.store_errors.inc();
            tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not remove a settled queue entry");
        }
    }

    /// Removes an entry the app took, repeating the removal (every
    /// [`SETTLE_RETRY_EVERY`]) until it lands, on the replicas too with
    /// `min_replicas`, for [`SETTLE_RETRY_FOR`] at most or until shutdown.
    /// While the entry's lease lasts no other worker takes it, and this
    /// worker delivers it no more ([`Removing`]): a removal that reached a
    /// primary lost before its replicas had it is made again on the promoted
    /// one. A failover that outlasts the lease (`upstream_timeout` + 5 s,
    /// counted from when the entry was taken) lets another replica's worker
    /// take the entry, and the app may see it twice.
    async fn settle_delivered(&self, id: &str, note: Option<store::Note>) {
        let deadline = tokio::time::Instant::now() + SETTLE_RETRY_FOR;
        let mut note = note;
        let mut tries = 0u32;
        loop {
            tries += 1;
            let r = match self.state.store.durable() {
                Ok(queue) => queue.settle(&self.source.name, id, note.take()).await,
                Err(e) => Err(e),
            };
            let Err(e) = r else {
                if tries > 1 {
                    tracing::info!(source = %self.source.name, entry = %id, tries, "delivered queue entry removed on a later try");
                    self.removing.remove(id);
                }
                return;
            };
            self.state.metrics.store_errors.inc();
            if tries == 1 {
                self.removing.insert(id);
                tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not remove a delivered queue entry; trying again");
            }
            let given_up = tokio::select! {
                _ = self.stop.cancelled() => true,
                _ = tokio::time::sleep(SETTLE_RETRY_EVERY) => tokio::time::Instant::now() >= deadline,
            };
            if given_up {
                self.removing.remove(id);
                tracing::warn!(source = %self.source.name, entry = %id, error = %e, tries, "removal of a delivered queue entry given up; once its lease runs out it may be delivered again");
                return;
            }
        }
    }

    /// Puts the entry back, due after `delay`; `note` rides on that write.
    async fn park(
        &self,
        id: &str,
        envelope: &Envelope,
        delay: Duration,
        note: Option<store::Note>,
    ) {
        let sealed = envelope.encode(&self.state.runtime().config.store.encryption, Place::Queue);
        let r = match self.state.store.durable() {
            Ok(queue) => queue.park(id, envelope.meta(), sealed, delay, note).await,
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            self.state.metrics.store_errors.inc();
            tracing::warn!(source = %self.source.name, entry = %id, error = %e, "could not schedule a retry; the entry is taken again after its lease");
        }
    }

    /// Makes the entry a dead letter and removes it from the queue. If that
    /// fails the entry keeps its lease and is tried again after it: a dead
    /// letter is never lost, at worst written twice.
    async fn bury(&self, id: &str, envelope: &mut Envelope) -> Option<String> {
        envelope.dead_ms = Some(now_ms());
        let sealed = envelope.encode(
            &self.state.runtime().config.store.encryption,
            Place::DeadLetter,
        );
        let r = match self.state.store.durable() {
            Ok(queue) => queue.bury(Some(id), envelope.meta(), sealed).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(dead_id) => {
                self.state.metrics.dead_letter(&self.source.name);
                tracing::info!(source = %self.source.name, event_id = %envelope.event_id, dlq_id = %dead_id, "dead letter written");
                Some(dead_id)
            }
            Err(e) => {
                self.state.metrics.store_errors.inc();
                tracing::warn!(source = %self.source.name, event_id = %envelope.event_id, entry = %id, error = %e, "could not write a dead letter; the entry is retried after its lease");
                None
            }
        }
    }
}

/// Refreshes `hookgate_queue_depth{source}` (stream length plus waiting
/// retries) and `hookgate_dlq_depth` every `every` until `shutdown`.
pub async fn refresh_depths(state: Arc<State>, every: Duration, shutdown: CancellationToken) {
    let Ok(queue) = state.store.durable() else {
        return;
    };
    loop {
        let runtime = state.runtime();
        for source in runtime
            .config
            .sources
            .iter()
            .filter(|s| s.delivery == Delivery::Queue)
        {
            if let Ok(depth) = queue.queue_depth(&source.name).await {
                state.metrics.set_queue_depth(&source.name, depth);
            }
        }
        if let Ok(depth) = queue.dead_depth().await {
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

    fn hold(reason: &'static str, since_ms: i64, until_ms: i64) -> Hold {
        Hold {
            reason,
            since_ms,
            until_ms,
        }
    }

    fn said(w: Option<trail::Waited>) -> Option<(String, u64)> {
        w.map(|w| (w.reason.into_owned(), w.ms))
    }

    #[test]
    fn waited_counts_every_hold_since_the_attempt_was_due() {
        // Held by the breaker over three cooldowns (each probe failing):
        // the whole 23 s, not the last cooldown's second.
        let breaker = [
            hold("breaker", 1_000, 5_000),
            hold("breaker", 5_100, 13_000),
            hold("breaker", 13_100, 24_000),
        ];
        assert_eq!(
            said(waited(&breaker, 0, 1_000, 24_000)),
            Some(("breaker".into(), 23_000))
        );
        // Paced: 1.2 s in the store while starts were reserved ahead, then
        // 1.58 s of its own delay.
        let paced = [hold("max_rate", 100, 1_300)];
        assert_eq!(
            said(waited(&paced, 1_580, 100, 2_880)),
            Some(("max_rate".into(), 2_780))
        );
        // Paused 6 s, then 0.7 s of pacing: the pause held it longest.
        let both = [hold("paused", 0, 6_000)];
        assert_eq!(
            said(waited(&both, 700, 0, 6_700)),
            Some(("paused".into(), 6_700))
        );
        // A hold that ended before the entry was due does not count.
        let before = [hold("paused", 0, 1_000)];
        assert_eq!(said(waited(&before, 0, 2_000, 2_100)), None);
        // A retry is due when scheduled: a long wait behind others counts.
        assert_eq!(
            said(waited(&[], 0, 10_000, 12_000)),
            Some(("queue".into(), 2_000))
        );
        // A pause begun before the process (its `since` from the store).
        let mut holds = Holds::default();
        holds.held("paused", Some(now_ms() - 60_000));
        holds.release();
        let w = said(waited(&holds.snapshot(), 0, now_ms() - 30_000, now_ms()));
        assert!(
            matches!(&w, Some((r, ms)) if r == "paused" && *ms >= 30_000),
            "{w:?}"
        );
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
}
