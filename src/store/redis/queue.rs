//! The queue and the dead letters on Redis (DESIGN §6).
//!
//! # Keys (one Redis Cluster slot per source, through the `{source}` hash tag)
//!
//! - `{prefix}:queue:{<source>}`: a stream of envelopes ready to deliver, one
//!   field `e` each. Every replica reads it in the consumer group
//!   [`GROUP`], under a consumer name unique to the process.
//! - `{prefix}:queue:{<source>}:delayed`: a sorted set of envelopes waiting
//!   for a retry, scored by the time (ms, Redis clock) they are due. A small
//!   Lua script moves due members back into the stream, so a waiting retry
//!   holds no consumer and no task.
//! - `{prefix}:queue:{<source>}:settled`: the id of the entry removed last.
//!   Every removal writes it, so every removal reaches the replicas.
//! - `{prefix}:dlq`: the dead-letter stream; an entry id (`1732950000000-0`)
//!   is what `hookgate dlq list` prints.
//! - `{prefix}:fail:{source}:{id}`: consecutive forward failures of an event,
//!   expiring `nonce_ttl` after the last one.
//!
//! A worker reads with `XREADGROUP` (never blocking: the connection is shared
//! with every request). An entry whose worker died stays pending in the
//! group; once idle for longer than its lease another worker takes it over
//! with `XAUTOCLAIM`.
//!
//! # Once through a failover (`min_replicas`)
//!
//! The lease on an entry is what keeps other workers off it, so with
//! `min_replicas` a worker delivers an entry only once its lease is on the
//! replicas: `XREADGROUP` and `XAUTOCLAIM` go with `WAIT`, and entries read
//! when too few replicas acknowledge are left alone (pending, they are taken
//! again after their lease). A delivered entry's removal goes with `WAIT`
//! too, and the worker repeats it, on whichever node is primary by then,
//! until enough replicas acknowledge it or the lease runs out
//! (`crate::queue`). A primary lost after the app's 2xx therefore leaves
//! the promoted replica either without the entry or with it still leased to
//! the worker that is about to remove it.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::Script;
use redis::streams::{
    StreamAutoClaimReply, StreamClaimReply, StreamId, StreamRangeReply, StreamReadReply,
};

use super::{Operation, RedisStore};
use crate::store::keys::{delayed_key, dlq_key, dlq_moved_key, queue_key, settled_key};
use crate::store::{Error, Stored};

/// The consumer group every replica's workers join.
pub const GROUP: &str = "hookgate";
/// How often a worker looks for entries a dead replica left pending.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);
/// Due retries moved back into the stream per round.
const PROMOTE_BATCH: usize = 100;
/// Entries read per `XRANGE` page.
const PAGE: usize = 200;

/// Removes a delivered (or given up) entry. KEYS[1] = stream, KEYS[2] = the
/// source's `settled` key; ARGV[1] = group, ARGV[2] = entry id. The `SET`
/// makes every run a write the replicas receive, also one that finds the
/// entry gone already (see [`settled_key`]).
static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[2])
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

/// Leases again (`XCLAIM`, idle 0) the entries still leased to a consumer,
/// skipping any that another consumer holds now or that are gone. KEYS[1] =
/// stream; ARGV[1] = group, ARGV[2] = consumer, ARGV[3..] = entry ids.
/// Returns the entries, as `XCLAIM` does.
static CONFIRM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local out = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    local c = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i])
    if c[1] then out[#out + 1] = c[1] end
  end
end
return out
",
    )
});

/// Counts one failure. KEYS[1] = fail key; ARGV[1] = ttl in ms. Returns the count.
static FAIL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n
",
    )
});

/// Rewrites a dead letter after a failed replay. KEYS[1] = dlq; ARGV[1] = old
/// id, ARGV[2] = envelope. Returns the new id, or nil when the old entry was
/// already gone (another replay settled it).
static REPLACE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then return false end
return redis.call('XADD', KEYS[1], '*', 'e', ARGV[2])
",
    )
});

