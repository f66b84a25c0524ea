//! The nonce store against real Redis: one node, a three-master cluster, and
//! the memory and SQLite stores held to the same suite. Outages are real: the
//! server is killed, frozen and restarted under a live `Store`; a SQLite
//! store is closed and opened again on its file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookgate::store::redis::COMMAND_TIMEOUT;
use hookgate::store::sqlite::Sync;
use hookgate::store::{Claim, Error, Store};

use crate::support::redis::{RedisCluster, RedisServer};

const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(3600);
/// What a caller may wait for an answer from a dead store: the command bound
/// plus scheduling slack on a busy two-core machine.
const OUTAGE_BOUND: Duration = Duration::from_millis(2500);
/// How long a store may take to work again once Redis is back.
const RECOVERY_BOUND: Duration = Duration::from_secs(10);

async fn claim(store: &Store, key: &str, token: &str, lease: Duration) -> Claim {
    match store.claim(key, token, lease).await {
        Ok(claim) => claim,
        Err(e) => panic!("claim {key}: {e}"),
    }
}

async fn commit(store: &Store, key: &str) {
    if let Err(e) = store.commit(key, TTL, None).await {
        panic!("commit {key}: {e}");
    }
}

async fn release(store: &Store, key: &str, token: &str) {
    if let Err(e) = store.release(key, token, None).await {
        panic!("release {key}: {e}");
    }
}

async fn advance(store: &Store, key: &str, version: i128) -> bool {
    match store.version_advance(key, version).await {
        Ok(moved) => moved,
        Err(e) => panic!("version_advance {key}: {e}"),
    }
}

async fn check(store: &Store, key: &str) -> Option<i128> {
    match store.version_check(key).await {
        Ok(version) => version,
        Err(e) => panic!("version_check {key}: {e}"),
    }
}

/// The prefix [`nonce`] and [`ver`] build keys with; a SQLite store is
/// opened with it, as `open_store` opens one with the config's.
const PREFIX: &str = "hookgate";

fn nonce(name: &str) -> String {
    format!("{PREFIX}:nonce:test:{name}")
}

fn ver(name: &str) -> String {
    format!("{PREFIX}:ver:test:{name}")
}

/// What every backend must do, on keys that spread over cluster slots.
async fn suite(store: Arc<Store>) {
    // A fresh key is taken; while held it is in flight; once committed, done.
    let key = nonce("evt_1");
    assert_eq!(claim(&store, &key, "a", LEASE).await, Claim::Fresh);
    assert_eq!(claim(&store, &key, "b", LEASE).await, Claim::InFlight);
    commit(&store, &key).await;
    assert_eq!(claim(&store, &key, "b", LEASE).await, Claim::Done);
    // Releasing a done key does nothing, whatever the token.
    release(&store, &key, "a").await;
    assert_eq!(claim(&store, &key, "b", LEASE).await, Claim::Done);

    // Only the holding token releases.
    let key = nonce("evt_release");
    assert_eq!(claim(&store, &key, "a", LEASE).await, Claim::Fresh);
    release(&store, &key, "b").await;
    assert_eq!(claim(&store, &key, "c", LEASE).await, Claim::InFlight);
    release(&store, &key, "a").await;
    assert_eq!(claim(&store, &key, "c", LEASE).await, Claim::Fresh);

    // A commit is final: the holder's release does not reopen the event.
    let key = nonce("evt_commit");
    assert_eq!(claim(&store, &key, "a", LEASE).await, Claim::Fresh);
    commit(&store, &key).await;
    release(&store, &key, "a").await;
    assert_eq!(claim(&store, &key, "c", LEASE).await, Claim::Done);

    // A lease runs out: the key is fresh again.
    let short = Duration::from_millis(300);
    let lapsed = nonce("evt_lapsed");
    let taken = nonce("evt_taken");
    assert_eq!(claim(&store, &lapsed, "a", short).await, Claim::Fresh);
    assert_eq!(claim(&store, &taken, "a", short).await, Claim::Fresh);
    tokio::time::sleep(short + Duration::from_millis(200)).await;
    assert_eq!(claim(&store, &taken, "b", LEASE).await, Claim::Fresh);
    // A late commit on a lapsed, untaken key still records the event...
    commit(&store, &lapsed).await;
    assert_eq!(claim(&store, &lapsed, "z", LEASE).await, Claim::Done);
    // ...and marks a key another request took meanwhile done too: the app
    // has the event, so that request failing must not reopen it.
    assert_eq!(claim(&store, &taken, "z", LEASE).await, Claim::InFlight);
    commit(&store, &taken).await;
    release(&store, &taken, "b").await;
    assert_eq!(claim(&store, &taken, "z", LEASE).await, Claim::Done);

    // Many events at once land on every slot owner.
    for i in 0..50 {
        let key = nonce(&format!("spread_{i}"));
        assert_eq!(claim(&store, &key, "a", LEASE).await, Claim::Fresh);
        commit(&store, &key).await;
        assert_eq!(claim(&store, &key, "b", LEASE).await, Claim::Done);
    }

    // 100 copies of one event at once: exactly one goes through.
    let key = nonce("evt_race");
    let mut tasks = Vec::new();
    for i in 0..100 {
        let store = store.clone();
        let key = key.clone();
        tasks.push(tokio::spawn(async move {
            store.claim(&key, &format!("t{i}"), LEASE).await
        }));
    }
    let mut fresh = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(Claim::Fresh)) => fresh += 1,
            Ok(Ok(Claim::InFlight)) => {}
            other => panic!("unexpected claim result: {other:?}"),
        }
    }
    assert_eq!(fresh, 1);

    version_suite(&store).await;
}

