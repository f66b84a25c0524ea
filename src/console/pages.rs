//! The console's pages: each a function from a small view struct to markup.
//!
//! maud escapes every spliced value; nothing here is wrapped in
//! `PreEscaped`, so ids, types, headers and bodies that came in a request are
//! always text. No page has an inline script or style attribute (the
//! `Content-Security-Policy` forbids both): looks come from
//! `/console/static/console.css`, the progress of "Replay all" from
//! `/console/static/console.js`.

use maud::{DOCTYPE, Markup, html};

use super::replays::Progress;
use super::urls::enc;

/// Which item of the navigation is the current page.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Events,
    DeadLetters,
    Rejections,
}

/// What every signed-in page needs.
pub struct Frame<'a> {
    pub title: &'a str,
    pub nav: Nav,
    pub csrf: &'a str,
}

/// A signed-in page around `content`.
pub fn framed(frame: &Frame<'_>, content: Markup) -> Markup {
    layout(frame, html! {}, content)
}

fn layout(frame: &Frame<'_>, extra_head: Markup, content: Markup) -> Markup {
    let item = |nav: Nav, href: &str, label: &str| {
        html! {
            @if frame.nav == nav {
                a.current href=(href) aria-current="page" { (label) }
            } @else {
                a href=(href) { (label) }
            }
        }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (frame.title) " · hookgate" }
                link rel="stylesheet" href="/console/static/console.css";
                (extra_head)
            }
            body {
                header.top {
                    span.brand { "hookgate" }
                    nav {
                        (item(Nav::Overview, "/console", "Overview"))
                        (item(Nav::Events, "/console/events", "Events"))
                        (item(Nav::DeadLetters, "/console/dead-letters", "Dead letters"))
                        (item(Nav::Rejections, "/console/rejections", "Rejections"))
                    }
                    form.signout method="post" action="/console/sign-out" {
                        input type="hidden" name="csrf" value=(frame.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
                main {
                    h1 { (frame.title) }
                    (content)
                }
            }
        }
    }
}

/// The sign-in form, with the reason of a refusal if there was one.
pub fn sign_in(error: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Sign in · hookgate" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body.signin {
                main {
                    h1 { "hookgate console" }
                    @if let Some(error) = error {
                        p.error role="alert" { (error) }
                    }
                    form method="post" action="/console/sign-in" {
                        label for="token" { "Admin token" }
                        input #token type="password" name="token" autocomplete="current-password" required autofocus;
                        button type="submit" { "Sign in" }
                    }
                }
            }
        }
    }
}

/// A plain message page (not found, store unavailable, …), signed in.
pub fn message(frame: &Frame<'_>, text: &str) -> Markup {
    layout(frame, html! {}, html! { p.notice { (text) } })
}

// ---------------------------------------------------------------------------
// Overview

pub struct Overview {
    /// Minutes the outcome counts cover (at most 60).
    pub window_minutes: u64,
    /// `Ok` when the store answered a ping, else what went wrong.
    pub store: Result<(), String>,
    pub store_engine: &'static str,
    pub sources: Vec<SourceOverview>,
    /// Outcomes and latency over time, per source (inline SVG).
    pub charts: Markup,
}

pub struct SourceOverview {
    pub name: String,
    pub delivery: String,
    /// Outcome word and count over the window, largest first.
    pub outcomes: Vec<(String, u64)>,
    pub queue_depth: Option<i64>,
    /// Queue sources kept in a durable store: `Some(None)` delivering,
    /// `Some(Some(..))` paused (who, since when, why).
    pub paused: Option<Option<(String, String, Option<String>)>>,
    pub oldest_waiting: Option<String>,
    pub dead_letters: Option<usize>,
    /// Secret index and verified requests it matched over the window.
    pub secrets: Vec<(String, u64)>,
    /// `[[source.filter]]` rules in order: name, what its condition reads
    /// (`/livemode equals`), action, and events it ignored over the window.
    pub filters: Vec<FilterRow>,
}

