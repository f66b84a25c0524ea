//! Stored payloads on Redis, page by page, and their rewrite
//! ([`crate::store::payloads`]). A stream entry cannot change: a rewritten
//! queue entry or dead letter is added again under a new id, atomically
//! with removing the old one. A queue entry leased to a worker is left
//! alone; a rewritten dead letter's old id is remembered in
//! `{<prefix>:dlq}:moved` (one day), so that removing it by its old id (a
//! replay that delivered it meanwhile) removes the new one.

use std::sync::LazyLock;

use redis::Script;
use redis::streams::StreamRangeReply;

use super::RedisStore;
use super::queue::GROUP;
use crate::store::Error;
use crate::store::keys::{delayed_key, dlq_key, dlq_moved_key, queue_key};
use crate::store::payloads::{Payload, Shelf};

/// A stream entry's field `e` replaced: added again, the old id removed,
/// if it still holds ARGV[2] and (ARGV[4] a group) no consumer holds it.
/// KEYS[1] = the stream, KEYS[2] = the moved-ids hash ("" for none);
/// ARGV[1] = id, ARGV[2] = old, ARGV[3] = new, ARGV[4] = group or "".
static REWRITE_ENTRY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #e == 0 then return 0 end
local fields, held = e[1][2], nil
for i = 1, #fields, 2 do
  if fields[i] == 'e' then held = fields[i + 1] end
end
if held ~= ARGV[2] then return 0 end
if ARGV[4] ~= '' then
  local ok, pending = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[4], ARGV[1], ARGV[1], 1)
  if ok and #pending > 0 then return 0 end
end
local new = redis.call('XADD', KEYS[1], '*', 'e', ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[1])
if #KEYS > 1 then
  redis.call('HSET', KEYS[2], ARGV[1], new)
  redis.call('PEXPIRE', KEYS[2], 86400000)
end
return 1
",
    )
});

/// A retry's member replaced, its due time kept. KEYS[1] = the sorted set;
/// ARGV[1] = old, ARGV[2] = new.
static REWRITE_MEMBER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], due, ARGV[2])
return 1
",
    )
});

/// A stream written again entry by entry under the same ids into KEYS[2],
/// its groups recreated at their last delivered ids, then renamed over
/// KEYS[1]: a removed entry's bytes stay in the stream's nodes until every
/// entry of the node is removed, and this drops them. Not done (-1) while
/// a group has entries pending, or (-2) past ARGV[1] entries. Returns the
/// entries kept.
static COMPACT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('XLEN', KEYS[1]) > tonumber(ARGV[1]) then return -2 end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
local keep = {}
for _, g in ipairs(groups) do
  local name, pending, last
  for i = 1, #g, 2 do
    if g[i] == 'name' then name = g[i + 1] end
    if g[i] == 'pending' then pending = g[i + 1] end
    if g[i] == 'last-delivered-id' then last = g[i + 1] end
  end
  if pending > 0 then return -1 end
  keep[#keep + 1] = {name, last}
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local top
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then top = info[i + 1] end
end
redis.call('DEL', KEYS[2])
local entries = redis.call('XRANGE', KEYS[1], '-', '+')
for _, e in ipairs(entries) do
  redis.call('XADD', KEYS[2], e[1], unpack(e[2]))
end
if #entries == 0 then
  redis.call('XADD', KEYS[2], '0-1', 'e', '')
  redis.call('XDEL', KEYS[2], '0-1')
end
redis.call('XSETID', KEYS[2], top)
for _, g in ipairs(keep) do
  redis.call('XGROUP', 'CREATE', KEYS[2], g[1], g[2])
end
redis.call('RENAME', KEYS[2], KEYS[1])
return #entries
",
    )
});

/// Entries a stream may hold for [`COMPACT`] to rewrite it (one script: the
/// server does nothing else meanwhile).
const COMPACT_MAX: usize = 100_000;

