#!/usr/bin/env bash
# Instructions per request, counted by callgrind: repeatable on a busy machine
# where wall-clock numbers are not.
#
#   bash bench/profile.sh [memory|redis] [fresh|dup] [seconds]
#
# Starts the app stand-in (nginx), a private redis-server when asked, and the
# release hookgate under callgrind; sends a warm-up, zeroes the counters, sends
# a few seconds of load (8 connections), dumps, and prints the instructions
# per request (from hookgate's own request counter) and the costliest
# functions. The callgrind file is kept in bench/out/ for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STORE=${1:-memory}
MODE=${2:-fresh}
SECONDS_LOAD=${3:-10}
SCHEME=${SCHEME:-github}
# The trail's bound ([admin] trail_max_events; 0 = no trail).
TRAIL=${TRAIL:-100000}
SECRET=bench-secret-not-for-production
BIN=${HOOKGATE_BIN:-$ROOT/target/release/hookgate}
command -v valgrind >/dev/null || { echo "profile: valgrind is required" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release --locked --quiet

WORK=$(mktemp -d /tmp/hookgate-profile.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "profile: nothing listens on $1" >&2; return 1
}
APP=$(free_port); PORT=$(free_port); ADMIN=$(free_port); REDIS=$(free_port)

mkdir -p "$WORK/app"
cat > "$WORK/app/nginx.conf" <<EOF
daemon off; worker_processes 1; pid $WORK/app/nginx.pid; error_log $WORK/app/error.log warn;
events {}
http { access_log off; client_body_temp_path $WORK/app/body; keepalive_requests 10000000;
  server { listen 127.0.0.1:$APP; location / { return 200 '{"ok":true}'; } } }
EOF
nginx -e "$WORK/app/error.log" -p "$WORK/app" -c "$WORK/app/nginx.conf" & PIDS+=($!)
STORE_LINES='kind = "memory"'
if [ "$STORE" = redis ]; then
  redis-server --bind 127.0.0.1 --port "$REDIS" --save "" --appendonly no --logfile "$WORK/redis.log" & PIDS+=($!)
  STORE_LINES="kind = \"redis\"
url = \"redis://127.0.0.1:$REDIS\""
fi
TOLERANCE=""
[ "$SCHEME" = stripe ] && TOLERANCE='tolerance = "1h"'
cat > "$WORK/hg.toml" <<EOF
[server]
listen = "127.0.0.1:$PORT"
upstream = "http://127.0.0.1:$APP"
[admin]
listen = "127.0.0.1:$ADMIN"
trail_max_events = $TRAIL
[store]
$STORE_LINES
[[source]]
name = "bench"
path = "/webhooks/bench"
scheme = "$SCHEME"
secrets = ["$SECRET"]
$TOLERANCE
EOF
gen() { python3 "$ROOT/bench/gen_pool.py" --scheme "$SCHEME" --secret "$SECRET" --path /webhooks/bench --prefix "$1" --count "$2" --out "$3" > "$3.len"; }
gen warm 2000 "$WORK/warm.pool"
gen fresh 200000 "$WORK/fresh.pool"
gen dup 1 "$WORK/dup.pool"

mkdir -p "$ROOT/bench/out"
OUT=$ROOT/bench/out/callgrind.$STORE.$MODE.$SCHEME.trail$TRAIL
taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$OUT" --dump-instr=no \
  "$BIN" run --config "$WORK/hg.toml" > "$WORK/hg.log" 2>"$WORK/valgrind.log" &
VG=$!
PIDS+=($VG)
wait_port "$PORT"; wait_port "$ADMIN"
count() {
  curl -s --max-time 10 "http://127.0.0.1:$ADMIN/metrics" |
    awk '/^hookgate_requests_total[{]/ {n += $NF} END {print n + 0}'
}
load() { # pool seconds
  taskset -c 1 timeout $(( $2 + 60 )) wrk -t1 -c8 -d"$2s" --timeout 10s -s "$ROOT/bench/pool.lua" \
    "http://127.0.0.1:$PORT/" -- "$1" "$(cat "$1.len")" 1 | grep '^RESULT' || true
}
load "$WORK/warm.pool" 2 >/dev/null
if [ "$MODE" = dup ]; then
  timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; cat '$WORK/dup.pool' >&3; head -n1 <&3" >/dev/null
  POOLFILE=$WORK/dup.pool
else
  POOLFILE=$WORK/fresh.pool
fi
sleep 1
callgrind_control -z "$VG" >/dev/null
before=$(count)
load "$POOLFILE" "$SECONDS_LOAD" >/dev/null
after=$(count)
# The metrics scrapes themselves are counted too; a few among thousands.
callgrind_control -d "$VG" >/dev/null
sleep 1
requests=$((after - before))
dump=$(ls -t "$OUT"* | head -n1)
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
echo "store=$STORE mode=$MODE scheme=$SCHEME trail=$TRAIL requests=$requests instructions=$total per_request=$((total / (requests > 0 ? requests : 1)))"
callgrind_annotate --inclusive=no "$dump" 2>/dev/null | sed -n '/^Ir/,$p' | head -n 45 > "$OUT.self.txt"
callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | sed -n '/^Ir/,$p' | head -n 80 > "$OUT.incl.txt"
echo "top functions: $OUT.self.txt (self) and $OUT.incl.txt (inclusive)"
