//! The trail on Redis (DESIGN §7a), shared by every replica, kept in
//! generations so that its bound costs nothing per event:
//!
//! - `{prefix}:{trail}:facts.{n}`: a hash from `{source}:{event_id}` to the
//!   event's facts, one JSON line each ([`crate::trail::lines_of`]);
//! - `{prefix}:{trail}:index.{n}`: a sorted set of the same members scored
//!   by the time the event was received;
//! - `{prefix}:{trail}:generation`: `n` of the generation written now;
//!   `{prefix}:{trail}:oldest`: the oldest generation kept.
//!
//! A generation holds [`generations`]'s `size` events; when the one written now
//! is full, the next one starts and the generations older than the newest
//! `kept` full ones go whole (`UNLINK`, freed off Redis's main thread).
//! `kept × size ≥ trail_max_events`, so the newest `trail_max_events`
//! events are always held, and fewer than two generations more (`2 ×
//! trail_max_events / 16`). Nothing is trimmed event by event.
//!
//! Every key shares the `{trail}` hash tag: one Cluster slot, so a script
//! sees them together. An event's record lives in one generation: facts
//! appended to an event held in an older one move it, with its score, to
//! the one written now. The one exception is a nonce commit that records
//! an event again (a sender's retry after a release) after its generation
//! passed: its new record starts in the newer generation, and readers
//! join the two, oldest first, and list the event once.
//!
//! Versions before generations kept one index, `{prefix}:{trail}`, and one
//! facts hash, `{prefix}:{trail}:facts`, and before that a list per event,
//! `{prefix}:{trail}:{source}:{event_id}`. They are read as the generation
//! before the first (a suffix with no `:` never names such a list) and
//! removed, lists included, once the newest `kept` generations are full.
//!
//! The mixed period: a version before generations appends a fact without a
//! `Received` only to a record it finds in its own facts hash, and reads
//! only there. So while its index exists, and for [`GRACE_MS`] after this
//! layout first wrote beside it (`{prefix}:{trail}:upgraded_at`, set once,
//! removed with the earlier keys), every replica of this version writes the
//! earlier layout the way that version does: a new record goes into its
//! hash and index, an event held there or in a generation is appended to in
//! place (nothing moves), and the earlier index is trimmed to the bound
//! with `ZPOPMIN`. Nonce commits go through the writer task meanwhile.
//! After the grace records move into generations as they are written, and
//! the earlier keys go once the newest `kept` generations are full. A fact
//! that finds no record (trimmed, or written by a version that moved it) is
//! logged and counted (`hookgate_trail_writes_dropped_total{reason}`).
//!
//! Two ways in:
//! - a nonce commit on one node carries the event's facts in its own
//!   pipelined round trip ([`RedisStore::commit_noting`]): `HSETNX` of the
//!   facts and `ZADD NX` of the member into the generation it last saw;
//!   now and then the same round trip reads that index's size and the
//!   current and oldest generations, and when that index is full the
//!   commit starts the next generation (`ROLL`, one more round trip once
//!   per `size` events); an event already held is left to the writer task;
//! - every other note goes through one queue and one task that writes
//!   them in the order they were noted, as many as have queued up in one
//!   call of `WRITE`: an event's facts never overtake each other.

use std::time::Duration;

use tokio::sync::mpsc;

use super::RedisStore;
use crate::store::{Error, Note};
use crate::trail::{Fact, REACH, generations, lines_of};

mod read;
mod scripts;

use scripts::{COMPACT, DROP, ROLL, WRITE, WRITE_SOURCE};