async fn version_suite(store: &Arc<Store>) {
    let key = ver("cus_1");
    assert_eq!(check(store, &key).await, None);
    assert!(advance(store, &key, 10).await);
    assert!(!advance(store, &key, 10).await, "equal is not a move");
    assert!(!advance(store, &key, 9).await);
    assert_eq!(check(store, &key).await, Some(10));

    // Unix nanoseconds are past what a double holds exactly: these two
    // differ by one and must still compare right.
    let key = ver("cus_nanos");
    let t = 1_767_225_600_000_000_001_i128;
    assert!(advance(store, &key, t - 1).await);
    assert!(advance(store, &key, t).await);
    assert!(!advance(store, &key, t - 1).await);
    assert_eq!(check(store, &key).await, Some(t));
    // And beyond i64.
    assert!(advance(store, &key, i128::from(i64::MAX) + 1).await);
    assert!(!advance(store, &key, i128::from(i64::MAX)).await);

    let key = ver("cus_negative");
    assert!(advance(store, &key, -100).await);
    assert!(!advance(store, &key, -101).await);
    assert!(advance(store, &key, -99).await);
    assert!(advance(store, &key, 0).await);
    assert!(!advance(store, &key, -1).await);
    assert_eq!(check(store, &key).await, Some(0));

    // Concurrent advances: the stored version only rises, ends at the maximum,
    // and each version that reported a move was above every earlier move.
    let key = ver("cus_race");
    let mut tasks = Vec::new();
    for i in 0..60_i128 {
        let store = store.clone();
        let key = key.clone();
        // An order that is neither rising nor falling.
        let version = (i * 37) % 60;
        tasks.push(tokio::spawn(async move {
            let moved = store.version_advance(&key, version).await;
            (version, moved)
        }));
    }
    let mut moved = Vec::new();
    for task in tasks {
        match task.await {
            Ok((version, Ok(true))) => moved.push(version),
            Ok((_, Ok(false))) => {}
            other => panic!("unexpected advance result: {other:?}"),
        }
    }
    assert!(moved.contains(&59), "the maximum always moves: {moved:?}");
    let mut unique = moved.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), moved.len(), "no version moved twice");
    assert_eq!(check(store, &key).await, Some(59));
}

/// Polls `claim` on a fresh key until the store answers again.
async fn wait_until_available(store: &Store, what: &str) -> Duration {
    let started = Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let key = nonce(&format!("recovery_{what}_{n}"));
        match store.claim(&key, "t", LEASE).await {
            Ok(Claim::Fresh) => return started.elapsed(),
            Ok(other) => panic!("a new key must be fresh, got {other:?}"),
            Err(Error::Unavailable(_)) if started.elapsed() < RECOVERY_BOUND => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what}: store did not recover within {RECOVERY_BOUND:?}: {e}"),
        }
    }
}

/// Every verb fails with `Unavailable`, each within [`OUTAGE_BOUND`].
async fn assert_unavailable(store: &Store) {
    let key = nonce("during_outage");
    let results: Vec<(&str, Duration, Result<(), Error>)> = vec![
        timed("claim", store.claim(&key, "t", LEASE)).await,
        timed("commit", store.commit(&key, TTL, None)).await,
        timed("release", store.release(&key, "t", None)).await,
        timed("ping", store.ping()).await,
        timed("version_check", store.version_check(&ver("x"))).await,
        timed("version_advance", store.version_advance(&ver("x"), 1)).await,
    ];
    for (verb, elapsed, result) in results {
        assert!(
            matches!(result, Err(Error::Unavailable(_))),
            "{verb} during an outage: {result:?}"
        );
        assert!(
            elapsed <= OUTAGE_BOUND,
            "{verb} took {elapsed:?} to fail (bound {OUTAGE_BOUND:?})"
        );
    }
}

async fn timed<T>(
    verb: &'static str,
    op: impl Future<Output = Result<T, Error>>,
) -> (&'static str, Duration, Result<(), Error>) {
    let started = Instant::now();
    let result = op.await.map(drop);
    (verb, started.elapsed(), result)
}

