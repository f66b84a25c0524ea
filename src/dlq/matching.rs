//! MATCH (DESIGN §6b): which dead letters a list, replay or delete takes,
//! by source, event type glob, when the entry became a dead letter, and its
//! last error. The same match comes from the command line, from the admin
//! listener's JSON and from the console's form, and is kept in a job as it
//! was resolved (an age such as `2h` becomes a time once, when asked).

use serde::{Deserialize, Serialize};

use super::Dead;

/// Entries a dry run shows, and the answer's `sample`.
pub const SAMPLE: usize = 10;

/// Which dead letters to take. Every field given must hold; none given
/// takes every entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Match {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A glob on the event type: `*` stands for any run of characters.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// Unix ms: became a dead letter at or after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<i64>,
    /// Unix ms: became a dead letter before this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<i64>,
    /// The last error: a word of §3 (`upstream_timeout`,
    /// `upstream_unavailable`), a status (`503`) or a class (`5xx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What is wrong with a MATCH field; said to the operator as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

/// The last-error words a MATCH takes besides a status and a class.
pub const ERROR_WORDS: [&str; 2] = ["upstream_unavailable", "upstream_timeout"];

/// A last error as a MATCH reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorIs {
    Word(&'static str),
    Status(u16),
    Class(u16),
}

impl ErrorIs {
    fn parse(text: &str) -> Option<ErrorIs> {
        let t = text.trim();
        if let Some(word) = ERROR_WORDS.iter().find(|w| w.eq_ignore_ascii_case(t)) {
            return Some(ErrorIs::Word(word));
        }
        if t.len() == 3 && t.is_ascii() {
            let (head, tail) = t.split_at(1);
            if tail.eq_ignore_ascii_case("xx") {
                return match head {
                    "4" => Some(ErrorIs::Class(4)),
                    "5" => Some(ErrorIs::Class(5)),
                    _ => None,
                };
            }
            return t
                .parse::<u16>()
                .ok()
                .filter(|s| (100..=599).contains(s))
                .map(ErrorIs::Status);
        }
        None
    }

    /// Whether a stored last error (`app answered 503 Service
    /// Unavailable`, `app unreachable: …`, `app did not answer within …`)
    /// is this.
    fn holds(self, last_error: &str) -> bool {
        let status = last_error
            .strip_prefix("app answered ")
            .and_then(|rest| rest.get(..3))
            .and_then(|s| s.parse::<u16>().ok());
        match self {
            ErrorIs::Status(s) => status == Some(s),
            ErrorIs::Class(c) => status.is_some_and(|s| s / 100 == c),
            ErrorIs::Word("upstream_timeout") => last_error.starts_with("app did not answer"),
            ErrorIs::Word(_) => last_error.starts_with("app unreachable"),
        }
    }
}

impl Match {
    /// A match from its text forms, as the command line, the admin JSON and
    /// the console's form give them; `since` and `until` are RFC 3339 times
    /// or ages before `now_ms` (`"2h"`). Empty strings count as absent.
    pub fn parse(
        source: Option<&str>,
        event_type: Option<&str>,
        since: Option<&str>,
        until: Option<&str>,
        error: Option<&str>,
        now_ms: i64,
    ) -> Result<Match, Invalid> {
        fn given(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        let m = Match {
            source: given(source).map(str::to_owned),
            event_type: given(event_type).map(str::to_owned),
            since_ms: given(since).map(|t| time(t, now_ms, "since")).transpose()?,
            until_ms: given(until).map(|t| time(t, now_ms, "until")).transpose()?,
            error: given(error).map(str::to_owned),
        };
        if let Some(e) = &m.error
            && ErrorIs::parse(e).is_none()
        {
            return Err(Invalid {
                field: "error",
                message: format!(
                    "{e:?} is not a last error hookgate records: give {}, a status such as 503, or a class 4xx or 5xx",
                    ERROR_WORDS.join(", ")
                ),
            });
        }
        if let (Some(a), Some(b)) = (m.since_ms, m.until_ms)
            && a >= b
        {
            return Err(Invalid {
                field: "until",
                message: "is not after since".into(),
            });
        }
        Ok(m)
    }

    /// Whether `dead` is taken.
    pub fn holds(&self, dead: &Dead) -> bool {
        let e = &dead.envelope;
        if self.source.as_ref().is_some_and(|s| *s != e.source) {
            return false;
        }
        if let Some(glob) = &self.event_type
            && !e.event_type.as_deref().is_some_and(|t| glob_holds(glob, t))
        {
            return false;
        }
        let at = e.dead_ms.unwrap_or(e.received_ms);
        if self.since_ms.is_some_and(|s| at < s) || self.until_ms.is_some_and(|u| at >= u) {
            return false;
        }
        match (&self.error, &e.last_error) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(got)) => ErrorIs::parse(want).is_some_and(|w| w.holds(got)),
        }
    }

    /// Whether two matches could take an entry of one source.
    pub fn overlaps(&self, other: &Match) -> bool {
        match (&self.source, &other.source) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// The match as a line for logs and the console: `source=q type=invoice.*`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.source {
            parts.push(format!("source={s}"));
        }
        if let Some(t) = &self.event_type {
            parts.push(format!("type={t}"));
        }
        if let Some(s) = self.since_ms {
            parts.push(format!("since={}", crate::trail::rfc3339(s)));
        }
        if let Some(u) = self.until_ms {
            parts.push(format!("until={}", crate::trail::rfc3339(u)));
        }
        if let Some(e) = &self.error {
            parts.push(format!("error={e}"));
        }
        if parts.is_empty() {
            "every dead letter".into()
        } else {
            parts.join(" ")
        }
    }
}

