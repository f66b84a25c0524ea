//! Dead letters (DESIGN §6): events the app could not take, kept with their
//! raw request so an operator can send them again once the app is fixed.
//!
//! The store keeps them ([`crate::store::Store::bury`] and the verbs after
//! it): a stream `{prefix}:dlq` on Redis, the `dead_letters` table on SQLite.
//! Each holds an [`Envelope`] (source, event id and type, method, path,
//! headers, raw body, attempt count, last error, times). An entry id (a stream
//! id such as `1732950000000-0` on Redis, a row number on SQLite) is what
//! `hookgate dlq list` prints and `show`/`replay` take.
//!
//! Entries come from:
//! - queue delivery, when the retry schedule runs out, or at once when the app
//!   answers a 4xx other than 429 (never retried, but kept: a 4xx is usually
//!   a bug in the app, and replaying after the fix recovers the event);
//! - forward delivery, when the app failed one event id
//!   [`FORWARD_FAILURES`] times in a row (5xx, unreachable, too slow). The
//!   count lives beside the nonce (`{prefix}:fail:{source}:{event_id}` on
//!   Redis, the `failures` table on SQLite), expiring `nonce_ttl` after the
//!   last failure. It needs no reset on success: a 2xx marks the nonce done
//!   for `nonce_ttl`, so no later attempt of that event can reach the app
//!   (and the count) before the count has expired. The entry is copied once,
//!   on the third failure; the sender keeps retrying as usual.
//!
//! The memory store keeps no dead letters (a restart would lose them
//! anyway): hookgate says so at start, and `hookgate dlq` refuses to run.
//!
//! # Replay
//!
//! Sends the stored request to the app with the `X-Verified-*` headers. On a
//! 2xx the entry is removed. Otherwise it is kept with the new error and
//! attempt count; Redis stream entries cannot change, so there it is written
//! again under a new id (atomically with removing the old one), and the id it
//! is kept under is reported.
//! A forward-mode entry first claims the event's nonce like any request: if a
//! sender retry got the event through meanwhile (`done`), the entry is
//! removed without sending it twice; if a copy is in flight right now, it is
//! left for later. An entry whose source has a version gate is removed
//! without sending when the app already has that version or a newer one.

pub mod jobs;
pub mod matching;
pub mod retention;

pub use matching::Match;

use serde::Serialize;

use crate::delivery::{Attempt, Claimed, Gated, Held, Steps};
use crate::envelope::{Envelope, Place};
use crate::seal::Keyring;
use crate::store::{self, Store, Stored};
use crate::trail::{Fact, Mode, State};

/// Consecutive failures of one event id in forward mode that make a dead letter.
pub const FORWARD_FAILURES: u64 = 3;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("no dead letter with id {0}")]
    NotFound(String),
}

/// One dead letter.
#[derive(Debug, Clone)]
pub struct Dead {
    /// The stream entry id.
    pub id: String,
    pub envelope: Envelope,
}

/// What `list` shows about a dead letter (and `GET /dlq` returns).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub id: String,
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub delivery: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    /// Unix ms.
    pub received_ms: i64,
    pub dead_ms: Option<i64>,
    /// Seconds since hookgate received the event.
    pub age_secs: i64,
    /// The key that sealed its payload (`None`: stored as it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    /// Why its payload does not open, when it does not: "cannot be opened
    /// with the configured keys (key K)".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unopenable: Option<String>,
}

impl Dead {
    pub fn summary(&self) -> Summary {
        let e = &self.envelope;
        Summary {
            id: self.id.clone(),
            source: e.source.clone(),
            event_id: e.event_id.clone(),
            event_type: e.event_type.clone(),
            delivery: e.delivery.clone(),
            attempts: e.attempts,
            last_error: e.last_error.clone(),
            received_ms: e.received_ms,
            dead_ms: e.dead_ms,
            age_secs: (crate::time::now_ms() - e.received_ms).max(0) / 1000,
            sealed: e.sealed.clone(),
            unopenable: e.unopenable().map(ToString::to_string),
        }
    }
}

/// Every dead letter, oldest first, of one source or all.
pub async fn list(
    store: &Store,
    keys: &Keyring,
    source: Option<&str>,
) -> Result<Vec<Dead>, store::Error> {
    Ok(store
        .durable()?
        .dead_list(source)
        .await?
        .iter()
        .filter_map(|s| decode(s, keys))
        .filter(|d| source.is_none_or(|s| d.envelope.source == s))
        .collect())
}

/// One dead letter by id.
pub async fn get(store: &Store, keys: &Keyring, id: &str) -> Result<Dead, Error> {
    store
        .durable()?
        .dead_get(id)
        .await?
        .as_ref()
        .and_then(|s| decode(s, keys))
        .ok_or_else(|| Error::NotFound(id.to_owned()))
}

