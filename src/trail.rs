//! The event trail (DESIGN §7a): what happened to each verified event.
//!
//! Engines append [`Fact`]s per `(source, event id)`: received, each
//! attempt at the app, duplicates answered, a dead letter written. What an
//! operator reads, its state included, is a [`Summary`] folded from them
//! here, once for every engine, and shown as a [`Record`]. Bodies are never
//! in the trail, and nothing is recorded for a rejected request: only events
//! that passed verification and took their nonce (or were answered as
//! duplicates of one).
//!
//! An event's record is bounded whatever senders and operators do: a
//! [`Summary`] keeps the first [`FIRST_ATTEMPTS`] and the last
//! [`LAST_ATTEMPTS`] attempts with a count of those between, and duplicates
//! as a count with the times of the first and the last. The memory engine
//! keeps the summary itself; the engines that keep text append facts as
//! JSON lines and fold them into one `summary` line ([`compact`]) once the
//! text passes [`COMPACT_BYTES`], so appending stays cheap and the text
//! stays within a few KiB. Duplicates reach the durable engines through a
//! [`tally::Tally`], one fact per event per flush however many copies came.
//!
//! Trail writes are best effort and never hold up an answer: they go out
//! beside the event's own writes, and a failed one is logged, not counted as
//! a store error (the event itself is not affected).

pub mod lines;
pub mod tally;

pub use lines::{facts_of, lines_of};

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::time::now_ms;

/// Facts for one event's trail (DESIGN §7a), handed to the store write the
/// event makes anyway (a nonce commit or release, an enqueue, a queue
/// entry's settle or retry) so they ride on it: on SQLite in the same
/// transaction, on memory in the same call, on one Redis node in the same
/// pipelined round trip as a nonce commit. Other Redis writes, and every
/// write on a Cluster (the trail's keys share one slot, which the event's
/// own keys do not) or with `min_replicas`, hand the note to the process's
/// ordered trail writer beside the write. A note is lost when a write it
/// shares a transaction or round trip with fails; otherwise it is written
/// whatever that write's result, which is the result the caller gets.
#[derive(Debug, Clone)]
pub struct Note {
    pub prefix: String,
    pub source: String,
    pub event_id: String,
    pub facts: Vec<Fact>,
    /// `[admin] trail_max_events`.
    pub max: usize,
}

/// Events the trail keeps by default (`[admin] trail_max_events`).
pub const DEFAULT_MAX_EVENTS: usize = 100_000;
/// Records per page of `GET /events` by default, and at most.
pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 1000;
/// Attempts an event keeps from its start, and from its end.
pub const FIRST_ATTEMPTS: usize = 10;
pub const LAST_ATTEMPTS: usize = 40;
/// An event's stored text longer than this is folded into one `summary`
/// line. The longest summary (fifty attempts with long replica names) is
/// under half of it, so a fold happens at most once per this many bytes
/// appended.
pub const COMPACT_BYTES: usize = 16 * 1024;
/// Full generations the durable engines keep besides the one written now,
/// at most ([`generations`]).
pub const GENERATIONS: usize = 16;
/// Generations a reader or a writer looks through, at most, whatever the
/// store says.
pub const REACH: i64 = 64;

/// How the durable engines keep a bound of `max` events without taking
/// them out one by one: in generations of `size` events, the one written
/// now and `kept` full ones, the older removed whole. `(kept, size)`, at
/// most [`GENERATIONS`] generations, the fewest with `kept × size ≥ max`
/// (less than `size` over it): the newest `max` events are always held.
pub fn generations(max: usize) -> (i64, i64) {
    let size = max.max(1).div_ceil(GENERATIONS);
    let kept = max.max(1).div_ceil(size);
    (
        i64::try_from(kept).unwrap_or(1),
        i64::try_from(size).unwrap_or(i64::MAX),
    )
}