pub struct FilterRow {
    pub name: String,
    pub reads: String,
    pub action: &'static str,
    pub ignored: u64,
}

pub fn overview(frame: &Frame<'_>, view: &Overview) -> Markup {
    let content = html! {
        section.health {
            @match &view.store {
                Ok(()) => { p.ok { "Store (" (view.store_engine) "): answering" } },
                Err(e) => { p.bad { "Store (" (view.store_engine) "): " (e) } },
            }
        }
        p.hint { "Outcomes, secrets and events each filter ignored over the last " (view.window_minutes) " min." }
        table.sources {
            thead { tr {
                th { "Source" } th { "Delivery" } th { "Outcomes" } th { "Queue" }
                th { "Oldest waiting" } th { "Dead letters" } th { "Secrets matched" }
                th { "Filters" }
            } }
            tbody {
                @for s in &view.sources {
                    tr {
                        td { a href={ "/console/events?source=" (enc(&s.name)) } { (s.name) } }
                        td {
                            (s.delivery)
                            @match &s.paused {
                                Some(Some((by, since, reason))) => {
                                    p.paused {
                                        "Paused by " (by) " since " (since)
                                        @if let Some(r) = reason { ": " (r) }
                                    }
                                    form.resume method="post" action="/console/sources/resume" {
                                        input type="hidden" name="csrf" value=(frame.csrf);
                                        input type="hidden" name="source" value=(s.name);
                                        button type="submit" { "Resume delivery" }
                                    }
                                },
                                Some(None) => {
                                    form.pause method="post" action="/console/sources/pause" {
                                        input type="hidden" name="csrf" value=(frame.csrf);
                                        input type="hidden" name="source" value=(s.name);
                                        input type="text" name="reason" placeholder="Reason (optional)" maxlength="500";
                                        button type="submit" { "Pause delivery" }
                                    }
                                },
                                None => {},
                            }
                        }
                        td {
                            @if s.outcomes.is_empty() { span.none { "none" } }
                            @for (word, n) in &s.outcomes {
                                span.count { (word) " " b { (n) } }
                            }
                        }
                        td { @match s.queue_depth { Some(n) => (n), None => "–" } }
                        td { @match &s.oldest_waiting { Some(age) => (age), None => "–" } }
                        td {
                            @match s.dead_letters {
                                Some(0) => "0",
                                Some(n) => { a href={ "/console/dead-letters?source=" (enc(&s.name)) } { (n) } },
                                None => "–",
                            }
                        }
                        td {
                            @if s.secrets.is_empty() { span.none { "none" } }
                            @for (index, n) in &s.secrets {
                                span.count { "#" (index) " " b { (n) } }
                            }
                        }
                        td {
                            @if s.filters.is_empty() { span.none { "none" } }
                            @for f in &s.filters {
                                span.count title=(f.reads) {
                                    (f.name) " (" (f.action) ")"
                                    @if f.action == "ignore" { " " b { (f.ignored) } }
                                }
                            }
                        }
                    }
                }
            }
        }
        (view.charts)
    };
    layout(frame, html! {}, content)
}

// ---------------------------------------------------------------------------
// Events

pub struct EventFilter {
    pub sources: Vec<String>,
    pub source: Option<String>,
    pub state: Option<String>,
    pub event_type: Option<String>,
    pub id: Option<String>,
}

/// The states of DESIGN §7a, for the filter.
pub const STATES: &[&str] = &[
    "in_flight",
    "delivered",
    "released",
    "waiting",
    "dropped",
    "dead_letter",
];

pub struct EventRow {
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub state: String,
    pub received_at: Option<String>,
    pub attempts: usize,
    pub duplicates: u64,
}

pub struct EventList {
    pub filter: EventFilter,
    pub rows: Vec<EventRow>,
    /// The link to the next (older) page.
    pub next: Option<String>,
    pub notice: Option<String>,
}

fn event_link(source: &str, event_id: &str) -> String {
    format!("/console/events/{}/{}", enc(source), enc(event_id))
}

