# Shared by the benchmark scripts: source it after `cd` to the repository
# root, with ROOT set. Gives:
#   need_tools TOOL...      exits with an install hint when one is missing
#   use_release_build       builds hookgate unless HOOKGATE_BIN names one
#   work_dir NAME           WORK, a temp directory removed at exit with every
#                           process whose pid is in PIDS
#   free_port, wait_port PORT
#   start_app PORT          the app stand-in: one nginx worker answering
#                           200 {"ok":true}, on $SERVER_CPU, in $WORK/app
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

start_app() { # port
  mkdir -p "$WORK/app"
  cat > "$WORK/app/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $WORK/app/nginx.pid;
error_log $WORK/app/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $WORK/app/body;
  access_log off;
  keepalive_requests 10000000;
  server { listen 127.0.0.1:$1; location / { return 200 '{"ok":true}'; } }
}
CONF
  taskset -c "${SERVER_CPU:-0}" nginx -e "$WORK/app/error.log" -p "$WORK/app" -c "$WORK/app/nginx.conf" &
  PIDS+=($!)
}
