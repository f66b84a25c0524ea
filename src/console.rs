//! The console (DESIGN §7b): HTML pages on the admin listener for the
//! engineer on call, under `/console`, only when `[admin] token` is set
//! (404 otherwise, as if it did not exist).
//!
//! - `GET /console[?range=24h]`: the overview with its charts (the last
//!   hour, or the last 24 hours), or the sign-in form without a session.
//! - `GET /console/events[?source&state&type&id&before]`, `GET
//!   /console/events/{source}/{event_id}`: the trail (§7a) and one event.
//! - `GET /console/rejections[?source&outcome]`: what this replica refused
//!   lately and why (§7d), with the last hour's counts.
//! - `GET /console/dead-letters[?source]`: dead letters, with "Replay" and
//!   "Replay all"; `GET /console/replays/{id}`: a "Replay all" run as JSON.
//! - `POST /console/sign-in`, `/console/sign-out`,
//!   `/console/dead-letters/replay`, `/console/dead-letters/replay-all`,
//!   `/console/dead-letters/start`, `/console/dead-letters/jobs/cancel`:
//!   each answered with a redirect to a page (so a reload never repeats
//!   one); `POST /console/dead-letters/confirm` shows the count a replay or
//!   delete by match would take, and changes nothing.
//! - `GET /console/static/console.css`, `/console/static/console.js`: compiled in.
//!
//! Rules every request goes through, in this order:
//! - the admin token is read from the runtime config at each request, so a
//!   token from a file that changes, or a reload, takes effect at once;
//! - a `POST` whose `Origin` is not this listener's own (`http://` + the
//!   `Host` it was asked on) or whose `Sec-Fetch-Site` is present and not
//!   `same-origin`/`none` is `403`, sign-in included;
//! - every `POST` but sign-in needs a live session and its CSRF token in the
//!   `csrf` field (compared in constant time), else `403`;
//! - every page but sign-in needs a live session, else it redirects to the
//!   sign-in form;
//! - every response carries `Content-Security-Policy: default-src 'self'`
//!   (plus no framing, no `<base>`, forms only to this origin), `nosniff`,
//!   `no-referrer` and `no-store`.
//!
//! The admin token is never logged, echoed, or put in a page.

mod charts;
mod matching;
pub mod pages;
mod rejected;
pub mod replays;
pub mod sampler;
pub mod session;
pub mod urls;
mod views;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use maud::Markup;

use crate::outcome::{Body, json_response as json, text_response as text};
use crate::secret::Secret;
use crate::state::State;

use self::pages::{Frame, Nav};
use self::session::Session;

/// What the console keeps in the process: sessions, "Replay all" runs, and
/// the counter snapshots behind the overview's last hour.
#[derive(Default)]
pub struct Console {
    pub sessions: session::Sessions,
    pub replays: replays::Replays,
    pub sampler: sampler::Sampler,
}

/// The policy on every console response.
pub const CSP: &str =
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Largest form body read.
const MAX_FORM: usize = 16 * 1024;

const CSS: &str = include_str!("console/static/console.css");
const JS: &str = include_str!("console/static/console.js");

/// Whether `path` is the console's.
pub fn owns(path: &str) -> bool {
    path == "/console" || path.starts_with("/console/")
}

