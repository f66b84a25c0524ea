//! The trail on Redis (DESIGN §7a), shared by every replica.
//!
//! - `{prefix}:{trail}:{source}:{event_id}`: a list of the event's facts
//!   (JSON), expiring [`TTL`] after its last fact;
//! - `{prefix}:{trail}`: a sorted set of `{source}:{event_id}` scored by the
//!   time the event was received, trimmed to `trail_max_events`.
//!
//! All of it shares the `{trail}` hash tag: one Cluster slot, so one script
//! appends a fact, indexes a new event and trims the oldest at once.
//!
//! Facts a process notes go through one queue and one task that writes them
//! in the order they were noted, as many as have queued up in one pipelined
//! round trip: an event's facts never overtake each other.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;
use tokio::sync::mpsc;

use super::RedisStore;
use crate::store::Error;
use crate::trail::{Cursor, Fact, Stored};

/// How long an event's facts outlive its last one, whatever the bound.
pub const TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Appends the facts of several events in one call. KEYS[1] = the index,
/// KEYS[1 + i] = event i's list. ARGV[1] = the bound, ARGV[2] = ttl ms,
/// ARGV[3] = the list key prefix (for trimmed members), then per event:
/// received ms (empty when no `Received` fact is appended), the index
/// member, the number of facts, the facts. An event not held yet is taken
/// only from a `Received` fact; the oldest events beyond the bound go, once
/// per call.
const APPEND_LUA: &str = r"
local a = 4
local added = false
for k = 2, #KEYS do
  local received, member, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  a = a + 3
  if received ~= '' or redis.call('EXISTS', KEYS[k]) == 1 then
    if n > 0 then redis.call('RPUSH', KEYS[k], unpack(ARGV, a, a + n - 1)) end
    redis.call('PEXPIRE', KEYS[k], ARGV[2])
    if received ~= '' then
      redis.call('ZADD', KEYS[1], 'NX', received, member)
      added = true
    end
  end
  a = a + n
end
if added then
  local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
  if over > 0 then
    local old = redis.call('ZPOPMIN', KEYS[1], over)
    for j = 1, #old, 2 do redis.call('DEL', ARGV[3] .. old[j]) end
  end
end
return 1
";
static APPEND: LazyLock<Script> = LazyLock::new(|| Script::new(APPEND_LUA));

/// Facts waiting for the writer task at most; beyond it a fact is dropped
/// (logged at debug level), never waited for.
const QUEUE: usize = 65_536;
/// Facts one pipelined round trip carries at most.
const BATCH: usize = 256;

/// One note of facts for the writer task.
pub struct Item {
    pub prefix: String,
    pub source: String,
    pub event_id: String,
    pub facts: Vec<Fact>,
    pub max: usize,
}

/// The script's keys and arguments for items of one prefix and bound.
fn invocation(items: &[&Item]) -> (Vec<String>, Vec<Vec<u8>>) {
    let Some(first) = items.first() else {
        return (Vec::new(), Vec::new());
    };
    let mut keys = vec![index_key(&first.prefix)];
    let mut args: Vec<Vec<u8>> = vec![
        first.max.to_string().into_bytes(),
        TTL.as_millis().to_string().into_bytes(),
        list_prefix(&first.prefix).into_bytes(),
    ];
    for item in items {
        let received = item
            .facts
            .iter()
            .find_map(|f| match f {
                Fact::Received { at, .. } => Some(at.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        let m = member(&item.source, &item.event_id);
        keys.push(format!("{}{m}", list_prefix(&item.prefix)));
        let facts: Vec<Vec<u8>> = item
            .facts
            .iter()
            .filter_map(|f| serde_json::to_vec(f).ok())
            .collect();
        args.push(received.into_bytes());
        args.push(m.into_bytes());
        args.push(facts.len().to_string().into_bytes());
        args.extend(facts);
    }
    (keys, args)
}

/// Writes what the queue holds, in order, until every sender is gone.
async fn drain(store: RedisStore, mut queue: mpsc::Receiver<Item>) {
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
    pub fn trail_note(&self, item: Item) {
        let queue = self.trail_queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(drain(self.clone(), rx));
            tx
        });
        if queue.try_send(item).is_err() {
            tracing::debug!("trail queue full: a fact was dropped");
        }
    }

    /// Writes `batch` in one round trip, in order: one script call per run
    /// of items with the same prefix and bound (one call, unless a reload
    /// changed them).
    async fn trail_batch(&self, batch: &[Item]) -> Result<(), Error> {
        let mut pipe = redis::pipe();
        let mut start = 0;
        while start < batch.len() {
            let same = |i: &Item| i.prefix == batch[start].prefix && i.max == batch[start].max;
            let end = batch[start..]
                .iter()
                .position(|i| !same(i))
                .map_or(batch.len(), |n| start + n);
            let run: Vec<&Item> = batch[start..end].iter().collect();
            let (keys, args) = invocation(&run);
            let cmd = pipe.cmd("EVALSHA").arg(APPEND.get_hash()).arg(keys.len());
            for k in &keys {
                cmd.arg(k);
            }
            for a in &args {
                cmd.arg(a.as_slice());
            }
            start = end;
        }
        match self.query_pipeline::<redis::Value>(&pipe).await {
            Err(e) if e.to_string().to_ascii_lowercase().contains("noscript") => {
                let _: String = self
                    .query(redis::cmd("SCRIPT").arg("LOAD").arg(APPEND_LUA))
                    .await?;
                self.query_pipeline::<redis::Value>(&pipe).await.map(|_| ())
            }
            other => other.map(|_| ()),
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
        let item = Item {
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