fn redis_store(url: &str) -> Store {
    match Store::redis(url) {
        Ok(store) => store,
        Err(e) => panic!("building the Redis store: {e}"),
    }
}

fn cluster_store(urls: &[String]) -> Store {
    match Store::redis_cluster(urls) {
        Ok(store) => store,
        Err(e) => panic!("building the Redis Cluster store: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_single_node_suite() {
    let server = RedisServer::start();
    let store = Arc::new(redis_store(&server.url()));
    assert!(store.ping().await.is_ok());
    suite(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_suite() {
    let cluster = RedisCluster::start(3);
    let store = Arc::new(cluster_store(&cluster.urls()));
    assert!(store.ping().await.is_ok());
    suite(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_passes_the_same_suite() {
    suite(Arc::new(Store::memory(10_000, 10_000))).await;
}

fn sqlite_store(path: &std::path::Path) -> Store {
    match Store::sqlite(
        path,
        Sync::Full,
        PREFIX,
        hookgate::store::sqlite::SecureDelete::Off,
    ) {
        Ok(store) => store,
        Err(e) => panic!("opening the SQLite store on {}: {e}", path.display()),
    }
}

fn sqlite_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hookgate-store-")
        .tempdir()
        .expect("temp dir")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_passes_the_same_suite() {
    let dir = sqlite_dir();
    let store = Arc::new(sqlite_store(&dir.path().join("hookgate.db")));
    assert!(store.ping().await.is_ok());
    suite(store).await;
}

/// What a SQLite store was told survives the store being closed and opened
/// again on its file: a committed event stays done, a version stays, and the
/// claim of an event still in flight is there until its lease runs out, then
/// the event is fresh again (as after a crash on Redis).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_sqlite_store_remembers_what_it_was_told() {
    let dir = sqlite_dir();
    let path = dir.path().join("hookgate.db");
    let lease = Duration::from_secs(3);
    let (done, in_flight, version) = (nonce("kept_done"), nonce("kept_in_flight"), ver("kept"));

    let store = sqlite_store(&path);
    assert_eq!(claim(&store, &done, "a", LEASE).await, Claim::Fresh);
    commit(&store, &done).await;
    assert!(advance(&store, &version, 1_767_225_600_000_000_001).await);
    let claimed = Instant::now();
    assert_eq!(claim(&store, &in_flight, "a", lease).await, Claim::Fresh);
    drop(store);

    let store = sqlite_store(&path);
    assert_eq!(claim(&store, &done, "b", LEASE).await, Claim::Done);
    assert_eq!(
        check(&store, &version).await,
        Some(1_767_225_600_000_000_001)
    );
    assert!(!advance(&store, &version, 1_767_225_600_000_000_000).await);
    assert!(
        claimed.elapsed() < lease,
        "the reopen took longer than the lease: {:?}",
        claimed.elapsed()
    );
    assert_eq!(claim(&store, &in_flight, "b", LEASE).await, Claim::InFlight);
    // The lease still runs out: the event is not blocked for good.
    tokio::time::sleep(lease.saturating_sub(claimed.elapsed()) + Duration::from_millis(200)).await;
    assert_eq!(claim(&store, &in_flight, "c", LEASE).await, Claim::Fresh);
    // And the new claim is the one that holds it now.
    assert_eq!(claim(&store, &in_flight, "d", LEASE).await, Claim::InFlight);
    drop(store);

    // A third open sees what the second wrote.
    let store = sqlite_store(&path);
    assert_eq!(claim(&store, &in_flight, "e", LEASE).await, Claim::InFlight);
    assert_eq!(claim(&store, &done, "e", LEASE).await, Claim::Done);
}

#[tokio::test]
async fn scripts_are_loaded_again_after_a_flush() {
    let server = RedisServer::start();
    let store = redis_store(&server.url());
    assert_eq!(claim(&store, &nonce("a"), "t", LEASE).await, Claim::Fresh);
    let mut admin = server.client();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut admin)
        .expect("SCRIPT FLUSH");
    assert_eq!(claim(&store, &nonce("b"), "t", LEASE).await, Claim::Fresh);
    commit(&store, &nonce("b")).await;
    assert_eq!(claim(&store, &nonce("b"), "u", LEASE).await, Claim::Done);
}

#[tokio::test]
async fn redis_layout_is_the_documented_one() {
    let server = RedisServer::start();
    let store = redis_store(&server.url());
    let key = nonce("layout");
    let mut admin = server.client();
    let get = |admin: &mut redis::Connection, key: &str| -> Option<String> {
        redis::cmd("GET").arg(key).query(admin).expect("GET")
    };
    let pttl = |admin: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("PTTL").arg(key).query(admin).expect("PTTL")
    };

    claim(&store, &key, "tok123", LEASE).await;
    assert_eq!(get(&mut admin, &key).as_deref(), Some("inflight:tok123"));
    let lease_left = pttl(&mut admin, &key);
    assert!(lease_left > 25_000 && lease_left <= 30_000, "{lease_left}");

    commit(&store, &key).await;
    assert_eq!(get(&mut admin, &key).as_deref(), Some("done"));
    let ttl_left = pttl(&mut admin, &key);
    assert!(ttl_left > 3_500_000 && ttl_left <= 3_600_000, "{ttl_left}");

    let key = ver("layout");
    advance(&store, &key, 1_767_225_600_000_000_000).await;
    assert_eq!(
        get(&mut admin, &key).as_deref(),
        Some("1767225600000000000")
    );
    assert!(pttl(&mut admin, &key) > 29 * 24 * 3600 * 1000);
}

#[tokio::test]
async fn redis_killed_then_restarted_under_the_same_store() {
    let mut server = RedisServer::start();
    let store = redis_store(&server.url());
    let key = nonce("before_outage");
    assert_eq!(claim(&store, &key, "a", LEASE).await, Claim::Fresh);

    server.stop();
    assert_unavailable(&store).await;
    assert!(store.ping().await.is_err());

    server.restart();
    let took = wait_until_available(&store, "restart").await;
    // The refused-connection retry makes the first command after the restart work.
    assert!(took < Duration::from_secs(2), "recovery took {took:?}");
    assert!(store.ping().await.is_ok());
    // The server came back empty (no persistence): the old lease is gone.
    assert_eq!(claim(&store, &key, "b", LEASE).await, Claim::Fresh);
}

#[tokio::test]
async fn frozen_redis_times_out_instead_of_hanging() {
    let server = RedisServer::start();
    let store = redis_store(&server.url());
    assert!(store.ping().await.is_ok());

    server.freeze();
    let started = Instant::now();
    let result = store.claim(&nonce("frozen"), "t", LEASE).await;
    let elapsed = started.elapsed();
    assert!(matches!(result, Err(Error::Unavailable(_))), "{result:?}");
    assert!(
        elapsed >= COMMAND_TIMEOUT.min(Duration::from_millis(900)) && elapsed <= OUTAGE_BOUND,
        "a frozen server took {elapsed:?} to fail"
    );

    server.thaw();
    wait_until_available(&store, "thaw").await;
}

#[tokio::test]
async fn store_built_while_redis_is_down_works_once_it_is_up() {
    let mut server = RedisServer::start();
    server.stop();
    // Construction does no I/O: hookgate can start and answer 503 meanwhile.
    let store = redis_store(&server.url());
    assert_unavailable(&store).await;

    server.restart();
    wait_until_available(&store, "late start").await;
    assert!(store.ping().await.is_ok());
}

#[tokio::test]
async fn errors_never_show_the_password() {
    let password = "s3cr3t-pa55";
    let mut server = RedisServer::start_with_password(password);

    let store = redis_store(&server.url());
    assert_eq!(
        claim(&store, &nonce("auth"), "t", LEASE).await,
        Claim::Fresh
    );
    assert!(!format!("{store:?}").contains(password));

    // Wrong password: the server refuses, and the message names neither password.
    let wrong = format!("redis://:wr0ng-pa55@127.0.0.1:{}/", server.port());
    let bad = redis_store(&wrong);
    match bad.claim(&nonce("auth"), "t", LEASE).await {
        Err(Error::Unavailable(msg)) => {
            assert!(
                !msg.contains("wr0ng-pa55") && !msg.contains(password),
                "{msg}"
            );
        }
        other => panic!("a wrong password must be Unavailable, got {other:?}"),
    }

    // Server down: still no password in the message.
    server.stop();
    match store.claim(&nonce("auth2"), "t", LEASE).await {
        Err(Error::Unavailable(msg)) => assert!(!msg.contains(password), "{msg}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_outage_and_recovery_under_the_same_store() {
    let mut cluster = RedisCluster::start(3);
    let urls = cluster.urls();
    let store = cluster_store(&urls);
    assert_eq!(claim(&store, &nonce("c1"), "t", LEASE).await, Claim::Fresh);

    cluster.stop();
    assert_unavailable(&store).await;
    // A store built while the whole cluster is down.
    let late = cluster_store(&urls);
    assert_unavailable(&late).await;

    cluster.restart();
    wait_until_available(&store, "cluster restart").await;
    wait_until_available(&late, "cluster late start").await;
    for i in 0..20 {
        let key = nonce(&format!("after_{i}"));
        assert_eq!(claim(&store, &key, "t", LEASE).await, Claim::Fresh);
        assert_eq!(claim(&late, &key, "u", LEASE).await, Claim::InFlight);
    }
    assert!(store.ping().await.is_ok());
}
