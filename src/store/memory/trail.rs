//! The memory store's trail: the most recent events, each kept as its
//! [`Summary`] (bounded, and updated in place by each fact).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::trail::{Cursor, Fact, Stored, Summary};

/// An event's name, `{source}\0{event_id}`: one allocation shared by the
/// map and the order. A source name holds no NUL, so these names sort as
/// `(source, event_id)` pairs do.
type Name = Arc<str>;

/// How far from the newest end an arrival is placed by its received time;
/// one that sorts further back (a clock stepped back) is placed last, just
/// after the newest, so an insert never moves more than this many entries.
const NEAR_THE_END: usize = 16;

fn name(source: &str, event_id: &str) -> String {
    let mut name = String::with_capacity(source.len() + 1 + event_id.len());
    name_into(&mut name, source, event_id);
    name
}

fn name_into(name: &mut String, source: &str, event_id: &str) {
    name.clear();
    name.push_str(source);
    name.push('\0');
    name.push_str(event_id);
}

fn parts(name: &str) -> (&str, &str) {
    name.split_once('\0').unwrap_or((name, ""))
}

#[derive(Debug, Default)]
pub struct Trail {
    inner: Mutex<Inner>,
}

/// The events by name, and their order. Only verified events reach the
/// trail, and the map's hasher is seeded per process.
#[derive(Debug, Default)]
struct Inner {
    events: HashMap<Name, Summary, foldhash::fast::RandomState>,
    /// `(received_ms, name)`, ascending: the order events are listed and
    /// dropped in, and the time a cursor names. Arrivals come near the
    /// newest end, so a ring of them takes an insert at its back and a
    /// drop at its front. The time is the `Received` fact's, except for an
    /// arrival placed last ([`NEAR_THE_END`]): the newest time plus 1 ms
    /// (its facts keep the time it came with).
    order: VecDeque<(i64, Name)>,
    /// The name being looked up, built here so a lookup allocates nothing.
    scratch: String,
}

impl Inner {
    /// Where an event received at `at` goes in `order`, and the time it is
    /// ordered by.
    fn place(&self, at: i64, key: &str) -> (usize, i64) {
        let mut pos = self.order.len();
        for _ in 0..NEAR_THE_END {
            match pos.checked_sub(1).and_then(|p| self.order.get(p)) {
                Some((held_at, held)) if (*held_at, &**held) > (at, key) => pos -= 1,
                _ => return (pos, at),
            }
        }
        let newest = self.order.back().map_or(at, |(newest, _)| *newest);
        (self.order.len(), newest.saturating_add(1))
    }
}

impl Trail {
    /// Applies `facts` to their event; an event not yet held is taken only
    /// from a `Received` fact, and the oldest go beyond `max`.
    pub fn append(&self, source: &str, event_id: &str, facts: Vec<Fact>, max: usize) {
        let Ok(mut guard) = self.inner.lock() else {
            return;
        };
        let inner = &mut *guard;
        name_into(&mut inner.scratch, source, event_id);
        if let Some(held) = inner.events.get_mut(inner.scratch.as_str()) {
            for fact in facts {
                held.apply(fact);
            }
            return;
        }
        let Some(summary) = Summary::fold(facts) else {
            return;
        };
        let (pos, at) = inner.place(summary.at, &inner.scratch);
        let key: Name = Arc::from(inner.scratch.as_str());
        inner.order.insert(pos, (at, Arc::clone(&key)));
        inner.events.insert(key, summary);
        while inner.order.len() > max {
            let Some((_, oldest)) = inner.order.pop_front() else {
                break;
            };
            inner.events.remove(&oldest);
        }
    }

    /// Counts one duplicate answered at `now` for an event held.
    pub fn duplicate(&self, source: &str, event_id: &str, now: i64) {
        let Ok(mut guard) = self.inner.lock() else {
            return;
        };
        let inner = &mut *guard;
        name_into(&mut inner.scratch, source, event_id);
        if let Some(held) = inner.events.get_mut(inner.scratch.as_str()) {
            held.apply(crate::trail::tally::one(1, now, now));
        }
    }

    pub fn get(&self, source: &str, event_id: &str) -> Option<Summary> {
        let key = name(source, event_id);
        let inner = self.inner.lock().ok()?;
        inner.events.get(key.as_str()).cloned()
    }

