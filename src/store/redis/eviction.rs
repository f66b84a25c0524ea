//! Whether the Redis behind the store may evict hookgate's keys.
//!
//! Every `maxmemory-policy` but `noeviction` lets Redis drop hookgate's keys
//! under memory pressure. Every nonce (and every version of the gate) has a
//! TTL, so the `volatile-*` policies drop them as readily as the `allkeys-*`
//! ones (several managed services default to `volatile-lru`): a nonce dropped
//! early lets a sender's retry through to the app a second time. The
//! `allkeys-*` policies may also drop the queue streams and the dead letters,
//! which have no TTL: events answered `200 queued` and never delivered. With
//! `noeviction` a full Redis refuses writes instead, which hookgate reports as
//! `503 store_unavailable` and the sender retries.
//!
//! The policy and the eviction count come from `INFO memory`
//! (`maxmemory_policy`) and `INFO stats` (`evicted_keys`): managed services
//! that disable `CONFIG GET` still answer `INFO`. On a cluster `INFO` goes to
//! every master the client knows, on Sentinel to the current primary.
//!
//! [`watch`] reads both at start and then every period. Reading again on a
//! timer is what covers a reconnect, a failover to a node set up otherwise
//! and a `CONFIG SET` at runtime alike: the log says so whenever the set of
//! policies changes (the first reading included), not on every reading.

use std::collections::BTreeSet;
use std::time::Duration;

use redis::Value;
use tokio_util::sync::CancellationToken;

use super::RedisStore;
use crate::store::Error;

/// The one policy that never evicts.
pub const NOEVICTION: &str = "noeviction";

/// What the store's servers said about eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// Each distinct `maxmemory_policy` among the nodes asked, sorted.
    pub policies: BTreeSet<String>,
    /// Their `evicted_keys`, summed (counted since each server started).
    pub evicted_keys: i64,
}

impl Eviction {
    /// Whether some node may evict keys: any policy but `noeviction`.
    pub fn evicting(&self) -> bool {
        self.policies.iter().any(|p| p != NOEVICTION)
    }

