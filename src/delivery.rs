//! The life of a claimed event, written once.
//!
//! Every path that hands a verified event to the app (forward mode in
//! `crate::pipeline`, the queue workers in [`crate::queue`], and replays in
//! [`crate::dlq`]) goes through the same steps, in this order:
//!
//! 1. **claim** ([`Steps::claim`]): take the event's nonce with a lease
//!    (forward mode and forward-mode replays; a queued event's nonce was
//!    committed when it was enqueued);
//! 2. **gate** ([`Steps::gate`]): when the source has `[source.ordering]`,
//!    take the resource's lease, then compare versions: an older version is
//!    stale, the same one a duplicate, and while another version of the
//!    resource is on its way this one waits;
//! 3. **attempt** ([`Steps::attempt`]): send the request to the app once,
//!    stamped, and classify the answer ([`Attempt`]);
//! 4. **settle**: on a 2xx, advance the version and let the resource go
//!    ([`Steps::delivered`]), then commit the nonce ([`Steps::commit`]);
//!    otherwise let both leases go ([`Steps::release`]), so the next try is
//!    fresh.
//!
//! What happens to an event the app fails is the caller's: forward mode
//! answers the sender (who retries) and counts the failure toward a dead
//! letter, a queue worker parks the event for its next retry or buries it,
//! a replay keeps the dead letter. Every store error met on the way is
//! counted in `hookgate_store_errors_total` and logged with the event id, here.

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};

use crate::config::Config;
use crate::forward::{self, Forwarder, Mark, Stamp};
use crate::metrics::Metrics;
use crate::ordering::{Check, Gate};
use crate::outcome::Body;
use crate::store::{self, Claim, Store, keys};
use crate::time::unix_now;
use crate::traces::Span;
use crate::trail::{self, Fact};

mod admit;
mod stored;
pub use admit::Held;

/// The longest `Retry-After` honoured; a larger one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// How long [`Steps::commit_patiently`] tries.
pub const COMMIT_PATIENCE: Duration = Duration::from_secs(5);

/// What the steps need: the config in force and the process's store, client
/// and metrics.
#[derive(Clone, Copy)]
pub struct Steps<'a> {
    pub config: &'a Config,
    pub store: &'a Store,
    pub forwarder: &'a Forwarder,
    pub metrics: &'a Metrics,
    /// Every source's circuit breaker, as this process knows it.
    pub breakers: &'a crate::breaker::Breakers,
    /// The tracer, when traces are exported.
    pub traces: Option<&'a std::sync::Arc<crate::traces::Traces>>,
}

/// An event on its way to the app, as every step sees it.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub source: &'a str,
    /// As stored and stamped (`key_safe_id`).
    pub event_id: &'a str,
    /// What its nonce is keyed by: the event id, or the body's digest where
    /// the id is not signed.
    pub nonce_id: &'a str,
    pub event_type: Option<&'a str>,
    /// Whether the signature covers `event_type`, so it may be stamped.
    pub type_signed: bool,
    pub gate: Option<&'a Gate>,
}

impl Event<'_> {
    /// What hookgate vouches for on this event's requests.
    pub fn stamp(&self) -> Stamp<'_> {
        Stamp {
            event_id: self.event_id,
            source: self.source,
            event_type: self.event_type.filter(|_| self.type_signed),
        }
    }
}

/// A lease held on a store key: the key and the token that took it.
#[derive(Debug)]
pub struct Lease {
    key: String,
    token: String,
}

impl Lease {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Where a claim left the event.
#[derive(Debug)]
pub enum Claimed {
    /// This caller holds the nonce.
    Fresh(Lease),
    /// The app already accepted the event.
    Done,
    /// Another request holds it right now.
    InFlight,
}

/// What the version gate said.
#[derive(Debug)]
pub enum Gated {
    /// A newer version: go on. The resource's lease, when one was asked
    /// for, is held until [`Steps::delivered`] or [`Steps::release`].
    Newer(Option<Lease>),
    /// Another version of the resource is on its way now.
    Busy,
    /// The app already has this version.
    Equal,
    /// The app already has a newer version.
    Stale,
}

/// How one attempt to hand an event to the app went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The app answered 2xx.
    Delivered,
    /// Never worth retrying: a 4xx other than 429 (or a request that can no
    /// longer be rebuilt).
    Refused(String),
    /// Worth retrying: 5xx, 429, a timeout or an unreachable app.
    Failed {
        error: String,
        retry_after: Option<Duration>,
    },
}