/// Where an event is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Forward mode: on its way to the app now.
    InFlight,
    /// The app answered 2xx.
    Delivered,
    /// Forward mode: the app failed; the sender's retry is expected.
    Released,
    /// Queued: the next attempt is at `next_attempt_at`.
    Waiting,
    /// Queue: the app answered a 4xx; kept as a dead letter, not retried.
    Dropped,
    /// A dead letter waits for a replay.
    DeadLetter,
    /// A dead letter deleted by an operator (DESIGN §6); `removed_by` says who.
    Discarded,
    /// A dead letter removed past `dead_letter_max_age` (DESIGN §6).
    Expired,
}

impl State {
    pub const ALL: [State; 8] = [
        State::InFlight,
        State::Delivered,
        State::Released,
        State::Waiting,
        State::Dropped,
        State::DeadLetter,
        State::Discarded,
        State::Expired,
    ];

    pub fn word(self) -> &'static str {
        match self {
            State::InFlight => "in_flight",
            State::Delivered => "delivered",
            State::Released => "released",
            State::Waiting => "waiting",
            State::Dropped => "dropped",
            State::DeadLetter => "dead_letter",
            State::Discarded => "discarded",
            State::Expired => "expired",
        }
    }

    pub fn parse(word: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.word() == word)
    }
}

/// How a delivery attempt was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Forward,
    Queue,
    Replay,
}

impl Mode {
    /// The word JSON and traces use.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Queue => "queue",
            Mode::Replay => "replay",
        }
    }
}

/// One attempt at the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// Unix ms.
    pub at: i64,
    /// Shared by every fact this replica writes.
    pub replica: Arc<str>,
    pub mode: Mode,
    /// The §3 outcome word: `forwarded` when the app answered (its status
    /// beside it), else `upstream_unavailable` or `upstream_timeout`; in
    /// every mode.
    pub outcome: Cow<'static, str>,
    /// The app's status, when it answered.
    pub status: Option<u16>,
    pub duration_ms: u64,
    /// Queue: why the event waited before this attempt started, and how
    /// long (DESIGN §6a: a pause, an open breaker, `max_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited: Option<Waited>,
    /// The attempt's trace, when traces are exported and this one was kept
    /// (DESIGN §7c).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// A wait before a queued attempt: `paused`, `breaker` or `max_rate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waited {
    pub reason: Cow<'static, str>,
    pub ms: u64,
}

/// One thing that happened to an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum Fact {
    /// hookgate took the event (its nonce, or its enqueue).
    Received {
        at: i64,
        replica: Arc<str>,
        event_type: Option<String>,
        /// The sender's signed timestamp (unix seconds), when signed.
        signed_at: Option<i64>,
        /// `in_flight` (forward) or `waiting` (queue).
        state: State,
        /// What the nonce is keyed by when not the event id (an unsigned
        /// id: the body's digest).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce_id: Option<String>,
    },
    /// An attempt at the app, and where it left the event.
    Attempted {
        attempt: Attempt,
        state: State,
        /// Unix ms of the next attempt (queue).
        next_attempt_at: Option<i64>,
        dead_letter_id: Option<String>,
    },
    /// A sender's copy answered `200 duplicate` (one fact per copy: as
    /// earlier versions wrote them; still read).
    Duplicate,
    /// `count` copies answered `200 duplicate`, the first and the last at
    /// these times (unix ms).
    Duplicates { count: u64, first: i64, last: i64 },
    /// Everything known of the event up to here, folded ([`compact`]).
    Summary(Box<Summary>),
    /// Copied to the dead letters outside an attempt (forward mode's third
    /// failure in a row).
    DeadLettered { dead_letter_id: String },
    /// Its dead letter was removed unsent (DESIGN §6): deleted by an
    /// operator (`discarded`) or past `dead_letter_max_age` (`expired`).
    Removed {
        /// Unix ms.
        at: i64,
        /// `discarded` or `expired`.
        state: State,
        /// Who or what removed it: `cli:USER@HOST`, `admin`, `console`,
        /// `job JOB`, `dead_letter_max_age`.
        by: String,
    },
}

