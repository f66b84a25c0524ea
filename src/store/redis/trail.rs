//! The trail on Redis (DESIGN §7a), shared by every replica.
//!
//! - `{prefix}:{trail}:{source}:{event_id}`: a list of the event's facts
//!   (JSON), expiring [`TTL`] after its last fact;
//! - `{prefix}:{trail}`: a sorted set of `{source}:{event_id}` scored by the
//!   time the event was received, trimmed to `trail_max_events`.
//!
//! All of it shares the `{trail}` hash tag: one Cluster slot, so one script
//! appends a fact, indexes a new event and trims the oldest at once.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

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
static APPEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
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
",
    )
});

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
