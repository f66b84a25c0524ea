//! What each console page reads from the store and the metrics, turned into
//! the view structs of [`super::pages`]; and the two replay actions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::{Response, StatusCode};

use crate::dlq::{self, Dead, Replayed, Replayer};
use crate::events;
use crate::outcome::Body;
use crate::state::State;
use crate::trail;

use super::pages::{self, AttemptRow, DeadEntry, EventFilter, EventRow, Nav};
use super::session::Session;
use super::urls::{self, enc};
use super::{Console, frame, html, redirect, sampler};

/// Bytes of a dead letter's body shown on the page.
const BODY_PREVIEW: usize = 4 * 1024;

/// Events per page of the console's list.
const EVENTS_PER_PAGE: usize = 50;
/// Dead letters per page (each shows its headers and a body preview).
const DEAD_PER_PAGE: usize = 50;

/// The console waits this long at most for the store on a page.
const STORE_WAIT: Duration = Duration::from_secs(5);

const STORE_FAILED: &str = "The store did not answer; try again in a moment.";

fn time(ms: i64) -> String {
    trail::rfc3339(ms)
}

fn age(ms: i64) -> String {
    let secs = u64::try_from((crate::time::now_ms() - ms).max(0) / 1000).unwrap_or(0);
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

fn store_trouble(
    session: &Session,
    title: &str,
    nav: Nav,
    e: &dyn std::fmt::Display,
) -> Response<Body> {
    tracing::warn!(error = %e, "console: store request failed");
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        pages::message(&frame(title, nav, session), STORE_FAILED),
    )
}

/// `GET /console`.
pub async fn overview(
    state: &Arc<State>,
    console: &Console,
    session: &Session,
    query: &[(String, String)],
) -> Response<Body> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let store_health = match tokio::time::timeout(STORE_WAIT, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "console: store ping failed");
            Err("not answering".to_owned())
        }
        Err(_) => Err(format!("no answer within {}s", STORE_WAIT.as_secs())),
    };
    let (window, covered) = console
        .sampler
        .window(sampler::counts(&state.metrics.encode()));
    let keeps = state.store.keeps_queue();
    let mut dead_by_source: BTreeMap<String, usize> = BTreeMap::new();
    if keeps
        && let Ok(Ok(all)) = tokio::time::timeout(
            STORE_WAIT,
            dlq::list(&state.store, &config.store.encryption, None),
        )
        .await
    {
        for d in all {
            *dead_by_source.entry(d.envelope.source).or_default() += 1;
        }
    }
    let paused = tokio::time::timeout(STORE_WAIT, state.store.paused())
        .await
        .ok()
        .and_then(Result::ok);
    let mut sources = Vec::new();
    for source in &config.sources {
        let name = &source.name;
        let pick = |metric: &str| {
            let mut v: Vec<(String, u64)> = window
                .iter()
                .filter(|((m, s, _), n)| m == metric && s == name && **n >= 1.0)
                .map(|((_, _, k), n)| (k.clone(), *n as u64))
                .collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v
        };
        let queued = source.delivery == crate::config::Delivery::Queue;
        let queue_depth = match state.store.durable() {
            Ok(kept) if queued => tokio::time::timeout(STORE_WAIT, kept.queue_depth(name))
                .await
                .ok()
                .and_then(Result::ok),
            _ => None,
        };
        let oldest_waiting = if queued && queue_depth.unwrap_or(0) > 0 {
            oldest_waiting(state, config, name).await
        } else {
            None
        };
        sources.push(pages::SourceOverview {
            name: name.clone(),
            delivery: if queued { "queue" } else { "forward" }.to_owned(),
            outcomes: pick("hookgate_requests_total"),
            queue_depth,
            paused: paused.as_ref().filter(|_| queued).map(|all| {
                all.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, p)| (p.by.clone(), trail::rfc3339(p.since_ms), p.reason.clone()))
            }),
            oldest_waiting,
            dead_letters: keeps.then(|| dead_by_source.get(name).copied().unwrap_or(0)),
            secrets: pick("hookgate_signature_matches_total"),
            filters: {
                let ignored = pick("hookgate_filtered_total");
                source
                    .filters
                    .rules()
                    .iter()
                    .map(|rule| pages::FilterRow {
                        name: rule.name.clone(),
                        reads: format!("{} {}", rule.field, rule.condition.word()),
                        action: rule.action.word(),
                        ignored: ignored
                            .iter()
                            .find(|(name, _)| *name == rule.name)
                            .map_or(0, |(_, n)| *n),
                    })
                    .collect()
            },
        });
    }
    let charts = super::charts::section(state, super::charts::Range::of(query)).await;
    let view = pages::Overview {
        window_minutes: covered.as_secs().div_ceil(60).clamp(1, 60),
        store: store_health,
        store_engine: state.store.kind(),
        sources,
        charts,
    };
    html(
        StatusCode::OK,
        pages::overview(&frame("Overview", Nav::Overview, session), &view),
    )
}

