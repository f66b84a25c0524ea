#!/usr/bin/env bash
# What traces cost (DESIGN §7c): fresh events in forward mode, each store
# with no [tracing] table (the reference) and with `sample_ratio = 1.0`
# (every request traced: a server span, verify, claim and the client span to
# the app), exported to an OTLP/HTTP stand-in.
#
#   bash bench/traces.sh         # build, measure, print the tables
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk and the collector stand-in (a second nginx answering 200
# to every POST /v1/traces, as a collector elsewhere would) run on
# $CLIENT_CPU, so the export's CPU is hookgate's own: encoding the spans and
# writing the requests. Rounds are interleaved so each ratio compares
# numbers taken under the same machine load; the tables show medians.
# Every run starts from an empty store; the event trail is on (its default
# bound), as in production.
#
# Each row also gives hookgate's CPU time per answered event (all its
# threads, from /proc) and the spans it dropped (0 means the export kept up).
#
# BEFORE_BIN=<a hookgate built without traces> adds a `<store>-before`
# variant per store, run with that binary: the last table then says what
# the code of traces costs when [tracing] is absent.
#
# Knobs (environment): ROUNDS=3 DURATION=5 CONNS=64 BODY=1024 RATIO=1.0 POOL=250000
# VARIANTS="memory memory-traced ..." HOOKGATE_BIN=<prebuilt binary> BEFORE_BIN=.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
BODY=${BODY:-1024}
RATIO=${RATIO:-1.0}
POOL=${POOL:-250000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECRET=bench-secret-not-for-production

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools nginx wrk redis-server redis-cli python3 taskset curl
use_release_build
work_dir traces-bench

APP_PORT=$(free_port); REDIS_PORT=$(free_port); OTLP_PORT=$(free_port)
start_app "$APP_PORT"
start_nginx otlp "$OTLP_PORT" "$CLIENT_CPU" \
  "location = /v1/traces { default_type application/x-protobuf; return 200 ''; }"
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$OTLP_PORT"; wait_port "$REDIS_PORT"

declare -A PORT ADMIN STORE TRACING HG_PID BIN
DEFAULT_VARIANTS="memory memory-traced sqlite sqlite-traced redis redis-traced"
[ -n "${BEFORE_BIN:-}" ] && DEFAULT_VARIANTS="memory-before $DEFAULT_VARIANTS sqlite-before redis-before"
# shellcheck disable=SC2206 # a list of words on purpose
VARIANTS=(${VARIANTS:-$DEFAULT_VARIANTS})
for v in "${VARIANTS[@]}"; do
  PORT[$v]=$(free_port); ADMIN[$v]=$(free_port); TRACING[$v]=""
  case $v in *-before) BIN[$v]=$BEFORE_BIN ;; *) BIN[$v]=$HOOKGATE_BIN ;; esac
  case $v in
    memory*) STORE[$v]=$'kind = "memory"\nmemory_max_entries = 4000000' ;;
    redis*) STORE[$v]="kind = \"redis\""$'\n'"url = \"redis://127.0.0.1:$REDIS_PORT\"" ;;
    *) STORE[$v]="kind = \"sqlite\""$'\n'"path = \"$WORK/$v.db\""$'\n'"sync = \"full\"" ;;
  esac
  case $v in
    *-traced) TRACING[$v]="[tracing]"$'\n'"otlp_endpoint = \"http://127.0.0.1:$OTLP_PORT\""$'\n'"sample_ratio = $RATIO" ;;
  esac
  cat > "$WORK/$v.toml" <<CONF
[server]
listen = "127.0.0.1:${PORT[$v]}"
upstream = "http://127.0.0.1:$APP_PORT"
[admin]
listen = "127.0.0.1:${ADMIN[$v]}"
[store]
${STORE[$v]}
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "github"
secrets = ["$SECRET"]
${TRACING[$v]}
CONF
  "${BIN[$v]}" check --config "$WORK/$v.toml" >/dev/null
done