/// A dead letter as stored; one whose payload does not open is listed
/// with its metadata (and logged once).
fn decode(s: &Stored, keys: &Keyring) -> Option<Dead> {
    match Envelope::decode(&s.envelope, keys, Place::DeadLetter) {
        Ok(envelope) => {
            if let Some(why) = envelope.unopenable() {
                crate::seal::report(&envelope.source, &s.id, why);
            }
            Some(Dead {
                id: s.id.clone(),
                envelope,
            })
        }
        Err(e) => {
            tracing::warn!(dlq_id = %s.id, error = %e, "unreadable dead letter skipped");
            None
        }
    }
}

/// How a replay went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Replayed {
    /// The app answered 2xx; the entry is gone.
    Delivered,
    /// A sender retry got the event through meanwhile; removed, not sent.
    AlreadyDelivered,
    /// The app already has this version of the resource or a newer one; removed, not sent.
    StaleVersion,
    /// Another copy of the event is in flight right now; kept as it was.
    InFlight,
    /// Its payload does not open with the configured keys (DESIGN §4b);
    /// kept as it was, nothing sent.
    Unopenable { error: String },
    /// Its source is paused, or its breaker open (`held`: `paused`,
    /// `breaker`), and the replay did not wait; kept as it was.
    Held { held: &'static str },
    /// The app did not take it; kept under `new_id` with the new error.
    Failed {
        error: String,
        new_id: Option<String>,
    },
}

impl Replayed {
    /// Whether the entry is settled (gone from the stream).
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            Replayed::Delivered | Replayed::AlreadyDelivered | Replayed::StaleVersion
        )
    }
}

/// How far a [`Replayer::replay_all_with`] run is.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The entries to replay are listed; none is replayed yet.
    Listed { total: usize },
    /// The next entry waits: its source is paused or its breaker open
    /// (said once per wait).
    Waiting { source: &'a str, held: Held },
    /// The next entry may go: its attempt at the app starts now.
    Going,
    /// Entry `done` (1-based, of the total [`Progress::Listed`] gave) was
    /// replayed with `result`.
    Replayed { done: usize, result: &'a Replayed },
}

/// What a replay needs: the delivery steps of the process (the config in
/// force, the store, the client to the app, the metrics, the breakers and
/// the tracer), and whether to wait when delivery is held.
pub struct Replayer<'a> {
    pub steps: Steps<'a>,
    /// Whether a replay held by a paused source or an open breaker waits
    /// until it may go (a command, a background run), or comes back
    /// [`Replayed::Held`] at once (one entry asked over HTTP).
    pub wait: bool,
    /// `max_rate` where the store does not share a limiter: this
    /// replayer's own.
    pub pacer: tokio::sync::Mutex<crate::pace::Local>,
    /// A job's own rate (deliveries per second), kept besides the
    /// source's `max_rate`: the slower of the two holds.
    pub rate: Option<f64>,
    own_pacer: tokio::sync::Mutex<crate::pace::Local>,
}

impl<'a> Replayer<'a> {
    /// A replayer on `steps`; `wait`: see [`Replayer::wait`].
    pub fn new(steps: Steps<'a>, wait: bool) -> Replayer<'a> {
        Replayer {
            steps,
            wait,
            pacer: tokio::sync::Mutex::default(),
            rate: None,
            own_pacer: tokio::sync::Mutex::default(),
        }
    }
}

impl Replayer<'_> {
    /// Replays one entry by id.
    pub async fn replay_id(&self, id: &str) -> Result<Replayed, Error> {
        let dead = get(self.steps.store, &self.steps.config.store.encryption, id).await?;
        self.replay(dead).await
    }

    /// Replays every entry (of one source, or all), oldest first.
    pub async fn replay_all(&self, source: Option<&str>) -> Result<Vec<(Dead, Replayed)>, Error> {
        self.replay_all_with(source, |_| {}).await
    }

