"""Plots the main panels of hookgate's Grafana dashboard from a real run's
Prometheus data, without Grafana: the README's picture (docs/dashboard.png).

The data comes from the integration test, which starts redis-server, the
hookgate binary, a recording app and a real Prometheus, runs a rotation, an
app outage, a Redis outage and a refused reload, and with
HOOKGATE_MONITORING_DUMP set writes every panel's query_range results:

    HOOKGATE_MONITORING_DUMP=$PWD/docs/dashboard-run.json \
        cargo test --test it monitoring
    python3 -m venv /tmp/plot && /tmp/plot/bin/pip install matplotlib
    /tmp/plot/bin/python docs/dashboard.py docs/dashboard-run.json docs/dashboard.png

Each panel is drawn with its own queries and legend format, as in
charts/hookgate/files/dashboard.json.
"""

import json
import math
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [
    "Requests by outcome",
    "Completion latency (signed timestamp to the app's 2xx)",
    "Upstream responses by class",
    "Upstream duration",
    "Signature matches by secret index",
    "Queue and dead-letter depth",
    "Store errors and store_unavailable answers",
    "Config reloads",
]
UNITS = {"reqps": "requests/s", "s": "seconds", "ops": "per second", "short": ""}


def legend(fmt, metric):
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt or "").strip()


STYLES = ["-", "--", ":", "-."]


def main(src, out):
    with open(src) as f:
        run = json.load(f)
    t0 = run["started"]
    panels = {p["title"]: p for p in run["panels"]}
    fig = plt.figure(figsize=(15, 15))
    grid = fig.add_gridspec(5, 2, height_ratios=[0.22, 1, 1, 1, 1], hspace=0.32, wspace=0.12,
                            top=0.95, bottom=0.04)
    columns = [fig.add_subplot(grid[0, c]) for c in range(2)]
    axes = [fig.add_subplot(grid[1 + i // 2, i % 2], sharex=columns[i % 2]) for i in range(len(PANELS))]
    shades = ["#e8f0fe", "#fdf3e1"]

    # The phases of the run, named above each column, shaded behind every panel.
    for ax in columns:
        for i, ph in enumerate(run["phases"]):
            start, end = ph["start"] - t0, ph["end"] - t0
            ax.axvspan(start, end, color=shades[i % 2])
            ax.text((start + end) / 2, 0.5, ph["name"].replace(" ", "\n", 1), ha="center", va="center",
                    fontsize=8)
        ax.set_yticks([])
        ax.set_title("phases of the run", fontsize=10, loc="left")
        ax.tick_params(labelbottom=False)

    for ax, title in zip(axes, PANELS):
        panel = panels[title]
        for i, ph in enumerate(run["phases"]):
            ax.axvspan(ph["start"] - t0, ph["end"] - t0, color=shades[i % 2], zorder=0)
        drawn = 0
        for n, target in enumerate(panel["targets"]):
            for series in target["series"]:
                xs = [float(t) - t0 for t, _ in series["values"]]
                ys = [float(v) for _, v in series["values"]]
                if all(math.isnan(y) for y in ys):
                    continue
                ax.plot(xs, ys, linewidth=1.4, linestyle=STYLES[n % len(STYLES)],
                        label=legend(target["legendFormat"], series["metric"]))
                drawn += 1
        ax.set_title(title, fontsize=11, loc="left")
        ax.set_ylabel(UNITS.get(panel.get("unit"), ""))
        ax.grid(True, linewidth=0.3)
        ax.set_ylim(bottom=0)
        if drawn:
            ax.legend(fontsize=7, loc="best", ncol=2, framealpha=0.85)
    for ax in axes[:-2]:
        ax.tick_params(labelbottom=False)
    for ax in axes[-2:]:
        ax.set_xlabel("seconds since the run started")
    fig.suptitle("hookgate dashboard, main panels: one run of the monitoring integration test "
                 f"(real Prometheus, 1 s scrapes, rate window {run['rate_interval']})", fontsize=12, y=0.985)
    fig.savefig(out, dpi=80, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: dashboard.py RUN.json OUT.png")
    main(sys.argv[1], sys.argv[2])
