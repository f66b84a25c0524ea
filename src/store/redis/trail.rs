//! The trail on Redis (DESIGN §7a), shared by every replica.
//!
//! - `{prefix}:{trail}:facts`: a hash from `{source}:{event_id}` to the
//!   event's facts, one JSON line each ([`crate::trail::lines_of`]);
//! - `{prefix}:{trail}`: a sorted set of the same members scored by the
//!   time the event was received, trimmed to `trail_max_events` (a member
//!   trimmed takes its facts with it).
//!
//! Both share the `{trail}` hash tag: one Cluster slot, so one script
//! sees the index and the facts together. An event costs Redis one hash
//! field and one index member: no key, no expiry of its own (the bound is
//! the index's). Earlier versions kept an event's facts in a list of its
//! own, `{prefix}:{trail}:{source}:{event_id}`, expiring 30 days after its
//! last fact; those are still read, and trimmed with their member.
//!
//! Two ways in:
//! - a nonce commit on one node carries the event's facts in its own
//!   pipelined round trip ([`RedisStore::commit_noting`]): `HSETNX` of the
//!   facts and `ZADD NX` of the member before the commit's `SET`, and a
//!   `ZCARD`; an event already held (a sender's retry after a release)
//!   and an index over its bound are left to the writer task;
//! - every other note goes through one queue and one task that writes
//!   them in the order they were noted, as many as have queued up in one
//!   call of [`WRITE_LUA`] (appends, index, trim): an event's facts never
//!   overtake each other.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;
use tokio::sync::mpsc;

use super::RedisStore;
use crate::store::{Error, Note};
use crate::trail::{Cursor, Fact, Stored, facts_of, lines_of};

/// Appends facts, indexes new events and trims the index, for a batch of
/// notes in order. KEYS[1] = the index, KEYS[2] = the facts hash; ARGV[1]
/// = the bound, ARGV[2] = the prefix of the lists of earlier versions,
/// ARGV[3] = [`crate::trail::COMPACT_BYTES`], then per note: the received
/// time (`""` for a note without a `Received` fact: appended only to an
/// event already held), the member, the lines. Returns the members whose
/// facts grew past ARGV[3], for the writer to fold ([`COMPACT_LUA`]).
const WRITE_LUA: &str = r"
local held
local long = {}
local limit = tonumber(ARGV[3])
for i = 4, #ARGV, 3 do
  local at, m, lines = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if at ~= '' then
    if redis.call('HSETNX', KEYS[2], m, lines) == 0 then
      held = redis.call('HGET', KEYS[2], m) .. lines
      redis.call('HSET', KEYS[2], m, held)
      if #held > limit then long[#long + 1] = m end
    end
    redis.call('ZADD', KEYS[1], 'NX', at, m)
  else
    held = redis.call('HGET', KEYS[2], m)
    if held then
      held = held .. lines
      redis.call('HSET', KEYS[2], m, held)
      if #held > limit then long[#long + 1] = m end
    end
  end
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for j = 1, #old, 2 do
    redis.call('HDEL', KEYS[2], old[j])
    redis.call('DEL', ARGV[2] .. old[j])
  end
end
return long
";
static WRITE: LazyLock<Script> = LazyLock::new(|| Script::new(WRITE_LUA));

/// Replaces an event's facts with their fold, unless they changed since
/// they were read (another replica appended: its own write asks for a fold
/// again). KEYS[1] = the facts hash; ARGV = the member, the text read, the
/// folded text.
const COMPACT_LUA: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
";
static COMPACT: LazyLock<Script> = LazyLock::new(|| Script::new(COMPACT_LUA));

/// Facts waiting for the writer task at most; beyond it a fact is dropped
/// (logged at debug level), never waited for.
const QUEUE: usize = 65_536;
/// Notes one call of [`WRITE_LUA`] carries at most.
const BATCH: usize = 256;

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
        }
    }
}

fn index_key(prefix: &str) -> String {
    format!("{prefix}:{{trail}}")
}

fn facts_key(prefix: &str) -> String {
    format!("{prefix}:{{trail}}:facts")
}

/// The prefix of an earlier version's per-event lists.
fn list_prefix(prefix: &str) -> String {
    format!("{prefix}:{{trail}}:")
}