/// Removes dead letter ARGV[1], following the ids it moved to when it was
/// written again (at most 8 moves). KEYS[1] = the stream, KEYS[2] = the
/// moved-ids hash. Returns 1 when one was removed.
static REMOVE_DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = ARGV[1]
for _ = 1, 8 do
  if redis.call('XDEL', KEYS[1], id) == 1 then return 1 end
  local moved = redis.call('HGET', KEYS[2], id)
  if not moved then return 0 end
  redis.call('HDEL', KEYS[2], id)
  id = moved
end
return 0
",
    )
});

/// What one worker remembers between rounds on Redis.
#[derive(Debug)]
pub struct Cursor {
    group_ready: bool,
    reclaim_from: String,
    last_reclaim: Option<Instant>,
    /// Entries leased to this worker by a read whose `WAIT` too few replicas
    /// acknowledged: not delivered until a later lease of them is
    /// acknowledged. At most one read's worth.
    unconfirmed: Vec<String>,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor {
            group_ready: false,
            reclaim_from: "0-0".to_owned(),
            last_reclaim: None,
            unconfirmed: Vec::new(),
        }
    }
}

fn ms(d: Duration) -> String {
    u64::try_from(d.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
}

fn stored(s: &StreamId) -> Option<Stored> {
    Some(Stored {
        id: s.id.clone(),
        envelope: s.get::<Vec<u8>>("e").unwrap_or_default(),
    })
}

impl RedisStore {
    /// `XADD` to the source's stream; durable (on `min_replicas` replicas
    /// too) once this returns.
    pub async fn enqueue(
        &self,
        prefix: &str,
        source: &str,
        envelope: &[u8],
    ) -> Result<String, Error> {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(queue_key(prefix, source))
            .arg("*")
            .arg("e")
            .arg(envelope);
        self.write(Operation::Enqueue, &cmd).await
    }

    /// One worker round: due retries back into the stream, entries a dead
    /// consumer left pending (at most once a second), else new entries.
    pub async fn take(
        &self,
        prefix: &str,
        source: &str,
        consumer: &str,
        cursor: &mut Cursor,
        lease: Duration,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        let stream = queue_key(prefix, source);
        let delayed = delayed_key(prefix, source);
        if !cursor.group_ready {
            self.create_group(&stream).await?;
            cursor.group_ready = true;
        }
        let promoted: Result<i64, Error> = self
            .eval(
                &PROMOTE,
                &[&stream, &delayed],
                &[PROMOTE_BATCH.to_string().as_bytes()],
            )
            .await;
        if let Err(e) = promoted {
            if e.to_string().contains("NOGROUP") {
                cursor.group_ready = false;
            }
            return Err(e);
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        if !cursor.unconfirmed.is_empty() {
            // Leased again, with `WAIT`, those this worker still holds:
            // delivered once the replicas know it holds them.
            let rest = cursor
                .unconfirmed
                .split_off(count.min(cursor.unconfirmed.len()));
            let mut args: Vec<&[u8]> = vec![GROUP.as_bytes(), consumer.as_bytes()];
            args.extend(cursor.unconfirmed.iter().map(|id| id.as_bytes()));
            let answer = self
                .write_eval_answer::<StreamClaimReply>(Operation::Take, &CONFIRM, &[&stream], &args)
                .await;
            let reply = match answer {
                Ok((reply, Ok(()))) => {
                    cursor.unconfirmed = rest;
                    reply
                }
                Ok((reply, Err(short))) => {
                    cursor.unconfirmed = reply.ids.iter().map(|s| s.id.clone()).collect();
                    cursor.unconfirmed.extend(rest);
                    return Err(short);
                }
                Err(e) => {
                    cursor.unconfirmed.extend(rest);
                    return Err(e);
                }
            };
            return Ok(reply.ids.iter().filter_map(stored).collect());
        }
        let mut out = Vec::new();
        if cursor
            .last_reclaim
            .is_none_or(|t| t.elapsed() >= RECLAIM_EVERY)
        {
            cursor.last_reclaim = Some(Instant::now());
            let mut cmd = redis::cmd("XAUTOCLAIM");
            cmd.arg(&stream)
                .arg(GROUP)
                .arg(consumer)
                .arg(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
                .arg(&cursor.reclaim_from)
                .arg("COUNT")
                .arg(count);
            let reply: StreamAutoClaimReply = self
                .leasing(cursor, &cmd, |r: &StreamAutoClaimReply| {
                    r.claimed.iter().map(|s| s.id.clone()).collect()
                })
                .await?;
            cursor.reclaim_from = reply.next_stream_id;
            if !reply.claimed.is_empty() {
                tracing::info!(source = %source, entries = reply.claimed.len(), "took over entries a stopped replica left pending");
            }
            out.extend(reply.claimed.iter().filter_map(stored));
        }
        if out.is_empty() {
            let mut cmd = redis::cmd("XREADGROUP");
            cmd.arg("GROUP")
                .arg(GROUP)
                .arg(consumer)
                .arg("COUNT")
                .arg(count)
                .arg("STREAMS")
                .arg(&stream)
                .arg(">");
            let reply: Option<StreamReadReply> = self
                .leasing(cursor, &cmd, |r: &Option<StreamReadReply>| {
                    r.iter()
                        .flat_map(|r| r.keys.iter())
                        .flat_map(|k| k.ids.iter())
                        .map(|s| s.id.clone())
                        .collect()
                })
                .await?;
            out.extend(
                reply
                    .iter()
                    .flat_map(|r| r.keys.iter())
                    .flat_map(|k| k.ids.iter())
                    .filter_map(stored),
            );
        }
        Ok(out)
    }

    /// A read of the group, which leases what it returns to the consumer:
    /// with `min_replicas` it waits for the replicas like any write that
    /// backs a promise. When too few acknowledge, the entries it leased
    /// (`ids` of the answer) are kept in the cursor, to be leased again
    /// before anything is delivered, and the read fails. A `NOGROUP` answer
    /// (Redis restarted empty) makes the next round create the group again.
    async fn leasing<T>(
        &self,
        cursor: &mut Cursor,
        cmd: &redis::Cmd,
        ids: impl Fn(&T) -> Vec<String>,
    ) -> Result<T, Error>
    where
        T: redis::FromRedisValue + Send,
    {
        match self.write_answer::<T>(Operation::Take, cmd).await {
            Ok((answer, Ok(()))) => {
                cursor.unconfirmed.clear();
                Ok(answer)
            }
            Ok((answer, Err(short))) => {
                // A read that leased nothing promised nothing.
                let leased = ids(&answer);
                if leased.is_empty() {
                    return Ok(answer);
                }
                cursor.unconfirmed = leased;
                Err(short)
            }
            Err(e) => {
                if e.to_string().contains("NOGROUP") {
                    cursor.group_ready = false;
                }
                Err(e)
            }
        }
    }

    async fn create_group(&self, stream: &str) -> Result<(), Error> {
        let mut cmd = redis::cmd("XGROUP");
        cmd.arg("CREATE")
            .arg(stream)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM");
        match self.query::<redis::Value>(&cmd).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes an entry from the stream and the group's pending list; with
    /// `min_replicas`, fails with [`Error::NotReplicated`] when too few
    /// replicas acknowledge the removal in time (the primary has it).
    /// Repeating it is harmless.
    pub async fn settle(&self, prefix: &str, source: &str, id: &str) -> Result<(), Error> {
        let _: i64 = self
            .write_eval(
                Operation::Settle,
                &SETTLE,
                &[&queue_key(prefix, source), &settled_key(prefix, source)],
                &[GROUP.as_bytes(), id.as_bytes()],
            )
            .await?;
        Ok(())
    }

    /// Moves an entry to the delayed set, due after `delay`.
    pub async fn park(
        &self,
        prefix: &str,
        source: &str,
        id: &str,
        envelope: &[u8],
        delay: Duration,
    ) -> Result<(), Error> {
        let _: i64 = self
            .eval(
                &PARK,
                &[&queue_key(prefix, source), &delayed_key(prefix, source)],
                &[
                    GROUP.as_bytes(),
                    id.as_bytes(),
                    ms(delay).as_bytes(),
                    envelope,
                ],
            )
            .await?;
        Ok(())
    }

    /// Entries ready plus waiting for a retry.
    pub async fn queue_depth(&self, prefix: &str, source: &str) -> Result<i64, Error> {
        let ready: i64 = self
            .query(redis::cmd("XLEN").arg(queue_key(prefix, source)))
            .await?;
        let waiting: i64 = self
            .query(redis::cmd("ZCARD").arg(delayed_key(prefix, source)))
            .await?;
        Ok(ready + waiting)
    }

    /// Appends a dead letter; returns its id.
    pub async fn dead_letter(&self, prefix: &str, envelope: &[u8]) -> Result<String, Error> {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(dlq_key(prefix)).arg("*").arg("e").arg(envelope);
        self.write(Operation::DeadLetter, &cmd).await
    }

    pub async fn dead_depth(&self, prefix: &str) -> Result<i64, Error> {
        self.query(redis::cmd("XLEN").arg(dlq_key(prefix))).await
    }

    /// Every dead letter, oldest first.
    pub async fn dead_list(&self, prefix: &str) -> Result<Vec<Stored>, Error> {
        let key = dlq_key(prefix);
        let mut out = Vec::new();
        let mut start = "-".to_owned();
        loop {
            let mut cmd = redis::cmd("XRANGE");
            cmd.arg(&key).arg(&start).arg("+").arg("COUNT").arg(PAGE);
            let page: StreamRangeReply = self.query(&cmd).await?;
            let n = page.ids.len();
            if let Some(last) = page.ids.last() {
                start = format!("({}", last.id);
            }
            out.extend(page.ids.iter().filter_map(stored));
            if n < PAGE {
                return Ok(out);
            }
        }
    }

    /// One dead letter; `None` when there is none by that id (or the id is
    /// not a stream id at all).
    pub async fn dead_get(&self, prefix: &str, id: &str) -> Result<Option<Stored>, Error> {
        let mut cmd = redis::cmd("XRANGE");
        cmd.arg(dlq_key(prefix)).arg(id).arg(id);
        let page: StreamRangeReply = match self.query(&cmd).await {
            Ok(page) => page,
            Err(e) if e.to_string().contains("Invalid stream ID") => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(page.ids.iter().find(|s| s.id == id).and_then(stored))
    }

    /// Removes a dead letter by id, or by the id it had before `hookgate
    /// store rekey` wrote it again (the `REMOVE_DEAD` script).
    pub async fn dead_remove(&self, prefix: &str, id: &str) -> Result<bool, Error> {
        let keys = [dlq_key(prefix), dlq_moved_key(prefix)];
        let removed: i64 = self
            .eval(&REMOVE_DEAD, &[&keys[0], &keys[1]], &[id.as_bytes()])
            .await?;
        Ok(removed == 1)
    }

    /// Stream entries cannot change: the entry is written again under a new
    /// id, atomically with removing the old one. `None` when the old one was
    /// already gone.
    pub async fn dead_replace(
        &self,
        prefix: &str,
        id: &str,
        envelope: &[u8],
    ) -> Result<Option<String>, Error> {
        self.eval(&REPLACE, &[&dlq_key(prefix)], &[id.as_bytes(), envelope])
            .await
    }

    /// Counts a forward failure of the event at `key`; returns the count in a row.
    pub async fn record_failure(&self, key: &str, ttl: Duration) -> Result<u64, Error> {
        self.eval(&FAIL, &[key], &[ms(ttl).as_bytes()]).await
    }
}
