//! The overview's charts (DESIGN §7b): per source, outcomes over time
//! (stacked: delivered or queued, duplicates, ignored, rejected, failed) and
//! the completion latency from the signed timestamp (p50 and p99), for the
//! last hour by minute or the last 24 hours by 15 minutes. Drawn here as
//! inline SVG with axes, units and a legend: no script, and only
//! presentation attributes (the page's `default-src 'self'` refuses inline
//! styles). The numbers are the whole deployment's ([`crate::stats`]): the
//! store's sums plus what this process has not added yet.

use maud::{Markup, html};

use crate::state::State;
use crate::stats::{self, GROUPS, MINUTE, Point, QUARTER};

/// Each group's colour, in [`GROUPS`] order.
const COLOURS: [&str; 5] = ["#2e7d32", "#1565c0", "#9e9e9e", "#ef6c00", "#c62828"];
const P50: &str = "#1565c0";
const P99: &str = "#c62828";

const W: f64 = 640.0;
const H: f64 = 190.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 26.0;

/// Which range a page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    Hour,
    Day,
}

impl Range {
    pub fn of(query: &[(String, String)]) -> Range {
        match super::urls::value(query, "range").as_deref() {
            Some("24h") => Range::Day,
            _ => Range::Hour,
        }
    }

    fn width(self) -> u32 {
        match self {
            Range::Hour => MINUTE,
            Range::Day => QUARTER,
        }
    }

    fn buckets(self) -> usize {
        match self {
            Range::Hour => 60,
            Range::Day => 96,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Range::Hour => "Last hour, by minute",
            Range::Day => "Last 24 hours, by 15 minutes",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Range::Hour => "requests / min",
            Range::Day => "requests / 15 min",
        }
    }

    /// Buckets between two labels on the time axis.
    fn tick_every(self) -> usize {
        match self {
            Range::Hour => 10,
            Range::Day => 16,
        }
    }
}

/// The charts of every source, for `range`.
pub async fn section(state: &State, range: Range) -> Markup {
    let runtime = state.runtime();
    let config = &runtime.config;
    let width = range.width();
    let count = range.buckets();
    let w = i64::from(width);
    let first = crate::time::unix_now().div_euclid(w) * w - w * (count as i64 - 1);
    let stored = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        state.store.stats_read(width, first),
    )
    .await;
    let (mut rows, trouble) = match stored {
        Ok(Ok(rows)) => (rows, None),
        Ok(Err(e)) => (
            Vec::new(),
            Some(format!(
                "the store did not answer ({e}); this replica's own counts only"
            )),
        ),
        Err(_) => (
            Vec::new(),
            Some("the store did not answer in time; this replica's own counts only".to_owned()),
        ),
    };
    rows.extend(state.metrics.stats.peek());
    html! {
        section.charts {
            h2 { "Over time" }
            nav.ranges {
                @for (r, href, text) in [(Range::Hour, "/console", "Last hour"), (Range::Day, "/console?range=24h", "Last 24 hours")] {
                    @if r == range { a.current href=(href) aria-current="true" { (text) } } @else { a href=(href) { (text) } }
                }
            }
            @if let Some(t) = trouble { p.bad { (t) } }
            @for source in &config.sources {
                @let (start, points) = stats::series(&rows, &source.name, width, count);
                (source_charts(&source.name, range, start, &points))
            }
        }
    }
}

fn source_charts(name: &str, range: Range, start: i64, points: &[Point]) -> Markup {
    let mut total = Point::default();
    for p in points {
        total.merge(p);
    }
    let seconds = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), format_seconds);
    html! {
        article.chart id={ "chart-" (name) } {
            h3 { (name) " · " (range.label()) }
            p.chart-totals {
                @for (g, n) in GROUPS.iter().zip(total.groups) {
                    span data-series=(g) { (g) " " b { (n) } } " · "
                }
                span data-series="p50" { "latency p50 " b { (seconds(total.quantile(0.5))) } } " · "
                span data-series="p99" { "p99 " b { (seconds(total.quantile(0.99))) } }
            }
            (outcomes(name, range, start, points))
            (latency(name, range, start, points))
        }
    }
}