pub fn events(frame: &Frame<'_>, view: &EventList) -> Markup {
    let f = &view.filter;
    let content = html! {
        form.search method="get" action="/console/events" {
            label for="id" { "Event id" }
            input #id type="search" name="id" value=[f.id.as_deref()];
            button type="submit" { "Search" }
        }
        form.filters method="get" action="/console/events" {
            label { "Source "
                select name="source" {
                    option value="" { "all" }
                    @for s in &f.sources {
                        option value=(s) selected[f.source.as_deref() == Some(s)] { (s) }
                    }
                }
            }
            label { "State "
                select name="state" {
                    option value="" { "all" }
                    @for s in STATES {
                        option value=(s) selected[f.state.as_deref() == Some(*s)] { (s) }
                    }
                }
            }
            label { "Type " input type="text" name="type" value=[f.event_type.as_deref()]; }
            button type="submit" { "Filter" }
        }
        @if let Some(notice) = &view.notice { p.notice { (notice) } }
        @if view.rows.is_empty() {
            p.none { "No events." }
        } @else {
            table.events {
                thead { tr {
                    th { "Received" } th { "Source" } th { "Event id" } th { "Type" }
                    th { "State" } th { "Attempts" } th { "Duplicates" }
                } }
                tbody {
                    @for e in &view.rows {
                        tr {
                            td { (e.received_at.as_deref().unwrap_or("–")) }
                            td { (e.source) }
                            td.id { a href=(event_link(&e.source, &e.event_id)) { (e.event_id) } }
                            td { (e.event_type.as_deref().unwrap_or("–")) }
                            td { span class={ "state " (e.state) } { (e.state) } }
                            td { (e.attempts) }
                            td { (e.duplicates) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &view.next {
            p.pager { a href=(next) rel="next" { "Older events →" } }
        }
    };
    layout(frame, html! {}, content)
}

pub struct AttemptRow {
    pub at: Option<String>,
    pub replica: Option<String>,
    pub mode: String,
    pub outcome: String,
    pub status: Option<u16>,
    pub duration_ms: Option<u64>,
    /// Why and how long a queued attempt waited before it started
    /// (`paused 12.3 s`).
    pub waited: Option<String>,
    /// The attempt's trace id, and the link to it when `trace_url` is set.
    pub trace: Option<(String, Option<String>)>,
}

pub struct EventPage {
    pub row: EventRow,
    /// The first attempts and the last, with how many were between them.
    pub attempts: Vec<AttemptRow>,
    pub attempts_omitted: u64,
    /// When the first and the last duplicate were answered.
    pub duplicates_between: Option<(String, String)>,
    pub next_attempt_at: Option<String>,
    pub dead_letter_id: Option<String>,
    /// `discarded` or `expired`: who or what removed its dead letter, and when.
    pub removed: Option<(String, String)>,
    /// What the store holds now, as label and value.
    pub live: Vec<(String, String)>,
    /// The dead letter itself, when the store still has it.
    pub dead_letter: Option<DeadEntry>,
}

/// The 1-based number of the attempt shown at `i`: those after the first
/// [`crate::trail::FIRST_ATTEMPTS`] come after the ones omitted.
fn attempt_number(i: usize, omitted: u64) -> u64 {
    let i = i as u64;
    if i < crate::trail::FIRST_ATTEMPTS as u64 {
        i + 1
    } else {
        i + 1 + omitted
    }
}

pub fn event(frame: &Frame<'_>, view: &EventPage) -> Markup {
    let e = &view.row;
    let traced = view.attempts.iter().any(|a| a.trace.is_some());
    let content = html! {
        dl.facts {
            dt { "Source" } dd { (e.source) }
            dt { "Event id" } dd.id { (e.event_id) }
            dt { "Type" } dd { (e.event_type.as_deref().unwrap_or("–")) }
            dt { "State" } dd { span class={ "state " (e.state) } { (e.state) } }
            dt { "Received" } dd { (e.received_at.as_deref().unwrap_or("–")) }
            dt { "Duplicates answered" } dd { (e.duplicates) }
            @if let Some((first, last)) = &view.duplicates_between {
                dt { "Duplicates from" } dd { (first) " to " (last) }
            }
            @if let Some(next) = &view.next_attempt_at { dt { "Next attempt" } dd { (next) } }
            @if let Some(id) = &view.dead_letter_id { dt { "Dead letter" } dd.id { (id) } }
            @if let Some((by, at)) = &view.removed { dt { "Removed by" } dd { (by) " at " (at) } }
        }
        h2 { "Attempts" }
        @if view.attempts.is_empty() {
            p.none { "No attempt yet." }
        } @else {
            table.attempts {
                thead { tr {
                    th { "#" } th { "At" } th { "Replica" } th { "Mode" } th { "Outcome" }
                    th { "Status" } th { "Duration" } th { "Waited" }
                    @if traced { th { "Trace" } }
                } }
                tbody {
                    @for (i, a) in view.attempts.iter().enumerate() {
                        @if view.attempts_omitted > 0 && i == crate::trail::FIRST_ATTEMPTS {
                            tr.omitted { td colspan=(if traced { 9 } else { 8 }) { (view.attempts_omitted) " attempts omitted" } }
                        }
                        tr {
                            td { (attempt_number(i, view.attempts_omitted)) }
                            td { (a.at.as_deref().unwrap_or("–")) }
                            td { (a.replica.as_deref().unwrap_or("–")) }
                            td { (a.mode) }
                            td { (a.outcome) }
                            td { @match a.status { Some(s) => (s), None => "–" } }
                            td { @match a.duration_ms { Some(ms) => { (ms) " ms" }, None => "–" } }
                            td { @match &a.waited { Some(w) => (w), None => "–" } }
                            @if traced {
                                td.trace { @match &a.trace {
                                    Some((id, Some(link))) => a href=(link) rel="noopener noreferrer" { (id) },
                                    Some((id, None)) => code { (id) },
                                    None => "–",
                                } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "In the store now" }
        @if view.live.is_empty() {
            p.none { "Nothing." }
        } @else {
            dl.facts {
                @for (k, v) in &view.live { dt { (k) } dd { (v) } }
            }
        }
        @if let Some(dead) = &view.dead_letter {
            h2 { "Dead letter" }
            (dead_entry(frame.csrf, dead))
        }
    };
    layout(frame, html! {}, content)
}

// ---------------------------------------------------------------------------
// Dead letters

pub struct DeadEntry {
    /// What `hookgate dlq list` and `GET /dlq` say of it.
    pub summary: crate::dlq::Summary,
    pub received_at: String,
    pub age: String,
    pub method: String,
    pub uri: String,
    pub headers: Vec<(String, String)>,
    /// The body's first bytes as text (invalid UTF-8 replaced).
    pub body_preview: String,
    pub body_len: usize,
    pub truncated: bool,
}

pub struct DeadLetters {
    pub sources: Vec<(String, usize)>,
    pub source: Option<String>,
    /// One page of the dead letters shown (all, or `source`'s).
    pub entries: Vec<DeadEntry>,
    pub pager: Pager,
    pub notice: Option<String>,
    pub run: Option<Progress>,
    /// The MATCH form, its preview and the jobs.
    pub matching: Markup,
    /// Whether a job runs: the page refreshes itself.
    pub job_running: bool,
}

/// Where a page of a list is: entries `from` to `to` (counted from 1) of
/// `total`, and the links to the pages beside it.
pub struct Pager {
    pub from: usize,
    pub to: usize,
    pub total: usize,
    pub previous: Option<String>,
    pub next: Option<String>,
}

fn pager(p: &Pager) -> Markup {
    html! {
        @if p.previous.is_some() || p.next.is_some() {
            p.pager {
                @if let Some(previous) = &p.previous { a href=(previous) rel="prev" { "← Previous" } " " }
                span.range { (p.from) "–" (p.to) " of " (p.total) }
                @if let Some(next) = &p.next { " " a href=(next) rel="next" { "Next →" } }
            }
        }
    }
}

fn dead_entry(csrf: &str, d: &DeadEntry) -> Markup {
    let s = &d.summary;
    html! {
        article.dead id={ "dead-" (s.id) } {
            header {
                span.id { (s.id) }
                " · " (s.source) " · "
                a href=(event_link(&s.source, &s.event_id)) { (s.event_id) }
                @if let Some(t) = &s.event_type { " · " (t) }
            }
            dl.facts {
                dt { "Delivery" } dd { (s.delivery) }
                dt { "Attempts" } dd { (s.attempts) }
                dt { "Last error" } dd { (s.last_error.as_deref().unwrap_or("–")) }
                dt { "Received" } dd { (d.received_at) " (" (d.age) " ago)" }
                dt { "Request" } dd { (d.method) " " (d.uri) }
            }
            details {
                summary { "Headers (" (d.headers.len()) ")" }
                table.headers {
                    @for (name, value) in &d.headers {
                        tr { th { (name) } td { (value) } }
                    }
                }
            }
            details {
                summary {
                    "Body (" (d.body_len) " bytes"
                    @if d.truncated { ", first " (d.body_preview.len()) " shown" }
                    ")"
                }
                pre.body { (d.body_preview) }
            }
            form method="post" action="/console/dead-letters/replay" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="id" value=(s.id);
                input type="hidden" name="source" value=(s.source);
                button type="submit" { "Replay" }
            }
        }
    }
}

fn progress(run: &Progress) -> Markup {
    html! {
        section #replay-progress .progress data-run=(run.id) data-finished=(run.finished) {
            h2 { "Replay all · " (run.source) }
            p {
                span data-field="done" { (run.done) } " / "
                span data-field="total" { @match run.total { Some(n) => (n), None => "…" } }
                " replayed: "
                span data-field="delivered" { (run.delivered) } " delivered, "
                span data-field="failed" { (run.failed) } " failed"
            }
            p.status data-field="status" {
                @if run.finished {
                    @match &run.error { Some(e) => (e), None => "Finished." }
                } @else if let Some(held) = run.held {
                    "Waiting: " (held) " (this page updates itself)"
                } @else {
                    "Running… (this page updates itself)"
                }
            }
        }
    }
}

pub fn dead_letters(frame: &Frame<'_>, view: &DeadLetters) -> Markup {
    let running = view.run.as_ref().is_some_and(|r| !r.finished);
    let head = html! {
        @if running {
            script src="/console/static/console.js" defer {}
            noscript { meta http-equiv="refresh" content="2"; }
        } @else if view.job_running {
            meta http-equiv="refresh" content="2";
        }
    };
    let content = html! {
        nav.sources {
            @if view.source.is_none() {
                a.current href="/console/dead-letters" { "all" }
            } @else {
                a href="/console/dead-letters" { "all" }
            }
            @for (name, n) in &view.sources {
                @let href = format!("/console/dead-letters?source={}", enc(name));
                @if view.source.as_deref() == Some(name) {
                    a.current href=(href) { (name) " (" (n) ")" }
                } @else {
                    a href=(href) { (name) " (" (n) ")" }
                }
            }
        }
        @if let Some(run) = &view.run { (progress(run)) }
        @if let Some(notice) = &view.notice { p.notice role="status" { (notice) } }
        (view.matching)
        @if let Some(source) = &view.source {
            @if !view.entries.is_empty() {
                form.replay-all method="post" action="/console/dead-letters/replay-all" {
                    input type="hidden" name="csrf" value=(frame.csrf);
                    input type="hidden" name="source" value=(source);
                    button type="submit" { "Replay all" }
                    " the " (view.pager.total) " dead letters of " (source)
                }
            }
        } @else if !view.entries.is_empty() {
            p.hint { "Pick a source above to replay all of its dead letters." }
        }
        @if view.entries.is_empty() {
            p.none { "No dead letters." }
        }
        (pager(&view.pager))
        @for d in &view.entries { (dead_entry(frame.csrf, d)) }
        (pager(&view.pager))
    };
    layout(frame, head, content)
}