/// An attempt's classification, and the app's answer (or why there is none).
pub struct Attempted {
    pub attempt: Attempt,
    pub answer: Result<Response<Body>, forward::Error>,
    /// How long the app took.
    pub elapsed: Duration,
}

impl Attempted {
    /// The app's status, when it answered.
    pub fn status(&self) -> Option<u16> {
        self.answer.as_ref().ok().map(|r| r.status().as_u16())
    }
}

/// An attempt as the trail records it, made now by this replica.
pub fn trail_attempt(
    mode: trail::Mode,
    outcome: &'static str,
    status: Option<u16>,
    elapsed: Duration,
    trace_id: Option<String>,
) -> trail::Attempt {
    trail::Attempt {
        at: crate::time::now_ms(),
        replica: trail::replica(),
        mode,
        outcome: outcome.into(),
        status,
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        waited: None,
        trace_id,
    }
}

impl<'a> Steps<'a> {
    /// The `key_prefix` the store's keys carry.
    pub(crate) fn prefix(&self) -> &'a str {
        self.store.prefix()
    }

    /// How long a lease taken for one attempt lives.
    pub fn lease(&self) -> Duration {
        keys::lease(self.config.server.upstream_timeout)
    }

    /// Counts and logs a store error met on `event`'s way.
    fn store_failed(&self, event: &Event<'_>, what: &str, e: &store::Error) {
        self.metrics.store_errors.inc();
        tracing::warn!(source = %event.source, event_id = %event.event_id, error = %e, "{what}");
    }

    /// Step 1: takes the event's nonce.
    pub async fn claim(&self, event: &Event<'_>) -> Result<Claimed, store::Error> {
        let key = keys::nonce_key(self.prefix(), event.source, event.nonce_id);
        let token = store::lease_token();
        match self.store.claim(&key, &token, self.lease()).await {
            Ok(Claim::Fresh) => Ok(Claimed::Fresh(Lease { key, token })),
            Ok(Claim::Done) => Ok(Claimed::Done),
            Ok(Claim::InFlight) => Ok(Claimed::InFlight),
            Err(e) => {
                self.store_failed(event, "nonce claim failed", &e);
                Err(e)
            }
        }
    }

    /// Step 2: the version gate. With `hold`, the resource's lease is taken
    /// first (under `token`) and kept on [`Gated::Newer`]; it is let go here
    /// on every other answer.
    pub async fn gate(
        &self,
        event: &Event<'_>,
        gate: &Gate,
        token: &str,
        hold: bool,
    ) -> Result<Gated, store::Error> {
        let lock = if hold {
            let key = gate.lock_key(self.prefix(), event.source);
            match self.store.claim(&key, token, self.lease()).await {
                Ok(Claim::Fresh) => Some(Lease {
                    key,
                    token: token.to_owned(),
                }),
                Ok(_) => return Ok(Gated::Busy),
                Err(e) => {
                    self.store_failed(event, "version lock failed", &e);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let check = match gate.check(self.store, self.prefix(), event.source).await {
            Ok(check) => check,
            Err(e) => {
                self.store_failed(event, "version check failed", &e);
                self.release(event, lock).await;
                return Err(e);
            }
        };
        match check {
            Check::Newer => Ok(Gated::Newer(lock)),
            Check::Equal => {
                self.release(event, lock).await;
                Ok(Gated::Equal)
            }
            Check::Stale => {
                self.release(event, lock).await;
                Ok(Gated::Stale)
            }
        }
    }

    /// Step 3: one attempt at the app with `event`'s stamp, re-signed first
    /// when the source has `[source.resign]`. Counts the upstream metrics.
    pub async fn attempt(
        &self,
        event: &Event<'_>,
        parts: &http::request::Parts,
        body: Bytes,
        peer: Option<IpAddr>,
        span: &mut Span,
    ) -> Attempted {
        let resigned = self.resigned(event, parts, &body);
        let parts = resigned.as_ref().unwrap_or(parts);
        if span.recording() {
            let upstream = &self.config.server.upstream;
            span.word(
                "http.request.method",
                crate::traces::method_word(&parts.method),
            );
            span.str("server.address", upstream.host().unwrap_or_default());
            if let Some(port) = upstream.port_u16() {
                span.int("server.port", i64::from(port));
            }
            span.str("url.path", parts.uri.path());
        }
        let started = Instant::now();
        let answer = self
            .forwarder
            .send(
                &self.config.server,
                parts,
                body,
                peer,
                Mark::Verified(event.stamp()),
                span.parent(),
            )
            .await;
        let took = started.elapsed();
        let elapsed = took.as_secs_f64();
        let attempt = match &answer {
            Ok(response) => {
                let status = response.status();
                let class = crate::metrics::status_class(status);
                self.metrics.upstream_response(event.source, class, elapsed);
                span.int("http.response.status_code", i64::from(status.as_u16()));
                if status.is_client_error() || status.is_server_error() {
                    span.fail(status.as_str());
                }
                classify(status, response.headers())
            }
            Err(e) => {
                self.metrics
                    .upstream_response(event.source, "error", elapsed);
                span.fail(crate::outcome::Outcome::from(e).code());
                Attempt::Failed {
                    error: e.to_string(),
                    retry_after: None,
                }
            }
        };
        Attempted {
            attempt,
            answer,
            elapsed: took,
        }
    }

    /// `facts` as a note for `event`'s trail to ride on one of its writes;
    /// `None` when the trail is off or there is nothing to note.
    pub fn note_of(&self, event: &Event<'_>, facts: Vec<Fact>) -> Option<store::Note> {
        let max = self.config.admin.trail_max_events;
        (max > 0 && !facts.is_empty())
            .then(|| self.store.note(event.source, event.event_id, facts, max))
    }

    /// Appends facts to `event`'s trail on their own, without waiting (for
    /// facts that ride on no write of the event).
    pub fn note(&self, event: &Event<'_>, facts: Vec<Fact>) {
        self.store.trail_note(
            event.source,
            event.event_id,
            facts,
            self.config.admin.trail_max_events,
        );
    }

    /// Counts a `200 duplicate` answered for `event`, never waiting for a
    /// write ([`Store::trail_duplicate`]).
    pub fn duplicate(&self, event: &Event<'_>) {
        self.store.trail_duplicate(
            event.source,
            event.event_id,
            self.config.admin.trail_max_events,
        );
    }

    /// [`Steps::note`], waiting for the write.
    pub async fn note_now(&self, event: &Event<'_>, facts: Vec<Fact>) {
        if let Err(e) = self
            .store
            .trail_write(
                event.source,
                event.event_id,
                facts,
                self.config.admin.trail_max_events,
            )
            .await
        {
            tracing::debug!(source = %event.source, event_id = %event.event_id, error = %e, "trail write failed");
        }
    }

    /// The request with the scheme's signature headers made afresh at this
    /// moment with the source's resign key; `None` when the source has none.
    fn resigned(
        &self,
        event: &Event<'_>,
        parts: &http::request::Parts,
        body: &[u8],
    ) -> Option<http::request::Parts> {
        let source = self
            .config
            .sources
            .iter()
            .find(|s| s.name == event.source)?;
        let key = source.resign.as_ref()?;
        let mut headers = parts.headers.clone();
        if let Err(why) = source
            .scheme
            .resign(key, &mut headers, body, event.event_id, unix_now())
        {
            // The config refuses [source.resign] where this can happen.
            tracing::warn!(source = %event.source, event_id = %event.event_id, reason = why, "delivery not re-signed");
            return None;
        }
        let mut request = http::Request::new(());
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.version_mut() = parts.version;
        *request.headers_mut() = headers;
        Some(request.into_parts().0)
    }

    /// Step 4 after a 2xx: the stored version moves to this event's, then
    /// the resource's lease goes. A failed advance only lets an older
    /// version through later; the app has this one either way.
    pub async fn delivered(&self, event: &Event<'_>, lock: Option<Lease>) {
        if let Some(gate) = event.gate
            && let Err(e) = gate.advance(self.store, self.prefix(), event.source).await
        {
            self.store_failed(event, "version advance failed", &e);
        }
        self.release(event, lock).await;
    }

    /// Step 4 after a 2xx (or a gate answer that settles the event): its
    /// nonce becomes `done` for `nonce_ttl`, whoever holds it by then;
    /// `facts` ride on that write.
    pub async fn commit(
        &self,
        event: &Event<'_>,
        nonce: &Lease,
        facts: Vec<Fact>,
    ) -> Result<(), store::Error> {
        let note = self.note_of(event, facts);
        let result = self
            .store
            .commit(&nonce.key, self.config.store.nonce_ttl, note)
            .await;
        if let Err(e) = &result {
            self.store_failed(event, "nonce commit failed", e);
        }
        result
    }

    /// [`Steps::commit`] for a delivery no sender waits on (a replay): tried
    /// again for up to [`COMMIT_PATIENCE`] while the store fails, so that a
    /// sender's later copy of the event is a duplicate. Given up, it is
    /// logged: such a copy may then reach the app again.
    pub async fn commit_patiently(&self, event: &Event<'_>, nonce: &Lease) {
        let deadline = tokio::time::Instant::now() + COMMIT_PATIENCE;
        while self.commit(event, nonce, Vec::new()).await.is_err() {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    source = event.source,
                    event_id = event.event_id,
                    "nonce commit after a replay given up: a sender's copy may be forwarded again"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Lets a lease go (a nonce, or a resource's), if it still holds its
    /// token. A failed release only delays the next try until the lease
    /// expires.
    pub async fn release(&self, event: &Event<'_>, lease: Option<Lease>) {
        self.release_noting(event, lease, Vec::new()).await;
    }

    /// [`Steps::release`] with `facts` riding on the release (written on
    /// their own when there is no lease to release).
    pub async fn release_noting(&self, event: &Event<'_>, lease: Option<Lease>, facts: Vec<Fact>) {
        let Some(lease) = lease else {
            self.note(event, facts);
            return;
        };
        let note = self.note_of(event, facts);
        if let Err(e) = self.store.release(&lease.key, &lease.token, note).await {
            self.store_failed(event, "lease release failed; it expires on its own", &e);
        }
    }
}

/// What an answer of `status` means for the event.
pub fn classify(status: StatusCode, headers: &HeaderMap) -> Attempt {
    if status.is_success() {
        Attempt::Delivered
    } else if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        Attempt::Failed {
            error: format!("app answered {status}"),
            retry_after: retry_after(headers, SystemTime::now()),
        }
    } else {
        // 4xx, and the odd 1xx/3xx an app should not send: retrying the
        // same bytes would get the same answer.
        Attempt::Refused(format!("app answered {status}"))
    }
}

/// `Retry-After` as a delay: delta-seconds or an IMF-fixdate, at most
/// [`MAX_RETRY_AFTER`].
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let delay = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = crate::time::parse_http_date(value.as_bytes())?;
        let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
        Duration::from_secs(u64::try_from(at - now).unwrap_or(0))
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn statuses_are_classified() {
        let h = HeaderMap::new();
        assert_eq!(classify(StatusCode::OK, &h), Attempt::Delivered);
        assert_eq!(classify(StatusCode::NO_CONTENT, &h), Attempt::Delivered);
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, &h),
            Attempt::Refused(_)
        ));
        assert!(matches!(
            classify(StatusCode::GONE, &h),
            Attempt::Refused(_)
        ));
        assert!(matches!(
            classify(StatusCode::TOO_MANY_REQUESTS, &h),
            Attempt::Failed { .. }
        ));
        assert!(matches!(
            classify(StatusCode::BAD_GATEWAY, &h),
            Attempt::Failed { .. }
        ));
    }

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("120"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(120)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:50:37 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(60)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:00:00 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("99999999"));
        assert_eq!(retry_after(&h, now), Some(MAX_RETRY_AFTER));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
    }
}
