//! `hookgate filter test` (DESIGN §1, §3a): which `[[source.filter]]` rule a
//! body meets, and what hookgate would answer, without a server or a store.

use std::fmt::Write as _;

use http::{HeaderMap, HeaderName, HeaderValue};

use std::path::Path;
use std::process::ExitCode;

use crate::cli::sign::{load_source, read_body};
use crate::config::Source;
use crate::filter::Action;

/// The report for `body` sent to `source` with `headers` (`Name: value`
/// lines, which name the event type for schemes that carry it in a header).
/// `Err` is a usage problem, for standard error.
pub fn test(source: &Source, body: &[u8], headers: &[String]) -> Result<String, String> {
    let mut map = HeaderMap::new();
    for line in headers {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("--header {line:?}: give it as \"Name: value\""))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("--header {line:?}: {:?} is not a header name", name.trim()))?;
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| format!("--header {line:?}: the value is not a header value"))?;
        map.append(name, value);
    }
    let mut out = String::new();
    let rules = source.filters.rules();
    // The event type, as the server would read it, checked against
    // `event_types` first (it needs a signed request: made here with the
    // source's own key where the scheme can sign).
    if !source.event_types.is_empty() {
        match event_type(source, &map, body) {
            Ok(event_type) => {
                let shown = event_type.as_deref().unwrap_or("(none)");
                if !source.accepts_type(event_type.as_deref()) {
                    let _ = writeln!(out, "event type {shown}: not in event_types");
                    let _ = writeln!(out, "answer: 200 {{\"ignored\":true}} (event_types)");
                    return Ok(out);
                }
                let _ = writeln!(out, "event type {shown}: in event_types");
            }
            Err(why) => {
                let _ = writeln!(out, "event_types not checked: {why}");
            }
        }
    }
    if rules.is_empty() {
        let _ = writeln!(
            out,
            "source {:?} has no [[source.filter]] rules",
            source.name
        );
    }
    let verdicts = source.filters.explain(body);
    let decision = source.filters.decide(body);
    for (i, (rule, (holds, value))) in rules.iter().zip(verdicts).enumerate() {
        let found = match &value {
            Some(v) => truncate(&v.to_string(), 80),
            None => "absent".to_owned(),
        };
        let verdict = match (decision.rule, holds) {
            (Some(d), true) if d == i => format!("holds: {}s (decides)", rule.action.word()),
            (Some(d), _) if i > d => "not tried".to_owned(),
            (_, true) => "holds".to_owned(),
            (_, false) => "does not hold".to_owned(),
        };
        let _ = writeln!(
            out,
            "rule {} {:?}: {} {} {}: {}",
            i + 1,
            rule.name,
            rule.field,
            rule.condition.word(),
            found,
            verdict
        );
    }
    let answer = match (decision.action, decision.rule.and_then(|i| rules.get(i))) {
        (Action::Ignore, Some(rule)) => format!(
            "200 {{\"ignored\":\"filtered\"}} (rule {:?}); not forwarded, nothing stored",
            rule.name
        ),
        (_, rule) => {
            let why = match rule {
                Some(rule) => format!("rule {:?} delivers", rule.name),
                None if rules.is_empty() => "no rules".to_owned(),
                None => "no rule holds".to_owned(),
            };
            let then = match source.delivery {
                crate::config::Delivery::Queue => "200 queued",
                crate::config::Delivery::Forward => "forwarded; the app's answer",
            };
            format!("delivered ({why}): {then}, once its id is fresh")
        }
    };
    let _ = writeln!(out, "answer: {answer}");
    Ok(out)
}

/// The event type the scheme reads from a request carrying `headers` and
/// `body`, signed here with the source's key.
fn event_type(source: &Source, headers: &HeaderMap, body: &[u8]) -> Result<Option<String>, String> {
    let key = source
        .scheme
        .signing_key(&source.keys)
        .ok_or("the scheme cannot be signed with the configured secrets")?;
    let now = crate::time::unix_now();
    let lines = source
        .scheme
        .sign(key, body, None, now)
        .map_err(str::to_owned)?;
    let mut signed = headers.clone();
    for (name, value) in lines {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            signed.insert(n, v);
        }
    }
    source
        .scheme
        .verify(&source.keys, source.tolerance, &signed, body, now)
        .map(|v| v.event_type)
        .map_err(|e| format!("the body does not verify as this scheme's request: {e}"))
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// `hookgate filter test`: exit 0 with the report, 1 on a problem.
pub fn command(path: &Path, action: crate::cli::FilterAction) -> ExitCode {
    let crate::cli::FilterAction::Test {
        source,
        body_file,
        headers,
    } = action;
    let (config, index) = match load_source(path, "filter", &source) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let found = &config.sources[index];
    let body = match read_body(Some(&body_file)) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("hookgate filter: {e}");
            return ExitCode::FAILURE;
        }
    };
    match test(found, &body, &headers) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookgate filter: {e}");
            ExitCode::from(2)
        }
    }
}
