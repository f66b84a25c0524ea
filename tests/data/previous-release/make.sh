#!/usr/bin/env bash
# Makes the stores in this folder with a previous release's binary, for
# tests/it/upgrade.rs: a sqlite file (hookgate.db) and a Redis dump
# (dump.rdb), each holding what a running hookgate leaves behind:
#   - source "f" (forward): three events the app took (nonces done, trail);
#   - source "q" (queue), paused: three events queued and not delivered;
#   - source "d" (queue): two events the app refused (4xx): dead letters.
#
#   HOOKGATE_BIN=/path/to/previous/hookgate bash tests/data/previous-release/make.sh
#
# The binary is the release named in RELEASE below, built from this
# repository's history. Needs redis-server, redis-cli, sqlite3, python3.
set -euo pipefail
cd "$(dirname "$0")"
OUT=$PWD
RELEASE=75bb109
: "${HOOKGATE_BIN:?set HOOKGATE_BIN to a hookgate built at $RELEASE}"
WORK=$(mktemp -d /tmp/hookgate-previous.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "nothing on $1" >&2; exit 1; }

APP=$(free_port)
python3 - "$APP" > "$WORK/app.log" 2>&1 <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        code = 400 if self.path.startswith("/hooks/d") else 200
        self.send_response(code); self.send_header("content-length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=($!)
wait_port "$APP"

config() { # store lines -> $WORK/hookgate.toml
  cat > "$WORK/hookgate.toml" <<CONF
[server]
listen = "127.0.0.1:$PUBLIC"
upstream = "http://127.0.0.1:$APP"
[admin]
listen = "127.0.0.1:$ADMIN"
token = "previous-release-admin-token"
[store]
$1
[[source]]
name = "f"
path = "/hooks/f"
scheme = "github"
secrets = ["previous-release-secret"]
[[source]]
name = "q"
path = "/hooks/q"
scheme = "github"
secrets = ["previous-release-secret"]
delivery = "queue"
[[source]]
name = "d"
path = "/hooks/d"
scheme = "github"
secrets = ["previous-release-secret"]
delivery = "queue"
CONF
}

send() { # source id
  printf '{"id":"%s","source":"%s"}' "$2" "$1" > "$WORK/body"
  local args=()
  while IFS= read -r line; do args+=(-H "$line"); done < <("$HOOKGATE_BIN" sign --config "$WORK/hookgate.toml" --source "$1" --body-file "$WORK/body" --id "$2")
  curl -s -o /dev/null -w "%{http_code} $1 $2\n" "http://127.0.0.1:$PUBLIC/hooks/$1" "${args[@]}" \
    -H "X-GitHub-Event: push" -H "Content-Type: application/json" --data-binary @"$WORK/body"
}

fill() { # store name
  "$HOOKGATE_BIN" run --config "$WORK/hookgate.toml" > "$WORK/$1.log" 2>&1 &
  local hg=$!
  wait_port "$PUBLIC"; wait_port "$ADMIN"
  "$HOOKGATE_BIN" sources --config "$WORK/hookgate.toml" pause q --reason "held for the upgrade test"
  sleep 1.5
  for n in 1 2 3; do send f "prev-f-$n"; done
  for n in 1 2 3; do send q "prev-q-$n"; done
  for n in 1 2; do send d "prev-d-$n"; done
  sleep 2
  kill -TERM "$hg"; wait "$hg" || true
}

# sqlite
PUBLIC=$(free_port); ADMIN=$(free_port)
rm -f "$OUT"/hookgate.db*
config "kind = \"sqlite\"
path = \"$WORK/hookgate.db\""
fill sqlite
sqlite3 "$WORK/hookgate.db" "PRAGMA wal_checkpoint(TRUNCATE);" > /dev/null
cp "$WORK/hookgate.db" "$OUT/hookgate.db"

# Redis
REDIS=$(free_port)
redis-server --bind 127.0.0.1 --port "$REDIS" --dir "$WORK" --dbfilename dump.rdb --save "" --appendonly no \
  --logfile "$WORK/redis.log" &
PIDS+=($!)
wait_port "$REDIS"
PUBLIC=$(free_port); ADMIN=$(free_port)
config "kind = \"redis\"
url = \"redis://127.0.0.1:$REDIS\""
fill redis
redis-cli -p "$REDIS" SAVE > /dev/null
cp "$WORK/dump.rdb" "$OUT/dump.rdb"
echo "made $OUT/hookgate.db and $OUT/dump.rdb with $("$HOOKGATE_BIN" --version)"
