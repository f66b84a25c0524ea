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

/// KEYS[1] = the event's list, KEYS[2] = the index. ARGV[1] = received ms
/// (empty when no `Received` fact is appended), ARGV[2] = the index member,
/// ARGV[3] = the bound, ARGV[4] = ttl ms, ARGV[5] = the list key prefix of
/// trimmed members, ARGV[6..] = facts. An event not held yet is taken only
/// from a `Received` fact.
const APPEND_LUA: &str = r"
if ARGV[1] == '' and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 6, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[2], 'NX', ARGV[1], ARGV[2])
  local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
  if over > 0 then
    local old = redis.call('ZPOPMIN', KEYS[2], over)
    for j = 1, #old, 2 do redis.call('DEL', ARGV[5] .. old[j]) end
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

/// The script's keys and arguments for one item.
fn invocation(item: &Item) -> (String, String, Vec<Vec<u8>>) {
    let received = item
        .facts
        .iter()
        .find_map(|f| match f {
            Fact::Received { at, .. } => Some(at.to_string()),
            _ => None,
        })
        .unwrap_or_default();
    let m = member(&item.source, &item.event_id);
    let list = format!("{}{m}", list_prefix(&item.prefix));
    let mut args: Vec<Vec<u8>> = vec![
        received.into_bytes(),
        m.into_bytes(),
        item.max.to_string().into_bytes(),
        TTL.as_millis().to_string().into_bytes(),
        list_prefix(&item.prefix).into_bytes(),
    ];
    args.extend(item.facts.iter().filter_map(|f| serde_json::to_vec(f).ok()));
    (list, index_key(&item.prefix), args)
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

    /// Writes `batch` in one pipelined round trip, in order; the script is
    /// loaded first when the server does not know it.
    async fn trail_batch(&self, batch: &[Item]) -> Result<(), Error> {
        let calls: Vec<_> = batch.iter().map(invocation).collect();
        let mut pipe = redis::pipe();
        for (list, index, args) in &calls {
            let cmd = pipe
                .cmd("EVALSHA")
                .arg(APPEND.get_hash())
                .arg(2)
                .arg(list)
                .arg(index);
            for a in args {
                cmd.arg(a.as_slice());
            }
        }
        match self.query_pipeline::<redis::Value>(&pipe).await {
            Err(e) if e.to_string().contains("NOSCRIPT") => {
                let _: String = self
                    .query(redis::cmd("SCRIPT").arg("LOAD").arg(APPEND_LUA))
                    .await?;
                self.query_pipeline::<redis::Value>(&pipe).await.map(|_| ())
            }
            other => other.map(|_| ()),
        }
    }

    pub async fn trail_append(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
        facts: &[Fact],
        max: usize,
    ) -> Result<(), Error> {
        let received = facts
            .iter()
            .find_map(|f| match f {
                Fact::Received { at, .. } => Some(at.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        let m = member(source, event_id);
        let list = format!("{}{m}", list_prefix(prefix));
        let ttl = TTL.as_millis().to_string();
        let max = max.to_string();
        let lp = list_prefix(prefix);
        let encoded: Vec<Vec<u8>> = facts
            .iter()
            .filter_map(|f| serde_json::to_vec(f).ok())
            .collect();
        let mut args: Vec<&[u8]> = vec![
            received.as_bytes(),
            m.as_bytes(),
            max.as_bytes(),
            ttl.as_bytes(),
            lp.as_bytes(),
        ];
        args.extend(encoded.iter().map(Vec::as_slice));
        let _: i64 = self
            .eval(&APPEND, &[&list, &index_key(prefix)], &args)
            .await?;
        Ok(())
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
