//! The dead-letter page's MATCH (DESIGN §6b, §7b): a form with the fields
//! of a match, "Preview" (how many match and the first ten), "Replay
//! matching" and "Delete matching" after a confirmation page naming the
//! count, and the jobs with their progress and a "Cancel" button.
//!
//! - `GET /console/dead-letters?…&preview=1`: the preview, on the page.
//! - `POST /console/dead-letters/confirm` (`kind`, the match): the
//!   confirmation page; nothing changes.
//! - `POST /console/dead-letters/start` (`kind`, the match): starts it (a
//!   job for more than one entry) and redirects to the page.
//! - `POST /console/dead-letters/jobs/cancel` (`job`).

use std::sync::Arc;

use http::{Response, StatusCode};
use maud::{Markup, html};

use super::pages::{self, Nav};
use super::session::Session;
use super::urls::{self, enc};
use super::{frame, html as page, redirect};
use crate::dlq::jobs::{self, Job, JobState, Kind};
use crate::dlq::{Match, Replayer};
use crate::outcome::Body;
use crate::state::State;

/// Jobs the page lists, newest first.
const JOBS_SHOWN: usize = 10;

/// The match fields as the form names them.
const FIELDS: [&str; 5] = ["source", "type", "since", "until", "error"];

fn parse(values: &[(String, String)]) -> Result<Match, String> {
    let v = |name: &str| urls::value(values, name);
    Match::parse(
        v("source").as_deref(),
        v("type").as_deref(),
        v("since").as_deref(),
        v("until").as_deref(),
        v("error").as_deref(),
        crate::time::now_ms(),
    )
    .map_err(|e| e.to_string())
}

fn kind_of(values: &[(String, String)]) -> Option<Kind> {
    match urls::value(values, "kind").as_deref() {
        Some("replay") => Some(Kind::Replay),
        Some("delete") => Some(Kind::Delete),
        _ => None,
    }
}

/// The match fields again, hidden, for the next form.
fn hidden(values: &[(String, String)]) -> Markup {
    html! {
        @for name in FIELDS {
            @if let Some(v) = urls::value(values, name) {
                input type="hidden" name=(name) value=(v);
            }
        }
    }
}

/// The form, the preview when asked (`preview=1`), and the jobs; and
/// whether a job runs (the page then refreshes itself).
pub async fn section(state: &Arc<State>, csrf: &str, query: &[(String, String)]) -> (Markup, bool) {
    let runtime = state.runtime();
    let config = &runtime.config;
    let value = |name: &str| urls::value(query, name).unwrap_or_default();
    let preview = if urls::value(query, "preview").is_some() {
        Some(match parse(query) {
            Err(e) => Err(e),
            Ok(m) => jobs::matching(&state.store, config, &m)
                .await
                .map(|found| (m, found))
                .map_err(|e| e.to_string()),
        })
    } else {
        None
    };
    let jobs = jobs::list(&state.store).await.unwrap_or_default();
    let running = jobs.iter().any(|j| j.state == JobState::Running);
    let markup = html! {
        section.matching {
            h2 { "Replay or delete by match" }
            form.match method="get" action="/console/dead-letters" {
                label { "Source " select name="source" {
                    option value="" { "any" }
                    @for s in &config.sources {
                        @if value("source") == s.name {
                            option value=(s.name) selected { (s.name) }
                        } @else {
                            option value=(s.name) { (s.name) }
                        }
                    }
                } }
                label { "Event type " input type="text" name="type" value=(value("type")) placeholder="invoice.*"; }
                label { "Since " input type="text" name="since" value=(value("since")) placeholder="2h or 2026-12-06T14:00:00Z"; }
                label { "Until " input type="text" name="until" value=(value("until")) placeholder="1h"; }
                label { "Last error " input type="text" name="error" value=(value("error")) placeholder="503, 5xx, upstream_timeout"; }
                input type="hidden" name="preview" value="1";
                button type="submit" { "Preview" }
            }
            @match &preview {
                None => {},
                Some(Err(e)) => { p.bad role="alert" { (e) } },
                Some(Ok((m, found))) => {
                    p.matched role="status" {
                        b { (found.len()) } " dead letters match (" (m.describe()) ")"
                        @if found.len() > crate::dlq::matching::SAMPLE { "; the first " (crate::dlq::matching::SAMPLE) ":" }
                    }
                    @if !found.is_empty() {
                        table.sample {
                            thead { tr { th { "Id" } th { "Source" } th { "Event id" } th { "Type" } th { "Attempts" } th { "Last error" } } }
                            tbody {
                                @for d in found.iter().take(crate::dlq::matching::SAMPLE) {
                                    tr {
                                        td { (d.id) } td { (d.envelope.source) } td { (d.envelope.event_id) }
                                        td { (d.envelope.event_type.as_deref().unwrap_or("–")) }
                                        td { (d.envelope.attempts) }
                                        td { (d.envelope.last_error.as_deref().unwrap_or("–")) }
                                    }
                                }
                            }
                        }
                        @for (kind, label) in [("replay", "Replay matching"), ("delete", "Delete matching")] {
                            form.confirm-ask method="post" action="/console/dead-letters/confirm" {
                                input type="hidden" name="csrf" value=(csrf);
                                input type="hidden" name="kind" value=(kind);
                                (hidden(query))
                                button type="submit" { (label) }
                            }
                        }
                    }
                },
            }
        }
        @if !jobs.is_empty() {
            section.jobs {
                h2 { "Jobs" }
                table.jobs {
                    thead { tr {
                        th { "Job" } th { "Kind" } th { "State" } th { "Progress" }
                        th { "Done" } th { "Failed" } th { "Skipped" } th { "Match" } th { "By" } th {}
                    } }
                    tbody {
                        @for j in jobs.iter().rev().take(JOBS_SHOWN) { (job_row(csrf, j)) }
                    }
                }
            }
        }
    };
    (markup, running)
}