/// `POST /console/sources/pause` and `/resume` (`source`, `reason`): the
/// store's pause (DESIGN §6a), then back to the overview.
pub async fn pause_or_resume(
    state: &Arc<State>,
    form: &[(String, String)],
    pause: bool,
) -> Response<Body> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let Some(source) = urls::value(form, "source") else {
        return redirect("/console");
    };
    let done = if pause {
        let reason = urls::value(form, "reason");
        crate::pause::pause(&state.store, config, &source, "console", reason.as_deref())
            .await
            .map(drop)
    } else {
        crate::pause::resume(&state.store, config, &source, "console")
            .await
            .map(drop)
    };
    if let Err(e) = done {
        tracing::warn!(source = %source, error = %e, "console: pause or resume refused");
    }
    redirect("/console")
}

/// The age of the oldest event of `source` the trail shows as `waiting`
/// (the trail is newest first, so this reads its waiting events to the end,
/// a bounded number of pages).
async fn oldest_waiting(
    state: &Arc<State>,
    config: &crate::config::Config,
    source: &str,
) -> Option<String> {
    let mut filter = trail::Filter {
        source: Some(source.to_owned()),
        state: Some(trail::State::Waiting),
        event_type: None,
        limit: trail::MAX_LIMIT,
        before: None,
    };
    let mut oldest = None;
    for _ in 0..10 {
        let page = tokio::time::timeout(STORE_WAIT, events::list(&state.store, config, &filter))
            .await
            .ok()?
            .ok()?;
        if let Some(last) = page.events.last() {
            oldest = Some(last.received_ms);
        }
        match page.next.as_deref().and_then(trail::Cursor::decode) {
            Some(cursor) => filter.before = Some(cursor),
            None => break,
        }
    }
    oldest.map(age)
}

fn row(r: &trail::Record) -> EventRow {
    EventRow {
        source: r.source.clone(),
        event_id: r.event_id.clone(),
        event_type: r.event_type.clone(),
        state: r.state.word().to_owned(),
        received_at: r.received_at.clone(),
        attempts: r.attempts.len() + usize::try_from(r.attempts_omitted).unwrap_or(usize::MAX),
        duplicates: r.duplicates,
    }
}