impl RedisStore {
    /// Drops the bytes of removed entries from the queue streams of
    /// `sources` and from the dead letters (the `COMPACT` script). Returns the
    /// streams rewritten and those left as they are (a group with entries
    /// pending, or too long).
    pub async fn payload_compact(
        &self,
        prefix: &str,
        sources: &[String],
    ) -> Result<(usize, usize), Error> {
        let mut streams: Vec<(String, String)> = sources
            .iter()
            .map(|s| {
                let key = queue_key(prefix, s);
                let tmp = format!("{key}:compacting");
                (key, tmp)
            })
            .collect();
        streams.push((dlq_key(prefix), format!("{{{prefix}:dlq}}:compacting")));
        let (mut done, mut left) = (0, 0);
        for (key, tmp) in &streams {
            let max = COMPACT_MAX.to_string();
            let kept: i64 = self
                .eval(&COMPACT, &[key.as_str(), tmp.as_str()], &[max.as_bytes()])
                .await?;
            if kept >= 0 {
                done += 1;
            } else {
                left += 1;
            }
        }
        Ok((done, left))
    }

    /// Up to `limit` payloads of `shelf` after `after`: `(id, what to
    /// continue after, bytes)`. A retry's id is its due time; the walk
    /// goes on from its rank.
    pub async fn payload_page(
        &self,
        prefix: &str,
        shelf: Shelf,
        source: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String, Vec<u8>)>, Error> {
        let stream = match shelf {
            Shelf::Queue => queue_key(prefix, source),
            Shelf::Dead => dlq_key(prefix),
            Shelf::Delayed => {
                let from: usize = after.and_then(|a| a.parse().ok()).unwrap_or(0);
                let mut cmd = redis::cmd("ZRANGE");
                cmd.arg(delayed_key(prefix, source))
                    .arg(from)
                    .arg(from + limit.max(1) - 1)
                    .arg("WITHSCORES");
                let members: Vec<(Vec<u8>, f64)> = self.query(&cmd).await?;
                return Ok(members
                    .into_iter()
                    .enumerate()
                    .map(|(i, (bytes, due))| {
                        ((due as i64).to_string(), (from + i + 1).to_string(), bytes)
                    })
                    .collect());
            }
        };
        let start = after.map_or_else(|| "-".to_owned(), |a| format!("({a}"));
        let mut cmd = redis::cmd("XRANGE");
        cmd.arg(&stream).arg(start).arg("+").arg("COUNT").arg(limit);
        let page: StreamRangeReply = self.query(&cmd).await?;
        Ok(page
            .ids
            .iter()
            .map(|s| {
                let bytes = s.get::<Vec<u8>>("e").unwrap_or_default();
                (s.id.clone(), s.id.clone(), bytes)
            })
            .collect())
    }

    /// Replaces a payload if it is still what was read (the `REWRITE_ENTRY`,
    /// `REWRITE_MEMBER` scripts).
    pub async fn payload_rewrite(
        &self,
        prefix: &str,
        payload: &Payload,
        new: Vec<u8>,
    ) -> Result<bool, Error> {
        let done: i64 = match payload.shelf {
            Shelf::Delayed => {
                let key = delayed_key(prefix, &payload.source);
                let args: [&[u8]; 2] = [&payload.bytes, &new];
                self.eval(&REWRITE_MEMBER, &[&key], &args).await?
            }
            Shelf::Queue => {
                let key = queue_key(prefix, &payload.source);
                let args: [&[u8]; 4] = [
                    payload.id.as_bytes(),
                    &payload.bytes,
                    &new,
                    GROUP.as_bytes(),
                ];
                self.eval(&REWRITE_ENTRY, &[&key], &args).await?
            }
            Shelf::Dead => {
                let keys = [dlq_key(prefix), dlq_moved_key(prefix)];
                let args: [&[u8]; 4] = [payload.id.as_bytes(), &payload.bytes, &new, b""];
                self.eval(&REWRITE_ENTRY, &[&keys[0], &keys[1]], &args)
                    .await?
            }
        };
        Ok(done == 1)
    }
}