    /// Up to `count` events received before `before`, newest first.
    pub fn scan(&self, before: Option<&Cursor>, count: usize) -> Vec<Stored> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        let end = match before {
            Some(c) => {
                let upper = name(&c.source, &c.event_id);
                inner
                    .order
                    .partition_point(|(at, key)| (*at, &**key) < (c.received_ms, upper.as_str()))
            }
            None => inner.order.len(),
        };
        inner
            .order
            .range(..end)
            .rev()
            .take(count)
            .filter_map(|(at, key)| {
                let summary = inner.events.get(key)?;
                let (source, event_id) = parts(key);
                Some(Stored {
                    source: source.to_owned(),
                    event_id: event_id.to_owned(),
                    received_ms: *at,
                    summary: summary.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trail::State;

    fn received(at: i64) -> Vec<Fact> {
        vec![Fact::Received {
            at,
            replica: "r".into(),
            event_type: None,
            signed_at: None,
            state: State::InFlight,
            nonce_id: None,
        }]
    }

    fn listed(trail: &Trail, before: Option<&Cursor>, count: usize) -> Vec<(i64, String)> {
        trail
            .scan(before, count)
            .into_iter()
            .map(|s| (s.received_ms, s.event_id))
            .collect()
    }

    /// Arrivals a little out of order are listed by their received time,
    /// newest first, and dropped oldest first.
    #[test]
    fn events_are_kept_in_received_order_whatever_order_they_arrive_in() {
        let trail = Trail::default();
        let mut ats: Vec<i64> = (0..40).map(|n| 1_000 + n * 10).collect();
        ats.swap(30, 31);
        ats.swap(35, 38);
        ats.swap(20, 34); // 14 places behind: still placed by its time
        for at in &ats {
            trail.append("s", &format!("e{at}"), received(*at), 100);
        }
        let got: Vec<i64> = listed(&trail, None, 100)
            .iter()
            .map(|(at, _)| *at)
            .collect();
        let mut want = ats.clone();
        want.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(got, want);

        // Beyond the bound the oldest go, wherever they arrived.
        for n in 0..70 {
            trail.append("s", &format!("late{n}"), received(2_000 + n), 100);
        }
        let kept = listed(&trail, None, 1_000);
        assert_eq!(kept.len(), 100);
        assert_eq!(kept.last().map(|(at, _)| *at), Some(1_100));
        assert!(trail.get("s", "e1090").is_none(), "the oldest went");
        assert!(trail.get("s", "e1390").is_some());
    }

    /// An arrival far behind the newest (a clock stepped back) is placed
    /// last, ordered 1 ms after the newest, and its facts keep its time.
    #[test]
    fn an_arrival_far_behind_the_newest_is_placed_last() {
        let trail = Trail::default();
        for n in 0..40 {
            trail.append("s", &format!("e{n:02}"), received(10_000 + n), 100);
        }
        trail.append("s", "stepped", received(5_000), 100);
        trail.append("s", "after", received(5_001), 100);
        let want: Vec<(i64, String)> = vec![
            (10_041, "after".into()),
            (10_040, "stepped".into()),
            (10_039, "e39".into()),
        ];
        assert_eq!(listed(&trail, None, 3), want);
        let held = trail.get("s", "stepped").expect("held");
        assert_eq!(held.at, 5_000);
    }
    /// A cursor names the last event of a page; the next page starts
    /// right after it, ties in time ordered by name.
    #[test]
    fn pages_follow_a_cursor_without_repeating_or_skipping() {
        let trail = Trail::default();
        for n in 0..25 {
            trail.append("s", &format!("e{n:02}"), received(1_000 + n / 5), 100);
        }
        let mut seen = Vec::new();
        let mut cursor: Option<Cursor> = None;
        loop {
            let page = trail.scan(cursor.as_ref(), 7);
            let Some(last) = page.last() else { break };
            cursor = Some(Cursor {
                received_ms: last.received_ms,
                source: last.source.clone(),
                event_id: last.event_id.clone(),
            });
            seen.extend(page.into_iter().map(|s| s.event_id));
        }
        let want: Vec<String> = (0..25).rev().map(|n| format!("e{n:02}")).collect();
        assert_eq!(seen, want);
    }

    /// Facts of an event held are applied to it; facts of an event not
    /// held start nothing without its arrival.
    #[test]
    fn later_facts_join_their_event_and_never_start_one() {
        let trail = Trail::default();
        trail.append("s", "e1", received(1), 10);
        trail.append("s", "e1", vec![Fact::Duplicate], 10);
        trail.duplicate("s", "e1", 7);
        trail.append("s", "e2", vec![Fact::Duplicate], 10);
        trail.duplicate("s", "e2", 7);
        assert_eq!(trail.get("s", "e1").map(|s| s.duplicates), Some(2));
        assert_eq!(
            trail.get("s", "e1").and_then(|s| s.last_duplicate_at),
            Some(7)
        );
        assert!(trail.get("s", "e2").is_none());
        assert_eq!(listed(&trail, None, 10).len(), 1);
    }
}
