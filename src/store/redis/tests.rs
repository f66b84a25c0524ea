use super::scrub::{scrub, secrets_of};
use super::*;

#[test]
fn secrets_cover_url_and_credentials() {
    let secrets = secrets_of(&["redis://app:p%40ss@127.0.0.1:6379/0"]);
    for s in [
        "redis://app:p%40ss@127.0.0.1:6379/0",
        "app:p%40ss",
        "p%40ss",
        "p@ss",
        "app",
    ] {
        assert!(
            secrets.iter().any(|x| x == s),
            "{s} missing from {secrets:?}"
        );
    }
    let msg = scrub(
        "failed: redis://app:p%40ss@127.0.0.1:6379/0 (p@ss)",
        &secrets,
    );
    assert!(!msg.contains("p%40ss") && !msg.contains("p@ss"), "{msg}");
    assert!(msg.contains("[redacted]"));
}

#[test]
fn url_without_credentials_has_only_itself_as_secret() {
    assert_eq!(
        secrets_of(&["redis://127.0.0.1:6379"]),
        vec!["redis://127.0.0.1:6379".to_string()]
    );
}

#[test]
fn millis_is_never_zero() {
    assert_eq!(millis(Duration::ZERO), 1);
    assert_eq!(millis(Duration::from_secs(2)), 2000);
}

#[test]
fn connect_needs_a_runtime_and_a_valid_url() {
    assert!(RedisStore::connect("redis://127.0.0.1:1").is_err());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(rt) = rt else { return };
    rt.block_on(async {
        let err = RedisStore::connect("nope://:hunter2@x").err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("invalid Redis URL"), "{msg}");
        assert!(!msg.contains("hunter2"), "{msg}");
    });
}

/// Nothing listens on port 1: the store builds, and each command fails
/// fast with a message free of the password.
#[tokio::test]
async fn unreachable_redis_is_unavailable_quickly() {
    let store = RedisStore::connect("redis://:hunter2@127.0.0.1:1/");
    let Ok(store) = store else {
        panic!("connect must not do I/O");
    };
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let err = store.claim("k", "t", Duration::from_secs(1)).await.err();
        assert!(started.elapsed() < COMMAND_TIMEOUT + Duration::from_millis(200));
        let msg = match err {
            Some(Error::Unavailable(msg)) => msg,
            other => panic!("expected Unavailable, got {other:?}"),
        };
        assert!(!msg.contains("hunter2"), "{msg}");
    }
}
