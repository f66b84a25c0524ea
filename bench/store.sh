#!/usr/bin/env bash
# The stores side by side on loopback: fresh events in forward mode on
# hookgate + memory, + Redis (the reference) and + sqlite (sync = "full"),
# and + a second Redis that fsyncs every write before answering
# (`appendfsync always`, the promise sqlite's `sync = "full"` keeps),
# each with the event trail off and on; queue-mode acknowledgements on
# sqlite (sync = "full") with the group commit's batch size and fsync time
# under that load; then, with each trail full, the time to find one event by
# id (GET /events/{source}/{event_id}).
#
#   bash bench/store.sh          # build, measure, print the tables
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU. REDIS_CPU=$CLIENT_CPU moves
# redis-server beside wrk, off hookgate's CPU, as where Redis has a host of
# its own: the Redis rows then measure what hookgate itself pays, and
# redis-server's CPU per event what the shared Redis pays. Rounds are interleaved so every
# ratio compares numbers taken under the same machine load; the tables show
# the median of the rounds. Every variant starts from an empty store, so one
# pool of fresh events serves them all. The sqlite files live in a temp
# directory on the disk that holds /tmp (their fsync cost is that disk's).
#
# Each row also gives the CPU time per answered event, from /proc, of
# hookgate's request thread, its sqlite writer and syncer threads, and
# redis-server (clock ticks of $(getconf CLK_TCK) a second: read it as the
# split of the work, not to the microsecond).
#
# Before each measured run a variant is sent WARM events of a pool of their
# own (110,000 by default, more than the trail's bound of 100,000): the
# measured events then meet a full trail and a store already holding that
# many ids, the state of a service that has been running a while. WARM=0
# measures from an empty store instead (the trail filling up, its memory
# taken for the first time).
#
# Knobs (environment): ROUNDS=3 DURATION=5 CONNS=64 BODY=1024 WARM=110000
# POOL=<events in the pool> LOOKUP=1 (0 skips the lookup phase) REDIS_CPU=$SERVER_CPU
# VARIANTS="redis sqlite ..." (a subset of the variants, in that order)
# HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
BODY=${BODY:-1024}
POOL=${POOL:-300000}
WARM=${WARM:-110000}
LOOKUP=${LOOKUP:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
REDIS_CPU=${REDIS_CPU:-$SERVER_CPU}
SECRET=bench-secret-not-for-production
TOKEN=bench-admin-token

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools nginx wrk redis-server redis-cli python3 taskset curl
use_release_build
work_dir store-bench

APP_PORT=$(free_port); REDIS_PORT=$(free_port); AOF_PORT=$(free_port)

start_app "$APP_PORT"
taskset -c "$REDIS_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
REDIS_PID=$!
PIDS+=($!)
# The same promise as sqlite's `sync = "full"`: every write fsynced before
# its answer (Redis fsyncs the append-only file once per event-loop pass,
# before it replies to the commands of that pass).
mkdir -p "$WORK/aof"
taskset -c "$REDIS_CPU" redis-server --bind 127.0.0.1 --port "$AOF_PORT" --save "" --appendonly yes \
  --appendfsync always --dir "$WORK/aof" --logfile "$WORK/redis-aof.log" &
AOF_PID=$!
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$REDIS_PORT"; wait_port "$AOF_PORT"

# Variants: [store] lines, source lines, trail bound.
declare -A PORT ADMIN STORE EXTRA TRAIL HG_PID
# shellcheck disable=SC2206 # a list of words on purpose
VARIANTS=(${VARIANTS:-memory memory-trail redis redis-trail redis-aof redis-aof-trail sqlite sqlite-trail queue-trail})
for v in "${VARIANTS[@]}"; do
  PORT[$v]=$(free_port); ADMIN[$v]=$(free_port); EXTRA[$v]=""
  case $v in
    memory*) STORE[$v]=$'kind = "memory"\nmemory_max_entries = 4000000' ;;
    redis-aof*) STORE[$v]="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$AOF_PORT\"" ;;
    redis*) STORE[$v]="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$REDIS_PORT\"" ;;
    *) STORE[$v]="kind = \"sqlite\""$'\n'"path = \"$WORK/$v.db\""$'\n'"sync = \"full\"" ;;
  esac
  case $v in *-trail) TRAIL[$v]=100000 ;; *) TRAIL[$v]=0 ;; esac