    /// The policies as one string for a log line: `volatile-lru`, or
    /// `allkeys-lru, noeviction` when a cluster's masters differ.
    pub fn policy(&self) -> String {
        self.policies
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The warning for an evicting store, with what to do about it.
    pub fn warning(&self) -> String {
        let any_key = self.policies.iter().any(|p| p.starts_with("allkeys-"));
        format!(
            "the Redis store may evict hookgate's keys (maxmemory-policy {}): under memory \
             pressure it forgets nonces, so a sender's retry reaches the app again{}; set \
             maxmemory-policy noeviction",
            self.policy(),
            if any_key {
                ", and queued events and dead letters can vanish"
            } else {
                ""
            }
        )
    }
}

/// Asks the store's servers for their policy and eviction count (two
/// commands, each under the store's command timeout).
pub async fn read(store: &RedisStore) -> Result<Eviction, Error> {
    let memory: Value = store.query(redis::cmd("INFO").arg("memory")).await?;
    let stats: Value = store.query(redis::cmd("INFO").arg("stats")).await?;
    let mut policies = BTreeSet::new();
    for text in texts(memory)? {
        match field(&text, "maxmemory_policy") {
            Some(policy) => {
                policies.insert(policy.to_owned());
            }
            None => return Err(unreadable("INFO memory has no maxmemory_policy")),
        }
    }
    let mut evicted_keys: i64 = 0;
    for text in texts(stats)? {
        let count = field(&text, "evicted_keys")
            .and_then(|n| n.parse::<i64>().ok())
            .ok_or_else(|| unreadable("INFO stats has no evicted_keys"))?;
        evicted_keys = evicted_keys.saturating_add(count);
    }
    if policies.is_empty() {
        return Err(unreadable("no node answered INFO"));
    }
    Ok(Eviction {
        policies,
        evicted_keys,
    })
}

/// Reads the store's eviction state now and every `every` until `shutdown`,
/// hands each reading to `report` (the gauges), and logs when the policies
/// differ from the last ones logged: a warning while some node may evict, a
/// note when none may any more. A reading that fails is logged once per run
/// of failures and leaves the last values in place.
pub async fn watch(
    store: RedisStore,
    every: Duration,
    shutdown: CancellationToken,
    report: impl Fn(&Eviction) + Send,
) {
    let mut logged: Option<BTreeSet<String>> = None;
    let mut failing = false;
    loop {
        match read(&store).await {
            Ok(seen) => {
                failing = false;
                report(&seen);
                if logged.as_ref() != Some(&seen.policies) {
                    if seen.evicting() {
                        tracing::warn!(policy = %seen.policy(), "{}", seen.warning());
                    } else if logged.is_some() {
                        tracing::info!(
                            policy = %seen.policy(),
                            "the Redis store no longer evicts keys (maxmemory-policy noeviction)"
                        );
                    }
                    logged = Some(seen.policies);
                }
            }
            Err(e) if !failing => {
                failing = true;
                tracing::info!(
                    error = %e,
                    every_s = every.as_secs(),
                    "cannot read the Redis store's eviction policy (INFO memory); trying again"
                );
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// The INFO texts in a reply: one from a single node, one per node (a map
/// from its address) from a cluster.
fn texts(reply: Value) -> Result<Vec<String>, Error> {
    match reply {
        Value::Map(nodes) => nodes
            .into_iter()
            .map(|(_, reply)| text(reply))
            .collect::<Result<Vec<_>, _>>(),
        reply => text(reply).map(|t| vec![t]),
    }
}

fn text(reply: Value) -> Result<String, Error> {
    match reply {
        Value::BulkString(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Ok(s),
        Value::ServerError(e) => Err(Error::Unavailable(format!("INFO refused: {e:?}"))),
        other => Err(unreadable(&format!("unexpected INFO reply {other:?}"))),
    }
}

/// The value of `name` in an INFO text (`name:value` lines).
fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .filter_map(|line| line.trim_end_matches('\r').split_once(':'))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

fn unreadable(why: &str) -> Error {
    Error::Unavailable(format!("cannot read the eviction policy: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMORY: &str = "# Memory\r\nused_memory:1024\r\nmaxmemory:0\r\n\
                          maxmemory_policy:volatile-lru\r\nallocator_frag_ratio:1.0\r\n";
    const STATS: &str = "# Stats\r\ntotal_connections_received:3\r\nevicted_keys:17\r\n\
                         evicted_clients:0\r\n";

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn fields_are_read_by_exact_name() {
        assert_eq!(field(MEMORY, "maxmemory_policy"), Some("volatile-lru"));
        assert_eq!(field(MEMORY, "maxmemory"), Some("0"));
        assert_eq!(field(STATS, "evicted_keys"), Some("17"));
        assert_eq!(field(STATS, "evicted"), None);
    }

    #[test]
    fn a_cluster_answers_one_text_per_master() {
        let reply = Value::Map(vec![
            (bulk("127.0.0.1:7000"), bulk(STATS)),
            (bulk("127.0.0.1:7001"), bulk("evicted_keys:3\r\n")),
        ]);
        let answers = texts(reply).expect("two texts");
        assert_eq!(answers.len(), 2);
        assert_eq!(field(&answers[1], "evicted_keys"), Some("3"));
        assert!(texts(Value::Map(vec![(bulk("a"), Value::Nil)])).is_err());
    }

    #[test]
    fn every_policy_but_noeviction_evicts() {
        let of = |policies: &[&str]| Eviction {
            policies: policies.iter().map(|p| (*p).to_owned()).collect(),
            evicted_keys: 0,
        };
        assert!(!of(&["noeviction"]).evicting());
        for policy in [
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
        ] {
            assert!(of(&[policy]).evicting(), "{policy}");
            assert!(of(&[policy]).warning().contains(policy));
        }
        assert!(!of(&["volatile-lru"]).warning().contains("queued"));
        let mixed = of(&["noeviction", "allkeys-lru"]);
        assert!(mixed.evicting());
        assert!(
            mixed
                .warning()
                .contains("queued events and dead letters can vanish")
        );
        assert_eq!(mixed.policy(), "allkeys-lru, noeviction");
        assert!(mixed.warning().contains("set maxmemory-policy noeviction"));
    }
}