/// `v` seconds as the axis and the totals write them.
fn format_seconds(v: f64) -> String {
    if v < 1.0 {
        format!("{:.0} ms", v * 1000.0)
    } else {
        format!("{v:.1} s")
    }
}

/// The smallest of 1, 2, 5 × 10ⁿ at or above `v`.
fn nice(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let exp = v.log10().floor();
    let base = 10f64.powf(exp);
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|c| *c >= v - 1e-9)
        .unwrap_or(10.0 * base)
}

/// `HH:MM` UTC of unix seconds.
fn clock(secs: i64) -> String {
    let day = secs.rem_euclid(86_400);
    format!("{:02}:{:02}", day / 3600, (day % 3600) / 60)
}

fn plot_w() -> f64 {
    W - LEFT - RIGHT
}

fn plot_h() -> f64 {
    H - TOP - BOTTOM
}

/// The axes, the horizontal grid and its labels, the time labels.
fn frame(
    range: Range,
    start: i64,
    count: usize,
    max: f64,
    label: &dyn Fn(f64) -> String,
) -> Markup {
    let step = plot_w() / count as f64;
    let w = i64::from(range.width());
    html! {
        @for i in 0..=2 {
            @let v = max * f64::from(i) / 2.0;
            @let y = TOP + plot_h() - plot_h() * f64::from(i) / 2.0;
            line x1=(LEFT) x2=(W - RIGHT) y1=(y) y2=(y) stroke="#dddddd" stroke-width="1" {}
            text x=(LEFT - 4.0) y=(y + 4.0) text-anchor="end" font-size="11" fill="#444444" { (label(v)) }
        }
        line x1=(LEFT) x2=(LEFT) y1=(TOP) y2=(TOP + plot_h()) stroke="#888888" stroke-width="1" {}
        line x1=(LEFT) x2=(W - RIGHT) y1=(TOP + plot_h()) y2=(TOP + plot_h()) stroke="#888888" stroke-width="1" {}
        @for i in (0..count).step_by(range.tick_every()) {
            @let x = LEFT + step * i as f64;
            line x1=(x) x2=(x) y1=(TOP + plot_h()) y2=(TOP + plot_h() + 4.0) stroke="#888888" stroke-width="1" {}
            text x=(x) y=(H - 8.0) text-anchor="middle" font-size="11" fill="#444444" { (clock(start + w * i as i64)) }
        }
        text x=(W - RIGHT) y=(H - 8.0) text-anchor="end" font-size="11" fill="#444444" { "UTC" }
    }
}

fn legend(items: &[(&str, &str)]) -> Markup {
    html! {
        @for (i, (name, colour)) in items.iter().enumerate() {
            @let x = LEFT + 96.0 * i as f64;
            rect x=(x) y="8" width="10" height="10" fill=(colour) {}
            text x=(x + 14.0) y="17" font-size="12" fill="#222222" { (name) }
        }
    }
}

fn outcomes(name: &str, range: Range, start: i64, points: &[Point]) -> Markup {
    let count = points.len().max(1);
    let step = plot_w() / count as f64;
    let max = nice(
        points
            .iter()
            .map(|p| p.groups.iter().sum::<u64>())
            .max()
            .unwrap_or(0) as f64,
    );
    let w = i64::from(range.width());
    let items: Vec<(&str, &str)> = GROUPS.iter().copied().zip(COLOURS).collect();
    html! {
        svg.chart.outcomes viewBox={ "0 0 " (W) " " (H) } width=(W) height=(H) role="img"
            aria-label={ (name) ": requests by outcome, " (range.unit()) } {
            title { (name) ": requests by outcome (" (range.unit()) ")" }
            (legend(&items))
            text x=(W - RIGHT) y="17" text-anchor="end" font-size="11" fill="#444444" { (range.unit()) }
            (frame(range, start, count, max, &|v| format!("{v:.0}")))
            @for (i, p) in points.iter().enumerate() {
                @let x = LEFT + step * i as f64 + step * 0.1;
                @let mut y = TOP + plot_h();
                @for (g, n) in p.groups.iter().enumerate().filter(|(_, n)| **n > 0) {
                    @let h = plot_h() * *n as f64 / max;
                    @let top = { y -= h; y };
                    rect x=(x) y=(top) width=(step * 0.8) height=(h) fill=(COLOURS[g]) {
                        title { (clock(start + w * i as i64)) " " (GROUPS[g]) " " (n) }
                    }
                }
            }
        }
    }
}

