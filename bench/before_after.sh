#!/usr/bin/env bash
# Two hookgate builds side by side under bench/run.sh: rounds alternate
# between them (before, after, before, after, …), each round measuring the
# app alone, nginx and both builds' memory and Redis variants under the
# same machine load, so the ratio after ÷ before of each round compares
# numbers taken minutes apart, and the nginx column shows how the machine
# itself moved between rounds.
#
#   bash bench/before_after.sh BEFORE_BIN AFTER_BIN [ROUNDS]
#
# Prints requests per second (fresh events and the duplicate storm) per
# round and target, then the medians of after ÷ before, and of each build
# ÷ nginx. Knobs of bench/run.sh pass through (DURATION, CONNS, BODY,
# SCHEME, POOL); the fixed-rate, memory and store phases are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: bench/before_after.sh BEFORE_BIN AFTER_BIN [ROUNDS]}
AFTER=${2:?usage: bench/before_after.sh BEFORE_BIN AFTER_BIN [ROUNDS]}
PAIRS=${3:-4}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export ROUNDS=1 RATE=0 MEMORY=0 STORES=0 DOCS=0 POOL=${POOL:-200000}
for round in $(seq 1 "$PAIRS"); do
  for build in before after; do
    bin=$BEFORE
    [ "$build" = after ] && bin=$AFTER
    echo "== round $round/$PAIRS: $build ($bin)"
    HOOKGATE_BIN=$bin bash bench/run.sh 2>&1 | grep -E '^   (fresh|dup) ' |
      sed "s/^/$round $build /" | tee -a "$OUT/lines"
  done
done
python3 - "$OUT/lines" <<'PY'
import re, statistics, sys
rps = {}
for line in open(sys.argv[1]):
    parts = line.split()
    rnd, build, mode, target = parts[0], parts[1], parts[2], parts[3].rstrip(':')
    f = dict(kv.split('=', 1) for kv in parts[4:] if '=' in kv)
    rps[(rnd, build, mode, target)] = int(f['requests']) / (int(f['duration_us']) / 1e6)
rounds = sorted({k[0] for k in rps}, key=int)
print('\nrequests per second, by round')
for mode in ('fresh', 'dup'):
    for target in ('nginx', 'hg-mem', 'hg-redis'):
        row = ['%s %s' % (mode, target)]
        for r in rounds:
            row.append('%s/%s' % (int(rps.get((r, 'before', mode, target), 0)), int(rps.get((r, 'after', mode, target), 0))))
        print('  ' + '  '.join(row))
print('\nmedians over %d rounds (before and after measured in the same round)' % len(rounds))
for mode in ('fresh', 'dup'):
    for target in ('hg-mem', 'hg-redis'):
        ab = [rps[(r, 'after', mode, target)] / rps[(r, 'before', mode, target)] for r in rounds]
        bn = [rps[(r, 'before', mode, target)] / rps[(r, 'before', mode, 'nginx')] for r in rounds]
        an = [rps[(r, 'after', mode, target)] / rps[(r, 'after', mode, 'nginx')] for r in rounds]
        print('  %-5s %-8s after/before %.3f (%.3f-%.3f)   before/nginx %.3f   after/nginx %.3f' % (
            mode, target, statistics.median(ab), min(ab), max(ab), statistics.median(bn), statistics.median(an)))
PY