/// A nonce commit reads where the trail stands once in this many commits
/// of a replica at most ([`RedisStore::commit_noting`]; once in a
/// generation's size when that is smaller): a generation takes up to this
/// many events per replica more than its size before the next one starts.
const CHECK_EVERY: u32 = 64;
/// ... and on its first commit after this long without a look, so that a
/// replica quiet while the others wrote never writes into a generation
/// long removed.
const CHECK_AFTER_MS: i64 = 100;
/// How long commits go through the writer task while a replica reads
/// where the trail stands (its first commit, or the end of a mixed period).
const LOOK_FOR_MS: i64 = 1_000;
/// How long after this layout first wrote beside an earlier version's
/// index the earlier layout is written in place (the mixed period of a
/// rolling upgrade; the module's documentation).
pub const GRACE_MS: i64 = 3_600_000;

/// What a replica knows of the trail's generations, per key prefix.
#[derive(Debug)]
pub(super) struct Seen {
    generation: i64,
    /// Commits since the last look, and how many until the next.
    since: u32,
    next: u32,
    /// When the last look was (unix ms, the clock of the events' facts).
    at: i64,
    /// Until when (unix ms) the mixed period lasts, as the last look saw
    /// it: nonce commits go through the writer task until then.
    mixed_until: Option<i64>,
}

/// How a nonce commit writes its facts, from what a replica last saw.
enum Path {
    /// Into generation `generation` in the commit's round trip, which also
    /// reads where the trail stands when `look`.
    Commit { generation: i64, look: bool },
    /// Through the writer task: the mixed period.
    Writer,
    /// Not known: a look first ([`RedisStore::trail_look`]).
    Unknown,
}

impl Seen {
    /// Seen generation `generation` at `at` with room for `room` events more.
    fn new(generation: i64, room: i64, at: i64) -> Seen {
        Seen {
            generation,
            since: 0,
            next: u32::try_from(room.max(1))
                .unwrap_or(u32::MAX)
                .min(CHECK_EVERY),
            at,
            mixed_until: None,
        }
    }

    /// Whether a commit at `now` reads where the trail stands: once the
    /// commits since the last look would fill the room it left (so one
    /// replica alone fills a generation to the event), once in
    /// [`CHECK_EVERY`] at least, and after [`CHECK_AFTER_MS`]. One look is
    /// in flight at a time: the commits sent while it is (up to one per
    /// open request) count toward the next look, not each its own.
    fn due(&mut self, now: i64) -> bool {
        self.since += 1;
        let due = self.since >= self.next || now.saturating_sub(self.at) >= CHECK_AFTER_MS;
        if due {
            self.since = 0;
            self.at = now;
        }
        due
    }
}

/// Facts waiting for the writer task at most; beyond it a fact is dropped
/// (logged at debug level), never waited for.
const QUEUE: usize = 65_536;
/// Notes one call of [`WRITE`] carries at most.
const BATCH: usize = 256;
/// Members of the earlier versions' index removed per round trip.
const RETIRE_BATCH: isize = 512;

/// Why a trail write did not land (`hookgate_trail_writes_dropped_total`).
#[derive(Clone, Copy, Debug)]
enum Dropped {
    /// The writer task's queue was full.
    QueueFull,
    /// The store refused or did not answer the write.
    Failed,
    /// A fact without `Received` found no record of its event to append
    /// to: trimmed past the bound, or moved where its writer does not look.
    NoRecord,
}

impl Dropped {
    fn label(self) -> &'static str {
        match self {
            Dropped::QueueFull => "queue_full",
            Dropped::Failed => "failed",
            Dropped::NoRecord => "no_record",
        }
    }
}

/// Drops are logged at most once in this long per replica (each is counted).
const DROP_LOG_EVERY_MS: i64 = 60_000;

/// Writes what the queue holds, in order, until every sender is gone.
async fn drain(store: RedisStore, mut queue: mpsc::Receiver<Note>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        if let Err(e) = store.trail_batch(&batch).await {
            tracing::debug!(facts = batch.len(), error = %e, "trail write failed");
            store.trail_dropped(Dropped::Failed, batch.len() as u64);
        }
    }
}

/// `{prefix}:{trail}:`, the start of every key of the trail.
fn base(prefix: &str) -> String {
    trail_key(prefix, "", "")
}