pub async fn handle<B>(
    state: &Arc<State>,
    console: &Arc<Console>,
    request: Request<B>,
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut response = route(state, console, request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn route<B>(state: &Arc<State>, console: &Arc<Console>, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let runtime = state.runtime();
    let Some(token) = runtime.config.admin.token.clone() else {
        return text(StatusCode::NOT_FOUND, "not found\n");
    };
    let path = request.uri().path().to_owned();
    let method = request.method().clone();

    if method == Method::GET || method == Method::HEAD {
        match path.as_str() {
            "/console/static/console.css" => return asset(CSS, "text/css; charset=utf-8"),
            "/console/static/console.js" => {
                return asset(JS, "text/javascript; charset=utf-8");
            }
            _ => {}
        }
    }

    let session_id = request
        .headers()
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(session::cookie_value)
        .map(str::to_owned);
    let session = session_id
        .as_deref()
        .and_then(|id| console.sessions.get(id, &token));

    if method == Method::POST {
        if !same_origin(request.headers()) {
            return forbidden("cross-origin request refused");
        }
        let form = match Limited::new(request.into_body(), MAX_FORM).collect().await {
            Ok(body) => urls::pairs(&String::from_utf8_lossy(&body.to_bytes())),
            Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "form too large\n"),
        };
        if path == "/console/sign-in" {
            return sign_in(state, console, &token, &form).await;
        }
        let (Some(session), Some(session_id)) = (session, session_id) else {
            return forbidden("not signed in");
        };
        let csrf_ok =
            urls::value(&form, "csrf").is_some_and(|given| session::same(&given, &session.csrf));
        if !csrf_ok {
            return forbidden("missing or wrong CSRF token");
        }
        return match path.as_str() {
            "/console/sign-out" => {
                console.sessions.end(&session_id);
                let mut response = redirect("/console");
                if let Ok(v) = HeaderValue::from_str(&session::clear_cookie()) {
                    response.headers_mut().insert(header::SET_COOKIE, v);
                }
                response
            }
            "/console/dead-letters/replay" => views::replay_one(state, &form).await,
            "/console/dead-letters/replay-all" => views::replay_all(state, console, &form),
            "/console/dead-letters/confirm" => matching::confirm(state, &session, &form).await,
            "/console/dead-letters/start" => matching::start(state, &form).await,
            "/console/dead-letters/jobs/cancel" => matching::cancel(state, &form).await,
            "/console/sources/pause" => views::pause_or_resume(state, &form, true).await,
            "/console/sources/resume" => views::pause_or_resume(state, &form, false).await,
            _ => text(StatusCode::NOT_FOUND, "not found\n"),
        };
    }
    if method != Method::GET && method != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    let Some(session) = session else {
        return if path == "/console" {
            html(StatusCode::OK, pages::sign_in(None))
        } else {
            redirect("/console")
        };
    };
    let query = urls::pairs(request.uri().query().unwrap_or(""));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["console"] => views::overview(state, console, &session, &query).await,
        ["console", "events"] => views::events(state, &session, &query).await,
        ["console", "events", source, event_id] => {
            match (urls::dec(source, false), urls::dec(event_id, false)) {
                (Some(source), Some(event_id)) => {
                    views::event(state, &session, &source, &event_id).await
                }
                _ => text(StatusCode::NOT_FOUND, "not found\n"),
            }
        }
        ["console", "dead-letters"] => views::dead_letters(state, console, &session, &query).await,
        ["console", "rejections"] => rejected::page(state, &session, &query),
        ["console", "replays", id] => match console.replays.get(id) {
            Some(progress) => json(StatusCode::OK, &progress),
            None => json(
                StatusCode::NOT_FOUND,
                &serde_json::json!({"error": "unknown_replay"}),
            ),
        },
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// `POST /console/sign-in`: a right token starts a session; a wrong one is
/// counted, slowed down, and answered with the form again.
async fn sign_in(
    state: &Arc<State>,
    console: &Console,
    token: &Secret,
    form: &[(String, String)],
) -> Response<Body> {
    let given = urls::value(form, "token").unwrap_or_default();
    if session::token_matches(given.trim(), token) {
        let id = console.sessions.start(token);
        let mut response = redirect("/console");
        if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&id)) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
        tracing::info!("console: signed in");
        return response;
    }
    state.metrics.console_signin_failures.inc();
    let delay = console.sessions.failed();
    tracing::warn!(
        delay_ms = delay.as_millis() as u64,
        "console: sign-in refused (wrong admin token)"
    );
    tokio::time::sleep(delay).await;
    html(
        StatusCode::UNAUTHORIZED,
        pages::sign_in(Some("That is not the admin token.")),
    )
}

/// Whether a `POST` comes from a page of this listener: `Origin`, when
/// sent, is `http://` + `Host`; `Sec-Fetch-Site`, when sent, is
/// `same-origin` or `none` (typed in, bookmarked).
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if let Some(site) = get(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
        && site != "none"
    {
        return false;
    }
    match get(header::ORIGIN) {
        None => true,
        Some(origin) => get(header::HOST).is_some_and(|host| {
            origin
                .strip_prefix("http://")
                .is_some_and(|o| o.eq_ignore_ascii_case(host))
        }),
    }
}

/// What each signed-in page is framed with.
fn frame<'a>(title: &'a str, nav: Nav, session: &'a Session) -> Frame<'a> {
    Frame {
        title,
        nav,
        csrf: &session.csrf,
    }
}

fn html(status: StatusCode, markup: Markup) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(markup.into_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn redirect(to: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

fn forbidden(why: &str) -> Response<Body> {
    text(StatusCode::FORBIDDEN, &format!("forbidden: {why}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.insert(*n, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn origins() {
        assert!(same_origin(&headers(&[("host", "127.0.0.1:9090")])));
        assert!(same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "http://127.0.0.1:9090"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "http://evil.example"),
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "null"),
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("sec-fetch-site", "cross-site"),
        ])));
        assert!(!same_origin(&headers(&[(
            "origin",
            "http://127.0.0.1:9090"
        )])));
    }
}
