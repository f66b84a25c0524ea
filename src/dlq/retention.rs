//! `[store] dead_letter_max_age` (DESIGN §6): dead letters that have been
//! one for longer are removed in the background, each with one log line
//! (source, event id, age), counted in
//! `hookgate_dead_letters_expired_total{source}`, its trail state
//! `expired`. Without the setting nothing is removed unasked.
//!
//! Every server on the store runs the sweep; a removal is taken by one of
//! them only (the store says which removal removed), so each entry is
//! logged and counted once across replicas. An entry a job is sending now
//! is left to the job.

use std::sync::Arc;
use std::time::Duration;

use crate::trail::State;

/// How often the sweep runs: a tenth of the age, from a second to a minute.
pub fn every(max_age: Duration) -> Duration {
    (max_age / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// One sweep: removes every dead letter older than `max_age`; how many it
/// removed.
pub async fn sweep(
    state: &crate::state::State,
    max_age: Duration,
) -> Result<usize, crate::store::Error> {
    let runtime = state.runtime();
    let config = &runtime.config;
    let now = crate::time::now_ms();
    let cutoff = now.saturating_sub(i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX));
    let sending: Vec<String> = super::jobs::list(&state.store)
        .await
        .map(|jobs| jobs.into_iter().filter_map(|j| j.current).collect())
        .unwrap_or_default();
    let entries = super::list(&state.store, &config.store.encryption, None).await?;
    let mut removed = 0;
    for dead in entries {
        let at = dead.envelope.dead_ms.unwrap_or(dead.envelope.received_ms);
        if at >= cutoff || sending.contains(&dead.id) {
            continue;
        }
        if super::discard(
            &state.store,
            config,
            &dead,
            State::Expired,
            "dead_letter_max_age",
        )
        .await?
        {
            removed += 1;
            let age = Duration::from_millis(u64::try_from(now - at).unwrap_or(0));
            state.metrics.dead_letter_expired(&dead.envelope.source);
            tracing::info!(
                source = %dead.envelope.source,
                event_id = %dead.envelope.event_id,
                dlq_id = %dead.id,
                age = %humantime::format_duration(Duration::from_secs(age.as_secs())),
                "dead letter expired: older than dead_letter_max_age; removed unsent"
            );
        }
    }
    Ok(removed)
}

/// Sweeps while the process runs, at the age in force (a reload may set,
/// change or remove it).
pub async fn run(state: Arc<crate::state::State>) {
    loop {
        let max_age = state.runtime().config.store.dead_letter_max_age;
        let Some(max_age) = max_age else {
            tokio::time::sleep(Duration::from_secs(10)).await;
            continue;
        };
        if let Err(e) = sweep(&state, max_age).await {
            tracing::warn!(error = %e, "dead-letter expiry: sweep failed; tried again later");
        }
        tokio::time::sleep(every(max_age)).await;
    }
}
