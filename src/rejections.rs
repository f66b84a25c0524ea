//! Rejections (DESIGN §7d): what this process refused lately, and why.
//!
//! Every request refused by a row of §3 with 400, 403, 404, 405 or 413
//! leaves an [`Entry`] of metadata only: the time, the source (none for an
//! unmatched path), the path cut at [`MAX_PATH`] bytes, the outcome word,
//! the client address (after `trusted_proxies`), the `User-Agent` cut at
//! [`MAX_USER_AGENT`] bytes, the body size when it was read, and for a
//! signature failure the header named and how far outside `tolerance` the
//! signed time was. Never the body, a signature, a secret or another
//! header's value.
//!
//! Kept in the process, never in the store: a refusal costs no store write,
//! so a flood of forged requests cannot become store load. Bounded whatever
//! senders do:
//! - the newest [`PER_SOURCE`] entries per source, and as many for
//!   unmatched paths (the sources are the config's, so the set is fixed);
//! - counts per (source, outcome) and per (source, client address) over the
//!   last hour, in one-minute buckets; at most [`MAX_CLIENTS`] addresses a
//!   source, the rest counted as `other`.
//!
//! One refusal costs one lock, a ring push and two bucket increments:
//! constant, however many came before.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

use serde::Serialize;

/// Entries kept per source (and for unmatched paths).
pub const PER_SOURCE: usize = 1000;
/// Client addresses counted per source; the rest are `other`.
pub const MAX_CLIENTS: usize = 1000;
/// Bytes of the path kept.
pub const MAX_PATH: usize = 256;
/// Bytes of the `User-Agent` kept.
pub const MAX_USER_AGENT: usize = 128;
/// Entries `GET /rejections` gives by default, and at most.
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;
/// Minutes the counts cover.
const MINUTES: usize = 60;

/// Whether a refusal with this status is kept (the §3 rows).
pub fn kept(status: http::StatusCode) -> bool {
    matches!(status.as_u16(), 400 | 403 | 404 | 405 | 413)
}

/// One refused request.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// RFC 3339.
    pub at: String,
    pub source: Option<String>,
    pub path: String,
    pub outcome: &'static str,
    pub status: u16,
    pub client: Option<IpAddr>,
    pub user_agent: Option<String>,
    /// Bytes of the body, when it was read.
    pub body_bytes: Option<u64>,
    /// The signature header that was missing or malformed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_header: Option<&'static str>,
    /// How many seconds the signed timestamp was outside `tolerance`
    /// (positive: that far in the past beyond it; negative: in the future).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_tolerance_secs: Option<i64>,
}

/// What a refusal site knows, borrowed; [`Rejections::record`] keeps a
/// bounded copy.
pub struct Refused<'a> {
    pub source: Option<&'a str>,
    pub path: &'a str,
    pub outcome: &'static str,
    pub status: u16,
    pub client: Option<IpAddr>,
    pub user_agent: Option<&'a [u8]>,
    pub body_bytes: Option<u64>,
    pub signature_header: Option<&'static str>,
    pub outside_tolerance_secs: Option<i64>,
}

/// `text` cut at `max` bytes on a character boundary.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Counts over the last hour by minute.
#[derive(Debug, Clone)]
struct Buckets {
    counts: [u32; MINUTES],
    /// The minute (unix minutes) each bucket holds.
    minutes: [i64; MINUTES],
}

impl Buckets {
    fn new() -> Buckets {
        Buckets {
            counts: [0; MINUTES],
            minutes: [i64::MIN; MINUTES],
        }
    }

