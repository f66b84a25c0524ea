#!/usr/bin/env bash
# Reruns the fault scenarios of tests/it/faults.rs with a bigger load
# (release build, one scenario at a time) and rewrites the measured table in
# docs/reliability.md from the FAULT-RESULT lines they print.
#
#   bash bench/reliability.sh                       # 2000 events per scenario
#   HOOKGATE_FAULT_EVENTS=500 bash bench/reliability.sh
#   bash bench/reliability.sh failover              # the failover table only
#                                                   # (tests/it/faults/failover.rs,
#                                                   # 1000 events per scenario; it is
#                                                   # written even when a scenario fails
#                                                   # its assertions, and the exit status
#                                                   # says so)
#
# Needs redis-server, redis-cli (and for `failover` redis-sentinel) on PATH,
# as the test suite does, and python3.
# Fails, and leaves the document alone, if any scenario fails.
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-faults}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

if [ "$what" = "failover" ]; then
  events="${HOOKGATE_FAULT_EVENTS:-1000}"
  status=0
  if [ -n "${HOOKGATE_FAILOVER_LOG:-}" ]; then
    # Rewrite the table from the output of an earlier run.
    cp "$HOOKGATE_FAILOVER_LOG" "$log"
  else
    echo "running the failover scenarios with HOOKGATE_FAULT_EVENTS=$events (release build)"
    HOOKGATE_FAULT_EVENTS="$events" cargo test --release --locked --test it faults::failover:: \
      -- --nocapture --test-threads=1 2>&1 | tee "$log" || status=$?
  fi
  python3 - "$log" docs/reliability.md "$events" "$commit" <<'PY'
import json, re, sys, datetime, os

log, doc, events, commit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
results = {}
for line in open(log, encoding="utf-8", errors="replace"):
    i = line.find("FAILOVER-RESULT ")
    if i >= 0:
        r = json.loads(line[i + len("FAILOVER-RESULT "):])
        results[r["scenario"]] = r

order = [
    "sentinel_kill_forward_min0", "sentinel_kill_forward_min1",
    "sentinel_kill_queue_min0", "sentinel_kill_queue_min1",
    "sentinel_pause_forward_min1",
    "sentinel_pause_queue_min0", "sentinel_pause_queue_min1",
    "cluster_kill_forward_min0", "cluster_kill_forward_min1",
    "cluster_kill_queue_min1",
]
missing = [name for name in order if name not in results]
if missing:
    sys.exit(f"no FAILOVER-RESULT line for: {', '.join(missing)}")

rows = [
    "| store | fault | source | min_replicas | events | accepted | **acknowledged and lost** | delivered twice | redelivered after 2xx | seconds of 503 | what the senders saw | seconds |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
]
for name in order:
    r = results[name]
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(r["answers"].items(), key=lambda kv: -kv[1]))
    again = "—" if r["redelivered_after_2xx"] is None else r["redelivered_after_2xx"]
    rows.append(
        f"| {r['store']} | {r['fault']} | {r['source']} | {r['min_replicas']} | {r['events']} | "
        f"{r['accepted']} | **{r['lost']}** | {r['delivered_twice']} | {again} | "
        f"{r['seconds_503']} | {answers} | {r['seconds']} |"
    )
stamp = datetime.date.today().isoformat()
table = "\n".join(
    [
        f"Measured {stamp} at commit `{commit}`: `HOOKGATE_FAULT_EVENTS={events}`, release build, "
        f"one scenario at a time, {os.cpu_count()} CPU cores, every process on loopback.",
        "",
    ]
    + rows
)
text = open(doc, encoding="utf-8").read()
begin, end = "<!-- failover-table:begin -->", "<!-- failover-table:end -->"
pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
if not pattern.search(text):
    sys.exit(f"{doc} has no {begin} … {end} section")
text = pattern.sub(lambda _: f"{begin}\n{table}\n{end}", text)
open(doc, "w", encoding="utf-8").write(text)
print(f"wrote the failover table for {len(order)} scenarios to {doc}")
PY
  # The table shows what was measured, a failed assertion included; the
  # exit status still reports it.
  [ "$status" -eq 0 ] || echo "some failover scenario failed its assertions (exit $status); the table shows the figures measured"
  exit "$status"
fi

events="${HOOKGATE_FAULT_EVENTS:-2000}"
echo "running the fault scenarios with HOOKGATE_FAULT_EVENTS=$events (release build)"
HOOKGATE_FAULT_EVENTS="$events" cargo test --release --locked --test it faults:: \
  -- --nocapture --test-threads=1 --skip faults::failover:: 2>&1 | tee "$log"

python3 - "$log" docs/reliability.md "$events" "$commit" <<'PY'
import json, re, sys, datetime, os

log, doc, events, commit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
results = {}
for line in open(log, encoding="utf-8", errors="replace"):
    i = line.find("FAULT-RESULT ")
    if i >= 0:
        r = json.loads(line[i + len("FAULT-RESULT "):])
        results[r["scenario"]] = r

order = [
    ("redis_killed", "Redis killed mid-load, restarted 1 s later"),
    ("cluster_master_killed", "Redis Cluster: 1 of 3 masters killed mid-load, restarted 1 s later"),
    ("app_5xx_or_hang_30pct", "the app answers 500 or hangs past `upstream_timeout` for 30% of requests"),
    ("replica_killed", "1 of 3 replicas SIGKILLed while the app holds 3 of its requests"),
    ("replica_killed_app_completed", "same, but the app answers 2xx to the dead replica"),
    ("duplicate_storm_x20", "3 replicas, every event sent ×20, shuffled"),
    ("clock_4m_ahead", "sender's clock 4 min ahead (tolerance 5m)"),
    ("clock_6m_behind", "sender's clock 6 min behind (tolerance 5m)"),
]
missing = [name for name, _ in order if name not in results]
if missing:
    sys.exit(f"no FAULT-RESULT line for: {', '.join(missing)}")

def answers(r):
    return ", ".join(f"{k}: {v}" for k, v in sorted(r["answers"].items(), key=lambda kv: -kv[1]))

rows = [
    "| scenario | events | requests | accepted (2xx) | refused (documented) | **lost** | **redelivered after 2xx** | app accepted twice | what the senders saw | seconds |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
]
for name, what in order:
    r = results[name]
    rows.append(
        f"| {what} | {r['events']} | {r['requests']} | {r['accepted']} | {r['refused']} | "
        f"**{r['lost']}** | **{r['redelivered_after_2xx']}** | {r['app_accepted_twice']} | "
        f"{answers(r)} | {r['seconds']} |"
    )
stamp = datetime.date.today().isoformat()
table = "\n".join(
    [
        f"Measured {stamp} at commit `{commit}`: `HOOKGATE_FAULT_EVENTS={events}`, release build, "
        f"one scenario at a time, {os.cpu_count()} CPU cores, every process on loopback.",
        "",
    ]
    + rows
)

text = open(doc, encoding="utf-8").read()
begin, end = "<!-- fault-table:begin -->", "<!-- fault-table:end -->"
pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
if not pattern.search(text):
    sys.exit(f"{doc} has no {begin} … {end} section")
text = pattern.sub(lambda _: f"{begin}\n{table}\n{end}", text)
open(doc, "w", encoding="utf-8").write(text)
print(f"wrote the table for {len(order)} scenarios to {doc}")
PY
