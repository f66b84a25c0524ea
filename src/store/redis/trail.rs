//! The trail on Redis (DESIGN §7a), shared by every replica.
//!
//! - `{prefix}:{trail}:{source}:{event_id}`: a list of the event's facts
//!   (JSON), expiring [`TTL`] after its last fact;
//! - `{prefix}:{trail}`: a sorted set of `{source}:{event_id}` scored by the
//!   time the event was received, trimmed to `trail_max_events`.
//!
//! All of it shares the `{trail}` hash tag: one Cluster slot, so one
//! pipeline carries the writes of many events, and the trim (a script) sees
//! the index and the lists together.
//!
//! Facts a process notes go through one queue and one task that writes them
//! in the order they were noted, as many as have queued up in one pipelined
//! round trip of plain commands (`RPUSH`/`RPUSHX`, `PEXPIRE`, `ZADD NX`, one
//! `ZCARD` per index): an event's facts never overtake each other. Only a
//! round trip that finds the index over its bound runs the trim script.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;
use tokio::sync::mpsc;

use super::RedisStore;
use crate::store::{Error, Note};
use crate::trail::{Cursor, Fact, Stored};

/// How long an event's facts outlive its last one, whatever the bound.
pub const TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Trims the index to ARGV[1] members: the oldest go, and their lists.
/// KEYS[1] = the index, ARGV[2] = the list key prefix. Run only when a
/// batch's `ZCARD` shows the index over the bound.
const TRIM_LUA: &str = r"
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for j = 1, #old, 2 do redis.call('DEL', ARGV[2] .. old[j]) end
end
return 1
";
static TRIM: LazyLock<Script> = LazyLock::new(|| Script::new(TRIM_LUA));

/// Facts waiting for the writer task at most; beyond it a fact is dropped
/// (logged at debug level), never waited for.
const QUEUE: usize = 65_536;
/// Facts one pipelined round trip carries at most.
const BATCH: usize = 256;

/// Adds `item`'s writes to `pipe`, their answers ignored: its facts
/// appended to its list (`RPUSHX`, which appends only to a list that
/// exists, unless a `Received` fact comes with them: an event not held yet
/// is taken only from that fact), the list's expiry moved, and with a
/// `Received` fact the event indexed (`ZADD NX`). Returns whether it indexed.
fn push_item(pipe: &mut redis::Pipeline, item: &Note) -> bool {
    let received = item.facts.iter().find_map(|f| match f {
        Fact::Received { at, .. } => Some(*at),
        _ => None,
    });
    let facts: Vec<Vec<u8>> = item
        .facts
        .iter()
        .filter_map(|f| serde_json::to_vec(f).ok())
        .collect();
    if facts.is_empty() {
        return false;
    }
    let m = member(&item.source, &item.event_id);
    let list = format!("{}{m}", list_prefix(&item.prefix));
    pipe.cmd(if received.is_some() {
        "RPUSH"
    } else {
        "RPUSHX"
    })
    .arg(&list)
    .arg(facts)
    .ignore();
    pipe.cmd("PEXPIRE")
        .arg(&list)
        .arg(TTL.as_millis() as u64)
        .ignore();
    if let Some(at) = received {
        pipe.cmd("ZADD")
            .arg(index_key(&item.prefix))
            .arg("NX")
            .arg(at)
            .arg(m)
            .ignore();
    }
    received.is_some()
}

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

fn list_prefix(prefix: &str) -> String {
    format!("{prefix}:{{trail}}:")
}

fn member(source: &str, event_id: &str) -> String {
    format!("{source}:{event_id}")
}

fn parse_facts(items: &[Vec<u8>]) -> Vec<Fact> {
    items
        .iter()
        .filter_map(|f| serde_json::from_slice(f).ok())
        .collect()
}

impl RedisStore {
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
    /// finds it done finds its trail too), then trims the index if that
    /// round trip found it over its bound. Where one round trip cannot
    /// carry both (a cluster: the trail's keys have their own slot; a
    /// replicated write: its `WAIT` runs on a lane) the note goes to the
    /// ordered trail writer after the commit.
    pub async fn commit_noting(&self, key: &str, ttl: Duration, note: Note) -> Result<(), Error> {
        if !self.carries_trail() {
            let done = self.commit(key, ttl).await;
            self.trail_note(note);
            return done;
        }
        let mut pipe = redis::pipe();
        let indexed = push_item(&mut pipe, &note);
        pipe.cmd("SET")
            .arg(key)
            .arg("done")
            .arg("PX")
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .ignore();
        if indexed {
            pipe.cmd("ZCARD").arg(index_key(&note.prefix));
        }
        let held: Vec<usize> = self.query_pipeline(&pipe).await?;
        if let Some(&held) = held.first()
            && held > note.max
            && let Err(e) = self.trail_trim(&note.prefix, note.max).await
        {
            tracing::debug!(error = %e, "trail trim failed");
        }
        Ok(())
    }

    /// Writes `batch` in one round trip, in order, then trims each index
    /// it grew that went over its bound (a second call, only then).
    async fn trail_batch(&self, batch: &[Note]) -> Result<(), Error> {
        let mut pipe = redis::pipe();
        // The indexes grown, with their bounds, in the order of their ZCARDs.
        let mut grown: Vec<(&str, usize)> = Vec::new();
        for item in batch {
            if push_item(&mut pipe, item) && !grown.contains(&(item.prefix.as_str(), item.max)) {
                grown.push((item.prefix.as_str(), item.max));
            }
        }
        for (prefix, _) in &grown {
            pipe.cmd("ZCARD").arg(index_key(prefix));
        }
        let held: Vec<usize> = self.query_pipeline(&pipe).await?;
        for ((prefix, max), held) in grown.into_iter().zip(held) {
            if held > max {
                self.trail_trim(prefix, max).await?;
            }
        }
        Ok(())
    }

    /// Runs [`TRIM_LUA`] on `prefix`'s index.
    async fn trail_trim(&self, prefix: &str, max: usize) -> Result<(), Error> {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(TRIM.get_hash())
            .arg(1)
            .arg(index_key(prefix))
            .arg(max)
            .arg(list_prefix(prefix));
        match self.query::<redis::Value>(&cmd).await {
            Err(e) if e.to_string().to_ascii_lowercase().contains("noscript") => {
                let _: String = self
                    .query(redis::cmd("SCRIPT").arg("LOAD").arg(TRIM_LUA))
                    .await?;
                self.query::<redis::Value>(&cmd).await.map(drop)
            }
            other => other.map(drop),
        }
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
    ) -> Result<Option<Vec<Fact>>, Error> {
        let list = format!("{}{}", list_prefix(prefix), member(source, event_id));
        let items: Vec<Vec<u8>> = self
            .query(redis::cmd("LRANGE").arg(&list).arg(0).arg(-1))
            .await?;
        Ok((!items.is_empty()).then(|| parse_facts(&items)))
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
                let mut pipe = redis::pipe();
                for (m, _) in &wanted {
                    pipe.cmd("LRANGE")
                        .arg(format!("{}{m}", list_prefix(prefix)))
                        .arg(0)
                        .arg(-1);
                }
                let lists: Vec<Vec<Vec<u8>>> = self.query_pipeline(&pipe).await?;
                for ((m, score), items) in wanted.into_iter().zip(lists) {
                    if items.is_empty() || out.len() >= count {
                        continue;
                    }
                    let Some((source, event_id)) = m.split_once(':') else {
                        continue;
                    };
                    out.push(Stored {
                        source: source.to_owned(),
                        event_id: event_id.to_owned(),
                        received_ms: score,
                        facts: parse_facts(&items),
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