/// An event as an operator reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub state: State,
    /// RFC 3339.
    pub received_at: Option<String>,
    /// The replica that first received it.
    pub replica: Option<String>,
    pub signed_at: Option<String>,
    pub duplicates: u64,
    /// RFC 3339 times of the first and the last duplicate answered.
    pub first_duplicate_at: Option<String>,
    pub last_duplicate_at: Option<String>,
    /// The first [`FIRST_ATTEMPTS`] attempts, then the last
    /// [`LAST_ATTEMPTS`]; `attempts_omitted` were between them.
    pub attempts: Vec<AttemptView>,
    pub attempts_omitted: u64,
    pub next_attempt_at: Option<String>,
    pub dead_letter_id: Option<String>,
    /// `discarded` or `expired`: who or what removed its dead letter
    /// (`cli:USER@HOST`, `admin`, `console`, `job JOB`,
    /// `dead_letter_max_age`) and when (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<String>,
    /// Unix ms of `received_at`, for ordering (not serialized).
    #[serde(skip)]
    pub received_ms: i64,
    /// What the nonce is keyed by (not serialized).
    #[serde(skip)]
    pub nonce_id: String,
}

/// An attempt as `GET /events` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptView {
    pub at: String,
    pub replica: String,
    pub mode: Mode,
    pub outcome: String,
    pub status: Option<u16>,
    pub duration_ms: u64,
    /// Why and how long it waited before this attempt (queue), if it did.
    pub waited: Option<Waited>,
    /// The attempt's trace id, when it was traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// Unix ms as RFC 3339 (UTC, milliseconds).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Where `fact` leaves an event that is `current` (`None`: not recorded
/// yet; stays `None` until a `Received`). [`Record::fold`] applies the same
/// rule, so an engine can keep the state beside the facts without folding
/// them all again.
pub fn next_state(current: Option<State>, fact: &Fact) -> Option<State> {
    match (current, fact) {
        (_, Fact::Summary(summary)) => Some(summary.state),
        (None, Fact::Received { state, .. }) => Some(*state),
        (None, _) => None,
        // A sender's retry taken afresh after a release; a dead letter
        // stays one until a delivery gets through.
        (Some(State::DeadLetter), Fact::Received { .. }) => Some(State::DeadLetter),
        (Some(_), Fact::Received { state, .. }) => Some(*state),
        (
            Some(State::DeadLetter),
            Fact::Attempted {
                state: State::InFlight | State::Released,
                ..
            },
        ) => Some(State::DeadLetter),
        (Some(_), Fact::Attempted { state, .. }) => Some(*state),
        (Some(State::Delivered), Fact::DeadLettered { .. }) => Some(State::Delivered),
        // Only a dead letter is removed; a delivery that got through first
        // stays the answer.
        (Some(State::Delivered), Fact::Removed { .. }) => Some(State::Delivered),
        (Some(_), Fact::Removed { state, .. }) => Some(*state),
        (Some(_), Fact::DeadLettered { .. }) => Some(State::DeadLetter),
        (Some(s), Fact::Duplicate | Fact::Duplicates { .. }) => Some(s),
    }
}

/// An event folded from its facts, bounded (module docs): what engines
/// keep when they fold, and what a [`Record`] is made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Unix ms of the first `Received`.
    pub at: i64,
    pub replica: Arc<str>,
    pub event_type: Option<String>,
    pub signed_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce_id: Option<String>,
    pub state: State,
    #[serde(default)]
    pub duplicates: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_duplicate_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_duplicate_at: Option<i64>,
    /// At most [`FIRST_ATTEMPTS`], oldest first.
    #[serde(default)]
    pub first_attempts: Vec<Attempt>,
    /// At most [`LAST_ATTEMPTS`], oldest first, all after `first_attempts`.
    #[serde(default)]
    pub last_attempts: Vec<Attempt>,
    #[serde(default)]
    pub attempts_omitted: u64,
    pub next_attempt_at: Option<i64>,
    pub dead_letter_id: Option<String>,
    /// Who or what removed its dead letter unsent, and when (unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<(String, i64)>,
}