fn latency(name: &str, range: Range, start: i64, points: &[Point]) -> Markup {
    let count = points.len().max(1);
    let step = plot_w() / count as f64;
    let p50: Vec<Option<f64>> = points.iter().map(|p| p.quantile(0.5)).collect();
    let p99: Vec<Option<f64>> = points.iter().map(|p| p.quantile(0.99)).collect();
    let top = p99.iter().flatten().copied().fold(0.0, f64::max);
    let max = nice(top.max(0.01));
    let path = |values: &[Option<f64>]| {
        let mut d = String::new();
        let mut pen_up = true;
        for (i, v) in values.iter().enumerate() {
            match v {
                Some(v) => {
                    let x = LEFT + step * (i as f64 + 0.5);
                    let y = TOP + plot_h() - plot_h() * v.min(max) / max;
                    d.push_str(&format!("{}{x:.1} {y:.1} ", if pen_up { "M" } else { "L" }));
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        d
    };
    let w = i64::from(range.width());
    html! {
        svg.chart.latency viewBox={ "0 0 " (W) " " (H) } width=(W) height=(H) role="img"
            aria-label={ (name) ": completion latency from the signed timestamp, p50 and p99" } {
            title { (name) ": completion latency from the signed timestamp (seconds)" }
            (legend(&[("p50", P50), ("p99", P99)]))
            text x=(W - RIGHT) y="17" text-anchor="end" font-size="11" fill="#444444" { "completion latency" }
            (frame(range, start, count, max, &|v| format_seconds(v)))
            path d=(path(&p99)) fill="none" stroke=(P99) stroke-width="2" {}
            path d=(path(&p50)) fill="none" stroke=(P50) stroke-width="2" {}
            @for (i, (a, b)) in p50.iter().zip(&p99).enumerate() {
                @if let (Some(a), Some(b)) = (a, b) {
                    circle cx=(LEFT + step * (i as f64 + 0.5)) cy=(TOP + plot_h() - plot_h() * b.min(max) / max) r="2" fill=(P99) {
                        title { (clock(start + w * i as i64)) " p50 " (format_seconds(*a)) ", p99 " (format_seconds(*b)) }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(nice(3.0), 5.0);
        assert_eq!(nice(5.0), 5.0);
        assert_eq!(nice(11.0), 20.0);
        assert!((nice(0.03) - 0.05).abs() < 1e-12);
        assert_eq!(clock(3_600 * 25 + 60 * 7), "01:07");
    }

    #[test]
    fn a_chart_is_svg_with_axes_a_legend_and_no_style() {
        let mut p = Point {
            groups: [3, 1, 0, 2, 1],
            ..Point::default()
        };
        p.latency[5] = 4;
        let points = vec![Point::default(), p];
        let svg = outcomes("q", Range::Hour, 0, &points).into_string();
        assert!(svg.starts_with("<svg"), "{svg}");
        for needle in [
            "delivered",
            "failed",
            "requests / min",
            "UTC",
            "<rect",
            "<title>00:01 delivered 3</title>",
        ] {
            assert!(svg.contains(needle), "{needle} in {svg}");
        }
        assert!(!svg.contains("style"), "{svg}");
        let svg = latency("q", Range::Hour, 0, &points).into_string();
        assert!(svg.contains("p99") && svg.contains("<path d=\"M"), "{svg}");
    }
}
