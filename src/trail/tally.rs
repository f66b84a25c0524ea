//! Duplicates counted in the process and written as one fact per event per
//! flush ([`FLUSH`]), so answering a copy never waits for, or adds, a trail
//! write: a flood of one captured event costs the durable engines one
//! `Duplicates` fact a second, however many copies come.
//!
//! The tally holds at most [`CAPACITY`] events. A copy of an event it does
//! not hold while full is handed back to the caller, which writes it on its
//! own (a fact per copy, through the engine's bounded queue): counts are
//! never held without a bound, and never silently dropped by the tally.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::Fact;
use super::Note;

/// How often counted duplicates are written.
pub const FLUSH: Duration = Duration::from_secs(1);
/// Events counted between two flushes at most.
pub const CAPACITY: usize = 10_000;

#[derive(Debug, Default)]
pub struct Tally {
    inner: Mutex<Inner>,
    /// Set once the flushing task runs.
    started: OnceLock<()>,
}

#[derive(Debug, Default)]
struct Inner {
    /// `{source}\0{event_id}` to what was counted for it.
    counts: HashMap<String, Counted, foldhash::fast::RandomState>,
    /// The name being looked up, built here so a copy counted allocates
    /// nothing.
    scratch: String,
}

#[derive(Debug)]
struct Counted {
    prefix: String,
    max: usize,
    count: u64,
    first: i64,
    last: i64,
}

impl Tally {
    /// Counts one duplicate of `(source, event_id)` at `now` (unix ms).
    /// `false` when the tally is full and does not hold that event: the
    /// caller writes the copy itself.
    pub fn add(&self, prefix: &str, source: &str, event_id: &str, max: usize, now: i64) -> bool {
        let Ok(mut guard) = self.inner.lock() else {
            return false;
        };
        let inner = &mut *guard;
        inner.scratch.clear();
        inner.scratch.push_str(source);
        inner.scratch.push('\0');
        inner.scratch.push_str(event_id);
        if let Some(c) = inner.counts.get_mut(inner.scratch.as_str()) {
            c.count = c.count.saturating_add(1);
            c.last = c.last.max(now);
            c.max = max;
            return true;
        }
        if inner.counts.len() >= CAPACITY {
            return false;
        }
        let name = inner.scratch.clone();
        inner.counts.insert(
            name,
            Counted {
                prefix: prefix.to_owned(),
                max,
                count: 1,
                first: now,
                last: now,
            },
        );
        true
    }

    /// Everything counted since the last take, as one note per event.
    pub fn take(&self) -> Vec<Note> {
        let counts = match self.inner.lock() {
            Ok(mut inner) => std::mem::take(&mut inner.counts),
            Err(_) => return Vec::new(),
        };
        counts
            .into_iter()
            .map(|(name, c)| {
                let (source, event_id) = name.split_once('\0').unwrap_or((&name, ""));
                Note {
                    prefix: c.prefix,
                    source: source.to_owned(),
                    event_id: event_id.to_owned(),
                    facts: vec![one(c.count, c.first, c.last)],
                    max: c.max,
                }
            })
            .collect()
    }

    /// Counts one duplicate ([`Tally::add`]) and makes sure a task hands
    /// what was counted to a writer every [`FLUSH`]: the first count starts
    /// it with the writer `writer()` makes, which it keeps until the writer
    /// answers `false` (its store is gone). When the tally is full, the
    /// copy is handed to a writer of its own at once, as a note of one.
    /// Outside a runtime nothing starts, and [`Tally::take`] is the only way
    /// out. Every durable engine counts its duplicates through this.
    pub fn count<W>(
        self: &Arc<Self>,
        (prefix, source, event_id): (&str, &str, &str),
        max: usize,
        now: i64,
        writer: impl FnOnce() -> W,
    ) where
        W: Fn(Note) -> bool + Send + 'static,
    {
        if !self.add(prefix, source, event_id, max, now) {
            writer()(Note {
                prefix: prefix.to_owned(),
                source: source.to_owned(),
                event_id: event_id.to_owned(),
                facts: vec![one(1, now, now)],
                max,
            });
            return;
        }
        if self.started.get().is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
            && self.started.set(()).is_ok()
        {
            let write = writer();
            let tally = Arc::downgrade(self);
            runtime.spawn(async move {
                let mut tick = tokio::time::interval(FLUSH);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(tally) = tally.upgrade() else { return };
                    for note in tally.take() {
                        if !write(note) {
                            return;
                        }
                    }
                }
            });
        }
    }
}

/// The fact for `count` copies, the first and last at these times.
pub fn one(count: u64, first: i64, last: i64) -> Fact {
    Fact::Duplicates { count, first, last }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_of_one_event_are_one_note_with_their_count_and_times() {
        let tally = Tally::default();
        for n in 0..1_000 {
            assert!(tally.add("p", "github", "d1", 10, 5_000 + n));
        }
        assert!(tally.add("p", "github", "d2", 10, 9_000));
        let mut notes = tally.take();
        notes.sort_by(|a, b| a.event_id.cmp(&b.event_id));
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].facts, vec![one(1_000, 5_000, 5_999)]);
        assert_eq!(notes[0].source, "github");
        assert_eq!(notes[1].facts, vec![one(1, 9_000, 9_000)]);
        assert!(tally.take().is_empty(), "taken once");
    }

    #[test]
    fn a_full_tally_hands_new_events_back_and_keeps_counting_those_it_holds() {
        let tally = Tally::default();
        for n in 0..CAPACITY {
            assert!(tally.add("p", "s", &format!("e{n}"), 10, 1));
        }
        assert!(!tally.add("p", "s", "one-more", 10, 2));
        assert!(tally.add("p", "s", "e0", 10, 3));
        let notes = tally.take();
        assert_eq!(notes.len(), CAPACITY);
        assert!(tally.add("p", "s", "one-more", 10, 4), "room again");
    }
}