impl Summary {
    /// An event's start: from its `Received` fact, or a summary written
    /// before; `None` for any other fact (its start was trimmed away).
    pub fn start(fact: Fact) -> Option<Summary> {
        match fact {
            Fact::Received {
                at,
                replica,
                event_type,
                signed_at,
                state,
                nonce_id,
            } => Some(Summary {
                at,
                replica,
                event_type,
                signed_at,
                nonce_id,
                state,
                duplicates: 0,
                first_duplicate_at: None,
                last_duplicate_at: None,
                first_attempts: Vec::new(),
                last_attempts: Vec::new(),
                attempts_omitted: 0,
                next_attempt_at: (state == State::Waiting).then_some(at),
                dead_letter_id: None,
                removed: None,
            }),
            Fact::Summary(summary) => Some(*summary),
            _ => None,
        }
    }

    /// Folds facts, oldest first; `None` when they hold no start.
    pub fn fold(facts: impl IntoIterator<Item = Fact>) -> Option<Summary> {
        let mut summary: Option<Summary> = None;
        for fact in facts {
            match summary.as_mut() {
                Some(s) => s.apply(fact),
                None => summary = Summary::start(fact),
            }
        }
        summary
    }

    /// Adds one fact, in constant time and space.
    pub fn apply(&mut self, fact: Fact) {
        if let Some(next) = next_state(Some(self.state), &fact) {
            self.state = next;
        }
        match fact {
            Fact::Received { .. } => {}
            Fact::Attempted {
                attempt,
                state,
                next_attempt_at,
                dead_letter_id,
            } => {
                self.next_attempt_at = next_attempt_at;
                if let Some(id) = dead_letter_id {
                    self.dead_letter_id = Some(id);
                } else if state == State::Delivered && attempt.mode == Mode::Replay {
                    // A replay that got through removed its dead letter.
                    self.dead_letter_id = None;
                }
                if self.first_attempts.len() < FIRST_ATTEMPTS {
                    self.first_attempts.push(attempt);
                } else {
                    if self.last_attempts.len() >= LAST_ATTEMPTS {
                        self.last_attempts.remove(0);
                        self.attempts_omitted = self.attempts_omitted.saturating_add(1);
                    }
                    self.last_attempts.push(attempt);
                }
            }
            Fact::Duplicate => self.duplicated(1, None, None),
            Fact::Duplicates { count, first, last } => {
                self.duplicated(count, Some(first), Some(last));
            }
            Fact::DeadLettered { dead_letter_id } => self.dead_letter_id = Some(dead_letter_id),
            Fact::Removed { at, by, .. } => {
                if self.state != State::Delivered {
                    self.removed = Some((by, at));
                    self.next_attempt_at = None;
                }
            }
            // A summary replaces what came before it (it is only ever
            // written first).
            Fact::Summary(summary) => *self = *summary,
        }
    }

    fn duplicated(&mut self, count: u64, first: Option<i64>, last: Option<i64>) {
        self.duplicates = self.duplicates.saturating_add(count);
        if self.first_duplicate_at.is_none() {
            self.first_duplicate_at = first;
        }
        if last.is_some() {
            self.last_duplicate_at = last;
        }
    }

    /// The event as an operator reads it.
    pub fn record(&self, source: &str, event_id: &str) -> Record {
        let view = |a: &Attempt| AttemptView {
            at: rfc3339(a.at),
            replica: a.replica.to_string(),
            mode: a.mode,
            outcome: a.outcome.to_string(),
            status: a.status,
            duration_ms: a.duration_ms,
            waited: a.waited.clone(),
            trace_id: a.trace_id.clone(),
        };
        Record {
            source: source.to_owned(),
            event_id: event_id.to_owned(),
            event_type: self.event_type.clone(),
            state: self.state,
            received_at: Some(rfc3339(self.at)),
            replica: Some(self.replica.to_string()),
            signed_at: self.signed_at.map(|s| rfc3339(s.saturating_mul(1000))),
            duplicates: self.duplicates,
            first_duplicate_at: self.first_duplicate_at.map(rfc3339),
            last_duplicate_at: self.last_duplicate_at.map(rfc3339),
            attempts: self
                .first_attempts
                .iter()
                .chain(&self.last_attempts)
                .map(view)
                .collect(),
            attempts_omitted: self.attempts_omitted,
            next_attempt_at: self.next_attempt_at.map(rfc3339),
            dead_letter_id: self.dead_letter_id.clone(),
            removed_by: self.removed.as_ref().map(|(by, _)| by.clone()),
            removed_at: self.removed.as_ref().map(|(_, at)| rfc3339(*at)),
            received_ms: self.at,
            nonce_id: self.nonce_id.clone().unwrap_or_else(|| event_id.to_owned()),
        }
    }
}

