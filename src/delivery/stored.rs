//! An attempt with a stored request (a queue entry, a dead letter): the
//! envelope rebuilt into a request and sent through [`Steps::attempt`], in
//! the trace of the request that brought it.

use super::{Attempt, Event, Steps};
use crate::envelope::Envelope;
use crate::ordering::Gate;
use crate::traces::{Parent, Span};
use crate::trail::Mode;

/// How an attempt with a stored envelope went, as the trail records it.
#[derive(Debug)]
pub struct Tried {
    pub attempt: Attempt,
    /// The §3 word: `forwarded` when the app answered, else why not.
    pub outcome: &'static str,
    pub status: Option<u16>,
    pub elapsed: std::time::Duration,
    /// The attempt's trace id, when it was traced and kept.
    pub trace_id: Option<String>,
}

impl Tried {
    /// The attempt as the trail records it, made now by this replica.
    pub fn trail(&self, mode: Mode) -> crate::trail::Attempt {
        crate::delivery::trail_attempt(
            mode,
            self.outcome,
            self.status,
            self.elapsed,
            self.trace_id.clone(),
        )
    }
}

impl<'a> Event<'a> {
    /// The event as the delivery steps see it, with its version gate.
    pub fn of(envelope: &'a Envelope, gate: Option<&'a Gate>) -> Event<'a> {
        Event {
            source: &envelope.source,
            event_id: &envelope.event_id,
            nonce_id: envelope.nonce_id(),
            event_type: envelope.event_type.as_deref(),
            type_signed: envelope.type_signed,
            gate,
        }
    }
}

impl Steps<'_> {
    /// One attempt at the app with the stored request ([`Steps::attempt`]),
    /// the next of this event, in `mode` (queue or replay), traced in the
    /// trace of the request that brought it; a request that can no longer be
    /// rebuilt is refused, not retried.
    pub async fn attempt_stored(
        &self,
        envelope: &Envelope,
        event: &Event<'_>,
        mode: Mode,
    ) -> Tried {
        let steps = self;
        let attempt = envelope.attempts.saturating_add(1);
        let mut span = match steps.traces {
            Some(traces) => traces.delivery(
                envelope
                    .trace
                    .as_deref()
                    .and_then(|t| Parent::parse(t.as_bytes())),
            ),
            None => Span::none(),
        };
        // The event's names, on a span that lives apart from its request's.
        if span.recording() {
            span.str("hookgate.source", &envelope.source);
            span.str("hookgate.event_id", &envelope.event_id);
            if let Some(event_type) = envelope
                .event_type
                .as_ref()
                .filter(|_| envelope.type_signed)
            {
                span.str("hookgate.event_type", event_type);
            }
        }
        span.word("hookgate.delivery.mode", mode.word());
        span.int("hookgate.delivery.attempt", i64::from(attempt));
        let tried = match envelope.request_parts() {
            Ok(parts) => {
                let attempted = steps
                    .attempt(
                        event,
                        &parts,
                        envelope.body.clone(),
                        envelope.peer,
                        &mut span,
                    )
                    .await;
                Tried {
                    outcome: match &attempted.answer {
                        Ok(_) => "forwarded",
                        Err(e) => crate::outcome::Outcome::from(e).code(),
                    },
                    status: attempted.status(),
                    elapsed: attempted.elapsed,
                    attempt: attempted.attempt,
                    trace_id: None,
                }
            }
            Err(e) => {
                span.fail("bad_request");
                Tried {
                    outcome: "bad_request",
                    attempt: Attempt::Refused(e),
                    status: None,
                    elapsed: std::time::Duration::ZERO,
                    trace_id: None,
                }
            }
        };
        span.word("hookgate.outcome", tried.outcome);
        Tried {
            trace_id: span.trace_id(),
            ..tried
        }
    }
}