    fn add(&mut self, minute: i64) {
        let i = minute.rem_euclid(MINUTES as i64) as usize;
        if self.minutes[i] != minute {
            self.minutes[i] = minute;
            self.counts[i] = 0;
        }
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    fn total(&self, now_minute: i64) -> u64 {
        self.counts
            .iter()
            .zip(self.minutes)
            .filter(|(_, m)| now_minute.saturating_sub(*m) < MINUTES as i64)
            .map(|(c, _)| u64::from(*c))
            .sum()
    }
}

/// One source's (or the unmatched paths') rejections.
#[derive(Default)]
struct Kept {
    entries: VecDeque<Entry>,
    outcomes: HashMap<&'static str, Buckets>,
    clients: HashMap<IpAddr, Buckets>,
    other_clients: Option<Buckets>,
    /// When the clients were last pruned of addresses quiet for an hour.
    pruned_minute: i64,
}

/// Counts as `GET /rejections` shows them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Count {
    pub source: Option<String>,
    /// An outcome word, or a client address (`other` past the cap).
    pub key: String,
    pub count: u64,
}

/// What `GET /rejections` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub replica: String,
    pub entries: Vec<Entry>,
    pub counts: Counts,
}

#[derive(Debug, Clone, Serialize)]
pub struct Counts {
    /// Over the last hour, per (source, outcome).
    pub by_outcome: Vec<Count>,
    /// Over the last hour, per (source, client address).
    pub by_client: Vec<Count>,
}

/// The process's rejections.
#[derive(Default)]
pub struct Rejections {
    inner: Mutex<Inner>,
}

/// Per configured source (a refusal names one only when the path matched
/// it), and the unmatched paths.
#[derive(Default)]
struct Inner {
    sources: HashMap<String, Kept>,
    unmatched: Kept,
}

impl Inner {
    fn kept(&mut self, source: Option<&str>) -> &mut Kept {
        match source {
            None => &mut self.unmatched,
            Some(name) => {
                if !self.sources.contains_key(name) {
                    self.sources.insert(name.to_owned(), Kept::default());
                }
                // Just inserted when absent: the fallback is never taken.
                match self.sources.get_mut(name) {
                    Some(kept) => kept,
                    None => &mut self.unmatched,
                }
            }
        }
    }

    fn all(&self) -> impl Iterator<Item = (Option<&str>, &Kept)> {
        self.sources
            .iter()
            .map(|(name, kept)| (Some(name.as_str()), kept))
            .chain(std::iter::once((None, &self.unmatched)))
    }
}

impl Rejections {
    /// Keeps one refusal; returns how many entries are kept in all.
    pub fn record(&self, r: &Refused<'_>) -> usize {
        let now = crate::time::now_ms();
        let minute = now.div_euclid(60_000);
        let entry = Entry {
            at: crate::trail::rfc3339(now),
            source: r.source.map(str::to_owned),
            path: cut(r.path, MAX_PATH),
            outcome: r.outcome,
            status: r.status,
            client: r.client,
            user_agent: r
                .user_agent
                .map(|ua| cut(&String::from_utf8_lossy(ua), MAX_USER_AGENT)),
            body_bytes: r.body_bytes,
            signature_header: r.signature_header,
            outside_tolerance_secs: r.outside_tolerance_secs,
        };
        let Ok(mut all) = self.inner.lock() else {
            return 0;
        };
        let kept = all.kept(r.source);
        if kept.entries.len() >= PER_SOURCE {
            kept.entries.pop_front();
        }
        kept.entries.push_back(entry);
        kept.outcomes
            .entry(r.outcome)
            .or_insert_with(Buckets::new)
            .add(minute);
        if let Some(ip) = r.client {
            if !kept.clients.contains_key(&ip)
                && kept.clients.len() >= MAX_CLIENTS
                && kept.pruned_minute != minute
            {
                kept.pruned_minute = minute;
                kept.clients.retain(|_, b| b.total(minute) > 0);
            }
            let room = kept.clients.len() < MAX_CLIENTS;
            match kept.clients.get_mut(&ip) {
                Some(b) => b.add(minute),
                None if room => {
                    let mut b = Buckets::new();
                    b.add(minute);
                    kept.clients.insert(ip, b);
                }
                None => kept
                    .other_clients
                    .get_or_insert_with(Buckets::new)
                    .add(minute),
            }
        }
        all.all().map(|(_, k)| k.entries.len()).sum()
    }

