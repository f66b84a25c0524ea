#!/usr/bin/env python3
"""Turns bench/run.sh's raw results into the table it prints and the generated
part of docs/performance.md (between the run.sh markers; the rest of the file
is left as written)."""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys

BEGIN = "<!-- run.sh:begin -->"
END = "<!-- run.sh:end -->"
TARGETS = ["direct", "nginx", "hg-mem", "hg-redis"]
LABEL = {
    "direct": "app direct",
    "nginx": "nginx proxy",
    "hg-mem": "hookgate + memory",
    "hg-redis": "hookgate + Redis",
}


def kv(text):
    return {k: v for k, v in re.findall(r"([a-z_0-9]+)=([^\s]+)", text)}


def load_results(path):
    runs = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            rnd, mode, target, result = parts[:4]
            before = kv(parts[4]) if len(parts) > 4 else {}
            after = kv(parts[5]) if len(parts) > 5 else {}
            r = {k: int(v) for k, v in kv(result).items()}
            r.update(round=int(rnd), mode=mode, target=target)
            r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
            # CPU time per request (µs) of the proxy itself and of redis-server,
            # from /proc/PID/stat over the run: steadier than req/s on a busy machine.
            tck = r.get("clk_tck", 100) or 100
            for part in ("proxy", "proxy_user", "redis", "app"):
                ticks = r.get("cpu_ticks_" + part, 0)
                r["cpu_" + part] = ticks * 1e6 / tck / r["requests"] if r["requests"] else 0.0
            delta = {}
            for k, v in after.items():
                delta[k] = int(float(v)) - int(float(before.get(k, 0)))
            r["outcomes"] = delta
            runs.append(r)
    return runs


