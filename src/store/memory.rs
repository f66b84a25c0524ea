//! The embedded store: one process, one map, bounded.
//!
//! A `std::sync::Mutex` guards the map and its expiry index; nothing awaits while
//! holding it, so every operation is a short critical section. An entry past its
//! deadline counts as absent at once; a purge task removes it later, woken by a
//! `Notify` when an earlier deadline appears, and stops when the store is dropped.
//!
//! Keys and tokens are kept as 128-bit prefixes of their salted SHA-256
//! digests (the salt is random per store, so no sender can aim event ids at
//! one slot of the table, and the table folds a digest's two halves
//! instead of running SipHash over it again) and
//! deadlines as milliseconds since the store was built, so an entry has a fixed
//! size whatever the length of the source name or event id: 40 bytes in the
//! map plus 24 in the expiry index. An entry's 16 bytes of data are read by
//! what its key is for: a nonce holds its lease holder's token digest or
//! `DONE`, a version key its version. (The key prefixes keep the two
//! apart; nothing needs to tag them.) A digest collision would need about
//! 2^64 live keys.
//!
//! The store is bounded by `max_entries`. When it is full, expired entries are
//! purged first; if it is still full, `claim` fails with [`Error::Full`] rather
//! than evict anything: forgetting a `done` event would let a retry through.
//!
//! No source can fill the store for the others: the nonces of one source
//! (the `{source}` of `{prefix}:nonce:{source}:{id}`, DESIGN §4) hold at most
//! `per_source` entries; past that, that source's claims fail while the
//! others' still succeed. The owner rides in the top 16 bits of an entry's
//! deadline, so the bound costs no memory per entry.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError, Weak};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{Claim, Error, VERSION_TTL};

pub mod held;
pub mod stats;
pub mod trail;

/// The first 16 bytes of a SHA-256 digest: a fixed-size stand-in for a key or token.
type Digest = [u8; 16];

/// Milliseconds since the store's epoch (its creation): half the size of an `Instant`.
type Millis = u64;

/// Random per store, hashed in front of every key and token.
type Salt = [u8; 16];

fn digest(salt: &Salt, s: &str) -> Digest {
    let full = Sha256::new()
        .chain_update(salt)
        .chain_update(s.as_bytes())
        .finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// Hashes a [`Digest`] by folding its two 8-byte halves. The digests are salted SHA-256
/// outputs, uniform and unknown to any sender, so they need no further mixing
/// (SipHash over them was six calls a request in the profile).
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // A `Digest` arrives as one 16-byte write; fold anything else in too,
        // so the hasher stays a hash whatever it is handed.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(29) ^ u64::from_le_bytes(word);
        }
    }

    /// The length prefix of a slice: every key is 16 bytes, so it says nothing.
    fn write_usize(&mut self, _: usize) {}
}

type Entries = HashMap<Digest, Entry, BuildHasherDefault<DigestHasher>>;

/// The memory backend. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct MemoryStore {
    shared: Arc<Shared>,
    /// Wakes the purge task. Kept outside `Shared` so the task can wait on it
    /// without keeping the store alive.
    wake: Arc<Notify>,
    /// Spawns the purge task on first use (inside the runtime that uses the store).
    purge_started: Once,
    /// The event trail (DESIGN §7a), kept in the process like everything else here.
    pub trail: trail::Trail,
    /// The console's chart counts (DESIGN §7b).
    pub stats: stats::Kept,
    /// Pauses and breaker state (DESIGN §6a).
    pub held: held::Held,
}

struct Shared {
    state: Mutex<State>,
    salt: Salt,
    max_entries: usize,
    /// Most nonces one source may hold.
    per_source: usize,
    /// The zero of every [`Millis`] deadline.
    epoch: Instant,
}

impl Shared {
    fn now(&self) -> Millis {
        millis(self.epoch.elapsed())
    }

    fn digest(&self, s: &str) -> Digest {
        digest(&self.salt, s)
    }
}

#[derive(Default)]
struct State {
    entries: Entries,
    /// Deadlines in order, so the purge finds expired entries without a scan.
    expiries: BTreeSet<(Millis, Digest)>,
    /// When the purge task will next wake on its own; `None` while it waits for
    /// a notification only. An insert with an earlier deadline wakes it.
    next_wake: Option<Millis>,
    /// The sources seen (index = owner; 0 is "no source": version and lock
    /// keys) and how many live entries each holds.
    owners: Vec<(Box<str>, usize)>,
}

