#!/usr/bin/env bash
# What sealing payloads costs (DESIGN §4b: "at most 5 % of queue-mode
# throughput"): queue-mode acknowledgements per second on sqlite (sync =
# "full") and on Redis, without [store.encryption] and with one key, while
# the workers deliver what is queued to the app (so each event is sealed on
# enqueue and opened on delivery). Rounds interleave the variants, each from
# an empty store with a pool of fresh events; the ratio is sealed ÷ plain
# per round, in the same round under the same load.
#
#   bash bench/sealed.sh          # build, measure, print the table
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU.
#
# Knobs (environment): ROUNDS=5 DURATION=5 CONNS=64 BODY=1024
# POOL=<events in the pool> STORES="sqlite redis" HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
BODY=${BODY:-1024}
POOL=${POOL:-200000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECRET=bench-secret-not-for-production
KEY=$(head -c 32 /dev/urandom | base64)
# shellcheck disable=SC2206 # a list of words on purpose
STORES=(${STORES:-sqlite redis})

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools nginx wrk redis-server redis-cli python3 taskset curl
use_release_build
work_dir sealed-bench

APP_PORT=$(free_port); REDIS_PORT=$(free_port)
start_app "$APP_PORT"
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$REDIS_PORT"

echo "== generating a pool of $POOL signed events"
python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
  --body-bytes "$BODY" --prefix ev --count "$POOL" --out "$WORK/pool" > "$WORK/pool.len"

PORT=$(free_port); ADMIN=$(free_port)
config() { # store sealed(0|1) -> $WORK/<store>-<sealed>.toml
  local store
  case $1 in
    sqlite) store="kind = \"sqlite\""$'\n'"path = \"$WORK/bench.db\""$'\n'"sync = \"full\"" ;;
    redis) store="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$REDIS_PORT\"" ;;
  esac
  if [ "$2" = 1 ]; then
    store+=$'\n'"[store.encryption]"$'\n'"keys = [{ id = \"bench\", key = \"$KEY\" }]"
  fi
  cat > "$WORK/$1-$2.toml" <<CONF
[server]
listen = "127.0.0.1:$PORT"
upstream = "http://127.0.0.1:$APP_PORT"
[admin]
listen = "127.0.0.1:$ADMIN"
trail_max_events = 100000
[store]
$store
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "github"
secrets = ["$SECRET"]
delivery = "queue"
CONF
  "$HOOKGATE_BIN" check --config "$WORK/$1-$2.toml" >/dev/null
}
load() { # seconds -> RESULT line
  taskset -c "$CLIENT_CPU" timeout $(($1 + 60)) \
    wrk -t1 -c"$CONNS" -d"$1s" --timeout 5s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:$PORT/webhooks/bench" -- "$WORK/pool" "$(cat "$WORK/pool.len")" 1 0 | grep '^RESULT'
}
metric() { # name (with labels) -> value summed
  curl -s --max-time 5 "http://127.0.0.1:$ADMIN/metrics" |
    awk -v n="$1" 'index($0, n) == 1 {s += $NF} END {print s + 0}'
}

for s in "${STORES[@]}"; do config "$s" 0; config "$s" 1; done
RESULTS=$WORK/results.tsv
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for s in "${STORES[@]}"; do
    for sealed in 0 1; do
      rm -f "$WORK/bench.db" "$WORK/bench.db-wal" "$WORK/bench.db-shm"
      redis-cli -p "$REDIS_PORT" flushall >/dev/null
      taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/$s-$sealed.toml" >>"$WORK/$s-$sealed.log" 2>&1 &
      HG=$!
      PIDS+=($!)
      wait_port "$PORT"; wait_port "$ADMIN"
      line=$(load "$DURATION")
      queued=$(metric 'hookgate_requests_total{source="bench",outcome="queued"}')
      delivered=$(metric 'hookgate_delivery_attempts_total{source="bench",result="delivered"}')
      unopenable=$(metric 'hookgate_store_unopenable_total')
      kill "$HG"; wait "$HG" 2>/dev/null || true
      rate=$(awk -v q="$queued" -v d="$(field "$line" duration_us)" 'BEGIN {printf "%.0f", q / d * 1e6}')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$round" "$sealed" "$rate" "$(field "$line" p99_us)" "$delivered" "$unopenable" >> "$RESULTS"
      echo "   $s sealed=$sealed: $rate queued/s p99 $(field "$line" p99_us) us ($delivered delivered meanwhile)"
    done
  done
done

echo
echo "store   round  plain queued/s  sealed queued/s  sealed ÷ plain  delivered plain / sealed"
python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = {}
for store, rnd, sealed, rate, p99, delivered, unopenable in rows:
    if float(unopenable) > 0:
        sys.exit(f"bench: {store} round {rnd}: payloads that did not open")
    by.setdefault((store, rnd), {})[sealed] = (float(rate), int(float(delivered)))
ratios = {}
for (store, rnd), k in sorted(by.items()):
    p, s = k["0"], k["1"]
    r = s[0] / p[0]
    ratios.setdefault(store, []).append(r)
    print(f"{store:<7} {rnd:>5}  {p[0]:>14.0f}  {s[0]:>15.0f}  {r:>13.3f}×  {p[1]} / {s[1]}")
for store, rs in ratios.items():
    print(f"{store:<7} median sealed ÷ plain {statistics.median(rs):.3f}× over {len(rs)} rounds (pooled: {statistics.mean(rs):.3f}×)")
PY