/// `{prefix}:{trail}:{name}{n}`, written without the formatting machinery:
/// a nonce commit builds two of these per event.
fn trail_key(prefix: &str, name: &str, n: &str) -> String {
    const TAG: &str = ":{trail}:";
    let mut key = String::with_capacity(prefix.len() + TAG.len() + name.len() + n.len());
    key.push_str(prefix);
    key.push_str(TAG);
    key.push_str(name);
    key.push_str(n);
    key
}

fn generation_key(prefix: &str) -> String {
    trail_key(prefix, "generation", "")
}

/// When this layout first wrote beside an earlier version's index.
fn upgraded_key(prefix: &str) -> String {
    trail_key(prefix, "upgraded_at", "")
}

fn oldest_key(prefix: &str) -> String {
    trail_key(prefix, "oldest", "")
}

fn facts_key(prefix: &str, n: i64) -> String {
    trail_key(prefix, "facts.", itoa::Buffer::new().format(n))
}

fn index_key(prefix: &str, n: i64) -> String {
    trail_key(prefix, "index.", itoa::Buffer::new().format(n))
}

/// The earlier versions' index, facts hash, and the prefix of their lists.
fn earlier_keys(prefix: &str) -> (String, String, String) {
    (
        format!("{prefix}:{{trail}}"),
        format!("{prefix}:{{trail}}:facts"),
        format!("{prefix}:{{trail}}:"),
    )
}

fn member(source: &str, event_id: &str) -> String {
    let mut m = String::with_capacity(source.len() + 1 + event_id.len());
    m.push_str(source);
    m.push(':');
    m.push_str(event_id);
    m
}

/// Until when the mixed period lasts, seen at `now`: an earlier version's
/// index exists and the grace since `upgraded` (unix ms; not set yet: now)
/// has not run out.
fn mixed_until(earlier: bool, upgraded: Option<i64>, now: i64) -> Option<i64> {
    let until = upgraded.unwrap_or(now).saturating_add(GRACE_MS);
    (earlier && now < until).then_some(until)
}

/// When `note` carries a `Received` fact, its time.
fn received_at(note: &Note) -> Option<i64> {
    note.facts.iter().find_map(|f| match f {
        Fact::Received { at, .. } => Some(*at),
        _ => None,
    })
}