/// `GET /console/events`: the trail, filtered; with `id`, that event in
/// every source (straight to its page when there is exactly one).
pub async fn events(
    state: &Arc<State>,
    session: &Session,
    query: &[(String, String)],
) -> Response<Body> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let source =
        urls::value(query, "source").filter(|s| config.sources.iter().any(|c| &c.name == s));
    let state_word = urls::value(query, "state").filter(|s| trail::State::parse(s).is_some());
    let event_type = urls::value(query, "type");
    let id = urls::value(query, "id")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let filter_view = EventFilter {
        sources: config.sources.iter().map(|s| s.name.clone()).collect(),
        source: source.clone(),
        state: state_word.clone(),
        event_type: event_type.clone(),
        id: id.clone(),
    };
    let f = frame("Events", Nav::Events, session);
    if let Some(id) = id {
        let mut rows = Vec::new();
        for s in config
            .sources
            .iter()
            .filter(|s| source.as_ref().is_none_or(|x| x == &s.name))
        {
            match tokio::time::timeout(STORE_WAIT, events::show(&state.store, config, &s.name, &id))
                .await
            {
                Ok(Ok(Some(shown))) => rows.push(row(&shown.record)),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => return store_trouble(session, "Events", Nav::Events, &e),
                Err(_) => {
                    return store_trouble(session, "Events", Nav::Events, &"timed out");
                }
            }
        }
        if let [only] = rows.as_slice() {
            return redirect(&format!(
                "/console/events/{}/{}",
                enc(&only.source),
                enc(&only.event_id)
            ));
        }
        let notice = rows
            .is_empty()
            .then(|| "No event with that id in the trail.".to_owned());
        let view = pages::EventList {
            filter: filter_view,
            rows,
            next: None,
            notice,
        };
        return html(StatusCode::OK, pages::events(&f, &view));
    }
    let filter = trail::Filter {
        source: source.clone(),
        state: state_word.as_deref().and_then(trail::State::parse),
        event_type: event_type.clone(),
        limit: EVENTS_PER_PAGE,
        before: urls::value(query, "before")
            .as_deref()
            .and_then(trail::Cursor::decode),
    };
    let page =
        match tokio::time::timeout(STORE_WAIT, events::list(&state.store, config, &filter)).await {
            Ok(Ok(page)) => page,
            Ok(Err(e)) => return store_trouble(session, "Events", Nav::Events, &e),
            Err(_) => return store_trouble(session, "Events", Nav::Events, &"timed out"),
        };
    let next = page.next.map(|cursor| {
        let mut q = format!("/console/events?before={}", enc(&cursor));
        for (k, v) in [
            ("source", &source),
            ("state", &state_word),
            ("type", &event_type),
        ] {
            if let Some(v) = v {
                q.push_str(&format!("&{k}={}", enc(v)));
            }
        }
        q
    });
    let view = pages::EventList {
        filter: filter_view,
        rows: page.events.iter().map(row).collect(),
        next,
        notice: None,
    };
    html(StatusCode::OK, pages::events(&f, &view))
}

/// `GET /console/events/{source}/{event_id}`.
pub async fn event(
    state: &Arc<State>,
    session: &Session,
    source: &str,
    event_id: &str,
) -> Response<Body> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let shown = match tokio::time::timeout(
        STORE_WAIT,
        events::show(&state.store, config, source, event_id),
    )
    .await
    {
        Ok(Ok(Some(shown))) => shown,
        Ok(Ok(None)) => {
            return html(
                StatusCode::NOT_FOUND,
                pages::message(
                    &frame("Event", Nav::Events, session),
                    "The trail has no such event.",
                ),
            );
        }
        Ok(Err(e)) => return store_trouble(session, "Event", Nav::Events, &e),
        Err(_) => return store_trouble(session, "Event", Nav::Events, &"timed out"),
    };
    let r = &shown.record;
    let mut live = vec![("Nonce".to_owned(), shown.store.nonce.to_owned())];
    if let Some(at) = &shown.store.nonce_expires_at {
        live.push(("Nonce expires".to_owned(), at.clone()));
    }
    for d in &shown.store.dead_letters {
        live.push(("Dead letter".to_owned(), d.id.clone()));
    }
    let dead_letter = match shown.store.dead_letters.first() {
        Some(summary) if state.store.keeps_queue() => {
            match dlq::get(&state.store, &config.store.encryption, &summary.id).await {
                Ok(dead) => Some(dead_entry(&dead)),
                Err(_) => None,
            }
        }
        _ => None,
    };
    let view = pages::EventPage {
        row: row(r),
        attempts: r
            .attempts
            .iter()
            .map(|a| AttemptRow {
                at: Some(a.at.clone()),
                replica: Some(a.replica.clone()),
                mode: serde_json::to_value(a.mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                outcome: a.outcome.clone(),
                status: a.status,
                duration_ms: Some(a.duration_ms),
                waited: a
                    .waited
                    .as_ref()
                    .map(|w| format!("{} {:.1} s", w.reason, w.ms as f64 / 1000.0)),
                trace: a
                    .trace_id
                    .as_ref()
                    .filter(|id| crate::traces::is_trace_id(id))
                    .map(|id| {
                        let link = config.tracing.as_ref().and_then(|t| t.link(id));
                        (id.clone(), link)
                    }),
            })
            .collect(),
        attempts_omitted: r.attempts_omitted,
        duplicates_between: r
            .first_duplicate_at
            .clone()
            .zip(r.last_duplicate_at.clone()),
        next_attempt_at: r.next_attempt_at.clone(),
        dead_letter_id: r.dead_letter_id.clone(),
        removed: r.removed_by.clone().zip(r.removed_at.clone()),
        live,
        dead_letter,
    };
    html(
        StatusCode::OK,
        pages::event(&frame("Event", Nav::Events, session), &view),
    )
}

