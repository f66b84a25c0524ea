//! Pauses and breaker state on the memory store (DESIGN §6a): kept in the
//! process, as everything on this engine is, and gone at a restart. Both
//! are keyed by source name, which the config bounds.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::store::Paused;

#[derive(Default)]
pub struct Held {
    paused: Mutex<BTreeMap<String, Paused>>,
    breakers: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").finish_non_exhaustive()
    }
}

impl Held {
    pub fn pause(&self, source: &str, paused: &Paused) {
        if let Ok(mut map) = self.paused.lock() {
            map.insert(source.to_owned(), paused.clone());
        }
    }

    /// Whether `source` was paused.
    pub fn resume(&self, source: &str) -> bool {
        self.paused
            .lock()
            .is_ok_and(|mut map| map.remove(source).is_some())
    }

    pub fn paused(&self) -> Vec<(String, Paused)> {
        self.paused
            .lock()
            .map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    pub fn breaker_get(&self, source: &str) -> Option<String> {
        self.breakers.lock().ok()?.get(source).cloned()
    }

    /// Stores `new` if `source`'s state is still `old` (`None`: absent).
    pub fn breaker_swap(&self, source: &str, old: Option<&str>, new: &str) -> bool {
        let Ok(mut map) = self.breakers.lock() else {
            return false;
        };
        if map.get(source).map(String::as_str) != old {
            return false;
        }
        map.insert(source.to_owned(), new.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_breaker_swap_takes_only_the_state_it_read() {
        let held = Held::default();
        assert!(held.breaker_swap("a", None, "1"));
        assert!(!held.breaker_swap("a", None, "2"));
        assert!(!held.breaker_swap("a", Some("0"), "2"));
        assert!(held.breaker_swap("a", Some("1"), "2"));
        assert_eq!(held.breaker_get("a").as_deref(), Some("2"));
        assert_eq!(held.breaker_get("b"), None);
    }

    #[test]
    fn a_pause_is_listed_until_resumed() {
        let held = Held::default();
        let paused = Paused {
            by: "console".into(),
            reason: None,
            since_ms: 1,
        };
        assert!(!held.resume("a"));
        held.pause("a", &paused);
        assert_eq!(held.paused(), vec![("a".to_owned(), paused)]);
        assert!(held.resume("a"));
        assert!(held.paused().is_empty());
    }
}