done
EXTRA[queue-trail]='delivery = "queue"'
for v in "${VARIANTS[@]}"; do
  cat > "$WORK/$v.toml" <<CONF
[server]
listen = "127.0.0.1:${PORT[$v]}"
upstream = "http://127.0.0.1:$APP_PORT"
[admin]
listen = "127.0.0.1:${ADMIN[$v]}"
token = "$TOKEN"
trail_max_events = ${TRAIL[$v]}
[store]
${STORE[$v]}
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "github"
secrets = ["$SECRET"]
${EXTRA[$v]}
CONF
  "$HOOKGATE_BIN" check --config "$WORK/$v.toml" >/dev/null
done

start() {
  rm -f "$WORK/$1.db" "$WORK/$1.db-wal" "$WORK/$1.db-shm"
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  redis-cli -p "$AOF_PORT" flushall >/dev/null
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/$1.toml" >>"$WORK/$1.log" 2>&1 &
  HG_PID[$1]=$!
  PIDS+=($!)
  wait_port "${PORT[$1]}"; wait_port "${ADMIN[$1]}"
}
stop() {
  kill "${HG_PID[$1]}" 2>/dev/null || true
  wait "${HG_PID[$1]}" 2>/dev/null || true
}
counters() { # variant -> "answered batch_sum batch_count sync_sum sync_count" now
  local m
  m=$(curl -s --max-time 5 "http://127.0.0.1:${ADMIN[$1]}/metrics")
  awk '/^hookgate_requests_total/ && /outcome="(forwarded|queued)"/ {ok += $2}
       $1 == "hookgate_store_batch_size_sum" {bs = $2} $1 == "hookgate_store_batch_size_count" {bc = $2}
       $1 == "hookgate_store_sync_seconds_sum" {ss = $2} $1 == "hookgate_store_sync_seconds_count" {sc = $2}
       END {print ok + 0, bs + 0, bc + 0, ss + 0, sc + 0}' <<< "$m"
}
answered() { # admin-port -> forwarded + queued
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
    awk '/^hookgate_requests_total/ && /outcome="(forwarded|queued)"/ {s += $2} END {print s + 0}'
}
cpu() { # variant -> "main writer syncer redis" ticks now
  local redis=$REDIS_PID
  case $1 in redis-aof*) redis=$AOF_PID ;; esac
  echo "$(ticks "${HG_PID[$1]}" hookgate) $(ticks "${HG_PID[$1]}" sqlite-writer) $(ticks "${HG_PID[$1]}" sqlite-syncer) $(ticks "$redis")"
}
load() { # variant seconds [pool [skip]] -> RESULT line
  local pool=${3:-pool}
  taskset -c "$CLIENT_CPU" timeout $(($2 + 60)) \
    wrk -t1 -c"$CONNS" -d"$2s" --timeout 5s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:${PORT[$1]}/webhooks/bench" -- "$WORK/$pool" "$(cat "$WORK/$pool.len")" 1 "${4:-0}" | grep '^RESULT'
}
warm() { # variant: sends it the warm-up pool, each event once
  local sent=0
  for _ in $(seq 1 60); do
    [ "$sent" -ge "$WARM" ] && return 0
    load "$1" 2 warm "$sent" >/dev/null
    sent=$(answered "${ADMIN[$1]}")
  done
  echo "bench: only $sent of $WARM warm-up events answered by $1" >&2; exit 1
}

