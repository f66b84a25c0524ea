//! The admin listener: `/healthz`, `/readyz`, `/metrics`, and behind the
//! token `/dlq` and `/events`; one match on the path.
//!
//! With `[admin] token` set, also the dead letters: `GET /dlq[?source=NAME]`
//! (a JSON list); `POST /dlq/replay` with `{"id": "…"}`,
//! `{"all": true, "source": "…"}` (source optional) or a MATCH
//! (DESIGN §6b: `{"source", "type", "since", "until", "error", "dry_run",
//! "rate"}`); `POST /dlq/delete` with `{"id": "…"}` or a MATCH;
//! `GET /dlq/jobs` and `POST /dlq/jobs/{id}/cancel`; all behind
//! `Authorization: Bearer <token>`. Without a token they answer 404, as if
//! they did not exist. The token is compared in constant time (as SHA-256
//! digests, so its length does not leak either) and never logged.
//!
//! Also behind the token, delivery per source (DESIGN §6a): `GET /sources`,
//! `POST /sources/{name}/pause` (optional `{"reason": "…"}`) and
//! `POST /sources/{name}/resume`; a forward source is `409 forward_source`.
//!
//! `/console` and the paths under it are the console's ([`crate::console`]),
//! which has its own sign-in and answers 404 without a token as well.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::dlq::jobs::{self, Kind};
use crate::dlq::{self, Match, Replayer};
use crate::events;
use crate::outcome::{Body, json_response as json, text_response as text};
use crate::pause;
use crate::secret::Secret;
use crate::state::State;
use crate::trail;

/// Largest `POST /dlq/replay` body read.
const MAX_ADMIN_BODY: usize = 64 * 1024;

/// `/readyz` fails rather than wait longer than this for the store.
const READY_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Readiness beyond the store: false once shutdown began, so the load
/// balancer stops sending while in-flight requests drain.
#[derive(Debug, Default)]
pub struct Readiness {
    draining: AtomicBool,
}

impl Readiness {
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

pub async fn handle<B>(
    state: &Arc<State>,
    readiness: &Readiness,
    console: &Arc<crate::console::Console>,
    request: Request<B>,
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = request.uri().path();
    if crate::console::owns(path) {
        return crate::console::handle(state, console, request).await;
    }
    if path == "/events" || path.starts_with("/events/") {
        return events(state, request).await;
    }
    if path == "/dlq" || path.starts_with("/dlq/") {
        return dead_letters(state, request).await;
    }
    if path == "/sources" || path.starts_with("/sources/") {
        return sources(state, request).await;
    }
    if path == "/rejections" {
        return rejections(
            state,
            request.method(),
            request.headers(),
            request.uri().query(),
        );
    }
    let method = request.method();
    if method != Method::GET && method != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    match path {
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" => {
            if readiness.is_draining() {
                return text(StatusCode::SERVICE_UNAVAILABLE, "draining\n");
            }
            match tokio::time::timeout(READY_PING_TIMEOUT, state.store.ping()).await {
                Ok(Ok(())) => text(StatusCode::OK, "ready\n"),
                // A wrong master name is a config problem: say which.
                Ok(Err(e @ crate::store::Error::NoSuchMaster(_))) => {
                    text(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n"))
                }
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "readiness: store ping failed");
                    text(StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n")
                }
                Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n"),
            }
        }
        "/metrics" => {
            let mut response = text(StatusCode::OK, &state.metrics.encode());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            response
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// `GET /events` and `GET /events/{source}/{event_id}` (DESIGN §7a),
/// behind the admin token like `/dlq`.
async fn events<B>(state: &Arc<State>, request: Request<B>) -> Response<Body> {
    let runtime = state.runtime();
    if let Some(refused) = refused_without_token(&runtime.config, request.headers()) {
        return refused;
    }
    if request.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    let config = &runtime.config;
    let path = request.uri().path();
    if path == "/events" {
        let query = request.uri().query();
        let param = |name| query_param(query, name).and_then(|v| percent_decode(&v));
        let mut filter = trail::Filter {
            source: param("source"),
            event_type: param("type"),
            ..trail::Filter::default()
        };
        if let Some(word) = param("state") {
            match trail::State::parse(&word) {
                Some(s) => filter.state = Some(s),
                None => {
                    return bad_request(
                        "state is one of in_flight, delivered, released, waiting, dropped, dead_letter",
                    );
                }
            }
        }
        if let Some(limit) = param("limit") {
            match limit.parse::<usize>() {
                Ok(n) if (1..=trail::MAX_LIMIT).contains(&n) => filter.limit = n,
                _ => return bad_request("limit is a number from 1 to 1000"),
            }
        }
        if let Some(before) = param("before") {
            match trail::Cursor::decode(&before) {
                Some(c) => filter.before = Some(c),
                None => return bad_request("before is the next cursor of a previous page"),
            }
        }
        return match events::list(&state.store, config, &filter).await {
            Ok(page) => json(
                StatusCode::OK,
                &serde_json::to_value(&page).unwrap_or_default(),
            ),
            Err(e) => trail_error(&e),
        };
    }
    let rest = &path["/events/".len()..];
    let Some((source, id)) = rest.split_once('/') else {
        return json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "unknown_event"}),
        );
    };
    let (Some(source), Some(id)) = (percent_decode(source), percent_decode(id)) else {
        return bad_request("the source and event id are percent-encoded UTF-8");
    };
    match events::show(&state.store, config, &source, &id).await {
        Ok(Some(shown)) => json(
            StatusCode::OK,
            &serde_json::to_value(&shown).unwrap_or_default(),
        ),
        Ok(None) => json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "unknown_event"}),
        ),
        Err(e) => trail_error(&e),
    }
}