    /// The newest entries first (of one source, or of one outcome), at most
    /// `limit`, with the last hour's counts.
    pub fn list(&self, source: Option<&str>, outcome: Option<&str>, limit: usize) -> Listed {
        let minute = crate::time::now_ms().div_euclid(60_000);
        let limit = match limit {
            0 => DEFAULT_LIMIT,
            n => n.min(MAX_LIMIT),
        };
        let mut entries = Vec::new();
        let mut by_outcome = Vec::new();
        let mut by_client = Vec::new();
        if let Ok(all) = self.inner.lock() {
            for (name, kept) in all.all() {
                let name = name.map(str::to_owned);
                if source.is_some_and(|s| name.as_deref() != Some(s)) {
                    continue;
                }
                entries.extend(
                    kept.entries
                        .iter()
                        .rev()
                        .filter(|e| outcome.is_none_or(|o| e.outcome == o))
                        .take(limit)
                        .cloned(),
                );
                for (word, b) in &kept.outcomes {
                    let count = b.total(minute);
                    if count > 0 && outcome.is_none_or(|o| *word == o) {
                        by_outcome.push(Count {
                            source: name.clone(),
                            key: (*word).to_owned(),
                            count,
                        });
                    }
                }
                let other = kept.other_clients.iter().map(|b| ("other".to_owned(), b));
                for (addr, b) in kept
                    .clients
                    .iter()
                    .map(|(ip, b)| (ip.to_string(), b))
                    .chain(other)
                {
                    let count = b.total(minute);
                    if count > 0 {
                        by_client.push(Count {
                            source: name.clone(),
                            key: addr,
                            count,
                        });
                    }
                }
            }
        }
        entries.sort_by(|a, b| b.at.cmp(&a.at));
        entries.truncate(limit);
        by_outcome.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        by_client.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        Listed {
            replica: crate::trail::replica().to_string(),
            entries,
            counts: Counts {
                by_outcome,
                by_client,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused<'a>(source: Option<&'a str>, outcome: &'static str, client: u32) -> Refused<'a> {
        Refused {
            source,
            path: "/hooks/q",
            outcome,
            status: 400,
            client: Some(IpAddr::from(client.to_be_bytes())),
            user_agent: Some(b"Stripe/1.0"),
            body_bytes: Some(10),
            signature_header: None,
            outside_tolerance_secs: None,
        }
    }

    #[test]
    fn a_flood_keeps_the_bounds() {
        let r = Rejections::default();
        let mut kept = 0;
        for i in 0..5_000u32 {
            kept = r.record(&refused(Some("q"), "invalid_signature", i));
            r.record(&refused(None, "unknown_source", i));
        }
        assert_eq!(kept, 2 * PER_SOURCE);
        let listed = r.list(Some("q"), None, 5_000);
        assert_eq!(listed.entries.len(), MAX_LIMIT);
        assert_eq!(
            listed.counts.by_outcome,
            vec![Count {
                source: Some("q".into()),
                key: "invalid_signature".into(),
                count: 5_000
            }]
        );
        assert_eq!(listed.counts.by_client.len(), MAX_CLIENTS + 1);
        let other = listed
            .counts
            .by_client
            .iter()
            .find(|c| c.key == "other")
            .expect("other");
        assert_eq!(other.count, 4_000);
    }

    #[test]
    fn values_are_cut_and_filters_apply() {
        let r = Rejections::default();
        let long = "/hooks/".to_owned() + &"é".repeat(300);
        let ua = vec![b'a'; 500];
        r.record(&Refused {
            path: &long,
            user_agent: Some(&ua),
            ..refused(Some("q"), "body_too_large", 1)
        });
        r.record(&refused(Some("q"), "invalid_signature", 1));
        let listed = r.list(None, Some("body_too_large"), 0);
        assert_eq!(listed.entries.len(), 1);
        let e = &listed.entries[0];
        assert!(
            e.path.len() <= MAX_PATH && e.path.len() > MAX_PATH - 2,
            "{}",
            e.path.len()
        );
        assert_eq!(e.user_agent.as_deref().map(str::len), Some(MAX_USER_AGENT));
        assert_eq!(listed.counts.by_outcome.len(), 1);
    }
}
