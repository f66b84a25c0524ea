-- The trail's write script of the last release before the trail's
-- generations (commit 4eabfc4, src/store/redis/trail.rs, WRITE_LUA), kept
-- verbatim below this header for tests/it/upgrade.rs: it stands for a
-- replica of that release writing beside this one on one Redis.
--
-- KEYS[1] = the index ({prefix}:{trail}), KEYS[2] = the facts hash
-- ({prefix}:{trail}:facts); ARGV[1] = the bound, ARGV[2] = the prefix of
-- the lists of earlier versions, ARGV[3] = the length past which an
-- event's facts are folded, then per note: the received time ("" for a
-- note without a Received fact), the member, the lines. That release's
-- nonce commit wrote a new event's facts with HSETNX + ZADD NX on the same
-- two keys, which this script does for a note with a received time.
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