fn trail_error(e: &crate::store::Error) -> Response<Body> {
    tracing::warn!(error = %e, "admin: event trail request failed");
    json(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({"error": "store_unavailable"}),
    )
}

/// `%XX` escapes (and `+` as a space) decoded; `None` for a malformed
/// escape or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The answer for a path behind `[admin] token` that may not be served: 404
/// without a token configured (as if it did not exist), 401 without the
/// right one; `None` when it may.
fn refused_without_token(
    config: &crate::config::Config,
    headers: &HeaderMap,
) -> Option<Response<Body>> {
    match &config.admin.token {
        None => Some(text(StatusCode::NOT_FOUND, "not found\n")),
        Some(token) if !authorized(headers, token) => Some(unauthorized()),
        Some(_) => None,
    }
}

fn unauthorized() -> Response<Body> {
    let mut response = json(
        StatusCode::UNAUTHORIZED,
        &serde_json::json!({"error": "unauthorized"}),
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// `GET /sources` (every source's delivery state) and `POST
/// /sources/{name}/pause` (optional `{"reason": "…"}`) and
/// `/sources/{name}/resume` (DESIGN §6a), behind the admin token.
async fn sources<B>(state: &Arc<State>, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let runtime = state.runtime();
    if let Some(refused) = refused_without_token(&runtime.config, request.headers()) {
        return refused;
    }
    let config = &runtime.config;
    let path = request.uri().path().to_owned();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (request.method().clone(), parts.as_slice()) {
        (Method::GET, ["sources"]) => match pause::list(&state.store, config).await {
            Ok(list) => json(StatusCode::OK, &serde_json::json!({ "sources": list })),
            Err(e) => store_error(&e.into()),
        },
        (Method::POST, ["sources", name, action @ ("pause" | "resume")]) => {
            let name = percent_decode(name).unwrap_or_default();
            let body = match Limited::new(request.into_body(), MAX_ADMIN_BODY)
                .collect()
                .await
            {
                Ok(body) => body.to_bytes(),
                Err(_) => return bad_request("the body could not be read (at most 64 KiB)"),
            };
            #[derive(serde::Deserialize)]
            struct Asked {
                reason: Option<String>,
            }
            let reason = if body.is_empty() {
                None
            } else {
                match serde_json::from_slice::<Asked>(&body) {
                    Ok(asked) => asked.reason,
                    Err(_) => return bad_request(r#"expected no body or {"reason": "…"}"#),
                }
            };
            let done = if *action == "pause" {
                pause::pause(&state.store, config, &name, "admin-api", reason.as_deref())
                    .await
                    .map(|p| serde_json::json!({"source": name, "paused": p}))
            } else {
                pause::resume(&state.store, config, &name, "admin-api")
                    .await
                    .map(|was| serde_json::json!({"source": name, "paused": null, "was_paused": was}))
            };
            match done {
                Ok(v) => json(StatusCode::OK, &v),
                Err(pause::Refused::NoSuchSource(_)) => json(
                    StatusCode::NOT_FOUND,
                    &serde_json::json!({"error": "unknown_source"}),
                ),
                Err(e @ pause::Refused::Forward(_)) => json(
                    StatusCode::CONFLICT,
                    &serde_json::json!({"error": "forward_source", "message": e.to_string()}),
                ),
                Err(pause::Refused::Store(e)) => store_error(&e.into()),
            }
        }
        (_, ["sources", ..]) => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// `GET /rejections?source=&outcome=&limit=` (DESIGN §7d): what this
/// process refused lately, newest first, with the last hour's counts.
fn rejections(
    state: &State,
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Response<Body> {
    let runtime = state.runtime();
    if let Some(refused) = refused_without_token(&runtime.config, headers) {
        return refused;
    }
    if method != Method::GET && method != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    let decoded = |name| query_param(query, name).and_then(|v| percent_decode(&v));
    let limit = match decoded("limit").map(|v| v.parse::<usize>()) {
        None => 0,
        Some(Ok(n)) if n >= 1 => n,
        _ => return bad_request("limit is a whole number from 1; values above 1000 read as 1000"),
    };
    let listed = state.rejections.list(
        decoded("source").as_deref(),
        decoded("outcome").as_deref(),
        limit,
    );
    json(StatusCode::OK, &listed)
}

/// `GET /dlq` and `POST /dlq/replay`.
async fn dead_letters<B>(state: &Arc<State>, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let runtime = state.runtime();
    if let Some(refused) = refused_without_token(&runtime.config, request.headers()) {
        return refused;
    }
    if !state.store.keeps_queue() {
        return json(
            StatusCode::CONFLICT,
            &serde_json::json!({"error": crate::store::Error::NotKept.to_string()}),
        );
    }
    match (request.method().clone(), request.uri().path()) {
        (Method::GET, "/dlq") => {
            let source = query_param(request.uri().query(), "source");
            match dlq::list(
                &state.store,
                &runtime.config.store.encryption,
                source.as_deref(),
            )
            .await
            {
                Ok(entries) => {
                    let list: Vec<dlq::Summary> = entries.iter().map(dlq::Dead::summary).collect();
                    json(StatusCode::OK, &serde_json::json!({ "entries": list }))
                }
                Err(e) => store_error(&e.into()),
            }
        }
        (Method::POST, path @ ("/dlq/replay" | "/dlq/delete")) => {
            let kind = if path == "/dlq/replay" {
                Kind::Replay
            } else {
                Kind::Delete
            };
            let body = match Limited::new(request.into_body(), MAX_ADMIN_BODY)
                .collect()
                .await
            {
                Ok(body) => body.to_bytes(),
                Err(_) => return bad_request("the body could not be read (at most 64 KiB)"),
            };
            let asked = match serde_json::from_slice::<Asked>(&body) {
                Ok(asked) => asked,
                Err(e) => {
                    return bad_request(&format!(
                        r#"expected {{"id": "…"}}, {{"all": true, "source": "…"}} or a match {{"source", "type", "since", "until", "error", "dry_run", "rate"}}: {e}"#
                    ));
                }
            };
            by_match(state, &runtime.config, kind, asked).await
        }
        (Method::GET, "/dlq/jobs") => match jobs::list(&state.store).await {
            Ok(list) => json(StatusCode::OK, &serde_json::json!({ "jobs": list })),
            Err(e) => job_error(&e),
        },
        (Method::POST, path) if path.starts_with("/dlq/jobs/") && path.ends_with("/cancel") => {
            let id = &path["/dlq/jobs/".len()..path.len() - "/cancel".len()];
            match jobs::cancel(&state.store, id, "admin").await {
                Ok(job) => json(StatusCode::OK, &job),
                Err(e) => job_error(&e),
            }
        }
        (_, "/dlq" | "/dlq/replay" | "/dlq/delete" | "/dlq/jobs") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// `POST /dlq/replay` and `POST /dlq/delete`: one entry by id, every entry
/// (`all`, replay only, as before jobs), or a MATCH (DESIGN §6b).
async fn by_match(
    state: &Arc<State>,
    config: &crate::config::Config,
    kind: Kind,
    asked: Asked,
) -> Response<Body> {
    let replayer = Replayer::new(state.steps(config), false);
    let given_match = asked.source.is_some()
        || asked.event_type.is_some()
        || asked.since.is_some()
        || asked.until.is_some()
        || asked.error.is_some()
        || asked.dry_run;
    let results = match (asked.id, asked.all, kind) {
        (Some(_), true, _) => return bad_request(r#"give "id" or "all", not both"#),
        (Some(_), _, _) if given_match => {
            return bad_request(r#"give "id" or a match, not both"#);
        }
        (Some(id), false, Kind::Replay) => replayer.replay_id(&id).await.map(|r| vec![(id, r)]),
        (Some(id), false, Kind::Delete) => {
            return match dlq::delete(&state.store, config, &id, "admin").await {
                Ok(_) => json(
                    StatusCode::OK,
                    &serde_json::json!({"result": "deleted", "id": id}),
                ),
                Err(dlq::Error::NotFound(id)) => not_found(&id),
                Err(e) => store_error(&e),
            };
        }
        (None, true, Kind::Replay) => {
            if asked.dry_run
                || asked.event_type.is_some()
                || asked.since.is_some()
                || asked.until.is_some()
                || asked.error.is_some()
            {
                return bad_request(
                    r#""all" replays every entry (of "source") now; for anything narrower, or a dry run, give a match without "all""#,
                );
            }
            replayer
                .replay_all(asked.source.as_deref())
                .await
                .map(|all| all.into_iter().map(|(d, r)| (d.id, r)).collect())
        }
        (None, true, Kind::Delete) => {
            return bad_request(r#"delete takes "id" or a match ("source", "type", …)"#);
        }
        (None, false, _) => {
            let m = match Match::parse(
                asked.source.as_deref(),
                asked.event_type.as_deref(),
                asked.since.as_deref(),
                asked.until.as_deref(),
                asked.error.as_deref(),
                crate::time::now_ms(),
            ) {
                Ok(m) => m,
                Err(e) => return bad_request(&e.to_string()),
            };
            if let Some(source) = &m.source
                && !config.sources.iter().any(|s| &s.name == source)
            {
                return bad_request(&format!("source: no [[source]] named {source:?}"));
            }
            let rate = match asked.rate.as_ref().map(rate_of).transpose() {
                Ok(rate) => rate,
                Err(e) => return bad_request(&format!("rate: {e}")),
            };
            return match jobs::ask(&replayer, kind, m, asked.dry_run, rate, "admin").await {
                Ok((answer, _)) => json(StatusCode::OK, &answer),
                Err(e) => job_error(&e),
            };
        }
    };
    match results {
        Ok(results) => {
            let failed = results.iter().filter(|(_, r)| !r.is_success()).count();
            let list: Vec<serde_json::Value> = results
                .into_iter()
                .map(|(id, r)| {
                    let mut v = serde_json::to_value(&r).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.insert("id".into(), id.into());
                    }
                    v
                })
                .collect();
            json(
                StatusCode::OK,
                &serde_json::json!({ "results": list, "failed": failed }),
            )
        }
        Err(dlq::Error::NotFound(id)) => not_found(&id),
        Err(e) => store_error(&e),
    }
}

/// A job's `rate`: a number of deliveries per second, or `"50/s"`, `"3000/m"`.
fn rate_of(v: &serde_json::Value) -> Result<f64, String> {
    match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|r| *r > 0.0 && *r <= 100_000.0)
            .ok_or_else(|| format!("{n} is not a rate from 1/m to 100000/s")),
        serde_json::Value::String(s) => crate::config::parse_rate(s),
        other => Err(format!(
            "{other} is not a rate: give a number per second or \"50/s\""
        )),
    }
}

fn not_found(id: &str) -> Response<Body> {
    json(
        StatusCode::NOT_FOUND,
        &serde_json::json!({"error": "not_found", "id": id}),
    )
}

fn job_error(e: &jobs::Error) -> Response<Body> {
    match e {
        jobs::Error::Busy(id) => json(
            StatusCode::CONFLICT,
            &serde_json::json!({"error": "job_running", "job": id, "message": e.to_string()}),
        ),
        jobs::Error::NotFound(id) => json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "unknown_job", "job": id}),
        ),
        jobs::Error::Dlq(e) => store_error(e),
        other => {
            tracing::warn!(error = %other, "admin: dead-letter job request failed");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                &serde_json::json!({"error": "store_unavailable"}),
            )
        }
    }
}

/// The body of `POST /dlq/replay` and `POST /dlq/delete`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Asked {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    all: bool,
    #[serde(default)]
    source: Option<String>,
    #[serde(default, rename = "type")]
    event_type: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    rate: Option<serde_json::Value>,
}

/// `Authorization: Bearer <token>` (the scheme word in any case, RFC 9110
/// §11.1), compared in constant time.
fn authorized(headers: &HeaderMap, token: &Secret) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest)
        })
    else {
        return false;
    };
    let given = Sha256::digest(given.trim().as_bytes());
    let expected = Sha256::digest(token.expose());
    given.ct_eq(&expected).into()
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

fn store_error(e: &dlq::Error) -> Response<Body> {
    tracing::warn!(error = %e, "admin: dead-letter request failed");
    json(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({"error": "store_unavailable"}),
    )
}

fn bad_request(message: &str) -> Response<Body> {
    json(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({"error": message}),
    )
}
