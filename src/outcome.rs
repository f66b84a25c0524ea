//! Every way a request can end, and the one place each becomes a response.
//!
//! One variant per row of the status table (DESIGN §3). A variant gives the
//! HTTP status, the snake_case word used both as the JSON `error` and as the
//! `outcome` label of `hookgate_requests_total`, and `Retry-After` where the
//! sender should come back later. Internals never reach a body: they are logged
//! where they happen.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::Full;

use crate::scheme;
use crate::store;

/// The response body type of everything hookgate answers.
pub type Body = Full<Bytes>;

/// A JSON answer of the admin listener and the console (not a §3 row).
pub fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A plain-text answer of the admin listener and the console.
pub fn text_response(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Seconds a sender is asked to wait when an event is in flight or the store is down.
pub const RETRY_AFTER_SECS: u32 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Path matches no source and `unmatched = "reject"`.
    UnknownSource,
    /// Path matches no source and `unmatched = "forward"`: proxied unverified.
    Unmatched,
    MethodNotAllowed,
    /// The client address (after `trusted_proxies`) is outside the source's
    /// `allow_ips`: refused before the body is read, even in observe mode.
    ForbiddenIp,
    BodyTooLarge,
    /// The request body could not be read (the sender hung up or sent garbage framing).
    BadRequest,
    /// The body did not arrive within `request_read_timeout`.
    RequestTimeout,
    MissingSignature,
    MalformedSignature,
    InvalidSignature,
    TimestampOutsideWindow,
    MalformedBody,
    /// Event type filtered out by `event_types`.
    Ignored,
    /// A `[[source.filter]]` rule with `action = "ignore"` met the event
    /// (DESIGN §3a); `rule` is its name.
    Filtered {
        rule: String,
    },
    /// A provider's endpoint check, answered by hookgate (not forwarded).
    Handshake,
    Duplicate {
        event_id: String,
    },
    InFlight,
    StaleVersion,
    StoreUnavailable,
    /// The provider's signing key or certificate could not be fetched (AWS
    /// SNS, PayPal, Google): retryable, like `StoreUnavailable`. Not a DESIGN
    /// §3 row; documented in the README's status table.
    KeyUnavailable,
    /// The app answered; its response goes back as it is.
    Forwarded,
    /// The store failed and the source has `on_store_error = "forward_unchecked"`:
    /// forwarded without the duplicate check; the app's response goes back.
    ForwardedUnchecked,
    /// The public listener is at `max_connections`: the connection is answered
    /// and closed before any request is read.
    Overloaded,
    UpstreamUnavailable,
    UpstreamTimeout,
    /// The source's breaker is open (DESIGN §6a): the app was not asked;
    /// retry after this many seconds.
    AppUnavailable {
        retry_after: u32,
    },
    Queued {
        event_id: String,
    },
}