impl RedisStore {
    /// What hands the tally's notes to the writer task.
    pub fn note_writer(&self) -> impl Fn(Note) -> bool + Send + 'static {
        let store = self.clone();
        move |note: Note| {
            store.trail_note(note);
            true
        }
    }

    /// The duplicates counted and not yet written.
    pub fn tally(&self) -> &std::sync::Arc<crate::trail::tally::Tally> {
        &self.tally
    }

    /// Queues facts for the writer task (started on first use), without waiting.
    pub fn trail_note(&self, item: Note) {
        let queue = self.trail_queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(drain(self.clone(), rx));
            tx
        });
        if queue.try_send(item).is_err() {
            self.trail_dropped(Dropped::QueueFull, 1);
        }
    }

    /// Counts `count` trail writes that did not land, and logs them once a
    /// minute at most.
    fn trail_dropped(&self, why: Dropped, count: u64) {
        if count == 0 {
            return;
        }
        let (family, logged) = &*self.trail_drops;
        if let Some(family) = family.get() {
            family
                .get_or_create(&crate::metrics::ReasonLabel {
                    reason: why.label(),
                })
                .inc_by(count);
        }
        let now = crate::time::now_ms();
        let last = logged.load(std::sync::atomic::Ordering::Relaxed);
        if now.saturating_sub(last) >= DROP_LOG_EVERY_MS
            && logged
                .compare_exchange(
                    last,
                    now,
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                )
                .is_ok()
        {
            tracing::warn!(
                reason = why.label(),
                count,
                "trail facts not written (counted in hookgate_trail_writes_dropped_total)"
            );
        }
    }

    /// How this replica's next nonce commit writes `prefix`'s facts, from
    /// what it last saw ([`Seen::due`]).
    fn seen_generation(&self, prefix: &str, now: i64) -> Path {
        let Ok(mut seen) = self.trail_generation.lock() else {
            return Path::Unknown;
        };
        // One entry per key prefix: a store has one.
        match seen.iter_mut().find(|(p, _)| p == prefix) {
            Some((_, held)) => match held.mixed_until {
                Some(until) if now < until => Path::Writer,
                Some(_) => Path::Unknown,
                None => Path::Commit {
                    generation: held.generation,
                    look: held.due(now),
                },
            },
            None => Path::Unknown,
        }
    }

    /// What a write of the writer task saw (the current generation, the
    /// mixed period's end), for the commits of a replica that does not know
    /// yet or whose mixed period may be over; a replica that knows keeps
    /// its own look (and the room it counted).
    fn see_from_writer(&self, prefix: &str, current: i64, mixed: Option<i64>, now: i64) {
        let Ok(seen) = self.trail_generation.lock() else {
            return;
        };
        let knows = seen
            .iter()
            .any(|(p, held)| p == prefix && held.mixed_until.is_none());
        drop(seen);
        if !knows {
            self.see_generation(prefix, current, 1, now, mixed);
        }
    }

    /// Records generation `n` seen at `now`, with room for `room` events
    /// more, and the mixed period's end when it lasts.
    fn see_generation(&self, prefix: &str, n: i64, room: i64, now: i64, mixed: Option<i64>) {
        if let Ok(mut seen) = self.trail_generation.lock() {
            let mut fresh = Seen::new(n, room, now);
            fresh.mixed_until = mixed;
            match seen.iter_mut().find(|(p, _)| p == prefix) {
                Some((_, held)) => *held = fresh,
                None => seen.push((prefix.to_owned(), fresh)),
            }
        }
    }

    /// Marks the nonce `key` done for `ttl` with `note`'s facts in the same
    /// pipelined round trip (written first, so a copy of the event that
    /// finds it done finds its trail too), into the generation this replica
    /// last saw: three commands. Every `CHECK_EVERY` commits, and on the
    /// first after `CHECK_AFTER_MS`, the same round trip also reads the
    /// index's size and the current and oldest generations: when the
    /// generation is full this commit starts the next one, and when it was
    /// not one readers look at (removed meanwhile) it removes what it wrote
    /// there and leaves the facts to the writer task, as it does appending
    /// to an event already held. Where one round trip cannot carry both
    /// writes (a cluster: the trail's keys have their own slot; a
    /// replicated write: its `WAIT` runs on a lane) the whole note goes to
    /// the writer task, queued before the commit is sent.
    pub async fn commit_noting(&self, key: &str, ttl: Duration, note: Note) -> Result<(), Error> {
        let at = received_at(&note);
        let Some(at) = at.filter(|_| self.carries_trail()) else {
            // Queued first: a copy that finds the event done notes its
            // duplicate behind these facts.
            self.trail_note(note);
            return self.commit(key, ttl).await;
        };
        let prefix = note.prefix.as_str();
        let m = member(&note.source, &note.event_id);
        let size = generations(note.max).1;
        let path = self.seen_generation(prefix, at);
        if matches!(path, Path::Unknown) {
            // Never a round trip before the commit: its command must be on
            // the connection when the caller answers. These facts go to the
            // writer task, whose write says where the trail stands
            // ([`RedisStore::see_from_writer`]); until it does (at most
            // [`LOOK_FOR_MS`]), so do the next commits' facts.
            self.see_generation(prefix, 0, 1, at, Some(at.saturating_add(LOOK_FOR_MS)));
        }
        let Path::Commit {
            generation: n,
            look: check,
        } = path
        else {
            // The mixed period (or the trail's state unknown): the writer
            // task decides where the facts go, queued before the commit.
            self.trail_note(note);
            return self.commit(key, ttl).await;
        };
        let mut pipe = redis::Pipeline::with_capacity(8);
        let (facts, index) = (facts_key(prefix, n), index_key(prefix, n));
        let lines = lines_of(&note.facts);
        // Each command sized once: the facts are most of the round trip's
        // bytes. No reply is `ignore`d (that costs a hash set per
        // pipeline): an error reply of any command fails the whole query.
        let mut hsetnx = redis::Cmd::with_capacity(4, 6 + facts.len() + m.len() + lines.len());
        hsetnx.arg("HSETNX").arg(facts).arg(&m).arg(lines);
        pipe.add_command(hsetnx);
        let mut zadd = redis::Cmd::with_capacity(5, 30 + index.len() + m.len());
        zadd.arg("ZADD").arg(&index).arg("NX").arg(at).arg(&m);
        pipe.add_command(zadd);
        let mut set = redis::Cmd::with_capacity(5, 32 + key.len());
        set.arg("SET")
            .arg(key)
            .arg("done")
            .arg("PX")
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        pipe.add_command(set);
        if !check {
            let (added, _, _): (bool, redis::Value, redis::Value) =
                self.query_pipeline(&pipe).await?;
            if !added {
                // Held already: appended in order by the writer.
                self.trail_note(note);
            }
            return Ok(());
        }
        pipe.cmd("ZCARD").arg(index);
        pipe.cmd("GET").arg(generation_key(prefix));
        pipe.cmd("GET").arg(oldest_key(prefix));
        pipe.cmd("EXISTS").arg(earlier_keys(prefix).0);
        pipe.cmd("GET").arg(upgraded_key(prefix));
        type Looked = (
            bool,
            redis::Value,
            redis::Value,
            i64,
            Option<i64>,
            Option<i64>,
            bool,
            Option<i64>,
        );
        let (added, _, _, held, current, oldest, earlier, upgraded): Looked =
            self.query_pipeline(&pipe).await?;
        let (current, oldest) = (current.unwrap_or(0), oldest.unwrap_or(-1));
        // Room known only in the generation this commit wrote to.
        let room = if n == current { size - held } else { 1 };
        // An earlier version's index that appeared since the last look
        // starts the mixed period here: this commit's record stays in its
        // generation, where that version does not look.
        let mixed = mixed_until(earlier, upgraded, at);
        self.see_generation(prefix, current, room, at, mixed);
        if n > current || n < oldest {
            if let Err(e) = self.trail_drop(prefix, n).await {
                tracing::debug!(error = %e, "trail: removing a stray generation failed");
            }
            self.trail_note(note);
        } else if !added {
            self.trail_note(note);
        } else if n == current && held >= size {
            self.trail_roll(prefix, n, note.max).await;
        }
        Ok(())
    }

    /// Starts the generation after `n` when `n` is current and full
    /// ([`ROLL`]); removes the earlier versions' keys when it is their turn.
    async fn trail_roll(&self, prefix: &str, n: i64, max: usize) {
        let (kept, size) = generations(max);
        let keys = [generation_key(prefix), oldest_key(prefix)];
        let args = [
            base(prefix),
            size.to_string(),
            kept.to_string(),
            crate::time::now_ms().to_string(),
            GRACE_MS.to_string(),
            n.to_string(),
        ];
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let args: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
        match self.eval::<(i64, i64)>(&ROLL, &keys, &args).await {
            Ok((current, retired)) => {
                let room = if current == n + 1 { size } else { 1 };
                self.see_generation(prefix, current, room, crate::time::now_ms(), None);
                if retired == 1 {
                    self.spawn_retire(prefix);
                }
            }
            Err(e) => tracing::debug!(error = %e, "trail: starting a generation failed"),
        }
    }

    /// Removes generation `n` unless readers look at it ([`DROP`]).
    async fn trail_drop(&self, prefix: &str, n: i64) -> Result<(), Error> {
        let keys = [generation_key(prefix), oldest_key(prefix)];
        let args = [base(prefix), n.to_string()];
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let args: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
        let _: i64 = self.eval(&DROP, &keys, &args).await?;
        Ok(())
    }

    /// Removes the earlier versions' keys, lists included, in round trips
    /// of [`RETIRE_BATCH`] members, off the request's path.
    fn spawn_retire(&self, prefix: &str) {
        let store = self.clone();
        let prefix = prefix.to_owned();
        tokio::spawn(async move {
            if let Err(e) = store.trail_retire(&prefix).await {
                tracing::debug!(error = %e, "trail: removing the earlier layout failed");
            }
        });
    }

    async fn trail_retire(&self, prefix: &str) -> Result<(), Error> {
        let (index, facts, lists) = earlier_keys(prefix);
        let held: isize = self.query(redis::cmd("ZCARD").arg(&index)).await?;
        // Bounded by what the index held when this started.
        for _ in 0..=held / RETIRE_BATCH {
            let members: Vec<String> = self
                .query(
                    redis::cmd("ZRANGE")
                        .arg(&index)
                        .arg(0)
                        .arg(RETIRE_BATCH - 1),
                )
                .await?;
            if members.is_empty() {
                break;
            }
            let mut pipe = redis::pipe();
            let unlink = pipe.cmd("UNLINK");
            for m in &members {
                unlink.arg(format!("{lists}{m}"));
            }
            pipe.ignore();
            pipe.cmd("HDEL").arg(&facts).arg(&members).ignore();
            pipe.cmd("ZREM").arg(&index).arg(&members).ignore();
            let () = self.query_pipeline(&pipe).await?;
        }
        let _: i64 = self
            .query(
                redis::cmd("UNLINK")
                    .arg(&index)
                    .arg(&facts)
                    .arg(upgraded_key(prefix)),
            )
            .await?;
        Ok(())
    }

    /// Writes `batch` in order: one call of [`WRITE`] per run of notes that
    /// share a prefix and a bound (a note without facts only starts the
    /// next generation when the current one is full); then folds the events
    /// it found too long.
    async fn trail_batch(&self, batch: &[Note]) -> Result<(), Error> {
        let now = crate::time::now_ms();
        let mut pipe = redis::pipe();
        let mut run: Option<redis::Cmd> = None;
        let mut run_of: Option<(&str, usize)> = None;
        let mut prefixes: Vec<&str> = Vec::new();
        for note in batch {
            let this = (note.prefix.as_str(), note.max);
            if run_of != Some(this) {
                if let Some(cmd) = run.take() {
                    pipe.add_command(cmd);
                }
                let (kept, size) = generations(note.max);
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(WRITE.get_hash())
                    .arg(2)
                    .arg(generation_key(&note.prefix))
                    .arg(oldest_key(&note.prefix))
                    .arg(base(&note.prefix))
                    .arg(size)
                    .arg(kept)
                    .arg(now)
                    .arg(GRACE_MS)
                    .arg(crate::trail::COMPACT_BYTES)
                    .arg(note.max);
                run = Some(cmd);
                run_of = Some(this);
                prefixes.push(&note.prefix);
            }
            if note.facts.is_empty() {
                continue;
            }
            if let Some(cmd) = run.as_mut() {
                cmd.arg(received_at(note).map_or(String::new(), |at| at.to_string()))
                    .arg(member(&note.source, &note.event_id))
                    .arg(lines_of(&note.facts));
            }
        }
        if let Some(cmd) = run.take() {
            pipe.add_command(cmd);
        }
        let written: Vec<(Vec<String>, i64, u64, i64, i64)> = match self.query_pipeline(&pipe).await
        {
            Err(e) if e.to_string().to_ascii_lowercase().contains("noscript") => {
                let _: String = self
                    .query(redis::cmd("SCRIPT").arg("LOAD").arg(WRITE_SOURCE.as_str()))
                    .await?;
                self.query_pipeline(&pipe).await?
            }
            other => other?,
        };
        for (prefix, (long, retired, dropped, current, until)) in prefixes.into_iter().zip(written)
        {
            self.see_from_writer(prefix, current, (until >= 0).then_some(until), now);
            for pair in long.chunks_exact(2) {
                self.trail_compact(&pair[0], &pair[1]).await?;
            }
            if retired == 1 {
                self.spawn_retire(prefix);
            }
            self.trail_dropped(Dropped::NoRecord, dropped);
        }
        Ok(())
    }

    /// Folds one event's facts in the hash `key` into one `summary` line,
    /// unless another replica appended in between.
    async fn trail_compact(&self, key: &str, m: &str) -> Result<(), Error> {
        let text: Option<String> = self.query(redis::cmd("HGET").arg(key).arg(m)).await?;
        let Some(folded) = text.as_deref().and_then(crate::trail::compact) else {
            return Ok(());
        };
        let Some(text) = text else { return Ok(()) };
        let args: [&[u8]; 3] = [m.as_bytes(), text.as_bytes(), folded.as_bytes()];
        let _: i64 = self.eval(&COMPACT, &[key], &args).await?;
        Ok(())
    }

    /// Appends one event's facts and waits for the write.
    pub async fn trail_append(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
        facts: &[Fact],
        max: usize,
    ) -> Result<(), Error> {
        let item = Note {
            prefix: prefix.to_owned(),
            source: source.to_owned(),
            event_id: event_id.to_owned(),
            facts: facts.to_vec(),
            max,
        };
        self.trail_batch(std::slice::from_ref(&item)).await
    }
}

