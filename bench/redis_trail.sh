#!/usr/bin/env bash
# What a trail record costs Redis itself, apart from hookgate, with the
# trail full: a private redis-server (pinned to $SERVER_CPU) is sent
# 110,000 events' writes (the trail's bound is 100,000), then 100,000 more
# are measured: redis-server's CPU time per event (from /proc, its threads
# included) for each layout, all through `redis-cli --pipe`:
#
#   none         the nonce commit only (`SET … PX`)
#   hash         one facts hash and one index (HSETNX, ZADD NX, ZCARD), never
#                trimmed: what a record costs while the trail fills
#   hash-trim    the same, trimmed to the bound after every event (a script:
#                ZPOPMIN, HDEL): the layout before generations
#   hash-trim100 the same, trimmed once in 100 events
#   generations  hookgate's layout (src/store/redis/trail.rs): HSETNX and
#                ZADD NX into the generation of 6,250 events written now, and
#                the generations past the newest 16 removed whole (UNLINK)
#   generations-script  the same written by one script per event (reading
#                the generation itself) instead of plain commands
#
#   generations-batched  generations with the index written 16 events to
#                a ZADD instead of one each
#   generations-list  generations with the index a list (RPUSH): arrival
#                order, no score
#   facts-only   generations without any index: HSETNX alone
#
#   bash bench/redis_trail.sh        # ROUNDS=3 SERVER_CPU=0
#   LAYOUTS="none generations facts-only" bash bench/redis_trail.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SERVER_CPU=${SERVER_CPU:-0}
for tool in redis-server redis-cli python3 taskset; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required (apt-get install redis-server)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/hookgate-redis-trail.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
REDIS=$!
trap 'kill $REDIS 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done

redis-cli -p "$PORT" script load "
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for j = 1, #old, 2 do redis.call('HDEL', KEYS[2], old[j]) end
end
return 0" > "$WORK/trim.sha"
redis-cli -p "$PORT" script load "
local g = tonumber(redis.call('GET', KEYS[2]) or '0')
local f = 'hg:{trail}:facts.' .. g
if redis.call('HSETNX', f, ARGV[2], ARGV[4]) == 1 then
  local idx = 'hg:{trail}:index.' .. g
  redis.call('ZADD', idx, 'NX', ARGV[3], ARGV[2])
  if redis.call('ZCARD', idx) >= tonumber(ARGV[5]) then
    redis.call('SET', KEYS[2], g + 1)
    local old = g + 1 - tonumber(ARGV[6])
    if old >= 0 then redis.call('UNLINK', 'hg:{trail}:facts.' .. old, 'hg:{trail}:index.' .. old) end
  end
end
redis.call('SET', KEYS[1], 'done', 'PX', ARGV[1])
return 1" > "$WORK/generation.sha"

LAYOUTS=${LAYOUTS:-"none hash hash-trim hash-trim100 generations generations-script"}
for layout in $LAYOUTS; do
  for phase in warm measure; do
    python3 - "$layout" "$phase" "$(cat "$WORK/trim.sha")" "$(cat "$WORK/generation.sha")" \
      > "$WORK/$layout.$phase" <<'PY'
import sys
layout, phase, trim, generation = sys.argv[1:5]
SIZE, KEPT = 6250, 16
def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
# Two facts as hookgate writes them for a forwarded event (about 330 bytes).
received = b'{"fact":"received","at":1764650000000,"replica":"hookgate-7d4f9c-x2x9q","event_type":"push","signed_at":null,"state":"in_flight"}'
attempted = b'{"fact":"attempted","attempt":{"at":1764650000003,"replica":"hookgate-7d4f9c-x2x9q","mode":"forward","outcome":"forwarded","status":200,"duration_ms":3},"state":"delivered","next_attempt_at":null,"dead_letter_id":null}'
lines = received + b"\n" + attempted + b"\n"
out = sys.stdout.buffer
pending = []
start, count = (0, 110_000) if phase == "warm" else (110_000, 100_000)
for i in range(start, start + count):
    m = "bench:ev-%07d" % i
    at = 1764650000000 + i
    nonce = cmd("SET", "hg:nonce:" + m, "done", "PX", 86400000)
    if layout.startswith("hash"):
        out.write(cmd("HSETNX", "hg:{trail}:facts", m, lines))
        out.write(cmd("ZADD", "hg:{trail}", "NX", at, m))
        out.write(nonce)
        out.write(cmd("ZCARD", "hg:{trail}"))
        if layout == "hash-trim" or (layout == "hash-trim100" and i % 100 == 0):
            out.write(cmd("EVALSHA", trim, 2, "hg:{trail}", "hg:{trail}:facts", 100000))
    elif layout == "generations":
        g = i // SIZE
        out.write(cmd("HSETNX", "hg:{trail}:facts.%d" % g, m, lines))
        out.write(cmd("ZADD", "hg:{trail}:index.%d" % g, "NX", at, m))
        out.write(nonce)
        if i % SIZE == 0 and g > KEPT:
            gone = g - KEPT - 1
            out.write(cmd("UNLINK", "hg:{trail}:facts.%d" % gone, "hg:{trail}:index.%d" % gone))
    elif layout in ("generations-batched", "generations-list", "facts-only"):
        g = i // SIZE
        out.write(cmd("HSETNX", "hg:{trail}:facts.%d" % g, m, lines))
        if layout == "generations-list":
            out.write(cmd("RPUSH", "hg:{trail}:index.%d" % g, m))
        out.write(nonce)
        if layout == "generations-batched":
            pending.append((at, m))
            if len(pending) == 16:
                args = []
                for a, mm in pending: args += [a, mm]
                out.write(cmd("ZADD", "hg:{trail}:index.%d" % g, "NX", *args))
                pending.clear()
        if i % SIZE == 0 and g > KEPT:
            gone = g - KEPT - 1
            out.write(cmd("UNLINK", "hg:{trail}:facts.%d" % gone, "hg:{trail}:index.%d" % gone))
    elif layout == "generations-script":
        out.write(cmd("EVALSHA", generation, 2, "hg:nonce:" + m, "hg:{trail}:generation",
                      86400000, m, at, lines, SIZE, KEPT + 1))
    else:
        out.write(nonce)
PY
  done
done

TCK=$(getconf CLK_TCK)
echo "| layout | redis-server CPU µs per event with the trail full, round by round |"
echo "|---|---|"
declare -A RESULT
for round in $(seq 1 "$ROUNDS"); do
  for layout in $LAYOUTS; do
    redis-cli -p "$PORT" flushall >/dev/null
    redis-cli -p "$PORT" --pipe < "$WORK/$layout.warm" >/dev/null
    sleep 0.3
    before=$(awk '{print $14 + $15}' /proc/$REDIS/stat)
    redis-cli -p "$PORT" --pipe < "$WORK/$layout.measure" >/dev/null
    sleep 0.3 # the lazy frees of UNLINK finish on Redis's own thread
    after=$(awk '{print $14 + $15}' /proc/$REDIS/stat)
    RESULT[$layout]+="$(python3 -c "print(f'{($after - $before) * 1e6 / $TCK / 100000:.1f}')") "
  done
done
for layout in $LAYOUTS; do echo "| $layout | ${RESULT[$layout]}|"; done