/// 24 bytes: with its 16-byte key, 40 bytes a slot in the hash table (a
/// tagged enum here would make it 48, 17% more memory per nonce).
#[derive(Clone, Copy)]
struct Entry {
    /// The owner in the top [`OWNER_BITS`], the deadline below them.
    stamp: u64,
    value: Value,
}

const OWNER_BITS: u32 = 16;
const DEADLINE_MASK: u64 = (1 << (64 - OWNER_BITS)) - 1;

impl Entry {
    fn new(owner: u16, expires_at: Millis, value: Value) -> Entry {
        Entry {
            stamp: u64::from(owner) << (64 - OWNER_BITS) | (expires_at & DEADLINE_MASK),
            value,
        }
    }

    fn expires_at(&self) -> Millis {
        self.stamp & DEADLINE_MASK
    }

    fn owner(&self) -> usize {
        usize::from((self.stamp >> (64 - OWNER_BITS)) as u16)
    }
}

/// The source a nonce key belongs to, by the layout of DESIGN §4; `None`
/// for any other key.
fn source_of(key: &str) -> Option<&str> {
    let (_, rest) = key.split_once(":nonce:")?;
    rest.split_once(':').map(|(source, _)| source)
}

/// A nonce's lease holder (its token's digest) or [`DONE`]; a version key's
/// version, little-endian.
type Value = [u8; 16];

/// The value of a nonce the app accepted. A token digest equal to it would
/// take a 2^-128 chance.
const DONE: Value = [0xff; 16];

impl MemoryStore {
    /// A store holding at most `max_entries` live entries (nonces and versions).
    pub fn new(max_entries: usize) -> Self {
        Self::shared_by(max_entries, max_entries)
    }

