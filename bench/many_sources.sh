#!/usr/bin/env bash
# Large configs (DESIGN §2, "routing and config size"): for N Stripe sources
# on distinct paths (bench/many_sources.py), the time and peak memory of
# `hookgate check`, the memory a running hookgate holds per source, and the
# request rate to the first and to the last source's path.
#
#   bash bench/many_sources.sh   # build, measure, print the table
#
# The requests carry a Stripe signature that matches no secret, so each is
# routed, verified and answered 400 invalid_signature: the rate shows what
# finding the source costs, with no store or app in the way. hookgate runs
# on $SERVER_CPU, wrk alone on $CLIENT_CPU.
#
# Knobs (environment): SIZES="1000 10000 50000" DURATION=5 CONNS=32
# HOOKGATE_BIN=<prebuilt binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# shellcheck disable=SC2206 # a list of words on purpose
SIZES=(${SIZES:-1000 10000 50000})
DURATION=${DURATION:-5}
CONNS=${CONNS:-32}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
need_tools wrk python3 taskset curl
use_release_build
work_dir sources-bench

cat > "$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"id":"evt_1","type":"invoice.paid"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Stripe-Signature"] = "t=1700000000,v1=" .. string.rep("0", 64)
function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p99_us=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(99), summary.errors.status))
end
LUA
rate() { # url -> requests a second
  taskset -c "$CLIENT_CPU" timeout $((DURATION + 30)) wrk -t1 -c"$CONNS" -d"${DURATION}s" \
    -s "$WORK/post.lua" "$1" | awk '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%.0f", v["requests"] / v["duration_us"] * 1e6 }'
}

printf '%s\n' "sources  check s  check peak MiB  run RSS MiB  KiB/source  first req/s  last req/s  last÷first"
for n in "${SIZES[@]}"; do
  PORT=$(free_port); ADMIN=$(free_port)
  python3 "$ROOT/bench/many_sources.py" "$n" "$WORK/c.toml" 9 "$PORT" "$ADMIN"
  read -r secs peak < <(/usr/bin/time -f '%e %M' "$HOOKGATE_BIN" check --config "$WORK/c.toml" 2>&1 >/dev/null | tail -1)
  taskset -c "$SERVER_CPU" "$HOOKGATE_BIN" run --config "$WORK/c.toml" >"$WORK/run.log" 2>&1 &
  HG=$!
  PIDS+=($!)
  wait_port "$PORT"
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$HG/status")
  first=$(rate "http://127.0.0.1:$PORT/tenants/t0/stripe")
  last=$(rate "http://127.0.0.1:$PORT/tenants/t$((n - 1))/stripe")
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/tenants/t$((n - 1))/stripe")
  [ "$code" = 400 ] || { echo "bench: the last source answered $code, not 400" >&2; exit 1; }
  kill "$HG"; wait "$HG" 2>/dev/null || true
  awk -v n="$n" -v s="$secs" -v p="$peak" -v r="$rss" -v f="$first" -v l="$last" 'BEGIN {
    printf "%7d  %7.2f  %14.1f  %11.1f  %10.2f  %11d  %10d  %9.2f\n", n, s, p / 1024, r / 1024, r / n, f, l, l / f }'
done
