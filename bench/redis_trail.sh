#!/usr/bin/env bash
# What a trail record costs Redis itself, apart from hookgate: 100,000
# events' writes sent with `redis-cli --pipe` to a private redis-server
# (pinned to $SERVER_CPU), each event's nonce commit (`SET … PX`) alone or
# beside its trail record in one of these layouts, and redis-server's CPU
# time per event (from /proc) for each:
#
#   none        the nonce commit only
#   list        a list key per event, its expiry, the index (ZADD NX), ZCARD
#   string      a string key per event with its expiry (SET NX PX), ZADD NX, ZCARD
#   hash        a field of one facts hash (HSETNX), ZADD NX, ZCARD (hookgate's layout)
#   hash-batch  the hash and the index written 50 events to a command
#
#   bash bench/redis_trail.sh        # ROUNDS=3 SERVER_CPU=0
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

LAYOUTS="none list string hash hash-batch"
for layout in $LAYOUTS; do
  python3 - "$layout" > "$WORK/$layout.resp" <<'PY'
import sys
layout, n = sys.argv[1], 100_000
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
for i in range(n):
    m = "bench:ev-%06d" % i
    at = 1764650000000 + i
    if layout == "list":
        out.write(cmd("RPUSH", "hg:{trail}:" + m, received, attempted))
        out.write(cmd("PEXPIRE", "hg:{trail}:" + m, 2592000000))
    elif layout == "string":
        out.write(cmd("SET", "hg:{trail}:" + m, lines, "NX", "PX", 2592000000))
    elif layout == "hash":
        out.write(cmd("HSETNX", "hg:{trail}:facts", m, lines))
    elif layout == "hash-batch" and i % 50 == 0:
        ms = ["bench:ev-%06d" % j for j in range(i, i + 50)]
        out.write(cmd("HSET", "hg:{trail}:facts", *[x for mm in ms for x in (mm, lines)]))
        out.write(cmd("ZADD", "hg:{trail}", "NX", *[x for j, mm in zip(range(i, i + 50), ms) for x in (1764650000000 + j, mm)]))
    if layout in ("list", "string", "hash"):
        out.write(cmd("ZADD", "hg:{trail}", "NX", at, m))
        out.write(cmd("ZCARD", "hg:{trail}"))
    out.write(cmd("SET", "hg:nonce:" + m, "done", "PX", 86400000))
PY
done

TCK=$(getconf CLK_TCK)
echo "| layout | redis-server CPU µs per event, round by round |"
echo "|---|---|"
declare -A RESULT
for round in $(seq 1 "$ROUNDS"); do
  for layout in $LAYOUTS; do
    redis-cli -p "$PORT" flushall >/dev/null
    before=$(awk '{print $14 + $15}' /proc/$REDIS/stat)
    redis-cli -p "$PORT" --pipe < "$WORK/$layout.resp" >/dev/null
    after=$(awk '{print $14 + $15}' /proc/$REDIS/stat)
    RESULT[$layout]+="$(python3 -c "print(f'{($after - $before) * 1e6 / $TCK / 100000:.1f}')") "
  done
done
for layout in $LAYOUTS; do echo "| $layout | ${RESULT[$layout]}|"; done
