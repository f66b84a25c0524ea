//! `hookgate rejections`: what the running server refused lately and why
//! (DESIGN §7d), read from its admin listener with the admin token. The
//! entries live in the server's memory, never in the store, so this asks
//! the server; with several replicas it asks the one the admin address
//! reaches (each keeps its own).

use std::path::Path;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::Full;

use crate::console::urls::enc as percent_encode;

/// How long the server may take to answer.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The most of an answer read: a full list of every source's entries is a
/// few MiB.
const MAX_ANSWER: usize = 64 << 20;

pub async fn rejections(
    path: &Path,
    source: Option<&str>,
    outcome: Option<&str>,
    limit: usize,
) -> ExitCode {
    let config = match crate::config::Config::load(path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{}", e.display_in(path));
            return ExitCode::FAILURE;
        }
    };
    let Some(token) = &config.admin.token else {
        eprintln!(
            "hookgate rejections: the admin listener answers /rejections only with [admin] token set"
        );
        return ExitCode::FAILURE;
    };
    let mut addr = config.admin.listen;
    // A listener on every address is asked on loopback.
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let mut query = format!("limit={}", limit.clamp(1, crate::rejections::MAX_LIMIT));
    if let Some(s) = source {
        query.push_str(&format!("&source={}", percent_encode(s)));
    }
    if let Some(o) = outcome {
        query.push_str(&format!("&outcome={}", percent_encode(o)));
    }
    let uri = format!("http://{addr}/rejections?{query}");
    let request = match http::Request::get(&uri)
        .header(
            http::header::AUTHORIZATION,
            format!("Bearer {}", String::from_utf8_lossy(token.expose())),
        )
        .body(Full::new(Bytes::new()))
    {
        Ok(request) => request,
        Err(e) => {
            eprintln!("hookgate rejections: {e}");
            return ExitCode::FAILURE;
        }
    };
    let answer = match crate::outbound::exchange(request, None, MAX_ANSWER, ASK_TIMEOUT).await {
        Ok(answer) => answer,
        Err(crate::outbound::Error::Timeout(_)) => {
            eprintln!("hookgate rejections: no answer from {addr} within {ASK_TIMEOUT:?}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!(
                "hookgate rejections: the server's admin listener at {addr} did not answer: {e} (is hookgate running?)"
            );
            return ExitCode::FAILURE;
        }
    };
    let (status, body) = (answer.status, answer.body);
    if !status.is_success() {
        eprintln!(
            "hookgate rejections: {addr} answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        );
        return ExitCode::FAILURE;
    }
    let listed: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hookgate rejections: the answer is not JSON: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", text(&listed));
    ExitCode::SUCCESS
}

/// `GET /rejections`'s answer for a terminal.
pub fn text(listed: &serde_json::Value) -> String {
    let s = |v: &serde_json::Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
    let n = |v: &serde_json::Value| v.as_u64().map_or_else(|| "-".to_owned(), |n| n.to_string());
    let mut out = format!("replica {}\n", s(&listed["replica"]));
    let entries = listed["entries"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() {
        out.push_str("no refused requests kept\n");
    } else {
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|e| {
                let mut detail = Vec::new();
                if let Some(h) = e["signature_header"].as_str() {
                    detail.push(format!("header {h}"));
                }
                if let Some(secs) = e["outside_tolerance_secs"].as_i64() {
                    detail.push(format!("{secs}s outside tolerance"));
                }
                vec![
                    s(&e["at"]),
                    s(&e["source"]),
                    s(&e["outcome"]),
                    n(&e["status"]),
                    s(&e["client"]),
                    n(&e["body_bytes"]),
                    s(&e["path"]),
                    s(&e["user_agent"]),
                    if detail.is_empty() {
                        "-".to_owned()
                    } else {
                        detail.join(", ")
                    },
                ]
            })
            .collect();
        out.push_str(&crate::cli::table(
            &[
                "TIME",
                "SOURCE",
                "OUTCOME",
                "STATUS",
                "CLIENT",
                "BYTES",
                "PATH",
                "USER-AGENT",
                "DETAIL",
            ],
            &rows,
        ));
    }
    for (title, key, column) in [
        ("by outcome", "by_outcome", "OUTCOME"),
        ("by client address", "by_client", "CLIENT"),
    ] {
        let counts = listed["counts"][key]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if counts.is_empty() {
            continue;
        }
        out.push_str(&format!("\nlast hour, {title}:\n"));
        let rows: Vec<Vec<String>> = counts
            .iter()
            .map(|c| vec![s(&c["source"]), s(&c["key"]), n(&c["count"])])
            .collect();
        out.push_str(&crate::cli::table(&["SOURCE", column, "COUNT"], &rows));
    }
    out
}
