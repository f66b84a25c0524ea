//! What the pipeline keeps in the store for an event: its enqueue (queue
//! mode), a forward failure counted towards a dead letter, and the nonce
//! commit written behind the app's answer (retried while the store fails).

use super::*;

/// Queue delivery: the raw request goes to the source's stream, the nonce is
/// committed, and only then is the sender answered 200.
pub(super) async fn enqueue(
    state: &Arc<State>,
    steps: &Steps<'_>,
    event: &Event<'_>,
    nonce: Lease,
    envelope: &Envelope,
    facts: Vec<Fact>,
) -> Outcome {
    // Config validation refuses queue delivery on the memory store, which
    // answers every enqueue with an error.
    // The nonce is committed with the enqueue: the event is queued and will
    // be delivered. A commit that fails (the primary lost right after the
    // enqueue, or its WAIT short) is retried in the background, so a copy
    // the sender sends later, on whichever node is primary by then, is a
    // duplicate; only a copy that arrives before the retry lands, after the
    // claim's lease, could queue it a second time.
    let enqueued = match state.store.durable() {
        Ok(queue) => {
            queue
                .enqueue(
                    envelope.meta(),
                    envelope.encode(&steps.config.store.encryption, Place::Queue),
                    Some((nonce.key(), steps.config.store.nonce_ttl)),
                    steps.note_of(event, facts),
                )
                .await
        }
        Err(e) => Err(e),
    };
    match enqueued {
        Ok((_, Ok(()))) => {}
        Ok((_, Err(e))) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %event.source, event_id = %event.event_id, error = %e, "nonce commit failed");
            retry_commit(
                state,
                nonce,
                steps.config.store.nonce_ttl,
                event.source.to_owned(),
                event.event_id.to_owned(),
            );
        }
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %event.source, event_id = %event.event_id, error = %e, "enqueue failed");
            steps.release(event, Some(nonce)).await;
            return Outcome::StoreUnavailable;
        }
    }
    Outcome::Queued {
        event_id: event.event_id.to_owned(),
    }
}

/// Counts a forward failure (5xx, unreachable, too slow) of one event id; the
/// [`dlq::FORWARD_FAILURES`]th in a row copies it to the dead-letter stream.
pub(super) async fn count_failure(
    state: &State,
    runtime: &Runtime,
    mut envelope: Envelope,
    error: String,
) {
    let Ok(kept) = state.store.durable() else {
        return;
    };
    let key = keys::fail_key(state.store.prefix(), &envelope.source, &envelope.event_id);
    let count = match kept
        .record_failure(&key, runtime.config.store.nonce_ttl)
        .await
    {
        Ok(count) => count,
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, error = %e, "failure count not recorded");
            return;
        }
    };
    if count != dlq::FORWARD_FAILURES {
        return;
    }
    envelope.attempts = u32::try_from(count).unwrap_or(u32::MAX);
    envelope.last_error = Some(error);
    envelope.last_attempt_ms = Some(crate::time::now_ms());
    envelope.dead_ms = envelope.last_attempt_ms;
    match kept
        .bury(
            None,
            envelope.meta(),
            envelope.encode(&runtime.config.store.encryption, Place::DeadLetter),
        )
        .await
    {
        Ok(id) => {
            state.store.trail_note(
                &envelope.source,
                &envelope.event_id,
                vec![Fact::DeadLettered {
                    dead_letter_id: id.clone(),
                }],
                runtime.config.admin.trail_max_events,
            );
            state.metrics.dead_letter(&envelope.source);
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, event_type = envelope.event_type.as_deref(), dlq_id = %id, attempts = count, "the app failed this event {count} times in a row; copied to the dead-letter stream");
        }
        Err(e) => {
            state.metrics.store_errors.inc();
            tracing::warn!(source = %envelope.source, event_id = %envelope.event_id, error = %e, "dead letter not written");
        }
    }
}

/// Commits a delivered event's nonce without the answer waiting for Redis's
/// reply. The commit is polled once here, which queues its command on the
/// store's connection, and the request yields once so the connection's
/// task writes it: a copy of the event that reaches this process after the
/// answer is claimed behind the commit and finds the event done, and a
/// reader of Redis that saw the answer finds the commit there.
/// The rest runs in a task the drain waits for ([`State::behind`]); a failed
/// commit is counted and logged as every store error on the way is, then
/// retried ([`retry_commit`]).
pub(super) async fn commit_behind(
    state: &Arc<State>,
    nonce: Lease,
    ttl: Duration,
    event: &Event<'_>,
    note: Option<store::Note>,
) {
    let owned = Arc::clone(state);
    let source = event.source.to_owned();
    let event_id = event.event_id.to_owned();
    let mut commit = Box::pin(async move {
        if let Err(e) = owned.store.commit(nonce.key(), ttl, note).await {
            owned.metrics.store_errors.inc();
            tracing::warn!(source = %source, event_id = %event_id, error = %e, "nonce commit failed");
            retry_commit(&owned, nonce, ttl, source, event_id);
        }
    });
    let done = std::future::poll_fn(|cx| Poll::Ready(commit.as_mut().poll(cx).is_ready())).await;
    if !done {
        state.behind.spawn(commit);
        // The connection's task was woken by the queued command: letting it
        // run now puts the command on the wire before the answer.
        tokio::task::yield_now().await;
    }
}

/// Retries a failed commit until it lands or [`COMMIT_RETRY_FOR`] passes.
/// If the store stays away longer than that, a retry after the lease
/// expires is forwarded again.
/// Safe at any time: the app accepted the event (forward) or it is durably
/// queued (queue), so `done` is true whoever holds the key by then (see
/// [`crate::store::Store::commit`]).
pub(super) fn retry_commit(
    state: &Arc<State>,
    nonce: Lease,
    ttl: Duration,
    source: String,
    event_id: String,
) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + COMMIT_RETRY_FOR;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(COMMIT_RETRY_EVERY).await;
            match state.store.commit(nonce.key(), ttl, None).await {
                Ok(()) => {
                    tracing::info!(source = %source, event_id = %event_id, "nonce committed on retry");
                    return;
                }
                Err(_) => {
                    state.metrics.store_errors.inc();
                }
            }
        }
        tracing::warn!(source = %source, event_id = %event_id, "nonce commit given up: a retry may be forwarded again");
    });
}