    /// [`Replayer::replay_all`], telling `progress` how far it got: once
    /// with [`Progress::Listed`] when the entries are known, then once per
    /// entry replayed. A store error stops the run (the entries not reached
    /// stay as they were) and is returned after the entries already done
    /// were reported.
    pub async fn replay_all_with(
        &self,
        source: Option<&str>,
        mut progress: impl FnMut(Progress<'_>),
    ) -> Result<Vec<(Dead, Replayed)>, Error> {
        let entries = list(
            self.steps.store,
            &self.steps.config.store.encryption,
            source,
        )
        .await?;
        let total = entries.len();
        progress(Progress::Listed { total });
        let mut out = Vec::with_capacity(total);
        for dead in entries {
            let result = self.replay_with(dead.clone(), &mut progress).await?;
            progress(Progress::Replayed {
                done: out.len() + 1,
                result: &result,
            });
            out.push((dead, result));
        }
        Ok(out)
    }

    /// Sends one dead letter to the app and settles it, through the same
    /// steps as every other delivery: the nonce (for a forward-mode event,
    /// which may have got through on a sender retry), the version gate with
    /// the resource's lease, one attempt, then commit or release.
    pub async fn replay(&self, dead: Dead) -> Result<Replayed, Error> {
        self.replay_with(dead, &mut |_| {}).await
    }

    /// Waits until a delivery of `source` may start (DESIGN §6a: its
    /// pause, its breaker, then its `max_rate`), telling `progress` once
    /// per wait; without [`Replayer::wait`], a held delivery comes back as
    /// it is. A source no longer configured is not held.
    async fn admitted(
        &self,
        source: &str,
        progress: &mut impl FnMut(Progress<'_>),
    ) -> Result<Option<Held>, Error> {
        let Some(source) = self.steps.config.sources.iter().find(|s| s.name == source) else {
            return Ok(None);
        };
        let mut told: Option<&'static str> = None;
        loop {
            match self.steps.admit(source).await? {
                None => break,
                Some(held) if !self.wait => return Ok(Some(held)),
                Some(held) => {
                    if told != Some(held.word()) {
                        told = Some(held.word());
                        tracing::info!(source = %source.name, held = held.word(), "replay waits: delivery is held");
                        progress(Progress::Waiting {
                            source: &source.name,
                            held,
                        });
                    }
                    let wait = match held {
                        Held::Paused => crate::pause::READ_EVERY,
                        Held::Breaker(left) => left.min(crate::breaker::READ_EVERY),
                    };
                    tokio::time::sleep(wait.max(std::time::Duration::from_millis(50))).await;
                }
            }
        }
        let mut local = self.pacer.lock().await;
        self.steps.pace(source, &mut local).await;
        drop(local);
        if let Some(rate) = self.rate {
            let delay = self
                .own_pacer
                .lock()
                .await
                .reserve(
                    1,
                    crate::pace::interval_ms(rate),
                    crate::time::now_ms() as f64,
                )
                .first()
                .copied()
                .unwrap_or_default();
            tokio::time::sleep(delay).await;
        }
        progress(Progress::Going);
        Ok(None)
    }

    /// [`Replayer::replay`], telling `progress` when it waits and when its
    /// attempt starts.
    pub async fn replay_with(
        &self,
        dead: Dead,
        progress: &mut impl FnMut(Progress<'_>),
    ) -> Result<Replayed, Error> {
        let steps = self.steps;
        let mut envelope = dead.envelope;
        if let Some(why) = envelope.unopenable() {
            crate::seal::report(&envelope.source, &dead.id, why);
            return Ok(Replayed::Unopenable {
                error: why.to_string(),
            });
        }
        if let Some(held) = self.admitted(&envelope.source, progress).await? {
            return Ok(Replayed::Held { held: held.word() });
        }
        let gate = envelope.gate();
        let event = crate::delivery::Event::of(&envelope, gate.as_ref());

        let nonce = if envelope.delivery == "forward" {
            match steps.claim(&event).await? {
                Claimed::Fresh(lease) => Some(lease),
                Claimed::Done => {
                    self.remove(&dead.id).await?;
                    return Ok(Replayed::AlreadyDelivered);
                }
                Claimed::InFlight => return Ok(Replayed::InFlight),
            }
        } else {
            None
        };
        let lock = match &gate {
            None => None,
            Some(g) => match steps.gate(&event, g, &store::lease_token(), true).await {
                Ok(Gated::Newer(lock)) => lock,
                Ok(Gated::Busy) => {
                    steps.release(&event, nonce).await;
                    return Ok(Replayed::InFlight);
                }
                Ok(Gated::Equal | Gated::Stale) => {
                    // A commit that fails is counted and logged by
                    // `commit`; the claim's lease runs out and a sender's
                    // retry meets the version gate again, which settles it
                    // the same way: nothing reaches the app either way.
                    if let Some(nonce) = &nonce
                        && steps.commit(&event, nonce, Vec::new()).await.is_err()
                    {
                        tracing::debug!(source = %envelope.source, event_id = %envelope.event_id, "stale replay: the version gate settles a retry");
                    }
                    self.remove(&dead.id).await?;
                    return Ok(Replayed::StaleVersion);
                }
                Err(e) => {
                    steps.release(&event, nonce).await;
                    return Err(e.into());
                }
            },
        };

        let tried = steps.attempt_stored(&envelope, &event, Mode::Replay).await;
        if let Some(source) = steps
            .config
            .sources
            .iter()
            .find(|s| s.name == envelope.source)
        {
            steps
                .breaker_record(source, &tried.attempt, tried.status)
                .await;
        }
        let fact = |state: State, dead_letter_id: Option<String>| Fact::Attempted {
            attempt: tried.trail(Mode::Replay),
            state,
            next_attempt_at: None,
            dead_letter_id,
        };
        let error = match &tried.attempt {
            Attempt::Delivered => {
                steps.delivered(&event, lock).await;
                if let Some(nonce) = &nonce {
                    steps.commit_patiently(&event, nonce).await;
                }
                self.remove(&dead.id).await?;
                steps
                    .note_now(&event, vec![fact(State::Delivered, None)])
                    .await;
                tracing::info!(source = %envelope.source, event_id = %envelope.event_id, dlq_id = %dead.id, trace_id = tried.trace_id.as_deref(), "dead letter replayed");
                return Ok(Replayed::Delivered);
            }
            Attempt::Refused(error) | Attempt::Failed { error, .. } => error.clone(),
        };
        steps.release(&event, lock).await;
        steps.release(&event, nonce).await;
        envelope.attempts = envelope.attempts.saturating_add(1);
        envelope.last_attempt_ms = Some(crate::time::now_ms());
        envelope.last_error = Some(error.clone());
        let new_id = self
            .steps
            .store
            .durable()?
            .dead_replace(
                &dead.id,
                envelope.meta(),
                envelope.encode(&self.steps.config.store.encryption, Place::DeadLetter),
            )
            .await?;
        let kept_as = new_id.clone().unwrap_or_else(|| dead.id.clone());
        if let Err(e) = self
            .steps
            .store
            .trail_write(
                &envelope.source,
                &envelope.event_id,
                vec![fact(State::DeadLetter, Some(kept_as))],
                self.steps.config.admin.trail_max_events,
            )
            .await
        {
            tracing::debug!(source = %envelope.source, event_id = %envelope.event_id, error = %e, "trail write failed");
        }
        tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, dlq_id = %dead.id, trace_id = tried.trace_id.as_deref(), error = %error, "dead letter replay failed; kept");
        Ok(Replayed::Failed { error, new_id })
    }

    async fn remove(&self, id: &str) -> Result<(), Error> {
        self.steps.store.durable()?.dead_remove(id).await?;
        Ok(())
    }
}

/// Deletes dead letter `id` without sending it (DESIGN §6), for `by`:
/// its trail state becomes `discarded`. The entry as it was; `NotFound`
/// when there is none (or another removal took it first).
pub async fn delete(
    store: &Store,
    config: &crate::config::Config,
    id: &str,
    by: &str,
) -> Result<Dead, Error> {
    let dead = get(store, &config.store.encryption, id).await?;
    if discard(store, config, &dead, State::Discarded, by).await? {
        Ok(dead)
    } else {
        Err(Error::NotFound(id.to_owned()))
    }
}

/// Removes a dead letter without sending it (DESIGN §6): its trail state
/// becomes `state` (`discarded` or `expired`) with `by` (who or what
/// removed it). Whether it was there to remove: only the removal that
/// took it writes the fact, and a deletion's log line (an expiry's is its
/// sweep's, with the age).
pub async fn discard(
    store: &Store,
    config: &crate::config::Config,
    dead: &Dead,
    state: State,
    by: &str,
) -> Result<bool, store::Error> {
    if !store.durable()?.dead_remove(&dead.id).await? {
        return Ok(false);
    }
    if state == State::Discarded {
        tracing::info!(source = %dead.envelope.source, event_id = %dead.envelope.event_id, dlq_id = %dead.id, by, "dead letter deleted");
    }
    let max = config.admin.trail_max_events;
    if max > 0
        && let Err(e) = store
            .trail_write(
                &dead.envelope.source,
                &dead.envelope.event_id,
                vec![Fact::Removed {
                    at: crate::time::now_ms(),
                    state,
                    by: by.to_owned(),
                }],
                max,
            )
            .await
    {
        tracing::debug!(source = %dead.envelope.source, event_id = %dead.envelope.event_id, error = %e, "trail write failed");
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_results_as_json() {
        let j = serde_json::to_string(&Replayed::Failed {
            error: "app answered 500".into(),
            new_id: Some("1-0".into()),
        })
        .expect("json");
        assert_eq!(
            j,
            r#"{"result":"failed","error":"app answered 500","new_id":"1-0"}"#
        );
        assert_eq!(
            serde_json::to_string(&Replayed::Delivered).expect("json"),
            r#"{"result":"delivered"}"#
        );
    }
}