#[cfg(test)]
mod seen_tests {
    use super::{CHECK_AFTER_MS, CHECK_EVERY, GRACE_MS, Seen, mixed_until};

    #[test]
    fn the_mixed_period_lasts_while_the_earlier_index_exists_and_the_grace_runs() {
        let now = 10 * GRACE_MS;
        assert_eq!(mixed_until(false, Some(now), now), None, "no earlier index");
        assert_eq!(
            mixed_until(true, None, now),
            Some(now + GRACE_MS),
            "first sight: the grace starts now"
        );
        assert_eq!(
            mixed_until(true, Some(now - 1), now),
            Some(now - 1 + GRACE_MS)
        );
        assert_eq!(mixed_until(true, Some(now - GRACE_MS), now), None, "over");
    }

    /// How many of `commits` commits at time 0 read where the trail stands.
    fn looks(seen: &mut Seen, commits: u32) -> u32 {
        (0..commits).map(|_| u32::from(seen.due(0))).sum()
    }

    #[test]
    fn commits_sent_while_a_look_is_in_flight_do_not_each_look_again() {
        let mut seen = Seen::new(0, 1_000, 0);
        assert_eq!(looks(&mut seen, CHECK_EVERY - 1), 0);
        assert!(seen.due(0), "the commit that reaches CHECK_EVERY looks");
        // No answer yet: 64 requests open send their commits meanwhile.
        assert_eq!(looks(&mut seen, CHECK_EVERY - 1), 0);
        assert!(seen.due(0));
        assert_eq!(looks(&mut seen, 10 * CHECK_EVERY), 10);
    }

    #[test]
    fn a_generation_with_little_room_is_looked_at_as_it_fills() {
        let mut seen = Seen::new(3, 1, 0);
        assert_eq!(looks(&mut seen, 5), 5, "room for one: every commit looks");
        let mut seen = Seen::new(3, 5, 0);
        assert_eq!(looks(&mut seen, 20), 4);
    }

    #[test]
    fn a_quiet_replica_looks_once_the_time_is_up_and_not_on_every_commit_after() {
        let mut seen = Seen::new(0, 1_000, 0);
        assert!(!seen.due(CHECK_AFTER_MS - 1));
        assert!(seen.due(CHECK_AFTER_MS));
        assert!(!seen.due(CHECK_AFTER_MS + 1));
        assert!(!seen.due(2 * CHECK_AFTER_MS - 1));
        assert!(seen.due(2 * CHECK_AFTER_MS));
    }
}