    /// A store of `max_entries` in which one source's nonces hold at most `per_source`.
    pub fn shared_by(max_entries: usize, per_source: usize) -> Self {
        MemoryStore {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    owners: vec![(Box::from(""), 0)],
                    ..State::default()
                }),
                salt: rand::random(),
                max_entries,
                per_source: per_source.clamp(1, max_entries.max(1)),
                epoch: Instant::now(),
            }),
            wake: Arc::new(Notify::new()),
            purge_started: Once::new(),
            trail: trail::Trail::default(),
            stats: stats::Kept::default(),
            held: held::Held::default(),
        }
    }

    /// Number of entries held, expired ones not yet purged included.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// The most entries it holds (`memory_max_entries`): claims fail beyond it.
    pub fn capacity(&self) -> usize {
        self.shared.max_entries
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tries to take `key` for `lease`, holding `token`. An expired entry is absent.
    pub async fn claim(&self, key: &str, token: &str, lease: Duration) -> Result<Claim, Error> {
        let now = self.shared.now();
        let source = source_of(key);
        let key = self.shared.digest(key);
        let mut state = self.lock();
        let owner = state.owner(source);
        match state.live(&key, now) {
            Some(DONE) => Ok(Claim::Done),
            // A version entry cannot share a nonce key (the prefixes differ); if it
            // ever did, refusing is the safe answer.
            Some(_) => Ok(Claim::InFlight),
            None => {
                let entry = Entry::new(owner, deadline(now, lease), self.shared.digest(token));
                self.insert(&mut state, key, entry, now)?;
                Ok(Claim::Fresh)
            }
        }
    }

    /// Marks `key` done for `ttl`, whoever holds it (see [`super::Store::commit`]).
    pub async fn commit(&self, key: &str, ttl: Duration) -> Result<(), Error> {
        let now = self.shared.now();
        let source = source_of(key);
        let key = self.shared.digest(key);
        let mut state = self.lock();
        let owner = state.owner(source);
        let entry = Entry::new(owner, deadline(now, ttl), DONE);
        self.insert(&mut state, key, entry, now)
    }

    /// Deletes `key` if it holds `token`.
    pub async fn release(&self, key: &str, token: &str) -> Result<(), Error> {
        let now = self.shared.now();
        let key = self.shared.digest(key);
        let token = self.shared.digest(token);
        let mut state = self.lock();
        if state.live(&key, now) == Some(token) {
            state.remove(&key);
        }
        Ok(())
    }

    /// What `key` holds now: done or in flight, and for how long still.
    pub async fn peek(&self, key: &str) -> Result<Option<(Claim, Duration)>, Error> {
        let now = self.shared.now();
        let key = self.shared.digest(key);
        let state = self.lock();
        Ok(state
            .entries
            .get(&key)
            .filter(|entry| entry.expires_at() > now)
            .map(|entry| {
                let left = Duration::from_millis(entry.expires_at().saturating_sub(now));
                let held = if entry.value == DONE {
                    Claim::Done
                } else {
                    Claim::InFlight
                };
                (held, left)
            }))
    }

    /// Always answers: the memory store cannot be unreachable.
    pub async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }

    /// The version stored under `key`, if any.
    pub async fn version_check(&self, key: &str) -> Result<Option<i128>, Error> {
        let now = self.shared.now();
        let key = self.shared.digest(key);
        let state = self.lock();
        Ok(state.live(&key, now).map(i128::from_le_bytes))
    }

    /// Stores `version` under `key` if nothing, or a lower version, is stored.
    /// Returns whether it moved. Versions live for [`VERSION_TTL`].
    pub async fn version_advance(&self, key: &str, version: i128) -> Result<bool, Error> {
        let now = self.shared.now();
        let key = self.shared.digest(key);
        let mut state = self.lock();
        if let Some(bytes) = state.live(&key, now)
            && i128::from_le_bytes(bytes) >= version
        {
            return Ok(false);
        }
        let entry = Entry::new(0, deadline(now, VERSION_TTL), version.to_le_bytes());
        self.insert(&mut state, key, entry, now)?;
        Ok(true)
    }

    /// A panic while holding the lock cannot leave the map and index out of step
    /// (no code in the critical sections panics between the two updates), so a
    /// poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Inserts or replaces `key`, enforcing the bound, and wakes the purge task
    /// if this deadline is earlier than the one it sleeps towards.
    fn insert(
        &self,
        state: &mut State,
        key: Digest,
        entry: Entry,
        now: Millis,
    ) -> Result<(), Error> {
        let max = self.shared.max_entries;
        let per_source = self.shared.per_source;
        let owner = entry.owner();
        let over = |state: &State| {
            state.entries.len() >= max || (owner != 0 && state.owners[owner].1 >= per_source)
        };
        if over(state) && !state.entries.contains_key(&key) {
            state.purge_expired(now);
            if over(state) {
                return Err(Error::Full(max));
            }
        }
        // One lookup: the replaced entry (if any) says which deadline to drop.
        if let Some(old) = state.entries.insert(key, entry) {
            state.expiries.remove(&(old.expires_at(), key));
            state.owners[old.owner()].1 -= 1;
        }
        state.owners[owner].1 += 1;
        let expires_at = entry.expires_at();
        state.expiries.insert((expires_at, key));

        self.start_purge();
        if state.next_wake.is_none_or(|wake| expires_at < wake) {
            state.next_wake = Some(expires_at);
            self.wake.notify_one();
        }
        Ok(())
    }

    fn start_purge(&self) {
        self.purge_started.call_once(|| {
            let epoch = self.shared.epoch;
            tokio::spawn(purge_task(
                Arc::downgrade(&self.shared),
                self.wake.clone(),
                epoch,
            ));
        });
    }
}

impl Drop for MemoryStore {
    /// Wakes the purge task so it sees the store is gone and returns.
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("entries", &self.len())
            .field("max_entries", &self.shared.max_entries)
            .finish()
    }
}

impl State {
    /// The entry's value, unless it is missing or expired.
    fn live(&self, key: &Digest, now: Millis) -> Option<Value> {
        self.entries
            .get(key)
            .filter(|entry| entry.expires_at() > now)
            .map(|entry| entry.value)
    }

    fn remove(&mut self, key: &Digest) {
        if let Some(old) = self.entries.remove(key) {
            self.expiries.remove(&(old.expires_at(), *key));
            self.owners[old.owner()].1 -= 1;
        }
    }