impl Outcome {
    /// The word used as the JSON `error` and the metrics `outcome` label.
    pub fn code(&self) -> &'static str {
        match self {
            Outcome::UnknownSource => "unknown_source",
            Outcome::Unmatched => "unmatched",
            Outcome::MethodNotAllowed => "method_not_allowed",
            Outcome::ForbiddenIp => "forbidden_ip",
            Outcome::BodyTooLarge => "body_too_large",
            Outcome::BadRequest => "bad_request",
            Outcome::RequestTimeout => "request_timeout",
            Outcome::MissingSignature => "missing_signature",
            Outcome::MalformedSignature => "malformed_signature",
            Outcome::InvalidSignature => "invalid_signature",
            Outcome::TimestampOutsideWindow => "timestamp_outside_window",
            Outcome::MalformedBody => "malformed_body",
            Outcome::Ignored => "ignored",
            Outcome::Filtered { .. } => "filtered",
            Outcome::Handshake => "handshake",
            Outcome::Duplicate { .. } => "duplicate",
            Outcome::InFlight => "in_flight",
            Outcome::StaleVersion => "stale_version",
            Outcome::StoreUnavailable => "store_unavailable",
            Outcome::KeyUnavailable => "key_unavailable",
            Outcome::Forwarded => "forwarded",
            Outcome::ForwardedUnchecked => "forwarded_unchecked",
            Outcome::Overloaded => "overloaded",
            Outcome::UpstreamUnavailable => "upstream_unavailable",
            Outcome::UpstreamTimeout => "upstream_timeout",
            Outcome::AppUnavailable { .. } => "app_unavailable",
            Outcome::Queued { .. } => "queued",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Outcome::UnknownSource => StatusCode::NOT_FOUND,
            Outcome::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Outcome::ForbiddenIp => StatusCode::FORBIDDEN,
            Outcome::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Outcome::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Outcome::BadRequest
            | Outcome::MissingSignature
            | Outcome::MalformedSignature
            | Outcome::InvalidSignature
            | Outcome::TimestampOutsideWindow
            | Outcome::MalformedBody => StatusCode::BAD_REQUEST,
            Outcome::Ignored
            | Outcome::Filtered { .. }
            | Outcome::Handshake
            | Outcome::Duplicate { .. }
            | Outcome::StaleVersion
            | Outcome::Queued { .. }
            | Outcome::Forwarded
            | Outcome::ForwardedUnchecked
            | Outcome::Unmatched => StatusCode::OK,
            Outcome::InFlight => StatusCode::TOO_MANY_REQUESTS,
            Outcome::StoreUnavailable
            | Outcome::KeyUnavailable
            | Outcome::Overloaded
            | Outcome::AppUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Outcome::UpstreamUnavailable => StatusCode::BAD_GATEWAY,
            Outcome::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The `[[source.filter]]` rule that ignored the event, for its log line.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Outcome::Filtered { rule } => Some(rule),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<u32> {
        match self {
            Outcome::InFlight
            | Outcome::StoreUnavailable
            | Outcome::KeyUnavailable
            | Outcome::Overloaded => Some(RETRY_AFTER_SECS),
            Outcome::AppUnavailable { retry_after } => Some((*retry_after).max(1)),
            _ => None,
        }
    }

    /// The JSON body hookgate answers with itself.
    fn body(&self) -> String {
        match self {
            Outcome::Ignored => r#"{"ignored":true}"#.to_owned(),
            Outcome::Filtered { .. } => r#"{"ignored":"filtered"}"#.to_owned(),
            Outcome::Handshake => r#"{"handshake":true}"#.to_owned(),
            Outcome::StaleVersion => r#"{"ignored":"stale_version"}"#.to_owned(),
            Outcome::Duplicate { event_id } => {
                with_event_id(r#"{"duplicate":true,"event_id":""#, event_id)
            }
            Outcome::Queued { event_id } => {
                with_event_id(r#"{"queued":true,"event_id":""#, event_id)
            }
            other => format!(r#"{{"error":"{}"}}"#, other.code()),
        }
    }

    /// The response hookgate sends for this outcome when it answers itself
    /// (everything but `Forwarded` and `Unmatched`, which carry the app's answer).
    pub fn response(&self) -> Response<Body> {
        let mut response = Response::new(Full::new(Bytes::from(self.body())));
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }

    /// The same response as raw HTTP/1.1 bytes with `Connection: close`, for
    /// the accept loop, which answers before any HTTP connection exists.
    pub fn http1_close(&self) -> Vec<u8> {
        let status = self.status();
        let body = self.body();
        let mut out = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or(""),
            body.len()
        );
        if let Some(secs) = self.retry_after() {
            out.push_str(&format!("retry-after: {secs}\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(&body);
        out.into_bytes()
    }
}

/// `head` (a JSON object's start, up to an opening quote), then `event_id`
/// escaped, then `"}`. Written directly: the duplicate answer is the hot path
/// of a duplicate storm, and `format!` through a `serde_json::Value` cost
/// more than the rest of building the response.
fn with_event_id(head: &str, event_id: &str) -> String {
    let mut out = String::with_capacity(head.len() + event_id.len() + 8);
    out.push_str(head);
    // Writing to a String cannot fail.
    let _ = crate::log::write_escaped(&mut out, event_id);
    out.push_str("\"}");
    out
}

impl From<&scheme::Error> for Outcome {
    fn from(e: &scheme::Error) -> Self {
        match e {
            scheme::Error::MissingSignature(_) => Outcome::MissingSignature,
            scheme::Error::MalformedSignature(_) => Outcome::MalformedSignature,
            scheme::Error::InvalidSignature => Outcome::InvalidSignature,
            scheme::Error::TimestampOutsideWindow { .. } => Outcome::TimestampOutsideWindow,
            scheme::Error::MalformedBody(_) => Outcome::MalformedBody,
            scheme::Error::KeyUnavailable => Outcome::KeyUnavailable,
        }
    }
}

impl From<&store::Error> for Outcome {
    fn from(_: &store::Error) -> Self {
        Outcome::StoreUnavailable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body_of(o: &Outcome) -> String {
        let bytes = o
            .response()
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn status_table_rows() {
        let rows: &[(Outcome, u16, &str)] = &[
            (Outcome::UnknownSource, 404, r#"{"error":"unknown_source"}"#),
            (
                Outcome::MethodNotAllowed,
                405,
                r#"{"error":"method_not_allowed"}"#,
            ),
            (Outcome::ForbiddenIp, 403, r#"{"error":"forbidden_ip"}"#),
            (Outcome::BodyTooLarge, 413, r#"{"error":"body_too_large"}"#),
            (
                Outcome::RequestTimeout,
                408,
                r#"{"error":"request_timeout"}"#,
            ),
            (Outcome::Overloaded, 503, r#"{"error":"overloaded"}"#),
            (
                Outcome::MissingSignature,
                400,
                r#"{"error":"missing_signature"}"#,
            ),
            (
                Outcome::MalformedSignature,
                400,
                r#"{"error":"malformed_signature"}"#,
            ),
            (
                Outcome::InvalidSignature,
                400,
                r#"{"error":"invalid_signature"}"#,
            ),
            (
                Outcome::TimestampOutsideWindow,
                400,
                r#"{"error":"timestamp_outside_window"}"#,
            ),
            (Outcome::MalformedBody, 400, r#"{"error":"malformed_body"}"#),
            (Outcome::Ignored, 200, r#"{"ignored":true}"#),
            (
                Outcome::Filtered {
                    rule: "test-mode".into(),
                },
                200,
                r#"{"ignored":"filtered"}"#,
            ),
            (
                Outcome::Duplicate {
                    event_id: "evt_1".into(),
                },
                200,
                r#"{"duplicate":true,"event_id":"evt_1"}"#,
            ),
            (Outcome::InFlight, 429, r#"{"error":"in_flight"}"#),
            (Outcome::StaleVersion, 200, r#"{"ignored":"stale_version"}"#),
            (
                Outcome::StoreUnavailable,
                503,
                r#"{"error":"store_unavailable"}"#,
            ),
            (
                Outcome::KeyUnavailable,
                503,
                r#"{"error":"key_unavailable"}"#,
            ),
            (
                Outcome::UpstreamUnavailable,
                502,
                r#"{"error":"upstream_unavailable"}"#,
            ),
            (
                Outcome::UpstreamTimeout,
                504,
                r#"{"error":"upstream_timeout"}"#,
            ),
            (
                Outcome::Queued {
                    event_id: "e\"2".into(),
                },
                200,
                r#"{"queued":true,"event_id":"e\"2"}"#,
            ),
        ];
        for (outcome, status, body) in rows {
            let response = outcome.response();
            assert_eq!(response.status().as_u16(), *status, "{outcome:?}");
            assert_eq!(
                response.headers().get("content-type").map(|v| v.as_bytes()),
                Some(&b"application/json"[..])
            );
            assert_eq!(body_of(outcome).await, *body, "{outcome:?}");
        }
    }

    #[test]
    fn raw_close_response_is_complete_http1() {
        let raw = String::from_utf8(Outcome::Overloaded.http1_close()).unwrap_or_default();
        assert!(
            raw.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{raw}"
        );
        assert!(raw.contains("\r\nconnection: close\r\n"), "{raw}");
        assert!(raw.contains("\r\nretry-after: 5\r\n"), "{raw}");
        assert!(raw.contains("\r\ncontent-length: 22\r\n"), "{raw}");
        assert!(raw.ends_with("\r\n\r\n{\"error\":\"overloaded\"}"), "{raw}");
    }

    #[test]
    fn retry_after_only_where_the_sender_should_wait() {
        assert_eq!(
            Outcome::InFlight
                .response()
                .headers()
                .get("retry-after")
                .map(|v| v.as_bytes()),
            Some(&b"5"[..])
        );
        assert!(
            Outcome::StoreUnavailable
                .response()
                .headers()
                .contains_key("retry-after")
        );
        assert_eq!(
            Outcome::KeyUnavailable
                .response()
                .headers()
                .get("retry-after")
                .map(|v| v.as_bytes()),
            Some(&b"5"[..])
        );
        assert!(
            !Outcome::InvalidSignature
                .response()
                .headers()
                .contains_key("retry-after")
        );
    }

    #[test]
    fn event_ids_in_answers_are_escaped_as_serde_json_escapes_them() {
        for id in [
            "evt_1",
            "a\"b\\c",
            "line\nbreak\ttab",
            "\u{1}\u{1f}\u{7f}",
            "é✓😀",
            "",
        ] {
            let expected = serde_json::json!({"duplicate": true, "event_id": id}).to_string();
            let answered = Outcome::Duplicate {
                event_id: id.to_owned(),
            }
            .body();
            assert_eq!(answered, expected, "id {id:?}");
            let parsed: serde_json::Value =
                serde_json::from_str(&answered).expect("the answer is JSON");
            assert_eq!(parsed["event_id"], id);
        }
    }
}
