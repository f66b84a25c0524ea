#!/usr/bin/env bash
# A replay flood of one captured delivery, on each store (DESIGN §7a,
# "bounded per event"): one signed GitHub event is delivered once, then
# replayed by wrk for ROUNDS rounds of DURATION seconds. Each round reports
# the duplicates answered per second and their p99, hookgate's RSS, the
# store's size (the sqlite file with its WAL; Redis's used_memory) and the
# event's record (stored bytes and `GET /events` bytes), so growth per
# round is read off directly. The same store's fresh-event rate, measured
# first in the same run, is the reference a duplicate's cost is quoted
# against.
#
#   bash bench/flood.sh          # build, measure, print the table
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU.
#
# Knobs (environment): ROUNDS=6 DURATION=8 CONNS=32 BODY=1024
# STORES="memory sqlite redis" FRESH=200000 (events in the fresh pool)
# HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-6}
DURATION=${DURATION:-8}
CONNS=${CONNS:-32}
BODY=${BODY:-1024}
FRESH=${FRESH:-200000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECRET=bench-secret-not-for-production
TOKEN=bench-admin-token
# shellcheck disable=SC2206 # a list of words on purpose
STORES=(${STORES:-memory sqlite redis})

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools nginx wrk redis-server redis-cli sqlite3 python3 taskset curl
use_release_build
work_dir flood-bench

APP_PORT=$(free_port); REDIS_PORT=$(free_port)
start_app "$APP_PORT"
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$REDIS_PORT"

echo "== generating $FRESH fresh events and the captured one"
python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
  --body-bytes "$BODY" --prefix ev --count "$FRESH" --out "$WORK/fresh" > "$WORK/fresh.len"
python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
  --body-bytes "$BODY" --prefix captured --count 1 --out "$WORK/dup" > "$WORK/dup.len"
CAPTURED=$(python3 -c "import sys; print(open(sys.argv[1],'rb').read().split(b'X-GitHub-Delivery: ')[1].split(b'\r')[0].decode())" "$WORK/dup")

PORT=$(free_port); ADMIN=$(free_port)
config() { # store -> config file
  local store
  case $1 in
    memory) store=$'kind = "memory"\nmemory_max_entries = 4000000' ;;
    redis) store="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$REDIS_PORT\"" ;;
    sqlite) store="kind = \"sqlite\""$'\n'"path = \"$WORK/flood.db\""$'\n'"sync = \"full\"" ;;
  esac
  cat > "$WORK/$1.toml" <<CONF
[server]
listen = "127.0.0.1:$PORT"
upstream = "http://127.0.0.1:$APP_PORT"
[admin]
listen = "127.0.0.1:$ADMIN"
token = "$TOKEN"
[store]
$store
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "github"
secrets = ["$SECRET"]
CONF
}
load() { # pool seconds -> RESULT line
  taskset -c "$CLIENT_CPU" timeout $(($2 + 60)) \
    wrk -t1 -c"$CONNS" -d"$2s" --timeout 5s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:$PORT/webhooks/bench" -- "$WORK/$1" "$(cat "$WORK/$1.len")" 1 0 | grep '^RESULT'
}
store_bytes() {
  case $1 in
    memory) echo 0 ;;
    sqlite) du -cb "$WORK"/flood.db* | tail -1 | cut -f1 ;;
    redis) redis-cli -p "$REDIS_PORT" info memory | awk -F: '/^used_memory:/ {print $2 + 0}' ;;
  esac
}
record_bytes() { # stored bytes of the captured event's record (memory: none of its own)
  case $1 in
    memory) echo - ;;
    sqlite) sqlite3 "file:$WORK/flood.db?mode=ro" "SELECT sum(length(facts)) FROM events WHERE event_id = '$CAPTURED'" ;;
    redis) # the generations' facts hashes that hold it (one, unless a retry split it)
      redis-cli -p "$REDIS_PORT" --scan --pattern 'hookgate:{trail}:facts.*' |
        while read -r key; do redis-cli -p "$REDIS_PORT" hstrlen "$key" "bench:$CAPTURED"; done |
        awk '{s += $1} END {print s + 0}' ;;
  esac
}

RESULTS=$WORK/results.tsv
: > "$RESULTS"
for s in "${STORES[@]}"; do
  echo "== $s"
  config "$s"
  rm -f "$WORK"/flood.db*
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/$s.toml" >>"$WORK/$s.log" 2>&1 &
  HG=$!
  PIDS+=($!)
  wait_port "$PORT"; wait_port "$ADMIN"
  line=$(load fresh "$DURATION")
  fresh=$(awk -v r="$(field "$line" requests)" -v d="$(field "$line" duration_us)" 'BEGIN {printf "%.0f", r / d * 1e6}')
  printf '%s\tfresh\t%s\t%s\n' "$s" "$fresh" "$(field "$line" p99_us)" >> "$RESULTS"
  echo "   fresh events: $fresh/s p99 $(field "$line" p99_us) us"
  first=$(taskset -c "$CLIENT_CPU" python3 - "$WORK/dup" "$PORT" <<'PY'
import socket, sys
raw = open(sys.argv[1], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
s.sendall(raw)
print(s.recv(65536).split(b"\r\n")[0].decode())
PY
)
  case $first in *" 200"*) ;; *) echo "bench: the captured event got '$first'" >&2; exit 1 ;; esac
  for round in $(seq 1 "$ROUNDS"); do
    line=$(load dup "$DURATION")
    errors=$(( $(field "$line" err_status) + $(field "$line" err_timeout) + $(field "$line" err_connect) ))
    rate=$(awk -v r="$(field "$line" requests)" -v d="$(field "$line" duration_us)" 'BEGIN {printf "%.0f", r / d * 1e6}')
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$HG/status")
    shown=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$ADMIN/events/bench/$CAPTURED" | wc -c)
    t=$(curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$ADMIN/events/bench/$CAPTURED")
    dups=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$ADMIN/events/bench/$CAPTURED" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["duplicates"])')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$round" "$rate" "$(field "$line" p99_us)" \
      "$rss" "$(store_bytes "$s")" "$(record_bytes "$s")" "$shown" "$t" "$errors" >> "$RESULTS"
    echo "   round $round: $rate duplicates/s p99 $(field "$line" p99_us) us, RSS $rss KiB," \
      "store $(store_bytes "$s") B, record $(record_bytes "$s") B stored / $shown B shown in ${t}s," \
      "$dups duplicates counted, $errors errors"
  done
  kill "$HG"; wait "$HG" 2>/dev/null || true
done

echo
echo "store   round  dup/s   ÷fresh  p99 ms  RSS MiB  store MiB  record B  shown B  GET s"
awk -F'\t' '$2 == "fresh" {fresh[$1] = $3; next}
  {printf "%-7s %5s  %6d  %5.2f×  %6.1f  %7.1f  %9.2f  %8s  %7s  %5s\n", $1, $2, $3, $3 / fresh[$1],
     $4 / 1000, $5 / 1024, $6 / 1048576, $7, $8, $9}' "$RESULTS"