    /// The owner index of `source` (0 for none), seen for the first time if
    /// need be. Past the owner bits' range, new sources share index 0.
    fn owner(&mut self, source: Option<&str>) -> u16 {
        let Some(source) = source else {
            return 0;
        };
        if let Some(i) = self.owners.iter().position(|(s, _)| &**s == source) {
            return u16::try_from(i).unwrap_or(0);
        }
        match u16::try_from(self.owners.len()) {
            Ok(i) => {
                self.owners.push((Box::from(source), 0));
                i
            }
            Err(_) => 0,
        }
    }

    /// Removes every expired entry; returns the next deadline, if any.
    fn purge_expired(&mut self, now: Millis) -> Option<Millis> {
        while let Some(&(when, key)) = self.expiries.first() {
            if when > now {
                return Some(when);
            }
            self.expiries.pop_first();
            if let Some(old) = self.entries.remove(&key) {
                self.owners[old.owner()].1 -= 1;
            }
        }
        None
    }
}

/// Sleeps until the earliest deadline (or a notification), purges, repeats.
/// Holds only a `Weak` between rounds, so dropping the store ends it.
async fn purge_task(shared: Weak<Shared>, wake: Arc<Notify>, epoch: Instant) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            let next = state.purge_expired(shared.now());
            state.next_wake = next;
            next
        };
        match next {
            Some(when) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(epoch + Duration::from_millis(when)) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// `now + d`, saturating instead of overflowing.
fn deadline(now: Millis, d: Duration) -> Millis {
    now.saturating_add(millis(d))
}

fn millis(d: Duration) -> Millis {
    Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_forty_bytes() {
        assert_eq!(std::mem::size_of::<(Digest, Entry)>(), 40);
    }

    const LEASE: Duration = Duration::from_secs(30);
    const TTL: Duration = Duration::from_secs(24 * 3600);

    #[test]
    fn nonce_keys_name_their_source() {
        assert_eq!(source_of("hookgate:nonce:stripe:evt_1"), Some("stripe"));
        assert_eq!(source_of("a:b:nonce:gh:x:y:z"), Some("gh"));
        assert_eq!(source_of("hookgate:ver:stripe:in_1"), None);
        assert_eq!(source_of("hookgate:nonce:stripe"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn one_source_cannot_fill_the_store_for_the_others() {
        let store = MemoryStore::shared_by(10, 5);
        for i in 0..5 {
            let key = format!("hg:nonce:flood:{i}");
            assert!(matches!(
                store.claim(&key, "t", LEASE).await,
                Ok(Claim::Fresh)
            ));
        }
        assert!(matches!(
            store.claim("hg:nonce:flood:5", "t", LEASE).await,
            Err(Error::Full(10))
        ));
        // A commit of a claimed key is no new entry.
        assert!(matches!(
            store.commit("hg:nonce:flood:0", TTL).await,
            Ok(())
        ));
        for i in 0..5 {
            let key = format!("hg:nonce:stripe:{i}");
            assert!(matches!(
                store.claim(&key, "t", LEASE).await,
                Ok(Claim::Fresh)
            ));
        }
        // Released and expired entries give their share back.
        assert!(matches!(
            store.release("hg:nonce:flood:1", "t").await,
            Ok(())
        ));
        assert!(matches!(
            store.claim("hg:nonce:flood:6", "t", LEASE).await,
            Ok(Claim::Fresh)
        ));
        tokio::time::advance(LEASE + Duration::from_secs(1)).await;
        assert!(matches!(
            store.claim("hg:nonce:flood:7", "t", LEASE).await,
            Ok(Claim::Fresh)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn claim_commit_and_duplicates() {
        let store = MemoryStore::new(10);
        assert_eq!(store.claim("k", "t1", LEASE).await.ok(), Some(Claim::Fresh));
        assert_eq!(
            store.claim("k", "t2", LEASE).await.ok(),
            Some(Claim::InFlight)
        );
        store.commit("k", TTL).await.ok();
        assert_eq!(store.claim("k", "t3", LEASE).await.ok(), Some(Claim::Done));
    }

    #[tokio::test(start_paused = true)]
    async fn expired_entry_is_absent_before_the_purge_runs() {
        let store = MemoryStore::new(10);
        store.claim("k", "t1", LEASE).await.ok();
        tokio::time::advance(LEASE).await;
        // At exactly the deadline the lease is over.
        assert_eq!(store.claim("k", "t2", LEASE).await.ok(), Some(Claim::Fresh));
    }

    #[tokio::test(start_paused = true)]
    async fn done_expires_after_ttl() {
        let store = MemoryStore::new(10);
        store.claim("k", "t1", LEASE).await.ok();
        store.commit("k", TTL).await.ok();
        tokio::time::advance(TTL - Duration::from_secs(1)).await;
        assert_eq!(store.claim("k", "t2", LEASE).await.ok(), Some(Claim::Done));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(store.claim("k", "t2", LEASE).await.ok(), Some(Claim::Fresh));
    }

    #[tokio::test(start_paused = true)]
    async fn release_needs_the_holding_token() {
        let store = MemoryStore::new(10);
        store.claim("k", "t1", LEASE).await.ok();
        store.release("k", "other").await.ok();
        assert_eq!(
            store.claim("k", "t2", LEASE).await.ok(),
            Some(Claim::InFlight)
        );
        store.release("k", "t1").await.ok();
        assert_eq!(store.claim("k", "t2", LEASE).await.ok(), Some(Claim::Fresh));
    }

    #[tokio::test(start_paused = true)]
    async fn release_does_not_undo_a_commit() {
        let store = MemoryStore::new(10);
        store.claim("k", "t1", LEASE).await.ok();
        store.commit("k", TTL).await.ok();
        // The holder's release no longer reopens it.
        store.release("k", "t1").await.ok();
        assert_eq!(store.claim("k", "t2", LEASE).await.ok(), Some(Claim::Done));
    }

    #[tokio::test(start_paused = true)]
    async fn commit_after_lease_expiry() {
        let store = MemoryStore::new(10);
        // Nobody took the key after the lease ran out: the commit still records it.
        store.claim("a", "t1", LEASE).await.ok();
        tokio::time::advance(LEASE + Duration::from_secs(1)).await;
        store.commit("a", TTL).await.ok();
        assert_eq!(store.claim("a", "t9", LEASE).await.ok(), Some(Claim::Done));

        // Another request took the key: the late commit still records the
        // event, and that request failing does not reopen it.
        store.claim("b", "t1", LEASE).await.ok();
        tokio::time::advance(LEASE + Duration::from_secs(1)).await;
        assert_eq!(store.claim("b", "t2", LEASE).await.ok(), Some(Claim::Fresh));
        store.commit("b", TTL).await.ok();
        store.release("b", "t2").await.ok();
        assert_eq!(store.claim("b", "t3", LEASE).await.ok(), Some(Claim::Done));
    }

    #[tokio::test(start_paused = true)]
    async fn full_store_fails_closed() {
        let store = MemoryStore::new(3);
        for key in ["a", "b", "c"] {
            assert_eq!(store.claim(key, "t", LEASE).await.ok(), Some(Claim::Fresh));
            store.commit(key, TTL).await.ok();
        }
        assert!(matches!(
            store.claim("d", "t", LEASE).await,
            Err(Error::Full(3))
        ));
        // Known keys still answer, and the done ones are not forgotten.
        assert_eq!(store.claim("a", "t", LEASE).await.ok(), Some(Claim::Done));
    }

    #[test]
    fn keys_are_digested_with_a_salt_of_each_store() {
        let (a, b) = (MemoryStore::new(1), MemoryStore::new(1));
        let key = "hookgate:nonce:github:evt_1";
        assert_eq!(a.shared.digest(key), a.shared.digest(key));
        assert_ne!(a.shared.digest(key), b.shared.digest(key));
        assert_ne!(a.shared.digest(key), digest(&[0; 16], key));
    }

    #[test]
    fn the_table_hash_of_a_digest_folds_its_two_halves() {
        use std::hash::BuildHasher;
        let built = BuildHasherDefault::<DigestHasher>::default();
        let key: Digest = *b"0123456789abcdef";
        assert_eq!(
            built.hash_one(key),
            u64::from_le_bytes(*b"01234567").rotate_left(29) ^ u64::from_le_bytes(*b"89abcdef")
        );
        assert_ne!(built.hash_one(key), built.hash_one(*b"0123456789abcdeF"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_store_purges_expired_entries_to_make_room() {
        let store = MemoryStore::new(2);
        store.claim("live", "t", LEASE).await.ok();
        // An expired entry the purge task has not seen yet: put it in directly.
        {
            let mut state = store.lock();
            let expired = 0;
            let key = store.shared.digest("expired");
            let entry = Entry::new(0, expired, DONE);
            state.owners[0].1 += 1;
            state.entries.insert(key, entry);
            state.expiries.insert((expired, key));
        }
        assert_eq!(store.len(), 2);
        assert_eq!(store.claim("c", "t", LEASE).await.ok(), Some(Claim::Fresh));
        assert!(matches!(
            store.claim("d", "t", LEASE).await,
            Err(Error::Full(2))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn purge_task_removes_expired_entries() {
        let store = MemoryStore::new(100);
        for i in 0..10 {
            let ttl = Duration::from_secs(10 + i);
            store.claim(&format!("k{i}"), "t", ttl).await.ok();
        }
        assert_eq!(store.len(), 10);
        tokio::time::sleep(Duration::from_millis(15_500)).await;
        assert_eq!(store.len(), 4);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(store.is_empty());

        // A later, earlier deadline wakes the task out of a long sleep.
        store
            .claim("long", "t", Duration::from_secs(3600))
            .await
            .ok();
        tokio::time::sleep(Duration::from_millis(1)).await;
        store.claim("short", "t", Duration::from_secs(1)).await.ok();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(store.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn purge_task_stops_when_the_store_is_dropped() {
        let store = MemoryStore::new(10);
        store.claim("k", "t", LEASE).await.ok();
        // The task holds the other reference to the Notify while it runs.
        let wake = store.wake.clone();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(Arc::strong_count(&wake), 3);
        drop(store);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(Arc::strong_count(&wake), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn versions_only_move_forward() {
        let store = MemoryStore::new(10);
        assert_eq!(store.version_check("v").await.ok(), Some(None));
        assert_eq!(store.version_advance("v", 10).await.ok(), Some(true));
        assert_eq!(store.version_advance("v", 10).await.ok(), Some(false));
        assert_eq!(store.version_advance("v", 9).await.ok(), Some(false));
        assert_eq!(store.version_check("v").await.ok(), Some(Some(10)));
        let big = 1_700_000_000_000_000_001_i128;
        assert_eq!(store.version_advance("v", big - 1).await.ok(), Some(true));
        assert_eq!(store.version_advance("v", big).await.ok(), Some(true));
        assert_eq!(store.version_check("v").await.ok(), Some(Some(big)));
        assert_eq!(store.version_advance("n", -5).await.ok(), Some(true));
        assert_eq!(store.version_advance("n", -6).await.ok(), Some(false));
        assert_eq!(store.version_check("n").await.ok(), Some(Some(-5)));
    }

    #[tokio::test(start_paused = true)]
    async fn versions_expire_after_their_ttl() {
        let store = MemoryStore::new(10);
        store.version_advance("v", 10).await.ok();
        tokio::time::advance(VERSION_TTL).await;
        assert_eq!(store.version_check("v").await.ok(), Some(None));
        assert_eq!(store.version_advance("v", 1).await.ok(), Some(true));
    }

    #[tokio::test(start_paused = true)]
    async fn versions_count_towards_the_bound() {
        let store = MemoryStore::new(1);
        assert_eq!(store.version_advance("v", 1).await.ok(), Some(true));
        assert!(matches!(
            store.claim("k", "t", LEASE).await,
            Err(Error::Full(1))
        ));
        // Replacing an existing entry needs no room.
        assert_eq!(store.version_advance("v", 2).await.ok(), Some(true));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_claims_of_one_key_yield_one_fresh() {
        let store = Arc::new(MemoryStore::new(1000));
        let mut tasks = Vec::new();
        for i in 0..100 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.claim("k", &format!("t{i}"), LEASE).await
            }));
        }
        let mut fresh = 0;
        for task in tasks {
            if let Ok(Ok(Claim::Fresh)) = task.await {
                fresh += 1;
            }
        }
        assert_eq!(fresh, 1);
    }

    #[test]
    fn entry_stays_small() {
        assert!(std::mem::size_of::<Value>() <= 17);
        assert!(std::mem::size_of::<(Digest, Entry)>() <= 48);
        assert!(std::mem::size_of::<(Millis, Digest)>() <= 24);
    }
}
