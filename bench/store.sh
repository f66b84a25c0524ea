#!/usr/bin/env bash
# The sqlite store against Redis, measured side by side on loopback: fresh
# events in forward mode on hookgate + Redis (the reference) and on hookgate +
# sqlite (sync = "full"), and queue-mode acknowledgements on sqlite
# (sync = "full"), with the group commit's batch size and fsync time under
# that load.
#
#   bash bench/store.sh          # build, measure, print the table
#
# The app stand-in (one nginx worker), redis-server and hookgate share CPU
# $SERVER_CPU; wrk runs alone on $CLIENT_CPU. Rounds are interleaved so every
# ratio compares numbers taken under the same machine load; the table shows
# the median of the rounds. The sqlite file lives in a temp directory on the
# disk that holds /tmp (its fsync cost is that disk's).
#
# Knobs (environment): ROUNDS=3 DURATION=5 CONNS=64 BODY=1024
# POOL=<events per pool> HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNS=${CONNS:-64}
BODY=${BODY:-1024}
POOL=${POOL:-200000}
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

WORK=$(mktemp -d /tmp/hookgate-store-bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on $1" >&2; return 1
}
APP_PORT=$(free_port); REDIS_PORT=$(free_port)

mkdir -p "$WORK/app"
cat > "$WORK/app/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $WORK/app/nginx.pid;
error_log $WORK/app/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $WORK/app/body;
  access_log off;
  keepalive_requests 10000000;
  server { listen 127.0.0.1:$APP_PORT; location / { return 200 '{"ok":true}'; } }
}
EOF
taskset -c "$SERVER_CPU" nginx -e "$WORK/app/error.log" -p "$WORK/app" -c "$WORK/app/nginx.conf" &
PIDS+=($!)
taskset -c "$SERVER_CPU" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$APP_PORT"; wait_port "$REDIS_PORT"

# Three variants: name -> port, admin port, [store] lines, source extra.
declare -A PORT ADMIN STORE EXTRA HG_PID
VARIANTS=(redis sqlite queue)
for v in "${VARIANTS[@]}"; do PORT[$v]=$(free_port); ADMIN[$v]=$(free_port); done
STORE[redis]="kind = \"redis\"
url = \"redis://127.0.0.1:$REDIS_PORT\""
STORE[sqlite]="kind = \"sqlite\"
path = \"$WORK/forward.db\"
sync = \"full\""
STORE[queue]="kind = \"sqlite\"
path = \"$WORK/queue.db\"
sync = \"full\""
EXTRA[redis]=""; EXTRA[sqlite]=""; EXTRA[queue]='delivery = "queue"'
for v in "${VARIANTS[@]}"; do
  cat > "$WORK/$v.toml" <<EOF
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
${EXTRA[$v]}
EOF
  "$HOOKGATE_BIN" check --config "$WORK/$v.toml" >/dev/null
done
start() {
  rm -f "$WORK/$1.db" "$WORK/$1.db-wal" "$WORK/$1.db-shm" "$WORK/forward.db"* "$WORK/queue.db"*
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/$1.toml" >>"$WORK/$1.log" 2>&1 &
  HG_PID[$1]=$!
  PIDS+=($!)
  wait_port "${PORT[$1]}"; wait_port "${ADMIN[$1]}"
}
stop() {
  kill "${HG_PID[$1]}" 2>/dev/null || true
  wait "${HG_PID[$1]}" 2>/dev/null || true
}
metric() { # admin name -> value
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'
}

gen() {
  python3 "$ROOT/bench/gen_pool.py" --scheme github --secret "$SECRET" --path /webhooks/bench \
    --body-bytes "$BODY" --prefix "$1" --count "$2" --out "$3" > "$3.len"
}
echo "== generating pools of $POOL signed events"
RESULTS=$WORK/results.tsv
: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for v in "${VARIANTS[@]}"; do
    gen "r$round$v" "$POOL" "$WORK/pool"
    start "$v"
    redis-cli -p "$REDIS_PORT" flushall >/dev/null
    line=$(taskset -c "$CLIENT_CPU" timeout $((DURATION + 60)) \
      wrk -t1 -c"$CONNS" -d"${DURATION}s" --timeout 5s -s "$ROOT/bench/pool.lua" \
      "http://127.0.0.1:${PORT[$v]}/webhooks/bench" -- "$WORK/pool" "$(cat "$WORK/pool.len")" 1 | grep '^RESULT')
    batch_sum=$(metric "${ADMIN[$v]}" hookgate_store_batch_size_sum)
    batch_count=$(metric "${ADMIN[$v]}" hookgate_store_batch_size_count)
    sync_sum=$(metric "${ADMIN[$v]}" hookgate_store_sync_seconds_sum)
    sync_count=$(metric "${ADMIN[$v]}" hookgate_store_sync_seconds_count)
    ok=$(curl -s "http://127.0.0.1:${ADMIN[$v]}/metrics" | awk '/^hookgate_requests_total/ && /outcome="(forwarded|queued)"/ {s += $2} END {print s + 0}')
    stop "$v"
    printf '%s\t%s\t%s batch_sum=%s batch_count=%s sync_sum=%s sync_count=%s ok=%s\n' \
      "$round" "$v" "$line" "${batch_sum:-0}" "${batch_count:-0}" "${sync_sum:-0}" "${sync_count:-0}" "$ok" >> "$RESULTS"
    echo "   $v: ${line#RESULT } ok=$ok batches=${batch_count:-0}"
  done
done

python3 - "$RESULTS" "$DURATION" <<'EOF'
import statistics, sys
path, duration = sys.argv[1], float(sys.argv[2])
rows = {}
for line in open(path):
    _, variant, rest = line.rstrip("\n").split("\t")
    kv = dict(p.split("=", 1) for p in rest.split() if "=" in p)
    rows.setdefault(variant, []).append(kv)
def med(variant, f):
    return statistics.median(f(kv) for kv in rows[variant])
rate = lambda kv: int(kv["ok"]) / (int(kv["duration_us"]) / 1e6)
ref = med("redis", rate)
print()
print("| variant | answered 2xx / s (median) | vs hookgate + Redis | p99 (µs) | writes per group commit | fsync (ms, mean) |")
print("|---|---|---|---|---|---|")
for v, label in [("redis", "hookgate + Redis, forward"), ("sqlite", "hookgate + sqlite (full), forward"), ("queue", "hookgate + sqlite (full), queue acks")]:
    r = med(v, rate)
    p99 = med(v, lambda kv: int(kv["p99_us"]))
    def per(kv):
        c = float(kv["batch_count"])
        return float(kv["batch_sum"]) / c if c else 0.0
    def fs(kv):
        c = float(kv["sync_count"])
        return 1000 * float(kv["sync_sum"]) / c if c else 0.0
    b = med(v, per) if v != "redis" else None
    f = med(v, fs) if v != "redis" else None
    print(f"| {label} | {r:,.0f} | {r / ref:.2f}× | {p99:,.0f} | {'—' if b is None else f'{b:.1f}'} | {'—' if f is None else f'{f:.2f}'} |")
EOF
