//! The console's Rejections page (DESIGN §7b, §7d): the newest refused
//! requests this replica keeps, filtered by source and outcome, with the
//! last hour's counts by outcome and by client address.

use std::sync::Arc;

use http::{Response, StatusCode};
use maud::html;

use super::pages::{self, Nav};
use super::session::Session;
use super::urls::{self, enc};
use super::{frame, html as respond};
use crate::outcome::Body;
use crate::state::State;

/// Entries the page shows.
const SHOWN: usize = 200;

/// `GET /console/rejections[?source&outcome]`.
pub fn page(state: &Arc<State>, session: &Session, query: &[(String, String)]) -> Response<Body> {
    let runtime = state.runtime();
    let f = frame("Rejections", Nav::Rejections, session);
    let source = urls::value(query, "source");
    let outcome = urls::value(query, "outcome");
    let listed = state
        .rejections
        .list(source.as_deref(), outcome.as_deref(), SHOWN);
    let link = |s: Option<&str>, o: Option<&str>| {
        let mut href = String::from("/console/rejections?");
        if let Some(s) = s {
            href.push_str(&format!("source={}&", enc(s)));
        }
        if let Some(o) = o {
            href.push_str(&format!("outcome={}", enc(o)));
        }
        href
    };
    let content = html! {
        p.hint {
            "Requests refused with 400, 403, 404, 405 or 413 by replica " b { (listed.replica) }
            ", newest first: metadata only, never a body, a signature or another header's value. Each replica keeps its own."
        }
        nav.sources {
            @if source.is_none() { a.current href="/console/rejections" { "all" } }
            @else { a href="/console/rejections" { "all" } }
            @for s in &runtime.config.sources {
                @if source.as_deref() == Some(s.name.as_str()) {
                    a.current href=(link(Some(&s.name), None)) { (s.name) }
                } @else {
                    a href=(link(Some(&s.name), None)) { (s.name) }
                }
            }
        }
        @if let Some(o) = &outcome {
            p.notice { "Outcome " b { (o) } " only. " a href=(link(source.as_deref(), None)) { "Every outcome" } }
        }
        section.counts {
            h2 { "Last hour" }
            table.by-outcome {
                thead { tr { th { "Source" } th { "Outcome" } th { "Count" } } }
                tbody {
                    @for c in &listed.counts.by_outcome {
                        tr {
                            td { (c.source.as_deref().unwrap_or("(no source)")) }
                            td { a href=(link(c.source.as_deref(), Some(&c.key))) { (c.key) } }
                            td { (c.count) }
                        }
                    }
                }
            }
            table.by-client {
                thead { tr { th { "Source" } th { "Client address" } th { "Count" } } }
                tbody {
                    @for c in &listed.counts.by_client {
                        tr {
                            td { (c.source.as_deref().unwrap_or("(no source)")) }
                            td { (c.key) } td { (c.count) }
                        }
                    }
                }
            }
        }
        @if listed.entries.is_empty() {
            p.none { "No refused requests kept." }
        } @else {
            table.rejections {
                thead { tr {
                    th { "Time" } th { "Source" } th { "Outcome" } th { "Status" } th { "Client" }
                    th { "Path" } th { "User-Agent" } th { "Body bytes" } th { "Detail" }
                } }
                tbody {
                    @for e in &listed.entries {
                        tr {
                            td { (e.at) }
                            td { (e.source.as_deref().unwrap_or("–")) }
                            td { (e.outcome) }
                            td { (e.status) }
                            td { (e.client.map(|c| c.to_string()).unwrap_or_else(|| "–".into())) }
                            td.path { (e.path) }
                            td { (e.user_agent.as_deref().unwrap_or("–")) }
                            td { (e.body_bytes.map(|n| n.to_string()).unwrap_or_else(|| "–".into())) }
                            td {
                                @if let Some(h) = e.signature_header { "header " (h) " " }
                                @if let Some(s) = e.outside_tolerance_secs { (s) " s outside tolerance" }
                            }
                        }
                    }
                }
            }
        }
    };
    respond(StatusCode::OK, pages::framed(&f, content))
}
