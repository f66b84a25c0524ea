#!/usr/bin/env bash
# hookgate load benchmark: the app alone, a plain nginx reverse proxy, and
# hookgate (memory store, then Redis) in front of the same app, measured side
# by side on loopback, then hookgate's memory use.
#
#   bash bench/run.sh            # build, measure, print, rewrite docs/performance.md
#
# Servers (app stand-in, nginx proxy, redis-server, hookgate) share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU. Each round measures every target
# once with fresh events (a pool of distinct signed requests, none sent twice)
# and once with a duplicate storm (one event, already delivered, sent again and
# again). Rounds are interleaved so every ratio compares numbers taken under
# the same machine load; the table shows the median of the rounds.
#
# Then, at a fixed rate (open loop: bench/openloop.rs keeps the schedule
# whatever the answers), the latency each target adds to the app's own.
#
# Knobs (environment): ROUNDS=3 DURATION=5 (seconds per measurement)
# CONNS=64 BODY=1024 SCHEME=github|stripe POOL=<events per fresh pool>
# RATE=2000 RATE_SECONDS=10 RATE_CONNS=32 (the fixed-rate phase; RATE=0
# skips it) MEMORY=1 (0 skips the memory phase) NONCES=<at most POOL> DOCS=1
# (0 leaves docs/performance.md alone) HOOKGATE_BIN=<prebuilt binary>
# STORES=1 (0 skips the last phase: bench/store.sh, the stores and the
# trail side by side, printed after the report).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
BODY=${BODY:-1024}
SCHEME=${SCHEME:-github}
POOL=${POOL:-400000}
MEMORY=${MEMORY:-1}
NONCES=${NONCES:-$POOL}
DOCS=${DOCS:-1}
RATE=${RATE:-2000}
RATE_SECONDS=${RATE_SECONDS:-10}
RATE_CONNS=${RATE_CONNS:-32}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECRET=bench-secret-not-for-production

for tool in nginx wrk redis-server redis-cli python3 taskset curl; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required (apt-get install nginx-light wrk redis-server curl)" >&2; exit 1; }
done

if [ -z "${HOOKGATE_BIN:-}" ]; then
  echo "== cargo build --release"
  cargo build --release --locked --quiet
  HOOKGATE_BIN=$ROOT/target/release/hookgate
fi
if [ "$RATE" != 0 ]; then
  echo "== cargo bench --bench openloop --no-run (the fixed-rate generator)"
  OPENLOOP=$(cargo bench --locked --bench openloop --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m.get("target", {}).get("name") == "openloop":
        print(m["executable"])')
  [ -x "$OPENLOOP" ] || { echo "bench: the openloop generator did not build" >&2; exit 1; }
fi

WORK=$(mktemp -d /tmp/hookgate-bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
echo "== work dir $WORK"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
APP_PORT=$(free_port); PROXY_PORT=$(free_port); REDIS_PORT=$(free_port)
HG_MEM_PORT=$(free_port); HG_MEM_ADMIN=$(free_port)
HG_REDIS_PORT=$(free_port); HG_REDIS_ADMIN=$(free_port)

wait_port() { # port
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on $1" >&2; return 1
}

# --- the app stand-in and the nginx proxy: one worker each, keep-alive everywhere
nginx_conf() { # name, server block
  mkdir -p "$WORK/$1"
  cat > "$WORK/$1/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $WORK/$1/nginx.pid;
error_log $WORK/$1/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $WORK/$1/body;
  proxy_temp_path $WORK/$1/proxy;
  keepalive_requests 10000000;
  keepalive_timeout 120s;
$2
}
EOF
}
nginx_conf app "
  access_log off;
  server {
    listen 127.0.0.1:$APP_PORT;
    location / { return 200 '{\"ok\":true}'; }
  }"
nginx_conf proxy "
  access_log $WORK/proxy/access.log;
  upstream app {
    server 127.0.0.1:$APP_PORT;
    keepalive 128;
    keepalive_requests 10000000;
  }
  server {
    listen 127.0.0.1:$PROXY_PORT;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
    }
  }"
for n in app proxy; do
  taskset -c "$SERVER_CPU" nginx -e "$WORK/$n/error.log" -p "$WORK/$n" -c "$WORK/$n/nginx.conf" &
  PIDS+=($!)
done

taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$PROXY_PORT"; wait_port "$REDIS_PORT"

# --- hookgate: one source, the chosen scheme; memory and Redis variants
case $SCHEME in
  github) TOLERANCE="" ;;
  stripe) TOLERANCE='tolerance = "1h"' ;;
  *) echo "bench: SCHEME is github or stripe" >&2; exit 1 ;;
