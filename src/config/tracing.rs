//! `[tracing]`: where traces go (DESIGN §7c).
//!
//! - `otlp_endpoint` is required in the table: an `http://` or `https://`
//!   URL with a host and no user info, query or fragment. `/v1/traces` is
//!   appended to its path (one trailing `/` removed first), as OTLP/HTTP
//!   clients do with a base endpoint.
//! - `sample_ratio` is a number from 0 to 1 (default 1).
//! - `service_name` is 1 to 255 printable ASCII characters (default
//!   `hookgate`).
//! - `trace_url`, when given, is an absolute http(s) URL holding
//!   `{trace_id}` at least once.

use http::Uri;
use toml::Spanned;

use super::check::Check;
use super::raw::RawTracing;

/// `service.name` when `[tracing]` names none.
pub const DEFAULT_SERVICE_NAME: &str = "hookgate";

/// The validated `[tracing]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracing {
    /// Where spans are posted: the configured endpoint with `/v1/traces`.
    pub traces_url: Uri,
    /// The share of requests whose traces are kept, 0.0 to 1.0.
    pub sample_ratio: f64,
    pub service_name: String,
    /// A link to one trace, `{trace_id}` standing for its id.
    pub trace_url: Option<String>,
}

impl Tracing {
    /// `trace_url` for one trace id, when the config has one.
    pub fn link(&self, trace_id: &str) -> Option<String> {
        self.trace_url
            .as_ref()
            .map(|template| template.replace("{trace_id}", trace_id))
    }
}

/// `None` inside `Some`: no `[tracing]` table. The outer `None`: a problem
/// was recorded.
pub(super) fn build_tracing(
    c: &mut Check<'_>,
    raw: Option<&Spanned<RawTracing>>,
) -> Option<Option<Tracing>> {
    let Some(table) = raw else {
        return Some(None);
    };
    let r = table.get_ref();
    let endpoint = c
        .required(
            &r.otlp_endpoint,
            Some(table.span()),
            "tracing.otlp_endpoint",
        )
        .and_then(|v| traces_url(c, v));
    let sample_ratio = match &r.sample_ratio {
        None => Some(1.0),
        Some(v) => {
            let ratio = v.get_ref().as_f64();
            if (0.0..=1.0).contains(&ratio) {
                Some(ratio)
            } else {
                c.at(
                    v,
                    "tracing.sample_ratio",
                    "must be a number from 0.0 (no trace kept) to 1.0 (every trace)",
                );
                None
            }
        }
    };
    let service_name = match &r.service_name {
        None => Some(DEFAULT_SERVICE_NAME.to_owned()),
        Some(v) => {
            let name = v.get_ref();
            if !name.is_empty() && name.len() <= 255 && name.bytes().all(|b| b.is_ascii_graphic()) {
                Some(name.clone())
            } else {
                c.at(
                    v,
                    "tracing.service_name",
                    "must be 1 to 255 printable ASCII characters without spaces",
                );
                None
            }
        }
    };
    let trace_url = match &r.trace_url {
        None => Some(None),
        Some(v) => {
            let text = v.get_ref();
            let absolute = text
                .replace("{trace_id}", "0")
                .parse::<Uri>()
                .ok()
                .is_some_and(|u| {
                    matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some()
                });
            if absolute && text.contains("{trace_id}") {
                Some(Some(text.clone()))
            } else {
                c.at(
                    v,
                    "tracing.trace_url",
                    "must be an absolute http(s) URL holding {trace_id}, e.g. \
                     \"https://grafana.example/explore?traceId={trace_id}\"",
                );
                None
            }
        }
    };
    Some(Some(Tracing {
        traces_url: endpoint?,
        sample_ratio: sample_ratio?,
        service_name: service_name?,
        trace_url: trace_url?,
    }))
}

/// The endpoint with `/v1/traces` appended, or a problem recorded.
fn traces_url(c: &mut Check<'_>, v: &Spanned<String>) -> Option<Uri> {
    let text = v.get_ref();
    let field = "tracing.otlp_endpoint";
    let refuse = |c: &mut Check<'_>, why: &str| {
        c.at(
            v,
            field,
            format!(
                "{why}; give the collector's OTLP/HTTP base URL, e.g. \"http://otel-collector:4318\""
            ),
        );
        None
    };
    let Ok(uri) = text.parse::<Uri>() else {
        return refuse(c, "not a URL");
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return refuse(c, "not an absolute http:// or https:// URL");
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        // Never quoted: the user info may be a credential.
        c.at(
            v,
            field,
            "may not hold user info; pass the collector's credentials in \
             OTEL_EXPORTER_OTLP_HEADERS",
        );
        return None;
    }
    if uri.query().is_some() || text.contains('#') {
        return refuse(c, "may not have a query or fragment");
    }
    let base = uri.path().strip_suffix('/').unwrap_or(uri.path());
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    match format!("{scheme}://{authority}{base}/v1/traces").parse::<Uri>() {
        Ok(full) => Some(full),
        Err(_) => refuse(c, "not a URL"),
    }
}