def med(values):
    return statistics.median(values) if values else float("nan")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        text = (out.stdout + out.stderr).strip().splitlines()
        return text[0] if text else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def fmt_ms(us):
    return "%.2f ms" % (us / 1000.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True)
    p.add_argument("--memory", required=True)
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--duration", type=int, required=True)
    p.add_argument("--conns", type=int, required=True)
    p.add_argument("--body", type=int, required=True)
    p.add_argument("--scheme", required=True)
    p.add_argument("--pool", type=int, required=True)
    p.add_argument("--load-before", required=True)
    p.add_argument("--load-after", required=True)
    p.add_argument("--started", required=True)
    p.add_argument("--redis-rss", type=int, default=0)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--rate-results")
    p.add_argument("--rate", type=int, default=0)
    p.add_argument("--rate-seconds", type=int, default=0)
    p.add_argument("--rate-conns", type=int, default=0)
    p.add_argument("--docs")
    a = p.parse_args()

    runs = load_results(a.results)
    problems = []
    by = {}
    for r in runs:
        by.setdefault((r["mode"], r["target"]), []).append(r)
        if r["target"].startswith("hg-"):
            want = "forwarded" if r["mode"] == "fresh" else "duplicate"
            got = r["outcomes"].get(want, 0)
            if r["requests"] and got < 0.999 * r["requests"]:
                problems.append(
                    "round %d %s %s: %d of %d requests were %s (outcomes %s)"
                    % (r["round"], r["mode"], r["target"], got, r["requests"], want, r["outcomes"])
                )
        # Only hookgate tells a repeated event apart; the app and nginx
        # answer a wrapped-around pool the same.
        if r.get("wrapped", 0) and r["mode"] == "fresh" and r["target"].startswith("hg-"):
            problems.append(
                "round %d fresh %s: the pool ran out and wrapped; raise POOL" % (r["round"], r["target"])
            )
        errs = sum(r.get(k, 0) for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
        if errs:
            problems.append("round %d %s %s: %d errors %s" % (
                r["round"], r["mode"], r["target"], errs,
                {k: r[k] for k in r if k.startswith("err_") and r[k]}))

    def ratio(mode, target, ref_mode, ref_target, key="rps"):
        """Median over rounds of the per-round ratio (both taken under the same load)."""
        values = []
        for r in by.get((mode, target), []):
            ref = [x for x in by.get((ref_mode, ref_target), []) if x["round"] == r["round"]]
            if ref and ref[0][key]:
                values.append(r[key] / ref[0][key])
        return med(values)

    rows = []
    header = ("| load | target | req/s | p50 | p99 | CPU µs/req (proxy + Redis) | proxy user / system | RSS after | vs nginx proxy | vs app direct |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in ("fresh", "dup"):
        for t in TARGETS:
            rs = by.get((mode, t), [])
            if not rs:
                continue
            rps = med([r["rps"] for r in rs])
            p50 = med([r["p50_us"] for r in rs])
            p99 = med([r["p99_us"] for r in rs])
            rss = med([r["rss_kib"] for r in rs])
            cpu_p = med([r["cpu_proxy"] for r in rs])
            cpu_r = med([r["cpu_redis"] for r in rs])
            cpu_u = med([r["cpu_proxy_user"] for r in rs])
            split = "—" if t == "direct" else "%.1f / %.1f" % (cpu_u, cpu_p - cpu_u)
            if t == "direct":
                cpu = "—"
            elif t == "hg-redis":
                cpu = "%.1f + %.1f" % (cpu_p, cpu_r)
            else:
                cpu = "%.1f" % cpu_p
            vs_nginx = ratio(mode, t, "fresh", "nginx")
            vs_direct = ratio(mode, t, "fresh", "direct")
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %.1f MiB | %.2f× | %.2f× |" % (
                "fresh events" if mode == "fresh" else "duplicate storm", LABEL[t],
                "{:,.0f}".format(rps), fmt_ms(p50), fmt_ms(p99), cpu, split, rss / 1024.0, vs_nginx, vs_direct))
    per_round = []
    for mode in ("fresh", "dup"):
        for t in TARGETS:
            vals = ["{:,.0f}".format(r["rps"]) for r in sorted(by.get((mode, t), []), key=lambda r: r["round"])]
            if vals:
                per_round.append("| %s | %s | %s |" % (mode, LABEL[t], " / ".join(vals)))

    # The targets in docs/performance.md that the load run can decide.
    checks = []
    def check(name, value, ok, shown):
        checks.append("| %s | %s | %s |" % (name, shown, "met" if ok else "**missed**"))
    r_mem = ratio("fresh", "hg-mem", "fresh", "nginx")
    check("hookgate + memory throughput ≥ 1.0× nginx proxy", r_mem, r_mem >= 1.0, "%.2f×" % r_mem)
    r_redis = ratio("fresh", "hg-redis", "fresh", "nginx")
    check("hookgate + Redis throughput ≥ 0.8× nginx proxy", r_redis, r_redis >= 0.8, "%.2f×" % r_redis)
    for t in ("hg-mem", "hg-redis"):
        p99 = ratio("fresh", t, "fresh", "nginx", key="p99_us")
        check("%s p99 ≤ 1.2× nginx proxy" % LABEL[t], p99, p99 <= 1.2, "%.2f×" % p99)
    for t in ("hg-mem", "hg-redis"):
        r_dup = ratio("dup", t, "fresh", "nginx")
        check("duplicate storm (%s) ≥ 2.5× nginx proxy" % LABEL[t], r_dup, r_dup >= 2.5, "%.2f×" % r_dup)

    # Redis commands per fresh event, from INFO commandstats over each run.
    calls_lines = []
    redis_runs = by.get(("fresh", "hg-redis"), [])
    if redis_runs and all("redis_calls" in r for r in redis_runs):
        per = med([r["redis_calls"] / r["requests"] for r in redis_runs if r["requests"]])
        # The bench's own CONFIG RESETSTAT is not hookgate's.
        # (`config|resetstat` reads as `resetstat=` here.)
        for r in redis_runs:
            r["redis_calls"] -= r.pop("resetstat", 0)
            for k in [k for k in r if k.startswith("redis_cmd_config")]:
                r["redis_calls"] -= r.pop(k)
        names = sorted({k[len("redis_cmd_"):] for r in redis_runs for k in r if k.startswith("redis_cmd_")})
        parts = ["%s %.2f" % (n, med([r.get("redis_cmd_" + n, 0) / r["requests"] for r in redis_runs]))
                 for n in names]
        calls_lines.append("Redis commands per fresh event (`INFO commandstats` over each hookgate + Redis "
                           "run, divided by the requests answered): %.2f (%s)." % (per, ", ".join(parts)))

    # Fixed rate: what each proxy adds to the app's own latency.
    rate_lines = []
    rate = {}
    if a.rate_results and os.path.exists(a.rate_results):
        with open(a.rate_results) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3:
                    continue
                r = {k: int(v) for k, v in kv(parts[2]).items()}
                r["round"], r["target"] = int(parts[0]), parts[1]
                before = kv(parts[3]) if len(parts) > 3 else {}
                after = kv(parts[4]) if len(parts) > 4 else {}
                if r["target"].startswith("hg-"):
                    got = int(float(after.get("forwarded", 0))) - int(float(before.get("forwarded", 0)))
                    if got < r.get("sent", 0):
                        problems.append("fixed rate round %d %s: %d of %d requests forwarded"
                                        % (r["round"], r["target"], got, r.get("sent", 0)))
                rate.setdefault(r["target"], []).append(r)
    if rate.get("direct"):
        def added(t, key):
            values = []
            for r in rate.get(t, []):
                ref = [x for x in rate["direct"] if x["round"] == r["round"]]
                if ref:
                    values.append(r[key] - ref[0][key])
            return values

        def added_ratio(t, key):
            values = []
            for r in rate.get(t, []):
                ref = [x for x in rate["direct"] if x["round"] == r["round"]]
                ng = [x for x in rate.get("nginx", []) if x["round"] == r["round"]]
                if ref and ng and ng[0][key] - ref[0][key] > 0:
                    values.append((r[key] - ref[0][key]) / (ng[0][key] - ref[0][key]))
            return med(values)

        rate_lines.append("| target | p50 | p99 | p99.9 | added p50 | added p99 | added vs nginx's (p50 / p99) |")
        rate_lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for t in TARGETS:
            rs = rate.get(t, [])
            if not rs:
                continue
            cells = ["%d µs" % med([r[k] for r in rs]) for k in ("p50_us", "p99_us", "p999_us")]
            if t == "direct":
                cells += ["—", "—", "—"]
            else:
                cells += ["%+d µs" % med(added(t, "p50_us")), "%+d µs" % med(added(t, "p99_us"))]
                cells.append("—" if t == "nginx" else "%.2f× / %.2f×" % (
                    added_ratio(t, "p50_us"), added_ratio(t, "p99_us")))
            rate_lines.append("| %s | %s |" % (LABEL[t], " | ".join(cells)))
        late = max(r.get("late_p99_us", 0) for rs in rate.values() for r in rs)
        rate_lines.append("")
        rate_lines.append("The generator's p99 lateness against its schedule, worst run: %d µs." % late)
        for t in ("hg-mem", "hg-redis"):
            for key, name in (("p50_us", "p50"), ("p99_us", "p99")):
                v = added_ratio(t, key)
                check("%s added %s at %d req/s ≤ 1.2× nginx's" % (LABEL[t], name, a.rate), v, v <= 1.2,
                      "%.2f×" % v)

    mem_lines = []
    mem = {}
    if os.path.exists(a.memory):
        with open(a.memory) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                mem.setdefault(parts[0], []).append(parts[1:])
    if mem:
        mem_lines.append("| state | hookgate RSS | cost |")
        mem_lines.append("|---|---:|---:|")
        idle = int(mem["idle"][0][1]) if "idle" in mem else 0
        if idle:
            mem_lines.append("| idle (memory store, just started) | %.1f MiB | |" % (idle / 1024.0))
            check("RSS idle ≤ 20 MiB", idle, idle <= 20 * 1024, "%.1f MiB" % (idle / 1024.0))
        per_conn = []
        for n, before, after, alive in mem.get("conns", []):
            n, before, after, alive = int(n), int(before), int(after), int(alive)
            cost = (after - before) * 1024.0 / max(alive, 1)
            per_conn.append(cost)
            mem_lines.append("| %s idle keep-alive connections | %.1f MiB | %.1f KiB per connection |" % (
                "{:,}".format(alive), after / 1024.0, cost / 1024.0))
        if per_conn:
            worst = max(per_conn)
            check("≤ 16 KiB per idle connection", worst, worst <= 16 * 1024, "%.1f KiB" % (worst / 1024.0))
        for n, before, after, *rest in mem.get("nonces", []):
            stored = kv(rest[0]).get("forwarded", "0") if rest else "0"
            stored = int(float(stored))
            cost = (int(after) - int(before)) * 1024.0 / max(stored, 1)
            mem_lines.append("| memory store holding %s nonces | %.1f MiB | %.0f bytes per nonce |" % (
                "{:,}".format(stored), int(after) / 1024.0, cost))
            check("≤ 150 bytes per memory-store nonce", cost, cost <= 150, "%.0f B" % cost)
            if stored < 0.99 * int(n):
                problems.append("nonce phase stored %d of %s" % (stored, n))

    machine = "%s × %s, %s, Linux %s" % (
        os.cpu_count(), cpu_model(), "%.0f GiB" % (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
        platform.release())
    tools = "; ".join([version(["nginx", "-v"]), version(["wrk", "-v"]).split(" Copyright")[0],
                       version(["redis-server", "--version"]).split(" sha=")[0]])
    out = []
    out.append("Generated by `bash bench/run.sh` on %s (commit %s)." % (a.started, a.commit))
    out.append("")
    out.append("- Machine: %s. Tools: %s." % (machine, tools))
    out.append("- Load average (1/5/15 min) before: %s, after: %s — the machine was shared." % (a.load_before, a.load_after))
    out.append("- Servers pinned to CPU 0 (app stand-in, nginx proxy, redis-server, hookgate), "
               "wrk pinned to CPU 1 (one thread, %d connections, %d s per measurement)." % (a.conns, a.duration))
    out.append("- Fresh events: a pool of %s distinct signed `%s` events, %d-byte JSON bodies, none sent twice "
               "(each run's hookgate outcome counters are checked: every request `forwarded`). "
               "Duplicate storm: one delivered event sent again and again (every request `duplicate`)."
               % ("{:,}".format(a.pool), a.scheme, a.body))
    out.append("- CPU µs/req: user + system CPU time of the proxy's own processes (and of redis-server) over the "
               "run, divided by the requests answered; it does not move with the machine's other load the way "
               "req/s does; the next column splits the proxy's share into time in its own code (user) and in the "
               "kernel on its behalf (system: sockets, wake-ups). The app stand-in used %.1f µs per request." % med(
                   [r["cpu_app"] for r in runs if r["mode"] == "fresh" and r["target"] == "direct"]))
    out.append("- %d interleaved rounds; each cell is the median of the rounds; each ratio is the median of "
               "the per-round ratios (numerator and reference from the same round). Ratios of the duplicate "
               "storm are against the nginx proxy's **fresh-event** numbers." % a.rounds)
    out.append("")
    out.extend([header] + rows)
    out.append("")
    out.append("Per round (req/s):")
    out.append("")
    out.append("| load | target | rounds |")
    out.append("|---|---|---|")
    out.extend(per_round)
    out.append("")
    if calls_lines:
        out.extend(calls_lines)
        out.append("")
    if rate_lines:
        out.append("Fixed rate: %d requests/s for %d s (open loop, `bench/openloop.rs`, %d connections, each "
                   "request's latency counted from when it was due), fresh events from a pool of their own; "
                   "each cell the median of the %d rounds, each added latency the target's minus the app "
                   "alone's in the same round:" % (a.rate, a.rate_seconds, a.rate_conns, a.rounds))
        out.append("")
        out.extend(rate_lines)
        out.append("")
    if a.redis_rss:
        out.append("redis-server RSS after the rounds: %.1f MiB." % (a.redis_rss / 1024.0))
        out.append("")
    if mem_lines:
        out.append("Memory (hookgate with the memory store):")
        out.append("")
        out.extend(mem_lines)
        out.append("")
    out.append("| target | measured | |")
    out.append("|---|---:|---|")
    out.extend(checks)
    if problems:
        out.append("")
        out.append("Problems seen in this run:")
        out.append("")
        out.extend("- " + p for p in problems)
    text = "\n".join(out) + "\n"
    print()
    print(text)

    if a.docs:
        try:
            with open(a.docs) as f:
                doc = f.read()
        except FileNotFoundError:
            doc = "# Performance\n\n%s\n%s\n" % (BEGIN, END)
        if BEGIN not in doc or END not in doc:
            doc = doc.rstrip("\n") + "\n\n%s\n%s\n" % (BEGIN, END)
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(a.docs, "w") as f:
            f.write(head + BEGIN + "\n" + text + END + tail)
        print("wrote", a.docs)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