fn dead_entry(dead: &Dead) -> DeadEntry {
    let e = &dead.envelope;
    let shown = &e.body[..e.body.len().min(BODY_PREVIEW)];
    DeadEntry {
        summary: dead.summary(),
        received_at: time(e.received_ms),
        age: age(e.received_ms),
        method: e.method.clone(),
        uri: e.uri.clone(),
        headers: e
            .header_map()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body_preview: match e.unopenable() {
            Some(why) => format!("({why}; kept, nothing sent)"),
            None => String::from_utf8_lossy(shown).into_owned(),
        },
        body_len: e.body.len(),
        truncated: e.body.len() > BODY_PREVIEW,
    }
}

/// `GET /console/dead-letters[?source&run&replayed&result]`.
pub async fn dead_letters(
    state: &Arc<State>,
    console: &Console,
    session: &Session,
    query: &[(String, String)],
) -> Response<Body> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let f = frame("Dead letters", Nav::DeadLetters, session);
    if !state.store.keeps_queue() {
        return html(
            StatusCode::OK,
            pages::message(&f, "This store keeps no dead letters (kind = \"memory\")."),
        );
    }
    let all = match tokio::time::timeout(
        STORE_WAIT,
        dlq::list(&state.store, &config.store.encryption, None),
    )
    .await
    {
        Ok(Ok(all)) => all,
        Ok(Err(e)) => return store_trouble(session, "Dead letters", Nav::DeadLetters, &e),
        Err(_) => {
            return store_trouble(session, "Dead letters", Nav::DeadLetters, &"timed out");
        }
    };
    let source = urls::value(query, "source");
    let mut counts: BTreeMap<String, usize> =
        config.sources.iter().map(|s| (s.name.clone(), 0)).collect();
    for d in &all {
        *counts.entry(d.envelope.source.clone()).or_default() += 1;
    }
    let shown: Vec<&Dead> = all
        .iter()
        .filter(|d| source.as_ref().is_none_or(|s| &d.envelope.source == s))
        .collect();
    let total = shown.len();
    // Pages count from 1; one past the last shows the last.
    let pages = total.div_ceil(DEAD_PER_PAGE).max(1);
    let page = urls::value(query, "page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let from = (page - 1) * DEAD_PER_PAGE;
    let entries = shown
        .iter()
        .skip(from)
        .take(DEAD_PER_PAGE)
        .map(|d| dead_entry(d))
        .collect();
    let link = |page: usize| {
        let mut href = String::from("/console/dead-letters?");
        if let Some(s) = &source {
            href.push_str(&format!("source={}&", enc(s)));
        }
        href.push_str(&format!("page={page}"));
        href
    };
    let pager = pages::Pager {
        from: if total == 0 { 0 } else { from + 1 },
        to: (from + DEAD_PER_PAGE).min(total),
        total,
        previous: (page > 1).then(|| link(page - 1)),
        next: (page < pages).then(|| link(page + 1)),
    };
    let notice = match (urls::value(query, "replayed"), urls::value(query, "result")) {
        (Some(id), Some(result)) => Some(match result.as_str() {
            "delivered" => format!("{id}: delivered."),
            "already_delivered" => format!("{id}: already delivered by a sender retry; removed."),
            "stale_version" => format!("{id}: the app has this version or a newer one; removed."),
            "in_flight" => format!("{id}: a copy of this event is in flight right now; kept."),
            "paused" => format!(
                "{id}: its source's delivery is paused; kept, nothing sent (resume it first)."
            ),
            "breaker_open" => format!(
                "{id}: the app's breaker is open; kept, nothing sent (try again after its cooldown)."
            ),
            "unopenable" => format!(
                "{id}: its payload cannot be opened with the configured keys; kept, nothing sent."
            ),
            "failed" => format!("{id}: the app did not take it; kept."),
            "deleted" => format!("{id}: deleted."),
            _ => format!("{id}: no such dead letter (already replayed?)."),
        }),
        _ => super::matching::notice(query),
    };
    let (matching, job_running) = super::matching::section(state, f.csrf, query).await;
    let run = urls::value(query, "run").and_then(|id| console.replays.get(&id));
    let view = pages::DeadLetters {
        sources: counts.into_iter().collect(),
        source,
        entries,
        pager,
        notice,
        run,
        matching,
        job_running,
    };
    html(StatusCode::OK, pages::dead_letters(&f, &view))
}

