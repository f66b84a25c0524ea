//! The trail's Lua scripts on Redis: starting a generation (`ROLL`),
//! writing a batch of notes (`WRITE`), removing a stray generation
//! (`DROP`) and folding an event's facts (`COMPACT`). Every key they touch
//! shares the `{trail}` hash tag.

use std::sync::LazyLock;

use redis::Script;

/// `mixed()`: whether the mixed period lasts (the module's documentation),
/// starting it when the earlier index exists and no grace was set.
/// `roll(n)`: starts generation `n + 1` when `n` is the current one and its
/// index holds `size` events or more, removes the generations older than
/// the newest `kept`, and the earlier versions' keys once the newest `kept`
/// are all generations and the mixed period is over. Returns the current
/// generation. KEYS[1] = the generation key, KEYS[2] = the oldest key;
/// ARGV[1] = the keys' base (`{prefix}:{trail}:`), ARGV[2] = `size`,
/// ARGV[3] = `kept`, ARGV[4] = now (unix ms), ARGV[5] = [`super::GRACE_MS`].
const ROLL_FN: &str = r"
local base, size, kept = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now, grace = tonumber(ARGV[4]), tonumber(ARGV[5])
local earlier = string.sub(base, 1, -2)
local retired = 0
local function mixed()
  if redis.call('EXISTS', earlier) == 0 then return false, -1 end
  local since = tonumber(redis.call('GET', base .. 'upgraded_at') or '')
  if not since then
    redis.call('SET', base .. 'upgraded_at', now)
    since = now
  end
  return now - since < grace, since + grace
end
local function roll(n)
  local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
  if cur ~= n or redis.call('ZCARD', base .. 'index.' .. n) < size then return cur end
  redis.call('SET', KEYS[1], n + 1)
  local oldest = tonumber(redis.call('GET', KEYS[2]) or '-1')
  local keep = n + 1 - kept
  if keep > oldest then
    for g = math.max(oldest, keep - 64), keep - 1 do
      if g >= 0 then
        redis.call('UNLINK', base .. 'facts.' .. g, base .. 'index.' .. g)
      end
    end
    redis.call('SET', KEYS[2], keep)
    oldest = keep
  end
  if oldest >= 0 and redis.call('EXISTS', earlier, base .. 'facts') > 0 and not mixed() then
    retired = 1
  end
  return n + 1
end
";

/// Starts the next generation when generation ARGV[6] is full ([`ROLL_FN`]);
/// returns `{current generation, 1 when the earlier versions' keys are left
/// to remove}`.
pub(super) static ROLL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{ROLL_FN}\nlocal cur = roll(tonumber(ARGV[6]))\nreturn {{cur, retired}}"
    ))
});

/// Writes a batch of notes in order into the current generation, then
/// starts the next one when it is full ([`ROLL_FN`]). ARGV[6] =
/// [`crate::trail::COMPACT_BYTES`], ARGV[7] = `trail_max_events`, then per
/// note: the received time (`""` for a note without a `Received` fact:
/// appended only to an event already held), the member, the lines. A note
/// for an event held in an older generation moves its record here, score
/// and all; in the mixed period nothing moves and new records go into the
/// earlier layout. Returns `{the facts keys and members whose facts grew
/// past ARGV[6], two by two; 1 when the earlier versions' keys are left to
/// remove; the notes that found no record; the current generation after
/// the batch; until when (unix ms) the mixed period lasts, or -1}`, for
/// the writer to fold ([`COMPACT_LUA`]), remove, count, and tell commits.
const WRITE_BODY: &str = r"
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local oldest = tonumber(redis.call('GET', KEYS[2]) or '-1')
local limit, bound = tonumber(ARGV[6]), tonumber(ARGV[7])
local facts, index = base .. 'facts.' .. n, base .. 'index.' .. n
local long, dropped = {}, 0
local during, ends = mixed()
-- The event's record in an older generation, taken out of it: its text
-- and score, or nil.
local function take(m)
  for g = n - 1, math.max(oldest, n - 64, 0), -1 do
    local text = redis.call('HGET', base .. 'facts.' .. g, m)
    if text then
      local at = redis.call('ZSCORE', base .. 'index.' .. g, m)
      redis.call('HDEL', base .. 'facts.' .. g, m)
      redis.call('ZREM', base .. 'index.' .. g, m)
      return text, at
    end
  end
  if oldest >= 0 then return nil end
  local at = redis.call('ZSCORE', earlier, m)
  local text = redis.call('HGET', base .. 'facts', m)
  if not text then
    local listed = redis.call('LRANGE', base .. m, 0, -1)
    if #listed > 0 then text = table.concat(listed, '\n') .. '\n' end
  end
  if text then
    redis.call('HDEL', base .. 'facts', m)
    redis.call('ZREM', earlier, m)
    redis.call('DEL', base .. m)
  end
  return text, at