esac
hg_conf() { # file, port, admin, store lines
  cat > "$1" <<EOF
[server]
listen = "127.0.0.1:$2"
upstream = "http://127.0.0.1:$APP_PORT"
upstream_timeout = "10s"

[admin]
listen = "127.0.0.1:$3"

[store]
$4
nonce_ttl = "24h"
memory_max_entries = 2000000

[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "$SCHEME"
secrets = ["$SECRET"]
$TOLERANCE
EOF
}
hg_conf "$WORK/hg-mem.toml" "$HG_MEM_PORT" "$HG_MEM_ADMIN" 'kind = "memory"'
hg_conf "$WORK/hg-redis.toml" "$HG_REDIS_PORT" "$HG_REDIS_ADMIN" "kind = \"redis\"
url = \"redis://127.0.0.1:$REDIS_PORT\""
"$HOOKGATE_BIN" check --config "$WORK/hg-mem.toml" >/dev/null
"$HOOKGATE_BIN" check --config "$WORK/hg-redis.toml" >/dev/null

declare -A HG_PID
start_hookgate() { # variant
  local port admin
  if [ "$1" = mem ]; then port=$HG_MEM_PORT admin=$HG_MEM_ADMIN; else port=$HG_REDIS_PORT admin=$HG_REDIS_ADMIN; fi
  # Logs as deployed (JSON lines, level info), to a file as a container runtime would.
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/hg-$1.toml" >>"$WORK/hg-$1.log" 2>&1 &
  HG_PID[$1]=$!
  PIDS+=($!)
  wait_port "$port"; wait_port "$admin"
}
stop_hookgate() { # variant
  local pid=${HG_PID[$1]:-}
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  HG_PID[$1]=""
}

# --- request pools (same bytes for every target)
gen() { # prefix count out; the record length goes to out.len
  python3 "$ROOT/bench/gen_pool.py" --scheme "$SCHEME" --secret "$SECRET" --path /webhooks/bench \
    --body-bytes "$BODY" --prefix "$1" --count "$2" --out "$3" > "$3.len"
}
echo "== generating $POOL signed $SCHEME events of $BODY bytes"
gen fresh "$POOL" "$WORK/fresh.pool"
gen warm 20000 "$WORK/warm.pool"
gen dup 1 "$WORK/dup.pool"
[ "$RATE" != 0 ] && gen rate $((RATE * RATE_SECONDS)) "$WORK/rate.pool"

# --- helpers
rss_kib() { # pid... -> summed VmRSS in KiB
  local total=0 pid v
  for pid in "$@"; do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
nginx_pids() { # name -> master and worker pids
  local master
  master=$(cat "$WORK/$1/nginx.pid")
  echo "$master $(pgrep -P "$master" | tr '\n' ' ')"
}
outcomes() { # admin port -> "forwarded=N duplicate=N ..." from /metrics
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
    awk -F'[{}]' '/^hookgate_requests_total[{]/ {
      split($2, kv, ","); for (i in kv) if (kv[i] ~ /^outcome=/) { o = kv[i]; gsub(/outcome=|"/, "", o) }
      split($3, v, " "); printf "%s=%s ", o, v[1] }'
}
send_once() { # port pool-file: sends the one request it holds, prints the status line
  timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1; cat '$2' >&3; head -n1 <&3" | tr -d '\r'
}
port_of() {
  case $1 in
    direct) echo "$APP_PORT" ;; nginx) echo "$PROXY_PORT" ;;
    hg-mem) echo "$HG_MEM_PORT" ;; hg-redis) echo "$HG_REDIS_PORT" ;;
  esac
}
admin_of() { case $1 in hg-mem) echo "$HG_MEM_ADMIN" ;; hg-redis) echo "$HG_REDIS_ADMIN" ;; esac; }
rss_of() {
  case $1 in
    direct) rss_kib $(nginx_pids app) ;; nginx) rss_kib $(nginx_pids proxy) ;;
    hg-mem) rss_kib "${HG_PID[mem]}" ;; hg-redis) rss_kib "${HG_PID[redis]}" ;;
  esac
}
load() { # target pool seconds -> RESULT line
  taskset -c "$CLIENT_CPU" timeout $(( $3 + 60 )) \
    wrk -t1 -c"$CONNS" -d"$3s" --timeout 5s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:$(port_of "$1")/webhooks/bench" -- "$2" "$(cat "$2.len")" 1 | grep '^RESULT'
}

