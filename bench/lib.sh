# Shared by the benchmark scripts: source it after `cd` to the repository
# root, with ROOT set. Gives:
#   need_tools TOOL...      exits with an install hint when one is missing
#   use_release_build       builds hookgate unless HOOKGATE_BIN names one
#   work_dir NAME           WORK, a temp directory removed at exit with every
#                           process whose pid is in PIDS
#   free_port, wait_port PORT
#   start_nginx NAME PORT CPU LOCATIONS
#                           one nginx worker on CPU, in $WORK/NAME, serving
#                           the location blocks LOCATIONS
#   start_app PORT          the app stand-in: start_nginx answering
#                           200 {"ok":true}, on $SERVER_CPU
#   ticks PID [THREAD]      CPU clock ticks (user + system) of the process's
#                           threads of that name, or of all of them
#   field LINE NAME         the value of NAME=... in a RESULT line of pool.lua
# shellcheck shell=bash

need_tools() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || {
      echo "bench: $tool is required (apt-get install nginx-light wrk redis-server sqlite3 curl)" >&2
      exit 1
    }
  done
}

use_release_build() {
  if [ -z "${HOOKGATE_BIN:-}" ]; then
    echo "== cargo build --release"
    cargo build --release --locked --quiet
    HOOKGATE_BIN=$ROOT/target/release/hookgate
  fi
}

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${WORK:-}" ] && rm -rf "$WORK"
}

work_dir() {
  WORK=$(mktemp -d "/tmp/hookgate-$1.XXXXXX")
  trap cleanup EXIT
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() { # port: waits up to 30 s for a listener
  for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on $1" >&2; return 1
}

start_nginx() { # name port cpu locations
  mkdir -p "$WORK/$1"
  cat > "$WORK/$1/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $WORK/$1/nginx.pid;
error_log $WORK/$1/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $WORK/$1/body;
  client_max_body_size 64m;
  access_log off;
  keepalive_requests 10000000;
  server { listen 127.0.0.1:$2; $4 }
}
CONF
  taskset -c "$3" nginx -e "$WORK/$1/error.log" -p "$WORK/$1" -c "$WORK/$1/nginx.conf" &
  PIDS+=($!)
}

start_app() { # port
  start_nginx app "$1" "${SERVER_CPU:-0}" "location / { return 200 '{\"ok\":true}'; }"
}

ticks() { # pid [thread name]
  for t in /proc/"$1"/task/*; do
    if [ -z "${2:-}" ] || [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ]; then
      awk '{print $14 + $15}' "$t/stat" 2>/dev/null
    fi
  done | awk '{s += $1} END {print s + 0}'
}

field() { # RESULT line, name -> value
  tr ' ' '\n' <<< "$1" | awk -F= -v k="$2" '$1 == k {print $2}'
}