impl Record {
    /// Folds an event's facts, oldest first, into what it is now. `None`
    /// when they hold no start (its first facts were trimmed away).
    pub fn fold(source: &str, event_id: &str, facts: &[Fact]) -> Option<Record> {
        Summary::fold(facts.iter().cloned()).map(|s| s.record(source, event_id))
    }
}

/// An event's stored text (JSON lines) folded into one `summary` line;
/// `None` when the text holds no start.
pub fn compact(text: &str) -> Option<String> {
    let summary = Summary::fold(facts_of(text))?;
    Some(lines_of(&[Fact::Summary(Box::new(summary))]))
}

/// What `GET /events` and `hookgate events list` filter on.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub source: Option<String>,
    pub state: Option<State>,
    pub event_type: Option<String>,
    pub limit: usize,
    /// A cursor from a previous page's `next`.
    pub before: Option<Cursor>,
}

/// Where a page ended: the received time and key of its last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub received_ms: i64,
    pub source: String,
    pub event_id: String,
}

impl Cursor {
    /// `received_ms.source.event_id`, with the id hex-encoded so the cursor
    /// is one URL-safe word.
    pub fn encode(&self) -> String {
        format!(
            "{}.{}.{}",
            self.received_ms,
            self.source,
            hex::encode(self.event_id.as_bytes())
        )
    }

    pub fn decode(text: &str) -> Option<Cursor> {
        let mut parts = text.splitn(3, '.');
        let received_ms = parts.next()?.parse().ok()?;
        let source = parts.next()?.to_owned();
        let id = hex::decode(parts.next()?).ok()?;
        Some(Cursor {
            received_ms,
            source,
            event_id: String::from_utf8(id).ok()?,
        })
    }
}

/// One page, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub events: Vec<Record>,
    pub next: Option<String>,
}

/// An event as an engine returns it while listing.
#[derive(Debug, Clone)]
pub struct Stored {
    pub source: String,
    pub event_id: String,
    pub received_ms: i64,
    pub summary: Summary,
}

impl Filter {
    pub fn matches(&self, r: &Record) -> bool {
        self.source.as_deref().is_none_or(|s| s == r.source)
            && self.state.is_none_or(|s| s == r.state)
            && self
                .event_type
                .as_deref()
                .is_none_or(|t| r.event_type.as_deref() == Some(t))
    }

    pub fn limit(&self) -> usize {
        match self.limit {
            0 => DEFAULT_LIMIT,
            n => n.min(MAX_LIMIT),
        }
    }
}

/// This replica's name in the trail, read once: see [`replica_name`].
pub fn replica() -> Arc<str> {
    static NAME: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| replica_name().into());
    Arc::clone(&NAME)
}

/// This replica's name in the trail: `$HOOKGATE_REPLICA`, else the host name
/// (a pod's name on Kubernetes), else `hookgate`.
pub fn replica_name() -> String {
    std::env::var("HOOKGATE_REPLICA")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "hookgate".to_owned())
}

