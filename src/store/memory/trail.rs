//! The memory store's trail: the most recent events' facts, in the process.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use crate::trail::{Cursor, Fact, Stored};

/// `(received_ms, source, event_id)`: the order events are listed in.
type Key = (i64, String, String);

#[derive(Debug, Default)]
pub struct Trail {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    events: HashMap<(String, String), (i64, Vec<Fact>)>,
    order: BTreeSet<Key>,
}

impl Trail {
    /// Appends `facts`; an event not yet held is taken only from a
    /// `Received` fact, and the oldest go beyond `max`.
    pub fn append(&self, source: &str, event_id: &str, facts: Vec<Fact>, max: usize) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let key = (source.to_owned(), event_id.to_owned());
        if let Some((_, held)) = inner.events.get_mut(&key) {
            held.extend(facts);
            return;
        }
        let Some(at) = facts.iter().find_map(|f| match f {
            Fact::Received { at, .. } => Some(*at),
            _ => None,
        }) else {
            return;
        };
        inner.order.insert((at, key.0.clone(), key.1.clone()));
        inner.events.insert(key, (at, facts));
        while inner.order.len() > max {
            let Some(oldest) = inner.order.pop_first() else {
                break;
            };
            inner.events.remove(&(oldest.1, oldest.2));
        }
    }

    pub fn get(&self, source: &str, event_id: &str) -> Option<Vec<Fact>> {
        let inner = self.inner.lock().ok()?;
        inner
            .events
            .get(&(source.to_owned(), event_id.to_owned()))
            .map(|(_, facts)| facts.clone())
    }

    /// Up to `count` events received before `before`, newest first.
    pub fn scan(&self, before: Option<&Cursor>, count: usize) -> Vec<Stored> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        let upper: Option<Key> =
            before.map(|c| (c.received_ms, c.source.clone(), c.event_id.clone()));
        let range = match &upper {
            Some(k) => inner.order.range(..k.clone()),
            None => inner.order.range(..),
        };
        range
            .rev()
            .take(count)
            .filter_map(|(at, source, id)| {
                let (_, facts) = inner.events.get(&(source.clone(), id.clone()))?;
                Some(Stored {
                    source: source.clone(),
                    event_id: id.clone(),
                    received_ms: *at,
                    facts: facts.clone(),
                })
            })
            .collect()
    }
}