echo "== generating a pool of $POOL signed events"
python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
  --body-bytes "$BODY" --prefix ev --count "$POOL" --out "$WORK/pool" > "$WORK/pool.len"
WIDTH=${#POOL}
if [ "$WARM" -gt 0 ]; then
  echo "== generating a warm-up pool of $WARM signed events"
  python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
    --body-bytes "$BODY" --prefix wu --count "$WARM" --out "$WORK/warm" > "$WORK/warm.len"
fi

RESULTS=$WORK/results.tsv
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for v in "${VARIANTS[@]}"; do
    start "$v"
    [ "$WARM" -gt 0 ] && warm "$v"
    read -r ok0 bs0 bc0 ss0 sc0 <<< "$(counters "$v")"
    read -r m0 w0 s0 r0 <<< "$(cpu "$v")"
    line=$(load "$v" "$DURATION")
    read -r m1 w1 s1 r1 <<< "$(cpu "$v")"
    read -r ok1 bs1 bc1 ss1 sc1 <<< "$(counters "$v")"
    extra=$(awk -v a="$bs0 $bc0 $ss0 $sc0 $ok0" -v b="$bs1 $bc1 $ss1 $sc1 $ok1" 'BEGIN {
      split(a, x, " "); split(b, y, " ")
      printf "batch_sum=%f batch_count=%d sync_sum=%f sync_count=%d ok=%d", y[1]-x[1], y[2]-x[2], y[3]-x[3], y[4]-x[4], y[5]-x[5] }')
    extra+=" ticks_main=$((m1 - m0)) ticks_writer=$((w1 - w0)) ticks_syncer=$((s1 - s0)) ticks_redis=$((r1 - r0))"
    stop "$v"
    printf '%s\t%s\t%s %s\n' "$round" "$v" "$line" "$extra" >> "$RESULTS"
    echo "   $v: ${line#RESULT } $extra"
  done
done

# Finding one event by id with the trail full (100,000 events held).
LOOKUPS=$WORK/lookups.tsv
: > "$LOOKUPS"
if [ "$LOOKUP" != 0 ]; then
  for v in memory-trail redis-trail sqlite-trail; do
    [[ " ${VARIANTS[*]} " == *" $v "* ]] || continue
    echo "== $v: filling the trail"
    start "$v"
    held=0
    for _ in $(seq 1 30); do
      load "$v" 10 >/dev/null
      held=$(answered "${ADMIN[$v]}")
      [ "$held" -ge 110000 ] && break
    done
    [ "$held" -ge 110000 ] || { echo "bench: only $held events sent to $v" >&2; exit 1; }
    sleep 12 # one purge pass: sqlite trims its trail there
    for _ in $(seq 1 20); do
      # An id among the newest 100,000 sent (the pool is sent in order).
      n=$(( held - 1 - (RANDOM * 32768 + RANDOM) % 100000 ))
      id=$(printf 'ev-%0*d' "$WIDTH" "$n")
      t=$(curl -s -o "$WORK/lookup.json" -w '%{time_total}' -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:${ADMIN[$v]}/events/bench/$id")
      printf '%s\t%s\t%s\t%s\n' "$v" "$id" "$t" "$(head -c 80 "$WORK/lookup.json" | tr -d '\n\t')" >> "$LOOKUPS"
    done
    stop "$v"
  done
fi

python3 - "$RESULTS" "$LOOKUPS" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    _, variant, rest = line.rstrip("\n").split("\t")
    kv = dict(p.split("=", 1) for p in rest.split() if "=" in p)
    rows.setdefault(variant, []).append(kv)
def med(variant, f):
    return statistics.median(f(kv) for kv in rows[variant])
def num(kv, k):
    try:
        return float(kv.get(k) or 0)
    except ValueError:
        return 0.0
rate = lambda kv: num(kv, "ok") / (num(kv, "duration_us") / 1e6)
per = lambda kv: num(kv, "batch_sum") / num(kv, "batch_count") if num(kv, "batch_count") else 0.0
fs = lambda kv: 1000 * num(kv, "sync_sum") / num(kv, "sync_count") if num(kv, "sync_count") else 0.0
def same_trail_redis(v):
    # The Redis run with the same trail setting: the reference of each row.
    return "redis-trail" if v.endswith("-trail") else "redis"
labels = {
    "memory": "memory, trail off", "memory-trail": "memory, trail on",
    "redis": "Redis, trail off", "redis-trail": "Redis, trail on (the reference)",
    "redis-aof": "Redis, appendfsync always, trail off",
    "redis-aof-trail": "Redis, appendfsync always, trail on",
    "sqlite": "sqlite (full), trail off", "sqlite-trail": "sqlite (full), trail on",
    "queue-trail": "sqlite (full), queue acknowledgements, trail on",
}
print()
print("| hookgate + store | answered / s (median) | vs hookgate + Redis, same trail | vs Redis with appendfsync always, same trail | p99 (µs) | writes per group commit | WAL fdatasync (ms, mean) |")
print("|---|---|---|---|---|---|---|")
def versus(v, ref):
    if ref not in rows:
        return "—"
    return f"{statistics.median(rate(a) / rate(b) for a, b in zip(rows[v], rows[ref])):.2f}×"
for v in labels:
    if v not in rows:
        continue
    r = med(v, rate)
    sq = v.startswith(("sqlite", "queue"))
    b = f"{med(v, per):.1f}" if sq else "—"
    f = f"{med(v, fs):.2f}" if sq else "—"
    ref = same_trail_redis(v)
    aof = ref.replace("redis", "redis-aof")
    print(f"| {labels[v]} | {r:,.0f} | {versus(v, ref)} | {versus(v, aof)} | "
          f"{med(v, lambda kv: num(kv, 'p99_us')):,.0f} | {b} | {f} |")
tick_us = 1e6 / int(sys.argv[3])
def cpu(v, k):
    return med(v, lambda kv: num(kv, "ticks_" + k) * tick_us / num(kv, "ok") if num(kv, "ok") else 0.0)
print()
print("| hookgate + store | CPU µs per event: request thread | sqlite writer | sqlite syncer | redis-server |")
print("|---|---|---|---|---|")
for v in labels:
    if v not in rows:
        continue
    print(f"| {labels[v]} | {cpu(v, 'main'):.1f} | {cpu(v, 'writer'):.1f} | {cpu(v, 'syncer'):.1f} | {cpu(v, 'redis'):.1f} |")
print()
print("| store | fresh events / s, trail on ÷ trail off (medians) | the same, round by round: median | lowest | highest |")
print("|---|---|---|---|---|")
for base in ["memory", "redis", "redis-aof", "sqlite"]:
    if base in rows and base + "-trail" in rows:
        # Each round runs the two seconds apart: their ratio cancels most
        # of the machine's drift between rounds.
        paired = [rate(on) / rate(off) for off, on in zip(rows[base], rows[base + "-trail"])]
        print(f"| {base} | {med(base + '-trail', rate) / med(base, rate):.3f} | "
              f"{statistics.median(paired):.3f} | {min(paired):.3f} | {max(paired):.3f} |")
look = {}
for line in open(sys.argv[2]):
    v, _, t, body = line.rstrip("\n").split("\t")
    look.setdefault(v, []).append((float(t) * 1000, body))
if look:
    print()
    print("| trail full (100,000 events): GET /events/{source}/{id} | median ms | max ms | found |")
    print("|---|---|---|---|")
    for v, xs in look.items():
        ms = [x for x, _ in xs]
        found = sum(1 for _, b in xs if '"attempts"' in b or '"event_id"' in b)
        print(f"| {v} | {statistics.median(ms):.1f} | {max(ms):.1f} | {found}/{len(xs)} |")
PY