/// A `Received` fact stamped now.
pub fn received(
    replica: &str,
    event_type: Option<&str>,
    signed_at: Option<i64>,
    state: State,
) -> Fact {
    Fact::Received {
        at: now_ms(),
        replica: replica.into(),
        event_type: event_type.map(str::to_owned),
        signed_at,
        state,
        nonce_id: None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generations_hold_the_bound_and_less_than_one_generation_more() {
        use super::generations;
        assert_eq!(generations(100_000), (16, 6_250));
        assert_eq!(generations(40), (14, 3));
        assert_eq!(generations(5), (5, 1));
        assert_eq!(generations(1), (1, 1));
        for max in 1..5_000_i64 {
            let (kept, size) = generations(usize::try_from(max).unwrap_or(1));
            assert!(kept <= 16, "{max}: {kept} generations");
            assert!(kept * size >= max, "{max}: {kept} × {size}");
            assert!(kept * size - max < size, "{max}: {kept} × {size}");
        }
    }

    use super::*;

    fn attempt(outcome: &'static str, status: Option<u16>) -> Attempt {
        Attempt {
            at: 1_700_000_001_000,
            replica: "pod-a".into(),
            mode: Mode::Queue,
            outcome: outcome.into(),
            status,
            duration_ms: 12,
            waited: None,
            trace_id: None,
        }
    }

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_queued_event_that_fails_then_is_replayed() {
        let facts = vec![
            Fact::Received {
                at: 1_700_000_000_000,
                replica: "pod-a".into(),
                event_type: Some("invoice.paid".into()),
                signed_at: Some(1_700_000_000),
                state: State::Waiting,
                nonce_id: None,
            },
            Fact::Duplicate,
            Fact::Attempted {
                attempt: attempt("forwarded", Some(503)),
                state: State::Waiting,
                next_attempt_at: Some(1_700_000_011_000),
                dead_letter_id: None,
            },
            Fact::Attempted {
                attempt: attempt("forwarded", Some(503)),
                state: State::DeadLetter,
                next_attempt_at: None,
                dead_letter_id: Some("7".into()),
            },
        ];
        let r = Record::fold("stripe", "evt_1", &facts).expect("record");
        assert_eq!(r.state, State::DeadLetter);
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.attempts.len(), 2);
        assert_eq!(r.dead_letter_id.as_deref(), Some("7"));
        assert_eq!(r.next_attempt_at, None);
        let mut more = facts.clone();
        more.push(Fact::Attempted {
            attempt: Attempt {
                mode: Mode::Replay,
                ..attempt("forwarded", Some(200))
            },
            state: State::Delivered,
            next_attempt_at: None,
            dead_letter_id: None,
        });
        let r = Record::fold("stripe", "evt_1", &more).expect("record");
        assert_eq!(r.state, State::Delivered);
        assert_eq!(r.dead_letter_id, None);
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["attempts"][2]["mode"], "replay");
        assert_eq!(json["received_at"], "2023-11-14T22:13:20.000Z");
        assert!(json.get("received_ms").is_none());
    }

    #[test]
    fn a_forward_failure_copied_to_the_dead_letters_then_retried_through() {
        let mut facts = vec![
            received("a", None, None, State::InFlight),
            Fact::Attempted {
                attempt: Attempt {
                    mode: Mode::Forward,
                    ..attempt("forwarded", Some(500))
                },
                state: State::Released,
                next_attempt_at: None,
                dead_letter_id: None,
            },
            Fact::DeadLettered {
                dead_letter_id: "3".into(),
            },
        ];
        let r = Record::fold("s", "e", &facts).expect("record");
        assert_eq!(r.state, State::DeadLetter);
        // A sender's retry that fails again leaves it a dead letter.
        facts.push(received("b", None, None, State::InFlight));
        facts.push(Fact::Attempted {
            attempt: Attempt {
                mode: Mode::Forward,
                ..attempt("upstream_unavailable", None)
            },
            state: State::Released,
            next_attempt_at: None,
            dead_letter_id: None,
        });
        let r = Record::fold("s", "e", &facts).expect("record");
        assert_eq!(r.state, State::DeadLetter);
        facts.push(received("b", None, None, State::InFlight));
        facts.push(Fact::Attempted {
            attempt: Attempt {
                mode: Mode::Forward,
                ..attempt("forwarded", Some(200))
            },
            state: State::Delivered,
            next_attempt_at: None,
            dead_letter_id: None,
        });
        let r = Record::fold("s", "e", &facts).expect("record");
        assert_eq!(r.state, State::Delivered);
        assert_eq!(r.replica.as_deref(), Some("a"));
        // The dead letter is still there until a replay finds it delivered.
        assert_eq!(r.dead_letter_id.as_deref(), Some("3"));
        assert_eq!(Record::fold("s", "e", &[Fact::Duplicate]), None);
    }

    /// However many attempts and copies an event sees, it keeps its first
    /// ten and last forty attempts, counts the rest and the duplicates, and
    /// its folded text stays a few KiB.
    #[test]
    fn a_record_is_bounded_whatever_happens_to_its_event() {
        let mut facts = vec![received("pod-a", Some("push"), None, State::InFlight)];
        for n in 0..1_000i64 {
            facts.push(Fact::Attempted {
                attempt: Attempt {
                    at: n,
                    mode: Mode::Forward,
                    ..attempt("forwarded", Some(500))
                },
                state: State::Released,
                next_attempt_at: None,
                dead_letter_id: None,
            });
            facts.push(Fact::Duplicates {
                count: 3,
                first: 10_000 + n,
                last: 20_000 + n,
            });
        }
        facts.push(Fact::Duplicate);
        let s = Summary::fold(facts.clone()).expect("summary");
        assert_eq!(s.first_attempts.len(), FIRST_ATTEMPTS);
        assert_eq!(s.last_attempts.len(), LAST_ATTEMPTS);
        assert_eq!(s.attempts_omitted, 950);
        assert_eq!(s.first_attempts[9].at, 9);
        assert_eq!(s.last_attempts[0].at, 960);
        assert_eq!(s.last_attempts[39].at, 999);
        assert_eq!(s.duplicates, 3_001);
        assert_eq!(
            (s.first_duplicate_at, s.last_duplicate_at),
            (Some(10_000), Some(20_999))
        );

        let text = lines_of(&facts);
        let folded = compact(&text).expect("folded");
        assert!(folded.len() < COMPACT_BYTES / 2, "{} bytes", folded.len());
        assert_eq!(folded.lines().count(), 1);
        // The fold reads back as the same event, and facts appended after
        // it apply as they would have to the whole list.
        let more = lines_of(&[Fact::Attempted {
            attempt: Attempt {
                at: 5_000,
                mode: Mode::Replay,
                ..attempt("forwarded", Some(200))
            },
            state: State::Delivered,
            next_attempt_at: None,
            dead_letter_id: None,
        }]);
        let whole = Summary::fold(facts_of(&format!("{text}{more}")));
        let after = Summary::fold(facts_of(&format!("{folded}{more}")));
        assert_eq!(after, whole);
        let r = after.expect("record").record("gh", "d1");
        assert_eq!(r.state, State::Delivered);
        assert_eq!(r.attempts.len(), 50);
        assert_eq!(r.attempts_omitted, 951);
        assert_eq!(
            r.last_duplicate_at.as_deref(),
            Some("1970-01-01T00:00:20.999Z")
        );
    }

    #[test]
    fn cursors_round_trip_any_id() {
        let c = Cursor {
            received_ms: 42,
            source: "stripe".into(),
            event_id: "evt.with.dots/and spaces".into(),
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        assert_eq!(Cursor::decode("x.y.z"), None);
    }

    #[test]
    fn facts_round_trip_as_json() {
        let f = received("r", Some("t"), Some(5), State::Waiting);
        let text = serde_json::to_string(&f).expect("json");
        assert!(text.contains(r#""fact":"received""#), "{text}");
        assert_eq!(serde_json::from_str::<Fact>(&text).expect("back"), f);
        assert_eq!(State::parse("dead_letter"), Some(State::DeadLetter));
        assert_eq!(State::parse("nope"), None);
    }
}
