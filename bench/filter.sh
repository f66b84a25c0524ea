#!/usr/bin/env bash
# What a filtered event costs against a duplicate (DESIGN §3a: "a filtered
# event costs no more than a duplicate"). One hookgate per store serves two
# GitHub sources: `bench`, without rules, and `filtered`, whose second rule
# ignores the pool's event type (the first reads a field the body lacks, so
# every request walks two rules). Each round replays one captured event at
# each source, interleaved: on `bench` it was delivered once first, so every
# copy is a duplicate (a store round trip); on `filtered` every copy is
# ignored by the rule (no store). The ratio is filtered ÷ duplicate, per
# round, in the same process under the same load.
#
#   bash bench/filter.sh          # build, measure, print the table
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU.
#
# Knobs (environment): ROUNDS=5 DURATION=5 CONNS=32 BODY=1024
# STORES="memory redis" HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-32}
BODY=${BODY:-1024}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECRET=bench-secret-not-for-production
# shellcheck disable=SC2206 # a list of words on purpose
STORES=(${STORES:-memory redis})

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools nginx wrk redis-server redis-cli python3 taskset curl
use_release_build
work_dir filter-bench

APP_PORT=$(free_port); REDIS_PORT=$(free_port)
start_app "$APP_PORT"
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$REDIS_PORT"

for name in bench filtered; do
  python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path "/webhooks/$name" \
    --body-bytes "$BODY" --prefix "$name" --count 1 --out "$WORK/$name" > "$WORK/$name.len"
done

PORT=$(free_port); ADMIN=$(free_port)
config() { # store -> config file
  local store
  case $1 in
    memory) store='kind = "memory"' ;;
    redis) store="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$REDIS_PORT\"" ;;
  esac
  cat > "$WORK/$1.toml" <<CONF
[server]
listen = "127.0.0.1:$PORT"
upstream = "http://127.0.0.1:$APP_PORT"
[admin]
listen = "127.0.0.1:$ADMIN"
[store]
$store
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "github"
secrets = ["$SECRET"]
[[source]]
name = "filtered"
path = "/webhooks/filtered"
scheme = "github"
secrets = ["$SECRET"]
[[source.filter]]
name = "vip"
field = "/data/object/customer"
in = ["cus_vip_1", "cus_vip_2"]
action = "deliver"
[[source.filter]]
name = "pushes"
field = "/type"
equals = "push"
action = "ignore"
CONF
}
load() { # pool seconds -> RESULT line
  taskset -c "$CLIENT_CPU" timeout $(($2 + 60)) \
    wrk -t1 -c"$CONNS" -d"$2s" --timeout 5s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:$PORT/webhooks/$1" -- "$WORK/$1" "$(cat "$WORK/$1.len")" 1 0 | grep '^RESULT'
}
send_once() { # pool -> status line
  taskset -c "$CLIENT_CPU" python3 - "$WORK/$1" "$PORT" <<'PY'
import socket, sys
raw = open(sys.argv[1], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
s.sendall(raw)
print(s.recv(65536).split(b"\r\n\r\n")[-1].decode(errors="replace"))
PY
}
count() { # outcome -> hookgate_requests_total for it, over both sources
  curl -s "http://127.0.0.1:$ADMIN/metrics" |
    awk -v o="outcome=\"$1\"" 'index($0, "hookgate_requests_total{") == 1 && index($0, o) {s += $NF} END {print s + 0}'
}

RESULTS=$WORK/results.tsv
: > "$RESULTS"
for s in "${STORES[@]}"; do
  echo "== $s"
  config "$s"
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/$s.toml" >>"$WORK/$s.log" 2>&1 &
  HG=$!
  PIDS+=($!)
  wait_port "$PORT"; wait_port "$ADMIN"
  first=$(send_once bench)
  case $first in *'"ok":true'*) ;; *) echo "bench: the captured event got '$first'" >&2; exit 1 ;; esac
  first=$(send_once filtered)
  case $first in *'"ignored":"filtered"'*) ;; *) echo "bench: the filtered event got '$first'" >&2; exit 1 ;; esac
  for round in $(seq 1 "$ROUNDS"); do
    for kind in bench filtered; do
      before_dup=$(count duplicate); before_filtered=$(count filtered)
      line=$(load "$kind" "$DURATION")
      dup=$(( $(count duplicate) - before_dup )); filtered=$(( $(count filtered) - before_filtered ))
      rate=$(awk -v r="$(field "$line" requests)" -v d="$(field "$line" duration_us)" 'BEGIN {printf "%.0f", r / d * 1e6}')
      cpu=$(ticks "$HG")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$round" "$kind" "$rate" "$(field "$line" p99_us)" "$dup" "$filtered" >> "$RESULTS"
      echo "   round $round $kind: $rate/s p99 $(field "$line" p99_us) us ($dup duplicate, $filtered filtered answers; cpu ticks $cpu)"
    done
  done
  kill "$HG"; wait "$HG" 2>/dev/null || true
done

echo
echo "store   round  duplicate/s  filtered/s  filtered ÷ duplicate  p99 ms dup / filtered"
python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = {}
for store, rnd, kind, rate, p99, dup, filt in rows:
    by.setdefault((store, rnd), {})[kind] = (float(rate), float(p99), int(dup), int(filt))
ratios = {}
for (store, rnd), k in sorted(by.items()):
    d, f = k["bench"], k["filtered"]
    if d[3] or f[2]:
        sys.exit(f"bench: answers mixed up in {store} round {rnd}: {k}")
    r = f[0] / d[0]
    ratios.setdefault(store, []).append(r)
    print(f"{store:<7} {rnd:>5}  {d[0]:>11.0f}  {f[0]:>10.0f}  {r:>20.2f}×  {d[1]/1000:.2f} / {f[1]/1000:.2f}")
for store, rs in ratios.items():
    print(f"{store:<7} median filtered ÷ duplicate {statistics.median(rs):.2f}× over {len(rs)} rounds")
PY
