//! The memory store's trail: the most recent events' facts, in the process.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::trail::{Cursor, Fact, Stored};

/// An event's name, `{source}\0{event_id}`: one allocation shared by the
/// map and the order. A source name holds no NUL, so these names sort as
/// `(source, event_id)` pairs do.
type Name = Arc<str>;

fn name(source: &str, event_id: &str) -> String {
    let mut name = String::with_capacity(source.len() + 1 + event_id.len());
    name.push_str(source);
    name.push('\0');
    name.push_str(event_id);
    name
}

fn parts(name: &str) -> (&str, &str) {
    name.split_once('\0').unwrap_or((name, ""))
}

#[derive(Debug, Default)]
pub struct Trail {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    events: HashMap<Name, (i64, Vec<Fact>)>,
    /// `(received_ms, name)`: the order events are listed in.
    order: BTreeSet<(i64, Name)>,
}

impl Trail {
    /// Appends `facts`; an event not yet held is taken only from a
    /// `Received` fact, and the oldest go beyond `max`.
    pub fn append(&self, source: &str, event_id: &str, facts: Vec<Fact>, max: usize) {
        let key = name(source, event_id);
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if let Some((_, held)) = inner.events.get_mut(key.as_str()) {
            held.extend(facts);
            return;
        }
        let Some(at) = facts.iter().find_map(|f| match f {
            Fact::Received { at, .. } => Some(*at),
            _ => None,
        }) else {
            return;
        };
        let key: Name = key.into();
        inner.order.insert((at, Arc::clone(&key)));
        inner.events.insert(key, (at, facts));
        while inner.order.len() > max {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            inner.events.remove(&oldest);
        }
    }

    pub fn get(&self, source: &str, event_id: &str) -> Option<Vec<Fact>> {
        let key = name(source, event_id);
        let inner = self.inner.lock().ok()?;
        inner
            .events
            .get(key.as_str())
            .map(|(_, facts)| facts.clone())
    }

    /// Up to `count` events received before `before`, newest first.
    pub fn scan(&self, before: Option<&Cursor>, count: usize) -> Vec<Stored> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        let upper: Option<(i64, Name)> =
            before.map(|c| (c.received_ms, name(&c.source, &c.event_id).into()));
        let range = match upper {
            Some(k) => inner.order.range(..k),
            None => inner.order.range(..),
        };
        range
            .rev()
            .take(count)
            .filter_map(|(at, key)| {
                let (_, facts) = inner.events.get(key)?;
                let (source, event_id) = parts(key);
                Some(Stored {
                    source: source.to_owned(),
                    event_id: event_id.to_owned(),
                    received_ms: *at,
                    facts: facts.clone(),
                })
            })
            .collect()
    }
}