/// `POST /console/dead-letters/replay` (`id`, `source`): one entry, through
/// the same [`Replayer`] as `POST /dlq/replay`.
pub async fn replay_one(state: &Arc<State>, form: &[(String, String)]) -> Response<Body> {
    let Some(id) = urls::value(form, "id") else {
        return redirect("/console/dead-letters");
    };
    let runtime = state.runtime();
    let replayer = Replayer::new(state.steps(&runtime.config), false);
    let result = match replayer.replay_id(&id).await {
        Ok(Replayed::Delivered) => "delivered",
        Ok(Replayed::AlreadyDelivered) => "already_delivered",
        Ok(Replayed::StaleVersion) => "stale_version",
        Ok(Replayed::InFlight) => "in_flight",
        Ok(Replayed::Unopenable { .. }) => "unopenable",
        Ok(Replayed::Held { held: "paused" }) => "paused",
        Ok(Replayed::Held { .. }) => "breaker_open",
        Ok(Replayed::Failed { .. }) => "failed",
        Err(dlq::Error::NotFound(_)) => "not_found",
        Err(e) => {
            tracing::warn!(error = %e, "console: replay failed");
            "failed"
        }
    };
    let mut to = format!(
        "/console/dead-letters?replayed={}&result={result}",
        enc(&id)
    );
    if let Some(source) = urls::value(form, "source") {
        to.push_str(&format!("&source={}", enc(&source)));
    }
    redirect(&to)
}

/// `POST /console/dead-letters/replay-all` (`source`): starts a run in the
/// background and shows its page.
pub fn replay_all(
    state: &Arc<State>,
    console: &Arc<Console>,
    form: &[(String, String)],
) -> Response<Body> {
    let runtime = state.runtime();
    let Some(source) =
        urls::value(form, "source").filter(|s| runtime.config.sources.iter().any(|c| &c.name == s))
    else {
        return redirect("/console/dead-letters");
    };
    let run = super::replays::Replays::start(state, console, &source);
    redirect(&format!(
        "/console/dead-letters?source={}&run={run}",
        enc(&source)
    ))
}