fn job_row(csrf: &str, j: &Job) -> Markup {
    let state = match (&j.waiting, j.state, &j.cancel) {
        (_, JobState::Running, Some(_)) => "cancelling".to_owned(),
        (Some(w), JobState::Running, None) => format!("running (waiting: {w})"),
        _ => j.state.word().to_owned(),
    };
    html! {
        tr id={ "job-" (j.id) } {
            td { (j.id) } td { (j.kind.word()) } td.state { (state) }
            td { progress max=(j.total.max(1)) value=(j.done) {} " " (j.done) "/" (j.total) }
            td { (j.succeeded) } td { (j.failed) } td { (j.skipped) }
            td { (j.matching.describe()) } td { (j.by) }
            td {
                @if j.state == JobState::Running && j.cancel.is_none() {
                    form.cancel method="post" action="/console/dead-letters/jobs/cancel" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="job" value=(j.id);
                        button type="submit" { "Cancel" }
                    }
                }
                @if !j.interrupted.is_empty() {
                    p.bad { "Left as dead letters (their attempt was cut off): " (j.interrupted.join(" ")) }
                }
            }
        }
    }
}

/// `POST /console/dead-letters/confirm`: the count, and a "Confirm" button.
pub async fn confirm(
    state: &Arc<State>,
    session: &Session,
    form: &[(String, String)],
) -> Response<Body> {
    let runtime = state.runtime();
    let f = frame("Dead letters", Nav::DeadLetters, session);
    let (Some(kind), Ok(m)) = (kind_of(form), parse(form)) else {
        return redirect("/console/dead-letters");
    };
    let found = match jobs::matching(&state.store, &runtime.config, &m).await {
        Ok(found) => found,
        Err(e) => {
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                pages::message(&f, &format!("The store did not answer: {e}")),
            );
        }
    };
    let verb = if kind == Kind::Replay {
        "Replay"
    } else {
        "Delete"
    };
    let content = html! {
        section.confirm {
            p.confirm-count {
                (verb) " " b { (found.len()) } " dead letters matching " (m.describe()) "?"
            }
            @if kind == Kind::Delete {
                p.hint { "Deleted dead letters are removed without being sent; their events' trail says discarded." }
            } @else {
                p.hint { "They are sent at each source's max_rate, waiting while a source is paused or its breaker open." }
            }
            form method="post" action="/console/dead-letters/start" {
                input type="hidden" name="csrf" value=(f.csrf);
                input type="hidden" name="kind" value=(kind.word());
                (hidden(form))
                button type="submit" { "Confirm" }
            }
            a href="/console/dead-letters" { "Back" }
        }
    };
    page(StatusCode::OK, pages::framed(&f, content))
}

/// `POST /console/dead-letters/start`: a job for more than one entry, the
/// one entry handled now; back to the page with what happened.
pub async fn start(state: &Arc<State>, form: &[(String, String)]) -> Response<Body> {
    let runtime = state.runtime();
    let (Some(kind), Ok(m)) = (kind_of(form), parse(form)) else {
        return redirect("/console/dead-letters");
    };
    let replayer = Replayer::new(state.steps(&runtime.config), false);
    let to = match jobs::ask(&replayer, kind, m, false, None, "console").await {
        Ok((_, Some(job))) => format!("/console/dead-letters?job={}&said=started", enc(&job.id)),
        Ok((answer, None)) => match answer.sample.first() {
            None => "/console/dead-letters?said=none_match".to_owned(),
            Some(one) => {
                let result = answer
                    .result
                    .as_ref()
                    .and_then(|r| r["result"].as_str())
                    .unwrap_or("failed");
                format!(
                    "/console/dead-letters?replayed={}&result={}",
                    enc(&one.id),
                    enc(result)
                )
            }
        },
        Err(jobs::Error::Busy(id)) => format!("/console/dead-letters?job={}&said=busy", enc(&id)),
        Err(e) => {
            tracing::warn!(error = %e, "console: starting a dead-letter job failed");
            "/console/dead-letters?said=store_failed".to_owned()
        }
    };
    redirect(&to)
}

/// What the page says after a start or a cancel (`said`, `job`); only
/// fixed sentences and a job id, never text from the query.
pub fn notice(query: &[(String, String)]) -> Option<String> {
    let job = urls::value(query, "job").unwrap_or_default();
    Some(match urls::value(query, "said")?.as_str() {
        "started" => format!("Job {job} started."),
        "busy" => {
            format!("Job {job} already runs on an overlapping match: cancel it or wait for it.")
        }
        "cancel_asked" => format!("Job {job}: cancel asked; it stops before its next entry."),
        "cancelled" => format!("Job {job} is not running."),
        "none_match" => "No dead letters match now.".to_owned(),
        "store_failed" => "The store did not answer; nothing was started.".to_owned(),
        _ => return None,
    })
}

/// `POST /console/dead-letters/jobs/cancel` (`job`).
pub async fn cancel(state: &Arc<State>, form: &[(String, String)]) -> Response<Body> {
    let Some(id) = urls::value(form, "job") else {
        return redirect("/console/dead-letters");
    };
    let said = match jobs::cancel(&state.store, &id, "console").await {
        Ok(job) if job.state == JobState::Running => "cancel_asked",
        Ok(_) => "cancelled",
        Err(e) => {
            tracing::warn!(job = %id, error = %e, "console: cancelling a dead-letter job failed");
            "store_failed"
        }
    };
    redirect(&format!(
        "/console/dead-letters?job={}&said={said}",
        enc(&id)
    ))
}