end
-- The mixed period: the hash holding the event's record, where it is.
local function holder(m)
  for g = n, math.max(oldest, n - 64, 0), -1 do
    if redis.call('HEXISTS', base .. 'facts.' .. g, m) == 1 then
      return base .. 'facts.' .. g
    end
  end
  return base .. 'facts'
end
for i = 8, #ARGV, 3 do
  local at, m, lines = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local key, held = facts, nil
  if during then
    key = holder(m)
    held = redis.call('HGET', key, m)
  else
    held = redis.call('HGET', facts, m)
    if not held then
      local text, score = take(m)
      if text then
        held = text
        if score then at = score end
      end
    end
  end
  if held then
    held = held .. lines
    if #held > limit then
      long[#long + 1] = key
      long[#long + 1] = m
    end
  elseif at ~= '' then
    held = lines
  else
    dropped = dropped + 1
  end
  if held then
    redis.call('HSET', key, m, held)
    if at ~= '' then
      if key == facts then
        -- A generation full mid-batch: the next event starts the next
        -- one, so a batch keeps the bound as single commits do.
        if redis.call('ZADD', index, 'NX', at, m) == 1 and redis.call('ZCARD', index) >= size then
          n = roll(n)
          oldest = tonumber(redis.call('GET', KEYS[2]) or '-1')
          facts, index = base .. 'facts.' .. n, base .. 'index.' .. n
        end
      elseif key == base .. 'facts' then
        redis.call('ZADD', earlier, 'NX', at, m)
      end
    end
  end
end
if during then
  local over = redis.call('ZCARD', earlier) - bound
  if over > 0 then
    local old = redis.call('ZPOPMIN', earlier, over)
    for j = 1, #old, 2 do
      redis.call('HDEL', base .. 'facts', old[j])
      redis.call('DEL', base .. old[j])
    end
  end
end
local cur = roll(n)
if not during then ends = -1 end
return {long, retired, dropped, cur, ends}
";
pub(super) static WRITE_SOURCE: LazyLock<String> =
    LazyLock::new(|| format!("{ROLL_FN}\n{WRITE_BODY}"));
pub(super) static WRITE: LazyLock<Script> = LazyLock::new(|| Script::new(&WRITE_SOURCE));

/// Removes generation ARGV[2]'s keys unless it is between the oldest and
/// the current one (a commit wrote into a generation already removed, or
/// not started: its keys would never be removed otherwise). KEYS as
/// [`ROLL_FN`]; ARGV[1] = the base.
const DROP_LUA: &str = r"
local n = tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local oldest = tonumber(redis.call('GET', KEYS[2]) or '-1')
if n > cur or n < oldest then
  redis.call('UNLINK', ARGV[1] .. 'facts.' .. n, ARGV[1] .. 'index.' .. n)
  return 1
end
return 0
";
pub(super) static DROP: LazyLock<Script> = LazyLock::new(|| Script::new(DROP_LUA));

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
pub(super) static COMPACT: LazyLock<Script> = LazyLock::new(|| Script::new(COMPACT_LUA));
