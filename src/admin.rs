//! The admin listener: `/healthz`, `/readyz`, `/metrics`, and behind the
//! token `/dlq` and `/events`; one match on the path.
//!
//! With `[admin] token` set, also the dead letters: `GET /dlq[?source=NAME]`
//! (a JSON list) and `POST /dlq/replay` with `{"id": "…"}` or
//! `{"all": true, "source": "…"}` (source optional), both behind
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

use crate::dlq::{self, Replayer};
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
    if path == "/dlq" || path == "/dlq/replay" {
        return dead_letters(state, request).await;
    }
    if path == "/sources" || path.starts_with("/sources/") {
        return sources(state, request).await;
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
    let prefix = &runtime.config.store.key_prefix;
    match (request.method().clone(), request.uri().path()) {
        (Method::GET, "/dlq") => {
            let source = query_param(request.uri().query(), "source");
            match dlq::list(
                &state.store,
                prefix,
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
        (Method::POST, "/dlq/replay") => {
            let body = match Limited::new(request.into_body(), MAX_ADMIN_BODY)
                .collect()
                .await
            {
                Ok(body) => body.to_bytes(),
                Err(_) => return bad_request("the body could not be read (at most 64 KiB)"),
            };
            let Ok(asked) = serde_json::from_slice::<ReplayRequest>(&body) else {
                return bad_request(r#"expected {"id": "…"} or {"all": true, "source": "…"}"#);
            };
            let replayer = Replayer::new(state.steps(&runtime.config), false);
            let results = match (asked.id, asked.all) {
                (Some(id), false) => replayer.replay_id(&id).await.map(|r| vec![(id, r)]),
                (None, true) => replayer
                    .replay_all(asked.source.as_deref())
                    .await
                    .map(|all| all.into_iter().map(|(d, r)| (d.id, r)).collect()),
                _ => return bad_request(r#"give either "id" or "all": true"#),
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
                Err(dlq::Error::NotFound(id)) => json(
                    StatusCode::NOT_FOUND,
                    &serde_json::json!({"error": "not_found", "id": id}),
                ),
                Err(e) => store_error(&e),
            }
        }
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayRequest {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    all: bool,
    #[serde(default)]
    source: Option<String>,
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