RESULTS=$WORK/results.tsv
: > "$RESULTS"
CLK_TCK=$(getconf CLK_TCK)
REDIS_PID=$(redis-cli -p "$REDIS_PORT" info server | awk -F: '/^process_id/ {print $2}' | tr -d '\r')
stat_ticks() { # awk-expression pid... -> summed over the pids, from /proc/PID/stat (all threads)
  local expr=$1 total=0 pid v
  shift
  for pid in "$@"; do
    v=$(awk "{print $expr}" "/proc/$pid/stat" 2>/dev/null || echo 0)
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
cpu_ticks() { stat_ticks '$14 + $15' "$@"; } # user + system clock ticks
user_ticks() { stat_ticks '$14' "$@"; }      # user clock ticks
proxy_pids() {
  case $1 in
    direct) echo "" ;; nginx) nginx_pids proxy ;;
    hg-mem) echo "${HG_PID[mem]}" ;; hg-redis) echo "${HG_PID[redis]}" ;;
  esac
}
redis_calls() { # INFO commandstats since the last reset -> "redis_calls=N redis_cmd_set=N ..."
  redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' |
    awk -F'[:=,]' '/^cmdstat_/ { name = substr($1, 9); if (name ~ /^(config|info)/) next
      total += $3; printf "redis_cmd_%s=%s ", name, $3 } END { printf "redis_calls=%d", total }'
}
measure() { # round mode target pool
  local before after line rss p0 p1 r0 r1 a0 a1
  local admin; admin=$(admin_of "$3")
  local proxy; proxy=$(proxy_pids "$3")
  local app; app=$(nginx_pids app)
  [ -n "$admin" ] && before=$(outcomes "$admin")
  [ "$3" = hg-redis ] && redis-cli -p "$REDIS_PORT" config resetstat >/dev/null
  # shellcheck disable=SC2086
  p0=$(cpu_ticks $proxy); r0=$(cpu_ticks "$REDIS_PID"); a0=$(cpu_ticks $app); u0=$(user_ticks $proxy)
  line=$(load "$3" "$4" "$DURATION")
  # shellcheck disable=SC2086
  p1=$(cpu_ticks $proxy); r1=$(cpu_ticks "$REDIS_PID"); a1=$(cpu_ticks $app); u1=$(user_ticks $proxy)
  rss=$(rss_of "$3")
  local calls=""
  [ "$3" = hg-redis ] && calls=" $(redis_calls)"
  after=""
  [ -n "$admin" ] && after=$(outcomes "$admin")
  line="$line rss_kib=$rss cpu_ticks_proxy=$((p1 - p0)) cpu_ticks_proxy_user=$((u1 - u0)) cpu_ticks_redis=$((r1 - r0)) cpu_ticks_app=$((a1 - a0)) clk_tck=$CLK_TCK$calls"
  printf '%s\t%s\t%s\t%s\tbefore: %s\tafter: %s\n' "$1" "$2" "$3" "$line" "${before:-}" "$after" >> "$RESULTS"
  echo "   $2 $3: ${line#RESULT }"
}

TARGETS=(direct nginx hg-mem hg-redis)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u +%Y-%m-%dT%H:%MZ)
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  # A new hookgate and an empty Redis every round, so the pool is fresh again.
  stop_hookgate mem; stop_hookgate redis
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  start_hookgate mem; start_hookgate redis
  for t in "${TARGETS[@]}"; do load "$t" "$WORK/warm.pool" 1 >/dev/null; done
  for t in "${TARGETS[@]}"; do measure "$round" fresh "$t" "$WORK/fresh.pool"; done
  for t in hg-mem hg-redis; do
    status=$(send_once "$(port_of "$t")" "$WORK/dup.pool")
    case $status in *" 200"*) ;; *) echo "bench: seeding the duplicate on $t got '$status'" >&2; exit 1 ;; esac
  done
  for t in "${TARGETS[@]}"; do measure "$round" dup "$t" "$WORK/dup.pool"; done
done