/// An RFC 3339 time, or an age before `now_ms`, as unix ms.
fn time(text: &str, now_ms: i64, field: &'static str) -> Result<i64, Invalid> {
    if let Some(ns) = crate::time::rfc3339_nanos(text.as_bytes(), crate::time::Zone::Required) {
        return i64::try_from(ns / 1_000_000).map_err(|_| Invalid {
            field,
            message: format!("{text:?} is out of range"),
        });
    }
    match crate::config::duration::parse(text) {
        Ok(age) => Ok(now_ms.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))),
        Err(_) => Err(Invalid {
            field,
            message: format!(
                "{text:?} is neither an RFC 3339 time (2026-12-06T14:00:00Z) nor an age (2h)"
            ),
        }),
    }
}

/// Whether `text` fits `glob`, where `*` stands for any run of characters
/// (none included); in time linear in their lengths' product at worst.
pub fn glob_holds(glob: &str, text: &str) -> bool {
    let (g, t) = (glob.as_bytes(), text.as_bytes());
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if gi < g.len() && g[gi] == b'*' {
            star = Some((gi, ti));
            gi += 1;
        } else if gi < g.len() && g[gi] == t[ti] {
            gi += 1;
            ti += 1;
        } else if let Some((sg, st)) = star {
            gi = sg + 1;
            ti = st + 1;
            star = Some((sg, st + 1));
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Envelope;

    fn dead(source: &str, event_type: Option<&str>, dead_ms: i64, error: &str) -> Dead {
        let mut envelope: Envelope = serde_json::from_value(serde_json::json!({
            "token": "t",
            "source": source,
            "event_id": "evt_1",
            "delivery": "queue",
            "method": "POST",
            "uri": "/hooks",
            "headers": [],
            "received_ms": 1,
        }))
        .expect("envelope");
        envelope.event_type = event_type.map(str::to_owned);
        envelope.dead_ms = Some(dead_ms);
        envelope.last_error = Some(error.to_owned());
        Dead {
            id: "1-0".into(),
            envelope,
        }
    }

    #[test]
    fn globs() {
        assert!(glob_holds("invoice.*", "invoice.paid"));
        assert!(glob_holds("invoice.*", "invoice."));
        assert!(!glob_holds("invoice.*", "invoices.paid"));
        assert!(glob_holds("*.paid", "invoice.paid"));
        assert!(glob_holds("*", ""));
        assert!(glob_holds("a*b*c", "aXXbYYc"));
        assert!(!glob_holds("a*b*c", "aXXbYY"));
        assert!(glob_holds("invoice.paid", "invoice.paid"));
        assert!(!glob_holds("invoice.paid", "invoice.paid2"));
    }

    #[test]
    fn every_field_must_hold() {
        let now = 1_800_000_000_000;
        let m = Match::parse(
            Some("stripe"),
            Some("invoice.*"),
            Some("2h"),
            None,
            Some("503"),
            now,
        )
        .expect("valid");
        let hour_ago = now - 3_600_000;
        assert!(m.holds(&dead(
            "stripe",
            Some("invoice.paid"),
            hour_ago,
            "app answered 503 Service Unavailable"
        )));
        assert!(!m.holds(&dead(
            "github",
            Some("invoice.paid"),
            hour_ago,
            "app answered 503 Service Unavailable"
        )));
        assert!(!m.holds(&dead(
            "stripe",
            Some("charge.failed"),
            hour_ago,
            "app answered 503 Service Unavailable"
        )));
        assert!(!m.holds(&dead(
            "stripe",
            None,
            hour_ago,
            "app answered 503 Service Unavailable"
        )));
        assert!(!m.holds(&dead(
            "stripe",
            Some("invoice.paid"),
            now - 3 * 3_600_000,
            "app answered 503 Service Unavailable"
        )));
        assert!(!m.holds(&dead(
            "stripe",
            Some("invoice.paid"),
            hour_ago,
            "app answered 500 Internal Server Error"
        )));
        assert!(Match::default().holds(&dead("x", None, 0, "anything")));
    }

    #[test]
    fn errors_by_word_status_and_class() {
        let d = |e: &str| dead("q", None, 0, e);
        let m = |e: &str| Match::parse(None, None, None, None, Some(e), 0).expect("valid");
        assert!(m("5xx").holds(&d("app answered 502 Bad Gateway")));
        assert!(!m("5xx").holds(&d("app answered 429 Too Many Requests")));
        assert!(m("4XX").holds(&d("app answered 429 Too Many Requests")));
        assert!(m("upstream_timeout").holds(&d("app did not answer within 30s")));
        assert!(!m("upstream_timeout").holds(&d("app unreachable: connection refused")));
        assert!(m("upstream_unavailable").holds(&d("app unreachable: connection refused")));
        assert!(!m("5xx").holds(&d("app unreachable: connection refused")));
        for bad in ["6xx", "999", "timeout", "50"] {
            let e = Match::parse(None, None, None, None, Some(bad), 0).expect_err(bad);
            assert_eq!(e.field, "error");
        }
    }

    #[test]
    fn times_are_rfc3339_or_ages() {
        let m = Match::parse(
            None,
            None,
            Some("2026-12-06T14:00:00Z"),
            Some("30m"),
            None,
            1_800_000_000_000,
        )
        .expect("valid");
        assert_eq!(m.since_ms, Some(1_796_565_600_000));
        assert_eq!(m.until_ms, Some(1_800_000_000_000 - 1_800_000));
        let e = Match::parse(None, None, Some("yesterday"), None, None, 0).expect_err("bad");
        assert_eq!(e.field, "since");
        let e =
            Match::parse(None, None, Some("1h"), Some("2h"), None, 10_000_000).expect_err("order");
        assert_eq!(e.field, "until");
    }
}