start() {
  rm -f "$WORK/$1.db" "$WORK/$1.db-wal" "$WORK/$1.db-shm"
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  taskset -c "$SERVER_CPU" "${BIN[$1]}" run --config "$WORK/$1.toml" >>"$WORK/$1.log" 2>&1 &
  HG_PID[$1]=$!
  PIDS+=($!)
  wait_port "${PORT[$1]}"; wait_port "${ADMIN[$1]}"
}
stop() {
  kill "${HG_PID[$1]}" 2>/dev/null || true
  wait "${HG_PID[$1]}" 2>/dev/null || true
}
metric() { # variant name -> its value now (0 when absent)
  curl -s --max-time 5 "http://127.0.0.1:${ADMIN[$1]}/metrics" |
    awk -v name="$2" '$1 == name {v = $2} /^hookgate_requests_total/ && name == "answered" && /outcome="forwarded"/ {v += $2} END {print v + 0}'
}

# Every run starts from an empty store, so one pool of fresh events serves them all.
echo "== generating a pool of $POOL signed events"
python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
  --body-bytes "$BODY" --prefix ev --count "$POOL" --out "$WORK/pool" > "$WORK/pool.len"

RESULTS=$WORK/results.tsv
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for v in "${VARIANTS[@]}"; do
    start "$v"
    ok0=$(metric "$v" answered); t0=$(ticks "${HG_PID[$v]}")
    line=$(taskset -c "$CLIENT_CPU" timeout $((DURATION + 60)) \
      wrk -t1 -c"$CONNS" -d"${DURATION}s" --timeout 5s -s "$ROOT/bench/pool.lua" \
      "http://127.0.0.1:${PORT[$v]}/webhooks/bench" -- "$WORK/pool" "$(cat "$WORK/pool.len")" | grep '^RESULT')
    t1=$(ticks "${HG_PID[$v]}"); ok1=$(metric "$v" answered)
    sleep 1 # the last batch of spans goes out
    dropped=$(metric "$v" hookgate_trace_spans_dropped_total)
    stop "$v"
    printf '%s\t%s\t%s ok=%d ticks=%d dropped=%d\n' "$round" "$v" "$line" $((ok1 - ok0)) $((t1 - t0)) "$dropped" >> "$RESULTS"
    echo "   $v: ${line#RESULT } ok=$((ok1 - ok0)) ticks=$((t1 - t0)) dropped=$dropped"
  done
done

python3 - "$RESULTS" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    _, variant, rest = line.rstrip("\n").split("\t")
    kv = dict(p.split("=", 1) for p in rest.split() if "=" in p)
    rows.setdefault(variant, []).append(kv)
num = lambda kv, k: float(kv.get(k) or 0)
rate = lambda kv: num(kv, "ok") / (num(kv, "duration_us") / 1e6)
tick_us = 1e6 / int(sys.argv[2])
cpu = lambda kv: num(kv, "ticks") * tick_us / num(kv, "ok") if num(kv, "ok") else 0.0
print()
print("| hookgate + store | fresh events / s (median) | CPU µs per event | p99 (µs) | spans dropped |")
print("|---|---|---|---|---|")
for v, kvs in rows.items():
    print(f"| {v} | {statistics.median(rate(k) for k in kvs):,.0f} | "
          f"{statistics.median(cpu(k) for k in kvs):.1f} | "
          f"{statistics.median(num(k, 'p99_us') for k in kvs):,.0f} | "
          f"{sum(int(num(k, 'dropped')) for k in kvs)} |")
print()
print("| store | traced ÷ untraced, fresh events / s: round by round, median | lowest | highest | CPU per event, traced ÷ untraced |")
print("|---|---|---|---|---|")
for base in ["memory", "sqlite", "redis"]:
    on = base + "-traced"
    if base in rows and on in rows:
        paired = [rate(b) / rate(a) for a, b in zip(rows[base], rows[on])]
        cpu_ratio = statistics.median(cpu(b) / cpu(a) for a, b in zip(rows[base], rows[on]) if cpu(a))
        print(f"| {base} | {statistics.median(paired):.3f} | {min(paired):.3f} | {max(paired):.3f} | {cpu_ratio:.3f} |")
if any(v.endswith("-before") for v in rows):
    print()
    print("| store | no [tracing] ÷ before traces, fresh events / s: round by round, median | lowest | highest |")
    print("|---|---|---|---|")
    for base in ["memory", "sqlite", "redis"]:
        if base in rows and base + "-before" in rows:
            paired = [rate(a) / rate(b) for a, b in zip(rows[base], rows[base + "-before"])]
            print(f"| {base} | {statistics.median(paired):.3f} | {min(paired):.3f} | {max(paired):.3f} |")
PY