fn member(source: &str, event_id: &str) -> String {
    format!("{source}:{event_id}")
}

/// When `note` carries a `Received` fact, its time.
fn received_at(note: &Note) -> Option<i64> {
    note.facts.iter().find_map(|f| match f {
        Fact::Received { at, .. } => Some(*at),
        _ => None,
    })
}

/// An event's facts from the hash, or else from an earlier version's list.
fn facts_from(hashed: Option<String>, listed: &[String]) -> Option<Vec<Fact>> {
    match hashed {
        Some(text) => Some(facts_of(&text)),
        None if !listed.is_empty() => Some(listed.iter().flat_map(|l| facts_of(l)).collect()),
        None => None,
    }
}

impl RedisStore {
    /// Counts one duplicate in the tally (written once per flush through
    /// the writer task), or queues it on its own when the tally is full.
    pub fn trail_duplicate(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
        max: usize,
        now: i64,
    ) {
        let writer = || {
            let store = self.clone();
            move |note: Note| {
                store.trail_note(note);
                true
            }
        };
        let key = (prefix, source, event_id);
        if let Some(note) = self.tally.count(key, max, now, writer) {
            self.trail_note(note);
        }
    }

    /// The duplicates counted and not yet written.
    pub fn tally(&self) -> &crate::trail::tally::Tally {
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
            tracing::debug!("trail queue full: a fact was dropped");
        }
    }

    /// Marks the nonce `key` done for `ttl` with `note`'s facts in the same
    /// pipelined round trip (written first, so a copy of the event that
    /// finds it done finds its trail too). What that round trip cannot do
    /// goes to the writer task: appending to an event already held, and
    /// trimming an index it found over its bound. Where one round trip
    /// cannot carry both writes (a cluster: the trail's keys have their
    /// own slot; a replicated write: its `WAIT` runs on a lane) the whole
    /// note goes to the writer task, queued before the commit is sent.
    pub async fn commit_noting(&self, key: &str, ttl: Duration, note: Note) -> Result<(), Error> {
        let at = received_at(&note);
        let Some(at) = at.filter(|_| self.carries_trail()) else {
            // Queued first: a copy that finds the event done notes its
            // duplicate behind these facts.
            self.trail_note(note);
            return self.commit(key, ttl).await;
        };
        let m = member(&note.source, &note.event_id);
        let mut pipe = redis::pipe();
        pipe.cmd("HSETNX")
            .arg(facts_key(&note.prefix))
            .arg(&m)
            .arg(lines_of(&note.facts));
        pipe.cmd("ZADD")
            .arg(index_key(&note.prefix))
            .arg("NX")
            .arg(at)
            .arg(&m)
            .ignore();
        pipe.cmd("SET")
            .arg(key)
            .arg("done")
            .arg("PX")
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .ignore();
        pipe.cmd("ZCARD").arg(index_key(&note.prefix));
        let (added, held): (bool, usize) = self.query_pipeline(&pipe).await?;
        if !added {
            // Held already: appended in order by the writer.
            self.trail_note(note);
        } else if held > note.max {
            // An empty note: the writer's script trims the index.
            self.trail_note(Note {
                facts: Vec::new(),
                ..note
            });
        }
        Ok(())
    }

    /// Writes `batch` in order: one call of [`WRITE_LUA`] per run of notes
    /// that share a prefix and a bound; then folds the events it found too
    /// long.
    async fn trail_batch(&self, batch: &[Note]) -> Result<(), Error> {
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
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(WRITE.get_hash())
                    .arg(2)
                    .arg(index_key(&note.prefix))
                    .arg(facts_key(&note.prefix))
                    .arg(note.max)
                    .arg(list_prefix(&note.prefix))
                    .arg(crate::trail::COMPACT_BYTES);
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
        let long: Vec<Vec<String>> = match self.query_pipeline(&pipe).await {
            Err(e) if e.to_string().to_ascii_lowercase().contains("noscript") => {
                let _: String = self
                    .query(redis::cmd("SCRIPT").arg("LOAD").arg(WRITE_LUA))
                    .await?;
                self.query_pipeline(&pipe).await?
            }
            other => other?,
        };
        for (prefix, members) in prefixes.into_iter().zip(long) {
            for m in members {
                self.trail_compact(prefix, &m).await?;
            }
        }
        Ok(())
    }

    /// Folds one event's facts into one `summary` line, unless another
    /// replica appended in between.
    async fn trail_compact(&self, prefix: &str, m: &str) -> Result<(), Error> {
        let key = facts_key(prefix);
        let text: Option<String> = self.query(redis::cmd("HGET").arg(&key).arg(m)).await?;
        let Some(folded) = text.as_deref().and_then(crate::trail::compact) else {
            return Ok(());
        };
        let Some(text) = text else { return Ok(()) };
        let args: [&[u8]; 3] = [m.as_bytes(), text.as_bytes(), folded.as_bytes()];
        let _: i64 = self.eval(&COMPACT, &[&key], &args).await?;
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

    pub async fn trail_get(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
    ) -> Result<Option<crate::trail::Summary>, Error> {
        let m = member(source, event_id);
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(facts_key(prefix)).arg(&m);
        pipe.cmd("LRANGE")
            .arg(format!("{}{m}", list_prefix(prefix)))
            .arg(0)
            .arg(-1);
        let (hashed, listed): (Option<String>, Vec<String>) = self.query_pipeline(&pipe).await?;
        Ok(facts_from(hashed, &listed).and_then(crate::trail::Summary::fold))
    }

    /// Up to `count` events received before `before`, newest first. Members
    /// of one millisecond come in reverse order of `source:event_id`.
    pub async fn trail_scan(
        &self,
        prefix: &str,
        before: Option<&Cursor>,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        let max = before.map_or("+inf".to_owned(), |c| c.received_ms.to_string());
        let after = before.map(|c| member(&c.source, &c.event_id));
        let mut out = Vec::new();
        let mut offset = 0usize;
        while out.len() < count {
            let page = count.saturating_sub(out.len()).max(16);
            let mut cmd = redis::cmd("ZREVRANGEBYSCORE");
            cmd.arg(index_key(prefix))
                .arg(&max)
                .arg("-inf")
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(offset)
                .arg(page);
            let members: Vec<(String, f64)> = self.query(&cmd).await?;
            let n = members.len();
            offset += n;
            let wanted: Vec<(String, i64)> = members
                .into_iter()
                .map(|(m, score)| (m, score as i64))
                .filter(|(m, score)| match (&after, before) {
                    (Some(a), Some(c)) if *score == c.received_ms => m < a,
                    _ => true,
                })
                .collect();
            if !wanted.is_empty() {
                let mut hmget = redis::cmd("HMGET");
                hmget.arg(facts_key(prefix));
                for (m, _) in &wanted {
                    hmget.arg(m);
                }
                let hashed: Vec<Option<String>> = self.query(&hmget).await?;
                // Events an earlier version wrote: their lists, in a second
                // round trip, only when there are any.
                let mut pipe = redis::pipe();
                for ((m, _), text) in wanted.iter().zip(&hashed) {
                    if text.is_none() {
                        pipe.cmd("LRANGE")
                            .arg(format!("{}{m}", list_prefix(prefix)))
                            .arg(0)
                            .arg(-1);
                    }
                }
                let mut lists: std::vec::IntoIter<Vec<String>> =
                    if hashed.iter().any(Option::is_none) {
                        self.query_pipeline::<Vec<Vec<String>>>(&pipe)
                            .await?
                            .into_iter()
                    } else {
                        Vec::new().into_iter()
                    };
                for ((m, score), hashed) in wanted.into_iter().zip(hashed) {
                    let listed = match hashed {
                        Some(_) => Vec::new(),
                        None => lists.next().unwrap_or_default(),
                    };
                    let Some(summary) =
                        facts_from(hashed, &listed).and_then(crate::trail::Summary::fold)
                    else {
                        continue;
                    };
                    if out.len() >= count {
                        break;
                    }
                    let Some((source, event_id)) = m.split_once(':') else {
                        continue;
                    };
                    out.push(Stored {
                        source: source.to_owned(),
                        event_id: event_id.to_owned(),
                        received_ms: score,
                        summary,
                    });
                }
            }
            if n < page {
                break;
            }
        }
        Ok(out)
    }
}