# --- fixed rate: the latency each target adds at a real load
RATE_RESULTS=$WORK/rate.tsv
: > "$RATE_RESULTS"
if [ "$RATE" != 0 ]; then
  for round in $(seq 1 "$ROUNDS"); do
    echo "== fixed rate $RATE req/s, round $round/$ROUNDS"
    stop_hookgate mem; stop_hookgate redis
    redis-cli -p "$REDIS_PORT" flushall >/dev/null
    start_hookgate mem; start_hookgate redis
    for t in "${TARGETS[@]}"; do load "$t" "$WORK/warm.pool" 1 >/dev/null; done
    for t in "${TARGETS[@]}"; do
      admin=$(admin_of "$t"); before=""; after=""
      [ -n "$admin" ] && before=$(outcomes "$admin")
      line=$(taskset -c "$CLIENT_CPU" timeout $((RATE_SECONDS + 60)) "$OPENLOOP" --port "$(port_of "$t")" \
        --pool "$WORK/rate.pool" --record-len "$(cat "$WORK/rate.pool.len")" \
        --rate "$RATE" --seconds "$RATE_SECONDS" --conns "$RATE_CONNS" | grep '^RESULT')
      [ -n "$admin" ] && after=$(outcomes "$admin")
      printf '%s\t%s\t%s\tbefore: %s\tafter: %s\n' "$round" "$t" "$line" "$before" "$after" >> "$RATE_RESULTS"
      echo "   $t: ${line#RESULT }"
    done
  done
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
REDIS_RSS=$(rss_kib "$(redis-cli -p "$REDIS_PORT" info server | awk -F: '/^process_id/ {print $2}' | tr -d '\r')")

# --- memory: idle, idle keep-alive connections, nonces
MEMFILE=$WORK/memory.tsv
: > "$MEMFILE"
if [ "$MEMORY" = 1 ]; then
  echo "== memory"
  stop_hookgate mem; stop_hookgate redis
  start_hookgate mem
  sleep 1
  idle=$(rss_kib "${HG_PID[mem]}")
  printf 'idle\t0\t%s\n' "$idle" >> "$MEMFILE"
  echo "   idle: $idle KiB"
  # Each count on a new process, after one warm request, so the figure holds
  # only the connections (an allocator keeps what an earlier test freed).
  for n in 1000 10000; do
    stop_hookgate mem; start_hookgate mem
    send_once "$HG_MEM_PORT" "$WORK/dup.pool" >/dev/null
    python3 "$ROOT/bench/hold_conns.py" --port "$HG_MEM_PORT" --count "$n" --hold 3 \
      --measure "${HG_PID[mem]}" >> "$MEMFILE"
  done
  tail -n 2 "$MEMFILE" | sed 's/^/   /'
  # Nonces: the fresh pool once more, through a new hookgate on the memory
  # store: every event in it is distinct, and GitHub's nonce is keyed by the
  # signed body (its delivery id is not signed), so each one is stored.
  if [ "$SCHEME" != github ]; then
    echo "   (the nonce count needs SCHEME=github: skipped)"
  else
  stop_hookgate mem; start_hookgate mem
  send_once "$HG_MEM_PORT" "$WORK/dup.pool" >/dev/null
  before=$(rss_kib "${HG_PID[mem]}")
  taskset -c "$CLIENT_CPU" timeout 120 wrk -t1 -c"$CONNS" -d"$((NONCES / 10000 + 5))s" --timeout 5s \
    -s "$ROOT/bench/pool.lua" "http://127.0.0.1:$HG_MEM_PORT/webhooks/bench" -- \
    "$WORK/fresh.pool" "$(cat "$WORK/fresh.pool.len")" >/dev/null
  sleep 1
  after=$(rss_kib "${HG_PID[mem]}")
  stored=$(outcomes "$HG_MEM_ADMIN")
  printf 'nonces\t%s\t%s\t%s\t%s\n' "$NONCES" "$before" "$after" "$stored" >> "$MEMFILE"
  echo "   nonces: $before -> $after KiB ($stored)"
  fi
fi

# --- report
python3 "$ROOT/bench/report.py" --results "$RESULTS" --memory "$MEMFILE" --rate-results "$RATE_RESULTS" \
  --rate "$RATE" --rate-seconds "$RATE_SECONDS" --rate-conns "$RATE_CONNS" \
  --rounds "$ROUNDS" --duration "$DURATION" --conns "$CONNS" --body "$BODY" --scheme "$SCHEME" \
  --pool "$POOL" --load-before "$LOAD_BEFORE" --load-after "$LOAD_AFTER" --started "$STARTED" \
  --redis-rss "$REDIS_RSS" --commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  ${DOCS:+$( [ "$DOCS" = 1 ] && echo --docs "$ROOT/docs/performance.md")}

# --- the stores and the trail (bench/store.sh prints its own tables)
if [ "${STORES:-1}" != 0 ]; then
  HOOKGATE_BIN=$HOOKGATE_BIN bash "$ROOT/bench/store.sh"
fi
