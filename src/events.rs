//! Reading the event trail (DESIGN §7a) for `GET /events`, `hookgate events`
//! and the console: pages of [`Record`]s folded from the store's facts, and
//! one event with what the store holds for it now.

use serde::Serialize;

use crate::config::Config;
use crate::dlq;
use crate::store::{self, Claim, Store, keys};
use crate::trail::{Cursor, Filter, Page, Record, rfc3339};

/// Events read from the store per round while filling a page.
const SCAN_BATCH: usize = 200;

/// The newest events matching `filter`, after its cursor.
pub async fn list(store: &Store, config: &Config, filter: &Filter) -> Result<Page, store::Error> {
    let limit = filter.limit();
    let max = config.admin.trail_max_events;
    let mut events = Vec::new();
    let mut cursor = filter.before.clone();
    // A filter may skip most events: read on, at most the whole trail.
    let mut read = 0usize;
    loop {
        let batch = store.trail_scan(cursor.as_ref(), SCAN_BATCH).await?;
        let n = batch.len();
        read += n;
        for stored in batch {
            cursor = Some(Cursor {
                received_ms: stored.received_ms,
                source: stored.source.clone(),
                event_id: stored.event_id.clone(),
            });
            let record = stored.summary.record(&stored.source, &stored.event_id);
            if filter.matches(&record) {
                events.push(record);
                if events.len() == limit {
                    let next = cursor.as_ref().map(Cursor::encode);
                    return Ok(Page { events, next });
                }
            }
        }
        if n < SCAN_BATCH || read > max.max(SCAN_BATCH) {
            return Ok(Page { events, next: None });
        }
    }
}

/// One event with what the store holds for it now.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub record: Record,
    pub store: Live,
}

/// What the store says now about an event.
#[derive(Debug, Clone, Serialize)]
pub struct Live {
    /// `in_flight`, `done` or `absent`.
    pub nonce: &'static str,
    /// When the nonce expires (RFC 3339), when held.
    pub nonce_expires_at: Option<String>,
    /// The event's dead letters waiting now.
    pub dead_letters: Vec<dlq::Summary>,
}

/// One event of the trail; `None` when the trail has no such event.
pub async fn show(
    store: &Store,
    config: &Config,
    source: &str,
    event_id: &str,
) -> Result<Option<Shown>, store::Error> {
    let prefix = store.prefix();
    let Some(summary) = store.trail_get(source, event_id).await? else {
        return Ok(None);
    };
    let record = summary.record(source, event_id);
    let nonce_key = keys::nonce_key(prefix, source, &record.nonce_id);
    let (nonce, nonce_expires_at) = match store.peek(&nonce_key).await? {
        Some((Claim::Done, left)) => ("done", Some(left)),
        Some((_, left)) => ("in_flight", Some(left)),
        None => ("absent", None),
    };
    let now = crate::time::now_ms();
    let dead_letters = if store.keeps_queue() {
        dlq::list(store, &config.store.encryption, Some(source))
            .await?
            .iter()
            .filter(|d| d.envelope.event_id == event_id)
            .map(dlq::Dead::summary)
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(Shown {
        record,
        store: Live {
            nonce,
            nonce_expires_at: nonce_expires_at.map(|left| {
                rfc3339(now.saturating_add(i64::try_from(left.as_millis()).unwrap_or(i64::MAX)))
            }),
            dead_letters,
        },
    }))
}

/// A page as `hookgate events list` prints it.
pub fn list_text(page: &Page) -> String {
    let rows: Vec<Vec<String>> = page
        .events
        .iter()
        .map(|r| {
            vec![
                r.received_at.clone().unwrap_or_else(|| "-".into()),
                r.source.clone(),
                r.event_id.clone(),
                r.event_type.clone().unwrap_or_else(|| "-".into()),
                r.state.word().to_owned(),
                (r.attempts.len() as u64 + r.attempts_omitted).to_string(),
                r.duplicates.to_string(),
            ]
        })
        .collect();
    crate::cli::table(
        &[
            "RECEIVED",
            "SOURCE",
            "EVENT ID",
            "TYPE",
            "STATE",
            "ATTEMPTS",
            "DUPLICATES",
        ],
        &rows,
    )
}

/// One event as `hookgate events show` prints it.
pub fn show_text(shown: &Shown) -> String {
    let r = &shown.record;
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut out = format!(
        "source:       {}\nevent id:     {}\ntype:         {}\nstate:        {}\nreceived:     {} on {}\nsigned at:    {}\nduplicates:   {}\n",
        r.source,
        r.event_id,
        or_dash(&r.event_type),
        r.state.word(),
        or_dash(&r.received_at),
        or_dash(&r.replica),
        or_dash(&r.signed_at),
        r.duplicates,
    );
    if let (Some(first), Some(last)) = (&r.first_duplicate_at, &r.last_duplicate_at) {
        out.push_str(&format!("duplicated:   {first} to {last}\n"));
    }
    if let Some(next) = &r.next_attempt_at {
        out.push_str(&format!("next attempt: {next}\n"));
    }
    if let Some(id) = &r.dead_letter_id {
        out.push_str(&format!("dead letter:  {id}\n"));
    }
    if let (Some(by), Some(at)) = (&r.removed_by, &r.removed_at) {
        out.push_str(&format!("removed by:   {by} at {at}\n"));
    }
    let live = &shown.store;
    out.push_str(&format!(
        "nonce now:    {}{}\n",
        live.nonce,
        live.nonce_expires_at
            .as_ref()
            .map(|t| format!(" until {t}"))
            .unwrap_or_default()
    ));
    for d in &live.dead_letters {
        out.push_str(&format!(
            "dead letter now: {} ({} attempts, {})\n",
            d.id,
            d.attempts,
            d.last_error.as_deref().unwrap_or("-")
        ));
    }
    if r.attempts.is_empty() {
        out.push_str("\nno attempts yet\n");
    } else {
        let rows: Vec<Vec<String>> = r
            .attempts
            .iter()
            .map(|a| {
                vec![
                    a.at.clone(),
                    a.replica.clone(),
                    serde_json::to_value(a.mode)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    a.outcome.clone(),
                    a.status.map_or("-".into(), |s| s.to_string()),
                    format!("{}ms", a.duration_ms),
                    a.waited
                        .as_ref()
                        .map_or("-".into(), |w| format!("{}ms {}", w.ms, w.reason)),
                    a.trace_id.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&crate::cli::table(
            &[
                "AT", "REPLICA", "MODE", "OUTCOME", "STATUS", "DURATION", "WAITED", "TRACE ID",
            ],
            &rows,
        ));
        if r.attempts_omitted > 0 {
            out.push_str(&format!(
                "({} attempts after the first {} are omitted above)\n",
                r.attempts_omitted,
                crate::trail::FIRST_ATTEMPTS
            ));
        }
    }
    out
}
